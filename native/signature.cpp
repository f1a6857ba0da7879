// The signature state space and its searches (signature.h): a port of
// fstdecode/statespace/{signature,ngram}.py and fstdecode/search/{signature_dp,signature_beam,
// bounded}.py, function for function.
//
// The Python names are kept: Space (state_space: start, goal, expand, tape_roles, join, joined,
// minimise), Chart (signature_dp.run, backtrack, result), Heuristic and beam (make_beam),
// future_bounds. Every floating-point sum is formed in the Python order, so scores agree bit for
// bit with the Python engine given the same LM values, and every order that decides a tie is
// replicated: layers are expanded in the order their states were first built (Python's dict
// order), or in the beam's order (heapq.nlargest: best first, ties in dict order); a k-best list
// keeps the earlier insertion first among equal scores (kbest.insert_best).
//
// Layout: a signature is four ints (s, a, t, b): for order 2, (s, w_s, t, w_t) as in Figure 4;
// for higher orders (s, F, t, L) with F and L ids of word tuples interned per search (Contexts).
// A state of layer j is its signatures sorted by s (starts are distinct: tapes are disjoint),
// stored in the layer's arena and found through an open-addressing index on a hash that sums the
// signatures' hashes (so a successor's hash is the rest's plus the new tape's). A layer's keys
// are freed once it has been expanded; its hypotheses (score and back-pointer) stay for the
// backtrack. Everything lives in one Space and its Charts, freed when the search returns.
#include "signature.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace fstdecode {
namespace {

constexpr double NEG_INF = -std::numeric_limits<double>::infinity();
constexpr int PHI = -1;  // ψ index (and start position) meaning φ: no tape
// signature_beam: a beam that finishes no derivation is retried WIDEN times wider, up to MAX_BEAM.
constexpr long long WIDEN = 4;
constexpr long long MAX_BEAM = 1000000;

inline std::uint64_t mix(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

inline std::uint64_t pair64(std::int32_t x, std::int32_t y) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(x)) << 32) | static_cast<std::uint32_t>(y);
}

// ---------------------------------------------------------------------------------------------
// Signatures and states.

struct Sig {
  std::int32_t s, a, t, b;  // order 2: (s, w_s, t, w_t); else (s, F, t, L), F and L Contexts ids
};

inline bool operator==(const Sig& x, const Sig& y) {
  return x.s == y.s && x.a == y.a && x.t == y.t && x.b == y.b;
}

inline std::uint64_t sig_hash(const Sig& g) {
  return mix(pair64(g.s, g.t) * 0x9e3779b97f4a7c15ULL ^ mix(pair64(g.a, g.b)));
}

// An open-addressing index of ids (into the owner's table), probed linearly, hashes stored.
class Index {
 public:
  Index() { reset(); }
  void reset() {
    slots_.assign(16, Slot{});
    size_ = 0;
  }
  template <class Eq>
  int find(std::uint64_t h, Eq&& eq) const {
    const std::size_t m = slots_.size() - 1;
    for (std::size_t i = h & m;; i = (i + 1) & m) {
      const Slot& slot = slots_[i];
      if (slot.id < 0) return -1;
      if (slot.hash == h && eq(slot.id)) return slot.id;
    }
  }
  void insert(std::uint64_t h, int id) {  // id's key must be absent
    if (2 * (size_ + 1) > slots_.size()) grow();
    place(h, id);
    ++size_;
  }
  void release() {
    std::vector<Slot>().swap(slots_);
    size_ = 0;
  }

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::int32_t id = -1;
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

// Word tuples of at most K = order - 1 problem ids (ngram.py's F and L), interned: equal tuples
// have equal ids. Id 0 is the empty tuple (the <s> tape's F).
class Contexts {
 public:
  explicit Contexts(int k) : k_(std::max(1, k)) { intern(nullptr, 0); }
  int intern(const WordId* words, int len) {
    std::uint64_t h = static_cast<std::uint64_t>(len);
    for (int i = 0; i < len; ++i) h = mix(h * 0x100000001b3ULL ^ static_cast<std::uint32_t>(words[i]));
    int id = index_.find(h, [&](int i) { return len_[static_cast<std::size_t>(i)] == len && std::equal(words, words + len, this->words(i)); });
    if (id >= 0) return id;
    id = static_cast<int>(len_.size());
    len_.push_back(len);
    words_.insert(words_.end(), words, words + len);
    words_.resize(static_cast<std::size_t>(id + 1) * static_cast<std::size_t>(k_), 0);
    index_.insert(h, id);
    return id;
  }
  const WordId* words(int id) const { return words_.data() + static_cast<std::size_t>(id) * static_cast<std::size_t>(k_); }
  int len(int id) const { return len_[static_cast<std::size_t>(id)]; }
  int size() const { return static_cast<int>(len_.size()); }

 private:
  int k_;
  std::vector<WordId> words_;  // k_ per tuple, padded
  std::vector<int> len_;
  Index index_;
};

// An option as the state space reads it (contiguous per group).
struct Opt {
  double score;  // ŵ(p)
  std::int32_t id, s, t;
  WordId first, last;
  std::int32_t first_col, last_row;  // lam's column of `first`, row of `last`
  const Option* option;
};

struct Group {
  int t;
  std::vector<Opt> opts;  // by_start order
};

struct Joined {
  std::int32_t first, last;  // F and L of the new tape (Contexts ids)
  double score;              // the weighted LM score of the join's events (event_score)
};

struct Budget {};    // thrown once more than max_states states exist
struct EmptyMax {};  // thrown by the beam where Python's make_beam takes max() of no scores

// ---------------------------------------------------------------------------------------------
// Space: the state space of one problem (ngram.state_space), with the caches every search run on
// it shares (junction scores, interned contexts, joins).

class Space {
 public:
  Space(const Problem& problem, bool minimize)
      : p(problem), n(problem.n()), end(problem.end()),
        // A limit beyond n + 2 allows every jump (no distance here exceeds n + 1); clamping it
        // keeps the arithmetic in range for "no limit" (UNLIMITED = 2**31 - 1).
        d(std::min(problem.d(), problem.n() + 2)), order(problem.order()), k(problem.order() - 1),
        eta(problem.eta()), minimize(minimize), ngram(problem.order() > 2), contexts(problem.order() - 1) {
    WordId vocab = std::max(problem.bos(), problem.eos()) + 1;
    for (const auto& opts : problem.by_start())
      for (const Option& o : opts)
        for (WordId w : o.words) vocab = std::max(vocab, w + 1);
    vocab_ = vocab;
    row_.assign(static_cast<std::size_t>(vocab), -1);
    col_.assign(static_cast<std::size_t>(vocab), -1);
    auto add = [](std::vector<std::int32_t>& index, int& count, WordId w) {
      if (index[static_cast<std::size_t>(w)] < 0) index[static_cast<std::size_t>(w)] = count++;
    };
    add(row_, rows_, problem.bos());
    add(col_, cols_, problem.eos());
    for (const auto& opts : problem.by_start())
      for (const Option& o : opts) {
        add(row_, rows_, o.last());
        add(col_, cols_, o.first());
      }
    if (static_cast<long long>(rows_) * cols_ <= (1LL << 22))
      lam_.assign(static_cast<std::size_t>(rows_) * static_cast<std::size_t>(cols_), std::nan(""));
    groups.assign(static_cast<std::size_t>(end) + 1, {});
    for (int s = 1; s <= end; ++s) {
      const auto& opts = problem.by_start()[static_cast<std::size_t>(s)];
      std::vector<int> ends;
      for (const Option& o : opts) ends.push_back(o.t);
      std::sort(ends.begin(), ends.end());
      ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
      for (int t : ends) {
        Group g;
        g.t = t;
        for (const Option& o : opts)
          if (o.t == t)
            g.opts.push_back({o.score, o.id, o.s, o.t, o.first(), o.last(), col_[static_cast<std::size_t>(o.first())],
                              row_[static_cast<std::size_t>(o.last())], &o});
        groups[static_cast<std::size_t>(s)].push_back(std::move(g));
      }
    }
    options_by_id.assign(static_cast<std::size_t>(problem.option_count()) + 1, nullptr);
    for (const auto& opts : problem.by_start())
      for (const Option& o : opts)
        if (o.id >= 0) options_by_id[static_cast<std::size_t>(o.id)] = &o;
    if (ngram) {
      const WordId bos = problem.bos(), eos = problem.eos();
      start = {0, 0, 0, contexts.intern(&bos, 1)};
      goal = {0, 0, end, contexts.intern(&eos, 1)};
    } else {
      start = {0, problem.bos(), 0, problem.bos()};
      goal = {0, problem.bos(), end, problem.eos()};
    }
  }

  // problem.junctions()[a][b]: the weighted bigram score of a junction (computed on first use).
  double lam(WordId a, WordId b) {
    if (!lam_.empty()) {
      const std::int32_t r = row_[static_cast<std::size_t>(a)], c = col_[static_cast<std::size_t>(b)];
      if (r >= 0 && c >= 0) {
        double& v = lam_[static_cast<std::size_t>(r) * static_cast<std::size_t>(cols_) + static_cast<std::size_t>(c)];
        if (std::isnan(v)) v = p.ngram(&a, 1, b);
        return v;
      }
    }
    return p.ngram(&a, 1, b);
  }

  // ngram.joined: join(a, opt, c) with its events scored, cached. The result depends on a only
  // through its F and L (F is () exactly for the <s> tape) and on c through its F and L.
  const Joined& joined(const Sig* a, const Opt& opt, const Sig* c) {
    const std::int32_t key[5] = {opt.id, a ? a->a : -1, a ? a->b : -1, c ? c->a : -1, c ? c->b : -1};
    const std::uint64_t h = mix(mix(pair64(key[0], key[1]) ^ 0x51ed270b27UL) ^ pair64(key[2], key[3]) * 0x9e3779b97f4a7c15ULL ^ static_cast<std::uint32_t>(key[4]));
    const int id = join_index_.find(h, [&](int i) { return std::equal(key, key + 5, join_keys_.data() + static_cast<std::size_t>(i) * 5); });
    if (id >= 0) return join_values_[static_cast<std::size_t>(id)];
    const Joined value = join(a, *opt.option, c);
    join_keys_.insert(join_keys_.end(), key, key + 5);
    join_values_.push_back(value);
    join_index_.insert(h, static_cast<int>(join_values_.size() - 1));
    return join_values_.back();
  }

  // The successors of state (j, sigs[0..r)), as statespace.signature.expand (order 2) and
  // ngram.expand_ngram yield them, in their order: yield(t, new sigs, new r, hash of the new
  // state, delta, option, s1, s2). `hashes` holds sig_hash of each of sigs.
  template <bool NG, class Yield>
  void expand(int j, const Sig* sigs, int r, const std::uint64_t* hashes, Yield&& yield) {
    if (scratch_.size() < static_cast<std::size_t>(r) + 1) scratch_.resize(static_cast<std::size_t>(r) + 1);
    Sig* out = scratch_.data();
    for (const Group& g : groups[static_cast<std::size_t>(j) + 1]) {
      const int t = g.t;
      if (t == end) {  // </s> is only appended to a lone tape: anything else is not the goal
        if (r != 1) continue;
        const Sig& a = sigs[0];
        const int jump = end - a.t - 1;
        if (jump > d) continue;
        for (const Opt& o : g.opts) {
          double delta;
          if constexpr (NG) {
            const Joined& jn = joined(&a, o, nullptr);
            out[0] = {a.s, jn.first, end, jn.last};
            delta = o.score + jn.score - eta * jump;
          } else {
            out[0] = {a.s, a.a, end, o.last};
            delta = o.score + lam(a.b, o.first) - eta * jump;
          }
          yield(t, out, 1, sig_hash(out[0]), delta, o, a.s, PHI);
        }
        continue;
      }
      if (!tape_roles(sigs, r, j, t)) continue;
      for (const int k1 : cands1_)
        for (const int k2 : cands2_) {
          if (k1 == k2 && k1 != PHI) continue;  // a tape never plays both roles
          const Sig* a = k1 != PHI ? &sigs[k1] : nullptr;
          const Sig* c = k2 != PHI ? &sigs[k2] : nullptr;
          const int ns = a ? a->s : j + 1;
          // The other tapes, split around the new tape's start (states stay sorted by s).
          int w = 0, pos = -1;
          std::uint64_t rest = 0;
          for (int k = 0; k < r; ++k) {
            if (k == k1 || k == k2) continue;
            if (pos < 0 && sigs[k].s > ns) pos = w++;
            out[w++] = sigs[k];
            rest += hashes[k];
          }
          if (pos < 0) pos = w++;
          const int nr = w;
          const int s1 = a ? a->s : PHI, s2 = c ? c->s : PHI;
          if constexpr (NG) {
            const int jumps = (a ? j - a->t : 0) + (c ? t + 1 - c->s : 0);
            for (const Opt& o : g.opts) {
              const Joined& jn = joined(a, o, c);
              out[pos] = {a ? a->s : o.s, jn.first, c ? c->t : o.t, jn.last};
              const double delta = o.score + jn.score - eta * jumps;
              yield(t, out, nr, rest + sig_hash(out[pos]), delta, o, s1, s2);
            }
          } else {
            // Figure 4: score = ŵ(p) [+ λ(e_1 | w_t(ψ1)) − η|t(ψ1) + 1 − s(p)|]
            //                        [+ λ(w_s(ψ2) | e_m) − η|t(p) + 1 − s(ψ2)|]
            const double pen1 = a ? eta * (j - a->t) : 0.0;  // t(ψ1) <= j, s(p) = j + 1
            const double pen2 = c ? eta * (t + 1 - c->s) : 0.0;
            for (const Opt& o : g.opts) {
              double score = o.score;
              Sig nw;
              nw.s = ns;
              if (a) {
                score += lam(a->b, o.first) - pen1;
                nw.a = a->a;
              } else {
                nw.a = o.first;
              }
              if (c) {
                score += lam(o.last, c->a) - pen2;
                nw.t = c->t;
                nw.b = c->b;
              } else {
                nw.t = t;
                nw.b = o.last;
              }
              out[pos] = nw;
              yield(t, out, nr, rest + sig_hash(nw), score, o, s1, s2);
            }
          }
        }
    }
  }

  const Problem& p;
  const int n, end, d, order, k;
  const double eta;
  const bool minimize, ngram;
  Contexts contexts;
  std::vector<std::vector<Group>> groups;  // groups[p]: grouped[p] of SearchProblem
  std::vector<const Option*> options_by_id;
  Sig start{}, goal{};
  WordId vocab_ = 0;

 private:
  // signature.tape_roles: the candidates for ψ1 and ψ2 (into cands1_/cands2_), false for None.
  bool tape_roles(const Sig* sigs, int r, int j, int t) {
    const int lo_t = t - d, lo_s = t - d + 2;
    int must1 = PHI, must2 = PHI;
    for (int k = 0; k < r; ++k) {
      if (sigs[k].t < lo_t) {
        if (must1 != PHI) return false;  // two expiring tapes, one phrase can extend only one
        must1 = k;
      }
      if (sigs[k].s != 0 && sigs[k].s < lo_s) {
        if (must2 != PHI || must1 == k) return false;
        must2 = k;
      }
    }
    cands1_.clear();
    cands2_.clear();
    if (must1 != PHI) {
      cands1_.push_back(must1);
    } else {
      if (j + 1 >= lo_s) cands1_.push_back(PHI);  // φ: p starts a tape at j + 1, a valid start
      for (int k = 0; k < r; ++k) cands1_.push_back(k);
    }
    if (must2 != PHI) {
      if (t + 1 - sigs[must2].s > d) return false;
      cands2_.push_back(must2);
      return true;
    }
    cands2_.push_back(PHI);
    for (int k = 0; k < r; ++k)
      if (sigs[k].s != 0 && t + 1 - sigs[k].s <= d) cands2_.push_back(k);
    return true;
  }

  // ngram.join (and minimise): the tape ψ1 · p · ψ2 and its events, scored in their order.
  Joined join(const Sig* a, const Option& opt, const Sig* c) {
    const int kk = k;
    const Contexts& cx = contexts;
    double total = 0.0;
    if (opt.s == end) {  // </s> closes the <s> tape: score it, nothing follows
      const WordId* last = cx.words(a->b);
      const int m = cx.len(a->b);
      total += p.ngram(last + std::max(0, m - kk), std::min(m, kk), p.eos());
      const WordId eos = p.eos();
      return {0, contexts.intern(&eos, 1), total};
    }
    const bool bos_tape = a != nullptr && a->s == 0;
    seq_.clear();
    if (a) seq_.insert(seq_.end(), cx.words(a->b), cx.words(a->b) + cx.len(a->b));
    const int a_first = a ? cx.len(a->a) : 0;
    // Index in the new tape of p's first word; K stands for "K or more".
    const int index = a == nullptr ? 0 : (bos_tape || a_first >= kk ? kk : a_first);
    const int len_e = static_cast<int>(opt.words.size());
    const int len_cf = c ? cx.len(c->a) : 0;
    const WordId* cf = c ? cx.words(c->a) : nullptr;
    for (int i = 0; i < len_e + len_cf; ++i) {
      const WordId w = i < len_e ? opt.words[static_cast<std::size_t>(i)] : cf[i - len_e];
      const bool in_phrase_scored = i < len_e && i >= kk;  // in ŵ(p): its context lies inside p
      if (!in_phrase_scored && (bos_tape || index + i >= kk)) {
        const int m = std::min<int>(kk, static_cast<int>(seq_.size()));
        total += p.ngram(seq_.data() + seq_.size() - m, m, w);
      }
      seq_.push_back(w);
    }
    // first = () for the <s> tape, else (F(a) + e + F(c))[:K].
    buf_.clear();
    if (!bos_tape) {
      if (a) buf_.insert(buf_.end(), cx.words(a->a), cx.words(a->a) + a_first);
      buf_.insert(buf_.end(), opt.words.begin(), opt.words.end());
      if (c) buf_.insert(buf_.end(), cf, cf + len_cf);
      if (static_cast<int>(buf_.size()) > kk) buf_.resize(static_cast<std::size_t>(kk));
    }
    const int first_len = static_cast<int>(buf_.size());
    const int first = contexts.intern(buf_.data(), first_len);
    int last;
    if (c != nullptr && len_cf >= kk) {
      last = c->b;  // ψ2's own, already minimised, last words
    } else {
      buf_.clear();
      if (a) buf_.insert(buf_.end(), contexts.words(a->b), contexts.words(a->b) + contexts.len(a->b));
      buf_.insert(buf_.end(), opt.words.begin(), opt.words.end());
      if (c) buf_.insert(buf_.end(), contexts.words(c->a), contexts.words(c->a) + len_cf);
      int m = std::min<int>(kk, static_cast<int>(buf_.size()));
      const WordId* tail = buf_.data() + buf_.size() - m;
      if (minimize && (bos_tape || first_len >= kk)) {
        // KenLM's right-state minimisation: while the context starts no longer n-gram, every
        // next word backs off through it; charge its backoff and drop its first word.
        while (m > 0 && !p.extends(tail, m)) {
          total += p.backoff(tail, m);
          ++tail;
          --m;
        }
      }
      last = contexts.intern(tail, m);
    }
    return {first, last, total};
  }

  std::vector<std::int32_t> row_, col_;
  int rows_ = 0, cols_ = 0;
  std::vector<double> lam_;  // rows_ x cols_, NaN until computed; empty when too large
  Index join_index_;
  std::vector<std::int32_t> join_keys_;  // 5 per join
  std::vector<Joined> join_values_;
  std::vector<int> cands1_, cands2_;
  std::vector<Sig> scratch_;
  std::vector<WordId> seq_, buf_;
};

// ---------------------------------------------------------------------------------------------
// Heuristic (signature_beam.Heuristic): β(T) for one problem, values per word cached.

class Heuristic {
 public:
  Heuristic(Space& space, BeamHeuristic kind) : sp_(space), kind_(kind) {
    const Problem& p = space.p;
    preceders.push_back(p.bos());
    for (const auto& opts : p.by_start())
      for (const Option& o : opts) preceders.push_back(o.last());
    std::sort(preceders.begin(), preceders.end());
    preceders.erase(std::unique(preceders.begin(), preceders.end()), preceders.end());
    best_into_.assign(static_cast<std::size_t>(space.vocab_), 0.0);
    known_.assign(static_cast<std::size_t>(space.vocab_), 0);
  }

  // Unigram (paper) or the best score of w after any word that can precede it (bound).
  double start_word(WordId w) {
    if (known_[static_cast<std::size_t>(w)]) return best_into_[static_cast<std::size_t>(w)];
    double got;
    if (kind_ == BeamHeuristic::Unigram || kind_ == BeamHeuristic::UnigramDistortion) {
      got = sp_.p.ngram(nullptr, 0, w);
    } else {
      got = best_after(w);
    }
    known_[static_cast<std::size_t>(w)] = 1;
    best_into_[static_cast<std::size_t>(w)] = got;
    return got;
  }

  // max(problem.ngram((a,), w) for a in preceders): Python's max keeps the first maximum.
  double best_after(WordId w) const {
    double best = 0.0;
    bool any = false;
    for (WordId a : preceders) {
      const double v = sp_.p.ngram(&a, 1, w);
      if (!any || v > best) best = v;
      any = true;
    }
    return best;
  }

  double operator()(int j, const Sig* sigs, int r) {
    if (kind_ == BeamHeuristic::None) return 0.0;
    const double eta = sp_.eta;
    double beta = 0.0;
    for (int i = 0; i < r; ++i) {
      const Sig& sig = sigs[i];
      if (sig.s != 0) {  // the words of a tape whose LM scores still wait for a left context
        if (sp_.ngram) {
          const WordId* words = sp_.contexts.words(sig.a);
          const int len = sp_.contexts.len(sig.a);
          if (len > 0) {
            beta += start_word(words[0]);
            // Later deferred words: scored with the context inside the tape.
            for (int k = 1; k < len; ++k) beta += sp_.p.ngram(words + std::max(0, k - sp_.order + 1), k - std::max(0, k - sp_.order + 1), words[k]);
          }
        } else {
          beta += start_word(sig.a);
        }
      }
      if (kind_ != BeamHeuristic::Unigram) {
        if (sig.t < j) beta -= eta * (j - sig.t);
        if (sig.s != 0) beta -= eta * (j + 2 - sig.s);
      }
    }
    return beta;
  }

  std::vector<WordId> preceders;  // sorted({<s>} ∪ {o.last}), </s> included

 private:
  Space& sp_;
  BeamHeuristic kind_;
  std::vector<double> best_into_;
  std::vector<char> known_;
};

// ---------------------------------------------------------------------------------------------
// Chart (signature_dp.run, backtrack, result).

struct Hyp {
  double score;
  std::int32_t prev_j, prev_i, rank;  // the back-pointer's state (prev_j < 0: the start)
  std::int32_t opt, s1, s2;           // the transition (option id, ψ1 and ψ2 starts)
};

struct Layer {
  std::vector<Sig> sigs;                    // the states' signatures, one after another
  std::vector<std::uint32_t> offset{0};     // state i: sigs[offset[i] .. offset[i + 1])
  Index index;
  std::vector<Hyp> best;                    // nbest == 1: the state's hypothesis
  std::vector<std::vector<Hyp>> lists;      // nbest > 1: its k best, best first
  std::vector<int> order;                   // the beam's states, in its order
  bool beamed = false;

  int size() const { return static_cast<int>(offset.size()) - 1; }
  const Sig* sigs_of(int i) const { return sigs.data() + offset[static_cast<std::size_t>(i)]; }
  int r_of(int i) const { return static_cast<int>(offset[static_cast<std::size_t>(i) + 1] - offset[static_cast<std::size_t>(i)]); }
  int find(std::uint64_t h, const Sig* key, int r) const {
    return index.find(h, [&](int i) { return r_of(i) == r && std::equal(key, key + r, sigs_of(i)); });
  }
  void release_keys() {
    std::vector<Sig>().swap(sigs);
    std::vector<std::uint32_t>().swap(offset);
    index.release();
    std::vector<int>().swap(order);
  }
};

struct NoBeam {
  static constexpr bool active = false;
  void operator()(int, Layer&) {}
};
struct NoAdmit {
  static constexpr bool active = false;
  bool operator()(int, const Sig*, int, double) { return true; }
};

class Chart {
 public:
  Chart(Space& space, int nbest, long max_states) : sp_(space), nbest_(std::max(1, nbest)), max_states_(max_states) {}

  long states = 0, transitions = 0;

  // signature_dp.run: fill the layers in order of j. beam(j, layer) selects the states of layer j
  // to expand (layer.order) once it is complete; admit(t, sigs, r, score) must hold for a
  // transition's result to enter the chart. Throws Budget once more than max_states states exist.
  template <bool NG, class Beam, class Admit>
  void run(Beam&& beam, Admit&& admit) {
    const int end = sp_.end;
    layers_.assign(static_cast<std::size_t>(end) + 1, Layer{});
    {
      Layer& first = layers_[0];
      add_state(first, sig_hash(sp_.start), &sp_.start, 1);
      if (nbest_ == 1) first.best[0] = {0.0, -1, -1, -1, -1, PHI, PHI};
      else first.lists[0].push_back({0.0, -1, -1, -1, -1, PHI, PHI});
    }
    long created = 1, kept = 0;
    transitions = 0;
    std::vector<std::uint64_t> hashes;
    for (int j = 0; j < end; ++j) {
      Layer& layer = layers_[static_cast<std::size_t>(j)];
      if constexpr (std::decay_t<Beam>::active) {
        beam(j, layer);
        kept += static_cast<long>(layer.order.size());
      }
      const int count = layer.beamed ? static_cast<int>(layer.order.size()) : layer.size();
      for (int x = 0; x < count; ++x) {
        const int i = layer.beamed ? layer.order[static_cast<std::size_t>(x)] : x;
        const Sig* sigs = layer.sigs_of(i);
        const int r = layer.r_of(i);
        hashes.resize(static_cast<std::size_t>(r));
        for (int k = 0; k < r; ++k) hashes[static_cast<std::size_t>(k)] = sig_hash(sigs[k]);
        const std::vector<Hyp>* list = nbest_ == 1 ? nullptr : &layer.lists[static_cast<std::size_t>(i)];
        const double head = nbest_ == 1 ? layer.best[static_cast<std::size_t>(i)].score : list->front().score;
        sp_.expand<NG>(j, sigs, r, hashes.data(),
                       [&](int t, const Sig* key, int nr, std::uint64_t h, double delta, const Opt& o, int s1, int s2) {
                         ++transitions;
                         if constexpr (std::decay_t<Admit>::active) {
                           if (!admit(t, key, nr, head + delta)) return;
                         }
                         Layer& target = layers_[static_cast<std::size_t>(t)];
                         int e = target.find(h, key, nr);
                         if (e < 0) {
                           ++created;
                           if (max_states_ >= 0 && created > max_states_) throw Budget{};
                           e = add_state(target, h, key, nr);
                         }
                         if (nbest_ == 1) {
                           Hyp& best = target.best[static_cast<std::size_t>(e)];
                           const double score = head + delta;
                           if (best.prev_j < 0 || score > best.score) best = {score, j, i, 0, o.id, s1, s2};
                         } else {
                           std::vector<Hyp>& entry = target.lists[static_cast<std::size_t>(e)];
                           for (std::size_t rank = 0; rank < list->size(); ++rank)
                             insert_best(entry, {(*list)[rank].score + delta, j, i, static_cast<std::int32_t>(rank), o.id, s1, s2});
                         }
                       });
      }
      layer.release_keys();  // reached only through back-pointers from now on
    }
    states = std::decay_t<Beam>::active ? kept + layers_[static_cast<std::size_t>(end)].size() : created;
  }

  // signature_dp.result: the goal state's hypotheses as derivations (option indices in target
  // order); status "none" with `empty` when the goal was never reached.
  Result result(bool optimal, const std::string& empty) const {
    Result out;
    out.optimal = optimal;
    out.states = states;
    out.transitions = transitions;
    const Layer& last = layers_[static_cast<std::size_t>(sp_.end)];
    const int g = last.find(sig_hash(sp_.goal), &sp_.goal, 1);
    const int count = g < 0 ? 0 : (nbest_ == 1 ? 1 : static_cast<int>(last.lists[static_cast<std::size_t>(g)].size()));
    if (count == 0) {
      out.status = "none";
      out.message = empty;
      return out;
    }
    for (int rank = 0; rank < count; ++rank) {
      Hypothesis h;
      h.score = hyp(sp_.end, g, rank).score;
      if (!phrases_of(backtrack(sp_.end, g, rank), h.options, out.message)) {
        out.status = "none";
        out.hypotheses.clear();
        return out;
      }
      out.hypotheses.push_back(std::move(h));
    }
    return out;
  }

  const Layer& layer(int j) const { return layers_[static_cast<std::size_t>(j)]; }
  int nbest() const { return nbest_; }

 private:
  const Hyp& hyp(int j, int i, int rank) const {
    const Layer& l = layers_[static_cast<std::size_t>(j)];
    return nbest_ == 1 ? l.best[static_cast<std::size_t>(i)] : l.lists[static_cast<std::size_t>(i)][static_cast<std::size_t>(rank)];
  }

  int add_state(Layer& layer, std::uint64_t h, const Sig* key, int r) {
    const int id = layer.size();
    layer.sigs.insert(layer.sigs.end(), key, key + r);
    layer.offset.push_back(static_cast<std::uint32_t>(layer.sigs.size()));
    layer.index.insert(h, id);
    if (nbest_ == 1) layer.best.push_back({0.0, -1, -1, -1, -1, PHI, PHI});
    else layer.lists.emplace_back();
    return id;
  }

  // kbest.insert_best: best first; among equal scores the earlier insertion ranks first.
  void insert_best(std::vector<Hyp>& entries, const Hyp& item) const {
    const std::size_t k = static_cast<std::size_t>(nbest_);
    if (entries.size() >= k && item.score <= entries.back().score) return;
    std::size_t i = entries.size();
    while (i > 0 && entries[i - 1].score < item.score) --i;
    entries.insert(entries.begin() + static_cast<std::ptrdiff_t>(i), item);
    if (entries.size() > k) entries.resize(k);
  }

  struct Step {
    std::int32_t opt, s1, s2;
  };

  // signature_dp.backtrack: the transitions from the start state to hypothesis `rank` of (j, i).
  std::vector<Step> backtrack(int j, int i, int rank) const {
    std::vector<Step> steps;
    while (true) {
      const Hyp& h = hyp(j, i, rank);
      if (h.prev_j < 0) break;
      steps.push_back({h.opt, h.s1, h.s2});
      j = h.prev_j;
      i = h.prev_i;
      rank = h.rank;
    }
    std::reverse(steps.begin(), steps.end());
    return steps;
  }

  // signature.replay + phrases_of: the options of the one tape a complete path leaves, in target
  // order (their Python indices; <s> and </s> left out).
  bool phrases_of(const std::vector<Step>& steps, std::vector<int>& out, std::string& message) const {
    const std::size_t size = static_cast<std::size_t>(sp_.end) + 1;
    std::vector<std::vector<int>> tapes(size);  // by start position; option ids (-1: <s>)
    std::vector<char> open(size, 0);
    tapes[0] = {-1};
    open[0] = 1;
    for (const Step& st : steps) {
      const Option& o = *sp_.options_by_id[static_cast<std::size_t>(st.opt)];
      const auto at = [](int s) { return static_cast<std::size_t>(s); };
      if (st.s1 == PHI && st.s2 == PHI) {
        tapes[at(o.s)] = {st.opt};
        open[at(o.s)] = 1;
      } else if (st.s2 == PHI) {
        tapes[at(st.s1)].push_back(st.opt);
      } else {
        std::vector<int> tail = std::move(tapes[at(st.s2)]);
        tapes[at(st.s2)].clear();
        open[at(st.s2)] = 0;
        const std::size_t into = st.s1 == PHI ? at(o.s) : at(st.s1);
        if (st.s1 == PHI) {
          tapes[into] = {st.opt};
          open[into] = 1;
        } else {
          tapes[into].push_back(st.opt);
        }
        tapes[into].insert(tapes[into].end(), tail.begin(), tail.end());
      }
    }
    int count = 0;
    std::size_t only = 0;
    for (std::size_t s = 0; s < size; ++s)
      if (open[s]) {
        ++count;
        only = s;
      }
    if (steps.empty()) count = 0;  // replay yields nothing: phrases_of sees no tapes
    if (count != 1) {
      message = "path ends with " + std::to_string(count) + " tapes; a complete path has one";
      return false;
    }
    out.clear();
    for (int id : tapes[only]) {
      if (id < 0) continue;
      const int index = sp_.options_by_id[static_cast<std::size_t>(id)]->index;
      if (index >= 0) out.push_back(index);
    }
    return true;
  }

  Space& sp_;
  const int nbest_;
  const long max_states_;
  std::vector<Layer> layers_;
};

// ---------------------------------------------------------------------------------------------
// The searches.

std::string budget_message(long max_states) {
  return "more than " + std::to_string(max_states) + " states (--max-states)";
}

Result budget_result(long max_states) {
  Result out;
  out.status = "budget";
  out.message = budget_message(max_states);
  return out;
}

template <class Beam, class Admit>
void run_chart(Space& space, Chart& chart, Beam&& beam, Admit&& admit) {
  if (space.ngram) chart.run<true>(beam, admit);
  else chart.run<false>(beam, admit);
}

Result dp(Space& space, const SignatureDpOptions& o) {
  Chart chart(space, o.nbest, o.max_states);
  try {
    run_chart(space, chart, NoBeam{}, NoAdmit{});
  } catch (const Budget&) {
    return budget_result(o.max_states);
  }
  return chart.result(true, "no derivation satisfies the distortion limit d=" + std::to_string(space.p.d()));
}

// make_beam: beam(T_j), the best `size` states by α + β within `threshold` of the best, after
// dropping the states that cannot finish (r tapes need r − 1 more phrases, at most one per
// untranslated word).
struct Beam {
  static constexpr bool active = true;
  Heuristic& h;
  long long size;
  double threshold;  // < 0: off
  int n;
  std::vector<std::pair<double, int>> scored;

  void operator()(int j, Layer& layer) {
    layer.beamed = true;
    layer.order.clear();
    const int count = layer.size();
    if (count == 0) return;
    scored.clear();
    for (int i = 0; i < count; ++i) {
      const int r = layer.r_of(i);
      if (r - 1 > n - j) continue;
      const double alpha = layer.best.empty() ? layer.lists[static_cast<std::size_t>(i)].front().score
                                              : layer.best[static_cast<std::size_t>(i)].score;
      scored.push_back({alpha + h(j, layer.sigs_of(i), r), i});
    }
    if (threshold >= 0) {
      if (scored.empty()) {
        // Every state is dead: signature_beam.make_beam then takes max() of no scores, a
        // ValueError in Python, which the seam raises alike.
        throw EmptyMax{};
      }
      double top = scored[0].first;
      for (const auto& x : scored)
        if (x.first > top) top = x.first;
      const double floor = top - threshold;
      std::size_t w = 0;
      for (const auto& x : scored)
        if (x.first >= floor) scored[w++] = x;
      scored.resize(w);
    }
    if (static_cast<long long>(scored.size()) > size) {
      // heapq.nlargest: best first, ties in the layer's order.
      const auto better = [](const std::pair<double, int>& x, const std::pair<double, int>& y) {
        return x.first > y.first || (x.first == y.first && x.second < y.second);
      };
      std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(size), scored.end(), better);
      scored.resize(static_cast<std::size_t>(size));
    }
    layer.order.reserve(scored.size());
    for (const auto& x : scored) layer.order.push_back(x.second);
  }
};

Result beam_search(Space& space, const SignatureBeamOptions& o) {
  Heuristic h(space, o.heuristic);
  long states = 0, transitions = 0;
  long long size = o.beam_size;
  while (true) {
    Chart chart(space, o.nbest, o.max_states);
    Beam beam{h, size, o.beam_threshold, space.n, {}};
    try {
      run_chart(space, chart, beam, NoAdmit{});
    } catch (const Budget&) {
      return budget_result(o.max_states);
    } catch (const EmptyMax&) {
      Result out;
      out.status = "empty max";
      out.message = "max() arg is an empty sequence";
      return out;
    }
    states += chart.states;
    transitions += chart.transitions;
    Result found = chart.result(false, "no complete derivation in the beam");
    if (found.status.empty()) {
      found.states = states;
      found.transitions = transitions;
      return found;
    }
    if (size >= MAX_BEAM) {
      Result out;
      out.status = "none";
      out.message = "the beam kept no complete derivation even at --beam-size " + std::to_string(size) +
                    "; raise --beam-threshold or use --method dp";
      out.states = states;
      out.transitions = transitions;
      return out;
    }
    size *= WIDEN;
  }
}

// bounded.future_bounds: future[j], an upper bound on the score of translating positions j+1..n.
std::vector<double> future_bounds(Space& space, Heuristic& h) {
  const int n = space.n;
  const std::size_t width = static_cast<std::size_t>(n) + 2;
  std::vector<double> best(width * width, NEG_INF);  // best_span[(s, t)]
  std::vector<char> present(width * width, 0);
  for (int s = 1; s <= n; ++s)
    for (const Option& o : space.p.by_start()[static_cast<std::size_t>(s)]) {
      const double v = o.score + h.start_word(o.first());
      const std::size_t at = static_cast<std::size_t>(s) * width + static_cast<std::size_t>(o.t);
      if (v > best[at]) {
        best[at] = v;
        present[at] = 1;
      }
    }
  std::vector<double> future(static_cast<std::size_t>(n) + 1, NEG_INF);
  future[static_cast<std::size_t>(n)] = 0.0;
  for (int j = n - 1; j >= 0; --j) {
    double got = NEG_INF;
    bool any = false;
    for (int t = j + 1; t <= n; ++t) {
      const std::size_t at = static_cast<std::size_t>(j + 1) * width + static_cast<std::size_t>(t);
      if (!present[at] || !(future[static_cast<std::size_t>(t)] > NEG_INF)) continue;
      const double v = best[at] + future[static_cast<std::size_t>(t)];
      if (!any || v > got) got = v;
      any = true;
    }
    future[static_cast<std::size_t>(j)] = got;
  }
  return future;
}

struct Admit {
  static constexpr bool active = true;
  Heuristic& h;
  const std::vector<double>& future;
  double lb, close;
  int end;
  bool operator()(int t, const Sig* sigs, int r, double score) {
    if (t == end) return score >= lb;  // complete: its score is exact
    return score + h(t, sigs, r) + future[static_cast<std::size_t>(t)] + close >= lb;
  }
};

Result bounded(Space& space, const SignatureDpOptions& o) {
  const Problem& p = space.p;
  if (p.order() != 2 || p.eta() < 0 || o.nbest != 1) return dp(space, o);
  Heuristic h(space, BeamHeuristic::Bound);
  SignatureBeamOptions lower_options;  // BeamOptions(max_states=max_states): the default beam
  lower_options.max_states = o.max_states;
  const Result lower = beam_search(space, lower_options);
  if (!lower.status.empty()) return lower;
  const double lb = lower.hypotheses[0].score - 1e-9;
  const std::vector<double> future = future_bounds(space, h);
  double close = 0.0;
  bool any = false;
  for (WordId a : h.preceders) {
    const double v = p.ngram(&a, 1, p.eos());
    if (!any || v > close) close = v;
    any = true;
  }
  Chart chart(space, 1, o.max_states);
  try {
    run_chart(space, chart, NoBeam{}, Admit{h, future, lb, close, space.end});
  } catch (const Budget&) {
    Result out = lower;  // SearchLimitError(best=lower): the beam's derivation, not optimal
    out.status = "budget";
    out.message = budget_message(o.max_states);
    out.optimal = false;
    return out;
  }
  Result found = chart.result(true, "bound search lost the lower bound (a bug)");
  if (!found.status.empty()) return found;
  found.states += lower.states;
  found.transitions += lower.transitions;
  return found;
}

void check(const Problem& problem, const char* what) {
  if (!problem.finished()) throw std::logic_error(std::string(what) + ": call Problem.finish() first");
}

}  // namespace

const char* heuristic_name(BeamHeuristic heuristic) {
  switch (heuristic) {
    case BeamHeuristic::Bound: return "bound";
    case BeamHeuristic::UnigramDistortion: return "unigram+distortion";
    case BeamHeuristic::Unigram: return "unigram";
    case BeamHeuristic::None: return "none";
  }
  return "?";
}

BeamHeuristic heuristic_of(const std::string& name) {
  for (BeamHeuristic h : {BeamHeuristic::Bound, BeamHeuristic::UnigramDistortion, BeamHeuristic::Unigram, BeamHeuristic::None})
    if (name == heuristic_name(h)) return h;
  throw std::invalid_argument("unknown beam heuristic '" + name + "'; choose from bound, unigram+distortion, unigram, none");
}

Result signature_dp(const Problem& problem, const SignatureDpOptions& options) {
  check(problem, "signature_dp");
  Space space(problem, options.minimize);
  return dp(space, options);
}

Result signature_beam(const Problem& problem, const SignatureBeamOptions& options) {
  check(problem, "signature_beam");
  Space space(problem, options.minimize);
  return beam_search(space, options);
}

Result signature_bounded(const Problem& problem, const SignatureDpOptions& options) {
  check(problem, "signature_bounded");
  Space space(problem, options.minimize);
  return bounded(space, options);
}

}  // namespace fstdecode
