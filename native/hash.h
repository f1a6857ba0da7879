// The 64-bit mixing the native hash tables share (a splitmix/murmur finaliser), a pair of
// 32-bit ints packed into one 64-bit key, and MurmurHash64A, the word hash of the files of KenLM
// and Moses' ProbingPT that the core reads.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace fstdecode {

inline std::uint64_t mix(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

inline std::uint64_t pair64(std::int32_t x, std::int32_t y) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(x)) << 32) | static_cast<std::uint32_t>(y);
}

// MurmurHash64A (Austin Appleby's public-domain MurmurHash2, 64-bit) with seed 0, as a
// little-endian machine computes it (KenLM's and Moses' util::MurmurHashNative there): eight-byte
// blocks, then the 1..7 tail bytes as one little-endian integer.
inline std::uint64_t murmur_hash64a(std::string_view s) {
  constexpr std::uint64_t m = 0xc6a4a7935bd1e995ULL;
  constexpr int r = 47;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t len = s.size();
  std::uint64_t h = static_cast<std::uint64_t>(len) * m;
  const std::size_t blocks = len / 8;
  for (std::size_t i = 0; i < blocks; ++i) {
    std::uint64_t k;
    std::memcpy(&k, p + 8 * i, sizeof k);
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  const std::size_t rest = len & 7;
  if (rest != 0) {
    std::uint64_t tail = 0;
    for (std::size_t j = rest; j-- > 0;) tail = (tail << 8) | p[8 * blocks + j];
    h ^= tail;
    h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

}  // namespace fstdecode
