"""Run the server: uvicorn on a socket bound here, signals, TLS, and the start-up line.

* SIGTERM (and Ctrl-C): stop accepting, let the requests in flight finish within
  ``--drain-timeout`` seconds, then exit 0 (Ctrl-C: 130). Work still running at the timeout is
  abandoned, with a warning.
* SIGHUP: reload the model in a thread while the old one serves
  (:meth:`~fstdecode.server.state.ServerState.reload`).
* Slow clients: a connection gets ``--client-timeout`` seconds to send a request's headers
  (:class:`HeaderTimeoutProtocol`) and as long again for its body (:func:`~fstdecode.server.app.read_body`).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import ssl
import sys
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from fstdecode.errors import FstdecodeError
from fstdecode.server.app import build_app
from fstdecode.server.options import ServerOptions
from fstdecode.server.service import ModelSetup
from fstdecode.server.state import ServerState, describe, nbest_note

log = logging.getLogger("fstdecode.server")


class Error(FstdecodeError):
    """The server cannot start: the address cannot be bound, or the TLS files cannot be read."""


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline on each request's headers: a connection that
    opens, or starts a request, and does not finish its headers within ``header_timeout`` seconds
    is closed (uvicorn's own keep-alive timeout covers only idle connections, not slow ones)."""

    header_timeout: float = 30.0
    _header_timer: Any = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        _no_delay(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            if self._header_timer is None:  # a request begun and not finished
                self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _too_slow(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            log.warning("closed a connection from %s: no complete request headers within %g s",
                        "%s:%d" % self.client if self.client else "-", self.header_timeout)
            self.transport.close()


def _no_delay(transport) -> None:
    """TCP_NODELAY on the connection: uvicorn writes a response's headers and body apart, and with
    Nagle's algorithm the body waits for the client's delayed ACK (40 ms a request on keep-alive).
    asyncio sets it only on sockets made with IPPROTO_TCP, which a socket bound here is not."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # (the connection may already be gone)
            pass


def protocol(header_timeout: float) -> type[HeaderTimeoutProtocol]:
    """:class:`HeaderTimeoutProtocol` with its deadline set (uvicorn makes the instances)."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": header_timeout})


def serve(options: ServerOptions, setup: ModelSetup) -> int:
    """Load the model, listen, serve until SIGTERM or Ctrl-C; the exit status (0 after a drain).

    Raises FstdecodeError (the CLI's one-line error, exit 2) when the model, the address or the TLS
    files are bad: all three are checked before the first request can arrive."""
    state = ServerState(options, setup)
    server, sock = make_server(state)
    scheme = "https" if options.tls else "http"

    def stop(_sig: int, _frame) -> None:
        # Before uvicorn's own handlers are in (server.run installs them), a SIGTERM stops the
        # server as soon as it has started; after, uvicorn raises the SIGTERM it caught again once
        # stopped: it lands here, not in the default's exit.
        server.should_exit = True

    # The handlers go in before the "serving" line: a client (or a test) may signal at once.
    previous = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, stop),
        signal.SIGHUP: signal.signal(signal.SIGHUP, lambda _s, _f: state.reload_in_background()),
    }
    try:
        note = nbest_note(state.service)
        if note is not None:
            log.warning("%s", note)
        print(f"fstdecode: serving {describe(state.service)}; {options.threads} thread(s), queue {options.queue_size}, "
              f"on {scheme}://{_url_host(options.host)}:{sock.getsockname()[1]} "
              "(XML-RPC /RPC2, JSON /translate, /health, /metrics)", file=sys.stderr, flush=True)
        if not options.loopback() and not options.tls:
            log.warning("listening on %s without TLS: requests%s travel in clear text; give --certfile and --keyfile",
                        options.host, " and the bearer token" if options.token else "")
        server.run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()
    return _finish(state)


def make_server(state: ServerState) -> tuple[uvicorn.Server, socket.socket]:
    """A uvicorn server of ``state``'s application and its bound socket (run it with
    ``server.run(sockets=[sock])``; in a thread other than the main one it installs no signal
    handler). Raises Error for TLS files that cannot be read or an address that cannot be bound."""
    options = state.options
    config = uvicorn.Config(
        build_app(state), http=protocol(options.client_timeout), lifespan="off", log_config=None,
        access_log=False, proxy_headers=False, timeout_graceful_shutdown=options.drain_timeout,  # type: ignore[arg-type]
        limit_concurrency=options.max_connections, ssl_certfile=options.certfile, ssl_keyfile=options.keyfile,
    )
    try:
        config.load()
    except (ssl.SSLError, OSError) as e:
        raise Error(f"--certfile {options.certfile} / --keyfile {options.keyfile}: {e}") from None
    sock = _bind(options)
    _uvicorn_logging()
    return uvicorn.Server(config), sock


def _finish(state: ServerState) -> int:
    """After uvicorn stopped: drop queued work; leave at once if some is still decoding (the drain
    timed out), else exit normally."""
    state.pool.shutdown(wait=False)
    if state.pool.running or state.stopped_requests:
        log.warning("drain timeout (%g s): %d request(s) answered that the server is stopping; %d sentence(s) still "
                    "decoding are abandoned", state.options.drain_timeout, state.stopped_requests, state.pool.running)
    if state.pool.running:
        logging.shutdown()
        sys.stderr.flush()
        os._exit(0)  # the decoding threads cannot be stopped; do not wait for them
    log.info("stopped after draining the requests in flight")
    return 0


def _bind(options: ServerOptions) -> socket.socket:
    """The listening socket (port 0: a free port, said in the start-up line)."""
    try:
        family = socket.AF_INET6 if ":" in options.host else socket.AF_INET
        return socket.create_server((options.host, options.port), family=family, backlog=2048, reuse_port=False)
    except OSError as e:
        raise Error(f"cannot listen on {options.host}:{options.port}: {e.strerror or e}") from None


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _uvicorn_logging() -> None:
    """uvicorn's warnings and errors through fstdecode's handler (one format on stderr), less the
    one that the drain timeout's own line says (:func:`_finish`)."""
    ours = logging.getLogger("fstdecode").handlers
    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = list(ours)
        logger.setLevel(logging.WARNING)
        logger.propagate = False
        if not any(isinstance(f, _SaidByFinish) for f in logger.filters):
            logger.addFilter(_SaidByFinish())


class _SaidByFinish(logging.Filter):
    """Drops uvicorn's "Cancel N running task(s), timeout graceful shutdown exceeded" (an ERROR)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Cancel %s running task(s)")
