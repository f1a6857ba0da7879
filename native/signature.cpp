// The signature state space and its searches (signature.h): a port of
// fstdecode/statespace/{signature,ngram,gaprule,reordering}.py and fstdecode/search/{signature_dp,signature_beam,
// bounded}.py, function for function.
//
// The Python names are kept: Space (statespace.h: the state space), Chart (signature_dp.run, backtrack, result), Heuristic and beam (make_beam),
// future_bounds. Every floating-point sum is formed in the Python order, so scores agree bit for
// bit with the Python engine given the same LM values, and every order that decides a tie is
// replicated: layers are expanded in the order their states were first built (Python's dict
// order), or in the beam's order (heapq.nlargest: best first, ties in dict order); a k-best list
// keeps the earlier insertion first among equal scores (kbest.insert_best).
//
// A state of layer j (its signatures sorted by s, statespace.h) is kept as one record (head, best hypothesis, signatures,
// and with lexicalized reordering the tapes' LR ends) in the layer's arena and found through
// an index of 8-byte tagged slots on a hash that sums the tapes' hashes (so a successor's
// hash is the rest's plus the new tape's). The search is bound by those random probes: the
// successors of the next state are built, and their slots and records prefetched, while this
// state's are looked up (in Python's order), and the next layer's index is sized from the
// layers' growth so that it seldom rehashes. Once a layer is expanded, its hypotheses move to a
// compact store for the backtrack and its keys' memory goes to the layers still to come
// (Memory). Everything is freed when the search returns.
#include "signature.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>  // madvise(MADV_HUGEPAGE)
#endif

#include "statespace.h"

namespace fstdecode {
namespace {

using namespace space;  // Sig, Ends, Space, Successors, PHI (statespace.h)

constexpr double NEG_INF = -std::numeric_limits<double>::infinity();
// signature_beam: a beam that finishes no derivation is retried WIDEN times wider, up to MAX_BEAM.
constexpr long long WIDEN = 4;
constexpr long long MAX_BEAM = 1000000;

struct Budget {};  // thrown once more than max_states states exist

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
    }
    if (kind_ != BeamHeuristic::Unigram)
      beta -= eta * static_cast<double>(space::least_jumps(sigs, r, j, sp_.n, sp_.p.charge_final()));
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

// A hypothesis of a k-best list (nbest > 1): its score and back-pointer.
struct Hyp {
  double score;
  std::int32_t prev_j, prev_i, rank;  // the back-pointer's state (prev_j < 0: the start)
  std::int32_t opt, s1, s2;           // the transition (option id, ψ1 and ψ2 starts)
};

// A state's record in its layer's arena: a head, its best hypothesis's back-pointer (nbest 1)
// and its r signatures (then, with lexicalized reordering, their r LR ends), in 16-byte units,
// so that a lookup touches one place (the slot aside).
struct Head {
  std::int32_t r, id;  // id: the state's index in the layer (and of its k-best list, nbest > 1)
  double score;        // nbest 1: the best hypothesis's score
};
// A back-pointer (nbest 1): the hypothesis came from state prev_i of layer s(opt) − 1 (every
// transition out of layer j takes an option that starts at j + 1) by option opt (< 0: none, the
// start) with ψ1 and ψ2 starting at s1 and s2.
struct Back {
  std::int32_t prev_i, opt, s1, s2;
};
union Unit {
  Sig sig;
  Ends ends;
  Head head;
  Back back;
};
static_assert(sizeof(Unit) == 16, "a record unit is 16 bytes");
constexpr std::uint32_t HEAD_UNITS = 2;  // head, back; the signatures follow

// A slot of a layer's index: all zero when empty (so that fresh memory needs no filling).
struct Slot {
  std::uint32_t tag;  // the high half of the state's hash
  std::uint32_t ref;  // 1 + the record's first unit; 0: empty
};
constexpr std::uint32_t EMPTY = 0xffffffffU;  // "no record" (lookups), never a record

// The memory of one search: blocks (record arenas, hypotheses) and slot tables, recycled from
// the layers already expanded (and the beam's earlier runs) to the layers still to come, so that
// the search touches little fresh memory (whose page faults and zeroing would cost as much as
// the search itself). Sizes are powers of 2 from 64 KB; blocks of 2 MB and more are asked for
// transparent huge pages (fewer TLB misses on the random probes, one fault per 2 MB).
// Everything is freed with the Memory.
class Memory {
 public:
  static constexpr std::size_t SMALLEST = std::size_t{1} << 16;  // bytes of the smallest block
  static constexpr std::size_t HUGE = std::size_t{1} << 21;
  Memory() = default;
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  ~Memory() {
    for (void* p : owned_) std::free(p);
  }

  // A block of SMALLEST << size_class bytes (contents undefined).
  void* block(int size_class) {
    auto& free = pool(blocks_, size_class);
    if (!free.empty()) {
      void* p = free.back();
      free.pop_back();
      return p;
    }
    return allocate(SMALLEST << size_class);
  }
  void give_block(void* p, int size_class) { pool(blocks_, size_class).push_back(p); }

  // A table of at least `size` (a power of 2, at least 1024) empty slots; its size in `size`
  // (a free table up to 4 times larger serves: clearing it costs less than fresh memory).
  Slot* table(std::size_t& size) {
    const int k = log2(size);
    for (int c = k; c <= k + 2; ++c) {
      auto& free = pool(tables_, c);
      if (free.empty()) continue;
      void* p = free.back();
      free.pop_back();
      size = std::size_t{1} << c;
      std::memset(p, 0, size * sizeof(Slot));
      return static_cast<Slot*>(p);
    }
    return static_cast<Slot*>(allocate(size * sizeof(Slot), true));
  }
  void give_table(Slot* p, std::size_t size) {
    if (p != nullptr) pool(tables_, log2(size)).push_back(p);
  }

 private:
  static int log2(std::size_t size) {
    int k = 0;
    while ((std::size_t{1} << k) < size) ++k;
    return k;
  }
  static std::vector<void*>& pool(std::vector<std::vector<void*>>& pools, int k) {
    if (pools.size() <= static_cast<std::size_t>(k)) pools.resize(static_cast<std::size_t>(k) + 1);
    return pools[static_cast<std::size_t>(k)];
  }
  // Blocks of 2 MB and more are 2 MB-aligned; zeroed ones come from calloc, which gets large
  // ones zeroed from the system without writing them.
  void* allocate(std::size_t bytes, bool zeroed = false) {
    void* p = zeroed ? std::calloc(bytes, 1) : bytes >= HUGE ? std::aligned_alloc(HUGE, bytes) : std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (bytes >= HUGE) {  // madvise takes whole pages: the ones inside the block
      const std::uintptr_t page = 4096, from = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
      const std::uintptr_t to = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(page - 1);
      if (to > from) madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);
    }
#endif
    owned_.push_back(p);
    return p;
  }
  std::vector<void*> owned_;
  std::vector<std::vector<void*>> blocks_, tables_;  // free ones, by size class
};

// Items of type T numbered 0, 1, 2, ... in blocks of the Memory that double in size: block 0
// holds items [0, F), block k >= 1 holds [F << (k - 1), F << k), with F = SMALLEST / sizeof(T).
// Items never move; a short search touches little memory, a long one few blocks.
template <class T>
class Blocks {
 public:
  static constexpr int BITS = [] {
    int b = 0;
    while ((std::size_t{1} << b) * sizeof(T) < Memory::SMALLEST) ++b;
    return b;
  }();
  static_assert((std::size_t{1} << BITS) * sizeof(T) == Memory::SMALLEST, "T's size divides 64 KB");

  static int block_of(std::uint64_t i) {
    const std::uint64_t q = i >> BITS;
    return q == 0 ? 0 : 64 - __builtin_clzll(q);
  }
  static std::uint64_t start(int k) { return k == 0 ? 0 : std::uint64_t{1} << (BITS + k - 1); }
  static std::uint64_t capacity(int k) { return std::uint64_t{1} << (BITS + (k == 0 ? 0 : k - 1)); }

  T* at(std::uint64_t i) {
    const int k = block_of(i);
    return blocks_[static_cast<std::size_t>(k)] + (i - start(k));
  }
  const T* at(std::uint64_t i) const {
    const int k = block_of(i);
    return blocks_[static_cast<std::size_t>(k)] + (i - start(k));
  }
  std::uint64_t size() const { return used_; }
  // The number of `count` consecutive items, in one block (skipping a block's tail if need be).
  std::uint64_t alloc(Memory& memory, std::uint64_t count) {
    int k = block_of(used_);
    if (used_ + count > start(k) + capacity(k)) {  // does not fit: the next block that holds it
      do ++k;
      while (count > capacity(k));
      used_ = start(k);
    }
    while (blocks_.size() <= static_cast<std::size_t>(k))
      blocks_.push_back(static_cast<T*>(memory.block(std::max(0, static_cast<int>(blocks_.size()) - 1))));
    const std::uint64_t first = used_;
    used_ += count;
    return first;
  }
  void release(Memory& memory) {
    for (std::size_t k = 0; k < blocks_.size(); ++k) memory.give_block(blocks_[k], std::max(0, static_cast<int>(k) - 1));
    blocks_.clear();
    used_ = 0;
  }

 private:
  std::vector<T*> blocks_;
  std::uint64_t used_ = 0;
};

// A layer's records of units (a record's address is its first unit's number, < 2^32).
class Arena {
 public:
  Unit* at(std::uint32_t rec) { return units_.at(rec); }
  const Unit* at(std::uint32_t rec) const { return units_.at(rec); }
  std::uint32_t alloc(Memory& memory, std::uint32_t units) {
    const std::uint64_t rec = units_.alloc(memory, units);
    if (rec + units >= EMPTY) throw std::length_error("signature search: a layer's states exceed 64 GB");
    return static_cast<std::uint32_t>(rec);
  }
  void release(Memory& memory) { units_.release(memory); }

 private:
  Blocks<Unit> units_;
};

// The back-pointers of the expanded layers' states (nbest 1), by number.
class HypStore {
 public:
  std::size_t size() const { return static_cast<std::size_t>(backs_.size()); }
  const Back& operator[](std::size_t i) const { return *backs_.at(i); }
  void push_back(Memory& memory, const Back& b) { *backs_.at(backs_.alloc(memory, 1)) = b; }
  void release(Memory& memory) { backs_.release(memory); }

 private:
  Blocks<Back> backs_;
};

// A layer's index of its states: 8-byte slots (a 32-bit tag of the hash and the state's record),
// probed linearly. The tables are large and probed at random, so the slots are kept small and
// the chart prefetches them (Chart::run); a grow rehashes the states in record order.
class StateIndex {
 public:
  static std::uint32_t tag_of(std::uint64_t h) { return static_cast<std::uint32_t>(h >> 32); }

  bool empty_table() const { return slots_ == nullptr; }
  const Slot* home(std::uint64_t h) const { return slots_ + (h & (size_ - 1)); }
  // The record whose key eq(rec) accepts, or EMPTY.
  template <class Eq>
  std::uint32_t find(std::uint64_t h, Eq&& eq) const {
    if (slots_ == nullptr) return EMPTY;
    const std::size_t m = size_ - 1;
    const std::uint32_t tag = tag_of(h);
    for (std::size_t i = h & m;; i = (i + 1) & m) {
      const Slot& slot = slots_[i];
      if (slot.ref == 0) return EMPTY;
      if (slot.tag == tag && eq(slot.ref - 1)) return slot.ref - 1;
    }
  }
  // Inserts rec (whose key is absent). On a grow, every(f) calls f(hash, rec) for each record
  // already in the table, in record order (the layer's arena lies in that order).
  // Room for `expected` states without a grow (a layer's size is guessed before it fills).
  template <class Every>
  void reserve(Memory& memory, std::size_t expected, Every&& every) {
    std::size_t size = 1024;
    while (size < 2 * expected + 2) size *= 2;
    if (size > size_) resize(memory, size, every);
  }
  template <class Every>
  void insert(Memory& memory, std::uint64_t h, std::uint32_t rec, Every&& every) {
    if (2 * (count_ + 1) > size_) resize(memory, std::max<std::size_t>(1024, 2 * size_), every);
    place(h, rec);
    ++count_;
  }
  // A table of `size` slots holding every record of the old one (given by every(f), which calls
  // f(hash, rec) in record order).
  template <class Every>
  void resize(Memory& memory, std::size_t size, Every&& every) {
    if (slots_ != nullptr) memory.give_table(slots_, size_);
    size_ = size;
    slots_ = memory.table(size_);
    if (count_ == 0) return;
    // Placed in batches whose slots are fetched ahead: the writes land at random.
    constexpr int BATCH = 16;
    std::uint64_t hs[BATCH];
    std::uint32_t rs[BATCH];
    int n = 0;
    every([&](std::uint64_t hh, std::uint32_t rr) {
      __builtin_prefetch(home(hh), 1);
      hs[n] = hh;
      rs[n] = rr;
      if (++n == BATCH) {
        for (int q = 0; q < n; ++q) place(hs[q], rs[q]);
        n = 0;
      }
    });
    for (int q = 0; q < n; ++q) place(hs[q], rs[q]);
  }
  void release(Memory& memory) {
    memory.give_table(slots_, size_);
    slots_ = nullptr;
    size_ = count_ = 0;
  }

 private:
  void place(std::uint64_t h, std::uint32_t rec) {
    const std::size_t m = size_ - 1;
    std::size_t i = h & m;
    while (slots_[i].ref != 0) i = (i + 1) & m;
    slots_[i] = {tag_of(h), rec + 1};
  }
  Slot* slots_ = nullptr;
  std::size_t size_ = 0, count_ = 0;
};

// The states of one layer (T_j). While the layer is built and expanded, its states are records
// in `arena` (offset[i]: state i's record, in order of creation); once expanded, only their
// back-pointers remain (the chart's HypStore from `first`, or `lists`), for the backtrack.
struct Layer {
  bool lr = false;  // the records hold the tapes' LR ends after their signatures
  Arena arena;
  std::vector<std::uint32_t> offset;
  StateIndex index;
  std::size_t first = 0;                // nbest == 1, once expanded: state i's back-pointer is
                                        // the chart's (HypStore) first + i
  std::vector<std::vector<Hyp>> lists;  // nbest > 1: each state's k best, best first
  std::vector<int> order;               // the beam's states, in its order
  bool beamed = false;

  int size() const { return static_cast<int>(offset.size()); }
  std::uint32_t at(int i) const { return offset[static_cast<std::size_t>(i)]; }
  int r_at(std::uint32_t rec) const { return arena.at(rec)->head.r; }
  int id_at(std::uint32_t rec) const { return arena.at(rec)->head.id; }
  const Sig& sig_at(std::uint32_t rec, int k) const { return arena.at(rec)[HEAD_UNITS + static_cast<std::uint32_t>(k)].sig; }
  // The LR ends of tape k (lr only).
  const Ends& ends_at(std::uint32_t rec, int k) const {
    const Unit* u = arena.at(rec);
    return u[HEAD_UNITS + static_cast<std::uint32_t>(u->head.r + k)].ends;
  }
  std::uint64_t hash_at(std::uint32_t rec) const {
    const Unit* u = arena.at(rec);
    const int r = u->head.r;
    std::uint64_t h = 0;
    for (int k = 0; k < r; ++k)
      h += tape_hash(u[HEAD_UNITS + static_cast<std::uint32_t>(k)].sig, lr ? &u[HEAD_UNITS + static_cast<std::uint32_t>(r + k)].ends : nullptr);
    return h;
  }
  // Is the record's state (key[0..r), with the LR ends ends[0..r): null exactly when !lr)?
  bool same(std::uint32_t rec, const Sig* key, const Ends* ends, int r) const {
    const Unit* u = arena.at(rec);
    if (u->head.r != r) return false;
    for (int k = 0; k < r; ++k)
      if (!(u[HEAD_UNITS + static_cast<std::uint32_t>(k)].sig == key[k])) return false;
    if (ends != nullptr)
      for (int k = 0; k < r; ++k)
        if (!(u[HEAD_UNITS + static_cast<std::uint32_t>(r + k)].ends == ends[k])) return false;
    return true;
  }
  std::uint32_t find(std::uint64_t h, const Sig* key, const Ends* ends, int r) const {
    return index.find(h, [&](std::uint32_t rec) { return same(rec, key, ends, r); });
  }
  // f(hash, record) for the first `count` states, in order (for the index's resizes).
  template <class F>
  void every(F&& f, int count) const {
    for (int i = 0; i < count; ++i) f(hash_at(offset[static_cast<std::size_t>(i)]), offset[static_cast<std::size_t>(i)]);
  }
  // nbest 1: the best hypothesis of a record.
  double score_at(std::uint32_t rec) const { return arena.at(rec)->head.score; }
  const Back& back_at(std::uint32_t rec) const { return arena.at(rec)[1].back; }
  void set_best(std::uint32_t rec, double score, const Back& back) {
    Unit* u = arena.at(rec);
    u->head.score = score;
    u[1].back = back;
  }
  // Keeps the back-pointers of the records (nbest 1) in `hyps`, from `first`.
  void keep_hyps(bool single, HypStore& hyps, Memory& memory) {
    if (!single) return;
    first = hyps.size();
    for (const std::uint32_t rec : offset) hyps.push_back(memory, back_at(rec));
  }
  // Returns the keys' memory (once expanded, a layer is reached only through back-pointers).
  void release_keys(Memory& memory) {
    arena.release(memory);
    index.release(memory);
    std::vector<std::uint32_t>().swap(offset);
    std::vector<int>().swap(order);
  }
};

// A state of the layer being expanded, with its successors (Chart::run's pipeline).
struct Pending {
  int i = 0;                                // the state
  double head = 0.0;                        // its best score
  const std::vector<Hyp>* list = nullptr;  // its k best (nbest > 1)
  Successors succ;
};

struct NoBeam {
  static constexpr bool active = false;
  void operator()(int, Layer&) {}
};
struct NoAdmit {
  static constexpr bool active = false;
  bool operator()(int, const Sig*, const Ends*, int, double) { return true; }
};

class Chart {
 public:
  Chart(Space& space, Memory& memory, int nbest, long max_states)
      : sp_(space), memory_(memory), nbest_(std::max(1, nbest)), max_states_(max_states) {}
  Chart(const Chart&) = delete;
  Chart& operator=(const Chart&) = delete;
  ~Chart() {  // the memory goes back to the search (the beam's next run)
    for (Layer& layer : layers_) layer.release_keys(memory_);
    hyps_.release(memory_);
  }

  long states = 0, transitions = 0;

  // signature_dp.run: fill the layers in order of j. beam(j, layer) selects the states of layer j
  // to expand (layer.order) once it is complete; admit(t, sigs, ends, r, score) (ends: the LR
  // ends, null without a reordering model) must hold for a
  // transition's result to enter the chart. Throws Budget once more than max_states states exist.
  template <bool NG, bool LR, class Beam, class Admit>
  void run(Beam&& beam, Admit&& admit) {
    const int end = sp_.end;
    const bool single = nbest_ == 1;
    constexpr bool lr = LR;  // sp_.lr
    layers_.assign(static_cast<std::size_t>(end) + 1, Layer{});
    for (Layer& layer : layers_) layer.lr = lr;
    const Ends* no_ends = lr ? &Space::NO_ENDS : nullptr;
    {
      Layer& first = layers_[0];
      const std::uint32_t rec = add_state(first, sig_hash(sp_.start), &sp_.start, no_ends, 1);
      if (single) first.set_best(rec, 0.0, {-1, -1, PHI, PHI});
      else first.lists[0].push_back({0.0, -1, -1, -1, -1, PHI, PHI});
    }
    long created = 1, kept = 0;
    transitions = 0;
    std::vector<std::uint64_t> hashes;
    std::vector<Sig> sigs;
    std::vector<Ends> ends;
    // The states of a layer are expanded in order, but pipelined: the successors of the states
    // after this one are built and their slots and records fetched while this state's lookups
    // are made. Only the cache sees the difference: the lookups and insertions happen in
    // Python's order.
    Pending pending[3];
    for (int j = 0; j < end; ++j) {
      Layer& layer = layers_[static_cast<std::size_t>(j)];
      if constexpr (std::decay_t<Beam>::active) {
        beam(j, layer);
        kept += static_cast<long>(layer.order.size());
      }
      const int count = layer.beamed ? static_cast<int>(layer.order.size()) : layer.size();
      // The next layer (fed by this one most) is sized for what it will likely hold, before it
      // fills: a grow rehashes every state at random.
      if (count > 0) {
        before_ = last_;
        last_ = static_cast<std::size_t>(count);
        const std::size_t guess = expected(created);
        Layer& next = layers_[static_cast<std::size_t>(j) + 1];
        next.index.reserve(memory_, guess, [&](auto&& f) { next.every(f, next.size()); });
      }
      // Expands state x of the layer into `into` and fetches the slots its successors probe.
      const auto prepare = [&](int x, Pending& into) {
        const int i = into.i = layer.beamed ? layer.order[static_cast<std::size_t>(x)] : x;
        const std::uint32_t at = layer.at(i);
        const int r = layer.r_at(at);
        sigs.resize(static_cast<std::size_t>(r));
        hashes.resize(static_cast<std::size_t>(r));
        if (lr) ends.resize(static_cast<std::size_t>(r));
        for (int k = 0; k < r; ++k) {
          const auto x = static_cast<std::size_t>(k);
          sigs[x] = layer.sig_at(at, k);
          if (lr) ends[x] = layer.ends_at(at, k);
          hashes[x] = tape_hash(sigs[x], lr ? &ends[x] : nullptr);
        }
        into.list = single ? nullptr : &layer.lists[static_cast<std::size_t>(layer.id_at(at))];
        into.head = single ? layer.score_at(at) : into.list->front().score;
        Successors& succ = into.succ;
        sp_.expand<NG, LR>(j, sigs.data(), lr ? ends.data() : nullptr, r, hashes.data(), succ);
        for (const Batch& b : succ) {
          const StateIndex& index = layers_[static_cast<std::size_t>(b.t)].index;
          if (index.empty_table()) continue;
          for (std::size_t q = b.first; q < b.first + static_cast<std::size_t>(b.count); ++q)
            __builtin_prefetch(index.home(succ.hash[q]));
        }
      };
      // Fetches the records that the slots of `from`'s successors name.
      const auto fetch = [&](const Pending& from) {
        const Successors& succ = from.succ;
        for (const Batch& b : succ) {
          const Layer& target = layers_[static_cast<std::size_t>(b.t)];
          if (target.index.empty_table()) continue;
          for (std::size_t q = b.first; q < b.first + static_cast<std::size_t>(b.count); ++q) {
            const Slot& slot = *target.index.home(succ.hash[q]);
            if (slot.ref != 0 && slot.tag == StateIndex::tag_of(succ.hash[q])) {
              const Unit* rec = target.arena.at(slot.ref - 1);
              __builtin_prefetch(rec, 1);
              __builtin_prefetch(rec + 4, 1);
            }
          }
        }
      };
      // Three states in flight: state x + 2 is built and its slots fetched, the records named
      // by the slots of state x + 1 are fetched, and state x is looked up.
      for (int x = 0; x < std::min(count, 2); ++x) prepare(x, pending[x]);
      if (count > 0) fetch(pending[0]);
      for (int x = 0; x < count; ++x) {
        Pending& now = pending[x % 3];
        if (x + 2 < count) prepare(x + 2, pending[(x + 2) % 3]);
        if (x + 1 < count) fetch(pending[(x + 1) % 3]);
        const int i = now.i;
        const double head = now.head;
        const std::vector<Hyp>* list = now.list;
        Successors& succ = now.succ;
        for (const Batch& b : succ) {
          Layer& target = layers_[static_cast<std::size_t>(b.t)];
          Sig* key = succ.keys.data() + b.key;
          Ends* key_ends = lr ? succ.key_ends.data() + b.key : nullptr;
          for (int y = 0; y < b.count; ++y) {
            const std::size_t q = b.first + static_cast<std::size_t>(y);
            ++transitions;
            const double delta = succ.delta[q];
            key[b.pos] = succ.sig[q];
            if (lr) key_ends[b.pos] = succ.ends[q];
            if constexpr (std::decay_t<Admit>::active) {
              if (!admit(b.t, key, key_ends, b.nr, head + delta)) continue;
            }
            const std::uint64_t h = succ.hash[q];
            std::uint32_t rec = target.find(h, key, key_ends, b.nr);
            const bool fresh = rec == EMPTY;
            if (fresh) {
              ++created;
              if (max_states_ >= 0 && created > max_states_) throw Budget{};
              rec = add_state(target, h, key, key_ends, b.nr);
            }
            const std::int32_t opt = b.opts[y].id;
            if (single) {
              const double score = head + delta;
              if (fresh || score > target.score_at(rec)) target.set_best(rec, score, {i, opt, b.s1, b.s2});
            } else {
              std::vector<Hyp>& entry = target.lists[static_cast<std::size_t>(target.id_at(rec))];
              for (std::size_t rank = 0; rank < list->size(); ++rank)
                insert_best(entry, {(*list)[rank].score + delta, j, i, static_cast<std::int32_t>(rank), opt, b.s1, b.s2});
            }
          }
        }
      }
      layer.keep_hyps(single, hyps_, memory_);
      layer.release_keys(memory_);
    }
    layers_[static_cast<std::size_t>(end)].keep_hyps(single, hyps_, memory_);
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
    const std::uint32_t rec = last.find(sig_hash(sp_.goal), &sp_.goal, sp_.lr ? &Space::NO_ENDS : nullptr, 1);
    int g = -1, count = 0;
    if (rec != EMPTY) {
      g = last.id_at(rec);
      count = nbest_ == 1 ? 1 : static_cast<int>(last.lists[static_cast<std::size_t>(g)].size());
    }
    if (count == 0) {
      out.status = "none";
      out.message = empty;
      return out;
    }
    for (int rank = 0; rank < count; ++rank) {
      Hypothesis h;
      h.score = nbest_ == 1 ? last.score_at(rec) : last.lists[static_cast<std::size_t>(g)][static_cast<std::size_t>(rank)].score;
      if (!phrases_of(backtrack(sp_.end, g, rank), h.options, out.message)) {
        out.status = "none";
        out.hypotheses.clear();
        return out;
      }
      out.hypotheses.push_back(std::move(h));
    }
    return out;
  }

 private:

  std::uint32_t add_state(Layer& layer, std::uint64_t h, const Sig* key, const Ends* ends, int r) {
    const int id = layer.size();
    const auto units = static_cast<std::uint32_t>(layer.lr ? 2 * r : r);
    const std::uint32_t rec = layer.arena.alloc(memory_, HEAD_UNITS + units);
    Unit* unit = layer.arena.at(rec);
    unit[0].head = {r, id, 0.0};
    unit[1].back = {-1, -1, PHI, PHI};
    for (int k = 0; k < r; ++k) unit[HEAD_UNITS + static_cast<std::uint32_t>(k)].sig = key[k];
    if (layer.lr)
      for (int k = 0; k < r; ++k) unit[HEAD_UNITS + static_cast<std::uint32_t>(r + k)].ends = ends[k];
    layer.offset.push_back(rec);
    layer.index.insert(memory_, h, rec, [&](auto&& f) { layer.every(f, id); });
    if (nbest_ > 1) layer.lists.emplace_back();
    return rec;
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
      if (nbest_ == 1) {
        const Back& b = hyps_[layers_[static_cast<std::size_t>(j)].first + static_cast<std::size_t>(i)];
        if (b.opt < 0) break;
        steps.push_back({b.opt, b.s1, b.s2});
        j = sp_.p.option(b.opt).s - 1;
        i = b.prev_i;
      } else {
        const Hyp& h = layers_[static_cast<std::size_t>(j)].lists[static_cast<std::size_t>(i)][static_cast<std::size_t>(rank)];
        if (h.prev_j < 0) break;
        steps.push_back({h.opt, h.s1, h.s2});
        j = h.prev_j;
        i = h.prev_i;
        rank = h.rank;
      }
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
      const Option& o = sp_.p.option(st.opt);
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
      const int index = sp_.p.option(id).index;
      if (index >= 0) out.push_back(index);
    }
    return true;
  }

  Space& sp_;
  Memory& memory_;
  const int nbest_;
  const long max_states_;
  std::vector<Layer> layers_;
  HypStore hyps_;
  std::size_t last_ = 0, before_ = 0;  // the states expanded in the last two nonempty layers

  // The states a layer fed by the one being expanded will likely hold: layers grow by about the
  // last growth until the budget, then shrink. The guess stays within twice the last layer: a
  // table too large costs fresh memory (as dear as the search), one too small a rehash or two.
  std::size_t expected(long created) const {
    std::size_t guess = last_;
    if (before_ > 0 && last_ > before_) guess = last_ * std::min<std::size_t>(2, last_ / before_ + 1);
    if (max_states_ >= 0) guess = std::min(guess, static_cast<std::size_t>(std::max(0L, max_states_ - created)) + 1);
    return guess;
  }
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
  if (space.lr) {
    if (space.ngram) chart.run<true, true>(beam, admit);
    else chart.run<false, true>(beam, admit);
  } else {
    if (space.ngram) chart.run<true, false>(beam, admit);
    else chart.run<false, false>(beam, admit);
  }
}

Result dp(Space& space, const SignatureDpOptions& o) {
  Memory memory;
  Chart chart(space, memory, o.nbest, o.max_states);
  try {
    run_chart(space, chart, NoBeam{}, NoAdmit{});
  } catch (const Budget&) {
    return budget_result(o.max_states);
  }
  // "": no derivation satisfies the distortion limit (Python writes the text:
  // fstdecode.problem.problem.no_derivation_message)
  return chart.result(true, "");
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
  int nbest;
  std::vector<std::pair<double, int>> scored;
  std::vector<Sig> sigs;

  void operator()(int j, Layer& layer) {
    layer.beamed = true;
    layer.order.clear();
    const int count = layer.size();
    if (count == 0) return;
    scored.clear();
    for (int i = 0; i < count; ++i) {
      const std::uint32_t at = layer.at(i);
      const int r = layer.r_at(at);
      if (r - 1 > n - j) continue;
      const double alpha = nbest > 1 ? layer.lists[static_cast<std::size_t>(layer.id_at(at))].front().score
                                     : layer.score_at(at);
      sigs.resize(static_cast<std::size_t>(r));
      for (int k = 0; k < r; ++k) sigs[static_cast<std::size_t>(k)] = layer.sig_at(at, k);
      scored.push_back({alpha + h(j, sigs.data(), r), i});
    }
    // A layer whose states are all dead keeps none: there is no best to measure the threshold
    // from, and the search goes on with the other layers (as make_beam does).
    if (threshold >= 0 && !scored.empty()) {
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

Result beam_search(Space& space, const SignatureBeamOptions& o, Memory& memory) {
  Heuristic h(space, o.heuristic);
  long states = 0, transitions = 0;
  long long size = o.beam_size;
  while (true) {
    Chart chart(space, memory, o.nbest, o.max_states);
    Beam beam{h, size, o.beam_threshold, space.n, o.nbest, {}, {}};
    try {
      run_chart(space, chart, beam, NoAdmit{});
    } catch (const Budget&) {
      return budget_result(o.max_states);
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

// bounded.future_bounds: future[j], an upper bound on the score of translating positions j+1..n
// (with a reordering model, each phrase's reordering charges at their best included).
std::vector<double> future_bounds(Space& space, Heuristic& h) {
  const int n = space.n;
  const std::size_t width = static_cast<std::size_t>(n) + 2;
  std::vector<double> best(width * width, NEG_INF);  // best_span[(s, t)]
  std::vector<char> present(width * width, 0);
  for (int s = 1; s <= n; ++s)
    for (const Option& o : space.p.by_start()[static_cast<std::size_t>(s)]) {
      const double v = space.lr ? o.score + h.start_word(o.first()) + space.phrase_bound(o) : o.score + h.start_word(o.first());
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
  const Space& space;
  const std::vector<double>& future;
  double lb, close;
  int end;
  bool operator()(int t, const Sig* sigs, const Ends* ends, int r, double score) {
    if (t == end) return score >= lb;  // complete: its score is exact
    if (ends)  // the charges the tapes still owe, at their best (reordering.pending_bound)
      return score + h(t, sigs, r) + space.pending_bound(sigs, ends, r) + future[static_cast<std::size_t>(t)] + close >= lb;
    return score + h(t, sigs, r) + future[static_cast<std::size_t>(t)] + close >= lb;
  }
};

Result bounded(Space& space, const SignatureDpOptions& o) {
  const Problem& p = space.p;
  if (p.order() != 2 || p.eta() < 0 || o.nbest != 1) return dp(space, o);
  Heuristic h(space, BeamHeuristic::Bound);
  SignatureBeamOptions lower_options;  // BeamOptions(max_states=max_states): the default beam
  lower_options.max_states = o.max_states;
  Memory memory;
  const Result lower = beam_search(space, lower_options, memory);
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
  Chart chart(space, memory, 1, o.max_states);
  try {
    run_chart(space, chart, NoBeam{}, Admit{h, space, future, lb, close, space.end});
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
  if (options.nbest < 1) throw std::invalid_argument("signature_dp: options.nbest < 1");
  Space space(problem, options.minimize);
  return dp(space, options);
}

Result signature_beam(const Problem& problem, const SignatureBeamOptions& options) {
  check(problem, "signature_beam");
  if (options.nbest < 1 || options.beam_size < 1)
    throw std::invalid_argument("signature_beam: options.nbest or options.beam_size < 1");
  Space space(problem, options.minimize);
  Memory memory;
  return beam_search(space, options, memory);
}

Result signature_bounded(const Problem& problem, const SignatureDpOptions& options) {
  check(problem, "signature_bounded");
  if (options.nbest < 1) throw std::invalid_argument("signature_bounded: options.nbest < 1");
  Space space(problem, options.minimize);
  return bounded(space, options);
}

}  // namespace fstdecode
