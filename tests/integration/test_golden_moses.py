"""Golden check: the scorer reproduces Moses' own 50-best lists feature by feature.

``moses-early-distortion-de-en/truth/results.txt`` holds 5 × 50 entries
printed by Moses with their segmentation. Each entry is rebuilt as a
derivation from the phrase table and scored with that folder's moses.ini
(trigram LM); every printed feature and the total must match to 1e-3. The
total includes Moses' UnknownWordPenalty (−100 per unknown word, weight 1),
which Moses does not print among the features. The model is a moses.ini, so
the scorer uses Moses' distortion semantics; with ``[early-distortion-cost]``
its total includes the jump into ``</s>``, as the paper's does.
"""

from __future__ import annotations

import pytest

from fstdecode.model.model import load_model
from fstdecode.problem.scorer import features

from golden import candidate_derivations, closest_tm, parse_results


@pytest.fixture(scope="module")
def golden(moses_de_en):
    folder = moses_de_en
    model = load_model(folder / "moses.ini", table_limit=0)  # the scorer needs every pair, not the top 20
    inputs = [line.split() for line in (folder / "to-translate.txt").read_text(encoding="utf-8").splitlines()]
    entries = parse_results((folder / "truth" / "results.txt").read_text(encoding="utf-8"))
    return model, inputs, entries


def test_all_250_entries_are_reproduced(golden):
    model, inputs, entries = golden
    assert len(entries) == 250
    w = model.weights
    for e in entries:
        words = inputs[e.sent]
        err, f, _ = closest_tm(
            e.feats["PhraseDictionaryMemory0"],
            candidate_derivations(model.table, words, e),
            lambda phrases: features(
                len(words), phrases, model.lm, model.table.num_scores,
                semantics=model.distortion_semantics, early_distortion_cost=model.early_distortion_cost,
            ),
        )
        where = f"sentence {e.sent} entry {e.rank}"
        assert err < 1e-3, where
        assert f.lm == pytest.approx(e.feats["KENLM0"][0], abs=1e-3), where
        assert f.distortion == pytest.approx(e.feats["Distortion0"][0], abs=1e-3), where
        assert f.word == pytest.approx(e.feats["WordPenalty0"][0], abs=1e-3), where
        assert w.total(f) == pytest.approx(e.total, abs=1e-3), where


def test_weights_come_from_the_ini(golden):
    model, _, _ = golden
    assert (model.weights.lm, model.weights.distortion, model.weights.word) == (0.5, 0.05, -1.0)
    assert model.weights.tm == (0.2,) * 5 and model.weights.unknown == 1.0
    assert model.distortion_limit == 6 and model.lm.order == 3
    assert model.distortion_semantics == "moses" and model.early_distortion_cost
