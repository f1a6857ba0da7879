#include "binary_table.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <utility>

#include "decimal_code.h"
#include "hash.h"
#include "text_lines.h"

namespace fstdecode {

namespace {

constexpr char kMagic[16] = {'f', 's', 't', 'd', 'e', 'c', 'o', 'd', 'e', ' ', 't', 'a', 'b', 'l', 'e', '\n'};
constexpr std::uint32_t kByteOrder = 0x01020304;

enum Section {
  S_PATH, S_WORD_OFF, S_WORD_BLOB, S_WORD_HASH, S_SOURCE_HASH, S_RECORD_OFF, S_RECORDS, S_COLUMNS, S_ALIGN_OFF,
  S_ALIGN_BLOB, kSections
};

// The format's hashes (part of the format: changing them changes kBinaryTableVersion).
std::uint64_t word_hash(std::string_view w) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : w) h = (h ^ c) * 0x100000001b3ULL;
  return mix(h);
}

template <typename Ids>
std::uint64_t source_hash(const Ids& ids, std::size_t n) {
  std::uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (std::size_t i = 0; i < n; ++i) h = mix(h ^ static_cast<std::uint32_t>(ids[i])) + 0x9e3779b97f4a7c15ULL;
  return mix(h);
}

// Whether `text` is an alignment as the text reader keeps it ("i-j" points of ASCII digits,
// single spaces), every point inside a pair of `source` and `target` words: a store's alignment
// is parsed by Python's int() and indexes the pair's words.
bool valid_alignment(std::string_view text, std::uint64_t source, std::uint64_t target) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find(' ', at), text.size());
    const std::string_view point = text.substr(at, end - at);
    const std::size_t dash = point.find('-');
    if (dash == std::string_view::npos) return false;
    std::uint64_t bound = source;
    for (const std::string_view digits : {point.substr(0, dash), point.substr(dash + 1)}) {
      if (digits.empty() || digits.size() > 9) return false;
      std::uint64_t value = 0;
      for (const char c : digits) {
        if (c < '0' || c > '9') return false;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
      }
      if (value >= bound) return false;
      bound = target;
    }
    at = end + 1;
    if (end + 1 == text.size()) return false;  // a trailing space
  }
  return true;
}

// A hash table's buckets for n keys: a power of two, at least 16 and n / `load`. The vocabulary
// is loaded at most 1/2, the sources at most 2/3: on the full-size model's 2.3 million sources,
// 4 million buckets instead of 8 (16.8 MB less a table), for a probe or two more on a miss.
std::uint64_t capacity_for(std::size_t n, double load) {
  std::uint64_t cap = 16;
  while (static_cast<double>(cap) * load < static_cast<double>(n)) cap *= 2;
  return cap;
}

// Each column's code: the (format, exponent) that writes a sample of its scores (about 4,096
// pairs, spread over the table) in the fewest bytes.
std::vector<ColumnCode> choose_columns(const PhraseStore& store) {
  const std::size_t m = static_cast<std::size_t>(store.num_scores()), pairs = store.pairs();
  const std::size_t stride = std::max<std::size_t>(1, pairs / 4096);
  std::vector<ColumnCode> columns(m);
  std::string scratch;
  for (std::size_t c = 0; c < m; ++c) {
    std::size_t best = SIZE_MAX;
    for (const ScoreFormat format : {SCORE_PROB, SCORE_LN, SCORE_LOG10}) {
      for (const bool negative : {false, true}) {
        if (negative && format == SCORE_PROB) continue;  // probabilities are never negative
        for (unsigned e = 0; e <= kMaxDecimalExponent; ++e) {
          const ColumnCode column{format, e, negative};
          scratch.clear();
          for (std::size_t p = 0; p < pairs && scratch.size() < best; p += stride)
            column.put(scratch, store.scores(static_cast<int>(p))[c]);
          if (scratch.size() < best) best = scratch.size(), columns[c] = column;
        }
      }
    }
  }
  return columns;
}

}  // namespace

struct BinaryTable::Header {
  char magic[16];
  std::uint32_t byte_order, version, kind, num_scores, max_source_length, reserved;
  std::uint64_t words, sources, pairs, alignments, word_cap, source_cap, file_size;
  std::int64_t stamp_size, stamp_mtime_ns;
  std::uint64_t begin[kSections], end[kSections];
};
static_assert(sizeof(BinaryTable::Header) % 8 == 0, "sections start 8-aligned");

// ---------------------------------------------------------------------------------------------
// Writing

namespace {

class SectionWriter {
 public:
  explicit SectionWriter(const std::string& path) : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
    if (!out_) fail();
    const BinaryTable::Header blank{};
    write(&blank, sizeof blank);
  }
  template <typename T>
  void section(BinaryTable::Header& h, int s, const std::vector<T>& v) {
    section(h, s, v.data(), v.size() * sizeof(T));
  }
  void section(BinaryTable::Header& h, int s, const void* data, std::size_t n) {
    static const char zeros[8] = {};
    if (at_ % 8) write(zeros, 8 - at_ % 8);
    h.begin[s] = at_;
    write(data, n);
    h.end[s] = at_;
  }
  void finish(BinaryTable::Header& h) {
    h.file_size = at_;
    out_.seekp(0);
    out_.write(reinterpret_cast<const char*>(&h), sizeof h);
    out_.flush();
    if (!out_) fail();
    out_.close();
    if (!out_) fail();
  }

 private:
  void write(const void* data, std::size_t n) {
    out_.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    if (!out_) fail();
    at_ += n;
  }
  [[noreturn]] void fail() { throw std::runtime_error(path_ + ": cannot write: " + std::strerror(errno ? errno : EIO)); }
  std::string path_;
  std::ofstream out_;
  std::uint64_t at_ = 0;
};

// The ids 0.. of `uses.size()` things renumbered most used first (ties by id), so that the
// varints of the most frequent words and alignments take one byte: new id by old.
std::vector<std::uint32_t> by_frequency(const std::vector<std::uint64_t>& uses) {
  std::vector<std::uint32_t> order(uses.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return uses[a] > uses[b]; });
  std::vector<std::uint32_t> renamed(uses.size());
  for (std::size_t i = 0; i < order.size(); ++i) renamed[order[i]] = static_cast<std::uint32_t>(i);
  return renamed;
}

}  // namespace

void write_binary_table(const PhraseStore& store, int kind, const SourceStamp& stamp, const std::string& path) {
  BinaryTable::Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.byte_order = kByteOrder;
  h.version = kBinaryTableVersion;
  h.kind = static_cast<std::uint32_t>(kind);
  h.num_scores = static_cast<std::uint32_t>(store.num_scores_);
  h.max_source_length = static_cast<std::uint32_t>(store.max_source_length_);
  h.words = store.vocab_.size();
  h.sources = store.sources();
  h.pairs = store.pairs();
  h.alignments = store.alignments_.size();
  h.stamp_size = stamp.size;
  h.stamp_mtime_ns = stamp.mtime_ns;
  // Words and alignments renumbered by frequency (the file's ids are its own: a lookup interns
  // the words it meets, and numbers the alignments, in the order it meets them).
  std::vector<std::uint64_t> uses(h.words, 0);
  for (const auto w : store.source_words_) ++uses[static_cast<std::size_t>(w)];
  for (const auto w : store.target_words_) ++uses[static_cast<std::size_t>(w)];
  const std::vector<std::uint32_t> word_id = by_frequency(uses);
  std::vector<std::uint32_t> word_of(h.words);
  for (std::size_t i = 0; i < h.words; ++i) word_of[word_id[i]] = static_cast<std::uint32_t>(i);
  uses.assign(h.alignments, 0);
  for (const auto a : store.alignment_) ++uses[static_cast<std::size_t>(a)];
  const std::vector<std::uint32_t> alignment_id = by_frequency(uses);
  std::vector<std::uint32_t> alignment_of(h.alignments);
  for (std::size_t i = 0; i < h.alignments; ++i) alignment_of[alignment_id[i]] = static_cast<std::uint32_t>(i);
  // The vocabulary: offsets, bytes, hash.
  std::vector<std::uint64_t> word_off{0};
  std::string blob;
  for (std::size_t i = 0; i < h.words; ++i) {
    blob += store.vocab_.word(static_cast<WordId>(word_of[i]));
    word_off.push_back(blob.size());
  }
  h.word_cap = capacity_for(h.words, 0.5);
  std::vector<std::uint32_t> word_buckets(h.word_cap, 0);
  for (std::uint32_t i = 0; i < h.words; ++i) {
    std::uint64_t b = word_hash(store.vocab_.word(static_cast<WordId>(word_of[i]))) & (h.word_cap - 1);
    while (word_buckets[b] != 0) b = (b + 1) & (h.word_cap - 1);
    word_buckets[b] = i + 1;
  }
  // The sources' records and their hash.
  const std::vector<ColumnCode> columns = choose_columns(store);
  const std::size_t m = static_cast<std::size_t>(store.num_scores_);
  const bool phrases = kind == BINARY_PHRASES;
  h.source_cap = capacity_for(h.sources, 2.0 / 3.0);
  std::vector<std::uint32_t> source_buckets(h.source_cap, 0);
  std::vector<std::uint64_t> record_off{0};
  std::string records;
  std::vector<std::uint32_t> ids;
  for (std::uint32_t s = 0; s < h.sources; ++s) {
    ids.clear();
    for (auto i = store.source_off_[s]; i < store.source_off_[s + 1]; ++i)
      ids.push_back(word_id[static_cast<std::size_t>(store.source_words_[static_cast<std::size_t>(i)])]);
    std::uint64_t b = source_hash(ids, ids.size()) & (h.source_cap - 1);
    while (source_buckets[b] != 0) b = (b + 1) & (h.source_cap - 1);
    source_buckets[b] = s + 1;
    put_varint(records, ids.size());
    for (const auto id : ids) put_varint(records, id);
    put_varint(records, static_cast<std::uint64_t>(store.pair_off_[s + 1] - store.pair_off_[s]));
    for (auto p = static_cast<std::size_t>(store.pair_off_[s]); p < static_cast<std::size_t>(store.pair_off_[s + 1]); ++p) {
      const auto t0 = static_cast<std::size_t>(store.target_off_[p]), t1 = static_cast<std::size_t>(store.target_off_[p + 1]);
      put_varint(records, t1 - t0);
      for (auto i = t0; i < t1; ++i) put_varint(records, word_id[static_cast<std::size_t>(store.target_words_[i])]);
      if (phrases) put_varint(records, alignment_id[static_cast<std::size_t>(store.alignment_[p])]);
      for (std::size_t c = 0; c < m; ++c) columns[c].put(records, store.scores_[p * m + c]);
    }
    record_off.push_back(records.size());
  }
  std::string column_bytes;
  for (const ColumnCode& c : columns)
    column_bytes += {static_cast<char>(c.format | (c.negative ? 0x80 : 0)), static_cast<char>(c.exponent)};
  std::vector<std::uint64_t> align_off{0};
  std::string align_blob;
  for (std::size_t i = 0; i < h.alignments; ++i) {
    align_blob += store.alignments_[alignment_of[i]];
    align_off.push_back(align_blob.size());
  }
  SectionWriter out(path);
  out.section(h, S_PATH, stamp.path.data(), stamp.path.size());
  out.section(h, S_WORD_OFF, word_off);
  out.section(h, S_WORD_BLOB, blob.data(), blob.size());
  out.section(h, S_WORD_HASH, word_buckets);
  out.section(h, S_SOURCE_HASH, source_buckets);
  out.section(h, S_RECORD_OFF, record_off);
  out.section(h, S_RECORDS, records.data(), records.size());
  out.section(h, S_COLUMNS, column_bytes.data(), column_bytes.size());
  out.section(h, S_ALIGN_OFF, align_off);
  out.section(h, S_ALIGN_BLOB, align_blob.data(), align_blob.size());
  out.finish(h);
}

PhraseStore grouped(const ReorderingStore& store) {
  // Rows sorted by key: a source's rows are consecutive (its ids, then -1 and the target's).
  std::vector<std::pair<std::string_view, int>> rows;
  rows.reserve(store.rows_.size());
  for (const auto& [key, row] : store.rows_) rows.emplace_back(key, row);
  std::sort(rows.begin(), rows.end());
  PhraseStore out;
  out.path_ = store.path_;
  out.num_scores_ = store.num_scores_;
  out.vocab_ = store.vocab_;
  const std::size_t m = static_cast<std::size_t>(store.num_scores_);
  std::string_view last;
  bool first = true;
  for (const auto& [key, row] : rows) {
    std::vector<std::int32_t> ids(key.size() / 4);
    std::memcpy(ids.data(), key.data(), ids.size() * 4);
    const auto sep = std::find(ids.begin(), ids.end(), -1);
    const std::size_t n_source = static_cast<std::size_t>(sep - ids.begin());
    const std::string_view source_key = key.substr(0, n_source * 4);
    if (first || source_key != last) {
      first = false;
      last = source_key;
      out.source_words_.insert(out.source_words_.end(), ids.begin(), sep);
      out.source_off_.push_back(static_cast<std::int32_t>(out.source_words_.size()));
      out.pair_off_.push_back(out.pair_off_.back());
      out.index_.emplace(std::string(source_key), static_cast<int>(out.source_off_.size() - 2));
      out.max_source_length_ = std::max(out.max_source_length_, static_cast<int>(n_source));
    }
    if (sep != ids.end()) out.target_words_.insert(out.target_words_.end(), sep + 1, ids.end());
    out.target_off_.push_back(static_cast<std::int64_t>(out.target_words_.size()));
    out.scores_.insert(out.scores_.end(), store.scores_.begin() + static_cast<long>(static_cast<std::size_t>(row) * m),
                       store.scores_.begin() + static_cast<long>(static_cast<std::size_t>(row + 1) * m));
    out.alignment_.push_back(0);
    ++out.pair_off_.back();
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reading

// A file of at least "fstdec" that is a prefix of the magic is a binarized table cut short.
bool is_binary_table(const std::string& path) { return starts_like(path, kMagic, sizeof kMagic, 6); }

void BinaryTable::corrupt(const std::string& what) const {
  throw BinaryFormatError(path() + ": " + what + "; the binarized table is corrupt or truncated: run fstdecode binarize again");
}

BinaryTable::BinaryTable(const std::string& path) : file_(path) {
  if (file_.size() < sizeof(Header) || std::memcmp(file_.data(), kMagic, sizeof kMagic) != 0) {
    if ((file_.size() >= sizeof kMagic && std::memcmp(file_.data(), kMagic, sizeof kMagic) == 0) ||
        cut_magic(file_.data(), file_.size(), kMagic, sizeof kMagic))
      corrupt("its header is cut short");
    throw BinaryFormatError(path + ": not a binarized table (fstdecode binarize writes them)");
  }
  header_ = reinterpret_cast<const Header*>(file_.data());
  const Header& h = *header_;
  if (h.byte_order != kByteOrder) throw BinaryFormatError(path + ": this binarized table was built on a machine of another byte order");
  if (h.version != kBinaryTableVersion)
    throw BinaryFormatError(path + ": this binarized table has format version " + std::to_string(h.version) +
                            " and this fstdecode reads version " + std::to_string(kBinaryTableVersion) +
                            "; run fstdecode binarize again");
  if (h.kind < BINARY_PHRASES || h.kind > BINARY_REORDERING_F) corrupt("unknown kind " + std::to_string(h.kind));
  if (h.file_size != file_.size())
    corrupt("its size is " + std::to_string(file_.size()) + " bytes, but it was written with " + std::to_string(h.file_size));
  for (int s = 0; s < kSections; ++s)
    if (h.begin[s] > h.end[s] || h.end[s] > h.file_size || h.begin[s] < sizeof(Header) || h.begin[s] % 8)
      corrupt("section " + std::to_string(s) + " lies outside the file");
  auto sized = [&](int s, std::uint64_t count, std::uint64_t width) {
    if (count > (h.file_size / width) + 1 || h.end[s] - h.begin[s] != count * width)
      corrupt("section " + std::to_string(s) + " has the wrong size");
  };
  sized(S_WORD_OFF, h.words + 1, 8);
  sized(S_WORD_HASH, h.word_cap, 4);
  sized(S_SOURCE_HASH, h.source_cap, 4);
  sized(S_RECORD_OFF, h.sources + 1, 8);
  if (h.num_scores > 1024) corrupt("it claims " + std::to_string(h.num_scores) + " scores a pair");
  sized(S_COLUMNS, h.num_scores, 2);
  sized(S_ALIGN_OFF, h.alignments + 1, 8);
  if (h.word_cap == 0 || (h.word_cap & (h.word_cap - 1)) || h.source_cap == 0 || (h.source_cap & (h.source_cap - 1)))
    corrupt("a hash table's size is not a power of two");
  const unsigned char* column = file_.data() + h.begin[S_COLUMNS];
  for (std::uint32_t c = 0; c < h.num_scores; ++c, column += 2) {
    if ((column[0] & 0x7f) > SCORE_LOG10 || column[1] > kMaxDecimalExponent) corrupt("a score column's code is unknown");
    columns_.push_back(ColumnCode{static_cast<ScoreFormat>(column[0] & 0x7f), column[1], (column[0] & 0x80) != 0});
  }
  stamp_.path.assign(reinterpret_cast<const char*>(file_.data() + h.begin[S_PATH]), h.end[S_PATH] - h.begin[S_PATH]);
  if (!valid_utf8(stamp_.path) || stamp_.path.find('\0') != std::string::npos) corrupt("its source path is not a path");
  stamp_.size = h.stamp_size;
  stamp_.mtime_ns = h.stamp_mtime_ns;
}

int BinaryTable::kind() const { return static_cast<int>(header_->kind); }
int BinaryTable::num_scores() const { return static_cast<int>(header_->num_scores); }
int BinaryTable::max_source_length() const { return static_cast<int>(header_->max_source_length); }
std::size_t BinaryTable::sources() const { return static_cast<std::size_t>(header_->sources); }
std::size_t BinaryTable::entries() const { return static_cast<std::size_t>(header_->pairs); }

template <typename T>
const T* BinaryTable::section(int s, std::size_t& count) const {
  count = static_cast<std::size_t>((header_->end[s] - header_->begin[s]) / sizeof(T));
  return reinterpret_cast<const T*>(file_.data() + header_->begin[s]);
}

std::string_view BinaryTable::word(std::uint64_t id) const {
  std::size_t n_off, n_blob;
  const auto* off = section<std::uint64_t>(S_WORD_OFF, n_off);
  const auto* blob = section<char>(S_WORD_BLOB, n_blob);
  if (id >= header_->words) corrupt("a word id is out of range");
  if (off[id] > off[id + 1] || off[id + 1] > n_blob) corrupt("a word's bytes lie outside their section");
  const std::string_view w(blob + off[id], off[id + 1] - off[id]);
  if (!valid_utf8(w)) corrupt("a word is not UTF-8");
  return w;
}

std::int64_t BinaryTable::find_word(std::string_view w) const {
  std::size_t cap;
  const auto* buckets = section<std::uint32_t>(S_WORD_HASH, cap);
  for (std::uint64_t b = word_hash(w) & (cap - 1), probes = 0; probes < cap; b = (b + 1) & (cap - 1), ++probes) {
    const std::uint32_t v = buckets[b];
    if (v == 0) return -1;
    if (word(v - 1) == w) return v - 1;
  }
  return -1;
}

// A source's record, read front to back; every read is bounds-checked (a corrupt file's error).
class BinaryTable::Record {
 public:
  Record(const BinaryTable& table, std::uint64_t s) : table_(table) {
    std::size_t n_off, n_bytes;
    const auto* off = table.section<std::uint64_t>(S_RECORD_OFF, n_off);
    const auto* bytes = table.section<unsigned char>(S_RECORDS, n_bytes);
    if (s >= table.sources()) table.corrupt("a source id is out of range");  // n_off = sources + 1
    if (off[s] > off[s + 1] || off[s + 1] > n_bytes) table.corrupt("a source's record lies outside its section");
    at_ = bytes + off[s];
    end_ = bytes + off[s + 1];
  }
  std::uint64_t number() {
    std::uint64_t v;
    if (!get_varint(at_, end_, v)) table_.corrupt("a source's record is cut short");
    return v;
  }
  double score(const ColumnCode& column) {
    double y;
    if (!get_decimal(at_, end_, column.exponent, column.negative, column, y))
      table_.corrupt("a score's code is cut short or invalid");
    return y;
  }
  void finish() const {
    if (at_ != end_) table_.corrupt("a source's record has bytes left over");
  }

 private:
  const BinaryTable& table_;
  const unsigned char* at_;
  const unsigned char* end_;
};

std::int64_t BinaryTable::find_source(const std::vector<std::string_view>& words) const {
  std::vector<std::uint32_t> ids;
  for (const auto& w : words) {
    const std::int64_t id = find_word(w);
    if (id < 0) return -1;
    ids.push_back(static_cast<std::uint32_t>(id));
  }
  std::size_t cap;
  const auto* buckets = section<std::uint32_t>(S_SOURCE_HASH, cap);
  for (std::uint64_t b = source_hash(ids, ids.size()) & (cap - 1), probes = 0; probes < cap; b = (b + 1) & (cap - 1), ++probes) {
    const std::uint32_t v = buckets[b];
    if (v == 0) return -1;
    Record record(*this, v - 1);
    if (record.number() != ids.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < ids.size() && same; ++i) same = record.number() == ids[i];
    if (same) return v - 1;
  }
  return -1;
}

std::vector<std::uint32_t> BinaryTable::kept_sources(SourceFilter* filter, const KeepSource& keep) const {
  std::vector<std::uint32_t> kept;
  if (filter != nullptr) {
    const int longest = max_source_length();
    std::vector<std::string_view> words;
    for (const auto& sentence : filter->sentences()) {
      for (std::size_t i = 0; i < sentence.size(); ++i) {
        words.clear();
        for (std::size_t j = i; j < sentence.size() && static_cast<int>(j - i) < longest; ++j) {
          words.push_back(sentence[j]);
          const std::int64_t s = find_source(words);
          if (s >= 0) kept.push_back(static_cast<std::uint32_t>(s));
        }
      }
    }
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  } else {
    kept.resize(sources());
    for (std::size_t s = 0; s < kept.size(); ++s) kept[s] = static_cast<std::uint32_t>(s);
  }
  if (!keep) return kept;
  std::vector<std::uint32_t> asked;
  std::vector<std::string> words;
  for (const std::uint32_t s : kept) {
    Record record(*this, s);
    words.clear();
    for (std::uint64_t n = record.number(); n > 0; --n) words.emplace_back(word(record.number()));
    if (keep(words)) asked.push_back(s);
  }
  return asked;
}

template <typename OnSource, typename OnEntry>
void BinaryTable::walk(SourceFilter* filter, const KeepSource& keep, OnSource&& on_source, OnEntry&& on_entry) const {
  std::size_t n_aoff, n_ablob;
  const auto* aoff = section<std::uint64_t>(S_ALIGN_OFF, n_aoff);
  (void)n_aoff;
  const auto* ablob = section<char>(S_ALIGN_BLOB, n_ablob);
  const bool phrases = kind() == BINARY_PHRASES;  // a reordering table's targets may be empty (`f`)
  std::vector<std::string_view> source, target;
  std::vector<double> scores(columns_.size());
  for (const std::uint32_t s : kept_sources(filter, keep)) {
    Record record(*this, s);
    // Each loop below reads at least one byte a turn, so a corrupt count ends at the record's end.
    source.clear();
    for (std::uint64_t n = record.number(); n > 0; --n) source.push_back(word(record.number()));
    std::uint64_t entries = record.number();
    if (source.empty() || entries == 0) corrupt("a source phrase without words or entries");
    on_source(source);
    for (; entries > 0; --entries) {
      target.clear();
      for (std::uint64_t n = record.number(); n > 0; --n) target.push_back(word(record.number()));
      if (phrases && target.empty()) corrupt("a phrase pair without target words");
      std::string_view alignment;
      if (phrases) {
        const std::uint64_t a = record.number();
        if (a >= header_->alignments || aoff[a] > aoff[a + 1] || aoff[a + 1] > n_ablob)  // n_aoff = alignments + 1
          corrupt("an alignment lies outside its section");
        alignment = std::string_view(ablob + aoff[a], aoff[a + 1] - aoff[a]);
        if (!valid_alignment(alignment, source.size(), target.size())) corrupt("an alignment is malformed");
      }
      for (std::size_t c = 0; c < columns_.size(); ++c) scores[c] = record.score(columns_[c]);
      on_entry(target, static_cast<const double*>(scores.data()), alignment);
    }
    record.finish();
  }
}

PhraseStore BinaryTable::phrases(SourceFilter* filter, const KeepSource& keep) const {
  if (kind() != BINARY_PHRASES) throw BinaryFormatError(path() + ": a binarized reordering table, not a phrase table");
  PhraseStoreBuilder out(path(), num_scores());
  walk(
      filter, keep,
      [&](const std::vector<std::string_view>& words) {
        if (!out.source(words)) corrupt("a source phrase is listed twice");
      },
      [&](const std::vector<std::string_view>& target, const double* scores, std::string_view alignment) {
        out.pair(target, scores, alignment);
      });
  return out.finish(static_cast<long>(sources()));
}

ReorderingStore BinaryTable::reordering(SourceFilter* filter, const KeepSource& keep) const {
  if (kind() == BINARY_PHRASES) throw BinaryFormatError(path() + ": a binarized phrase table, not a reordering table");
  ReorderingStoreBuilder out(path(), num_scores(), kind() == BINARY_REORDERING_FE);
  walk(
      filter, keep, [&](const std::vector<std::string_view>& words) { out.source(words); },
      [&](const std::vector<std::string_view>& target, const double* scores, std::string_view) { out.row(target, scores); });
  return out.finish();
}

}  // namespace fstdecode
