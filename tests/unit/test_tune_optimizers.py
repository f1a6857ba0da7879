"""fstdecode.tune.mert and .mira on small random pools.

The line search is checked against a brute-force search: every sentence's pairwise line
crossings are the only places the picks can change, so scoring a point inside each interval
between them (and beyond both ends) finds the best the line offers. The optimizers are checked
for what they promise: one seed, one result; never worse on the pool than where they started.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sacrebleu")

from fstdecode.tune import mert, mira  # noqa: E402
from fstdecode.tune.metric import Metric, MetricSettings  # noqa: E402
from fstdecode.tune.pool import PoolArrays  # noqa: E402

from shared import examples  # noqa: E402

WORDS = ["a", "b", "c", "d", "e"]


def random_pool(rng: np.random.Generator, sentences: int, dim: int, name: str = "bleu"):
    """(metric, arrays): ``sentences`` references and 1-8 entries each, with small integer features
    (many equal lines and slopes, as real feature values have) and random translations."""
    refs = [[" ".join(rng.choice(WORDS, size=rng.integers(2, 7)))] for _ in range(sentences)]
    metric = Metric(MetricSettings(name), refs)
    feats, stats, counts = [], [], []
    for i in range(sentences):
        k = int(rng.integers(1, 9))
        counts.append(k)
        for _ in range(k):
            feats.append(rng.integers(-3, 4, size=dim).astype(float))
            stats.append(metric.stats(i, " ".join(rng.choice(WORDS, size=rng.integers(1, 7)))))
    offsets = np.concatenate([[0], np.cumsum(counts)])
    return metric, PoolArrays(np.array(feats), np.array(stats, dtype=np.int64), offsets)


def brute_force(arrays: PoolArrays, metric: Metric, p: np.ndarray, d: np.ndarray) -> float:
    """The best metric along p + γd (integer p and d), in exact arithmetic: the picks at a point
    inside every interval between two crossings (and beyond both ends)."""
    crossings = set()
    for i in range(arrays.sentences):
        f = arrays.features[arrays.offsets[i]:arrays.offsets[i + 1]].astype(int)
        a, b = f @ p.astype(int), f @ d.astype(int)
        for r in range(len(f)):
            for s in range(len(f)):
                if b[r] != b[s]:
                    crossings.add(Fraction(int(a[r] - a[s]), int(b[s] - b[r])))
    points = sorted(crossings)
    tests = [Fraction(0)] if not points else [points[0] - 1, *((x + y) / 2 for x, y in zip(points, points[1:])),
                                              points[-1] + 1]
    best = -1.0
    for g in tests:
        total = 0
        for i in range(arrays.sentences):
            rows = range(arrays.offsets[i], arrays.offsets[i + 1])
            scores = [sum(int(v) * (int(pk) + g * int(dk)) for v, pk, dk in zip(arrays.features[r], p, d)) for r in rows]
            total = total + arrays.stats[rows[scores.index(max(scores))]]  # the first of equals, as argmax
        best = max(best, metric.score(total))
    return best


@settings(max_examples=examples(120), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sentences=st.integers(1, 6), dim=st.integers(1, 4),
       name=st.sampled_from(["bleu", "chrf"]))
def test_line_search_finds_the_brute_force_best(seed, sentences, dim, name):
    """Integer features, point and direction (so that the brute force is exact, and equal lines and
    crossings shared by several lines abound)."""
    rng = np.random.default_rng(seed)
    metric, arrays = random_pool(rng, sentences, dim, name)
    p = rng.integers(-3, 4, size=dim).astype(float)
    d = rng.integers(-3, 4, size=dim).astype(float)
    if not d.any():
        d[0] = 1.0
    padded = mert.Padded(arrays)
    gamma, score = mert.line_search(padded, metric, p, d)
    assert score == pytest.approx(brute_force(arrays, metric, p, d), abs=1e-9)
    # the point it returns scores what it says
    assert mert.evaluate(padded, metric, p + gamma * d) == pytest.approx(score, abs=1e-9)


@settings(max_examples=examples(60), deadline=None)
@given(seed=st.integers(0, 2**32 - 1), sentences=st.integers(1, 6), dim=st.integers(1, 4))
def test_line_search_with_real_weights_keeps_its_word(seed, sentences, dim):
    """Real-valued point and direction: the γ returned scores what the search says, and no less
    than where it started."""
    rng = np.random.default_rng(seed)
    metric, arrays = random_pool(rng, sentences, dim)
    p, d = rng.normal(size=dim), rng.normal(size=dim)
    padded = mert.Padded(arrays)
    gamma, score = mert.line_search(padded, metric, p, d)
    assert mert.evaluate(padded, metric, p + gamma * d) == pytest.approx(score, abs=1e-9)
    assert score >= mert.evaluate(padded, metric, p) - 1e-9


def test_line_search_does_not_move_along_a_flat_line():
    """Every interval scoring the same: γ = 0 (the interval nearest the start)."""
    rng = np.random.default_rng(3)
    metric, arrays = random_pool(rng, 3, 2)
    same = PoolArrays(arrays.features, np.repeat(arrays.stats[:1], len(arrays.stats), axis=0), arrays.offsets)
    gamma, _ = mert.line_search(mert.Padded(same), metric, np.array([0.3, -0.2]), np.array([1.0, 0.0]))
    assert gamma == 0.0


@pytest.mark.parametrize("optimizer", ["mert", "mira"])
def test_one_seed_one_result_never_worse_than_the_start(optimizer):
    rng = np.random.default_rng(11)
    metric, arrays = random_pool(rng, 8, 3)
    start = np.array([0.2, -0.1, 0.5])
    padded = mert.Padded(arrays)
    before = mert.evaluate(padded, metric, start)

    def run(seed: int):
        g = np.random.default_rng([seed, 1])
        if optimizer == "mert":
            return mert.optimize(arrays, metric, start, mert.MertSettings(restarts=5, random_directions=2), g)
        return mira.optimize(arrays, metric, start, mira.MiraSettings(epochs=10), g)

    w1, s1 = run(7)
    w2, s2 = run(7)
    assert np.array_equal(w1, w2) and s1 == s2
    assert s1 >= before - 1e-12
    assert mert.evaluate(padded, metric, w1) == pytest.approx(s1, abs=1e-9)  # (scale-free for MERT's L1 norm)


def test_mert_reaches_the_obvious_optimum():
    """A pool whose first feature is each entry's own sentence match: MERT's best puts its weight first."""
    refs = [["a b c d"], ["b c d e"], ["a a b b"]]
    metric = Metric(MetricSettings("bleu"), refs)
    hyps = [["a b c d", "e e e e", "a b"], ["b c d e", "a a a a", "d e"], ["a a b b", "c c c c", "b b"]]
    feats, stats = [], []
    for i, hs in enumerate(hyps):
        for j, h in enumerate(hs):
            feats.append([1.0 if j == 0 else 0.0, float(j)])  # the second feature prefers the bad ones
            stats.append(metric.stats(i, h))
    arrays = PoolArrays(np.array(feats), np.array(stats, dtype=np.int64), np.array([0, 3, 6, 9]))
    w, score = mert.optimize(arrays, metric, [0.0, 1.0], mert.MertSettings(restarts=0), np.random.default_rng(0))
    assert score == pytest.approx(100.0)
    assert mert.evaluate(mert.Padded(arrays), metric, w) == pytest.approx(100.0)


def test_upper_envelopes_by_hand_and_bad_arguments():
    """Two sentences: lines (a, b) = (0, 0), (1, 1) cross at -1; (2, -1), (0.5, 3) at 0.375; a
    line of an equal slope and below, and an empty sentence, add nothing."""
    from fstdecode._native import core

    a = np.array([0.0, 1.0, -5.0, 2.0, 0.5])
    b = np.array([0.0, 1.0, 1.0, -1.0, 3.0])
    first, x, before, after = core.upper_envelopes(a, b, np.array([0, 3, 3, 5]))
    assert first.tolist() == [0, 3] and x.tolist() == [-1.0, 0.375]
    assert before.tolist() == [0, 3] and after.tolist() == [1, 4]
    with pytest.raises(ValueError, match="offsets must run from 0"):
        core.upper_envelopes(a, b, np.array([0, 4]))
    with pytest.raises(ValueError, match="one length"):
        core.upper_envelopes(a, b[:3], np.array([0, 3]))
    with pytest.raises(ValueError, match="offsets decrease"):
        core.upper_envelopes(a, b, np.array([0, 4, 2, 5]))
