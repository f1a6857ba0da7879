"""The weights tuning moves: a model's tuned weight components as one vector.

Dimension k is the k-th value an n-best line prints (``Name= v ...`` fields, in the model's
Moses layout, each feature's tuned components only: ``tuneable=false`` features and
``tuneable-components=`` zeros are left out, as Moses leaves them out of its n-best lists and of
``mert``'s input). A weight vector is put back into the model's :class:`Weights` with the
fixed components unchanged.

Invariant: ``WeightSpace(model).vector(model.weights)`` read back by :meth:`WeightSpace.weights`
gives ``model.weights``; ``names[k]`` is dimension k's feature name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fstdecode.errors import FstdecodeError
from fstdecode.model.features import MosesFeature, Weights, moses_names


class SpaceError(FstdecodeError):
    """A model with nothing to tune, or an n-best line whose fields are not the model's."""


@dataclass(frozen=True)
class WeightSpace:
    """The tuned dimensions of a model whose Moses layout is ``features``."""

    features: tuple[MosesFeature, ...]
    #: dimension -> (index in ``features``, component of that feature)
    dims: tuple[tuple[int, int], ...]
    #: the names ``--weight``/``-weight-overwrite`` take (moses_names)
    aliases: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, features: Sequence[MosesFeature], weights: Weights) -> "WeightSpace":
        """The space of a model's layout; SpaceError if no weight is tuneable."""
        dims = []
        for i, f in enumerate(features):
            if not f.in_nbest:
                continue
            count = len(f.values(weights))
            keep = f.components or (True,) * count
            dims.extend((i, c) for c in range(count) if keep[c])
        if not dims:
            raise SpaceError("the model has no tuneable weight (every feature is tuneable=false or has no tuned "
                             "component): nothing to tune")
        return cls(tuple(features), tuple(dims), tuple(moses_names(features).items()))

    @property
    def names(self) -> tuple[str, ...]:
        """Each dimension's feature name (a feature of several components repeats)."""
        return tuple(self.features[i].name for i, _ in self.dims)

    def __len__(self) -> int:
        return len(self.dims)

    def vector(self, weights: Weights) -> np.ndarray:
        """The tuned components of ``weights``, in dimension order."""
        return np.array([self.features[i].values(weights)[c] for i, c in self.dims], dtype=np.float64)

    def weights(self, vector: Sequence[float], base: Weights) -> Weights:
        """``base`` with the tuned components set from ``vector`` (the others unchanged)."""
        if len(vector) != len(self.dims):
            raise SpaceError(f"{len(vector)} weights for a space of {len(self.dims)} dimensions")
        by_feature: dict[int, list[float]] = {}
        for (i, c), v in zip(self.dims, vector):
            values = by_feature.setdefault(i, list(self.features[i].values(base)))
            values[c] = float(v)
        assignments = [f"{self.features[i].name}=" + " ".join(repr(v) for v in values)
                       for i, values in by_feature.items()]
        return base.override(assignments, dict(self.aliases), flag="tuned weights")

    def parse_fields(self, text: str, where: str) -> np.ndarray:
        """The feature vector of an n-best line's field ``Name= v v Name2= v ...``; SpaceError
        (naming ``where``) if its names and counts are not this space's."""
        values: list[float] = []
        names: list[str] = []
        for token in text.split():
            if token.endswith("="):
                names.append(token[:-1])
                continue
            try:
                values.append(float(token))
            except ValueError:
                raise SpaceError(f"{where}: {token!r} in the feature field is not a number") from None
        expected = [f.name for f in self.features if f.in_nbest]
        if names != expected or len(values) != len(self.dims):
            raise SpaceError(f"{where}: the feature field names {' '.join(names)} with {len(values)} value(s); "
                             f"the model's are {' '.join(expected)} with {len(self.dims)}")
        return np.array(values, dtype=np.float64)
