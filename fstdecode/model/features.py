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
============  ===========================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from fstdecode.errors import FstdecodeError

#: Moses' UnknownWordPenalty feature value for one copied-through word.
UNKNOWN_WORD_VALUE = -100.0

#: The weight names accepted by ``--weight NAME=VALUE``.
WEIGHT_NAMES = ("lm", "tm", "distortion", "word", "phrase", "unknown")


class FeatureError(FstdecodeError):
    """A weight name or value that fstdecode cannot use."""


@dataclass(frozen=True)
class Features:
    """One derivation's feature values (not weighted).

    Invariant: ``len(tm)`` equals the phrase table's number of score columns.
    """

    lm: float
    tm: tuple[float, ...]
    distortion: float
    word: float
    phrase: float
    unknown: float

    def as_dict(self) -> dict[str, float | list[float]]:
        """The features by name, with the TM columns as a list (JSON output)."""
        return {
            "lm": self.lm,
            "tm": list(self.tm),
            "distortion": self.distortion,
            "word": self.word,
            "phrase": self.phrase,
            "unknown": self.unknown,
        }


@dataclass(frozen=True)
class Weights:
    """Feature weights; ``tm`` has one weight per phrase-table column.

    The defaults are those of a model with no moses.ini: every feature 1 but
    the word and phrase penalties, which are 0.
    """

    lm: float = 1.0
    tm: tuple[float, ...] = field(default=(1.0,))
    distortion: float = 1.0
    word: float = 0.0
    phrase: float = 0.0
    unknown: float = 1.0

    def total(self, f: Features) -> float:
        """The model score ``Σ weight × feature``.

        Raises FeatureError when the TM weights and features differ in length.
        """
        if len(f.tm) != len(self.tm):
            raise FeatureError(
                f"{len(self.tm)} tm weight(s) for {len(f.tm)} phrase-table score column(s); "
                "give one tm weight per column, e.g. --weight tm=1,1,1"
            )
        return (
            self.lm * f.lm
            + sum(w * v for w, v in zip(self.tm, f.tm))
            + self.distortion * f.distortion
            + self.word * f.word
            + self.phrase * f.phrase
            + self.unknown * f.unknown
        )

    def with_tm_columns(self, n: int) -> "Weights":
        """These weights with ``n`` TM weights: a single default weight is repeated."""
        if len(self.tm) == n:
            return self
        if len(self.tm) == 1:
            return replace(self, tm=self.tm * n)
        raise FeatureError(
            f"{len(self.tm)} tm weights given but the phrase table has {n} score column(s)"
        )

    def override(self, assignments: list[str]) -> "Weights":
        """Apply ``NAME=VALUE`` strings (the ``--weight`` flag); ``tm`` takes a comma list.

        Raises FeatureError naming the bad assignment.
        """
        out = self
        for item in assignments:
            name, sep, value = item.partition("=")
            name = name.strip().lower()
            if not sep:
                raise FeatureError(f"--weight {item!r}: expected NAME=VALUE, e.g. lm=0.5")
            if name not in WEIGHT_NAMES:
                raise FeatureError(
                    f"--weight {item!r}: unknown weight name {name!r}; "
                    f"known names: {', '.join(WEIGHT_NAMES)}"
                )
            try:
                if name == "tm":
                    out = replace(out, tm=tuple(float(v) for v in value.split(",")))
                else:
                    out = replace(out, **{name: float(value)})
            except ValueError:
                raise FeatureError(f"--weight {item!r}: {value!r} is not a number") from None
        return out
