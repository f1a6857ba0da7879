"""What a request may ask and hold, and how many sentences the server takes at once.

Every check raises :class:`RequestError`, which carries the HTTP status of the refusal and the
XML-RPC fault code that says the same (``xmlrpc-c``'s codes, which mosesserver sends): the two
protocols refuse the same requests with the same message.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Sequence

from fstdecode.decoder import RESERVED_TOKENS
from fstdecode.errors import FstdecodeError
from fstdecode.io.tokens import split_tokens

#: xmlrpc-c's fault codes (mosesserver's library): what an XML-RPC client receives.
FAULT_INTERNAL = -500
FAULT_TYPE = -501
FAULT_PARSE = -503
FAULT_NO_METHOD = -506
FAULT_REFUSED = -507
FAULT_LIMIT = -509


class RequestError(FstdecodeError):
    """A request the server refuses: ``status`` is the HTTP answer (400, 401, 408, 413, 503 ...)
    and ``fault`` the XML-RPC fault code of the same refusal; the message names the problem."""

    def __init__(self, message: str, status: int = 400, fault: int = FAULT_TYPE) -> None:
        super().__init__(message)
        self.status = status
        self.fault = fault


class Busy(RequestError):
    """The queue is full: HTTP 503 with ``Retry-After`` (an XML-RPC fault carries the header too)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 503, FAULT_LIMIT)


@dataclass(frozen=True)
class RequestLimits:
    """The bounds a request's content must keep (:class:`~fstdecode.server.options.ServerOptions`'s)."""

    max_chars: int
    max_lines: int
    max_nbest: int
    allow_methods: tuple[str, ...]


def check_text(text: object, where: str, allow_reserved: bool = False) -> str:
    """``text`` when it is a sentence the decoder may take, else RequestError naming ``where``.

    A sentence is a string of valid Unicode (no unpaired surrogate, which JSON's ``\\ud800`` can
    carry) with none of the reserved tokens (``<s>``, ``</s>``: the LM's markers; ``|||``: Moses'
    field separator), unless ``allow_reserved``: then the decoder fails that line alone, as ``decode``
    does (the JSON API). Invariant of the result: ``text.encode("utf-8")`` succeeds.
    """
    if not isinstance(text, str):
        raise RequestError(f"{where} must be a string, got {_kind(text)}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise RequestError(f"{where} is not valid Unicode: an unpaired surrogate at character {e.start}") from None
    found = [] if allow_reserved else sorted({w for w in split_tokens(text) if w in RESERVED_TOKENS})
    if found:
        raise RequestError(
            f"{where} holds the reserved token(s) {' '.join(found)} (the LM's sentence markers and Moses' "
            "field separator); remove or escape them"
        )
    return text


def check_size(lines: Sequence[str], limits: RequestLimits) -> None:
    """RequestError (413) when ``lines`` are more than the server takes in one request."""
    if len(lines) > limits.max_lines:
        raise RequestError(f"{len(lines)} lines: a request holds at most {limits.max_lines}", 413, FAULT_LIMIT)
    chars = sum(len(line) for line in lines)
    if chars > limits.max_chars:
        raise RequestError(
            f"{chars:,} characters: a request holds at most {limits.max_chars:,}", 413, FAULT_LIMIT
        )


def check_nbest(value: object, where: str, limits: RequestLimits, minimum: int = 0) -> int:
    """The n-best size ``value`` (an integer, ``minimum`` <= value <= the server's maximum), else RequestError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"{where} must be an integer, got {_kind(value)}")
    if value < minimum:
        raise RequestError(f"{where} must be >= {minimum}, got {value}")
    if value > limits.max_nbest:
        raise RequestError(f"{where} {value}: this server gives at most {limits.max_nbest}", 400, FAULT_LIMIT)
    return value


def check_method(value: object, limits: RequestLimits) -> str:
    """A search method this server allows (``--allow-methods``), else RequestError naming them."""
    if not isinstance(value, str):
        raise RequestError(f"method must be a string, got {_kind(value)}")
    if value not in limits.allow_methods:
        raise RequestError(
            f"method {value!r} is not allowed on this server; it allows {', '.join(limits.allow_methods)}",
            400, FAULT_REFUSED,
        )
    return value


def _kind(value: object) -> str:
    """How a wrong value is named in an error: its JSON/XML-RPC type, not its content (which may be large)."""
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
             tuple: "a list", dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


class Admission:
    """The bound on sentences in the server: those decoding plus those queued, at most ``capacity``.

    A request of ``k`` sentences is admitted when they fit, or when the server holds none (so a
    batch of up to ``--max-lines`` always runs alone); otherwise :meth:`admit` raises Busy at
    once. Each admitted sentence is released once, when its decode ends or is cancelled.
    Invariant: ``0 <= admitted <= max(capacity, the largest batch)``; thread-safe.
    """

    def __init__(self, capacity: int, retry_after: int) -> None:
        self.capacity = capacity
        self.retry_after = retry_after
        self._lock = threading.Lock()
        self._admitted = 0

    @property
    def admitted(self) -> int:
        return self._admitted

    def admit(self, k: int) -> None:
        with self._lock:
            if self._admitted and self._admitted + k > self.capacity:
                raise Busy(
                    f"server busy: {self._admitted} sentence(s) decoding or queued, room for {self.capacity}; "
                    f"retry after {self.retry_after} s"
                )
            self._admitted += k

    def release(self, k: int = 1) -> None:
        with self._lock:
            if k > self._admitted:  # a bug, not a request's fault: keep the count sane and say so
                raise RuntimeError(f"released {k} sentence(s) of {self._admitted} admitted")
            self._admitted -= k
