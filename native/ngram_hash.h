// The 64-bit n-gram keys of NgramLM (lm.h) and of LM images (lm_image.h), which are written
// from NgramLM's tables and so must fold word ids exactly as NgramLM does: a key is folded from
// an n-gram's last word to its first, so the keys of all its suffixes come in one pass.
// Changing anything here changes every LM image's keys: bump kLmImageVersion (lm_image.h).
#pragma once

#include <cstdint>

namespace fstdecode {
namespace ngram_hash {

constexpr std::uint64_t kSeed = 0x2545F4914F6CDD1DULL;

inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return x;
}

// One word more on the left of the n-gram folded so far (`h`; kSeed for none).
inline std::uint64_t hash_step(std::uint64_t h, std::int32_t id) {
  return mix64(h ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(id)) * 0x9E3779B97F4A7C15ULL +
                    0x632BE59BD9B4E019ULL));
}

// A fold made a key: 0 marks an empty slot, so a key is never 0.
inline std::uint64_t nonzero(std::uint64_t h) { return h ? h : 1; }

// The keys a back-off query of w after ctx[0..n) probes, folded from the right in one pass:
// touch(L, hw, hc) for L = 1..n, with hw the key of ctx[n-L..n) + w and hc that of ctx[n-L..n)
// (the caller keeps them, or prefetches their slots, or both).
template <class Touch>
inline void query_keys(const std::int32_t* ctx, int n, std::int32_t w, Touch&& touch) {
  std::uint64_t h = hash_step(kSeed, w);
  std::uint64_t g = kSeed;
  for (int L = 1; L <= n; ++L) {
    const std::int32_t c = ctx[n - L];
    h = hash_step(h, c);
    g = hash_step(g, c);
    touch(L, nonzero(h), nonzero(g));
  }
}

// The keys of w's own n-grams, ctx[n-L..n) + w for L = 1..n, folded in one pass: key(L, k),
// shortest first. (The facts path, language_model.h, looks up nothing else: the context's
// backoffs travel with the context.)
template <class Key>
inline void word_keys(const std::int32_t* ctx, int n, std::int32_t w, Key&& key) {
  std::uint64_t h = hash_step(kSeed, w);
  for (int L = 1; L <= n; ++L) {
    h = hash_step(h, ctx[n - L]);
    key(L, nonzero(h));
  }
}

// ARPA's back-off rule (ArpaLM._score) over the keys query_keys made: ln p(w | ctx) is the
// probability of the longest stored ctx[n-L..n) + w, L = n down to 1, plus the backoffs of the
// contexts longer than it; with none stored, `unigram` (ln p(w)) plus every context's backoff.
// prob(L, key, &p): whether the (L+1)-gram of `key` is stored, and its ln probability;
// backoff(L, key): the ln backoff of the L-gram ctx[n-L..n) of `key` (0 when absent). NgramLM
// and the LM image answer through this one rule, so they answer alike.
template <class Prob, class Backoff>
inline double backoff_score(int n, const std::uint64_t* hw, const std::uint64_t* hc, Prob&& prob, Backoff&& backoff,
                            double unigram) {
  double total = 0.0;
  for (int L = n; L >= 1; --L) {
    double p;
    if (prob(L, hw[L], &p)) return total + p;
    const double b = backoff(L, hc[L]);
    if (b != 0.0) total += b;
  }
  return total + unigram;
}

}  // namespace ngram_hash
}  // namespace fstdecode
