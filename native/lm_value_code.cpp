#include "lm_value_code.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace fstdecode {
namespace value_code {

namespace {

// The code of the shortest decimal that reads as `y` (std::to_chars), if that decimal fits and
// decodes to `want` exactly.
bool try_log10(double y, double want, std::uint32_t* code) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, y, std::chars_format::scientific);
  if (r.ec != std::errc()) return false;
  // "-d.ddde-05": the sign, the digits (the point dropped), the exponent.
  const char* p = buf;
  const char* end = r.ptr;
  bool neg = false;
  if (p < end && *p == '-') neg = true, ++p;
  std::uint64_t m = 0;
  int digits = 0;
  for (; p < end && *p != 'e'; ++p) {
    if (*p == '.') continue;
    if (*p < '0' || *p > '9' || ++digits > 17) return false;
    m = m * 10 + static_cast<std::uint64_t>(*p - '0');
  }
  if (p == end) return false;
  int exp10 = 0;
  const auto e = std::from_chars(p + 1 + (p[1] == '+'), end, exp10);
  if (e.ec != std::errc() || e.ptr != end) return false;
  // y = m * 10^(exp10 - (digits - 1)) = m / 10^k.
  int k = digits - 1 - exp10;
  for (; k < 0; ++k) {  // an integer such as 100 ("1e+02"): scale m up
    if (m > kMantissaMask) return false;
    m *= 10;
  }
  if (k > 14 || m > kMantissaMask) return false;
  const std::uint32_t c = (neg ? kSign : 0u) | (static_cast<std::uint32_t>(k) << kMantissaBits) | static_cast<std::uint32_t>(m);
  if (!same_bits(decode(c), want)) return false;
  *code = c;
  return true;
}

}  // namespace

bool encode(double ln, std::uint32_t* code) {
  if (!std::isfinite(ln)) return false;
  // The file's log10 value y has y * kLn10 == ln, so it lies within an ulp or two of ln / kLn10.
  const double guess = ln / kLn10;
  if (try_log10(guess, ln, code)) return true;
  double up = guess, down = guess;
  for (int i = 0; i < 2; ++i) {
    up = std::nextafter(up, INFINITY);
    down = std::nextafter(down, -INFINITY);
    if (try_log10(up, ln, code) || try_log10(down, ln, code)) return true;
  }
  return false;
}

}  // namespace value_code
}  // namespace fstdecode
