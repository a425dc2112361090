// -----------------------------------------------------------------------------
// File: report/sha256.h (private to the report module)
// -----------------------------------------------------------------------------
//
// SHA-256 (FIPS 180-4, computed by OpenSSL) for the HTML report's Content-Security-Policy: the
// policy names the sha256 of the page's one <style> element ('sha256-BASE64'), so the browser
// applies that stylesheet and nothing else. Not for security-sensitive hashing of
// secrets (no constant-time guarantees are needed or given).

#ifndef TTFT_REPORT_SHA256_H_
#define TTFT_REPORT_SHA256_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ttft::report {

// The 32-byte digest of `data`.
std::array<uint8_t, 32> Sha256(std::string_view data);

// Standard base64 (RFC 4648 section 4, with padding) of `bytes`.
std::string Base64(std::string_view bytes);

// "sha256-" + Base64(Sha256(data)): a CSP hash source (CSP Level 3, section 2.3.1).
std::string CspHashSource(std::string_view data);

}  // namespace ttft::report

#endif  // TTFT_REPORT_SHA256_H_
