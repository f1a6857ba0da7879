// Coverage sets for the searches that keep one (the stack decoder and the coverage-vector DP):
// a fixed array of W 64-bit words, bit i (0-based) for position i + 1, and the hash of a
// recombination key (coverage, last_t, context). W is 1, 2, 4 or 8 (with_width picks it from n),
// so those searches take sentences of up to MAX_COVERAGE words.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "hash.h"
#include "problem.h"

namespace fstdecode {

constexpr int MAX_COVERAGE = 512;  // 8 words of 64 bits

template <int W>
struct Cov {
  std::uint64_t w[W] = {};

  bool get(int i) const { return (w[i >> 6] >> (i & 63)) & 1U; }
  // Bits lo..hi (0-based, inclusive) of word k.
  static std::uint64_t mask(int k, int lo, int hi) {
    const int a = std::max(lo, k * 64), b = std::min(hi, k * 64 + 63);
    if (a > b) return 0;
    const int len = b - a + 1;
    const std::uint64_t m = len == 64 ? ~0ULL : ((1ULL << len) - 1);
    return m << (a - k * 64);
  }
  void set_range(int lo, int hi) {
    for (int k = lo >> 6; k <= (hi >> 6); ++k) w[k] |= mask(k, lo, hi);
  }
  bool any_in_range(int lo, int hi) const {
    if (lo > hi) return false;
    for (int k = lo >> 6; k <= (hi >> 6); ++k)
      if (w[k] & mask(k, lo, hi)) return true;
    return false;
  }
  bool any_zero_in_range(int lo, int hi) const {
    if (lo > hi) return false;
    for (int k = lo >> 6; k <= (hi >> 6); ++k)
      if (~w[k] & mask(k, lo, hi)) return true;
    return false;
  }
  // The index of the lowest zero bit.
  int first_zero() const {
    for (int k = 0; k < W; ++k)
      if (~w[k]) return k * 64 + __builtin_ctzll(~w[k]);
    return W * 64;
  }
  // The first set (or clear, with ones = false) bit at index >= i, or limit if none below limit.
  int next(int i, int limit, bool ones) const {
    for (int k = i >> 6; k < W && k * 64 < limit; ++k) {
      std::uint64_t v = ones ? w[k] : ~w[k];
      if (k == (i >> 6)) v &= ~0ULL << (i & 63);
      if (v) return std::min(limit, k * 64 + __builtin_ctzll(v));
    }
    return limit;
  }
  // The number of set bits.
  int count() const {
    int c = 0;
    for (int k = 0; k < W; ++k) c += __builtin_popcountll(w[k]);
    return c;
  }
  bool operator==(const Cov& o) const {
    for (int k = 0; k < W; ++k)
      if (w[k] != o.w[k]) return false;
    return true;
  }
  std::uint64_t hash() const {
    std::uint64_t h = 0;
    for (int k = 0; k < W; ++k) h = mix(h ^ w[k]) + static_cast<std::uint64_t>(k);
    return h;
  }
};

// The hash of the recombination key (coverage, last_t, context id).
template <int W>
std::uint64_t key_hash(const Cov<W>& cov, int last_t, int context) {
  return mix(cov.hash() ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(last_t)) << 40) ^
             static_cast<std::uint32_t>(context));
}

// ---- Coverage tests shared by the stack decoder and the exact search (search/stack.py) -------

// lowest_uncovered: g, the leftmost uncovered position (n + 1 when all n are covered).
template <int W>
inline int lowest_uncovered(const Cov<W>& c) { return c.first_zero() + 1; }

// The maximal covered runs [a, b] (positions) right of g, left to right (_covered_blocks).
template <int W, class F>
inline bool any_block(const Cov<W>& c, int g, int n, F&& f) {
  int i = g;  // index g is position g + 1
  while (i < n) {
    const int a = c.next(i, n, true);
    if (a >= n) break;
    const int b = c.next(a, n, false);  // first uncovered index after the run
    if (f(a + 1, b)) return true;       // positions a + 1 .. b
    i = b;
  }
  return false;
}

// M&Q's remaining distortion (stack.py remaining_distortion): the least total jump of any
// completion, ignoring d: |last_t + 1 - g| plus every covered position right of g.
// Without a final jump (final false: Moses' semantics without early distortion cost; exact.py,
// remaining_distortion_to_last, proves it consistent) a completion may end anywhere: the covered
// positions between g and the last uncovered position r, plus the distance from last_t + 1 to
// the nearer of g and r + 1 (0 at full coverage).
template <int W>
int remaining_distortion(const Cov<W>& c, int last_t, int n, bool final = true) {
  const int g = lowest_uncovered(c);
  if (g > n) return final ? std::abs(last_t + 1 - g) : 0;
  int covered_right = 0, r = n;
  any_block(c, g, n, [&](int a, int b) {
    if (final || b < n) covered_right += b - a + 1;
    else r = a - 1;
    return false;
  });
  if (final) return std::abs(last_t + 1 - g) + covered_right;
  return std::min(std::abs(last_t + 1 - g), std::abs(last_t - r)) + covered_right;
}

// is_dead (stack.py): the state provably cannot complete within the distortion limit d; under
// Moses' semantics (moses) only the test of the first gap applies (no final jump).
template <int W>
bool is_dead(const Cov<W>& cov, int last_t, int n, int d, bool moses = false) {
  const int g = lowest_uncovered(cov);
  if (g > n) return !moses && n - last_t > d;
  if (std::abs(last_t + 1 - g) > d) {
    const int hi = std::min(g + d - 1, n);
    if (hi <= g || !cov.any_zero_in_range(g, hi - 1)) return true;  // positions g+1..hi
  }
  if (moses) return false;
  return any_block(cov, g, n, [&](int a, int b) {
    const int length = b - a + 1;
    return length > d || (last_t >= b && length + (last_t == b ? 1 : 2) > d);
  });
}

// The search f(std::integral_constant<int, W>{}) with the fewest words W that hold the problem's
// n positions; for n > MAX_COVERAGE, status "none": `what` takes sentences of up to 512 words.
template <class F>
Result with_width(const Problem& problem, const char* what, F&& f) {
  const int n = problem.n();
  if (n <= 64) return f(std::integral_constant<int, 1>{});
  if (n <= 128) return f(std::integral_constant<int, 2>{});
  if (n <= 256) return f(std::integral_constant<int, 4>{});
  if (n <= MAX_COVERAGE) return f(std::integral_constant<int, 8>{});
  Result result;
  result.status = "none";
  result.message = std::string(what) + " takes sentences of up to " + std::to_string(MAX_COVERAGE) +
                   " words, got " + std::to_string(n) + " (use the Python engine)";
  return result;
}

}  // namespace fstdecode
