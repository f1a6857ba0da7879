// The coverage-vector DP (coverage.h): a port of fstdecode/search/coverage_dp.py.
//
// Python's names and orders are kept: layers[c] holds the states covering c tokens in order of
// creation (Python's dict order); each state's hypotheses are a k-best list kept by insert_best
// (search/kbest.py: best first, earlier insertions first among equal scores); a back-pointer is
// (previous state, rank, option) as in Python, the previous state's layer being the current one
// minus the option's length. Every floating-point sum is formed in the Python order, so scores
// agree bit for bit with the Python engine given the same LM values.
//
// Layout: a coverage is a C (coverage_set.h). LM contexts are interned per search
// (space::Contexts); the join of an <s> tape ending in a context with an option
// (fstdecode.statespace.ngram.joined for a = (0, (), last_t, context), c = None) is cached per
// (context, option) (space::BosJoins). A layer's hash index is freed once the layer is complete
// (when it is expanded); its states stay, for the back-pointers.
#include "coverage.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "coverage_set.h"
#include "statespace.h"

namespace fstdecode {
namespace {

using space::BosJoins;
using space::Contexts;
using space::Index;
using space::Joined;

// ---------------------------------------------------------------------------------------------
// The DP.

struct Hyp {
  double score;
  int prev;    // the previous state's index in its layer (-1: the start)
  int rank;    // the rank of the previous hypothesis in that state's list
  int option;  // Option::id (-1: the start)
};

template <class C>
struct State {
  C coverage;
  int last_t;
  int context;
  int last_s;  // the reordering state (coverage_dp.py; exact.cpp's State): 0 and -1 without one
  int row;
  int count;  // hypotheses held (at most nbest)
  int list;   // nbest == 1: unused; else an index into Layer::lists
  Hyp best;   // nbest == 1: the hypothesis
};

template <class C>
struct Layer {
  std::vector<State<C>> states;  // in order of creation (Python's dict order)
  std::vector<std::vector<Hyp>> lists;
  Index index;
};

struct BudgetExceeded {
  std::string message;
};

// A DP over every coverage cannot skip one: a state beyond WinCov's window ends the search as the
// budget does (the line then gets the stack decoder's derivation, not proven).
constexpr const char* BEYOND_WINDOW =
    "a coverage reached beyond the core's window of 448 positions right of its first gap";

// insert_best(entries, item, k, first) of search/kbest.py, on a list of `count` hypotheses.
// Returns the new count.
inline int insert_best(Hyp* list, int count, int k, const Hyp& item) {
  const double s = item.score;
  if (count >= k && s <= list[count - 1].score) return count;
  int i = count;
  while (i > 0 && list[i - 1].score < s) --i;
  if (i >= k) return count;  // inserted past the end, then cut off
  const int kept = std::min(count + 1, k);
  for (int j = kept - 1; j > i; --j) list[j] = list[j - 1];
  list[i] = item;
  return kept;
}

template <class C>
class Search {
 public:
  Search(const Problem& problem, const CoverageOptions& options)
      // A limit beyond n + 2 allows every jump (none here exceeds n + 1); clamping it keeps the
      // arithmetic in range for "no limit" (UNLIMITED = 2**31 - 1).
      : p_(problem), o_(options), n_(problem.n()), end_(problem.end()),
        d_(std::min(problem.d(), problem.n() + 2)), eta_(problem.eta()), nbest_(std::max(1, options.nbest)),
        contexts_(problem.order() - 1), joins_(problem, contexts_, options.minimize) {
    if (n_ > 0) full_.set_range(0, n_ - 1);
  }

  Result run() {
    Result result;
    layers_.resize(static_cast<std::size_t>(n_) + 1);
    try {
      const WordId bos = p_.bos();
      const int context = contexts_.intern(&bos, 1);
      const C zero;
      const int start = add_state(layers_[0], zero, 0, context, 0, -1, hash_of(zero, 0, context, 0, -1));
      insert(layers_[0], start, {0.0, -1, -1, -1});
      for (int c = 0; c <= n_; ++c) expand(c);
    } catch (const BudgetExceeded& e) {
      result.status = "budget";
      result.message = e.message;
      result.states = states_;
      result.transitions = transitions_;
      return result;
    }
    result.states = states_;
    result.transitions = transitions_;
    // The final jump into </s>, from every full coverage that can make it.
    struct Final {
      double score;
      int state, rank;
    };
    std::vector<Final> finals;
    const Layer<C>& last = layers_[static_cast<std::size_t>(n_)];
    for (std::size_t e = 0; e < last.states.size(); ++e) {
      const State<C>& st = last.states[e];
      if (!p_.moses() && end_ - st.last_t - 1 > d_) continue;
      const Joined closed = joins_.get(st.context, p_.eos_option());
      const double close = p_.charge_final() ? closed.score - eta_ * (end_ - st.last_t - 1) : closed.score;
      const Hyp* hyps = list_of(last, st);
      for (int r = 0; r < st.count; ++r) {
        // insert_best(finals, (score, (key, rank)), nbest, first)
        const double s = hyps[r].score + close;
        if (static_cast<int>(finals.size()) >= nbest_ && s <= finals.back().score) continue;
        std::size_t i = finals.size();
        while (i > 0 && finals[i - 1].score < s) --i;
        finals.insert(finals.begin() + static_cast<std::ptrdiff_t>(i), {s, static_cast<int>(e), r});
        if (static_cast<int>(finals.size()) > nbest_) finals.resize(static_cast<std::size_t>(nbest_));
      }
    }
    if (finals.empty()) {
      result.status = "none";
      // message "": no derivation satisfies the distortion limit (Python writes the text:
      // fstdecode.problem.problem.no_derivation_message)
      return result;
    }
    for (const Final& f : finals) {
      Hypothesis out;
      out.score = f.score;
      int c = n_, state = f.state, rank = f.rank;
      while (true) {
        const Layer<C>& layer = layers_[static_cast<std::size_t>(c)];
        const Hyp& h = list_of(layer, layer.states[static_cast<std::size_t>(state)])[rank];
        if (h.option < 0) break;
        const Option& opt = p_.option(h.option);
        out.options.push_back(opt.index);
        c -= opt.t - opt.s + 1;
        state = h.prev;
        rank = h.rank;
      }
      std::reverse(out.options.begin(), out.options.end());
      result.hypotheses.push_back(std::move(out));
    }
    result.optimal = true;
    return result;
  }

 private:
  const Hyp* list_of(const Layer<C>& layer, const State<C>& st) const {
    return nbest_ == 1 ? &st.best : layer.lists[static_cast<std::size_t>(st.list)].data();
  }

  static std::uint64_t hash_of(const C& cov, int t, int ctx, int last_s, int row) {
    return key_hash(cov, t, ctx) ^
           mix((static_cast<std::uint64_t>(static_cast<std::uint32_t>(row)) << 20) ^ static_cast<std::uint32_t>(last_s));
  }

  int add_state(Layer<C>& layer, const C& cov, int last_t, int context, int last_s, int row, std::uint64_t h) {
    const int e = static_cast<int>(layer.states.size());
    State<C> st;
    st.coverage = cov;
    st.last_t = last_t;
    st.context = context;
    st.last_s = last_s;
    st.row = row;
    st.count = 0;
    st.list = -1;
    st.best = {0.0, -1, -1, -1};
    if (nbest_ > 1) {
      st.list = static_cast<int>(layer.lists.size());
      layer.lists.emplace_back(static_cast<std::size_t>(nbest_));
    }
    layer.states.push_back(st);
    layer.index.insert(h, e);
    return e;
  }

  // The state (cov, last_t, context) of `layer`, created (and counted) if new.
  int state_of(Layer<C>& layer, const C& cov, int last_t, int context, int last_s, int row) {
    const std::uint64_t h = hash_of(cov, last_t, context, last_s, row);
    const int e = layer.index.find(h, [&](int i) {
      const State<C>& x = layer.states[static_cast<std::size_t>(i)];
      return x.last_t == last_t && x.context == context && x.last_s == last_s && x.row == row && x.coverage == cov;
    });
    if (e >= 0) return e;
    ++states_;
    if (o_.max_states >= 0 && states_ > o_.max_states)
      throw BudgetExceeded{"more than " + std::to_string(o_.max_states) + " states (--max-states)"};
    return add_state(layer, cov, last_t, context, last_s, row, h);
  }

  void insert(Layer<C>& layer, int e, const Hyp& item) {
    State<C>& st = layer.states[static_cast<std::size_t>(e)];
    Hyp* list = nbest_ == 1 ? &st.best : layer.lists[static_cast<std::size_t>(st.list)].data();
    st.count = insert_best(list, st.count, nbest_, item);
  }

  void expand(int c) {
    Layer<C>& layer = layers_[static_cast<std::size_t>(c)];
    layer.index.release();  // complete: every transition into it comes from a smaller layer
    const auto& by_start = p_.by_start();
    for (std::size_t e = 0; e < layer.states.size(); ++e) {
      const State<C> st = layer.states[e];  // a copy: the layer is not written while expanded
      if (st.coverage == full_) continue;
      const Hyp* list = list_of(layer, layer.states[e]);
      scores_.assign(static_cast<std::size_t>(st.count), 0.0);
      for (int r = 0; r < st.count; ++r) scores_[static_cast<std::size_t>(r)] = list[r].score;
      const int lo = std::max(1, st.last_t + 1 - d_), hi = std::min(n_, st.last_t + 1 + d_);
      const bool moses = p_.moses(), lr = p_.has_reordering();
      const int g = lowest_uncovered(st.coverage);
      for (int s = lo; s <= hi; ++s) {
        if (st.coverage.get(s - 1)) continue;
        const int jump = std::abs(st.last_t + 1 - s);
        for (const Option& opt : by_start[static_cast<std::size_t>(s)]) {
          if (st.coverage.any_in_range(s - 1, opt.t - 1)) continue;
          if (moses && s != g && opt.t + 1 - g > d_) continue;  // Moses' gap rule
          C cov = st.coverage;
          if (!cov.set_range(s - 1, opt.t - 1)) throw BudgetExceeded{BEYOND_WINDOW};
          // The final jump into </s> must be possible from a full coverage (paper's semantics).
          const bool full = cov == full_;
          if (full && !moses && end_ - opt.t - 1 > d_) continue;
          ++transitions_;
          const Joined joined = joins_.get(st.context, opt);
          double delta = opt.score + joined.score - eta_ * jump;
          int last_s = 0, row = -1;
          if (lr) {
            delta += p_.reordering_score(st.last_s, st.last_t, st.row, opt);
            last_s = p_.reordering_reads_start() ? opt.s : 0;
            row = p_.lr_row(opt.id);
          }
          Layer<C>& target = layers_[static_cast<std::size_t>(c + opt.t - opt.s + 1)];
          const int to = state_of(target, cov, opt.t, joined.last, last_s, row);
          for (int r = 0; r < st.count; ++r)
            insert(target, to, {scores_[static_cast<std::size_t>(r)] + delta, static_cast<int>(e), r, opt.id});
        }
      }
    }
  }

  const Problem& p_;
  const CoverageOptions& o_;
  const int n_, end_, d_;
  const double eta_;
  const int nbest_;
  C full_;
  Contexts contexts_;
  BosJoins joins_;
  std::vector<Layer<C>> layers_;
  long states_ = 1, transitions_ = 0;  // the start state counts, as in Python
  std::vector<double> scores_;
};

}  // namespace

Result coverage_search(const Problem& problem, const CoverageOptions& options) {
  if (!problem.finished()) throw std::logic_error("coverage_search: call Problem.finish() first");
  if (options.nbest < 1) throw std::invalid_argument("coverage_search: options.nbest < 1");
  return with_coverage(problem, [&](auto c) { return Search<typename decltype(c)::type>(problem, options).run(); });
}

}  // namespace fstdecode
