"""ARPA LMs of every order through 5 in every search, on the gold Europarl model (5-gram LM).

The Python and native engines must give the same derivations, scores and state counts at
each order (the native core promises bit-identical results), and the exact methods the
same optimum. The gold model's LexicalReordering is left out (its own tests cover it).
"""

from __future__ import annotations

import pytest

from fstdecode import Decoder, load_model
from fstdecode.search.base import METHODS

from shared import data_path

GOLD = "moses-lexreo-europarl-fr-en"
WEIGHTS = ["word=-1", "lm=0.5", "distortion=0.5", "tm=0.2,0.2,0.2,0.2,0.2"]
EXACT = ("dp", "coverage", "exact", "fst", "exhaustive")


def gold_model(order: int, engine: str, **kwargs):
    return load_model(
        phrase_table=data_path(GOLD, "phrase-table.0-0.gz"), lm=data_path(GOLD, "europarl.lm"),
        lm_order=order, weights=WEIGHTS, engine=engine, **kwargs,
    )


def first_sentence() -> str:
    return data_path(GOLD, "to-translate.txt").read_text(encoding="utf-8").splitlines()[0]


@pytest.mark.slow
@pytest.mark.parametrize("order", [1, 2, 3, 4, 5])
def test_stack_decoder_agrees_between_engines_at_every_order(order: int) -> None:
    sentence = first_sentence()  # 22 words
    results = {}
    for engine in ("python", "native"):
        model = gold_model(order, engine, table_limit=20, distortion_limit=6)
        assert model.lm.order == order
        results[engine] = Decoder(model, "stack", engine=engine).decode(sentence)
    python, native = results["python"], results["native"]
    assert python.best.phrases == native.best.phrases
    assert python.best.score == native.best.score
    assert python.stats.states == native.stats.states
    assert len(python.best.translation.split()) >= 15


@pytest.mark.slow
def test_every_method_takes_a_5_gram_lm() -> None:
    # A 6-word prefix, small options: the exponential methods (coverage, exhaustive) finish.
    sentence = " ".join(first_sentence().split()[:6])
    scores: dict[tuple[str, str], float] = {}
    for engine in ("python", "native"):
        model = gold_model(5, engine, table_limit=5, distortion_limit=3)
        for method, entry in METHODS.items():
            if engine == "native" and not entry.has_native:
                continue
            result = Decoder(model, method, engine=engine).decode(sentence)
            assert result.error is None and result.reason is None, (method, engine)
            scores[method, engine] = result.best.score
            if method in EXACT:
                assert result.optimal, (method, engine)
    optimum = scores["exact", "python"]
    for (method, engine), score in scores.items():
        if method in EXACT:
            assert score == pytest.approx(optimum, abs=1e-9), (method, engine)
        else:  # heuristic searches can only find less
            assert score <= optimum + 1e-9, (method, engine)
        if (method, "native") in scores:
            assert scores[method, "native"] == scores[method, "python"], method
