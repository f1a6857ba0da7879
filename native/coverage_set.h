// Coverage sets for the searches that keep one (the stack decoder, the coverage-vector DP and the
// exact search), bit i (0-based) for position i + 1, and the hash of a recombination key
// (coverage, last_t, context).
//
// Two representations, one interface (get, set_range, any_in_range, any_zero_in_range,
// first_zero, next, count, ==, hash):
// - Cov<W>, a fixed array of W 64-bit words holding every position: W is 1, 2, 4 or 8, so it holds
//   sentences of up to MAX_FIXED_COVERAGE (512) words. The short-sentence path, as fast as a
//   bit set can be.
// - WinCov<W>, a window of W words that slides along the sentence: every position left of the
//   window is covered, every position right of it uncovered. It holds a sentence of any length,
//   and stays W words (plus its offset) per state however long the sentence. Its invariant keeps
//   the window's first word not full, so the window starts at the word of g, the first uncovered
//   position, and holds at least 64 (W - 1) positions right of g. Every coverage whose covered
//   positions right of g lie within the window is held; set_range returns false for one that is
//   not (a phrase placed beyond the window while a gap stays left of it). Under Moses'
//   semantics (the gap rule: t + 1 - g <= d) that cannot happen with d <= 64 (W - 1); under the
//   paper's, a state must zigzag that far ahead of its first gap, or jump there (d beyond the
//   window, or -1). Each search says what it does with such a state (docs/native.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hash.h"
#include "problem.h"

namespace fstdecode {

constexpr int MAX_FIXED_COVERAGE = 512;  // Cov<8>: 8 words of 64 bits
constexpr int WINDOW_WORDS = 8;           // WinCov's window: 512 positions, >= 448 right of g

// Bits lo..hi (0-based, inclusive) of word k (absolute), as a mask of that word.
inline std::uint64_t word_mask(int k, int lo, int hi) {
  const int a = std::max(lo, k * 64), b = std::min(hi, k * 64 + 63);
  if (a > b) return 0;
  const int len = b - a + 1;
  const std::uint64_t m = len == 64 ? ~0ULL : ((1ULL << len) - 1);
  return m << (a - k * 64);
}

template <int W>
struct Cov {
  static constexpr bool windowed = false;
  std::uint64_t w[W] = {};

  bool get(int i) const { return (w[i >> 6] >> (i & 63)) & 1U; }
  static std::uint64_t mask(int k, int lo, int hi) { return word_mask(k, lo, hi); }
  // Always true: every coverage of the sentence is held.
  bool set_range(int lo, int hi) {
    for (int k = lo >> 6; k <= (hi >> 6); ++k) w[k] |= mask(k, lo, hi);
    return true;
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

// A coverage of a sentence of any length: words base .. base + W - 1 (absolute word indices) in
// w, every bit left of them set, every bit right of them clear. Invariant (canonical form, so
// that == and hash compare coverages): w[0] is not all ones, so base is the word of first_zero().
template <int W>
struct WinCov {
  static constexpr bool windowed = true;
  std::int32_t base = 0;
  std::uint64_t w[W] = {};

  int lo() const { return base * 64; }         // the window's first bit
  int end() const { return (base + W) * 64; }  // one past its last

  bool get(int i) const {
    if (i < lo()) return true;
    const int k = (i >> 6) - base;
    return k < W && ((w[k] >> (i & 63)) & 1U);
  }
  // Sets bits lo..hi; false (and the coverage unchanged) when the result has a clear bit left of
  // lo and a set bit beyond the window: a coverage this window cannot hold.
  bool set_range(int a, int b) {
    if (b >= end()) {
      if (first_zero() < a) return false;
      // Every bit left of a is set, so the result is the prefix 0..b.
      base = (b + 1) >> 6;
      for (int k = 0; k < W; ++k) w[k] = 0;
      const int rest = (b + 1) & 63;
      if (rest) w[0] = (1ULL << rest) - 1;
      return true;
    }
    a = std::max(a, lo());  // left of the window: set already
    for (int k = a >> 6; k <= (b >> 6); ++k) w[k - base] |= word_mask(k, a, b);
    while (w[0] == ~0ULL) {  // slide the window past full words
      for (int k = 0; k + 1 < W; ++k) w[k] = w[k + 1];
      w[W - 1] = 0;
      ++base;
    }
    return true;
  }
  bool any_in_range(int a, int b) const {
    if (a > b) return false;
    if (a < lo()) return true;
    const int last = std::min(b >> 6, base + W - 1);
    for (int k = a >> 6; k <= last; ++k)
      if (w[k - base] & word_mask(k, a, b)) return true;
    return false;
  }
  bool any_zero_in_range(int a, int b) const {
    a = std::max(a, lo());
    if (a > b) return false;
    if (b >= end()) return true;
    for (int k = a >> 6; k <= (b >> 6); ++k)
      if (~w[k - base] & word_mask(k, a, b)) return true;
    return false;
  }
  int first_zero() const { return lo() + __builtin_ctzll(~w[0]); }
  int next(int i, int limit, bool ones) const {
    if (i >= limit) return limit;
    if (i < lo()) {
      if (ones) return i;
      i = lo();
    }
    for (int k = i >> 6; k < base + W && k * 64 < limit; ++k) {
      std::uint64_t v = ones ? w[k - base] : ~w[k - base];
      if (k == (i >> 6)) v &= ~0ULL << (i & 63);
      if (v) return std::min(limit, k * 64 + __builtin_ctzll(v));
    }
    return ones ? limit : std::min(limit, std::max(i, end()));
  }
  int count() const {
    int c = lo();
    for (int k = 0; k < W; ++k) c += __builtin_popcountll(w[k]);
    return c;
  }
  bool operator==(const WinCov& o) const {
    if (base != o.base) return false;
    for (int k = 0; k < W; ++k)
      if (w[k] != o.w[k]) return false;
    return true;
  }
  std::uint64_t hash() const {
    std::uint64_t h = mix(static_cast<std::uint64_t>(static_cast<std::uint32_t>(base)) + 0x9e3779b97f4a7c15ULL);
    for (int k = 0; k < W; ++k) h = mix(h ^ w[k]) + static_cast<std::uint64_t>(k);
    return h;
  }
};

// Runs: the best segmentation of a run of positions a..e (1-based, inclusive) into spans, each
// span (s, t) worth the best of its values (the stack decoder's future cost, the exact search's
// covers), for a sentence too long for an (n + 2)^2 table (more than MAX_FIXED_COVERAGE words:
// WinCov's searches). at(a, e) = max over the spans (a, t), t <= e, of value + at(t + 1, e);
// at(e + 1, e) = 0; -inf when no segmentation exists. Held: the runs shorter than BAND
// positions and the runs that end at n (the tail gap every coverage has until it reaches n);
// any other run is computed by the same recurrence when first asked for, and kept. So the
// values are those of the (n + 2)^2 table built right to left by that recurrence (exact.cpp's
// cover), in O(n BAND) memory.
class Runs {
 public:
  static constexpr int BAND = 64;

  Runs() = default;
  // spans[s] (1 <= s <= n): the (t, value) of the spans starting at s, in any order.
  Runs(int n, std::vector<std::vector<std::pair<int, double>>> spans) : n_(n), spans_(std::move(spans)) {
    spans_.resize(static_cast<std::size_t>(n) + 2);
    band_.assign((static_cast<std::size_t>(n) + 2) * BAND, -kInf);
    for (int e = 1; e <= n; ++e)
      for (int a = e; a >= 1 && e - a < BAND; --a) band_[slot(a, e)] = best(a, e, [&](int x) { return near(x, e); });
    suffix_.assign(static_cast<std::size_t>(n) + 2, -kInf);
    suffix_[static_cast<std::size_t>(n) + 1] = 0.0;
    for (int a = n; a >= 1; --a)
      suffix_[static_cast<std::size_t>(a)] = best(a, n, [&](int x) { return suffix_[static_cast<std::size_t>(x)]; });
  }

  // 1 <= a <= e + 1, e <= n.
  double at(int a, int e) const {
    if (a > e) return 0.0;
    if (e == n_) return suffix_[static_cast<std::size_t>(a)];
    if (e - a < BAND) return band_[slot(a, e)];
    return far(a, e);
  }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  std::size_t slot(int a, int e) const { return static_cast<std::size_t>(a) * BAND + static_cast<std::size_t>(e - a); }
  double near(int a, int e) const { return a > e ? 0.0 : band_[slot(a, e)]; }
  // max over the spans (a, t <= e) of value + rest(t + 1)
  template <class Rest>
  double best(int a, int e, Rest&& rest) const {
    double got = -kInf;
    for (const auto& [t, value] : spans_[static_cast<std::size_t>(a)])
      if (t <= e) got = std::max(got, value + rest(t + 1));
    return got;
  }
  double far(int a, int e) const {
    const std::uint64_t key = pair64(a, e);
    const auto it = far_.find(key);
    if (it != far_.end()) return it->second;
    // The recurrence for end e, right to left from e (its band entries first).
    std::vector<double> col(static_cast<std::size_t>(e - a) + 2, 0.0);  // col[x - a], x = a .. e + 1
    for (int x = e; x >= a; --x)
      col[static_cast<std::size_t>(x - a)] =
          e - x < BAND ? band_[slot(x, e)] : best(x, e, [&](int y) { return col[static_cast<std::size_t>(y - a)]; });
    return far_[key] = col[0];
  }

  int n_ = 0;
  std::vector<std::vector<std::pair<int, double>>> spans_;
  std::vector<double> band_, suffix_;
  mutable std::unordered_map<std::uint64_t, double> far_;
};

// The hash of the recombination key (coverage, last_t, context id).
template <class C>
std::uint64_t key_hash(const C& cov, int last_t, int context) {
  return mix(cov.hash() ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(last_t)) << 40) ^
             static_cast<std::uint32_t>(context));
}

// ---- Coverage tests shared by the stack decoder and the exact search (search/stack.py) -------

// lowest_uncovered: g, the leftmost uncovered position (n + 1 when all n are covered).
template <class C>
inline int lowest_uncovered(const C& c) { return c.first_zero() + 1; }

// The maximal covered runs [a, b] (positions) right of g, left to right (_covered_blocks).
template <class C, class F>
inline bool any_block(const C& c, int g, int n, F&& f) {
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
template <class C>
int remaining_distortion(const C& c, int last_t, int n, bool final = true) {
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
template <class C>
bool is_dead(const C& cov, int last_t, int n, int d, bool moses = false) {
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

// A type as a value, to pass to a generic lambda.
template <class T>
struct TypeTag {
  using type = T;
};

// The search f(TypeTag<C>{}) with the coverage type C that holds the problem's n positions:
// Cov<W> with the fewest words W for n <= MAX_FIXED_COVERAGE, else WinCov<WINDOW_WORDS>.
template <class F>
Result with_coverage(const Problem& problem, F&& f) {
  const int n = problem.n();
  if (n <= 64) return f(TypeTag<Cov<1>>{});
  if (n <= 128) return f(TypeTag<Cov<2>>{});
  if (n <= 256) return f(TypeTag<Cov<4>>{});
  if (n <= MAX_FIXED_COVERAGE) return f(TypeTag<Cov<8>>{});
  return f(TypeTag<WinCov<WINDOW_WORDS>>{});
}

}  // namespace fstdecode
