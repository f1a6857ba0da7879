// An LM image (`fstdecode binarize`): an NgramLM (lm.h) written compactly, mapped at load, and
// queried in place by ImageLM, a LanguageModel (language_model.h) that answers every query bit
// for bit as the NgramLM it was written from (so a decode on an image is the decode on its
// ARPA file).
//
// Format (version kLmImageVersion; native byte order, checked by a marker): a header (magic
// "fstdecode lm\n", version, order, <unk>'s id, the two slot sizes, the file's own size, the
// numbers of words and aliases, the source file's stamp, each section's [begin, end),
// hash_ngram's key of a fixed n-gram, so that an image written with other keys is refused, and
// from version 3 a u64 of flags: bit 0, the model is suffix-closed, NgramLM::suffix_closed; a
// version 2 image, the same without the flags, is read as not suffix-closed),
// then 8-aligned sections:
//   path      the source file's path;
//   words     u64 offsets (words + 1) and the words' bytes, by id; aliases: i32 ids, u64
//             offsets, bytes;
//   counts    i64 per order;
//   unigrams  by id, {f64 prob, f64 backoff, i32 min_ext, i32 0} (the reader's doubles);
//   escapes   f64 values that have no decimal code (lm_value_code.h): -inf, 17 digits, ...;
//   shapes    per order n = 2..order: u64 capacity, slots, size (n-grams held);
//   ext       {u64 key, u32 n, u32 min_ext} sorted by (n, key): the n-grams of an order n <
//             order whose shortest stored extension is not of length n + 1 (min_ext in lm.h);
//   slots     per order n = 2..order, `slots` packed slots of 16 bytes {u64 key, u32 prob,
//             u32 backoff} (n < order) or 12 bytes {u64 key, u32 prob} (n == order).
// A prob field is a value code of a negative value with its sign bit replaced by a flag: "some
// stored longer n-gram starts with this one" (min_ext != 0); the escape kMantissaMask marks an
// n-gram that is only a prefix of stored ones (not itself stored). A backoff is a value code.
//
// Tables: the slots of an order are its keys in increasing order, each at or after its home
// slot (u128(key) * capacity) >> 64, in the first free slot (no wrap: `slots` may exceed
// `capacity` by the few that spill past the end); key 0 marks an empty slot. So a lookup scans
// from the home slot and stops at the key, an empty slot or a larger key: a miss costs about as
// much as a hit (an ordered linear-probing table; ~3-4 slots at the load factor written).
//
// Invariant: the file is untrusted. map() checks the header, every section's bounds and size,
// and each table's shape (capacity <= slots, size <= slots, the slots' bytes); a lookup stops at
// the table's end whatever the keys; an escape index out of range reads NaN. A bad image is an
// LmImageError naming the file.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "language_model.h"
#include "lm.h"
#include "mapped_file.h"

namespace fstdecode {

constexpr std::uint32_t kLmImageVersion = 3;

struct LmImageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Whether `path` starts with the LM image magic (whatever its version).
bool is_lm_image(const std::string& path);

// The writer (a friend of NgramLM, whose tables it reads).
class LmImage {
 public:
  static void write(const NgramLM& lm, const SourceStamp& stamp, const std::string& path);
};

// An LM image's model: its n-gram tables are the mapped file's pages.
class ImageLM final : public LanguageModel {
 public:
  // The image at `path`; `stamp` (if given) gets its source's. Throws LmImageError.
  static std::shared_ptr<ImageLM> map(const std::string& path, SourceStamp* stamp);

  int order() const override { return order_; }
  // The header's flag: queries look their orders up shortest first (NgramLM::suffix_closed).
  bool suffix_closed() const { return suffix_closed_; }
  const Vocab& vocab() const { return *vocab_; }
  std::size_t vocab_size() const override { return vocab_->size(); }
  WordId index(std::string_view word) const override;
  WordId unk() const override { return unk_; }
  double logprob(const WordId* ctx, int n, WordId w) const override;
  void prefetch(const WordId* ctx, int n, WordId w) const override;
  double unigram(WordId w) const override { return unigrams_[static_cast<std::size_t>(w)].prob; }
  double backoff(const WordId* ctx, int n) const override;
  bool extends(const WordId* ctx, int n) const override;
  // The right-state queries read from the slots, as NgramLM's (lm.h): the suffixes' slots for
  // facts, w's n-grams' slots alone for logprob_facts (and the next context's facts from them).
  void facts(const WordId* ctx, int n, double* out) const override;
  double logprob_facts(const WordId* ctx, int n, WordId w, const double* facts, const NextFacts* next) const override;
  void prefetch_facts(const WordId* ctx, int n, WordId w) const override;
  const std::vector<long>& counts() const override { return counts_; }
  // The model up to `order` (1 <= order <= order()), as NgramLM::restrict: the same mapping
  // read with a lower order. Throws std::invalid_argument otherwise.
  std::shared_ptr<ImageLM> restrict(int order) const;

 private:
  struct Unigram {
    double prob, backoff;
    std::int32_t min_ext, pad;
  };
  struct Ext {
    std::uint64_t key;
    std::uint32_t n, min_ext;
  };
  // One order's slots (see the format above).
  struct Table {
    const unsigned char* base = nullptr;
    std::uint64_t cap = 0, slots = 0;
    unsigned stride = 0;  // 16 or 12
    // The slot of `key`, or nullptr.
    const unsigned char* find(std::uint64_t key) const;
    void prefetch(std::uint64_t key) const;
  };
  ImageLM() = default;
  double value(std::uint32_t code) const;
  // The stored prob of the slot's n-gram, or false when it is only a prefix.
  bool prob(const unsigned char* slot, double* out) const;
  double slot_backoff(const unsigned char* slot) const;
  // The length of the shortest stored n-gram that extends the n-gram (of length n) at `slot`.
  int min_ext(const unsigned char* slot, int n) const;
  // extends() of the n-gram (of length n, 2 <= n < order()) at `slot` (null: absent).
  bool slot_extends(const unsigned char* slot, int n) const;

  std::shared_ptr<const MappedFile> file_;
  std::shared_ptr<const Vocab> vocab_;
  int order_ = 0;
  int file_order_ = 0;
  bool suffix_closed_ = false;  // the header's flag (NgramLM::suffix_closed); version 2: false
  WordId unk_ = 0;
  std::vector<long> counts_;
  const Unigram* unigrams_ = nullptr;
  const double* escapes_ = nullptr;
  std::uint64_t n_escapes_ = 0;
  const Ext* ext_ = nullptr;
  std::uint64_t n_ext_ = 0;
  std::vector<Table> tables_;  // tables_[n-2]: order n, up to the file's order
};

}  // namespace fstdecode
