// Several language models as one: CombinedLM(parts, weights, words) scores ln p as the weighted
// sum over its parts, sum_k w_k ln p_k(w | ctx), so that a search with LM weight 1 scores a
// model with several LM features (moses.ini's KENLM lines, each with its own weight) exactly,
// through the one LanguageModel interface every search, bound and machine already uses.
//
// Word ids are its own: 0 .. words.size() (the union of the parts' vocabularies, given by the
// caller, and <unk> if it is not among them); each part sees its own id of a word (its unk()
// for a word it lacks). Invariants, as for every LanguageModel (language_model.h):
// * order() is the largest part's; a part of lower order uses only the last words it needs
//   (its own logprob cuts the context), and its backoff/extends of an n-gram of its order or
//   more are 0/false, as the interface says;
// * backoff(ctx) = sum_k w_k backoff_k(ctx) and extends(ctx) = any part extends ctx: so
//   right-state minimisation (trim) drops a word only when no part can extend the context,
//   and charges each part's backoff for it, which is each part's own exact rule;
// * unigram and logprob are the weighted sums. Weights are finite and >= 0 (checked): the
//   searches' bounds take an LM score to be a log probability's kind (<= 0 for a word in
//   context), which a negative weight would break.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "language_model.h"

namespace fstdecode {

class CombinedLM final : public LanguageModel {
 public:
  // Throws std::invalid_argument for no parts, a null part, a weight count that differs, a
  // weight < 0 or not finite, or an order above kMaxOrder.
  CombinedLM(std::vector<std::shared_ptr<const LanguageModel>> parts, std::vector<double> weights,
             const std::vector<std::string>& words);

  static constexpr int kMaxOrder = 64;

  int order() const override { return order_; }
  std::size_t vocab_size() const override { return words_; }
  WordId index(std::string_view word) const override;
  WordId unk() const override { return unk_; }
  double logprob(const WordId* ctx, int n, WordId w) const override;
  double unigram(WordId w) const override;
  double backoff(const WordId* ctx, int n) const override;
  bool extends(const WordId* ctx, int n) const override;
  const std::vector<long>& counts() const override { return counts_; }
  void prefetch(const WordId* ctx, int n, WordId w) const override;

  std::size_t size() const { return parts_.size(); }
  const LanguageModel& part(std::size_t k) const { return *parts_[k].lm; }
  double weight(std::size_t k) const { return parts_[k].weight; }

 private:
  struct Part {
    std::shared_ptr<const LanguageModel> lm;
    double weight;
    std::vector<WordId> ids;  // this model's id -> the part's id
  };
  // ctx[0..n) in part k's ids, into buf (n <= kMaxOrder: longer contexts keep their last words).
  const WordId* mapped(const Part& part, const WordId*& ctx, int& n, std::array<WordId, kMaxOrder>& buf) const;

  std::vector<Part> parts_;
  std::unordered_map<std::string, WordId> index_;
  std::size_t words_ = 0;
  WordId unk_ = 0;
  int order_ = 1;
  std::vector<long> counts_;  // the parts' counts summed per order (what the parts hold together)
};

}  // namespace fstdecode
