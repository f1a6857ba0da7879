"""Runners on this machine: in this process, or in a pool of worker processes.

Every runner keeps the contract of :func:`decode_lines`: N lines in, N
results out, in input order, streamed (the pool holds at most a bounded
window of lines in flight, so a million-line input is never gathered in
memory).
"""

from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from typing import Iterable, Iterator, Protocol

from fstdecode.decoder import DecodeResult, Decoder
from fstdecode.errors import FstdecodeError
from fstdecode.run.lines import Line

#: Lines in flight per worker: enough to keep the workers busy, few enough to bound memory.
WINDOW_PER_WORKER = 4


class RunError(FstdecodeError):
    """A runner that cannot be set up (e.g. a worker count below 1)."""


class Runner(Protocol):
    """Maps a decoder over lines; yields one result per line, in input order."""

    def map(self, decoder: Decoder, lines: Iterable[Line]) -> Iterator[DecodeResult]: ...


def decode_one(decoder: Decoder, line: Line) -> DecodeResult:
    """The result of one line: an unreadable line gives an error result, never an exception."""
    if line.error is not None:
        return DecodeResult(line.id, (), error=line.error)
    return decoder.decode(line.text, id=line.id)


class SerialRunner:
    """Decodes in this process, one line after the other."""

    def map(self, decoder: Decoder, lines: Iterable[Line]) -> Iterator[DecodeResult]:
        for line in lines:
            yield decode_one(decoder, line)


_WORKER: Decoder | None = None


def _init_worker(decoder: Decoder) -> None:
    global _WORKER
    _WORKER = decoder
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C, quietly


def _decode_in_worker(line: Line) -> DecodeResult:
    if _WORKER is None:  # set by _init_worker; an internal invariant, not user input
        raise RunError("worker used before its decoder was set")
    return decode_one(_WORKER, line)


class ProcessRunner:
    """Decodes in ``workers`` forked processes; each gets the decoder (and its model) once, at fork."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise RunError(f"--workers (--threads) must be >= 1, got {workers}")
        self.workers = workers

    def map(self, decoder: Decoder, lines: Iterable[Line]) -> Iterator[DecodeResult]:
        ctx = multiprocessing.get_context("fork")
        pool = ctx.Pool(self.workers, initializer=_init_worker, initargs=(decoder,))
        try:
            pending: deque = deque()
            window = self.workers * WINDOW_PER_WORKER
            for line in lines:
                pending.append(pool.apply_async(_decode_in_worker, (line,)))
                if len(pending) >= window:
                    yield pending.popleft().get()
            while pending:
                yield pending.popleft().get()
            pool.close()
        finally:
            pool.terminate()
            pool.join()


def runner_for(workers: int) -> Runner:
    """The local runner for ``workers`` processes (1: this process)."""
    return SerialRunner() if workers == 1 else ProcessRunner(workers)


def decode_lines(decoder: Decoder, lines: Iterable[str | Line], runner: Runner | None = None) -> Iterator[DecodeResult]:
    """Decode ``lines`` (strings or :class:`Line` s), one result per line, in order.

    Strings are numbered from 0 and lose their end of line.
    """
    numbered = (ln if isinstance(ln, Line) else Line(i, ln.rstrip("\r\n")) for i, ln in enumerate(lines))
    yield from (runner or SerialRunner()).map(decoder, numbered)
