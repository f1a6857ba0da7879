"""The ASGI application (Starlette): the routes, the checks every request passes, one log line each.

* ``POST /RPC2``: Moses' XML-RPC ``translate`` (:mod:`fstdecode.server.xmlrpc`); every refusal is
  a fault over HTTP 200, as XML-RPC clients expect (a busy fault carries ``Retry-After`` too).
* ``POST /translate``: the JSON API (:mod:`fstdecode.server.jsonapi`); refusals are HTTP errors
  with ``{"error": "..."}``.
* ``GET /health``: the model and the last reload, with no token needed.
* ``GET /metrics``: Prometheus' text format.

Before anything is parsed: the bearer token (every route but /health, compared in constant time),
the body's size (``Content-Length`` first, then the bytes as they come) and the client's time to
send it. A request that fails any check gets its error, one log line (never its text, unless
``--log-text``) and leaves the server as it was.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Sequence

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from fstdecode.decoder import DecodeResult
from fstdecode.server import jsonapi, xmlrpc
from fstdecode.server.limits import FAULT_INTERNAL, FAULT_LIMIT, Busy, RequestError, check_size
from fstdecode.server.metrics import CONTENT_TYPE as METRICS_TYPE
from fstdecode.server.pool import Error as PoolError
from fstdecode.server.service import LineRequest, Service
from fstdecode.server.state import ServerState

log = logging.getLogger("fstdecode.server")

#: The outcome label (metrics, logs) of each HTTP status a refusal carries.
OUTCOMES = {400: "bad_request", 401: "unauthorized", 408: "timeout", 413: "too_large", 415: "bad_request",
            422: "failed", 499: "disconnected", 500: "internal_error", 503: "busy"}


@dataclass
class Exchange:
    """What one request did, for its log line: filled as it goes."""

    endpoint: str
    client: str
    lines: int = 0
    chars: int = 0
    text: str | None = None
    note: str = ""
    started: float = field(default_factory=time.perf_counter)


def build_app(state: ServerState) -> Starlette:
    """The application over ``state`` (``app.state.server``: tests and the runner reach it there)."""
    app = Starlette(routes=[
        Route("/RPC2", _endpoint(state, "/RPC2", _rpc2, _fault), methods=["POST"]),
        Route("/translate", _endpoint(state, "/translate", _translate, _json_error), methods=["POST"]),
        Route("/health", _endpoint(state, "/health", _health, _json_error, auth=False), methods=["GET"]),
        Route("/metrics", _endpoint(state, "/metrics", _metrics, _json_error), methods=["GET"]),
    ])
    app.state.server = state
    return app


#: The answer (JSON: HTTP 503; XML-RPC: a fault) to a request still waiting when SIGTERM's drain timeout ends.
STOPPING = ("the server is stopping: its drain timeout ended before this request's translation was ready; "
            "send it again once the server is back")

#: The characters of a request's text that ``--log-text`` logs (a whole 100,000-character text is no log line).
LOGGED_CHARS = 500

Handler = Callable[[Request, ServerState, Exchange], Awaitable[Response]]


def _endpoint(state: ServerState, name: str, handler: Handler, refuse: Callable[[RequestError], Response],
              auth: bool = True) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` behind the token check, with its refusals made by ``refuse``, its log line and
    its metrics. Never raises: an unexpected error is logged and answered as an internal error."""

    async def endpoint(request: Request) -> Response:
        client = request.client
        ex = Exchange(name, f"{client.host}:{client.port}" if client else "-")
        counted = name in ("/RPC2", "/translate")  # (a probe of /metrics does not count itself)
        if counted:
            state.entered()
        try:
            if auth:
                check_token(request, state.options.token)
            response = await handler(request, state, ex)
            outcome, status = "ok", response.status_code
        except RequestError as e:
            response, outcome, status = _refused(refuse, e, state), OUTCOMES.get(e.status, "bad_request"), e.status
            _log_line(log.warning, ex, status, str(e), state.options.log_text)
        except asyncio.CancelledError:  # uvicorn, at the end of SIGTERM's drain timeout: answer, and stop here
            response, outcome, status = refuse(RequestError(STOPPING, 503, FAULT_LIMIT)), "stopping", 503
            response.headers["Connection"] = "close"
            state.stopped_requests += 1  # (said in the drain timeout's one log line, not a line each)
        except Exception as e:  # a bug must not take the server down: answer, log, go on
            log.exception("internal error on %s from %s", name, ex.client)
            error = RequestError(f"internal error: {type(e).__name__}", 500, FAULT_INTERNAL)
            response, outcome, status = refuse(error), "internal_error", 500
        finally:
            if counted:
                state.left()
        if outcome == "ok" and name != "/metrics" and name != "/health":
            _log_line(log.info, ex, status, ex.note, state.options.log_text)
        state.metrics.request(name, outcome, time.perf_counter() - ex.started)
        return response

    return endpoint


def _refused(refuse: Callable[[RequestError], Response], e: RequestError, state: ServerState) -> Response:
    response = refuse(e)
    if isinstance(e, Busy):
        response.headers["Retry-After"] = str(state.options.retry_after)
    if e.status == 401:
        response.headers["WWW-Authenticate"] = "Bearer"
    if e.status in (408, 413, 415):  # the body was not read to its end: the connection cannot carry another request
        response.headers["Connection"] = "close"
    return response


def _log_line(emit: Callable[..., None], ex: Exchange, status: int, note: str, with_text: bool) -> None:
    """One line per request: endpoint, client, status, size, time, what went wrong (and the text
    only with ``--log-text``)."""
    ms = (time.perf_counter() - ex.started) * 1000
    text = f" text={ex.text[:LOGGED_CHARS]!r}" if with_text and ex.text is not None else ""
    emit("%s %s %d lines=%d chars=%d %.1f ms%s%s", ex.endpoint, ex.client, status, ex.lines, ex.chars, ms,
         f": {note}" if note else "", text)


def check_token(request: Request, token: str | None) -> None:
    """RequestError (401) unless the request carries ``Authorization: Bearer <token>`` (compared in
    constant time: the answer's timing says nothing of how much of a guess was right)."""
    if token is None:
        return
    given = request.headers.get("authorization", "")
    scheme, _, value = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
        raise RequestError("missing or wrong bearer token (Authorization: Bearer ...)", 401, FAULT_LIMIT)


async def read_body(request: Request, limit: int, timeout: float) -> bytes:
    """The request body, at most ``limit`` bytes, within ``timeout`` seconds of the request's start;
    RequestError (413 over the limit, before reading when Content-Length says so; 408 too slow; 415
    a compressed body; 499 the client left)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise RequestError(f"Content-Length {declared[:20]!r} is not a number of bytes")
        if int(declared) > limit:
            raise RequestError(f"request body of {int(declared):,} bytes: at most {limit:,}", 413, FAULT_LIMIT)
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding != "identity":
        raise RequestError(f"Content-Encoding {encoding[:20]!r}: send the body uncompressed", 415)
    chunks: list[bytes] = []
    size = 0

    async def collect() -> None:
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise RequestError(f"request body over {limit:,} bytes", 413, FAULT_LIMIT)
            chunks.append(chunk)

    try:
        await asyncio.wait_for(collect(), timeout)
    except asyncio.TimeoutError:
        raise RequestError(f"the request body took over {timeout:g} s to arrive", 408, FAULT_LIMIT) from None
    except ClientDisconnect:
        raise RequestError("the client disconnected while sending the request", 499, FAULT_LIMIT) from None
    return b"".join(chunks)


async def decode_lines(request: Request, state: ServerState, lines: Sequence[str],
                       line_request: LineRequest) -> tuple[Service, list[DecodeResult]]:
    """Decode ``lines`` on the worker threads with the current model; the model used comes back
    with the results (a reload meanwhile does not change it). Busy (503) when the queue is full;
    RequestError (499) when the client disconnects first: the sentences not started are dropped."""
    service = state.service
    try:
        futures = state.pool.submit(service, lines, line_request)
    except PoolError as e:
        raise RequestError(str(e), 503, FAULT_LIMIT) from None
    gathered = asyncio.gather(*(asyncio.wrap_future(f) for f in futures))
    gathered.add_done_callback(_retrieved)
    watcher = asyncio.ensure_future(_disconnected(request))
    try:
        done, _ = await asyncio.wait({gathered, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not gathered.done():
            _cancel(futures)
        watcher.cancel()
    if gathered not in done:
        gathered.cancel()
        raise RequestError("the client disconnected before its translation was ready", 499, FAULT_LIMIT)
    state.metrics.sentences(len(lines))
    return service, list(gathered.result())


def _retrieved(gathered: asyncio.Future) -> None:
    """Mark the gathered decodes' outcome as seen: when the client left (or the server stops),
    they end cancelled with nobody to read them, and asyncio would log "_GatheringFuture
    exception was never retrieved" at exit, after the request's own line."""
    if not gathered.cancelled():
        gathered.exception()


def _cancel(futures: list[Future]) -> None:
    """Drop the sentences not started (each releases its place in the queue); those decoding finish."""
    for future in futures:
        future.cancel()


async def _disconnected(request: Request) -> None:
    """Return when the client has gone (after the body was read, the next message is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


# ---------------------------------------------------------------------------------- the routes


async def _rpc2(request: Request, state: ServerState, ex: Exchange) -> Response:
    opts = state.options
    body = await read_body(request, opts.max_body_bytes, opts.client_timeout)
    method, params = xmlrpc.parse_call(body)
    call = xmlrpc.translate_call(method, params, state.limits, state.service.default_nbest)
    ex.lines, ex.chars, ex.text = 1, len(call.text), call.text
    check_size([call.text], state.limits)
    line_request = LineRequest(opts.method, max(1, call.nbest), call.distinct)
    service, (result,) = await decode_lines(request, state, [call.text], line_request)
    scores = service.moses_scores_for(call.text) if call.nbest > 0 else service.moses_scores  # (only n-best uses it)
    reply = xmlrpc.translate_reply(result, call, scores)
    ex.note = _outcome_note([result])
    return Response(xmlrpc.reply_body(reply), media_type=xmlrpc.CONTENT_TYPE)


def _fault(e: RequestError) -> Response:
    """A refusal on /RPC2: a fault over HTTP 200 (XML-RPC's way), except a missing token (401)."""
    if e.status == 401:
        return Response(str(e), status_code=401, media_type="text/plain; charset=utf-8")
    return Response(xmlrpc.fault_body(e.fault, str(e)), media_type=xmlrpc.CONTENT_TYPE)


async def _translate(request: Request, state: ServerState, ex: Exchange) -> Response:
    opts = state.options
    body = await read_body(request, opts.max_body_bytes, opts.client_timeout)
    call = jsonapi.parse_call(body, state.limits, opts.method)
    ex.lines, ex.chars = len(call.lines), sum(map(len, call.lines))
    ex.text = " ||| ".join(call.lines)
    service, results = await decode_lines(request, state, call.lines, LineRequest(call.method, call.nbest))
    ex.note = _outcome_note(results)
    return Response(jsonapi.reply_body(results, call, service.json_line), media_type=jsonapi.CONTENT_TYPE)


def _json_error(e: RequestError) -> Response:
    return Response(jsonapi.error_body(str(e)), status_code=e.status if e.status != 499 else 400,
                    media_type=jsonapi.CONTENT_TYPE)


def _outcome_note(results: list[DecodeResult]) -> str:
    """What the log line says of lines that failed or ran over budget (empty when all were proven or plain)."""
    failed = sum(r.best is None for r in results)
    over = sum(r.best is not None and r.reason is not None for r in results)
    parts = ([f"{failed} line(s) without a translation"] if failed else []) + ([f"{over} over budget"] if over else [])
    return ", ".join(parts)


async def _health(request: Request, state: ServerState, ex: Exchange) -> Response:
    status = state.reload_status
    body = {
        "status": "degraded" if status.failed else "ok",
        "model": state.service.summary(),
        "reload": {"count": status.count, "last_failed": status.failed, "error": status.error, "at": status.at},
        "threads": state.options.threads,
        # The queue is the sentences waiting for a thread, as in the start-up line and --queue-size;
        # those admitted are the waiting and the decoding ones (a request beyond that capacity: 503).
        "queue": {"waiting": state.pool.waiting, "capacity": state.options.queue_size},
        "admitted": {"sentences": state.pool.admission.admitted, "capacity": state.options.capacity},
        "uptime_seconds": round(time.time() - state.started, 3),
    }
    return Response(json.dumps(body, ensure_ascii=False), media_type=jsonapi.CONTENT_TYPE)


async def _metrics(request: Request, state: ServerState, ex: Exchange) -> Response:
    return Response(state.metrics.text(), media_type=METRICS_TYPE)
