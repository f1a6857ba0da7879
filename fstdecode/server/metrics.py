"""The server's counters, gauges and latency quantiles, written in Prometheus' text format
(version 0.0.4: ``# HELP``, ``# TYPE``, then ``name{label="value"} number`` lines).

Memory is bounded: the latency quantiles come from the last :data:`WINDOW` requests.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, deque
from typing import Callable

from fstdecode.errors import FstdecodeError

#: Requests whose latency the quantiles describe (a sliding window: recent behaviour, bounded memory).
WINDOW = 1024
QUANTILES = (0.5, 0.9, 0.99)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Error(FstdecodeError):
    """A metric recorded with a value it cannot take (a negative latency)."""


class Metrics:
    """Requests by endpoint and outcome, latencies, sentences decoded, reloads; thread-safe.

    ``gauges`` are read when the text is made (in-flight requests, queue length ...), so they are
    never stale. Invariant: every count only grows; ``len(window) <= WINDOW``.
    """

    def __init__(self, gauges: Callable[[], dict[str, tuple[str, float]]]) -> None:
        self._gauges = gauges
        self._lock = threading.Lock()
        self._requests: Counter[tuple[str, str]] = Counter()
        self._sentences = 0
        self._reloads: Counter[str] = Counter()
        self._window: deque[float] = deque(maxlen=WINDOW)
        self._latency_sum = 0.0
        self._latency_count = 0

    def request(self, endpoint: str, outcome: str, seconds: float) -> None:
        """Count one answered request (``outcome``: ok, bad_request, busy, ...) and its latency."""
        if seconds < 0:
            raise Error(f"a latency of {seconds} s")
        with self._lock:
            self._requests[endpoint, outcome] += 1
            self._window.append(seconds)
            self._latency_sum += seconds
            self._latency_count += 1

    def sentences(self, k: int) -> None:
        with self._lock:
            self._sentences += k

    def reload(self, outcome: str) -> None:
        with self._lock:
            self._reloads[outcome] += 1

    def count(self, endpoint: str, outcome: str) -> int:
        with self._lock:
            return self._requests[endpoint, outcome]

    def text(self) -> str:
        """Every metric in Prometheus' text format, ending with a newline."""
        with self._lock:
            requests = sorted(self._requests.items())
            window = sorted(self._window)
            total, count, sentences = self._latency_sum, self._latency_count, self._sentences
            reloads = sorted(self._reloads.items())
        out = _family("fstdecode_requests_total", "counter", "Requests answered, by endpoint and outcome.")
        out += [f'fstdecode_requests_total{{endpoint="{e}",outcome="{o}"}} {n}' for (e, o), n in requests]
        out += _family("fstdecode_errors_total", "counter", "Requests refused or failed (every outcome but ok).")
        out.append(f"fstdecode_errors_total {sum(n for (_, o), n in requests if o != 'ok')}")
        out += _family("fstdecode_sentences_total", "counter", "Sentences decoded.")
        out.append(f"fstdecode_sentences_total {sentences}")
        out += _family("fstdecode_reloads_total", "counter", "Model reloads (SIGHUP), by outcome.")
        out += [f'fstdecode_reloads_total{{outcome="{o}"}} {n}' for o, n in reloads]
        for name, (help, value) in self._gauges().items():
            out += _family(name, "gauge", help)
            out.append(f"{name} {_number(value)}")
        out += _family("fstdecode_request_latency_seconds", "summary",
                       f"Request latency; quantiles over the last {WINDOW} requests.")
        out += [f'fstdecode_request_latency_seconds{{quantile="{q}"}} {_number(quantile(window, q))}' for q in QUANTILES]
        out.append(f"fstdecode_request_latency_seconds_sum {_number(total)}")
        out.append(f"fstdecode_request_latency_seconds_count {count}")
        return "\n".join(out) + "\n"


def quantile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of the sorted values ``ordered`` (nearest rank); NaN when there are none."""
    if not ordered:
        return float("nan")
    rank = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[rank]


def _family(name: str, kind: str, help: str) -> list[str]:
    return [f"# HELP {name} {help}", f"# TYPE {name} {kind}"]


def _number(x: float) -> str:
    """A sample value as Prometheus writes it (``NaN`` for none)."""
    return "NaN" if x != x else repr(float(x)) if isinstance(x, float) else str(x)
