// The n-gram LM the native searches score with: the queries Problem and PhraseIndex need,
// implemented by NgramLM (lm.h, an ARPA file), ImageLM (lm_image.h, its LM image), KenLMBinary
// (kenlm_binary.h, a KenLM binary) and RestrictedLM (restricted_lm.h, one read up to a lower order).
//
// Invariants every implementation keeps: order() >= 1; word ids are 0 .. vocab_size()-1 and
// unk() is one of them; every score is a natural log; a context is given oldest word first and
// only its last order()-1 words are used; queries are const and never allocate Python objects.
// Problem caches logprob per (context, word) (its ngram), and right-state minimisation
// (statespace.h's Joiner) calls trim once per new state; the one-tape searches' joins
// (statespace.h's FactJoiner) call logprob_facts instead, uncached, once per scored word.
// prefetch lets the searches overlap logprob's cache misses with other work (stack.cpp).
//
// KenLM-style right states ("facts", logprob_facts): a search that keeps, with each context it
// scores from, the backoffs of the context's suffixes scores a word with the lookups of the
// word's own n-grams only, and gets the next context's facts from the same lookups (KenLM's
// right state, lm/state.hh). Every implementation answers these from the queries above by
// default; NgramLM and ImageLM read them from their tables. The values are bit for bit those of
// logprob, backoff and extends (the same doubles, summed in the same order).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace fstdecode {

using WordId = std::int32_t;

// A query's context cut to its last order - 1 words, the only ones an n-gram of `order` reads
// (ctx moves to the first kept word; n becomes their number). Facts, being by suffix length,
// are kept by the cut.
inline void clip_context(const WordId*& ctx, int& n, int order) {
  const int m = order - 1;
  if (n > m) {
    ctx += n - m;
    n = m;
  }
}

// Where logprob_facts writes what the context ctx[0..n) + w knows of itself, by suffix length:
// backoff[L-1] = backoff(last L words, L) and extends[L-1] = extends(last L words, L), for
// L = 1 .. n + 1 (the next context's facts, and the right-state test minimisation reads).
struct NextFacts {
  double* backoff;
  std::uint8_t* extends;
};

class LanguageModel {
 public:
  virtual ~LanguageModel() = default;

  virtual int order() const = 0;
  // The number of word ids (ids are 0 .. vocab_size()-1).
  virtual std::size_t vocab_size() const = 0;
  // The LM's id of a word: its own, or unk()'s when out of vocabulary.
  virtual WordId index(std::string_view word) const = 0;
  virtual WordId unk() const = 0;
  // ln p(w | ctx[0..n)), the context's most recent word last; only the last order()-1 are used.
  virtual double logprob(const WordId* ctx, int n, WordId w) const = 0;
  // log10 p(w | ctx[0..n)) as KenLM's FullScore returns it to Moses, a float: the longest stored
  // n-gram's probability, then each backoff the match leaves out, shortest context first, each
  // value a float (its log10 as the file spells it) added in float. Moses' n-best numbers are
  // summed from these (moses_float.h). The default rounds logprob to float (equal
  // to it but for the last digits: a model whose tables it cannot walk); NgramLM and RestrictedLM
  // walk their tables.
  virtual float log10_float(const WordId* ctx, int n, WordId w) const {
    return static_cast<float>(logprob(ctx, n, w) / 2.302585092994046);
  }
  // ln p(w) as stored.
  virtual double unigram(WordId w) const = 0;
  // ln backoff of the n-gram ctx[0..n) (0 when absent or n >= order()).
  virtual double backoff(const WordId* ctx, int n) const = 0;
  // KenLM's right-state test: false only if no stored n-gram longer than ctx[0..n) starts with
  // it (so a context may drop its first word, its backoff charged). Always false for
  // n >= order(). Implementations may answer true for more contexts (KenLMBinary does, as
  // KenLM): minimisation stays exact, only the number of distinct states changes.
  virtual bool extends(const WordId* ctx, int n) const = 0;
  // The number of n-grams of each order 1..order() (what the file says it holds).
  virtual const std::vector<long>& counts() const = 0;
  // KenLM's right-state minimisation of the context ctx[0..n): the number d of leading words it
  // drops, the least d with d == n or extends(ctx + d, n - d), and backoffs[i] = backoff(ctx + i,
  // n - i) for i < d (each dropped word's charge, in the order they are dropped). backoffs has
  // room for n values. The default asks extends and backoff; an implementation may read each
  // n-gram's entry once, and look the suffixes up side by side (their misses overlap).
  virtual int trim(const WordId* ctx, int n, double* backoffs) const {
    int d = 0;
    for (; d < n && !extends(ctx + d, n - d); ++d) backoffs[d] = backoff(ctx + d, n - d);
    return d;
  }
  // Starts loading the memory trim(ctx, n, _) will read (as prefetch does for logprob). Changes
  // no result; the default does nothing.
  virtual void prefetch_trim(const WordId* ctx, int n) const {
    (void)ctx, (void)n;
  }
  // The facts of the context ctx[0..n): out[L-1] = backoff(ctx + n - L, L) for L = 1..n (0 for
  // L >= order(), as backoff says). out has room for n values.
  virtual void facts(const WordId* ctx, int n, double* out) const {
    for (int L = 1; L <= n; ++L) out[L - 1] = backoff(ctx + n - L, L);
  }
  // logprob(ctx, n, w), bit for bit, given facts[0..n) = facts(ctx, n): an implementation need
  // not look any backoff up (it sums the facts of the orders its longest match leaves out, in
  // logprob's order: longest context first, zeros skipped, then the match's probability). When
  // next is not null, also fills next's arrays (each with room for n + 1 values) as NextFacts
  // says. The default asks logprob, backoff and extends (facts unread).
  virtual double logprob_facts(const WordId* ctx, int n, WordId w, const double* facts, const NextFacts* next) const {
    (void)facts;
    if (next != nullptr) next_facts_by_query(ctx, n, w, *next);
    return logprob(ctx, n, w);
  }
  // Starts loading the memory logprob_facts(ctx, n, w, ...) will read (as prefetch does for
  // logprob). Changes no result; the default is prefetch's hint.
  virtual void prefetch_facts(const WordId* ctx, int n, WordId w) const { prefetch(ctx, n, w); }
  // Starts loading the memory logprob(ctx, n, w) will read, and returns at once: a hint that
  // lets a caller overlap the cache misses of lookups it will make soon (the tables of a large
  // LM miss the cache on nearly every query). Changes no result; the default does nothing.
  virtual void prefetch(const WordId* ctx, int n, WordId w) const {
    (void)ctx, (void)n, (void)w;
  }

 protected:
  // logprob_facts' default NextFacts: backoff and extends of each suffix of ctx[0..n) + w, the
  // suffixes of order() words or more answered 0 and false without a query (the interface's
  // contract for them).
  void next_facts_by_query(const WordId* ctx, int n, WordId w, const NextFacts& next) const {
    const int asked = std::min(n + 1, order() - 1);  // the longest suffix that may have either
    constexpr int kSmall = 16;
    WordId small[kSmall];
    std::vector<WordId> big;
    WordId* buf = small;
    if (asked > kSmall) {
      big.resize(static_cast<std::size_t>(asked));
      buf = big.data();
    }
    for (int L = 1; L <= n + 1; ++L) {
      next.backoff[L - 1] = 0.0;
      next.extends[L - 1] = 0;
      if (L > asked) continue;
      // the last L words of ctx + w: ctx[n-L+1..n), then w
      for (int i = 0; i < L - 1; ++i) buf[i] = ctx[n - L + 1 + i];
      buf[L - 1] = w;
      next.backoff[L - 1] = backoff(buf, L);
      next.extends[L - 1] = extends(buf, L) ? 1 : 0;
    }
  }

  LanguageModel() = default;
  LanguageModel(const LanguageModel&) = default;
  LanguageModel& operator=(const LanguageModel&) = default;
  LanguageModel(LanguageModel&&) = default;
  LanguageModel& operator=(LanguageModel&&) = default;
};

}  // namespace fstdecode
