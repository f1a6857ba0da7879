"""The stack decoder's native n-best lists, with pruning off, through every front end, held to
the exhaustive oracle on small random moses.ini models.

Each instance is a random moses.ini model (LM, phrase table, lexicalized reordering of a random
type, weights of any sign: randmodels' idea, written into a temporary directory the command-line
processes read) and one input line of 2 to 5 words. The oracle is the exhaustive enumeration
(fstdecode.reference.exhaustive: every derivation scored by the scorer, from its strings): the
best derivations' scores and translations, under the distortion semantics the front end uses,
independent of the stack decoder. With the stack unlimited, no
beam threshold and no early pruning, the stack decoder keeps every hypothesis, so its lists must
be the oracle's:

* plain K-best: the oracle's K best scores, and among equal scores the same translations (as
  multisets: ties may come in any order);
* distinct K-best: each translation once, at its best derivation's score, the oracle's best
  translations in order; as many as there are distinct translations among the oracle's
  n-best-factor * K best derivations (Moses' n-best-factor, 20), at most K.

Front ends: ``fstdecode decode`` (--format json, full precision, and --format nbest, Moses' %g
totals), under both distortion semantics; ``fstdecode moses -n-best-list FILE K [distinct]``
(Moses' semantics, totals in Moses' float arithmetic printed with 6 significant digits); the
server's XML-RPC ``translate`` with ``nbest`` (and ``nbest-distinct``) and its JSON
``/translate`` with ``nbest``, in-process (Starlette's TestClient); and ``decode --workers 2``
(slow set). The built-in example, on which the two semantics differ, goes through all of them in
the fast subset too.
"""

from __future__ import annotations

import json
import tempfile
import xmlrpc.client
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fstdecode.cli.main  # noqa: F401  (imported here, so run_cli's forked commands need not import it each)
import fstdecode.cli.moses  # noqa: F401
import fstdecode.reference.moses_float  # noqa: F401  (numpy: Moses' float arithmetic)
from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model
from fstdecode.reference import exhaustive

from randmodels import NO_BUDGET, moses_files
from shared import SEARCH_SETTINGS, example_ini_text, examples, run_cli

#: The largest n-best size drawn.
MAX_K = 5
#: Moses' n-best-factor (fixed in fstdecode): a distinct list reads at most this many times K derivations.
NBEST_FACTOR = 20
#: Full-precision scores (decode's JSON, the server's JSON) agree with the oracle's to this.
EXACT = 1e-6
#: Moses' totals (float arithmetic, printed with %g: 6 significant digits) agree to this, relative.
MOSES = 1e-4
#: The search flags of decode that prune nothing: every hypothesis is kept, whatever its score.
UNPRUNED = ["--method", "stack", "--beam-size", "1000000", "--max-states", "100000000"]
#: Early pruning off, two ways (its threshold defaults to ln 1e5 without --beam-threshold).
NO_EARLY = (["--no-early-pruning"], ["--early-pruning", "--early-threshold", "inf"])


# ----------------------------------------------------------------------------- the instances


def moses_lines(max_n: int = 5, max_d: int = 4, order: int = 2):
    """(the files of a random moses.ini model, an input line): randmodels.moses_files, with an LM
    as SRILM and KenLM write them (no backoff on an n-gram that extends to nothing). With such a
    dead backoff KenLM's state, and so Moses' recombination, drops a context whose backoff the
    ARPA semantics still charge; Moses' TrellisPath totals (fstdecode moses, the XML-RPC nbest)
    then differ from the exact ones, as Moses' do (docs/moses-outputs.md): not what this tests."""
    return moses_files(max_n=max_n, max_d=max_d, order=order, srilm_lm=True).map(lambda fs: (fs[0], " ".join(fs[1])))


@contextmanager
def written(files: dict[str, str]) -> Iterator[Path]:
    """A temporary directory holding ``files`` (the processes of the test read them there)."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in files.items():
            (Path(tmp) / name).write_text(text, encoding="utf-8")
        yield Path(tmp)


def case_text(files: dict[str, str], line: str, command: list[str]) -> str:
    """The instance, for a failure's message: every file's text, the line and the command."""
    return "\n".join([f"--- {name}\n{text}" for name, text in files.items()] + [f"line: {line!r}", f"command: {command}"])


# ----------------------------------------------------------------------------- the oracle


def oracle(folder: Path, semantics: str, line: str) -> list[tuple[float, str]]:
    """The best derivations of ``line`` under the model in ``folder`` by enumeration (every
    derivation scored): (score, translation), best first. Enough of them for every check here:
    all those scoring at least the NBEST_FACTOR * MAX_K-th best (ties included), a few more."""
    model = load_model(folder / "moses.ini", distortion_semantics=semantics)
    problem = Decoder(model).problem(tuple(line.split()))
    cap = NBEST_FACTOR * MAX_K
    for size in (2 * cap, 10**9):
        result = exhaustive.search(problem, exhaustive.ExhaustiveOptions(nbest=size, max_states=NO_BUDGET))
        assert result.optimal
        plain = [(score, " ".join(w for p in phrases for w in p.target)) for score, phrases in result.hypotheses]
        if len(plain) < size or plain[-1][0] < plain[cap - 1][0] - 1e-3 * max(1.0, abs(plain[cap - 1][0])):
            return plain
    raise AssertionError("unreachable")


def close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol * max(1.0, abs(b))


def assert_plain(got: list[tuple[float, str]], plain: list[tuple[float, str]], k: int, tol: float, where: str) -> None:
    """``got`` (score, translation per entry) is the oracle's k best: min(k, all) entries, the
    oracle's k best scores (sorted, each within ``tol``), and each entry a derivation of the
    oracle's at that score, no derivation used twice (the translations of equal scores as a
    multiset)."""
    want = plain[:k]
    assert len(got) == len(want), (where, got, want)
    mine = sorted((s for s, _ in got), reverse=True)
    for a, (b, _) in zip(mine, want):
        assert close(a, b, tol), (where, mine, [s for s, _ in want])
    unused = list(plain)
    for score, text in got:
        fits = [i for i, (s, t) in enumerate(unused) if t == text and close(score, s, tol)]
        assert fits, (where, f"({score}, {text!r}) is no derivation of the oracle's not yet listed", got, want)
        unused.pop(min(fits, key=lambda i: abs(unused[i][0] - score)))


def distinct_bounds(plain: list[tuple[float, str]], k: int, tol: float) -> tuple[int, int]:
    """The sizes a distinct k-best may have: min(k, the distinct translations among the oracle's
    NBEST_FACTOR * k best derivations), both ways where derivations tie at the cap."""
    cap = NBEST_FACTOR * k
    if len(plain) <= cap:
        n = len({t for _, t in plain})
        return min(k, n), min(k, n)
    edge = plain[cap - 1][0]
    surely = {t for s, t in plain if s > edge + tol * max(1.0, abs(edge))}
    maybe = {t for s, t in plain if s >= edge - tol * max(1.0, abs(edge))}
    return min(k, len(surely)), min(k, len(maybe))


def assert_distinct(got: list[tuple[float, str]], plain: list[tuple[float, str]], k: int, tol: float, where: str) -> None:
    """``got`` is the oracle's distinct k-best: each translation once, at its best derivation's
    score, the best translations' scores in order, and as many as :func:`distinct_bounds` says."""
    best: dict[str, float] = {}
    for s, t in plain:
        best.setdefault(t, s)
    texts = [t for _, t in got]
    assert len(texts) == len(set(texts)), (where, got)
    low, high = distinct_bounds(plain, k, tol)
    assert low <= len(got) <= high, (where, got, (low, high), sorted(best.items(), key=lambda x: -x[1])[:k])
    for score, text in got:
        assert text in best and close(score, best[text], tol), (where, score, text, best.get(text))
    want = sorted(best.values(), reverse=True)[: len(got)]
    mine = sorted((s for s, _ in got), reverse=True)
    for a, b in zip(mine, want):
        assert close(a, b, tol), (where, mine, want)


# ----------------------------------------------------------------------------- the front ends


def decode_json(folder: Path, line: str, semantics: str, k: int, unique: bool, early: list[str],
                workers: int = 1) -> list[list[tuple[float, str]]]:
    """``fstdecode decode -f moses.ini --format json --nbest k [--nbest-unique]`` unpruned (with
    ``workers``, over that many worker processes, a line a chunk): each input line's list."""
    args = ["decode", "-f", str(folder / "moses.ini"), "--distortion-semantics", semantics, *UNPRUNED, *early,
            "--nbest", str(k), "--format", "json", *(["--nbest-unique"] if unique else []),
            *(["--workers", str(workers), "--chunk-size", "1"] if workers > 1 else [])]
    proc = run_cli(args, line + "\n", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    out = []
    for row in proc.stdout.splitlines():
        obj = json.loads(row)
        assert "error" not in obj, obj
        out.append([(e["score"], e["translation"]) for e in obj.get("nbest", [obj])])
    return out


def decode_nbest(folder: Path, line: str, semantics: str, k: int, early: list[str]) -> list[tuple[float, str]]:
    """``fstdecode decode ... --format nbest --nbest k`` unpruned: (total, translation) per entry."""
    args = ["decode", "-f", str(folder / "moses.ini"), "--distortion-semantics", semantics, *UNPRUNED, *early,
            "--nbest", str(k), "--format", "nbest"]
    proc = run_cli(args, line + "\n", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return moses_entries(proc.stdout)


def moses_entries(text: str) -> list[tuple[float, str]]:
    """Moses' n-best rows ``0 ||| words ||| features ||| total ...`` as (total, words)."""
    out = []
    for row in text.splitlines():
        fields = row.split(" ||| ")
        assert fields[0] == "0", row
        out.append((float(fields[3]), fields[1].strip()))
    return out


def moses_nbest(folder: Path, line: str, k: int, distinct: bool) -> list[tuple[float, str]]:
    """``fstdecode moses -f moses.ini -s 0 -b 0 -n-best-list FILE k [distinct]`` (no stack limit,
    no beam threshold): the entries of FILE."""
    path = folder / "nbest.txt"
    args = ["moses", "-f", "moses.ini", "-s", "0", "-b", "0", "-n-best-list", str(path), str(k),
            *(["distinct"] if distinct else [])]
    proc = run_cli(args, line + "\n", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return moses_entries(path.read_text(encoding="utf-8"))


@contextmanager
def server(folder: Path, semantics: str):
    """Starlette's TestClient on a server of the model in ``folder`` (stack search, unpruned)."""
    from fstdecode.cli.serve import method_options_for, writers
    from fstdecode.server.options import ServerOptions
    from fstdecode.server.service import ModelSetup
    from fstdecode.server.state import ServerState

    from serving import client

    values = {"beam_size": 10**6, "early_pruning": False, "max_states": 10**8}
    setup = ModelSetup(lambda: load_model(folder / "moses.ini", distortion_semantics=semantics),
                       method_options_for(("stack",), values), "stack", writers())
    state = ServerState(ServerOptions(method="stack", allow_methods=("stack",), max_nbest=10), setup)
    try:
        yield client(state)
    finally:
        state.pool.shutdown(wait=True)


def xmlrpc_nbest(http, line: str, k: int, distinct: bool) -> list[tuple[float, str]]:
    params = {"text": line, "nbest": k, **({"nbest-distinct": "true"} if distinct else {})}
    response = http.post("/RPC2", content=xmlrpc.client.dumps((params,), "translate").encode("utf-8"))
    assert response.status_code == 200, response.text
    got = xmlrpc.client.loads(response.content)[0][0]
    return [(e["totalScore"], e["hyp"].strip()) for e in got["nbest"]]


def json_nbest(http, line: str, k: int) -> list[tuple[float, str]]:
    response = http.post("/translate", json={"text": line, "nbest": k})
    assert response.status_code == 200, response.text
    obj = response.json()
    assert "error" not in obj, obj
    return [(e["score"], e["translation"]) for e in obj.get("nbest", [obj])]


# ----------------------------------------------------------------------------- the tests

SEMANTICS = ["moses", "paper"]
K = st.integers(2, MAX_K)  # (1: the 1-best, which other tests hold to the oracle)
#: The instances, as (LM order, most source words, largest distortion limit), one of them drawn
#: per example: small bigram ones, and (slow set) 5-word lines with d = 4 (up to some 50,000
#: derivations for the oracle to score) and trigram LMs.
SMALL = ((2, 4, 3),)
LARGER = ((2, 5, 4), (3, 5, 3))
SHAPES = [pytest.param(SMALL, id="small"), pytest.param(LARGER, id="larger", marks=pytest.mark.slow)]
#: (semantics, shapes): the fast subset keeps one semantics of the random checks of each front end
#: (the example's test, fast too, holds every front end under both).
SEMANTICS_SHAPES = [
    pytest.param("paper", SMALL, id="paper-small"),
    pytest.param("moses", SMALL, id="moses-small", marks=pytest.mark.slow),
    pytest.param("paper", LARGER, id="paper-larger", marks=pytest.mark.slow),
    pytest.param("moses", LARGER, id="moses-larger", marks=pytest.mark.slow),
]


def draw_case(data, shapes) -> tuple[dict[str, str], str]:
    order, max_n, max_d = data.draw(st.sampled_from(shapes))
    return data.draw(moses_lines(max_n=max_n, max_d=max_d, order=order))


@pytest.mark.parametrize("semantics, shape", SEMANTICS_SHAPES)
@settings(max_examples=examples(8), **SEARCH_SETTINGS)
@given(data=st.data(), k=K, early=st.sampled_from(NO_EARLY))
def test_decode_nbest_is_the_oracles(semantics, shape, data, k, early):
    files, line = draw_case(data, shape)
    with written(files) as folder:
        plain = oracle(folder, semantics, line)
        where = case_text(files, line, ["decode", "-f", "moses.ini", "--distortion-semantics", semantics, *UNPRUNED,
                                        *early, "--nbest", str(k)])
        (got,) = decode_json(folder, line, semantics, k, False, early)
        assert_plain(got, plain, k, EXACT, where + " --format json")
        assert_plain(decode_nbest(folder, line, semantics, k, early), plain, k, MOSES, where + " --format nbest")
        (got,) = decode_json(folder, line, semantics, k, True, early)
        assert_distinct(got, plain, k, EXACT, where + " --format json --nbest-unique")


@pytest.mark.parametrize("shape", SHAPES)
@settings(max_examples=examples(10), **SEARCH_SETTINGS)
@given(data=st.data(), k=K)
def test_moses_nbest_list_is_the_oracles(shape, data, k):
    files, line = draw_case(data, shape)
    with written(files) as folder:
        plain = oracle(folder, "moses", line)
        where = case_text(files, line, ["moses", "-f", "moses.ini", "-s", "0", "-b", "0", "-n-best-list", "FILE", str(k)])
        assert_plain(moses_nbest(folder, line, k, False), plain, k, MOSES, where)
        assert_distinct(moses_nbest(folder, line, k, True), plain, k, MOSES, where + " distinct")


@pytest.mark.slow  # (the example's test holds the server to the oracle in the fast subset)
@pytest.mark.parametrize("semantics, shape", SEMANTICS_SHAPES)
@settings(max_examples=examples(8), **SEARCH_SETTINGS)
@given(data=st.data(), k=K)
def test_server_nbest_is_the_oracles(semantics, shape, data, k):
    files, line = draw_case(data, shape)
    with written(files) as folder, server(folder, semantics) as http:
        plain = oracle(folder, semantics, line)
        where = case_text(files, line, [f"server ({semantics} semantics, stack unpruned): translate nbest={k}"])
        assert_plain(xmlrpc_nbest(http, line, k, False), plain, k, MOSES, where + " XML-RPC")
        assert_distinct(xmlrpc_nbest(http, line, k, True), plain, k, MOSES, where + " XML-RPC nbest-distinct")
        assert_plain(json_nbest(http, line, k), plain, k, EXACT, where + " JSON /translate")


@pytest.mark.slow  # worker processes take a while to start
@settings(max_examples=examples(3), **SEARCH_SETTINGS)
@given(case=moses_lines(max_n=4, max_d=3), k=K, semantics=st.sampled_from(SEMANTICS))
def test_decode_workers_give_the_oracles_lists(case, k, semantics):
    # Several lines under one model (the line, its reverse, its halves: the words the table
    # does not cover are unknown words), one a chunk, over two worker processes.
    files, line = case
    words = line.split()
    lines = list(dict.fromkeys([line, " ".join(reversed(words)), " ".join(words[: len(words) // 2 or 1]),
                                " ".join(words[len(words) // 2:])]))
    with written(files) as folder:
        got = decode_json(folder, "\n".join(lines), semantics, k, False, NO_EARLY[0], workers=2)
        assert len(got) == len(lines)
        for text, entries in zip(lines, got):
            where = case_text(files, text, ["decode", "-f", "moses.ini", "--workers", "2", "--distortion-semantics",
                                            semantics, *UNPRUNED, "--nbest", str(k)])
            assert_plain(entries, oracle(folder, semantics, text), k, EXACT, where)


#: Lines of the built-in example on which the two distortion semantics give different lists.
EXAMPLE_LINES = ["das muss unsere", "sorge gleichermaßen sein das"]


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_every_front_end_on_the_example(semantics, tmp_path):
    # A fixed instance the semantics tell apart (the random ones do only now and then): the
    # built-in example, its 5 best and 5 distinct best through every front end.
    (tmp_path / "moses.ini").write_text(example_ini_text(), encoding="utf-8")
    k, early = 5, NO_EARLY[0]
    other = {"moses": "paper", "paper": "moses"}[semantics]
    repeats = 0  # lines whose plain list repeats a translation (its distinct list is another)
    with server(tmp_path, semantics) as http:
        for line in EXAMPLE_LINES:
            plain = oracle(tmp_path, semantics, line)
            assert [round(s, 6) for s, _ in plain[:k]] != [round(s, 6) for s, _ in oracle(tmp_path, other, line)[:k]]
            where = f"the example, {semantics} semantics, line {line!r}"
            (got,) = decode_json(tmp_path, line, semantics, k, False, early)
            assert_plain(got, plain, k, EXACT, where + " decode --format json")
            assert_plain(decode_nbest(tmp_path, line, semantics, k, early), plain, k, MOSES, where + " decode --format nbest")
            (got,) = decode_json(tmp_path, line, semantics, k, True, early)
            assert_distinct(got, plain, k, EXACT, where + " decode --nbest-unique")
            repeats += len({t for _, t in plain[:k]}) < k
            if semantics == "moses":
                assert_plain(moses_nbest(tmp_path, line, k, False), plain, k, MOSES, where + " moses")
                assert_distinct(moses_nbest(tmp_path, line, k, True), plain, k, MOSES, where + " moses distinct")
            assert_plain(xmlrpc_nbest(http, line, k, False), plain, k, MOSES, where + " XML-RPC")
            assert_distinct(xmlrpc_nbest(http, line, k, True), plain, k, MOSES, where + " XML-RPC nbest-distinct")
            assert_plain(json_nbest(http, line, k), plain, k, EXACT, where + " JSON /translate")
    assert repeats
