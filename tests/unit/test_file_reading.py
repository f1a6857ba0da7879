"""Model files are read once (pipes and FIFOs work), within a line limit, and only when they are
files: issue 38, defects 3 and 5, and the questionable cases of a phrase table's sentence markers
and NUL bytes and of a byte-order mark on the input.

A FIFO is fed by a writer thread of the test process; the forked CLI runner (tests/shared.py)
opens it as a user's shell would hand it over.
"""

from __future__ import annotations

import gzip
import os
import pickle
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from fstdecode.io.arpa import ArpaError, ArpaLM
from fstdecode.io.files import DEFAULT_MAX_LINE_BYTES, MAX_LINE_BYTES_ENV, read_lines
from fstdecode.io.moses_ini import MosesIniError, load_moses_ini
from fstdecode.io.native_lm import NativeLM
from fstdecode.io.phrase_table import PhraseTableError, load_phrase_table
from fstdecode.io.reordering_table import ReorderingTableError, load_reordering_table
from fstdecode.research.tsp import Graph, TspError, solve_tsp
from fstdecode.run.lines import input_lines
from tests.shared import EXAMPLE_DATA, run_cli

INI = EXAMPLE_DATA / "moses.ini"
PT = EXAMPLE_DATA / "phrase-table"
LM = EXAMPLE_DATA / "lm.arpa"
INPUT = (EXAMPLE_DATA / "input.txt").read_text(encoding="utf-8")


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator:
    """``feed(data)``: a named FIFO that a thread writes ``data`` into once a reader opens it."""
    feeds: list[tuple[Path, threading.Thread]] = []

    def feed(data: bytes, name: str = "fifo") -> Path:
        path = tmp_path / name
        os.mkfifo(path)

        def write() -> None:
            try:
                with open(path, "wb") as sink:  # blocks until the reader opens it
                    sink.write(data)
            except BrokenPipeError:
                pass

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        feeds.append((path, thread))
        return path

    yield feed
    for path, thread in feeds:
        if thread.is_alive():  # not opened by the code under test: a reader lets the writer go
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            thread.join(5)
            os.close(fd)


def decoded(*args: str, stdin: str = INPUT) -> str:
    """stdout of a successful ``fstdecode decode -f moses.ini ARGS`` (the default method)."""
    proc = run_cli(["decode", "-f", str(INI), *args], stdin)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and "warning" not in proc.stderr, proc.stderr
    return proc.stdout


def one_error(proc, *needles: str) -> str:
    """The one ``fstdecode: error:`` line of a run that failed with status 2, holding ``needles``."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fstdecode: error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# ------------------------------------------------------------------ defect 3: read once


@pytest.fixture(scope="module")
def reference() -> str:
    return decoded()


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_phrase_table_from_a_fifo_decodes_as_the_file(fifo, reference, gzipped) -> None:
    data = PT.read_bytes()
    path = fifo(gzip.compress(data) if gzipped else data)
    assert decoded("--phrase-table", str(path)) == reference


@pytest.mark.parametrize("gzipped", [False, True])
def test_an_lm_from_a_fifo_decodes_as_the_file(fifo, reference, gzipped) -> None:
    data = LM.read_bytes()
    path = fifo(gzip.compress(data) if gzipped else data)
    assert decoded("--lm", str(path)) == reference


@pytest.mark.parametrize("chunk", ["1", "10000"])
def test_filter_refuses_a_fifo_it_would_read_again_before_any_output(fifo, chunk) -> None:
    proc = run_cli(["decode", "-f", str(INI), "--phrase-table", str(fifo(PT.read_bytes())), "--filter",
                    "--filter-chunk", chunk], INPUT)
    one_error(proc, "fifo", "pipe or FIFO can be read only once", "--filter")
    assert proc.stdout == ""


def test_the_api_reads_tables_and_lms_from_fifos(fifo, tmp_path) -> None:
    table = load_phrase_table(fifo(PT.read_bytes(), "pt"))
    assert len(table) == len(load_phrase_table(PT)) > 0
    assert NativeLM.from_file(fifo(LM.read_bytes(), "lm")).counts == NativeLM.from_file(LM).counts
    assert ArpaLM.from_file(fifo(gzip.compress(LM.read_bytes()), "lm.gz")).counts == ArpaLM.from_file(LM).counts
    rows = load_reordering_table(fifo(b"das ||| this ||| 0.5 0.5 0.5\n", "lr"))
    assert len(rows) == 1


def test_an_arpa_error_from_a_fifo_is_worded_from_the_bytes_read_once(fifo, tmp_path) -> None:
    bad = LM.read_text(encoding="utf-8").replace("ngram 1=", "ngram 1=1", 1).encode()  # a count that lies
    regular = tmp_path / "bad.arpa"
    regular.write_bytes(bad)
    with pytest.raises(ArpaError) as from_file:
        NativeLM.from_file(regular)
    with pytest.raises(ArpaError) as from_fifo:
        NativeLM.from_file(fifo(bad))
    assert str(from_fifo.value) == str(from_file.value).replace(str(regular), str(tmp_path / "fifo"))
    assert "please report" not in str(from_fifo.value)


def test_an_lm_read_from_a_fifo_refuses_to_be_shipped_to_another_process(fifo) -> None:
    lm = NativeLM.from_file(fifo(LM.read_bytes()))
    with pytest.raises(ArpaError, match="pipe or FIFO can be read only once"):
        pickle.dumps(lm)


def test_a_moses_ini_may_name_a_fifo(fifo, tmp_path) -> None:
    table = fifo(PT.read_bytes(), "pt")
    ini = tmp_path / "moses.ini"
    ini.write_text(INI.read_text(encoding="utf-8").replace("${MODEL_DIR}/phrase-table", str(table))
                   .replace("${MODEL_DIR}", str(EXAMPLE_DATA)), encoding="utf-8")
    proc = run_cli(["moses", "-f", str(ini)], INPUT)
    assert proc.returncode == 0, proc.stderr
    assert [line.rstrip() for line in proc.stdout.splitlines()] == ["this must also be our concern",
                                                                    "we must also take these criticisms seriously"]


# ------------------------------------------------------------------ defect 5: what is no file


@pytest.mark.parametrize("flag", ["--phrase-table", "--lm"])
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/full"])
def test_a_device_is_refused_in_one_line(flag, device) -> None:
    proc = run_cli(["decode", "-f", str(INI), flag, device], INPUT, timeout=10)
    one_error(proc, device, "not a regular file, a FIFO or a pipe")


@pytest.fixture
def socket_path(tmp_path) -> Iterator[Path]:
    """A Unix socket's path: no file, FIFO or pipe either."""
    import socket

    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    yield path
    server.close()


def test_the_api_refuses_what_is_no_file_with_each_readers_error(socket_path) -> None:
    # /dev/null and a socket, not /dev/zero: the readers before the fix would fill this process's memory
    for path, kind in (("/dev/null", "a character device"), (str(socket_path), "a socket")):
        for call, error in ((load_phrase_table, PhraseTableError), (NativeLM.from_file, ArpaError),
                            (ArpaLM.from_file, ArpaError), (load_reordering_table, ReorderingTableError),
                            (load_moses_ini, MosesIniError)):
            with pytest.raises(error, match=f"^{path}: not a regular file, a FIFO or a pipe \\({kind}\\)"):
                call(path)


def test_resume_refuses_a_device() -> None:
    proc = run_cli(["decode", "-f", str(INI), "--resume", "/dev/full"], INPUT, timeout=10)
    one_error(proc, "/dev/full", "--resume", "regular file")


def test_tsp_refuses_a_device() -> None:
    one_error(run_cli(["tsp", "/dev/zero"], timeout=10), "/dev/zero", "not a regular file")


# ------------------------------------------------------------------ defect 5: the line limit


def test_the_default_limit_is_64_mib() -> None:
    assert DEFAULT_MAX_LINE_BYTES == 64 * 2**20


LIMIT = 300  # longer than every line of the built-in model


@pytest.fixture
def small_limit(monkeypatch) -> int:
    monkeypatch.setenv(MAX_LINE_BYTES_ENV, str(LIMIT))
    return LIMIT


def _long(n: int = LIMIT + 1) -> str:
    return "x" * n


def test_a_table_line_over_the_limit_names_file_line_and_limit(tmp_path, small_limit) -> None:
    path = tmp_path / "pt"
    path.write_text(f"a ||| b ||| 0.5\nc ||| {_long()} ||| 0.5\n")
    with pytest.raises(PhraseTableError, match=rf"^{path}:2: a line longer than 300 bytes.*{MAX_LINE_BYTES_ENV}"):
        load_phrase_table(path)
    path.write_text(f"a ||| {_long(LIMIT - 14)} ||| 0.5\n")  # LIMIT bytes exactly: taken
    assert len(path.read_bytes()) == LIMIT + 1
    assert len(load_phrase_table(path)) == 1


def test_every_reader_keeps_the_limit(tmp_path, small_limit) -> None:
    nuls = tmp_path / "nuls"
    nuls.write_bytes(b"\0" * 5000)  # no newline at all
    gz = tmp_path / "nuls.gz"
    gz.write_bytes(gzip.compress(b"a ||| b ||| 0.5\n" + b"\0" * 5000))
    for call, error, where in ((load_phrase_table, PhraseTableError, f"{nuls}:1"),
                               (lambda p: load_reordering_table(p), ReorderingTableError, f"{nuls}:1"),
                               (NativeLM.from_file, ArpaError, f"{nuls}:1"),
                               (ArpaLM.from_file, ArpaError, f"{nuls}:1"),
                               (load_moses_ini, MosesIniError, f"{nuls}:1")):
        with pytest.raises(error, match=f"^{where}: a line longer than 300 bytes"):
            call(nuls)
    with pytest.raises(PhraseTableError, match=f"^{gz}:2: a line longer than 300 bytes"):
        load_phrase_table(gz)
    with pytest.raises(ArpaError, match=f"^{gz}:2: a line longer than 300 bytes"):
        NativeLM.from_file(gz)


def test_a_whole_file_read_stops_at_the_limit_not_at_the_end(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(MAX_LINE_BYTES_ENV, str(2**20))
    path = tmp_path / "nuls"
    path.write_bytes(b"\0" * (24 * 2**20))
    tracemalloc.start()
    try:
        with pytest.raises(ArpaError, match="a line longer than 1,048,576 bytes"):
            read_lines(path, ArpaError)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, peak  # the old reader held the whole 24 MiB (and its decoding)


def test_an_input_line_over_the_limit_fails_alone(small_limit) -> None:
    proc = run_cli(["decode", "-f", str(INI)], f"das muss\n{_long(3000)}\nunsere sorge\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["this must", "", "our concern"]
    assert "<stdin>:2: a line longer than 300 bytes" in proc.stderr


def test_input_lines_skip_an_over_long_line_without_holding_it(small_limit) -> None:
    import io

    lines = list(input_lines(io.BytesIO(b"a\n" + b"\0" * 10_000 + b"\nb")))
    assert [(l.id, l.text) for l in lines] == [(0, "a"), (1, ""), (2, "b")]
    assert lines[1].error is not None and "<stdin>:2" in lines[1].error and lines[0].error is None


def test_resume_keeps_the_limit(tmp_path, small_limit) -> None:
    out = tmp_path / "out.txt"
    out.write_text(_long(500))
    one_error(run_cli(["decode", "-f", str(INI), "--resume", str(out)], INPUT), f"{out}:1", "longer than 300 bytes")


def test_a_bad_limit_in_the_environment_is_one_error(monkeypatch) -> None:
    monkeypatch.setenv(MAX_LINE_BYTES_ENV, "lots")
    one_error(run_cli(["decode", "-f", str(INI)], INPUT), MAX_LINE_BYTES_ENV, "whole number")


# ------------------------------------------------------------------ defect 5: tsp's budget


def test_tsp_answers_a_graph_too_sparse_for_a_tour_without_allocating() -> None:
    graph = Graph(2_000_000, {(1, 2): 1.0, (2, 3): 1.0, (3, 4): 1.0})  # (the old solver took 120 MB for it)
    tracemalloc.start()
    try:
        tour = solve_tsp(graph)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert tour.cost is None and tour.tour == ()
    assert peak < 2**20, peak


def test_tsp_refuses_vertices_over_its_state_budget_before_allocating() -> None:
    chain = Graph(2_000, {(v, v + 1): 1.0 for v in range(1, 2_000)})
    with pytest.raises(TspError, match=r"2,000 vertices: the DP needs at least 1,999 states, more than its budget of 100"):
        solve_tsp(chain, max_states=100)
    assert solve_tsp(Graph(4, {(1, 2): 1.0, (2, 3): 1.0, (3, 4): 1.0})).cost == 3.0


def test_tsp_cli_with_a_huge_vertex_count_on_three_edges_ends_at_once(tmp_path) -> None:
    edges = tmp_path / "g"
    edges.write_text("1 2 1\n2 3 1\n3 4 1\n")
    proc = run_cli(["tsp", str(edges), "--vertices", "10000000"], timeout=10)
    assert proc.returncode == 1 and proc.stdout.startswith("no tour"), proc.stderr
    edges.write_text("".join(f"{v} {v + 1} 1\n" for v in range(1, 1000)))
    one_error(run_cli(["tsp", str(edges), "--max-states", "10"]), "1,000 vertices", "--max-states")


# ------------------------------------------------------------------ the questionable cases


@pytest.mark.parametrize("marker", ["<s>", "</s>"])
def test_a_target_phrase_may_not_hold_a_sentence_marker(tmp_path, marker) -> None:
    path = tmp_path / "pt"
    path.write_text(f"a ||| b ||| 0.5\nc ||| x {marker} ||| 0.5\n")
    with pytest.raises(PhraseTableError, match=rf"^{path}:2: the target phrase holds the LM sentence marker {marker}"):
        load_phrase_table(path)
    path.write_text(f"{marker} ||| x ||| 0.5\n")  # a source phrase with it is never looked up: taken
    assert len(load_phrase_table(path)) == 1


def test_a_nul_byte_in_a_table_line_is_refused_with_its_column(tmp_path) -> None:
    path = tmp_path / "pt"
    path.write_bytes("a ||| b ||| 0.5\nc ||| é\0x ||| 0.5\n".encode())
    with pytest.raises(PhraseTableError, match=rf"^{path}:2: a NUL byte at column 9;"):
        load_phrase_table(path)
    proc = run_cli(["decode", "-f", str(INI), "--phrase-table", str(path)], INPUT)
    one_error(proc, f"{path}:2", "NUL byte")


def test_a_byte_order_mark_on_standard_input_is_dropped(reference) -> None:
    assert decoded(stdin="\ufeff" + INPUT) == reference
    proc = run_cli(["moses", "-f", str(INI)], "\ufeffdas muss\n")
    assert proc.returncode == 0 and proc.stdout.strip() == "this must", proc.stderr
