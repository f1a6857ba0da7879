// Moses' ProbingPT phrase tables (CreateProbingPT, "API_VERSION 15"), read natively: a folder of
// files that are memory-mapped, never trusted. A decode looks up the n-grams of its batch (a
// SourceFilter's sentences) and gets the PhraseStore the text reader (phrase_table.h) keeps for
// the same filter from the table's text twin, and, when the pairs carry lexicalized-reordering
// scores (Moses2's form), a ReorderingStore of them.
//
// The folder (Moses' probingpt/ writer; layout on a little-endian 64-bit machine):
//   config           text, "key\tvalue" lines: API_VERSION 15, uniq_entries (the sources),
//                    num_scores, num_lex_scores (reordering scores after them), log_prob (0/1).
//   probing_hash.dat a linear-probing hash of 16-byte buckets {u64 key, u64 value}, key 0 empty;
//                    buckets = max(n + 1, (u64)(1.2f * (float)n)), n = uniq_entries (no rounding);
//                    a key's first bucket is key % buckets, then the next ones, wrapping.
//                    key = sum_i id(w_i) << i over the source's words (mod 2^64), id(w) = the sum
//                    of the MurmurHash64A (seed 0) of w's '|'-separated pieces; value = the offset
//                    in TargetColl.dat of the source's record (u64 max: a prefix, no record).
//   TargetColl.dat   per source, in text-file order: u64 count, then per pair (in file order)
//                    u32 alignment id, u32 (non-terminal alignment id), u16 target ids, u16 (0),
//                    2 bytes padding, num_scores + num_lex_scores float32, the u32 target ids.
//   TargetVocab.dat  text, "word\tid" lines, ids 1..n.
//   source_vocabids  text, "word\tid" lines, id = the word's MurmurHash64A.
//   Alignments.dat   text, "id\ts t s t ... \n" lines: each alignment's points.
// Scores: log_prob 1 stores max(ln p, -100) computed in float, with ln 1 = 0 written as 1e-10;
// log_prob 0 stores p, and Moses takes max(ln p, -100) when it reads it. Either way the store
// gets the text reader's score: ln of the stored p in double (floored at -100), or the stored ln
// with the 1e-10 read back as 0 (no other positive float below 1.2e-7 is an ln of a float).
//
// The format keeps no source text: only the keys' hashes. So the table is read only for a
// filter (whose n-grams are looked up), and a key that another source phrase shares (a hash
// collision) gives that phrase's pairs, as it does in Moses.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "binary_table.h"
#include "mapped_file.h"
#include "phrase_table.h"

namespace fstdecode {

constexpr int kProbingApiVersion = 15;

class ProbingTable {
 public:
  // Opens the ProbingPT folder `folder`: every file mapped and checked (config fields, the hash
  // file's size, every vocabulary and alignment line); a bad one throws BinaryFormatError, one
  // line naming the file.
  explicit ProbingTable(const std::string& folder);

  const std::string& path() const { return folder_; }
  int num_scores() const { return config_.num_scores; }
  int num_lex_scores() const { return config_.num_lex_scores; }
  bool log_prob() const { return config_.log_prob; }
  std::size_t sources() const { return config_.sources; }

  // The pairs of the n-grams of `filter`'s sentences that the table holds (and `keep` accepts):
  // sources in text-file order (their records' order), pairs in file order. A null filter
  // throws BinaryFormatError (there are no sources to enumerate).
  PhraseStore phrases(SourceFilter* filter, const KeepSource& keep) const;
  // The reordering scores kept in the pairs of those sources, from the `property_index`-th on
  // (Moses2's LexicalReordering property-index=): rows keyed (source, target).
  ReorderingStore reordering(SourceFilter* filter, const KeepSource& keep, int property_index) const;

 private:
  struct Hit {
    std::vector<std::string_view> words;
    std::uint64_t offset;
  };
  // The config file's fields (and the hash's bucket count they give).
  struct Config {
    int num_scores = 0, num_lex_scores = 0;
    bool log_prob = false;
    std::size_t sources = 0, buckets = 0;
  };
  struct Alignment {
    std::string text;  // normalized: "s-t" points sorted, each once
    long long max_source = -1, max_target = -1;
  };
  [[noreturn]] void corrupt(const MappedFile& file, const std::string& what) const;
  // The folder's config (its errors name the file; an older format's is refused by name).
  static Config read_config(const std::string& folder);
  void read_source_vocab();
  void read_target_vocab();
  void read_alignments();
  // The word's id (the sum of its pieces' hashes), or false when a piece is not a source word.
  bool source_id(std::string_view word, std::uint64_t& id) const;
  bool find(std::uint64_t key, std::uint64_t& value) const;
  std::vector<Hit> kept(SourceFilter* filter, const KeepSource& keep) const;
  // Every pair of the kept sources, each offset and id checked: on_source(words) per source,
  // then on_pair(target words, its num_scores + num_lex_scores stored floats, its alignment).
  template <typename OnSource, typename OnPair>
  void walk(SourceFilter* filter, const KeepSource& keep, OnSource&& on_source, OnPair&& on_pair) const;
  // A stored float as the text reader's score (see above).
  double score(float stored) const;

  std::string folder_;
  Config config_;  // read first: an older format is refused before its other files are looked for
  MappedFile hash_, targets_, target_vocab_, source_vocab_, alignments_file_;
  std::vector<std::uint64_t> source_ids_;       // sorted
  std::vector<std::string_view> target_words_;  // by id (0: none), into target_vocab_
  std::vector<bool> target_utf8_;               // by id: whether the word is UTF-8
  std::vector<Alignment> alignments_;
};

}  // namespace fstdecode
