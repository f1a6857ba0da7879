// The stack decoder (stack.h): a port of fstdecode/search/stack.py, function for function.
//
// The Python names are kept: Tables (tables()), candidates (_candidates), extend (_extend),
// prune (_prune), first_step (_first_step), is_dead, minimal_completion_fits, mq_delta. Every
// floating-point sum is formed in the Python order, so scores agree bit for bit with the Python
// engine given the same LM values; orders that decide ties are replicated (stable sorts, dict
// insertion order = the order keys are first created). With nbest > 1 the search is the 1-best's,
// and every push is kept as an arc of its key; the k best derivations are extracted from those
// arcs lazily (kbest.h), as Moses' n-best follows a winner's recombination arcs.
//
// Layout: a coverage is a C (coverage_set.h). LM contexts are interned per search
// (space::Contexts) and the <s>-tape joins scored with KenLM-style right states, uncached
// (space::BosJoins over a FactJoiner; with Problem::lm_facts off, cached per (context, option)); a
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
#include <map>
#include <queue>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "coverage_set.h"
#include "kbest.h"
#include "statespace.h"

namespace fstdecode {
namespace {

using space::BosJoins;
using space::Contexts;
using space::Index;
using space::Joined;

constexpr double NEG_INF = -std::numeric_limits<double>::infinity();
// How many candidates ahead expand_stack prefetches the LM entries of their joins (measured on
// the issue-23 model: enough to overlap several joins' misses, few enough to stay in cache).
constexpr std::size_t kAhead = 4;

template <class C>
int mq_delta(const C& cov, int last_t, int s, int t) {
  const int g = lowest_uncovered(cov);
  const int length = t - s + 1;
  if (s == g) return 0;
  if (s <= last_t) return 2 * length;
  if (last_t < g) return 2 * (s - g + length);
  return 2 * (s - last_t - 1 + length);
}

inline int plain_delta(int last_t, int s) { return std::abs(last_t + 1 - s); }

// Under Moses' semantics (moses) a covered block reaching word n is never jumped over.
template <class C>
bool minimal_completion_fits(const C& cov, int last_t, int n, int d, bool moses) {
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
  std::vector<std::vector<int>> ends;                  // ends[s]: ascending
  std::vector<std::vector<std::vector<Ranked>>> options;  // options[s][i]: span (s, ends[s][i]), best estimate first
  std::vector<double> span;                            // span[i * (n + 2) + j] (a sentence of Cov<W>)
  Runs runs;                                           // the same by Runs (a sentence of WinCov<W>)
  std::vector<char> single;                            // single[p]: position p has a one-word option

  // The options of span (s, s) (ends[s][0] when single[s]).
  const std::vector<Ranked>& at_single(int s) const { return options[static_cast<std::size_t>(s)].front(); }
  double span_of(int i, int j) const { return span[static_cast<std::size_t>(i) * (n + 2) + j]; }

  // future_of: the sum of span over the maximal uncovered runs, left to right.
  template <class C>
  double future_of(const C& cov) const {
    double got = 0.0;
    int i = 0;
    while (i < n) {
      const int a = cov.next(i, n, false);
      if (a >= n) break;
      const int b = cov.next(a, n, true);  // positions a + 1 .. b are free
      if constexpr (C::windowed) got += runs.at(a + 1, b);
      else got += span_of(a + 1, b);
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

// dense: Pharaoh's span table as stack.py builds it, (n + 2)^2 entries by splits (the sums in
// Python's order); else Runs, the best segmentation by the same estimates in O(n) memory (equal
// but for the rounding of the sums' order: sentences the Python engine never searches).
Tables make_tables(const Problem& problem, bool dense) {
  Tables tabs;
  const int n = tabs.n = problem.n();
  const std::size_t width = static_cast<std::size_t>(n) + 2;
  tabs.ends.assign(width, {});
  tabs.options.assign(width, {});
  for (int s = 1; s <= n; ++s) {
    auto& ends = tabs.ends[static_cast<std::size_t>(s)];
    const auto& by_start = problem.by_start()[static_cast<std::size_t>(s)];
    for (const Option& opt : by_start) ends.push_back(opt.t);
    std::sort(ends.begin(), ends.end());
    ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
    auto& options = tabs.options[static_cast<std::size_t>(s)];
    options.assign(ends.size(), {});
    for (const Option& opt : by_start) {
      const auto at = std::lower_bound(ends.begin(), ends.end(), opt.t) - ends.begin();
      options[static_cast<std::size_t>(at)].push_back({option_estimate(problem, opt), &opt});
    }
    for (auto& ranked : options)  // sorted(v, key=lambda e: -e[0]): stable, best first
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const Ranked& a, const Ranked& b) { return -a.estimate < -b.estimate; });
  }
  tabs.single.assign(width, 0);
  for (int s = 1; s <= n; ++s) {
    const auto& ends = tabs.ends[static_cast<std::size_t>(s)];
    tabs.single[static_cast<std::size_t>(s)] = !ends.empty() && ends.front() == s;
  }
  if (!dense) {
    std::vector<std::vector<std::pair<int, double>>> spans(width);
    for (int s = 1; s <= n; ++s)
      for (std::size_t i = 0; i < tabs.ends[static_cast<std::size_t>(s)].size(); ++i)
        spans[static_cast<std::size_t>(s)].emplace_back(tabs.ends[static_cast<std::size_t>(s)][i],
                                                        tabs.options[static_cast<std::size_t>(s)][i].front().estimate);
    tabs.runs = Runs(n, std::move(spans));
    return tabs;
  }
  std::vector<double> direct(width * width, NEG_INF);  // the best estimate of each span's options
  for (int s = 1; s <= n; ++s)
    for (std::size_t i = 0; i < tabs.ends[static_cast<std::size_t>(s)].size(); ++i)
      direct[static_cast<std::size_t>(s) * width + static_cast<std::size_t>(tabs.ends[static_cast<std::size_t>(s)][i])] =
          tabs.options[static_cast<std::size_t>(s)][i].front().estimate;
  tabs.span.assign(width * width, NEG_INF);
  for (int length = 1; length <= n; ++length)
    for (int i = 1; i <= n - length + 1; ++i) {
      const int j = i + length - 1;
      double best = direct[static_cast<std::size_t>(i) * width + static_cast<std::size_t>(j)];
      for (int k = i; k < j; ++k) {
        const double split = tabs.span_of(i, k) + tabs.span_of(k + 1, j);
        if (split > best) best = split;  // max(best, split) keeps best on ties
      }
      tabs.span[static_cast<std::size_t>(i) * width + j] = best;
    }
  return tabs;
}

// ---------------------------------------------------------------------------------------------
// The search.

struct Hyp {
  double score;
  int prev;  // arena index, -1 for the start
  int option;  // Option::id, -1 for the start
};

template <class C>
struct Candidate {
  const Option* option;
  int delta_d;
  C coverage;
  double future;
};

template <class C>
struct Entry {  // one recombination key of a stack and its k-best hypotheses
  C coverage;
  int last_t;
  int context;
  // With lexicalized reordering, the last phrase's start and next-row id (Problem::lr_row;
  // stack.py's (opt.s, opt.lr_next)); else, and at the start and when closed, 0 and -1.
  int last_s;
  int row;
  double future;  // the same for every hypothesis of the key
  int best;       // the key's best hypothesis (its recombination winner), the one expanded
  int key;        // nbest > 1: the key's number in Search::heads_ (every stack's keys counted once)
};

struct BudgetExceeded {};

template <class C>
struct Stack {
  std::vector<Entry<C>> entries;  // in order of creation (Python's dict order)
  Index index;
  double best_so_far = NEG_INF;  // StackOptions::moses_nbest: the best estimate pushed so far
  void release() {
    std::vector<Entry<C>>().swap(entries);
    index.release();
  }
};

template <class C>
class Search {
 public:
  Search(const Problem& problem, const StackOptions& options)
      // A limit beyond n + 2 allows every jump (no distance here exceeds n + 1); clamping it
      // keeps the arithmetic in range for "no limit" (UNLIMITED = 2**31 - 1).
      : p_(problem), o_(options), n_(problem.n()), d_(std::min(problem.d(), problem.n() + 2)),
        eta_(problem.eta()),
        contexts_(problem.order() - 1), joins_(problem, contexts_, true, /*keep_facts=*/false), tabs_(make_tables(problem, !C::windowed)) {
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
      C zero;
      double score = 0.0, future = tabs_.future_of(zero);
      int last_t = 0;
      if (n_ == 0) {  // nothing to translate: close <s> with </s> at once
        const Joined close = joins_.get(context, p_.eos_option());
        score = close.score;
        future = 0.0;
        last_t = p_.end();
        context = close.last;
      }
      const WordId eos = p_.eos();
      eos_context_ = contexts_.intern(&eos, 1);
      push(0, zero, last_t, context, 0, -1, future, score, score, -1, -1);
      if (o_.cube_pop_limit > 0) {
        edges_.resize(static_cast<std::size_t>(n_) + 1);
        anchors_.resize(static_cast<std::size_t>(n_) + 1);
        for (int c = 0; c < n_; ++c) {
          if (c > 0) fill_stack(c);
          if (exhausted_) expand_stack(c);
          else make_edges(c);
        }
        fill_stack(n_);
      } else {
        for (int c = 0; c < n_; ++c) expand_stack(c);
      }
    } catch (const BudgetExceeded&) {
      result.status = "budget";
      result.message = budget_message();
      result.states = states_;
      result.transitions = transitions_;
      return result;
    }
    Stack<C>& last = stacks_[static_cast<std::size_t>(n_)];
    states_ += static_cast<long>(last.entries.size());
    result.states = states_;
    result.transitions = transitions_;
    if (exhausted_) {  // the derivations found, none proven anything
      result.status = "budget";
      result.message = budget_message();
    } else if (last.entries.empty()) {
      // Every hypothesis was pruned: the Python layer (fstdecode/search/native_stack.py) words the
      // message, naming the settings to widen as the user gave them.
      result.status = "none";
    }
    if (last.entries.empty()) return result;
    // Every complete hypothesis has one key (coverage full, </s> placed, no reordering state).
    if (last.entries.size() != 1) throw std::logic_error("stack_search: complete hypotheses under several keys");
    if (nbest_ == 1) {
      const int best = last.entries.front().best;
      result.hypotheses.push_back({arena_[static_cast<std::size_t>(best)].score, options_in(chain_of(best)), {}});
      return result;
    }
    list(last.entries.front().key, result);
    return result;
  }

 private:
  std::string budget_message() const {
    return "more than " + std::to_string(o_.max_states) + " hypotheses (--max-states)";
  }

  // ---- stacks and the search graph

  // With nbest > 1 every push is kept as an arc of its key (the hypotheses Moses keeps as a
  // winner's arcs): its score, its tail (the expanded key's winner, prev), its option and the
  // delta added to the tail's score; the k best derivations are extracted lazily from them
  // (kbest.h) once the search is done. Only the winner of each key is expanded, as in the 1-best
  // search, so the keys expanded and their order are the 1-best's.
  double estimate(const Entry<C>& entry) const {
    return arena_[static_cast<std::size_t>(entry.best)].score + entry.future;
  }

  // push(c, key, hyp): score = prev's score + delta, as extend formed it.
  void push(int c, const C& cov, int last_t, int context, int last_s, int row, double future,
            double score, double delta, int prev, int option) {
    Stack<C>& stack = stacks_[static_cast<std::size_t>(c)];
    const std::uint64_t h =
        key_hash(cov, last_t, context) ^ mix((static_cast<std::uint64_t>(static_cast<std::uint32_t>(row)) << 20) ^
                                             static_cast<std::uint32_t>(last_s));
    int e = stack.index.find(h, [&](int i) {
      const Entry<C>& x = stack.entries[static_cast<std::size_t>(i)];
      return x.last_t == last_t && x.context == context && x.last_s == last_s && x.row == row && x.coverage == cov;
    });
    if (e < 0) {
      ++created_;
      if (!exhausted_ && o_.max_states > 0 && created_ > o_.max_states) throw BudgetExceeded{};
      e = static_cast<int>(stack.entries.size());
      stack.entries.push_back({cov, last_t, context, last_s, row, future, -1, -1});
      stack.index.insert(h, e);
      if (nbest_ > 1) {
        stack.entries.back().key = static_cast<int>(heads_.size());
        heads_.push_back(-1);
      }
    }
    Entry<C>& entry = stack.entries[static_cast<std::size_t>(e)];
    const bool wins = entry.best < 0 || score > arena_[static_cast<std::size_t>(entry.best)].score;
    if (nbest_ == 1) {
      if (wins) entry.best = new_hyp(score, prev, option, -1, delta);
      return;
    }
    if (o_.moses_nbest && o_.beam_threshold >= 0) {
      const double estimate = score + entry.future;
      const bool below = estimate < stack.best_so_far - o_.beam_threshold;
      stack.best_so_far = std::max(stack.best_so_far, estimate);
      if (!wins && below) return;  // discarded, as Moses discards it (StackOptions::moses_nbest)
    }
    const int hyp = new_hyp(score, prev, option, entry.key, delta);  // an arc, whether it wins or not
    if (wins) entry.best = heads_[static_cast<std::size_t>(entry.key)] = hyp;
  }
  // key and delta: nbest > 1, the key's number (key_of_) and the arc's delta (deltas_), else unused.
  int new_hyp(double score, int prev, int option, int key, double delta) {
    arena_.push_back({score, prev, option});
    if (nbest_ > 1) {
      key_of_.push_back(key);
      deltas_.push_back(delta);
    }
    return static_cast<int>(arena_.size() - 1);
  }

  // ---- Moses' recombination winners (Hypothesis::winners)

  // A complete hypothesis' recombination key as Moses has it: its distortion state (the last
  // phrase's end), with lexicalized reordering the reordering state (the last phrase's span and
  // forward-score row); the LM's state, after </s>, is every complete hypothesis' own. (Here all
  // complete hypotheses share one key: their future needs none of these.)
  std::tuple<int, int, int> final_key(int h) const {
    const Option& opt = p_.option(arena_[static_cast<std::size_t>(h)].option);
    return lr_ ? std::make_tuple(opt.t, opt.s, p_.lr_row(opt.id)) : std::make_tuple(opt.t, 0, -1);
  }

  // The hypotheses that placed h's options, first placed first (the start hypothesis not among
  // them), by the back-pointers: the chain of recombination winners that h extends.
  std::vector<int> chain_of(int h) const {
    std::vector<int> out;
    for (; arena_[static_cast<std::size_t>(h)].option >= 0; h = arena_[static_cast<std::size_t>(h)].prev) out.push_back(h);
    std::reverse(out.begin(), out.end());
    return out;
  }

  // The target words of a chain's options, in order (its translation, as a distinct list compares them).
  std::vector<WordId> target_in(const std::vector<int>& chain) const {
    std::vector<WordId> out;
    for (int x : chain) {
      const Option& opt = p_.option(arena_[static_cast<std::size_t>(x)].option);
      if (opt.index >= 0) out.insert(out.end(), opt.words.begin(), opt.words.end());
    }
    return out;
  }

  std::vector<int> options_in(const std::vector<int>& chain) const {
    std::vector<int> out;
    for (int x : chain) out.push_back(p_.option(arena_[static_cast<std::size_t>(x)].option).index);
    return out;
  }

  // The list (nbest > 1): the nbest best derivations of the final key `final_node`, extracted
  // lazily from the search graph of arcs (push), best first; a distinct list keeps the first
  // derivation of each translation among them, up to o_.distinct.
  void list(int final_node, Result& result) const {
    const std::size_t count = arena_.size();
    std::vector<int> tails(count);
    std::vector<double> best(count);
    std::map<std::tuple<int, int, int>, int> final_winners;  // Moses' final key -> its best (the first)
    for (std::size_t a = 0; a < count; ++a) {
      const Hyp& hyp = arena_[a];
      tails[a] = hyp.prev < 0 ? -1 : key_of_[static_cast<std::size_t>(hyp.prev)];
      best[a] = hyp.score;
      // (with nothing to translate the start is final: it has no phrase, no key)
      if (key_of_[a] == final_node && hyp.option >= 0) {
        auto got = final_winners.emplace(final_key(static_cast<int>(a)), static_cast<int>(a));
        if (!got.second && hyp.score > arena_[static_cast<std::size_t>(got.first->second)].score) got.first->second = static_cast<int>(a);
      }
    }
    LazyKBest graph(static_cast<int>(heads_.size()), key_of_, std::move(tails), deltas_, std::move(best));
    const std::size_t wanted = static_cast<std::size_t>(o_.distinct > 0 ? o_.distinct : nbest_);
    std::set<std::vector<WordId>> seen;
    std::size_t j = 0;
    for (; j < static_cast<std::size_t>(nbest_) && result.hypotheses.size() < wanted; ++j) {
      const LazyKBest::Derivation* d = graph.get(final_node, j);
      if (d == nullptr) break;
      std::vector<int> chain = graph.arcs(final_node, j);
      chain.erase(std::remove_if(chain.begin(), chain.end(), [&](int x) { return arena_[static_cast<std::size_t>(x)].option < 0; }),
                  chain.end());
      if (o_.distinct > 0 && !seen.insert(target_in(chain)).second) continue;
      Hypothesis out;
      out.score = d->score;
      out.options = options_in(chain);
      // Over budget the anchor's minimal step may be taken twice (once among its candidates, once
      // after the budget ran out): the same derivation is then listed once (stack.py does so too).
      if (exhausted_ && std::any_of(result.hypotheses.begin(), result.hypotheses.end(),
                                    [&](const Hypothesis& x) { return x.options == out.options; }))
        continue;
      if (!exhausted_) out.winners = winners(chain, final_winners);
      result.hypotheses.push_back(std::move(out));
    }
  }

  // Hypothesis::winners of the derivation whose arcs are `chain` (final_winners: each Moses
  // final key's best complete hypothesis). Moses' n-best path through its options is made of the
  // hypotheses h_i = (winner of step i - 1's key) + option i, which are the chain's arcs (each
  // arc extends its tail key's winner); h_i won when its key's winner (the best hypothesis ever
  // pushed under the key: heads_; for the last step, the best complete one of its Moses key) is
  // exactly that.
  std::vector<std::vector<int>> winners(const std::vector<int>& chain,
                                        const std::map<std::tuple<int, int, int>, int>& final_winners) const {
    std::vector<std::vector<int>> out;
    if (chain.empty()) return out;
    int won = arena_[static_cast<std::size_t>(chain.front())].prev;  // the start hypothesis, its key's only one
    for (std::size_t i = 0; i < chain.size(); ++i) {
      const int x = chain[i];
      const int w = i + 1 < chain.size() ? heads_[static_cast<std::size_t>(key_of_[static_cast<std::size_t>(x)])]
                                         : final_winners.at(final_key(x));
      const Hyp& hw = arena_[static_cast<std::size_t>(w)];
      const bool same = hw.option == arena_[static_cast<std::size_t>(x)].option && hw.prev == won;
      out.push_back(same ? std::vector<int>{} : options_in(chain_of(w)));
      won = w;
    }
    return out;
  }

  // ---- pruning (_prune)

  bool fits(const Entry<C>& entry) const {
    // not full & ~coverage & ~singles: every uncovered position has a one-word option
    for (int p = entry.coverage.next(0, n_, false); p < n_; p = entry.coverage.next(p + 1, n_, false))
      if (!tabs_.single[static_cast<std::size_t>(p) + 1]) return false;
    return minimal_completion_fits(entry.coverage, entry.last_t, n_, d_, moses_);
  }

  // kept: entry indices in rank order; returns the anchor's index into kept, or -1.
  int prune(const Stack<C>& stack, std::vector<int>& kept) {
    const std::size_t size = stack.entries.size();
    ranked_.resize(size);
    estimates_.resize(size);
    for (std::size_t e = 0; e < size; ++e) {
      ranked_[e] = static_cast<int>(e);
      estimates_[e] = estimate(stack.entries[e]);
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

  void candidates(const Entry<C>& entry, double score, bool early, double min_ok,
                  std::vector<Candidate<C>>& out) const {
    const C& cov = entry.coverage;
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
      const auto& ends = tabs_.ends[static_cast<std::size_t>(s)];
      for (std::size_t i = 0; i < ends.size(); ++i) {
        const int t = ends[i];
        if (cov.any_in_range(s - 1, t - 1)) break;  // ends ascend: longer phrases overlap too
        if (moses_ && s != g && t + 1 - g > d_) break;  // Moses' gap rule; ends ascend
        const int delta_d = mq ? mq_delta(cov, last_t, s, t) : plain_delta(last_t, s);
        if (bound_by_distortion && estimate - eta_ * delta_d < min_ok) break;
        C new_cov = cov;
        // Beyond WinCov's window (so are the longer phrases): not searched, as if pruned.
        if (!new_cov.set_range(s - 1, t - 1)) break;
        if (is_dead(new_cov, t, n_, d_, moses_)) continue;
        const double future = tabs_.future_of(new_cov);
        if (future == NEG_INF) continue;
        const double base = score + future - eta_ * delta_d;
        for (const Ranked& r : tabs_.options[static_cast<std::size_t>(s)][i]) {
          if (early && base + r.estimate < min_ok) break;
          out.push_back({r.option, delta_d, new_cov, future});
        }
      }
    }
  }

  Candidate<C> first_step(const Entry<C>& entry) const {
    const int g = lowest_uncovered(entry.coverage);
    C coverage = entry.coverage;
    coverage.set_range(g - 1, g - 1);
    const int delta_d = o_.distortion_estimate ? mq_delta(entry.coverage, entry.last_t, g, g)
                                               : plain_delta(entry.last_t, g);
    return {tabs_.at_single(g).front().option, delta_d, coverage, tabs_.future_of(coverage)};
  }

  void expand_stack(int c) {
    Stack<C>& stack = stacks_[static_cast<std::size_t>(c)];
    const int anchor = prune(stack, kept_);
    if (exhausted_) {
      if (anchor < 0) throw BudgetExceeded{};  // no key here can complete
      states_ += 1;
      minimal_step(c, kept_[static_cast<std::size_t>(anchor)]);
      stack.release();
      return;
    }
    states_ += static_cast<long>(kept_.size());
    const bool early = o_.early_pruning && !kept_.empty();
    const double min_ok = early ? estimates_[static_cast<std::size_t>(kept_[0])] - threshold_ : 0.0;
    try {
      for (std::size_t i = 0; i < kept_.size(); ++i) {
        const Entry<C> entry = stack.entries[static_cast<std::size_t>(kept_[i])];
        const double head_score = arena_[static_cast<std::size_t>(entry.best)].score;
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
        // The LM lookups of a join miss the cache (a large LM), and so does the join cache of a
        // long sentence: in two stages, the cache slots of the joins 2 kAhead candidates ahead
        // are prefetched, then (their slots loaded by now) the LM entries of the uncached joins
        // kAhead ahead, while this one is extended, so that the misses overlap. (Scoring with
        // facts, BosJoins keeps no cache: the first stage does nothing, the second prefetches
        // every join's n-gram slots.)
        const std::size_t count = cands_.size();
        for (std::size_t j = 0; j < std::min(2 * kAhead, count); ++j) joins_.prefetch_slot(entry.context, *cands_[j].option);
        for (std::size_t j = 0; j < std::min(kAhead, count); ++j) joins_.prefetch(entry.context, *cands_[j].option);
        for (std::size_t j = 0; j < count; ++j) {
          if (j + 2 * kAhead < count) joins_.prefetch_slot(entry.context, *cands_[j + 2 * kAhead].option);
          if (j + kAhead < count) joins_.prefetch(entry.context, *cands_[j + kAhead].option);
          extend(c, entry, cands_[j]);
        }
      }
    } catch (const BudgetExceeded&) {
      // The budget ran out (stack.py, _run): from here on each stack extends only its anchor,
      // by the anchor's minimal step, so the best key whose minimal completion fits completes.
      if (anchor < 0) throw;
      exhausted_ = true;
      minimal_step(c, kept_[static_cast<std::size_t>(anchor)]);
    }
    stack.release();  // expanded stacks are reached only through back-pointers
  }

  // Extends the key e of stack c by its minimal step alone (one transition).
  void minimal_step(int c, int e) {
    const Stack<C>& stack = stacks_[static_cast<std::size_t>(c)];
    const Entry<C> entry = stack.entries[static_cast<std::size_t>(e)];
    extend(c, entry, first_step(entry));
  }

  // One transition (stack.py, _extend): the key's winner (entry.best, the one hypothesis of a key
  // that is expanded) extended by cand.
  void extend(int c, const Entry<C>& entry, const Candidate<C>& cand) { put(scored(c, entry, cand)); }

  // A scored transition not yet pushed: its target stack, key and score (cube pruning scores
  // hypotheses before it decides which to push).
  struct Scored {
    int target;
    C coverage;
    int last_t, context, last_s, row;
    double future, score, delta;
    int prev, option;
    double estimate() const { return score + future; }
  };

  Scored scored(int c, const Entry<C>& entry, const Candidate<C>& cand) {
    ++transitions_;
    const bool mq = o_.distortion_estimate;
    const Option& opt = *cand.option;
    const Joined joined = joins_.get(entry.context, opt);
    const int new_context = joined.last;
    double delta = opt.score + joined.score - eta_ * cand.delta_d;
    Scored out{c + opt.t - opt.s + 1, cand.coverage, opt.t, new_context, 0, -1, cand.future, 0.0, 0.0, entry.best, opt.id};
    if (lr_) {
      delta += p_.reordering_score(entry.last_s, entry.last_t, entry.row, opt);
      out.last_s = opt.s;
      out.row = p_.lr_row(opt.id);
    }
    if (cand.coverage == full_) {
      const double close = joins_.get(new_context, p_.eos_option()).score;
      // stack.py's final_delta: uncharged, the modified Δd charged the jump in advance.
      const int jump = p_.end() - 1 - opt.t;
      const int final_delta = p_.charge_final() ? (mq ? 0 : jump) : (mq ? -jump : 0);
      delta += close - eta_ * final_delta;
      out.last_t = p_.end();
      out.context = eos_context_;
      out.last_s = 0;
      out.row = -1;
      out.future = 0.0;
    }
    out.score = arena_[static_cast<std::size_t>(entry.best)].score + delta;
    out.delta = delta;
    return out;
  }

  void put(const Scored& x) {
    push(x.target, x.coverage, x.last_t, x.context, x.last_s, x.row, x.future, x.score, x.delta, x.prev, x.option);
  }

  // ---- cube pruning (StackOptions::cube_pop_limit; Moses' SearchCubePruning)
  //
  // Stack c is pruned as in the normal search, then its kept keys are grouped by coverage, and
  // each group and span (s, t) it may translate next is an edge into stack c + t - s + 1: a grid
  // of the group's keys that may jump to s (ranked by score minus the jump's distortion cost)
  // against the span's options (ranked by estimate). When stack c' is filled, each edge into it
  // scores its best corner; then the best scored hypothesis (by score + future) is pushed, and
  // its two grid neighbours scored, cube_pop_limit times. The previous stack's anchor's minimal
  // step is then pushed if no pop pushed it (outside the limit), so a key whose cheapest
  // completion fits stays in every stack.

  struct Edge {
    std::vector<std::pair<Entry<C>, int>> keys;  // (key, delta_d), best first
    const std::vector<Ranked>* options;          // best first
    C coverage;                                  // after the span
    double future;
    std::vector<std::uint32_t> seen;             // grid cells scored: (x << 16) | y
  };

  struct Anchor {  // a stack's anchor's minimal step into the next stack
    bool pending = false;
    Entry<C> entry{};
    Candidate<C> step{};
  };

  struct Queued {
    double estimate;
    long order;  // ties: first scored first
    int edge, x, y;
    Scored hyp;
  };
  struct Later {
    bool operator()(const Queued& a, const Queued& b) const {
      return a.estimate < b.estimate || (a.estimate == b.estimate && a.order > b.order);
    }
  };

  void make_edges(int c) {
    Stack<C>& stack = stacks_[static_cast<std::size_t>(c)];
    const int anchor = prune(stack, kept_);
    states_ += static_cast<long>(kept_.size());
    if (anchor >= 0) {
      const Entry<C>& entry = stack.entries[static_cast<std::size_t>(kept_[static_cast<std::size_t>(anchor)])];
      anchors_[static_cast<std::size_t>(c) + 1] = {true, entry, first_step(entry)};
    }
    // groups of kept keys by coverage, in rank order
    std::vector<std::vector<int>> groups;
    Index index;
    for (int e : kept_) {
      const C& cov = stack.entries[static_cast<std::size_t>(e)].coverage;
      const std::uint64_t h = key_hash(cov, 0, 0);
      int g = index.find(h, [&](int i) { return stack.entries[static_cast<std::size_t>(groups[static_cast<std::size_t>(i)].front())].coverage == cov; });
      if (g < 0) {
        g = static_cast<int>(groups.size());
        groups.emplace_back();
        index.insert(h, g);
      }
      groups[static_cast<std::size_t>(g)].push_back(e);
    }
    const bool mq = o_.distortion_estimate;
    for (const auto& group : groups) {
      const C& cov = stack.entries[static_cast<std::size_t>(group.front())].coverage;
      const int g = lowest_uncovered(cov);
      for (int s = 1; s <= n_; ++s) {
        if (cov.get(s - 1)) continue;
        const auto& ends = tabs_.ends[static_cast<std::size_t>(s)];
        for (std::size_t i = 0; i < ends.size(); ++i) {
          const int t = ends[i];
          if (cov.any_in_range(s - 1, t - 1)) break;
          if (moses_ && s != g && t + 1 - g > d_) break;
          C new_cov = cov;
          if (!new_cov.set_range(s - 1, t - 1)) break;
          if (is_dead(new_cov, t, n_, d_, moses_)) continue;
          const double future = tabs_.future_of(new_cov);
          if (future == NEG_INF) continue;
          Edge edge{{}, &tabs_.options[static_cast<std::size_t>(s)][i], new_cov, future, {}};
          for (int e : group) {
            const Entry<C>& entry = stack.entries[static_cast<std::size_t>(e)];
            if (std::abs(entry.last_t + 1 - s) > d_) continue;
            edge.keys.emplace_back(entry, mq ? mq_delta(cov, entry.last_t, s, t) : plain_delta(entry.last_t, s));
          }
          if (edge.keys.empty()) continue;
          std::stable_sort(edge.keys.begin(), edge.keys.end(), [&](const auto& a, const auto& b) {
            return arena_[static_cast<std::size_t>(a.first.best)].score - eta_ * a.second >
                   arena_[static_cast<std::size_t>(b.first.best)].score - eta_ * b.second;
          });
          edges_[static_cast<std::size_t>(c + t - s + 1)].push_back(std::move(edge));
        }
      }
    }
    stack.release();
  }

  // Scores cell (x, y) of edge e (into stack c) and queues it, once.
  void score_cell(int c, int e, int x, int y) {
    Edge& edge = edges_[static_cast<std::size_t>(c)][static_cast<std::size_t>(e)];
    if (static_cast<std::size_t>(x) >= edge.keys.size() || static_cast<std::size_t>(y) >= edge.options->size()) return;
    const std::uint32_t cell = (static_cast<std::uint32_t>(x) << 16) | static_cast<std::uint32_t>(y);
    if (std::find(edge.seen.begin(), edge.seen.end(), cell) != edge.seen.end()) return;
    edge.seen.push_back(cell);
    const auto& [entry, delta_d] = edge.keys[static_cast<std::size_t>(x)];
    const Candidate<C> cand{(*edge.options)[static_cast<std::size_t>(y)].option, delta_d, edge.coverage, edge.future};
    Scored hyp = scored(c - (cand.option->t - cand.option->s + 1), entry, cand);
    queue_.push({hyp.estimate(), order_++, e, x, y, hyp});
  }

  void fill_stack(int c) {
    auto& edges = edges_[static_cast<std::size_t>(c)];
    Anchor& anchor = anchors_[static_cast<std::size_t>(c)];
    if (!exhausted_) {
      try {
        for (std::size_t e = 0; e < edges.size(); ++e) score_cell(c, static_cast<int>(e), 0, 0);
        for (int pops = 0; pops < o_.cube_pop_limit && !queue_.empty(); ++pops) {
          const Queued top = queue_.top();
          queue_.pop();
          put(top.hyp);
          if (anchor.pending && top.hyp.prev == anchor.entry.best && top.hyp.option == anchor.step.option->id)
            anchor.pending = false;  // popped: pushed once, as one arc
          score_cell(c, top.edge, top.x, top.y + 1);
          score_cell(c, top.edge, top.x + 1, top.y);
        }
      } catch (const BudgetExceeded&) {
        exhausted_ = true;  // from here on minimal steps only (expand_stack)
      }
    }
    if (anchor.pending) {  // the previous stack's anchor's minimal step, if no pop pushed it
      const Scored step = scored(c - 1, anchor.entry, anchor.step);
      try {
        put(step);
      } catch (const BudgetExceeded&) {
        exhausted_ = true;  // (nothing was pushed: the push made no key)
        put(step);
      }
    }
    decltype(queue_)().swap(queue_);
    std::vector<Edge>().swap(edges);
  }

  const Problem& p_;
  const StackOptions& o_;
  const int n_, d_;
  const double eta_;
  const bool moses_ = p_.moses(), lr_ = p_.has_reordering();
  int nbest_ = 1;
  double threshold_ = 0.0;
  bool exhausted_ = false;  // the budget ran out: minimal steps only (expand_stack)
  int eos_context_ = 0;
  C full_;
  Contexts contexts_;
  BosJoins joins_;
  Tables tabs_;
  std::vector<Stack<C>> stacks_;
  std::vector<Hyp> arena_;
  std::vector<int> key_of_, heads_;  // nbest > 1: each hypothesis' key; each key's best hypothesis
  std::vector<double> deltas_;       // nbest > 1: each hypothesis' delta (push)
  long created_ = 0, states_ = 0, transitions_ = 0;
  // scratch
  std::vector<int> kept_, ranked_;
  std::vector<double> estimates_;
  std::vector<Candidate<C>> cands_;
  std::vector<std::vector<Edge>> edges_;  // cube pruning: the edges into each stack
  std::vector<Anchor> anchors_;           // cube pruning: the minimal step into each stack
  std::priority_queue<Queued, std::vector<Queued>, Later> queue_;
  long order_ = 0;
};

}  // namespace

Result stack_search(const Problem& problem, const StackOptions& options) {
  if (!problem.finished()) throw std::logic_error("stack_search: call Problem.finish() first");
  if (options.nbest < 1 || options.beam_size < 1)
    throw std::invalid_argument("stack_search: options.nbest or options.beam_size < 1");
  return with_coverage(problem, [&](auto c) { return Search<typename decltype(c)::type>(problem, options).run(); });
}

}  // namespace fstdecode
