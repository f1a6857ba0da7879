// One sentence's search problem, as fstdecode/problem/problem.py (SearchProblem) builds it in
// Python: the native searches receive it whole and return whole results (the seam is one search
// per sentence, never a call per state).
//
// Positions follow Chang & Collins shifted to 0: <s> is 0, token k is k + 1, </s> is end = n + 1.
// Words are the *problem's* ids (SearchProblem.vocab), so that states are identical to the
// Python engine's; lm_id maps them to the LM's ids for scoring.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "language_model.h"

namespace fstdecode {

struct Option {
  int s = 0, t = 0;           // span (search positions, inclusive)
  double score = 0.0;         // ŵ(p): the weighted features p alone determines (Figure 4)
  std::vector<WordId> words;  // the target words (problem ids)
  int index = -1;             // position in the Python option list (-1: <s> or </s>)
  int id = -1;                // set by Problem: order of add_option from 0; </s> is option_count()
  WordId first() const { return words.front(); }
  WordId last() const { return words.back(); }
};

// Moses' own values of a problem's options, for its n-best arithmetic (moses_float.h), by option
// id; set by PhraseIndex::sentence or from Python (Problem.set_moses_values) before the lines are
// written. A vector left empty means the values were not given.
struct MosesValues {
  int num_tm = 0;
  std::vector<float> tm;               // id * num_tm + k: moses_table_value of the pair's k-th score
  std::vector<unsigned char> unknown;  // id -> 1 for an unknown word's copy
  std::vector<std::string> words;      // problem word id -> its text
  // Lexicalized reordering rows: id * lr_width + c; lr_found[id] 0 where the option has none (no cost).
  int lr_width = 0;
  std::vector<float> lr;
  std::vector<unsigned char> lr_found;
  // Word alignments within each option: the points [align_offset[id], align_offset[id + 1]) of
  // align (source, target pairs, flattened), sorted as Moses prints them.
  std::vector<int> align_offset, align;
};

inline int search_order(const LanguageModel& lm) { return lm.order() < 2 ? 2 : lm.order(); }

class Problem {
 public:
  Problem(const LanguageModel& lm, std::vector<WordId> lm_id, int n, int d, double eta, double lm_weight,
          WordId bos, WordId eos);
  Problem(const Problem&) = delete;  // option() and the searches point into by_start
  Problem& operator=(const Problem&) = delete;
  void add_option(Option option);  // a phrase option (1 <= s <= t <= n)
  void finish();                   // adds </s> and groups options; call once, before searching

  const LanguageModel& lm() const { return lm_; }
  int n() const { return n_; }
  int end() const { return n_ + 1; }
  int d() const { return d_; }
  double eta() const { return eta_; }
  // The search's order: the LM's, at least 2 (a unigram LM is searched as a bigram LM without
  // bigrams: its contexts are one word, which it ignores).
  int order() const { return order_; }
  double lm_weight() const { return lm_weight_; }
  WordId bos() const { return bos_; }
  WordId eos() const { return eos_; }
  const Option& bos_option() const { return bos_option_; }
  const Option& eos_option() const { return eos_option_; }
  // by_start[p]: the options starting at position p (1 <= p <= end; [end] holds only </s>).
  const std::vector<std::vector<Option>>& by_start() const { return by_start_; }

  // The number of options added (their ids are 0 .. option_count() - 1, in order of addition).
  int option_count() const { return option_count_; }
  // The option whose Option::id is `id` (0 <= id <= option_count(), the last being </s>), for
  // the searches' back-pointers; after finish().
  const Option& option(int id) const { return *by_id_[static_cast<std::size_t>(id)]; }
  bool finished() const { return finished_; }
  // Moses' values of the options (moses_float.h); empty until set.
  const MosesValues& moses_values() const { return moses_values_; }
  MosesValues& moses_values() { return moses_values_; }
  // The LM id of a problem id.
  WordId lm_id(WordId w) const { return lm_id_[static_cast<std::size_t>(w)]; }
  // The number of problem ids.
  std::size_t vocab_size() const { return lm_id_.size(); }

  // ---- Moses' models (fstdecode/model/lexical_reordering.py, distortion.py)
  //
  // Lexicalized reordering, as SearchProblem.reordering_score: `kind` is the orientation class
  // (LR_MSD, LR_MSLR, LR_MONOTONICITY, LR_LEFTRIGHT; LR_NONE: no model); back[id * back_width + o]
  // is the weighted score option `id` pays when its own orientation is o, next[id * next_width
  // + o] the one it pays when the phrase after it has orientation o (Option.lr_back, lr_next;
  // a width is 0 without that direction). Options with equal next rows (compared with ==, as
  // Python's tuples) share a row id (lr_row), so that a state keyed on it recombines them as
  // Python's keys on the row do. Call after finish().
  void set_reordering(int kind, int back_width, int next_width, std::vector<double> back, std::vector<double> next);
  // The distortion semantics: Moses' (the gap rule t + 1 - g <= d unless s == g, no limit on
  // the jump into </s>) or the paper's; charge_final: the distortion includes the jump into </s>.
  void set_semantics(bool moses, bool charge_final) { moses_ = moses; charge_final_ = charge_final; }
  bool moses() const { return moses_; }
  bool charge_final() const { return charge_final_; }
  bool has_reordering() const { return lr_kind_ != LR_NONE; }
  int reordering_kind() const { return lr_kind_; }
  // Does the next orientation read the last phrase's start (msd and mslr: the swap test)?
  bool reordering_reads_start() const { return lr_kind_ == LR_MSD || lr_kind_ == LR_MSLR; }
  bool reordering_has_next() const { return lr_next_width_ > 0; }
  // The row id of option id's next row (0 for every option without a forward direction).
  int lr_row(int id) const { return lr_next_width_ > 0 ? lr_row_[static_cast<std::size_t>(id)] : 0; }
  int lr_rows() const { return lr_next_width_ > 0 ? lr_row_count_ : 1; }
  // The same for backward rows: options with equal backward rows share a row id (the head of a
  // signature-state tape keys on it, as reordering.py's head keys on Option.lr_back); 0 for every
  // option without a backward direction.
  int lr_back_row(int id) const { return lr_back_width_ > 0 ? lr_back_row_[static_cast<std::size_t>(id)] : 0; }
  // The orientation of [s, t] after [prev_s, prev_t] (prev_row < 0: [s, t] is the first phrase).
  int orientation(int prev_s, int prev_t, bool first, int s, int t) const;
  // SearchProblem.reordering_score of appending `opt` after the phrase [prev_s, prev_t] whose
  // next row is prev_row (prev_row < 0: opt is the first phrase), with Python's operations:
  // back[o] (first), else back[o] + next[o], a missing direction reading 0.0.
  double reordering_score(int prev_s, int prev_t, int prev_row, const Option& opt) const;
  // The weighted backward score of option id at orientation o, and of next row `row` (0 without
  // the direction).
  double lr_back(int id, int o) const {
    return lr_back_width_ > 0 ? lr_back_[static_cast<std::size_t>(id) * lr_back_width_ + o] : 0.0;
  }
  double lr_next(int row, int o) const {
    return lr_next_width_ > 0 ? lr_next_rows_[static_cast<std::size_t>(row) * lr_next_width_ + o] : 0.0;
  }
  // The weighted backward score of backward row `row` (lr_back_row) at orientation o (0.0
  // without the direction).
  double lr_back_of_row(int row, int o) const {
    return lr_back_width_ > 0 ? lr_back_rows_[static_cast<std::size_t>(row) * lr_back_width_ + o] : 0.0;
  }
  // The largest score of next row `row` and of backward row `row` (reordering.best: max(row),
  // the first of equal ones; 0.0 without the direction).
  double lr_next_best(int row) const { return row_best(lr_next_rows_, lr_next_width_, row); }
  double lr_back_best(int row) const { return row_best(lr_back_rows_, lr_back_width_, row); }
  int orientations() const { return lr_orientations_; }

  static constexpr int LR_NONE = 0, LR_MSD = 1, LR_MSLR = 2, LR_MONOTONICITY = 3, LR_LEFTRIGHT = 4;

  // Weighted LM scores over problem ids (as SearchProblem.ngram/backoff/extends: weight x
  // lm.logprob, the same floating-point operations). ngram is cached per problem on the exact
  // (context, word) ids. Only the last order - 1 context words are used. Not thread-safe: a
  // Problem is searched by one thread at a time (each sentence has its own Problem).
  double ngram(const WordId* context, int n, WordId w) const;
  // Starts loading what ngram(context, n, w) will read when it is not cached yet (the LM's
  // LanguageModel::prefetch); changes no result.
  void prefetch_ngram(const WordId* context, int n, WordId w) const;
  double backoff(const WordId* context, int n) const;
  bool extends(const WordId* context, int n) const;
  // LanguageModel::trim over problem ids, each backoff weighted as backoff() weights it:
  // the number d of leading words right-state minimisation drops from context[0..n), with
  // backoffs[i] == backoff(context + i, n - i) for i < d. backoffs has room for n values.
  int trim(const WordId* context, int n, double* backoffs) const;
  // Starts loading what trim(context, n, _) will read (LanguageModel::prefetch_trim).
  void prefetch_trim(const WordId* context, int n) const;
  // KenLM-style right states over problem ids (LanguageModel::facts, logprob_facts,
  // prefetch_facts): facts are the LM's own backoffs (not weighted), by suffix length;
  // ngram_facts(context, n, w, facts(context, n), next) == ngram(context, n, w) bit for bit
  // (lm_weight x the same logprob), uncached. Contexts of any length (the LM reads its last
  // lm().order() - 1 words).
  void facts(const WordId* context, int n, double* out) const;
  double ngram_facts(const WordId* context, int n, WordId w, const double* facts, const NextFacts* next) const;
  void prefetch_facts(const WordId* context, int n, WordId w) const;
  // Whether the searches that join on the <s> tape (space::BosJoins: stack, coverage DP,
  // exact's bounds) score with facts (the default) or with ngram and trim. Both give the same
  // results; the switch is for tests and measurements.
  bool lm_facts() const { return lm_facts_; }
  void set_lm_facts(bool on) { lm_facts_ = on; }
  double ngram(const std::vector<WordId>& context, WordId w) const {
    return ngram(context.data(), static_cast<int>(context.size()), w);
  }
  double backoff(const std::vector<WordId>& context) const {
    return backoff(context.data(), static_cast<int>(context.size()));
  }
  bool extends(const std::vector<WordId>& context) const {
    return extends(context.data(), static_cast<int>(context.size()));
  }

 private:
  const LanguageModel& lm_;
  int order_;  // search_order(lm_), read once (LanguageModel::order is a virtual call)
  bool lm_facts_ = true;
  std::vector<WordId> lm_id_;
  int n_, d_;
  double eta_, lm_weight_;
  WordId bos_, eos_;
  Option bos_option_, eos_option_;
  std::vector<std::vector<Option>> by_start_;
  std::vector<const Option*> by_id_;  // by Option::id, set by finish()
  int option_count_ = 0;
  bool finished_ = false;
  bool moses_ = false, charge_final_ = true;
  MosesValues moses_values_;
  int lr_kind_ = LR_NONE, lr_back_width_ = 0, lr_next_width_ = 0, lr_orientations_ = 0, lr_row_count_ = 0;
  std::vector<double> lr_back_;       // by option id
  std::vector<double> lr_next_rows_;  // by row id
  std::vector<int> lr_row_;           // option id -> row id
  std::vector<double> lr_back_rows_;  // by backward row id
  std::vector<int> lr_back_row_;      // option id -> backward row id
  static int share_rows(const std::vector<double>& flat, int width, std::size_t count, std::vector<double>& rows,
                        std::vector<int>& ids);
  static double row_best(const std::vector<double>& rows, int width, int row) {
    if (width == 0) return 0.0;
    const double* at = rows.data() + static_cast<std::size_t>(row) * static_cast<std::size_t>(width);
    double best = at[0];
    for (int o = 1; o < width; ++o)
      if (at[o] > best) best = at[o];
    return best;
  }
  // ngram's cache: open addressing keyed on the exact ids (the last order - 1 context words
  // and the word; a hash of them alone could collide), keys stored inline.
  struct NgramCache {
    struct Slot {
      std::uint64_t hash = 0;
      std::int32_t id = -1;  // -1: empty
    };
    std::vector<Slot> slots;
    std::vector<WordId> keys;  // per entry: length, then up to `order` ids (stride order + 1)
    std::vector<double> values;
  };
  mutable NgramCache cache_;
  void grow_cache() const;
  // The key of (context[0..n), w), context already cut to its last order - 1 words, and its
  // cached value (null when absent).
  static std::uint64_t cache_hash(const WordId* context, int n, WordId w);
  const double* cached(const WordId* context, int n, WordId w, std::uint64_t h) const;
  mutable std::vector<WordId> lm_buffer_;
  // context[0..n) in LM ids: into `small` (room for kSmallContext) when it fits, else into
  // lm_buffer_; returns the ids.
  static constexpr int kSmallContext = 16;
  const WordId* to_lm(const WordId* context, int n, WordId* small) const {
    WordId* out = small;
    if (n > kSmallContext) {
      lm_buffer_.resize(static_cast<std::size_t>(n));
      out = lm_buffer_.data();
    }
    for (int i = 0; i < n; ++i) out[i] = lm_id_[static_cast<std::size_t>(context[i])];
    return out;
  }
};

// A search result: up to k hypotheses, best first; each is its score and the Python indices of
// its options in target order (without <s> and </s>).
struct Hypothesis {
  double score;
  std::vector<int> options;
  // The stack decoder with nbest > 1 only (Moses' n-best arithmetic, TrellisPath: see
  // fstdecode/reference/moses_float.py): one entry per option; empty where the hypothesis made of the
  // previous option's recombination winner and this option is itself its key's winner (the best
  // hypothesis of its recombination key, by Moses' keys), else the winner's options.
  std::vector<std::vector<int>> winners;
};

struct Result {
  std::vector<Hypothesis> hypotheses;
  bool optimal = false;
  long states = 0;
  long transitions = 0;
  // "": finished; "budget": more than max_states (hypotheses may then hold the best found);
  // "none": no derivation exists (or none survived the beam).
  std::string status;
  std::string message;
  // A bound on every derivation's score, when the search proves one (NaN: none).
  double upper_bound = std::numeric_limits<double>::quiet_NaN();
  // The A*'s report (exact.h; NaN and 0 for the other searches): root_bound, the start state's f
  // (the bound on every derivation before anything is expanded; NaN when the bounds were too big
  // to build); and the seconds of its phases: the stack decoder's lower bound (exact_decode),
  // building the heuristic's tables, and the A*'s expansion.
  double root_bound = std::numeric_limits<double>::quiet_NaN();
  double lower_seconds = 0.0;
  double bounds_seconds = 0.0;
  double search_seconds = 0.0;
};

}  // namespace fstdecode
