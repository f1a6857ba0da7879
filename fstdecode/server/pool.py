"""The worker threads that decode, and the bounded queue in front of them.

The native searches release the GIL (``py::gil_scoped_release`` in native/bind_*.cpp), so N
threads decode N sentences at once; building a sentence's problem and scoring its derivations
run in Python, under the GIL. A request's sentences are admitted all together or refused at once
(:class:`~fstdecode.server.limits.Admission`): nothing waits without a bound.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Sequence

from fstdecode.decoder import DecodeResult
from fstdecode.errors import FstdecodeError
from fstdecode.server.limits import Admission
from fstdecode.server.service import LineRequest, Service


class Error(FstdecodeError):
    """Work given to a pool that has shut down (the server is stopping)."""


class WorkerPool:
    """``threads`` decoding threads behind an :class:`Admission` bound.

    Invariant: ``running <= threads``; ``waiting = admission.admitted - running >= 0``; every
    admitted sentence is released exactly once, by its future's completion or cancellation.
    """

    def __init__(self, threads: int, admission: Admission) -> None:
        self.threads = threads
        self.admission = admission
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fstdecode-decode")
        self._lock = threading.Lock()
        self._running = 0
        self.decoded = 0

    @property
    def running(self) -> int:
        return self._running

    @property
    def waiting(self) -> int:
        return max(0, self.admission.admitted - self._running)

    def submit(self, service: Service, lines: Sequence[str], request: LineRequest) -> list[Future[DecodeResult]]:
        """Admit ``lines`` (Busy when they do not fit) and queue each for a thread; line ``i`` is
        decoded with id ``i``. Raises Error when the pool has shut down."""
        self.admission.admit(len(lines))
        futures: list[Future[DecodeResult]] = []
        try:
            for i, line in enumerate(lines):
                future = self._executor.submit(self._decode, service, line, i, request)
                future.add_done_callback(self._release)
                futures.append(future)
        except RuntimeError:  # shut down: release what was admitted but never queued
            self.admission.release(len(lines) - len(futures))
            for future in futures:
                future.cancel()
            raise Error("the server is shutting down") from None
        return futures

    def _decode(self, service: Service, line: str, id: int, request: LineRequest) -> DecodeResult:
        with self._lock:
            self._running += 1
        try:
            return service.decode(line, id, request)
        finally:
            with self._lock:
                self._running -= 1
                self.decoded += 1

    def _release(self, _future: Future) -> None:
        self.admission.release(1)

    def shutdown(self, wait: bool) -> None:
        """Stop taking work; cancel what has not started; with ``wait``, join the threads."""
        self._executor.shutdown(wait=wait, cancel_futures=True)
