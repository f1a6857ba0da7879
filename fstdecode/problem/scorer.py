"""The exact scorer: any derivation in, its feature vector and total out.

This is the single definition of the model score (see
:mod:`fstdecode.model.features`). Search modules compute the same quantity
incrementally; tests hold them to this function.
"""

from __future__ import annotations

from typing import Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.io.arpa import ArpaLM
from fstdecode.model.distortion import charges_final_jump, derivation_violation
from fstdecode.model.combined_lm import CombinedLM
from fstdecode.model.features import UNKNOWN_WORD_VALUE, Features, Weights
from fstdecode.model.lexical_reordering import ReorderingModel
from fstdecode.problem.sentence import Phrase


class ScorerError(FstdecodeError):
    """A phrase sequence that is not a derivation of its source sentence."""


def check_coverage(n: int, phrases: Sequence[Phrase]) -> None:
    """Raise ScorerError unless ``phrases`` cover tokens ``0..n-1`` exactly once."""
    covered = [0] * n
    for p in phrases:
        if not 0 <= p.start <= p.end < n:
            raise ScorerError(f"phrase span {p.start}-{p.end} is outside a {n}-token sentence")
        for i in range(p.start, p.end + 1):
            covered[i] += 1
    bad = [i for i, c in enumerate(covered) if c != 1]
    if bad:
        raise ScorerError(f"tokens {bad} are not covered exactly once")


def jumps(n: int, phrases: Sequence[Phrase], final: bool = True) -> list[int]:
    """The distortion distances |t(p_{i-1}) + 1 − s(p_i)| of Chang & Collins' eq. (1).

    ``<s>`` ends at token −1 and ``</s>`` starts at token n, so the list has
    one entry per phrase plus, if ``final``, the final jump into ``</s>``.
    """
    out = []
    prev_end = -1
    for p in phrases:
        out.append(abs(prev_end + 1 - p.start))
        prev_end = p.end
    if final:
        out.append(abs(prev_end + 1 - n))
    return out


def check_distortion_limit(n: int, phrases: Sequence[Phrase], d: int, semantics: str = "paper") -> None:
    """Raise ScorerError unless the derivation obeys the distortion limit d under ``semantics``.

    ``paper``: every jump, the one into ``</s>`` included, is at most d. ``moses``:
    Moses' rule (:mod:`fstdecode.model.distortion`). The scorer itself does not
    check the limit (it scores any derivation); searches and tests call this.
    """
    check_coverage(n, phrases)
    why = derivation_violation(semantics, d, n, [(p.start, p.end) for p in phrases])
    if why is not None:
        raise ScorerError(f"not a derivation under the {semantics} distortion semantics: {why}")


def reordering_features(reordering: ReorderingModel, phrases: Sequence[Phrase]) -> tuple[float, ...]:
    """The lexicalized reordering features of the derivation ``phrases`` (in target order)."""
    rows = [reordering.row(p.pair) for p in phrases]
    return reordering.features([(p.start, p.end) for p in phrases], rows)


def features(
    n: int,
    phrases: Sequence[Phrase],
    lm: ArpaLM,
    num_tm: int,
    *,
    reordering: ReorderingModel | None = None,
    semantics: str = "paper",
    early_distortion_cost: bool = False,
) -> Features:
    """The feature vector of the derivation ``phrases`` (in target order) of an n-token input.

    The distortion includes the jump into ``</s>`` unless ``semantics`` is
    ``moses`` without ``early_distortion_cost``
    (:func:`fstdecode.model.distortion.charges_final_jump`); ``lr`` holds the
    reordering model's features (empty without one).
    """
    check_coverage(n, phrases)
    target = [w for p in phrases for w in p.target]
    tm = [0.0] * num_tm
    for p in phrases:
        if len(p.pair.scores) != num_tm:
            raise ScorerError(f"phrase {p.pair.source} has {len(p.pair.scores)} scores, expected {num_tm}")
        for k, v in enumerate(p.pair.scores):
            tm[k] += v
    unknown = sum(len(p.pair.source) for p in phrases if p.pair.unknown)
    distortion = sum(jumps(n, phrases, charges_final_jump(semantics, early_distortion_cost)))
    return Features(
        lm=lm.score_sentence(target),
        lms=lm.part_scores(target) if isinstance(lm, CombinedLM) else (),
        tm=tuple(tm),
        distortion=-float(distortion) if distortion else 0.0,
        word=-float(len(target)) + 0.0,  # no -0.0 for an empty line (Moses prints 0)
        phrase=float(len(phrases)),
        unknown=UNKNOWN_WORD_VALUE * unknown if unknown else 0.0,
        lr=reordering_features(reordering, phrases) if reordering is not None else (),
    )


def score(
    n: int,
    phrases: Sequence[Phrase],
    lm: ArpaLM,
    weights: Weights,
    *,
    reordering: ReorderingModel | None = None,
    semantics: str = "paper",
    early_distortion_cost: bool = False,
) -> tuple[Features, float]:
    """The features and the model score ``weights · features`` of a derivation (see :func:`features`)."""
    f = features(
        n, phrases, lm, len(weights.tm),
        reordering=reordering, semantics=semantics, early_distortion_cost=early_distortion_cost,
    )
    return f, weights.total(f)
