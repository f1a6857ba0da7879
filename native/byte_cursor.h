// Reading an untrusted file's bytes front to back, every read bounds-checked: the shared reader
// of Moses' compact tables (compact_table.h) and the structures inside them (cmph_chd.h,
// huffman.h). A read past the end, or a value a reader refuses, throws CompactFault with a short
// account ("a block's hash is cut short"); the table that owns the file adds its path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace fstdecode {

struct CompactFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void compact_fault(const std::string& what) { throw CompactFault(what); }

class ByteCursor {
 public:
  ByteCursor(const unsigned char* begin, const unsigned char* end) : at_(begin), end_(end) {}

  std::size_t left() const { return static_cast<std::size_t>(end_ - at_); }
  const unsigned char* at() const { return at_; }
  const unsigned char* end() const { return end_; }
  // The next n bytes (their start), or a fault naming `what` when fewer are left.
  const unsigned char* take(std::uint64_t n, const char* what) {
    if (n > left()) compact_fault(std::string(what) + " is cut short");
    const unsigned char* p = at_;
    at_ += n;
    return p;
  }
  // `count` items of `width` bytes, the product checked for overflow first.
  const unsigned char* take_array(std::uint64_t count, std::size_t width, const char* what) {
    if (count > left() / width) compact_fault(std::string(what) + " is cut short");
    return take(count * width, what);
  }
  std::uint64_t u64(const char* what) { return load<std::uint64_t>(what); }
  std::uint32_t u32(const char* what) { return load<std::uint32_t>(what); }
  std::uint8_t u8(const char* what) { return *take(1, what); }

 private:
  template <typename T>
  T load(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof v, what), sizeof v);
    return v;
  }
  const unsigned char* at_;
  const unsigned char* end_;
};

// The native-order 32-bit word i of an array of them at p (mapped bytes; the caller checked i).
inline std::uint32_t word32(const unsigned char* p, std::size_t i) {
  std::uint32_t v;
  std::memcpy(&v, p + 4 * i, sizeof v);
  return v;
}

}  // namespace fstdecode
