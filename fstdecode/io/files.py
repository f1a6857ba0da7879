"""The one way fstdecode's readers open a model file.

Every reader of :mod:`fstdecode.io` reads through :func:`numbered_lines` (streaming) or
:func:`read_lines` (the same lines as a list), so that the same problem with a file gives
the same message whatever the file is for. Each function takes the caller's ``Error``
class (a subclass of :class:`~fstdecode.errors.FstdecodeError`) and raises only that
class, with a message that starts with the path as given and, where a line is known, its
1-based number:

* ``"{path}: no such file"``;
* ``"{path}: cannot read: {reason}"`` (a directory, no permission, ...), or
  ``"{path}:{line}: cannot read: {reason}"`` when reading fails part way;
* ``"{path}: not a regular file, a FIFO or a pipe ..."`` (:func:`check_kind`: ``/dev/zero``);
* ``"{path}:{line}: a line longer than ..."`` (:func:`max_line_bytes`);
* ``"{path}:{line}: corrupt or truncated gzip data ({detail}); re-compress the file"``;
* ``"{path}:{line}: invalid UTF-8 (byte 0x.. at column {col}); re-encode the file as UTF-8"``.

A file is gzip-compressed iff it starts with the gzip magic bytes ``1f 8b``; its name does
not matter. Text is UTF-8; a byte-order mark at the start of the file is dropped.

Every file is opened and read once, so that a pipe (``<(zcat pt.gz)``) or a named FIFO reads
as well as a file: probes for a binary format (:func:`is_regular`) look only at regular files,
which are the only ones such formats can be (they are mapped). Memory is bounded by the line
limit: no reader holds more than :func:`max_line_bytes` bytes of a line that has no end.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from fstdecode.errors import FstdecodeError

__all__ = [
    "DEFAULT_MAX_LINE_BYTES", "GZIP_MAGIC", "MAX_LINE_BYTES_ENV", "check_kind", "decode_line", "is_regular",
    "line_too_long", "max_line_bytes", "numbered_lines", "open_binary", "read_bytes", "read_lines", "read_text_bytes",
    "split_lines",
]

GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of every gzip file."""

DEFAULT_MAX_LINE_BYTES = 64 * 2**20
"""The longest line (in bytes, its ``\\n`` not counted) of a model file or of the input: 64 MiB."""

MAX_LINE_BYTES_ENV = "FSTDECODE_MAX_LINE_BYTES"
"""The environment variable that sets another line limit (bytes; worker processes inherit it)."""

_BOM = "\ufeff"
_CHUNK = 1 << 20


class _LimitError(FstdecodeError):
    """A line limit in the environment that is not a positive whole number of bytes."""


def max_line_bytes() -> int:
    """The line limit: :data:`MAX_LINE_BYTES_ENV` when set, else :data:`DEFAULT_MAX_LINE_BYTES`."""
    text = os.environ.get(MAX_LINE_BYTES_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_LINE_BYTES
    if not (text.isascii() and text.isdigit() and 0 < int(text[:19]) and len(text) <= 18):
        raise _LimitError(f"{MAX_LINE_BYTES_ENV}={text[:40]!r}: give the longest line to read, in bytes (a whole number >= 1)")
    return int(text)


def line_too_long(where: str, limit: int | None = None) -> str:
    """The message for a line at ``where`` (``path:line``) longer than ``limit`` (default: the limit);
    ``where`` empty gives the text that follows it (for the core's readers)."""
    limit = max_line_bytes() if limit is None else limit
    return (f"{where}: a line longer than {limit:,} bytes, the limit for one line (is it a text file?); "
            f"set {MAX_LINE_BYTES_ENV} to read longer lines")


def _cannot_read(where: str, err: OSError, error: type[FstdecodeError]) -> FstdecodeError:
    """The caller's error for a failed open or read at ``where`` (``path`` or ``path:line``)."""
    if isinstance(err, FileNotFoundError):
        return error(f"{where}: no such file")
    return error(f"{where}: cannot read: {err.strerror or err}")


def _kind_error(path: str, mode: int, error: type[FstdecodeError]) -> FstdecodeError | None:
    """``error`` for a file of ``mode`` that is no regular file, FIFO or pipe (None: it is one)."""
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        return None
    if stat.S_ISDIR(mode):
        return _cannot_read(path, IsADirectoryError(21, os.strerror(21)), error)
    kind = ("a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a special file")
    return error(f"{path}: not a regular file, a FIFO or a pipe ({kind}); give the file itself")


def check_kind(path: str | os.PathLike[str], error: type[FstdecodeError]) -> None:
    """Raise ``error`` unless ``path`` is a regular file, a FIFO or a pipe (``/dev/zero`` is none),
    by its status alone: nothing is opened, so a FIFO is still unread."""
    spath = os.fspath(path)
    try:
        mode = os.stat(spath).st_mode
    except OSError as err:
        raise _cannot_read(spath, err, error) from None
    found = _kind_error(spath, mode, error)
    if found is not None:
        raise found


def is_regular(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a regular file (following links); False when it cannot be stat'ed."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _open(spath: str, error: type[FstdecodeError]) -> BinaryIO:
    """``spath`` opened for binary reading, once, checked to be a regular file, a FIFO or a pipe."""
    try:
        raw = open(spath, "rb", buffering=0)
    except OSError as err:
        check_kind(spath, error)  # a socket cannot be opened: say what it is
        raise _cannot_read(spath, err, error) from None
    try:
        found = _kind_error(spath, os.fstat(raw.fileno()).st_mode, error)
    except OSError as err:
        found = _cannot_read(spath, err, error)
    if found is not None:
        raw.close()
        raise found
    return raw


def read_bytes(path: str | os.PathLike[str], error: type[FstdecodeError]) -> bytes:
    """The raw bytes of ``path`` (not un-gzipped); a missing or unreadable file raises ``error``."""
    spath = os.fspath(path)
    with _open(spath, error) as f:
        try:
            return f.read()
        except OSError as err:
            raise _cannot_read(spath, err, error) from None


def open_binary(path: str | os.PathLike[str], error: type[FstdecodeError]) -> BinaryIO:
    """``path`` opened (once) for binary reading, un-gzipped when it starts with :data:`GZIP_MAGIC`.

    A missing or unreadable file, or one that is no regular file, FIFO or pipe, raises ``error``.
    The magic is peeked at on the open file, so a pipe loses nothing. Errors inside the gzip stream
    only show when it is read; :func:`numbered_lines` turns them into ``error`` with the line number.
    """
    spath = os.fspath(path)
    stream = io.BufferedReader(_open(spath, error), _CHUNK)
    try:
        gzipped = stream.peek(len(GZIP_MAGIC))[: len(GZIP_MAGIC)] == GZIP_MAGIC
    except OSError as err:
        stream.close()
        raise _cannot_read(spath, err, error) from None
    return _Gunzipped(stream) if gzipped else stream  # type: ignore[return-value]


class _Gunzipped(gzip.GzipFile):
    """A gzip stream over an open file, which it closes with itself (GzipFile leaves it open)."""

    def __init__(self, stream: BinaryIO) -> None:
        super().__init__(fileobj=stream, mode="rb")
        self._stream = stream

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._stream.close()


def decode_line(raw: bytes, where: str, error: type[FstdecodeError]) -> str:
    """One line's bytes as text; invalid UTF-8 raises ``error`` at ``where`` (``path:line``)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise error(
            f"{where}: invalid UTF-8 (byte {raw[err.start]:#04x} at column {err.start + 1}); "
            "re-encode the file as UTF-8"
        ) from None


def numbered_lines(
    path: str | os.PathLike[str], error: type[FstdecodeError]
) -> Iterator[tuple[int, str]]:
    """Yield ``(lineno, text)`` for every line of ``path``, 1-based, streaming.

    Plain or gzip (by magic bytes), UTF-8. Lines end at ``\\n`` only; ``text`` has its line
    end (``\\n`` or ``\\r\\n``; a last line may end in ``\\r`` alone) removed and, on line 1, a byte-order mark dropped. Blank lines
    are yielded too, so line numbers are those of the file; a file that ends with a newline
    has no extra empty last line. Every problem raises ``error`` as the module docstring says.
    """
    spath = os.fspath(path)
    limit = max_line_bytes()
    lineno = 0
    with open_binary(spath, error) as stream:
        try:
            while raw := stream.readline(limit + 1):
                if len(raw) > limit and not raw.endswith(b"\n"):
                    raise error(line_too_long(f"{spath}:{lineno + 1}", limit))
                lineno += 1
                text = decode_line(raw, f"{spath}:{lineno}", error).removesuffix("\n").removesuffix("\r")
                yield lineno, (text.removeprefix(_BOM) if lineno == 1 else text)
        except (EOFError, zlib.error, gzip.BadGzipFile) as err:
            raise error(
                f"{spath}:{lineno + 1}: corrupt or truncated gzip data ({err}); re-compress the file"
            ) from None
        except OSError as err:
            raise _cannot_read(f"{spath}:{lineno + 1}", err, error) from None


def read_lines(path: str | os.PathLike[str], error: type[FstdecodeError]) -> list[str]:
    """The lines :func:`numbered_lines` yields, as a list: ``result[i]`` is line ``i + 1``.

    For readers that need the whole file: it decodes the file at once, which is faster. The file
    is read once (a pipe reads as well as a file), with the same errors as :func:`numbered_lines`.
    """
    spath = os.fspath(path)
    return split_lines(read_text_bytes(spath, error), spath, error)


def read_text_bytes(path: str | os.PathLike[str], error: type[FstdecodeError]) -> bytes:
    """The bytes of ``path``, un-gzipped, read once in chunks; a line longer than
    :func:`max_line_bytes` stops the read there, and every problem raises ``error`` naming the line
    the good data stops in (as :func:`numbered_lines` does)."""
    spath = os.fspath(path)
    limit = max_line_bytes()
    chunks: list[bytes] = []
    lines, open_line = 0, 0  # newlines read; bytes of the last line read so far
    with open_binary(spath, error) as stream:
        try:
            while chunk := stream.read(_CHUNK):
                chunks.append(chunk)
                last = chunk.rfind(b"\n")
                if last < 0:
                    open_line += len(chunk)
                else:
                    lines += chunk.count(b"\n")
                    first = chunk.find(b"\n")
                    longest = max(open_line + first, _longest_inner(chunk, first, last, limit))
                    if longest > limit:
                        raise error(line_too_long(f"{spath}:{_long_line(b''.join(chunks), limit)}", limit))
                    open_line = len(chunk) - last - 1
                if open_line > limit:
                    raise error(line_too_long(f"{spath}:{lines + 1}", limit))
        except (EOFError, zlib.error, gzip.BadGzipFile) as err:
            raise error(f"{spath}:{lines + 1}: corrupt or truncated gzip data ({err}); re-compress the file") from None
        except OSError as err:
            raise _cannot_read(f"{spath}:{lines + 1}", err, error) from None
    return b"".join(chunks)


def _longest_inner(chunk: bytes, first: int, last: int, limit: int) -> int:
    """The longest line between the first and the last newline of ``chunk`` (0 when none can be
    longer than ``limit``)."""
    if last - first - 1 <= limit:  # no line between them can be longer (nor any, when first == last)
        return 0
    return max(len(line) for line in chunk[first + 1 : last].split(b"\n"))


def _long_line(data: bytes, limit: int) -> int:
    """The 1-based number of the first line of ``data`` longer than ``limit`` bytes."""
    for no, line in enumerate(data.split(b"\n"), 1):
        if len(line) > limit:
            return no
    return data.count(b"\n") + 1


def split_lines(data: bytes, path: str, error: type[FstdecodeError]) -> list[str]:
    """The lines of the file bytes ``data`` (read from ``path``), as :func:`numbered_lines` gives
    them: ``\\n`` ends a line, ``\\r\\n`` too, a BOM at the start is dropped; invalid UTF-8 raises
    ``error`` naming the line and column (:func:`decode_line`)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        start = data.rfind(b"\n", 0, err.start) + 1
        stop = data.find(b"\n", err.start)
        lineno = data.count(b"\n", 0, start) + 1
        decode_line(data[start : len(data) if stop < 0 else stop], f"{path}:{lineno}", error)
        raise  # (decode_line raised)
    lines = text.removeprefix(_BOM).split("\n")
    if lines[-1] == "":
        lines.pop()  # the file ends with a newline (or is empty)
    if "\r" in text:
        lines = [line.removesuffix("\r") for line in lines]
    return lines
