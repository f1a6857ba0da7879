// Exact search with a certificate: A* over coverage states (fstdecode/search/exact.py is the
// Python reference and states the proof). A state is (coverage, last end position, LM context
// minimised as the coverage DP's, and with lexicalized reordering the last phrase's start and
// next-row id, as far as the next orientation reads them; lemmas 7-8 cover reordering and Moses'
// distortion semantics); its heuristic is an admissible and consistent upper bound on
// every completion, so the first complete derivation popped is optimal and its score is the
// certificate (an upper bound on every derivation's score).
#pragma once

#include <limits>
#include <vector>

#include "coverage_set.h"
#include "problem.h"

namespace fstdecode {

struct StackOptions;  // stack.h: the stack decoder's, for exact_decode's lower bound

// fstdecode.search.exact.ExactOptions (through native_exact.py), the source of truth for every
// default and check: only Python builds these (bind_exact.cpp takes every field but `support`),
// so no default is restated here.
struct ExactOptions {
  int nbest;  // >= 1
  long max_states;  // < 0: no budget
  double time_limit;  // seconds of search, the bounds' build included; <= 0: none
  // The score of a known derivation (with nbest > 1, of the nbest-th of known ones): states
  // whose bound is below it cannot hold a better one and are not kept (-inf: none known).
  double lower_bound;
  // The most work (exact.cpp, Work: phrase pairs, joins and context scores) building the
  // heuristic's tables may take before the search gives up with status "budget" and no bound;
  // < 0: bounds_cap(max_states). (--method prove passes a share of its small budget.) Only
  // with bounds_work < 0 does the heuristic bound each phrase by the ends still open before it
  // (ExactBounds::before_end, AStar::window_bound): within prove's small budgets those tables
  // cost more time than the states they save (measured on Hansards: 10,000 states, 30 lines
  // proven of 48 instead of 28, in 1.33 s instead of 1.15), and does the heuristic's context
  // fixpoint cache its joins for the A* (build_bounds' keep_joins).
  long bounds_work;
  // Support mode (exact.py, support): do not stop at the k-th goal; expand every state whose
  // bound reaches lower_bound, record every transition that can, and return in
  // ExactSupport::options the options of every derivation scoring at least lower_bound.
  bool support = false;
};

// The result of a support search: the A*'s result (hypotheses: the best derivation; status as
// exact_search's) and, unless the budget ran out, the option indices (Option::index, ascending)
// of every derivation scoring at least the lower bound (a superset).
struct ExactSupport {
  Result result;
  std::vector<int> options;
};

// The pieces of the heuristic, for tests: beta[i] bounds ŵ(p) plus the join score of option id i
// after any context that may precede it, plus (with lexicalized reordering) the best reordering
// score any transition appending it can pay (exact.py, lemma 7); eos bounds the LM score of </s> after any last phrase; cover[a][b] (1 <= a <= b <= n) is the best segmentation of
// positions a..b by beta: a table for n <= MAX_FIXED_COVERAGE, else empty and held by `runs`
// (the same values in O(n) memory; cover_at reads either).
struct ExactBounds {
  std::vector<double> beta;
  // beta by the end j of the phrase before (exact.cpp, add_window_bounds): before_end[id * W + o]
  // bounds option id's score after the contexts that the options ending at j = s - 1 - d + o
  // (0 <= o <= 2d) may leave, o = 2d + 1 after <s>; -inf where none may precede it. W = 2d + 2,
  // or 0 (and the table empty) when that exceeds 64 or without it.
  std::vector<double> before_end;
  int W = 0;
  double eos = 0.0;
  // The units of work (exact.cpp, Work) the tables took: a search whose bounds_work is below it
  // gives up without them, one at or above it builds them.
  long work = 0;
  std::vector<std::vector<double>> cover;
  Runs runs;
  double cover_at(int a, int b) const {
    return cover.empty() ? runs.at(a, b) : cover[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)];
  }
  // With tapes (bounds on other state spaces: the signature states of the cascade's pruned R,
  // reorder.cpp): before[s] (1 <= s <= n + 1), the LM contexts (words) that may precede a phrase
  // starting at s (s = n + 1: </s>), and lifts[s][i], the largest weighted backoff charge (at
  // least 0) of the minimisation that made context i, over the phrases that may precede s and
  // the contexts before them (a junction's charge is paid with it or before it); eos_lifted, the
  // best </s> score after them, charge included; suffix[a] (1 <= a <= n + 1), the best
  // segmentation of positions a..n by gamma(p) = ŵ(p) + tape_bound of p's first words at s(p).
  std::vector<std::vector<std::vector<WordId>>> before;
  std::vector<std::vector<double>> lifts;
  double eos_lifted = 0.0;
  std::vector<double> suffix;
};

ExactBounds exact_bounds(const Problem& problem, bool tapes = false);

// An upper bound on the weighted LM scores a tape starting at s will get for its first words
// words[0..len) (at most order - 1, those still lacking left context) once something precedes
// it, with the charge of minimising what precedes: the best of prefix score plus lift over
// before[s] (bounds made with tapes).
double tape_bound(const Problem& problem, const ExactBounds& bounds, int s, const WordId* words, int len);

// The heuristic of a state that does not cover every position (exact.py, heuristic): the covers
// of its gaps, the </s> bound and the distortion bound. d is the limit clamped to n + 2.
// final: the jump into </s> is charged (else Moses' Φ without it, exact.py lemma 8).
// What the jumps still to come may cost a state at the least, weighted (subtracted from a bound):
// M&Q's remaining distortion for eta >= 0; for eta < 0 (a jump then pays) d for each of the
// `uncovered` positions and for </s>. Shared by open_bound and the A*'s window bound.
template <class C>
double distortion_cost(const C& cov, int t, int n, double eta, int d, bool final, int uncovered) {
  if (eta >= 0.0) return eta * remaining_distortion(cov, t, n, final);
  return eta * d * (uncovered + 1);
}

template <class C>
double open_bound(const ExactBounds& b, const C& cov, int t, int n, double eta, int d, bool final = true) {
  double sum = b.eos;
  int uncovered = 0;
  for (int a = cov.next(0, n, false); a < n;) {
    const int e = cov.next(a, n, true);  // positions a + 1 .. e are a gap
    if constexpr (C::windowed) sum += b.runs.at(a + 1, e);
    else sum += b.cover[static_cast<std::size_t>(a) + 1][static_cast<std::size_t>(e)];
    uncovered += e - a;
    a = cov.next(e, n, false);
  }
  return sum - distortion_cost(cov, t, n, eta, d, final, uncovered);
}

// The A*'s bounds take time and memory the state budget does not count: the (phrase,
// predecessor) pairs of lemma 1 and the (context, phrase) scores of the option bounds, about the
// sentence's length times the options within the distortion limit, so quadratic in the length
// with no limit (-1). So exact_search and exact_support build them within bounds_cap(max_states)
// of those (the larger of max_states and MIN_BOUNDS_CAP; no cap without a budget), else end at
// once with status "budget", no derivation and no upper bound. (A 5,000-word line at d = 6 of
// the de-en regression model took about 5 million; at d = -1, about 200 million, as counted
// before the short phrases' scores read back from the fixpoint stopped counting, so at most
// that now. The lines of the generated real-size 5-gram model, 15-35 words at d = 6, take
// 10-66 million with the window bounds, at about 0.45 microseconds a unit: 48 of 50 build
// their tables within the cap, two of them without the window bounds, which are skipped when
// they would pass it.)
constexpr long MIN_BOUNDS_CAP = 50000000;
long bounds_cap(long max_states);

// The k best derivations, optimal = true and upper_bound = the best score, or status "budget"
// (max_states or time_limit ran out; upper_bound then bounds every derivation's score, and
// hypotheses holds any complete derivation found) or "none" (no derivation satisfies the
// distortion limit, or none scores at least lower_bound).
Result exact_search(const Problem& problem, const ExactOptions& options);

// A test of the A*'s heuristic (tests/integration/test_window_bound.py): every state reachable
// from the start (no floor, no budget; at most 64 words), its best completion found
// exhaustively over the search's own transitions; worst: the largest amount by which a best
// completion exceeds the state's bound (admissible: <= 0); looser: the largest amount by which
// the bound exceeds open_bound (the window bounds are tighter: <= 0); states: the states with
// an uncovered position checked; best: the best derivation's score; windows: whether the
// window bounds were used (ExactBounds::W > 0).
struct BoundCheck {
  double worst = -std::numeric_limits<double>::infinity();
  double looser = -std::numeric_limits<double>::infinity();
  long states = 0;
  double best = -std::numeric_limits<double>::infinity();
  bool windows = false;
};
BoundCheck exact_bound_check(const Problem& problem);

// exact_search with options.support set (see ExactOptions::support).
ExactSupport exact_support(const Problem& problem, const ExactOptions& options);

// `--method exact` for one sentence, whole (docs/exact.md): the stack decoder's k best under
// `stack` (stack.h; fstdecode.search.stack.StackOptions(nbest=options.nbest), built in Python) are
// real derivations, so the k-th of them (when it finds k) is the A*'s lower bound; then the A*
// under `options` (whose lower_bound must be -inf: the stack decoder supplies it). The result:
//   - proven: status "", optimal, the A*'s k best and certificate (upper_bound = the best score);
//   - over budget: status "budget" with the A*'s message and upper bound (NaN when its bounds
//     were too big to build), not optimal, and the better of the A*'s and the stack decoder's
//     derivations (the A*'s unless the stack's best scores higher; none if neither found one);
//   - status "none", no derivation: message "" when none satisfies the distortion limit (the
//     Python side words it: problem.no_derivation_message), else a bug's message (the A* lost,
//     or scored below, the stack decoder's derivation).
// states and transitions count both searches (the stack decoder's only when it gave a
// derivation). The stack decoder's own budget or pruning never stops the search: over its budget
// its completed derivations still serve as a lower bound, and without any there is none.
Result exact_decode(const Problem& problem, const ExactOptions& options, const StackOptions& stack);

}  // namespace fstdecode
