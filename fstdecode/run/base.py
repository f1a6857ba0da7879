"""What every runner shares: the Runner protocol, chunks of lines, the in-order window.

A runner maps a :class:`~fstdecode.decoder.Decoder` over numbered
:class:`~fstdecode.run.lines.Line` s and yields one result per line, in input order,
streamed. Runners that use other processes send the lines in :class:`Chunk` s (a few
lines each, so that the cost of a round trip is shared) and keep at most a bounded window
of chunks in flight, so that memory does not grow with the input. They cut their chunks from
a :class:`LineFeed`, which never holds a line back for long waiting for its chunk to fill.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Protocol

from fstdecode.decoder import DecodeResult, Decoder
from fstdecode.errors import FstdecodeError
from fstdecode.io.tokens import split_tokens
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


#: Seconds a partly filled chunk waits for its next line before it is sent as it is: far below
#: what a person typing notices, far above the microseconds between a file's lines (which
#: therefore always fill their chunks).
LINGER_SECONDS = 0.05


class LineFeed:
    """The input lines, read ahead by a thread and handed out in chunks that never wait long.

    A thread reads ``lines`` in order, at most one chunk (the size last asked for) ahead of
    what was taken, so memory stays bounded whatever the input's length. :meth:`take` hands out
    the next lines, up to ``size`` of them: at once when ``size`` are there or the input has
    ended, and otherwise as soon as no new line has come for ``linger`` seconds. So a file (or
    any fast input) is cut into full chunks, while each line of a slow one, as a user types it
    into a pipe, is decoded and answered before the next arrives: a runner must never wait for
    a line that the user waits to type until they see the answer to the last one.

    The thread is a daemon: a caller that stops early (an error, ``| head``) need not drain an
    input that may never end; after :meth:`close` it stops at its next line. It may still be
    blocked reading when the process exits, so it must not read a stream that the interpreter
    closes at exit: ``sys.stdin`` itself (Python aborts, unable to take its lock); read a
    duplicate of its file descriptor instead (see ``fstdecode.cli.running``).
    """

    def __init__(self, lines: Iterable[Line], linger: float = LINGER_SECONDS) -> None:
        self.linger = linger
        self._lines = iter(lines)
        self._buffer: deque[Line] = deque()
        self._want = 1  # lines the thread keeps buffered: the size of the last take
        self._ended = False
        self._error: BaseException | None = None
        self._closed = False
        self._last = time.monotonic()  # when the last line arrived
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._read, name="fstdecode-input", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        """The thread: buffer lines up to ``_want``, until the input ends, fails, or the feed closes."""
        while True:
            with self._ready:
                while len(self._buffer) >= self._want and not self._closed:
                    self._ready.wait()
                if self._closed:
                    return
            try:
                line = next(self._lines)
            except StopIteration:
                line = None
            except BaseException as e:  # noqa: BLE001 (raised again by take(), in the caller's thread)
                with self._ready:
                    self._error = e
                    self._ready.notify_all()
                return
            with self._ready:
                if line is None:
                    self._ended = True
                else:
                    self._buffer.append(line)
                    self._last = time.monotonic()
                self._ready.notify_all()
                if line is None:
                    return

    def take(self, size: int, timeout: float | None = None) -> tuple[Line, ...] | None:
        """The next lines: ``size`` of them, or fewer when the input ended or paused for ``linger``
        seconds; ``()`` when none were ready within ``timeout`` seconds (None: wait until some are);
        None once the input is over. An error reading the input is raised after the lines before it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._ready:
            if self._want != size:
                self._want = size
                self._last = time.monotonic()  # the thread has had no chance to fill the new size yet
                self._ready.notify_all()
            while True:
                held = len(self._buffer)
                now = time.monotonic()
                if held >= size or (held and (self._ended or self._error or now - self._last >= self.linger)):
                    taken = tuple(self._buffer.popleft() for _ in range(min(held, size)))
                    self._ready.notify_all()  # room in the buffer: the thread may read on
                    return taken
                if not held and self._error is not None:
                    error, self._error = self._error, None
                    self._ended = True
                    raise error
                if not held and self._ended:
                    return None
                wait = self._last + self.linger - now if held else None
                if deadline is not None:
                    if now >= deadline:
                        return ()
                    wait = deadline - now if wait is None else min(wait, deadline - now)
                self._ready.wait(wait)

    def close(self) -> None:
        """Stop the thread at its next line (the lines it holds are dropped)."""
        with self._ready:
            self._closed = True
            self._buffer.clear()
            self._ready.notify_all()

    def __enter__(self) -> LineFeed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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


def decode_one(decoder: Decoder, line: Line) -> DecodeResult:
    """The result of one line: an unreadable line gives an error result, never an exception."""
    if line.error is not None:
        return DecodeResult(line.id, tuple(split_tokens(line.text)), error=line.error)
    return decoder.decode(line.text, id=line.id)


def decode_chunk(decoder: Decoder, lines: Iterable[Line]) -> list[DecodeResult]:
    """The results of ``lines``, in their order."""
    return [decode_one(decoder, line) for line in lines]


def check_workers(workers: int) -> None:
    if workers < 1:
        raise RunError(f"--workers (--threads) must be >= 1, got {workers}")


def check_chunk_size(size: int | None) -> None:
    """None: the runner's own choice; else at least one line a chunk."""
    if size is not None and size < 1:
        raise RunError(f"--chunk-size must be >= 1, got {size}")


def check_retries(retries: int) -> None:
    if retries < 0:
        raise RunError(f"--retries must be >= 0, got {retries}")


def missing_module(needs: str, error: ImportError, install: str) -> str:
    """The one error line for a feature whose Python package is not installed: what needs what
    (``needs``), the ImportError's own words, and the command that installs it (``--cluster``'s
    and ``serve``'s wording)."""
    return f"{needs} ({error}): {install}"
