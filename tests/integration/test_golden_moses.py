"""Golden check: the scorer reproduces Moses' own 50-best lists feature by feature.

``moses-early-distortion-de-en/truth/results.txt`` holds 5 × 50 entries
printed by Moses with their segmentation. Each entry is rebuilt as a
derivation from the phrase table and scored with that folder's moses.ini
(trigram LM); every printed feature and the total must match to 1e-3. The
total includes Moses' UnknownWordPenalty (−100 per unknown word, weight 1),
which Moses does not print among the features.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import pytest

from fstdecode.model.model import load_model
from fstdecode.problem.scorer import features
from fstdecode.problem.sentence import Phrase, unknown_pair


ENTRY = re.compile(r"^TRANSLATION_(\d+)_NBEST_(\d+)=(.*)$")


@dataclass(frozen=True)
class Entry:
    sent: int
    rank: int
    translation: tuple[str, ...]
    feats: dict[str, list[float]]
    total: float
    segmentation: list[tuple[int, int, int, int]]


def _span(text: str) -> tuple[int, int]:
    a, _, b = text.partition("-")
    return int(a), int(b or a)


def parse_results(text: str) -> list[Entry]:
    out = []
    for line in text.splitlines():
        m = ENTRY.match(line)
        if not m:
            continue
        fields = [f.strip() for f in m.group(3).split("|||")]
        feats: dict[str, list[float]] = {}
        name = None
        for tok in fields[1].split():
            if tok.endswith("="):
                name = tok[:-1]
                feats[name] = []
            else:
                feats[name].append(float(tok))
        seg = []
        for item in fields[3].split():
            src, tgt = item.split("=")
            seg.append((*_span(src), *_span(tgt)))
        out.append(Entry(int(m.group(1)), int(m.group(2)), tuple(fields[0].split()), feats, float(fields[2]), seg))
    return out


@pytest.fixture(scope="module")
def golden(moses_de_en):
    folder = moses_de_en
    model = load_model(folder / "moses.ini", table_limit=0)  # the scorer needs every pair, not the top 20
    inputs = [line.split() for line in (folder / "to-translate.txt").read_text(encoding="utf-8").splitlines()]
    entries = parse_results((folder / "truth" / "results.txt").read_text(encoding="utf-8"))
    return model, inputs, entries


def candidate_derivations(model, words, entry):
    """Every phrase sequence (target order) that matches the entry's segmentation and strings."""
    choices = []
    for s0, s1, t0, t1 in sorted(entry.segmentation, key=lambda x: x[2]):
        src, tgt = tuple(words[s0 : s1 + 1]), entry.translation[t0 : t1 + 1]
        pairs = [p for p in model.table.lookup(src) if p.target == tgt]
        if not pairs and len(src) == 1 and src == tgt:
            pairs = [unknown_pair(src[0], model.table.num_scores)]
        assert pairs, f"no phrase pair {src} -> {tgt}"
        choices.append([Phrase(s0, s1, p) for p in pairs])
    return [tuple(c) for c in itertools.product(*choices)]


def test_all_250_entries_are_reproduced(golden):
    model, inputs, entries = golden
    assert len(entries) == 250
    w = model.weights
    for e in entries:
        words = inputs[e.sent]
        best = None
        for phrases in candidate_derivations(model, words, e):
            f = features(len(words), phrases, model.lm, model.table.num_scores)
            err = max(abs(a - b) for a, b in zip(f.tm, e.feats["PhraseDictionaryMemory0"]))
            if best is None or err < best[0]:
                best = (err, f)
        err, f = best
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
