// The n-gram LM of the native core: an interned vocabulary and ARPA back-off scoring with
// KenLM's semantics, mirroring fstdecode/io/arpa.py (ArpaLM) value for value.
//
// Invariants (as ArpaLM's): 1 <= order; <unk> is always in the vocabulary (log10 prob -100,
// KenLM's default, when the file has none); backoffs are kept only for n-grams shorter than
// the order; scores are natural logs (log10 x ln 10). N-grams are stored in one hash table per
// order >= 2 keyed by a 64-bit hash of their word ids, as KenLM's probing tables are (a
// collision between two n-grams of one order is ignored, as in KenLM; unigrams are a vector).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "huge_pages.h"
#include "language_model.h"

namespace fstdecode {

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
  // The id of `word`, or -1 when it was never interned (nor made an alias).
  WordId find(std::string_view word) const;
  // Makes `spelling` another name of the word `id`: find(spelling) == id, word(id) unchanged
  // (how "<UNK>" in an ARPA file reads as "<unk>").
  void alias(std::string_view spelling, WordId id);
  const std::string& word(WordId id) const { return words_[static_cast<std::size_t>(id)]; }
  std::size_t size() const { return words_.size(); }
  const std::vector<std::pair<std::string, WordId>>& aliases() const { return aliases_; }

 private:
  struct Slot {
    std::uint64_t hash = 0;
    WordId id = -1;  // -1: empty
  };
  void grow();
  std::vector<Slot> slots_;  // open addressing, linear probing; size a power of 2
  std::vector<std::string> words_;
  std::vector<std::pair<std::string, WordId>> aliases_;
};

class NgramLM final : public LanguageModel {
 public:
  // Parses the text of an ARPA file (already read and decompressed by the Python layer) up to
  // `max_order` (0: the file's order); throws ArpaFormatError on anything ArpaLM.from_file
  // would refuse.
  static NgramLM parse_arpa(std::string_view text, int max_order);

  int order() const override { return order_; }
  const Vocab& vocab() const { return vocab_; }
  std::size_t vocab_size() const override { return vocab_.size(); }
  // The LM's id of a word: its own, or <unk>'s when out of vocabulary.
  WordId index(std::string_view word) const override;
  WordId unk() const override { return unk_; }

  // ln p(w | ctx[0..n)), the context's most recent word last; only the last order-1 are used.
  double logprob(const WordId* ctx, int n, WordId w) const override;
  float log10_float(const WordId* ctx, int n, WordId w) const override;
  // Prefetches the slots logprob(ctx, n, w) probes first (each order's home slot).
  void prefetch(const WordId* ctx, int n, WordId w) const override;
  // ln p(w) as stored (ArpaLM.unigram_logprob); w must be a valid id.
  double unigram(WordId w) const override { return unigrams_[static_cast<std::size_t>(w)].prob; }
  // ln backoff of the n-gram ctx[0..n) (0 when absent).
  double backoff(const WordId* ctx, int n) const override;
  // True iff some stored n-gram longer than ctx[0..n) starts with it (KenLM's right-state
  // minimisation may drop ctx[0] when this is false).
  bool extends(const WordId* ctx, int n) const override;
  // Reads each suffix's entry once (extends and backoff from the same slot), every suffix's
  // slot prefetched first so that their misses overlap.
  int trim(const WordId* ctx, int n, double* backoffs) const override;
  // Prefetches the slot trim(ctx, n, _) probes first for each suffix.
  void prefetch_trim(const WordId* ctx, int n) const override;
  // The suffixes' backoffs, each suffix's slot prefetched first (their misses overlap).
  void facts(const WordId* ctx, int n, double* out) const override;
  // logprob from the slots of w's n-grams alone (each order's, prefetched together; no backoff
  // is looked up: the facts are summed), and the next context's facts and right-state tests
  // from the same slots.
  double logprob_facts(const WordId* ctx, int n, WordId w, const double* facts, const NextFacts* next) const override;
  // Prefetches the slots logprob_facts(ctx, n, w, ...) reads (w's n-grams only).
  void prefetch_facts(const WordId* ctx, int n, WordId w) const override;
  // The number of n-grams of each order read from the file (ARPA's \data\ counts).
  const std::vector<long>& counts() const override { return counts_; }
  // Whether every stored n-gram's suffix (its first word dropped) is a stored n-gram too, as
  // KenLM's tables make it: a query may then look its orders up shortest first and stop at the
  // first absent one (no longer n-gram ending so is stored, nor a prefix of one). Checked as the
  // file is read (conservatively: false may be said of a closed model, never true of another).
  bool suffix_closed() const { return suffix_closed_; }

  // A model using only n-grams up to `order` (1 <= order <= order()), exactly as
  // parse_arpa(text, order) would read it: the backoffs of order `order` are dropped and
  // extends() only counts n-grams up to `order`. Throws std::invalid_argument otherwise.
  NgramLM restrict(int order) const;

 private:
  struct Entry {
    double prob = 0.0;        // ln; -inf for probability zero
    double backoff = 0.0;     // ln; nonzero only for stored n-grams shorter than the order
    std::uint8_t stored = 0;  // 1: an n-gram of the model (not only a prefix of one)
    std::int32_t min_ext = 0; // the length of the shortest stored n-gram that has this one as a
                              // proper prefix (0: none), so restrict() can recompute extends
  };
  // One order's n-grams: open addressing with linear probing, keyed by hash_ngram (never 0), at
  // a load of at most 0.5 (so a probe always meets an empty slot; find() is bounded anyway).
  struct Slot {
    std::uint64_t key = 0;  // 0: empty
    Entry entry;
  };
  class Table {
   public:
    void reserve(std::size_t n);
    const Entry* find(std::uint64_t key) const {
      if (cap_ == 0) return nullptr;
      std::size_t i = key & mask_;
      for (std::size_t probes = 0; probes < cap_; ++probes, i = (i + 1) & mask_) {
        const Slot& s = slots_[i];
        if (s.key == key) return &s.entry;
        if (s.key == 0) return nullptr;
      }
      return nullptr;
    }
    // Starts loading the slot where find(key) begins (lookups of several orders overlap).
    void prefetch(std::uint64_t key) const {
#if defined(__GNUC__)
      if (cap_ != 0) __builtin_prefetch(&slots_[key & mask_]);
#else
      (void)key;
#endif
    }
    // The entry of `key`, default-constructed if new. References die at the next insert.
    Entry& insert(std::uint64_t key);
    template <class F>
    void for_each(F&& f) const {
      for (const Slot& s : slots_)
        if (s.key != 0) f(s.key, s.entry);
    }
    std::size_t size() const { return size_; }

   private:
    // cap_ of them, a power of 2; in huge pages, so that a probe rarely misses the TLB
    std::vector<Slot, HugePageAllocator<Slot>> slots_;
    std::size_t cap_ = 0, mask_ = 0, size_ = 0;
  };
  friend class ArpaParser;
  friend class LmImage;  // lm_image.cpp, the writer of LM images

  int order_ = 0;
  bool suffix_closed_ = true;
  WordId unk_ = 0;
  Vocab vocab_;
  std::vector<long> counts_;
  std::vector<Entry> unigrams_;  // by WordId
  std::vector<Table> tables_;    // tables_[n-2]: the n-grams of order n >= 2
};

// The key of the n-gram ids[0..n) in its order's table: a fold from the last word to the
// first (so the keys of all suffixes come in one pass), never 0.
std::uint64_t hash_ngram(const WordId* ids, int n);

}  // namespace fstdecode
