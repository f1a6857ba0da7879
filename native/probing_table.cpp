#include "probing_table.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "hash.h"
#include "text_lines.h"

namespace fstdecode {

namespace {

constexpr std::uint64_t kBucketBytes = 16;                                        // {u64 key, u64 value}
constexpr std::uint64_t kPrefixOnly = std::numeric_limits<std::uint64_t>::max();  // a key with no record
constexpr std::uint64_t kPairHeader = 16;  // u32, u32, u16, u16, and 2 bytes of padding (sizeof, 4-aligned)
constexpr int kMaxScores = 1024;           // far above any table's: a bound on a corrupt config's count
// CreateProbingPT's stand-in for ln 1 = 0 under log_prob (StoreTarget::Append), as a float.
const float kLogOne = 0.0000000001f;

std::string_view text_of(const MappedFile& file) {
  return std::string_view(reinterpret_cast<const char*>(file.data()), file.size());
}

// A decimal number of ASCII digits (at most 20, no sign, no overflow), or false.
bool decimal(std::string_view digits, std::uint64_t& value) {
  if (digits.empty() || digits.size() > 20) return false;
  value = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return false;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    value = value * 10 + d;
  }
  return true;
}

// Calls on_line(number, text) for each '\n'-ended line of `text`; false when the last line has
// no '\n' (every writer of the folder's text files ends each line with one: a file cut short).
template <typename OnLine>
bool each_line(std::string_view text, OnLine&& on_line) {
  long number = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) return false;
    on_line(++number, text.substr(at, end - at));
    at = end + 1;
  }
  return true;
}

std::string shown(std::string_view line) {
  std::string out(line.substr(0, 60));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return "'" + out + (line.size() > 60 ? "...'" : "'");
}

// A target word as the writer can write one: not empty, no NUL, tab, space or CR (it splits
// phrases at spaces). Whether it is UTF-8 is asked when a lookup meets it (target_utf8_).
bool plain_word(std::string_view w) {
  return !w.empty() && w.find_first_of(std::string_view("\0\t \r", 4)) == std::string_view::npos;
}

}  // namespace

namespace {

// The error of a damaged file (or of its line: where = "path:N").
[[noreturn]] void damaged(const std::string& where, const std::string& what) {
  throw BinaryFormatError(where + ": " + what + "; the ProbingPT is corrupt or truncated: build it again with Moses' CreateProbingPT");
}

[[noreturn]] void damaged_line(const MappedFile& file, long number, const std::string& what) {
  damaged(file.path() + ":" + std::to_string(number), what);
}

// Maps folder/name; a missing or unreadable file is the folder's error, naming the file.
MappedFile map_member(const std::string& folder, const char* name) {
  try {
    return MappedFile(folder + "/" + name);
  } catch (const MappedFileError& e) {
    if (e.err == ENOENT)
      throw BinaryFormatError(folder + "/" + name + ": no such file, which a ProbingPT folder holds (config, "
                              "probing_hash.dat, TargetColl.dat, TargetVocab.dat, source_vocabids, Alignments.dat)");
    throw BinaryFormatError(e.what());
  }
}

}  // namespace

void ProbingTable::corrupt(const MappedFile& file, const std::string& what) const { damaged(file.path(), what); }

ProbingTable::ProbingTable(const std::string& folder)
    : folder_(folder),
      config_(read_config(folder)),
      hash_(map_member(folder, "probing_hash.dat")),
      targets_(map_member(folder, "TargetColl.dat")),
      target_vocab_(map_member(folder, "TargetVocab.dat")),
      source_vocab_(map_member(folder, "source_vocabids")),
      alignments_file_(map_member(folder, "Alignments.dat")) {
  if (hash_.size() != config_.buckets * kBucketBytes)
    corrupt(hash_, "its size is " + std::to_string(hash_.size()) + " bytes, where config's uniq_entries " +
                       std::to_string(config_.sources) + " gives " + std::to_string(config_.buckets * kBucketBytes));
  read_source_vocab();
  read_target_vocab();
  read_alignments();
}

ProbingTable::Config ProbingTable::read_config(const std::string& folder) {
  const MappedFile file = map_member(folder, "config");
  const std::string_view text = text_of(file);
  const std::string& where = file.path();
  Config config;
  // The older formats (CreateProbingPT before API_VERSION 15, e.g. a config of bare numbers) have
  // no API_VERSION line: refused by name before their lines are read as key-value pairs.
  const bool versioned = text.substr(0, 12) == "API_VERSION\t" || text.find("\nAPI_VERSION\t") != std::string_view::npos;
  if (!versioned)
    throw BinaryFormatError(where + ": a ProbingPT of an older format (its config has no API_VERSION line); fstdecode "
                            "reads API_VERSION " + std::to_string(kProbingApiVersion) +
                            ", which Moses' CreateProbingPT writes today: build the table again with it");
  std::unordered_map<std::string, std::uint64_t> values;
  const bool whole = each_line(text, [&](long number, std::string_view line) {
    const std::size_t tab = line.find('\t');
    std::uint64_t value = 0;
    if (tab == std::string_view::npos || tab == 0 || line.find('\t', tab + 1) != std::string_view::npos ||
        !decimal(line.substr(tab + 1), value))
      throw BinaryFormatError(where + ":" + std::to_string(number) + ": " + shown(line) +
                              " is not a line 'key<TAB>number' of a ProbingPT config");
    values[std::string(line.substr(0, tab))] = value;  // a key given twice keeps its last value, as in Moses
  });
  if (!whole) throw BinaryFormatError(where + ": its last line has no newline; the config is cut short");
  auto field = [&](const char* key, std::uint64_t most) {
    const auto found = values.find(key);
    if (found == values.end()) throw BinaryFormatError(where + ": no " + key + " line; a ProbingPT config has one");
    if (found->second > most)
      throw BinaryFormatError(where + ": " + key + " " + std::to_string(found->second) + " is out of range (at most " +
                              std::to_string(most) + ")");
    return found->second;
  };
  const std::uint64_t version = field("API_VERSION", std::numeric_limits<std::uint64_t>::max());
  if (version != kProbingApiVersion)
    throw BinaryFormatError(where + ": a ProbingPT of API_VERSION " + std::to_string(version) + "; fstdecode reads API_VERSION " +
                            std::to_string(kProbingApiVersion) + ", which Moses' CreateProbingPT writes today: build the table again with it");
  config.sources = static_cast<std::size_t>(field("uniq_entries", std::numeric_limits<int>::max()));  // Moses reads an int
  config.num_scores = static_cast<int>(field("num_scores", kMaxScores));
  config.num_lex_scores = static_cast<int>(field("num_lex_scores", kMaxScores));
  config.log_prob = field("log_prob", 1) == 1;
  if (config.num_scores == 0) throw BinaryFormatError(where + ": num_scores 0; a phrase table has at least one score");
  // The hash's size, as the writer and Moses' reader compute it (util::ProbingHashTable::Size
  // with the multiplier 1.2 as a float, and buckets not rounded).
  const auto n = static_cast<std::uint64_t>(config.sources);
  config.buckets =
      static_cast<std::size_t>(std::max<std::uint64_t>(n + 1, static_cast<std::uint64_t>(1.2f * static_cast<float>(n))));
  return config;
}

void ProbingTable::read_source_vocab() {
  const bool whole = each_line(text_of(source_vocab_), [&](long number, std::string_view line) {
    const std::size_t tab = line.rfind('\t');
    std::uint64_t id = 0;
    if (tab == std::string_view::npos || !decimal(line.substr(tab + 1), id))
      damaged_line(source_vocab_, number, shown(line) + " is not a line 'word<TAB>id'");
    // The id is the word's hash (the key's part): one that is not was not written by CreateProbingPT.
    if (id != murmur_hash64a(line.substr(0, tab)))
      damaged_line(source_vocab_, number, "the id of " + shown(line.substr(0, tab)) + " is not its hash");
    source_ids_.push_back(id);
  });
  if (!whole) corrupt(source_vocab_, "its last line has no newline");
  std::sort(source_ids_.begin(), source_ids_.end());
  source_ids_.erase(std::unique(source_ids_.begin(), source_ids_.end()), source_ids_.end());
}

void ProbingTable::read_target_vocab() {
  std::vector<std::pair<std::uint64_t, std::string_view>> read;
  const bool whole = each_line(text_of(target_vocab_), [&](long number, std::string_view line) {
    const std::size_t tab = line.rfind('\t');
    std::uint64_t id = 0;
    if (tab == std::string_view::npos || tab == 0 || !decimal(line.substr(tab + 1), id) || !plain_word(line.substr(0, tab)))
      damaged_line(target_vocab_, number, shown(line) + " is not a line 'word<TAB>id'");
    read.emplace_back(id, line.substr(0, tab));
  });
  if (!whole) corrupt(target_vocab_, "its last line has no newline");
  // The writer numbers words 1..n as it meets them and writes each once: any other set of ids is
  // a file cut at a line's end, or damaged.
  target_words_.assign(read.size() + 1, std::string_view());
  target_utf8_.assign(read.size() + 1, false);
  std::vector<bool> seen(read.size() + 1, false);
  for (const auto& [id, word] : read) {
    if (id == 0 || id > read.size() || seen[id])
      corrupt(target_vocab_, "its ids are not 1.." + std::to_string(read.size()) + ", each once (id " + std::to_string(id) + ")");
    seen[id] = true;
    target_words_[id] = word;
    target_utf8_[id] = valid_utf8(word);
  }
}

void ProbingTable::read_alignments() {
  std::vector<std::pair<std::uint64_t, Alignment>> read;
  const bool whole = each_line(text_of(alignments_file_), [&](long number, std::string_view line) {
    const std::size_t tab = line.find('\t');
    std::uint64_t id = 0;
    if (tab == std::string_view::npos || !decimal(line.substr(0, tab), id))
      damaged_line(alignments_file_, number, shown(line) + " is not a line 'id<TAB>positions'");
    std::vector<std::uint64_t> positions;
    std::string_view rest = line.substr(tab + 1);
    while (!rest.empty()) {
      const std::size_t space = std::min(rest.find(' '), rest.size());
      std::uint64_t position = 0;
      if (space > 0) {
        if (!decimal(rest.substr(0, space), position) || position > 0xffff)
          damaged_line(alignments_file_, number, shown(line) + " holds a position that is not a number below 65536");
        positions.push_back(position);
      }
      rest.remove_prefix(std::min(space + 1, rest.size()));
    }
    if (positions.size() % 2)
      damaged_line(alignments_file_, number, shown(line) + " holds an odd number of positions");
    // Moses keeps an alignment as a set of (source, target) points: sorted, each once.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> points;
    for (std::size_t i = 0; i < positions.size(); i += 2) points.emplace_back(positions[i], positions[i + 1]);
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    Alignment a;
    for (const auto& [s, t] : points) {
      if (!a.text.empty()) a.text.push_back(' ');
      a.text += std::to_string(s) + "-" + std::to_string(t);
      a.max_source = std::max(a.max_source, static_cast<long long>(s));
      a.max_target = std::max(a.max_target, static_cast<long long>(t));
    }
    read.emplace_back(id, std::move(a));
  });
  if (!whole) corrupt(alignments_file_, "its last line has no newline");
  alignments_.assign(read.size(), Alignment());
  std::vector<bool> seen(read.size(), false);
  for (auto& [id, a] : read) {
    if (id >= read.size() || seen[id])
      corrupt(alignments_file_, "its ids are not 0.." + std::to_string(static_cast<long long>(read.size()) - 1) + ", each once (id " + std::to_string(id) + ")");
    seen[id] = true;
    alignments_[id] = std::move(a);
  }
}

double ProbingTable::score(float stored) const {
  if (config_.log_prob) return stored == kLogOne ? 0.0 : stored_score(SCORE_LN, static_cast<double>(stored));
  return stored_score(SCORE_PROB, static_cast<double>(stored));
}

bool ProbingTable::source_id(std::string_view word, std::uint64_t& id) const {
  // The writer hashes each '|'-separated piece of a word (Moses' factors) and adds them up.
  id = 0;
  for (std::size_t at = 0;;) {
    const std::size_t bar = std::min(word.find('|', at), word.size());
    const std::uint64_t h = murmur_hash64a(word.substr(at, bar - at));
    if (!std::binary_search(source_ids_.begin(), source_ids_.end(), h)) return false;
    id += h;
    if (bar == word.size()) return true;
    at = bar + 1;
  }
}

bool ProbingTable::find(std::uint64_t key, std::uint64_t& value) const {
  if (key == 0 || config_.buckets == 0) return false;  // key 0 marks an empty bucket
  const unsigned char* base = hash_.data();
  std::size_t b = static_cast<std::size_t>(key % config_.buckets);
  for (std::size_t probes = 0; probes < config_.buckets; ++probes) {
    const std::uint64_t got = load64(base + b * kBucketBytes);
    if (got == key) {
      value = load64(base + b * kBucketBytes + 8);
      return true;
    }
    if (got == 0) return false;
    b = b + 1 == config_.buckets ? 0 : b + 1;
  }
  return false;
}

std::vector<ProbingTable::Hit> ProbingTable::kept(SourceFilter* filter, const KeepSource& keep) const {
  if (filter == nullptr)
    throw BinaryFormatError(folder_ + ": a ProbingPT holds no source phrases, only their hashes, so it is read for the "
                            "source phrases of an input only (filtered to it: fstdecode decode --filter, the default "
                            "for it); it cannot be read whole");
  std::vector<Hit> hits;
  std::unordered_set<std::string> seen;  // the n-grams found, words joined by ' '
  std::vector<std::uint64_t> ids;
  std::string joined;
  std::vector<std::string> words;
  for (const auto& sentence : filter->sentences()) {
    ids.assign(sentence.size(), 0);
    std::vector<bool> known(sentence.size());
    for (std::size_t i = 0; i < sentence.size(); ++i) known[i] = source_id(sentence[i], ids[i]);
    for (std::size_t i = 0; i < sentence.size(); ++i) {
      std::uint64_t key = 0;
      joined.clear();
      // A phrase with a word the table lacks has no key: longer phrases from i have none either.
      for (std::size_t j = i; j < sentence.size() && known[j]; ++j) {
        key += ids[j] << ((j - i) & 63);  // (a shift of 64 or more, undefined in C++, is x86's count mod 64)
        if (j > i) joined.push_back(' ');
        joined += sentence[j];
        std::uint64_t offset = 0;
        if (!find(key, offset) || offset == kPrefixOnly || seen.count(joined)) continue;
        Hit hit{{sentence.begin() + static_cast<long>(i), sentence.begin() + static_cast<long>(j + 1)}, offset};
        if (keep) {
          words.assign(hit.words.begin(), hit.words.end());
          if (!keep(words)) continue;
        }
        seen.insert(joined);
        hits.push_back(std::move(hit));
      }
    }
  }
  // The text file's order: its sources' records follow one another in TargetColl.dat.
  std::stable_sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) { return a.offset < b.offset; });
  return hits;
}

template <typename OnSource, typename OnPair>
void ProbingTable::walk(SourceFilter* filter, const KeepSource& keep, OnSource&& on_source, OnPair&& on_pair) const {
  const unsigned char* base = targets_.data();
  const std::uint64_t size = targets_.size();
  const std::uint64_t m = static_cast<std::uint64_t>(config_.num_scores + config_.num_lex_scores);
  std::vector<float> stored(m);
  std::vector<std::string_view> target;
  for (const Hit& hit : kept(filter, keep)) {
    if (hit.offset > size || size - hit.offset < 8) corrupt(targets_, "a source's record starts past the end of the file");
    std::uint64_t at = hit.offset + 8;
    const std::uint64_t count = load64(base + hit.offset);
    if (count == 0 || count > (size - at) / (kPairHeader + 4 * m))
      corrupt(targets_, "a source's record claims " + std::to_string(count) + " target phrases, which the file cannot hold");
    on_source(hit.words);
    for (std::uint64_t k = 0; k < count; ++k) {
      if (size - at < kPairHeader + 4 * m) corrupt(targets_, "a target phrase runs past the end of the file");
      const unsigned char* p = base + at;
      const std::uint32_t align = load32(p), align_nonterm = load32(p + 4);
      std::uint16_t length;
      std::memcpy(&length, p + 8, sizeof length);
      if (length == 0) corrupt(targets_, "a target phrase without words");
      if (size - at < kPairHeader + 4 * m + 4ULL * length) corrupt(targets_, "a target phrase runs past the end of the file");
      if (align >= alignments_.size() || align_nonterm >= alignments_.size())
        corrupt(targets_, "a target phrase's alignment id " + std::to_string(std::max(align, align_nonterm)) +
                              " is not one of Alignments.dat's " + std::to_string(alignments_.size()));
      std::memcpy(stored.data(), p + kPairHeader, 4 * m);
      for (const float v : stored)
        if (!std::isfinite(v) || (!config_.log_prob && v < 0.0f))
          corrupt(targets_, "a score is " + std::string(std::isnan(v) ? "not a number" : !std::isfinite(v) ? "infinite" : "a negative probability"));
      target.clear();
      const unsigned char* ids = p + kPairHeader + 4 * m;
      for (std::uint16_t w = 0; w < length; ++w) {
        const std::uint32_t id = load32(ids + 4 * w);
        if (id == 0 || id >= target_words_.size())
          corrupt(targets_, "a target word id " + std::to_string(id) + " is not one of TargetVocab.dat's");
        // A table of another encoding (Latin-1, say) is read until a lookup meets a word that is not
        // UTF-8: its source words are only hashes, which an input's UTF-8 words never match, and
        // its pairs are refused as the text reader refuses their lines.
        if (!target_utf8_[id])
          throw BinaryFormatError(target_vocab_.path() + ": the target word of id " + std::to_string(id) +
                                  " is not UTF-8; fstdecode reads UTF-8 tables (convert the text table, e.g. with "
                                  "iconv, and build the ProbingPT again)");
        target.push_back(target_words_[id]);
        if (target.back() == "<s>" || target.back() == "</s>")
          throw BinaryFormatError(targets_.path() + ": a target phrase holds the LM sentence marker " + std::string(target.back()) +
                                  ", which is no word of a translation (the text table's line is refused too)");
      }
      const Alignment& a = alignments_[align];
      if (a.max_source >= static_cast<long long>(hit.words.size()) || a.max_target >= static_cast<long long>(length))
        corrupt(targets_, "an alignment point lies outside its phrase pair");
      on_pair(target, static_cast<const float*>(stored.data()), a.text);
      at += kPairHeader + 4 * m + 4ULL * length;
    }
  }
}

PhraseStore ProbingTable::phrases(SourceFilter* filter, const KeepSource& keep) const {
  PhraseStoreBuilder out(folder_, config_.num_scores);
  std::vector<double> scores(static_cast<std::size_t>(config_.num_scores));
  walk(
      filter, keep, [&](const std::vector<std::string_view>& words) { out.source(words); },
      [&](const std::vector<std::string_view>& target, const float* stored, const std::string& alignment) {
        for (std::size_t c = 0; c < scores.size(); ++c) scores[c] = score(stored[c]);
        out.pair(target, scores.data(), alignment);
      });
  return out.finish(static_cast<long>(config_.sources));
}

ReorderingStore ProbingTable::reordering(SourceFilter* filter, const KeepSource& keep, int property_index) const {
  if (property_index < 0 || property_index >= config_.num_lex_scores)
    throw BinaryFormatError(folder_ + ": property-index=" + std::to_string(property_index) + " but the ProbingPT holds " +
                            std::to_string(config_.num_lex_scores) + " reordering score(s) a pair (its config's num_lex_scores)" +
                            (config_.num_lex_scores ? "; give 0.." + std::to_string(config_.num_lex_scores - 1) : std::string()));
  ReorderingStoreBuilder out(folder_, config_.num_lex_scores - property_index, true);
  const std::size_t from = static_cast<std::size_t>(config_.num_scores + property_index),
                    to = static_cast<std::size_t>(config_.num_scores + config_.num_lex_scores);
  std::vector<double> row(to - from);
  walk(
      filter, keep, [&](const std::vector<std::string_view>& words) { out.source(words); },
      [&](const std::vector<std::string_view>& target, const float* stored, const std::string&) {
        for (std::size_t c = from; c < to; ++c) row[c - from] = score(stored[c]);
        out.row(target, row.data());
      });
  return out.finish();
}

}  // namespace fstdecode
