#include "mapped_file.h"

#include <algorithm>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fstdecode {

bool starts_with(const std::string& path, const char* magic, std::size_t n) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  std::string head(n, '\0');
  const bool yes = std::fread(head.data(), 1, n, f) == n && std::memcmp(head.data(), magic, n) == 0;
  std::fclose(f);
  return yes;
}

bool starts_like(const std::string& path, const char* magic, std::size_t n, std::size_t at_least) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  std::string head(n + 1, '\0');
  const std::size_t got = std::fread(head.data(), 1, n + 1, f);
  std::fclose(f);
  if (got < at_least) return false;
  return std::memcmp(head.data(), magic, std::min(got, n)) == 0;
}

bool cut_magic(const unsigned char* data, std::size_t size, const char* magic, std::size_t n) {
  return size > 0 && size < n && std::memcmp(data, magic, size) == 0;
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw MappedFileError(path + (err == ENOENT ? ": no such file" : std::string(": cannot read: ") + std::strerror(err)), err);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    throw MappedFileError(path + ": cannot read: " + (err ? std::strerror(err) : "not a regular file"), err);
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* map = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw MappedFileError(path + ": cannot map into memory: " + std::strerror(err), err);
    }
    map_ = map;
    data_ = static_cast<const unsigned char*>(map);
    ::madvise(map, size_, MADV_RANDOM);  // advice only: a failure changes nothing but speed
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (map_ != nullptr) ::munmap(map_, size_);
}

}  // namespace fstdecode
