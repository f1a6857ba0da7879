"""The n-best lists of every iteration so far, merged per sentence (as ``mert-moses.pl`` merges
its feature and score files): each distinct (translation, feature vector) once.

Invariant: ``entries(i)`` holds sentence i's distinct hypotheses in the order first seen; the
arrays of :meth:`NbestPool.arrays` list every sentence's entries, sentence by sentence, with
``offsets[i]:offsets[i + 1]`` sentence i's rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from fstdecode.tune.metric import Metric
from fstdecode.tune.space import WeightSpace


@dataclass(frozen=True)
class PoolArrays:
    """The pool as arrays: ``features`` (N x D), ``stats`` (N x metric width), ``offsets`` (sentences + 1)."""

    features: np.ndarray
    stats: np.ndarray
    offsets: np.ndarray

    @property
    def sentences(self) -> int:
        return len(self.offsets) - 1


@dataclass
class NbestPool:
    """Sentence i's hypotheses: translation -> {feature vector (tuple) -> row}, with their stats."""

    metric: Metric
    space: WeightSpace
    _keys: list[dict[tuple[str, tuple[float, ...]], int]] = field(default_factory=list)
    _features: list[list[tuple[float, ...]]] = field(default_factory=list)
    _stats: list[list[list[int]]] = field(default_factory=list)
    _cache: PoolArrays | None = None

    def __post_init__(self) -> None:
        n = len(self.metric)
        self._keys = [{} for _ in range(n)]
        self._features = [[] for _ in range(n)]
        self._stats = [[] for _ in range(n)]

    def add(self, i: int, entries: Iterable[tuple[str, np.ndarray]]) -> int:
        """Adds sentence ``i``'s (translation, features) entries; returns how many were new."""
        new = 0
        keys = self._keys[i]
        stats_of: dict[str, list[int]] = {}
        for words, features in entries:
            key = (words, tuple(float(v) for v in features))
            if key in keys:
                continue
            keys[key] = len(self._features[i])
            self._features[i].append(key[1])
            got = stats_of.get(words)
            if got is None:
                got = stats_of[words] = self.metric.stats(i, words)
            self._stats[i].append(got)
            new += 1
        if new:
            self._cache = None
        return new

    def size(self, i: int) -> int:
        return len(self._features[i])

    def __len__(self) -> int:
        return sum(len(f) for f in self._features)

    def arrays(self) -> PoolArrays:
        """The pool as arrays (made once per change)."""
        if self._cache is None:
            counts = [len(f) for f in self._features]
            offsets = np.zeros(len(counts) + 1, dtype=np.int64)
            np.cumsum(counts, out=offsets[1:])
            d, s = len(self.space), self.metric.width
            features = np.array([v for f in self._features for v in f], dtype=np.float64).reshape(-1, d)
            stats = np.array([v for st in self._stats for v in st], dtype=np.int64).reshape(-1, s)
            self._cache = PoolArrays(features, stats, offsets)
        return self._cache
