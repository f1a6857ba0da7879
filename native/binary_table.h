// Binarized tables (`fstdecode binarize`): a phrase table's or a reordering table's every entry,
// grouped by source phrase, in one file that is memory-mapped, not read. A decode looks up the
// source phrases of its batch (a SourceFilter's n-grams) and gets the PhraseStore (or
// ReorderingStore) the text reader would have kept for that filter: the same pairs, in file
// order, so the same table-limit ranking (applied at lookup, with the weights of the day).
//
// Format (version kBinaryTableVersion; native byte order, checked by a marker): a 272-byte
// header (magic "fstdecode table\n", version, kind, counts, the source file's stamp, the file's
// own size, and each section's [begin, end)), then 8-aligned sections: the source file's path;
// the vocabulary (u64 offsets, bytes, and an open-addressing hash of u32 ids + 1), numbered most
// frequent first; a hash of source handles + 1 (u32); per source h its record's [off[h],
// off[h+1]) (u64) in the records section; the records; each score column's code (2 bytes: the
// ScoreFormat its numbers were read through, plus 0x80 for a column of negative numbers, and its
// usual exponent: ColumnCode, decimal_code.h); the
// alignments' u64 offsets and bytes, numbered most frequent first (id 0 need not be "").
//
// A source's record is a byte stream of varints (decimal_code.h), read front to back by `walk`:
//   n (>= 1), n word ids;  e (>= 1), the number of entries;  then each entry in file order:
//   t, t target word ids (t >= 1 in a phrase table; a reordering table's `f` entries have t = 0);
//   a phrase table's alignment id;  num_scores score codes (decimal_code.h), column by column;
// and ends exactly at off[h+1]. A score code holds the decimal the text had (m, k) when the
// column's transform of m / 10^k (ln for probabilities, floored at -100: stored_score) gives the
// stored double bit for bit (checked as it is written), else the double's 8 bytes. A reordering
// table's entries are (target, row), grouped by source (grouped()). The decoder takes the log
// with the reading machine's std::log, as the text reader would there: for a text number of at
// most 15 significant digits the decimal found is that number itself (a shorter one differs by
// far more than an ulp of its log), so the decode is the text reader's own computation.
//
// Invariant: the file is untrusted input. Opening checks the header and every section's bounds
// and size; a lookup checks each offset and id it follows, so a truncated or corrupt file gives
// a BinaryFormatError (one line naming the file), never a read outside the mapping.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "decimal_code.h"
#include "mapped_file.h"
#include "phrase_table.h"

namespace fstdecode {

constexpr std::uint32_t kBinaryTableVersion = 2;

enum BinaryKind { BINARY_PHRASES = 1, BINARY_REORDERING_FE = 2, BINARY_REORDERING_F = 3 };

struct BinaryFormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A score column's code (decimal_code.h): the transform the reader put its text numbers through
// (a phrase table's tm-score-format; a reordering table's are probabilities) and its usual
// number of digits after the point. Chosen per column at build time from a sample; any choice
// decodes bit for bit (each code is checked as it is written), a good one makes most codes short.
struct ColumnCode {
  ScoreFormat format = SCORE_LN;
  unsigned exponent = 0;
  bool negative = false;  // the usual sign of the text's numbers (logs are negative)
  // The stored score of the text number v (the decoder's transform).
  double operator()(double v) const { return stored_score(format, v); }
  // A number near the text's, for the stored score y (where the encoder's search starts).
  double guess(double y) const {
    static const double ln10 = std::log(10.0);
    return format == SCORE_PROB ? std::exp(y) : format == SCORE_LOG10 ? y / ln10 : y;
  }
  void put(std::string& out, double y) const { put_decimal(out, y, exponent, negative, guess(y), *this); }
};

// Writes `store` (every entry; kind BINARY_*) to `path` (the caller renames it into place).
void write_binary_table(const PhraseStore& store, int kind, const SourceStamp& stamp, const std::string& path);
// A reordering table's rows grouped by source phrase, as a PhraseStore (scores: the rows).
PhraseStore grouped(const ReorderingStore& store);

// Whether `path` starts with the binary table magic (whatever its version).
bool is_binary_table(const std::string& path);

class BinaryTable {
 public:
  explicit BinaryTable(const std::string& path);

  int kind() const;
  int num_scores() const;
  int max_source_length() const;
  std::size_t sources() const;
  std::size_t entries() const;
  const SourceStamp& stamp() const { return stamp_; }
  const std::string& path() const { return file_.path(); }

  // The phrase pairs of the sources `filter` keeps (and `keep` accepts), as the text reader
  // keeps them: sources in file order, pairs in file order. No filter and no keep: every source.
  PhraseStore phrases(SourceFilter* filter, const KeepSource& keep) const;
  // The rows of a reordering table for the sources kept.
  ReorderingStore reordering(SourceFilter* filter, const KeepSource& keep) const;

  struct Header;
  class Record;

 private:
  [[noreturn]] void corrupt(const std::string& what) const;
  template <typename T>
  const T* section(int i, std::size_t& count) const;
  std::string_view word(std::uint64_t id) const;
  std::int64_t find_word(std::string_view w) const;
  std::int64_t find_source(const std::vector<std::string_view>& words) const;
  std::vector<std::uint32_t> kept_sources(SourceFilter* filter, const KeepSource& keep) const;
  // Every entry of the kept sources, each offset and id checked: on_source(words) per source,
  // then on_entry(target words, its num_scores() scores, its alignment text) per entry.
  template <typename OnSource, typename OnEntry>
  void walk(SourceFilter* filter, const KeepSource& keep, OnSource&& on_source, OnEntry&& on_entry) const;

  MappedFile file_;
  const Header* header_ = nullptr;
  SourceStamp stamp_;
  std::vector<ColumnCode> columns_;  // num_scores() of them, checked at open
};

}  // namespace fstdecode
