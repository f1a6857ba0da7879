"""Helpers shared by tests/unit and tests/integration (importable through pyproject's ``pythonpath``).

The fixtures built on them are in ``tests/conftest.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck

#: The repository root (the CLI runs with this as its working directory).
ROOT = Path(__file__).resolve().parents[1]
#: The built-in example model (moses.ini with ``${MODEL_DIR}``, phrase-table, lm.arpa, input.txt).
EXAMPLE_DATA = ROOT / "fstdecode" / "data"
#: The real models, next to the repository; absent on a fresh machine.
SHARED_DATA = ROOT.parent / "shared" / "data"

#: Hypothesis settings of the tests that search random models: an example may take a while.
SEARCH_SETTINGS = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


#: Set by conftest's pytest_configure when the run is the fast subset (``-m "not slow"``).
FAST_SUBSET = False


def examples(n: int) -> int:
    """A property test's hypothesis example count: ``n`` in the full suite, a quarter (at least 5) in
    the fast subset, which is for quick feedback within its 60 s (CI runs the full suite, every
    example). Read when a test module is imported, after pytest_configure."""
    return max(5, n // 4) if FAST_SUBSET and n > 5 else n


def data_path(*parts: str) -> Path:
    """A path under ../shared/data; skips the calling test when it is missing (a fresh machine)."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: the real-model data in ../shared/data is only on CI and dev machines")
    return path


def hansards_model(*, lm_order: int, distortion_limit: int, table_limit: int):
    """The Hansards fr-en table (log10 scores) with the UN English LM, from ../shared/data (else a skip)."""
    from fstdecode.model.model import load_model

    return load_model(
        phrase_table=data_path("hansards-fr-en-decoder", "tm"),
        tm_score_format="log10",
        lm=data_path("english-lm-un", "lm.en.arpa"),
        lm_order=lm_order,
        distortion_limit=distortion_limit,
        table_limit=table_limit,
    )


def hansards_input() -> list[str]:
    """The 48 French sentences of the Hansards test set, one a line."""
    return data_path("hansards-fr-en-decoder", "input").read_text(encoding="utf-8").splitlines()


def example_ini_text() -> str:
    """The built-in example's moses.ini with ``${MODEL_DIR}`` filled in, to copy and edit elsewhere."""
    return (EXAMPLE_DATA / "moses.ini").read_text(encoding="utf-8").replace("${MODEL_DIR}", str(EXAMPLE_DATA))


def arpa_text(*sections: list[str]) -> str:
    """An ARPA file: ``sections[k]`` holds the lines of the (k+1)-grams; the header counts them."""
    body: list[str] = []
    for k, lines in enumerate(sections, 1):
        body += ["", f"\\{k}-grams:", *lines]
    header = [f"ngram {k}={len(lines)}" for k, lines in enumerate(sections, 1)]
    return "\n".join(["\\data\\", *header, *body, "", "\\end\\", ""])


def run_cli(
    args: list[str], stdin: str | bytes = "", *, cwd: Path = ROOT, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess:
    """``python -m fstdecode ARGS`` with PYTHONUTF8=1 (``env`` adds or overrides variables); str output.

    The command runs in a forked copy of this test process (:func:`_forked_cli`), which has the
    package imported already: the same process boundary (its own status, standard streams and
    working directory, nothing shared back), without a quarter of a second of interpreter start
    per call. With ``env``, with a locale that is not UTF-8, for a Dask cluster, or with
    FSTDECODE_TEST_SUBPROCESS=1 in the environment, it runs a fresh ``python -m fstdecode`` instead.

    Run in the checkout (the default ``cwd``), the command must leave no file there: a moses.ini's
    output sections ([n-best-list] and the like) write relative to the working directory, as in
    Moses, so a test of such an ini passes its own ``cwd``."""
    before = set(os.listdir(ROOT)) if cwd == ROOT else None
    data = stdin if isinstance(stdin, bytes) else stdin.encode("utf-8")
    if env or os.environ.get("FSTDECODE_TEST_SUBPROCESS") == "1" or not _utf8_locale() or _starts_dask(args):
        proc = subprocess.run(
            [sys.executable, "-m", "fstdecode", *args],
            input=data,
            capture_output=True,
            env={**os.environ, "PYTHONUTF8": "1", **env},
            cwd=cwd,
            timeout=timeout,
        )
        proc.stdout = proc.stdout.decode("utf-8")
        proc.stderr = proc.stderr.decode("utf-8")
    else:
        proc = _forked_cli(args, data, cwd=cwd, timeout=timeout)
    if before is not None:
        left = sorted(set(os.listdir(ROOT)) - before - {".pytest_cache", "build"})
        assert not left, f"fstdecode {' '.join(args[:3])} ... wrote {left} into the checkout: pass cwd=tmp_path"
    return proc


def _starts_dask(args: list[str]) -> bool:
    """Whether the command starts or joins a Dask cluster: a fork of a process whose earlier tests
    ran Dask's event-loop threads inherits their state without the threads, and hangs."""
    return any(a.split("=", 1)[0] in ("--cluster", "--scheduler") for a in args)


def _utf8_locale() -> bool:
    """Whether this process's locale encoding is UTF-8, as PYTHONUTF8=1 would make a fresh one's."""
    import locale

    return locale.getpreferredencoding(False).lower().replace("-", "") == "utf8"


def _forked_cli(args: list[str], data: bytes, *, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    """``fstdecode ARGS`` in a forked child, its stdin, stdout and stderr pipes as ``subprocess.run``'s.

    The child sets up the standard streams as a UTF-8-mode interpreter does (surrogateescape on
    stdin and stdout, backslashreplace on stderr), the warning filters of a fresh interpreter,
    ``sys.argv`` and the working directory, runs :func:`fstdecode.cli.run` and leaves with its
    status through ``os._exit`` (no test-process cleanup runs in the child). Past ``timeout`` it is
    killed and TimeoutExpired raised, as ``subprocess.run`` does."""
    import threading

    pipes = [os.pipe() for _ in range(3)]  # (read, write) each: stdin, stdout, stderr
    pid = os.fork()
    if pid == 0:  # the child: never returns
        _child_cli(args, cwd, pipes[0][0], pipes[1][1], pipes[2][1], [fd for pair in pipes for fd in pair])
    for fd in (pipes[0][0], pipes[1][1], pipes[2][1]):
        os.close(fd)
    chunks: dict[int, list[bytes]] = {1: [], 2: []}

    def feed() -> None:
        try:
            with open(pipes[0][1], "wb") as sink:
                sink.write(data)
        except BrokenPipeError:
            pass

    def drain(k: int) -> None:
        with open(pipes[k][0], "rb") as source:
            chunks[k].append(source.read())

    threads = [threading.Thread(target=feed, daemon=True)]
    threads += [threading.Thread(target=drain, args=(k,), daemon=True) for k in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads[1:]:
        thread.join(timeout)
    if any(thread.is_alive() for thread in threads[1:]):
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        raise subprocess.TimeoutExpired(["fstdecode", *args], timeout)
    _, status = os.waitpid(pid, 0)
    threads[0].join()
    out, err = (b"".join(chunks[k]).decode("utf-8", "surrogateescape") for k in (1, 2))
    return subprocess.CompletedProcess(["fstdecode", *args], os.waitstatus_to_exitcode(status), out, err)


def _child_cli(args: list[str], cwd: Path, fin: int, fout: int, ferr: int, pipes: list[int]) -> None:
    """The forked child of :func:`_forked_cli`: fstdecode's console script, then ``os._exit``."""
    import io
    import traceback
    import warnings

    code = 1
    try:
        for fd, target in ((fin, 0), (fout, 1), (ferr, 2)):
            os.dup2(fd, target)
        for fd in pipes:
            os.close(fd)
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), "utf-8", "surrogateescape")
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)), "utf-8", "surrogateescape")
        sys.stderr = io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(2, "w", closefd=False)), "utf-8", "backslashreplace", line_buffering=True
        )
        warnings.resetwarnings()
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", category)
        os.chdir(cwd)
        sys.argv = [str(ROOT / "fstdecode" / "__main__.py"), *args]
        from fstdecode.cli import run

        try:
            run()
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:
            traceback.print_exc()
            code = 130
        except BaseException:
            traceback.print_exc()
            code = 1
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
    finally:
        os._exit(code)


def expect_reader_error(
    error: type[Exception], load: Callable[[Path], object], path: Path, lineno: int | None, fragment: str
) -> str:
    """``load(path)`` raises ``error`` (an FstdecodeError) whose message starts ``path:lineno: `` and has ``fragment``."""
    from fstdecode.errors import FstdecodeError  # here, so that a broken library fails tests, not conftest

    with pytest.raises(error) as info:
        load(path)
    message = str(info.value)
    prefix = f"{path}:{lineno}: " if lineno is not None else f"{path}: "
    assert message.startswith(prefix), message
    assert fragment in message, message
    assert isinstance(info.value, FstdecodeError)
    return message


def outcome(search, problem, options):
    """A search's result, or the class and message of the error it raised (with a budget's ``best``).

    Engine agreement tests compare these: the same result, or the same error with the same words
    (a ValueError too, should either engine raise one).
    """
    from fstdecode.problem.problem import SearchError, SearchLimitError

    try:
        return search(problem, options)
    except SearchLimitError as e:
        return (SearchLimitError, str(e), e.best)
    except SearchError as e:
        return (SearchError, str(e))
    except ValueError as e:
        return (ValueError, str(e))


def assert_support_holds(problem, threshold: float, everything) -> None:
    """The options the native ``support`` keeps (those --method fst restricts R to) hold every
    derivation of ``everything`` (the oracle's full list, best first) that scores at least
    ``threshold``."""
    from fstdecode.search.native_exact import support

    kept, _, status = support(problem, threshold)
    assert status == ""
    spans = {(o.s, o.t, o.phrase.pair.target) for o in kept}
    needed = {(p.start + 1, p.end + 1, p.pair.target) for score, phrases in everything if score >= threshold for p in phrases}
    assert needed <= spans


#: Scores of one derivation from two sums agree to this (the search's running sum, the scorer's).
SCORE_TOLERANCE = 1e-7


def assert_scored(problem, result) -> None:
    """Every derivation a search reports scores, by the scorer (fstdecode.problem.scorer, from its
    strings alone), what the search says; hypotheses come best first."""
    from fstdecode.problem.scorer import score

    for value, phrases in result.hypotheses:
        _, total = score(
            problem.n, phrases, problem.lm, problem.weights, reordering=problem.reordering,
            semantics=problem.semantics, early_distortion_cost=problem.early_distortion_cost,
        )
        assert abs(total - value) <= SCORE_TOLERANCE * max(1.0, abs(total)), (total, value)
    values = [value for value, _ in result.hypotheses]
    assert values == sorted(values, reverse=True)


def oracle_outcome(problem, nbest: int = 1, max_states: int = 10**9):
    """The Python coverage DP's k best (the oracle every native search is held to: exact for any LM
    order, independent of the signature states, and far cheaper than the Python signature DP on
    small random models), or its error."""
    from fstdecode.search import coverage_dp

    return outcome(coverage_dp.search, problem, coverage_dp.CoverageOptions(nbest=nbest, max_states=max_states))


def assert_sound(problem, got, *, exact: bool, nbest: int = 1, oracle=None, max_states: int = 10**9) -> None:
    """A native search's ``outcome`` against the oracle's (:func:`oracle_outcome`, at the same nbest):

    * every reported score is the scorer's value (:func:`assert_scored`), a budget's ``best`` too;
    * the oracle gets ``max_states`` too: over it (a real model's long line), only the scores are checked;
    * an exact search finds a derivation iff the oracle does, with the oracle's k best scores;
    * a heuristic never beats the proven optimum: its i-th best is at most the oracle's i-th, and
      it finds none only where pruning may lose every derivation (never where the oracle finds none
      but it does).
    """
    from fstdecode.problem.problem import SearchError, SearchLimitError

    if oracle is None:
        oracle = oracle_outcome(problem, nbest, max_states)
    if isinstance(oracle, tuple) and oracle[0] is SearchLimitError:  # no proven optimum to hold it to
        for result in (got[2] if isinstance(got, tuple) and got[0] is SearchLimitError else got,):
            if result is not None and not isinstance(result, tuple):
                assert_scored(problem, result)
        return
    if isinstance(got, tuple):
        if got[0] is SearchLimitError:
            if got[2] is not None:
                assert_scored(problem, got[2])
                if not isinstance(oracle, tuple):
                    assert got[2].hypotheses[0][0] <= oracle.hypotheses[0][0] + SCORE_TOLERANCE
            return
        assert got[0] is SearchError, got
        if exact:
            assert isinstance(oracle, tuple) and oracle[0] is SearchError, (got, oracle)
        return
    assert_scored(problem, got)
    assert not isinstance(oracle, tuple), (got, oracle)  # a derivation the oracle says cannot exist
    best = [v for v, _ in oracle.hypotheses]
    mine = [v for v, _ in got.hypotheses]
    if exact:
        assert got.optimal
        assert len(mine) == len(best)
        for a, b in zip(mine, best):
            assert abs(a - b) <= SCORE_TOLERANCE * max(1.0, abs(b)), (mine, best)
    else:
        for a, b in zip(mine, best):
            assert a <= b + SCORE_TOLERANCE * max(1.0, abs(b)), (mine, best)


#: The registered methods whose results are proven optimal (held to the oracle's scores exactly).
EXACT_METHODS = ("dp", "bounded", "coverage", "exact", "fst")


def native_outcome(method: str, problem, options):
    """The outcome (:func:`outcome`) of ``--method method``'s native search on ``problem``."""
    from fstdecode.decoder import METHODS

    return outcome(lambda p, o: METHODS[method].factory(None, o).search(p), problem, options)


def assert_native_sound(method: str, problem, options, oracle=None):
    """``--method method``'s native search on ``problem`` passes :func:`assert_sound` against the
    Python coverage DP; returns its outcome."""
    got = native_outcome(method, problem, options)
    budget = getattr(options, "max_states", None) or 10**9
    assert_sound(problem, got, exact=method in EXACT_METHODS, nbest=options.nbest, oracle=oracle, max_states=min(budget, 10**9))
    return got


def assert_exact_heuristic_alone_finds(problem, k, want):
    """Without the stack decoder's lower bound nothing is pruned by it: the heuristic alone
    (docs/exact.md, lemmas 1-8) must be admissible and consistent for the k best to come out in
    order, with the best as the certificate."""
    import math

    from fstdecode._native import core
    from fstdecode.search.native import native_form

    options = core.ExactOptions(nbest=k, max_states=-1, time_limit=-1.0, lower_bound=-math.inf, bounds_work=-1)
    alone = core.exact_search(native_form(problem).core, options)
    assert alone.status == "" and alone.optimal
    assert [h.score for h in alone.hypotheses] == _approx(want, abs=1e-9)
    assert alone.upper_bound == _approx(want[0], abs=1e-6)


def _approx(value, abs):
    import pytest

    return pytest.approx(value, abs=abs)


def machine(f) -> tuple:
    """An FST as data: start, and per state its final weight and its arcs sorted (OpenFst's
    arcsort leaves the order of arcs with equal input labels unspecified)."""
    states = []
    for q in f.states():
        arcs = sorted((a.ilabel, a.olabel, float(a.weight), a.nextstate) for a in f.arcs(q))
        states.append((float(f.final(q)), arcs))
    return f.start(), states


def kill_all(processes: list) -> None:
    """Kill each of a test's own processes (``subprocess.Popen`` or ``psutil.Process``), by its
    id, ignoring those already gone: a failed test leaves none running."""
    import psutil

    for p in processes:
        try:
            p.kill()
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
