"""The server on a binarized model (``fstdecode binarize``): no whole-table index at start-up, each
sentence decoded with the mapped tables filtered to its words (fstdecode.server.service), and the
replies those of ``fstdecode decode`` / ``fstdecode moses`` on the same folder and lines.

The model is the built-in example, binarized in a temporary folder by the command line.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import xmlrpc.client

import pytest

from fstdecode.cli import main as cli_main
from fstdecode.cli import serve as serve_cli
from fstdecode.model.model import binarized_tables
from fstdecode.server.options import ServerOptions
from fstdecode.server.service import LineRequest, ModelSetup
from fstdecode.server.state import ServerState, describe

from serving import EXAMPLE_INI, LINES, SENTENCE, client
from shared import SHARED_DATA, run_cli


@pytest.fixture(scope="module")
def ini(tmp_path_factory) -> str:
    """The built-in example binarized by ``fstdecode binarize``: its moses.ini."""
    folder = tmp_path_factory.mktemp("binarized")
    proc = run_cli(["binarize", "-f", EXAMPLE_INI, "-o", str(folder / "bin")], cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return str(folder / "bin" / "moses.ini")


def cli_setup(ini: str, *flags: str) -> ModelSetup:
    """The ModelSetup ``fstdecode serve -f ini FLAGS`` makes (its server not started)."""
    made: list[ModelSetup] = []

    def capture(args, load, per_sentence=False):
        options = serve_cli.server_options(args)
        made.append(ModelSetup(load, serve_cli.method_options(args, options.allow_methods), options.method,
                               serve_cli.writers(), args.xml_input, per_sentence))
        return 0

    log = logging.getLogger("fstdecode")  # (the command line sets its logger up: put it back after)
    saved = log.handlers[:], log.level, log.propagate
    original = serve_cli.run
    serve_cli.run = capture  # (module scope: no monkeypatch fixture)
    try:
        assert cli_main.main(["serve", "-f", ini, *flags]) == 0
    finally:
        serve_cli.run = original
        log.handlers[:], log.propagate = saved[0], saved[2]
        log.setLevel(saved[1])
    return made[0]


def served(ini: str) -> ServerState:
    setup = cli_setup(ini, "--method", "stack", "--allow-methods", "stack,exact")
    return ServerState(ServerOptions(method="stack", allow_methods=("stack", "exact"), max_nbest=10), setup)


@pytest.fixture(scope="module")
def state(ini) -> ServerState:
    return served(ini)


@pytest.fixture(scope="module")
def http(state):
    return client(state)


def index_size(state: ServerState) -> int:
    """Source phrases registered in the core's index of the service's decoders (all of them)."""
    return sum(len(d._phrase_scores.native.index) for d in state.service._decoders.values())


def test_start_up_registers_no_pair_of_a_binarized_model(ini, state):
    assert binarized_tables(ini, None) and not binarized_tables(EXAMPLE_INI, None)
    service = state.service
    assert service.setup.per_sentence
    assert len(service.model.table) == 0 and index_size(state) == 0  # nothing read, nothing indexed
    assert set(service.mapped) == {os.path.join(os.path.dirname(ini), "phrase-table.bin")}
    summary = service.summary()
    assert summary["phrase_pairs"] == 28 and summary["tables"] == "binarized, filtered to each sentence"
    assert "28 phrase pairs (binarized, filtered to each sentence)" in describe(service)
    # A text model is still read whole.
    assert not cli_setup(EXAMPLE_INI).per_sentence


def decode_json(ini: str, *flags: str) -> list[dict]:
    proc = run_cli(["decode", "-f", ini, "--method", "stack", "--max-states", "2000000", "--format", "json", *flags],
                   "\n".join(LINES) + "\n")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def timeless(obj: dict) -> dict:
    return {**obj, "stats": {k: v for k, v in obj["stats"].items() if k not in ("seconds", "phases")}}


@pytest.mark.parametrize("flags, extra", [((), {}), (("--print-alignment-info", "--nbest", "3"), {"align": True, "nbest": 3})])
def test_json_replies_equal_decode_on_the_binarized_model(ini, state, http, flags, extra):
    expected = decode_json(ini, *flags)
    got = http.post("/translate", json={"lines": LINES, **extra}).json()["results"]
    assert [timeless(x) for x in got] == [timeless(x) for x in expected]
    assert index_size(state) == 0  # each sentence's tables went with its decode


def test_xmlrpc_nbest_equals_fstdecode_moses(ini, http):
    proc = run_cli(["moses", "-f", ini, "-n-best-list", "-", "4"], "\n".join(LINES[:-1]) + "\n")
    assert proc.returncode == 0, proc.stderr
    expected: dict[int, list[list[str]]] = {}
    for line in proc.stdout.splitlines():
        fields = line.split(" ||| ")
        expected.setdefault(int(fields[0]), []).append(fields)
    for i, line in enumerate(LINES[:-1]):
        body = xmlrpc.client.dumps(({"text": line, "nbest": 4},), "translate").encode("utf-8")
        got = xmlrpc.client.loads(http.post("/RPC2", content=body).content)[0][0]
        assert [(e["hyp"], e["fvals"], f"{e['totalScore']:.6g}") for e in got["nbest"]] == [
            (f[1], " " + f[2], f[3]) for f in expected[i]]


def test_threads_filter_and_decode_at_once_as_one_does(state):
    service = state.service
    serial = {line: [(d.translation, d.score) for d in service.decode(line, 0, LineRequest("exact", 2)).derivations]
              for line in LINES}
    found: list[tuple[str, list]] = []

    def work(k: int) -> None:
        for i in range(20):
            line = LINES[(k + i) % len(LINES)]
            result = service.decode(line, i, LineRequest("exact", 2))
            found.append((line, [(d.translation, d.score) for d in result.derivations]))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(found) == 80 and all(got == serial[line] for line, got in found)


def test_reload_maps_the_files_again_and_the_old_maps_serve_when_they_fail(ini):
    state = served(ini)
    http = client(state)
    first = http.post("/translate", json={"text": SENTENCE}).json()
    assert first["translation"] == "this must also be our concern"
    assert state.reload() and state.service.setup.per_sentence and index_size(state) == 0
    table = os.path.join(os.path.dirname(ini), "phrase-table.bin")
    moved = table + ".away"
    os.rename(table, moved)
    try:
        assert not state.reload()  # the file is gone: the old service, and its mapped table, serve
        assert http.get("/health").json()["status"] == "degraded"
        assert timeless(http.post("/translate", json={"text": SENTENCE}).json()) == timeless(first)
    finally:
        os.rename(moved, table)
    assert state.reload() and http.get("/health").json()["status"] == "ok"


_REGRESSION = str(SHARED_DATA / "moses-regression")


@pytest.mark.skipif(not os.path.isdir(_REGRESSION), reason="../shared/data/moses-regression is absent")
def test_a_model_of_moses_binary_tables_is_served_per_sentence(tmp_path):
    # A ProbingPT and a compact reordering table (ro.minlexr) are mapped once and looked up per
    # sentence; they count no pairs (hashes only), which the start-up line says, and the server
    # translates as fstdecode decode does with the same files.
    models = os.path.realpath(os.path.join(_REGRESSION, "models"))
    text = open(os.path.join(_REGRESSION, "tests", "phrase.lexicalized-reordering-probing", "moses.ini"),
                encoding="utf-8").read().replace("${MODEL_PATH}", models)
    text = text.replace("reordering-table.msd-bidirectional-fe.0.5.0-0.gz", "ro")
    ini = tmp_path / "moses.ini"
    ini.write_text(text, encoding="utf-8")
    state = served(str(ini))
    service = state.service
    assert service.setup.per_sentence and service.phrase_pairs is None
    assert set(service.mapped) == {f"{models}/lexicalized-reordering/probing.v15",
                                   f"{models}/lexicalized-reordering/ro.minlexr"}
    assert "uncounted (Moses' binary tables) phrase pairs (mapped, filtered to each sentence)" in describe(service)
    got = client(state).post("/translate", json={"text": "monsieur le président"}).json()
    want = run_cli(["decode", "-f", str(ini), "--method", "stack"], "monsieur le président\n")
    assert got["translation"] == want.stdout.strip() == "mr president"
