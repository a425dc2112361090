// LargeAllocator's blocks (ttft/core.h).
#include <sys/mman.h>

#include <cstddef>
#include <iterator>
#include <map>
#include <mutex>
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

// Freed mappings kept for reuse. A fresh page costs a fault and the kernel's zeroing
// (clear_page was 14% of the CPU time of a 10 M-span diagnosis in a VM); a reused one
// costs neither. The read frees a range's table and id hashes just before the
// diagnosis allocates its gather buffers, which then reuse them. A cached block
// larger than a request is split (blocks are whole 2 MB pages, so the pieces keep
// their huge pages); a request larger than every cached block grows the largest with
// mremap, which moves its pages instead of copying them. At most kCacheBytes are kept;
// they stay resident until reused or until the process ends.
constexpr size_t kCacheBytes = size_t{1} << 30;

class BlockCache {
 public:
  // A block of exactly `len` bytes (a 2 MB multiple), or null when none is cached.
  void* Take(size_t len) {
    std::lock_guard<std::mutex> lock(mu_);
    if (blocks_.empty()) return nullptr;
    auto it = blocks_.lower_bound(len);
    if (it == blocks_.end()) {
      // Grow the largest: its pages are kept, only the rest is fresh.
      it = std::prev(blocks_.end());
      const auto [have, p] = *it;
      blocks_.erase(it);
      bytes_ -= have;
      void* q = ::mremap(p, have, len, MREMAP_MAYMOVE);
      if (q != MAP_FAILED) return q;
      ::munmap(p, have);
      return nullptr;
    }
    const auto [have, p] = *it;
    blocks_.erase(it);
    bytes_ -= have;
    if (have > len) Put(static_cast<char*>(p) + len, have - len);
    return p;
  }
  // Keeps [p, p + len) for reuse, or unmaps it when the cache is full.
  void Give(void* p, size_t len) {
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes_ + len > kCacheBytes) {
      ::munmap(p, len);
      return;
    }
    Put(p, len);
  }

 private:
  void Put(void* p, size_t len) {  // REQUIRES: mu_ held
    blocks_.emplace(len, p);
    bytes_ += len;
  }
  std::mutex mu_;
  std::multimap<size_t, void*> blocks_;  // length -> address
  size_t bytes_ = 0;
};

BlockCache& Cache() {
  static BlockCache* cache = new BlockCache;  // never destroyed: frees may run at exit
  return *cache;
}

}  // namespace

void* AllocateLarge(size_t bytes) {
  if (!kMapLarge || bytes < kHugePage) return ::operator new(bytes);
  const size_t len = Mapped(bytes);
  if (void* p = Cache().Take(len)) return p;
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
  Cache().Give(p, Mapped(bytes));
}

}  // namespace ttft::internal
