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

}  // namespace ngram_hash
}  // namespace fstdecode
