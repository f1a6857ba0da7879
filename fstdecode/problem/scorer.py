"""The exact scorer: any derivation in, its feature vector and total out.

This is the single definition of the model score (see
:mod:`fstdecode.model.features`). Search modules compute the same quantity
incrementally; tests hold them to this function.
"""

from __future__ import annotations

from typing import Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.io.arpa import ArpaLM
from fstdecode.model.features import UNKNOWN_WORD_VALUE, Features, Weights
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


def jumps(n: int, phrases: Sequence[Phrase]) -> list[int]:
    """The distortion distances |t(p_{i-1}) + 1 − s(p_i)| of Chang & Collins' eq. (1).

    ``<s>`` ends at token −1 and ``</s>`` starts at token n, so the list has
    one entry per phrase plus the final jump into ``</s>``.
    """
    out = []
    prev_end = -1
    for p in phrases:
        out.append(abs(prev_end + 1 - p.start))
        prev_end = p.end
    out.append(abs(prev_end + 1 - n))
    return out


def features(
    n: int, phrases: Sequence[Phrase], lm: ArpaLM, num_tm: int
) -> Features:
    """The feature vector of the derivation ``phrases`` (in target order) of an n-token input."""
    check_coverage(n, phrases)
    target = [w for p in phrases for w in p.target]
    tm = [0.0] * num_tm
    for p in phrases:
        if len(p.pair.scores) != num_tm:
            raise ScorerError(f"phrase {p.pair.source} has {len(p.pair.scores)} scores, expected {num_tm}")
        for k, v in enumerate(p.pair.scores):
            tm[k] += v
    unknown = sum(len(p.pair.source) for p in phrases if p.pair.unknown)
    distortion = sum(jumps(n, phrases))
    return Features(
        lm=lm.score_sentence(target),
        tm=tuple(tm),
        distortion=-float(distortion) if distortion else 0.0,
        word=-float(len(target)),
        phrase=float(len(phrases)),
        unknown=UNKNOWN_WORD_VALUE * unknown if unknown else 0.0,
    )


def score(
    n: int, phrases: Sequence[Phrase], lm: ArpaLM, weights: Weights
) -> tuple[Features, float]:
    """The features and the model score ``weights · features`` of a derivation."""
    f = features(n, phrases, lm, len(weights.tm))
    return f, weights.total(f)
