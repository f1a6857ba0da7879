// A language model read up to a lower order: RestrictedLM(base, k) answers as `base` would if
// its file had been read up to order k (what KenLMBinaryLM.restrict does in Python; NgramLM has
// its own exact NgramLM::restrict).
//
// Why it is exact: a model of order k only ever matches n-grams of length <= k, which it reaches
// through contexts of at most k-1 words; `base` given the same k-1 words matches the same
// n-grams with the same backoffs (the k-grams' backoffs are never reached). So logprob cuts the
// context to its last k-1 words, and backoff/extends of an n-gram of k words or more are 0/false
// (a model of order k stores no backoff for its k-grams). extends() of a shorter n-gram is
// base's: every stored longer n-gram has its stored prefixes (ARPA/KenLM's invariant), so if one
// extends ctx, an n-gram of length <= k does too.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "language_model.h"

namespace fstdecode {

class RestrictedLM final : public LanguageModel {
 public:
  // Throws std::invalid_argument unless 1 <= order <= base->order().
  RestrictedLM(std::shared_ptr<const LanguageModel> base, int order)
      : base_(std::move(base)), order_(order) {
    if (!base_ || order_ < 1 || order_ > base_->order())
      throw std::invalid_argument("cannot restrict an order-" + std::to_string(base_ ? base_->order() : 0) +
                                  " model to order " + std::to_string(order_));
    counts_ = base_->counts();
    if (counts_.size() > static_cast<std::size_t>(order_)) counts_.resize(static_cast<std::size_t>(order_));
  }

  const LanguageModel& base() const { return *base_; }
  int order() const override { return order_; }
  std::size_t vocab_size() const override { return base_->vocab_size(); }
  WordId index(std::string_view word) const override { return base_->index(word); }
  WordId unk() const override { return base_->unk(); }
  double logprob(const WordId* ctx, int n, WordId w) const override {
    clip_context(ctx, n, order_);
    return base_->logprob(ctx, n, w);
  }
  float log10_float(const WordId* ctx, int n, WordId w) const override {
    clip_context(ctx, n, order_);
    return base_->log10_float(ctx, n, w);
  }
  void prefetch(const WordId* ctx, int n, WordId w) const override {
    clip_context(ctx, n, order_);
    base_->prefetch(ctx, n, w);
  }
  double unigram(WordId w) const override { return base_->unigram(w); }
  double backoff(const WordId* ctx, int n) const override {
    return n >= order_ ? 0.0 : base_->backoff(ctx, n);
  }
  bool extends(const WordId* ctx, int n) const override {
    return n >= order_ || n <= 0 ? false : base_->extends(ctx, n);
  }
  const std::vector<long>& counts() const override { return counts_; }

 private:
  std::shared_ptr<const LanguageModel> base_;
  int order_;
  std::vector<long> counts_;  // base's, cut to order_
};

}  // namespace fstdecode
