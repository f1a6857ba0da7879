// The n-gram LM the native searches score with: the queries Problem and PhraseIndex need,
// implemented by NgramLM (lm.h, an ARPA file), ImageLM (lm_image.h, its LM image), KenLMBinary
// (kenlm_binary.h, a KenLM binary) and RestrictedLM (restricted_lm.h, one read up to a lower order).
//
// Invariants every implementation keeps: order() >= 1; word ids are 0 .. vocab_size()-1 and
// unk() is one of them; every score is a natural log; a context is given oldest word first and
// only its last order()-1 words are used; queries are const and never allocate Python objects.
// Problem caches logprob per (context, word), so the virtual call is off the searches' hot path;
// right-state minimisation (statespace.h) calls trim once per new state.
// prefetch lets the searches overlap logprob's cache misses with other work (stack.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace fstdecode {

using WordId = std::int32_t;

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
  // Starts loading the memory logprob(ctx, n, w) will read, and returns at once: a hint that
  // lets a caller overlap the cache misses of lookups it will make soon (the tables of a large
  // LM miss the cache on nearly every query). Changes no result; the default does nothing.
  virtual void prefetch(const WordId* ctx, int n, WordId w) const {
    (void)ctx, (void)n, (void)w;
  }

 protected:
  LanguageModel() = default;
  LanguageModel(const LanguageModel&) = default;
  LanguageModel& operator=(const LanguageModel&) = default;
  LanguageModel(LanguageModel&&) = default;
  LanguageModel& operator=(LanguageModel&&) = default;
};

}  // namespace fstdecode
