"""scripts/bench_proof_floor.py's count of adjacent option pairs, against a plain double loop."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scripts.bench_proof_floor import adjacent_pairs, word_pair_codes


def brute_force(options: list[tuple[int, int, tuple[int, ...]]], d: int) -> tuple[int, int]:
    pairs, joins = 0, set()
    for qs, qt, qw in options:
        for os_, ot, ow in options:
            if abs(qt + 1 - os_) <= d and (qt < os_ or qs > ot):
                pairs += 1
                joins.add((tuple(([-1, -1] + list(qw))[-2:]), tuple((list(ow) + [-1, -1])[:2])))
    return pairs, len(joins)


@pytest.mark.parametrize("seed", range(20))
def test_adjacent_pairs_counts_what_a_double_loop_counts(seed: int) -> None:
    rng = random.Random(seed)
    n, d = rng.randint(1, 12), rng.randint(0, 5)
    options = []
    for _ in range(rng.randint(0, 40)):
        s = rng.randint(1, n)
        t = rng.randint(s, min(n, s + 3))
        options.append((s, t, tuple(rng.randint(0, 4) for _ in range(rng.randint(1, 3)))))
    spans = np.array([(s, t) for s, t, _ in options], dtype=np.int64).reshape(-1, 2)
    ends = word_pair_codes([tuple(([-1, -1] + list(w))[-2:]) for _, _, w in options])
    starts = word_pair_codes([tuple((list(w) + [-1, -1])[:2]) for _, _, w in options])
    assert adjacent_pairs(spans, ends, starts, d) == brute_force(options, d)
