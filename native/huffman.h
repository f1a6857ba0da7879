// Canonical Huffman codes as Moses' compact tables store them (CanonicalHuffman<T>::Save,
// moses/TranslationModel/CompactPT/CanonicalHuffman.h), and the bit streams they decode.
//
// Layout: u64 n, n symbols of `width` bytes (sorted by code); u64 L + 1, the first code of each
// length 0..L (u64); u64 L + 1, the index of the first symbol of each length (u64). A code is
// read one bit at a time, most significant first: code = bit, length 1; while code <
// first[length]: code = 2 code + bit, length + 1; the symbol is index[length] + code -
// first[length]. Bits are taken from each byte low bit first.
//
// Invariant: the code is checked at open to be the canonical code its lengths imply (first[L] =
// 0, first[l] = (first[l + 1] + count[l + 1]) / 2, each length's codes below 2^l) and a full
// tree's (Kraft's equality), so decoding stops within L bits at a symbol index it then checks;
// any stream decodes inside its bytes. A symbol's value is not checked (but a score's is finite).
#pragma once

#include <cstdint>
#include <vector>

#include "byte_cursor.h"

namespace fstdecode {

// The bits of a byte string, low bit of each byte first.
class BitReader {
 public:
  BitReader(const unsigned char* data, std::uint64_t size) : data_(data), bits_(size * 8) {}
  std::uint64_t left() const { return bits_ - pos_; }
  unsigned bit() {
    if (pos_ >= bits_) compact_fault("a code runs past the end of its record");
    const unsigned b = (data_[pos_ >> 3] >> (pos_ & 7)) & 1;
    ++pos_;
    return b;
  }

 private:
  const unsigned char* data_;
  std::uint64_t bits_, pos_ = 0;
};

class HuffmanCode {
 public:
  HuffmanCode() = default;
  HuffmanCode(ByteCursor& in, std::size_t width, const char* what);  // throws CompactFault
  std::uint64_t symbols() const { return n_; }
  // The bytes of symbol i (width() of them; i < symbols()).
  const unsigned char* symbol(std::uint64_t i) const { return symbols_ + i * width_; }
  std::size_t width() const { return width_; }
  // The index of the next symbol in `bits`.
  std::uint64_t decode(BitReader& bits) const;

 private:
  const unsigned char* symbols_ = nullptr;
  std::size_t width_ = 0;
  std::uint64_t n_ = 0;
  std::vector<std::uint64_t> first_, index_;
};

}  // namespace fstdecode
