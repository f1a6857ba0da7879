"""Distinct n-best lists (``--nbest-unique``, moses.ini's ``[n-best-list] ... distinct``) for every method.

The reference is independent of the method under test: the exhaustive oracle's plain list of
every derivation, from which the first k distinct translations are read off.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from fstdecode.cli.main import main
from fstdecode.decoder import Decoder
from fstdecode.problem.problem import SearchResult
from fstdecode.search.base import METHODS
from fstdecode.search.kbest import DistinctSearcher, distinct

from randmodels import NO_BUDGET, random_case
from shared import EXAMPLE_DATA, SEARCH_SETTINGS, example_ini_text

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


# Every registered method: the exact ones must give exactly the oracle's first k distinct
# translations; the inexact ones (stack, beam) a list without repeats whose entries are real
# derivations of those translations.
@pytest.mark.parametrize("method", list(METHODS))
@settings(max_examples=12, **SEARCH_SETTINGS)
@given(case=random_case(max_n=4, max_d=3))
def test_distinct_nbest_matches_the_oracle(method, case):
    model, sentence = case
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
        assert len(texts) == len(expected)
        for d, score in zip(result.derivations, expected):
            assert abs(d.search_score - score) < 1e-6
            assert abs(best[d.translation] - score) < 1e-6  # its translation's best derivation


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
    # moses.ini's "[n-best-list] / nbest / 6 distinct", as in the lexicalized-reordering gold's run.
    ini = tmp_path / "moses.ini"
    ini.write_text(example_ini_text() + "\n[n-best-list]\nnbest\n6 distinct\n", encoding="utf-8")
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


def _stdin(text: str):
    import io

    return io.TextIOWrapper(io.BytesIO((text + "\n").encode("utf-8")), encoding="utf-8")
