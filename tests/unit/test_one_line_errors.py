"""Issue 38, defects 6 and 9 and a questionable case: tracebacks where the rule is one error line.

The rule (README): bad input or a limit of the machine gives one ``fstdecode: error:`` line naming
the file (and line) and exit status 2, never a traceback. Each test failed on the commit before its
fix: an ARPA count of 3,000,000 digits (Python's int-digits ValueError), ``ulimit -n 8`` with
``--workers 2`` (OSError EMFILE), ``binarize -o /proc/nope`` (FileNotFoundError), a lone surrogate
given to the API (a native TypeError), ``serve`` without its packages (ModuleNotFoundError), the
source tree without its native core (a circular-import ImportError), and a ``binarize`` killed by a
signal (its hidden work folder left for good).
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fstdecode import Decoder, decode, decode_lines, load_model
from fstdecode.decoder import DecodeError
from fstdecode.io.arpa import ArpaError, ArpaLM
from fstdecode.io.native_lm import NativeLM
from fstdecode.model.binarize import BinarizeError, BinarizeOptions, binarize
from fstdecode.model.model import ModelError
from shared import EXAMPLE_DATA, ROOT, example_ini_text, kill_all, run_cli
from test_hostile import one_error_line, shell

HUGE = "1" * 3_000_000  # Python's int() refuses more than 4,300 digits


def one_line(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """``proc`` (str output) exited 2 with one ``fstdecode: error:`` line holding ``needles``."""
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("fstdecode: error: "), proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr
    return proc.stderr


# --- an ARPA header number of 3,000,000 digits ----------------------------------------------------

def _example_arpa(old: str, new: str) -> str:
    text = (EXAMPLE_DATA / "lm.arpa").read_text(encoding="utf-8")
    assert text.count(old) == 1
    return text.replace(old, new)


@pytest.mark.parametrize(
    "old, new",
    [("ngram 1=26", f"ngram 1={HUGE}"), ("ngram 1=26", f"ngram {HUGE}=26"), ("\\2-grams:", f"\\{HUGE}-grams:")],
    ids=["count", "order", "section"],
)
def test_a_header_number_of_millions_of_digits_names_its_line(tmp_path, old, new):
    lm = tmp_path / "lm.arpa"
    lm.write_text(_example_arpa(old, new), encoding="utf-8")
    lineno = lm.read_text(encoding="utf-8").splitlines().index(new.split("\n")[0]) + 1
    proc = run_cli(["decode", "--phrase-table", str(EXAMPLE_DATA / "phrase-table"), "--lm", str(lm)], "das muss\n")
    one_line(proc, f"{lm}:{lineno}: ", "3,000,000 digits")
    for reader in (ArpaLM.from_file, NativeLM.from_file):  # the API's two readers say the same
        with pytest.raises(ArpaError, match=re.escape(f"{lm}:{lineno}: ")):
            reader(str(lm))


def test_a_twenty_digit_count_is_still_read_as_a_number(tmp_path):
    """The bound refuses only what no file can hold: 20 digits are read, and found to disagree."""
    lm = tmp_path / "lm.arpa"
    lm.write_text(_example_arpa("ngram 1=26", "ngram 1=" + "9" * 20), encoding="utf-8")
    with pytest.raises(ArpaError, match="has 26 entries but .* declares ngram 1=" + "9" * 20):
        ArpaLM.from_file(str(lm))


# --- out of file descriptors ---------------------------------------------------------------------

@pytest.mark.parametrize("limit", [8, 12])
@pytest.mark.slow
def test_too_few_file_descriptors_for_the_workers_is_one_line(tmp_path, limit):
    proc = shell(f"ulimit -n {limit}; $FSTDECODE decode --workers 2 < $IN", tmp_path)
    one_error_line(proc, "too many open files", f"may open {limit}: ulimit -n", "raise the limit")
    assert proc.stdout == b""


# --- binarize: where its folder cannot be written ------------------------------------------------

def _binarize_cli(out: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(["binarize", "-f", str(EXAMPLE_DATA / "moses.ini"), "-o", out], cwd=cwd)


def test_binarize_into_a_folder_that_cannot_hold_one_is_one_line(tmp_path):
    one_line(_binarize_cli("/proc/nope", tmp_path), "/proc/nope: cannot write in its folder /proc")
    (tmp_path / "file").write_text("x")
    one_line(_binarize_cli("file/model", tmp_path), "file/model: its folder", "is not a folder")


@pytest.mark.parametrize(
    "where, failure",
    [
        # the core's writer of the tables (native/binary_table.cpp)
        (("fstdecode.model.binarize._core.write_binary_table",), RuntimeError("{work}/phrase-table.bin: cannot write: No space left on device")),
        # Python's own write of the new moses.ini
        ((Path, "write_text"), OSError(28, "No space left on device")),
    ],
    ids=["core", "python"],
)
def test_a_full_disk_while_binarizing_is_one_error_and_leaves_nothing(tmp_path, monkeypatch, where, failure):
    def fail(*args, **kwargs):
        raise type(failure)(*[str(a).format(work=tmp_path / ".hidden") if isinstance(a, str) else a for a in failure.args])

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(*where, fail)
    with pytest.raises(BinarizeError, match=r"^bin: cannot write.*: No space left on device$"):
        binarize(BinarizeOptions(str(EXAMPLE_DATA / "moses.ini"), "bin"))
    assert os.listdir(tmp_path) == []


# --- a lone surrogate given to the API -----------------------------------------------------------

@pytest.fixture(scope="module")
def model():
    return load_model()


@pytest.mark.parametrize(
    "call, needle",
    [
        (lambda m: decode(m, "das \ud800 muss"), "the line is not valid text: a lone surrogate '\\ud800' at character 5"),
        (lambda m: Decoder(m, "stack").decode(["das", "\ud800"]), "token 1 is not valid text"),
        (lambda m: list(decode_lines(Decoder(m, "stack"), ["das muss", "das \udcff"])), "the line is not valid text"),
        # markup is read before the words, and its translations reach the output: refused as well
        (lambda m: Decoder(m, "stack", xml_input="exclusive").decode('das <np translation="\ud800">muss</np>'),
         "the line is not valid text"),
        (lambda m: Decoder(m, "stack", xml_input="ignore").decode(("das", "\ud800")), "token 1 is not valid text"),
    ],
)
def test_a_lone_surrogate_raises_decode_error(model, call, needle):
    with pytest.raises(DecodeError, match=re.escape(needle)):
        call(model)


@pytest.mark.parametrize("argument", ["config", "phrase_table", "lm"])
def test_a_path_with_a_lone_surrogate_raises_model_error(argument):
    with pytest.raises(ModelError, match=f"{argument} .* is not a path the file system can name"):
        load_model(**{argument: "model\ud800"})


# --- serve's packages ----------------------------------------------------------------------------

def test_the_servers_packages_are_default_dependencies():
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11's TOML reader")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower() for requirement in project["dependencies"]}
    assert {"starlette", "uvicorn", "defusedxml"} <= names
    assert "httpx" not in names  # Starlette's TestClient: the test extra's
    assert any(r.startswith("httpx") for r in project["optional-dependencies"]["test"])


def test_serve_without_a_package_of_the_server_says_what_to_install(monkeypatch, capsys):
    from fstdecode.cli.main import main

    for name in [m for m in sys.modules if m.startswith("fstdecode.server.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "h11", None)  # import h11 then fails, as when it is not installed
    assert main(["serve", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fstdecode: error: fstdecode serve needs h11 ("), err
    assert err.rstrip().endswith("pip install --upgrade h11")


# --- defect 9: the source tree without its native core -------------------------------------------

#: Runs ``python -m fstdecode`` as a fresh interpreter in the working directory would, with the
#: meta-path finders of an editable install removed (they would find the checkout whatever the
#: folder): only the standard finders, which look in sys.path, the working directory first.
PLAIN_PYTHON = f"""
import importlib.machinery, runpy, sys
sys.meta_path[:] = [f for f in sys.meta_path if f in ({', '.join(f'importlib.machinery.{n}' for n in ('BuiltinImporter', 'FrozenImporter', 'PathFinder'))})]
sys.path.insert(0, "")
sys.argv = ["fstdecode", "decode"]
runpy.run_module("fstdecode", run_name="__main__", alter_sys=True)
"""


def test_running_in_a_source_tree_without_its_native_core_says_what_to_do(tmp_path):
    """``python -m fstdecode`` in a checkout after ``pip install .``: the tree's fstdecode (no
    compiled _core) hides the installed one. Here the tree is a copy of the package's Python files."""
    package = Path(__import__("fstdecode").__file__).parent
    shutil.copytree(package, tmp_path / "fstdecode", ignore=lambda folder, names: [
        n for n in names if n == "__pycache__" or (not n.endswith(".py") and not (Path(folder) / n).is_dir())])
    assert not list((tmp_path / "fstdecode" / "_native").glob("_core*"))
    proc = subprocess.run([sys.executable, "-c", PLAIN_PYTHON], input=b"das muss\n", capture_output=True,
                          cwd=tmp_path, timeout=60, env=dict(os.environ, PYTHONUTF8="1"))
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("fstdecode: error: "), err
    for needle in (str(tmp_path / "fstdecode"), "source tree", "native core", "another folder", "pip install -e ."):
        assert needle in err, err


def test_the_missing_core_is_an_import_error_and_an_fstdecode_error():
    from fstdecode import FstdecodeError
    from fstdecode._native import NativeCoreError

    assert issubclass(NativeCoreError, ImportError) and issubclass(NativeCoreError, FstdecodeError)


# --- a binarize ended by a signal ----------------------------------------------------------------

def _blocking_model(folder: Path) -> Path:
    """The example model with its LM a FIFO that no one writes: binarize writes the phrase table,
    then waits in the LM's open() until it is stopped."""
    folder.mkdir()
    os.mkfifo(folder / "lm.fifo")
    ini = folder / "moses.ini"
    ini.write_text(example_ini_text().replace(str(EXAMPLE_DATA / "lm.arpa"), str(folder / "lm.fifo")), encoding="utf-8")
    return ini


def _start_binarize(ini: Path, out: Path) -> subprocess.Popen:
    """A binarize with SIGINT at its default: an xdist worker ignores SIGINT, and a child inherits
    that (Python then installs no KeyboardInterrupt handler), as a shell's background job does."""
    return subprocess.Popen([sys.executable, "-m", "fstdecode", "binarize", "-f", str(ini), "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONUTF8="1"),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _hidden(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name.startswith(".")}


def _wait_for_work(proc: subprocess.Popen, folder: Path, known: set[str] = frozenset()) -> str:
    """The hidden work folder ``proc`` made in ``folder`` once it holds the phrase table."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()
        for name in _hidden(folder) - set(known):
            if (folder / name / "phrase-table.bin").exists():
                return name
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("binarize made no work folder within 60 s")


@pytest.mark.slow
@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGHUP, -signal.SIGHUP), (signal.SIGINT, 130)])
def test_a_signal_removes_binarizes_work_folder(tmp_path, sig, status):
    ini = _blocking_model(tmp_path / "model")
    proc = _start_binarize(ini, tmp_path / "bin")
    try:
        _wait_for_work(proc, tmp_path)
        proc.send_signal(sig)
        assert proc.wait(30) == status  # SIGTERM and SIGHUP: ended by the signal, as by its default action
    finally:
        kill_all([proc])  # (a failure leaves no binarize behind)
    assert "Traceback" not in proc.stderr.read().decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]  # no DIR, no hidden folder


@pytest.mark.slow
def test_a_later_binarize_removes_what_a_killed_one_left(tmp_path):
    ini = _blocking_model(tmp_path / "model")
    killed = _start_binarize(ini, tmp_path / "bin")
    try:
        left = _wait_for_work(killed, tmp_path)
    finally:
        killed.kill()  # SIGKILL: nothing can clean up
        killed.wait(30)
    assert _hidden(tmp_path) == {left}
    running = _start_binarize(ini, tmp_path / "bin")  # a live binarize of the same DIR: its folder stays
    busy = _wait_for_work(running, tmp_path, {left})
    try:
        proc = run_cli(["binarize", "-f", str(EXAMPLE_DATA / "moses.ini"), "-o", str(tmp_path / "bin")], cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert _hidden(tmp_path) == {busy}
        assert (tmp_path / "bin" / "moses.ini").is_file()
    finally:
        running.terminate()
        running.wait(30)
    assert _hidden(tmp_path) == set()
