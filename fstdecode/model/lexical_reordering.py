"""Moses' phrase-based lexicalized reordering model (``LexicalReordering`` in moses.ini).

The semantics follow Moses' ``moses/FF/LexicalReordering/`` (LRModel, LRState,
PhraseBasedReorderingState, BidirectionalReorderingState; read, not copied):

**Type string.** Dash-separated words, in any order
(``wbe-msd-bidirectional-fe-allff``):

* the orientation classes: ``msd`` (monotone, swap, discontinuous: 3),
  ``mslr`` (monotone, swap, discontinuous-left, discontinuous-right: 4),
  ``monotonicity`` (monotone, non-monotone: 2) or ``leftright`` (right, left: 2);
  one is required;
* the direction: ``backward`` (the default; ``unidirectional`` is its old
  name), ``forward`` or ``bidirectional`` (backward's features, then forward's);
* the conditioning: ``fe`` (the table is keyed by source and target) or ``f``
  (by source alone);
* ``allff`` (the default: one feature per orientation and direction) or
  ``collapseff`` (one feature per direction);
* ``phrase`` (the default) or ``wbe``: Moses decodes ``wbe`` tables as phrase
  based, and so does fstdecode. ``hier`` (hierarchical reordering) is refused.

**Orientations.** With 0-based inclusive source spans, for the phrase
``cur`` that follows ``prev`` in target order (``LRModel::GetOrientation``):

* monotone (M, 0) if ``cur.start == prev.end + 1``;
* swap (S, 1) if ``prev.start == cur.end + 1``;
* otherwise discontinuous (D, 2); ``mslr`` splits it into discontinuous-left
  (DL, 2) and discontinuous-right (DR, 3, when ``cur.start > prev.end``);
  ``monotonicity`` has only M (0) and non-monotone (NM, 1);
* ``leftright``: right (R, 0) if ``prev.end <= cur.start``, else left (L, 1).

The first phrase's orientation is taken against the sentence start: M if it
starts at word 0, else D (``msd``), DR (``mslr``), NM (``monotonicity``);
always R for ``leftright``.

**Which phrase pays.** Each direction has a block of features. The backward
block charges each phrase (the first one included) the score that its *own*
table row gives to its orientation relative to its predecessor. The forward
block charges the *previous* phrase's row, for the orientation of the phrase
that follows it; so the first phrase charges nothing to it, and the last
phrase's forward row is never used (Moses scores no orientation into the
sentence end). Only the feature of the orientation that occurred changes.

**Rows and offsets.** A direction's row is read from the table at its offset:
backward at 0, forward at 0 (forward alone) or after backward's block, whose
width is the number of orientations with ``allff`` and 1 with ``collapseff``
(Moses' ``CreateLRState``; with ``collapseff`` the forward row thus starts at
column 1 of the table, as in Moses). The score of orientation o is column
``offset + o``; with ``allff`` it goes to feature ``offset + o``, with
``collapseff`` to feature ``offset``.

**Missing pairs.** A pair absent from the table scores 0 (no cost), unless
``default-scores=p1,...`` was given: then orientation o scores ln(p_{offset+o})
(Moses' ``TransformScore``, not floored).

The search-facing form of a pair is :class:`ReorderingRow`: per direction, a
plain tuple of floats, one per orientation (see :meth:`ReorderingModel.row`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.io.phrase_table import PhrasePair
from fstdecode.io.reordering_table import ReorderingTable

__all__ = [
    "BACKWARD",
    "FORWARD",
    "LexicalReorderingError",
    "ReorderingConfig",
    "ReorderingModel",
    "ReorderingRow",
    "first_orientation",
    "orientation",
    "parse_reordering_type",
]

BACKWARD = "backward"
FORWARD = "forward"

#: Orientation classes -> number of orientations (Moses' GetNumberOfTypes).
ORIENTATIONS = {"msd": 3, "mslr": 4, "monotonicity": 2, "leftright": 2}

#: Orientation names, by class, in column order.
ORIENTATION_NAMES = {
    "msd": ("monotone", "swap", "discontinuous"),
    "mslr": ("monotone", "swap", "discontinuous-left", "discontinuous-right"),
    "monotonicity": ("monotone", "non-monotone"),
    "leftright": ("right", "left"),
}

_DIRECTIONS = {"backward": (BACKWARD,), "unidirectional": (BACKWARD,), "forward": (FORWARD,),
               "bidirectional": (BACKWARD, FORWARD)}
_PREFIXES = {"phrase", "wbe"}
_CONDITIONS = {"f", "fe"}

# Orientation codes (LRModel::ReorderingType).
M, S, NM, D, DL, DR, R, L = 0, 1, 1, 2, 2, 3, 0, 1


class LexicalReorderingError(FstdecodeError):
    """A reordering type, table or default-scores setting that fstdecode cannot use."""


@dataclass(frozen=True)
class ReorderingConfig:
    """A parsed ``type=`` string (see the module docstring).

    Invariant: ``classes`` is a key of :data:`ORIENTATIONS`; ``directions`` is
    ``(backward,)``, ``(forward,)`` or ``(backward, forward)``, in feature order.
    """

    type_string: str
    classes: str
    directions: tuple[str, ...]
    condition: str
    collapse: bool

    @property
    def num_orientations(self) -> int:
        return ORIENTATIONS[self.classes]

    @property
    def block(self) -> int:
        """Features per direction: the orientations, or 1 with ``collapseff``."""
        return 1 if self.collapse else self.num_orientations

    @property
    def num_features(self) -> int:
        """Moses' GetNumScoreComponents: one block per direction."""
        return self.block * len(self.directions)

    def offset(self, direction: str) -> int:
        """Where ``direction``'s row starts in the table (and its block in the features)."""
        return self.directions.index(direction) * self.block

    @property
    def table_columns(self) -> int:
        """The least number of table columns the rows read (the last offset + the orientations)."""
        return self.offset(self.directions[-1]) + self.num_orientations

    def feature_index(self, direction: str, orient: int) -> int:
        """The feature that orientation ``orient`` of ``direction`` is added to."""
        base = self.offset(direction)
        return base if self.collapse else base + orient

    def feature_names(self) -> tuple[str, ...]:
        """Human names of the features, e.g. ``backward-monotone`` (``backward`` when collapsed)."""
        names = []
        for direction in self.directions:
            if self.collapse:
                names.append(direction)
            else:
                names.extend(f"{direction}-{o}" for o in ORIENTATION_NAMES[self.classes])
        return tuple(names)


def parse_reordering_type(text: str, where: str = "") -> ReorderingConfig:
    """Parse a Moses reordering type string as Moses' LRModel constructor does.

    Raises LexicalReorderingError (prefixed with ``where``, e.g. ``"moses.ini:12: "``) for
    ``hier`` (not supported), an unknown word, or a missing orientation class or conditioning.
    """
    classes, directions, condition, collapse = None, (BACKWARD,), None, False
    for part in text.split("-"):
        if part == "hier":
            raise LexicalReorderingError(
                f"{where}reordering type {text!r}: hierarchical reordering (hier) is not supported; "
                "use a phrase-based or wbe table (type=wbe-... or phrase-...)"
            )
        if part in _PREFIXES:
            continue
        if part in ORIENTATIONS:
            classes = part
        elif part in _DIRECTIONS:
            directions = _DIRECTIONS[part]
        elif part in _CONDITIONS:
            condition = part
        elif part in ("allff", "collapseff"):
            collapse = part == "collapseff"
        else:
            raise LexicalReorderingError(
                f"{where}reordering type {text!r}: unknown part {part!r}; expected msd, mslr, "
                "monotonicity, leftright, backward, forward, bidirectional, unidirectional, f, fe, "
                "allff, collapseff, wbe or phrase"
            )
    if classes is None:
        raise LexicalReorderingError(
            f"{where}reordering type {text!r}: name the orientation classes (msd, mslr, monotonicity or leftright)"
        )
    if condition is None:
        raise LexicalReorderingError(f"{where}reordering type {text!r}: name the conditioning (f or fe)")
    return ReorderingConfig(text, classes, directions, condition, collapse)


def first_orientation(config: ReorderingConfig, start: int) -> int:
    """The orientation of the first phrase (source start ``start``, 0-based) against the sentence start."""
    if config.classes == "leftright":
        return R
    if start == 0:
        return M
    return {"msd": D, "mslr": DR, "monotonicity": NM}[config.classes]


def orientation(config: ReorderingConfig, prev: tuple[int, int], cur: tuple[int, int]) -> int:
    """The orientation of span ``cur`` after span ``prev`` (0-based inclusive ``(start, end)``)."""
    if config.classes == "leftright":
        return R if prev[1] <= cur[0] else L
    if cur[0] == prev[1] + 1:
        return M
    if config.classes == "monotonicity":
        return NM
    if prev[0] == cur[1] + 1:
        return S
    if config.classes == "msd":
        return D
    return DR if cur[0] > prev[1] else DL


@dataclass(frozen=True)
class ReorderingRow:
    """What one phrase pair contributes, per orientation (unweighted ln scores).

    ``backward[o]``: charged when the pair itself has orientation o (empty
    without a backward direction); ``forward[o]``: charged when the *next*
    phrase has orientation o relative to this pair (empty without forward).
    """

    backward: tuple[float, ...]
    forward: tuple[float, ...]


@dataclass(frozen=True)
class ReorderingModel:
    """A lexicalized reordering feature: its configuration, table and default scores.

    Invariant: ``table.num_scores >= config.table_columns`` (or the table is
    empty); ``default_scores`` is None or holds ``config.num_features`` ln
    values. ``name`` is the moses.ini feature name (``LexicalReordering0``).
    """

    config: ReorderingConfig
    table: ReorderingTable
    default_scores: tuple[float, ...] | None = None
    name: str = "LexicalReordering0"

    def __post_init__(self) -> None:
        cfg = self.config
        if self.table.num_scores and self.table.num_scores < cfg.table_columns:
            raise LexicalReorderingError(
                f"{self.table.path}: the table has {self.table.num_scores} probabilities per line but "
                f"type {cfg.type_string!r} reads {cfg.table_columns}"
            )
        if self.table.conditioned_on_target != (cfg.condition == "fe"):
            raise LexicalReorderingError(
                f"{self.table.path}: table read with the wrong conditioning for type {cfg.type_string!r}"
            )
        if self.default_scores is not None:
            if len(self.default_scores) != cfg.num_features:
                raise LexicalReorderingError(
                    f"default-scores has {len(self.default_scores)} value(s) but type {cfg.type_string!r} "
                    f"has {cfg.num_features} feature(s)"
                )
            if len(self.default_scores) < cfg.table_columns:
                raise LexicalReorderingError(
                    f"default-scores with type {cfg.type_string!r}: collapseff reads default scores past "
                    "the last feature (as Moses would); give no default-scores with collapseff"
                )

    @property
    def num_features(self) -> int:
        return self.config.num_features

    def scores(self, pair: PhrasePair) -> tuple[float, ...] | None:
        """The table's ln scores of ``pair``, else the default scores, else None (no cost)."""
        found = self.table.lookup(pair.source, pair.target)
        return found if found is not None else self.default_scores

    def row(self, pair: PhrasePair) -> ReorderingRow:
        """The pair's per-orientation scores, per direction (zeros for a pair with no scores)."""
        cfg = self.config
        values = self.scores(pair)
        k = cfg.num_orientations

        def block(direction: str) -> tuple[float, ...]:
            if direction not in cfg.directions:
                return ()
            if values is None:
                return (0.0,) * k
            base = cfg.offset(direction)
            return tuple(values[base : base + k])

        return ReorderingRow(block(BACKWARD), block(FORWARD))

    def weighted(self, row: ReorderingRow, weights: Sequence[float]) -> ReorderingRow:
        """``row`` with each orientation's score times the weight of the feature it goes to."""
        cfg = self.config

        def scale(direction: str, values: tuple[float, ...]) -> tuple[float, ...]:
            return tuple(weights[cfg.feature_index(direction, o)] * v for o, v in enumerate(values))

        return ReorderingRow(scale(BACKWARD, row.backward), scale(FORWARD, row.forward))

    def features(self, spans: Sequence[tuple[int, int]], rows: Sequence[ReorderingRow]) -> tuple[float, ...]:
        """The feature values of a derivation: its phrases' source spans and rows, in target order."""
        cfg = self.config
        out = [0.0] * cfg.num_features
        for i, cur in enumerate(spans):
            o = first_orientation(cfg, cur[0]) if i == 0 else orientation(cfg, spans[i - 1], cur)
            if rows[i].backward:
                out[cfg.feature_index(BACKWARD, o)] += rows[i].backward[o]
            if i > 0 and rows[i - 1].forward:
                out[cfg.feature_index(FORWARD, o)] += rows[i - 1].forward[o]
        return tuple(out)


def parse_default_scores(text: str, where: str = "") -> tuple[float, ...]:
    """``default-scores=p1,p2,...`` -> ln values (Moses' TransformScore, not floored); each p must be > 0."""
    out = []
    for token in text.split(","):
        try:
            p = float(token)
        except ValueError:
            raise LexicalReorderingError(f"{where}default-scores: {token!r} is not a number") from None
        if not math.isfinite(p) or p <= 0.0:
            raise LexicalReorderingError(f"{where}default-scores: {token!r} must be a probability > 0")
        out.append(math.log(p))
    return tuple(out)
