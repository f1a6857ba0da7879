"""Moses' distortion semantics in the signature state space (issue 13, §2).

Moses' gap rule (:mod:`fstdecode.model.distortion`): a phrase [s, t] placed
while g is the first word not yet covered must start at g or end within
``t + 1 − g <= d``. It reads g, which depends on every phrase placed before
it in target order, not only on its neighbour, so a signature state
``(s, w_s, t, w_t)`` alone cannot check it.

**The rule as a condition on pairs.** Write ``m(p) = min(s(p), t(p) + 1 − d)``.
For a complete derivation whose adjacent jumps are at most d, Moses' rule
holds for every phrase if and only if

    for every phrase p and every phrase q after p in target order: s(q) >= m(p).

(Proof: p's rule says that every word left of m(p) is covered before p. If
m(p) = s(p), the rule's first case, g = s(p); otherwise g > t(p) − d, its
second case. A word left of m(p) that is covered after p lies in some later
phrase q with s(q) < m(p); since every word is covered once, the words left
of m(p) are all covered before p exactly when no later q starts left of
m(p).) ``tests/unit/test_gaprule.py`` checks the equivalence against
:func:`~fstdecode.model.distortion.derivation_violation` on every ordering of
every segmentation of up to 7 words.

**The state.** Each signature carries two more entries, ``(…, M, lo)``: the
largest ``m(p)`` over its tape's phrases (``M``) and the smallest start
(``lo``). A transition ψ1 p ψ2 puts ψ1's phrases, then p, then ψ2's before
or after one another, so it is legal exactly when ``lo(ψ2) >= max(M(ψ1), m(p))``
(``s(p) >= M(ψ1)`` always holds: p starts at j + 1, right of every placed
word), and the new tape has ``M = max(M(ψ1), m(p), M(ψ2))`` and
``lo = min(lo(ψ1), s(p), lo(ψ2))``. Pairs within a tape were checked when
the tape was formed, so every pair of a complete derivation is checked once.

**Dead states.** A tape other than ``<s>``'s is entered by a phrase placed after j, whose m is
at least ``j + 2 − d``; a state with an open tape whose ``lo`` is smaller has no completion and
is not built (:func:`viable`).

**Merging.** An ``M`` is only ever compared with the ``lo`` of a tape that follows: one of the
state's open tapes (not ``<s>``'s, which nothing precedes), or a tape made later, whose ``lo``
is one of theirs or a start after j (and every ``M <= j``). So all that matters of ``M`` is which
open tapes' ``lo`` it exceeds, and :func:`canonical` stores it as the least such ``lo`` it does
not exceed (0 if it exceeds none, the largest plus one if it exceeds all); the ``<s>`` tape's
``lo`` is stored as 0. States that differ only in what can never matter merge. What the gap
entries cost in states is measured by ``scripts/gaprule_state_counts.py`` (docs/benchmarks.md).

**The final jump.** Moses charges no jump into ``</s>`` (without
``[early-distortion-cost]``): the base spaces charge it only when the problem does
(:func:`fstdecode.statespace.signature.final_charge`). Its limit check stays: under the gap
rule the final jump is at most d − 1 anyway (:mod:`fstdecode.model.distortion`).

Positions here are the search's (1-based; ``<s>`` is 0), in which ``m`` and
the rule read the same.
"""

from __future__ import annotations

from typing import Callable, Iterator

from fstdecode.problem.problem import Option, SearchProblem

#: ``(M, lo)`` of the ``<s>`` tape before its first phrase, and of the goal tape.
EMPTY = (0, 0)


def reach(d: int, opt: Option) -> int:
    """``m(p)``: every phrase after ``opt`` in target order must start at or right of this."""
    return min(opt.s, opt.t + 1 - d)


def start_state(problem: SearchProblem, base: tuple) -> tuple:
    """The start signatures with their gap entries: the ``<s>`` tape, nothing placed."""
    return tuple(sg + EMPTY for sg in base)


def goal_state(problem: SearchProblem, base: tuple) -> tuple:
    """The goal signatures with their gap entries: nothing can follow ``</s>``."""
    return tuple(sg + EMPTY for sg in base)


def joined(d: int, a: tuple | None, opt: Option, c: tuple | None) -> tuple[int, int] | None:
    """``(M, lo)`` of the tape ψ1 p ψ2 (``a``/``c`` the gap entries of ψ1 and ψ2, None for φ;
    ψ1's ``lo`` unused when it holds ``<s>``), or None when p or ψ1 may not precede ψ2."""
    m = reach(d, opt)
    if a is not None:
        m = max(m, a[0])
    if c is not None:
        if c[1] < m:
            return None
        m = max(m, c[0])
    lo = opt.s
    if a is not None:
        lo = min(lo, a[1])
    if c is not None:
        lo = min(lo, c[1])
    return m, lo


def viable(j: int, d: int, sigs: tuple) -> bool:
    """Can every open tape still be preceded by something? Each tape but ``<s>``'s is entered by a
    phrase p placed after j (tapes are joined only through such phrases), so its ``lo`` must be at
    least ``m(p) >= min(j + 1, j + 2 − d) = j + 2 − d`` (as Figure 5 asks its start to be)."""
    return all(sg[0] == 0 or sg[-1] >= j + 2 - d for sg in sigs)


def canonical(j: int, sigs: tuple) -> tuple:
    """``sigs`` (each ending with its ``(M, lo)``) with each ``M`` replaced by the least ``lo`` of an
    open tape that it does not exceed (0 when it exceeds none of them, one more than the largest
    when it exceeds them all), and the ``<s>`` tape's ``lo`` by 0 (see the module docstring)."""
    los = sorted({sg[-1] for sg in sigs if sg[0] != 0})
    out = []
    for sg in sigs:
        m = sg[-2]
        if not los or m <= los[0]:
            m = 0
        elif m > los[-1]:
            m = los[-1] + 1
        else:
            m = next(lo for lo in los if lo >= m)
        out.append(sg[:-2] + (m, 0 if sg[0] == 0 else sg[-1]))
    return tuple(out)


def expand(
    problem: SearchProblem, j: int, sigs: tuple, base: Callable[[SearchProblem, int, tuple], Iterator[tuple]]
) -> Iterator[tuple]:
    """The transitions of ``base`` (any expand of the signature space, LR included) from the state
    ``(j, sigs)`` that keep Moses' gap rule, with their tapes' gap entries. The contract of
    ``signature.expand``."""
    d, end = problem.d, problem.end
    inner = tuple(sg[:-2] for sg in sigs)
    gaps = {sg[0]: sg[-2:] for sg in sigs}
    for t, new, delta, opt, s1, s2 in base(problem, j, inner):
        if t == end:
            yield t, tuple(sg + EMPTY for sg in new), delta, opt, s1, s2
            continue
        gap = joined(d, gaps.get(s1), opt, gaps.get(s2))
        if gap is None:
            continue
        start = s1 if s1 in gaps else opt.s
        out = tuple(sg + (gap if sg[0] == start else gaps[sg[0]]) for sg in new)
        if not viable(t, d, out):
            continue
        yield t, canonical(t, out), delta, opt, s1, s2
