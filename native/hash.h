// The 64-bit mixing the native hash tables share (a splitmix/murmur finaliser), and a pair of
// 32-bit ints packed into one 64-bit key.
#pragma once

#include <cstdint>

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

}  // namespace fstdecode
