// The n-gram LM of the native core: an interned vocabulary and ARPA back-off scoring with
// KenLM's semantics, mirroring fstdecode/io/arpa.py (ArpaLM) value for value.
//
// Invariants (as ArpaLM's): 1 <= order; <unk> is always in the vocabulary (log10 prob -100,
// KenLM's default, when the file has none); backoffs are kept only for n-grams shorter than
// the order; scores are natural logs (log10 x ln 10). N-grams are stored in one hash table per
// order keyed by a 64-bit hash of their word ids, as KenLM's probing tables are.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fstdecode {

using WordId = std::int32_t;

// A malformed or unreadable ARPA file. `line` is 1-based (0: no particular line). The Python
// layer re-reads such a file with its own parser, so the user sees one canonical message.
struct ArpaFormatError : std::runtime_error {
  ArpaFormatError(long line, const std::string& what) : std::runtime_error(what), line(line) {}
  long line;
};

// Words <-> dense ids. Ids are assigned in order of first sight; ids are never reused.
class Vocab {
 public:
  WordId intern(std::string_view word);
  // The id of `word`, or -1 when it was never interned.
  WordId find(std::string_view word) const;
  const std::string& word(WordId id) const { return words_[static_cast<std::size_t>(id)]; }
  std::size_t size() const { return words_.size(); }

 private:
  std::unordered_map<std::string, WordId> ids_;
  std::vector<std::string> words_;
};

class NgramLM {
 public:
  // Parses the text of an ARPA file (already read and decompressed by the Python layer) up to
  // `max_order` (0: the file's order); throws ArpaFormatError on anything ArpaLM.from_file
  // would refuse.
  static NgramLM parse_arpa(std::string_view text, int max_order);

  int order() const { return order_; }
  const Vocab& vocab() const { return vocab_; }
  // The LM's id of a word: its own, or <unk>'s when out of vocabulary.
  WordId index(std::string_view word) const;
  WordId unk() const { return unk_; }

  // ln p(w | ctx[0..n)), the context's most recent word last; only the last order-1 are used.
  double logprob(const WordId* ctx, int n, WordId w) const;
  // ln backoff of the n-gram ctx[0..n) (0 when absent).
  double backoff(const WordId* ctx, int n) const;
  // True iff some stored n-gram longer than ctx[0..n) starts with it (KenLM's right-state
  // minimisation may drop ctx[0] when this is false).
  bool extends(const WordId* ctx, int n) const;
  // The number of n-grams of each order read from the file (ARPA's \data\ counts).
  const std::vector<long>& counts() const { return counts_; }

 private:
  struct Entry {
    double prob = 0.0;     // ln; -inf for probability zero
    double backoff = 0.0;  // ln
    bool stored = false;   // an n-gram of the model (not only a prefix of one)
    bool extends = false;  // a prefix of a longer stored n-gram
  };
  const Entry* lookup(const WordId* ids, int n) const;
  Entry& slot(const WordId* ids, int n);

  int order_ = 0;
  WordId unk_ = 0;
  Vocab vocab_;
  std::vector<long> counts_;
  std::vector<std::unordered_map<std::uint64_t, Entry>> tables_;  // tables_[n-1]: n-grams
};

std::uint64_t hash_ngram(const WordId* ids, int n);

}  // namespace fstdecode
