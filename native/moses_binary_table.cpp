#include "moses_binary_table.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "text_lines.h"

namespace fstdecode {

namespace {

// Moses' PrefixTreeMap::MagicWord: the key between a reordering row's source and target.
constexpr std::uint32_t kMagicWord = std::numeric_limits<std::uint32_t>::max() - 1;
// Moses' TgtCand::SPARSE_FLAG: a last "score" of 100 says sparse features follow.
constexpr float kSparseFlag = 100.0f;
constexpr double kLowest = -100.0;  // Moses' FloorScore
// The smallest node: one key, its data and its child (u32 + u32 + u32 + i64 + i64).
constexpr std::uint64_t kSmallestNode = 28;

[[noreturn]] void corrupt_file(const std::string& file, const std::string& what) {
  throw MosesBinaryError(file + ": " + what + "; the Moses binary table is corrupt or truncated");
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// `prefix` without a trailing `ext` (a path given as the table's first file).
std::string stem(const std::string& prefix, const std::string& ext) {
  if (prefix.size() > ext.size() && prefix.compare(prefix.size() - ext.size(), ext.size(), ext) == 0)
    return prefix.substr(0, prefix.size() - ext.size());
  return prefix;
}

// A mapped file's bytes from an offset on, read front to back; false when they run out.
class Bytes {
 public:
  Bytes(const MappedFile& file, std::uint64_t offset)
      : at_(file.data() + std::min<std::uint64_t>(offset, file.size())), end_(file.data() + file.size()) {}
  bool u32(std::uint32_t& v) {
    if (left() < 4) return false;
    v = load32(at_);
    at_ += 4;
    return true;
  }
  // `count` items of `width` bytes: false (nothing taken) when fewer bytes are left.
  bool take(std::uint64_t count, std::uint64_t width, const unsigned char*& p) {
    if (count > left() / width) return false;
    p = at_;
    at_ += count * width;
    return true;
  }
  // A vector's count and its items.
  bool vec(std::uint64_t width, std::uint32_t& count, const unsigned char*& p) { return u32(count) && take(count, width, p); }

 private:
  std::uint64_t left() const { return static_cast<std::uint64_t>(end_ - at_); }
  const unsigned char* at_;
  const unsigned char* end_;
};

float load_float(const unsigned char* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A word's first factor (Moses' factor delimiter is '|'; fstdecode refuses another).
std::string_view first_factor(std::string_view word) { return word.substr(0, word.find('|')); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Vocabularies

MosesVocabulary::MosesVocabulary(const std::string& path) : file_(path) {
  const char* text = reinterpret_cast<const char*>(file_.data());
  const std::size_t size = file_.size();
  if (size > 0 && text[size - 1] != '\n') corrupt_file(path, "its last line is cut short");
  std::size_t lines = 0;
  for (std::size_t i = 0; i < size; ++i) lines += text[i] == '\n';
  spans_.assign(lines, {0, 0});
  std::vector<bool> seen(lines, false);
  index_.reserve(lines);
  std::size_t at = 0, lineno = 0;
  while (at < size) {
    ++lineno;
    const std::size_t end = static_cast<std::size_t>(static_cast<const char*>(std::memchr(text + at, '\n', size - at)) - text);
    const std::string_view line(text + at, end - at);
    const std::string where = "line " + std::to_string(lineno);
    const std::size_t space = line.find(' ');
    if (space == 0 || space == std::string_view::npos || space > 10) corrupt_file(path, where + " is not 'id word'");
    std::uint64_t id = 0;
    for (std::size_t i = 0; i < space; ++i) {
      if (line[i] < '0' || line[i] > '9') corrupt_file(path, where + " is not 'id word'");
      id = id * 10 + static_cast<std::uint64_t>(line[i] - '0');
    }
    const std::string_view word = line.substr(space + 1);
    if (word.empty() || word.find(' ') != std::string_view::npos) corrupt_file(path, where + " is not 'id word'");
    if (!valid_utf8(word)) corrupt_file(path, where + ": the word is not UTF-8");
    if (id >= lines) corrupt_file(path, where + ": id " + std::to_string(id) + " of " + std::to_string(lines) + " words");
    if (seen[id]) corrupt_file(path, where + ": id " + std::to_string(id) + " is listed twice");
    seen[id] = true;
    spans_[id] = {at + space + 1, static_cast<std::uint32_t>(word.size())};
    if (!index_.emplace(word, static_cast<std::uint32_t>(id)).second)
      corrupt_file(path, where + ": the word '" + std::string(word) + "' is listed twice");
    at = end + 1;
  }
}

std::int64_t MosesVocabulary::find(std::string_view w) const {
  const auto it = index_.find(w);
  return it == index_.end() ? -1 : static_cast<std::int64_t>(it->second);
}

// ---------------------------------------------------------------------------------------------
// The prefix tree

MosesPrefixTree::MosesPrefixTree(const std::string& idx, const std::string& tree, const MappedFile& records)
    : idx_(idx), tree_(tree), records_(records) {
  if (idx_.size() < 4) corrupt_file(idx, "it is shorter than its count");
  roots_ = load32(idx_.data());
  if (idx_.size() != 4 + 8 * static_cast<std::uint64_t>(roots_))
    corrupt_file(idx, "it holds " + std::to_string(idx_.size()) + " bytes, but " + std::to_string(roots_) +
                          " offsets take " + std::to_string(4 + 8 * static_cast<std::uint64_t>(roots_)));
  bool any = false;
  for (std::size_t w = 0; w < roots_; ++w) {
    const auto root = static_cast<std::int64_t>(load64(idx_.data() + 4 + 8 * w));
    if (root == -1) continue;
    if (root < 0 || static_cast<std::uint64_t>(root) + kSmallestNode > tree_.size())
      corrupt_file(idx, "the root of word " + std::to_string(w) + " lies outside " + tree);
    any = true;
  }
  if (!any) corrupt_file(idx, "it holds no tree");
}

void MosesPrefixTree::corrupt(const std::string& what) const { corrupt_file(tree_.path(), what); }

MosesPrefixTree::Walk::Node MosesPrefixTree::Walk::node(std::uint64_t offset) {
  const MappedFile& file = tree_.tree_;
  const unsigned char* base = file.data() + offset;
  const auto found = checked_.find(offset);
  if (found != checked_.end()) {
    const std::uint32_t n = found->second;
    return Node{base + 4, base + 8 + 4 * std::uint64_t{n}, base + 8 + 12 * std::uint64_t{n}, n};
  }
  // Checked once per walk: its counts, its bounds, its keys' order and each offset it holds.
  if (offset > file.size() || file.size() - offset < kSmallestNode) tree_.corrupt("a node lies outside the file");
  const std::uint64_t room = file.size() - offset;
  const std::uint32_t n = load32(base);
  if (n == 0) tree_.corrupt("a node without keys");
  if (n > (room - 8) / 20) tree_.corrupt("a node runs past the end of the file");
  if (load32(base + 4 + 4 * std::uint64_t{n}) != n) tree_.corrupt("a node's data count is not its key count");
  const Node node{base + 4, base + 8 + 4 * std::uint64_t{n}, base + 8 + 12 * std::uint64_t{n}, n};
  const std::uint64_t end = offset + 8 + 20 * std::uint64_t{n};
  for (std::uint32_t i = 0; i < n; ++i) {
    if (i > 0 && key(node, i - 1) >= key(node, i)) tree_.corrupt("a node's keys are not in ascending order");
    const auto d = static_cast<std::int64_t>(load64(node.data + 8 * i));
    if (d != -1 && (d < 0 || static_cast<std::uint64_t>(d) >= tree_.records_.size()))
      tree_.corrupt("a record offset lies outside " + tree_.records_.path());
    const std::uint64_t c = child(node, i);
    if (c != 0 && (c < end || c > file.size() || file.size() - c < kSmallestNode))
      tree_.corrupt("a child node lies outside the file");
  }
  checked_.emplace(offset, n);
  return node;
}

std::uint32_t MosesPrefixTree::Walk::find(const Node& n, std::uint32_t w) const {
  std::uint32_t lo = 0, hi = n.size;  // keys ascending (checked)
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (key(n, mid) < w) lo = mid + 1;
    else hi = mid;
  }
  return lo < n.size && key(n, lo) == w ? lo : n.size;
}

void MosesPrefixTree::Walk::reach(std::uint64_t offset) {
  if (!reached_.insert(offset).second) tree_.corrupt("a node is reached twice");
}

bool MosesPrefixTree::Walk::start(std::uint32_t w, Cursor& at) {
  if (w >= tree_.roots_) return false;
  const auto root = static_cast<std::int64_t>(load64(tree_.idx_.data() + 4 + 8 * std::uint64_t{w}));
  if (root == -1) return false;
  const Node n = node(static_cast<std::uint64_t>(root));
  const std::uint32_t i = find(n, w);
  if (i == n.size) tree_.corrupt("the root of word " + std::to_string(w) + " lacks it");
  at = Cursor{static_cast<std::uint64_t>(root), i};
  return true;
}

bool MosesPrefixTree::Walk::extend(Cursor& at, std::uint32_t w) {
  const std::uint64_t c = child(node(at.node), at.index);
  if (c == 0) return false;
  const Node n = node(c);
  const std::uint32_t i = find(n, w);
  if (i == n.size) return false;
  at = Cursor{c, i};
  return true;
}

std::int64_t MosesPrefixTree::Walk::data(const Cursor& at) {
  return static_cast<std::int64_t>(load64(node(at.node).data + 8 * std::uint64_t{at.index}));
}

template <typename On>
void MosesPrefixTree::Walk::below(std::uint64_t first, std::vector<std::uint32_t>& path, On&& on) {
  // Depth first, without recursion: a corrupt file's chain of nodes can be as deep as the file
  // is long (each child lies beyond its parent, so the walk ends).
  struct Frame {
    std::uint64_t node;
    std::uint32_t next;
  };
  const std::size_t base = path.size();
  std::vector<Frame> stack;
  if (first != 0) {
    reach(first);
    stack.push_back({first, 0});
  }
  while (!stack.empty()) {
    const Node n = node(stack.back().node);
    const std::uint32_t i = stack.back().next;
    if (i == n.size) {
      stack.pop_back();
      continue;
    }
    ++stack.back().next;
    path.resize(base + stack.size() - 1);
    path.push_back(key(n, i));
    const auto d = static_cast<std::int64_t>(load64(n.data + 8 * std::uint64_t{i}));
    if (d >= 0) on(static_cast<const std::vector<std::uint32_t>&>(path), static_cast<std::uint64_t>(d));
    const std::uint64_t c = child(n, i);
    if (c != 0) {
      reach(c);
      stack.push_back({c, 0});
    }
  }
  path.resize(base);
}

template <typename On>
void MosesPrefixTree::Walk::each(On&& on) {
  std::vector<std::uint32_t> path;
  for (std::uint32_t w = 0; w < tree_.roots_; ++w) {
    const auto root = static_cast<std::int64_t>(load64(tree_.idx_.data() + 4 + 8 * std::uint64_t{w}));
    if (root == -1) continue;
    reach(static_cast<std::uint64_t>(root));
    Cursor at;
    if (!start(w, at)) continue;  // (not taken: the root is there, and holds w or start throws)
    path.assign(1, w);
    const std::int64_t d = data(at);
    if (d >= 0) on(static_cast<const std::vector<std::uint32_t>&>(path), static_cast<std::uint64_t>(d));
    below(child(node(at.node), at.index), path, on);
  }
}

template <typename On>
void MosesPrefixTree::Walk::each_below(const Cursor& at, On&& on) {
  std::vector<std::uint32_t> path;
  below(child(node(at.node), at.index), path, on);
}

// ---------------------------------------------------------------------------------------------
// Phrase tables

MosesPhraseTable::MosesPhraseTable(const std::string& prefix)
    : prefix_(stem(prefix, ".binphr.idx")),
      alignment_(exists(prefix_ + ".binphr.srctree.wa")),
      source_vocab_(prefix_ + ".binphr.srcvoc"),
      target_vocab_(prefix_ + ".binphr.tgtvoc"),
      records_(prefix_ + ".binphr.tgtdata" + (alignment_ ? ".wa" : "")),
      tree_(prefix_ + ".binphr.idx", prefix_ + ".binphr.srctree" + (alignment_ ? ".wa" : ""), records_) {
  if (tree_.roots() > source_vocab_.size())
    corrupt_file(prefix_ + ".binphr.idx", "it indexes " + std::to_string(tree_.roots()) + " first words, but " +
                                          source_vocab_.path() + " holds " + std::to_string(source_vocab_.size()));
  // The first record (the text's first source): the score count every pair must have, and the
  // number of factors of its target words.
  num_scores_ = read_record(0, std::numeric_limits<std::size_t>::max(), 0,
                            [&](const std::vector<std::string_view>& words, const std::vector<std::string_view>&,
                                const double*, const std::string&) {
                for (const auto& w : words) {
                  const int n = 1 + static_cast<int>(std::count(w.begin(), w.end(), '|'));
                  if (n > factors_) factors_ = n, factored_word_ = std::string(w);
                }
              });
}

void MosesPhraseTable::corrupt(const std::string& file, const std::string& what) const { corrupt_file(file, what); }

std::size_t MosesPhraseTable::sources() const {
  std::call_once(counted_, [&] {
    MosesPrefixTree::Walk walk(tree_);
    walk.each([&](const std::vector<std::uint32_t>&, std::uint64_t) { ++sources_; });
  });
  return sources_;
}

template <typename OnPair>
int MosesPhraseTable::read_record(std::uint64_t offset, std::size_t source_length, int expected, OnPair&& on_pair) const {
  const std::string& file = records_.path();
  Bytes in(records_, offset);
  const auto cut = [&] { corrupt(file, "a record is cut short"); };
  std::uint32_t pairs;
  if (!in.u32(pairs)) cut();
  if (pairs == 0) corrupt(file, "a source phrase without translations");
  std::vector<std::string_view> full, words;
  std::vector<double> scores;
  std::string alignment;
  for (std::uint32_t p = 0; p < pairs; ++p) {
    std::uint32_t n;
    const unsigned char* ids;
    if (!in.vec(4, n, ids)) cut();
    if (n == 0) corrupt(file, "a phrase pair without target words");
    full.clear();
    words.clear();
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t id = load32(ids + 4 * i);
      if (id >= target_vocab_.size()) corrupt(file, "a target word id is not in " + target_vocab_.path());
      const std::string_view w = target_vocab_.word(id);
      const std::string_view surface = first_factor(w);
      if (surface.empty()) corrupt(file, "a target word's first factor is empty ('" + std::string(w) + "')");
      if (surface == "<s>" || surface == "</s>")
        throw MosesBinaryError(prefix_ + ": a target phrase holds the LM sentence marker " + std::string(surface) +
                               ", which no target phrase may hold");
      full.push_back(w);
      words.push_back(surface);
    }
    std::uint32_t m;
    const unsigned char* values;
    if (!in.vec(4, m, values)) cut();
    std::uint32_t dense = m;
    if (m > 0 && load_float(values + 4 * (m - 1)) == kSparseFlag) {
      --dense;
      std::uint32_t names, count;
      const unsigned char* name_ids;
      const unsigned char* ignored;
      if (!in.vec(4, names, name_ids) || !in.vec(4, count, ignored)) cut();
      if (count != names) corrupt(file, "a pair's sparse features have " + std::to_string(names) + " names and " +
                                            std::to_string(count) + " values");
      for (std::uint32_t i = 0; i < names; ++i)
        if (load32(name_ids + 4 * i) >= target_vocab_.size()) corrupt(file, "a sparse feature's name is not in " + target_vocab_.path());
    }
    if (dense == 0) corrupt(file, "a phrase pair without scores");
    if (expected == 0) expected = static_cast<int>(dense);
    if (static_cast<int>(dense) != expected)
      corrupt(file, "a phrase pair has " + std::to_string(dense) + " scores, the first " + std::to_string(expected));
    scores.clear();
    for (std::uint32_t k = 0; k < dense; ++k) {
      const double v = load_float(values + 4 * k);
      if (!std::isfinite(v) || v < 0.0) corrupt(file, "a score is not a probability");
      scores.push_back(stored_score(SCORE_PROB, v));
    }
    alignment.clear();
    if (alignment_) {
      std::uint32_t length;
      const unsigned char* text;
      if (!in.vec(1, length, text)) cut();
      long long max_source, max_target;
      if (!normalize_alignment(std::string_view(reinterpret_cast<const char*>(text), length), alignment, max_source, max_target))
        corrupt(file, "an alignment is not 'i-j' points");
      if (max_source >= static_cast<long long>(std::min<std::size_t>(source_length, std::numeric_limits<int>::max())) ||
          max_target >= static_cast<long long>(n))
        corrupt(file, "an alignment point lies outside its pair");
    }
    on_pair(static_cast<const std::vector<std::string_view>&>(full), static_cast<const std::vector<std::string_view>&>(words),
            static_cast<const double*>(scores.data()), static_cast<const std::string&>(alignment));
  }
  return expected;
}

std::vector<MosesPhraseTable::Source> MosesPhraseTable::kept(SourceFilter* filter, const KeepSource& keep) const {
  std::vector<Source> found;
  MosesPrefixTree::Walk walk(tree_);
  if (filter != nullptr) {
    std::vector<std::uint32_t> ids;
    for (const auto& sentence : filter->sentences()) {
      ids.clear();
      for (const auto& w : sentence) {
        const std::int64_t id = source_vocab_.find(w);
        ids.push_back(id < 0 ? std::numeric_limits<std::uint32_t>::max() : static_cast<std::uint32_t>(id));
      }
      for (std::size_t i = 0; i < ids.size(); ++i) {
        MosesPrefixTree::Cursor at;
        if (ids[i] == std::numeric_limits<std::uint32_t>::max() || !walk.start(ids[i], at)) continue;
        for (std::size_t j = i;;) {
          const std::int64_t d = walk.data(at);
          if (d >= 0)
            found.push_back(Source{static_cast<std::uint64_t>(d), std::vector<std::uint32_t>(ids.begin() + i, ids.begin() + j + 1)});
          if (++j == ids.size() || ids[j] == std::numeric_limits<std::uint32_t>::max() || !walk.extend(at, ids[j])) break;
        }
      }
    }
  } else {
    walk.each([&](const std::vector<std::uint32_t>& path, std::uint64_t d) { found.push_back(Source{d, path}); });
  }
  // File order; a phrase found in several places once; two phrases of one record are a corrupt tree.
  std::sort(found.begin(), found.end(), [](const Source& a, const Source& b) { return a.record < b.record; });
  std::vector<Source> unique;
  for (auto& s : found) {
    if (!unique.empty() && unique.back().record == s.record) {
      if (unique.back().ids != s.ids) tree_.corrupt("two source phrases share one record");
      continue;
    }
    unique.push_back(std::move(s));
  }
  for (const auto& s : unique)
    for (const auto id : s.ids)
      if (id >= source_vocab_.size()) tree_.corrupt("a source word id is not in " + source_vocab_.path());
  if (!keep) return unique;
  std::vector<Source> asked;
  std::vector<std::string> words;
  for (auto& s : unique) {
    words.clear();
    for (const auto id : s.ids) words.emplace_back(source_vocab_.word(id));
    if (keep(words)) asked.push_back(std::move(s));
  }
  return asked;
}

PhraseStore MosesPhraseTable::phrases(SourceFilter* filter, const KeepSource& keep) const {
  PhraseStoreBuilder out(prefix_, num_scores_);
  std::vector<std::string_view> words;
  for (const Source& s : kept(filter, keep)) {
    words.clear();
    for (const auto id : s.ids) words.emplace_back(source_vocab_.word(id));
    out.source(words);
    read_record(s.record, s.ids.size(), num_scores_,
                [&](const std::vector<std::string_view>&, const std::vector<std::string_view>& target, const double* scores,
                    const std::string& alignment) { out.pair(target, scores, alignment); });
  }
  // The sources read, kept or not: all of them without a filter; for a filter, the walk of the
  // whole tree only when nothing was kept (the empty-table warning's count), not on every batch.
  const bool all = filter == nullptr && !keep;
  return out.finish(static_cast<long>(all || out.sources() > 0 ? out.sources() : sources()));
}

// ---------------------------------------------------------------------------------------------
// Reordering tables

MosesReorderingTable::MosesReorderingTable(const std::string& prefix)
    : prefix_(stem(prefix, ".binlexr.idx")),
      source_vocab_(prefix_ + ".binlexr.voc0"),
      target_vocab_(exists(prefix_ + ".binlexr.voc1") ? std::make_unique<MosesVocabulary>(prefix_ + ".binlexr.voc1") : nullptr),
      records_(prefix_ + ".binlexr.tgtdata"),
      tree_(prefix_ + ".binlexr.idx", prefix_ + ".binlexr.srctree", records_) {
  if (tree_.roots() > source_vocab_.size())
    corrupt_file(prefix_ + ".binlexr.idx", "it indexes " + std::to_string(tree_.roots()) + " first words, but " +
                                          source_vocab_.path() + " holds " + std::to_string(source_vocab_.size()));
  std::vector<double> first;
  num_scores_ = read_record(0, 0, first);  // the first line's count, as the text reader takes it
}

void MosesReorderingTable::corrupt(const std::string& file, const std::string& what) const { corrupt_file(file, what); }

int MosesReorderingTable::read_record(std::uint64_t offset, int expected, std::vector<double>& out) const {
  const std::string& file = records_.path();
  Bytes in(records_, offset);
  const auto cut = [&] { corrupt(file, "a record is cut short"); };
  std::uint32_t candidates;
  if (!in.u32(candidates)) cut();
  if (candidates == 0) corrupt(file, "a row without scores");
  for (std::uint32_t c = 0; c < candidates; ++c) {
    std::uint32_t contexts, lists, m;
    const unsigned char* values;
    if (!in.u32(contexts)) cut();
    if (contexts != 0)
      throw MosesBinaryError(prefix_ + ": a reordering table conditioned on context (f ||| e ||| c ||| scores), "
                                       "which fstdecode does not read");
    if (!in.u32(lists)) cut();
    if (lists != 1) corrupt(file, "a row has " + std::to_string(lists) + " score vectors, not 1");
    if (!in.vec(4, m, values)) cut();
    if (m == 0) corrupt(file, "a row without scores");
    if (expected == 0) expected = static_cast<int>(m);
    if (static_cast<int>(m) != expected)
      corrupt(file, "a row has " + std::to_string(m) + " scores, the first " + std::to_string(expected));
    out.clear();  // a key's last candidate wins, as a key's last line does in the text reader
    for (std::uint32_t k = 0; k < m; ++k) {
      const double v = load_float(values + 4 * k);
      if (!std::isfinite(v)) corrupt(file, "a score is not a finite number");
      out.push_back(v > kLowest ? v : kLowest);
    }
  }
  return expected;
}

ReorderingStore MosesReorderingTable::reordering(SourceFilter* filter, const KeepSource& keep) const {
  ReorderingStore out;
  out.path_ = prefix_;
  out.num_scores_ = num_scores_;
  out.with_target_ = conditioned_on_target();
  const MosesVocabulary* target_vocab = target_vocab_.get();
  // File ids -> store ids, interned on first use.
  std::vector<WordId> source_ids(source_vocab_.size(), -1), target_ids(target_vocab ? target_vocab->size() : 0, -1);
  const auto source_word = [&](std::uint32_t id) {
    if (id >= source_ids.size()) tree_.corrupt("a source word id is not in " + source_vocab_.path());
    if (source_ids[id] < 0) source_ids[id] = out.vocab_.intern(source_vocab_.word(id));
    return source_ids[id];
  };
  const auto target_word = [&](std::uint32_t id) {
    if (id >= target_ids.size()) tree_.corrupt("a target word id is not in " + target_vocab->path());
    if (target_ids[id] < 0) target_ids[id] = out.vocab_.intern(target_vocab->word(id));
    return target_ids[id];
  };
  std::unordered_map<std::string, bool> asked;  // source key -> keep's answer
  std::vector<std::string> words;
  std::vector<double> scores;
  // One row: the source's ids (`source`, `n` of them), the target's (after the magic word).
  const auto row = [&](const std::uint32_t* source, std::size_t n, const std::uint32_t* target, std::size_t t,
                       std::uint64_t record) {
    std::string key;
    for (std::size_t i = 0; i < n; ++i) {
      const WordId w = source_word(source[i]);
      key.append(reinterpret_cast<const char*>(&w), sizeof w);
    }
    if (keep) {
      const auto [it, fresh] = asked.emplace(key, false);
      if (fresh) {
        words.clear();
        for (std::size_t i = 0; i < n; ++i) words.emplace_back(source_vocab_.word(source[i]));
        it->second = keep(words);
      }
      if (!it->second) return;
    }
    if (out.with_target_) {
      const WordId sep = -1;
      key.append(reinterpret_cast<const char*>(&sep), sizeof sep);
      for (std::size_t i = 0; i < t; ++i) {
        if (target[i] == kMagicWord) tree_.corrupt("a row's key holds two separators");
        const WordId w = target_word(target[i]);
        key.append(reinterpret_cast<const char*>(&w), sizeof w);
      }
    }
    read_record(record, num_scores_, scores);
    const auto [it, fresh] = out.rows_.emplace(std::move(key), static_cast<int>(out.rows_.size()));
    if (fresh) out.scores_.insert(out.scores_.end(), scores.begin(), scores.end());
    else tree_.corrupt("a row is listed twice");
  };
  MosesPrefixTree::Walk walk(tree_);
  if (filter == nullptr) {
    walk.each([&](const std::vector<std::uint32_t>& path, std::uint64_t record) {
      const auto magic = std::find(path.begin(), path.end(), kMagicWord);
      if (!out.with_target_) {
        if (magic != path.end()) tree_.corrupt("a row's key holds a separator, but there is no target vocabulary");
        row(path.data(), path.size(), nullptr, 0, record);
      } else {
        if (magic == path.begin() || magic == path.end() || magic + 1 == path.end())
          tree_.corrupt("a row's key lacks its source or target phrase");
        const std::size_t n = static_cast<std::size_t>(magic - path.begin());
        row(path.data(), n, path.data() + n + 1, path.size() - n - 1, record);
      }
    });
    return out;
  }
  // The source phrases of the batch found in the tree, each once; then their rows.
  std::vector<std::pair<std::vector<std::uint32_t>, MosesPrefixTree::Cursor>> sources;
  std::set<std::pair<std::uint64_t, std::uint32_t>> seen;  // the sources' positions (node, key index)
  std::vector<std::uint32_t> ids;
  constexpr std::uint32_t kUnknown = std::numeric_limits<std::uint32_t>::max();
  for (const auto& sentence : filter->sentences()) {
    ids.clear();
    for (const auto& w : sentence) {
      const std::int64_t id = source_vocab_.find(w);
      ids.push_back(id < 0 ? kUnknown : static_cast<std::uint32_t>(id));
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
      MosesPrefixTree::Cursor at;
      if (ids[i] == kUnknown || !walk.start(ids[i], at)) continue;
      for (std::size_t j = i;;) {
        if (seen.emplace(at.node, at.index).second)
          sources.emplace_back(std::vector<std::uint32_t>(ids.begin() + i, ids.begin() + j + 1), at);
        if (++j == ids.size() || ids[j] == kUnknown || !walk.extend(at, ids[j])) break;
      }
    }
  }
  for (auto& [source, at] : sources) {
    if (!out.with_target_) {
      const std::int64_t d = walk.data(at);
      if (d >= 0) row(source.data(), source.size(), nullptr, 0, static_cast<std::uint64_t>(d));
      continue;
    }
    MosesPrefixTree::Cursor magic = at;
    if (!walk.extend(magic, kMagicWord)) continue;
    walk.each_below(magic, [&](const std::vector<std::uint32_t>& target, std::uint64_t record) {
      row(source.data(), source.size(), target.data(), target.size(), record);
    });
  }
  return out;
}

}  // namespace fstdecode
