"""Runners on this machine: in this process, or in a pool of forked worker processes.

Every runner keeps the contract of :class:`~fstdecode.run.base.Runner`: N lines in, N
results out, in input order, streamed.

The pool is built on its own processes and pipes rather than ``multiprocessing.Pool``: a
Pool whose worker is killed (SIGKILL, the kernel's out-of-memory killer) replaces the
process but never completes the task it held, so the caller waited for good. Here the
parent watches each worker's pipe *and* its process sentinel: a worker that dies loses
only the chunk it held, which goes to a fresh worker; a chunk whose worker died more than
``retries`` times fails the run with a :class:`RunError` naming its input lines.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Iterable, Iterator

from fstdecode.decoder import DecodeResult, Decoder
from fstdecode.run.base import (
    DEFAULT_CHUNK_SIZE,
    DEFAULT_RETRIES,
    LINGER_SECONDS,
    WINDOW_PER_WORKER,
    Chunk,
    LineFeed,
    Progress,
    RunError,
    check_chunk_size,
    check_retries,
    check_workers,
    decode_chunk,
    decode_one,
)
from fstdecode.run.lines import Line

log = logging.getLogger("fstdecode")

#: Seconds a stopped worker gets to end after SIGTERM before it is killed (SIGKILL).
STOP_SECONDS = 5
#: The longest the threads' runner waits in one call (for a line, a result), so that the main
#: thread runs a signal's handler soon after it comes.
POLL_SECONDS = 0.05


class SerialRunner:
    """Decodes in this process, one line after the other."""

    def map(self, decoder: Decoder, lines: Iterable[Line], progress: Progress | None = None) -> Iterator[DecodeResult]:
        for line in lines:
            result = decode_one(decoder, line)
            if progress is not None:
                progress(1)
            yield result

    def close(self) -> None:
        """Nothing to release."""


def _serve(decoder: Decoder, conn: Connection, inherited: list[Connection], parent: int) -> None:
    """A worker's life: receive ``(index, lines)``, send ``(index, results, exception)``; stop on None,
    on EOF, or when the parent has gone (its pipe closed, or the kernel's signal of :func:`_die_with_parent`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C, quietly
    for sig in (signal.SIGTERM, signal.SIGHUP):  # the parent's handlers (fork copies them) are not a worker's
        signal.signal(sig, signal.SIG_DFL)
    _die_with_parent(parent)
    for other in inherited:  # the pipe ends copied by fork (the others' and this worker's parent end): the parent's
        other.close()
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        index, lines = message
        try:
            answer = (index, decode_chunk(decoder, lines), None)
        except Exception as e:  # a bug in a search: the parent raises it, as a serial run would
            answer = (index, None, RunError(f"{type(e).__name__}: {e}"))
        try:
            conn.send(answer)
        except OSError:  # the parent has gone: nobody waits for the answer
            return


#: Linux's prctl option that has the kernel signal a process when its parent ends (<linux/prctl.h>).
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """On Linux, have the kernel send this worker SIGTERM when its parent ends, however it ends
    (SIGKILL included, which leaves it no time to stop its workers); end at once if it already has.
    Elsewhere a worker notices at its next read, when the parent's end of its pipe is closed.
    (Linux's "parent" is the thread that forked: a pool left by a thread that then ends loses its
    workers, and the next :meth:`ProcessRunner.map` starts new ones.)"""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl in this libc: the pipe's EOF is left
        return
    if os.getppid() != parent:  # the parent ended before the request was in
        os._exit(1)


@dataclass
class _Worker:
    """One worker process, its end of the pipe, and the chunk it holds (None: idle)."""

    process: multiprocessing.process.BaseProcess
    conn: Connection
    chunk: Chunk | None = None


class ThreadRunner:
    """Decodes on ``threads`` threads of this process, one line a task, sharing one decoder.

    The model is loaded once and shared (its tables and LM in the core are read-only during a
    search, and each line's search problem is its own); a native search releases the GIL, so
    the searches of ``threads`` lines run at once, while the Python around them (building a
    line's problem, its derivation, its output) takes turns. The lines are read, and submitted,
    by a thread of their own, so that the main thread never blocks in a read: it waits for
    results at most :data:`POLL_SECONDS` at a time, and a signal's handler (SIGTERM, SIGHUP: the
    CLI's :class:`~fstdecode.cli.stopping.StopOnSignals`) runs there at once, whichever thread
    the signal came to. An error reading the input is raised after the results of the lines
    before it. At most ``threads * WINDOW_PER_WORKER`` lines are read ahead of the
    first one not yet yielded. Unlike :class:`ProcessRunner`, a crash of the core ends the whole
    run: there is no worker to lose.
    """

    def __init__(self, threads: int) -> None:
        check_workers(threads)
        self.threads = threads

    def map(self, decoder: Decoder, lines: Iterable[Line], progress: Progress | None = None) -> Iterator[DecodeResult]:
        from concurrent.futures import ThreadPoolExecutor, TimeoutError as Pending

        room = threading.Semaphore(self.threads * WINDOW_PER_WORKER)  # lines in flight
        ready = threading.Condition()
        queue: deque = deque()  # the submitted lines' futures, in input order
        state = {"ended": False, "error": None, "stop": False}

        def feed() -> None:  # (a daemon: it may be left blocked reading an open pipe)
            try:
                for line in lines:
                    while not room.acquire(timeout=POLL_SECONDS):
                        if state["stop"]:
                            return
                    if state["stop"]:
                        return
                    future = pool.submit(decode_one, decoder, line)
                    with ready:
                        queue.append(future)
                        ready.notify()
            except BaseException as e:  # noqa: BLE001 (raised again in the caller's thread, after the lines before it)
                state["error"] = e
            finally:
                with ready:
                    state["ended"] = True
                    ready.notify()

        pool = ThreadPoolExecutor(self.threads, thread_name_prefix="fstdecode-decode")
        reader = threading.Thread(target=feed, name="fstdecode-input", daemon=True)
        reader.start()
        try:
            while True:
                with ready:
                    while not queue and not state["ended"]:
                        ready.wait(POLL_SECONDS)  # (a bounded wait: the main thread runs signal handlers)
                    future = queue.popleft() if queue else None
                if future is None:
                    if state["error"] is not None:
                        raise state["error"]
                    return
                while True:
                    try:
                        result = future.result(timeout=POLL_SECONDS)
                        break
                    except Pending:
                        continue
                room.release()
                if progress is not None:
                    progress(1)
                yield result
        finally:
            state["stop"] = True
            with ready:
                for future in queue:  # (a consumer that stops early: the lines not started are dropped)
                    future.cancel()
            pool.shutdown(wait=True)

    def close(self) -> None:
        """Nothing to release: the threads end with each :meth:`map`."""


class ProcessRunner:
    """Decodes in ``workers`` forked processes, ``chunk_size`` lines per task.

    Each worker gets the decoder (and its model) once, at fork, and holds one chunk at a
    time. At most ``workers * WINDOW_PER_WORKER`` chunks are read ahead of the first one not
    yet yielded. A worker that dies mid-chunk is replaced and its chunk sent again, up to
    ``retries`` times per chunk.
    """

    def __init__(self, workers: int, chunk_size: int = DEFAULT_CHUNK_SIZE, retries: int = DEFAULT_RETRIES) -> None:
        check_workers(workers)
        check_chunk_size(chunk_size)
        check_retries(retries)
        self.workers = workers
        self.chunk_size = chunk_size
        self.retries = retries
        self._pool: list[_Worker] = []

    @property
    def pids(self) -> list[int]:
        """The process ids of the live workers (while :meth:`map` runs)."""
        return [w.process.pid for w in self._pool if w.process.pid is not None]

    def map(self, decoder: Decoder, lines: Iterable[Line], progress: Progress | None = None) -> Iterator[DecodeResult]:
        window = self.workers * WINDOW_PER_WORKER
        done: dict[int, list[DecodeResult]] = {}
        todo: deque[Chunk] = deque()  # read, not yet (re)sent; retried chunks go first
        deaths: dict[int, int] = {}
        read = next_out = 0  # chunks read from the input; the next chunk to yield
        exhausted = False
        feed = LineFeed(lines)
        try:
            self._pool = []
            for _ in range(self.workers):
                self._pool.append(self._spawn(decoder))
            while True:
                while next_out in done:
                    yield from done.pop(next_out)
                    next_out += 1
                for k, w in enumerate(self._pool):
                    if w.chunk is None and not todo and not exhausted and read - next_out < window:
                        # Wait for input only when no worker has anything to answer: a busy
                        # worker's results must not wait behind a line the user has not typed yet.
                        idle = all(x.chunk is None for x in self._pool)
                        taken = feed.take(self.chunk_size, timeout=None if idle else 0)
                        exhausted = taken is None
                        if taken:
                            todo.append(Chunk(read, taken))
                            read += 1
                    if w.chunk is None and todo:
                        self._send(k, todo.popleft(), decoder)
                if exhausted and next_out == read:
                    return
                if any(w.chunk is not None for w in self._pool):
                    # An idle worker and room in the window: look at the input again soon.
                    hungry = not exhausted and read - next_out < window and any(w.chunk is None for w in self._pool)
                    self._collect(decoder, done, todo, deaths, progress, LINGER_SECONDS / 2 if hungry else None)
        finally:
            feed.close()
            self._stop()

    def close(self) -> None:
        """Stop the workers (:meth:`map` does so when it ends, or when its caller drops it)."""
        self._stop()

    def _spawn(self, decoder: Decoder) -> _Worker:
        parent, child = multiprocessing.Pipe()
        inherited = [w.conn for w in self._pool] + [parent]
        process = multiprocessing.get_context("fork").Process(
            target=_serve, args=(decoder, child, inherited, os.getpid()), daemon=True, name="fstdecode-worker"
        )
        process.start()
        child.close()
        return _Worker(process, parent)

    def _send(self, k: int, chunk: Chunk, decoder: Decoder) -> None:
        """Give ``chunk`` to worker ``k``; one found dead while idle is replaced first (no retry spent)."""
        try:
            self._pool[k].conn.send((chunk.index, chunk.lines))
        except (BrokenPipeError, ConnectionResetError, EOFError):
            self._replace(k, decoder)
            self._pool[k].conn.send((chunk.index, chunk.lines))
        self._pool[k].chunk = chunk

    def _collect(
        self, decoder: Decoder, done: dict, todo: deque, deaths: dict, progress: Progress | None, timeout: float | None
    ) -> None:
        """Wait (up to ``timeout`` seconds; None: without limit) for a busy worker to answer or die;
        file its results (telling ``progress``), or requeue its chunk."""
        busy = [k for k, w in enumerate(self._pool) if w.chunk is not None]
        watched = {self._pool[k].conn: k for k in busy} | {self._pool[k].process.sentinel: k for k in busy}
        for k in sorted({watched[obj] for obj in wait(list(watched), timeout)}):
            w = self._pool[k]
            chunk = w.chunk
            assert chunk is not None  # only busy workers are watched: an internal invariant
            try:
                index, results, error = w.conn.recv() if w.conn.poll() else (None, None, None)
            except (EOFError, OSError):
                index = None
            if index is None:  # the process ended without an answer: killed, or out of memory
                code = self._replace(k, decoder)
                deaths[chunk.index] = deaths.get(chunk.index, 0) + 1
                if deaths[chunk.index] > self.retries:
                    raise RunError(
                        f"{chunk.describe()}: a worker died decoding them {deaths[chunk.index]} times "
                        f"({_exit(code)}; out of memory?); giving up after {self.retries} retries"
                    )
                log.warning(
                    "%s: a worker died (%s); decoding them again on a fresh worker (retry %d of %d)",
                    chunk.describe(), _exit(code), deaths[chunk.index], self.retries,
                )
                todo.appendleft(chunk)
                continue
            if error is not None:
                raise error
            w.chunk = None
            deaths.pop(chunk.index, None)
            done[index] = results
            if progress is not None:
                progress(len(results))

    def _replace(self, k: int, decoder: Decoder) -> int | None:
        """Reap worker ``k`` and start a fresh one in its place; the dead one's exit code."""
        old = self._pool[k]
        old.process.join(STOP_SECONDS)
        old.conn.close()
        self._pool[k] = self._spawn(decoder)
        return old.process.exitcode

    def _stop(self) -> None:
        """End every worker (SIGTERM; SIGKILL for one still there after :data:`STOP_SECONDS`) and reap it."""
        for w in self._pool:
            w.process.terminate()
        for w in self._pool:
            w.process.join(STOP_SECONDS)
            if w.process.is_alive():
                w.process.kill()
                w.process.join(STOP_SECONDS)
            w.conn.close()
        self._pool = []


def _exit(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"
