#include "compact_table.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>
#include <utility>

#include "text_lines.h"

namespace fstdecode {

namespace {

constexpr std::uint32_t kFingerprintSeed = 100000;  // BlockHashIndex::GetFprint's seed
constexpr std::uint64_t kMaxScores = 1024;
constexpr char kSeparator[] = " ||| ";
enum Coding : std::uint32_t { CODING_NONE = 0, CODING_RENC = 1, CODING_PRENC = 2 };

// Simple-9 word types 1..9: (bits per value, values per word).
constexpr unsigned kSimple9[10][2] = {{0, 0}, {28, 1}, {14, 2}, {9, 3}, {7, 4}, {5, 5}, {4, 7}, {3, 9}, {2, 14}, {1, 28}};

std::string join_key(const std::vector<std::string_view>& words) {
  std::string key;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i) key += ' ';
    key.append(words[i]);
  }
  return key + kSeparator;
}

// The finite float a score code's symbol holds (checked at open).
float float_at(const unsigned char* p) {
  float f;
  std::memcpy(&f, p, sizeof f);
  return f;
}

void check_score_code(const HuffmanCode& code) {
  for (std::uint64_t i = 0; i < code.symbols(); ++i)
    if (!std::isfinite(float_at(code.symbol(i)))) compact_fault("a score code holds a number that is not finite");
}

std::size_t occurrences(std::string_view text, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

std::uint32_t murmur3_32(std::string_view key, std::uint32_t seed) {
  constexpr std::uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
  auto rotl = [](std::uint32_t x, int r) { return (x << r) | (x >> (32 - r)); };
  auto scramble = [&](std::uint32_t k) { return rotl(k * c1, 15) * c2; };
  const auto* p = reinterpret_cast<const unsigned char*>(key.data());
  const std::size_t blocks = key.size() / 4;
  std::uint32_t h = seed;
  for (std::size_t i = 0; i < blocks; ++i) {
    h ^= scramble(word32(p, i));
    h = rotl(h, 13) * 5 + 0xe6546b64u;
  }
  std::uint32_t tail = 0;
  for (std::size_t i = key.size() & 3; i > 0; --i) tail = (tail << 8) | p[blocks * 4 + i - 1];
  if (key.size() & 3) h ^= scramble(tail);
  h ^= static_cast<std::uint32_t>(key.size());
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

// ---------------------------------------------------------------------------------------------
// String vectors

MonotonicPositions::MonotonicPositions(ByteCursor& in, std::size_t pos_width) {
  if (in.u8("a string vector") != 1) compact_fault("a string vector was not finished when saved");
  size_ = in.u64("a string vector");
  const std::uint64_t last = pos_width == 8 ? in.u64("a string vector") : in.u32("a string vector");
  diffs_ = in.u64("a string vector");
  diff_ = in.take_array(diffs_, 4, "a string vector's positions");
  anchors_ = in.u64("a string vector");
  anchor_ = in.take_array(anchors_, 4, "a string vector's positions");
  if (anchors_ != (size_ + 31) / 32) compact_fault("a string vector's positions have the wrong size");
  for (std::uint64_t a = 0; a < anchors_; ++a)
    if (word32(anchor_, a) >= diffs_) compact_fault("a string vector's positions are damaged");
  if (size_ > 0 && at(size_ - 1) != last) compact_fault("a string vector's positions are damaged");
}

std::uint64_t MonotonicPositions::at(std::uint64_t i) const {
  if (i >= size_) compact_fault("a string vector index is out of range");
  std::uint64_t j = word32(anchor_, i / 32), v = 0;
  // The group's first position: a varint of 31-bit groups, the top bit saying "more".
  for (unsigned shift = 0;; shift += 31) {
    if (j >= diffs_ || shift > 62) compact_fault("a string vector's positions are damaged");
    const std::uint32_t w = word32(diff_, j++);
    v |= static_cast<std::uint64_t>(w & 0x7fffffffu) << shift;
    if (!(w & 0x80000000u)) break;
  }
  // Then the differences up to position i, in Simple-9 words (the first value in the top bits).
  for (std::uint64_t got = 0, need = i % 32; got < need;) {
    if (j >= diffs_) compact_fault("a string vector's positions are damaged");
    const std::uint32_t w = word32(diff_, j++);
    const unsigned type = w >> 28;
    if (type == 0 || type > 9) compact_fault("a string vector's positions are damaged");
    const unsigned bits = kSimple9[type][0], count = kSimple9[type][1];
    for (unsigned q = 0; q < count && got < need; ++q, ++got) v += (w >> (bits * (count - 1 - q))) & ((1u << bits) - 1);
  }
  return v;
}

StringList::StringList(ByteCursor& in, std::size_t pos_width, const char* what) : what_(what) {
  in.u8(what);  // whether sorted: not needed to read
  positions_ = MonotonicPositions(in, pos_width);
  n_bytes_ = in.u64(what);
  bytes_ = in.take(n_bytes_, what);
}

std::string_view StringList::at(std::uint64_t i) const {
  const std::uint64_t begin = positions_.at(i), end = i + 1 < size() ? positions_.at(i + 1) : n_bytes_;
  if (begin > end || end > n_bytes_) compact_fault(std::string(what_) + ": an entry lies outside its bytes");
  return std::string_view(reinterpret_cast<const char*>(bytes_ + begin), end - begin);
}

// ---------------------------------------------------------------------------------------------
// The source index

KeyIndex::KeyIndex(ByteCursor& in) {
  order_bits_ = in.u64("the source index");
  print_bits_ = in.u64("the source index");
  if (order_bits_ < 1 || order_bits_ > 30 || print_bits_ < 1 || print_bits_ > 32)
    compact_fault("the source index has impossible parameters (not a Moses compact table?)");
  const unsigned char* start = in.at();
  const std::uint64_t rel = in.u64("the source index");
  if (rel < 8 || rel > static_cast<std::uint64_t>(in.end() - start)) compact_fault("the source index lies outside the file");
  ByteCursor index(start + rel, in.end());
  landmarks_ = StringList(index, 8, "the source index's landmarks");
  const std::uint64_t n_blocks = index.u64("the source index");
  const unsigned char* seek = index.take_array(n_blocks, 8, "the source index");
  keys_ = index.u64("the source index");
  in = index;
  const std::uint64_t step = std::uint64_t{1} << order_bits_;
  if (landmarks_.size() != n_blocks || keys_ > n_blocks * step || (n_blocks > 0 && keys_ <= (n_blocks - 1) * step))
    compact_fault("the source index's counts disagree");
  const std::uint64_t bits = order_bits_ + print_bits_;
  for (std::uint64_t b = 0; b < n_blocks; ++b) {
    const std::uint64_t off = load64(seek + 8 * b);
    if (off < 8 || off >= rel) compact_fault("a block of the source index lies outside it");
    ByteCursor at(start + off, start + rel);
    Block block;
    block.hash = std::make_shared<const ChdHash>(at);
    block.n = at.u64("a block's orders");
    const std::uint64_t bytes = at.u64("a block's orders");
    block.packed = at.take(bytes, "a block's orders");
    const std::uint64_t real = std::min(step, keys_ - b * step);  // a block of one key has a dummy too
    if (block.n != block.hash->keys() || (block.n != real && !(real == 1 && block.n == 2)) || bytes * 8 < block.n * bits)
      compact_fault("a block of the source index has the wrong size");
    std::vector<bool> seen(block.n, false);  // the orders by slot: a permutation
    for (std::uint64_t s = 0; s < block.n; ++s) {
      std::uint64_t v = 0;
      for (std::uint64_t k = 0; k < bits; ++k) {
        const std::uint64_t p = s * bits + k;
        v |= static_cast<std::uint64_t>((block.packed[p >> 3] >> (p & 7)) & 1) << k;
      }
      const std::uint64_t order = v & (step - 1);
      if (order >= block.n || seen[order]) compact_fault("a block's orders are damaged");
      seen[order] = true;
    }
    blocks_.push_back(std::move(block));
  }
  // Each block's landmark is its key 0: found there, it checks the block's hash and tells which
  // byte reading (cmph_chd.h) built the file.
  std::string last;
  for (std::uint64_t b = 0; b < n_blocks; ++b) {
    const std::string_view key = landmarks_.at(b);
    if (b > 0 && !(last < key)) compact_fault("the source index's landmarks are not sorted");
    last.assign(key);
  }
  for (const bool sign : {true, false}) {
    bool all = true;
    for (std::uint64_t b = 0; b < n_blocks && all; ++b) {
      const auto order = in_block(static_cast<std::size_t>(b), landmarks_.at(b), sign);
      all = order && *order == 0;
    }
    if (all) {
      signed_bytes_ = sign;
      return;
    }
  }
  compact_fault("a block's hash does not find its first key (the hash or its fingerprints are damaged)");
}

std::optional<std::uint64_t> KeyIndex::in_block(std::size_t b, std::string_view key, bool signed_bytes) const {
  const Block& block = blocks_[b];
  const std::uint32_t slot = block.hash->slot(key, signed_bytes);
  if (slot >= block.n) return std::nullopt;
  const std::uint64_t bits = order_bits_ + print_bits_;
  std::uint64_t v = 0;
  for (std::uint64_t k = 0; k < bits; ++k) {  // inside: bytes * 8 >= n * bits, checked at open
    const std::uint64_t p = slot * bits + k;
    v |= static_cast<std::uint64_t>((block.packed[p >> 3] >> (p & 7)) & 1) << k;
  }
  const std::uint64_t print = murmur3_32(key, kFingerprintSeed) & ((std::uint64_t{1} << print_bits_) - 1);
  if ((v >> order_bits_) != print) return std::nullopt;
  return v & ((std::uint64_t{1} << order_bits_) - 1);
}

std::optional<std::uint64_t> KeyIndex::find(std::string_view key) const {
  // The last block whose landmark is <= key.
  std::uint64_t lo = 0, hi = blocks_.size();
  while (lo < hi) {
    const std::uint64_t mid = (lo + hi) / 2;
    if (landmarks_.at(mid) <= key) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return std::nullopt;
  const std::uint64_t b = lo - 1;
  const auto order = in_block(static_cast<std::size_t>(b), key, signed_bytes_);
  if (!order) return std::nullopt;
  const std::uint64_t id = (b << order_bits_) + *order;
  if (id >= keys_) return std::nullopt;  // a dummy key's slot
  return id;
}

// ---------------------------------------------------------------------------------------------
// Phrase tables

void CompactPhraseTable::corrupt(const std::string& what) const {
  throw CompactFormatError(path() + ": " + what +
                           "; not a Moses compact phrase table (processPhraseTableMin), or a corrupt or truncated one");
}

CompactPhraseTable::CompactPhraseTable(const std::string& path) try : file_(path) {
  try {
    ByteCursor in(file_.data(), file_.data() + file_.size());
    index_ = KeyIndex(in);
    const std::uint32_t coding = in.u32("the phrase decoder");
    if (coding == CODING_RENC || coding == CODING_PRENC)
      throw CompactFormatError(path + ": a compact phrase table built with " +
                               (coding == CODING_RENC ? "REnc" : "PREnc") +
                               " (rank encoding), which fstdecode does not read; build it with processPhraseTableMin "
                               "-encoding None, or give the text table");
    if (coding != CODING_NONE) compact_fault("unknown target phrase coding " + std::to_string(coding));
    num_scores_ = in.u64("the phrase decoder");
    const std::uint8_t alignment = in.u8("the phrase decoder");
    in.u64("the phrase decoder");  // the maximum rank (PREnc only)
    max_length_ = in.u64("the phrase decoder");
    if (num_scores_ == 0 || num_scores_ > kMaxScores || alignment > 1 || max_length_ == 0 || max_length_ > 1024)
      compact_fault("the phrase decoder has impossible parameters");
    alignment_ = alignment == 1;
    target_words_ = StringList(in, 4, "the target words");
    symbols_ = HuffmanCode(in, 4, "the code of target words");
    for (std::uint64_t i = 0; i < symbols_.symbols(); ++i)
      if (load32(symbols_.symbol(i)) >= target_words_.size()) compact_fault("the code of target words names a word out of range");
    const std::uint8_t multiple = in.u8("the score codes");
    if (multiple > 1) compact_fault("the score codes are damaged");
    for (std::uint64_t c = 0; c < (multiple ? num_scores_ : 1); ++c) {
      score_codes_.emplace_back(in, 4, "a score code");
      check_score_code(score_codes_.back());
    }
    if (alignment_) alignment_code_ = HuffmanCode(in, 2, "the alignment code");
    records_ = StringList(in, 8, "the target phrases");
    if (in.left() != 0) compact_fault(std::to_string(in.left()) + " bytes follow the table");
    if (records_.size() != index_.size()) compact_fault("the source index and the target phrases disagree in size");
  } catch (const CompactFault& fault) {
    corrupt(fault.what());
  }
} catch (const MappedFileError& e) {
  throw CompactFormatError(e.what());
}

bool CompactPhraseTable::decode(std::uint64_t id, std::size_t length, std::vector<Pair>& out) const {
  const std::string_view record = records_.at(id);
  BitReader bits(reinterpret_cast<const unsigned char*>(record.data()), record.size());
  std::set<std::pair<unsigned, unsigned>> points;
  while (bits.left() > 0) {
    Pair pair;
    for (;;) {
      const std::uint32_t symbol = load32(symbols_.symbol(symbols_.decode(bits)));
      if (symbol == 0) break;  // the stop symbol
      pair.target.push_back(target_words_.at(symbol));
    }
    for (std::uint64_t c = 0; c < num_scores_; ++c) {
      const HuffmanCode& code = score_codes_[score_codes_.size() == 1 ? 0 : c];
      pair.scores.push_back(static_cast<double>(float_at(code.symbol(code.decode(bits)))));
    }
    points.clear();
    if (alignment_) {
      for (;;) {
        const unsigned char* point = alignment_code_.symbol(alignment_code_.decode(bits));
        if (point[0] == 255 && point[1] == 255) break;  // the stop point
        points.emplace(point[0], point[1]);
      }
    }
    for (const auto& [s, t] : points) {
      if (s >= length || t >= pair.target.size()) return false;  // Moses' false-positive check
      if (!pair.alignment.empty()) pair.alignment += ' ';
      pair.alignment += std::to_string(s) + "-" + std::to_string(t);
    }
    out.push_back(std::move(pair));
    if (bits.left() <= 8) break;  // the padding of the last byte (Moses' test)
  }
  return true;
}

PhraseStore CompactPhraseTable::phrases(SourceFilter* filter, const KeepSource& keep) const {
  if (filter == nullptr)
    throw std::invalid_argument(path() + ": a compact phrase table is read for a batch's source phrases: give a filter");
  // The sources of the filter's n-grams that the index finds, in file order (a fingerprint
  // false positive gives a source another's pairs, as in Moses).
  std::vector<std::pair<std::uint64_t, std::vector<std::string_view>>> kept;
  try {
    for (const auto& sentence : filter->sentences()) {
      for (std::size_t i = 0; i < sentence.size(); ++i) {
        std::vector<std::string_view> words;
        for (std::size_t j = i; j < sentence.size() && j - i < max_length_; ++j) {
          words.push_back(sentence[j]);
          if (const auto id = index_.find(join_key(words))) kept.emplace_back(*id, words);
        }
      }
    }
  } catch (const CompactFault& fault) {
    corrupt(fault.what());
  }
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());

  PhraseStoreBuilder out(path(), num_scores());
  std::vector<Pair> pairs;
  std::vector<std::string> words;
  std::vector<double> scores;
  for (const auto& [id, source] : kept) {
    if (keep) {
      words.assign(source.begin(), source.end());
      if (!keep(words)) continue;
    }
    pairs.clear();
    try {
      if (!decode(id, source.size(), pairs) || pairs.empty()) continue;
    } catch (const CompactFault& fault) {
      corrupt(fault.what());
    }
    out.source(source);
    for (const Pair& pair : pairs) {
      if (pair.target.empty()) corrupt("a phrase pair without target words");
      for (const auto& w : pair.target) {
        if (w.empty() || w.find_first_of(" \t\n\r\v\f") != std::string_view::npos || w.find('\0') != std::string_view::npos)
          corrupt("a target word is empty or holds a space");
        if (!valid_utf8(w))
          throw CompactFormatError(path() + ": the target words of source '" + join_key(source).substr(0, join_key(source).size() - 5) +
                                   "' are not UTF-8 (fstdecode reads tables in UTF-8 only: rebuild the table from a UTF-8 text table)");
        if (w == "<s>" || w == "</s>")
          throw CompactFormatError(path() + ": a target phrase of source '" + join_key(source).substr(0, join_key(source).size() - 5) +
                                   "' holds the sentence marker " + std::string(w) + ", which no target phrase may hold");
      }
      scores.assign(pair.scores.begin(), pair.scores.end());
      for (double& x : scores) x = std::max(x, -100.0);
      out.pair(pair.target, scores.data(), pair.alignment);
    }
  }
  return out.finish(static_cast<long>(sources()));
}

// ---------------------------------------------------------------------------------------------
// Reordering tables

void CompactReorderingTable::corrupt(const std::string& what) const {
  throw CompactFormatError(path() + ": " + what +
                           "; not a Moses compact reordering table (processLexicalTableMin), or a corrupt or truncated one");
}

CompactReorderingTable::CompactReorderingTable(const std::string& path) try : file_(path) {
  try {
    ByteCursor in(file_.data(), file_.data() + file_.size());
    index_ = KeyIndex(in);
    num_scores_ = in.u64("the score codes");
    const std::uint8_t multiple = in.u8("the score codes");
    if (num_scores_ == 0 || num_scores_ > kMaxScores || multiple > 1) compact_fault("the score codes have impossible sizes");
    for (std::uint64_t c = 0; c < (multiple ? num_scores_ : 1); ++c) {
      codes_.emplace_back(in, 4, "a score code");
      check_score_code(codes_.back());
    }
    records_ = StringList(in, 8, "the scores");
    if (in.left() != 0) compact_fault(std::to_string(in.left()) + " bytes follow the table");
    if (records_.size() != index_.size()) compact_fault("the source index and the scores disagree in size");
    // Keys are "f ||| e ||| " or "f ||| ": every landmark says which.
    for (std::uint64_t b = 0; b < index_.landmarks().size(); ++b) {
      const std::size_t n = occurrences(index_.landmarks().at(b), kSeparator);
      if ((n != 1 && n != 2) || (b > 0 && (n == 2) != with_target_)) compact_fault("the keys are neither all f nor all fe");
      with_target_ = n == 2;
    }
  } catch (const CompactFault& fault) {
    corrupt(fault.what());
  }
} catch (const MappedFileError& e) {
  throw CompactFormatError(e.what());
}

bool CompactReorderingTable::lookup(const std::vector<std::string_view>& source,
                                    const std::vector<std::string_view>& target, std::vector<double>& row) const {
  if (source.empty()) return false;
  std::string key = join_key(source);
  if (with_target_) key += join_key(target);
  try {
    const auto id = index_.find(key);
    if (!id) return false;
    const std::string_view record = records_.at(*id);
    BitReader bits(reinterpret_cast<const unsigned char*>(record.data()), record.size());
    row.clear();
    for (std::uint64_t c = 0; c < num_scores_; ++c) {
      const HuffmanCode& code = codes_[codes_.size() == 1 ? 0 : c];
      row.push_back(std::max(static_cast<double>(float_at(code.symbol(code.decode(bits)))), -100.0));
    }
  } catch (const CompactFault& fault) {
    corrupt(fault.what());
  }
  return true;
}

ReorderingStore CompactReorderingTable::reordering(const PhraseStore& pairs) const {
  ReorderingStore out;
  out.path_ = path();
  out.num_scores_ = num_scores();
  out.with_target_ = with_target_;
  std::vector<std::string_view> source, target;
  std::vector<double> row;
  auto add = [&](const std::vector<std::string_view>& t) {
    if (!lookup(source, t, row)) return;
    std::string key;
    auto append = [&](WordId id) { key.append(reinterpret_cast<const char*>(&id), sizeof id); };
    for (const auto& w : source) append(out.vocab_.intern(w));
    if (with_target_) {
      append(-1);
      for (const auto& w : t) append(out.vocab_.intern(w));
    }
    if (out.rows_.emplace(std::move(key), static_cast<int>(out.rows_.size())).second)
      out.scores_.insert(out.scores_.end(), row.begin(), row.end());
  };
  for (std::size_t h = 0; h < pairs.sources(); ++h) {
    const std::vector<std::string> words = pairs.source_words(static_cast<int>(h));
    source.assign(words.begin(), words.end());
    if (!with_target_) {
      add({});
      continue;
    }
    for (int p = pairs.pair_begin(static_cast<int>(h)); p < pairs.pair_end(static_cast<int>(h)); ++p) {
      int n = 0;
      const std::int32_t* ids = pairs.target(p, n);
      target.clear();
      for (int i = 0; i < n; ++i) target.emplace_back(pairs.word(ids[i]));
      add(target);
    }
  }
  return out;
}

}  // namespace fstdecode
