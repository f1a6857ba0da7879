// Exact decimal codes for doubles, and the varints they are written with: the score codec of
// binarized tables (binary_table.h).
//
// Text tables write scores as short decimals ("0.019183"). A double parsed from m * 10^-k, with
// m < 2^53 and k <= 22, is exactly the double m / 10^k (both operands are exact doubles, and one
// IEEE division rounds the exact quotient correctly, as a correct parser does: Clinger's fast
// path). So such a score is kept as the integers (m, k), in a few bytes, and read back bit for
// bit. A code is always checked when written: a double with no such decimal (17 significant
// digits, subnormals, huge values, infinities, NaN) is written as its 8 raw bytes instead.
//
// A column's scores may be stored through a transform t (a table's probabilities are kept as
// floor(ln p)): the code of y is then a decimal v with t(v) == y bit for bit, found from a guess
// of v (exp y) and checked the same way.
//
// The code of y, for a column whose decimals mostly have `exponent` E digits after the point and
// the sign `negative` says, is one varint v (LEB128, least significant 7 bits first, at most 10
// bytes):
//   v even:          y = t(+-(m / 10^E)), the column's sign, m = v >> 1   (the column's usual form)
//   v odd, v >> 1 == 0: y = the 8 bytes that follow (native order)      (the escape)
//   otherwise:       w = (v >> 1) - 1; y = t(+-(m / 10^k)): sign w & 1, k = (w >> 1) & 31,
//                    m = w >> 6                                     (any other decimal)
// A reader refuses a code with k > 22 or m >= 2^53, and a varint that runs past its end or
// beyond 64 bits: every read is bounds-checked.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace fstdecode {

constexpr unsigned kMaxDecimalExponent = 22;            // 10^22 is the largest exact power of ten
constexpr std::uint64_t kMaxDecimalMantissa = 1ULL << 53;  // m below this is an exact double

// 10^k for k <= 22, every entry exact: 10^k = 2^k 5^k and 5^22 < 2^53.
inline constexpr double kPowersOfTen[kMaxDecimalExponent + 1] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
// 10^k as a double, exactly (k <= kMaxDecimalExponent; a larger k reads as 22).
inline double power_of_ten(unsigned k) { return kPowersOfTen[k <= kMaxDecimalExponent ? k : kMaxDecimalExponent]; }
// m / 10^k, m < 2^53, k <= 22: the double a correct parser gives for the decimal m * 10^-k.
inline double decimal_value(std::uint64_t m, unsigned k) { return static_cast<double>(m) / power_of_ten(k); }

inline bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Appends v as a varint (1 to 10 bytes).
void put_varint(std::string& out, std::uint64_t v);
// Reads a varint at p (advanced past it) before end; false if it runs past end or 64 bits.
bool get_varint(const unsigned char*& p, const unsigned char* end, std::uint64_t& v);

// The identity transform: the column stores the numbers themselves.
struct Identity {
  double operator()(double v) const { return v; }
};

namespace detail {
// The mantissa of `guess` at k digits, if it fits below 2^53 (rounding to nearest).
inline bool mantissa(double guess, unsigned k, std::uint64_t& m) {
  const double scaled = std::fabs(guess) * power_of_ten(k);
  if (!(scaled < static_cast<double>(kMaxDecimalMantissa))) return false;  // also NaN
  m = static_cast<std::uint64_t>(std::llround(scaled));
  return m < kMaxDecimalMantissa;
}
}  // namespace detail

// Appends the code of y (see above): t(decimal) == y bit for bit for the decimal written, or the
// escape. `guess`: a double near the decimal sought (y itself for the identity, exp(y) for ln).
template <typename Transform>
void put_decimal(std::string& out, double y, unsigned exponent, bool negative_column, double guess, Transform t) {
  const bool negative = std::signbit(guess);
  std::uint64_t m;
  if (exponent <= kMaxDecimalExponent && negative == negative_column && detail::mantissa(guess, exponent, m)) {
    const double v = negative ? -decimal_value(m, exponent) : decimal_value(m, exponent);
    if (same_bits(t(v), y)) {
      put_varint(out, m << 1);
      return;
    }
  }
  for (unsigned k = 0; k <= kMaxDecimalExponent; ++k) {
    if (!detail::mantissa(guess, k, m)) break;  // more digits only make m larger
    const double v = negative ? -decimal_value(m, k) : decimal_value(m, k);
    if (same_bits(t(v), y)) {
      put_varint(out, (((m << 6) | (std::uint64_t{k} << 1) | negative) + 1) << 1 | 1);
      return;
    }
  }
  put_varint(out, 1);
  char raw[sizeof y];
  std::memcpy(raw, &y, sizeof y);
  out.append(raw, sizeof raw);
}

// Reads one code at p (advanced past it) before end into y; false on a truncated or invalid code.
template <typename Transform>
bool get_decimal(const unsigned char*& p, const unsigned char* end, unsigned exponent, bool negative_column, Transform t,
                 double& y) {
  std::uint64_t v;
  if (!get_varint(p, end, v)) return false;
  if ((v & 1) == 0) {
    if ((v >> 1) >= kMaxDecimalMantissa || exponent > kMaxDecimalExponent) return false;
    const double value = decimal_value(v >> 1, exponent);
    y = t(negative_column ? -value : value);
    return true;
  }
  std::uint64_t w = v >> 1;
  if (w == 0) {
    if (end - p < static_cast<std::ptrdiff_t>(sizeof y)) return false;
    std::memcpy(&y, p, sizeof y);
    p += sizeof y;
    return true;
  }
  --w;
  const unsigned k = static_cast<unsigned>((w >> 1) & 31);
  const std::uint64_t m = w >> 6;
  if (k > kMaxDecimalExponent || m >= kMaxDecimalMantissa) return false;
  const double value = decimal_value(m, k);
  y = t((w & 1) ? -value : value);
  return true;
}

}  // namespace fstdecode
