// CRC-32C (checksum.h): the crc32 instruction where the CPU has it (three chains at once over
// long inputs), else slicing by 8.
#include "checksum.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fstdecode {

namespace {

constexpr std::uint32_t kPolynomial = 0x82F63B78U;  // 0x1EDC6F41 reflected

// table[k][b]: the CRC of byte b followed by k zero bytes (slicing by 8).
using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

Tables make_tables() {
  Tables t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (kPolynomial & (0U - (c & 1U)));
    t[0][b] = c;
  }
  for (std::uint32_t b = 0; b < 256; ++b)
    for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFFU];
  return t;
}

std::uint32_t software(const unsigned char* p, std::size_t n, std::uint32_t c) {
  static const Tables t = make_tables();
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    v ^= c;  // little-endian order of the reflected CRC
    c = t[7][v & 0xFF] ^ t[6][(v >> 8) & 0xFF] ^ t[5][(v >> 16) & 0xFF] ^ t[4][(v >> 24) & 0xFF] ^
        t[3][(v >> 32) & 0xFF] ^ t[2][(v >> 40) & 0xFF] ^ t[1][(v >> 48) & 0xFF] ^ t[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xFFU];
  return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define FSTDECODE_HAVE_SSE42_CRC 1
// One chain of crc32 instructions: each waits for the last (3 cycles for 8 bytes).
__attribute__((target("sse4.2"))) std::uint32_t serial(const unsigned char* p, std::size_t n, std::uint32_t c) {
  std::uint64_t c64 = c;
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = __builtin_ia32_crc32di(c64, v);
    p += 8;
    n -= 8;
  }
  c = static_cast<std::uint32_t>(c64);
  while (n--) c = __builtin_ia32_crc32qi(c, *p++);
  return c;
}

// The bytes of one lane: three lanes run as three independent chains, which the CPU overlaps
// (one crc32 a cycle). 4 KiB measured best with the data in cache (the file reader's buffer).
constexpr std::size_t kLane = 4096;

// shift(c): the state after kLane zero bytes from state c. The update is linear over GF(2) in
// (state, data), so run(c, X) = shift_|X|(c) ^ run(0, X); hence for lanes A, B, C of kLane bytes
// run(c, ABC) = shift(shift(run(c, A)) ^ run(0, B)) ^ run(0, C), and shift is a 32x32 bit matrix,
// here 4 tables of 256: t[k][b] = shift(b << 8k), from the 32 images of single bits.
struct Shift {
  std::array<std::array<std::uint32_t, 256>, 4> t{};
  Shift() {
    static const unsigned char zeros[kLane] = {};
    std::uint32_t bit[32];
    for (int i = 0; i < 32; ++i) bit[i] = serial(zeros, kLane, 1U << i);
    for (int k = 0; k < 4; ++k)
      for (std::uint32_t b = 1; b < 256; ++b)  // b's lowest bit, plus the rest of b (done already)
        t[k][b] = t[k][b & (b - 1)] ^ bit[8 * k + __builtin_ctz(b)];
  }
  std::uint32_t operator()(std::uint32_t c) const {
    return t[0][c & 0xFFU] ^ t[1][(c >> 8) & 0xFFU] ^ t[2][(c >> 16) & 0xFFU] ^ t[3][c >> 24];
  }
};

__attribute__((target("sse4.2"))) std::uint32_t hardware(const unsigned char* p, std::size_t n, std::uint32_t c) {
  static const Shift shift;
  while (n >= 3 * kLane) {
    std::uint64_t a = c, b = 0, d = 0;  // lanes B and C start from 0 (see Shift)
    for (std::size_t i = 0; i < kLane; i += 8) {
      std::uint64_t x, y, z;
      std::memcpy(&x, p + i, 8);
      std::memcpy(&y, p + kLane + i, 8);
      std::memcpy(&z, p + 2 * kLane + i, 8);
      a = __builtin_ia32_crc32di(a, x);
      b = __builtin_ia32_crc32di(b, y);
      d = __builtin_ia32_crc32di(d, z);
    }
    c = shift(shift(static_cast<std::uint32_t>(a)) ^ static_cast<std::uint32_t>(b)) ^ static_cast<std::uint32_t>(d);
    p += 3 * kLane;
    n -= 3 * kLane;
  }
  return serial(p, n, c);  // the tail, shorter than 3 lanes
}
#endif

using Kernel = std::uint32_t (*)(const unsigned char*, std::size_t, std::uint32_t);

Kernel pick() {
#ifdef FSTDECODE_HAVE_SSE42_CRC
  if (__builtin_cpu_supports("sse4.2")) return hardware;
#endif
  return software;
}

// Closes a descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void fail(const std::string& path, const char* what) {
  throw ChecksumError(path + ": cannot " + what + ": " + std::strerror(errno));
}

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t n, std::uint32_t crc) {
  static const Kernel kernel = pick();
  return ~kernel(static_cast<const unsigned char*>(data), n, ~crc);
}

FileChecksum file_crc32c(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) fail(path, "open it");
  struct stat st;
  if (::fstat(f.fd, &st) != 0) fail(path, "stat it");
  if (!S_ISREG(st.st_mode)) throw ChecksumError(path + ": not a regular file");
#ifdef POSIX_FADV_SEQUENTIAL
  ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  std::vector<unsigned char> buffer(std::size_t{1} << 20);
  FileChecksum out{0, 0};
  for (;;) {
    const ssize_t got = ::read(f.fd, buffer.data(), buffer.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      fail(path, "read it");
    }
    if (got == 0) break;
    out.crc = crc32c(buffer.data(), static_cast<std::size_t>(got), out.crc);
    out.size += static_cast<std::uint64_t>(got);
  }
  return out;
}

}  // namespace fstdecode
