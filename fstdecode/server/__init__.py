"""The translation server (``fstdecode serve``): Moses' XML-RPC ``translate`` at ``/RPC2`` and an
HTTP/JSON API at ``/translate``, over one model loaded once, decoding on worker threads behind a
bounded queue (README.md, "Translation server"; docs/server.md).

The modules, bottom up: :mod:`~fstdecode.server.options` (the settings), :mod:`~fstdecode.server.limits`
(what a request may hold; the admission bound), :mod:`~fstdecode.server.metrics`,
:mod:`~fstdecode.server.service` (a loaded model and its decoders), :mod:`~fstdecode.server.pool`
(the worker threads), :mod:`~fstdecode.server.state` (the current model, reloads),
:mod:`~fstdecode.server.xmlrpc` and :mod:`~fstdecode.server.jsonapi` (the two protocols),
:mod:`~fstdecode.server.app` (the ASGI application) and :mod:`~fstdecode.server.run` (uvicorn,
signals, TLS). The command line (``fstdecode/cli/serve.py``) builds the settings and hands the
server its output writers.
"""
