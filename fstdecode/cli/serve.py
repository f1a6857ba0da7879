"""``fstdecode serve``: the command line of the translation server (:mod:`fstdecode.server`).

    fstdecode serve -f moses.ini [--host 127.0.0.1] [--port 8080] [--threads N] [decode options]

The flags become a :class:`~fstdecode.server.options.ServerOptions` and a
:class:`~fstdecode.server.service.ModelSetup`; this module also hands the server the writers of
``decode --format json`` and of ``fstdecode moses``' n-best feature values, so that the server
answers with the very bytes the command line writes.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from typing import Any, Callable, Mapping

from fstdecode.cli import output
from fstdecode.cli.moses_output import features_field
from fstdecode.cli.options import add_search_flags, search_options
from fstdecode.cli.running import worker_count
from fstdecode.decoder import DEFAULT_METHOD, XML_INPUT_MODES, Derivation
from fstdecode.errors import FstdecodeError
from fstdecode.run.base import missing_module
from fstdecode.model.model import Model
from fstdecode.search.base import METHODS, SearchOptions, flag_of
from fstdecode.server.options import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CHARS, NO_METHODS, ServerOptions
from fstdecode.server.options import Error as OptionsError
from fstdecode.server.service import Formats, ModelSetup

#: The state budget of every method on the server when ``--max-states`` is not given: the default
#: method's own (10,000,000 states: about 15 s and 2.5 GB for one sentence) is too much to let each
#: of N threads spend on any request. No request can raise it.
SERVE_MAX_STATES = 2_000_000


def add_flags(p: argparse.ArgumentParser) -> None:
    """The flags of ``serve`` beside the model's (which fstdecode.cli.main adds)."""
    g = p.add_argument_group(
        "server (README.md, 'Translation server')",
        f"Every search's state budget is --max-states when given, else its method's default lowered to at most "
        f"{SERVE_MAX_STATES:,} (the defaults the search flags below list are decode's).",
    )
    g.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    g.add_argument("--port", type=int, default=8080, help="port to listen on (default: 8080; 0: a free one, printed)")
    g.add_argument("--threads", "--workers", dest="threads", type=worker_count, default=1, metavar="N",
                   help="sentences decoded at once, in N threads (default: 1; all: one per core)")
    g.add_argument("--queue-size", type=int, default=64, metavar="N",
                   help="sentences waiting for a thread at most; beyond, HTTP 503 with Retry-After (default: 64)")
    g.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES, metavar="N",
                   help=f"request body size cap, checked before parsing (default: {DEFAULT_MAX_BODY_BYTES:,})")
    g.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS, metavar="N",
                   help=f"characters per request (default: {DEFAULT_MAX_CHARS:,})")
    g.add_argument("--max-lines", type=int, default=100, metavar="N", help="lines per JSON batch (default: 100)")
    g.add_argument("--max-nbest", type=int, default=100, metavar="K", help="largest n-best a request may ask (default: 100)")
    g.add_argument("--allow-methods", default=None, metavar="M,M",
                   help=f"the search methods a request may name (default: stack and --method, {DEFAULT_METHOD} by default)")
    g.add_argument("--client-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="time a client has to send a request's headers, and again its body (default: 30)")
    g.add_argument("--drain-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="on SIGTERM, time the requests in flight get to finish (default: 30)")
    g.add_argument("--retry-after", type=int, default=1, metavar="SECONDS",
                   help="the Retry-After of a busy answer (default: 1)")
    g.add_argument("--max-connections", type=int, default=100, metavar="N",
                   help="open connections at most (default: 100)")
    g.add_argument("--token", help="require 'Authorization: Bearer TOKEN' on every route but /health")
    g.add_argument("--token-file", metavar="FILE", help="read --token from FILE (keeps it out of the process list)")
    g.add_argument("--certfile", metavar="PEM", help="serve HTTPS with this certificate (with --keyfile)")
    g.add_argument("--keyfile", metavar="PEM", help="the certificate's private key")
    g.add_argument("--log-text", action="store_true", help="log each request's source text (default: not logged)")
    p.add_argument(
        "--method", choices=list(METHODS), default=None,
        help=f"the search method of requests that name none, and of every XML-RPC request (default: {DEFAULT_METHOD}, "
        "or the first of --allow-methods when it leaves that out)",
    )
    p.add_argument("--xml-input", choices=XML_INPUT_MODES, default="pass-through",
                   help="Moses' XML markup in requests (as decode's flag; default: pass-through)")
    add_search_flags(p)


def run(args: argparse.Namespace, load: Callable[[], Model], per_sentence: bool = False) -> int:
    """``fstdecode serve``: check the flags, load the model (``load``, again on SIGHUP), serve.
    ``per_sentence``: ``load`` reads the binarized tables filtered to nothing, and each sentence
    decodes with them filtered to its words (:class:`~fstdecode.server.service.ModelSetup`)."""
    serve = _server()

    options = server_options(args)
    setup = ModelSetup(load, method_options(args, options.allow_methods), options.method, writers(), args.xml_input,
                       per_sentence)
    logging.getLogger("fstdecode.server").setLevel(logging.ERROR if args.quiet else logging.INFO)
    return serve(options, setup)


def _server() -> Callable[[ServerOptions, ModelSetup], int]:
    """:func:`fstdecode.server.run.serve`, imported with the command (uvicorn and starlette load
    only for it); a package of the server's that is missing (an install that skipped the
    dependencies) gives one error line naming what to install."""
    try:
        from fstdecode.server.run import serve
    except ImportError as e:
        package = (e.name or "").partition(".")[0]
        if not package or package == "fstdecode":
            raise
        raise FstdecodeError(missing_module(f"fstdecode serve needs {package}", e, f"pip install --upgrade {package}")) from None
    return serve


def server_options(args: argparse.Namespace) -> ServerOptions:
    """The server's settings from the flags (ServerOptions checks their ranges)."""
    if args.lattice_dir is not None:
        raise FstdecodeError("--lattice-dir: the server writes no lattices (decode --method fst writes them)")
    allowed = allowed_methods(args.allow_methods, args.method or DEFAULT_METHOD)
    method = args.method or (DEFAULT_METHOD if DEFAULT_METHOD in allowed else allowed[0])
    return ServerOptions(
        host=args.host, port=args.port, threads=args.threads, queue_size=args.queue_size,
        max_body_bytes=args.max_body_bytes, max_chars=args.max_chars, max_lines=args.max_lines,
        max_nbest=args.max_nbest, client_timeout=args.client_timeout, drain_timeout=args.drain_timeout,
        retry_after=args.retry_after, max_connections=args.max_connections, method=method,
        allow_methods=allowed, token=_token(args),
        certfile=args.certfile, keyfile=args.keyfile, log_text=args.log_text,
    )


def allowed_methods(text: str | None, method: str) -> tuple[str, ...]:
    """``--allow-methods``' list (default: stack and ``method``), each a registered method."""
    names = ["stack", method] if text is None else [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise OptionsError(NO_METHODS)
    for name in names:
        if name not in METHODS:
            raise FstdecodeError(f"--allow-methods: unknown method {name!r}; choose from {', '.join(METHODS)}")
    return tuple(dict.fromkeys(names))


def _token(args: argparse.Namespace) -> str | None:
    if args.token is not None and args.token_file is not None:
        raise FstdecodeError("give --token or --token-file, not both")
    if args.token_file is None:
        return args.token
    try:
        with open(args.token_file, encoding="utf-8") as f:
            return f.read().strip()
    except (OSError, UnicodeDecodeError) as e:
        raise FstdecodeError(f"--token-file {args.token_file}: cannot read it: {getattr(e, 'strerror', None) or e}") from None


def method_options(args: argparse.Namespace, methods: tuple[str, ...]) -> dict[str, SearchOptions]:
    """Each allowed method's options from the search flags given (:func:`method_options_for`)."""
    return method_options_for(methods, {name: getattr(args, name) for name in _search_fields()
                                        if getattr(args, name, None) is not None})


def method_options_for(methods: tuple[str, ...], values: Mapping[str, Any] | None = None) -> dict[str, SearchOptions]:
    """Each of ``methods``' options (n-best 1) from ``values`` (search options by field name, as the
    flags give them), each method taking the values it has a field for; its state budget is
    ``max_states`` when given, else the smaller of its default and :data:`SERVE_MAX_STATES`. A
    value that no method of ``methods`` takes is refused, naming its flag."""
    values = dict(values or {})
    flags = _search_fields()
    used: set[str] = set()
    out: dict[str, SearchOptions] = {}
    for method in methods:
        own = {f.name: f for f in dataclasses.fields(METHODS[method].options)}
        mine = {name: value for name, value in values.items() if name in own}
        used.update(mine)
        if "max_states" not in mine:
            mine["max_states"] = min(own["max_states"].default, SERVE_MAX_STATES)
        out[method] = search_options(method, argparse.Namespace(**mine))
    unused = [flags.get(name, name) for name in values if name not in used]
    if unused:
        raise FstdecodeError(f"{', '.join(unused)}: no allowed method takes it (--allow-methods {','.join(methods)})")
    return out


def _search_fields() -> dict[str, str]:
    """Every search option's field name -> its flag."""
    return {f.name: flag_of(f) for m in METHODS.values() for f in dataclasses.fields(m.options) if f.metadata.get("cli", True)}


def writers() -> Formats:
    """The command line's writers the server answers with."""
    return Formats(json_line=output.json_line, moses_scores=moses_scores)


def moses_scores(model: Model) -> Callable[[Derivation], tuple[str, float]]:
    """A derivation's n-best feature field and total for a line whose fields the core did not
    write (``DecodeResult.nbest_fields``: in Moses' float arithmetic, for a model of one LM and one
    table under Moses' distortion semantics): the scorer's values with the phrase table's in
    float (moses_output.features_field) and the scorer's total."""
    layout = tuple(model.features)
    return lambda d: (features_field(d, layout, True, True), d.score)
