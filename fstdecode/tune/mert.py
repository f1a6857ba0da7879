"""Minimum error rate training (Och 2003) over merged n-best lists, as Moses' ``mert`` runs it.

The line search is exact: along ``p + γ d`` each hypothesis' model score is a line
``a + γ b`` (a = f·p, b = f·d), a sentence picks the upper envelope's line at each γ, so the
corpus metric is piecewise constant in γ, changing only where some sentence's envelope breaks.
:func:`line_search` sweeps every sentence's envelope at once (numpy), sums the statistics of each
interval and scores them all; it returns the middle of the best interval (an unbounded end
interval: 1 past its breakpoint).

:func:`optimize` is Moses' SimpleOptimizer (mert/Optimizer.cpp): from a point, line-search along
each coordinate axis and ``random_directions`` random directions (each component uniform in
its range), all from the same point; move to the best of them; repeat while the metric gains
more than :data:`EPSILON`. It starts from the current weights and from ``restarts`` random
points (uniform in the ranges, [0, 1] by default as ``mert-moses.pl``'s), and keeps the best,
L1-normalized as ``mert`` writes it. Every random draw comes from the given generator, so one
seed gives one result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fstdecode._native import core as _core
from fstdecode.tune.metric import Metric
from fstdecode.tune.pool import PoolArrays

#: The least gain (metric points, 0-100) a Powell round must make to go on: Moses' kEPS, 0.0001
#: on its 0-1 scale.
EPSILON = 0.01
#: How far past an unbounded end interval's breakpoint the line search steps.
END_STEP = 1.0
#: Breakpoints nearer than this (relative, at least 1) are one.
MERGE = 1e-12


@dataclass(frozen=True)
class MertSettings:
    """``restarts``: random starting points besides the current weights (``mert -n``, 20 in
    ``mert-moses.pl``); ``random_directions``: random directions per round besides the axes
    (``mert -m``); ``ranges``: (min, max) per dimension of the random draws (None: [0, 1] each)."""

    restarts: int = 20
    random_directions: int = 0
    ranges: tuple[tuple[float, float], ...] | None = None


class Padded:
    """The pool's rows as (sentences x most entries) matrices, for per-sentence argmax and sweeps;
    only the sentences that have entries."""

    def __init__(self, arrays: PoolArrays) -> None:
        counts = np.diff(arrays.offsets)
        kept = counts > 0  # a sentence with no entry (its line failed to decode) counts in no total
        counts, starts = counts[kept], arrays.offsets[:-1][kept]
        self.sentences = len(counts)
        self.width = int(counts.max()) if len(counts) else 0
        self.valid = np.arange(self.width)[None, :] < counts[:, None]
        rows = np.where(self.valid, starts[:, None] + np.arange(self.width)[None, :], 0)
        self.rows = rows
        self.features = arrays.features[rows]  # S x K x D
        self.stats = arrays.stats[rows]  # S x K x W
        # the entries flat, sentence by sentence (the line search's)
        self.entries, self.entry_stats, self.offsets = arrays.features, arrays.stats, arrays.offsets

    def model_scores(self, w: np.ndarray) -> np.ndarray:
        return np.where(self.valid, self.features @ w, -np.inf)

    def picks(self, w: np.ndarray) -> np.ndarray:
        """Each sentence's best entry under weights ``w`` (the first of equal scores)."""
        return np.argmax(self.model_scores(w), axis=1)

    def total(self, picks: np.ndarray) -> np.ndarray:
        return self.stats[np.arange(self.sentences), picks].sum(axis=0)


def evaluate(padded: Padded, metric: Metric, w: np.ndarray) -> float:
    """The corpus metric of the entries ``w`` picks."""
    return float(metric.scores(padded.total(padded.picks(w))[None, :])[0])


def line_search(padded: Padded, metric: Metric, p: np.ndarray, d: np.ndarray) -> tuple[float, float]:
    """(γ, metric) of the best point ``p + γ d``: γ = 0 if its interval is among the best (a line
    that gains nothing does not move), else the middle of the best interval nearest it."""
    a = padded.entries @ p
    b = padded.entries @ d
    first, x_all, before, after = _core.upper_envelopes(a, b, padded.offsets)
    stats = padded.entry_stats
    base = stats[first].sum(axis=0)
    d_all = stats[after] - stats[before]
    if len(x_all) == 0:
        return 0.0, float(metric.scores(base[None, :])[0])
    order = np.argsort(x_all, kind="stable")
    x_sorted, d_sorted = x_all[order], d_all[order]
    # breakpoints closer than rounding are one (else a sliver between two roundings of one
    # crossing would be scored by picks that floating point alone decided)
    new_group = np.empty(len(x_sorted), dtype=bool)
    new_group[0] = True
    new_group[1:] = np.diff(x_sorted) > MERGE * np.maximum(1.0, np.abs(x_sorted[1:]))
    starts = np.flatnonzero(new_group)
    points = x_sorted[starts]
    group_end = np.append(starts[1:], len(x_sorted)) - 1
    # the totals after each breakpoint: the cumulative sum at each group's last row
    cumulative = np.cumsum(d_sorted, axis=0)[group_end]
    totals = np.vstack([base[None, :], base[None, :] + cumulative])
    scores = metric.scores(totals)
    # interval k: (points[k-1], points[k]); k = 0 and k = len(points) are unbounded
    mids = np.empty(len(points) + 1)
    mids[0] = points[0] - END_STEP
    mids[-1] = points[-1] + END_STEP
    if len(points) > 1:
        mids[1:-1] = (points[:-1] + points[1:]) / 2
    best = scores.max()
    here = int(np.searchsorted(points, 0.0, side="right"))  # the interval γ = 0 lies in
    on_a_point = np.any(np.abs(points) <= MERGE)  # (where the picks are ties, no interval's)
    if scores[here] == best and not on_a_point:
        return 0.0, float(best)
    candidates = np.flatnonzero(scores == best)
    k = candidates[np.argmin(np.abs(mids[candidates]))]
    return float(mids[k]), float(scores[k])


def _random_point(rng: np.random.Generator, ranges: np.ndarray) -> np.ndarray:
    return rng.uniform(ranges[:, 0], ranges[:, 1])


def powell(padded: Padded, metric: Metric, start: np.ndarray, settings: MertSettings, ranges: np.ndarray,
           rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Moses' SimpleOptimizer from ``start``: (point, metric)."""
    p = start.astype(np.float64)
    score = evaluate(padded, metric, p)
    dim = len(p)
    while True:
        best_p, best = p, score
        for k in range(dim + settings.random_directions):
            if k < dim:
                d = np.zeros(dim)
                d[k] = 1.0
            else:
                d = _random_point(rng, ranges)
            gamma, got = line_search(padded, metric, p, d)
            if got > best:
                best, best_p = got, p + gamma * d
        if best - score <= EPSILON:
            # a last small gain is still taken (Moses sets P = best before testing)
            return (best_p, best) if best > score else (p, score)
        p, score = best_p, best


def optimize(arrays: PoolArrays, metric: Metric, start: Sequence[float], settings: MertSettings,
             rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """The best weights MERT finds on the pool from ``start`` and the random restarts, L1-normalized,
    with their metric."""
    padded = Padded(arrays)
    start = np.asarray(start, dtype=np.float64)
    dim = len(start)
    ranges = np.array(settings.ranges if settings.ranges is not None else [(0.0, 1.0)] * dim, dtype=np.float64)
    best_p, best = powell(padded, metric, start, settings, ranges, rng)
    for _ in range(settings.restarts):
        p, got = powell(padded, metric, _random_point(rng, ranges), settings, ranges, rng)
        if got > best:
            best_p, best = p, got
    norm = np.abs(best_p).sum()
    return (best_p / norm if norm > 0 else best_p), best
