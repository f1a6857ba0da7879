"""Distinct n-best lists (``--nbest-unique``, moses.ini's ``[n-best-list] ... distinct``) for every method.

The reference is independent of the method under test: the exhaustive oracle's plain list of
every derivation, from which the first k distinct translations are read off.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings

from fstdecode.cli.main import main
from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model
from fstdecode.problem.problem import SearchResult
from fstdecode.search.base import METHODS
from fstdecode.search.kbest import DistinctSearcher, distinct

from randmodels import NO_BUDGET, random_case
from shared import EXAMPLE_DATA, SEARCH_SETTINGS, arpa_text, example_ini_text, examples

K = 4


def _oracle(model, sentence) -> list[tuple[float, str]]:
    """Every derivation's (score, translation), best first: the exhaustive oracle's whole list."""
    result = Decoder(model, "exhaustive", nbest=10**6, max_states=NO_BUDGET).decode(" ".join(sentence))
    return [(d.search_score, d.translation) for d in result.derivations]


def _best_per_translation(plain: list[tuple[float, str]]) -> dict[str, float]:
    best: dict[str, float] = {}
    for score, text in plain:
        best.setdefault(text, score)
    return best


def _first_distinct_scores(plain: list[tuple[float, str]], k: int) -> list[float]:
    return sorted(_best_per_translation(plain).values(), reverse=True)[:k]


def _check_against_the_oracle(method, model, sentence) -> list[str]:
    """``method``'s distinct K-best for ``sentence``, checked against the oracle; its translations.

    The exact methods give the oracle's first K distinct translations, except that a method
    without its own distinct search (DistinctSearcher) reads at most DISTINCT_FACTOR * K
    derivations, as Moses' n-best-factor: its list stops short exactly when the next
    translation's best derivation is not among that many best derivations (more than the cap
    score at least as well). The inexact ones (stack, beam) give a list without repeats whose
    entries are real derivations of those translations.
    """
    plain = _oracle(model, sentence)
    budget = {} if method in ("stack", "beam") else {"max_states": NO_BUDGET}
    result = Decoder(model, method, nbest=K, unique=True, **budget).decode(" ".join(sentence))
    texts = [d.translation for d in result.derivations]
    assert len(texts) == len(set(texts)), texts
    best = _best_per_translation(plain)
    for d in result.derivations:  # each entry is a derivation of its translation, scored right
        assert d.search_score <= best[d.translation] + 1e-6
        assert abs(d.score - d.search_score) < 1e-6
    if METHODS[method].exact:
        expected = _first_distinct_scores(plain, K)
        assert 1 <= len(texts) <= len(expected)
        for d, score in zip(result.derivations, expected):
            assert abs(d.search_score - score) < 1e-6
            assert abs(best[d.translation] - score) < 1e-6  # its translation's best derivation
        if len(texts) < len(expected):  # only the cap of DistinctSearcher cuts an exact list short
            assert not METHODS[method].distinct, texts
            cap = DistinctSearcher(None, K).limit
            as_good = sum(score >= expected[len(texts)] - 1e-6 for score, _ in plain)
            assert as_good > cap, (texts, as_good, cap)
    return texts


@pytest.mark.parametrize("method", list(METHODS))
@settings(max_examples=examples(12), **SEARCH_SETTINGS)
@given(case=random_case(max_n=4, max_d=3))
@pytest.mark.slow
def test_distinct_nbest_matches_the_oracle(method, case):
    model, sentence = case
    _check_against_the_oracle(method, model, sentence)


def _repeated_pair_model(tmp_path):
    """'u ||| b' three times (other scores, TM weights 0) and 'u ||| a'; 'a' costs a backoff.

    'u u u u' -> 'b b b b' has 3^4 = 81 tied best derivations, more than DISTINCT_FACTOR * K = 80;
    the next translations (one 'a', 27 derivations each) score one log10 unit lower."""
    (tmp_path / "pt").write_text(
        "u ||| a ||| 1.000 1.000\nu ||| b ||| 0.500 1.000\nu ||| b ||| 1.000 0.500\nu ||| b ||| 1.000 1.000\n",
        encoding="utf-8",
    )
    unigrams = ["-99.0000\t<s>\t0.0000", "-1.0000\t</s>\t0.0000", "-1.0000\t<unk>\t0.0000",
                "-1.0000\ta\t-1.0000", "-1.0000\tb\t0.0000"]
    (tmp_path / "lm").write_text(arpa_text(unigrams, []), encoding="utf-8")
    return load_model(
        phrase_table=tmp_path / "pt", lm=tmp_path / "lm", distortion_limit=1,
        weights=["lm=1", "tm=0,0", "distortion=0", "word=0", "phrase=0"],
    )


@pytest.mark.parametrize("method", list(METHODS))
def test_distinct_nbest_of_repeated_pairs_stops_at_the_cap(method, tmp_path):
    # Hypothesis's find for --method bounded: the 80 best derivations (the cap) all translate to
    # 'b b b b', so every method that looks at the cap's derivations (DistinctSearcher's rule, and
    # the stack decoder's own distinct lists in the core) returns that one translation, as Moses'
    # n-best-factor 20 would; fst prunes for the K-th distinct translation itself and finds 4.
    texts = _check_against_the_oracle(method, _repeated_pair_model(tmp_path), ("u",) * 4)
    if method == "fst":
        assert len(texts) == K and texts[0] == "b b b b"
    elif METHODS[method].exact or method == "stack":
        assert texts == ["b b b b"]


def test_plain_nbest_repeats_translations_where_distinct_does_not():
    # On the built-in example a plain 10-best repeats translations (several segmentations of one
    # string), so the distinct list is a real difference, not a no-op.
    from fstdecode.model.model import load_model

    model = load_model()
    line = "das muss unsere sorge gleichermaßen sein"
    plain = [d.translation for d in Decoder(model, "dp", nbest=10).decode(line).derivations]
    assert len(set(plain)) < len(plain)
    unique = [d.translation for d in Decoder(model, "dp", nbest=10, unique=True).decode(line).derivations]
    assert len(unique) == len(set(unique)) == 10
    assert unique[: len(dict.fromkeys(plain))] == list(dict.fromkeys(plain))


class _Fixed:
    """A stand-in searcher returning a fixed plain list (the first ``size`` entries)."""

    def __init__(self, hyps, size, calls):
        self.hyps, self.size, self.calls = hyps, size, calls

    def search(self, problem):
        self.calls.append(self.size)
        return SearchResult(tuple(self.hyps[: self.size]), True, 0, 0)


class _P:
    def __init__(self, words):
        self.target = tuple(words.split())


def test_distinct_searcher_widens_until_k_distinct_or_exhausted():
    # 40 derivations of one translation, then two others: k=3 needs the list to reach entry 42.
    hyps = [(-i, (_P("a"),)) for i in range(40)] + [(-40, (_P("b"),)), (-41, (_P("c"),))]
    calls: list[int] = []
    got = DistinctSearcher(lambda size: _Fixed(hyps, size, calls), 3, factor=20).search(None)
    assert [h[1][0].target for h in got.hypotheses] == [("a",), ("b",), ("c",)]
    assert calls == [6, 24, 60]  # 2k, then 4 times more, up to factor * k
    # Capped: at factor 2 (at most 6 derivations) only one translation is found, as in Moses.
    calls.clear()
    got = DistinctSearcher(lambda size: _Fixed(hyps, size, calls), 3, factor=2).search(None)
    assert [h[1][0].target for h in got.hypotheses] == [("a",)]
    assert calls == [6]


def test_distinct_keeps_each_translations_first_entry():
    hyps = ((-1.0, (_P("a b"),)), (-2.0, (_P("a"), _P("b"))), (-3.0, (_P("c"),)))
    got = distinct(SearchResult(hyps, True, 0, 0), 5)
    assert [h[0] for h in got.hypotheses] == [-1.0, -3.0]


def test_moses_ini_distinct_makes_the_nbest_distinct(tmp_path, capsys, monkeypatch):
    # moses.ini's "[n-best-list] / nbest / 6 / distinct" ('distinct' on a line of its own: Moses
    # reads each line as one value). Moses writes that file relative to the working directory, and
    # so does decode: run in tmp_path.
    monkeypatch.chdir(tmp_path)
    ini = tmp_path / "moses.ini"
    ini.write_text(example_ini_text() + "\n[n-best-list]\nnbest\n6\ndistinct\n", encoding="utf-8")
    line = (EXAMPLE_DATA / "input.txt").read_text(encoding="utf-8").splitlines()[0]
    monkeypatch.setattr("sys.stdin", _stdin(line))
    assert main(["decode", "-f", str(ini), "--method", "dp", "--format", "nbest"]) == 0
    texts = [row.split(" ||| ")[1] for row in capsys.readouterr().out.splitlines()]
    assert len(texts) == len(set(texts)) == 6
    # Without the word: the same size, plain (repeats).
    ini.write_text(example_ini_text() + "\n[n-best-list]\nnbest\n6\n", encoding="utf-8")
    monkeypatch.setattr("sys.stdin", _stdin(line))
    assert main(["decode", "-f", str(ini), "--method", "dp", "--format", "nbest"]) == 0
    texts = [row.split(" ||| ")[1] for row in capsys.readouterr().out.splitlines()]
    assert len(texts) == 6 and len(set(texts)) < 6
    written = (tmp_path / "nbest").read_text(encoding="utf-8").splitlines()  # Moses: each word and a space
    assert [row.split(" ||| ")[1].strip() for row in written] == [t.strip() for t in texts]


def _stdin(text: str):
    import io

    return io.TextIOWrapper(io.BytesIO((text + "\n").encode("utf-8")), encoding="utf-8")


@pytest.mark.parametrize("semantics", ["paper", "moses"])
@settings(max_examples=examples(20), **SEARCH_SETTINGS)
@given(case=random_case(max_n=5, max_d=3))
def test_stack_distinct_in_the_core_is_distinctsearchers_rule(semantics, case):
    # The stack decoder's distinct lists are made in the core (issue 39): the same entries as
    # DistinctSearcher's rule over its plain lists (Python's distinct() of the 2k, then 8k, ... up
    # to n-best-factor * k best derivations), with the pruning on.
    model, sentence = case
    model = dataclasses.replace(model, distortion_semantics=semantics, semantics_given=True)
    line = " ".join(sentence)
    native = Decoder(model, "stack", nbest=K, unique=True).decode(line)
    searcher = DistinctSearcher(
        lambda size: METHODS["stack"].factory(model, METHODS["stack"].options(nbest=size)), K
    )
    plain = Decoder(model, "stack", nbest=K)
    oracle = searcher.search(plain.problem(tuple(sentence))) if native.error is None else None
    if oracle is None:
        return
    assert [(round(d.search_score, 6), d.translation) for d in native.derivations] == [
        (round(score, 6), " ".join(w for p in phrases for w in p.target)) for score, phrases in oracle.hypotheses
    ]
