#include "text_lines.h"

#include "decimal_code.h"

#include <fcntl.h>
#include <locale.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace fstdecode {

namespace {

constexpr std::size_t kChunk = 1 << 20;

std::string cannot_read(const std::string& where, int err) {
  if (err == ENOENT) return where + ": no such file";
  return where + ": cannot read: " + std::strerror(err);
}

gzFile gz(void* p) { return static_cast<gzFile>(p); }

}  // namespace

TextLines::TextLines(const std::string& path, LineLimit limit) : path_(path), limit_(std::move(limit)), buf_(kChunk) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw TextFileError(cannot_read(path, errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    const int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    throw TextFileError(cannot_read(path, err));
  }
  gzFile f = gzdopen(fd, "rb");
  if (f == nullptr) {
    ::close(fd);
    throw TextFileError(cannot_read(path, ENOMEM));
  }
  gzbuffer(f, 1 << 18);
  gz_ = f;
}

TextLines::~TextLines() {
  if (gz_ != nullptr) gzclose(gz(gz_));
}

long long TextLines::position() const { return static_cast<long long>(gzoffset(gz(gz_))); }

namespace {

// zlib's account of a bad gzip stream in the words of Python's gzip module, which the Python
// reader gave (numbered_lines): the same file gives the same message. gzerror() prefixes the
// message with the "path" gzdopen gave the stream ("<fd:N>: "), which says nothing to a user.
std::string gzip_detail(const char* message, int code) {
  std::string m = message ? message : "zlib error";
  if (m.rfind("<fd:", 0) == 0) {
    const std::size_t colon = m.find(": ");
    if (colon != std::string::npos) m.erase(0, colon + 2);
  }
  if (m == "unexpected end of file") return "Compressed file ended before the end-of-stream marker was reached";
  if (m == "incorrect length check") return "Incorrect length of data produced";
  if (m == "unknown compression method") return "Unknown compression method";
  if (code == Z_DATA_ERROR && m != "incorrect data check" && m != "incorrect header check" &&
      m != "unknown header flags set")
    return "Error -3 while decompressing data: " + m;  // Python's zlib.error, from inflate()
  return m;
}

}  // namespace

bool TextLines::fill() {
  if (eof_) return false;
  if (!pending_.empty()) {  // a read failed after giving the data before the failure: now say so
    const std::string where = path_ + ":" + std::to_string(lineno_ + 1);
    if (pending_errno_ != 0) throw TextFileError(cannot_read(where, pending_errno_));
    throw TextFileError(where + ": corrupt or truncated gzip data (" + pending_ + "); re-compress the file");
  }
  if (begin_ > 0) {  // keep the unread tail at the front
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buf_.size())  // a line longer than the buffer: next() has checked that end_ <= the limit
    buf_.resize(std::max(end_ + 1, std::min(buf_.size() * 2, limit_.bytes + kChunk)));
  const std::size_t want = std::min<std::size_t>(buf_.size() - end_, std::numeric_limits<int>::max());
  errno = 0;
  const int got = gzread(gz(gz_), buf_.data() + end_, static_cast<unsigned>(want));
  int code = Z_OK;
  const char* detail = gzerror(gz(gz_), &code);
  if (got < 0 || (code != Z_OK && code != Z_STREAM_END)) {
    // The lines before the failure are read first (as Python's gzip module gives them): the
    // error names the line the data stops in.
    pending_errno_ = code == Z_ERRNO ? (errno ? errno : EIO) : 0;
    pending_ = code == Z_ERRNO ? "cannot read" : gzip_detail(detail, code);
    if (got > 0) {
      end_ += static_cast<std::size_t>(got);
      return true;
    }
    return fill();
  }
  if (got == 0) {
    eof_ = true;
    return false;
  }
  end_ += static_cast<std::size_t>(got);
  return true;
}

void TextLines::too_long() const { throw TextFileError(path_ + ":" + std::to_string(lineno_ + 1) + limit_.message); }

bool TextLines::next(std::string_view& line) {
  std::size_t scanned = begin_;
  for (;;) {
    const void* nl = std::memchr(buf_.data() + scanned, '\n', end_ - scanned);
    if (nl != nullptr) {
      const std::size_t at = static_cast<const char*>(nl) - buf_.data();
      if (at - begin_ > limit_.bytes) too_long();
      line = std::string_view(buf_.data() + begin_, at - begin_);
      begin_ = at + 1;
      break;
    }
    if (end_ - begin_ > limit_.bytes) too_long();  // before the buffer grows past the limit
    scanned = end_ - begin_;  // offsets move with the tail in fill()
    if (!fill()) {
      if (begin_ == end_) return false;
      line = std::string_view(buf_.data() + begin_, end_ - begin_);
      begin_ = end_;
      break;
    }
  }
  ++lineno_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (lineno_ == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") {
    line.remove_prefix(3);
    dropped_bom_ = true;
  }
  return true;
}

std::string TextLines::raw(std::string_view line) const {
  return (lineno_ == 1 && dropped_bom_ ? "\xEF\xBB\xBF" : "") + std::string(line);
}

// Offset of the first byte that makes `s` invalid UTF-8 as Python's strict decoder sees it
// (overlongs, surrogates, > U+10FFFF, truncated sequences), or s.size() when valid.
std::size_t utf8_error(std::string_view s) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {
      std::uint64_t v;
      std::memcpy(&v, b + i, 8);
      if (!(v & 0x8080808080808080ULL)) {
        i += 8;
        continue;
      }
    }
    const unsigned c = b[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    auto cont = [&](std::size_t k) { return i + k < n && (b[i + k] & 0xC0) == 0x80; };
    if (c < 0xC2) return i;
    if (c < 0xE0) {
      if (!cont(1)) return i;
      i += 2;
    } else if (c < 0xF0) {
      if (!cont(1) || !cont(2)) return i;
      const unsigned c1 = b[i + 1];
      if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) return i;
      i += 3;
    } else if (c < 0xF5) {
      if (!cont(1) || !cont(2) || !cont(3)) return i;
      const unsigned c1 = b[i + 1];
      if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90)) return i;
      i += 4;
    } else {
      return i;
    }
  }
  return n;
}

bool valid_utf8(std::string_view text) { return utf8_error(text) == text.size(); }

// The code point at p (valid UTF-8, p < end); *len gets its length in bytes.
char32_t decode_utf8(const char* p, std::size_t* len) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  const unsigned c = b[0];
  if (c < 0x80) {
    *len = 1;
    return c;
  }
  if (c < 0xE0) {
    *len = 2;
    return ((c & 0x1F) << 6) | (b[1] & 0x3F);
  }
  if (c < 0xF0) {
    *len = 3;
    return ((c & 0x0F) << 12) | ((b[1] & 0x3F) << 6) | (b[2] & 0x3F);
  }
  *len = 4;
  return ((c & 0x07) << 18) | ((b[1] & 0x3F) << 12) | ((b[2] & 0x3F) << 6) | (b[3] & 0x3F);
}

// Python's str.isspace() (also re's `\s` for str patterns).
bool py_space(char32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Python's str.strip() of valid UTF-8.
std::string_view py_strip(std::string_view s) {
  const char* b = s.data();
  const char* e = b + s.size();
  while (b < e) {
    const auto c = static_cast<unsigned char>(*b);
    if (c < 0x80) {
      if (!py_space(c)) break;
      ++b;
    } else {
      std::size_t len;
      if (!py_space(decode_utf8(b, &len))) break;
      b += len;
    }
  }
  while (e > b) {
    const auto c = static_cast<unsigned char>(e[-1]);
    if (c < 0x80) {
      if (!py_space(c)) break;
      --e;
    } else {
      const char* k = e - 1;
      while (k > b && (static_cast<unsigned char>(*k) & 0xC0) == 0x80) --k;
      std::size_t len;
      if (!py_space(decode_utf8(k, &len))) break;
      e = k;
    }
  }
  return {b, static_cast<std::size_t>(e - b)};
}

namespace {
// ASCII whitespace: the ASCII code points Python's str.isspace() accepts.
inline bool ascii_space(char c) { return static_cast<unsigned char>(c) < 0x80 && py_space(static_cast<unsigned char>(c)); }
}  // namespace

void split_tokens(std::string_view text, std::vector<std::string_view>& out) {
  out.clear();
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    while (i < n && ascii_space(text[i])) ++i;
    const std::size_t start = i;
    while (i < n && !ascii_space(text[i])) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
}

bool blank(std::string_view text) { return py_strip(text).empty(); }

bool is_ascii_space(char c) { return ascii_space(c); }

std::string_view ascii_strip(std::string_view text) {
  std::size_t b = 0, e = text.size();
  while (b < e && ascii_space(text[b])) ++b;
  while (e > b && ascii_space(text[e - 1])) --e;
  return text.substr(b, e - b);
}

namespace {
bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if ((a[i] | 0x20) != b[i]) return false;
  return true;
}
bool digits(std::string_view s, std::size_t& i) {
  const std::size_t start = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  return i > start;
}
}  // namespace

namespace {
// strtod in the "C" locale (the decimal point is '.' whatever setlocale() did).
double strtod_c(const std::string& s) {
  static const locale_t loc = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  return strtod_l(s.c_str(), nullptr, loc);
}

// digits [. digits] (no sign, no exponent) whose digits make an integer m <= 2^53 with at most
// 22 after the point: m / 10^k is then correctly rounded (Clinger's fast path), as every
// correct parser's result. False: not of that shape (the general parser decides).
bool parse_plain(std::string_view s, double& out) {
  std::uint64_t m = 0;
  int digits = 0;
  int frac = -1;  // digits after the point; -1: no point yet
  for (const char c : s) {
    if (c >= '0' && c <= '9') {
      if (++digits > 19) return false;
      m = m * 10 + static_cast<std::uint64_t>(c - '0');
      if (frac >= 0) ++frac;
    } else if (c == '.' && frac < 0) {
      frac = 0;
    } else {
      return false;
    }
  }
  if (digits == 0 || m > (std::uint64_t{1} << 53) || frac > 22) return false;
  out = decimal_value(m, static_cast<unsigned>(std::max(frac, 0)));
  return true;
}
}  // namespace

bool parse_double(std::string_view token, double& value) {
  std::string_view body = token;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  double parsed = 0.0;
  if (parse_plain(body, parsed)) {
    value = negative ? -parsed : parsed;
    return true;
  }
  if (iequals(body, "inf") || iequals(body, "infinity")) {
    value = negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return true;
  }
  if (iequals(body, "nan")) {
    value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  // the grammar: digits [. digits*] | . digits, then [e [+-] digits]
  std::size_t i = 0;
  const bool whole = digits(body, i);
  bool fraction = false;
  if (i < body.size() && body[i] == '.') {
    ++i;
    fraction = digits(body, i);
  }
  if (!whole && !fraction) return false;
  if (i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    ++i;
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) ++i;
    if (!digits(body, i)) return false;
  }
  if (i != body.size()) return false;
  const auto result = std::from_chars(body.data(), body.data() + body.size(), parsed);
  if (result.ec == std::errc::result_out_of_range) {
    // from_chars leaves `parsed` alone on overflow and underflow; strtod rounds correctly to
    // inf, 0 or a subnormal.
    parsed = strtod_c(std::string(body));
  } else if (result.ec != std::errc() || result.ptr != body.data() + body.size()) {
    return false;
  }
  value = negative ? -parsed : parsed;
  return true;
}

}  // namespace fstdecode
