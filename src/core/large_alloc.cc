// LargeAllocator's blocks (ttft/core.h).
#include <sys/mman.h>

#include <cstddef>
#include <new>

#include "ttft/core.h"

namespace ttft::internal {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMapLarge = false;  // ASan checks operator new's blocks, not our mappings
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kMapLarge = false;
#else
constexpr bool kMapLarge = true;
#endif
#else
constexpr bool kMapLarge = true;
#endif

// The x86-64 (and arm64 4 KB-granule) transparent huge page size.
constexpr size_t kHugePage = size_t{2} << 20;

size_t Mapped(size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

}  // namespace

void* AllocateLarge(size_t bytes) {
  if (!kMapLarge || bytes < kHugePage) return ::operator new(bytes);
  const size_t len = Mapped(bytes);
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  ::madvise(p, len, MADV_HUGEPAGE);  // a hint: failure leaves 4 KB pages
  return p;
}

void FreeLarge(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (!kMapLarge || bytes < kHugePage) {
    ::operator delete(p);
    return;
  }
  ::munmap(p, Mapped(bytes));
}

}  // namespace ttft::internal
