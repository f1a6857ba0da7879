"""The running server's state: the current model, the worker pool, the metrics, reloads.

A reload (SIGHUP) reads the model again in a thread of its own while the old one keeps serving;
the new :class:`~fstdecode.server.service.Service` replaces the old in one assignment, and the
requests that started on the old one finish on it. A reload that fails keeps the old model and
is reported by /health and /metrics.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from fstdecode.errors import FstdecodeError
from fstdecode.model.model import distortion_limit_text
from fstdecode.server.limits import Admission, RequestLimits
from fstdecode.server.metrics import Metrics
from fstdecode.server.options import ServerOptions
from fstdecode.server.pool import WorkerPool
from fstdecode.server.service import ModelSetup, Service

log = logging.getLogger("fstdecode.server")


class Error(FstdecodeError):
    """A model the server's limits cannot serve (its moses.ini's n-best size over --max-nbest)."""


def checked(service: Service, options: ServerOptions) -> Service:
    """``service``, when every request the server takes can be answered with it; else Error."""
    size = service.default_nbest[0]
    if size > options.max_nbest:
        raise Error(f"{service.model.name}: [n-best-list] asks the {size} best of each XML-RPC request, over "
                    f"--max-nbest {options.max_nbest}; raise --max-nbest, or lower the ini's size")
    return service


def nbest_note(service: Service) -> str | None:
    """The start-up's word on a moses.ini ``[n-best-list]`` (None without one): what it does here."""
    size, distinct = service.default_nbest
    if not size:
        return None
    return (f"{service.model.name}: [n-best-list]: an XML-RPC request without 'nbest' gets the {size}"
            f"{' distinct' if distinct else ''} best, as from mosesserver; its file is not written (each reply "
            "holds its list) and the JSON API's default stays 1")


@dataclass(frozen=True)
class ReloadStatus:
    """The last reload: ``count`` reloads tried, whether the last ``failed`` and why, and when
    (``at``, seconds since the epoch; None before the first)."""

    count: int = 0
    failed: bool = False
    error: str | None = None
    at: float | None = None


class ServerState:
    """Everything the endpoints share. ``service`` is read once per request (a snapshot)."""

    def __init__(self, options: ServerOptions, setup: ModelSetup) -> None:
        self.options = options
        self.setup = setup
        self.service = checked(Service(setup), options)  # a model that cannot load stops the start-up (exit 2)
        self.limits = RequestLimits(options.max_chars, options.max_lines, options.max_nbest, options.allow_methods)
        self.pool = WorkerPool(options.threads, Admission(options.capacity, options.retry_after))
        self.metrics = Metrics(self._gauges)
        self.reload_status = ReloadStatus()
        self.started = time.time()
        #: Requests answered "the server is stopping" at the end of SIGTERM's drain timeout.
        self.stopped_requests = 0
        self._requests = 0
        self._count_lock = threading.Lock()
        self._reload_lock = threading.Lock()
        self._reload_again = False

    # ------------------------------------------------------------------ requests in flight

    def entered(self) -> None:
        with self._count_lock:
            self._requests += 1

    def left(self) -> None:
        with self._count_lock:
            self._requests -= 1

    @property
    def in_flight(self) -> int:
        """Requests being answered (read, queued, decoded or written)."""
        return self._requests

    def _gauges(self) -> dict[str, tuple[str, float]]:
        pool = self.pool
        return {
            "fstdecode_requests_in_flight": ("Requests being answered.", self.in_flight),
            "fstdecode_queue_length": ("Sentences admitted and waiting for a decoding thread.", pool.waiting),
            "fstdecode_sentences_decoding": ("Sentences being decoded.", pool.running),
            "fstdecode_queue_capacity": ("Sentences that may wait for a thread (--queue-size).", self.options.queue_size),
            "fstdecode_admitted_capacity": ("Sentences admitted at most, decoding and waiting (threads + queue size).",
                                            self.options.capacity),
            "fstdecode_threads": ("Decoding threads.", self.options.threads),
            "fstdecode_last_reload_failed": ("1 when the last model reload failed (the old model serves).",
                                             int(self.reload_status.failed)),
        }

    # ------------------------------------------------------------------ reloads

    def reload(self) -> bool:
        """Read the model again and serve it; on failure keep the old one. Returns whether it
        loaded. Reloads do not overlap: one asked for during another runs once after it."""
        if not self._reload_lock.acquire(blocking=False):
            self._reload_again = True
            return False
        try:
            while True:
                self._reload_again = False
                ok = self._reload_once()
                if not self._reload_again:
                    return ok
        finally:
            self._reload_lock.release()

    def reload_in_background(self) -> threading.Thread:
        """:meth:`reload` in a thread of its own (what SIGHUP does): decoding goes on meanwhile."""
        thread = threading.Thread(target=self.reload, name="fstdecode-reload", daemon=True)
        thread.start()
        return thread

    def _reload_once(self) -> bool:
        start = time.perf_counter()
        count = self.reload_status.count + 1
        try:
            service = checked(Service(self.setup), self.options)
        except Exception as e:  # any failure (a bad file, memory): the old model keeps serving
            why = f"{type(e).__name__}: {e}" if not isinstance(e, FstdecodeError) else str(e)
            self.reload_status = ReloadStatus(count, True, why, time.time())
            self.metrics.reload("failed")
            log.error("reload failed, the previous model keeps serving: %s", why)
            return False
        self.service = service
        self.reload_status = ReloadStatus(count, False, None, time.time())
        self.metrics.reload("ok")
        log.info("reloaded the model in %.1f s: %s", time.perf_counter() - start, describe(service))
        return True


def describe(service: Service) -> str:
    """One line on the model: its name, table, LM, distortion limit and methods."""
    s = service.summary()
    tables = f" ({s['tables']})" if service.setup.per_sentence else ""
    limit = distortion_limit_text(s["distortion_limit"])
    pairs = "uncounted (Moses' binary tables)" if s["phrase_pairs"] is None else f"{s['phrase_pairs']:,}"
    return (f"model {s['name']}: {pairs} phrase pairs{tables}, LM order {s['lm_order']}, "
            f"{limit}, methods {','.join(s['methods'])} (default {s['method']})")
