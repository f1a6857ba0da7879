// Moses' n-best arithmetic and lines (moses_float.h).
#include "moses_float.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace fstdecode {

float moses_table_value(double ln_score) {
  const float prob = ln_score > -745.0 ? static_cast<float>(std::exp(ln_score)) : 0.0f;
  if (prob <= 0.0f) return -100.0f;
  return static_cast<float>(std::max(std::log(static_cast<double>(prob)), -100.0));
}

std::string moses_number(double x) {
  if (x == 0.0) return "0";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", x);
  return buffer;
}

namespace {
void check_options(const Problem& problem, std::size_t got, std::size_t per, const char* what) {
  if (!problem.finished()) throw std::invalid_argument(std::string(what) + ": call after finish()");
  if (got != static_cast<std::size_t>(problem.option_count()) * per)
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(got) + " values for " +
                                std::to_string(problem.option_count()) + " options of " + std::to_string(per));
}
}  // namespace

void set_moses_scores(Problem& problem, int num_tm, const std::vector<double>& ln_scores,
                      std::vector<unsigned char> unknown) {
  if (num_tm < 0) throw std::invalid_argument("set_moses_scores: num_tm < 0");
  check_options(problem, ln_scores.size(), static_cast<std::size_t>(num_tm), "set_moses_scores");
  check_options(problem, unknown.size(), 1, "set_moses_scores (unknown)");
  MosesValues& v = problem.moses_values();
  v.num_tm = num_tm;
  v.tm.resize(ln_scores.size());
  std::transform(ln_scores.begin(), ln_scores.end(), v.tm.begin(), moses_table_value);
  v.unknown = std::move(unknown);
}

void set_moses_words(Problem& problem, std::vector<std::string> words) {
  if (words.size() != problem.vocab_size())
    throw std::invalid_argument("set_moses_words: " + std::to_string(words.size()) + " words for " +
                                std::to_string(problem.vocab_size()) + " problem ids");
  problem.moses_values().words = std::move(words);
}

void set_moses_reordering(Problem& problem, int width, const std::vector<double>& values, const std::vector<int>& kinds) {
  if (width < 0) throw std::invalid_argument("set_moses_reordering: width < 0");
  check_options(problem, values.size(), static_cast<std::size_t>(width), "set_moses_reordering");
  check_options(problem, kinds.size(), 1, "set_moses_reordering (kinds)");
  MosesValues& v = problem.moses_values();
  v.lr_width = width;
  v.lr.resize(values.size());
  v.lr_found.resize(kinds.size());
  for (std::size_t id = 0; id < kinds.size(); ++id) {
    if (kinds[id] < 0 || kinds[id] > 2) throw std::invalid_argument("set_moses_reordering: a kind not 0, 1 or 2");
    v.lr_found[id] = kinds[id] != 0;
    for (std::size_t c = 0; c < static_cast<std::size_t>(width); ++c) {
      const double x = values[id * static_cast<std::size_t>(width) + c];
      v.lr[id * static_cast<std::size_t>(width) + c] = kinds[id] == 1 ? moses_table_value(x) : static_cast<float>(x);
    }
  }
}

void set_moses_alignment(Problem& problem, std::vector<int> offsets, std::vector<int> points) {
  check_options(problem, offsets.size() - (offsets.empty() ? 0 : 1), 1, "set_moses_alignment");
  if (offsets.empty() || offsets.front() != 0 || static_cast<std::size_t>(offsets.back()) != points.size() ||
      points.size() % 2 != 0 || !std::is_sorted(offsets.begin(), offsets.end()))
    throw std::invalid_argument("set_moses_alignment: offsets do not fit the points");
  MosesValues& v = problem.moses_values();
  v.align_offset = std::move(offsets);
  v.align = std::move(points);
}

void MosesScoring::check() const {
  const std::size_t k = kind.size();
  if (component.size() != k || weight.size() != k)
    throw std::invalid_argument("MosesScoring: kind, component and weight differ in length");
  for (std::size_t i = 0; i < k; ++i) {
    if (kind[i] < MK_LM || kind[i] > MK_LR) throw std::invalid_argument("MosesScoring: an unknown feature kind");
    if (component[i] < 0 || (kind[i] == MK_LR && component[i] >= lr_components))
      throw std::invalid_argument("MosesScoring: a component out of range");
  }
  const std::size_t o = lr_back_component.size();
  if (lr_back_column.size() != o || lr_forward_component.size() != o || lr_forward_column.size() != o)
    throw std::invalid_argument("MosesScoring: the reordering lists differ in length");
  for (std::size_t i = 0; i < o; ++i)
    if (lr_back_component[i] >= lr_components || lr_forward_component[i] >= lr_components)
      throw std::invalid_argument("MosesScoring: a reordering component out of range");
  if (names.size() != printed.size()) throw std::invalid_argument("MosesScoring: names and printed differ in length");
  for (const auto& slots : printed)
    for (const int slot : slots)
      if (slot < 0 || static_cast<std::size_t>(slot) >= k)
        throw std::invalid_argument("MosesScoring: a printed value that is no component");
}

namespace {

// TransformLMScore's constant, a float literal in moses/Util.h.
constexpr float kLn10 = 2.30258509299405f;

float transform_lm(float log10_sum) { return log10_sum * kLn10; }

// The hypotheses of one sentence's chains, as a trie keyed by (hypothesis, option): the n-best
// paths of a sentence share most of theirs, so each is computed once.
class Arithmetic {
 public:
  Arithmetic(const Problem& problem, const MosesScoring& scoring)
      : p_(problem), s_(scoring), v_(problem.moses_values()), order_(problem.lm().order()),
        n_(problem.n()), slots_(scoring.kind.size()), cover_words_((static_cast<std::size_t>(n_) + 63) / 64) {
    for (const auto& starts : p_.by_start())
      for (const Option& o : starts)
        if (o.index >= 0) {
          if (static_cast<std::size_t>(o.index) >= by_index_.size()) by_index_.resize(static_cast<std::size_t>(o.index) + 1);
          by_index_[static_cast<std::size_t>(o.index)] = &o;
        }
    isolation_.assign(static_cast<std::size_t>(p_.option_count()), {0.0f, 0.0f});
    isolated_.assign(static_cast<std::size_t>(p_.option_count()), 0);
    eos_ = p_.lm_id(p_.eos());
    build_matrix();
    // The root: the empty hypothesis, <s> its history.
    nodes_.push_back({-1, -1, 0, 0.0f, 0.0f});
    covered_.assign(cover_words_, 0);
    history_.push_back(p_.lm_id(p_.bos()));
    history_off_ = {0, 1};
    sums_.assign(slots_, 0.0f);
  }

  const Option& by_index(int index) const {
    if (index < 0 || static_cast<std::size_t>(index) >= by_index_.size() || by_index_[static_cast<std::size_t>(index)] == nullptr)
      throw std::invalid_argument("moses_nbest: a hypothesis names an option the problem does not have");
    return *by_index_[static_cast<std::size_t>(index)];
  }
  const float* sums(int node) const { return sums_.data() + static_cast<std::size_t>(node) * slots_; }
  float total(int node) const { return nodes_[static_cast<std::size_t>(node)].total; }

  // The hypothesis extending `node` by option `opt` (Moses' order of sums: moses_float.h).
  int child(int node, const Option& opt) {
    const std::uint64_t key = static_cast<std::uint64_t>(node) * static_cast<std::uint64_t>(p_.option_count() + 1) +
                              static_cast<std::uint64_t>(opt.id);
    const auto found = children_.find(key);
    if (found != children_.end()) return found->second;
    const int made = step(node, opt);
    children_.emplace(key, made);
    return made;
  }

  // The hypothesis whose own chain places the options `indices` (target order).
  int chain(const std::vector<int>& indices) {
    int node = 0;
    for (const int i : indices) node = child(node, by_index(i));
    return node;
  }

 private:
  struct Node {
    int option;  // the option id it placed (-1: the root)
    int parent;
    int gap;     // the first uncovered word (0-based)
    float score, total;  // GetScore() and m_futureScore
  };

  float lm_word(const WordId* ctx, int n, WordId w) const {
    clip_context(ctx, n, order_);
    return p_.lm().log10_float(ctx, n, w);
  }

  // LanguageModelKen::CalcScore of option id's words: (ngram, full), both transformed to ln.
  const std::pair<float, float>& isolation(const Option& opt) {
    const auto id = static_cast<std::size_t>(opt.id);
    if (!isolated_[id]) {
      words_.clear();
      for (const WordId w : opt.words) words_.push_back(p_.lm_id(w));
      const int m = static_cast<int>(words_.size());
      const int boundary = std::min(order_ - 1, m);
      float acc = 0.0f, before = 0.0f;
      for (int j = 0; j < m; ++j) {
        const int from = std::max(0, j - order_ + 1);
        acc = acc + lm_word(words_.data() + from, j - from, words_[static_cast<std::size_t>(j)]);
        if (j == boundary - 1) before = acc;
      }
      isolation_[id] = {transform_lm(acc - before), transform_lm(acc)};
      isolated_[id] = 1;
    }
    return isolation_[id];
  }

  float tm(const Option& opt, int k) const {
    if (k >= v_.num_tm || v_.tm.empty()) return 0.0f;
    return v_.tm[static_cast<std::size_t>(opt.id) * static_cast<std::size_t>(v_.num_tm) + static_cast<std::size_t>(k)];
  }
  bool unknown(const Option& opt) const {
    return !v_.unknown.empty() && v_.unknown[static_cast<std::size_t>(opt.id)] != 0;
  }
  float unknown_score(const Option& opt) const {
    return unknown(opt) ? static_cast<float>(s_.unknown_value * (opt.t - opt.s + 1)) : 0.0f;
  }
  const float* lr_row(const Option& opt) const {
    if (v_.lr_width == 0 || v_.lr_found.empty() || !v_.lr_found[static_cast<std::size_t>(opt.id)]) return nullptr;
    return v_.lr.data() + static_cast<std::size_t>(opt.id) * static_cast<std::size_t>(v_.lr_width);
  }

  // The option's own value of dense component i (its translation option's scores: the phrase
  // table's, the word and phrase penalties, the unknown-word penalty), or false for a kind the
  // option alone does not determine (KENLM, Distortion, LexicalReordering).
  bool own_value(const Option& opt, std::size_t i, float* value) const {
    switch (s_.kind[i]) {
      case MK_TM: *value = tm(opt, s_.component[i]); return true;
      case MK_WORD: *value = -static_cast<float>(opt.words.size()); return true;
      case MK_PHRASE: *value = 1.0f; return true;
      case MK_UNKNOWN: *value = unknown_score(opt); return true;
      default: return false;
    }
  }

  // A translation option's TargetPhrase::EvaluateInIsolation future score.
  float option_future(const Option& opt) {
    const auto& [ngram, full] = isolation(opt);
    float product = 0.0f, estimate = 0.0f;
    for (std::size_t i = 0; i < slots_; ++i) {
      float value;
      if (s_.kind[i] == MK_LM)
        value = ngram;
      else if (!own_value(opt, i, &value))
        continue;  // (stateful: no value in isolation)
      product = product + value * s_.weight[i];
      if (s_.kind[i] == MK_LM) estimate = estimate + (full - ngram) * s_.weight[i];
    }
    return product + (0.0f + estimate);
  }

  // TranslationOptionCollection::CalcEstimatedScore: each span's best option, then the best split.
  void build_matrix() {
    const auto n = static_cast<std::size_t>(n_);
    matrix_.assign(n * n, -INFINITY);
    for (const auto& starts : p_.by_start())
      for (const Option& o : starts) {
        if (o.index < 0) continue;  // </s>
        const float v = option_future(o);
        float& at = matrix_[static_cast<std::size_t>(o.s - 1) * n + static_cast<std::size_t>(o.t - 1)];
        if (v > at) at = v;
      }
    for (std::size_t colstart = 1; colstart < n; ++colstart)
      for (std::size_t diag = 0; diag < n - colstart; ++diag) {
        const std::size_t s = diag, e = colstart + diag;
        for (std::size_t j = s; j < e; ++j) {
          const float joined = matrix_[s * n + j] + matrix_[(j + 1) * n + e];
          if (joined > matrix_[s * n + e]) matrix_[s * n + e] = joined;
        }
      }
  }

  bool is_covered(const std::uint64_t* bits, int k) const { return (bits[k >> 6] >> (k & 63)) & 1u; }

  // SquareMatrix::CalcEstimatedScore: the gaps' estimates, left to right.
  float estimate(const std::uint64_t* bits) const {
    const auto n = static_cast<std::size_t>(n_);
    float total = 0.0f;
    int gap = -1;
    for (int pos = 0; pos < n_; ++pos) {
      const bool c = is_covered(bits, pos);
      if (!c && gap < 0) {
        gap = pos;
      } else if (c && gap >= 0) {
        total = total + matrix_[static_cast<std::size_t>(gap) * n + static_cast<std::size_t>(pos - 1)];
        gap = -1;
      }
    }
    if (gap >= 0) total = total + matrix_[static_cast<std::size_t>(gap) * n + n - 1];
    return total;
  }

  // DistortionScoreProducer::CalculateDistortionScore (0-based spans; prev null at the start).
  float distortion(const Option* prev, int gap, const Option& opt) const {
    const int s = opt.s - 1, t = opt.t - 1;
    const int prev_end = prev != nullptr ? prev->t - 1 : -1;
    if (!s_.early_distortion) return -static_cast<float>(std::abs(prev_end + 1 - s));
    const int prefix_end = gap - 1;
    if (s == prefix_end + 1) return 0.0f;
    if (prev != nullptr && t < prev_end) return static_cast<float>(-2 * (t - s + 1));
    if (prev == nullptr || prev_end <= prefix_end) return static_cast<float>(-2 * ((s - prefix_end - 1) + (t - s + 1)));
    return static_cast<float>(-2 * ((s - prev_end - 1) + (t - s + 1)));
  }

  int step(int node, const Option& opt) {
    const Node parent = nodes_[static_cast<std::size_t>(node)];
    const Option* prev = parent.option >= 0 ? &p_.option(parent.option) : nullptr;
    // Coverage, gap, completion.
    std::vector<std::uint64_t> bits(covered_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(node) * cover_words_),
                                    covered_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(node + 1) * cover_words_));
    for (int k = opt.s - 1; k <= opt.t - 1; ++k) bits[static_cast<std::size_t>(k >> 6)] |= std::uint64_t{1} << (k & 63);
    int gap = parent.gap;
    while (gap < n_ && is_covered(bits.data(), gap)) ++gap;
    const bool closes = gap == n_;  // (every word before the parent's gap was covered already)
    // The LM delta: the option's in-phrase n-grams, then its first order - 1 words in context.
    const auto [ngram, full] = isolation(opt);
    (void)full;
    const auto h0 = static_cast<std::size_t>(history_off_[static_cast<std::size_t>(node)]);
    const auto h1 = static_cast<std::size_t>(history_off_[static_cast<std::size_t>(node) + 1]);
    context_.assign(history_.begin() + static_cast<std::ptrdiff_t>(h0), history_.begin() + static_cast<std::ptrdiff_t>(h1));
    const int hist = static_cast<int>(context_.size());
    for (const WordId w : opt.words) context_.push_back(p_.lm_id(w));
    const int m = static_cast<int>(opt.words.size());
    const int boundary = std::min(order_ - 1, m);
    float applied = 0.0f;
    for (int j = 0; j < boundary; ++j) {
      const float s = lm_word(context_.data(), hist + j, context_[static_cast<std::size_t>(hist + j)]);
      applied = j == 0 ? s : applied + s;
    }
    if (closes) applied = applied + lm_word(context_.data(), hist + m, eos_);
    const float lm = ngram + transform_lm(applied);
    // Lexicalized reordering: its backward score for the orientation, the previous phrase's forward one.
    lr_delta_.assign(static_cast<std::size_t>(s_.lr_components), 0.0f);
    if (p_.has_reordering() && !s_.lr_back_component.empty()) {
      const int o = prev == nullptr ? p_.orientation(0, 0, true, opt.s, opt.t) : p_.orientation(prev->s, prev->t, false, opt.s, opt.t);
      const float* row = lr_row(opt);
      const float* prev_row = prev != nullptr ? lr_row(*prev) : nullptr;
      const auto oi = static_cast<std::size_t>(o);
      if (row != nullptr && s_.lr_back_component[oi] >= 0) {
        float& at = lr_delta_[static_cast<std::size_t>(s_.lr_back_component[oi])];
        at = at + row[s_.lr_back_column[oi]];
      }
      if (prev_row != nullptr && s_.lr_forward_component[oi] >= 0) {
        float& at = lr_delta_[static_cast<std::size_t>(s_.lr_forward_component[oi])];
        at = at + prev_row[s_.lr_forward_column[oi]];
      }
    }
    const float dist = distortion(prev, parent.gap, opt);
    // The delta, its inner product with the weights, and the running sums.
    const std::size_t base = sums_.size();
    sums_.resize(base + slots_);
    float product = 0.0f;
    for (std::size_t i = 0; i < slots_; ++i) {
      float value = 0.0f;
      if (!own_value(opt, i, &value)) {
        switch (s_.kind[i]) {
          case MK_LM: value = lm; break;
          case MK_DISTORTION: value = dist; break;
          case MK_LR: value = lr_delta_[static_cast<std::size_t>(s_.component[i])]; break;
          default: break;
        }
      }
      product = product + value * s_.weight[i];
      sums_[base + i] = sums_[static_cast<std::size_t>(node) * slots_ + i] + value;
    }
    const float est = estimate(bits.data());
    const float total = (product + est) + parent.score;  // m_futureScore
    const float score = total - est;                      // GetScore()
    // The new node's history: the last order - 1 words.
    const int keep = std::max(0, std::min(order_ - 1, hist + m));
    history_.insert(history_.end(), context_.end() - keep, context_.end());
    history_off_.push_back(static_cast<int>(history_.size()));
    covered_.insert(covered_.end(), bits.begin(), bits.end());
    nodes_.push_back({opt.id, node, gap, score, total});
    return static_cast<int>(nodes_.size()) - 1;
  }

  const Problem& p_;
  const MosesScoring& s_;
  const MosesValues& v_;
  const int order_, n_;
  const std::size_t slots_, cover_words_;
  WordId eos_ = 0;
  std::vector<const Option*> by_index_;
  std::vector<std::pair<float, float>> isolation_;
  std::vector<unsigned char> isolated_;
  std::vector<float> matrix_;  // n x n, [s * n + e]
  std::vector<Node> nodes_;
  std::vector<std::uint64_t> covered_;  // cover_words_ per node
  std::vector<WordId> history_;         // LM ids; node i's are [history_off_[i], history_off_[i + 1])
  std::vector<int> history_off_;
  std::vector<float> sums_;             // slots_ per node
  std::unordered_map<std::uint64_t, int> children_;
  std::vector<WordId> words_, context_;
  std::vector<float> lr_delta_;
};

// TrellisPath's breakdown and total of hypothesis h (moses_float.h).
MosesEntry entry_of(Arithmetic& a, const Hypothesis& h, std::size_t slots) {
  MosesEntry e;
  const std::size_t k = h.options.size();
  const bool arcs = !h.winners.empty() &&
                    std::any_of(h.winners.begin(), h.winners.end(), [](const std::vector<int>& w) { return !w.empty(); });
  if (!arcs) {
    const int node = a.chain(h.options);
    e.values.assign(a.sums(node), a.sums(node) + slots);
    e.total = a.total(node);
    return e;
  }
  if (h.winners.size() != k) throw std::invalid_argument("moses_nbest: a hypothesis' winners do not match its options");
  // won[i]: the winner of step i's key (the hypothesis itself where it won).
  std::vector<int> won(k), own(k);
  for (std::size_t i = 0; i < k; ++i) {
    own[i] = a.child(i == 0 ? 0 : won[i - 1], a.by_index(h.options[i]));
    won[i] = h.winners[i].empty() ? own[i] : a.chain(h.winners[i]);
  }
  const int last = k == 0 ? 0 : won[k - 1];
  e.values.assign(a.sums(last), a.sums(last) + slots);
  e.total = a.total(last);
  for (std::size_t i = k; i-- > 0;) {
    if (h.winners[i].empty()) continue;
    e.total = e.total + (a.total(own[i]) - a.total(won[i]));
    const float* lost = a.sums(won[i]);
    const float* mine = a.sums(own[i]);
    for (std::size_t c = 0; c < slots; ++c) e.values[c] = (e.values[c] - lost[c]) + mine[c];
  }
  return e;
}

void append_words(std::string& out, const Problem& problem, const Option& opt, const NbestFormat& format) {
  const MosesValues& v = problem.moses_values();
  const bool unknown = !v.unknown.empty() && v.unknown[static_cast<std::size_t>(opt.id)] != 0;
  for (const WordId w : opt.words) {
    if (format.mark_unknown && unknown) out += "UNK";
    out += v.words[static_cast<std::size_t>(w)];
    out += ' ';
  }
}

void append_span(std::string& out, int a, int b) {
  out += std::to_string(a);
  if (b != a) {
    out += '-';
    out += std::to_string(b);
  }
}

}  // namespace

namespace {
std::vector<MosesEntry> entries_of(Arithmetic& a, const Result& result, std::size_t slots) {
  std::vector<MosesEntry> entries;
  entries.reserve(result.hypotheses.size());
  for (const Hypothesis& h : result.hypotheses) entries.push_back(entry_of(a, h, slots));
  return entries;
}
}  // namespace

std::vector<MosesEntry> moses_entries(const Problem& problem, const Result& result, const MosesScoring& scoring) {
  scoring.check();
  Arithmetic a(problem, scoring);
  return entries_of(a, result, scoring.kind.size());
}

std::string moses_features(const MosesEntry& e, const MosesScoring& scoring, bool labeled) {
  std::string out;
  for (std::size_t f = 0; f < scoring.names.size(); ++f) {
    if (labeled) {
      out += ' ';
      out += scoring.names[f];
      out += '=';
    }
    for (const int slot : scoring.printed[f]) {
      out += ' ';
      out += moses_number(e.values[static_cast<std::size_t>(slot)]);
    }
  }
  return out;
}

std::string moses_nbest(const Problem& problem, const Result& result, const MosesScoring& scoring, long id,
                        const NbestFormat& format, std::vector<MosesFields>* fields) {
  const MosesValues& v = problem.moses_values();
  if (v.words.size() != problem.vocab_size())
    throw std::invalid_argument("moses_nbest: the problem's word texts were not set");
  if (format.alignment && v.align_offset.size() != static_cast<std::size_t>(problem.option_count()) + 1)
    throw std::invalid_argument("moses_nbest: the options' alignments were not set");
  scoring.check();
  Arithmetic a(problem, scoring);
  const std::vector<MosesEntry> entries = entries_of(a, result, scoring.kind.size());
  std::vector<std::string> features(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) features[i] = moses_features(entries[i], scoring, format.labeled);
  if (fields != nullptr) {
    fields->clear();
    for (std::size_t i = 0; i < entries.size(); ++i) fields->emplace_back(features[i], entries[i].total);
  }
  std::vector<std::size_t> order(entries.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return entries[x].total > entries[y].total; });
  const std::string head = std::to_string(id) + " ||| ";
  std::string out;
  for (const std::size_t i : order) {
    const Hypothesis& h = result.hypotheses[i];
    const MosesEntry& e = entries[i];
    out += head;
    for (const int index : h.options) append_words(out, problem, a.by_index(index), format);
    out += " |||";
    out += features[i];
    out += " ||| ";
    out += moses_number(e.total);
    if (format.segmentation) {
      out += " |||";
      int k = 0;
      for (const int index : h.options) {
        const Option& o = a.by_index(index);
        const int m = static_cast<int>(o.words.size());
        out += ' ';
        append_span(out, o.s - 1, o.t - 1);
        out += '=';
        append_span(out, k, k + m - 1);
        k += m;
      }
    }
    if (format.alignment) {
      out += " ||| ";
      int k = 0;
      for (const int index : h.options) {
        const Option& o = a.by_index(index);
        const auto at = static_cast<std::size_t>(o.id);
        for (int q = v.align_offset[at]; q < v.align_offset[at + 1]; q += 2) {
          out += std::to_string(o.s - 1 + v.align[static_cast<std::size_t>(q)]);
          out += '-';
          out += std::to_string(k + v.align[static_cast<std::size_t>(q) + 1]);
          out += ' ';
        }
        k += static_cast<int>(o.words.size());
      }
    }
    out += '\n';
  }
  return out;
}

}  // namespace fstdecode
