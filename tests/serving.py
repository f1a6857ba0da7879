"""Helpers of the translation server's tests (tests/unit/test_server_*.py, tests/integration/test_server_*.py).

* :func:`make_state`: a :class:`~fstdecode.server.state.ServerState` over the built-in example,
  with the command line's own writers (so replies are checked against the CLI's bytes);
* :func:`client`: Starlette's TestClient on it (the ASGI app, no socket);
* :class:`Gate`: holds every decode until opened, so a queue can be filled deterministically;
* :class:`LiveServer`: the real uvicorn server on a free port of 127.0.0.1, in a thread.
"""

from __future__ import annotations

import threading
import time
import warnings
from contextlib import contextmanager
from typing import Iterator

from fstdecode.cli.serve import method_options_for, writers
from fstdecode.model.model import load_model
from shared import EXAMPLE_DATA
from fstdecode.server.options import ServerOptions
from fstdecode.server.service import ModelSetup
from fstdecode.server.state import ServerState

#: The built-in example's moses.ini: read as a moses.ini, with Moses' distortion semantics (as
#: ``fstdecode moses`` and ``fstdecode serve -f`` read it).
EXAMPLE_INI = str(EXAMPLE_DATA / "moses.ini")


def load_example():
    return load_model(EXAMPLE_INI)


#: The example's sentence (Chang & Collins' slides) and a few more of its words.
SENTENCE = "das muss unsere sorge gleichermaßen sein"
LINES = [SENTENCE, "das muss", "unsere sorge", "sein das muss", "gleichermaßen unsere sorge sein", ""]


def example_setup(method: str = "stack", methods: tuple[str, ...] = ("stack", "exact"), load=load_example) -> ModelSetup:
    """The built-in example served with ``method`` by default, ``methods`` allowed."""
    return ModelSetup(load, method_options_for(methods), method, writers())


def make_state(method: str = "stack", methods: tuple[str, ...] = ("stack", "exact"), load=load_example,
               **options) -> ServerState:
    """A server state over the example (``options``: ServerOptions' fields)."""
    return ServerState(ServerOptions(method=method, allow_methods=methods, **options),
                       example_setup(method, methods, load))


def client(state: ServerState, **kwargs):
    """Starlette's TestClient on the application of ``state``."""
    from fstdecode.server.app import build_app

    with warnings.catch_warnings():  # (Starlette 1.x warns that it would rather drive httpx2)
        warnings.filterwarnings("ignore", message=".*httpx2")
        from starlette.testclient import TestClient

        return TestClient(build_app(state), **kwargs)


class Gate:
    """Wraps a state's service so that each decode waits until :meth:`open`; ``entered`` counts the
    decodes that started (so a test knows the worker threads are all held)."""

    def __init__(self, state: ServerState) -> None:
        self.event = threading.Event()
        self.entered = 0
        self._lock = threading.Lock()
        service = state.service
        inner = service.decode

        def gated(text, id, request):
            with self._lock:
                self.entered += 1
            self.event.wait(timeout=30)
            return inner(text, id, request)

        service.decode = gated  # the instance's attribute: this state's service only

    def open(self) -> None:
        self.event.set()

    def wait_entered(self, k: int, timeout: float = 10) -> None:
        end = time.monotonic() + timeout
        while self.entered < k:
            if time.monotonic() > end:
                raise AssertionError(f"{self.entered} decodes started, expected {k}")
            time.sleep(0.005)


def wait_for(predicate, timeout: float = 10, what: str = "the condition") -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class LiveServer:
    """The real server (uvicorn, the HeaderTimeoutProtocol) of ``state`` on 127.0.0.1, in a thread."""

    def __init__(self, state: ServerState) -> None:
        from fstdecode.server.run import make_server

        self.state = state
        self.server, self.sock = make_server(state)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        wait_for(lambda: self.server.started, what="uvicorn to start")
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
        self.state.pool.shutdown(wait=False)


@contextmanager
def live(**options) -> Iterator[LiveServer]:
    """A live server over the example with ServerOptions ``options`` (port 0: a free one)."""
    with LiveServer(make_state(port=0, **options)) as server:
        yield server


def aligned_example(folder) -> str:
    """A copy of the example in ``folder`` whose phrase pairs carry a word alignment (source word i
    to target word min(i, m - 1)); its moses.ini's path."""
    from pathlib import Path

    folder = Path(folder)
    lines = []
    for line in (EXAMPLE_DATA / "phrase-table").read_text(encoding="utf-8").splitlines():
        src, tgt, scores = (f.strip() for f in line.split("|||")[:3])
        n, m = len(src.split()), len(tgt.split())
        lines.append(f"{src} ||| {tgt} ||| {scores} ||| " + " ".join(f"{i}-{min(i, m - 1)}" for i in range(n)))
    (folder / "phrase-table").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "lm.arpa").write_bytes((EXAMPLE_DATA / "lm.arpa").read_bytes())
    (folder / "moses.ini").write_text((EXAMPLE_DATA / "moses.ini").read_text(encoding="utf-8"), encoding="utf-8")
    return str(folder / "moses.ini")
