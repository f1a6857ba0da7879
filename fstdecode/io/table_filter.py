"""Filtering Moses tables to the source phrases of an input while streaming them.

A phrase table or a lexicalized reordering table (``source ||| target ||| ...``) of millions
of lines holds few pairs that a given batch of sentences can use: only those whose source
phrase occurs, contiguously, in one of the sentences. :class:`SourceFilter` answers that
question for one batch; readers keep a line only when it says yes, so memory is bounded by
what the batch needs, not by the table (Moses' ``filter-model-given-input.pl`` does the same
offline). :func:`filtered_lines` is the streaming loop for any such table.

The invariant that makes filtering safe: a decoder looks up only the source phrases that
occur in the sentence it decodes, so a table filtered by a :class:`SourceFilter` built from
a batch gives, for every sentence of that batch, the same lookups as the whole table (and so
the same table-limit ranking, which is per source phrase).

Memory of a filter: one 64-bit hash per distinct n-gram of the batch, up to the longest
source phrase met so far in the table (7 words to start with; longer ones are added on first
need, never beyond the longest sentence). A hash collision can only keep a pair the batch
does not need, never drop one it needs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.io.files import numbered_lines

__all__ = ["DEFAULT_CHUNK_LINES", "FILTER_THRESHOLD_BYTES", "SourceFilter", "filtered_lines", "source_phrase"]

#: Input lines per filtered batch (``--filter-chunk``): the table is read once per batch.
DEFAULT_CHUNK_LINES = 10_000

#: ``--filter`` is on by default for a phrase table file at least this large on disk. 32 MiB is
#: about 430,000 lines of plain text (several times more gzipped); read whole, such a table
#: takes some 250 MB of memory (540 bytes a pair: docs/benchmarks.md, section bench_table),
#: more than a batch's share of any but the largest inputs.
FILTER_THRESHOLD_BYTES = 32 * 2**20

_FIELD_SEPARATOR = "|||"
# n-gram lengths indexed up front: Moses' training extracts phrases of at most 7 words.
_INITIAL_LENGTH = 7


class SourceFilter:
    """Which source phrases occur contiguously in a batch of tokenized sentences.

    ``filter(source)`` is True iff the word tuple ``source`` occurs in some sentence (up
    to a 64-bit hash collision, which can only say True wrongly). Callable, so it serves as
    the ``vocabulary`` predicate of :func:`~fstdecode.io.phrase_table.load_phrase_table`.
    """

    __slots__ = ("_sentences", "_longest", "_length", "_hashes")

    def __init__(self, sentences: Iterable[Sequence[str]]) -> None:
        self._sentences = [tuple(s) for s in sentences if s]
        self._longest = max((len(s) for s in self._sentences), default=0)
        self._length = 0
        self._hashes: set[int] = set()
        self._grow(min(_INITIAL_LENGTH, self._longest))

    def _grow(self, length: int) -> None:
        """Index the n-grams of lengths ``self._length + 1 .. length``."""
        add = self._hashes.add
        for n in range(self._length + 1, length + 1):
            for s in self._sentences:
                for i in range(len(s) - n + 1):
                    add(hash(s[i:i + n]))
        self._length = max(self._length, length)

    def __call__(self, source: Sequence[str]) -> bool:
        n = len(source)
        if n == 0 or n > self._longest:
            return False
        if n > self._length:
            self._grow(n)
        return hash(tuple(source)) in self._hashes

    def __len__(self) -> int:
        """The number of distinct n-gram hashes indexed so far."""
        return len(self._hashes)

    def __repr__(self) -> str:
        return f"SourceFilter(sentences={len(self._sentences)}, ngrams={len(self._hashes)}, length={self._length})"


def source_phrase(text: str) -> tuple[str, ...] | None:
    """The source words of a table line (before the first ``|||``), or None without one."""
    head, sep, _ = text.partition(_FIELD_SEPARATOR)
    return tuple(head.split()) if sep else None


def filtered_lines(
    path: str | os.PathLike[str],
    keep: Callable[[tuple[str, ...]], bool] | None,
    error: type[FstdecodeError],
) -> Iterator[tuple[int, str]]:
    """``(lineno, text)`` of the lines of a Moses-style table whose source phrase ``keep`` accepts.

    Streams ``path`` (plain or gzip, UTF-8; problems raise ``error`` naming the line). A
    line with no ``|||`` is yielded whatever ``keep`` says, so that the reader reports it;
    blank lines are skipped. ``keep`` is called once per run of lines with the same source
    (Moses' tables are sorted by source), so memory stays bounded. ``keep=None`` keeps all.
    """
    last: tuple[str, ...] | None = None
    last_kept = True
    for lineno, text in numbered_lines(path, error):
        if not text.strip():
            continue
        if keep is None:
            yield lineno, text
            continue
        source = source_phrase(text)
        if source is None:
            yield lineno, text
            continue
        if source != last:
            last, last_kept = source, bool(keep(source))
        if last_kept:
            yield lineno, text
