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
from typing import Callable, Iterable, Iterator, Protocol

from fstdecode.decoder import DecodeResult, Decoder
from fstdecode.errors import FstdecodeError
from fstdecode.run.lines import Line

#: Lines per chunk when none is given: at 2-20 ms a line (the stack decoder on real models), a
#: chunk takes 30-300 ms, far above the ~1 ms a round trip costs (docs/benchmarks.md), and a
#: chunk lost with a killed worker costs little to redo.
DEFAULT_CHUNK_SIZE = 16
#: Seconds of decoding per Dask task when no chunk size is given (:class:`ChunkSizer`). A Dask
#: task costs ~5 ms of client, scheduler and worker time whatever its size (docs/benchmarks.md,
#: bench_scale), against ~0.5 ms for the local pool's pipes: half a second of work keeps that near
#: 1%, and bounds what a killed worker's chunk costs to redo and how long a finished line can wait
#: behind a slower one (the window holds ``WINDOW_PER_WORKER`` chunks per worker, ~2 s of work).
DASK_TASK_SECONDS = 0.5
#: Tasks per second a Dask scheduler is asked for at most when chunks are sized automatically:
#: Dask's scheduler spends ~0.2-1 ms on a task, so on a large cluster the target time per task
#: grows with the workers (1,600 workers: 1.6 s a task) to keep it at or under this rate.
DASK_SCHEDULER_TASKS_PER_SECOND = 1000
#: The most lines an automatically sized chunk holds (so a run of near-empty lines stays bounded).
MAX_AUTO_CHUNK = 4096
#: Chunks in flight per worker: one running, the rest queued, so a worker never waits for work.
WINDOW_PER_WORKER = 4
#: Times a chunk is retried after its worker died (killed, or out of memory) before the run fails.
DEFAULT_RETRIES = 2


class RunError(FstdecodeError):
    """A runner that cannot be set up, or a chunk that killed its worker more times than allowed."""


#: Told how many lines just finished decoding (a chunk's, as it completes, in any order).
Progress = Callable[[int], None]


class Runner(Protocol):
    """Maps a decoder over lines; yields one result per line, in input order, as they are ready.

    ``progress``, when given, is called with the number of lines of each chunk as the chunk
    finishes (before its lines may be yielded, which waits for the chunks before it); the calls
    add up to the number of lines. A runner of one's own need accept it only if a caller passes it.
    """

    def map(self, decoder: Decoder, lines: Iterable[Line], progress: Progress | None = None) -> Iterator[DecodeResult]: ...

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


class ChunkSizer:
    """Lines per chunk, from the decoding time the workers measured: about ``target`` seconds a chunk.

    The first chunk holds ``first`` lines (nothing is known yet: a slow search then starts on
    every worker at once rather than queue in one long chunk). After each finished chunk the
    size moves toward ``target`` / (seconds per line), the rate taken over the recent chunks
    (older ones weigh half as much at each step), growing at most twofold a step (a few fast
    lines say little about the next ones) and held within ``[1, most]``.
    """

    def __init__(self, target: float, first: int = 1, most: int = MAX_AUTO_CHUNK) -> None:
        if target <= 0 or not 1 <= first <= most:
            raise RunError(f"chunk sizing needs target > 0 and 1 <= first <= most, got {target}, {first}, {most}")
        self.target = target
        self.most = most
        self.size = first
        self._lines = 0.0
        self._seconds = 0.0

    def observe(self, lines: int, seconds: float) -> None:
        """A chunk of ``lines`` lines took ``seconds`` to decode on its worker."""
        if lines <= 0:
            return
        self._lines = self._lines / 2 + lines
        self._seconds = self._seconds / 2 + max(seconds, 0.0)
        ideal = self.target * self._lines / self._seconds if self._seconds > 0 else float("inf")
        self.size = max(1, int(min(self.most, 2 * self.size, ideal)))


def chunks_sized(lines: Iterable[Line], sizer: ChunkSizer) -> Iterator[Chunk]:
    """``lines`` in chunks of ``sizer.size`` lines each, read lazily (the size read as each chunk is)."""
    it = iter(lines)
    for index in range(1 << 62):
        block = tuple(islice(it, sizer.size))
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
