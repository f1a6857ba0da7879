#include "huffman.h"

#include <string>

namespace fstdecode {

namespace {
constexpr std::uint64_t kMaxLength = 63;  // codes fit a u64
}

HuffmanCode::HuffmanCode(ByteCursor& in, std::size_t width, const char* what) : width_(width) {
  const std::string name(what);
  n_ = in.u64(what);
  symbols_ = in.take_array(n_, width, what);
  for (auto* table : {&first_, &index_}) {
    const std::uint64_t size = in.u64(what);
    if (size < 2 || size > kMaxLength + 1) compact_fault(name + " has impossible code lengths");
    const unsigned char* p = in.take_array(size, 8, what);
    table->resize(size);
    for (std::uint64_t i = 0; i < size; ++i) std::memcpy(&(*table)[i], p + 8 * i, 8);
  }
  if (n_ == 0 || first_.size() != index_.size()) compact_fault(name + " has impossible code lengths");
  // The canonical code of the counts index_ implies must be the one first_ holds.
  const std::size_t max = first_.size() - 1;
  if (index_[0] != 0 || index_[1] != 0 || first_[0] != 0 || first_[max] != 0) compact_fault(name + " is damaged");
  std::vector<std::uint64_t> count(max + 1, 0);
  for (std::size_t l = 1; l <= max; ++l) {
    const std::uint64_t end = l < max ? index_[l + 1] : n_;
    if (end < index_[l] || end > n_) compact_fault(name + " is damaged");
    count[l] = end - index_[l];
  }
  for (std::size_t l = max - 1; l >= 1; --l)
    if (first_[l] != (first_[l + 1] + count[l + 1]) / 2) compact_fault(name + " is damaged");
  for (std::size_t l = 1; l <= max; ++l)
    if (first_[l] + count[l] > (std::uint64_t{1} << l)) compact_fault(name + " is damaged");
  // A Huffman tree is full: its lengths meet Kraft's equality (sum count[l] 2^-l = 1), summed
  // here from the longest codes up (each level's total is even; level 1 has two), but for a
  // code of one symbol (one code of length 1).
  std::uint64_t carry = 0;
  for (std::size_t l = max; l >= 1; --l) {
    const std::uint64_t total = carry + count[l];
    if (l == 1 ? !(total == 2 || (n_ == 1 && total == 1)) : total % 2 != 0) compact_fault(name + " is damaged");
    carry = total / 2;
  }
}

std::uint64_t HuffmanCode::decode(BitReader& bits) const {
  std::uint64_t code = bits.bit();
  std::size_t length = 1;
  while (code < first_[length]) {  // first_.back() == 0 ends the loop
    code = 2 * code + bits.bit();
    ++length;
  }
  const std::uint64_t offset = code - first_[length];
  const std::uint64_t end = length + 1 < index_.size() ? index_[length + 1] : n_;
  if (offset >= end - index_[length]) compact_fault("a code matches no symbol");
  return index_[length] + offset;
}

}  // namespace fstdecode
