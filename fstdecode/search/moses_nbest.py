"""Moses' n-best lists, written by the native core in Moses' float arithmetic (native/moses_float.h).

Moses keeps every feature value in a C ``float`` and sums them hypothesis by hypothesis; an n-best
entry that passes through a lost recombination is scored as its ``TrellisPath`` does. The core
computes each entry's values and total so, from the stack search's result (its hypotheses and
their recombination winners), ranks the entries by those totals as Moses does, and writes the
lines; no Python object is made per entry. The rules, with the Moses source they follow, are in
the oracle that checks the core, :mod:`fstdecode.reference.moses_float`, and in
docs/moses-outputs.md.

:class:`MosesNbest` is the setting (the format of the lines) a :class:`~fstdecode.decoder.Decoder`
takes; :func:`supports` says which models the core's arithmetic knows (one LM, one phrase
table, each feature kind once); :class:`NbestWriter` writes one result's lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fstdecode._native import core as _core
from fstdecode.io.phrase_table import alignment_points
from fstdecode.model.features import MOSES_KINDS, UNKNOWN_WORD_VALUE
from fstdecode.model.lexical_reordering import BACKWARD, FORWARD

__all__ = ["MosesNbest", "NbestWriter", "moses_scoring", "supports"]

#: The core's code of each feature kind (MosesKind in native/moses_float.h), by field name.
KIND_CODES = {"lm": 0, "tm": 1, "distortion": 2, "word": 3, "phrase": 4, "unknown": 5, "lr": 6}

#: The core's code of a reordering row's kind (set_moses_reordering): none, the table's, default-scores.
_NO_ROW, _TABLE_ROW, _DEFAULT_ROW = 0, 1, 2


@dataclass(frozen=True)
class MosesNbest:
    """How a decoder's n-best lists are written, in Moses' n-best format and float arithmetic.

    ``labeled``: each feature's values follow its name (``-labeled-n-best-list``);
    ``segmentation``: `` ||| 0-1=0-1 ...`` (``-include-segmentation-in-n-best``); ``alignment``:
    `` ||| 0-0 1-1 `` (``-print-alignment-info-in-n-best``); ``mark_unknown``: ``UNK`` before an
    unknown word; ``start_id``: added to each line's id. ``derivations``: keep every derivation
    in the result as well (a caller that prints them), else only the best.
    """

    labeled: bool = True
    segmentation: bool = False
    alignment: bool = False
    mark_unknown: bool = False
    start_id: int = 0
    derivations: bool = False

    def core_format(self) -> Any:
        return _core.NbestFormat(labeled=self.labeled, segmentation=self.segmentation, alignment=self.alignment,
                                 mark_unknown=self.mark_unknown)


def supports(model: Any) -> bool:
    """Whether the core's arithmetic knows the model's features: one LM, one phrase table, each
    kind of :data:`~fstdecode.model.features.MOSES_KINDS` at most once, under Moses' distortion
    semantics (the paper's is not Moses' to print)."""
    layout = tuple(model.features)
    kinds = [MOSES_KINDS[f.kind] for f in layout]
    return (
        not model.weights.lms and not any(f.width for f in layout) and len(kinds) == len(set(kinds))
        and model.distortion_semantics == "moses"
    )


def moses_scoring(model: Any) -> Any:
    """The core's ``MosesScoring`` of a model :func:`supports`: its dense features in Moses' order
    (the model's layout), their weights as floats, and which values n-best lines print."""
    weights = model.weights
    kind, component, weight, names, printed = [], [], [], [], []
    for f in model.features:
        field = MOSES_KINDS[f.kind]
        values = f.values(weights)
        base = len(kind)
        for k, w in enumerate(values):
            kind.append(KIND_CODES[field])
            component.append(k)
            weight.append(float(w))
        if f.in_nbest:
            names.append(f.name)
            printed.append(list(f.tuned(tuple(range(base, base + len(values))))))
    back_c, back_col, fwd_c, fwd_col, lr_components = [], [], [], [], 0
    rm = model.reordering
    if rm is not None:
        cfg = rm.config
        lr_components = cfg.num_features
        for o in range(cfg.num_orientations):
            for direction, comps, cols in ((BACKWARD, back_c, back_col), (FORWARD, fwd_c, fwd_col)):
                inside = direction in cfg.directions
                comps.append(cfg.feature_index(direction, o) if inside else -1)
                cols.append(cfg.offset(direction) + o if inside else -1)
    return _core.MosesScoring(
        kind=kind, component=component, weight=weight, early_distortion=bool(model.early_distortion_cost),
        unknown_value=UNKNOWN_WORD_VALUE, lr_back_component=back_c, lr_back_column=back_col,
        lr_forward_component=fwd_c, lr_forward_column=fwd_col, lr_components=lr_components,
        names=names, printed=printed,
    )


def moses_reordering_width(rm: Any) -> int:
    """The width of Moses' reordering rows under the reordering model ``rm``: the table's columns
    or the default scores', whichever is more."""
    return max(rm.table.num_scores or 0, len(rm.default_scores or ()))


def reordering_values(rm: Any, pairs) -> tuple[list[float], list[int], int]:
    """Moses' reordering rows of ``pairs`` under the reordering model ``rm`` (the core's
    set_moses_reordering): each pair's table row (natural logs), else the model's default-scores,
    else none; flattened to a common width."""
    width = moses_reordering_width(rm)
    values: list[float] = []
    kinds: list[int] = []
    for pair in pairs:
        found = rm.table.lookup(pair.source, pair.target)
        row, code = (found, _TABLE_ROW) if found is not None else (
            (rm.default_scores, _DEFAULT_ROW) if rm.default_scores is not None else ((), _NO_ROW))
        values.extend(row)
        values.extend([0.0] * (width - len(row)))
        kinds.append(code)
    return values, kinds, width


class NbestWriter:
    """Writes results' n-best lines with the core (one per decoder: its model and weights)."""

    def __init__(self, model: Any, settings: MosesNbest) -> None:
        self.model = model
        self.settings = settings
        self.scoring = moses_scoring(model)
        self.format = settings.core_format()

    def lines(self, problem: Any, form: Any, result: Any, id: int, fields: bool = False) -> tuple[str, Any]:
        """The n-best lines of the core ``result`` of ``problem`` (whose core form is ``form``), line
        ``id``, and with ``fields`` each hypothesis' (feature field, total) in the result's order
        (the server's ``fvals``; else None): one pass of the core's arithmetic for both."""
        self.prepare(problem, form)
        text, listed = _core.moses_nbest(form.core, result, self.scoring, id + self.settings.start_id, self.format,
                                         fields)
        return text, None if listed is None else tuple(listed)

    def prepare(self, problem: Any, form: Any) -> None:
        """Give the core problem the values its PhraseIndex did not: all of them for options built
        in Python (``form.flat``), and the options' alignments when the lines print them. (A
        problem the core built from a :class:`~fstdecode.search.native.NativeTable` made with
        ``moses_values`` has its scores, words and reordering rows already.)"""
        core = form.core
        model = self.model
        if not form.flat and not self.settings.alignment:
            return
        phrases = [form.phrase(i) for i in range(core.option_count)]
        if form.flat:  # options built in Python: every value from them
            num_tm = len(model.weights.tm)
            scores: list[float] = []
            for p in phrases:
                scores.extend(p.pair.scores if len(p.pair.scores) == num_tm else [0.0] * num_tm)
            core.set_moses_scores(num_tm, scores, [1 if p.pair.unknown else 0 for p in phrases])
            core.set_moses_words(list(problem.vocab))
            if model.reordering is not None:
                values, kinds, width = reordering_values(model.reordering, [p.pair for p in phrases])
                core.set_moses_reordering(width, values, kinds)
        if self.settings.alignment:
            offsets, points = [0], []
            for p in phrases:
                for i, j in alignment_points(p.pair):
                    points += (i, j)
                offsets.append(len(points))
            core.set_moses_alignment(offsets, points)
