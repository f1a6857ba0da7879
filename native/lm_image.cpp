#include "lm_image.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <unordered_map>
#include <vector>

#include "lm_value_code.h"
#include "ngram_hash.h"
#include "text_lines.h"

namespace fstdecode {

namespace {

constexpr char kMagic[16] = {'f', 's', 't', 'd', 'e', 'c', 'o', 'd', 'e', ' ', 'l', 'm', '\n', 0, 0, 0};
constexpr std::uint32_t kByteOrder = 0x01020304;
constexpr int kMaxOrder = 32;
enum Section {
  S_PATH, S_WORD_OFF, S_WORD_BLOB, S_ALIAS_ID, S_ALIAS_OFF, S_ALIAS_BLOB, S_COUNTS, S_UNIGRAMS,
  S_ESCAPES, S_SHAPES, S_EXT, S_SLOTS
};
constexpr int kSections = S_SLOTS + kMaxOrder - 1;
constexpr unsigned kMidSlot = 16, kTopSlot = 12;  // {key, prob, backoff}, {key, prob}
// The load factor written: capacity = size / kLoad. An ordered table's lookups (hits and misses
// alike) scan about (1 + 1 / (1 - load)) / 2 slots: 3.8 at 0.85, within one or two cache lines.
constexpr double kLoad = 0.85;
// The prob field of an n-gram that is only a prefix of stored ones.
constexpr std::uint32_t kPrefixOnly = value_code::kEscapeK << value_code::kMantissaBits | value_code::kMantissaMask;
constexpr std::uint32_t kExtends = value_code::kSign;  // the prob field's flag bit

// The fields before begin[] are as version 1's (tests/unit/test_binarize.py reads begin[] at 80).
struct Header {
  char magic[16];
  std::uint32_t byte_order, version, order, unk, mid_slot, top_slot;
  std::uint64_t file_size, words, aliases;
  std::int64_t stamp_size, stamp_mtime_ns;
  std::uint64_t begin[kSections], end[kSections];
  std::uint64_t hash_check;  // hash_ngram's key of kHashProbe
  std::uint64_t flags;       // version 3 on (kFlagSuffixClosed); version 2's header ends before it
};
// flags: the source model is suffix-closed (NgramLM::suffix_closed).
constexpr std::uint64_t kFlagSuffixClosed = 1;
// Version 2's header: all of Header but flags (read as 0).
constexpr std::size_t kHeaderV2 = offsetof(Header, flags);
static_assert(sizeof(Header) % 8 == 0, "sections start 8-aligned");
constexpr WordId kHashProbe[3] = {3, 1, 4};

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw LmImageError(path + ": " + what + "; the LM image is corrupt or truncated: run fstdecode binarize again");
}

// The home slot of `key` in a table of `cap` slots: its rank in [0, cap), monotone in the key.
inline std::uint64_t home(std::uint64_t key, std::uint64_t cap) {
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(key) * cap) >> 64);
}

}  // namespace

// A file of at least "fstdec" that is a prefix of the magic is an LM image cut short.
bool is_lm_image(const std::string& path) { return starts_like(path, kMagic, sizeof kMagic, 6); }

// ---- the writer ---------------------------------------------------------------------------

void LmImage::write(const NgramLM& lm, const SourceStamp& stamp, const std::string& path) {
  if (lm.order_ > kMaxOrder) throw LmImageError(path + ": an LM image holds at most order " + std::to_string(kMaxOrder));
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.byte_order = kByteOrder;
  h.version = kLmImageVersion;
  h.order = static_cast<std::uint32_t>(lm.order_);
  h.unk = static_cast<std::uint32_t>(lm.unk_);
  h.mid_slot = kMidSlot, h.top_slot = kTopSlot;
  h.words = lm.vocab_.size();
  h.aliases = lm.vocab_.aliases().size();
  h.stamp_size = stamp.size;
  h.stamp_mtime_ns = stamp.mtime_ns;
  h.hash_check = hash_ngram(kHashProbe, 3);
  h.flags = lm.suffix_closed_ ? kFlagSuffixClosed : 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::uint64_t at = 0;
  auto fail = [&] { throw std::runtime_error(path + ": cannot write: " + std::strerror(errno ? errno : EIO)); };
  auto put = [&](const void* data, std::size_t n) {
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    if (!out) fail();
    at += n;
  };
  auto align = [&] {
    static const char zeros[8] = {};
    if (at % 8) put(zeros, 8 - at % 8);
  };
  auto section = [&](int s, const void* data, std::size_t n) {
    align();
    h.begin[s] = at;
    put(data, n);
    h.end[s] = at;
  };
  if (!out) fail();
  put(&h, sizeof h);
  section(S_PATH, stamp.path.data(), stamp.path.size());
  std::vector<std::uint64_t> off{0};
  std::string blob;
  for (std::size_t i = 0; i < h.words; ++i) {
    blob += lm.vocab_.word(static_cast<WordId>(i));
    off.push_back(blob.size());
  }
  section(S_WORD_OFF, off.data(), off.size() * 8);
  section(S_WORD_BLOB, blob.data(), blob.size());
  std::vector<std::int32_t> alias_ids;
  off.assign(1, 0);
  blob.clear();
  for (const auto& [spelling, id] : lm.vocab_.aliases()) {
    alias_ids.push_back(id);
    blob += spelling;
    off.push_back(blob.size());
  }
  section(S_ALIAS_ID, alias_ids.data(), alias_ids.size() * 4);
  section(S_ALIAS_OFF, off.data(), off.size() * 8);
  section(S_ALIAS_BLOB, blob.data(), blob.size());
  std::vector<std::int64_t> counts(lm.counts_.begin(), lm.counts_.end());
  section(S_COUNTS, counts.data(), counts.size() * 8);
  // Unigrams field by field into zeroed records (no padding bytes of memory in the file).
  struct Unigram {
    double prob, backoff;
    std::int32_t min_ext, pad;
  };
  std::vector<Unigram> unigrams(lm.unigrams_.size(), Unigram{0.0, 0.0, 0, 0});
  for (std::size_t i = 0; i < unigrams.size(); ++i) {
    const NgramLM::Entry& e = lm.unigrams_[i];
    unigrams[i].prob = e.prob, unigrams[i].backoff = e.backoff, unigrams[i].min_ext = e.min_ext;
  }
  section(S_UNIGRAMS, unigrams.data(), unigrams.size() * sizeof(Unigram));

  // The tables' records, each order sorted by key (the slots are written after the escapes).
  std::vector<double> escapes;
  std::unordered_map<std::uint64_t, std::uint32_t> escape_of;  // a double's bits -> its index
  auto escape = [&](double v) {
    std::uint64_t b;
    std::memcpy(&b, &v, 8);
    const auto it = escape_of.find(b);
    if (it != escape_of.end()) return value_code::escape(it->second);
    if (escapes.size() > value_code::kMaxEscape)
      throw LmImageError(path + ": too many scores without a short decimal form for an LM image");
    const auto i = static_cast<std::uint32_t>(escapes.size());
    escapes.push_back(v);
    escape_of.emplace(b, i);
    return value_code::escape(i);
  };
  struct Record {
    std::uint64_t key;
    std::uint32_t prob, backoff;
  };
  struct Ext {
    std::uint64_t key;
    std::uint32_t n, min_ext;
  };
  std::vector<Ext> ext;
  std::vector<std::vector<Record>> records(lm.tables_.size());
  std::vector<std::uint64_t> shapes;
  for (std::size_t t = 0; t < lm.tables_.size(); ++t) {
    const int n = static_cast<int>(t) + 2;
    const bool top = n == lm.order_;
    std::vector<Record>& recs = records[t];
    recs.reserve(lm.tables_[t].size());
    lm.tables_[t].for_each([&](std::uint64_t key, const NgramLM::Entry& e) {
      std::uint32_t prob = kPrefixOnly, code = 0;
      if (e.stored) prob = value_code::encode(e.prob, &code) && (code & value_code::kSign) ? code & ~value_code::kSign : escape(e.prob);
      if (e.min_ext != 0) prob |= kExtends;
      if (e.min_ext != 0 && e.min_ext != n + 1)
        ext.push_back(Ext{key, static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(e.min_ext)});
      std::uint32_t backoff = 0;
      if (!top) {
        backoff = value_code::encode(e.backoff, &code) ? code : escape(e.backoff);
      } else if (e.backoff != 0.0 || std::signbit(e.backoff)) {
        throw LmImageError(path + ": an n-gram of the highest order has a backoff (NgramLM keeps none)");
      }
      recs.push_back(Record{key, prob, backoff});
    });
    std::sort(recs.begin(), recs.end(), [](const Record& a, const Record& b) { return a.key < b.key; });
    const auto size = static_cast<std::uint64_t>(recs.size());
    const std::uint64_t cap = size == 0 ? 0 : static_cast<std::uint64_t>(std::ceil(static_cast<double>(size) / kLoad));
    std::uint64_t next = 0;  // the slot after the last placed
    for (const Record& r : recs) next = std::max(home(r.key, cap), next) + 1;
    shapes.push_back(cap), shapes.push_back(std::max(next, cap)), shapes.push_back(size);
  }
  std::sort(ext.begin(), ext.end(), [](const Ext& a, const Ext& b) { return a.n != b.n ? a.n < b.n : a.key < b.key; });
  section(S_ESCAPES, escapes.data(), escapes.size() * 8);
  section(S_SHAPES, shapes.data(), shapes.size() * 8);
  section(S_EXT, ext.data(), ext.size() * sizeof(Ext));
  std::vector<unsigned char> chunk;
  for (std::size_t t = 0; t < records.size(); ++t) {
    const unsigned stride = static_cast<int>(t) + 2 == lm.order_ ? kTopSlot : kMidSlot;
    const std::uint64_t cap = shapes[3 * t], slots = shapes[3 * t + 1];
    align();
    h.begin[S_SLOTS + t] = at;
    // Written a chunk of slots at a time: record by record, zeros in the gaps.
    constexpr std::uint64_t kChunk = 1 << 16;
    std::uint64_t next = 0, flushed = 0;
    auto flush = [&](std::uint64_t upto) {  // writes slots [flushed, upto)
      put(chunk.data(), (upto - flushed) * stride);
      flushed = upto;
      chunk.assign(static_cast<std::size_t>(kChunk * stride), 0);
    };
    chunk.assign(static_cast<std::size_t>(kChunk * stride), 0);
    for (const Record& r : records[t]) {
      const std::uint64_t pos = std::max(home(r.key, cap), next);
      while (pos >= flushed + kChunk) flush(flushed + kChunk);
      unsigned char* s = chunk.data() + (pos - flushed) * stride;
      std::memcpy(s, &r.key, 8);
      std::memcpy(s + 8, &r.prob, 4);
      if (stride == kMidSlot) std::memcpy(s + 12, &r.backoff, 4);
      next = pos + 1;
    }
    while (flushed < slots) flush(std::min(slots, flushed + kChunk));
    h.end[S_SLOTS + t] = at;
    std::vector<Record>().swap(records[t]);
  }
  h.file_size = at;
  out.seekp(0);
  out.write(reinterpret_cast<const char*>(&h), sizeof h);
  out.close();
  if (!out) fail();
}

// ---- the reader ---------------------------------------------------------------------------

std::shared_ptr<ImageLM> ImageLM::map(const std::string& path, SourceStamp* stamp) {
  std::shared_ptr<MappedFile> file;
  try {
    file = std::make_shared<MappedFile>(path);
  } catch (const std::runtime_error& e) {
    throw LmImageError(e.what());
  }
  if (cut_magic(file->data(), file->size(), kMagic, sizeof kMagic)) bad(path, "its header is cut short");
  if (file->size() < sizeof kMagic || std::memcmp(file->data(), kMagic, sizeof kMagic) != 0)
    throw LmImageError(path + ": not an LM image (fstdecode binarize writes them)");
  if (file->size() < 24) bad(path, "its header is cut short");
  const unsigned char* base = file->data();
  if (load32(base + 16) != kByteOrder)
    throw LmImageError(path + ": this LM image was built on a machine of another byte order");
  const std::uint32_t version = load32(base + 20);
  if (version != kLmImageVersion && version != 2)
    throw LmImageError(path + ": this LM image has format version " + std::to_string(version) +
                       " and this fstdecode reads versions 2 and " + std::to_string(kLmImageVersion) +
                       "; run fstdecode binarize again");
  const std::size_t header_size = version == 2 ? kHeaderV2 : sizeof(Header);
  if (file->size() < header_size) bad(path, "its header is cut short");
  Header h{};  // (a version 2 header has no flags: 0)
  std::memcpy(&h, base, header_size);
  if (h.flags & ~kFlagSuffixClosed) bad(path, "its header holds unknown flags");
  if (h.mid_slot != kMidSlot || h.top_slot != kTopSlot) bad(path, "its slot sizes are wrong");
  if (h.hash_check != hash_ngram(kHashProbe, 3))
    throw LmImageError(path + ": this LM image was built by an fstdecode with other n-gram keys; run fstdecode binarize again");
  if (h.file_size != file->size())
    bad(path, "its size is " + std::to_string(file->size()) + " bytes, but it was written with " + std::to_string(h.file_size));
  if (h.order < 1 || h.order > static_cast<std::uint32_t>(kMaxOrder)) bad(path, "its order is " + std::to_string(h.order));
  const int used = S_SLOTS + static_cast<int>(h.order) - 1;
  for (int s = 0; s < used; ++s)
    if (h.begin[s] > h.end[s] || h.end[s] > h.file_size || h.begin[s] < header_size || h.begin[s] % 8)
      bad(path, "section " + std::to_string(s) + " lies outside the file");
  auto count = [&](int s, std::uint64_t width) { return (h.end[s] - h.begin[s]) / width; };
  auto sized = [&](int s, std::uint64_t n, std::uint64_t width) {
    if (n > h.file_size || h.end[s] - h.begin[s] != n * width) bad(path, "section " + std::to_string(s) + " has the wrong size");
  };
  auto whole = [&](int s, std::uint64_t width) {
    if ((h.end[s] - h.begin[s]) % width) bad(path, "section " + std::to_string(s) + " has the wrong size");
  };
  sized(S_WORD_OFF, h.words + 1, 8);
  sized(S_ALIAS_ID, h.aliases, 4);
  sized(S_ALIAS_OFF, h.aliases + 1, 8);
  sized(S_COUNTS, h.order, 8);
  sized(S_UNIGRAMS, h.words, sizeof(Unigram));
  whole(S_ESCAPES, 8);
  sized(S_SHAPES, 3 * (h.order - 1), 8);
  whole(S_EXT, sizeof(Ext));
  if (h.unk >= h.words) bad(path, "<unk>'s id is out of range");
  auto at = [&](int s) { return base + h.begin[s]; };
  std::shared_ptr<ImageLM> lm(new ImageLM());
  lm->order_ = lm->file_order_ = static_cast<int>(h.order);
  lm->unk_ = static_cast<WordId>(h.unk);
  lm->suffix_closed_ = (h.flags & kFlagSuffixClosed) != 0;
  // Words, in id order.
  auto vocab = std::make_shared<Vocab>();
  const auto* word_off = reinterpret_cast<const std::uint64_t*>(at(S_WORD_OFF));
  const auto* word_blob = reinterpret_cast<const char*>(at(S_WORD_BLOB));
  const std::uint64_t blob_size = count(S_WORD_BLOB, 1);
  for (std::uint64_t i = 0; i < h.words; ++i) {
    if (word_off[i] > word_off[i + 1] || word_off[i + 1] > blob_size) bad(path, "a word lies outside its section");
    const std::string_view w(word_blob + word_off[i], word_off[i + 1] - word_off[i]);
    if (!valid_utf8(w)) bad(path, "a word is not UTF-8");
    if (vocab->intern(w) != static_cast<WordId>(i)) bad(path, "a word is listed twice");
  }
  const auto* alias_ids = reinterpret_cast<const std::int32_t*>(at(S_ALIAS_ID));
  const auto* alias_off = reinterpret_cast<const std::uint64_t*>(at(S_ALIAS_OFF));
  const auto* alias_blob = reinterpret_cast<const char*>(at(S_ALIAS_BLOB));
  const std::uint64_t alias_size = count(S_ALIAS_BLOB, 1);
  for (std::uint64_t i = 0; i < h.aliases; ++i) {
    if (alias_off[i] > alias_off[i + 1] || alias_off[i + 1] > alias_size) bad(path, "an alias lies outside its section");
    if (alias_ids[i] < 0 || static_cast<std::uint64_t>(alias_ids[i]) >= h.words) bad(path, "an alias names no word");
    const std::string_view spelling(alias_blob + alias_off[i], alias_off[i + 1] - alias_off[i]);
    if (!valid_utf8(spelling)) bad(path, "an alias is not UTF-8");
    vocab->alias(spelling, alias_ids[i]);
  }
  lm->vocab_ = std::move(vocab);
  const auto* counts = reinterpret_cast<const std::int64_t*>(at(S_COUNTS));
  lm->counts_.assign(counts, counts + h.order);
  lm->unigrams_ = reinterpret_cast<const Unigram*>(at(S_UNIGRAMS));
  lm->escapes_ = reinterpret_cast<const double*>(at(S_ESCAPES));
  lm->n_escapes_ = count(S_ESCAPES, 8);
  lm->ext_ = reinterpret_cast<const Ext*>(at(S_EXT));
  lm->n_ext_ = count(S_EXT, sizeof(Ext));
  const auto* shapes = reinterpret_cast<const std::uint64_t*>(at(S_SHAPES));
  lm->tables_.resize(h.order - 1);
  for (std::uint32_t k = 0; k + 1 < h.order; ++k) {
    Table& t = lm->tables_[k];
    t.cap = shapes[3 * k], t.slots = shapes[3 * k + 1];
    const std::uint64_t size = shapes[3 * k + 2];
    t.stride = k + 2 == h.order ? kTopSlot : kMidSlot;
    if (t.cap > t.slots || size > t.slots) bad(path, "the table of order " + std::to_string(k + 2) + " is malformed");
    sized(S_SLOTS + static_cast<int>(k), t.slots, t.stride);
    t.base = at(S_SLOTS + static_cast<int>(k));
  }
  if (stamp != nullptr) {
    stamp->path.assign(reinterpret_cast<const char*>(at(S_PATH)), count(S_PATH, 1));
    if (!valid_utf8(stamp->path) || stamp->path.find('\0') != std::string::npos) bad(path, "its source path is not a path");
    stamp->size = h.stamp_size, stamp->mtime_ns = h.stamp_mtime_ns;
  }
  lm->file_ = std::move(file);
  return lm;
}

std::shared_ptr<ImageLM> ImageLM::restrict(int order) const {
  if (order < 1 || order > order_)
    throw std::invalid_argument("cannot restrict an order-" + std::to_string(order_) + " model to order " +
                                std::to_string(order));
  std::shared_ptr<ImageLM> out(new ImageLM(*this));
  out->order_ = order;
  out->counts_.resize(static_cast<std::size_t>(order));
  return out;
}

// ---- queries ------------------------------------------------------------------------------

const unsigned char* ImageLM::Table::find(std::uint64_t key) const {
  // Keys increase along the slots: stop at the key, an empty slot (0) or a larger key.
  for (std::uint64_t i = home(key, cap); i < slots; ++i) {
    const unsigned char* s = base + i * stride;
    const std::uint64_t k = load64(s);
    if (k == key) return s;
    if (k - 1 >= key) return nullptr;  // k == 0 or k > key
  }
  return nullptr;
}

void ImageLM::Table::prefetch(std::uint64_t key) const {
#if defined(__GNUC__)
  if (slots != 0) __builtin_prefetch(base + home(key, cap) * stride);
#else
  (void)key;
#endif
}

double ImageLM::value(std::uint32_t code) const {
  if (!value_code::is_escape(code)) return value_code::decode(code);
  const std::uint32_t i = value_code::escape_index(code);
  return i < n_escapes_ ? escapes_[i] : std::numeric_limits<double>::quiet_NaN();
}

bool ImageLM::prob(const unsigned char* slot, double* out) const {
  const std::uint32_t field = load32(slot + 8) & ~kExtends;
  if (field == kPrefixOnly) return false;
  // Not an escape: a negative value's code without its sign bit.
  *out = value_code::is_escape(field) ? value(field) : value_code::decode(field | value_code::kSign);
  return true;
}

double ImageLM::slot_backoff(const unsigned char* slot) const { return value(load32(slot + 12)); }

int ImageLM::min_ext(const unsigned char* slot, int n) const {
  if (!(load32(slot + 8) & kExtends)) return 0;
  const std::uint64_t key = load64(slot);
  const Ext* end = ext_ + n_ext_;
  const Ext* it = std::lower_bound(ext_, end, std::make_pair(static_cast<std::uint32_t>(n), key),
                                   [](const Ext& e, const std::pair<std::uint32_t, std::uint64_t>& x) {
                                     return e.n != x.first ? e.n < x.first : e.key < x.second;
                                   });
  if (it != end && it->n == static_cast<std::uint32_t>(n) && it->key == key) return static_cast<int>(it->min_ext);
  return n + 1;
}

WordId ImageLM::index(std::string_view word) const {
  const WordId id = vocab_->find(word);
  return id < 0 ? unk_ : id;
}

double ImageLM::logprob(const WordId* ctx, int n, WordId w) const {
  clip_context(ctx, n, order_);
  if (n <= 0) return 0.0 + unigrams_[static_cast<std::size_t>(w)].prob;
  // hw[L]: key of ctx[n-L..n) + w; hc[L]: key of ctx[n-L..n) (order_ <= kMaxOrder). As NgramLM.
  std::uint64_t hw[kMaxOrder + 1], hc[kMaxOrder + 1];
  ngram_hash::query_keys(ctx, n, w, [this, &hw, &hc](int L, std::uint64_t kw, std::uint64_t kc) {
    hw[L] = kw;
    hc[L] = kc;
    tables_[static_cast<std::size_t>(L - 1)].prefetch(kw);
    if (L >= 2) tables_[static_cast<std::size_t>(L - 2)].prefetch(kc);
  });
  return ngram_hash::backoff_score(
      n, hw, hc,
      [this](int L, std::uint64_t key, double* p) {
        const unsigned char* e = tables_[static_cast<std::size_t>(L - 1)].find(key);
        return e != nullptr && prob(e, p);
      },
      [this, ctx, n](int L, std::uint64_t key) {
        if (L == 1) return unigrams_[static_cast<std::size_t>(ctx[n - 1])].backoff;
        const unsigned char* s = tables_[static_cast<std::size_t>(L - 2)].find(key);
        return s != nullptr ? slot_backoff(s) : 0.0;
      },
      unigrams_[static_cast<std::size_t>(w)].prob);
}

void ImageLM::prefetch(const WordId* ctx, int n, WordId w) const {
  clip_context(ctx, n, order_);
  ngram_hash::query_keys(ctx, n, w, [this](int L, std::uint64_t kw, std::uint64_t kc) {
    tables_[static_cast<std::size_t>(L - 1)].prefetch(kw);
    if (L >= 2) tables_[static_cast<std::size_t>(L - 2)].prefetch(kc);
  });
}

double ImageLM::backoff(const WordId* ctx, int n) const {
  if (n <= 0 || n >= order_) return 0.0;
  if (n == 1) return unigrams_[static_cast<std::size_t>(ctx[0])].backoff;
  const unsigned char* s = tables_[static_cast<std::size_t>(n - 2)].find(hash_ngram(ctx, n));
  return s != nullptr ? slot_backoff(s) : 0.0;
}

bool ImageLM::extends(const WordId* ctx, int n) const {
  if (n <= 0 || n >= order_) return false;
  if (n == 1) {
    const std::int32_t e = unigrams_[static_cast<std::size_t>(ctx[0])].min_ext;
    return e != 0 && e <= order_;
  }
  return slot_extends(tables_[static_cast<std::size_t>(n - 2)].find(hash_ngram(ctx, n)), n);
}

bool ImageLM::slot_extends(const unsigned char* s, int n) const {
  if (s == nullptr) return false;
  if (order_ == file_order_) return (load32(s + 8) & kExtends) != 0;  // min_ext != 0
  const int e = min_ext(s, n);
  return e != 0 && e <= order_;
}

void ImageLM::facts(const WordId* ctx, int n, double* out) const {
  const int top = std::min(n, order_ - 1);  // the longest suffix with a backoff
  for (int L = top + 1; L <= n; ++L) out[L - 1] = 0.0;
  if (top < 1) return;
  std::uint64_t key[kMaxOrder + 1];  // key[L]: hash_ngram(ctx + n - L, L), L >= 2
  std::uint64_t h = ngram_hash::hash_step(ngram_hash::kSeed, ctx[n - 1]);
  for (int L = 2; L <= top; ++L) {
    h = ngram_hash::hash_step(h, ctx[n - L]);
    key[L] = ngram_hash::nonzero(h);
    tables_[static_cast<std::size_t>(L - 2)].prefetch(key[L]);
  }
  out[0] = unigrams_[static_cast<std::size_t>(ctx[n - 1])].backoff;
  for (int L = 2; L <= top; ++L) {
    const unsigned char* s = tables_[static_cast<std::size_t>(L - 2)].find(key[L]);
    out[L - 1] = s != nullptr ? slot_backoff(s) : 0.0;
  }
}

double ImageLM::logprob_facts(const WordId* ctx, int n, WordId w, const double* facts, const NextFacts* next) const {
  const int asked = n;  // next's suffixes: 1 .. asked + 1
  clip_context(ctx, n, order_);
  // at[L]: the slot of ctx[n-L..n) + w (L >= 1), or null; keys as logprob's hw[L].
  std::uint64_t key[kMaxOrder + 1];
  const unsigned char* at[kMaxOrder + 1];
  ngram_hash::word_keys(ctx, n, w, [&](int L, std::uint64_t k) {
    key[L] = k;
    tables_[static_cast<std::size_t>(L - 1)].prefetch(k);
  });
  const Unigram& uni = unigrams_[static_cast<std::size_t>(w)];
  // ngram_hash::backoff_score with the facts for its backoff lookups (as NgramLM::logprob_facts).
  double result;
  if (suffix_closed_) {
    // Shortest first, up to the first absent n-gram (NgramLM::suffix_closed): the same longest match.
    double p = 0.0, q = 0.0;
    int L = 0, l = 1;
    for (; l <= n; ++l) {
      const unsigned char* s = tables_[static_cast<std::size_t>(l - 1)].find(key[l]);
      at[l] = s;
      if (s == nullptr) break;
      if (prob(s, &q)) L = l, p = q;
    }
    for (; l <= n; ++l) at[l] = nullptr;
    double total = 0.0;
    for (int k = n; k > L; --k) {
      const double b = facts[k - 1];
      if (b != 0.0) total += b;
    }
    result = L >= 1 ? total + p : total + uni.prob;
    if (next == nullptr) return result;
  } else {
    int L = n;
    double total = 0.0;
    double p = 0.0;
    for (; L >= 1; --L) {
      const unsigned char* s = tables_[static_cast<std::size_t>(L - 1)].find(key[L]);
      at[L] = s;
      if (s != nullptr && prob(s, &p)) break;
      const double b = facts[L - 1];
      if (b != 0.0) total += b;
    }
    result = L >= 1 ? total + p : total + uni.prob;
    if (next == nullptr) return result;
    for (int l = L - 1; l >= 1; --l) at[l] = tables_[static_cast<std::size_t>(l - 1)].find(key[l]);
  }
  // The suffix of length l + 1 of ctx + w is at[l]'s n-gram (l = 0: w); those of order_ words or
  // more have no backoff and extend nothing (backoff, extends).
  for (int l = 0; l <= asked; ++l) {
    double b = 0.0;
    bool e = false;
    if (l + 1 < order_ && l <= n) {
      if (l == 0) {
        b = uni.backoff;
        e = uni.min_ext != 0 && uni.min_ext <= order_;
      } else if (at[l] != nullptr) {
        b = slot_backoff(at[l]);
        e = slot_extends(at[l], l + 1);
      }
    }
    next->backoff[l] = b;
    next->extends[l] = e ? 1 : 0;
  }
  return result;
}

void ImageLM::prefetch_facts(const WordId* ctx, int n, WordId w) const {
  clip_context(ctx, n, order_);
  ngram_hash::word_keys(ctx, n, w, [&](int L, std::uint64_t k) { tables_[static_cast<std::size_t>(L - 1)].prefetch(k); });
}

}  // namespace fstdecode
