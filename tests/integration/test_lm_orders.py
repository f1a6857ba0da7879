"""ARPA LMs of every order through 5 in every search, on the gold Europarl model (5-gram LM).

At each order the stack decoder's derivation is legal and scored as the scorer scores it, and
never beats exact's proof; every method takes a 5-gram LM, the exact ones with the same optimum
(formerly: the native engine against the Python one, bit for bit). The gold model's
LexicalReordering is left out (its own tests cover it).
"""

from __future__ import annotations

import pytest

from fstdecode import Decoder, load_model
from fstdecode.search.base import METHODS

from shared import data_path

GOLD = "moses-lexreo-europarl-fr-en"
WEIGHTS = ["word=-1", "lm=0.5", "distortion=0.5", "tm=0.2,0.2,0.2,0.2,0.2"]
EXACT = ("dp", "coverage", "exact", "fst", "exhaustive")


def gold_model(order: int, **kwargs):
    return load_model(
        phrase_table=data_path(GOLD, "phrase-table.0-0.gz"), lm=data_path(GOLD, "europarl.lm"),
        lm_order=order, weights=WEIGHTS, **kwargs,
    )


def first_sentence() -> str:
    return data_path(GOLD, "to-translate.txt").read_text(encoding="utf-8").splitlines()[0]


@pytest.mark.slow
@pytest.mark.parametrize("order", [1, 2, 3, 4, 5])
def test_stack_decoder_at_every_order(order: int) -> None:
    sentence = first_sentence()  # 22 words
    model = gold_model(order, table_limit=20, distortion_limit=6)
    assert model.lm.order == order
    got = Decoder(model, "stack").decode(sentence)
    assert got.best.search_score == pytest.approx(got.best.score, abs=1e-6)
    assert len(got.best.translation.split()) >= 15
    proven = Decoder(model, "exact", max_states=200_000).decode(sentence)
    if proven.optimal:
        assert got.best.score <= proven.upper_bound + 1e-6


@pytest.mark.slow
def test_every_method_takes_a_5_gram_lm() -> None:
    # A 6-word prefix, small options: the exponential methods (coverage, exhaustive) finish.
    sentence = " ".join(first_sentence().split()[:6])
    scores: dict[str, float] = {}
    model = gold_model(5, table_limit=5, distortion_limit=3)
    for method in METHODS:
        result = Decoder(model, method).decode(sentence)
        assert result.error is None and result.reason is None, method
        scores[method] = result.best.score
        assert result.best.search_score == pytest.approx(result.best.score, abs=1e-6), method
        if method in EXACT:
            assert result.optimal, method
    optimum = scores["exhaustive"]  # the oracle
    for method, score in scores.items():
        if method in EXACT:
            assert score == pytest.approx(optimum, abs=1e-9), method
        else:  # heuristic searches can only find less
            assert score <= optimum + 1e-9, method
