#include "cmph_chd.h"

#include <string>

namespace fstdecode {

namespace {

constexpr std::uint32_t kChdPh = 7;         // CMPH_CHD_PH in CMPH's algorithm list
constexpr std::uint32_t kJenkins = 0;       // CMPH_HASH_JENKINS
constexpr std::uint32_t kSelectStep = 128;  // ones between select table entries

std::uint32_t words_for(std::uint64_t bits) { return static_cast<std::uint32_t>((bits + 31) / 32); }

// `width` bits at bit `pos` of an array of u32 words (low bits first); width <= 32, and the
// caller checked that the bits lie inside the array.
std::uint32_t bits_at(const unsigned char* words, std::uint64_t pos, std::uint32_t width) {
  if (width == 0) return 0;
  const std::uint64_t w = pos >> 5;
  const std::uint32_t shift = static_cast<std::uint32_t>(pos & 31);
  std::uint64_t v = word32(words, w) >> shift;
  if (shift + width > 32) v |= static_cast<std::uint64_t>(word32(words, w + 1)) << (32 - shift);
  return static_cast<std::uint32_t>(v & ((std::uint64_t{1} << width) - 1));
}

// lookup2's mix of three words.
void mix(std::uint32_t& a, std::uint32_t& b, std::uint32_t& c) {
  a -= b; a -= c; a ^= c >> 13;
  b -= c; b -= a; b ^= a << 8;
  c -= a; c -= b; c ^= b >> 13;
  a -= b; a -= c; a ^= c >> 12;
  b -= c; b -= a; b ^= a << 16;
  c -= a; c -= b; c ^= b >> 5;
  a -= b; a -= c; a ^= c >> 3;
  b -= c; b -= a; b ^= a << 10;
  c -= a; c -= b; c ^= b >> 15;
}

}  // namespace

void jenkins_lookup2(std::uint32_t seed, std::string_view key, bool signed_bytes, std::uint32_t out[3]) {
  const auto* k = reinterpret_cast<const unsigned char*>(key.data());
  // A byte as cmph widened it: sign-extended when read as a signed char.
  auto wide = [&](std::size_t i) -> std::uint32_t {
    return signed_bytes && k[i] >= 0x80 ? 0xffffff00u | k[i] : k[i];
  };
  auto word = [&](std::size_t i) { return wide(i) + (wide(i + 1) << 8) + (wide(i + 2) << 16) + (wide(i + 3) << 24); };
  std::uint32_t a = 0x9e3779b9u, b = 0x9e3779b9u, c = seed;
  std::size_t i = 0, len = key.size();
  for (; len - i >= 12; i += 12) {
    a += word(i);
    b += word(i + 4);
    c += word(i + 8);
    mix(a, b, c);
  }
  c += static_cast<std::uint32_t>(key.size());
  // The last 0..11 bytes: c's low byte holds the length; cmph took the first byte of a and of
  // b unsigned even in its signed version.
  switch (len - i) {
    case 11: c += wide(i + 10) << 24; [[fallthrough]];
    case 10: c += wide(i + 9) << 16; [[fallthrough]];
    case 9: c += wide(i + 8) << 8; [[fallthrough]];
    case 8: b += wide(i + 7) << 24; [[fallthrough]];
    case 7: b += wide(i + 6) << 16; [[fallthrough]];
    case 6: b += wide(i + 5) << 8; [[fallthrough]];
    case 5: b += k[i + 4]; [[fallthrough]];
    case 4: a += wide(i + 3) << 24; [[fallthrough]];
    case 3: a += wide(i + 2) << 16; [[fallthrough]];
    case 2: a += wide(i + 1) << 8; [[fallthrough]];
    case 1: a += k[i]; break;
    default: break;
  }
  mix(a, b, c);
  out[0] = a;
  out[1] = b;
  out[2] = c;
}

// ---------------------------------------------------------------------------------------------
// Select

SelectBits::SelectBits(const unsigned char* data, std::uint32_t size) {
  ByteCursor in(data, data + size);
  ones_ = in.u32("a select structure");
  zeros_ = in.u32("a select structure");
  const std::uint64_t n_words = words_for(bits());
  const std::uint64_t n_table = (ones_ / kSelectStep) + 1;
  bits_ = in.take_array(n_words, 4, "a select structure's bits");
  table_ = in.take_array(n_table, 4, "a select structure's table");
  if (in.left() != 0) compact_fault("a select structure has bytes left over");
  // Every one counted and every table entry where it says: lookups then trust both.
  std::uint64_t seen = 0;
  for (std::uint64_t i = 0; i < bits(); ++i) {
    if (!bit(i)) continue;
    if (seen % kSelectStep == 0 && word32(table_, seen / kSelectStep) != i)
      compact_fault("a select structure's table disagrees with its bits");
    ++seen;
  }
  if (seen != ones_) compact_fault("a select structure's bits disagree with its count");
}

std::uint64_t SelectBits::scan(std::uint64_t from, std::uint32_t skip) const {
  // The position of the (skip + 1)-th one at or after `from` (checked at open to exist).
  for (std::uint64_t i = from; i < bits(); ++i)
    if (bit(i) && skip-- == 0) return i;
  compact_fault("a select structure has too few ones");
}

std::uint64_t SelectBits::select(std::uint32_t i) const {
  if (i >= ones_) compact_fault("a select query is out of range");
  return scan(word32(table_, i / kSelectStep), i % kSelectStep);
}

// ---------------------------------------------------------------------------------------------
// CHD

ChdHash::ChdHash(ByteCursor& in) {
  const unsigned char* name = in.take(4, "a block's hash");
  if (std::memcmp(name, "chd", 4) != 0) compact_fault("a block's hash is not a CMPH CHD hash");
  keys_ = in.u32("a block's hash");
  const std::uint32_t ph_size = in.u32("a block's hash");
  const unsigned char* ph_bytes = in.take(ph_size, "a block's hash");
  ByteCursor ph(ph_bytes, ph_bytes + ph_size);
  const std::uint32_t cr_size = in.u32("a block's hash");
  const unsigned char* cr_bytes = in.take(cr_size, "a block's hash");
  ByteCursor cr(cr_bytes, cr_bytes + cr_size);

  if (ph.u32("a block's hash") != kChdPh) compact_fault("a block's hash is not CHD_PH inside");
  if (ph.u32("a block's hash") != kJenkins) compact_fault("a block's hash uses an unknown hash function");
  seed_ = ph.u32("a block's hash");
  bins_ = ph.u32("a block's hash");
  buckets_ = ph.u32("a block's hash");
  if (bins_ < 2 || bins_ <= keys_ || buckets_ == 0 || keys_ == 0) compact_fault("a block's hash has impossible sizes");

  const std::uint32_t count = ph.u32("a block's displacements");
  seq_rem_ = ph.u32("a block's displacements");
  seq_total_ = ph.u32("a block's displacements");
  const std::uint32_t sel_size = ph.u32("a block's displacements");
  if (count != buckets_ || seq_rem_ == 0 || seq_rem_ > 31 || sel_size % 4)
    compact_fault("a block's displacements have impossible sizes");
  seq_sel_ = SelectBits(ph.take(sel_size, "a block's displacements"), sel_size);
  seq_rems_ = ph.take_array(words_for(static_cast<std::uint64_t>(count) * seq_rem_), 4, "a block's displacements");
  seq_codes_ = ph.take_array(words_for(seq_total_), 4, "a block's displacements");
  if (ph.left() != 0) compact_fault("a block's hash has bytes left over");
  if (seq_sel_.ones() != count || seq_sel_.bits() - count != (seq_total_ >> seq_rem_))
    compact_fault("a block's displacements disagree with their index");
  for (std::uint32_t i = 0, before = 0; i < count; ++i) {  // every code inside, none longer than 31 bits
    const std::uint64_t end = cumulative(i);
    if (end < before || end - before > 31 || end > seq_total_) compact_fault("a block's displacements are damaged");
    before = static_cast<std::uint32_t>(end);
    if (i + 1 == count && end != seq_total_) compact_fault("a block's displacements are damaged");
  }

  rank_max_ = cr.u32("a block's empty bins");
  rank_count_ = cr.u32("a block's empty bins");
  rank_rem_ = cr.u32("a block's empty bins");
  const std::uint32_t rank_sel = cr.u32("a block's empty bins");
  if (rank_count_ != bins_ - keys_ || rank_rem_ == 0 || rank_rem_ > 31 || rank_sel % 4 || rank_max_ >= bins_)
    compact_fault("a block's empty bins have impossible sizes");
  rank_sel_ = SelectBits(cr.take(rank_sel, "a block's empty bins"), rank_sel);
  rank_rems_ = cr.take_array(words_for(static_cast<std::uint64_t>(rank_count_) * rank_rem_), 4, "a block's empty bins");
  if (cr.left() != 0) compact_fault("a block's empty bins have bytes left over");
  if (rank_sel_.ones() != (rank_max_ >> rank_rem_) || rank_sel_.bits() - rank_sel_.ones() != rank_count_)
    compact_fault("a block's empty bins disagree with their index");
  // One pass over the bits: the j-th zero stands for empty bin j, its quotient the ones before
  // it. Strictly increasing, ending at max_val.
  std::uint64_t ones = 0, j = 0, last = 0;
  for (std::uint64_t p = 0; p < rank_sel_.bits(); ++p) {
    if (rank_sel_.bit(p)) {
      ++ones;
      continue;
    }
    const std::uint64_t e = (ones << rank_rem_) | bits_at(rank_rems_, j * rank_rem_, rank_rem_);
    if ((j > 0 && e <= last) || e > rank_max_) compact_fault("a block's empty bins are damaged");
    last = e;
    ++j;
  }
  if (last != rank_max_) compact_fault("a block's empty bins are damaged");
}

std::uint64_t ChdHash::cumulative(std::uint32_t i) const {
  return ((seq_sel_.select(i) - i) << seq_rem_) + bits_at(seq_rems_, static_cast<std::uint64_t>(i) * seq_rem_, seq_rem_);
}

std::uint32_t ChdHash::displacement(std::uint32_t g) const {
  const std::uint64_t begin = g == 0 ? 0 : cumulative(g - 1), end = cumulative(g);
  const auto length = static_cast<std::uint32_t>(end - begin);  // <= 31, checked at open
  if (length == 0) return 0;
  return bits_at(seq_codes_, begin, length) + ((1u << length) - 1);
}

std::uint32_t ChdHash::empties_before(std::uint32_t bin) const {
  if (bin > rank_max_) return rank_count_;
  const std::uint32_t quot = bin >> rank_rem_, rem = bin & ((1u << rank_rem_) - 1);
  std::uint64_t p = 0, rank = 0;
  if (quot > 0) {
    p = rank_sel_.select(quot - 1) + 1;
    rank = p - quot;
  }
  // The zeros after the (quot-1)-th one are the empty bins of quotient quot, in order.
  for (;; ++p, ++rank) {
    if (p >= rank_sel_.bits() || rank > rank_count_) compact_fault("a block's empty bins are damaged");
    if (rank_sel_.bit(p)) break;
    if (rank == rank_count_ || bits_at(rank_rems_, rank * rank_rem_, rank_rem_) >= rem) break;
  }
  return static_cast<std::uint32_t>(rank);
}

std::uint32_t ChdHash::slot(std::string_view key, bool signed_bytes) const {
  std::uint32_t h[3];
  jenkins_lookup2(seed_, key, signed_bytes, h);
  const std::uint32_t g = h[0] % buckets_, f = h[1] % bins_, step = h[2] % (bins_ - 1) + 1;
  const std::uint32_t d = displacement(g);
  const auto bin = static_cast<std::uint32_t>((f + static_cast<std::uint64_t>(step) * (d % bins_) + d / bins_) % bins_);
  return bin - empties_before(bin);
}

}  // namespace fstdecode
