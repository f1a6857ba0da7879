// The KenLM binary reader: the layout is described in kenlm_binary.h. Nothing here trusts the
// file: the header's counts are checked, every table's extent is computed with overflow checks
// and compared with the file's size before the first query, and the queries only follow
// offsets that the load proved to lie inside the mapping.
#include "kenlm_binary.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>

#include "hash.h"

namespace fstdecode {

namespace {

const double kLn10 = std::log(10.0);  // as lm.cpp (Python's math.log(10))

constexpr char kMagicPrefix[] = "mmap lm http://kheafield.com/code";
constexpr char kMagicVersioned[] = "mmap lm http://kheafield.com/code format version";
constexpr char kMagicV5[] = "mmap lm http://kheafield.com/code format version 5\n";
constexpr char kMagicIncomplete[] = "mmap lm http://kheafield.com/code incomplete\n";

constexpr std::size_t kSanitySize = 88;      // magic (56) + 3 floats + 3 u32 + u64
constexpr std::size_t kParamsSize = 20;      // order, multiplier, type, has-vocab, version
constexpr std::size_t kFixedSize = kSanitySize + kParamsSize;
constexpr std::uint32_t kSignBit = 0x80000000u;
constexpr std::uint32_t kNoExtension = 0x80000000u;  // -0.0f: no stored n-gram extends this one

// KenLM's key fold constants (one word more to the left).
constexpr std::uint64_t kFoldCurrent = 8978948897894561157ULL;
constexpr std::uint64_t kFoldNext = 17894857484156487943ULL;

// The model types of the header and their names, as build_binary calls them.
const char* const kTypeNames[] = {"probing hash tables", "probing hash tables with rest costs", "trie",
                                  "quantized trie (build_binary -q)",
                                  "trie with array-compressed pointers (build_binary -a)",
                                  "quantized trie with array-compressed pointers (build_binary -q -a)"};

inline float bits_to_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float loadf(const unsigned char* p) { return bits_to_float(load32(p)); }
inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// `bits` (<= 57) bits starting `bit` bits into base (little-endian bit order).
inline std::uint64_t read_bits(const unsigned char* base, std::uint64_t bit, std::uint64_t mask) {
  return (load64(base + (bit >> 3)) >> (bit & 7)) & mask;
}

// KenLM's word hash: MurmurHash64A with seed 0 (hash.h).
std::uint64_t word_hash(std::string_view s) { return murmur_hash64a(s); }

inline std::uint64_t fold(std::uint64_t key, WordId word) {
  const std::uint32_t next = static_cast<std::uint32_t>(word) + 1u;  // KenLM adds in 32 bits
  return (key * kFoldCurrent) ^ (static_cast<std::uint64_t>(next) * kFoldNext);
}

inline unsigned required_bits(std::uint64_t max_value) {
  unsigned bits = 0;
  while (max_value != 0) {
    ++bits;
    max_value >>= 1;
  }
  return bits;
}

inline std::uint64_t mask_of(unsigned bits) { return bits == 0 ? 0 : ((std::uint64_t{1} << bits) - 1); }

inline std::uint64_t align8(std::uint64_t x) { return (x + 7) / 8 * 8; }

}  // namespace

void KenLMBinary::fail(const std::string& what) const { throw KenLMFormatError(path_ + ": " + what); }

KenLMBinary::KenLMBinary(const std::string& path) : path_(path) {
  try {
    file_ = std::make_unique<MappedFile>(path);
  } catch (const MappedFileError& e) {
    if (e.err == EISDIR || e.err == 0) fail("not a regular file, so not a KenLM binary");
    fail(std::string("cannot open this KenLM binary: ") + std::strerror(e.err));
  }
  data_ = file_->data();
  size_ = file_->size();
  load();
}

KenLMBinary::~KenLMBinary() = default;

void KenLMBinary::load() {
  auto starts_with = [&](const char* text) {
    const std::size_t n = std::strlen(text);
    return size_ >= n && std::memcmp(data_, text, n) == 0;
  };
  if (starts_with(kMagicIncomplete))
    fail("this KenLM binary did not finish building (build_binary failed or was interrupted)");
  if (!starts_with(kMagicPrefix)) fail("not a KenLM binary (it does not start with KenLM's magic text)");
  if (starts_with(kMagicVersioned) && !starts_with(kMagicV5)) {
    const std::size_t at = std::strlen(kMagicVersioned);
    std::string version;
    for (std::size_t i = at; i < size_ && i < at + 12 && data_[i] != '\n' && data_[i] != 0; ++i)
      version.push_back(static_cast<char>(data_[i]));
    fail("KenLM binary format version" + version + ", but this reader knows version 5: rebuild it from the ARPA file");
  }
  if (size_ < kFixedSize)
    fail("truncated KenLM binary: " + std::to_string(size_) + " bytes, shorter than its " +
         std::to_string(kFixedSize) + "-byte header");

  // The fixed test values: the magic text NUL-padded to 56 bytes, then 0.0f 1.0f -0.5f, 1,
  // 0xffffffff, 0 (u32), 1 (u64).
  unsigned char reference[kSanitySize] = {};
  std::memcpy(reference, kMagicV5, std::strlen(kMagicV5));
  const float floats[3] = {0.0f, 1.0f, -0.5f};
  std::memcpy(reference + 56, floats, 12);
  const std::uint32_t words[3] = {1u, 0xffffffffu, 0u};
  std::memcpy(reference + 68, words, 12);
  const std::uint64_t one = 1;
  std::memcpy(reference + 80, &one, 8);
  if (std::memcmp(data_, reference, kSanitySize) != 0)
    fail("corrupt KenLM binary header (its test values are wrong: damaged, or built on an architecture "
         "with another byte order or float format)");

  const unsigned order = data_[88];
  const float multiplier = loadf(data_ + 92);
  const std::uint32_t type = load32(data_ + 96);
  const unsigned has_vocab = data_[100];
  const std::uint32_t search_version = load32(data_ + 104);
  if (type >= sizeof(kTypeNames) / sizeof(kTypeNames[0]))
    fail("corrupt KenLM binary header: unknown model type " + std::to_string(type));
  if (type != 0 && type != 2)
    fail(std::string("this KenLM binary is a ") + kTypeNames[type] +
         ", which the native reader does not support: rebuild it with `build_binary probing` or "
         "`build_binary trie` (no -q, no -a), or use the ARPA file");
  kind_ = type == 0 ? Kind::kProbing : Kind::kTrie;
  const std::uint32_t want_version = kind_ == Kind::kProbing ? 0 : 1;
  if (search_version != want_version)
    fail(std::string("KenLM binary ") + kTypeNames[type] + " version " + std::to_string(search_version) +
         ", but this reader knows version " + std::to_string(want_version));
  if (order < 2)
    fail("corrupt KenLM binary header: order " + std::to_string(order) + " (KenLM binaries have order >= 2)");
  if (has_vocab > 1) fail("corrupt KenLM binary header: bad has-vocabulary flag");
  if (!(multiplier >= 1.0f && multiplier <= 1.0e6f))
    fail("corrupt KenLM binary header: probing multiplier " + std::to_string(multiplier));
  const std::size_t header = static_cast<std::size_t>(align8(kFixedSize + 8 * static_cast<std::uint64_t>(order)));
  if (size_ < header)
    fail("truncated KenLM binary: " + std::to_string(size_) + " bytes, shorter than its " + std::to_string(header) +
         "-byte header");
  order_ = static_cast<int>(order);
  counts_.resize(order);
  for (unsigned i = 0; i < order; ++i) {
    const std::uint64_t c = load64(data_ + kFixedSize + 8 * i);
    // A count must fit the file (every n-gram takes at least a few bits) and the bit packing.
    const std::uint64_t cap = i == 0 ? 0xfffffff0ULL : (std::uint64_t{1} << 56);
    if (c > cap || c > 8 * static_cast<std::uint64_t>(size_))
      fail("corrupt KenLM binary header: impossible " + std::to_string(i + 1) + "-gram count " + std::to_string(c));
    counts_[i] = static_cast<long>(c);
  }
  if (counts_[0] < 1) fail("corrupt KenLM binary header: no unigrams");
  if (kind_ == Kind::kProbing)
    load_probing(header);
  else
    load_trie(header);
}

namespace {

// Sizes summed with overflow checks (the counts are bounded, so this is belt and braces).
struct Extent {
  std::uint64_t at;
  bool overflow = false;
  void add(std::uint64_t n) {
    if (at + n < at) overflow = true;
    at += n;
  }
};

// KenLM's bucket count for a probing table of `entries`: max(entries + 1, multiplier * entries
// computed in float and truncated).
std::uint64_t probing_buckets(std::uint64_t entries, float multiplier) {
  const float product = multiplier * static_cast<float>(entries);
  const std::uint64_t scaled = static_cast<std::uint64_t>(product);  // < 1e18: load_probing checks
  return std::max<std::uint64_t>(entries + 1, scaled);
}

}  // namespace

void KenLMBinary::load_probing(std::size_t at) {
  const float multiplier = loadf(data_ + 92);
  for (long c : counts_)
    if (static_cast<double>(multiplier) * static_cast<double>(c) > 1.0e18)
      fail("corrupt KenLM binary header: a table would be larger than any file");
  const std::uint64_t c0 = static_cast<std::uint64_t>(counts_[0]);
  Extent e{at};
  const std::uint64_t vocab_at = e.at;
  vocab_buckets_ = probing_buckets(c0, multiplier);
  e.add(8);
  const std::uint64_t table_at = e.at;
  e.add(vocab_buckets_ * 12);
  const std::uint64_t unigram_at = e.at;
  e.add((c0 + 1) * 8);
  std::vector<std::uint64_t> table_at_of(static_cast<std::size_t>(order_));
  tables_.resize(static_cast<std::size_t>(order_ - 1));
  for (int n = 2; n <= order_; ++n) {
    ProbingTable& t = tables_[static_cast<std::size_t>(n - 2)];
    t.buckets = probing_buckets(static_cast<std::uint64_t>(counts_[static_cast<std::size_t>(n - 1)]), multiplier);
    t.entry_size = n < order_ ? 16 : 12;
    table_at_of[static_cast<std::size_t>(n - 1)] = e.at;
    e.add(t.buckets * t.entry_size);
  }
  if (e.overflow || e.at > size_)
    fail("truncated KenLM binary: its header's counts need " + std::to_string(e.at) + " bytes, the file has " +
         std::to_string(size_));
  if (load32(data_ + vocab_at) != 0)
    fail("corrupt KenLM binary: probing vocabulary version " + std::to_string(load32(data_ + vocab_at)) +
         " (expected 0)");
  bound_ = load32(data_ + vocab_at + 4);
  if (bound_ < 1 || bound_ > c0 + 1)
    fail("corrupt KenLM binary: " + std::to_string(bound_) + " words for " + std::to_string(c0) + " unigrams");
  vocab_table_ = data_ + table_at;
  unigrams_ = data_ + unigram_at;
  for (int n = 2; n <= order_; ++n)
    tables_[static_cast<std::size_t>(n - 2)].base = data_ + table_at_of[static_cast<std::size_t>(n - 1)];
  // Every id the vocabulary can answer must index the unigrams.
  for (std::uint64_t i = 0; i < vocab_buckets_; ++i) {
    const unsigned char* slot = vocab_table_ + 12 * i;
    if (load64(slot) != 0 && load32(slot + 8) >= bound_)
      fail("corrupt KenLM binary: its vocabulary table holds word id " + std::to_string(load32(slot + 8)) +
           " of " + std::to_string(bound_));
  }
  load_words(static_cast<std::size_t>(e.at));
}

void KenLMBinary::load_trie(std::size_t at) {
  const std::uint64_t c0 = static_cast<std::uint64_t>(counts_[0]);
  Extent e{at};
  if (size_ < at + 8) fail("truncated KenLM binary: it ends inside its vocabulary");
  sorted_count_ = load64(data_ + at);
  if (sorted_count_ > c0)
    fail("corrupt KenLM binary: " + std::to_string(sorted_count_) + " vocabulary hashes for " + std::to_string(c0) +
         " unigrams");
  e.add(8);
  const std::uint64_t sorted_at = e.at;
  e.add(8 * c0);
  const std::uint64_t unigram_at = e.at;
  e.add((c0 + 2) * 16);
  levels_.resize(static_cast<std::size_t>(order_ - 1));
  std::vector<std::uint64_t> level_at(static_cast<std::size_t>(order_ - 1));
  const unsigned word_bits = required_bits(c0);
  for (int n = 2; n <= order_; ++n) {
    TrieLevel& l = levels_[static_cast<std::size_t>(n - 2)];
    l.entries = static_cast<std::uint64_t>(counts_[static_cast<std::size_t>(n - 1)]);
    l.has_backoff = n < order_;
    l.word_bits = word_bits;
    l.next_bits = n < order_ ? required_bits(static_cast<std::uint64_t>(counts_[static_cast<std::size_t>(n)])) : 0;
    l.total_bits = word_bits + (n < order_ ? 63u : 31u) + l.next_bits;
    l.word_mask = mask_of(l.word_bits);
    l.next_mask = mask_of(l.next_bits);
    level_at[static_cast<std::size_t>(n - 2)] = e.at;
    e.add(((1 + l.entries) * l.total_bits + 7) / 8 + 8);
  }
  if (e.overflow || e.at > size_)
    fail("truncated KenLM binary: its header's counts need " + std::to_string(e.at) + " bytes, the file has " +
         std::to_string(size_));
  bound_ = static_cast<std::size_t>(sorted_count_ + 1);
  sorted_vocab_ = data_ + sorted_at;
  unigrams_ = data_ + unigram_at;
  for (int n = 2; n <= order_; ++n)
    levels_[static_cast<std::size_t>(n - 2)].base = data_ + level_at[static_cast<std::size_t>(n - 2)];
  load_words(static_cast<std::size_t>(e.at));
}

void KenLMBinary::load_words(std::size_t at) {
  if (data_[100] == 0) return;  // built without its words
  const char* p = reinterpret_cast<const char*>(data_) + at;
  const char* end = reinterpret_cast<const char*>(data_) + size_;
  if (end - p < 6 || std::memcmp(p, "<unk>", 6) != 0)
    fail("truncated or corrupt KenLM binary: its word list does not start with <unk>");
  if (end[-1] != '\0') fail("truncated KenLM binary: its word list does not end with a NUL byte");
  words_.reserve(bound_);
  while (p < end) {
    const char* z = static_cast<const char*>(std::memchr(p, 0, static_cast<std::size_t>(end - p)));
    words_.emplace_back(p, static_cast<std::size_t>(z - p));
    p = z + 1;
    if (words_.size() > bound_) break;
  }
  if (words_.size() != bound_)
    fail("truncated or corrupt KenLM binary: " + std::string(words_.size() > bound_ ? "more" : "fewer") +
         " words at its end than its " + std::to_string(bound_) + "-word vocabulary");
}

WordId KenLMBinary::index(std::string_view word) const {
  const std::uint64_t h = word_hash(word);
  if (kind_ == Kind::kProbing) {
    std::uint64_t i = h % vocab_buckets_;
    for (std::uint64_t probes = 0; probes < vocab_buckets_; ++probes) {
      const unsigned char* slot = vocab_table_ + 12 * i;
      const std::uint64_t key = load64(slot);
      if (key == h) return static_cast<WordId>(load32(slot + 8));  // checked < bound_ at load
      if (key == 0) return 0;
      if (++i == vocab_buckets_) i = 0;
    }
    return 0;
  }
  std::uint64_t lo = 0, hi = sorted_count_;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (load64(sorted_vocab_ + 8 * mid) < h)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < sorted_count_ && load64(sorted_vocab_ + 8 * lo) == h) return static_cast<WordId>(lo + 1);
  return 0;
}

void KenLMBinary::start(WordId w, float* prob, float* backoff, Node* node) const {
  const std::size_t id = static_cast<std::size_t>(w);
  if (kind_ == Kind::kProbing) {
    const unsigned char* u = unigrams_ + 8 * id;
    *prob = bits_to_float(load32(u) | kSignBit);
    *backoff = loadf(u + 4);
    node->a = static_cast<std::uint32_t>(w);
    return;
  }
  const unsigned char* u = unigrams_ + 16 * id;
  *prob = loadf(u);
  *backoff = loadf(u + 4);
  node->a = load64(u + 8);
  node->b = load64(u + 24);
}

bool KenLMBinary::step(Node* node, int len, WordId word, float* prob, float* backoff) const {
  if (kind_ == Kind::kProbing) {
    const ProbingTable& t = tables_[static_cast<std::size_t>(len - 2)];
    const std::uint64_t key = fold(node->a, word);
    node->a = key;
    std::uint64_t i = key % t.buckets;
    for (std::uint64_t probes = 0; probes < t.buckets; ++probes) {
      const unsigned char* slot = t.base + static_cast<std::size_t>(i) * t.entry_size;
      const std::uint64_t k = load64(slot);
      if (k == key) {
        *prob = bits_to_float(load32(slot + 8) | kSignBit);
        if (len < order_) *backoff = loadf(slot + 12);
        return true;
      }
      if (k == 0) return false;
      if (++i == t.buckets) i = 0;
    }
    return false;
  }
  const TrieLevel& l = levels_[static_cast<std::size_t>(len - 2)];
  // The children range, clipped to the level (a corrupt pointer finds nothing, reads nothing).
  std::uint64_t lo = std::min(node->a, l.entries), hi = std::min(node->b, l.entries);
  const std::uint64_t end = hi;
  const std::uint64_t target = static_cast<std::uint32_t>(word);
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (read_bits(l.base, mid * l.total_bits, l.word_mask) < target)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo >= end || read_bits(l.base, lo * l.total_bits, l.word_mask) != target) return false;
  const std::uint64_t at = lo * l.total_bits + l.word_bits;
  *prob = bits_to_float(static_cast<std::uint32_t>(read_bits(l.base, at, 0xffffffffULL)) | kSignBit);
  if (l.has_backoff) {
    *backoff = bits_to_float(static_cast<std::uint32_t>(read_bits(l.base, at + 31, 0xffffffffULL)));
    node->a = read_bits(l.base, at + 63, l.next_mask);
    node->b = read_bits(l.base, at + 63 + l.total_bits, l.next_mask);
  }
  return true;
}

bool KenLMBinary::find_backoff(const WordId* ctx, int n, float* backoff) const {
  float prob;
  Node node;
  start(ctx[n - 1], &prob, backoff, &node);
  for (int j = 2; j <= n; ++j)
    if (!step(&node, j, ctx[n - j], &prob, backoff)) return false;
  return true;
}

double KenLMBinary::logprob(const WordId* ctx, int n, WordId w) const {
  clip_context(ctx, n, order_);
  if (n < 0) n = 0;
  // The longest stored ctx[n-L..n) + w: its last word first, then leftwards.
  float prob, backoff, p;
  Node node;
  start(w, &prob, &backoff, &node);
  int matched = 0;
  for (int L = 1; L <= n; ++L) {
    if (!step(&node, L + 1, ctx[n - L], &p, &backoff)) break;
    prob = p;
    matched = L;
  }
  // Then the backoffs of the longer contexts ctx[n-j..n), j > matched, shortest first, in
  // float as KenLM sums them; a context that is not stored ends the chain (nothing longer is).
  if (matched < n) {
    Node c;
    start(ctx[n - 1], &p, &backoff, &c);
    if (matched < 1) prob += backoff;
    for (int j = 2; j <= n; ++j) {
      if (!step(&c, j, ctx[n - j], &p, &backoff)) break;
      if (j > matched) prob += backoff;
    }
  }
  return static_cast<double>(prob) * kLn10;
}

double KenLMBinary::logprob_facts(const WordId* ctx, int n, WordId w, const double* facts, const NextFacts* next) const {
  const int asked = n;  // next's suffixes: 1 .. asked + 1
  clip_context(ctx, n, order_);
  if (n < 0) n = 0;
  // logprob's walk from w leftwards: each stored suffix of ctx + w gives its probability and
  // backoff (the next context's facts, as backoff() and extends() read them); the first one not
  // stored ends it (KenLM's tables hold every suffix of a stored n-gram).
  float prob, backoff, p;
  Node node;
  start(w, &prob, &backoff, &node);
  auto record = [&](int l, bool found, float b) {  // the suffix of length l + 1
    const bool kept = found && l + 1 < order_;
    next->backoff[l] = kept && b != 0.0f ? static_cast<double>(b) * kLn10 : 0.0;
    next->extends[l] = kept && float_bits(b) != kNoExtension ? 1 : 0;
  };
  if (next != nullptr) record(0, true, backoff);
  int matched = 0;
  for (int L = 1; L <= n; ++L) {
    if (!step(&node, L + 1, ctx[n - L], &p, &backoff)) break;
    prob = p;
    matched = L;
    if (next != nullptr) record(L, true, backoff);
  }
  if (next != nullptr)
    for (int l = matched + 1; l <= asked; ++l) record(l, false, 0.0f);
  // The longer contexts' backoffs, shortest first, in float as logprob sums them: each fact is
  // backoff()'s double of a float, which converts back to that float exactly (0 for a context
  // not stored, adding nothing).
  for (int j = std::max(matched + 1, 1); j <= n; ++j) {
    const double f = facts[j - 1];
    if (f != 0.0) prob += static_cast<float>(f / kLn10);
  }
  return static_cast<double>(prob) * kLn10;
}

double KenLMBinary::unigram(WordId w) const {
  float prob, backoff;
  Node node;
  start(w, &prob, &backoff, &node);
  return static_cast<double>(prob) * kLn10;
}

double KenLMBinary::backoff(const WordId* ctx, int n) const {
  if (n <= 0 || n >= order_) return 0.0;
  float b;
  if (!find_backoff(ctx, n, &b) || b == 0.0f) return 0.0;
  return static_cast<double>(b) * kLn10;
}

bool KenLMBinary::extends(const WordId* ctx, int n) const {
  if (n <= 0 || n >= order_) return false;
  float b;
  return find_backoff(ctx, n, &b) && float_bits(b) != kNoExtension;
}

}  // namespace fstdecode
