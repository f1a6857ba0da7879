// PhraseIndex (table.h): the model's pairs with their ŵ(p), and a sentence's Problem.
#include "table.h"

#include "moses_float.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace fstdecode {

PhraseIndex::PhraseIndex(const LanguageModel& lm, PairWeights weights, double unknown_value, bool moses_values)
    : lm_(lm), weights_(std::move(weights)), unknown_value_(unknown_value), moses_values_(moses_values) {
  if (lm_.order() < 1) throw std::invalid_argument("the search needs an LM of order >= 1");
  bos_ = intern("<s>");
  eos_ = intern("</s>");
}

int PhraseIndex::intern(const std::string& word) {
  const auto [it, fresh] = ids_.emplace(word, static_cast<int>(lm_of_.size()));
  if (fresh) {
    lm_of_.push_back(lm_.index(word));
    text_.push_back(word);
  }
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
  const int k = search_order(lm_) - 1;
  std::vector<WordId> context(static_cast<std::size_t>(k));
  for (std::size_t i = static_cast<std::size_t>(k); i < words.size(); ++i) {
    for (int j = 0; j < k; ++j) context[static_cast<std::size_t>(j)] = lm_of_[static_cast<std::size_t>(words[i - k + j])];
    score += weights_.lm * lm_.logprob(context.data(), k, lm_of_[static_cast<std::size_t>(words[i])]);
  }
  return score;
}

namespace {
// A phrase's key: its word ids, 4 bytes each.
void append_id(std::string& key, int id) { key.append(reinterpret_cast<const char*>(&id), sizeof id); }
}  // namespace

int PhraseIndex::add_source(const std::vector<std::string>& source,
                            const std::vector<std::vector<std::string>>& targets,
                            const std::vector<double>& scores) {
  const std::size_t m = weights_.tm.size();
  if (source.empty()) throw std::invalid_argument("a source phrase has at least one word");
  if (scores.size() != targets.size() * m)
    throw std::invalid_argument("add_source: " + std::to_string(targets.size()) + " pairs need " +
                                std::to_string(targets.size() * m) + " scores, got " +
                                std::to_string(scores.size()));
  std::string key;
  for (const auto& word : source) {
    const auto [it, fresh] = source_words_.emplace(word, static_cast<int>(source_words_.size()));
    append_id(key, it->second);
  }
  const int handle = static_cast<int>(sources_.size());
  if (!source_handles_.emplace(key, handle).second)
    throw std::invalid_argument("add_source: the source phrase is registered already");
  std::vector<Pair> pairs;
  pairs.reserve(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].empty()) throw std::invalid_argument("add_source: an empty target phrase");
    Pair pair;
    for (const auto& word : targets[i]) pair.words.push_back(intern(word));
    pair.score = pair_score(scores.data() + i * m, pair.words, false, static_cast<int>(source.size()));
    if (moses_values_) {
      pair.moses = moses_tm_.size();
      for (std::size_t k = 0; k < m; ++k) moses_tm_.push_back(moses_table_value(scores[i * m + k]));
    }
    pairs.push_back(std::move(pair));
  }
  sources_.push_back(std::move(pairs));
  longest_ = std::max(longest_, static_cast<int>(source.size()));
  return handle;
}

void PhraseIndex::add_store(const PhraseStore& store) {
  if (!sources_.empty()) throw std::invalid_argument("add_store: the index has sources already");
  if (static_cast<std::size_t>(store.num_scores()) != weights_.tm.size())
    throw std::invalid_argument("add_store: the table has " + std::to_string(store.num_scores()) + " scores, the weights " +
                                std::to_string(weights_.tm.size()));
  const std::size_t m = weights_.tm.size();
  std::vector<std::vector<std::string>> targets;
  std::vector<double> scores;
  for (int h = 0; h < static_cast<int>(store.sources()); ++h) {
    targets.clear();
    scores.clear();
    for (int p = store.pair_begin(h); p < store.pair_end(h); ++p) {
      int n;
      const std::int32_t* ids = store.target(p, n);
      targets.emplace_back();
      for (int i = 0; i < n; ++i) targets.back().push_back(store.word(ids[i]));
      scores.insert(scores.end(), store.scores(p), store.scores(p) + m);
    }
    add_source(store.source_words(h), targets, scores);
  }
}

void PhraseIndex::set_reordering(const ReorderingStore& store, ReorderingSpec spec) {
  const int k = spec.orientations;
  const auto width = [&](int column, const std::vector<double>& weights) {
    if (column < 0) return 0;
    if (weights.size() != static_cast<std::size_t>(k))
      throw std::invalid_argument("set_reordering: a direction has " + std::to_string(weights.size()) +
                                  " weights for " + std::to_string(k) + " orientations");
    if (store.size() > 0 && column + k > store.num_scores())
      throw std::invalid_argument("set_reordering: a direction reads past the table's " +
                                  std::to_string(store.num_scores()) + " columns");
    if (spec.has_defaults && column + k > static_cast<int>(spec.defaults.size()))
      throw std::invalid_argument("set_reordering: a direction reads past the default scores");
    return k;
  };
  lr_back_ = width(spec.back_column, spec.back_weights);
  lr_next_ = width(spec.next_column, spec.next_weights);
  if (spec.moses_width < 0) throw std::invalid_argument("set_reordering: moses_width < 0");
  lr_stride_ = static_cast<std::size_t>(lr_back_ + lr_next_ + (moses_values_ ? spec.moses_width + 1 : 0));
  lr_store_ = &store;
  lr_ = std::move(spec);
  lr_rows_.clear();
  lr_first_.assign(sources_.size(), -1);
}

void PhraseIndex::reordering_row(const std::vector<std::string>& words, int a, int b, const Pair& pair,
                                 std::vector<double>& out) const {
  const std::vector<std::string> source(words.begin() + a, words.begin() + b + 1);
  std::vector<std::string> target;
  target.reserve(pair.words.size());
  for (const int w : pair.words) target.push_back(text_[static_cast<std::size_t>(w)]);
  const double* found = lr_store_->find(source, target);
  const double* values = found != nullptr ? found : lr_.has_defaults ? lr_.defaults.data() : nullptr;
  const auto direction = [&](int column, const std::vector<double>& weights, int width) {
    for (int o = 0; o < width; ++o)
      out.push_back(weights[static_cast<std::size_t>(o)] * (values != nullptr ? values[column + o] : 0.0));
  };
  direction(lr_.back_column, lr_.back_weights, lr_back_);
  direction(lr_.next_column, lr_.next_weights, lr_next_);
  if (!moses_values_) return;
  const std::size_t have = found != nullptr ? static_cast<std::size_t>(lr_store_->num_scores())
                           : values != nullptr ? lr_.defaults.size() : 0;
  for (std::size_t c = 0; c < static_cast<std::size_t>(lr_.moses_width); ++c)
    out.push_back(c < have ? values[c] : 0.0);
  out.push_back(found != nullptr ? 1.0 : values != nullptr ? 2.0 : 0.0);
}

std::size_t PhraseIndex::reordering_rows(int h, const std::vector<std::string>& words, int a, int b) {
  if (lr_first_.size() < sources_.size()) lr_first_.resize(sources_.size(), -1);  // sources added since
  long& first = lr_first_[static_cast<std::size_t>(h)];
  if (first < 0) {
    first = static_cast<long>(lr_rows_.size() / std::max<std::size_t>(lr_stride_, 1));
    for (const Pair& pair : sources_[static_cast<std::size_t>(h)]) reordering_row(words, a, b, pair, lr_rows_);
  }
  return static_cast<std::size_t>(first);
}

PhraseIndex::Pair PhraseIndex::unknown_pair(const std::string& word) {
  const std::vector<double> zeros(weights_.tm.size(), 0.0);
  Pair pair;
  pair.words = {intern(word)};
  pair.score = pair_score(zeros.data(), pair.words, true, 1);
  return pair;
}

std::unique_ptr<Problem> PhraseIndex::sentence(const std::vector<std::string>& words, int d, double eta,
                                               std::vector<int>& s, std::vector<int>& t,
                                               std::vector<int>& handle) {
  const int n = static_cast<int>(words.size());
  // Problem ids in order of first sight, as SearchProblem.word_id assigns them: <s>, </s>, then
  // the target words of the options in order.
  std::unordered_map<int, WordId> local;
  std::vector<WordId> lm_id;
  std::vector<int> global_of;  // with moses_values: problem id -> global id
  auto local_id = [&](int global) {
    const auto [it, fresh] = local.emplace(global, static_cast<WordId>(lm_id.size()));
    if (fresh) {
      lm_id.push_back(lm_of_[static_cast<std::size_t>(global)]);
      if (moses_values_) global_of.push_back(global);
    }
    return it->second;
  };
  const std::size_t m = weights_.tm.size();
  std::vector<float> tm;
  std::vector<unsigned char> unknown;
  const WordId bos = local_id(bos_), eos = local_id(eos_);
  // Option k (index k) is the k-th pair of the hits, in order.
  std::vector<Option> options;
  // With set_reordering: the options' rows (Problem::set_reordering, set_moses_reordering).
  std::vector<double> back, next, moses_lr, copy_row;
  std::vector<int> moses_kind;
  const auto add_row = [&](const double* r) {
    back.insert(back.end(), r, r + lr_back_);
    next.insert(next.end(), r + lr_back_, r + lr_back_ + lr_next_);
    if (!moses_values_) return;
    const double* m = r + lr_back_ + lr_next_;
    moses_lr.insert(moses_lr.end(), m, m + lr_.moses_width);
    moses_kind.push_back(static_cast<int>(m[lr_.moses_width]));
  };
  auto hit = [&](int a, int b, int h, const Pair* pairs, std::size_t count) {
    s.push_back(a);
    t.push_back(b);
    handle.push_back(h);
    if (lr_store_ != nullptr) {
      if (h < 0) {  // an unknown word's copy: its row made per sentence
        copy_row.clear();
        reordering_row(words, a, b, *pairs, copy_row);
        add_row(copy_row.data());
      } else {
        const std::size_t first = reordering_rows(h, words, a, b);
        for (std::size_t i = 0; i < count; ++i) add_row(lr_rows_.data() + (first + i) * lr_stride_);
      }
    }
    for (const Pair* pair = pairs; pair != pairs + count; ++pair) {
      if (moses_values_) {
        unknown.push_back(h < 0);
        for (std::size_t k = 0; k < m; ++k)
          tm.push_back(h < 0 ? 0.0f : moses_tm_[pair->moses + k]);
      }
      Option o;
      o.s = a + 1;
      o.t = b + 1;
      o.score = pair->score;
      o.words.reserve(pair->words.size());
      for (const int w : pair->words) o.words.push_back(local_id(w));
      o.index = static_cast<int>(options.size());
      options.push_back(std::move(o));
    }
  };
  std::vector<int> ids(words.size(), -1);  // source word ids (-1: in no source phrase)
  for (std::size_t i = 0; i < words.size(); ++i) {
    const auto it = source_words_.find(words[i]);
    if (it != source_words_.end()) ids[i] = it->second;
  }
  std::string key;
  for (int a = 0; a < n; ++a) {
    key.clear();
    append_id(key, ids[static_cast<std::size_t>(a)]);
    if (ids[static_cast<std::size_t>(a)] < 0 || source_handles_.find(key) == source_handles_.end()) {
      const Pair copy = unknown_pair(words[static_cast<std::size_t>(a)]);  // first, as build_sentence
      hit(a, a, -1, &copy, 1);
    }
    for (int b = a; b < n && b < a + longest_; ++b) {
      if (ids[static_cast<std::size_t>(b)] < 0) break;  // no source holds this word
      if (b > a) append_id(key, ids[static_cast<std::size_t>(b)]);
      const auto it = source_handles_.find(key);
      if (it == source_handles_.end()) continue;
      const std::vector<Pair>& pairs = sources_[static_cast<std::size_t>(it->second)];
      hit(a, b, it->second, pairs.data(), pairs.size());
    }
  }
  auto problem = std::make_unique<Problem>(lm_, std::move(lm_id), n, d, eta, weights_.lm, bos, eos);
  for (auto& o : options) problem->add_option(std::move(o));
  problem->finish();
  if (lr_store_ != nullptr)
    problem->set_reordering(lr_.kind, lr_back_, lr_next_, std::move(back), std::move(next));
  if (moses_values_) {
    MosesValues& v = problem->moses_values();
    v.num_tm = static_cast<int>(m);
    v.tm = std::move(tm);
    v.unknown = std::move(unknown);
    v.words.reserve(global_of.size());
    for (const int g : global_of) v.words.push_back(text_[static_cast<std::size_t>(g)]);
    if (lr_store_ != nullptr) set_moses_reordering(*problem, lr_.moses_width, moses_lr, moses_kind);
  }
  return problem;
}

}  // namespace fstdecode
