// A file mapped read-only into memory (mmap), shared by the readers of memory-mapped model
// files (binary_table.h, lm_image.h). The bytes are untrusted: readers check every offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace fstdecode {

// The text file a binarized model file was built from, as it was then: its path, size and
// mtime (ns), so that a load can tell a stale build.
struct SourceStamp {
  std::string path;
  std::int64_t size = 0, mtime_ns = 0;
};

// An unaligned native-order 64- or 32-bit value at p (a mapped file's bytes).
inline std::uint64_t load64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline std::uint32_t load32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Whether the file `path` starts with the `n` bytes of `magic` (false when it cannot be read).
bool starts_with(const std::string& path, const char* magic, std::size_t n);
// Whether the file `path` starts with the `n` bytes of `magic`, or is shorter than that and all
// of it is the first (at least `at_least`) bytes of `magic`: a file of that kind cut short,
// which its reader then refuses as such, instead of another reader taking it for text.
bool starts_like(const std::string& path, const char* magic, std::size_t n, std::size_t at_least);
// Whether `size` bytes at `data` are a proper, non-empty prefix of the `n` bytes of `magic`.
bool cut_magic(const unsigned char* data, std::size_t size, const char* magic, std::size_t n);

// A failure to map a file: `err` is the errno (what a reader may word its own way).
struct MappedFileError : std::runtime_error {
  MappedFileError(const std::string& what, int err) : std::runtime_error(what), err(err) {}
  int err;
};

class MappedFile {
 public:
  // Maps `path`; throws MappedFileError("path: no such file" / "path: cannot ...: reason"). The
  // mapping is advised random access (hash tables): no read-ahead and no fault-around, so the
  // pages a decode keeps resident are the ones its lookups touch.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* map_ = nullptr;
  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace fstdecode
