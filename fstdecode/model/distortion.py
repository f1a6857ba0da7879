"""The two distortion semantics: Chang & Collins' (``paper``) and Moses' (``moses``).

Source positions are 0-based and inclusive; a derivation is its phrases'
source spans ``(s, t)`` in target order; ``<s>`` ends at −1. A jump is
``|t_prev + 1 − s|``.

``paper`` (Chang & Collins 2017, Definition 2):
  every jump, *including the final jump into* ``</s>`` (which starts at n),
  is at most d; the Distortion feature is minus the sum of all those jumps.

``moses`` (Moses' ``SearchNormal::ProcessOneHypothesis`` and
``DistortionScoreProducer``):
  a phrase [s, t] may follow a hypothesis whose last phrase ends at
  ``t_prev`` and whose first uncovered word is g when

  1. its jump ``|t_prev + 1 − s|`` is at most d, and
  2. if it does not start at the first gap (s ≠ g): ``t + 1 − g ≤ d``, so
     that the jump back to g stays within the limit.

  Nothing is checked or charged at the end: there is no jump into ``</s>``
  (with ``[early-distortion-cost]`` Moses' total does include it; see
  :func:`charges_final_jump`).

Two examples (:data:`EXAMPLES`, checked by the tests):

* n = 5, d = 3, [2,3] [1,1] [0,0] [4,4]: jumps 2, 3, 2, 3 and a final 0, all
  at most 3, so it is legal under ``paper`` (distortion −10). Under ``moses``
  the first phrase leaves word 0 behind with ``3 + 1 − 0 = 4 > 3``: illegal.
* n = 3, d = 2, [0,0] [2,2] [1,1]: legal under both, but ``paper`` charges
  the final jump |1 + 1 − 3| = 1 (distortion −4) and ``moses`` does not (−3).

Under ``moses`` the final jump never exceeds d − 1 anyway: the phrase that
covers the last word either completes the coverage (final jump 0) or leaves
a first gap g with ``n − g ≤ d``, and every later phrase ends at or after g.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

__all__ = [
    "EXAMPLES",
    "SEMANTICS",
    "charges_final_jump",
    "derivation_violation",
    "final_allowed",
    "jump",
    "step_allowed",
]

#: ``--distortion-semantics`` values.
SEMANTICS = ("moses", "paper")


def jump(prev_end: int, start: int) -> int:
    """The distortion distance |prev_end + 1 − start| (``prev_end`` −1 at ``<s>``)."""
    return abs(prev_end + 1 - start)


def step_allowed(semantics: str, d: int, prev_end: int, first_gap: int, s: int, t: int) -> bool:
    """May the phrase [s, t] follow a prefix ending at ``prev_end`` whose first uncovered word is ``first_gap``?

    ``paper``: the jump is at most d. ``moses``: also ``t + 1 − first_gap <= d`` unless ``s == first_gap``.
    """
    if jump(prev_end, s) > d:
        return False
    return semantics == "paper" or s == first_gap or t + 1 - first_gap <= d


def final_allowed(semantics: str, d: int, prev_end: int, n: int) -> bool:
    """May a complete derivation whose last phrase ends at ``prev_end`` close with ``</s>``?"""
    return semantics == "moses" or jump(prev_end, n) <= d


def charges_final_jump(semantics: str, early_distortion_cost: bool) -> bool:
    """Does the Distortion feature include the jump into ``</s>``?

    Always under ``paper``; under ``moses`` only with ``[early-distortion-cost]``,
    whose per-phrase charges (Moore & Quirk) add up to the sum of jumps
    including the final one (the de-en gold model shows it).
    """
    return semantics == "paper" or early_distortion_cost


def derivation_violation(
    semantics: str, d: int, n: int, spans: Sequence[tuple[int, int]]
) -> str | None:
    """Why the spans (a complete derivation in target order) break the limit, or None if they do not.

    The spans must cover 0..n−1 exactly once (checked elsewhere).
    """
    covered = [False] * n
    gap, prev_end = 0, -1
    for i, (s, t) in enumerate(spans):
        if not step_allowed(semantics, d, prev_end, gap, s, t):
            if jump(prev_end, s) > d:
                return f"phrase {i} ({s}-{t}): jump {jump(prev_end, s)} exceeds the distortion limit {d}"
            return f"phrase {i} ({s}-{t}): it leaves word {gap} uncovered {t + 1 - gap} > {d} words back (Moses' rule)"
        for k in range(s, t + 1):
            covered[k] = True
        while gap < n and covered[gap]:
            gap += 1
        prev_end = t
    if not final_allowed(semantics, d, prev_end, n):
        return f"the final jump into </s>, {jump(prev_end, n)}, exceeds the distortion limit {d}"
    return None


@dataclass(frozen=True)
class Example:
    """A derivation on which the two semantics disagree."""

    n: int
    d: int
    spans: tuple[tuple[int, int], ...]
    paper_legal: bool
    moses_legal: bool
    paper_distortion: int
    moses_distortion: int


#: The examples of the module docstring (tests/unit/test_distortion.py checks them).
EXAMPLES = (
    Example(5, 3, ((2, 3), (1, 1), (0, 0), (4, 4)), True, False, -10, -10),
    Example(3, 2, ((0, 0), (2, 2), (1, 1)), True, True, -4, -3),
)
