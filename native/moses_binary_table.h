// Moses' own binary tables, memory-mapped and read natively: PhraseDictionaryBinary's phrase
// tables (`PREFIX.binphr.*`, written by Moses' processPhraseTable) and LexicalReorderingTableTree's
// reordering tables (`PREFIX.binlexr.*`, processLexicalTable). For a SourceFilter (or none) they
// give the PhraseStore / ReorderingStore the text readers (phrase_table.h) give for the text
// table they were built from, but for the precision of the stored numbers (below).
//
// The format, as Moses' source defines it (moses/TranslationModel/PhraseDictionaryTree.cpp,
// moses/PrefixTree.h, moses/File.h, moses/LVoc.h, moses/PrefixTreeMap.cpp,
// moses/FF/LexicalReordering/LexicalReorderingTable.cpp); every number in the machine's
// (little-endian) byte order, a vector as a u32 count and its elements:
// - vocabularies (`.srcvoc`/`.tgtvoc`; `.voc0`/`.voc1`): text, a line "id word" per word, from the
//   highest id down; a word's id is its rank of first sight in the text table.
// - `.idx`: a vector of i64 offsets into `.srctree`, indexed by the id of a source phrase's first
//   word: the root of the prefix tree of the phrases that begin with it (-1: none).
// - `.srctree`: prefix tree nodes, each a vector of u32 keys (word ids, ascending), a vector of
//   i64 data (one a key: the offset in `.tgtdata` of the record of the phrase that ends there, or
//   -1), and then, without a count, one i64 a key: the offset of the child node (0: none). A root
//   holds the one key of its first word. Nodes are written parent first (a child lies beyond its
//   parent), records in text order (so data offsets give the file order).
// - `.binphr.tgtdata`: a source's record: u32 n, then n translations in text order, each a vector
//   of u32 target word ids (`.tgtvoc`), a vector of f32 scores as the text had them (probabilities,
//   0 and below written as 1e-38; not logged: Moses logs them at load, ln floored at -100); when
//   the last score is 100, a flag, not a score: a vector of u32 sparse feature names (`.tgtvoc`)
//   and one of f32 values follow (already logs; this reader, as the text reader, ignores them);
//   then, in the `.wa` files (Moses reads those when `.srctree.wa` exists), the alignment as the
//   text had it: a u32 length and its bytes. A target word is its factors joined by '|'.
// - `.binlexr`: the key of a row is the source's word ids (`.voc0`), then, in a table conditioned on
//   the target (`.voc1` exists), the word 2^32 - 2 and the target's ids (`.voc1`); its record:
//   u32 n, n candidates each a u32 count of context phrases (0 here; a table conditioned on context
//   is refused) and their vectors, a u32 count of score vectors (1) and the vector of f32 scores,
//   already ln(p) floored at -100.
//
// Precision: a phrase table's score is ln of a float32 probability, so it is within 2^-24 of the
// text reader's ln of the decimal; a reordering score is a float32 of the log, within
// 2^-24 + 2^-23 |score| (the rounding of p, then of its log by a float log within an ulp). Moses'
// writer floors a probability of 0 at 1e-38 (ln: -87.5), where the text reader floors ln(0) at
// -100; this reader keeps what the file holds, as Moses does.
//
// Invariant: the files are untrusted input. Opening checks the index, the vocabularies (ids 0..n-1
// each once) and the first record; every node, offset, count and id read later is checked before
// use, so a truncated or corrupt file gives a MosesBinaryError (one line naming the file), never a
// read outside a mapping. Nothing is read into memory but the vocabularies' indexes.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mapped_file.h"
#include "phrase_table.h"

namespace fstdecode {

struct MosesBinaryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A vocabulary file (LVoc::Write): "id word" lines, ids 0..size()-1 each once; mapped, indexed.
class MosesVocabulary {
 public:
  explicit MosesVocabulary(const std::string& path);
  std::size_t size() const { return spans_.size(); }
  // The word of `id` (id < size()).
  std::string_view word(std::uint32_t id) const {
    const auto& [at, n] = spans_[id];
    return std::string_view(reinterpret_cast<const char*>(file_.data()) + at, n);
  }
  // The id of `w`, or -1.
  std::int64_t find(std::string_view w) const;
  const std::string& path() const { return file_.path(); }

 private:
  MappedFile file_;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> spans_;  // (offset, length) by id
  std::unordered_map<std::string_view, std::uint32_t> index_;
};

// The source prefix tree both formats share (`.idx` and `.srctree`), checked as it is followed.
class MosesPrefixTree {
 public:
  // `records`: the records file the data offsets point into (it outlives the tree).
  MosesPrefixTree(const std::string& idx, const std::string& tree, const MappedFile& records);

  // A position: the key `index` of the node at `node` (a checked node).
  struct Cursor {
    std::uint64_t node = 0;
    std::uint32_t index = 0;
  };
  class Walk;

  const std::string& path() const { return tree_.path(); }
  std::size_t roots() const { return roots_; }
  [[noreturn]] void corrupt(const std::string& what) const;

 private:
  friend class Walk;
  MappedFile idx_, tree_;
  const MappedFile& records_;
  std::size_t roots_ = 0;
};

// One lookup's or enumeration's view of a tree: the nodes it checked (each once) and the nodes an
// enumeration reached (a node reached twice is a corrupt tree, not a second copy of its phrases).
class MosesPrefixTree::Walk {
 public:
  explicit Walk(const MosesPrefixTree& tree) : tree_(tree) {}
  // The phrase of one word `w`: false when no phrase begins with it.
  bool start(std::uint32_t w, Cursor& at);
  // The phrase `at` extended by `w`: false when no phrase continues so.
  bool extend(Cursor& at, std::uint32_t w);
  // The record offset of the phrase at `at`, or -1.
  std::int64_t data(const Cursor& at);
  // Every phrase of the tree, as on(ids, record offset) (only those with a record).
  template <typename On>
  void each(On&& on);
  // Every phrase below `at` (longer, with `at`'s phrase as prefix): on(ids after it, record offset).
  template <typename On>
  void each_below(const Cursor& at, On&& on);

 private:
  struct Node {
    const unsigned char* keys;
    const unsigned char* data;
    const unsigned char* children;
    std::uint32_t size;
  };
  Node node(std::uint64_t offset);
  std::uint32_t key(const Node& n, std::uint32_t i) const { return load32(n.keys + 4 * i); }
  std::uint64_t child(const Node& n, std::uint32_t i) const { return load64(n.children + 8 * i); }
  // The index of `w` in node `n`, or n.size.
  std::uint32_t find(const Node& n, std::uint32_t w) const;
  void reach(std::uint64_t offset);
  template <typename On>
  void below(std::uint64_t child, std::vector<std::uint32_t>& path, On&& on);

  const MosesPrefixTree& tree_;
  std::unordered_map<std::uint64_t, std::uint32_t> checked_;  // node offset -> its key count
  std::unordered_set<std::uint64_t> reached_;
};

// PhraseDictionaryBinary's table `prefix.binphr.*`.
class MosesPhraseTable {
 public:
  // `prefix`: the moses.ini path (`prefix.binphr.idx` ... are read; `prefix` may end in .binphr.idx).
  explicit MosesPhraseTable(const std::string& prefix);

  const std::string& path() const { return prefix_; }
  int num_scores() const { return num_scores_; }
  bool has_alignment() const { return alignment_; }
  // The factors of the first record's target words (2 for "word|tag"), and such a word.
  int factors() const { return factors_; }
  const std::string& factored_word() const { return factored_word_; }
  // The number of source phrases (a walk of the whole tree, once, on first use).
  std::size_t sources() const;

  // The pairs of the sources `filter` keeps (and `keep` accepts), as read_phrase_table keeps them
  // for the text table: sources in file order, pairs in file order, target words' factor 0 only.
  // No filter and no keep: every source. The store's runs() (the text reader's count of sources
  // read, kept or not) is sources() when nothing is kept, else the number kept: counting every
  // source walks the whole tree, which a lookup of a batch should not pay for.
  PhraseStore phrases(SourceFilter* filter, const KeepSource& keep) const;

 private:
  struct Source {
    std::uint64_t record;
    std::vector<std::uint32_t> ids;
  };
  std::vector<Source> kept(SourceFilter* filter, const KeepSource& keep) const;
  [[noreturn]] void corrupt(const std::string& file, const std::string& what) const;
  // Reads the record at `offset` of a source of `source_length` words, on_pair(target words,
  // their first factors, scores, normalized alignment) for each pair; each pair must have
  // `expected` scores (0: the first pair's count). Returns the count.
  template <typename OnPair>
  int read_record(std::uint64_t offset, std::size_t source_length, int expected, OnPair&& on_pair) const;

  std::string prefix_;
  bool alignment_ = false;
  MosesVocabulary source_vocab_, target_vocab_;
  MappedFile records_;
  MosesPrefixTree tree_;
  int num_scores_ = 0, factors_ = 1;
  std::string factored_word_;
  mutable std::once_flag counted_;
  mutable std::size_t sources_ = 0;
};

// LexicalReorderingTableTree's table `prefix.binlexr.*`.
class MosesReorderingTable {
 public:
  explicit MosesReorderingTable(const std::string& prefix);

  const std::string& path() const { return prefix_; }
  int num_scores() const { return num_scores_; }
  bool conditioned_on_target() const { return target_vocab_ != nullptr; }

  // The rows of the sources `filter` keeps (and `keep` accepts), as read_reordering_table keeps
  // them for the text table. No filter and no keep: every row.
  ReorderingStore reordering(SourceFilter* filter, const KeepSource& keep) const;

 private:
  [[noreturn]] void corrupt(const std::string& file, const std::string& what) const;
  // The scores of the record at `offset` (its last candidate's, as the text reader keeps a key's
  // last line), into `out`: `expected` of them (0: the first candidate's count), returned.
  int read_record(std::uint64_t offset, int expected, std::vector<double>& out) const;

  std::string prefix_;
  MosesVocabulary source_vocab_;
  std::unique_ptr<MosesVocabulary> target_vocab_;
  MappedFile records_;
  MosesPrefixTree tree_;
  int num_scores_ = 0;
};

}  // namespace fstdecode
