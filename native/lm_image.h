// An LM image (`fstdecode binarize`): an NgramLM (lm.h) written as it is held in memory, so that
// a load maps its n-gram tables from the file's pages instead of parsing ARPA text. The scores
// are the ARPA reader's doubles, so a decode on an image is the decode on its ARPA file.
//
// Format (version kLmImageVersion; native byte order, checked by a marker): a header (magic
// "fstdecode lm\n", version, order, <unk>'s id, counts, the source file's stamp, the file's own
// size, and each section's [begin, end)), then 8-aligned sections: the source path, the words
// (offsets and bytes), the aliases, the counts, the unigram entries, each table's (capacity,
// size), and each order's table of slots as NgramLM holds them (padding zeroed).
//
// Invariant: the file is untrusted. map() checks the header, every section's bounds and size,
// and each table's shape (a power-of-two capacity, size within it); a lookup in a corrupt table
// stops after one pass over its slots. A bad image is an LmImageError naming the file.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "lm.h"
#include "mapped_file.h"

namespace fstdecode {

constexpr std::uint32_t kLmImageVersion = 1;

struct LmImageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Whether `path` starts with the LM image magic (whatever its version).
bool is_lm_image(const std::string& path);

class LmImage {
 public:
  static void write(const NgramLM& lm, const SourceStamp& stamp, const std::string& path);
  // The image's LM, its tables viewing the mapped file; `stamp` (if given) gets its source's.
  static std::shared_ptr<NgramLM> map(const std::string& path, SourceStamp* stamp);
};

}  // namespace fstdecode
