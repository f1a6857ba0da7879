// The n-gram LM: ARPA reading and back-off scoring, value for value as fstdecode/io/arpa.py.
//
// The reader accepts what the reference reader, ArpaLM.from_file, accepts (the Python layer has
// already read and gunzipped the file): lines end at '\n', with one '\r' before it dropped
// (read_lines of io/files.py), a UTF-8 BOM may start the file, header lines are compared with
// their ASCII whitespace stripped (text_lines.h's ascii_strip), count lines are `ngram N=C`
// with ASCII whitespace and digits, n-gram fields are split on spaces and tabs only (KenLM's
// separators), and numbers follow the one number grammar of every model file (parse_double,
// text_lines.h). Values become natural logs as `v * LN10` with LN10 = log(10).
#include "lm.h"
#include "ngram_hash.h"
#include "text_lines.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace fstdecode {

namespace {

const double kLn10 = std::log(10.0);  // Python's math.log(10)
constexpr double kMissingUnkLog10 = -100.0;
// A \data\ count above this cannot match a section of a file that fits in memory.
constexpr long kCountCap = std::numeric_limits<long>::max() / 4;

using ngram_hash::hash_step;
using ngram_hash::kSeed;
using ngram_hash::mix64;
using ngram_hash::nonzero;

inline std::uint64_t load64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline std::uint64_t load32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// A word's hash: whole 8-byte words, the tail read as one overlapping load (no byte loops).
std::uint64_t hash_bytes(std::string_view s) {
  const char* p = s.data();
  const std::size_t n = s.size();
  std::uint64_t h = kSeed ^ (n * 0x9E3779B97F4A7C15ULL);
  std::uint64_t v;
  if (n >= 8) {
    std::size_t i = 0;
    for (; i + 8 < n; i += 8) h = mix64(h ^ load64(p + i)) + 0x9E3779B97F4A7C15ULL;
    v = load64(p + n - 8);
  } else if (n >= 4) {
    v = load32(p) | (load32(p + n - 4) << 32);
  } else if (n > 0) {
    v = static_cast<unsigned char>(p[0]) | (static_cast<std::uint64_t>(static_cast<unsigned char>(p[n / 2])) << 8) |
        (static_cast<std::uint64_t>(static_cast<unsigned char>(p[n - 1])) << 16);
  } else {
    v = 0;
  }
  return mix64(h ^ v);
}

// The first space or tab in [p, e), or e; reads up to `limit` (>= e), 8 bytes at a time.
inline const char* field_end(const char* p, const char* e, const char* limit) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  while (p + 8 <= limit && p < e) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    const std::uint64_t sp = v ^ (kOnes * ' ');
    const std::uint64_t tab = v ^ (kOnes * '\t');
    // The lowest set high bit marks the first zero byte exactly (little-endian order).
    const std::uint64_t hit = ((sp - kOnes) & ~sp & kHigh) | ((tab - kOnes) & ~tab & kHigh);
    if (hit) {
      const char* q = p + (__builtin_ctzll(hit) >> 3);
      return q < e ? q : e;
    }
    p += 8;
  }
#else
  (void)limit;
#endif
  while (p < e && *p != ' ' && *p != '\t') ++p;
  return p < e ? p : e;
}

}  // namespace

std::uint64_t hash_ngram(const WordId* ids, int n) {
  std::uint64_t h = kSeed;
  for (int i = n - 1; i >= 0; --i) h = hash_step(h, ids[i]);
  return nonzero(h);
}

// ---- Vocab --------------------------------------------------------------------------------

void Vocab::grow() {
  const std::size_t cap = slots_.empty() ? 64 : slots_.size() * 2;
  std::vector<Slot> fresh(cap);
  const std::size_t mask = cap - 1;
  for (const Slot& s : slots_) {
    if (s.id < 0) continue;
    std::size_t i = s.hash & mask;
    while (fresh[i].id >= 0) i = (i + 1) & mask;
    fresh[i] = s;
  }
  slots_.swap(fresh);
}

WordId Vocab::find(std::string_view word) const {
  if (!slots_.empty()) {
    const std::uint64_t h = hash_bytes(word);
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.id < 0) break;
      if (s.hash == h && words_[static_cast<std::size_t>(s.id)] == word) return s.id;
    }
  }
  for (const auto& a : aliases_)
    if (a.first == word) return a.second;
  return -1;
}

WordId Vocab::intern(std::string_view word) {
  if ((words_.size() + 1) * 2 > slots_.size()) grow();
  const std::uint64_t h = hash_bytes(word);
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = h & mask;
  for (;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.id < 0) break;
    if (s.hash == h && words_[static_cast<std::size_t>(s.id)] == word) return s.id;
  }
  const auto id = static_cast<WordId>(words_.size());
  words_.emplace_back(word);
  slots_[i] = Slot{h, id};
  return id;
}

void Vocab::alias(std::string_view spelling, WordId id) { aliases_.emplace_back(std::string(spelling), id); }

// ---- NgramLM::Table -------------------------------------------------------------------------

void NgramLM::Table::reserve(std::size_t n) {
  std::size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  if (cap <= cap_) return;
  std::vector<Slot, HugePageAllocator<Slot>> fresh(cap);
  const std::size_t mask = cap - 1;
  for (const Slot& s : slots_) {
    if (s.key == 0) continue;
    std::size_t i = s.key & mask;
    while (fresh[i].key != 0) i = (i + 1) & mask;
    fresh[i] = s;
  }
  slots_.swap(fresh);
  cap_ = cap, mask_ = mask;
}

NgramLM::Entry& NgramLM::Table::insert(std::uint64_t key) {
  if ((size_ + 1) * 2 > cap_) reserve(std::max<std::size_t>(size_ + 1, cap_));
  std::size_t i = key & mask_;
  for (;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == key) return s.entry;
    if (s.key == 0) break;
  }
  slots_[i].key = key;
  ++size_;
  return slots_[i].entry;
}

// ---- the ARPA reader ----------------------------------------------------------------------

class ArpaParser {
 public:
  explicit ArpaParser(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  NgramLM parse(int max_order);

 private:
  struct Mark {
    const char* p;
    long lineno;
  };
  Mark mark() const { return {p_, lineno_}; }
  void reset(Mark m) {
    p_ = m.p;
    lineno_ = m.lineno;
  }

  [[noreturn]] void fail(long line, const std::string& what) const {
    throw ArpaFormatError(line, "line " + std::to_string(line) + ": " + what);
  }

  // The next line without its '\n' and one '\r' before it; false at the end of the text.
  bool next_line(std::string_view& line) {
    if (p_ == end_) return false;
    const void* nl = std::memchr(p_, '\n', static_cast<std::size_t>(end_ - p_));
    const char* e = nl ? static_cast<const char*>(nl) : end_;
    const char* b = p_;
    p_ = nl ? e + 1 : end_;
    ++lineno_;
    if (e > b && e[-1] == '\r') --e;
    line = std::string_view(b, static_cast<std::size_t>(e - b));
    return true;
  }

  // The next line that is not blank, stripped; false at the end of the text.
  bool next_nonblank(std::string_view& line) {
    std::string_view raw;
    while (next_line(raw)) {
      line = ascii_strip(raw);
      if (!line.empty()) return true;
    }
    return false;
  }

  bool count_line(std::string_view s, long& n, long& count) const;
  void expect_section(int n);
  long read_section(int n, bool keep_backoff);
  long skip_section();
  void expect_end();

  const char* p_;
  const char* end_;
  long lineno_ = 0;
  NgramLM lm_;
  bool have_unk_ = false;
};

// `ngram\s+(\d+)\s*=\s*(\d+)`, the whole of s, with ASCII whitespace (is_ascii_space) for \s
// and ASCII digits for \d, as fstdecode/io/arpa.py's _COUNT_RE.
bool ArpaParser::count_line(std::string_view s, long& n, long& count) const {
  if (s.substr(0, 5) != "ngram") return false;
  std::size_t i = 5;
  auto spaces = [&]() {
    const std::size_t start = i;
    while (i < s.size() && is_ascii_space(s[i])) ++i;
    return i - start;
  };
  auto number = [&](long& v) {
    const std::size_t start = i;
    v = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i)
      v = v > kCountCap / 10 ? kCountCap : v * 10 + (s[i] - '0');
    return i > start;
  };
  if (spaces() == 0 || !number(n)) return false;
  spaces();
  if (i >= s.size() || s[i] != '=') return false;
  ++i;
  spaces();
  return number(count) && i == s.size();
}

void ArpaParser::expect_section(int n) {
  std::string_view line;
  if (!next_nonblank(line)) fail(lineno_, "file ended before section \\" + std::to_string(n) + "-grams:");
  if (line != "\\" + std::to_string(n) + "-grams:")
    fail(lineno_, "expected section header \\" + std::to_string(n) + "-grams:");
}

long ArpaParser::read_section(int n, bool keep_backoff) {
  NgramLM& lm = lm_;
  const int cap = n + 2;  // fields of a valid line: prob, n words, optional backoff
  std::vector<std::string_view> f(static_cast<std::size_t>(cap));
  std::vector<WordId> ids(static_cast<std::size_t>(n));
  // The words of the n-gram line above (views into the text) and their ids.
  std::vector<std::string_view> prev_words(static_cast<std::size_t>(n));
  std::vector<WordId> prev_ids(static_cast<std::size_t>(n));
  bool have_prev = false;
  NgramLM::Table* table = n >= 2 ? &lm.tables_[static_cast<std::size_t>(n - 2)] : nullptr;
  struct Pending {
    std::uint64_t key;
    double prob, backoff;
    bool set_backoff, mark_prefixes;
    long lineno;
  };
  constexpr std::size_t kBatch = 16;
  Pending batch[kBatch];
  std::vector<WordId> batch_ids(kBatch * static_cast<std::size_t>(n));
  std::size_t pending = 0;
  // Stores the batch in file order (so duplicates and prefix marks are as line by line).
  auto store = [&]() {
    for (std::size_t b = 0; b < pending; ++b) {
      const Pending& q = batch[b];
      const WordId* w = batch_ids.data() + b * static_cast<std::size_t>(n);
      if (lm.suffix_closed_) {  // (the shorter orders are read already)
        const NgramLM::Entry* suffix = n == 2 ? &lm.unigrams_[static_cast<std::size_t>(w[1])]
                                              : lm.tables_[static_cast<std::size_t>(n - 3)].find(hash_ngram(w + 1, n - 1));
        if (suffix == nullptr || !suffix->stored) lm.suffix_closed_ = false;
      }
      NgramLM::Entry& x = table->insert(q.key);
      if (x.stored) fail(q.lineno, "duplicate n-gram");
      x.stored = true;
      x.prob = q.prob;
      if (q.set_backoff) x.backoff = q.backoff;
      // Mark the proper prefixes as extended by an n-gram of length n (unless the line above,
      // of the same context, has). A prefix already marked was marked with its own prefixes,
      // by an n-gram no longer than this one: stop there.
      if (!q.mark_prefixes) continue;
      for (int k = n - 1; k >= 1; --k) {
        NgramLM::Entry& pre = k == 1 ? lm.unigrams_[static_cast<std::size_t>(w[0])]
                                     : lm.tables_[static_cast<std::size_t>(k - 2)].insert(hash_ngram(w, k));
        if (pre.min_ext != 0) break;
        pre.min_ext = n;
      }
    }
    pending = 0;
  };
  long entries = 0;
  std::string_view line;
  for (;;) {
    const Mark before = mark();
    if (!next_line(line)) break;
    // Split on spaces and tabs; nf == cap + 1 means "too many".
    int nf = 0;
    const char* p = line.data();
    const char* e = p + line.size();
    for (;;) {
      while (p < e && (*p == ' ' || *p == '\t')) ++p;
      if (p == e) break;
      const char* s = p;
      p = field_end(p, e, end_);
      if (nf == cap) {
        nf = cap + 1;
        break;
      }
      f[static_cast<std::size_t>(nf++)] = std::string_view(s, static_cast<std::size_t>(p - s));
    }
    if (nf == 0) continue;
    if (f[0][0] == '\\') {  // the next section header or \end\ (a probability never starts so)
      reset(before);
      break;
    }
    ++entries;
    if (nf != n + 1 && nf != n + 2)
      fail(lineno_, "expected a log10 probability, " + std::to_string(n) + " word(s) and an optional backoff");
    double v;
    if (!parse_double(f[0], v)) fail(lineno_, "log10 probability is not a number");
    if (v > 0.0) fail(lineno_, "positive log10 probability");
    if (v != v) fail(lineno_, "log10 probability is NaN");
    const double prob = v * kLn10;
    double backoff = 0.0;
    if (nf == n + 2) {
      double b;
      if (!parse_double(f[static_cast<std::size_t>(n + 1)], b) || !std::isfinite(b))
        fail(lineno_, "log10 backoff is not a finite number");
      backoff = b * kLn10;
    }
    const bool set_backoff = keep_backoff && backoff != 0.0;
    if (n == 1) {
      const std::string_view w = f[1];
      WordId id;
      if (w == "<unk>" || w == "<UNK>") {
        if (have_unk_) fail(lineno_, "duplicate unigram");
        id = lm.vocab_.intern("<unk>");
        if (w == "<UNK>") lm.vocab_.alias("<UNK>", id);
        have_unk_ = true;
        lm.unk_ = id;
      } else {
        const std::size_t before_size = lm.vocab_.size();
        id = lm.vocab_.intern(w);
        if (lm.vocab_.size() == before_size) fail(lineno_, "duplicate unigram");
      }
      if (static_cast<std::size_t>(id) >= lm.unigrams_.size()) lm.unigrams_.resize(static_cast<std::size_t>(id) + 1);
      NgramLM::Entry& u = lm.unigrams_[static_cast<std::size_t>(id)];
      u.stored = true;
      u.prob = prob;
      if (set_backoff) u.backoff = backoff;
      continue;
    }
    // ARPA files list n-grams sorted by their context, so a word is mostly the one above it.
    bool same_context = have_prev;
    for (int k = 0; k < n; ++k) {
      const auto i = static_cast<std::size_t>(k);
      const std::string_view w = f[i + 1];
      if (have_prev && w == prev_words[i]) {
        ids[i] = prev_ids[i];
        continue;
      }
      if (k < n - 1) same_context = false;
      const WordId id = lm.vocab_.find(w);
      if (id < 0) fail(lineno_, "word not in \\1-grams:");
      ids[i] = id;
      prev_words[i] = w;
      prev_ids[i] = id;
    }
    have_prev = true;
    // Stored in batches: the slots of a batch are prefetched, so their cache misses overlap.
    Pending& q = batch[pending];
    q.key = hash_ngram(ids.data(), n);
    q.prob = prob;
    q.backoff = backoff;
    q.set_backoff = set_backoff;
    q.mark_prefixes = !same_context;
    q.lineno = lineno_;
    table->prefetch(q.key);
    // (every line's ids: the suffix check reads them, the prefix marks too)
    std::copy(ids.begin(), ids.end(), batch_ids.begin() + static_cast<std::ptrdiff_t>(pending * static_cast<std::size_t>(n)));
    if (q.mark_prefixes && n >= 3) lm.tables_[static_cast<std::size_t>(n - 3)].prefetch(hash_ngram(ids.data(), n - 1));
    if (lm.suffix_closed_ && n >= 3) lm.tables_[static_cast<std::size_t>(n - 3)].prefetch(hash_ngram(ids.data() + 1, n - 1));
    if (++pending == kBatch) store();
  }
  store();
  return entries;
}

long ArpaParser::skip_section() {
  long entries = 0;
  std::string_view line;
  for (;;) {
    const Mark before = mark();
    if (!next_line(line)) break;
    const std::string_view s = ascii_strip(line);
    if (s.empty()) continue;
    if (s[0] == '\\') {
      reset(before);
      break;
    }
    ++entries;
  }
  return entries;
}

void ArpaParser::expect_end() {
  std::string_view line;
  if (!next_nonblank(line)) fail(lineno_, "missing \\end\\");
  if (line != "\\end\\") fail(lineno_, "expected \\end\\");
  if (next_nonblank(line)) fail(lineno_, "text after \\end\\");
}

NgramLM ArpaParser::parse(int max_order) {
  std::string_view line;
  if (!next_nonblank(line)) fail(std::max(lineno_, 1L), "missing \\data\\ header (file is empty)");
  if (line != "\\data\\") fail(lineno_, "missing \\data\\ header");
  const long data_lineno = lineno_;

  std::vector<long> declared;
  for (;;) {
    const Mark before = mark();
    if (!next_nonblank(line)) fail(lineno_, "file ended inside the \\data\\ header");
    if (line[0] == '\\') {
      reset(before);
      break;
    }
    long n, count;
    if (!count_line(line, n, count)) fail(lineno_, "malformed count line in \\data\\");
    if (n != static_cast<long>(declared.size()) + 1) fail(lineno_, "n-gram counts must be consecutive from 1");
    declared.push_back(count);
  }
  if (declared.empty()) fail(data_lineno, "\\data\\ declares no n-gram counts");

  const int file_order = static_cast<int>(declared.size());
  const int keep = max_order == 0 ? file_order : std::min(max_order, file_order);
  lm_.order_ = keep;
  lm_.counts_.assign(declared.begin(), declared.begin() + keep);
  lm_.tables_.resize(static_cast<std::size_t>(keep - 1));
  // Reserve from the counts, but no more than the text could hold (the counts are not trusted).
  const auto room = static_cast<long>((end_ - p_) / 4 + 1);
  lm_.unigrams_.reserve(static_cast<std::size_t>(std::min(declared[0], room) + 1));
  for (int n = 2; n <= keep; ++n)
    lm_.tables_[static_cast<std::size_t>(n - 2)].reserve(
        static_cast<std::size_t>(std::min(declared[static_cast<std::size_t>(n - 1)], room)));

  for (int n = 1; n <= file_order; ++n) {
    expect_section(n);
    const long header_lineno = lineno_;
    const long entries = n <= keep ? read_section(n, n < keep) : skip_section();
    if (entries != declared[static_cast<std::size_t>(n - 1)])
      fail(header_lineno, "section \\" + std::to_string(n) + "-grams: has " + std::to_string(entries) +
                              " entries but \\data\\ declares " +
                              std::to_string(declared[static_cast<std::size_t>(n - 1)]));
    if (n == 1 && !have_unk_) {
      const WordId id = lm_.vocab_.intern("<unk>");
      lm_.unigrams_.resize(static_cast<std::size_t>(id) + 1);
      NgramLM::Entry& u = lm_.unigrams_[static_cast<std::size_t>(id)];
      u.stored = true;
      u.prob = kMissingUnkLog10 * kLn10;
      lm_.unk_ = id;
      have_unk_ = true;
    }
  }
  expect_end();
  return std::move(lm_);
}

// ---- NgramLM --------------------------------------------------------------------------------

NgramLM NgramLM::parse_arpa(std::string_view text, int max_order) {
  if (max_order < 0) throw ArpaFormatError(0, "max_order must be >= 1");
  const std::size_t bad = utf8_error(text);
  if (bad != text.size()) {
    const long line = 1 + static_cast<long>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n'));
    throw ArpaFormatError(line, "line " + std::to_string(line) + ": invalid UTF-8");
  }
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  return ArpaParser(text).parse(max_order);
}

WordId NgramLM::index(std::string_view word) const {
  const WordId id = vocab_.find(word);
  return id < 0 ? unk_ : id;
}

double NgramLM::logprob(const WordId* ctx, int n, WordId w) const {
  clip_context(ctx, n, order_);
  if (n <= 0) return 0.0 + unigrams_[static_cast<std::size_t>(w)].prob;
  // hw[L]: key of ctx[n-L..n) + w; hc[L]: key of ctx[n-L..n). Folded from the right.
  constexpr int kStack = 32;
  std::uint64_t stack_buf[2 * (kStack + 1)];
  std::vector<std::uint64_t> heap_buf;
  std::uint64_t* hw = stack_buf;
  if (n > kStack) {
    heap_buf.resize(2 * (static_cast<std::size_t>(n) + 1));
    hw = heap_buf.data();
  }
  std::uint64_t* hc = hw + n + 1;
  ngram_hash::query_keys(ctx, n, w, [this, hw, hc](int L, std::uint64_t kw, std::uint64_t kc) {
    hw[L] = kw;
    hc[L] = kc;
    tables_[static_cast<std::size_t>(L - 1)].prefetch(kw);
    if (L >= 2) tables_[static_cast<std::size_t>(L - 2)].prefetch(kc);
  });
  return ngram_hash::backoff_score(
      n, hw, hc,
      [this](int L, std::uint64_t key, double* p) {
        const Entry* e = tables_[static_cast<std::size_t>(L - 1)].find(key);
        if (e == nullptr || !e->stored) return false;
        *p = e->prob;
        return true;
      },
      [this, ctx, n](int L, std::uint64_t key) {
        const Entry* b = L == 1 ? &unigrams_[static_cast<std::size_t>(ctx[n - 1])]
                                : tables_[static_cast<std::size_t>(L - 2)].find(key);
        return b != nullptr ? b->backoff : 0.0;
      },
      unigrams_[static_cast<std::size_t>(w)].prob);
}

namespace {
// A stored natural log as the float of its log10 (the file's value; an infinity stays one).
float log10_of(double ln) { return std::isfinite(ln) ? static_cast<float>(ln / kLn10) : static_cast<float>(ln); }
}  // namespace

float NgramLM::log10_float(const WordId* ctx, int n, WordId w) const {
  clip_context(ctx, n, order_);
  std::vector<std::uint64_t> hw(static_cast<std::size_t>(n) + 1), hc(static_cast<std::size_t>(n) + 1);
  ngram_hash::query_keys(ctx, n, w, [&](int L, std::uint64_t kw, std::uint64_t kc) {
    hw[static_cast<std::size_t>(L)] = kw;
    hc[static_cast<std::size_t>(L)] = kc;
  });
  int match = 0;  // the context words of the longest stored n-gram
  double prob = unigrams_[static_cast<std::size_t>(w)].prob;
  for (int L = n; L >= 1; --L) {
    const Entry* e = tables_[static_cast<std::size_t>(L - 1)].find(hw[static_cast<std::size_t>(L)]);
    if (e != nullptr && e->stored) {
      match = L;
      prob = e->prob;
      break;
    }
  }
  float score = log10_of(prob);
  for (int L = match + 1; L <= n; ++L) {  // the contexts the match leaves out, shortest first
    const Entry* b = L == 1 ? &unigrams_[static_cast<std::size_t>(ctx[n - 1])]
                            : tables_[static_cast<std::size_t>(L - 2)].find(hc[static_cast<std::size_t>(L)]);
    if (b != nullptr && b->backoff != 0.0) score += log10_of(b->backoff);
  }
  return score;
}

void NgramLM::prefetch(const WordId* ctx, int n, WordId w) const {
  clip_context(ctx, n, order_);
  // The keys logprob computes (hw[L], hc[L]), in the same fold.
  ngram_hash::query_keys(ctx, n, w, [this](int L, std::uint64_t kw, std::uint64_t kc) {
    tables_[static_cast<std::size_t>(L - 1)].prefetch(kw);
    if (L >= 2) tables_[static_cast<std::size_t>(L - 2)].prefetch(kc);
  });
}

void NgramLM::facts(const WordId* ctx, int n, double* out) const {
  const int top = std::min(n, order_ - 1);  // the longest suffix with a backoff
  for (int L = top + 1; L <= n; ++L) out[L - 1] = 0.0;
  if (top < 1) return;
  constexpr int kStack = 32;
  std::uint64_t stack_buf[kStack + 1];
  std::vector<std::uint64_t> heap_buf;
  std::uint64_t* key = stack_buf;
  if (top > kStack) {
    heap_buf.resize(static_cast<std::size_t>(top) + 1);
    key = heap_buf.data();
  }
  std::uint64_t h = hash_step(kSeed, ctx[n - 1]);
  for (int L = 2; L <= top; ++L) {
    h = hash_step(h, ctx[n - L]);
    key[L] = nonzero(h);  // hash_ngram(ctx + n - L, L)
    tables_[static_cast<std::size_t>(L - 2)].prefetch(key[L]);
  }
  out[0] = unigrams_[static_cast<std::size_t>(ctx[n - 1])].backoff;
  for (int L = 2; L <= top; ++L) {
    const Entry* e = tables_[static_cast<std::size_t>(L - 2)].find(key[L]);
    out[L - 1] = e != nullptr ? e->backoff : 0.0;
  }
}

double NgramLM::logprob_facts(const WordId* ctx, int n, WordId w, const double* facts, const NextFacts* next) const {
  const int asked = n;  // next's suffixes: 1 .. asked + 1
  clip_context(ctx, n, order_);
  // at[L]: the entry of ctx[n-L..n) + w (L = 0: w's unigram), or null when absent; the keys are
  // query_keys' hw[L] (hash_ngram of the same words), every slot prefetched before any is read.
  constexpr int kStack = 32;
  const Entry* stack_at[kStack + 1];
  std::uint64_t stack_key[kStack + 1];
  std::vector<const Entry*> heap_at;
  std::vector<std::uint64_t> heap_key;
  const Entry** at = stack_at;
  std::uint64_t* key = stack_key;
  if (n > kStack) {
    heap_at.resize(static_cast<std::size_t>(n) + 1);
    heap_key.resize(static_cast<std::size_t>(n) + 1);
    at = heap_at.data();
    key = heap_key.data();
  }
  ngram_hash::word_keys(ctx, n, w, [&](int L, std::uint64_t k) {
    key[L] = k;
    tables_[static_cast<std::size_t>(L - 1)].prefetch(k);
  });
  const Entry& uni = unigrams_[static_cast<std::size_t>(w)];
  // ngram_hash::backoff_score's rule with the facts for its backoff lookups: the longest stored
  // n-gram's probability plus the backoffs of the longer contexts, longest first, zeros skipped.
  double result;
  if (suffix_closed_) {
    // Shortest first, up to the first absent n-gram (suffix_closed): the same longest match.
    int L = 0, l = 1;
    for (; l <= n; ++l) {
      const Entry* e = tables_[static_cast<std::size_t>(l - 1)].find(key[l]);
      at[l] = e;
      if (e == nullptr) break;
      if (e->stored) L = l;
    }
    for (; l <= n; ++l) at[l] = nullptr;
    double total = 0.0;
    for (int k = n; k > L; --k) {
      const double b = facts[k - 1];
      if (b != 0.0) total += b;
    }
    result = L >= 1 ? total + at[L]->prob : total + uni.prob;
    if (next == nullptr) return result;
  } else {
    double total = 0.0;
    int L = n;
    for (; L >= 1; --L) {
      const Entry* e = tables_[static_cast<std::size_t>(L - 1)].find(key[L]);
      at[L] = e;
      if (e != nullptr && e->stored) break;
      const double b = facts[L - 1];
      if (b != 0.0) total += b;
    }
    result = L >= 1 ? total + at[L]->prob : total + uni.prob;
    if (next == nullptr) return result;
    for (int l = L - 1; l >= 1; --l) at[l] = tables_[static_cast<std::size_t>(l - 1)].find(key[l]);
  }
  at[0] = &uni;
  // The suffix of length l + 1 of ctx + w is at[l]'s n-gram; those of order_ words or more have
  // no backoff and extend nothing (backoff, extends).
  for (int l = 0; l <= asked; ++l) {
    const Entry* e = l + 1 < order_ && l <= n ? at[l] : nullptr;
    next->backoff[l] = e != nullptr ? e->backoff : 0.0;
    next->extends[l] = e != nullptr && e->min_ext != 0 ? 1 : 0;
  }
  return result;
}

void NgramLM::prefetch_facts(const WordId* ctx, int n, WordId w) const {
  clip_context(ctx, n, order_);
  ngram_hash::word_keys(ctx, n, w, [&](int L, std::uint64_t k) { tables_[static_cast<std::size_t>(L - 1)].prefetch(k); });
}

double NgramLM::backoff(const WordId* ctx, int n) const {
  if (n <= 0 || n >= order_) return 0.0;
  if (n == 1) return unigrams_[static_cast<std::size_t>(ctx[0])].backoff;
  const Entry* e = tables_[static_cast<std::size_t>(n - 2)].find(hash_ngram(ctx, n));
  return e != nullptr ? e->backoff : 0.0;
}

bool NgramLM::extends(const WordId* ctx, int n) const {
  if (n <= 0 || n >= order_) return false;
  if (n == 1) return unigrams_[static_cast<std::size_t>(ctx[0])].min_ext != 0;
  const Entry* e = tables_[static_cast<std::size_t>(n - 2)].find(hash_ngram(ctx, n));
  return e != nullptr && e->min_ext != 0;
}

int NgramLM::trim(const WordId* ctx, int n, double* backoffs) const {
  // key[L]: hash_ngram of the suffix ctx[n-L..n), L >= 2 (the fold hash_ngram makes, from the
  // last word); suffixes of order_ words or more are neither extended nor backed off.
  constexpr int kStack = 32;
  std::uint64_t stack_buf[kStack + 1];
  std::vector<std::uint64_t> heap_buf;
  std::uint64_t* key = stack_buf;
  const int top = std::min(n, order_ - 1);  // the longest suffix with an entry
  if (top > kStack) {
    heap_buf.resize(static_cast<std::size_t>(top) + 1);
    key = heap_buf.data();
  }
  if (top >= 1) {
    std::uint64_t h = hash_step(kSeed, ctx[n - 1]);
    for (int L = 2; L <= top; ++L) {
      h = hash_step(h, ctx[n - L]);
      key[L] = nonzero(h);
      tables_[static_cast<std::size_t>(L - 2)].prefetch(key[L]);
    }
  }
  int d = 0;
  for (; d < n; ++d) {
    const int L = n - d;
    if (L >= order_) {  // extends() false, backoff() 0
      backoffs[d] = 0.0;
      continue;
    }
    const Entry* e = L == 1 ? &unigrams_[static_cast<std::size_t>(ctx[n - 1])]
                            : tables_[static_cast<std::size_t>(L - 2)].find(key[L]);
    if (e != nullptr && e->min_ext != 0) break;
    backoffs[d] = e != nullptr ? e->backoff : 0.0;
  }
  return d;
}

void NgramLM::prefetch_trim(const WordId* ctx, int n) const {
  const int top = std::min(n, order_ - 1);
  if (top < 1) return;
#if defined(__GNUC__)
  __builtin_prefetch(&unigrams_[static_cast<std::size_t>(ctx[n - 1])]);
#endif
  std::uint64_t h = hash_step(kSeed, ctx[n - 1]);
  for (int L = 2; L <= top; ++L) {
    h = hash_step(h, ctx[n - L]);
    tables_[static_cast<std::size_t>(L - 2)].prefetch(nonzero(h));
  }
}

NgramLM NgramLM::restrict(int order) const {
  if (order < 1 || order > order_)
    throw std::invalid_argument("cannot restrict an order-" + std::to_string(order_) + " model to order " +
                                std::to_string(order));
  NgramLM out;
  out.order_ = order;
  out.unk_ = unk_;
  out.vocab_ = vocab_;
  out.counts_.assign(counts_.begin(), counts_.begin() + order);
  out.suffix_closed_ = suffix_closed_;  // (the stored n-grams of the orders kept, and their suffixes, stay)
  auto adjust = [order](Entry& e, int length) {
    if (e.min_ext > order) e.min_ext = 0;
    if (length >= order) e.backoff = 0.0;
  };
  out.unigrams_ = unigrams_;
  for (Entry& e : out.unigrams_) adjust(e, 1);
  out.tables_.resize(static_cast<std::size_t>(order - 1));
  for (int n = 2; n <= order; ++n) {
    const Table& from = tables_[static_cast<std::size_t>(n - 2)];
    Table& to = out.tables_[static_cast<std::size_t>(n - 2)];
    from.for_each([&](std::uint64_t key, const Entry& e) {
      if (!e.stored && !(e.min_ext != 0 && e.min_ext <= order)) return;
      Entry& x = to.insert(key);
      x = e;
      adjust(x, n);
    });
  }
  return out;
}

}  // namespace fstdecode
