// The signature state space of Chang & Collins (Sections 4.2-4.4) for LMs of any order: a port of
// fstdecode/statespace/{signature,ngram}.py (state_space: start, goal, expand, tape_roles, join,
// joined, minimise), with the layers of gaprule.py (Moses' gap rule) and reordering.py
// (lexicalized reordering: expand, charge, pending_bound, phrase_bound). The searches that walk it (signature.cpp) and the reordering automaton R
// (reorder.cpp) share it; the stack decoder and the coverage DP (stack.cpp, coverage.cpp), which
// keep only the <s> tape, use its interned contexts and joins (Contexts, BosJoins).
//
// Layout: a signature is four ints (s, a, t, b): for order 2, (s, w_s, t, w_t) as in Figure 4;
// for higher orders (s, F, t, L) with F and L ids of word tuples interned per problem (Contexts).
// A state of layer j is its signatures sorted by s (starts are distinct: tapes are disjoint).
// With a lexicalized reordering model each signature also has its tape's LR ends (Ends,
// fstdecode/statespace/reordering.py's head and tail), kept beside the signatures: a state is
// then its signatures and their ends, and each transition's score includes its reordering charge.
// Every floating-point sum is formed in the Python order, so scores agree bit for bit with the
// Python engine given the same LM values, and successors come in Python's order.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "hash.h"
#include "huge_pages.h"
#include "problem.h"

namespace fstdecode {
namespace space {

constexpr int PHI = -1;  // ψ index (and start position) meaning φ: no tape

// ---------------------------------------------------------------------------------------------
// Signatures and states.

struct Sig {
  std::int32_t a, b;  // order 2: (w_s, w_t); else (F, L), Contexts ids
  std::int16_t s, t;  // the tape's start and end (search positions, below MAX_WORDS)
  // Moses' gap rule (gaprule.py): the largest m(p) = min(s(p), t(p) + 1 - d) over the tape's
  // phrases (M) and its leftmost start (lo), canonical (gaprule.canonical). Under the paper's
  // semantics both stay 0.
  std::int16_t M, lo;
};
static_assert(sizeof(Sig) == 16, "a signature is 16 bytes (a record unit of signature.cpp)");

// The signature (s, a, t, b) with no gap entries.
inline Sig make_sig(int s, std::int32_t a, int t, std::int32_t b) {
  return {a, b, static_cast<std::int16_t>(s), static_cast<std::int16_t>(t), 0, 0};
}

// The longest sentence the signature state space takes: positions (end = n + 1) are 16 bits.
constexpr int MAX_WORDS = 32000;

// gaprule.canonical for one M, given the sorted distinct lo of the state's open tapes: 0 if it
// exceeds none of them, the least it does not exceed, or the largest plus one if it exceeds all.
inline int gap_canonical(int M, const int* los, int n) {
  if (n == 0 || M <= los[0]) return 0;
  if (M > los[n - 1]) return los[n - 1] + 1;
  return *std::lower_bound(los, los + n, M);
}

// The least total jump still charged to the open tapes sigs[0..r) of a state at j (n words):
// a tape ending at t < j is left by a jump of at least j - t (what follows its end is a phrase
// placed after j, or </s>), one starting at s > 0 is entered by a jump of at least j + 2 - s.
// Without charge_final (Moses' semantics, no [early-distortion-cost]) the jump into </s> is free:
// at j = n it leaves the <s> tape; before n it leaves whichever tape ends last, which may be any
// tape but <s>'s (a phrase placed after j follows <s>'s end), so the largest such leaving charge
// is not counted (statespace/signature.py's least_jumps).
inline long least_jumps(const Sig* sigs, int r, int j, int n, bool charge_final) {
  long total = 0, free_leave = 0;
  for (int i = 0; i < r; ++i) {
    const Sig& g = sigs[i];
    if (g.s != 0) total += j + 2 - g.s;
    if (g.t >= j) continue;
    const long leave = j - g.t;
    if (charge_final) total += leave;
    else if (g.s == 0) total += j == n ? 0 : leave;
    else {
      total += leave;
      free_leave = std::max(free_leave, leave);
    }
  }
  return total - free_leave;
}

// Two 8-byte compares (a Sig has no padding: 4 + 4 + 4 x 2 bytes).
inline bool operator==(const Sig& x, const Sig& y) {
  std::uint64_t u[2], v[2];
  std::memcpy(u, &x, sizeof u);
  std::memcpy(v, &y, sizeof v);
  return u[0] == v[0] && u[1] == v[1];
}

// Lexicalized reordering (reordering.py): a tape's head, its first phrase's pending backward
// charge (t_first, the phrase's backward row id: Problem::lr_back_row), and its tail, its last
// phrase (s_last, the phrase's next row id: Problem::lr_row). t_first and s_last are kept only
// for the orientation classes that read them (msd and mslr: Problem::reordering_reads_start),
// else 0, so that equivalent states merge. Python's None (the head of the <s> tape; the tail of
// <s> alone and of a tape ended by </s>) is all 0: which tapes have none is fixed by the
// signature (s == 0; t == 0 or t == end), so the encoding keeps states apart exactly as Python's.
struct Ends {
  std::int32_t back, next;       // head's row, tail's row
  std::int16_t t_first, s_last;  // head's end, tail's start
  std::int32_t unused;           // 0 (an Ends is a 16-byte record unit, as a Sig)
};
static_assert(sizeof(Ends) == 16, "a tape's LR ends are 16 bytes");

inline bool operator==(const Ends& x, const Ends& y) {
  return x.back == y.back && x.next == y.next && x.t_first == y.t_first && x.s_last == y.s_last;
}

// A state's hash is the sum of its signatures' (see Space::expand), so each must spread well:
// two multiplications by odd constants and a fold of the high half into the low (the index
// takes its home slot from the low bits and its tag from the high ones). A signature is read as
// two 8-byte words: (a, b) and its four positions (s, t, M, lo).
inline std::uint64_t sig_hash(const Sig& g) {
  std::uint64_t ids, pos;
  std::memcpy(&ids, &g, sizeof ids);
  std::memcpy(&pos, reinterpret_cast<const char*>(&g) + sizeof ids, sizeof pos);
  std::uint64_t h = (pos ^ (ids * 0x9e3779b97f4a7c15ULL)) * 0xc2b2ae3d27d4eb4fULL;
  h ^= h >> 29;
  return h * 0x165667b19e3779f9ULL;
}

// The hash of a tape's LR ends, added to its signature's (no ends, all 0: adds 0).
inline std::uint64_t ends_hash(const Ends& e) {
  const std::uint64_t rows = pair64(e.back, e.next);
  const std::uint64_t pos = (static_cast<std::uint64_t>(static_cast<std::uint16_t>(e.t_first)) << 16) |
                            static_cast<std::uint16_t>(e.s_last);
  if (rows == 0 && pos == 0) return 0;
  std::uint64_t h = (rows * 0xbf58476d1ce4e5b9ULL ^ pos) * 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h * 0x9e3779b97f4a7c15ULL;
}

// A tape's hash: its signature's, plus its LR ends' when the state space has them (ends != null).
inline std::uint64_t tape_hash(const Sig& g, const Ends* ends) {
  return ends ? sig_hash(g) + ends_hash(*ends) : sig_hash(g);
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
    Slots().swap(slots_);
    size_ = 0;
  }
  // Starts loading the slot find(h) probes first: a hint for a find to come. Changes no result.
  void prefetch(std::uint64_t h) const {
#if defined(__GNUC__)
    __builtin_prefetch(&slots_[h & (slots_.size() - 1)]);
#else
    (void)h;
#endif
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
    Slots old;
    old.swap(slots_);
    slots_.assign(std::max<std::size_t>(16, old.size() * 2), Slot{});
    for (const Slot& slot : old)
      if (slot.id >= 0) place(slot.hash, slot.id);
  }
  // In huge pages: an A*'s millions of slots are probed at random (huge_pages.h).
  using Slots = std::vector<Slot, HugePageAllocator<Slot>>;
  Slots slots_;
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
  int id;                 // the group's number (Space::groups, in order)
  std::vector<Opt> opts;  // by_start order
};

struct Joined {
  std::int32_t first, last;  // F and L of the new tape (Contexts ids)
  double score;              // the weighted LM score of the join's events (event_score)
};

// The successors of one state by the options of one group (all ending at t) for one choice of
// (ψ1, ψ2): they differ only in the new tape. Successor q (first <= q < first + count) of the
// Successors is the nr signatures from Successors::keys[key] with sig[q] at `pos`, reached by
// opts[q - first] with the score delta[q]; hash[q] is its state's hash.
struct Batch {
  int t, nr, pos, s1, s2, count;
  std::size_t key, first;
  const Opt* opts;
};

// Every successor of one state, in the order Python yields them (batch by batch). With
// lexicalized reordering, key_ends and ends hold the LR ends of keys and sig, entry for entry
// (else they stay empty).
struct Successors {
  std::vector<Batch> store;  // batches: store[0 .. size)
  std::size_t size = 0;
  std::vector<Sig> keys;
  std::vector<Ends> key_ends;
  std::vector<Sig> sig;
  std::vector<Ends> ends;
  std::vector<double> delta;
  std::vector<std::uint64_t> hash;
  std::size_t count = 0;

  void clear() {
    size = 0;
    keys.clear();
    key_ends.clear();
    count = 0;
  }
  void add(const Batch& b) {
    if (size == store.size()) store.resize(std::max<std::size_t>(16, 2 * size));
    store[size++] = b;
  }
  const Batch* begin() const { return store.data(); }
  const Batch* end() const { return store.data() + size; }
  bool lr = false;  // set by the state space: the successors carry LR ends

  // Room for m more successors; returns the first one's number.
  std::size_t reserve(std::size_t m) {
    if (sig.size() < count + m) {
      const std::size_t size = std::max(2 * sig.size(), count + m);
      sig.resize(size);
      delta.resize(size);
      hash.resize(size);
      if (lr) ends.resize(size);
    }
    const std::size_t first = count;
    count += m;
    return first;
  }
};

// An LM event a join settles (ngram.Event): ln p(word | context), or the backoff of context
// (word < 0), charged by state minimisation.
struct Event {
  std::vector<WordId> context;
  WordId word;
};

// ngram.join (and minimise) on one problem's interned contexts: the tape ψ1 · p · ψ2 (a = ψ1,
// c = ψ2, either may be null: φ) and its events, scored in their order (and appended to *events,
// when given). ψ1 is the <s> tape when a->s == 0; then a->a must be 0 (the empty tuple) and a->t
// is not read. Returns the new tape's F and L and the weighted LM score of the events.
class Joiner {
 public:
  Joiner(const Problem& problem, Contexts& contexts, bool minimize)
      : p_(problem), contexts_(contexts), k_(problem.order() - 1), minimize_(minimize) {}

  Joined operator()(const Sig* a, const Option& opt, const Sig* c, std::vector<Event>* events = nullptr) {
    double total = 0.0;
    if (opt.s == p_.end()) {  // </s> closes the <s> tape: score it, nothing follows
      const WordId* last = contexts_.words(a->b);
      const int m = contexts_.len(a->b);
      const WordId* context = last + std::max(0, m - k_);
      total += p_.ngram(context, std::min(m, k_), p_.eos());
      if (events) events->push_back({{context, context + std::min(m, k_)}, p_.eos()});
      const WordId eos = p_.eos();
      return {0, contexts_.intern(&eos, 1), total};
    }
    const bool bos_tape = a != nullptr && a->s == 0;
    seq_.clear();
    if (a) seq_.insert(seq_.end(), contexts_.words(a->b), contexts_.words(a->b) + contexts_.len(a->b));
    const int a_first = a ? contexts_.len(a->a) : 0;
    // Index in the new tape of p's first word; K stands for "K or more".
    const int index = a == nullptr ? 0 : (bos_tape || a_first >= k_ ? k_ : a_first);
    const int len_e = static_cast<int>(opt.words.size());
    const int len_cf = c ? contexts_.len(c->a) : 0;
    const WordId* cf = c ? contexts_.words(c->a) : nullptr;
    for (int i = 0; i < len_e + len_cf; ++i) {
      const WordId w = i < len_e ? opt.words[static_cast<std::size_t>(i)] : cf[i - len_e];
      const bool in_phrase_scored = i < len_e && i >= k_;  // in ŵ(p): its context lies inside p
      if (!in_phrase_scored && (bos_tape || index + i >= k_)) {
        const int m = std::min<int>(k_, static_cast<int>(seq_.size()));
        const WordId* context = seq_.data() + seq_.size() - m;
        total += p_.ngram(context, m, w);
        if (events) events->push_back({{context, context + m}, w});
      }
      seq_.push_back(w);
    }
    // first = () for the <s> tape, else (F(a) + e + F(c))[:K].
    buf_.clear();
    if (!bos_tape) {
      if (a) buf_.insert(buf_.end(), contexts_.words(a->a), contexts_.words(a->a) + a_first);
      buf_.insert(buf_.end(), opt.words.begin(), opt.words.end());
      if (c) buf_.insert(buf_.end(), cf, cf + len_cf);
      if (static_cast<int>(buf_.size()) > k_) buf_.resize(static_cast<std::size_t>(k_));
    }
    const int first_len = static_cast<int>(buf_.size());
    const int first = contexts_.intern(buf_.data(), first_len);
    int last;
    if (c != nullptr && len_cf >= k_) {
      last = c->b;  // ψ2's own, already minimised, last words
    } else {
      buf_.clear();
      if (a) buf_.insert(buf_.end(), contexts_.words(a->b), contexts_.words(a->b) + contexts_.len(a->b));
      buf_.insert(buf_.end(), opt.words.begin(), opt.words.end());
      if (c) buf_.insert(buf_.end(), contexts_.words(c->a), contexts_.words(c->a) + len_cf);
      int m = std::min<int>(k_, static_cast<int>(buf_.size()));
      const WordId* tail = buf_.data() + buf_.size() - m;
      if (minimize_ && (bos_tape || first_len >= k_)) {
        // KenLM's right-state minimisation: while the context starts no longer n-gram, every
        // next word backs off through it; charge its backoff and drop its first word.
        if (static_cast<int>(dropped_.size()) < m) dropped_.resize(static_cast<std::size_t>(m));
        const int d = p_.trim(tail, m, dropped_.data());
        for (int i = 0; i < d; ++i) {
          total += dropped_[static_cast<std::size_t>(i)];
          if (events) events->push_back({{tail, tail + m}, -1});
          ++tail;
          --m;
        }
      }
      last = contexts_.intern(tail, m);
    }
    return {first, last, total};
  }

  // Starts loading the LM entries the join of the <s> tape ending in the words `last` (a
  // Contexts id) with opt will score (operator() with a = (0, (), _, last), c = null): the
  // same (context, word) pairs, in the same order, then the suffixes of the new tape's last
  // words that minimisation reads (Problem::trim). Changes no result.
  void prefetch_bos(int last, const Option& opt) {
    if (opt.s == p_.end()) return;  // </s>: one lookup per final key, not worth a hint
    seq_.assign(contexts_.words(last), contexts_.words(last) + contexts_.len(last));
    const int scored = std::min<int>(k_, static_cast<int>(opt.words.size()));  // i >= k_: in ŵ(p)
    for (int i = 0; i < scored; ++i) {
      const WordId w = opt.words[static_cast<std::size_t>(i)];
      const int m = std::min<int>(k_, static_cast<int>(seq_.size()));
      p_.prefetch_ngram(seq_.data() + seq_.size() - m, m, w);
      seq_.push_back(w);
    }
    if (!minimize_) return;
    // The new tape's last words, whose suffixes minimisation looks up (operator()'s tail).
    seq_.insert(seq_.end(), opt.words.begin() + scored, opt.words.end());
    const int m = std::min<int>(k_, static_cast<int>(seq_.size()));
    p_.prefetch_trim(seq_.data() + seq_.size() - m, m);
  }

 private:
  const Problem& p_;
  Contexts& contexts_;
  const int k_;
  const bool minimize_;
  std::vector<WordId> seq_, buf_;
  std::vector<double> dropped_;  // trim's charges
};

// Joiner's join of the <s> tape ending in the words `context` (a Contexts id) with opt (a = that
// tape, c = φ, minimising), scored with KenLM-style right states (language_model.h, "facts"):
// each context keeps the backoffs of its suffixes (its facts, by suffix length), so a word costs
// the lookups of its own n-grams (Problem::ngram_facts, uncached), and those lookups give the
// next context's facts and the right-state test of each of its suffixes. The new tape's
// minimisation reads them when p's last word was scored here (p no longer than K = order - 1);
// a longer p's tail is its own last K words, trimmed once per option (Problem::trim).
// Invariant: every result equals Joiner's, bit for bit: the same doubles (facts are the
// backoffs Joiner's lookups read), added in the same order (each word's weighted logprob, then
// each dropped word's weighted backoff), and the same minimised contexts.
class FactJoiner {
 public:
  FactJoiner(const Problem& problem, Contexts& contexts)
      : p_(problem), contexts_(contexts), k_(problem.order() - 1) {
    for (auto& b : back_) b.resize(static_cast<std::size_t>(k_) + 1);
    ext_.resize(static_cast<std::size_t>(k_) + 1);
  }

  Joined operator()(int context, const Option& opt) {
    const WordId* words = contexts_.words(context);
    const int m0 = contexts_.len(context);  // <= K: contexts are minimised tails
    const double* facts = facts_of(context);
    double total = 0.0;
    if (opt.s == p_.end()) {  // </s> closes the tape: score it, nothing follows
      const WordId eos = p_.eos();
      total += p_.ngram_facts(words, m0, eos, facts, nullptr);
      return {0, contexts_.intern(&eos, 1), total};
    }
    seq_.assign(words, words + m0);
    const int len = static_cast<int>(opt.words.size());
    const int scored = std::min(k_, len);  // words at K or more are in ŵ(p)
    for (int i = 0; i < scored; ++i) {
      const WordId w = opt.words[static_cast<std::size_t>(i)];
      const int m = std::min<int>(k_, static_cast<int>(seq_.size()));
      std::vector<double>& next = back_[i & 1];
      const NextFacts out{next.data(), ext_.data()};
      total += p_.ngram_facts(seq_.data() + seq_.size() - m, m, w, facts, &out);
      facts = next.data();
      seq_.push_back(w);
    }
    int last;
    if (len <= k_) {
      // The tail (the last K words) ends with p's last word, scored above: facts and ext_ hold
      // each of its suffixes' backoff and right-state test, by length.
      const int tl = std::min<int>(k_, static_cast<int>(seq_.size()));
      const WordId* tail = seq_.data() + seq_.size() - tl;
      int d = 0;
      for (; d < tl && !ext_[static_cast<std::size_t>(tl - d - 1)]; ++d) total += p_.lm_weight() * facts[tl - d - 1];
      last = contexts_.intern(tail + d, tl - d);
      keep_facts(last, facts);
    } else {
      const Tail& t = tail_of(opt);
      for (int i = 0; i < t.d; ++i) total += drops_[static_cast<std::size_t>(t.drops + i)];
      last = t.last;
    }
    return {0, last, total};
  }

  // Starts loading the n-gram slots operator()(context, opt) will read. Changes no result.
  void prefetch(int context, const Option& opt) {
    if (opt.s == p_.end()) return;  // one lookup per final key, not worth a hint
    seq_.assign(contexts_.words(context), contexts_.words(context) + contexts_.len(context));
    const int scored = std::min<int>(k_, static_cast<int>(opt.words.size()));
    for (int i = 0; i < scored; ++i) {
      const WordId w = opt.words[static_cast<std::size_t>(i)];
      const int m = std::min<int>(k_, static_cast<int>(seq_.size()));
      p_.prefetch_facts(seq_.data() + seq_.size() - m, m, w);
      seq_.push_back(w);
    }
  }

 private:
  // A phrase longer than K: its tail minimised once (the same after every context).
  struct Tail {
    int last = -1;       // the minimised tail's Contexts id (-1: not computed yet)
    int d = 0;           // the words dropped
    std::size_t drops = 0;  // their weighted backoffs: drops_[drops .. drops + d)
  };
  const Tail& tail_of(const Option& opt) {
    const auto id = static_cast<std::size_t>(opt.id);
    if (tails_.size() <= id) tails_.resize(id + 1);
    Tail& t = tails_[id];
    if (t.last >= 0) return t;
    const WordId* tail = opt.words.data() + opt.words.size() - static_cast<std::size_t>(k_);
    t.drops = drops_.size();
    drops_.resize(t.drops + static_cast<std::size_t>(k_));
    t.d = p_.trim(tail, k_, drops_.data() + t.drops);  // weighted, as Joiner charges them
    drops_.resize(t.drops + static_cast<std::size_t>(t.d));
    t.last = contexts_.intern(tail + t.d, k_ - t.d);
    return t;
  }
  // The facts of context `id` (its length's worth of them), computed on first use.
  const double* facts_of(int id) {
    const auto at = static_cast<std::size_t>(id);
    if (known_.size() <= at) grow(at);
    double* f = facts_.data() + at * static_cast<std::size_t>(k_);
    if (!known_[at]) {
      p_.facts(contexts_.words(id), contexts_.len(id), f);
      known_[at] = 1;
    }
    return f;
  }
  // Records facts (by suffix length, at least the context's length of them) as context id's.
  void keep_facts(int id, const double* facts) {
    const auto at = static_cast<std::size_t>(id);
    if (known_.size() <= at) grow(at);
    if (known_[at]) return;
    std::copy(facts, facts + contexts_.len(id), facts_.begin() + static_cast<std::ptrdiff_t>(at * static_cast<std::size_t>(k_)));
    known_[at] = 1;
  }
  void grow(std::size_t at) {
    const std::size_t size = std::max<std::size_t>(2 * known_.size(), std::max<std::size_t>(at + 1, 1024));
    known_.resize(size, 0);
    facts_.resize(size * static_cast<std::size_t>(k_), 0.0);
  }

  const Problem& p_;
  Contexts& contexts_;
  const int k_;
  std::vector<WordId> seq_;
  std::vector<double> back_[2];    // the next facts of the word scored last and of the one before
  std::vector<std::uint8_t> ext_;  // the right-state tests of the word scored last
  std::vector<double> facts_;      // K per context id
  std::vector<char> known_;        // by context id: facts_ holds its facts
  std::vector<Tail> tails_;        // by option id
  std::vector<double> drops_;
};

// joined(problem, (0, (), last_t, context), opt, None, minimize) of fstdecode.statespace.ngram,
// as fstdecode/search/stack.py and coverage_dp.py call it: the <s> tape ending in the words
// `context` (a Contexts id) with opt appended (opt may be </s>), cached per (context, option).
// Joined::last is the new tape's LM context, Joined::score the join's LM score.
class BosJoins {
 public:
  // With minimisation and Problem::lm_facts, joins are scored by a FactJoiner, else a Joiner.
  // keep_facts: the FactJoiner's joins are cached too; without it each get() scores its join
  // (the stack decoder's: most (context, option) pairs are joined once, and a facts join costs
  // little more than a probe of a cache that outgrows the CPU's).
  BosJoins(const Problem& problem, Contexts& contexts, bool minimize, bool keep_facts = true)
      : join_(problem, contexts, minimize), facts_(problem, contexts), use_facts_(minimize && problem.lm_facts()),
        uncached_(use_facts_ && !keep_facts), slots_(1024) {}

  // get's value, scored afresh and not kept: for joins made once and never asked again (the
  // bounds' context fixpoint makes millions on a 5-gram, a cache miss each in the table).
  Joined score(int context, const Option& opt) {
    if (use_facts_) return facts_(context, opt);
    const Sig tape = make_sig(0, 0, 0, context);  // F = () (id 0); join reads no t
    return join_(&tape, opt, nullptr);
  }

  // get's value, from the cache when it holds it, else scored afresh and not kept (for a caller
  // that keeps its own: the A*'s join rows).
  Joined peek(int context, const Option& opt) {
    if (uncached_) return facts_(context, opt);
    const Slot* slot = find(mix(pair64(context, opt.id)));
    return slot->value.first >= 0 ? slot->value : score(context, opt);
  }

  Joined get(int context, const Option& opt) {
    if (uncached_) return facts_(context, opt);
    const std::uint64_t h = mix(pair64(context, opt.id));
    Slot* slot = find(h);
    if (slot->value.first >= 0) return slot->value;
    const Joined value = score(context, opt);
    if (2 * (size_ + 1) > slots_.size()) {
      grow();
      slot = find(h);
    }
    *slot = {h, value};
    ++size_;
    return value;
  }

  // Starts loading the slot get(context, opt) reads first: a hint for a get to come. Changes no
  // result.
  void prefetch_slot(int context, const Option& opt) const {
    if (uncached_) return;
#if defined(__GNUC__)
    __builtin_prefetch(&slots_[mix(pair64(context, opt.id)) & (slots_.size() - 1)]);
#else
    (void)context, (void)opt;
#endif
  }

  // Starts loading what get(context, opt) will read, when its join is not cached yet
  // (Joiner::prefetch_bos). Changes no result.
  void prefetch(int context, const Option& opt) {
    if (uncached_) return facts_.prefetch(context, opt);
    if (find(mix(pair64(context, opt.id)))->value.first >= 0) return;
    if (use_facts_) facts_.prefetch(context, opt);
    else join_.prefetch_bos(context, opt);
  }

 private:
  // Open addressing, linear probing, at most half full. hash is mix(pair64(context, option id)),
  // which determines the pair (mix is a bijection), so no key is stored; value.first < 0 marks
  // an empty slot (a join's first is a Contexts id, >= 0). A join's value lies in its slot: a
  // lookup reads one cache line (the joins of a long sentence outgrow the caches).
  struct Slot {
    std::uint64_t hash = 0;
    Joined value{-1, -1, 0.0};
  };
  // The slot of h: its own, or the empty one where it would go.
  Slot* find(std::uint64_t h) {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.value.first < 0 || slot.hash == h) return &slot;
    }
  }
  void grow() {
    std::vector<Slot> old(2 * slots_.size());
    old.swap(slots_);
    for (const Slot& slot : old)
      if (slot.value.first >= 0) *find(slot.hash) = slot;
  }

  Joiner join_;
  FactJoiner facts_;
  const bool use_facts_, uncached_;
  std::vector<Slot> slots_;  // a power of two
  std::size_t size_ = 0;
};

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
        eta(problem.eta()), minimize(minimize), ngram(problem.order() > 2), lr(problem.has_reordering()),
        lr_inner(problem.reordering_reads_start()), gap(problem.moses()),
        charge_final(problem.charge_final()), contexts(problem.order() - 1),
        joiner_(problem, contexts, minimize) {
    if (end > MAX_WORDS)
      throw std::length_error("the signature state space takes sentences of at most " + std::to_string(MAX_WORDS - 1) +
                              " words; this one has " + std::to_string(n));
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
    if (!ngram && static_cast<long long>(rows_) * cols_ <= (1LL << 22))
      lam_.assign(static_cast<std::size_t>(rows_) * static_cast<std::size_t>(cols_), std::nan(""));
    groups.assign(static_cast<std::size_t>(end) + 1, {});
    int group_count = 0;
    for (int s = 1; s <= end; ++s) {
      const auto& opts = problem.by_start()[static_cast<std::size_t>(s)];
      std::vector<int> ends;
      for (const Option& o : opts) ends.push_back(o.t);
      std::sort(ends.begin(), ends.end());
      ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
      for (int t : ends) {
        Group g;
        g.t = t;
        g.id = group_count++;
        for (const Option& o : opts)
          if (o.t == t)
            g.opts.push_back({o.score, o.id, o.s, o.t, o.first(), o.last(), col_[static_cast<std::size_t>(o.first())],
                              row_[static_cast<std::size_t>(o.last())], &o});
        groups[static_cast<std::size_t>(s)].push_back(std::move(g));
      }
    }
    if (ngram) {
      const WordId bos = problem.bos(), eos = problem.eos();
      start = make_sig(0, 0, 0, contexts.intern(&bos, 1));
      goal = make_sig(0, 0, end, contexts.intern(&eos, 1));
    } else {
      start = make_sig(0, problem.bos(), 0, problem.bos());
      goal = make_sig(0, problem.bos(), end, problem.eos());
    }
  }

  // problem.junctions()[a][b]: the weighted bigram score of a junction (computed on first use).
  double lam(WordId a, WordId b) { return lam(a, row_[static_cast<std::size_t>(a)], b, col_[static_cast<std::size_t>(b)]); }
  // The same, given a's row and b's column (from row_ and col_).
  double lam(WordId a, std::int32_t row, WordId b, std::int32_t col) {
    if (row >= 0 && col >= 0 && !lam_.empty()) {
      double& v = lam_[static_cast<std::size_t>(row) * static_cast<std::size_t>(cols_) + static_cast<std::size_t>(col)];
      if (std::isnan(v)) v = p.ngram(&a, 1, b);
      return v;
    }
    return p.ngram(&a, 1, b);
  }

  // ngram.joined for every option of a group: join(a, opt, c) with its events scored, cached
  // (one lookup per group and choice of ψ1 and ψ2; every option of the group is joined with
  // them). The result depends on a only through its F and L (F is () exactly for the <s> tape)
  // and on c through its F and L. Returns the joins, by the group's options.
  const Joined* joined(const Group& g, const Sig* a, const Sig* c) {
    const std::int32_t key[5] = {g.id, a ? a->a : -1, a ? a->b : -1, c ? c->a : -1, c ? c->b : -1};
    const std::uint64_t h = mix(mix(pair64(key[0], key[1]) ^ 0x51ed270b27UL) ^ pair64(key[2], key[3]) * 0x9e3779b97f4a7c15ULL ^ static_cast<std::uint32_t>(key[4]));
    const int id = join_index_.find(h, [&](int i) { return std::equal(key, key + 5, join_keys_.data() + static_cast<std::size_t>(i) * 5); });
    if (id >= 0) return join_values_.data() + join_at_[static_cast<std::size_t>(id)];
    const std::size_t at = join_values_.size();
    for (const Opt& o : g.opts) join_values_.push_back(join(a, *o.option, c));
    join_keys_.insert(join_keys_.end(), key, key + 5);
    join_at_.push_back(at);
    join_index_.insert(h, static_cast<int>(join_at_.size() - 1));
    return join_values_.data() + at;
  }

  // The successors of state (j, sigs[0..r)), as statespace.signature.expand (order 2) and
  // ngram.expand_ngram yield them and in their order, into `out`. `hashes` holds tape_hash of
  // each of sigs. With lexicalized reordering (lr), ends[0..r) are the tapes' LR ends, and the
  // successors are reordering.expand's: the same, each new tape with its head and tail, each
  // score plus the transition's charge (reordering.charge); else ends is null. LR must be lr (a
  // template argument, so that a search without a reordering model pays nothing for it).
  template <bool NG, bool LR>
  void expand(int j, const Sig* sigs, const Ends* ends, int r, const std::uint64_t* hashes, Successors& out) {
    out.clear();
    out.lr = LR;
    // Appends a tape to out.keys (and its LR ends to out.key_ends).
    const auto push_key = [&out](const Sig& sig, const Ends* e) {
      out.keys.push_back(sig);
      if constexpr (LR) out.key_ends.push_back(*e);
    };
    for (const Group& g : groups[static_cast<std::size_t>(j) + 1]) {
      const int t = g.t;
      const int m = static_cast<int>(g.opts.size());
      if (t == end) {  // </s> is only appended to a lone tape: anything else is not the goal
        if (r != 1) continue;
        const Sig& a = sigs[0];
        const int jump = end - a.t - 1;
        if (jump > d) continue;
        const double pen = charge_final ? eta * jump : 0.0;  // signature.final_charge
        const std::size_t first = out.reserve(static_cast<std::size_t>(m));
        const Joined* joins = nullptr;
        if constexpr (NG) joins = joined(g, &a, nullptr);
        for (int i = 0; i < m; ++i) {
          const Opt& o = g.opts[static_cast<std::size_t>(i)];
          const std::size_t q = first + static_cast<std::size_t>(i);
          Sig nw;
          if constexpr (NG) {
            const Joined& jn = joins[i];
            nw = make_sig(a.s, jn.first, end, jn.last);
            out.delta[q] = o.score + jn.score - pen;
          } else {
            nw = make_sig(a.s, a.a, end, o.last);
            out.delta[q] = o.score + lam(a.b, o.first) - pen;
          }
          out.sig[q] = nw;
          out.hash[q] = sig_hash(nw);  // </s> charges nothing; the goal tape has no LR ends
          if constexpr (LR) out.ends[q] = Ends{};
        }
        push_key(sigs[0], LR ? &ends[0] : nullptr);
        out.add({t, 1, 0, a.s, PHI, m, out.keys.size() - 1, first, g.opts.data()});
        continue;
      }
      if (!tape_roles(sigs, r, j, t)) continue;
      for (const int k1 : cands1_)
        for (const int k2 : cands2_) {
          if (k1 == k2 && k1 != PHI) continue;  // a tape never plays both roles
          const Sig* a = k1 != PHI ? &sigs[k1] : nullptr;
          const Sig* c = k2 != PHI ? &sigs[k2] : nullptr;
          const int ns = a ? a->s : j + 1;
          // Moses' gap rule (gaprule.joined, viable and canonical): the new tape's (M, lo), the
          // same for every option of the group (they all span j + 1 .. t); a choice of (ψ1, ψ2)
          // that breaks the rule, or leaves an open tape that nothing can enter, is skipped; each
          // M is stored as the least open tape's lo it does not exceed (gap_los).
          std::int16_t gm = 0, glo = 0;
          int nlos = 0;
          int* los = nullptr;
          if (gap) {
            if (gap_los_.size() < static_cast<std::size_t>(r) + 1) gap_los_.resize(static_cast<std::size_t>(r) + 1);
            los = gap_los_.data();
            int m = std::min(j + 1, t + 1 - d);  // gaprule.reach: m(p) = min(s(p), t(p) + 1 - d)
            if (a) m = std::max<int>(m, a->M);
            if (c) {
              if (c->lo < m) continue;  // a phrase of ψ1 p reaches past ψ2's leftmost start
              m = std::max<int>(m, c->M);
            }
            int lo = j + 1;
            if (a) lo = std::min<int>(lo, a->lo);
            if (c) lo = std::min<int>(lo, c->lo);
            const int need = t + 2 - d;  // gaprule.viable: an open tape's lo is at least j' + 2 - d
            if (ns != 0 && lo < need) continue;
            bool dead = false;
            if (ns != 0) los[nlos++] = lo;
            for (int k = 0; k < r; ++k) {
              if (k == k1 || k == k2 || sigs[k].s == 0) continue;
              if (sigs[k].lo < need) dead = true;
              los[nlos++] = sigs[k].lo;
            }
            if (dead) continue;
            std::sort(los, los + nlos);
            nlos = static_cast<int>(std::unique(los, los + nlos) - los);
            gm = static_cast<std::int16_t>(gap_canonical(m, los, nlos));
            glo = static_cast<std::int16_t>(ns == 0 ? 0 : lo);
          }
          // The other tapes, split around the new tape's start (states stay sorted by s); their
          // LR ends do not change.
          const std::size_t key = out.keys.size();
          int w = 0, pos = -1;
          std::uint64_t rest = 0;
          for (int k = 0; k < r; ++k) {
            if (k == k1 || k == k2) continue;
            const Ends* e = LR ? &ends[k] : nullptr;
            if (pos < 0 && sigs[k].s > ns) {
              pos = w++;
              push_key(Sig{}, LR ? &NO_ENDS : nullptr);
            }
            const int cm = gap ? gap_canonical(sigs[k].M, los, nlos) : 0;
            if (gap && cm != sigs[k].M) {  // canonical: the open tapes' lo changed
              Sig x = sigs[k];
              x.M = static_cast<std::int16_t>(cm);
              push_key(x, e);
              rest += tape_hash(x, e);
            } else {
              push_key(sigs[k], e);
              rest += hashes[k];
            }
            ++w;
          }
          if (pos < 0) {
            pos = w++;
            push_key(Sig{}, LR ? &NO_ENDS : nullptr);
          }
          const std::size_t first = out.reserve(static_cast<std::size_t>(m));
          // reordering.charge's orientations, the same for every option of the group (they all
          // span j + 1 .. t): o1 of p after ψ1's last phrase (or the sentence start, when ψ1 is
          // <s> alone: its tail is None), o2 of ψ2's first phrase after p.
          const Ends* ea = LR && a ? &ends[k1] : nullptr;
          const Ends* ec = LR && c ? &ends[k2] : nullptr;
          int o1 = 0, o2 = 0;
          double head2 = 0.0;  // ψ2's pending backward score at o2
          if (ea) o1 = a->t == 0 ? p.orientation(0, 0, true, j + 1, t) : p.orientation(ea->s_last, a->t, false, j + 1, t);
          if (ec) {
            o2 = p.orientation(j + 1, t, false, c->s, ec->t_first);
            head2 = p.lr_back_of_row(ec->back, o2);
          }
          // The charge of option o (reordering.charge, in its order of operations) and the new
          // tape's ends: the head is ψ1's (p's own, pending, when ψ1 is φ), the tail ψ2's (p's).
          const auto charge = [&](const Opt& o, Ends& out_ends) {
            double v = 0.0;
            if (ea) v += a->t == 0 ? p.lr_back(o.id, o1) : p.lr_back(o.id, o1) + p.lr_next(ea->next, o1);
            if (ec) v += head2 + p.lr_next(p.lr_row(o.id), o2);
            out_ends = Ends{};
            if (ea) {
              out_ends.back = ea->back;
              out_ends.t_first = ea->t_first;
            } else {
              out_ends.back = p.lr_back_row(o.id);
              out_ends.t_first = static_cast<std::int16_t>(lr_inner ? o.t : 0);
            }
            if (ec) {
              out_ends.next = ec->next;
              out_ends.s_last = ec->s_last;
            } else {
              out_ends.next = p.lr_row(o.id);
              out_ends.s_last = static_cast<std::int16_t>(lr_inner ? o.s : 0);
            }
            return v;
          };
          if constexpr (NG) {
            const int jumps = (a ? j - a->t : 0) + (c ? t + 1 - c->s : 0);
            const Joined* joins = joined(g, a, c);
            for (int i = 0; i < m; ++i) {
              const Opt& o = g.opts[static_cast<std::size_t>(i)];
              const std::size_t q = first + static_cast<std::size_t>(i);
              const Joined& jn = joins[i];
              Sig nw = make_sig(a ? a->s : o.s, jn.first, c ? c->t : o.t, jn.last);
              nw.M = gm;
              nw.lo = glo;
              out.sig[q] = nw;
              out.delta[q] = o.score + jn.score - eta * jumps;
              if constexpr (LR) {
                out.delta[q] += charge(o, out.ends[q]);
                out.hash[q] = rest + tape_hash(nw, &out.ends[q]);
              } else {
                out.hash[q] = rest + sig_hash(nw);
              }
            }
          } else {
            // Figure 4: score = ŵ(p) [+ λ(e_1 | w_t(ψ1)) − η|t(ψ1) + 1 − s(p)|]
            //                        [+ λ(w_s(ψ2) | e_m) − η|t(p) + 1 − s(ψ2)|]
            const double pen1 = a ? eta * (j - a->t) : 0.0;  // t(ψ1) <= j, s(p) = j + 1
            const double pen2 = c ? eta * (t + 1 - c->s) : 0.0;
            const std::int32_t row1 = a ? row_[static_cast<std::size_t>(a->b)] : -1;
            const std::int32_t col2 = c ? col_[static_cast<std::size_t>(c->a)] : -1;
            for (int i = 0; i < m; ++i) {
              const Opt& o = g.opts[static_cast<std::size_t>(i)];
              const std::size_t q = first + static_cast<std::size_t>(i);
              double score = o.score;
              Sig nw;
              nw.s = static_cast<std::int16_t>(ns);
              nw.M = gm;
              nw.lo = glo;
              if (a) {
                score += lam(a->b, row1, o.first, o.first_col) - pen1;
                nw.a = a->a;
              } else {
                nw.a = o.first;
              }
              if (c) {
                score += lam(o.last, o.last_row, c->a, col2) - pen2;
                nw.t = c->t;
                nw.b = c->b;
              } else {
                nw.t = static_cast<std::int16_t>(t);
                nw.b = o.last;
              }
              out.sig[q] = nw;
              if constexpr (LR) {
                out.delta[q] = score + charge(o, out.ends[q]);
                out.hash[q] = rest + tape_hash(nw, &out.ends[q]);
              } else {
                out.delta[q] = score;
                out.hash[q] = rest + sig_hash(nw);
              }
            }
          }
          out.add({t, w, pos, a ? a->s : PHI, c ? c->s : PHI, m, key, first, g.opts.data()});
        }
    }
  }

  // reordering.pending_bound: the most the tapes' pending charges can still add (each head's
  // best backward score, each tail's best forward score or 0: the tape may end up before </s>).
  double pending_bound(const Sig* sigs, const Ends* ends, int r) const {
    double total = 0.0;
    for (int i = 0; i < r; ++i) {
      if (sigs[i].s != 0) total += p.lr_back_best(ends[i].back);
      if (sigs[i].t != 0 && sigs[i].t != end) {
        const double v = p.lr_next_best(ends[i].next);
        total += v > 0.0 ? v : 0.0;  // Python's max(0.0, v)
      }
    }
    return total;
  }
  // reordering.phrase_bound: the most an option not placed yet will be charged.
  double phrase_bound(const Option& o) const {
    const double v = p.lr_next_best(p.lr_row(o.id));
    return p.lr_back_best(p.lr_back_row(o.id)) + (v > 0.0 ? v : 0.0);
  }

  const Problem& p;
  const int n, end, d, order, k;
  const double eta;
  const bool minimize, ngram;
  // Lexicalized reordering: the tapes carry LR ends (lr); t_first and s_last are kept (lr_inner).
  const bool lr, lr_inner;
  static constexpr Ends NO_ENDS{};
  // Moses' distortion semantics (gaprule.py): the gap rule in every signature (gap); the jump
  // into </s> is charged unless Moses' semantics without [early-distortion-cost] (charge_final).
  const bool gap, charge_final;
  std::vector<int> gap_los_;  // expand's buffer: the sorted distinct lo of a successor's open tapes
  Contexts contexts;
  std::vector<std::vector<Group>> groups;  // groups[p]: grouped[p] of SearchProblem
  Sig start{}, goal{};
  WordId vocab_ = 0;

  // ngram.join (and minimise): see Joiner.
  Joined join(const Sig* a, const Option& opt, const Sig* c, std::vector<Event>* events = nullptr) {
    return joiner_(a, opt, c, events);
  }

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

  std::vector<std::int32_t> row_, col_;
  int rows_ = 0, cols_ = 0;
  std::vector<double> lam_;  // rows_ x cols_, NaN until computed; empty when too large
  Index join_index_;
  std::vector<std::int32_t> join_keys_;  // 5 per entry: group, F and L of a, F and L of c
  std::vector<std::size_t> join_at_;     // per entry: its joins' first in join_values_
  std::vector<Joined> join_values_;
  std::vector<int> cands1_, cands2_;
  Joiner joiner_;
};

}  // namespace space
}  // namespace fstdecode
