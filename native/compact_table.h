// Moses' compact tables, read natively and memory-mapped: a phrase table of
// PhraseDictionaryCompact (`.minphr`, written by processPhraseTableMin) and a lexicalized
// reordering table of LexicalReorderingTableCompact (`.minlexr`, processLexicalTableMin)
// (Junczys-Dowmunt 2012, "Phrasal Rank-Encoding", PBML 98). Read from the format; no Moses or
// CMPH code is used. A decode looks up its batch's source phrases (a SourceFilter's n-grams) and
// gets the PhraseStore the text reader gives for the table's text twin and that filter.
//
// Format (native order, x86-64: size_t = u64, bool = u8; Moses' classes in brackets):
//  Source index [BlockHashIndex]: u64 orderBits, u64 fingerprintBits, u64 rel (the index's
//    offset from byte 16); then one block per 2^orderBits keys, in key order: a CHD hash
//    (cmph_chd.h) and [PairedPackedArray] u64 n, u64 bytes, n packed (order, fingerprint)
//    pairs of orderBits + fingerprintBits bits (low bits first; order in the low bits) by slot.
//    At 16 + rel: the landmarks (each block's first key; a string vector), u64 blocks, u64
//    offsets of the blocks from byte 16, u64 keys. A key is the source "w1 w2 ||| " (a phrase
//    table; a reordering table's is "f ||| e ||| ", or "f ||| "), the keys sorted bytewise
//    (LC_ALL=C). Its number: the block b whose landmark is the last <= the key, then
//    b * 2^orderBits + the order at the key's slot, when the fingerprint there is the low
//    fingerprintBits of MurmurHash3_x86_32(key, seed 100000); else the key is absent (a
//    fingerprint match of an absent key, 1 in 2^16, finds another key's entry, as in Moses).
//  A string vector [StringVector]: u8 sorted; positions [MonotonicVector]: u8 final, u64 n,
//    the last position (u64, or u32 for a vector of symbols), u64 d, d u32 of codes (per 32
//    positions: the first as a varint of 31-bit u32 groups, the next 31 as differences in
//    Simple-9 words), u64 a, a u32 offsets of each group of 32 in the codes; u64 size, the bytes.
//  A phrase table then has [PhraseDecoder]: u32 coding (0 none, 1 REnc, 2 PREnc), u64 scores,
//    u8 alignment, u64 maximum rank, u64 longest source; (REnc: source words and a lexicon);
//    the target words (a string vector, id 0 the stop symbol), the Huffman code of target
//    symbols (u32), u8 one code per score, the score codes (float), the alignment code (two u8,
//    (255, 255) the stop) when alignment; then the record of each source (a string vector of
//    bytes). A record is a bit stream of pairs in file order: symbols up to the stop, the
//    scores, the alignment points up to the stop; it ends when at most 8 bits are left.
//  A reordering table then has u64 scores, u8 one code per score, the codes, and the record of
//    each key (its scores' codes).
// A score is float(ln p) floored at -100 (Moses' FloorScore(TransformScore(p)) on the float the
// creator parsed): so it agrees with the text reader's double to float precision, not bit for
// bit.
//
// Invariant: the file is untrusted. Opening checks every size and offset of the index and
// codes (and each block's hash against its landmark); a lookup checks each position and code it
// follows; so a truncated or corrupt file gives a CompactFormatError (one line naming the file),
// never a read outside the mapping. Only coding "none" is decoded (REnc and PREnc are refused).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cmph_chd.h"
#include "huffman.h"
#include "mapped_file.h"
#include "phrase_table.h"

namespace fstdecode {

struct CompactFormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A string vector's positions [MonotonicVector<PosT, unsigned, 32>].
class MonotonicPositions {
 public:
  MonotonicPositions() = default;
  MonotonicPositions(ByteCursor& in, std::size_t pos_width);
  std::uint64_t size() const { return size_; }
  std::uint64_t at(std::uint64_t i) const;

 private:
  std::uint64_t size_ = 0, diffs_ = 0, anchors_ = 0;
  const unsigned char* diff_ = nullptr;
  const unsigned char* anchor_ = nullptr;
};

// A vector of byte strings [StringVector<unsigned char, PosT>], its bytes mapped.
class StringList {
 public:
  StringList() = default;
  StringList(ByteCursor& in, std::size_t pos_width, const char* what);
  std::uint64_t size() const { return positions_.size(); }
  std::string_view at(std::uint64_t i) const;

 private:
  MonotonicPositions positions_;
  const unsigned char* bytes_ = nullptr;
  std::uint64_t n_bytes_ = 0;
  const char* what_ = "";
};

// The source index [BlockHashIndex]: the number of a key, or nothing.
class KeyIndex {
 public:
  KeyIndex() = default;
  explicit KeyIndex(ByteCursor& in);  // leaves `in` after the index
  std::uint64_t size() const { return keys_; }
  std::optional<std::uint64_t> find(std::string_view key) const;
  bool signed_bytes() const { return signed_bytes_; }
  const StringList& landmarks() const { return landmarks_; }

 private:
  struct Block {
    std::shared_ptr<const ChdHash> hash;
    std::uint64_t n = 0;
    const unsigned char* packed = nullptr;
  };
  std::optional<std::uint64_t> in_block(std::size_t b, std::string_view key, bool signed_bytes) const;
  std::uint64_t order_bits_ = 0, print_bits_ = 0, keys_ = 0;
  bool signed_bytes_ = true;
  StringList landmarks_;
  std::vector<Block> blocks_;
};

// MurmurHash3_x86_32 (Austin Appleby's public-domain hash) of `key` from `seed`.
std::uint32_t murmur3_32(std::string_view key, std::uint32_t seed);

class CompactPhraseTable {
 public:
  explicit CompactPhraseTable(const std::string& path);
  const std::string& path() const { return file_.path(); }
  int num_scores() const { return static_cast<int>(num_scores_); }
  int max_source_length() const { return static_cast<int>(max_length_); }
  std::size_t sources() const { return static_cast<std::size_t>(index_.size()); }
  bool has_alignments() const { return alignment_; }

  // The pairs of the sources `filter` keeps (and `keep` accepts), as the text reader keeps them
  // from the text twin: sources in file order, pairs in file order. A compact table cannot list
  // its sources (only their hashes are stored), so a filter is needed (std::invalid_argument).
  PhraseStore phrases(SourceFilter* filter, const KeepSource& keep) const;

 private:
  [[noreturn]] void corrupt(const std::string& what) const;
  struct Pair {
    std::vector<std::string_view> target;
    std::vector<double> scores;
    std::string alignment;
  };
  // The pairs of record `id` for a source of `length` words; false when Moses would find none
  // (an alignment point outside the pair: its check against fingerprint false positives).
  bool decode(std::uint64_t id, std::size_t length, std::vector<Pair>& out) const;

  MappedFile file_;
  KeyIndex index_;
  std::uint64_t num_scores_ = 0, max_length_ = 0;
  bool alignment_ = false;
  StringList target_words_;
  HuffmanCode symbols_, alignment_code_;
  std::vector<HuffmanCode> score_codes_;
  StringList records_;
};

class CompactReorderingTable {
 public:
  explicit CompactReorderingTable(const std::string& path);
  const std::string& path() const { return file_.path(); }
  int num_scores() const { return static_cast<int>(num_scores_); }
  std::size_t size() const { return static_cast<std::size_t>(index_.size()); }
  // Whether keys are (source, target) (`fe`), not source alone (`f`): read off the landmarks.
  bool conditioned_on_target() const { return with_target_; }

  // The row of (source, target) (target ignored for `f`), in `row`; false when absent.
  bool lookup(const std::vector<std::string_view>& source, const std::vector<std::string_view>& target,
              std::vector<double>& row) const;
  // The rows of every (source, target) pair of `pairs` the table holds (of every source, for
  // `f`): a decoder asks a reordering table only for the pairs of its phrase table, so these are
  // all the rows its lookups can find, the same as the text reader's for the same pairs.
  ReorderingStore reordering(const PhraseStore& pairs) const;

 private:
  [[noreturn]] void corrupt(const std::string& what) const;

  MappedFile file_;
  KeyIndex index_;
  std::uint64_t num_scores_ = 0;
  bool with_target_ = true;
  std::vector<HuffmanCode> codes_;
  StringList records_;
};

}  // namespace fstdecode
