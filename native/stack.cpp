// The stack decoder (stack.h): a port of fstdecode/search/stack.py, function for function.
//
// The Python names are kept: Tables (tables()), candidates (_candidates), extend (_extend),
// prune (_prune), first_step (_first_step), is_dead, minimal_completion_fits, mq_delta. Every
// floating-point sum is formed in the Python order, so scores agree bit for bit with the Python
// engine given the same LM values; orders that decide ties are replicated (stable sorts, dict
// insertion order = the order keys are first created, k-best lists with earlier insertions first).
//
// Layout: a coverage is a Cov<W> (coverage_set.h). LM contexts are interned per search
// (space::Contexts) and the <s>-tape joins cached per (context, option) (space::BosJoins); a
// recombination key is (coverage, last_t, context id, last phrase's start, next-row id), the last
// two set only with lexicalized reordering (Problem::set_reordering; stack.py's Key). Hypotheses live in one arena per search
// (score, back-pointer, option); a stack holds its keys in creation order with an
// open-addressing index, and is freed once expanded (as Python's `stacks[c] = {}`).
#include "stack.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <cstdio>
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

constexpr double NEG_INF = -std::numeric_limits<double>::infinity();

template <int W>
int mq_delta(const Cov<W>& cov, int last_t, int s, int t) {
  const int g = lowest_uncovered(cov);
  const int length = t - s + 1;
  if (s == g) return 0;
  if (s <= last_t) return 2 * length;
  if (last_t < g) return 2 * (s - g + length);
  return 2 * (s - last_t - 1 + length);
}

inline int plain_delta(int last_t, int s) { return std::abs(last_t + 1 - s); }

// Under Moses' semantics (moses) a covered block reaching word n is never jumped over.
template <int W>
bool minimal_completion_fits(const Cov<W>& cov, int last_t, int n, int d, bool moses) {
  const int g = lowest_uncovered(cov);
  if (g > n) return moses || n - last_t <= d;
  if (std::abs(last_t + 1 - g) > d) return false;
  return !any_block(cov, g, n, [&](int a, int b) { return b - a + 1 > d && !(moses && b == n); });
}

// ---------------------------------------------------------------------------------------------
// Tables (stack.py's Tables/tables()): ranked options per span, ends per start, Pharaoh's
// future-cost table and the one-word-option positions.

struct Ranked {
  double estimate;
  const Option* option;
};

struct Tables {
  int n = 0;
  std::vector<std::vector<int>> ends;            // ends[s]: ascending
  std::vector<std::vector<Ranked>> options;      // options[s * (n + 2) + t]: best estimate first
  std::vector<double> span;                      // span[i * (n + 2) + j]
  std::vector<char> single;                      // single[p]: position p has a one-word option

  const std::vector<Ranked>& at(int s, int t) const {
    return options[static_cast<std::size_t>(s) * (n + 2) + t];
  }
  double span_of(int i, int j) const { return span[static_cast<std::size_t>(i) * (n + 2) + j]; }

  // future_of: the sum of span over the maximal uncovered runs, left to right.
  template <int W>
  double future_of(const Cov<W>& cov) const {
    double got = 0.0;
    int i = 0;
    while (i < n) {
      const int a = cov.next(i, n, false);
      if (a >= n) break;
      const int b = cov.next(a, n, true);  // positions a + 1 .. b are free
      got += span_of(a + 1, b);
      i = b;
    }
    return got;
  }
};

// option_estimate: ŵ(p) plus the LM scores of its first N − 1 words with in-phrase context.
double option_estimate(const Problem& problem, const Option& opt) {
  const int len = static_cast<int>(opt.words.size());
  const int upto = std::min(problem.order() - 1, len);
  double extra = 0.0;  // Python's sum(): 0 + x is x
  for (int i = 0; i < upto; ++i) extra += problem.ngram(opt.words.data(), i, opt.words[static_cast<std::size_t>(i)]);
  return opt.score + extra;
}

Tables make_tables(const Problem& problem) {
  Tables tabs;
  const int n = tabs.n = problem.n();
  const std::size_t width = static_cast<std::size_t>(n) + 2;
  tabs.options.assign(width * width, {});
  for (int s = 1; s <= n; ++s)
    for (const Option& opt : problem.by_start()[static_cast<std::size_t>(s)])
      tabs.options[static_cast<std::size_t>(s) * width + opt.t].push_back({option_estimate(problem, opt), &opt});
  for (auto& ranked : tabs.options)  // sorted(v, key=lambda e: -e[0]): stable, best first
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const Ranked& a, const Ranked& b) { return -a.estimate < -b.estimate; });
  tabs.span.assign(width * width, NEG_INF);
  for (int length = 1; length <= n; ++length)
    for (int i = 1; i <= n - length + 1; ++i) {
      const int j = i + length - 1;
      const auto& ranked = tabs.at(i, j);
      double best = ranked.empty() ? NEG_INF : ranked.front().estimate;
      for (int k = i; k < j; ++k) {
        const double split = tabs.span_of(i, k) + tabs.span_of(k + 1, j);
        if (split > best) best = split;  // max(best, split) keeps best on ties
      }
      tabs.span[static_cast<std::size_t>(i) * width + j] = best;
    }
  tabs.ends.assign(width, {});
  for (int s = 1; s <= n; ++s)
    for (int t = s; t <= n; ++t)
      if (!tabs.at(s, t).empty()) tabs.ends[static_cast<std::size_t>(s)].push_back(t);
  tabs.single.assign(width, 0);
  for (int s = 1; s <= n; ++s) tabs.single[static_cast<std::size_t>(s)] = !tabs.at(s, s).empty();
  return tabs;
}

// ---------------------------------------------------------------------------------------------
// The search.

struct Hyp {
  double score;
  int prev;  // arena index, -1 for the start
  int option;  // Option::id, -1 for the start
};

template <int W>
struct Candidate {
  const Option* option;
  int delta_d;
  Cov<W> coverage;
  double future;
};

template <int W>
struct Entry {  // one recombination key of a stack and its k-best hypotheses
  Cov<W> coverage;
  int last_t;
  int context;
  // With lexicalized reordering, the last phrase's start and next-row id (Problem::lr_row;
  // stack.py's (opt.s, opt.lr_next)); else, and at the start and when closed, 0 and -1.
  int last_s;
  int row;
  double future;  // the same for every hypothesis of the key
  int best;       // nbest == 1: the hypothesis; else an index into Stack::lists
};

struct BudgetExceeded {};

template <int W>
struct Stack {
  std::vector<Entry<W>> entries;  // in order of creation (Python's dict order)
  std::vector<std::vector<int>> lists;
  Index index;
  void release() {
    std::vector<Entry<W>>().swap(entries);
    std::vector<std::vector<int>>().swap(lists);
    index.release();
  }
};

std::string py_float(double x) {  // Python's repr of a float (the shortest that round-trips)
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (std::isnan(x)) return "nan";
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, x);
    if (std::strtod(buffer, nullptr) == x) break;
  }
  std::string out = buffer;
  if (out.find_first_of(".en") == std::string::npos) out += ".0";
  return out;
}

template <int W>
class Search {
 public:
  Search(const Problem& problem, const StackOptions& options)
      // A limit beyond n + 2 allows every jump (no distance here exceeds n + 1); clamping it
      // keeps the arithmetic in range for "no limit" (UNLIMITED = 2**31 - 1).
      : p_(problem), o_(options), n_(problem.n()), d_(std::min(problem.d(), problem.n() + 2)),
        eta_(problem.eta()),
        contexts_(problem.order() - 1), joins_(problem, contexts_, true), tabs_(make_tables(problem)) {
    full_.set_range(0, n_ - 1);
    nbest_ = std::max(1, o_.nbest);
    threshold_ = o_.early_threshold >= 0 ? o_.early_threshold
                 : o_.beam_threshold >= 0 ? o_.beam_threshold
                                          : std::log(1e5);
  }

  Result run() {
    Result result;
    stacks_.resize(static_cast<std::size_t>(n_) + 1);
    try {
      const WordId bos = p_.bos();
      int context = contexts_.intern(&bos, 1);
      Cov<W> zero;
      double score = 0.0, future = tabs_.future_of(zero);
      int last_t = 0;
      if (n_ == 0) {  // nothing to translate: close <s> with </s> at once
        const Joined close = joins_.get(context, p_.eos_option());
        score = close.score;
        future = 0.0;
        last_t = p_.end();
        context = close.last;
      }
      push(0, zero, last_t, context, 0, -1, future, score, -1, -1);
      for (int c = 0; c < n_; ++c) expand_stack(c);
    } catch (const BudgetExceeded&) {
      result.status = "budget";
      result.message = "more than " + std::to_string(o_.max_states) + " hypotheses (--max-states)";
      result.states = states_;
      result.transitions = transitions_;
      return result;
    }
    Stack<W>& last = stacks_[static_cast<std::size_t>(n_)];
    std::vector<int> finals;
    for (std::size_t e = 0; e < last.entries.size(); ++e) for_each_hyp(last, e, [&](int h) { finals.push_back(h); });
    states_ += static_cast<long>(last.entries.size());
    result.states = states_;
    result.transitions = transitions_;
    if (finals.empty()) {
      result.status = "none";
      result.message =
          "no complete hypothesis: every partial hypothesis was pruned or could not finish within "
          "the distortion limit d=" + std::to_string(p_.d()) + "; widen the beam (beam size " +
          std::to_string(o_.beam_size) + ", beam threshold " +
          (o_.beam_threshold >= 0 ? py_float(o_.beam_threshold) : std::string("None")) +
          ", early threshold " + (o_.early_pruning ? py_float(threshold_) : std::string("None")) + ")";
      return result;
    }
    std::stable_sort(finals.begin(), finals.end(),
                     [&](int a, int b) { return -arena_[a].score < -arena_[b].score; });
    const std::size_t k = std::min<std::size_t>(finals.size(), static_cast<std::size_t>(nbest_));
    for (std::size_t i = 0; i < k; ++i) {
      Hypothesis out;
      out.score = arena_[static_cast<std::size_t>(finals[i])].score;
      for (int h = finals[i]; h >= 0 && arena_[static_cast<std::size_t>(h)].option >= 0;
           h = arena_[static_cast<std::size_t>(h)].prev)
        out.options.push_back(p_.option(arena_[static_cast<std::size_t>(h)].option).index);
      std::reverse(out.options.begin(), out.options.end());
      result.hypotheses.push_back(std::move(out));
    }
    return result;
  }

 private:
  // ---- stacks and k-best lists

  template <class F>
  void for_each_hyp(const Stack<W>& stack, std::size_t e, F&& f) const {
    const Entry<W>& entry = stack.entries[e];
    if (nbest_ == 1) {
      f(entry.best);
    } else {
      for (int h : stack.lists[static_cast<std::size_t>(entry.best)]) f(h);
    }
  }
  int head(const Stack<W>& stack, const Entry<W>& entry) const {
    return nbest_ == 1 ? entry.best : stack.lists[static_cast<std::size_t>(entry.best)].front();
  }
  double estimate(const Stack<W>& stack, const Entry<W>& entry) const {
    return arena_[static_cast<std::size_t>(head(stack, entry))].score + entry.future;
  }

  // push(c, key, hyp) with insert_best into the key's list.
  void push(int c, const Cov<W>& cov, int last_t, int context, int last_s, int row, double future,
            double score, int prev, int option) {
    Stack<W>& stack = stacks_[static_cast<std::size_t>(c)];
    const std::uint64_t h =
        key_hash(cov, last_t, context) ^ mix((static_cast<std::uint64_t>(static_cast<std::uint32_t>(row)) << 20) ^
                                             static_cast<std::uint32_t>(last_s));
    int e = stack.index.find(h, [&](int i) {
      const Entry<W>& x = stack.entries[static_cast<std::size_t>(i)];
      return x.last_t == last_t && x.context == context && x.last_s == last_s && x.row == row && x.coverage == cov;
    });
    if (e < 0) {
      ++created_;
      if (o_.max_states > 0 && created_ > o_.max_states) throw BudgetExceeded{};
      e = static_cast<int>(stack.entries.size());
      stack.entries.push_back({cov, last_t, context, last_s, row, future, -1});
      stack.index.insert(h, e);
      if (nbest_ > 1) {
        stack.entries.back().best = static_cast<int>(stack.lists.size());
        stack.lists.emplace_back();
      }
    }
    Entry<W>& entry = stack.entries[static_cast<std::size_t>(e)];
    if (nbest_ == 1) {
      if (entry.best >= 0 && score <= arena_[static_cast<std::size_t>(entry.best)].score) return;
      entry.best = new_hyp(score, prev, option);
      return;
    }
    std::vector<int>& list = stack.lists[static_cast<std::size_t>(entry.best)];
    const std::size_t k = static_cast<std::size_t>(nbest_);
    if (list.size() >= k && score <= arena_[static_cast<std::size_t>(list.back())].score) return;
    std::size_t i = list.size();
    while (i > 0 && arena_[static_cast<std::size_t>(list[i - 1])].score < score) --i;
    list.insert(list.begin() + static_cast<std::ptrdiff_t>(i), new_hyp(score, prev, option));
    if (list.size() > k) list.resize(k);
  }
  int new_hyp(double score, int prev, int option) {
    arena_.push_back({score, prev, option});
    return static_cast<int>(arena_.size() - 1);
  }

  // ---- pruning (_prune)

  bool fits(const Entry<W>& entry) const {
    // not full & ~coverage & ~singles: every uncovered position has a one-word option
    for (int p = entry.coverage.next(0, n_, false); p < n_; p = entry.coverage.next(p + 1, n_, false))
      if (!tabs_.single[static_cast<std::size_t>(p) + 1]) return false;
    return minimal_completion_fits(entry.coverage, entry.last_t, n_, d_, moses_);
  }

  // kept: entry indices in rank order; returns the anchor's index into kept, or -1.
  int prune(const Stack<W>& stack, std::vector<int>& kept) {
    const std::size_t size = stack.entries.size();
    ranked_.resize(size);
    estimates_.resize(size);
    for (std::size_t e = 0; e < size; ++e) {
      ranked_[e] = static_cast<int>(e);
      estimates_[e] = estimate(stack, stack.entries[e]);
    }
    std::stable_sort(ranked_.begin(), ranked_.end(),
                     [&](int a, int b) { return -estimates_[static_cast<std::size_t>(a)] < -estimates_[static_cast<std::size_t>(b)]; });
    kept.assign(ranked_.begin(), ranked_.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(size, static_cast<std::size_t>(std::max(0, o_.beam_size)))));
    if (o_.beam_threshold >= 0 && !kept.empty()) {
      const double floor = estimates_[static_cast<std::size_t>(kept[0])] - o_.beam_threshold;
      std::size_t w = 0;
      for (int e : kept)
        if (estimates_[static_cast<std::size_t>(e)] >= floor) kept[w++] = e;
      kept.resize(w);
    }
    for (std::size_t i = 0; i < kept.size(); ++i)
      if (fits(stack.entries[static_cast<std::size_t>(kept[i])])) return static_cast<int>(i);
    for (std::size_t i = kept.size(); i < size; ++i)
      if (fits(stack.entries[static_cast<std::size_t>(ranked_[i])])) {
        kept.push_back(ranked_[i]);
        return static_cast<int>(kept.size() - 1);
      }
    return -1;
  }

  // ---- expansion (_candidates, _first_step, _extend)

  void candidates(const Entry<W>& entry, double score, bool early, double min_ok,
                  std::vector<Candidate<W>>& out) const {
    const Cov<W>& cov = entry.coverage;
    const int last_t = entry.last_t;
    const bool mq = o_.distortion_estimate;
    const bool bound_by_distortion = early && eta_ >= 0;
    const double estimate = score + entry.future;
    const int lo = std::max(1, last_t + 1 - d_), hi = std::min(n_, last_t + 1 + d_);
    const int g = lowest_uncovered(cov);
    for (int s = lo; s <= hi; ++s) {
      if (cov.get(s - 1)) continue;
      if (bound_by_distortion) {
        const int least = mq ? mq_delta(cov, last_t, s, s) : plain_delta(last_t, s);
        if (estimate - eta_ * least < min_ok) {
          if (mq || s > last_t) break;
          continue;
        }
      }
      for (int t : tabs_.ends[static_cast<std::size_t>(s)]) {
        if (cov.any_in_range(s - 1, t - 1)) break;  // ends ascend: longer phrases overlap too
        if (moses_ && s != g && t + 1 - g > d_) break;  // Moses' gap rule; ends ascend
        const int delta_d = mq ? mq_delta(cov, last_t, s, t) : plain_delta(last_t, s);
        if (bound_by_distortion && estimate - eta_ * delta_d < min_ok) break;
        Cov<W> new_cov = cov;
        new_cov.set_range(s - 1, t - 1);
        if (is_dead(new_cov, t, n_, d_, moses_)) continue;
        const double future = tabs_.future_of(new_cov);
        if (future == NEG_INF) continue;
        const double base = score + future - eta_ * delta_d;
        for (const Ranked& r : tabs_.at(s, t)) {
          if (early && base + r.estimate < min_ok) break;
          out.push_back({r.option, delta_d, new_cov, future});
        }
      }
    }
  }

  Candidate<W> first_step(const Entry<W>& entry) const {
    const int g = lowest_uncovered(entry.coverage);
    Cov<W> coverage = entry.coverage;
    coverage.set_range(g - 1, g - 1);
    const int delta_d = o_.distortion_estimate ? mq_delta(entry.coverage, entry.last_t, g, g)
                                               : plain_delta(entry.last_t, g);
    return {tabs_.at(g, g).front().option, delta_d, coverage, tabs_.future_of(coverage)};
  }

  void expand_stack(int c) {
    Stack<W>& stack = stacks_[static_cast<std::size_t>(c)];
    const int anchor = prune(stack, kept_);
    states_ += static_cast<long>(kept_.size());
    const bool early = o_.early_pruning && !kept_.empty();
    const double min_ok = early ? estimates_[static_cast<std::size_t>(kept_[0])] - threshold_ : 0.0;
    const bool mq = o_.distortion_estimate;
    const WordId eos = p_.eos();
    const int eos_context = contexts_.intern(&eos, 1);
    for (std::size_t i = 0; i < kept_.size(); ++i) {
      const Entry<W> entry = stack.entries[static_cast<std::size_t>(kept_[i])];
      const int head_hyp = head(stack, entry);
      const double head_score = arena_[static_cast<std::size_t>(head_hyp)].score;
      cands_.clear();
      candidates(entry, head_score, early, min_ok, cands_);
      if (static_cast<int>(i) == anchor && early) {
        // Early pruning may skip the anchor's minimal step; keep it (see stack.py).
        const int g = lowest_uncovered(entry.coverage);
        bool found = false;
        for (const auto& cand : cands_)
          if (cand.option->s == g && cand.option->t == g) { found = true; break; }
        if (!found) cands_.push_back(first_step(entry));
      }
      // The hypotheses of the key (copied: pushes may grow the arena).
      scores_.clear();
      prevs_.clear();
      for_each_hyp(stack, static_cast<std::size_t>(kept_[i]), [&](int h) {
        scores_.push_back(arena_[static_cast<std::size_t>(h)].score);
        prevs_.push_back(h);
      });
      for (const auto& cand : cands_) {
        ++transitions_;
        const Option& opt = *cand.option;
        const Joined joined = joins_.get(entry.context, opt);
        const int new_context = joined.last;
        double delta = opt.score + joined.score - eta_ * cand.delta_d;
        Cov<W> key_cov = cand.coverage;
        int key_t = opt.t, key_context = new_context, key_s = 0, key_row = -1;
        if (lr_) {
          delta += p_.reordering_score(entry.last_s, entry.last_t, entry.row, opt);
          key_s = opt.s;
          key_row = p_.lr_row(opt.id);
        }
        double future = cand.future;
        if (cand.coverage == full_) {
          const double close = joins_.get(new_context, p_.eos_option()).score;
          // stack.py's final_delta: uncharged, the modified Δd charged the jump in advance.
          const int jump = p_.end() - 1 - opt.t;
          const int final_delta = p_.charge_final() ? (mq ? 0 : jump) : (mq ? -jump : 0);
          delta += close - eta_ * final_delta;
          key_t = p_.end();
          key_context = eos_context;
          key_s = 0;
          key_row = -1;
          future = 0.0;
        }
        const int target = c + opt.t - opt.s + 1;
        for (std::size_t h = 0; h < scores_.size(); ++h)
          push(target, key_cov, key_t, key_context, key_s, key_row, future, scores_[h] + delta, prevs_[h], opt.id);
      }
    }
    stack.release();  // expanded stacks are reached only through back-pointers
  }

  const Problem& p_;
  const StackOptions& o_;
  const int n_, d_;
  const double eta_;
  const bool moses_ = p_.moses(), lr_ = p_.has_reordering();
  int nbest_ = 1;
  double threshold_ = 0.0;
  Cov<W> full_;
  Contexts contexts_;
  BosJoins joins_;
  Tables tabs_;
  std::vector<Stack<W>> stacks_;
  std::vector<Hyp> arena_;
  long created_ = 0, states_ = 0, transitions_ = 0;
  // scratch
  std::vector<int> kept_, ranked_;
  std::vector<double> estimates_, scores_;
  std::vector<int> prevs_;
  std::vector<Candidate<W>> cands_;
};

}  // namespace

Result stack_search(const Problem& problem, const StackOptions& options) {
  if (!problem.finished()) throw std::logic_error("stack_search: call Problem.finish() first");
  return with_width(problem, "the native stack decoder",
                    [&](auto w) { return Search<decltype(w)::value>(problem, options).run(); });
}

}  // namespace fstdecode
