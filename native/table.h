// The model's phrase table as the native core holds it, and a sentence's Problem built from it
// natively: the port of fstdecode/problem/sentence.py (build_sentence) and of SearchProblem's
// option building (fstdecode/problem/problem.py: _option, _pair_score), so that a native search
// never needs the Python form of its problem.
//
// Python registers every source phrase of the table once (add_source); a sentence is then looked
// up here (sentence(): its hits, spans with a source handle, in Python's option order, unknown
// words' copies included) and made a Problem whose options, option order, word ids and ŵ(p)
// are those SearchProblem builds (same floating-point operations, in the same order).
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "language_model.h"
#include "phrase_table.h"
#include "problem.h"

namespace fstdecode {

// The weights ŵ(p) uses (fstdecode.model.features.Weights).
struct PairWeights {
  std::vector<double> tm;  // one per phrase-table score
  double word = 0.0;       // WordPenalty: times -|e|
  double phrase = 0.0;     // PhrasePenalty: once per phrase
  double unknown = 0.0;    // UnknownWordPenalty: times unknown_value per source word
  double lm = 0.0;
};

// How a PhraseIndex makes its pairs' lexicalized reordering rows (ReorderingModel.row, then
// .weighted): kind is Problem::set_reordering's orientation class, with `orientations` per
// direction; a direction's row is the table columns [column, column + orientations) (column -1:
// no such direction), each times its weight (weights[o]). A pair the table has no row for reads
// `defaults` (has_defaults), else zeros. Moses' rows (set_moses_reordering) are each pair's whole
// table row, else the defaults, else none, `moses_width` values each.
struct ReorderingSpec {
  int kind = Problem::LR_NONE;
  int orientations = 0;
  int back_column = -1, next_column = -1;
  std::vector<double> back_weights, next_weights;
  bool has_defaults = false;
  std::vector<double> defaults;
  int moses_width = 0;
};

class PhraseIndex {
 public:
  // Invariant: every registered pair has weights.tm.size() scores and a non-empty target.
  // moses_values: keep what Moses' n-best arithmetic reads (each pair's scores as
  // moses_table_value floats, every word's text), so that sentence() sets its Problem's
  // MosesValues (moses_float.h): ~4 bytes per score more.
  PhraseIndex(const LanguageModel& lm, PairWeights weights, double unknown_value, bool moses_values = false);

  // Registers the pairs of one source phrase, in table order: targets[i] are pair i's words and
  // scores[i * tm + k] its k-th score. Returns its handle. Each source is registered once.
  int add_source(const std::vector<std::string>& source, const std::vector<std::vector<std::string>>& targets,
                 const std::vector<double>& scores);
  // Registers every source of `store`, in its order, so that handle h is the store's source h
  // (the index must be empty).
  void add_store(const PhraseStore& store);
  // The number of source phrases registered.
  std::size_t size() const { return sources_.size(); }
  // The problem of the tokens `words` (build_sentence): every span of up to the longest
  // registered source that is a registered source is a hit, and a token that is no one-word
  // source first gets its copy (handle -1, an unknown word). The hits (0-based inclusive spans
  // and handles) are appended to s, t and handle in SearchProblem's option order (by start; an
  // unknown word's copy first, then by end, each source's pairs in table order); option k of
  // the result has index k, the k-th pair of the hits. With moses_values, the Problem's
  // MosesValues hold the options' scores, unknown-word flags and word texts.
  // From now on sentence() sets its Problem's reordering rows (and with moses_values its Moses
  // rows) from `store` (kept alive by the caller), made once per registered source on first use.
  void set_reordering(const ReorderingStore& store, ReorderingSpec spec);
  std::unique_ptr<Problem> sentence(const std::vector<std::string>& words, int d, double eta,
                                    std::vector<int>& s, std::vector<int>& t, std::vector<int>& handle);

 private:
  struct Pair {
    std::vector<int> words;  // global ids (index into words_)
    double score;            // ŵ(p)
    std::size_t moses = 0;   // with moses_values: its scores are moses_tm_[moses .. moses + tm)
  };
  int intern(const std::string& word);
  // Appends to `out` the reordering row (lr_stride_ values) of the pair (source words [a, b] of `words`, target `pair`).
  void reordering_row(const std::vector<std::string>& words, int a, int b, const Pair& pair,
                      std::vector<double>& out) const;
  // The first of handle h's rows in lr_ (made on first use).
  std::size_t reordering_rows(int h, const std::vector<std::string>& words, int a, int b);
  double pair_score(const double* scores, const std::vector<int>& words, bool unknown,
                    int source_length) const;

  const LanguageModel& lm_;
  PairWeights weights_;
  double unknown_value_;
  std::unordered_map<std::string, int> ids_;  // target word -> global id
  std::vector<WordId> lm_of_;                 // global id -> LM id
  std::vector<std::vector<Pair>> sources_;    // handle -> its pairs
  // Source phrases: words interned, a phrase keyed by its word ids (4 bytes each) -> handle.
  std::unordered_map<std::string, int> source_words_;
  std::unordered_map<std::string, int> source_handles_;
  int longest_ = 0;
  // Moses' translation of an unknown word: copied through, every score 0 (sentence.unknown_pair).
  Pair unknown_pair(const std::string& word);
  int bos_, eos_;
  bool moses_values_;
  std::vector<float> moses_tm_;    // each pair's weights.tm.size() scores, from its Pair::moses
  std::vector<std::string> text_;  // global id -> word
  // Reordering (set_reordering): rows by pair, back_width + next_width weighted values, then
  // moses_width Moses values, then its kind (set_moses_reordering's 0, 1, 2), in one row of
  // lr_stride_ doubles; lr_first_[h]: handle h's first row, or -1 until made.
  const ReorderingStore* lr_store_ = nullptr;
  ReorderingSpec lr_;
  int lr_back_ = 0, lr_next_ = 0;
  std::size_t lr_stride_ = 0;
  std::vector<double> lr_rows_;
  std::vector<long> lr_first_;
};

}  // namespace fstdecode
