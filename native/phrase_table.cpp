#include "phrase_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>

#include "text_lines.h"

namespace fstdecode {

namespace {

constexpr double kLowest = -100.0;  // Moses' FloorScore
constexpr long kProgressLines = 1L << 18;
const double kLn10 = std::log(10.0);

double floor_score(double v) { return v > kLowest ? v : kLowest; }

// The fields of a line split on "|||", left to right (Python's str.split("|||")).
void split_fields(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = line.find("|||", start);
    if (at == std::string_view::npos) {
      out.push_back(line.substr(start));
      return;
    }
    out.push_back(line.substr(start, at - start));
    start = at + 3;
  }
}

void join(const std::vector<std::string_view>& words, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i) out.push_back(' ');
    out.append(words[i]);
  }
}

void append_id(std::string& key, std::int32_t id) { key.append(reinterpret_cast<const char*>(&id), sizeof id); }

std::vector<std::string> strings(const std::vector<std::string_view>& words) {
  return std::vector<std::string>(words.begin(), words.end());
}

// The numbers of a field (text_lines.h's number grammar), or false at the first token that is
// not one.
bool numbers(const std::vector<std::string_view>& tokens, std::vector<double>& out) {
  out.clear();
  for (const auto& token : tokens) {
    double v;
    if (!parse_double(token, v)) return false;
    out.push_back(v);
  }
  return true;
}

// An alignment field's normalized text and largest positions (-1: none).
struct Alignment {
  int id = 0;
  long long max_source = -1, max_target = -1;
};

bool position(std::string_view digits, long long& value) {
  if (digits.empty()) return false;
  value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    value = std::min<long long>(value * 10 + (c - '0'), std::numeric_limits<int>::max());
  }
  return true;
}

}  // namespace

double stored_score(ScoreFormat format, double v) {
  switch (format) {
    case SCORE_PROB:
      return v > 0.0 ? floor_score(std::log(v)) : kLowest;
    case SCORE_LN:
      return floor_score(v);
    case SCORE_LOG10:
      return floor_score(v * kLn10);
  }
  return v;
}

bool normalize_alignment(std::string_view text, std::string& out, long long& max_source, long long& max_target) {
  std::vector<std::string_view> tokens;
  split_tokens(text, tokens);
  std::vector<std::pair<long long, long long>> points;
  for (const auto& token : tokens) {
    const std::size_t dash = token.find('-');
    long long i, j;
    if (dash == std::string_view::npos || !position(token.substr(0, dash), i) || !position(token.substr(dash + 1), j))
      return false;
    points.emplace_back(i, j);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  out.clear();
  max_source = max_target = -1;
  for (const auto& [i, j] : points) {
    if (!out.empty()) out.push_back(' ');
    out += std::to_string(i) + "-" + std::to_string(j);
    max_source = std::max(max_source, i);
    max_target = std::max(max_target, j);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// SourceFilter

SourceFilter::SourceFilter(std::vector<std::vector<std::string>> sentences) {
  for (auto& s : sentences) {
    if (s.empty()) continue;
    longest_ = std::max(longest_, static_cast<int>(s.size()));
    sentences_.push_back(std::move(s));
  }
  grow(std::min(7, longest_));
}

void SourceFilter::grow(int length) {
  std::string key;
  for (int n = length_ + 1; n <= length; ++n) {
    for (const auto& s : sentences_) {
      for (int i = 0; i + n <= static_cast<int>(s.size()); ++i) {
        key.clear();
        for (int j = i; j < i + n; ++j) {
          if (j > i) key.push_back(' ');
          key.append(s[static_cast<std::size_t>(j)]);
        }
        ngrams_.insert(key);
      }
    }
  }
  length_ = std::max(length_, length);
}

bool SourceFilter::keeps(const std::vector<std::string_view>& source) {
  const int n = static_cast<int>(source.size());
  if (n == 0 || n > longest_) return false;
  if (n > length_) grow(n);
  join(source, key_);
  return ngrams_.count(key_) > 0;
}

// ---------------------------------------------------------------------------------------------
// PhraseStore

std::vector<std::string> PhraseStore::source_words(int h) const {
  std::vector<std::string> out;
  for (auto i = source_off_[static_cast<std::size_t>(h)]; i < source_off_[static_cast<std::size_t>(h) + 1]; ++i)
    out.push_back(vocab_.word(source_words_[static_cast<std::size_t>(i)]));
  return out;
}

const std::int32_t* PhraseStore::target(int p, int& length) const {
  const auto b = target_off_[static_cast<std::size_t>(p)], e = target_off_[static_cast<std::size_t>(p) + 1];
  length = static_cast<int>(e - b);
  return target_words_.data() + b;
}

int PhraseStore::find(const std::vector<std::string>& words) const {
  std::string key;
  for (const auto& w : words) {
    const WordId id = vocab_.find(w);
    if (id < 0) return -1;
    append_id(key, id);
  }
  const auto it = index_.find(key);
  return it == index_.end() ? -1 : it->second;
}

PhraseStore PhraseStore::limited(int limit, const LanguageModel& lm, const std::vector<double>& tm, double word,
                                 double lm_weight) const {
  PhraseStore out;
  out.path_ = path_;
  out.num_scores_ = num_scores_;
  out.max_source_length_ = max_source_length_;
  out.runs_ = runs_;
  out.repeats_ = repeats_;
  out.vocab_ = vocab_;
  out.source_off_ = source_off_;
  out.source_words_ = source_words_;
  out.alignments_ = alignments_;
  out.index_ = index_;
  // The LM id of each word, and whether it is <s> (a phrase starting with it only uses it as context).
  std::vector<WordId> lm_id(vocab_.size());
  for (std::size_t i = 0; i < vocab_.size(); ++i) lm_id[i] = lm.index(vocab_.word(static_cast<WordId>(i)));
  const WordId bos = vocab_.find("<s>");
  const std::size_t context = static_cast<std::size_t>(lm.order() - 1);
  std::vector<WordId> seq;
  std::vector<double> rank;
  std::vector<int> order;
  const std::size_t m = static_cast<std::size_t>(num_scores_);
  for (std::size_t h = 0; h + 1 < pair_off_.size(); ++h) {
    const int b = pair_off_[h], e = pair_off_[h + 1];
    rank.clear();
    order.resize(static_cast<std::size_t>(e - b));
    std::iota(order.begin(), order.end(), b);
    for (int p = b; p < e; ++p) {
      double tm_score = 0.0;
      const double* s = scores(p);
      for (std::size_t k = 0; k < m && k < tm.size(); ++k) tm_score += tm[k] * s[k];
      int length;
      const std::int32_t* words = target(p, length);
      seq.clear();
      for (int i = 0; i < length; ++i) seq.push_back(lm_id[static_cast<std::size_t>(words[i])]);
      double estimate = 0.0;
      for (std::size_t i = (length > 0 && words[0] == bos) ? 1 : 0; i < seq.size(); ++i) {
        const std::size_t lo = i > context ? i - context : 0;
        estimate += lm.logprob(seq.data() + lo, static_cast<int>(i - lo), seq[i]);
      }
      rank.push_back(tm_score + word * -static_cast<double>(length) + lm_weight * estimate);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int x, int y) { return rank[static_cast<std::size_t>(x - b)] > rank[static_cast<std::size_t>(y - b)]; });
    if (static_cast<int>(order.size()) > limit) order.resize(static_cast<std::size_t>(limit));
    for (int p : order) {
      int length;
      const std::int32_t* words = target(p, length);
      out.target_words_.insert(out.target_words_.end(), words, words + length);
      out.target_off_.push_back(static_cast<std::int64_t>(out.target_words_.size()));
      out.scores_.insert(out.scores_.end(), scores(p), scores(p) + m);
      out.alignment_.push_back(alignment_[static_cast<std::size_t>(p)]);
    }
    out.pair_off_.push_back(static_cast<std::int32_t>(out.alignment_.size()));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reading a phrase table

class PhraseTableReader {
 public:
  PhraseTableReader(const std::string& path, ScoreFormat format, int num_features, SourceFilter* filter,
                    const KeepSource& keep, const Progress& progress, const LineLimit& limit)
      : lines_(path, limit), format_(format), expected_(num_features), filter_(filter), keep_(keep), progress_(progress) {
    store_.path_ = path;
  }

  PhraseStore read() {
    std::string_view line;
    while (lines_.next(line)) {
      if (progress_ && lines_.lineno() % kProgressLines == 0) progress_(lines_.position(), lines_.lineno());
      if (!valid_utf8(line)) fail(lines_.raw(line), "invalid UTF-8");
      if (blank(line)) continue;
      read_line(line);
    }
    if (progress_) progress_(lines_.position(), lines_.lineno());
    finish_repeats();
    group();
    store_.runs_ = runs_;
    store_.num_scores_ = expected_ < 0 ? 0 : expected_;
    return std::move(store_);
  }

 private:
  struct RunEntry {
    long line;
    std::size_t scores;  // offset into run_scores_
  };

  [[noreturn]] void fail(std::string_view line, const std::string& reason) {
    throw TableLineError(lines_.lineno(), std::string(line), lines_.path() + ":" + std::to_string(lines_.lineno()) + ": " + reason,
                         expected_, first_line_);
  }

  void read_line(std::string_view line) {
    split_fields(line, fields_);
    if (fields_.size() < 3) fail(line, "expected 'source ||| target ||| scores'");
    split_tokens(fields_[0], source_);
    split_tokens(fields_[1], target_);
    if (source_.empty()) fail(line, "empty source phrase");
    if (target_.empty()) fail(line, "empty target phrase");
    if (line.find('\0') != std::string_view::npos) fail(line, "a NUL byte");
    for (const auto& w : target_)
      if (w == "<s>" || w == "</s>") fail(line, "an LM sentence marker in the target phrase");
    split_tokens(fields_[2], tokens_);
    if (expected_ < 0) {
      if (tokens_.empty()) fail(line, "no scores");
      expected_ = static_cast<int>(tokens_.size());
      first_line_ = lines_.lineno();
    }
    if (static_cast<int>(tokens_.size()) != expected_) fail(line, "wrong number of scores");
    if (!numbers(tokens_, values_)) fail(line, "a score is not a number");
    for (double& v : values_) {
      if (std::isnan(v) || v == std::numeric_limits<double>::infinity()) fail(line, "a score is not a finite number");
      if (format_ == SCORE_PROB && v < 0.0) fail(line, "a negative probability");
      v = stored_score(format_, v);
      if (format_ == SCORE_LOG10 && std::isinf(v)) fail(line, "a log10 score overflows as a natural log");
    }
    join(source_, joined_);
    if (runs_ == 0 || joined_ != last_source_) new_run();
    join(target_, target_key_);
    repeat_check();
    const Alignment& a = alignment(fields_.size() > 3 ? fields_[3] : std::string_view(), line);
    if (a.max_source >= static_cast<long long>(source_.size()) || a.max_target >= static_cast<long long>(target_.size()))
      fail(line, "an alignment point is outside the pair");
    if (handle_ >= 0) add_pair(a.id);
  }

  void new_run() {
    ++runs_;
    last_source_ = joined_;
    bool keep = true;
    if (filter_ != nullptr) keep = filter_->keeps(source_);
    if (keep && keep_) keep = keep_(strings(source_));
    run_.clear();
    run_scores_.clear();
    handle_ = -1;
    if (!keep) return;
    std::string key;
    for (const auto& w : source_) append_id(key, store_.vocab_.intern(w));
    const auto [it, fresh] = store_.index_.emplace(key, static_cast<int>(source_of_.size()));
    if (fresh) {
      source_of_.emplace_back();
      for (const auto& w : source_) store_.source_words_.push_back(store_.vocab_.find(w));
      store_.source_off_.push_back(static_cast<std::int32_t>(store_.source_words_.size()));
      store_.max_source_length_ = std::max(store_.max_source_length_, static_cast<int>(source_.size()));
    } else if (reopened_set_.insert(it->second).second) {
      reopened_.push_back(it->second);
    }
    handle_ = it->second;
  }

  void repeat_check() {
    const auto found = run_.find(target_key_);
    if (found == run_.end()) {
      run_.emplace(target_key_, RunEntry{lines_.lineno(), run_scores_.size()});
      run_scores_.insert(run_scores_.end(), values_.begin(), values_.end());
      return;
    }
    const bool differs = !std::equal(values_.begin(), values_.end(), run_scores_.begin() + static_cast<long>(found->second.scores));
    Repeats& r = store_.repeats_;
    ++r.count;
    r.other_scores += differs;
    if (handle_ >= 0) {
      auto& w = within_[handle_];
      ++w.first;
      w.second += differs;
    }
    if (!r.any) {
      r.any = true;
      r.line = lines_.lineno();
      r.original = found->second.line;
      r.pair = joined_ + " ||| " + target_key_;
      r.differs = differs;
    }
  }

  const Alignment& alignment(std::string_view text, std::string_view line) {
    align_key_.assign(text);
    const auto found = alignments_.find(align_key_);
    if (found != alignments_.end()) return found->second;
    Alignment a;
    std::string normalized;
    if (!normalize_alignment(text, normalized, a.max_source, a.max_target)) fail(line, "an alignment point is not 'i-j'");
    const auto [it, fresh] = normalized_.emplace(normalized, static_cast<int>(store_.alignments_.size()));
    if (fresh && !normalized.empty()) store_.alignments_.push_back(normalized);
    a.id = normalized.empty() ? 0 : it->second;
    return alignments_.emplace(align_key_, a).first->second;
  }

  void add_pair(int alignment_id) {
    source_of_pair_.push_back(handle_);
    ++source_of_[static_cast<std::size_t>(handle_)];
    for (const auto& w : target_) store_.target_words_.push_back(store_.vocab_.intern(w));
    store_.target_off_.push_back(static_cast<std::int64_t>(store_.target_words_.size()));
    store_.scores_.insert(store_.scores_.end(), values_.begin(), values_.end());
    store_.alignment_.push_back(alignment_id);
  }

  // _Repeats.finish: each reopened source's repeats counted over all its kept pairs, in place
  // of its runs' counts.
  void finish_repeats() {
    if (reopened_.empty()) return;
    std::vector<std::vector<int>> pairs_of(source_of_.size());
    for (std::size_t p = 0; p < source_of_pair_.size(); ++p) pairs_of[static_cast<std::size_t>(source_of_pair_[p])].push_back(static_cast<int>(p));
    Repeats& r = store_.repeats_;
    const std::size_t m = static_cast<std::size_t>(std::max(expected_, 0));
    for (int h : reopened_) {
      std::unordered_map<std::string, int> seen;  // target key -> first pair
      long count = 0, other = 0;
      for (int p : pairs_of[static_cast<std::size_t>(h)]) {
        std::string key;
        for (auto i = store_.target_off_[static_cast<std::size_t>(p)]; i < store_.target_off_[static_cast<std::size_t>(p) + 1]; ++i)
          append_id(key, store_.target_words_[static_cast<std::size_t>(i)]);
        const auto [it, fresh] = seen.emplace(key, p);
        if (fresh) continue;
        const double* a = store_.scores_.data() + static_cast<std::size_t>(it->second) * m;
        const double* b = store_.scores_.data() + static_cast<std::size_t>(p) * m;
        const bool differs = !std::equal(a, a + m, b);
        ++count;
        other += differs;
        if (!r.any) {
          r.any = true;
          r.line = r.original = 0;
          std::string source, target;
          for (const auto& w : store_.source_words(h)) source += (source.empty() ? "" : " ") + w;
          for (auto i = store_.target_off_[static_cast<std::size_t>(p)]; i < store_.target_off_[static_cast<std::size_t>(p) + 1]; ++i)
            target += (target.empty() ? "" : " ") + store_.vocab_.word(store_.target_words_[static_cast<std::size_t>(i)]);
          r.pair = source + " ||| " + target;
          r.differs = differs;
        }
      }
      const auto w = within_[h];
      r.count += count - w.first;
      r.other_scores += other - w.second;
    }
  }

  // Pairs grouped by source (a stable counting sort: file order within a source).
  void group() {
    const std::size_t sources = source_of_.size(), pairs = source_of_pair_.size();
    const std::size_t m = static_cast<std::size_t>(std::max(expected_, 0));
    std::vector<std::int32_t> start(sources + 1, 0);
    for (std::size_t h = 0; h < sources; ++h) start[h + 1] = start[h] + source_of_[h];
    store_.pair_off_ = start;
    bool sorted = true;
    for (std::size_t p = 1; p < pairs && sorted; ++p) sorted = source_of_pair_[p - 1] <= source_of_pair_[p];
    if (sorted) return;
    std::vector<std::int32_t> where(pairs);
    for (std::size_t p = 0; p < pairs; ++p) where[p] = start[static_cast<std::size_t>(source_of_pair_[p])]++;
    std::vector<std::int64_t> off(pairs + 1, 0);
    for (std::size_t p = 0; p < pairs; ++p)
      off[static_cast<std::size_t>(where[p]) + 1] = store_.target_off_[p + 1] - store_.target_off_[p];
    for (std::size_t q = 0; q < pairs; ++q) off[q + 1] += off[q];
    std::vector<std::int32_t> words(store_.target_words_.size());
    std::vector<double> scores(store_.scores_.size());
    std::vector<std::int32_t> align(pairs);
    for (std::size_t p = 0; p < pairs; ++p) {
      const std::size_t q = static_cast<std::size_t>(where[p]);
      std::copy(store_.target_words_.begin() + store_.target_off_[p], store_.target_words_.begin() + store_.target_off_[p + 1],
                words.begin() + off[q]);
      std::copy(store_.scores_.begin() + static_cast<long>(p * m), store_.scores_.begin() + static_cast<long>((p + 1) * m),
                scores.begin() + static_cast<long>(q * m));
      align[q] = store_.alignment_[p];
    }
    store_.target_off_ = std::move(off);
    store_.target_words_ = std::move(words);
    store_.scores_ = std::move(scores);
    store_.alignment_ = std::move(align);
  }

  TextLines lines_;
  ScoreFormat format_;
  int expected_;
  long first_line_ = 0;
  SourceFilter* filter_;
  const KeepSource& keep_;
  const Progress& progress_;
  PhraseStore store_;
  long runs_ = 0;
  int handle_ = -1;  // the current run's source, -1 when it is not kept
  std::string last_source_, joined_, target_key_, align_key_;
  std::vector<std::string_view> fields_, source_, target_, tokens_;
  std::vector<double> values_;
  std::unordered_map<std::string, RunEntry> run_;
  std::vector<double> run_scores_;
  std::unordered_map<std::string, Alignment> alignments_;  // raw field -> its reading
  std::unordered_map<std::string, int> normalized_;        // normalized text -> id
  std::vector<std::int32_t> source_of_;                     // handle -> its pair count
  std::vector<std::int32_t> source_of_pair_;                // pair -> handle
  std::vector<int> reopened_;
  std::unordered_set<int> reopened_set_;
  std::unordered_map<int, std::pair<long, long>> within_;  // handle -> (repeats, with other scores) in its runs
};

PhraseStoreBuilder::PhraseStoreBuilder(std::string path, int num_scores) {
  out_.path_ = std::move(path);
  out_.num_scores_ = num_scores;
}

ReorderingStoreBuilder::ReorderingStoreBuilder(std::string path, int num_scores, bool with_target) {
  out_.path_ = std::move(path);
  out_.num_scores_ = num_scores;
  out_.with_target_ = with_target;
}

PhraseStore PhraseStoreBuilder::finish(long runs) {
  if (open_) out_.pair_off_.push_back(static_cast<std::int32_t>(out_.alignment_.size()));
  open_ = false;
  out_.runs_ = runs;
  return std::move(out_);
}

PhraseStore read_phrase_table(const std::string& path, ScoreFormat format, int num_features, SourceFilter* filter,
                              const KeepSource& keep, const Progress& progress, const LineLimit& limit) {
  PhraseStore store = PhraseTableReader(path, format, num_features, filter, keep, progress, limit).read();
  return store;
}

// ---------------------------------------------------------------------------------------------
// Reordering tables

const double* ReorderingStore::find(const std::vector<std::string>& source, const std::vector<std::string>& target) const {
  std::string key;
  for (const auto& w : source) {
    const WordId id = vocab_.find(w);
    if (id < 0) return nullptr;
    append_id(key, id);
  }
  if (with_target_) {
    append_id(key, -1);
    for (const auto& w : target) {
      const WordId id = vocab_.find(w);
      if (id < 0) return nullptr;
      append_id(key, id);
    }
  }
  const auto it = rows_.find(key);
  return it == rows_.end() ? nullptr : scores_.data() + static_cast<std::size_t>(it->second) * num_scores_;
}

class ReorderingTableReader {
 public:
  ReorderingTableReader(const std::string& path, int num_scores, bool with_target, SourceFilter* filter,
                        const KeepSource& keep, const Progress& progress, const LineLimit& limit)
      : lines_(path, limit), expected_(num_scores), filter_(filter), keep_(keep), progress_(progress) {
    store_.path_ = path;
    store_.with_target_ = with_target;
  }

  ReorderingStore read() {
    std::string_view line;
    const std::size_t want = store_.with_target_ ? 3 : 2;
    while (lines_.next(line)) {
      if (progress_ && lines_.lineno() % kProgressLines == 0) progress_(lines_.position(), lines_.lineno());
      if (!valid_utf8(line)) fail(lines_.raw(line), "invalid UTF-8");
      if (blank(line)) continue;
      split_fields(line, fields_);
      if (fields_.size() != want) fail(line, "wrong number of fields");
      split_tokens(fields_[0], source_);
      if (source_.empty()) fail(line, "empty source phrase");
      if (store_.with_target_) {
        split_tokens(fields_[1], target_);
        if (target_.empty()) fail(line, "empty target phrase");
      }
      split_tokens(fields_.back(), tokens_);
      if (tokens_.empty()) fail(line, "no probabilities");
      if (expected_ < 0) {
        expected_ = static_cast<int>(tokens_.size());
        first_line_ = lines_.lineno();
      }
      if (static_cast<int>(tokens_.size()) != expected_) fail(line, "wrong number of probabilities");
      if (!numbers(tokens_, values_)) fail(line, "a probability is not a number");
      for (double& v : values_) {
        if (!std::isfinite(v) || v < 0.0) fail(line, "a probability is not a finite number >= 0");
        v = stored_score(SCORE_PROB, v);  // max(ln v, -100): the same double
      }
      join(source_, joined_);
      if (joined_ != last_source_ || !started_) {
        started_ = true;
        last_source_ = joined_;
        // A Python predicate is asked once per source (its answers cached, as the Python reader
        // did); the native filter answers each run itself.
        const auto cached = keep_ ? wanted_.find(joined_) : wanted_.end();
        if (cached != wanted_.end()) {
          keep_run_ = cached->second;
        } else {
          keep_run_ = filter_ == nullptr || filter_->keeps(source_);
          if (keep_run_ && keep_) keep_run_ = keep_(strings(source_));
          if (keep_) wanted_.emplace(joined_, keep_run_);
        }
      }
      if (keep_run_) add();
    }
    if (progress_) progress_(lines_.position(), lines_.lineno());
    store_.num_scores_ = expected_ < 0 ? 0 : expected_;
    return std::move(store_);
  }

 private:
  [[noreturn]] void fail(std::string_view line, const std::string& reason) {
    throw TableLineError(lines_.lineno(), std::string(line), lines_.path() + ":" + std::to_string(lines_.lineno()) + ": " + reason,
                         expected_, first_line_);
  }

  void add() {
    std::string key;
    for (const auto& w : source_) append_id(key, store_.vocab_.intern(w));
    if (store_.with_target_) {
      append_id(key, -1);
      for (const auto& w : target_) append_id(key, store_.vocab_.intern(w));
    }
    const auto [it, fresh] = store_.rows_.emplace(key, static_cast<int>(store_.rows_.size()));
    if (fresh) {
      store_.scores_.insert(store_.scores_.end(), values_.begin(), values_.end());
    } else {  // a repeated key keeps its last line
      std::copy(values_.begin(), values_.end(), store_.scores_.begin() + static_cast<long>(it->second) * expected_);
    }
  }

  TextLines lines_;
  int expected_;
  long first_line_ = 0;
  SourceFilter* filter_;
  const KeepSource& keep_;
  const Progress& progress_;
  ReorderingStore store_;
  bool started_ = false, keep_run_ = true;
  std::string last_source_, joined_;
  std::vector<std::string_view> fields_, source_, target_, tokens_;
  std::vector<double> values_;
  std::unordered_map<std::string, bool> wanted_;
};

ReorderingStore read_reordering_table(const std::string& path, int num_scores, bool conditioned_on_target,
                                      SourceFilter* filter, const KeepSource& keep, const Progress& progress,
                                      const LineLimit& limit) {
  return ReorderingTableReader(path, num_scores, conditioned_on_target, filter, keep, progress, limit).read();
}

}  // namespace fstdecode

// ---------------------------------------------------------------------------------------------
// Serialization (pickles): a version, then each field, vectors as a length and their elements.

namespace fstdecode {

namespace {

constexpr std::uint32_t kPhraseStoreVersion = 1, kReorderingStoreVersion = 1;

class Writer {
 public:
  template <typename T>
  void pod(const T& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    pod(static_cast<std::uint64_t>(v.size()));
    if (!v.empty()) out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void str(const std::string& s) {
    pod(static_cast<std::uint64_t>(s.size()));
    out.append(s);
  }
  std::string out;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  T pod() {
    T v;
    take(&v, sizeof v);
    return v;
  }
  // A bool written by Writer::pod: any byte but 0 or 1 is not one (and loading it as a bool
  // would be undefined behaviour).
  bool flag() {
    const auto v = pod<std::uint8_t>();
    if (v > 1) bad();
    return v == 1;
  }
  template <typename T>
  std::vector<T> vec() {
    const auto n = pod<std::uint64_t>();
    if (n > in_.size() / sizeof(T)) bad();
    std::vector<T> v(static_cast<std::size_t>(n));
    take(v.data(), v.size() * sizeof(T));
    return v;
  }
  std::string str() {
    const auto n = pod<std::uint64_t>();
    if (n > in_.size()) bad();
    std::string s(in_.substr(0, static_cast<std::size_t>(n)));
    in_.remove_prefix(static_cast<std::size_t>(n));
    return s;
  }
  void done() const {
    if (!in_.empty()) bad();
  }
  [[noreturn]] static void bad() { throw std::invalid_argument("not the bytes of a serialized table"); }

 private:
  void take(void* to, std::size_t n) {
    if (n > in_.size()) bad();
    if (n == 0) return;  // `to` may be an empty vector's null data()
    std::memcpy(to, in_.data(), n);
    in_.remove_prefix(n);
  }
  std::string_view in_;
};

void write_vocab(Writer& w, const Vocab& vocab) {
  w.pod(static_cast<std::uint64_t>(vocab.size()));
  for (std::size_t i = 0; i < vocab.size(); ++i) w.str(vocab.word(static_cast<WordId>(i)));
}

// A string of the store: UTF-8, as every string the readers keep (Python decodes it).
std::string read_text(Reader& r) {
  std::string s = r.str();
  if (!valid_utf8(s)) Reader::bad();
  return s;
}

void read_vocab(Reader& r, Vocab& vocab) {
  const auto n = r.pod<std::uint64_t>();
  for (std::uint64_t i = 0; i < n; ++i)
    if (vocab.intern(read_text(r)) != static_cast<WordId>(i)) Reader::bad();
}

template <typename T>
void check_ids(const std::vector<T>& ids, std::size_t bound) {
  for (const T id : ids)
    if (id < 0 || static_cast<std::size_t>(id) >= bound) Reader::bad();
}

}  // namespace

std::string PhraseStore::serialize() const {
  Writer w;
  w.pod(kPhraseStoreVersion);
  w.str(path_);
  w.pod(num_scores_);
  w.pod(max_source_length_);
  w.pod(runs_);
  w.pod(repeats_.count), w.pod(repeats_.other_scores), w.pod(repeats_.any), w.pod(repeats_.line),
      w.pod(repeats_.original), w.str(repeats_.pair), w.pod(repeats_.differs);
  write_vocab(w, vocab_);
  w.vec(source_off_), w.vec(source_words_), w.vec(pair_off_), w.vec(target_off_), w.vec(target_words_);
  w.vec(scores_), w.vec(alignment_);
  w.pod(static_cast<std::uint64_t>(alignments_.size()));
  for (const auto& a : alignments_) w.str(a);
  return std::move(w.out);
}

PhraseStore PhraseStore::deserialize(std::string_view bytes) {
  Reader r(bytes);
  if (r.pod<std::uint32_t>() != kPhraseStoreVersion) Reader::bad();
  PhraseStore s;
  s.path_ = read_text(r);
  s.num_scores_ = r.pod<int>();
  s.max_source_length_ = r.pod<int>();
  s.runs_ = r.pod<long>();
  s.repeats_.count = r.pod<long>(), s.repeats_.other_scores = r.pod<long>(), s.repeats_.any = r.flag();
  s.repeats_.line = r.pod<long>(), s.repeats_.original = r.pod<long>(), s.repeats_.pair = read_text(r);
  s.repeats_.differs = r.flag();
  read_vocab(r, s.vocab_);
  s.source_off_ = r.vec<std::int32_t>(), s.source_words_ = r.vec<std::int32_t>(), s.pair_off_ = r.vec<std::int32_t>();
  s.target_off_ = r.vec<std::int64_t>(), s.target_words_ = r.vec<std::int32_t>();
  s.scores_ = r.vec<double>(), s.alignment_ = r.vec<std::int32_t>();
  const auto n = r.pod<std::uint64_t>();
  s.alignments_.clear();
  for (std::uint64_t i = 0; i < n; ++i) s.alignments_.push_back(read_text(r));
  r.done();
  // The shapes the accessors rely on.
  const std::size_t sources = s.source_off_.size() - 1, pairs = s.alignment_.size();
  if (s.source_off_.empty() || s.source_off_[0] != 0 || s.pair_off_.size() != sources + 1 || s.pair_off_[0] != 0 ||
      s.target_off_.empty() || s.target_off_[0] != 0 || s.target_off_.size() != pairs + 1 ||
      s.num_scores_ < 0 || s.scores_.size() != pairs * static_cast<std::size_t>(s.num_scores_) ||
      s.source_off_.back() != static_cast<std::int32_t>(s.source_words_.size()) ||
      s.pair_off_.back() != static_cast<std::int32_t>(pairs) ||
      s.target_off_.back() != static_cast<std::int64_t>(s.target_words_.size()) || s.alignments_.empty())
    Reader::bad();
  for (std::size_t i = 0; i < sources; ++i)
    if (s.source_off_[i] > s.source_off_[i + 1] || s.pair_off_[i] > s.pair_off_[i + 1]) Reader::bad();
  for (std::size_t i = 0; i < pairs; ++i)
    if (s.target_off_[i] > s.target_off_[i + 1]) Reader::bad();
  check_ids(s.source_words_, s.vocab_.size());
  check_ids(s.target_words_, s.vocab_.size());
  check_ids(s.alignment_, s.alignments_.size());
  for (std::size_t h = 0; h < sources; ++h) {
    std::string key;
    for (auto i = s.source_off_[h]; i < s.source_off_[h + 1]; ++i) append_id(key, s.source_words_[static_cast<std::size_t>(i)]);
    s.index_.emplace(key, static_cast<int>(h));
  }
  return s;
}

std::string ReorderingStore::serialize() const {
  Writer w;
  w.pod(kReorderingStoreVersion);
  w.str(path_);
  w.pod(num_scores_);
  w.pod(with_target_);
  write_vocab(w, vocab_);
  w.pod(static_cast<std::uint64_t>(rows_.size()));
  for (const auto& [key, row] : rows_) w.str(key), w.pod(row);
  w.vec(scores_);
  return std::move(w.out);
}

ReorderingStore ReorderingStore::deserialize(std::string_view bytes) {
  Reader r(bytes);
  if (r.pod<std::uint32_t>() != kReorderingStoreVersion) Reader::bad();
  ReorderingStore s;
  s.path_ = read_text(r);
  s.num_scores_ = r.pod<int>();
  s.with_target_ = r.flag();
  read_vocab(r, s.vocab_);
  const auto n = r.pod<std::uint64_t>();
  for (std::uint64_t i = 0; i < n; ++i) {
    std::string key = r.str();
    const int row = r.pod<int>();
    if (row < 0 || static_cast<std::uint64_t>(row) >= n) Reader::bad();
    s.rows_.emplace(std::move(key), row);
  }
  s.scores_ = r.vec<double>();
  r.done();
  if (s.num_scores_ < 0 || s.scores_.size() != n * static_cast<std::size_t>(s.num_scores_)) Reader::bad();
  return s;
}

}  // namespace fstdecode
