// The coverage-vector DP (coverage.h): a port of fstdecode/search/coverage_dp.py.
//
// Python's names and orders are kept: layers[c] holds the states covering c tokens in order of
// creation (Python's dict order); each state's hypotheses are a k-best list kept by insert_best
// (search/kbest.py: best first, earlier insertions first among equal scores); a back-pointer is
// (previous state, rank, option) as in Python, the previous state's layer being the current one
// minus the option's length. Every floating-point sum is formed in the Python order, so scores
// agree bit for bit with the Python engine given the same LM values.
//
// Layout: a coverage is a fixed array of W 64-bit words (W = 1 for n <= 64), bit p - 1 for
// position p. LM contexts are interned per search; the join of an <s> tape ending in a context
// with an option (fstdecode.statespace.ngram.join for a = (0, (), last_t, context), c = None) is
// cached per (context, option). A layer's hash index is freed once the layer is complete (when
// it is expanded); its states stay, for the back-pointers.
#include "coverage.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fstdecode {
namespace {

inline std::uint64_t mix(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

// ---------------------------------------------------------------------------------------------
// Coverage bits: bit i (0-based) is position i + 1.

template <int W>
struct Cov {
  std::uint64_t w[W] = {};

  bool get(int i) const { return (w[i >> 6] >> (i & 63)) & 1U; }
  // Bits lo..hi (0-based, inclusive) of word k.
  static std::uint64_t mask(int k, int lo, int hi) {
    const int a = std::max(lo, k * 64), b = std::min(hi, k * 64 + 63);
    if (a > b) return 0;
    const int len = b - a + 1;
    const std::uint64_t m = len == 64 ? ~0ULL : ((1ULL << len) - 1);
    return m << (a - k * 64);
  }
  void set_range(int lo, int hi) {
    for (int k = lo >> 6; k <= (hi >> 6); ++k) w[k] |= mask(k, lo, hi);
  }
  bool any_in_range(int lo, int hi) const {
    for (int k = lo >> 6; k <= (hi >> 6); ++k)
      if (w[k] & mask(k, lo, hi)) return true;
    return false;
  }
  bool operator==(const Cov& o) const {
    for (int k = 0; k < W; ++k)
      if (w[k] != o.w[k]) return false;
    return true;
  }
  std::uint64_t hash() const {
    std::uint64_t h = 0;
    for (int k = 0; k < W; ++k) h = mix(h ^ w[k]) + static_cast<std::uint64_t>(k);
    return h;
  }
};

// ---------------------------------------------------------------------------------------------
// A small open-addressing index of ints (ids into a caller's table), probed linearly.

class Index {
 public:
  Index() { reset(); }
  void reset() {
    slots_.assign(16, Slot{});
    size_ = 0;
  }
  // The id whose key equals the probe's (eq(id)), or -1.
  template <class Eq>
  int find(std::uint64_t h, Eq&& eq) const {
    const std::size_t m = slots_.size() - 1;
    for (std::size_t i = h & m;; i = (i + 1) & m) {
      const Slot& slot = slots_[i];
      if (slot.id < 0) return -1;
      if (slot.hash == h && eq(slot.id)) return slot.id;
    }
  }
  // Inserts id (whose key is known to be absent).
  void insert(std::uint64_t h, int id) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    place(h, id);
    ++size_;
  }
  void release() {
    std::vector<Slot>().swap(slots_);
    size_ = 0;
  }

 private:
  struct Slot {  // hash and id side by side: one cache line per probe
    std::uint64_t hash = 0;
    int id = -1;  // -1: empty
  };
  void place(std::uint64_t h, int id) {
    const std::size_t m = slots_.size() - 1;
    std::size_t i = h & m;
    while (slots_[i].id >= 0) i = (i + 1) & m;
    slots_[i] = {h, id};
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(std::max<std::size_t>(16, old.size() * 2), Slot{});
    for (const Slot& slot : old)
      if (slot.id >= 0) place(slot.hash, slot.id);
  }
  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

// ---------------------------------------------------------------------------------------------
// LM contexts (at most K = order - 1 problem ids), interned per search.

class Contexts {
 public:
  explicit Contexts(int k) : k_(std::max(k, 1)) {}
  int intern(const WordId* words, int len) {
    const std::uint64_t h = hash(words, len);
    int id = index_.find(h, [&](int i) {
      return len_[static_cast<std::size_t>(i)] == len && std::equal(words, words + len, this->words(i));
    });
    if (id >= 0) return id;
    id = static_cast<int>(len_.size());
    len_.push_back(len);
    words_.insert(words_.end(), words, words + len);
    words_.resize(static_cast<std::size_t>(id + 1) * static_cast<std::size_t>(k_), 0);
    index_.insert(h, id);
    return id;
  }
  const WordId* words(int id) const { return words_.data() + static_cast<std::size_t>(id) * k_; }
  int len(int id) const { return len_[static_cast<std::size_t>(id)]; }

 private:
  static std::uint64_t hash(const WordId* words, int len) {
    std::uint64_t h = static_cast<std::uint64_t>(len);
    for (int i = 0; i < len; ++i) h = mix(h * 0x100000001b3ULL ^ static_cast<std::uint32_t>(words[i]));
    return h;
  }
  int k_;
  std::vector<WordId> words_;  // k_ per context, padded
  std::vector<int> len_;
  Index index_;
};

// ---------------------------------------------------------------------------------------------
// joined(problem, (0, (), last_t, context), opt, None, minimize) of fstdecode.statespace.ngram:
// the <s> tape ending in `context` with opt appended; cached per (context, option).

struct Joined {
  int context;  // the new tape's last words (minimised if asked), an id of Contexts
  double lm;    // the weighted LM score of the join's events, summed in order from 0.0
};

class Joins {
 public:
  Joins(const Problem& problem, Contexts& contexts, bool minimize)
      : problem_(problem), contexts_(contexts), k_(problem.order() - 1), minimize_(minimize) {}

  Joined get(int context, const Option& opt) {
    const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(context)) << 32) |
                              static_cast<std::uint32_t>(opt.id);
    const std::uint64_t h = mix(key);
    const int id = index_.find(h, [&](int i) { return keys_[static_cast<std::size_t>(i)] == key; });
    if (id >= 0) return values_[static_cast<std::size_t>(id)];
    const Joined value = join(context, opt);
    keys_.push_back(key);
    values_.push_back(value);
    index_.insert(h, static_cast<int>(values_.size() - 1));
    return value;
  }

 private:
  Joined join(int context, const Option& opt) {
    const Problem& p = problem_;
    const int k = k_;
    seq_.assign(contexts_.words(context), contexts_.words(context) + contexts_.len(context));
    double total = 0.0;
    if (opt.s == p.end()) {  // </s> closes the <s> tape: one event (a[3][-k:], </s>)
      const int m = std::min<int>(k, static_cast<int>(seq_.size()));
      total += p.ngram(seq_.data() + seq_.size() - m, m, p.eos());
      const WordId eos = p.eos();
      return {contexts_.intern(&eos, 1), total};
    }
    // On the <s> tape every word of p before its N-th is scored in context (seq[-k:]); the
    // later ones are in ŵ(p).
    const int len = static_cast<int>(opt.words.size());
    for (int i = 0; i < len; ++i) {
      const WordId w = opt.words[static_cast<std::size_t>(i)];
      if (i < k) {
        const int m = std::min<int>(k, static_cast<int>(seq_.size()));
        total += p.ngram(seq_.data() + seq_.size() - m, m, w);
      }
      seq_.push_back(w);
    }
    // last = (context + e)[-k:], then (minimize) KenLM's right-state minimisation, charging the
    // backoff of each context it shortens (minimise()).
    int m = std::min<int>(k, static_cast<int>(seq_.size()));
    const WordId* last = seq_.data() + seq_.size() - m;
    if (minimize_) {
      while (m > 0 && !p.extends(last, m)) {
        total += p.backoff(last, m);
        ++last;
        --m;
      }
    }
    return {contexts_.intern(last, m), total};
  }

  const Problem& problem_;
  Contexts& contexts_;
  int k_;
  bool minimize_;
  std::vector<WordId> seq_;
  std::vector<std::uint64_t> keys_;
  std::vector<Joined> values_;
  Index index_;
};

// ---------------------------------------------------------------------------------------------
// The DP.

struct Hyp {
  double score;
  int prev;    // the previous state's index in its layer (-1: the start)
  int rank;    // the rank of the previous hypothesis in that state's list
  int option;  // Option::id (-1: the start)
};

template <int W>
struct State {
  Cov<W> coverage;
  int last_t;
  int context;
  int count;  // hypotheses held (at most nbest)
  int list;   // nbest == 1: unused; else an index into Layer::lists
  Hyp best;   // nbest == 1: the hypothesis
};

template <int W>
struct Layer {
  std::vector<State<W>> states;  // in order of creation (Python's dict order)
  std::vector<std::vector<Hyp>> lists;
  Index index;
};

struct BudgetExceeded {};

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

template <int W>
class Search {
 public:
  Search(const Problem& problem, const CoverageOptions& options)
      // A limit beyond n + 2 allows every jump (none here exceeds n + 1); clamping it keeps the
      // arithmetic in range for "no limit" (UNLIMITED = 2**31 - 1).
      : p_(problem), o_(options), n_(problem.n()), end_(problem.end()),
        d_(std::min(problem.d(), problem.n() + 2)), eta_(problem.eta()), nbest_(std::max(1, options.nbest)),
        contexts_(problem.order() - 1), joins_(problem, contexts_, options.minimize) {
    if (n_ > 0) full_.set_range(0, n_ - 1);
    options_by_id_.assign(static_cast<std::size_t>(problem.option_count()) + 1, nullptr);
    for (const auto& opts : problem.by_start())
      for (const Option& opt : opts)
        if (opt.id >= 0) options_by_id_[static_cast<std::size_t>(opt.id)] = &opt;
  }

  Result run() {
    Result result;
    layers_.resize(static_cast<std::size_t>(n_) + 1);
    try {
      const WordId bos = p_.bos();
      const int context = contexts_.intern(&bos, 1);
      const Cov<W> zero;
      const int start = add_state(layers_[0], zero, 0, context, key_hash(zero, 0, context));
      insert(layers_[0], start, {0.0, -1, -1, -1});
      for (int c = 0; c <= n_; ++c) expand(c);
    } catch (const BudgetExceeded&) {
      result.status = "budget";
      result.message = "more than " + std::to_string(o_.max_states) + " states (--max-states)";
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
    const Layer<W>& last = layers_[static_cast<std::size_t>(n_)];
    for (std::size_t e = 0; e < last.states.size(); ++e) {
      const State<W>& st = last.states[e];
      if (end_ - st.last_t - 1 > d_) continue;
      const Joined closed = joins_.get(st.context, p_.eos_option());
      const double close = closed.lm - eta_ * (end_ - st.last_t - 1);
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
      result.message = "no derivation satisfies the distortion limit d=" + std::to_string(p_.d());
      return result;
    }
    for (const Final& f : finals) {
      Hypothesis out;
      out.score = f.score;
      int c = n_, state = f.state, rank = f.rank;
      while (true) {
        const Layer<W>& layer = layers_[static_cast<std::size_t>(c)];
        const Hyp& h = list_of(layer, layer.states[static_cast<std::size_t>(state)])[rank];
        if (h.option < 0) break;
        const Option& opt = *options_by_id_[static_cast<std::size_t>(h.option)];
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
  const Hyp* list_of(const Layer<W>& layer, const State<W>& st) const {
    return nbest_ == 1 ? &st.best : layer.lists[static_cast<std::size_t>(st.list)].data();
  }

  static std::uint64_t key_hash(const Cov<W>& cov, int last_t, int context) {
    return mix(cov.hash() ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(last_t)) << 40) ^
               static_cast<std::uint32_t>(context));
  }

  int add_state(Layer<W>& layer, const Cov<W>& cov, int last_t, int context, std::uint64_t h) {
    const int e = static_cast<int>(layer.states.size());
    State<W> st;
    st.coverage = cov;
    st.last_t = last_t;
    st.context = context;
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
  int state_of(Layer<W>& layer, const Cov<W>& cov, int last_t, int context) {
    const std::uint64_t h = key_hash(cov, last_t, context);
    const int e = layer.index.find(h, [&](int i) {
      const State<W>& x = layer.states[static_cast<std::size_t>(i)];
      return x.last_t == last_t && x.context == context && x.coverage == cov;
    });
    if (e >= 0) return e;
    ++states_;
    if (o_.max_states >= 0 && states_ > o_.max_states) throw BudgetExceeded{};
    return add_state(layer, cov, last_t, context, h);
  }

  void insert(Layer<W>& layer, int e, const Hyp& item) {
    State<W>& st = layer.states[static_cast<std::size_t>(e)];
    Hyp* list = nbest_ == 1 ? &st.best : layer.lists[static_cast<std::size_t>(st.list)].data();
    st.count = insert_best(list, st.count, nbest_, item);
  }

  void expand(int c) {
    Layer<W>& layer = layers_[static_cast<std::size_t>(c)];
    layer.index.release();  // complete: every transition into it comes from a smaller layer
    const auto& by_start = p_.by_start();
    for (std::size_t e = 0; e < layer.states.size(); ++e) {
      const State<W> st = layer.states[e];  // a copy: the layer is not written while expanded
      if (st.coverage == full_) continue;
      const Hyp* list = list_of(layer, layer.states[e]);
      scores_.assign(static_cast<std::size_t>(st.count), 0.0);
      for (int r = 0; r < st.count; ++r) scores_[static_cast<std::size_t>(r)] = list[r].score;
      const int lo = std::max(1, st.last_t + 1 - d_), hi = std::min(n_, st.last_t + 1 + d_);
      for (int s = lo; s <= hi; ++s) {
        if (st.coverage.get(s - 1)) continue;
        const int jump = std::abs(st.last_t + 1 - s);
        for (const Option& opt : by_start[static_cast<std::size_t>(s)]) {
          if (st.coverage.any_in_range(s - 1, opt.t - 1)) continue;
          Cov<W> cov = st.coverage;
          cov.set_range(s - 1, opt.t - 1);
          // The final jump into </s> must be possible from a full coverage.
          const bool full = cov == full_;
          if (full && end_ - opt.t - 1 > d_) continue;
          ++transitions_;
          const Joined joined = joins_.get(st.context, opt);
          const double delta = opt.score + joined.lm - eta_ * jump;
          Layer<W>& target = layers_[static_cast<std::size_t>(c + opt.t - opt.s + 1)];
          const int to = state_of(target, cov, opt.t, joined.context);
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
  Cov<W> full_;
  Contexts contexts_;
  Joins joins_;
  std::vector<const Option*> options_by_id_;
  std::vector<Layer<W>> layers_;
  long states_ = 1, transitions_ = 0;  // the start state counts, as in Python
  std::vector<double> scores_;
};

template <int W>
Result run(const Problem& problem, const CoverageOptions& options) {
  Search<W> search(problem, options);
  return search.run();
}

}  // namespace

Result coverage_search(const Problem& problem, const CoverageOptions& options) {
  if (!problem.finished()) throw std::logic_error("coverage_search: call Problem.finish() first");
  if (options.nbest < 1) throw std::invalid_argument("nbest must be >= 1");
  const int n = problem.n();
  if (n <= 64) return run<1>(problem, options);
  if (n <= 128) return run<2>(problem, options);
  if (n <= 256) return run<4>(problem, options);
  if (n <= 512) return run<8>(problem, options);
  Result result;
  result.status = "none";
  result.message = "the native coverage DP takes sentences of up to 512 words, got " + std::to_string(n) +
                   " (use the Python engine)";
  return result;
}

}  // namespace fstdecode
