// PhraseIndex (table.h): the model's pairs with their ŵ(p), and a sentence's Problem.
#include "table.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace fstdecode {

PhraseIndex::PhraseIndex(const NgramLM& lm, PairWeights weights, double unknown_value)
    : lm_(lm), weights_(std::move(weights)), unknown_value_(unknown_value) {
  if (lm_.order() < 2)
    throw std::invalid_argument("the search needs an LM of order >= 2, got order " +
                                std::to_string(lm_.order()));
  bos_ = intern("<s>");
  eos_ = intern("</s>");
}

int PhraseIndex::intern(const std::string& word) {
  const auto [it, fresh] = ids_.emplace(word, static_cast<int>(lm_of_.size()));
  if (fresh) lm_of_.push_back(lm_.index(word));
  return it->second;
}

// SearchProblem._pair_score, operation for operation: the TM scores summed in order, then
// (word x -|e| + phrase), the unknown-word value, and the LM n-grams whose whole context lies
// inside e (words order - 1 onwards).
double PhraseIndex::pair_score(const double* scores, const std::vector<int>& words, bool unknown,
                               int source_length) const {
  double score = 0.0;
  for (std::size_t k = 0; k < weights_.tm.size(); ++k) score += weights_.tm[k] * scores[k];
  score += weights_.word * -static_cast<double>(words.size()) + weights_.phrase;
  if (unknown) score += weights_.unknown * unknown_value_ * source_length;
  const int k = lm_.order() - 1;
  std::vector<WordId> context(static_cast<std::size_t>(k));
  for (std::size_t i = static_cast<std::size_t>(k); i < words.size(); ++i) {
    for (int j = 0; j < k; ++j) context[static_cast<std::size_t>(j)] = lm_of_[static_cast<std::size_t>(words[i - k + j])];
    score += weights_.lm * lm_.logprob(context.data(), k, lm_of_[static_cast<std::size_t>(words[i])]);
  }
  return score;
}

int PhraseIndex::add_source(int source_length, const std::vector<std::vector<std::string>>& targets,
                            const std::vector<double>& scores) {
  const std::size_t m = weights_.tm.size();
  if (source_length < 1) throw std::invalid_argument("a source phrase has at least one word");
  if (scores.size() != targets.size() * m)
    throw std::invalid_argument("add_source: " + std::to_string(targets.size()) + " pairs need " +
                                std::to_string(targets.size() * m) + " scores, got " +
                                std::to_string(scores.size()));
  std::vector<Pair> pairs;
  pairs.reserve(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].empty()) throw std::invalid_argument("add_source: an empty target phrase");
    Pair pair;
    for (const auto& word : targets[i]) pair.words.push_back(intern(word));
    pair.score = pair_score(scores.data() + i * m, pair.words, false, source_length);
    pairs.push_back(std::move(pair));
  }
  sources_.push_back(std::move(pairs));
  return static_cast<int>(sources_.size()) - 1;
}

int PhraseIndex::add_unknown(const std::string& word) {
  const std::vector<double> zeros(weights_.tm.size(), 0.0);
  Pair pair;
  pair.words = {intern(word)};
  pair.score = pair_score(zeros.data(), pair.words, true, 1);
  sources_.push_back({std::move(pair)});
  return static_cast<int>(sources_.size()) - 1;
}

int PhraseIndex::pairs(int handle) const {
  if (handle < 0 || static_cast<std::size_t>(handle) >= sources_.size())
    throw std::out_of_range("no source phrase has handle " + std::to_string(handle));
  return static_cast<int>(sources_[static_cast<std::size_t>(handle)].size());
}

std::unique_ptr<Problem> PhraseIndex::problem(int n, int d, double eta, const std::vector<int>& s,
                                              const std::vector<int>& t,
                                              const std::vector<int>& handle) const {
  if (t.size() != s.size() || handle.size() != s.size())
    throw std::invalid_argument("problem: s, t and handle differ in length");
  // Problem ids in order of first sight, as SearchProblem.word_id assigns them: <s>, </s>, then
  // the target words of the options in order.
  std::unordered_map<int, WordId> local;
  std::vector<WordId> lm_id;
  auto local_id = [&](int global) {
    const auto [it, fresh] = local.emplace(global, static_cast<WordId>(lm_id.size()));
    if (fresh) lm_id.push_back(lm_of_[static_cast<std::size_t>(global)]);
    return it->second;
  };
  const WordId bos = local_id(bos_), eos = local_id(eos_);
  std::vector<Option> options;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!(0 <= s[i] && s[i] <= t[i] && t[i] < n))
      throw std::invalid_argument("problem: span [" + std::to_string(s[i]) + ", " +
                                  std::to_string(t[i]) + "] is not within a sentence of " +
                                  std::to_string(n) + " tokens");
    pairs(handle[i]);  // throws for an unknown handle
    for (const Pair& pair : sources_[static_cast<std::size_t>(handle[i])]) {
      Option o;
      o.s = s[i] + 1;
      o.t = t[i] + 1;
      o.score = pair.score;
      o.words.reserve(pair.words.size());
      for (const int w : pair.words) o.words.push_back(local_id(w));
      o.index = static_cast<int>(options.size());
      options.push_back(std::move(o));
    }
  }
  auto problem = std::make_unique<Problem>(lm_, std::move(lm_id), n, d, eta, weights_.lm, bos, eos);
  for (auto& o : options) problem->add_option(std::move(o));
  problem->finish();
  return problem;
}

}  // namespace fstdecode
