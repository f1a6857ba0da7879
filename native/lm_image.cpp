#include "lm_image.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "text_lines.h"

namespace fstdecode {

namespace {

constexpr char kMagic[16] = {'f', 's', 't', 'd', 'e', 'c', 'o', 'd', 'e', ' ', 'l', 'm', '\n', 0, 0, 0};
constexpr std::uint32_t kByteOrder = 0x01020304;
constexpr int kMaxOrder = 32;
enum Section { S_PATH, S_WORD_OFF, S_WORD_BLOB, S_ALIAS_ID, S_ALIAS_OFF, S_ALIAS_BLOB, S_COUNTS, S_UNIGRAMS, S_TABLES, S_SLOTS };
constexpr int kSections = S_SLOTS + kMaxOrder - 1;

struct Header {
  char magic[16];
  std::uint32_t byte_order, version, order, unk, slot_size, entry_size;
  std::uint64_t file_size, words, aliases;
  std::int64_t stamp_size, stamp_mtime_ns;
  std::uint64_t begin[kSections], end[kSections];
};
static_assert(sizeof(Header) % 8 == 0, "sections start 8-aligned");

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw LmImageError(path + ": " + what + "; the LM image is corrupt or truncated: run fstdecode binarize again");
}

}  // namespace

bool is_lm_image(const std::string& path) { return starts_with(path, kMagic, sizeof kMagic); }

void LmImage::write(const NgramLM& lm, const SourceStamp& stamp, const std::string& path) {
  if (lm.order_ > kMaxOrder) throw LmImageError(path + ": an LM image holds at most order " + std::to_string(kMaxOrder));
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.byte_order = kByteOrder;
  h.version = kLmImageVersion;
  h.order = static_cast<std::uint32_t>(lm.order_);
  h.unk = static_cast<std::uint32_t>(lm.unk_);
  h.slot_size = sizeof(NgramLM::Slot);
  h.entry_size = sizeof(NgramLM::Entry);
  h.words = lm.vocab_.size();
  h.aliases = lm.vocab_.aliases().size();
  h.stamp_size = stamp.size;
  h.stamp_mtime_ns = stamp.mtime_ns;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::uint64_t at = 0;
  auto fail = [&] { throw std::runtime_error(path + ": cannot write: " + std::strerror(errno ? errno : EIO)); };
  auto put = [&](const void* data, std::size_t n) {
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    if (!out) fail();
    at += n;
  };
  auto section = [&](int s, const void* data, std::size_t n) {
    static const char zeros[8] = {};
    if (at % 8) put(zeros, 8 - at % 8);
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
  // Entries and slots field by field into zeroed memory, so that padding bytes are zeros.
  std::vector<NgramLM::Entry> unigrams(lm.unigrams_.size());
  std::memset(static_cast<void*>(unigrams.data()), 0, unigrams.size() * sizeof(NgramLM::Entry));
  for (std::size_t i = 0; i < unigrams.size(); ++i) {
    const NgramLM::Entry& e = lm.unigrams_[i];
    unigrams[i].prob = e.prob, unigrams[i].backoff = e.backoff, unigrams[i].stored = e.stored, unigrams[i].min_ext = e.min_ext;
  }
  section(S_UNIGRAMS, unigrams.data(), unigrams.size() * sizeof(NgramLM::Entry));
  std::vector<std::uint64_t> shapes;
  for (const auto& t : lm.tables_) shapes.push_back(t.capacity()), shapes.push_back(t.size());
  section(S_TABLES, shapes.data(), shapes.size() * 8);
  std::vector<NgramLM::Slot> chunk;
  for (std::size_t k = 0; k < lm.tables_.size(); ++k) {
    const auto& t = lm.tables_[k];
    static const char zeros[8] = {};
    if (at % 8) put(zeros, 8 - at % 8);
    h.begin[S_SLOTS + k] = at;
    constexpr std::size_t kChunk = 1 << 16;
    for (std::size_t i = 0; i < t.capacity(); i += kChunk) {
      const std::size_t n = std::min(kChunk, t.capacity() - i);
      chunk.resize(n);
      std::memset(static_cast<void*>(chunk.data()), 0, n * sizeof(NgramLM::Slot));
      for (std::size_t j = 0; j < n; ++j) {
        const NgramLM::Slot& s = t.slots()[i + j];
        if (s.key == 0) continue;
        chunk[j].key = s.key;
        chunk[j].entry.prob = s.entry.prob, chunk[j].entry.backoff = s.entry.backoff;
        chunk[j].entry.stored = s.entry.stored, chunk[j].entry.min_ext = s.entry.min_ext;
      }
      put(chunk.data(), n * sizeof(NgramLM::Slot));
    }
    h.end[S_SLOTS + k] = at;
  }
  h.file_size = at;
  out.seekp(0);
  out.write(reinterpret_cast<const char*>(&h), sizeof h);
  out.close();
  if (!out) fail();
}

std::shared_ptr<NgramLM> LmImage::map(const std::string& path, SourceStamp* stamp) {
  std::shared_ptr<MappedFile> file;
  try {
    file = std::make_shared<MappedFile>(path);
  } catch (const std::runtime_error& e) {
    throw LmImageError(e.what());
  }
  if (file->size() < sizeof kMagic || std::memcmp(file->data(), kMagic, sizeof kMagic) != 0)
    throw LmImageError(path + ": not an LM image (fstdecode binarize writes them)");
  if (file->size() < sizeof(Header)) bad(path, "its header is cut short");
  const Header& h = *reinterpret_cast<const Header*>(file->data());
  if (h.byte_order != kByteOrder) throw LmImageError(path + ": this LM image was built on a machine of another byte order");
  if (h.version != kLmImageVersion)
    throw LmImageError(path + ": this LM image has format version " + std::to_string(h.version) +
                       " and this fstdecode reads version " + std::to_string(kLmImageVersion) + "; run fstdecode binarize again");
  if (h.slot_size != sizeof(NgramLM::Slot) || h.entry_size != sizeof(NgramLM::Entry))
    throw LmImageError(path + ": this LM image was built by an fstdecode with another memory layout; run fstdecode binarize again");
  if (h.file_size != file->size())
    bad(path, "its size is " + std::to_string(file->size()) + " bytes, but it was written with " + std::to_string(h.file_size));
  if (h.order < 1 || h.order > static_cast<std::uint32_t>(kMaxOrder)) bad(path, "its order is " + std::to_string(h.order));
  const int used = S_SLOTS + static_cast<int>(h.order) - 1;
  for (int s = 0; s < used; ++s)
    if (h.begin[s] > h.end[s] || h.end[s] > h.file_size || h.begin[s] < sizeof(Header) || h.begin[s] % 8)
      bad(path, "section " + std::to_string(s) + " lies outside the file");
  auto count = [&](int s, std::uint64_t width) { return (h.end[s] - h.begin[s]) / width; };
  auto sized = [&](int s, std::uint64_t n, std::uint64_t width) {
    if (n > h.file_size || h.end[s] - h.begin[s] != n * width) bad(path, "section " + std::to_string(s) + " has the wrong size");
  };
  sized(S_WORD_OFF, h.words + 1, 8);
  sized(S_ALIAS_ID, h.aliases, 4);
  sized(S_ALIAS_OFF, h.aliases + 1, 8);
  sized(S_COUNTS, h.order, 8);
  sized(S_UNIGRAMS, h.words, sizeof(NgramLM::Entry));
  sized(S_TABLES, 2 * (h.order - 1), 8);
  if (h.unk >= h.words) bad(path, "<unk>'s id is out of range");
  const unsigned char* base = file->data();
  auto at = [&](int s) { return base + h.begin[s]; };
  auto lm = std::make_shared<NgramLM>();
  lm->order_ = static_cast<int>(h.order);
  lm->unk_ = static_cast<WordId>(h.unk);
  // Words, in id order.
  const auto* word_off = reinterpret_cast<const std::uint64_t*>(at(S_WORD_OFF));
  const auto* word_blob = reinterpret_cast<const char*>(at(S_WORD_BLOB));
  const std::uint64_t blob_size = count(S_WORD_BLOB, 1);
  for (std::uint64_t i = 0; i < h.words; ++i) {
    if (word_off[i] > word_off[i + 1] || word_off[i + 1] > blob_size) bad(path, "a word lies outside its section");
    const std::string_view w(word_blob + word_off[i], word_off[i + 1] - word_off[i]);
    if (!valid_utf8(w)) bad(path, "a word is not UTF-8");
    if (lm->vocab_.intern(w) != static_cast<WordId>(i)) bad(path, "a word is listed twice");
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
    lm->vocab_.alias(spelling, alias_ids[i]);
  }
  const auto* counts = reinterpret_cast<const std::int64_t*>(at(S_COUNTS));
  lm->counts_.assign(counts, counts + h.order);
  const auto* unigrams = reinterpret_cast<const NgramLM::Entry*>(at(S_UNIGRAMS));
  lm->unigrams_.assign(unigrams, unigrams + h.words);
  const auto* shapes = reinterpret_cast<const std::uint64_t*>(at(S_TABLES));
  lm->tables_.resize(h.order - 1);
  for (std::uint32_t k = 0; k + 1 < h.order; ++k) {
    const std::uint64_t cap = shapes[2 * k], size = shapes[2 * k + 1];
    if ((cap != 0 && (cap & (cap - 1))) || size > cap) bad(path, "the table of order " + std::to_string(k + 2) + " is malformed");
    sized(S_SLOTS + static_cast<int>(k), cap, sizeof(NgramLM::Slot));
    lm->tables_[k].map(reinterpret_cast<const NgramLM::Slot*>(at(S_SLOTS + static_cast<int>(k))), cap, size);
  }
  if (stamp != nullptr) {
    stamp->path.assign(reinterpret_cast<const char*>(at(S_PATH)), count(S_PATH, 1));
    if (!valid_utf8(stamp->path) || stamp->path.find('\0') != std::string::npos) bad(path, "its source path is not a path");
    stamp->size = h.stamp_size, stamp->mtime_ns = h.stamp_mtime_ns;
  }
  lm->mapping_ = file;
  return lm;
}

}  // namespace fstdecode
