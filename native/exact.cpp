// A* over coverage states (exact.h); the proof is in docs/exact.md (once the docstring of the
// retired Python search, fstdecode/search/exact.py, whose functions this file follows name for
// name): tails, option bounds (beta), the </s> bound, the cover table and the heuristic, then the
// search, and last exact_decode, the whole of --method exact (the stack decoder's lower bound,
// the A*, the answer).
#include "exact.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coverage_set.h"
#include "hash.h"
#include "stack.h"
#include "statespace.h"

namespace fstdecode {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Starts loading the cache line at `at`: a hint, no result changes.
inline void prefetch(const void* at) {
#if defined(__GNUC__)
  __builtin_prefetch(at);
#else
  (void)at;
#endif
}

using space::BosJoins;
using space::Contexts;

// Lemma 1's predecessors of a phrase starting at s: the last phrase q before it ends at q.t with
// |q.t + 1 - s| <= d and lies left of s or right of s's position (or <s>, when s - 1 <= d).
bool may_precede(const Option& q, int s, int d) { return std::abs(q.t + 1 - s) <= d && (q.t < s || q.s > s); }

// A set of context ids, in the order they arrived (unique): a membership hash beside the list,
// so a set of many thousand contexts (a 5-gram's, lemma 1) grows in linear time (a sorted
// vector's inserts made it quadratic). Small sets are scanned; from kScan ids on, an
// open-addressing table (linear probing, at most 70% full) answers.
class ContextSet {
 public:
  // Adds id (>= 0); false when it was there.
  bool insert(int id) {
    if (contains(id)) return false;
    items_.push_back(id);
    if (items_.size() > kScan) {
      if (10 * items_.size() > 7 * slots_.size()) rehash(2 * items_.size());
      else place(id);
    }
    return true;
  }
  bool contains(int id) const {
    if (items_.size() <= kScan) return std::find(items_.begin(), items_.end(), id) != items_.end();
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = mix(static_cast<std::uint64_t>(id)) & mask;; i = (i + 1) & mask) {
      if (slots_[i] == id) return true;
      if (slots_[i] < 0) return false;
    }
  }
  const std::vector<int>& items() const { return items_; }
  std::size_t size() const { return items_.size(); }
  std::vector<int>::const_iterator begin() const { return items_.begin(); }
  std::vector<int>::const_iterator end() const { return items_.end(); }

 private:
  static constexpr std::size_t kScan = 8;
  void place(int id) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = mix(static_cast<std::uint64_t>(id)) & mask;
    while (slots_[i] >= 0) i = (i + 1) & mask;
    slots_[i] = id;
  }
  void rehash(std::size_t size) {  // to the least power of two (at least 64) >= size
    std::size_t pow = 64;
    while (pow < size) pow *= 2;
    slots_.assign(pow, -1);
    for (int id : items_) place(id);
  }
  std::vector<int> items_;
  std::vector<int> slots_;
};

// The weighted LM scores of the first min(n, k) of words[0..n) after the context m[0..mlen)
// (no minimisation).
double prefix_score(const Problem& p, const WordId* m, int mlen, const WordId* words, int n, int k,
                    std::vector<WordId>& seq) {
  seq.assign(m, m + mlen);
  const int upto = std::min(n, k);
  double total = 0.0;
  for (int i = 0; i < upto; ++i) {
    const int have = static_cast<int>(seq.size());
    const int len = std::min(k, have);
    total += p.ngram(seq.data() + (have - len), len, words[i]);
    seq.push_back(words[i]);
  }
  return total;
}

double prefix_score(const Problem& p, const Contexts& contexts, int m, const std::vector<WordId>& words, int k,
                    std::vector<WordId>& seq) {
  return prefix_score(p, contexts.words(m), contexts.len(m), words.data(), static_cast<int>(words.size()), k, seq);
}

// The backoffs charged when the context of a phrase's last k words is minimised (exact.py,
// end_charge): the part of a join that depends on the phrase alone when it has k words or more.
double end_charge(const Problem& p, const std::vector<WordId>& words, int k) {
  std::vector<WordId> ctx(words.end() - k, words.end());
  double total = 0.0;
  while (!ctx.empty() && !p.extends(ctx)) {
    total += p.backoff(ctx);
    ctx.erase(ctx.begin());
  }
  return total;
}

// The tape bounds' pieces (exact.h, ExactBounds::before and lift; exact.py, tape_bounds): for each
// start s, the contexts that may precede it, each with the largest charge (at least 0) of the
// minimisation that made it, over the phrases q that may precede s and the contexts before q
// (s = n + 1: the phrases that may end a derivation); then the suffix covers by gamma.
void add_tape_bounds(const Problem& p, Contexts& contexts, BosJoins& joins,
                     const std::vector<std::vector<const Option*>>& preceders, const std::vector<ContextSet>& before,
                     ExactBounds& b) {
  const int n = p.n(), k = p.order() - 1;
  const int d = std::min(p.d(), n + 2);
  const WordId bos_word = p.bos();
  const int bos = contexts.intern(&bos_word, 1);
  std::vector<WordId> seq;
  // charged[q]: (context after q, its largest charge) per context q can leave.
  std::vector<std::vector<std::pair<int, double>>> charged(static_cast<std::size_t>(p.option_count()));
  auto charges_of = [&](const Option& q) -> const std::vector<std::pair<int, double>>& {
    auto& out = charged[static_cast<std::size_t>(q.id)];
    if (!out.empty()) return out;
    auto add_charge = [&](int c, double ch) {
      for (auto& x : out)
        if (x.first == c) {
          x.second = std::max(x.second, ch);
          return;
        }
      out.emplace_back(c, ch);
    };
    if (static_cast<int>(q.words.size()) >= k) {
      add_charge(joins.get(bos, q).last, std::max(0.0, end_charge(p, q.words, k)));
    } else {
      for (int m : before[static_cast<std::size_t>(q.s)]) {
        const space::Joined j = joins.get(m, q);
        add_charge(j.last, std::max(0.0, j.score - prefix_score(p, contexts, m, q.words, k, seq)));
      }
    }
    return out;
  };
  b.before.assign(static_cast<std::size_t>(n) + 2, {});
  b.lifts.assign(static_cast<std::size_t>(n) + 2, {});
  const auto& by_start = p.by_start();
  for (int s = 1; s <= n + 1; ++s) {
    std::vector<std::pair<int, double>> lifted;  // context id, lift (sorted by id)
    auto raise = [&](int c, double ch) {
      auto it = std::lower_bound(lifted.begin(), lifted.end(), std::make_pair(c, -kInf));
      if (it != lifted.end() && it->first == c) it->second = std::max(it->second, ch);
      else lifted.insert(it, {c, ch});
    };
    if (s <= n) {
      if (s - 1 <= d) raise(bos, 0.0);
      for (const Option* q : preceders[static_cast<std::size_t>(s)])
        for (const auto& [c, ch] : charges_of(*q)) raise(c, ch);
    } else {
      if (n == 0) raise(bos, 0.0);
      for (int a = 1; a <= n; ++a)
        for (const Option& q : by_start[static_cast<std::size_t>(a)])
          if (p.end() - q.t - 1 <= d)
            for (const auto& [c, ch] : charges_of(q)) raise(c, ch);
    }
    for (const auto& [c, ch] : lifted) {
      b.before[static_cast<std::size_t>(s)].emplace_back(contexts.words(c), contexts.words(c) + contexts.len(c));
      b.lifts[static_cast<std::size_t>(s)].push_back(ch);
    }
  }
  // eos_lifted: </s> after any context that may end a derivation, with its charge.
  b.eos_lifted = -kInf;
  for (std::size_t i = 0; i < b.before[static_cast<std::size_t>(n) + 1].size(); ++i) {
    const auto& m = b.before[static_cast<std::size_t>(n) + 1][i];
    const WordId eos = p.eos();
    b.eos_lifted = std::max(b.eos_lifted, b.lifts[static_cast<std::size_t>(n) + 1][i] +
                                              prefix_score(p, m.data(), static_cast<int>(m.size()), &eos, 1, k, seq));
  }
  b.suffix.assign(static_cast<std::size_t>(n) + 2, -kInf);
  b.suffix[static_cast<std::size_t>(n) + 1] = 0.0;
  for (int a = n; a >= 1; --a) {
    double best = -kInf;
    for (const Option& o : by_start[static_cast<std::size_t>(a)]) {
      const double gamma = o.score + tape_bound(p, b, a, o.words.data(), std::min(static_cast<int>(o.words.size()), k));
      best = std::max(best, gamma + b.suffix[static_cast<std::size_t>(o.t) + 1]);
    }
    b.suffix[static_cast<std::size_t>(a)] = best;
  }
}

// The most words of any option of p (0 without options).
int longest_option(const Problem& p) {
  int longest = 0;
  for (int a = 1; a <= p.n(); ++a)
    for (const Option& q : p.by_start()[static_cast<std::size_t>(a)]) longest = std::max(longest, q.t - q.s + 1);
  return longest;
}

// Lemma 7 (exact.py, reordering_bounds): by option id, the best reordering score a transition
// appending the option can pay: over the spans (a, b) that may precede it (and <s>, whose
// orientation charges no forward score), the backward score of the orientation plus the best
// forward score of that orientation among the options of span (a, b). (Added to beta, and to
// each of its ends' bounds.)
std::vector<double> reordering_bounds(const Problem& p) {
  const int n = p.n(), k = p.orientations();
  const int d = std::min(p.d(), n + 2);
  const int longest = longest_option(p);
  // Spans by (start, length - 1): at(a, b) = a * longest + b - a; best_next[at * k + o], and
  // which spans have options.
  const auto at = [&](int a, int b) { return static_cast<std::size_t>(a) * static_cast<std::size_t>(longest) + static_cast<std::size_t>(b - a); };
  const std::size_t size = (static_cast<std::size_t>(n) + 2) * static_cast<std::size_t>(longest);
  std::vector<double> best_next(size * static_cast<std::size_t>(k), -kInf);
  std::vector<char> has(size, 0);
  const auto& by_start = p.by_start();
  for (int a = 1; a <= n; ++a)
    for (const Option& q : by_start[static_cast<std::size_t>(a)]) {
      has[at(q.s, q.t)] = 1;
      for (int o = 0; o < k; ++o) {
        double& x = best_next[at(q.s, q.t) * static_cast<std::size_t>(k) + static_cast<std::size_t>(o)];
        x = std::max(x, p.lr_next(p.lr_row(q.id), o));
      }
    }
  std::vector<double> best(static_cast<std::size_t>(k));
  std::vector<double> tops(static_cast<std::size_t>(p.option_count()), 0.0);
  for (int s = 1; s <= n; ++s)
    for (int t = s; t <= n && t - s < longest; ++t) {
      if (!has[at(s, t)]) continue;
      std::fill(best.begin(), best.end(), -kInf);
      if (s - 1 <= d) {
        const int o = p.orientation(0, 0, true, s, t);
        best[static_cast<std::size_t>(o)] = std::max(best[static_cast<std::size_t>(o)], 0.0);
      }
      // The spans (a, b) that may precede (s, t): |b + 1 - s| <= d, and a > s when b >= s.
      for (int b = std::max(1, s - 1 - d); b <= std::min(n, s - 1 + d); ++b)
        for (int a = std::max(1, b - longest + 1); a <= b; ++a) {
          if (!has[at(a, b)]) continue;
          if (!(b < s || a > s)) continue;
          const int o = p.orientation(a, b, false, s, t);
          const double x = best_next[at(a, b) * static_cast<std::size_t>(k) + static_cast<std::size_t>(o)];
          best[static_cast<std::size_t>(o)] = std::max(best[static_cast<std::size_t>(o)], x);
        }
      for (const Option& opt : by_start[static_cast<std::size_t>(s)]) {
        if (opt.t != t) continue;
        double top = -kInf;
        for (int o = 0; o < k; ++o) top = std::max(top, p.lr_back(opt.id, o) + best[static_cast<std::size_t>(o)]);
        tops[static_cast<std::size_t>(opt.id)] = top;
      }
    }
  return tops;
}

// Work: the size of build_bounds' work, counted so that a search can cap it (exact.h,
// bounds_cap): each (phrase, predecessor) pair it lists, each (context, short phrase) join of
// the contexts' fixpoint and each (context, k-word prefix) score its option bounds, window
// bounds and </s> bound take (the short phrases' scores they read from the fixpoint are not
// counted again); past `cap` (< 0: none) the build stops with BoundsTooBig.
// (The fixpoint of the contexts revisits the pairs, a few times over: bounded by them.)
struct BoundsTooBig {
  long cap;
  double time_limit = -1.0;  // >= 0: the build stopped at the search's --time-limit, not at the cap
};

struct Work {
  long cap = -1, done = 0;
  // time_limit > 0: the build stops with BoundsTooBig once `start` is that many seconds past
  // (the clock read every 4096 calls), so --time-limit bounds the bounds' build too.
  double time_limit = -1.0;
  std::chrono::steady_clock::time_point start{};
  unsigned ticks = 0;
  void operator()(long units = 1) {
    done += units;
    if (done > cap && cap >= 0) throw BoundsTooBig{cap};
    if (time_limit > 0.0 && (++ticks & 4095) == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > time_limit)
      throw BoundsTooBig{cap, time_limit};
  }
  // Whether `units` more stay within the cap.
  bool fits(long units) const { return cap < 0 || done + units <= cap; }
  // `units` the tables will certainly take before they are done: past the cap with them, they
  // give up now rather than after the units below the cap (the same lines give up, sooner).
  void expect(long units) const {
    if (!fits(units)) throw BoundsTooBig{cap};
  }
};

// prefixes[s]: the distinct first-k-word prefixes of the phrases of k words or more starting at
// s, in by_start's order (the option bounds score each after every context before s).
using Prefixes = std::vector<std::vector<std::vector<WordId>>>;

Prefixes long_prefixes(const Problem& p, int k) {
  Prefixes prefixes(static_cast<std::size_t>(p.n()) + 1);
  for (int s = 1; s <= p.n(); ++s) {
    auto& distinct = prefixes[static_cast<std::size_t>(s)];
    for (const Option& o : p.by_start()[static_cast<std::size_t>(s)])
      if (static_cast<int>(o.words.size()) >= k) {
        std::vector<WordId> key(o.words.begin(), o.words.begin() + k);
        if (std::find(distinct.begin(), distinct.end(), key) == distinct.end()) distinct.push_back(std::move(key));
      }
  }
  return prefixes;
}

// The place in `distinct` (long_prefixes' list of o's start) of o's first k words (o has k or more).
std::size_t prefix_index(const std::vector<std::vector<WordId>>& distinct, const Option& o) {
  const auto key = std::find_if(distinct.begin(), distinct.end(), [&](const std::vector<WordId>& x) {
    return std::equal(x.begin(), x.end(), o.words.begin());
  });
  return static_cast<std::size_t>(key - distinct.begin());
}

// Whether the window bounds' tables (2d + 2 ends a phrase, one bit each in a 64-bit mask) fit
// the limit d (clamped to n + 2); beyond it the search keeps beta alone.
bool window_tables_fit(int d) { return 2 * d + 2 <= 64; }

// The fixpoint's join scores of the short phrases (fewer than k words) of each start s: the
// i-th context of before[s] with short_at[s][j] at scores[s][i * |short_at[s]| + j] (kept for
// add_window_bounds, which would otherwise join them all again).
struct ShortJoins {
  std::vector<std::vector<const Option*>> short_at;
  std::vector<std::vector<double>> scores;
};

// The option bounds by the end of the phrase before (ExactBounds::before_end): for each start s,
// each context of before[s] is marked with the ends j of the options that may precede s and can
// leave it (and <s>); an option's bound for end j is its score after the best context so marked,
// as beta is after the best of them all (the same join and prefix scores, so max over j of
// before_end equals the LM part of beta). A search state whose coverage leaves fewer ends open
// before a phrase then bounds it by those alone (AStar::window_bound). The reordering part is
// added after, as to beta. Counted as the option bounds are: one unit a (context, prefix) score.
void add_window_bounds(const Problem& p, Contexts& contexts, int bos,
                       const std::vector<std::vector<const Option*>>& preceders, const std::vector<ContextSet>& before,
                       const std::vector<ContextSet>& after, const ShortJoins& shorts, const Prefixes& keys,
                       ExactBounds& b, Work& work) {
  const int n = p.n(), k = p.order() - 1;
  const int d = std::min(p.d(), n + 2);
  if (!window_tables_fit(d)) return;
  const int W = 2 * d + 2;
  // ends[s][i]: the ends that may leave before[s]'s i-th context (<s>'s bit, W - 1, for <s>);
  // keys[s]'s prefixes are each scored after every context of before[s] below.
  std::vector<std::vector<std::uint64_t>> ends(static_cast<std::size_t>(n) + 1);
  long units = 0;  // one a (context, prefix) score
  std::unordered_map<int, std::size_t> at;  // context -> its place in before[s]
  for (int s = 1; s <= n; ++s) {
    const auto& items = before[static_cast<std::size_t>(s)].items();
    auto& bits = ends[static_cast<std::size_t>(s)];
    bits.assign(items.size(), 0);
    at.clear();
    for (std::size_t i = 0; i < items.size(); ++i) at.emplace(items[i], i);
    const auto mark = [&](int m, int bit) { bits[at.at(m)] |= std::uint64_t{1} << bit; };
    if (s - 1 <= d) mark(bos, W - 1);
    for (const Option* q : preceders[static_cast<std::size_t>(s)])
      for (int m : after[static_cast<std::size_t>(q->id)]) mark(m, q->t - (s - 1 - d));
    units += static_cast<long>(items.size() * keys[static_cast<std::size_t>(s)].size());
  }
  // An option of the heuristic, not of its soundness: past the work cap, the search keeps beta.
  if (!work.fits(units)) return;
  work(units);
  b.W = W;
  b.before_end.assign(static_cast<std::size_t>(p.option_count()) * static_cast<std::size_t>(W), -kInf);
  std::vector<WordId> seq;
  for (int s = 1; s <= n; ++s) {
    const auto& items = before[static_cast<std::size_t>(s)].items();
    const auto& bits = ends[static_cast<std::size_t>(s)];
    const auto& distinct = keys[static_cast<std::size_t>(s)];
    // prefixes[x]: distinct[x]'s prefix scores after each context, made when first needed
    std::vector<std::vector<double>> prefixes(distinct.size());
    const std::size_t width = shorts.short_at[static_cast<std::size_t>(s)].size();
    const double* joined = shorts.scores[static_cast<std::size_t>(s)].data();
    std::size_t short_index = 0;  // o's place in short_at[s] (made in by_start's order)
    for (const Option& o : p.by_start()[static_cast<std::size_t>(s)]) {
      const bool long_phrase = static_cast<int>(o.words.size()) >= k;
      const std::size_t j = long_phrase ? 0 : short_index++;
      const double charge = long_phrase ? end_charge(p, o.words, k) : 0.0;
      const std::vector<double>* prefix = nullptr;
      if (long_phrase) {
        std::vector<double>& scores = prefixes[prefix_index(distinct, o)];
        if (scores.empty() && !items.empty()) {
          scores.reserve(items.size());
          for (int m : items) scores.push_back(prefix_score(p, contexts, m, o.words, k, seq));
        }
        prefix = &scores;
      }
      double* row = b.before_end.data() + static_cast<std::size_t>(o.id) * static_cast<std::size_t>(W);
      for (std::size_t i = 0; i < items.size(); ++i) {
        const double lm = long_phrase ? (*prefix)[i] + charge : joined[i * width + j];
        const double v = o.score + lm;
        for (std::uint64_t e = bits[i]; e; e &= e - 1) {
          double& x = row[__builtin_ctzll(e)];
          x = std::max(x, v);
        }
      }
    }
  }
}

// preceders[s] (1 <= s <= n): the options that may precede a phrase starting at s, one unit of
// work each. (q.t lies within d of s - 1, so q.s within d + longest - 1: the starts outside
// cannot.) d is the limit clamped to n + 2.
std::vector<std::vector<const Option*>> list_preceders(const Problem& p, int d, Work& work) {
  const int n = p.n();
  const int longest = longest_option(p);
  std::vector<std::vector<const Option*>> preceders(static_cast<std::size_t>(n) + 1);
  for (int s = 1; s <= n; ++s)
    for (int a = std::max(1, s - d - longest); a <= std::min(n, s - 1 + d); ++a)
      for (const Option& q : p.by_start()[static_cast<std::size_t>(a)])
        if (may_precede(q, s, d)) {
          work();
          preceders[static_cast<std::size_t>(s)].push_back(&q);
        }
  return preceders;
}

// Lemma 1: after[q], the contexts a state whose last phrase is q can have; before[s], those
// before a phrase starting at s. A phrase of k words or more fixes its context; a shorter one
// extends the contexts before it, so the sets are grown to their fixpoint. best_join[q] is the
// best join score of a short phrase q over the contexts before it (-inf for a long one).
struct ContextFixpoint {
  std::vector<ContextSet> after, before;
  std::vector<double> best_join;
  ShortJoins shorts;  // its scores kept (keep_scores) for the window bounds alone
};

// The fixpoint is semi-naive: each context reaches each set once, in the order it arrived (the
// set's items), and each (context, short phrase) pair is joined once, one unit of work each; the
// maxima in best_join are the same whatever the order the contexts came in. keep_joins caches
// the first kKeptJoins joins in `joins` (a cache miss each to insert), else they are only
// scored.
ContextFixpoint context_fixpoint(const Problem& p, BosJoins& joins, int bos,
                                 const std::vector<std::vector<const Option*>>& preceders, bool keep_scores,
                                 bool keep_joins, Work& work) {
  const int n = p.n(), k = p.order() - 1;
  const int d = std::min(p.d(), n + 2);
  const auto& by_start = p.by_start();
  const std::size_t count = static_cast<std::size_t>(p.option_count());
  ContextFixpoint f;
  f.after.resize(count);
  f.before.resize(static_cast<std::size_t>(n) + 1);
  f.best_join.assign(count, -kInf);
  for (int a = 1; a <= n; ++a)
    for (const Option& q : by_start[static_cast<std::size_t>(a)])
      if (static_cast<int>(q.words.size()) >= k) f.after[static_cast<std::size_t>(q.id)].insert(joins.get(bos, q).last);
  // passed[s][j]: how many of after[preceders[s][j]]'s items have reached before[s]; joined[s]:
  // how many of before[s]'s items the short phrases at s have been joined with.
  std::vector<std::vector<std::size_t>> passed(static_cast<std::size_t>(n) + 1);
  for (int s = 1; s <= n; ++s) passed[static_cast<std::size_t>(s)].assign(preceders[static_cast<std::size_t>(s)].size(), 0);
  std::vector<std::size_t> joined(static_cast<std::size_t>(n) + 1, 0);
  auto& short_at = f.shorts.short_at;
  short_at.resize(static_cast<std::size_t>(n) + 1);
  f.shorts.scores.resize(static_cast<std::size_t>(n) + 1);
  for (int s = 1; s <= n; ++s)
    for (const Option& q : by_start[static_cast<std::size_t>(s)])
      if (static_cast<int>(q.words.size()) < k) short_at[static_cast<std::size_t>(s)].push_back(&q);
  constexpr long kKeptJoins = 2'000'000;
  long fixpoint_joins = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (int s = 1; s <= n; ++s) {
      const auto i = static_cast<std::size_t>(s);
      ContextSet& set = f.before[i];
      if (s - 1 <= d) set.insert(bos);
      const auto& pre = preceders[i];
      for (std::size_t j = 0; j < pre.size(); ++j) {
        const std::vector<int>& from = f.after[static_cast<std::size_t>(pre[j]->id)].items();
        for (std::size_t& x = passed[i][j]; x < from.size(); ++x) set.insert(from[x]);
      }
      work.expect(static_cast<long>((set.size() - joined[i]) * short_at[i].size()));
      for (; joined[i] < set.size(); ++joined[i]) {
        const int m = set.items()[joined[i]];
        for (const Option* q : short_at[i]) {
          work();
          // With keep_joins the first kKeptJoins are cached for the A* (it joins with the
          // contexts of a small fixpoint again: a trigram's), the rest only scored (a 5-gram's
          // millions would fill a table of gigabytes with joins it never asks for). Without it
          // (--method prove's small budget) none is cached: on the 48 Hansards lines the default's
          // tables took 1.11-1.24 s with the first 2M cached, 0.76-0.81 s without, its A* 0.05 s
          // more; --method exact's A* 0.4-1.0 s more (of 18-19 s) without.
          const space::Joined j =
              keep_joins && ++fixpoint_joins <= kKeptJoins ? joins.get(m, *q) : joins.score(m, *q);
          if (keep_scores) f.shorts.scores[i].push_back(j.score);
          double& best = f.best_join[static_cast<std::size_t>(q->id)];
          best = std::max(best, j.score);
          changed |= f.after[static_cast<std::size_t>(q->id)].insert(j.last);
        }
      }
    }
  }
  return f;
}

// Lemma 3, beta by option id without the reordering part: a phrase of k words or more, its score
// plus the best score of its first k words over before[s] (once a distinct prefix, one unit a
// context) and its end charge; a shorter one, its score plus its best join (best_join, from the
// fixpoint, which joined it with every context before it; -inf for none).
std::vector<double> option_bounds(const Problem& p, Contexts& contexts, const std::vector<ContextSet>& before,
                                  const std::vector<double>& best_join, const Prefixes& prefixes, Work& work) {
  const int n = p.n(), k = p.order() - 1;
  {  // each context of before[s] with each distinct k-word prefix at s
    long units = 0;
    for (int s = 1; s <= n; ++s)
      units += static_cast<long>(before[static_cast<std::size_t>(s)].size() * prefixes[static_cast<std::size_t>(s)].size());
    work.expect(units);
  }
  std::vector<double> beta(static_cast<std::size_t>(p.option_count()), -kInf);
  std::vector<WordId> seq;
  for (int s = 1; s <= n; ++s) {
    const ContextSet& set = before[static_cast<std::size_t>(s)];
    const auto& distinct = prefixes[static_cast<std::size_t>(s)];
    std::vector<double> best_prefix(distinct.size());
    std::vector<bool> scored(distinct.size(), false);
    for (const Option& o : p.by_start()[static_cast<std::size_t>(s)]) {
      double lm = best_join[static_cast<std::size_t>(o.id)];
      if (static_cast<int>(o.words.size()) >= k) {
        const std::size_t x = prefix_index(distinct, o);
        if (!scored[x]) {
          double best = -kInf;
          for (int m : set) {
            work();
            best = std::max(best, prefix_score(p, contexts, m, o.words, k, seq));
          }
          best_prefix[x] = best;
          scored[x] = true;
        }
        lm = best_prefix[x] + end_charge(p, o.words, k);
      }
      beta[static_cast<std::size_t>(o.id)] = o.score + lm;
    }
  }
  return beta;
}

// Lemma 5: </s> after the contexts of every phrase that can end a derivation (any, under Moses'
// semantics), one unit a join.
double eos_bound(const Problem& p, BosJoins& joins, int bos, const std::vector<ContextSet>& after, Work& work) {
  const int n = p.n();
  const int d = std::min(p.d(), n + 2);
  double eos = n == 0 ? joins.get(bos, p.eos_option()).score : -kInf;
  for (int a = 1; a <= n; ++a)
    for (const Option& q : p.by_start()[static_cast<std::size_t>(a)])
      if (p.moses() || p.end() - q.t - 1 <= d)
        for (int m : after[static_cast<std::size_t>(q.id)]) {
          work();
          eos = std::max(eos, joins.get(m, p.eos_option()).score);
        }
  return eos;
}

// Lemma 4: cover[a][e], the best segmentation of a..e by beta; cover[e + 1][e] = 0. A long
// sentence's are held by Runs (the same recurrence, so the same values; the best beta of each
// span, as max(beta + rest) = max(beta) + rest in floating point too, rounding being monotone).
void add_covers(const Problem& p, ExactBounds& b) {
  const int n = p.n();
  const auto& by_start = p.by_start();
  if (n > MAX_FIXED_COVERAGE) {
    std::vector<std::vector<std::pair<int, double>>> spans(static_cast<std::size_t>(n) + 2);
    for (int a = 1; a <= n; ++a)
      for (const Option& o : by_start[static_cast<std::size_t>(a)]) {
        auto& list = spans[static_cast<std::size_t>(a)];
        const double value = b.beta[static_cast<std::size_t>(o.id)];
        auto it = std::find_if(list.begin(), list.end(), [&](const auto& x) { return x.first == o.t; });
        if (it == list.end()) list.emplace_back(o.t, value);
        else it->second = std::max(it->second, value);
      }
    b.runs = Runs(n, std::move(spans));
    return;
  }
  b.cover.assign(static_cast<std::size_t>(n) + 2, std::vector<double>(static_cast<std::size_t>(n) + 1, -kInf));
  for (int e = 0; e <= n; ++e) {
    b.cover[static_cast<std::size_t>(e) + 1][static_cast<std::size_t>(e)] = 0.0;
    for (int a = e; a >= 1; --a) {
      double best = -kInf;
      for (const Option& o : by_start[static_cast<std::size_t>(a)]) {
        if (o.t > e) continue;
        const double rest = b.cover[static_cast<std::size_t>(o.t) + 1][static_cast<std::size_t>(e)];
        best = std::max(best, b.beta[static_cast<std::size_t>(o.id)] + rest);
      }
      b.cover[static_cast<std::size_t>(a)][static_cast<std::size_t>(e)] = best;
    }
  }
}

// The heuristic's pieces over a search's contexts and joins (exact.py, bounds), in the order their
// work is counted: the preceders, the contexts' fixpoint, the option bounds (beta), with
// `windows` lemma 9's tables (--method exact), the reordering parts, the </s> bound; then, not
// counted, with `tapes` the tape bounds, and the covers. windows and keep_joins are for the A*
// of a large budget, which reads most of the fixpoint's joins again (context_fixpoint).
ExactBounds build_bounds(const Problem& p, Contexts& contexts, BosJoins& joins, bool tapes = false, long cap = -1,
                         bool windows = false, bool keep_joins = true, double time_limit = -1.0,
                         std::chrono::steady_clock::time_point start = {}) {
  Work work{cap, 0, time_limit, start};
  const int n = p.n(), k = p.order() - 1;
  const int d = std::min(p.d(), n + 2);
  const WordId bos_word = p.bos();
  const int bos = contexts.intern(&bos_word, 1);
  const auto preceders = list_preceders(p, d, work);
  const ContextFixpoint f =
      context_fixpoint(p, joins, bos, preceders, windows && window_tables_fit(d), keep_joins, work);
  const Prefixes prefixes = long_prefixes(p, k);
  ExactBounds b;
  b.beta = option_bounds(p, contexts, f.before, f.best_join, prefixes, work);
  if (windows) add_window_bounds(p, contexts, bos, preceders, f.before, f.after, f.shorts, prefixes, b, work);
  if (p.has_reordering()) {
    const std::vector<double> tops = reordering_bounds(p);
    for (std::size_t id = 0; id < b.beta.size(); ++id) {
      b.beta[id] += tops[id];
      for (std::size_t o = 0; o < static_cast<std::size_t>(b.W); ++o)
        b.before_end[id * static_cast<std::size_t>(b.W) + o] += tops[id];
    }
  }
  b.eos = eos_bound(p, joins, bos, f.after, work);
  b.work = work.done;
  if (tapes) add_tape_bounds(p, contexts, joins, preceders, f.before, b);
  add_covers(p, b);
  return b;
}

}  // namespace

double tape_bound(const Problem& p, const ExactBounds& b, int s, const WordId* words, int len) {
  const int k = p.order() - 1;
  std::vector<WordId> seq;
  double best = -kInf;
  const auto& contexts = b.before[static_cast<std::size_t>(s)];
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    const auto& m = contexts[i];
    best = std::max(best, b.lifts[static_cast<std::size_t>(s)][i] +
                              prefix_score(p, m.data(), static_cast<int>(m.size()), words, len, k, seq));
  }
  return best;
}

ExactBounds exact_bounds(const Problem& p, bool tapes) {
  Contexts contexts(p.order() - 1);
  BosJoins joins(p, contexts, true);
  return build_bounds(p, contexts, joins, tapes);
}

namespace {

struct Node {
  double g;
  int state;   // -1: the goal
  int parent;  // -1: the start
  int option;  // Option::id (-1: the start or </s>)
};

struct Entry {
  double f;
  long seq;
  int node;
  int state;  // nodes_[node].state, beside it (the entry's padding): a stale entry is dropped
              // without reading its node
};
static_assert(sizeof(Entry) == 24, "the state fills the entry's padding");

// The heap's order: the largest f first, then the earliest pushed.
struct Lower {
  bool operator()(const Entry& a, const Entry& b) const {
    if (a.f != b.f) return a.f < b.f;
    return a.seq > b.seq;
  }
};

// The A*'s joins by rows: row c holds the joins of context c with every option (Option::id),
// each taken once from `joins` (BosJoins::peek: the cache the bounds filled, else scored and
// kept in the row alone) and kept at row[c][id]. An expansion joins one context with the
// options of a few spans, whose ids are close together, so it reads a few cache lines of one
// row, where the cache's hash scatters them. Rows are made for the contexts the search reaches;
// past kMaxBytes of rows, a context without one is joined through `joins` alone (joins.get,
// cached there). The same values as joins.get. (On the generated 5-gram model's line 26, 1.16M
// states: the A* took 14.7 s with 64 MB of rows each filled through joins.get, 11.4 s with peek,
// 9.9 s with 256 MB of rows, 10.0 s with 1 GB; on its line 39, 2.79M states: 44.0 s with 256 MB,
// 32.9 s with 1 GB, and a smaller peak RSS, 2.0 GB, the cache holding fewer joins.)
class JoinRows {
 public:
  JoinRows(BosJoins& joins, int options) : joins_(joins), options_(static_cast<std::size_t>(options)) {}
  space::Joined get(int context, const Option& opt) {
    const auto c = static_cast<std::size_t>(context);
    if (c >= rows_.size()) rows_.resize(c + 1);
    auto& row = rows_[c];
    if (row.empty()) {
      if ((made_ + 1) * options_ * sizeof(space::Joined) > kMaxBytes) return joins_.get(context, opt);
      row.assign(options_, space::Joined{-1, -1, 0.0});
      ++made_;
    }
    space::Joined& x = row[static_cast<std::size_t>(opt.id)];
    if (x.first < 0) x = joins_.peek(context, opt);
    return x;
  }
  // Starts loading the join get(context, opt) will read, if its row is made. Changes no result.
  void prefetch_join(int context, const Option& opt) const {
    const auto c = static_cast<std::size_t>(context);
    if (c < rows_.size() && !rows_[c].empty()) prefetch(&rows_[c][static_cast<std::size_t>(opt.id)]);
  }

 private:
  static constexpr std::size_t kMaxBytes = std::size_t{1024} << 20;
  BosJoins& joins_;
  std::size_t options_, made_ = 0;
  std::vector<std::vector<space::Joined>> rows_;
};

// The A*'s open list: the entry of the largest f first, then the earliest pushed (Lower), as one
// binary heap would give them, but held in buckets of f, each its own heap: bucket i holds the f
// in (top - (i + 1) width, top - i width], the first and last buckets also all above and below.
// So a pop sifts through its bucket's few entries (in the CPU's caches) instead of a heap of
// millions, and the order is the one heap's exactly: a larger f never lies in a later bucket.
class OpenList {
 public:
  // top: the largest f expected (the root's bound); width > 0.
  OpenList(double top, double width) : top_(top), width_(width) {}
  bool empty() const { return size_ == 0; }
  const Entry& front() const { return buckets_[first_].front(); }
  void push(const Entry& e) {
    const std::size_t i = bucket(e.f);
    if (i >= buckets_.size()) buckets_.resize(i + 1);
    auto& b = buckets_[i];
    b.push_back(e);
    std::push_heap(b.begin(), b.end(), Lower{});
    if (size_++ == 0 || i < first_) first_ = i;
  }
  Entry pop() {  // not empty()
    auto& b = buckets_[first_];
    std::pop_heap(b.begin(), b.end(), Lower{});
    const Entry e = b.back();
    b.pop_back();
    if (--size_ > 0)
      while (buckets_[first_].empty()) ++first_;
    return e;
  }

 private:
  static constexpr std::size_t kMaxBuckets = 1 << 14;
  std::size_t bucket(double f) const {
    const double x = (top_ - f) / width_;  // monotone in f; NaN-free for finite top, width
    if (!(x > 0.0)) return 0;
    if (x >= static_cast<double>(kMaxBuckets - 1)) return kMaxBuckets - 1;
    return static_cast<std::size_t>(x);
  }
  double top_, width_;
  std::vector<std::vector<Entry>> buckets_;
  std::size_t size_ = 0, first_ = 0;
};

struct Stop {
  std::string message;
};

constexpr const char* BEYOND_WINDOW =
    "a coverage reached beyond the core's window of 448 positions right of its first gap";

template <class C>
struct State {
  C coverage;
  int last_t;
  int context;
  // The last phrase's reordering state (exact.py, SearchProblem.reordering_state): its start
  // when the orientation reads it (else 0) and its next-row id (0 without a forward direction;
  // -1 at the start and without reordering).
  int last_s;
  int row;
  int pops;
  int kept;  // g values kept (at most nbest): with nbest 1 in `best`, else in kept_
  double h;
  double best;  // with nbest 1, the best g kept (in the line the index's probe read)
};

template <class C>
class AStar {
 public:
  AStar(const Problem& problem, const ExactOptions& options)
      : p_(problem), o_(options), n_(problem.n()), end_(problem.end()), k_(problem.order() - 1),
        d_(std::min(problem.d(), problem.n() + 2)), eta_(problem.eta()), nbest_(std::max(1, options.nbest)),
        contexts_(k_), joins_(problem, contexts_, true), rows_(joins_, problem.option_count()),
        start_(std::chrono::steady_clock::now()),  // before the bounds: --time-limit counts their build
        bounds_(build_bounds(problem, contexts_, joins_, false,
                             options.bounds_work >= 0 ? options.bounds_work : bounds_cap(options.max_states),
                             options.bounds_work < 0 && !C::windowed, options.bounds_work < 0, options.time_limit,
                             start_)) {
    if (n_ > 0) full_.set_range(0, n_ - 1);
    // spans_[s]: the options starting at s grouped by end (ascending), best beta first.
    spans_.resize(static_cast<std::size_t>(n_) + 1);
    for (int s = 1; s <= n_; ++s) {
      auto& spans = spans_[static_cast<std::size_t>(s)];
      for (const Option& o : p_.by_start()[static_cast<std::size_t>(s)]) {
        auto it = std::find_if(spans.begin(), spans.end(), [&](const Span& x) { return x.t == o.t; });
        if (it == spans.end()) it = spans.insert(spans.end(), Span{o.t, {}});
        it->options.push_back(&o);
      }
      std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.t < b.t; });
      for (Span& x : spans)
        std::stable_sort(x.options.begin(), x.options.end(), [&](const Option* a, const Option* b) {
          return bounds_.beta[static_cast<std::size_t>(a->id)] > bounds_.beta[static_cast<std::size_t>(b->id)];
        });
    }
    if (bounds_.W > 0) {
      const auto W = static_cast<std::size_t>(bounds_.W);
      span_ends_.resize(static_cast<std::size_t>(n_) + 1);
      for (int s = 1; s <= n_; ++s) {
        auto& rows = span_ends_[static_cast<std::size_t>(s)];
        const auto& spans = spans_[static_cast<std::size_t>(s)];
        rows.assign(spans.size() * W, -kInf);
        for (std::size_t i = 0; i < spans.size(); ++i)
          for (const Option* o : spans[i].options)
            for (std::size_t b = 0; b < W; ++b)
              rows[i * W + b] = std::max(rows[i * W + b], bounds_.before_end[static_cast<std::size_t>(o->id) * W + b]);
      }
    }
    // A derivation scoring lower_bound must survive rounding in the sums of g and h.
    const double lb = o_.lower_bound;
    floor_ = std::isfinite(lb) ? lb - 1e-9 * std::max(1.0, std::abs(lb)) : -kInf;
  }

  // exact_bound_check (exact.h): every state reachable from the start, each completion scored
  // exhaustively (best over its transitions, as expand scores them, with no floor).
  BoundCheck check_bounds() {
    BoundCheck out;
    const WordId bos = p_.bos();
    const C zero;
    const int ctx = contexts_.intern(&bos, 1);
    const int start = new_state(zero, 0, ctx, 0, -1, heuristic(zero, 0, ctx));
    std::vector<double> best;  // by state id; NaN: not yet
    const auto completion = [&](auto& self, int id) -> double {
      if (static_cast<std::size_t>(id) < best.size() && !std::isnan(best[static_cast<std::size_t>(id)]))
        return best[static_cast<std::size_t>(id)];
      const State<C> st = states_list_[static_cast<std::size_t>(id)];
      double top = -kInf;
      if (st.coverage == full_) {
        top = st.h;  // the closing score itself
      } else {
        const int lo = std::max(1, st.last_t + 1 - d_), hi = std::min(n_, st.last_t + 1 + d_);
        const int g0 = lowest_uncovered(st.coverage);
        for (int s = lo; s <= hi; ++s) {
          if (st.coverage.get(s - 1)) continue;
          const int jump = std::abs(st.last_t + 1 - s);
          for (const Span& span : spans_[static_cast<std::size_t>(s)]) {
            if (st.coverage.any_in_range(s - 1, span.t - 1)) break;
            if (p_.moses() && s != g0 && span.t + 1 - g0 > d_) break;
            C cov = st.coverage;
            if (!cov.set_range(s - 1, span.t - 1)) throw std::logic_error("exact_bound_check: beyond the window");
            if (is_dead(cov, span.t, n_, d_, p_.moses())) continue;
            for (const Option* opt : span.options) {
              const space::Joined joined = joins_.get(st.context, *opt);
              double w = opt->score + joined.score - eta_ * jump;
              int last_s = 0, row = -1;
              if (p_.has_reordering()) {
                w += p_.reordering_score(st.last_s, st.last_t, st.row, *opt);
                last_s = p_.reordering_reads_start() ? opt->s : 0;
                row = p_.lr_row(opt->id);
              }
              const int t = span.t, context = joined.last;
              int to = index_.find(hash_of(cov, t, context, last_s, row), [&](int i) {
                const State<C>& y = states_list_[static_cast<std::size_t>(i)];
                return y.last_t == t && y.context == context && y.last_s == last_s && y.row == row && y.coverage == cov;
              });
              if (to < 0) to = new_state(cov, t, context, last_s, row, heuristic(cov, t, context));
              top = std::max(top, w + self(self, to));
            }
          }
        }
        ++out.states;
        const double h = states_list_[static_cast<std::size_t>(id)].h;
        out.worst = std::max(out.worst, top - h);
        out.looser = std::max(out.looser, h - span_bound(st.coverage, st.last_t));
      }
      if (best.size() <= static_cast<std::size_t>(id)) best.resize(static_cast<std::size_t>(id) + 1, std::nan(""));
      best[static_cast<std::size_t>(id)] = top;
      return top;
    };
    out.best = completion(completion, start);
    out.windows = windows();
    return out;
  }

  // run() in support mode: the result, and the options of every derivation scoring at least the
  // lower bound (exact.py, support: β over the recorded transitions, states by coverage size).
  ExactSupport run_support() {
    ExactSupport out;
    out.result = run();
    if (out.result.status == "budget") return out;
    std::vector<std::vector<int>> by_size(static_cast<std::size_t>(n_) + 1);
    for (std::size_t i = 0; i < states_list_.size(); ++i)
      by_size[static_cast<std::size_t>(states_list_[i].coverage.count())].push_back(static_cast<int>(i));
    std::vector<std::vector<int>> out_edges(states_list_.size());
    for (std::size_t e = 0; e < edges_.size(); ++e)
      out_edges[static_cast<std::size_t>(edges_[e].from)].push_back(static_cast<int>(e));
    std::vector<double> beta(states_list_.size(), -kInf);
    const auto completion = [&](int to) { return to < 0 ? 0.0 : beta[static_cast<std::size_t>(to)]; };
    for (int size = n_; size >= 0; --size)
      for (int q : by_size[static_cast<std::size_t>(size)])
        for (int e : out_edges[static_cast<std::size_t>(q)]) {
          const Edge& x = edges_[static_cast<std::size_t>(e)];
          beta[static_cast<std::size_t>(q)] = std::max(beta[static_cast<std::size_t>(q)], x.w + completion(x.to));
        }
    std::vector<char> kept(static_cast<std::size_t>(p_.option_count()), 0);
    for (const Edge& x : edges_)
      if (x.option >= 0 && x.g + x.w + completion(x.to) >= floor_) kept[static_cast<std::size_t>(x.option)] = 1;
    for (int i = 0; i < p_.option_count(); ++i)
      if (kept[static_cast<std::size_t>(i)]) out.options.push_back(p_.option(i).index);
    std::sort(out.options.begin(), out.options.end());
    return out;
  }

  Result run() {
    Result result;
    try {
      const WordId bos = p_.bos();
      const C zero;
      const int ctx = contexts_.intern(&bos, 1);
      const double root = heuristic(zero, 0, ctx);
      result.root_bound = root;
      if (std::isfinite(root)) {  // buckets of 1/4096 of the f that can matter, [floor, root]
        const double range = std::isfinite(floor_) ? root - floor_ : std::max(1.0, std::abs(root));
        open_ = OpenList(root, std::max(range / 4096.0, 1e-9));
      }
      const int start = new_state(zero, 0, ctx, 0, -1, root);
      if (start >= 0) push(start, 0.0, -1, -1);
      expanding_ = -kInf;  // the start is on the heap: its f bounds every derivation
      search(result);
    } catch (const Stop& stop) {
      result.status = "budget";
      result.message = stop.message;
      result.optimal = false;
      double ub = open_.empty() ? -kInf : open_.front().f;
      ub = std::max(ub, expanding_);  // a state stopped mid-expansion: off the heap, children not all on it
      if (!result.hypotheses.empty()) ub = std::max(ub, result.hypotheses.front().score);
      if (std::isfinite(o_.lower_bound)) ub = std::max(ub, o_.lower_bound);
      ub = std::max(ub, beyond_);
      result.upper_bound = ub;
    }
    result.states = states_;
    result.transitions = transitions_;
    return result;
  }

 private:
  // The bound on every completion of a state (see exact.py, heuristic()).
  // (ctx is read only at full coverage.)
  double heuristic(const C& cov, int t, int ctx) {
    if (cov == full_) {
      if (!p_.moses() && end_ - t - 1 > d_) return -kInf;
      const double close = joins_.get(ctx, p_.eos_option()).score;
      return p_.charge_final() ? close - eta_ * (end_ - t - 1) : close;
    }
    if constexpr (!C::windowed) {
      if (bounds_.W > 0) return window_bound(cov, t);
    }
    return open_bound(bounds_, cov, t, n_, eta_, d_, p_.charge_final());
  }

  // How many of a span's options (best beta first) reach the floor after `base` (g, the jump
  // and the successor's bound).
  int reach(const std::vector<const Option*>& options, double base) const {
    int count = 0;
    for (const Option* opt : options) {
      if (!(base + bounds_.beta[static_cast<std::size_t>(opt->id)] >= floor_)) break;
      ++count;
    }
    return count;
  }

  // Whether heuristic() is window_bound (else open_bound).
  bool windows() const {
    if constexpr (C::windowed) return false;
    else return bounds_.W > 0;
  }

  // open_bound: at least heuristic(cov, t, ...) (window_bound never exceeds it); the cheap
  // bound an expansion prunes a span's options by before it scores them.
  double span_bound(const C& cov, int t) const { return open_bound(bounds_, cov, t, n_, eta_, d_, p_.charge_final()); }

  // open_bound with each phrase bounded by the ends that may still precede it
  // (ExactBounds::before_end): in a completion of a state (cov, t), the phrase before a phrase
  // is the state's last one (end t) or one of the completion's, which lies in uncovered
  // positions, so its end is uncovered (and <s> only at the start); and no phrase before x..y
  // ends inside x..y. So a span's bound is the best of its options' bounds over those ends,
  // each gap is covered by its best segmentation under them, and the rest is open_bound's. Its
  // value never exceeds open_bound's (before_end's best over every end is beta) and it is
  // consistent: a successor leaves open a subset of the ends its parent does (the ends it
  // covers less, plus its own last end, which the parent had open). Memoised by (cov, t).
  double window_bound(const C& cov, int t) {
    const std::uint64_t hash = key_hash(cov, t, 0);
    const int seen = memo_index_.find(hash, [&](int i) {
      const Memo& x = memo_[static_cast<std::size_t>(i)];
      return x.t == t && x.cov == cov;
    });
    if (seen >= 0) return memo_[static_cast<std::size_t>(seen)].h;
    const int W = bounds_.W;
    const bool start = t == 0 && cov.count() == 0;
    double sum = bounds_.eos;
    cover_.resize(static_cast<std::size_t>(n_) + 2);
    for (int a = cov.next(0, n_, false); a < n_;) {
      const int e = cov.next(a, n_, true);  // positions a + 1 .. e are a gap
      cover_[static_cast<std::size_t>(e) + 1] = 0.0;
      for (int x = e; x >= a + 1; --x) {
        const int base = x - 1 - d_;  // the end of offset 0
        std::uint64_t open = start && x - 1 <= d_ ? std::uint64_t{1} << (W - 1) : 0;
        for (int o = 0; o < W - 1; ++o) {
          const int j = base + o;
          if (j >= 1 && j <= n_ && (j == t || !cov.get(j - 1))) open |= std::uint64_t{1} << o;
        }
        double best = -kInf;
        const auto& spans = spans_[static_cast<std::size_t>(x)];
        const double* rows = span_ends_[static_cast<std::size_t>(x)].data();
        for (std::size_t i = 0; i < spans.size() && spans[i].t <= e; ++i) {
          const int y = spans[i].t;  // ends x .. y (offsets x - base .. y - base) lie inside
          const int hi = std::min(y - base, W - 2);
          const std::uint64_t inside = ((std::uint64_t{2} << hi) - 1) & ~((std::uint64_t{1} << (x - base)) - 1);
          const double* row = rows + i * static_cast<std::size_t>(W);
          double value = -kInf;
          for (std::uint64_t m = open & ~inside; m; m &= m - 1) value = std::max(value, row[__builtin_ctzll(m)]);
          best = std::max(best, value + cover_[static_cast<std::size_t>(y) + 1]);
        }
        cover_[static_cast<std::size_t>(x)] = best;
      }
      sum += cover_[static_cast<std::size_t>(a) + 1];
      a = cov.next(e, n_, false);
    }
    const double h = sum - distortion_cost(cov, t, n_, eta_, d_, p_.charge_final(), n_ - cov.count());
    memo_index_.insert(hash, static_cast<int>(memo_.size()));
    memo_.push_back({cov, t, h});
    return h;
  }

  static std::uint64_t hash_of(const C& cov, int t, int ctx, int last_s, int row) {
    return key_hash(cov, t, ctx) ^
           mix((static_cast<std::uint64_t>(static_cast<std::uint32_t>(row)) << 20) ^ static_cast<std::uint32_t>(last_s));
  }

  int new_state(const C& cov, int t, int ctx, int last_s, int row, double h) {
    ++states_;
    if (o_.max_states >= 0 && states_ > o_.max_states)
      throw Stop{"more than " + std::to_string(o_.max_states) + " states (--max-states)"};
    const int id = static_cast<int>(states_list_.size());
    states_list_.push_back({cov, t, ctx, last_s, row, 0, 0, h, -kInf});
    if (nbest_ > 1) kept_.emplace_back();
    index_.insert(hash_of(cov, t, ctx, last_s, row), id);
    return id;
  }

  // Keeps g if it is among the nbest best seen at the state; false if it cannot matter.
  bool admit(int state, double g) {
    State<C>& st = states_list_[static_cast<std::size_t>(state)];
    if (st.pops >= nbest_) return false;
    if (nbest_ == 1) {  // the general case's min_element over one
      if (st.kept == 1 && g <= st.best) return false;
      st.kept = 1;
      st.best = g;
      return true;
    }
    std::vector<double>& best = kept_[static_cast<std::size_t>(state)];
    if (st.kept < nbest_) {
      best.push_back(g);
      ++st.kept;
      return true;
    }
    auto worst = std::min_element(best.begin(), best.end());
    if (g <= *worst) return false;
    *worst = g;
    return true;
  }

  void push(int state, double g, int parent, int option) {
    const double h = state < 0 ? 0.0 : states_list_[static_cast<std::size_t>(state)].h;
    const int node = static_cast<int>(nodes_.size());
    nodes_.push_back({g, state, parent, option});
    open_.push({g + h, seq_++, node, state});
  }

  // A transition whose coverage WinCov cannot hold, from a state of f = `f`: not searched, but
  // f bounds every derivation through it (h is consistent), so it joins the upper bound, and no
  // derivation below it is proven (support mode, which must see every transition, stops).
  void beyond(double f) {
    beyond_ = std::max(beyond_, f);
    if (o_.support) throw Stop{BEYOND_WINDOW};
  }

  void check_time() {
    if (o_.time_limit <= 0.0 || (++ticks_ & 255) != 0) return;
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (spent > o_.time_limit) {
      char text[64];
      std::snprintf(text, sizeof text, "%g", o_.time_limit);
      throw Stop{std::string("more than ") + text + " s of search (--time-limit)"};
    }
  }

  void search(Result& result) {
    while (!open_.empty()) {
      check_time();
      const Entry top = open_.pop();
      if (!open_.empty()) {  // the next entry's state and node: loaded while this one expands
        const Entry& next = open_.front();
        prefetch(&nodes_[static_cast<std::size_t>(next.node)]);
        if (next.state >= 0) prefetch(&states_list_[static_cast<std::size_t>(next.state)]);
      }
      if (top.state >= 0 && states_list_[static_cast<std::size_t>(top.state)].pops >= nbest_)
        continue;  // a worse path to a state already expanded nbest times
      const Node node = nodes_[static_cast<std::size_t>(top.node)];
      if (node.state < 0) {
        if (top.f < beyond_) throw Stop{BEYOND_WINDOW};  // a skipped state might hold a better one
        if (static_cast<int>(result.hypotheses.size()) < nbest_) {
          if (result.hypotheses.empty()) result.upper_bound = top.f;
          result.hypotheses.push_back(derivation(top.node));
        }
        if (static_cast<int>(result.hypotheses.size()) == nbest_ && !o_.support) break;
        continue;
      }
      ++states_list_[static_cast<std::size_t>(node.state)].pops;
      expanding_ = top.f;
      // With nbest > 1 a state is expanded up to nbest times, so the budget counts expansions
      // too: K paths through each of max_states states would be K times the work it bounds.
      if (nbest_ > 1 && o_.max_states >= 0 && ++expansions_ > o_.max_states)
        throw Stop{"more than " + std::to_string(o_.max_states) + " expansions (--max-states; with --nbest a state may be expanded once for each of its K best paths)"};
      expand(top.node, node);
      expanding_ = -kInf;
    }
    if (beyond_ > -kInf && static_cast<int>(result.hypotheses.size()) < nbest_) throw Stop{BEYOND_WINDOW};
    if (result.hypotheses.empty()) {
      result.status = "none";
      // finite lower bound: a bug (it came from a derivation); else, message "": no derivation
      // satisfies the distortion limit (Python writes that text: problem.no_derivation_message)
      if (std::isfinite(o_.lower_bound))
        result.message = "no derivation scores at least the lower bound (a bug: it came from one)";
      return;
    }
    result.optimal = true;
  }

  Hypothesis derivation(int node) const {
    Hypothesis h;
    h.score = nodes_[static_cast<std::size_t>(node)].g;
    for (int i = node; i >= 0; i = nodes_[static_cast<std::size_t>(i)].parent) {
      const int option = nodes_[static_cast<std::size_t>(i)].option;
      if (option >= 0) h.options.push_back(p_.option(option).index);
    }
    std::reverse(h.options.begin(), h.options.end());
    return h;
  }

  // Expands a state in three passes over its successors, in the same order: the first lists the
  // spans it may take (and starts loading the joins of their options that reach the floor by
  // beta); the second scores each transition (its join, from the context's row, its weight and
  // state key), drops those below the floor (short of full coverage their bound is the span's,
  // known without the index) and starts loading the state index's slot it will probe; the
  // third (keep) probes, keeps and pushes. The index and the rows outgrow the CPU's caches on
  // hard sentences, so overlapping those loads is most of an expansion's speed. The same states,
  // pushes and counts as one pass. (On the 48 Hansards lines, min of 5 runs of the hardest, line
  // 35 with 1.95M states: 5.35 s of A* before the drop, the prefetched joins and the huge pages
  // of the index, states and nodes; 4.62 s with the drop and huge pages; 4.12 s with all three.)
  void expand(int at, const Node& node) {
    const State<C> st = states_list_[static_cast<std::size_t>(node.state)];  // a copy: the list grows
    if (st.coverage == full_) {  // its h is the exact closing score
      ++transitions_;
      push(-1, node.g + st.h, at, -1);
      if (o_.support) edges_.push_back({node.state, -1, -1, st.h, node.g});
      return;
    }
    spans_out_.clear();
    out_.clear();
    const int lo = std::max(1, st.last_t + 1 - d_), hi = std::min(n_, st.last_t + 1 + d_);
    const bool moses = p_.moses(), lr = p_.has_reordering();
    const int g0 = lowest_uncovered(st.coverage);
    // Beyond WinCov's window: beyond() after the transitions before it (support mode stops there).
    bool beyond_window = false;
    for (int s = lo; s <= hi && !(beyond_window && o_.support); ++s) {
      if (st.coverage.get(s - 1)) continue;
      const int jump = std::abs(st.last_t + 1 - s);
      for (const Span& span : spans_[static_cast<std::size_t>(s)]) {
        if (st.coverage.any_in_range(s - 1, span.t - 1)) break;  // so are the longer spans
        if (moses && s != g0 && span.t + 1 - g0 > d_) break;     // Moses' gap rule; so are the longer spans
        C cov = st.coverage;
        if (!cov.set_range(s - 1, span.t - 1)) {  // beyond WinCov's window, and so are the longer spans
          beyond_window = true;
          break;
        }
        if (is_dead(cov, span.t, n_, d_, moses)) continue;  // no completion within the limit (full: the final jump)
        const bool full = cov == full_;
        // f <= g + beta(p) - eta jump + bound: beta bounds the option's LM (and reordering) part
        // after any context, eos the closing LM score; the options come best beta first.
        const double h_span = full ? (p_.charge_final() ? bounds_.eos - eta_ * (end_ - span.t - 1) : bounds_.eos)
                                   : span_bound(cov, span.t);
        const int m = reach(span.options, node.g - eta_ * jump + h_span);
        if (m > 0) spans_out_.push_back({cov, span.t, full, h_span, jump, m, &span});
      }
    }
    if (windows()) {  // the successors' own bound, tighter than the span's open_bound: each span
                      // kept by the latter is kept only if some option still reaches the floor
      for (const SpanOut& span : spans_out_)
        if (!span.full) memo_index_.prefetch(key_hash(span.cov, span.t, 0));
      for (SpanOut& span : spans_out_)
        if (!span.full) {
          span.h = window_bound(span.cov, span.t);
          span.m = reach(span.span->options, node.g - eta_ * span.jump + span.h);
        }
    }
    for (const SpanOut& span : spans_out_)
      for (int i = 0; i < span.m; ++i) rows_.prefetch_join(st.context, *span.span->options[static_cast<std::size_t>(i)]);
    for (std::size_t k = 0; k < spans_out_.size(); ++k) {
      const SpanOut& span = spans_out_[k];
      for (int i = 0; i < span.m; ++i) {
        const Option* opt = span.span->options[static_cast<std::size_t>(i)];
        const space::Joined joined = rows_.get(st.context, *opt);
        Out x{static_cast<int>(k), opt, joined.last, opt->score + joined.score - eta_ * span.jump, 0, -1, 0};
        if (lr) {
          x.w += p_.reordering_score(st.last_s, st.last_t, st.row, *opt);
          x.last_s = p_.reordering_reads_start() ? opt->s : 0;
          x.row = p_.lr_row(opt->id);
        }
        // Below the floor whatever state it reaches: short of full coverage a state's h is its
        // (coverage, last end)'s bound, span.h, so the index need not be probed to drop it.
        if (!span.full && !(node.g + x.w + span.h >= floor_)) {
          ++transitions_;
          continue;
        }
        x.hash = hash_of(span.cov, span.t, x.context, x.last_s, x.row);
        index_.prefetch(x.hash);
        out_.push_back(x);
      }
    }
    keep(at, node);
    if (beyond_window) beyond(node.g + st.h);
  }

  // The second pass of expand: each transition scored in out_ (then cleared), in order.
  void keep(int at, const Node& node) {
    for (const Out& x : out_) {
      ++transitions_;
      const SpanOut& span = spans_out_[static_cast<std::size_t>(x.span)];
      const C& cov = span.cov;
      const double g = node.g + x.w;
      int to = index_.find(x.hash, [&](int i) {
        const State<C>& y = states_list_[static_cast<std::size_t>(i)];
        return y.last_t == span.t && y.context == x.context && y.last_s == x.last_s && y.row == x.row &&
               y.coverage == cov;
      });
      const double h = to >= 0 ? states_list_[static_cast<std::size_t>(to)].h
                               : (span.full ? heuristic(cov, span.t, x.context) : span.h);
      const double f = g + h;
      if (!(f > -kInf) || f < floor_) continue;  // a dead end, or cannot beat the known derivation
      if (to < 0) to = new_state(cov, span.t, x.context, x.last_s, x.row, h);
      if (o_.support) edges_.push_back({node.state, to, x.opt->id, x.w, node.g});
      if (admit(to, g)) push(to, g, at, x.opt->id);
    }
    out_.clear();
  }

  const Problem& p_;
  const ExactOptions& o_;
  const int n_, end_, k_, d_;
  const double eta_;
  const int nbest_;
  Contexts contexts_;
  BosJoins joins_;
  JoinRows rows_;
  std::chrono::steady_clock::time_point start_;  // the time limit's start (the bounds' build included)
  const ExactBounds bounds_;
  C full_;
  struct Span {
    int t;
    std::vector<const Option*> options;
  };
  std::vector<std::vector<Span>> spans_;
  // window_bound's pieces: span_ends_[s][i * W + o], the best before_end of span i of spans_[s]
  // at offset o; its memo of (coverage, last end) -> bound; a gap's covers.
  std::vector<std::vector<double>> span_ends_;
  struct Memo {
    C cov;
    int t;
    double h;
  };
  std::vector<Memo> memo_;
  space::Index memo_index_;
  std::vector<double> cover_;
  // expand's first pass: the spans it takes (their coverage, end, whether it is full, and the
  // bound of what remains) and the transitions it scored, for the second (keep).
  struct SpanOut {
    C cov;
    int t;
    bool full;
    double h;
    int jump, m;  // the jump to the span; its first m options reach the floor
    const Span* span;
  };
  struct Out {
    int span;  // into spans_out_
    const Option* opt;
    int context;
    double w;
    int last_s, row;
    std::uint64_t hash;
  };
  std::vector<SpanOut> spans_out_;
  std::vector<Out> out_;
  double floor_;
  space::Index index_;
  std::vector<State<C>, HugePageAllocator<State<C>>> states_list_;
  // With nbest > 1, the g values kept at each state (at most nbest, grown as they come: a list of
  // nbest made up front for each state took nbest x 8 bytes a state, 9 GB at --nbest 100000).
  std::vector<std::vector<double>> kept_;
  long expansions_ = 0;  // with nbest > 1, the expansions (a state may be expanded nbest times)
  std::vector<Node, HugePageAllocator<Node>> nodes_;
  OpenList open_{0.0, 1.0};
  // Support mode: every transition whose bound reaches the floor (to = -1: the goal), with its
  // score w and the best g of its source state.
  struct Edge {
    int from, to, option;
    double w, g;
  };
  std::vector<Edge> edges_;
  long seq_ = 0, states_ = 0, transitions_ = 0;
  double beyond_ = -kInf;  // the largest f of a state with a transition beyond the window
  // The f of the state being expanded (popped, its successors not all pushed yet), -inf between
  // expansions, +inf before the start state is on the heap: a budget stop inside an expansion
  // must keep it in the upper bound, since the heap no longer holds it.
  double expanding_ = kInf;
  unsigned ticks_ = 0;
};

// The result of a search whose bounds were too big to build: over budget, with no derivation
// and no upper bound (the line keeps the stack decoder's derivation, without a gap).
Result too_big(const BoundsTooBig& e, const ExactOptions& options) {
  Result result;
  result.status = "budget";
  if (e.time_limit >= 0.0) {  // the words of check_time's stop
    char text[64];
    std::snprintf(text, sizeof text, "%g", e.time_limit);
    result.message = std::string("more than ") + text + " s of search (--time-limit), building the A*'s bounds";
    return result;
  }
  const std::string rule = options.bounds_work >= 0 ? "the share of --max-states the proof may spend on them"
                                                    : "the larger of --max-states and " + std::to_string(MIN_BOUNDS_CAP);
  result.message = "the A*'s bounds need more than " + std::to_string(e.cap) +
                   " phrase pairs, joins and context scores (" + rule +
                   "); under a distortion limit they grow linearly with the sentence";
  return result;
}

}  // namespace

long bounds_cap(long max_states) { return max_states < 0 ? -1 : std::max(max_states, MIN_BOUNDS_CAP); }

BoundCheck exact_bound_check(const Problem& problem) {
  if (!problem.finished()) throw std::logic_error("exact_bound_check: call Problem.finish() first");
  if (problem.n() > 64) throw std::invalid_argument("exact_bound_check: at most 64 words");
  const ExactOptions options{1, -1, 0.0, -kInf, -1};
  return AStar<Cov<1>>(problem, options).check_bounds();
}

ExactSupport exact_support(const Problem& problem, const ExactOptions& options) {
  if (!problem.finished()) throw std::logic_error("exact_support: call Problem.finish() first");
  ExactOptions o = options;
  o.nbest = 1;
  o.support = true;
  ExactSupport out;
  try {
    out.result = with_coverage(problem, [&](auto c) {
      ExactSupport found = AStar<typename decltype(c)::type>(problem, o).run_support();
      out.options = std::move(found.options);
      return found.result;
    });
  } catch (const BoundsTooBig& e) {
    out.result = too_big(e, o);
  }
  return out;
}

Result exact_search(const Problem& problem, const ExactOptions& options) {
  if (!problem.finished()) throw std::logic_error("exact_search: call Problem.finish() first");
  if (options.nbest < 1) throw std::invalid_argument("exact_search: options.nbest < 1");
  const auto start = std::chrono::steady_clock::now();
  try {
    return with_coverage(problem, [&](auto c) {
      const auto t0 = std::chrono::steady_clock::now();
      AStar<typename decltype(c)::type> search(problem, options);
      const auto t1 = std::chrono::steady_clock::now();
      Result result = search.run();
      result.bounds_seconds = std::chrono::duration<double>(t1 - t0).count();
      result.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      return result;
    });
  } catch (const BoundsTooBig& e) {
    Result result = too_big(e, options);
    result.bounds_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }
}

Result exact_decode(const Problem& problem, const ExactOptions& options, const StackOptions& stack) {
  if (!problem.finished()) throw std::logic_error("exact_decode: call Problem.finish() first");
  if (options.nbest < 1) throw std::invalid_argument("exact_decode: options.nbest < 1");
  if (!(options.lower_bound == -kInf) || options.support)
    throw std::invalid_argument("exact_decode: options.lower_bound must be -inf and support off (the stack decoder gives the bound)");
  // The lower bound: the stack decoder's k best, real derivations even when its budget ran out
  // (status "budget" with hypotheses); pruned to nothing ("none") or over budget with none, there
  // is no lower bound. (fstdecode.fst.cascade prunes R with the same bound, from Python.)
  const auto t0 = std::chrono::steady_clock::now();
  Result lower = stack_search(problem, stack);
  const double lower_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool known = (lower.status.empty() || lower.status == "budget") && !lower.hypotheses.empty();
  const auto nbest = static_cast<std::size_t>(options.nbest);
  ExactOptions o = options;
  // Every one of the k best derivations reaches the stack decoder's k-th, if it found k.
  if (known && lower.hypotheses.size() >= nbest) o.lower_bound = lower.hypotheses[nbest - 1].score;
  Result result = exact_search(problem, o);
  result.lower_seconds = lower_seconds;
  if (known) {
    result.states += lower.states;
    result.transitions += lower.transitions;
  }
  if (result.status == "budget") {  // not proven: the best derivations known, with the A*'s bound
    result.optimal = false;
    if (known && (result.hypotheses.empty() || lower.hypotheses.front().score > result.hypotheses.front().score))
      result.hypotheses = std::move(lower.hypotheses);
    return result;
  }
  if (result.status == "none" || result.hypotheses.empty()) {
    result.status = "none";
    result.optimal = false;
    result.hypotheses.clear();
    result.message = known ? "the exact search lost the stack decoder's derivation (a bug)" : "";
    return result;
  }
  if (known) {  // the proven best cannot score below a real derivation, but for rounding
    const double best = lower.hypotheses.front().score;
    if (result.hypotheses.front().score < best - 1e-6 * std::max(1.0, std::abs(best))) {
      result.status = "none";
      result.optimal = false;
      result.hypotheses.clear();
      result.message = "the exact search scored below the stack decoder's derivation (a bug)";
      return result;
    }
  }
  result.optimal = true;
  return result;
}

}  // namespace fstdecode
