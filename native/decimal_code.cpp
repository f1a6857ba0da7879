#include "decimal_code.h"

namespace fstdecode {

double power_of_ten(unsigned k) {
  // Every entry is exact: 10^k = 2^k 5^k and 5^22 < 2^53.
  static constexpr double kPowers[kMaxDecimalExponent + 1] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                                              1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                                              1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  return kPowers[k <= kMaxDecimalExponent ? k : kMaxDecimalExponent];
}

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

bool get_varint(const unsigned char*& p, const unsigned char* end, std::uint64_t& v) {
  v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    const unsigned char byte = *p++;
    if (shift == 63 && byte > 1) return false;  // bits beyond the 64th
    v |= std::uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;  // a tenth byte with its continuation bit set
}

}  // namespace fstdecode
