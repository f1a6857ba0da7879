"""Feature vectors and weights, with Moses' feature conventions.

The model score of a derivation is ``weights · features``:

============  ===========================================================
feature       value
============  ===========================================================
lm            ln p("<s> e </s>"), with ``</s>`` predicted
tm            one value per phrase-table column: the sum of ln(score)
distortion    −Σ |t(p_{i−1}) + 1 − s(p_i)|, including the jump into </s>
word          −(number of target words)
phrase        the number of phrases (unknown-word copies included)
unknown       −100 per unknown (copied-through) source word
lr            lexicalized reordering (moses.ini's ``LexicalReordering``):
              one value per feature of its type, the sum of the ln scores
              of the orientations that occurred
              (:mod:`fstdecode.model.lexical_reordering`); empty without one
============  ===========================================================

Under ``--distortion-semantics moses`` the distortion has no jump into
``</s>`` (unless ``[early-distortion-cost]``): :mod:`fstdecode.model.distortion`.
"""

from __future__ import annotations

import logging
import math
import numbers
import struct
from dataclasses import dataclass, field, fields, replace
from typing import Mapping, Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.io.moses_ini import UNTUNEABLE_BY_DEFAULT
from fstdecode.io.values import weight_too_large

#: Moses' UnknownWordPenalty feature value for one copied-through word.
UNKNOWN_WORD_VALUE = -100.0

#: The weight names accepted by ``--weight NAME=VALUE``.
WEIGHT_NAMES = ("lm", "tm", "distortion", "word", "phrase", "unknown", "lr")

#: The weights that take a comma list (one weight per feature of a multi-feature function).
_LIST_WEIGHTS = ("tm", "lr", "lms")

#: moses.ini feature kind -> the name of its field in :class:`Features` and :class:`Weights`.
MOSES_KINDS = {
    "KENLM": "lm",
    "PhraseDictionaryMemory": "tm",
    "ProbingPT": "tm",
    "PhraseDictionaryCompact": "tm",
    "PhraseDictionaryBinary": "tm",
    "Distortion": "distortion",
    "WordPenalty": "word",
    "PhrasePenalty": "phrase",
    "UnknownWordPenalty": "unknown",
    "LexicalReordering": "lr",
    # Moses' other LM kinds (old moses.ini files name them by type code); all score as the LM.
    "SRILM": "lm",
    "IRSTLM": "lm",
}

#: The kinds Moses makes stateful feature functions; it lists those first (``-show-weights``,
#: n-best lists), each group in moses.ini order.
STATEFUL_KINDS = frozenset({"KENLM", "SRILM", "IRSTLM", "Distortion", "LexicalReordering"})

#: Kinds that Moses does not tune unless their moses.ini line says ``tuneable=true``:
#: ``-show-weights`` prints ``NAME UNTUNEABLE`` and n-best lists leave them out.
UNTUNEABLE_KINDS = UNTUNEABLE_BY_DEFAULT

#: What ``-show-weights`` prints for a weight that ``tuneable-components=`` keeps fixed.
UNTUNEABLE_COMPONENT = "UNTUNEABLECOMPONENT"

_LOG = logging.getLogger("fstdecode")


class FeatureError(FstdecodeError):
    """A weight name or value that fstdecode cannot use."""


def assignment_name(assignment: str, aliases: Mapping[str, str] | None = None) -> str:
    """The generic weight name of a ``NAME=VALUE`` string (``--weight``): a Moses name of
    ``aliases`` (:func:`moses_names`) as it maps, else NAME lower-cased and stripped."""
    name = assignment.partition("=")[0].strip()
    return (aliases or {}).get(name) or name.lower()


def _check_finite(name: str, value: object) -> None:
    """Raise FeatureError unless ``value`` is a real number of magnitude at most :data:`MAX_WEIGHT`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise FeatureError(f"{name} weight {value!r} is not a number")
    if not math.isfinite(float(value)):
        raise FeatureError(f"{name} weight {value!r} is not a finite number; weights must be finite")
    why = weight_too_large(f"{name} weight", float(value))
    if why is not None:
        raise FeatureError(why)


@dataclass(frozen=True)
class Features:
    """One derivation's feature values (not weighted).

    Invariant: ``len(tm)`` equals the phrase table's number of score columns;
    ``len(lr)`` the lexicalized reordering model's number of features (0 without one).
    """

    lm: float
    tm: tuple[float, ...]
    distortion: float
    word: float
    phrase: float
    unknown: float
    lr: tuple[float, ...] = ()
    #: With several LMs, each LM's ln p of the translation (unweighted), in moses.ini order; ``lm``
    #: is then their weighted sum (the search's LM score, at LM weight 1). Empty with one LM.
    lms: tuple[float, ...] = ()

    def as_dict(self) -> dict[str, float | list[float]]:
        """The features by name, with the TM columns as a list (JSON output)."""
        return {
            "lm": self.lm,
            "tm": list(self.tm),
            "distortion": self.distortion,
            "word": self.word,
            "phrase": self.phrase,
            "unknown": self.unknown,
            **({"lr": list(self.lr)} if self.lr else {}),
            **({"lms": list(self.lms)} if self.lms else {}),
        }


@dataclass(frozen=True)
class Weights:
    """Feature weights; ``tm`` has one weight per phrase-table column.

    The defaults are those of a model with no moses.ini: every feature 1 but
    the word and phrase penalties, which are 0.

    ``lr`` has one weight per lexicalized reordering feature (empty without
    such a model).

    Invariant, checked on construction (so every way of making weights gets
    it): every weight is a finite number of magnitude at most :data:`MAX_WEIGHT`, else FeatureError; ``tm`` and ``lr`` are tuples.
    """

    lm: float = 1.0
    tm: tuple[float, ...] = field(default=(1.0,))
    distortion: float = 1.0
    word: float = 0.0
    phrase: float = 0.0
    unknown: float = 1.0
    lr: tuple[float, ...] = ()
    #: With several LMs, each LM's weight, in moses.ini order; ``lm`` is then 1 (the searches score
    #: the LMs' weighted sum, :class:`fstdecode.model.combined_lm.CombinedLM`). Empty with one LM.
    lms: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.tm, (tuple, list)):
            raise FeatureError(f"tm weights {self.tm!r}: give a tuple, one weight per phrase-table column")
        if not isinstance(self.lr, (tuple, list)):
            raise FeatureError(f"lr weights {self.lr!r}: give a tuple, one weight per reordering feature")
        object.__setattr__(self, "tm", tuple(self.tm))
        object.__setattr__(self, "lr", tuple(self.lr))
        object.__setattr__(self, "lms", tuple(self.lms))
        if self.lms and self.lm != 1.0:
            raise FeatureError(f"with several LMs (weights {self.lms}) the LM weight is 1, got {self.lm}")
        for f in fields(self):
            values = getattr(self, f.name) if f.name in _LIST_WEIGHTS else (getattr(self, f.name),)
            for value in values:
                _check_finite(f.name, value)

    def total(self, f: Features) -> float:
        """The model score ``Σ weight × feature``.

        Raises FeatureError when the TM or LR weights and features differ in length.
        """
        if len(f.tm) != len(self.tm):
            raise FeatureError(
                f"{len(self.tm)} tm weight(s) for {len(f.tm)} phrase-table score column(s); "
                "give one tm weight per column, e.g. --weight tm=1,1,1"
            )
        if len(f.lr) != len(self.lr):
            raise FeatureError(
                f"{len(self.lr)} lr weight(s) for {len(f.lr)} lexicalized reordering feature(s); "
                "give one lr weight per feature, e.g. --weight lr=0.3,0.3,0.3,0.3,0.3,0.3"
            )
        return (
            self.lm * f.lm
            + sum(w * v for w, v in zip(self.tm, f.tm))
            + self.distortion * f.distortion
            + self.word * f.word
            + self.phrase * f.phrase
            + self.unknown * f.unknown
            + sum(w * v for w, v in zip(self.lr, f.lr))
        )

    def with_tm_columns(self, n: int, origin: str | None = None) -> "Weights":
        """These weights with exactly ``n`` TM weights, one per phrase-table column.

        Same count: unchanged. A single weight is repeated for every column:
        silently when ``origin`` is None (the built-in default, no weight
        given), else with a warning on the ``fstdecode`` logger naming
        ``origin``, where that weight was given (e.g. ``"--weight tm=0.5"``).
        Any other count raises FeatureError.
        """
        k = len(self.tm)
        if k == n:
            return self
        given = f" ({origin})" if origin else ""
        if k != 1:
            raise FeatureError(
                f"{k} tm weights{given} for a phrase table with {n} score column(s); "
                "give one tm weight per column, or a single one to use for every column"
            )
        if origin is not None and n > 1:
            _LOG.warning(
                "%s: one tm weight for a phrase table with %d score columns; "
                "using it for every column",
                origin,
                n,
            )
        return replace(self, tm=self.tm * n)

    def override(
        self, assignments: list[str], aliases: Mapping[str, str] | None = None, flag: str = "--weight"
    ) -> "Weights":
        """Apply ``NAME=VALUE`` strings (the ``--weight`` flag); ``tm`` and ``lr`` take a comma list.

        ``aliases`` maps Moses' feature names (``KENLM0``, ``PhraseDictionaryMemory0``: the
        model's :func:`moses_names`) to the generic names; such a name is matched exactly (Moses'
        names are case-sensitive) and takes its values as a comma or space list.

        Raises FeatureError naming the bad assignment, after ``flag`` (the command's own flag:
        ``fstdecode moses`` gives ``-weight-overwrite``): unknown name, a value that is not a
        number, or one that is not finite (``nan``, ``inf``).
        """
        out = self
        for item in assignments:
            out = out._assign(item, aliases or {}, f"{flag} {item!r}")
        return out

    def _assign(self, item: str, aliases: Mapping[str, str], where: str) -> "Weights":
        """These weights with the one ``NAME=VALUE`` assignment ``item`` applied."""
        given, sep, value = item.partition("=")
        name = assignment_name(item, aliases)
        if not sep:
            raise FeatureError(f"{where}: expected NAME=VALUE, e.g. lm=0.5 or KENLM0=0.5")
        if name.startswith("lms:"):  # one LM of several, by its Moses name
            return self._assign_lm(where, int(name[4:]), value)
        if name.startswith("tm:"):  # one phrase table of several: its columns
            return self._assign_table(where, *(int(x) for x in name[3:].split(":")), value)
        if name not in WEIGHT_NAMES:
            moses = f"; Moses names of this model: {', '.join(aliases)}" if aliases else ""
            raise FeatureError(
                f"{where}: unknown weight name {given.strip()!r}; "
                f"known names: {', '.join(WEIGHT_NAMES)}{moses}"
            )
        if name == "lm" and self.lms:
            raise FeatureError(f"{where}: the model has {len(self.lms)} LMs; give each its weight by its "
                               f"name ({', '.join(n for n, g in aliases.items() if g.startswith('lms:'))})")
        tokens = value.replace(",", " ").split()  # a comma list (--weight) or a space list (Moses')
        try:
            parsed = tuple(float(v) for v in tokens)
        except ValueError:
            raise FeatureError(f"{where}: {value!r} is not a number") from None
        if not parsed:
            raise FeatureError(f"{where}: no value; write NAME=VALUE")
        if name not in _LIST_WEIGHTS and len(parsed) != 1:
            raise FeatureError(f"{where}: {given.strip()} takes one number; only tm and lr take a list")
        try:
            return replace(self, **{name: parsed if name in _LIST_WEIGHTS else parsed[0]})
        except FeatureError as err:
            raise FeatureError(f"{where}: {err}") from None


    def _assign_table(self, where: str, offset: int, width: int, value: str) -> "Weights":
        """These weights with one table's ``width`` columns from ``offset`` set by ``value`` (errors
        start with ``where``, the assignment as given)."""
        try:
            parsed = [float(v) for v in value.replace(",", " ").split()]
        except ValueError:
            raise FeatureError(f"{where}: {value!r} is not a list of numbers") from None
        if len(parsed) != width:
            raise FeatureError(f"{where}: the table has {width} score column(s); give one weight each")
        tm = list(self.tm)
        if len(tm) < offset + width:
            raise FeatureError(f"{where}: the model's tm weights have {len(tm)} columns")
        tm[offset:offset + width] = parsed
        try:
            return replace(self, tm=tuple(tm))
        except FeatureError as err:
            raise FeatureError(f"{where}: {err}") from None

    def _assign_lm(self, where: str, index: int, value: str) -> "Weights":
        """These weights with LM ``index``'s weight (of several) set by ``value`` (errors start
        with ``where``, the assignment as given)."""
        try:
            parsed = float(value.strip())
        except ValueError:
            raise FeatureError(f"{where}: {value!r} is not one number") from None
        lms = list(self.lms)
        lms[index] = parsed
        try:
            return replace(self, lms=tuple(lms))
        except FeatureError as err:
            raise FeatureError(f"{where}: {err}") from None


@dataclass(frozen=True)
class MosesFeature:
    """A feature function as Moses names it: ``name`` (``KENLM0``, or moses.ini's ``name=``) of a
    ``kind`` in :data:`MOSES_KINDS`."""

    name: str
    kind: str
    #: The feature's place among the model's LMs (moses.ini order), for a model with several.
    index: int = 0
    #: A phrase table's columns among the model's (several tables: alternative decoding paths):
    #: ``width`` values from ``offset``; 0 for all of them (one table).
    offset: int = 0
    width: int = 0
    #: moses.ini's ``tuneable=``; None: the kind's default (all but :data:`UNTUNEABLE_KINDS`).
    tune: bool | None = None
    #: moses.ini's ``tuneable-components=``: whether each value is tuned; (): all of them.
    components: tuple[bool, ...] = ()

    @property
    def tuneable(self) -> bool:
        """Whether Moses tunes the feature (FeatureFunction::IsTuneable): ``-show-weights`` prints
        its weights (else ``NAME UNTUNEABLE``) and the n-best lists its tuned values. Its weight
        counts in decoding either way."""
        return self.kind not in UNTUNEABLE_KINDS if self.tune is None else self.tune

    @property
    def in_nbest(self) -> bool:
        """Whether n-best lists (and the server's ``fvals``) print the feature: it is tuneable and
        has a tuned value (Moses' OutputAllFeatureScores: IsTuneable, HasTuneableComponents)."""
        return self.tuneable and (not self.components or any(self.components))

    def tuned(self, values: Sequence[float]) -> tuple[float, ...]:
        """The values (one per feature value, in order) of the tuned components alone, as n-best
        lists print them (Moses' OutputFeatureScores skips a component that is not tuneable)."""
        if not self.components:
            return tuple(values)
        return tuple(v for v, keep in zip(values, self.components) if keep)

    def values(self, of: Features | Weights) -> tuple[float, ...]:
        """This feature's values in ``of`` (feature values or weights): one, or one per TM column;
        an LM's own value (or weight) when the model has several (``of.lms``)."""
        field_name = MOSES_KINDS[self.kind]
        if field_name == "lm" and of.lms:
            return (of.lms[self.index],)
        if field_name == "tm" and self.width:
            return tuple(of.tm[self.offset:self.offset + self.width])
        value = getattr(of, field_name)
        return tuple(value) if isinstance(value, tuple) else (value,)


def moses_order(features: Sequence[MosesFeature]) -> tuple[MosesFeature, ...]:
    """Moses' order of feature functions: the stateful ones, then the stateless, each in the given
    (moses.ini) order."""
    return tuple(f for f in features if f.kind in STATEFUL_KINDS) + tuple(
        f for f in features if f.kind not in STATEFUL_KINDS
    )


def moses_layout(declared: Sequence[MosesFeature], weights: Weights) -> tuple[MosesFeature, ...]:
    """The features of a model in Moses' order: the ``declared`` ones (moses.ini's ``[feature]``
    lines of kinds in :data:`MOSES_KINDS`), plus each kind not declared that still counts, under
    Moses' default name (``KIND0``): the LM, TM, word penalty and unknown-word penalty always,
    distortion and the phrase penalty when their weight is not 0.

    Without a moses.ini (``declared`` empty) this is ``KENLM0 Distortion0 WordPenalty0
    [PhrasePenalty0] UnknownWordPenalty0 PhraseDictionaryMemory0``.
    """
    covered = {MOSES_KINDS[f.kind] for f in declared if f.kind in MOSES_KINDS}
    extra = []
    for kind in ("KENLM", "Distortion", "WordPenalty", "PhrasePenalty", "UnknownWordPenalty", "PhraseDictionaryMemory"):
        optional = kind in ("Distortion", "PhrasePenalty")
        if MOSES_KINDS[kind] not in covered and (not optional or getattr(weights, MOSES_KINDS[kind]) != 0.0):
            extra.append(MosesFeature(f"{kind}0", kind))
    return moses_order([*declared, *extra])


def moses_weight(value: float) -> str:
    """A weight as Moses prints it (``-show-weights``): Moses holds weights as 32-bit floats
    (``Scan<float>``), printed fixed with 6 decimals (``FixPrecision(cout, 6)``); so the value is
    rounded to a float first: -0.0660525 prints as -0.066052 (the double would print -0.066053).
    A weight's magnitude is at most MAX_WEIGHT (1e20), within a float's range."""
    single: float = struct.unpack("f", struct.pack("f", value))[0]
    return f"{single:.6f}"


def show_weights(layout: Sequence[MosesFeature], weights: Weights) -> list[str]:
    """Moses' ``-show-weights`` lines (moses/Util.cpp ShowWeights, PrintFeatureWeight), in
    ``layout`` order (:func:`moses_layout`): ``NAME= w1 w2 ...`` (:func:`moses_weight`) per
    tuneable feature, with ``UNTUNEABLECOMPONENT`` in place of each weight that
    ``tuneable-components=`` keeps fixed, and ``NAME UNTUNEABLE`` for a feature that is not tuneable."""
    out = []
    for f in layout:
        if f.tuneable:
            keep = f.components or (True,) * len(f.values(weights))
            out.append(f"{f.name}=" + "".join(
                f" {moses_weight(v) if tuned else UNTUNEABLE_COMPONENT}" for v, tuned in zip(f.values(weights), keep)
            ))
        else:
            out.append(f"{f.name} UNTUNEABLE")
    return out


#: Moses' older default names (moses.ini files of 2013 and ``mert-moses.pl`` runs of that time):
#: ``LM0``, ``TranslationModel0``; accepted by ``--weight`` beside a model's own names.
_LEGACY_NAMES = {"LM0": "lm", "TranslationModel0": "tm"}


def _generic(f: MosesFeature, several_lms: bool) -> str:
    """The generic weight name a Moses feature's weights set: ``lms:K`` for one of several LMs,
    ``tm:OFFSET:WIDTH`` for one of several tables, else its kind's (``lm``, ``tm``, ...)."""
    kind = MOSES_KINDS[f.kind]
    if kind == "lm" and several_lms:
        return f"lms:{f.index}"
    if kind == "tm" and f.width:
        return f"tm:{f.offset}:{f.width}"
    return kind


def moses_names(declared: Sequence[MosesFeature]) -> dict[str, str]:
    """Moses' feature names that ``--weight`` takes for a model that declares ``declared`` (its
    moses.ini features of kinds in :data:`MOSES_KINDS`), each -> its generic weight name (``lm``,
    ``tm``, ...; ``lms:K`` for the K-th of several LMs): each declared feature's name (``KENLM0``,
    or its ``name=``), Moses' default name (``KIND0``) of each kind not declared, and Moses'
    legacy ``LM0`` / ``TranslationModel0``."""
    several = sum(1 for f in declared if MOSES_KINDS[f.kind] == "lm") > 1
    names = {f.name: _generic(f, several) for f in declared}
    covered = {MOSES_KINDS[f.kind] for f in declared}
    for kind in ("KENLM", "PhraseDictionaryMemory", "Distortion", "WordPenalty", "PhrasePenalty",
                 "UnknownWordPenalty", "LexicalReordering"):
        if MOSES_KINDS[kind] not in covered:
            names.setdefault(f"{kind}0", MOSES_KINDS[kind])
    for legacy, generic in _LEGACY_NAMES.items():
        if not (several and generic == "lm"):
            names.setdefault(legacy, generic)
    return names
