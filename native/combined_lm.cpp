#include "combined_lm.h"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace fstdecode {

CombinedLM::CombinedLM(std::vector<std::shared_ptr<const LanguageModel>> parts, std::vector<double> weights,
                       const std::vector<std::string>& words) {
  if (parts.empty()) throw std::invalid_argument("a combined LM needs at least one part");
  if (weights.size() != parts.size())
    throw std::invalid_argument(std::to_string(weights.size()) + " weight(s) for " + std::to_string(parts.size()) +
                                " language models");
  for (std::size_t i = 0; i < words.size(); ++i) index_.emplace(words[i], static_cast<WordId>(index_.size()));
  if (index_.find("<unk>") == index_.end()) index_.emplace("<unk>", static_cast<WordId>(index_.size()));
  words_ = index_.size();
  unk_ = index_.at("<unk>");
  std::vector<const std::string*> by_id(words_);
  for (const auto& [word, id] : index_) by_id[static_cast<std::size_t>(id)] = &word;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (!parts[k]) throw std::invalid_argument("a combined LM's part is missing");
    if (!std::isfinite(weights[k]) || weights[k] < 0)
      throw std::invalid_argument("the weight of language model " + std::to_string(k) +
                                  " must be a finite number >= 0 when there are several, got " +
                                  std::to_string(weights[k]));
    if (parts[k]->order() > kMaxOrder)
      throw std::invalid_argument("a language model of order above " + std::to_string(kMaxOrder));
    Part part{std::move(parts[k]), weights[k], std::vector<WordId>(words_)};
    for (std::size_t id = 0; id < words_; ++id) part.ids[id] = part.lm->index(*by_id[id]);
    order_ = std::max(order_, part.lm->order());
    const std::vector<long>& counts = part.lm->counts();
    if (counts_.size() < counts.size()) counts_.resize(counts.size(), 0);
    for (std::size_t i = 0; i < counts.size(); ++i) counts_[i] += counts[i];
    parts_.push_back(std::move(part));
  }
}

WordId CombinedLM::index(std::string_view word) const {
  const auto it = index_.find(std::string(word));
  return it == index_.end() ? unk_ : it->second;
}

const WordId* CombinedLM::mapped(const Part& part, const WordId*& ctx, int& n,
                                 std::array<WordId, kMaxOrder>& buf) const {
  if (n > kMaxOrder) {
    ctx += n - kMaxOrder;
    n = kMaxOrder;
  }
  for (int i = 0; i < n; ++i) buf[static_cast<std::size_t>(i)] = part.ids[static_cast<std::size_t>(ctx[i])];
  return buf.data();
}

double CombinedLM::logprob(const WordId* ctx, int n, WordId w) const {
  std::array<WordId, kMaxOrder> buf;
  double total = 0.0;
  for (const Part& part : parts_) {
    const WordId* c = ctx;
    int m = n;
    const WordId* ids = mapped(part, c, m, buf);
    total += part.weight * part.lm->logprob(ids, m, part.ids[static_cast<std::size_t>(w)]);
  }
  return total;
}

void CombinedLM::prefetch(const WordId* ctx, int n, WordId w) const {
  std::array<WordId, kMaxOrder> buf;
  for (const Part& part : parts_) {
    const WordId* c = ctx;
    int m = n;
    part.lm->prefetch(mapped(part, c, m, buf), m, part.ids[static_cast<std::size_t>(w)]);
  }
}

double CombinedLM::unigram(WordId w) const {
  double total = 0.0;
  for (const Part& part : parts_) total += part.weight * part.lm->unigram(part.ids[static_cast<std::size_t>(w)]);
  return total;
}

double CombinedLM::backoff(const WordId* ctx, int n) const {
  if (n <= 0 || n >= order_) return 0.0;
  std::array<WordId, kMaxOrder> buf;
  double total = 0.0;
  for (const Part& part : parts_) {
    const WordId* c = ctx;
    int m = n;
    total += part.weight * part.lm->backoff(mapped(part, c, m, buf), m);
  }
  return total;
}

bool CombinedLM::extends(const WordId* ctx, int n) const {
  if (n <= 0 || n >= order_) return false;
  std::array<WordId, kMaxOrder> buf;
  for (const Part& part : parts_) {
    const WordId* c = ctx;
    int m = n;
    if (part.lm->extends(mapped(part, c, m, buf), m)) return true;
  }
  return false;
}

}  // namespace fstdecode
