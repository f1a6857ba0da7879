"""Decoding with the phrase table filtered to the input, one batch of lines at a time.

:func:`decode_filtered` reads the input in batches of ``chunk_lines`` lines. For each
batch it builds a :class:`~fstdecode.io.table_filter.SourceFilter` of the batch's
sentences, gets a decoder whose model keeps only the table entries those sentences can
use (``decoder_for``, which re-reads the table with the filter), and decodes the batch with
the runner. So memory holds one batch and what it needs of the table, whatever the
lengths of the input and the table; the price is one pass over the table file per batch.

Results are those of an unfiltered decode, line for line: a decoder looks up only the
source phrases of its sentence, and the filter keeps exactly those (and the table limit
ranks per source phrase). N lines in, N results out, in input order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice

from fstdecode.decoder import DecodeResult, Decoder, tokens
from fstdecode.io.table_filter import DEFAULT_CHUNK_LINES, SourceFilter
from fstdecode.run.lines import Line
from fstdecode.run.base import Progress, Runner, RunError
from fstdecode.run.local import SerialRunner

__all__ = ["batches", "decode_filtered"]


def batches(lines: Iterable[Line], size: int) -> Iterator[list[Line]]:
    """``lines`` in consecutive lists of ``size`` (the last one shorter), in order."""
    if size < 1:
        raise RunError(f"--filter-chunk must be >= 1, got {size}")
    iterator = iter(lines)
    while batch := list(islice(iterator, size)):
        yield batch


def batch_filter(batch: list[Line]) -> SourceFilter:
    """The filter of a batch: the tokens of every readable line (unreadable ones decode to an error)."""
    return SourceFilter(tokens(line.text) for line in batch if line.error is None)


def decode_filtered(
    decoder_for: Callable[[SourceFilter], Decoder],
    lines: Iterable[Line],
    runner: Runner | None = None,
    chunk_lines: int = DEFAULT_CHUNK_LINES,
    progress: Progress | None = None,
) -> Iterator[DecodeResult]:
    """Decode ``lines`` batch by batch, each with ``decoder_for(its filter)``; results in input order.

    ``progress`` is passed to the runner (see :func:`~fstdecode.run.batch.decode_lines`).
    With no line at all, ``decoder_for`` is still called once (with an empty filter), so
    that a model's files are read and checked whatever the input.
    """
    runner = runner or SerialRunner()
    empty = True
    for batch in batches(lines, chunk_lines):
        empty = False
        decoder = decoder_for(batch_filter(batch))
        yield from runner.map(decoder, batch) if progress is None else runner.map(decoder, batch, progress)
    if empty:
        decoder_for(SourceFilter(()))
