"""Batch k-best MIRA (Cherry & Foster 2012) over merged n-best lists, as Moses' ``kbmira`` runs it.

Each epoch visits the dev sentences in a random order. For a sentence, with weights w and the
background statistics bg (a decaying pseudo-corpus, 1 in every count to start with), each
entry's gain is the metric of (its statistics + bg) times the reference length of that sum
(Chiang et al. 2008's document scaling; for BLEU this is Moses' sentenceLevelBackgroundBleu);
the hope maximizes w·f + gain, the fear w·f − gain. Where they differ and the hope gains more,
the loss is (gain_hope − gain_fear) − w·(f_hope − f_fear); a positive loss moves w by
min(C, loss / |f_hope − f_fear|²) along the difference, and bg decays by ``decay`` and adds the
hope's statistics. The result is the average of w over all updates of the epoch whose average
scores best on the pool (Moses' AvgWeightVector), unnormalized as ``kbmira`` writes it; the
starting weights stay if no epoch's average beats them on the pool (kbmira would take the best
epoch even then).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fstdecode.tune.mert import Padded, evaluate
from fstdecode.tune.metric import Metric
from fstdecode.tune.pool import PoolArrays


@dataclass(frozen=True)
class MiraSettings:
    """kbmira's ``--iters`` (epochs), ``--C`` (step cap) and ``--decay`` (background decay)."""

    epochs: int = 60
    c: float = 0.01
    decay: float = 0.999


def _reference_length(totals: np.ndarray) -> np.ndarray:
    """The reference size of statistics rows: column 1 holds BLEU's ref_len and chrF's first-order
    reference count alike (metric.py's layouts)."""
    return totals[:, 1]


def optimize(arrays: PoolArrays, metric: Metric, start: Sequence[float], settings: MiraSettings,
             rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """(the best epoch's averaged weights, their metric on the pool)."""
    padded = Padded(arrays)
    w = np.asarray(start, dtype=np.float64).copy()
    bg = np.ones(metric.width, dtype=np.float64)
    w_sum = np.zeros_like(w)
    updates = 0
    best_w, best = w.copy(), evaluate(padded, metric, w)
    for _ in range(settings.epochs):
        for i in rng.permutation(padded.sentences):
            k = int(padded.valid[i].sum())
            features = padded.features[i, :k]
            totals = padded.stats[i, :k].astype(np.float64) + bg
            gains = metric.scores(totals) / 100.0 * _reference_length(totals)
            scores = features @ w
            hope = int(np.argmax(scores + gains))
            fear = int(np.argmax(scores - gains))
            if hope == fear or gains[hope] <= gains[fear]:
                continue
            diff = features[hope] - features[fear]
            loss = (gains[hope] - gains[fear]) - float(w @ diff)
            norm = float(diff @ diff)
            if loss > 0 and norm > 0:
                w = w + min(settings.c, loss / norm) * diff
                w_sum += w
                updates += 1
            bg = bg * settings.decay + padded.stats[i, hope]
        average = w_sum / updates if updates else w
        got = evaluate(padded, metric, average)
        if got > best:
            best, best_w = got, average.copy()
    return best_w, best
