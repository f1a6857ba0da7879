// Exact 32-bit codes for an ARPA file's scores as NgramLM (lm.h) holds them: the natural log
// `v * kLn10` of a short decimal log10 `v` ("-4.6543042"). A code holds the decimal itself,
// v = (-1)^sign * m / 10^k, and decode() redoes the reader's double operations (parse_double's
// fast path in text_lines.cpp, then lm.cpp's product), so a code gives back the stored double
// bit for bit.
//
// Why m / 10^k is the reader's double: for m < 2^53 and 10^k exact (k <= 22) the quotient is
// correctly rounded (Clinger's fast path), so it is the double nearest the decimal, which any
// correct parser returns. encode() does not rely on this: it keeps a code only if decode() of it
// is the given double, bit for bit, and reports failure otherwise (the caller then stores the
// raw double elsewhere, an escape).
//
// Layout: bit 31 the sign, bits 27..30 k (0..14; 15 marks an escape, whose bits 0..26 are an
// index into the caller's table of raw doubles), bits 0..26 the mantissa m (< 2^27, so eight
// significant digits always fit).
#pragma once

#include <cstdint>

#include "decimal_code.h"

namespace fstdecode {
namespace value_code {

// ln 10 as Python's math.log(10) and lm.cpp's std::log(10.0) give it (correctly rounded;
// encode() checks every code against the stored double, so a different kLn10 in lm.cpp would
// only turn codes into escapes).
constexpr double kLn10 = 0x1.26bb1bbb55516p+1;
constexpr std::uint32_t kSign = 1u << 31;
constexpr unsigned kMantissaBits = 27;
constexpr std::uint32_t kMantissaMask = (1u << kMantissaBits) - 1;
constexpr std::uint32_t kEscapeK = 15;
// The largest escape index (kMantissaMask itself is left to callers as a reserved code).
constexpr std::uint32_t kMaxEscape = kMantissaMask - 1;

// The code of `ln` (a natural log as lm.cpp computes it from a decimal log10), if one decodes
// to exactly `ln` (same bits: -0.0 is not 0.0); false for NaN, infinities and decimals with too
// many digits or too small a magnitude (k > 14).
bool encode(double ln, std::uint32_t* code);

inline bool is_escape(std::uint32_t code) { return ((code >> kMantissaBits) & 15u) == kEscapeK; }
inline std::uint32_t escape(std::uint32_t index) { return (kEscapeK << kMantissaBits) | (index & kMantissaMask); }
inline std::uint32_t escape_index(std::uint32_t code) { return code & kMantissaMask; }

// The double of a code that is not an escape: the reader's (m / 10^k, negated, times ln 10).
inline double decode(std::uint32_t code) {
  double v = decimal_value(code & kMantissaMask, (code >> kMantissaBits) & 15u);
  if (code & kSign) v = -v;
  return v * kLn10;
}

}  // namespace value_code
}  // namespace fstdecode
