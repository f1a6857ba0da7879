// A minimal perfect hash in the serialized form of CMPH's CHD algorithm (Belazzougui, Botelho and
// Dietzfelbinger, "Hash, displace, and compress", ESA 2009), which Moses' BlockHashIndex writes
// for every block of 2^orderBits keys of a compact table (compact_table.h). Read here from the
// format alone; no CMPH code is used.
//
// Layout of one dump (native order; u32 = 4 bytes):
//   "chd\0"; u32 keys; u32 size_ph, then size_ph bytes: the CHD_PH hash, packed:
//     u32 algorithm (7 = chd_ph); u32 hash family (0 = Jenkins); u32 seed; u32 n (bins);
//     u32 nbuckets; a compressed sequence of nbuckets displacements:
//       u32 count, u32 rem_r, u32 total_length, u32 size_sel, a select structure of size_sel
//       bytes, the low rem_r bits of each cumulative code length (count * rem_r bits, in u32s),
//       and the codes themselves (total_length bits, in u32s);
//   u32 size_cr, then size_cr bytes: a compressed rank structure over the n - keys empty bins:
//     u32 max_val, u32 count, u32 rem_r, u32 size_sel, a select structure, count * rem_r bits.
// A select structure: u32 ones, u32 zeros, (ones + zeros) bits (in u32s, bit i at byte i / 8,
// bit i % 8), and a u32 table of the position of every 128th one.
//
// A key's slot: Jenkins' lookup2 hash of the key gives (h0, h1, h2); g = h0 % nbuckets,
// f = h1 % n, h = h2 % (n - 1) + 1, d = displacement[g]; the bin is
// (f + h * (d % n) + d / n) % n, and the slot is the bin less the empty bins before it.
// cmph 2.0 (what Moses was built with) read the key's bytes as `char`: signed where char is
// (x86), so bytes >= 0x80 hash differently from later cmph, which reads them unsigned. Both
// are offered; the compact table tells which one wrote a file by its landmark keys.
//
// Invariant: the structures are untrusted. The constructor checks every size and decodes every
// displacement and empty bin once, so a lookup stays inside the mapping whatever the key.
#pragma once

#include <cstdint>
#include <string_view>

#include "byte_cursor.h"

namespace fstdecode {

// n ones among ones + zeros bits, and the position of any one.
class SelectBits {
 public:
  SelectBits() = default;
  SelectBits(const unsigned char* data, std::uint32_t size);  // the size_sel bytes
  std::uint32_t ones() const { return ones_; }
  std::uint64_t bits() const { return static_cast<std::uint64_t>(ones_) + zeros_; }
  bool bit(std::uint64_t i) const { return (bits_[i >> 3] >> (i & 7)) & 1; }
  // The position of the one numbered i (from 0); i < ones().
  std::uint64_t select(std::uint32_t i) const;

 private:
  std::uint64_t scan(std::uint64_t from, std::uint32_t skip) const;
  const unsigned char* bits_ = nullptr;
  const unsigned char* table_ = nullptr;
  std::uint32_t ones_ = 0, zeros_ = 0;
};

class ChdHash {
 public:
  explicit ChdHash(ByteCursor& in);  // reads one dump; throws CompactFault
  std::uint32_t keys() const { return keys_; }
  // The slot of `key`: in [0, keys()) for a key of the set; any value in [0, keys()] otherwise.
  std::uint32_t slot(std::string_view key, bool signed_bytes) const;

 private:
  std::uint32_t displacement(std::uint32_t g) const;
  std::uint64_t cumulative(std::uint32_t i) const;  // code bits of displacements 0..i
  std::uint32_t empties_before(std::uint32_t bin) const;

  std::uint32_t keys_ = 0, seed_ = 0, bins_ = 0, buckets_ = 0;
  // displacements
  std::uint32_t seq_rem_ = 0, seq_total_ = 0;
  SelectBits seq_sel_;
  const unsigned char* seq_rems_ = nullptr;
  const unsigned char* seq_codes_ = nullptr;
  // empty bins
  std::uint32_t rank_max_ = 0, rank_count_ = 0, rank_rem_ = 0;
  SelectBits rank_sel_;
  const unsigned char* rank_rems_ = nullptr;
};

// Bob Jenkins' lookup2 hash of `key` from `seed`: its three words (public-domain algorithm,
// burtleburtle.net/bob/hash/evahash.html); `signed_bytes` as cmph 2.0 on x86 (above).
void jenkins_lookup2(std::uint32_t seed, std::string_view key, bool signed_bytes, std::uint32_t out[3]);

}  // namespace fstdecode
