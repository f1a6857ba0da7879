"""Input lines: numbered, decoded as UTF-8 one by one, so one bad line never stops a batch;
and the split of an input file into shards (``--shard I/N``)."""

from __future__ import annotations

import io
import os
import stat
from dataclasses import dataclass
from typing import BinaryIO, Iterable, Iterator, TextIO

from fstdecode.errors import FstdecodeError
from fstdecode.io.files import line_too_long, max_line_bytes


@dataclass(frozen=True)
class Line:
    """Input line ``id`` (0-based): its text; with ``error``, a line that could not be read as text
    (its text then has U+FFFD for each byte that is not UTF-8: what a failed line passes through)."""

    id: int
    text: str = ""
    error: str | None = None


def _strip_eol(text: str) -> str:
    """The line without its end of line (``\\n`` or ``\\r\\n``)."""
    if text.endswith("\n"):
        text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
    return text


def input_lines(stream: TextIO | BinaryIO | Iterable, name: str = "<stdin>") -> Iterator[Line]:
    """The lines of ``stream`` as :class:`Line` s, whatever the locale.

    A binary stream (or a text stream's ``buffer``) is decoded as UTF-8, as
    the model files are; a line that is not valid UTF-8 becomes a Line with
    ``error`` naming ``name`` and the line number (1-based), and reading goes on. So does a line
    longer than :func:`~fstdecode.io.files.max_line_bytes` (its text empty; the rest of it is
    skipped unread into memory). A byte-order mark at the start of the input is dropped, as in
    model files.
    """
    raw = getattr(stream, "buffer", stream)
    lines = _bounded(raw, name) if hasattr(raw, "readline") and not isinstance(raw, io.TextIOBase) else raw
    for no, line in enumerate(lines):
        if isinstance(line, Line):
            yield Line(no, line.text, line.error)
            continue
        if isinstance(line, str):
            yield Line(no, _strip_eol(line.removeprefix(_BOM) if no == 0 else line))
            continue
        if no == 0:
            line = line.removeprefix(_BOM_BYTES)
        try:
            yield Line(no, _strip_eol(line.decode("utf-8")))
        except UnicodeDecodeError as e:
            text = _strip_eol(line.decode("utf-8", errors="replace"))  # the source passed through, U+FFFD for bad bytes
            yield Line(no, text, f"{name}:{no + 1}: invalid UTF-8 at byte {e.start + 1} of the line; the input must be UTF-8")


_BOM = "\ufeff"
_BOM_BYTES = _BOM.encode("utf-8")


def _bounded(raw: BinaryIO, name: str) -> Iterator[bytes | Line]:
    """The lines of the binary stream ``raw``, each read with at most the line limit in memory; a
    longer line is a :class:`Line` with its error (its id set by the caller), the rest of it skipped."""
    limit = max_line_bytes()
    no = 0
    while line := raw.readline(limit + 1):
        no += 1
        if len(line) > limit and not line.endswith(b"\n"):
            while (rest := raw.readline(1 << 20)) and not rest.endswith(b"\n"):
                pass
            yield Line(no - 1, "", line_too_long(f"{name}:{no}", limit))
            continue
        yield line


class ShardError(FstdecodeError):
    """A --shard that is malformed, or an input that cannot be split into shards."""


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (1 <= I <= N) as ``(I, N)``."""
    i, _, n = text.partition("/")
    if not (i.isdigit() and n.isdigit()) or not 1 <= int(i) <= int(n):
        raise ShardError(f"--shard takes I/N with 1 <= I <= N (e.g. 3/8), got {text!r}")
    return int(i), int(n)


def shard_span(total: int, shard: tuple[int, int]) -> tuple[int, int]:
    """Shard ``I/N``'s input lines, ``[start, stop)`` (0-based): the I-th of N contiguous blocks,
    their sizes differing by at most one. The blocks of 1/N, ..., N/N tile ``[0, total)`` in order,
    so the shards' outputs concatenated in that order are the whole input's."""
    i, n = shard
    return (i - 1) * total // n, i * total // n


def count_lines(stream: TextIO | BinaryIO) -> int | None:
    """The number of lines in ``stream`` if it is a regular file (read once, then rewound); else None.

    A last line without an end of line counts, as :func:`input_lines` reads it.
    """
    raw = getattr(stream, "buffer", stream)
    try:
        if not stat.S_ISREG(os.fstat(raw.fileno()).st_mode):
            return None
        start = raw.tell()
    except (AttributeError, OSError, ValueError):
        return None
    count, last = 0, b"\n"
    while block := raw.read(1 << 20):
        count += block.count(b"\n")
        last = block[-1:]
    raw.seek(start)
    return count + (last != b"\n")
