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
* ``"{path}:{line}: corrupt or truncated gzip data ({detail}); re-compress the file"``;
* ``"{path}:{line}: invalid UTF-8 (byte 0x.. at column {col}); re-encode the file as UTF-8"``.

A file is gzip-compressed iff it starts with the gzip magic bytes ``1f 8b``; its name does
not matter. Text is UTF-8; a byte-order mark at the start of the file is dropped.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from fstdecode.errors import FstdecodeError

__all__ = ["GZIP_MAGIC", "decode_line", "numbered_lines", "open_binary", "read_bytes", "read_lines"]

GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of every gzip file."""

_BOM = "\ufeff"


def _cannot_read(where: str, err: OSError, error: type[FstdecodeError]) -> FstdecodeError:
    """The caller's error for a failed open or read at ``where`` (``path`` or ``path:line``)."""
    if isinstance(err, FileNotFoundError):
        return error(f"{where}: no such file")
    return error(f"{where}: cannot read: {err.strerror or err}")


def read_bytes(path: str | os.PathLike[str], error: type[FstdecodeError]) -> bytes:
    """The raw bytes of ``path`` (not un-gzipped); a missing or unreadable file raises ``error``."""
    spath = os.fspath(path)
    try:
        with open(spath, "rb") as f:
            return f.read()
    except OSError as err:
        raise _cannot_read(spath, err, error) from None


def open_binary(path: str | os.PathLike[str], error: type[FstdecodeError]) -> BinaryIO:
    """``path`` opened for binary reading, un-gzipped when it starts with :data:`GZIP_MAGIC`.

    A missing or unreadable file raises ``error``. Errors inside the gzip stream only show
    when it is read; :func:`numbered_lines` turns them into ``error`` with the line number.
    """
    spath = os.fspath(path)
    try:
        with open(spath, "rb") as probe:
            gzipped = probe.read(len(GZIP_MAGIC)) == GZIP_MAGIC
        return gzip.open(spath, "rb") if gzipped else open(spath, "rb")  # type: ignore[return-value]
    except OSError as err:
        raise _cannot_read(spath, err, error) from None


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
    lineno = 0
    with open_binary(spath, error) as stream:
        try:
            for raw in stream:
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

    For readers that need the whole file: it decodes the file at once, which is faster.
    On any problem it reads again line by line, so that ``error`` names the line.
    """
    try:
        with open_binary(path, error) as stream:
            text = stream.read().decode("utf-8")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        return [text for _, text in numbered_lines(path, error)]
    lines = text.removeprefix(_BOM).split("\n")
    if lines[-1] == "":
        lines.pop()  # the file ends with a newline (or is empty)
    if "\r" in text:
        lines = [line.removesuffix("\r") for line in lines]
    return lines
