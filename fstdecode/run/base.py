"""What every runner shares: the Runner protocol, chunks of lines, the in-order window.

A runner maps a :class:`~fstdecode.decoder.Decoder` over numbered
:class:`~fstdecode.run.lines.Line` s and yields one result per line, in input order,
streamed. Runners that use other processes send the lines in :class:`Chunk` s (a few
lines each, so that the cost of a round trip is shared) and keep at most a bounded window
of chunks in flight, so that memory does not grow with the input.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Iterable, Iterator, Protocol

from fstdecode.decoder import DecodeResult, Decoder
from fstdecode.errors import FstdecodeError
from fstdecode.run.lines import Line

#: Lines per chunk when none is given: at 2-20 ms a line (the stack decoder on real models), a
#: chunk takes 30-300 ms, far above the ~1 ms a round trip costs (docs/benchmarks.md), and a
#: chunk lost with a killed worker costs little to redo.
DEFAULT_CHUNK_SIZE = 16
#: Lines per chunk on Dask when none is given: a Dask task costs ~5-20 ms of scheduler, client
#: and worker time against ~1 ms for the local pool's pipes (docs/benchmarks.md, bench_scale),
#: so its chunks are longer, to keep that under ~10% of the decoding.
DASK_CHUNK_SIZE = 64
#: Chunks in flight per worker: one running, the rest queued, so a worker never waits for work.
WINDOW_PER_WORKER = 4
#: Times a chunk is retried after its worker died (killed, or out of memory) before the run fails.
DEFAULT_RETRIES = 2


class RunError(FstdecodeError):
    """A runner that cannot be set up, or a chunk that killed its worker more times than allowed."""


class Runner(Protocol):
    """Maps a decoder over lines; yields one result per line, in input order, as they are ready."""

    def map(self, decoder: Decoder, lines: Iterable[Line]) -> Iterator[DecodeResult]: ...

    def close(self) -> None:
        """Release what the runner started (worker processes, a cluster); the runner may not be used after."""


@dataclass(frozen=True)
class Chunk:
    """Consecutive input lines, sent to a worker as one task; ``index`` counts chunks from 0."""

    index: int
    lines: tuple[Line, ...]

    def describe(self) -> str:
        """The chunk's input lines (1-based), for messages."""
        if not self.lines:
            return f"chunk {self.index} (empty)"
        return f"input lines {self.lines[0].id + 1}-{self.lines[-1].id + 1}"


def chunked(lines: Iterable[Line], size: int) -> Iterator[Chunk]:
    """``lines`` in chunks of ``size`` (the last may be shorter), read lazily."""
    if size < 1:
        raise RunError(f"--chunk-size must be >= 1, got {size}")
    it = iter(lines)
    for index in range(1 << 62):
        block = tuple(islice(it, size))
        if not block:
            return
        yield Chunk(index, block)


def decode_one(decoder: Decoder, line: Line) -> DecodeResult:
    """The result of one line: an unreadable line gives an error result, never an exception."""
    if line.error is not None:
        return DecodeResult(line.id, (), error=line.error)
    return decoder.decode(line.text, id=line.id)


def decode_chunk(decoder: Decoder, lines: Iterable[Line]) -> list[DecodeResult]:
    """The results of ``lines``, in their order."""
    return [decode_one(decoder, line) for line in lines]


def check_workers(workers: int) -> None:
    if workers < 1:
        raise RunError(f"--workers (--threads) must be >= 1, got {workers}")


def check_retries(retries: int) -> None:
    if retries < 0:
        raise RunError(f"--retries must be >= 0, got {retries}")
