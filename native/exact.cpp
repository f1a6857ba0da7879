// A* over coverage states (exact.h); the proof is in fstdecode/search/exact.py, whose functions
// this file follows name for name: tails, option bounds (beta), the </s> bound, the cover table
// and the heuristic, then the search.
#include "exact.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "coverage_set.h"
#include "hash.h"
#include "statespace.h"

namespace fstdecode {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The last words of what may precede a phrase (exact.py, Tail): `partial`, words before them
// matter and are unknown; `charged`, the first word's score is bounded by the one-word-shorter
// context's plus `charge` (the largest weighted backoff of the contexts it stands for).
struct Tail {
  std::vector<WordId> words;
  bool partial = false;
  bool charged = false;
  double charge = 0.0;
  bool operator==(const Tail& o) const {
    return partial == o.partial && charged == o.charged && charge == o.charge && words == o.words;
  }
};

struct TailHash {
  std::size_t operator()(const Tail& t) const {
    std::uint64_t h = (t.partial ? 0x51ULL : 0x17ULL) ^ (t.charged ? 0x9e37ULL : 0);
    for (WordId w : t.words) h = mix(h ^ static_cast<std::uint32_t>(w));
    return static_cast<std::size_t>(h);
  }
};

using Tails = std::unordered_set<Tail, TailHash>;

// Lemma 1's predecessors of a phrase starting at s: the last phrase q before it ends at q.t with
// |q.t + 1 - s| <= d and lies left of s or right of s's position (or <s>, when s - 1 <= d).
bool may_precede(const Option& q, int s, int d) { return std::abs(q.t + 1 - s) <= d && (q.t < s || q.s > s); }

// The tails of phrase q (exact.py, tails_of): its last k words; a phrase of k - 1 words is
// completed by each word x that may precede it (explicit when x + q extends in the LM, else
// folded into one charged tail, since then every next word backs off through x + q).
void tails_of(const Problem& p, const Option& q, int k, int d, Tails& out) {
  const int len = static_cast<int>(q.words.size());
  if (len >= k) {
    out.insert({std::vector<WordId>(q.words.end() - k, q.words.end())});
    return;
  }
  if (len < k - 1) {
    out.insert({q.words, true});
    return;
  }
  std::vector<WordId> ctx(static_cast<std::size_t>(k));
  std::copy(q.words.begin(), q.words.end(), ctx.begin() + 1);
  std::unordered_set<WordId> seen;
  Tail charged{q.words, false, true, -kInf};
  auto add = [&](WordId x) {
    if (!seen.insert(x).second) return;
    ctx[0] = x;
    if (p.extends(ctx)) out.insert({ctx});
    charged.charge = std::max(charged.charge, p.backoff(ctx));
  };
  if (q.s - 1 <= d) add(p.bos());
  const auto& by_start = p.by_start();
  for (int a = 1; a <= p.n(); ++a)
    for (const Option& r : by_start[static_cast<std::size_t>(a)])
      if (r.t < q.s - 1 - d || r.t > q.s - 1 + d) continue;
      else if (may_precede(r, q.s, d)) add(r.last());
  if (charged.charge > -kInf) out.insert(charged);
}

// The weighted LM score of `w` after known[0..len) (problem ids, most recent last) and `unknown`
// unknown words before them, bounded from above over the unknown words: exact when none.
double word_bound(const Problem& p, const WordId* known, int len, int unknown, WordId w) {
  const double lambda = p.lm_weight();
  if (lambda == 0.0) return 0.0;
  if (unknown <= 0) return p.ngram(known, len, w);
  std::vector<WordId> ids(static_cast<std::size_t>(len));
  for (int i = 0; i < len; ++i) ids[static_cast<std::size_t>(i)] = p.lm_id(known[i]);
  double lo, hi;
  p.lm().context_bounds(ids.data(), len, unknown, p.lm_id(w), lo, hi);
  return lambda > 0.0 ? lambda * hi : lambda * lo;
}

// The weighted LM scores of the first min(|words|, k) words of a phrase after `tail`, bounded.
double prefix_bound(const Problem& p, const Tail& tail, const std::vector<WordId>& words, int k) {
  std::vector<WordId> seq(tail.words);
  const int upto = std::min(static_cast<int>(words.size()), k);
  const int lt = static_cast<int>(tail.words.size());
  double total = 0.0;
  for (int i = 0; i < upto; ++i) {
    const int have = lt + i;
    const int len = std::min(k, have);
    const int unknown = tail.partial ? k - have : 0;
    const WordId w = words[static_cast<std::size_t>(i)];
    if (i == 0 && tail.charged)
      total += p.ngram(seq.data(), len, w) + tail.charge;
    else
      total += word_bound(p, seq.data() + (have - len), len, unknown, w);
    seq.push_back(words[static_cast<std::size_t>(i)]);
  }
  return total;
}

// The tails of everything that may precede a phrase starting at s (Lemma 1). The tails of each
// option are made once (`memo`, by option id).
Tails tails_before(const Problem& p, int s, int k, int d, std::vector<Tails>& memo) {
  Tails out;
  if (s - 1 <= d) out.insert({{p.bos()}});
  const auto& by_start = p.by_start();
  for (int a = 1; a <= p.n(); ++a)
    for (const Option& q : by_start[static_cast<std::size_t>(a)]) {
      if (!may_precede(q, s, d)) continue;
      Tails& mine = memo[static_cast<std::size_t>(q.id)];
      if (mine.empty()) tails_of(p, q, k, d, mine);
      out.insert(mine.begin(), mine.end());
    }
  return out;
}

}  // namespace

ExactBounds exact_bounds(const Problem& p) {
  const int n = p.n(), k = p.order() - 1;
  const int d = std::min(p.d(), n + 2);
  ExactBounds b;
  b.beta.assign(static_cast<std::size_t>(p.option_count()), -kInf);
  const auto& by_start = p.by_start();
  std::vector<Tails> memo(static_cast<std::size_t>(p.option_count()));
  for (int s = 1; s <= n; ++s) {
    const auto& opts = by_start[static_cast<std::size_t>(s)];
    if (opts.empty()) continue;
    const Tails tails = tails_before(p, s, k, d, memo);
    // Options sharing their first k words share the LM part.
    std::vector<std::pair<std::vector<WordId>, double>> memo;
    for (const Option& o : opts) {
      const std::vector<WordId> prefix(o.words.begin(), o.words.begin() + std::min<std::size_t>(o.words.size(), static_cast<std::size_t>(k)));
      double best = -kInf;
      bool found = false;
      for (const auto& m : memo)
        if (m.first == prefix) {
          best = m.second;
          found = true;
          break;
        }
      if (!found) {
        for (const Tail& t : tails) best = std::max(best, prefix_bound(p, t, o.words, k));
        memo.emplace_back(prefix, best);
      }
      b.beta[static_cast<std::size_t>(o.id)] = o.score + best;
    }
  }
  // </s> follows the last phrase q, whose final jump end - q.t - 1 is within d.
  Tails last;
  if (n == 0) last.insert({{p.bos()}});
  for (int a = 1; a <= n; ++a)
    for (const Option& q : by_start[static_cast<std::size_t>(a)])
      if (p.end() - q.t - 1 <= d) {
        Tails& mine = memo[static_cast<std::size_t>(q.id)];
        if (mine.empty()) tails_of(p, q, k, d, mine);
        last.insert(mine.begin(), mine.end());
      }
  b.eos = -kInf;
  const std::vector<WordId> eos{p.eos()};
  for (const Tail& t : last) b.eos = std::max(b.eos, prefix_bound(p, t, eos, k));
  // cover[a][b]: the best segmentation of a..b; cover[b + 1][b] = 0.
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
  return b;
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
};

// The heap's order: the largest f first, then the earliest pushed.
struct Lower {
  bool operator()(const Entry& a, const Entry& b) const {
    if (a.f != b.f) return a.f < b.f;
    return a.seq > b.seq;
  }
};

struct Stop {
  std::string message;
};

// The join of a context with an option, cached per (context id, option id): the LM score of
// the option's first k words and the new context's id.
class Joins {
 public:
  struct Value {
    double lm;
    int context;
  };
  // The cached value of `key`, or nullptr.
  const Value* find(std::uint64_t key) const {
    if (slots_.empty()) return nullptr;
    const std::size_t m = slots_.size() - 1;
    for (std::size_t i = mix(key) & m;; i = (i + 1) & m) {
      if (slots_[i].used == 0) return nullptr;
      if (slots_[i].key == key) return &slots_[i].value;
    }
  }
  void insert(std::uint64_t key, Value v) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    place(key, v);
    ++size_;
  }

 private:
  struct Slot {
    std::uint64_t key = 0;
    Value value{0.0, 0};
    std::uint8_t used = 0;
  };
  void place(std::uint64_t key, Value v) {
    const std::size_t m = slots_.size() - 1;
    std::size_t i = mix(key) & m;
    while (slots_[i].used != 0) i = (i + 1) & m;
    slots_[i] = {key, v, 1};
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(std::max<std::size_t>(1024, old.size() * 2), Slot{});
    for (const Slot& x : old)
      if (x.used != 0) place(x.key, x.value);
  }
  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

template <int W>
struct State {
  Cov<W> coverage;
  int last_t;
  int context;
  int pops;
  int kept;  // g values kept in best_ (at most nbest)
  double h;
};

template <int W>
class AStar {
 public:
  AStar(const Problem& problem, const ExactOptions& options)
      : p_(problem), o_(options), n_(problem.n()), end_(problem.end()), k_(problem.order() - 1),
        d_(std::min(problem.d(), problem.n() + 2)), eta_(problem.eta()), nbest_(std::max(1, options.nbest)),
        bounds_(exact_bounds(problem)), contexts_(k_), start_(std::chrono::steady_clock::now()) {
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
    // A derivation scoring lower_bound must survive rounding in the sums of g and h.
    const double lb = o_.lower_bound;
    floor_ = std::isfinite(lb) ? lb - 1e-9 * std::max(1.0, std::abs(lb)) : -kInf;
  }

  Result run() {
    Result result;
    try {
      const WordId bos = p_.bos();
      const Cov<W> zero;
      const int ctx = contexts_.intern(&bos, 1);
      const int start = new_state(zero, 0, ctx, heuristic(zero, 0, ctx));
      if (start >= 0) push(start, 0.0, -1, -1);
      search(result);
    } catch (const Stop& stop) {
      result.status = "budget";
      result.message = stop.message;
      result.optimal = false;
      double ub = heap_.empty() ? -kInf : heap_.front().f;
      if (!result.hypotheses.empty()) ub = std::max(ub, result.hypotheses.front().score);
      if (std::isfinite(o_.lower_bound)) ub = std::max(ub, o_.lower_bound);
      result.upper_bound = ub;
    }
    result.states = states_;
    result.transitions = transitions_;
    return result;
  }

 private:
  // The bound on every completion of a state (see exact.py, heuristic()).
  // (ctx is read only at full coverage.)
  double heuristic(const Cov<W>& cov, int t, int ctx) const {
    if (cov == full_) {
      if (end_ - t - 1 > d_) return -kInf;
      const WordId eos = p_.eos();
      return p_.ngram(contexts_.words(ctx), contexts_.len(ctx), eos) - eta_ * (end_ - t - 1);
    }
    double sum = bounds_.eos;
    int uncovered = 0;
    for (int a = cov.next(0, n_, false); a < n_; ) {
      const int b = cov.next(a, n_, true);  // positions a + 1 .. b are a gap
      sum += bounds_.cover[static_cast<std::size_t>(a) + 1][static_cast<std::size_t>(b)];
      uncovered += b - a;
      a = cov.next(b, n_, false);
    }
    if (eta_ >= 0.0) return sum - eta_ * remaining_distortion(cov, t, n_);
    return sum - eta_ * d_ * (uncovered + 1);
  }

  int new_state(const Cov<W>& cov, int t, int ctx, double h) {
    ++states_;
    if (o_.max_states >= 0 && states_ > o_.max_states)
      throw Stop{"more than " + std::to_string(o_.max_states) + " states (--max-states)"};
    const int id = static_cast<int>(states_list_.size());
    states_list_.push_back({cov, t, ctx, 0, 0, h});
    best_.resize(best_.size() + static_cast<std::size_t>(nbest_), -kInf);
    index_.insert(key_hash(cov, t, ctx), id);
    return id;
  }

  // Keeps g if it is among the nbest best seen at the state; false if it cannot matter.
  bool admit(int state, double g) {
    State<W>& st = states_list_[static_cast<std::size_t>(state)];
    if (st.pops >= nbest_) return false;
    double* best = best_.data() + static_cast<std::size_t>(state) * static_cast<std::size_t>(nbest_);
    if (st.kept < nbest_) {
      best[st.kept++] = g;
      return true;
    }
    double* worst = std::min_element(best, best + nbest_);
    if (g <= *worst) return false;
    *worst = g;
    return true;
  }

  void push(int state, double g, int parent, int option) {
    const double h = state < 0 ? 0.0 : states_list_[static_cast<std::size_t>(state)].h;
    const int node = static_cast<int>(nodes_.size());
    nodes_.push_back({g, state, parent, option});
    heap_.push_back({g + h, seq_++, node});
    std::push_heap(heap_.begin(), heap_.end(), Lower{});
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
    while (!heap_.empty()) {
      check_time();
      std::pop_heap(heap_.begin(), heap_.end(), Lower{});
      const Entry top = heap_.back();
      heap_.pop_back();
      const Node node = nodes_[static_cast<std::size_t>(top.node)];
      if (node.state < 0) {
        if (result.hypotheses.empty()) result.upper_bound = top.f;
        result.hypotheses.push_back(derivation(top.node));
        if (static_cast<int>(result.hypotheses.size()) == nbest_) break;
        continue;
      }
      State<W>& st = states_list_[static_cast<std::size_t>(node.state)];
      if (st.pops >= nbest_) continue;  // a worse path to a state already expanded nbest times
      ++st.pops;
      expand(top.node, node);
    }
    if (result.hypotheses.empty()) {
      result.status = "none";
      result.message = std::isfinite(o_.lower_bound)
                           ? "no derivation scores at least the lower bound (a bug: it came from one)"
                           : "no derivation satisfies the distortion limit d=" + std::to_string(p_.d());
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

  // The LM scores of the option's first k words after the context, and the new context.
  Joins::Value join(int context, const Option& opt) {
    const std::uint64_t key = pair64(context, opt.id);
    if (const Joins::Value* got = joins_.find(key)) return *got;
    seq_buf_.assign(contexts_.words(context), contexts_.words(context) + contexts_.len(context));
    double lm = 0.0;
    const int upto = std::min(static_cast<int>(opt.words.size()), k_);
    for (int i = 0; i < upto; ++i) {
      const int have = static_cast<int>(seq_buf_.size());
      const int len = std::min(k_, have);
      lm += p_.ngram(seq_buf_.data() + (have - len), len, opt.words[static_cast<std::size_t>(i)]);
      seq_buf_.push_back(opt.words[static_cast<std::size_t>(i)]);
    }
    seq_buf_.insert(seq_buf_.end(), opt.words.begin() + upto, opt.words.end());
    const int keep = std::min(k_, static_cast<int>(seq_buf_.size()));
    const Joins::Value v{lm, contexts_.intern(seq_buf_.data() + (seq_buf_.size() - static_cast<std::size_t>(keep)), keep)};
    joins_.insert(key, v);
    return v;
  }

  void expand(int at, const Node& node) {
    const State<W> st = states_list_[static_cast<std::size_t>(node.state)];  // a copy: the list grows
    if (st.coverage == full_) {  // its h is the exact closing score
      ++transitions_;
      push(-1, node.g + st.h, at, -1);
      return;
    }
    const int lo = std::max(1, st.last_t + 1 - d_), hi = std::min(n_, st.last_t + 1 + d_);
    for (int s = lo; s <= hi; ++s) {
      if (st.coverage.get(s - 1)) continue;
      const int jump = std::abs(st.last_t + 1 - s);
      for (const Span& span : spans_[static_cast<std::size_t>(s)]) {
        if (st.coverage.any_in_range(s - 1, span.t - 1)) break;  // so are the longer spans
        Cov<W> cov = st.coverage;
        cov.set_range(s - 1, span.t - 1);
        if (is_dead(cov, span.t, n_, d_)) continue;  // no completion within the limit (full: the final jump)
        const bool full = cov == full_;
        // f <= g + beta(p) - eta jump + bound: beta bounds the option's LM part after any context,
        // eos the closing LM score; the options come best beta first.
        const double h_span = full ? bounds_.eos - eta_ * (end_ - span.t - 1) : heuristic(cov, span.t, 0);
        const double base = node.g - eta_ * jump + h_span;
        for (const Option* opt : span.options) {
          if (!(base + bounds_.beta[static_cast<std::size_t>(opt->id)] >= floor_)) break;
          ++transitions_;
          const auto [lm, context] = join(st.context, *opt);
          const double g = node.g + (opt->score + lm - eta_ * jump);
          const std::uint64_t hash = key_hash(cov, span.t, context);
          int to = index_.find(hash, [&](int i) {
            const State<W>& x = states_list_[static_cast<std::size_t>(i)];
            return x.last_t == span.t && x.context == context && x.coverage == cov;
          });
          const double h = to >= 0 ? states_list_[static_cast<std::size_t>(to)].h
                                   : (full ? heuristic(cov, span.t, context) : h_span);
          const double f = g + h;
          if (!(f > -kInf) || f < floor_) continue;  // a dead end, or cannot beat the known derivation
          if (to < 0) to = new_state(cov, span.t, context, h);
          if (admit(to, g)) push(to, g, at, opt->id);
        }
      }
    }
  }

  const Problem& p_;
  const ExactOptions& o_;
  const int n_, end_, k_, d_;
  const double eta_;
  const int nbest_;
  const ExactBounds bounds_;
  Cov<W> full_;
  struct Span {
    int t;
    std::vector<const Option*> options;
  };
  std::vector<std::vector<Span>> spans_;
  double floor_;
  space::Contexts contexts_;
  space::Index index_;
  std::vector<State<W>> states_list_;
  std::vector<double> best_;  // nbest per state
  std::vector<Node> nodes_;
  std::vector<Entry> heap_;
  std::vector<WordId> seq_buf_;
  Joins joins_;
  long seq_ = 0, states_ = 0, transitions_ = 0;
  unsigned ticks_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

Result exact_search(const Problem& problem, const ExactOptions& options) {
  if (!problem.finished()) throw std::logic_error("exact_search: call Problem.finish() first");
  if (options.nbest < 1) throw std::invalid_argument("nbest must be >= 1");
  return with_width(problem, "the native exact search",
                    [&](auto w) { return AStar<decltype(w)::value>(problem, options).run(); });
}

}  // namespace fstdecode
