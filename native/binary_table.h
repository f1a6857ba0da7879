// Binarized tables (`fstdecode binarize`): a phrase table's or a reordering table's every entry,
// grouped by source phrase, in one file that is memory-mapped, not read. A decode looks up the
// source phrases of its batch (a SourceFilter's n-grams) and gets the PhraseStore (or
// ReorderingStore) the text reader would have kept for that filter: the same pairs, in file
// order, so the same table-limit ranking (applied at lookup, with the weights of the day).
//
// Format (version kBinaryTableVersion; native byte order, checked by a marker): a 256-byte
// header (magic "fstdecode table\n", version, kind, counts, the source file's stamp, the file's
// own size, and each section's [begin, end)), then 8-aligned sections: the source file's path;
// the vocabulary (offsets, bytes, and an open-addressing hash of ids); the source phrases (word
// ids by offsets, and a hash of handles); per source its entries [pair_off[h], pair_off[h+1]);
// per entry its target words (by offsets), num_scores doubles and an alignment id; the
// alignment strings. A reordering table's entries are (target, row): an `f` table's targets are
// empty.
//
// Invariant: the file is untrusted input. Opening checks the header and every section's bounds
// and size; a lookup checks each offset and id it follows, so a truncated or corrupt file gives
// a BinaryFormatError (one line naming the file), never a read outside the mapping.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "mapped_file.h"
#include "phrase_table.h"

namespace fstdecode {

constexpr std::uint32_t kBinaryTableVersion = 1;

enum BinaryKind { BINARY_PHRASES = 1, BINARY_REORDERING_FE = 2, BINARY_REORDERING_F = 3 };

struct BinaryFormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
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

 private:
  [[noreturn]] void corrupt(const std::string& what) const;
  template <typename T>
  const T* section(int i, std::size_t& count) const;
  std::string_view word(std::uint32_t id) const;
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
};

}  // namespace fstdecode
