// CRC-32C (Castagnoli, the iSCSI polynomial 0x1EDC6F41, reflected), the checksum `fstdecode
// binarize` records for each file it writes and a load checks before it trusts the file's values
// (fstdecode/io/binarized.py). On x86-64 with SSE4.2 it runs on the crc32 instruction, three
// chains at once over long inputs (about 8 bytes a cycle); elsewhere a table-driven loop (slicing by 8) gives the same values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace fstdecode {

// The CRC-32C of `n` bytes at `data`, continuing from `crc` (0 for a fresh one):
// crc32c(b, crc32c(a)) == crc32c(a + b). crc32c("123456789") == 0xE3069283.
std::uint32_t crc32c(const void* data, std::size_t n, std::uint32_t crc = 0);

// A file that cannot be read to its end (one line naming it).
struct ChecksumError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The CRC-32C of the whole regular file `path` and its size in bytes, read sequentially.
// Throws ChecksumError.
struct FileChecksum {
  std::uint32_t crc;
  std::uint64_t size;
};
FileChecksum file_crc32c(const std::string& path);

}  // namespace fstdecode
