// Moses text phrase tables and lexicalized reordering tables, read, filtered and held in the
// core: the readers behind fstdecode/io/phrase_table.py (load_phrase_table) and
// fstdecode/io/reordering_table.py (load_reordering_table), whose docstrings state the format.
//
// The core reads every line, checks it, and keeps the lines whose source phrase the filter
// accepts. A line it cannot accept throws TableLineError with the line's number and text: the
// Python layer words the error from that text (one wording for every engine). Problems with the
// file itself throw TextFileError (text_lines.h), already worded.
//
// Invariants of a PhraseStore: every pair has a non-empty source and target and num_scores()
// natural-log scores floored at -100 (Moses' FloorScore); sources are numbered 0.. in order of
// their first kept line; a source's pairs are contiguous, in file order (or best first, after
// limited()); words (source and target) share one vocabulary.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "language_model.h"
#include "lm.h"
#include "text_lines.h"

namespace fstdecode {

struct SourceStamp;  // binary_table.h
class ReorderingStore;

// How scores are written: probabilities (ln taken), natural logs, or log10 (times ln 10).
enum ScoreFormat { SCORE_PROB = 0, SCORE_LN = 1, SCORE_LOG10 = 2 };

// The score a reader keeps for the number v of a text table written in `format` (v checked
// first: finite, and >= 0 for probabilities): a natural log floored at -100 (Moses'
// FloorScore). The one definition both readers and the binarized tables' decoder use, so a
// binarized score decodes to the reader's double bit for bit.
double stored_score(ScoreFormat format, double v);

// An alignment field ("i-j" points of ASCII digits, split on ASCII whitespace) as the readers
// keep it: its points sorted, without repeats, joined by single spaces ("" for none); max_source
// and max_target its largest positions (-1: none). False when a point is not "i-j".
bool normalize_alignment(std::string_view text, std::string& out, long long& max_source, long long& max_target);

// A line the core does not accept. `reason` is the core's own short account, used only when the
// Python layer's check finds nothing wrong; `expected` and `first_line` are the score count
// every line must have and the line that set it (0: the caller's num_features set it).
struct TableLineError : std::runtime_error {
  TableLineError(long line, std::string text, const std::string& reason, int expected, long first_line)
      : std::runtime_error(reason), line(line), text(std::move(text)), expected(expected), first_line(first_line) {}
  long line;
  std::string text;
  int expected;
  long first_line;
};

// Which source phrases occur contiguously in a batch of tokenized sentences
// (fstdecode.io.table_filter.SourceFilter): exact, n-grams indexed up to the longest source met
// so far (7 words to start with), never beyond the longest sentence.
class SourceFilter {
 public:
  explicit SourceFilter(std::vector<std::vector<std::string>> sentences);
  bool keeps(const std::vector<std::string_view>& source);
  std::size_t size() const { return ngrams_.size(); }
  // The batch's sentences (non-empty ones), for a reader that looks their n-grams up itself.
  const std::vector<std::vector<std::string>>& sentences() const { return sentences_; }
  int indexed_length() const { return length_; }

 private:
  void grow(int length);
  std::vector<std::vector<std::string>> sentences_;
  int longest_ = 0, length_ = 0;
  std::unordered_set<std::string> ngrams_;  // words joined by ' '
  std::string key_;
};

// Called once per run of lines with one source phrase (a sorted table: once per source).
using KeepSource = std::function<bool(const std::vector<std::string>&)>;
// Called as the file is read: (bytes read so far, of the compressed file for gzip; lines read).
using Progress = std::function<void(long long, long)>;

// Lines that repeat an earlier (source, target) pair (fstdecode.io.phrase_table._Repeats).
struct Repeats {
  long count = 0, other_scores = 0;
  bool any = false;
  long line = 0, original = 0;  // 0, 0: found across runs of one source, without line numbers
  std::string pair;             // "source ||| target"
  bool differs = false;
};

class PhraseStore {
 public:
  int num_scores() const { return num_scores_; }
  std::size_t sources() const { return source_off_.size() - 1; }
  std::size_t pairs() const { return pair_off_.empty() ? 0 : static_cast<std::size_t>(pair_off_.back()); }
  int max_source_length() const { return max_source_length_; }
  const std::string& path() const { return path_; }
  // Runs of lines with one source phrase read (kept or not): the empty-table warning's count.
  long runs() const { return runs_; }
  const Repeats& repeats() const { return repeats_; }

  const std::string& word(int id) const { return vocab_.word(id); }
  // Source h: its words, and its pairs [pair_begin(h), pair_end(h)).
  std::vector<std::string> source_words(int h) const;
  int pair_begin(int h) const { return pair_off_[static_cast<std::size_t>(h)]; }
  int pair_end(int h) const { return pair_off_[static_cast<std::size_t>(h) + 1]; }
  // Pair p: its target word ids, its scores, its normalized alignment ("" for none).
  const std::int32_t* target(int p, int& length) const;
  const double* scores(int p) const { return scores_.data() + static_cast<std::size_t>(p) * num_scores_; }
  const std::string& alignment(int p) const { return alignments_[static_cast<std::size_t>(alignment_[static_cast<std::size_t>(p)])]; }
  // The handle of a source phrase, or -1.
  int find(const std::vector<std::string>& words) const;

  // The store keeping the `limit` best pairs of each source by Moses' table-limit ranking, best
  // first, ties in file order: sum_k tm[k] score_k - word |e| + lm_weight * (the LM's
  // context-free estimate of e) (fstdecode.model.model.moses_ranker).
  PhraseStore limited(int limit, const LanguageModel& lm, const std::vector<double>& tm, double word,
                      double lm_weight) const;

  // The store as bytes (a pickle's state), and back; deserialize throws std::invalid_argument on
  // bytes serialize did not write.
  std::string serialize() const;
  static PhraseStore deserialize(std::string_view bytes);

 private:
  friend class PhraseTableReader;
  friend class PhraseStoreBuilder;
  friend class BinaryTable;
  friend void write_binary_table(const PhraseStore&, int, const SourceStamp&, const std::string&);
  friend PhraseStore grouped(const ReorderingStore&);
  std::string path_;
  int num_scores_ = 0;
  int max_source_length_ = 0;
  long runs_ = 0;
  Repeats repeats_;
  Vocab vocab_;
  std::vector<std::int32_t> source_off_{0}, source_words_;
  std::vector<std::int32_t> pair_off_{0};
  std::vector<std::int64_t> target_off_{0};
  std::vector<std::int32_t> target_words_;
  std::vector<double> scores_;
  std::vector<std::int32_t> alignment_;
  std::vector<std::string> alignments_{""};
  std::unordered_map<std::string, int> index_;  // source word ids (4 bytes each) -> handle
};

// Fills a PhraseStore source by source, pair by pair, in the order given: the one way the mapped
// readers (binary_table, probing_table, compact_table, moses_binary_table) make a batch's store.
// Invariant: pair_off_ closes each source when the next opens and at finish(); alignments are
// interned once ("" is id 0).
class PhraseStoreBuilder {
 public:
  PhraseStoreBuilder(std::string path, int num_scores);
  // Opens the source `words` (closing the one before); false when the store holds it already.
  template <class Word>
  bool source(const std::vector<Word>& words) {
    if (open_) out_.pair_off_.push_back(static_cast<std::int32_t>(out_.alignment_.size()));
    open_ = true;
    std::string key;
    for (const auto& w : words) {
      const WordId id = out_.vocab_.intern(w);
      out_.source_words_.push_back(id);
      key.append(reinterpret_cast<const char*>(&id), sizeof id);
    }
    out_.source_off_.push_back(static_cast<std::int32_t>(out_.source_words_.size()));
    out_.max_source_length_ = std::max(out_.max_source_length_, static_cast<int>(words.size()));
    return out_.index_.emplace(std::move(key), static_cast<int>(out_.source_off_.size() - 2)).second;
  }
  // A pair of the open source: its target words, its num_scores scores, its normalized alignment.
  template <class Word>
  void pair(const std::vector<Word>& target, const double* scores, std::string_view alignment) {
    for (const auto& w : target) out_.target_words_.push_back(out_.vocab_.intern(w));
    out_.target_off_.push_back(static_cast<std::int64_t>(out_.target_words_.size()));
    out_.scores_.insert(out_.scores_.end(), scores, scores + out_.num_scores_);
    const auto [it, fresh] = alignment_ids_.emplace(std::string(alignment), static_cast<std::int32_t>(out_.alignments_.size()));
    if (fresh) out_.alignments_.emplace_back(alignment);
    out_.alignment_.push_back(it->second);
  }
  std::size_t sources() const { return out_.index_.size(); }
  // The store, its last source closed; `runs`: PhraseStore::runs().
  PhraseStore finish(long runs);

 private:
  PhraseStore out_;
  std::unordered_map<std::string, std::int32_t> alignment_ids_{{"", 0}};
  bool open_ = false;
};

// Reads a phrase table (path: plain or gzip). num_features < 0: the first line's count. A line
// with a NUL byte, or whose target phrase holds <s> or </s>, is refused (TableLineError).
PhraseStore read_phrase_table(const std::string& path, ScoreFormat format, int num_features, SourceFilter* filter,
                              const KeepSource& keep, const Progress& progress, const LineLimit& limit);

// A lexicalized reordering table: rows of num_scores() ln(p) values floored at -100, keyed by
// (source, target), or by source alone for a table conditioned on the source only (`f`). A key
// met twice keeps its last line (Moses' in-memory table).
class ReorderingStore {
 public:
  int num_scores() const { return num_scores_; }
  bool conditioned_on_target() const { return with_target_; }
  std::size_t size() const { return rows_.size(); }
  const std::string& path() const { return path_; }
  // The row of (source, target) (target ignored for `f`), or nullptr.
  const double* find(const std::vector<std::string>& source, const std::vector<std::string>& target) const;

  std::string serialize() const;
  static ReorderingStore deserialize(std::string_view bytes);

 private:
  friend class ReorderingTableReader;
  friend class ReorderingStoreBuilder;
  friend class BinaryTable;
  friend class CompactReorderingTable;
  friend class MosesReorderingTable;
  friend PhraseStore grouped(const ReorderingStore&);
  std::string path_;
  int num_scores_ = 0;
  bool with_target_ = true;
  Vocab vocab_;
  std::unordered_map<std::string, int> rows_;  // key -> row
  std::vector<double> scores_;
};

ReorderingStore read_reordering_table(const std::string& path, int num_scores, bool conditioned_on_target,
                                      SourceFilter* filter, const KeepSource& keep, const Progress& progress,
                                      const LineLimit& limit);

// Fills a ReorderingStore row by row: the mapped readers' one way (binary_table, probing_table).
// A key met twice keeps its last row, as the text reader keeps a key's last line.
class ReorderingStoreBuilder {
 public:
  ReorderingStoreBuilder(std::string path, int num_scores, bool with_target);
  // The source of the rows that follow.
  template <class Word>
  void source(const std::vector<Word>& words) {
    source_key_.clear();
    for (const auto& w : words) append(source_key_, w);
  }
  // A row of the current source: its target (ignored by a table conditioned on the source only)
  // and its num_scores scores.
  template <class Word>
  void row(const std::vector<Word>& target, const double* scores);

  ReorderingStore finish() { return std::move(out_); }

 private:
  template <class Word>
  void append(std::string& key, const Word& w) {
    const WordId id = out_.vocab_.intern(w);
    key.append(reinterpret_cast<const char*>(&id), sizeof id);
  }
  ReorderingStore out_;
  std::string source_key_;
};

template <class Word>
void ReorderingStoreBuilder::row(const std::vector<Word>& target, const double* scores) {
  std::string key = source_key_;
  if (out_.with_target_) {
    const WordId sep = -1;
    key.append(reinterpret_cast<const char*>(&sep), sizeof sep);
    for (const auto& w : target) append(key, w);
  }
  const auto [it, fresh] = out_.rows_.emplace(std::move(key), static_cast<int>(out_.rows_.size()));
  const std::size_t n = static_cast<std::size_t>(out_.num_scores_), at = static_cast<std::size_t>(it->second) * n;
  if (fresh) out_.scores_.resize(at + n);
  std::copy(scores, scores + n, out_.scores_.begin() + static_cast<std::ptrdiff_t>(at));
}

}  // namespace fstdecode
