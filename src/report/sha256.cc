// SHA-256 and base64 for the CSP hash source (report/sha256.h), from OpenSSL's
// libcrypto (EVP_Digest; EVP_EncodeBlock is RFC 4648 base64 with padding).
#include "report/sha256.h"

#include <openssl/evp.h>

#include <string>

namespace ttft::report {

std::array<uint8_t, 32> Sha256(std::string_view data) {
  std::array<uint8_t, 32> out{};
  unsigned int n = 0;
  // EVP_Digest fails only when out of memory or without a SHA-256 provider; the
  // digest then stays zero and the browser refuses the stylesheet: visible, not silent.
  EVP_Digest(data.data(), data.size(), out.data(), &n, EVP_sha256(), nullptr);
  return out;
}

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');  // + the NUL it writes
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

std::string CspHashSource(std::string_view data) {
  const std::array<uint8_t, 32> digest = Sha256(data);
  return "sha256-" +
         Base64(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

}  // namespace ttft::report
