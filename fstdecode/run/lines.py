"""Input lines: numbered, decoded as UTF-8 one by one, so one bad line never stops a batch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO, Iterable, Iterator, TextIO


@dataclass(frozen=True)
class Line:
    """Input line ``id`` (0-based): its text, or ``error`` when it could not be read as text."""

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
    ``error`` naming ``name`` and the line number (1-based), and reading goes on.
    """
    raw = getattr(stream, "buffer", stream)
    for no, line in enumerate(raw):
        if isinstance(line, str):
            yield Line(no, _strip_eol(line))
            continue
        try:
            yield Line(no, _strip_eol(line.decode("utf-8")))
        except UnicodeDecodeError as e:
            yield Line(no, "", f"{name}:{no + 1}: invalid UTF-8 at byte {e.start + 1} of the line; the input must be UTF-8")
