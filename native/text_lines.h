// Model files read line by line in the core: plain or gzip (by content: zlib reads a file that
// is not gzip as it is), the lines fstdecode/io/files.py's numbered_lines yields.
//
// Invariants: lines end at '\n' only; a line's view has its "\n" (or "\r\n"; a last line may end
// in '\r' alone) removed and, on line 1, a UTF-8 byte-order mark dropped; line numbers are
// 1-based and count every line, blank ones included. A view is valid until the next call of
// next(). Problems with the file itself (missing, unreadable, corrupt gzip) throw TextFileError
// with the message numbered_lines gives ("path: no such file", "path:line: cannot read: ...",
// "path:line: corrupt or truncated gzip data (...); re-compress the file", naming the line the
// good data stops in, with Python's gzip wording where zlib's maps to it); whether a line is
// valid UTF-8 is the caller's question (valid_utf8), so that the Python layer words that error.
// A line longer than LineLimit::bytes (its "\n" not counted) throws TextFileError "path:line"
// followed by LineLimit::message, as soon as that many bytes are read without a newline: memory
// stays bounded by the limit whatever the file (the Python layer gives both, fstdecode/io/files.py).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fstdecode {

struct TextFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The longest line a reader takes, and what follows "path:line" in the error for a longer one.
struct LineLimit {
  std::size_t bytes = std::size_t{64} << 20;
  std::string message = ": line too long";
};

class TextLines {
 public:
  explicit TextLines(const std::string& path, LineLimit limit = {});
  ~TextLines();
  TextLines(const TextLines&) = delete;
  TextLines& operator=(const TextLines&) = delete;

  // The next line in `line`; false at the end of the file.
  bool next(std::string_view& line);
  // The number of the line next() gave last (0 before the first).
  long lineno() const { return lineno_; }
  const std::string& path() const { return path_; }
  // The bytes of the line next() gave last as the file holds them (but its line end): with the
  // byte-order mark that next() drops from line 1, so that a column counts it.
  std::string raw(std::string_view line) const;
  // Bytes of the file read so far (compressed bytes for gzip): for progress reports.
  long long position() const;

 private:
  bool fill();  // reads more into buf_; false at the end of the file
  [[noreturn]] void too_long() const;  // the error for line lineno_ + 1, longer than the limit
  std::string path_;
  LineLimit limit_;
  void* gz_ = nullptr;  // gzFile
  std::vector<char> buf_;
  std::size_t begin_ = 0, end_ = 0;  // unread bytes: buf_[begin_, end_)
  bool eof_ = false, dropped_bom_ = false;
  long lineno_ = 0;
  std::string pending_;   // a gzip error met after data that next() has still to give
  int pending_errno_ = 0;  // with it, errno of a failed read (0: a gzip error)
};

// The offset of the first byte that makes `text` invalid UTF-8 as Python's strict decoder sees
// it (overlongs, surrogates, > U+10FFFF, truncated sequences), or text.size() when it is valid.
std::size_t utf8_error(std::string_view text);
// Whether `text` is valid UTF-8 (utf8_error finds nothing).
bool valid_utf8(std::string_view text);
// The code point at p (valid UTF-8, p before its end); *len gets its length in bytes.
char32_t decode_utf8(const char* p, std::size_t* len);
// Python's str.isspace() of one code point (also re's `\s` for str patterns).
bool py_space(char32_t c);
// Python's str.strip() of valid UTF-8.
std::string_view py_strip(std::string_view text);

// The tokens of `text` split on runs of ASCII whitespace (fstdecode/io/tokens.py's
// ASCII_WHITESPACE: " \t\n\v\f\r" and 0x1c-0x1f), appended to `out` (cleared first).
void split_tokens(std::string_view text, std::vector<std::string_view>& out);

// Whether Python's str.strip() leaves nothing of `text` (valid UTF-8).
bool blank(std::string_view text);

// Whether `c` is one of the ASCII whitespace characters tokens are split on (split_tokens).
bool is_ascii_space(char c);
// `text` without the leading and trailing characters is_ascii_space accepts.
std::string_view ascii_strip(std::string_view text);

// A number of a model file, by the one grammar of every reader (fstdecode/io/values.py's
// NUMBER): [+-] then digits [. digits] or . digits, then [e|E [+-] digits]; or [+-] inf,
// infinity, nan in any case. ASCII only, no spaces, no underscores. True and `value` set (the
// correctly rounded double; overflow gives +-inf and underflow 0), or false for any other token.
bool parse_double(std::string_view token, double& value);

}  // namespace fstdecode
