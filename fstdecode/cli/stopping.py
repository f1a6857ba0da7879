"""SIGTERM and SIGHUP during a ``decode`` or ``fstdecode moses`` run of several workers.

By default either signal ends the process at once, which leaves its worker processes (and a
Dask LocalCluster's) running, orphaned. While a :class:`StopOnSignals` block is active, each
raises :class:`Terminated` in the main thread instead: the runner stops its workers as the
exception leaves it, the CLI writes nothing more, and exits ``128 + the signal`` (143, 129), as a
shell reports a process that the signal ended. A result being written when the signal comes is
first written whole, to the output and to every side file (so they stay line for line), unless a
second signal comes meanwhile (a reader that stopped reading must not hold the run).

A serial run keeps the default: it has no workers to stop, and a Python handler would wait for
the line the native core is decoding. ``fstdecode serve`` has its own handlers (SIGHUP reloads).
"""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from types import FrameType
from typing import Iterator

#: The signals that stop a run of workers.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """A run stopped by ``signum`` (a BaseException, as KeyboardInterrupt: no ``except Exception``
    on its way up may swallow it). ``written``: the results written before it, when known."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.written: int | None = None

    @property
    def status(self) -> int:
        """The exit status: 128 + the signal's number."""
        return 128 + self.signum


class StopOnSignals:
    """While entered (and ``active``), SIGTERM and SIGHUP raise :class:`Terminated` in the main
    thread, at once or, inside :meth:`held`, as the held block ends; the handlers before are put
    back on exit. Invariant: Terminated is raised at most once per block. A process forked
    meanwhile (a worker, before it sets its own handlers) that gets the signal dies of it, as by default."""

    def __init__(self, active: bool = True) -> None:
        self.active = active
        self._owner = os.getpid()
        self._pending: int | None = None
        self._raised = False
        self._holding = 0
        self._previous: dict[int, object] = {}

    def __enter__(self) -> StopOnSignals:
        if self.active:
            self._previous = {sig: signal.signal(sig, self._handle) for sig in STOP_SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous = {}

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if os.getpid() != self._owner:  # a worker forked a moment ago: die of the signal, as by default
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if self._raised:  # stopping already: let the workers be reaped
            return
        second = self._pending is not None
        self._pending = signum
        if not self._holding or second:
            self._raise(signum)

    def _raise(self, signum: int) -> None:
        self._raised = True
        raise Terminated(signum)

    @contextmanager
    def held(self) -> Iterator[None]:
        """A block the first signal does not cut short (writing one result): it raises as the block ends."""
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1
        if self._pending is not None and not self._raised and not self._holding:
            self._raise(self._pending)
