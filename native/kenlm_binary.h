// KenLM binary language models (build_binary's "probing" and "trie" files) read natively, by
// mmap: a LanguageModel (language_model.h) with NgramLM's (lm.h) answers in the same natural-log
// units, so the native searches decode with either.
//
// The file format (KenLM's binary format version 5, little-endian, as KenLM writes it):
//
//   header   88 bytes of fixed test values (magic text "mmap lm http://kheafield.com/code
//            format version 5\n" NUL-padded to 56 bytes, floats 0 1 -0.5, u32 1 0xffffffff 0,
//            u64 1), then order (u8, at 88), probing multiplier (f32, 92), model type (u32, 96:
//            0 probing, 1 probing with rest costs, 2 trie, 3 quantized trie, 4 trie with
//            array-compressed pointers, 5 both), has-vocabulary (u8, 100), search version
//            (u32, 104), then `order` u64 n-gram counts (108); the whole padded to 8 bytes.
//   vocab    probing: u32 version (0), u32 bound (the number of words, <unk> = id 0 included),
//            then a linear-probing table of {u64 MurmurHash64A(word), u32 id} (12 bytes,
//            `buckets(counts[0])` of them, bucket = hash % buckets, key 0 = empty);
//            trie: u64 n, then n sorted word hashes (counts[0] slots); the id of a word is its
//            position + 1.
//   search   probing: (counts[0]+1) unigram {f32 prob, f32 backoff}; for each order 2..N-1 a
//            table of {u64 key, f32 prob, f32 backoff}; for order N a table of {u64 key, f32
//            prob}. The key of w1..wn folds from the last word: k = wn, then
//            k = k * C1 ^ (1 + w) * C2 for w = w(n-1) .. w1. The sign bit of a prob is a
//            flag (the n-gram has no left extension): probabilities are read with it forced.
//            trie: (counts[0]+2) unigram {f32 prob, f32 backoff, u64 next}; for each order
//            2..N a bit-packed array of (counts+1) records [word | prob without its sign bit
//            (31) | backoff (32, orders < N) | next (orders < N)], bit i*total at byte i/8,
//            read as little-endian u64 >> (i % 8). A record's children (the words before it)
//            are the records [next(i), next(i+1)) of the next order, sorted by word: the trie
//            holds n-grams reversed (last word first).
//   words    when has-vocabulary: the words by id, each NUL-terminated, "<unk>" first.
//
// Values are log10 in floats; every score is float arithmetic in KenLM's order, then
// converted once (x ln 10), so logprob() equals KenLM's FullScore bit for bit. A backoff of
// -0.0 marks an n-gram that no stored n-gram extends (KenLM's "no extension" flag); build_binary
// also adds the missing lower n-grams of SRI-pruned models ("blanks", with computed probs),
// so counts() can exceed the ARPA file's.
//
// Refused: quantized tries (build_binary -q), tries with array-compressed pointers (-a),
// probing with rest costs, other format versions. Every size and offset is checked against
// the file before use; a bad file is a std::runtime_error naming it (one line).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "language_model.h"
#include "mapped_file.h"

namespace fstdecode {

// A KenLM binary that cannot be read (I/O, truncated, corrupt, unsupported). what() is one line
// starting with the path.
struct KenLMFormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class KenLMBinary final : public LanguageModel {
 public:
  enum class Kind { kProbing, kTrie };

  explicit KenLMBinary(const std::string& path);
  ~KenLMBinary() override;
  KenLMBinary(const KenLMBinary&) = delete;
  KenLMBinary& operator=(const KenLMBinary&) = delete;

  const std::string& path() const { return path_; }
  Kind kind() const { return kind_; }
  int order() const override { return order_; }
  // The header's n-gram counts (with blanks for a trie; probing's unigram count excludes a
  // <unk> the ARPA file lacked).
  const std::vector<long>& counts() const override { return counts_; }
  // Word ids are 0 .. vocab_size()-1; <unk> is 0.
  std::size_t vocab_size() const override { return bound_; }
  WordId unk() const override { return 0; }
  // The id of `word`, or <unk>'s (0) when out of vocabulary.
  WordId index(std::string_view word) const override;
  // True iff the file stores its words (build_binary does by default).
  bool has_words() const { return !words_.empty(); }
  // The word of an id (has_words(), 0 <= id < vocab_size()); views into the mapped file.
  std::string_view word(WordId id) const { return words_[static_cast<std::size_t>(id)]; }

  // Queries as NgramLM's (natural logs; ids must be valid; ctx's most recent word last, only
  // its last order()-1 words used).
  double logprob(const WordId* ctx, int n, WordId w) const override;
  // logprob bit for bit, from the walk logprob makes, with the next context's facts read on the
  // way (language_model.h), rather than a query per suffix.
  double logprob_facts(const WordId* ctx, int n, WordId w, const double* facts, const NextFacts* next) const override;
  double unigram(WordId w) const override;
  // ln backoff of the n-gram ctx[0..n) (0 when absent or n >= order()).
  double backoff(const WordId* ctx, int n) const override;
  // KenLM's right-state test: ctx[0..n) is stored with a backoff other than its
  // "no extension" -0.0. True whenever a stored longer n-gram starts with ctx (as
  // NgramLM::extends), and also for a non-extending n-gram the ARPA file gave a backoff.
  bool extends(const WordId* ctx, int n) const override;

 private:
  // A position while reading an n-gram from its last word leftwards.
  struct Node {
    std::uint64_t a = 0, b = 0;  // probing: a = key; trie: [a, b) = children range
  };
  struct TrieLevel {  // one order >= 2 of a trie
    const unsigned char* base = nullptr;
    std::uint64_t entries = 0;
    unsigned word_bits = 0, next_bits = 0, total_bits = 0;
    std::uint64_t word_mask = 0, next_mask = 0;
    bool has_backoff = false;
  };
  struct ProbingTable {  // one order >= 2 of a probing model
    const unsigned char* base = nullptr;
    std::uint64_t buckets = 0;
    unsigned entry_size = 0;  // 16 (prob, backoff) or 12 (prob)
  };

  void fail(const std::string& what) const;
  void load();
  void load_probing(std::size_t at);
  void load_trie(std::size_t at);
  void load_words(std::size_t at);

  // The unigram of w (prob, backoff) and the node of the 1-gram w.
  void start(WordId w, float* prob, float* backoff, Node* node) const;
  // Extends the n-gram at `node` (of order len-1) leftwards by `word` to order `len`; false when
  // that n-gram is not stored. backoff is only set for len < order().
  bool step(Node* node, int len, WordId word, float* prob, float* backoff) const;
  // The backoff of ctx[0..n) as stored (n < order()), or false when absent.
  bool find_backoff(const WordId* ctx, int n, float* backoff) const;

  std::string path_;
  std::unique_ptr<MappedFile> file_;
  std::size_t size_ = 0;
  const unsigned char* data_ = nullptr;  // file_'s bytes

  Kind kind_ = Kind::kProbing;
  int order_ = 0;
  std::vector<long> counts_;
  std::size_t bound_ = 0;

  // probing
  const unsigned char* vocab_table_ = nullptr;
  std::uint64_t vocab_buckets_ = 0;
  const unsigned char* unigrams_ = nullptr;  // 8 (probing) or 16 (trie) bytes each
  std::vector<ProbingTable> tables_;         // tables_[n-2]: order n
  // trie
  const unsigned char* sorted_vocab_ = nullptr;
  std::uint64_t sorted_count_ = 0;
  std::vector<TrieLevel> levels_;  // levels_[n-2]: order n

  std::vector<std::string_view> words_;
};

}  // namespace fstdecode
