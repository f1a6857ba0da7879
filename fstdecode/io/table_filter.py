"""Filtering Moses tables to the source phrases of an input while streaming them.

A phrase table or a lexicalized reordering table (``source ||| target ||| ...``) of millions
of lines holds few pairs that a given batch of sentences can use: only those whose source
phrase occurs, contiguously, in one of the sentences. :class:`SourceFilter` answers that
question for one batch; readers keep a line only when it says yes, so memory is bounded by
what the batch needs, not by the table (Moses' ``filter-model-given-input.pl`` does the same
offline). The core's table readers (:mod:`fstdecode.io.phrase_table`,
:mod:`fstdecode.io.reordering_table`) stream the table and ask the filter once per run of lines
with one source phrase.

The invariant that makes filtering safe: a decoder looks up only the source phrases that
occur in the sentence it decodes, so a table filtered by a :class:`SourceFilter` built from
a batch gives, for every sentence of that batch, the same lookups as the whole table (and so
the same table-limit ranking, which is per source phrase).

Memory of a filter: each distinct n-gram of the batch, up to the longest source phrase met so
far in the table (7 words to start with; longer ones are added on first need, never beyond the
longest sentence), held in the native core, which asks it once per run of lines with one source.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fstdecode._native import core as _core

__all__ = ["DEFAULT_CHUNK_LINES", "FILTER_THRESHOLD_BYTES", "SourceFilter"]

#: Input lines per filtered batch (``--filter-chunk``): the table is read once per batch.
DEFAULT_CHUNK_LINES = 10_000

#: ``--filter`` is on by default for a phrase table file at least this large on disk. 32 MiB is
#: about 430,000 lines of plain text (several times more gzipped); read whole, such a table
#: takes some 250 MB of memory (540 bytes a pair: docs/benchmarks.md, section bench_table),
#: more than a batch's share of any but the largest inputs.
FILTER_THRESHOLD_BYTES = 32 * 2**20


class SourceFilter:
    """Which source phrases occur contiguously in a batch of tokenized sentences.

    ``filter(source)`` is True iff the word tuple ``source`` occurs in some sentence (exactly:
    the n-grams themselves are kept, in the core). Callable, so it serves as the ``vocabulary``
    predicate of :func:`~fstdecode.io.phrase_table.load_phrase_table`, whose core reader uses
    :attr:`native` directly.
    """

    __slots__ = ("native", "_sentences")

    def __init__(self, sentences: Iterable[Sequence[str]]) -> None:
        self._sentences = [list(s) for s in sentences if s]
        #: The core's filter (``_core.SourceFilter``).
        self.native = _core.SourceFilter(self._sentences)

    def __call__(self, source: Sequence[str]) -> bool:
        return self.native(list(source))

    def __len__(self) -> int:
        """The number of distinct n-grams indexed so far."""
        return len(self.native)

    def __reduce__(self):
        return (SourceFilter, (self._sentences,))

    def __repr__(self) -> str:
        return (
            f"SourceFilter(sentences={len(self._sentences)}, ngrams={len(self.native)}, "
            f"length={self.native.indexed_length})"
        )
