"""The translation server's settings: one frozen dataclass, checked on construction.

Every limit here is the server's: no request can raise it (README.md, "Translation server").
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, fields

from fstdecode.decoder import DEFAULT_METHOD
from fstdecode.errors import FstdecodeError

#: A request's characters (over all its lines), by default: the issue's bound.
DEFAULT_MAX_CHARS = 100_000
#: The bytes of a request body read before it is refused (413), by default. XML-RPC spends up to
#: 6 bytes per character on escapes (``&quot;``), so 1 MiB holds a text of the default size.
DEFAULT_MAX_BODY_BYTES = 1 << 20


#: The error of an ``--allow-methods`` that names none (``''``, ``,``).
NO_METHODS = "--allow-methods names no method; give one or more, comma-separated (e.g. stack,exact)"


class Error(FstdecodeError):
    """A server setting out of its range (the command line says it on one line, exit status 2)."""


@dataclass(frozen=True)
class ServerOptions:
    """How the server listens, how much it takes, and who may call it.

    Invariants (checked in ``__post_init__``): every count is >= 1 (``queue_size`` >= 0), every
    timeout finite and > 0; ``certfile`` and ``keyfile`` come together; ``allow_methods`` is not
    empty and holds ``method``; ``token``, when set, is a non-empty string of printable ASCII.
    """

    host: str = "127.0.0.1"
    port: int = 8080
    #: Sentences decoded at once (worker threads), as ``decode --threads``.
    threads: int = 1
    #: Sentences admitted beyond those being decoded; past it a request gets 503 and Retry-After.
    queue_size: int = 64
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_chars: int = DEFAULT_MAX_CHARS
    #: Lines of one JSON batch (``{"lines": [...]}``).
    max_lines: int = 100
    #: The largest n-best list a request may ask for.
    max_nbest: int = 100
    #: Seconds a client has to send a request's headers and body (slow clients time out).
    client_timeout: float = 30.0
    #: Seconds SIGTERM waits for the requests in flight before the process exits.
    drain_timeout: float = 30.0
    #: Seconds a busy answer (503, or an XML-RPC fault) tells the client to wait (``Retry-After``).
    retry_after: int = 1
    #: Open connections at most (uvicorn's ``limit_concurrency``; beyond, uvicorn answers 503).
    max_connections: int = 100
    #: The method of a request that names none (and of every XML-RPC request).
    method: str = DEFAULT_METHOD
    allow_methods: tuple[str, ...] = ("stack", DEFAULT_METHOD)
    token: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    #: Log each request's source text (off: the text may be private).
    log_text: bool = False

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "int":
                _check_int(f.name, value, 0 if f.name in ("queue_size", "port") else 1)
            elif f.type == "float":
                _check_seconds(f.name, value)
        if self.port > 65535:
            raise Error(f"--port must be at most 65535, got {self.port}")
        if (self.certfile is None) != (self.keyfile is None):
            raise Error("--certfile and --keyfile come together (TLS needs both)")
        if not self.allow_methods:
            raise Error(NO_METHODS)
        if self.method not in self.allow_methods:
            raise Error(f"--method {self.method} is not in --allow-methods ({','.join(self.allow_methods)})")
        if self.token is not None and not (self.token and self.token.isascii() and self.token.isprintable()
                                           and " " not in self.token):
            raise Error("--token must be non-empty printable ASCII without spaces (it travels in an HTTP header)")

    @property
    def tls(self) -> bool:
        return self.certfile is not None

    @property
    def capacity(self) -> int:
        """Sentences admitted at once: those decoding plus those queued."""
        return self.threads + self.queue_size

    def loopback(self) -> bool:
        """Whether ``host`` is a loopback address (or ``localhost``): only this machine can connect."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


def _check_int(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise Error(f"--{name.replace('_', '-')} must be an integer >= {minimum}, got {value!r}")


def _check_seconds(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise Error(f"--{name.replace('_', '-')} must be a number of seconds > 0, got {value!r}")
