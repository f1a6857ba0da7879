"""The signature state space of Chang & Collins (2017), Sections 4.2–4.4.

A state is ``(j, sigs)``: every input position ``<= j`` is translated, and
``sigs`` holds one signature ``(s, w_s, t, w_t)`` per target-side "tape"
(maximal phrase sequence π_i of the sub-derivation H_j), sorted by ``s``.
Positions and words are integers as in :mod:`fstdecode.problem.problem`.

:func:`expand` yields the transitions ψ1 p ψ2 of Section 4.2.1 (new tape,
append, prepend, join) with their Figure 4 scores, keeping exactly those
whose result passes ``valid()`` of Figure 5 — but it never builds an
invalid state to throw it away: at the new position j' = t(p) a tape that
ends before j' − d must be ψ1 (the one extended), and a tape other than
``<s>``'s that starts before j' − d + 2 must be ψ2, so at most one tape can
play each role and the candidates are fixed before any state is built.

Both the exact DP (:mod:`fstdecode.search.signature_dp`) and the lazy
reordering automaton of the FST cascade walk this one definition.
"""

from __future__ import annotations

from typing import Iterator

from fstdecode.problem.problem import Option, SearchError, SearchProblem
from fstdecode.problem.sentence import Phrase

Sig = tuple[int, int, int, int]
Sigs = tuple[Sig, ...]

#: ψ index meaning φ (no tape).
PHI = -1


def start_state(problem: SearchProblem) -> Sigs:
    """T_1 of Figure 2: one tape holding ``<s>``."""
    return ((0, problem.bos, 0, problem.bos),)


def goal_state(problem: SearchProblem) -> Sigs:
    """The final state's signatures: one tape from ``<s>`` to ``</s>``."""
    return ((0, problem.bos, problem.end, problem.eos),)


def valid(j: int, sigs: Sigs, d: int) -> bool:
    """Figure 5: every tape ends at >= j − d, and every tape but <s>'s starts at >= j − d + 2."""
    for s, _, t, _ in sigs:
        if s != 0 and s < j - d + 2:
            return False
        if t < j - d:
            return False
    return True


Transition = tuple[int, Sigs, float, Option, int, int]


def final_charge(problem: SearchProblem, jump: int) -> float:
    """The distortion charge of the jump into ``</s>``: ``eta · jump``, or 0 under Moses' semantics
    without ``[early-distortion-cost]`` (:func:`fstdecode.model.distortion.charges_final_jump`)."""
    return problem.eta * jump if problem.charge_final else 0.0


def least_jumps(problem: SearchProblem, j: int, sigs: Sigs) -> int:
    """The least total jump that the open tapes ``sigs`` of a state at ``j`` are still charged.

    A tape ending at t < j is left by a jump of at least j − t, since what follows its end is a
    phrase placed after j, or ``</s>``; one starting at s > 0 is entered by a jump of at least
    j + 2 − s. Moses' semantics without early distortion cost charge no jump into ``</s>``: at
    j = n it leaves the ``<s>`` tape; before n it leaves whichever tape ends last, which may be
    any tape but ``<s>``'s (a phrase placed after j follows that one's end), so the largest of
    those tapes' leaving charges is not counted (native/statespace.h's ``least_jumps``)."""
    total = free = 0
    for sig in sigs:
        s, t = sig[0], sig[2]
        if s != 0:
            total += j + 2 - s
        if t >= j:
            continue
        if problem.charge_final or (s == 0 and j < problem.n):
            total += j - t
        elif s != 0:
            total += j - t
            free = max(free, j - t)
    return total - free


def tape_roles(sigs: Sigs, j: int, t: int, d: int) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The candidates for ψ1 and ψ2 (tape indices, or PHI) of a phrase p = (j+1, t, ·).

    Only ``s`` (index 0) and ``t`` (index 2) of each signature are read, so
    this serves signatures of any LM order. At j' = t, Figure 5 requires every
    tape to end at >= j' − d and every tape but <s>'s to start at >= j' − d + 2:
    a tape that ends too early must be ψ1 (the one p extends) and one that
    starts too early must be ψ2 (the one p is prepended to). None when no
    choice can make the new state valid. ψ2 must also satisfy the distortion
    limit for the jump t(p) -> s(ψ2); ψ1's jump j − t(ψ1) <= d always holds in
    a valid state.
    """
    lo_t = t - d
    lo_s = t - d + 2
    r = len(sigs)
    must1 = must2 = PHI
    for k in range(r):
        sg = sigs[k]
        if sg[2] < lo_t:
            if must1 != PHI:
                return None  # two expiring tapes, one phrase can extend only one
            must1 = k
        if sg[0] != 0 and sg[0] < lo_s:
            if must2 != PHI or must1 == k:
                return None
            must2 = k
    if must1 != PHI:
        cands1: tuple[int, ...] = (must1,)
    elif j + 1 >= lo_s:  # φ: p starts a tape at j + 1, which must be a valid start
        cands1 = (PHI,) + tuple(range(r))
    else:
        cands1 = tuple(range(r))
    if must2 != PHI:
        if t + 1 - sigs[must2][0] > d:
            return None
        return cands1, (must2,)
    return cands1, (PHI,) + tuple(k for k in range(r) if sigs[k][0] != 0 and t + 1 - sigs[k][0] <= d)


def role_choices(sigs: Sigs, j: int, t: int, d: int) -> Iterator[tuple[int, int]]:
    """Every pair (ψ1, ψ2) of :func:`tape_roles` candidates, a tape never playing both roles."""
    roles = tape_roles(sigs, j, t, d)
    if roles is None:
        return
    cands1, cands2 = roles
    for k1 in cands1:
        for k2 in cands2:
            if k1 != k2 or k1 == PHI:
                yield k1, k2


def expand(problem: SearchProblem, j: int, sigs: Sigs) -> Iterator[Transition]:
    """Every valid transition from state ``(j, sigs)``.

    Yields ``(t, new_sigs, delta, option, s1, s2)``: the new position
    j' = t(p), the new (valid) signatures, the Figure 4 score of the
    transition, the phrase, and the start positions of the tapes ψ1 and ψ2
    (``PHI`` for φ). Start positions identify tapes, since tapes cover
    disjoint spans.

    The ``</s>`` phrase is only appended to a lone tape: any other use
    leaves a state at position n + 1 that is not the goal.
    """
    d = problem.d
    end = problem.end
    eta = problem.eta
    lam = problem.junctions()
    r = len(sigs)
    for t, opts in problem.grouped[j + 1]:
        if t == end:
            if r == 1:
                s0, ws0, t0, wt0 = sigs[0]
                jump = end - t0 - 1
                if jump <= d:
                    row = lam[wt0]
                    pen = final_charge(problem, jump)
                    for opt in opts:
                        yield t, ((s0, ws0, end, opt.last),), opt.score + row[opt.first] - pen, opt, s0, PHI
            continue
        for k1, k2 in role_choices(sigs, j, t, d):
            if k1 != PHI:
                a = sigs[k1]
                s1, ns, nws = a[0], a[0], a[1]
                row1 = lam[a[3]]
                pen1 = eta * (j - a[2])  # |t(ψ1) + 1 − s(p)| with s(p) = j + 1 and t(ψ1) <= j
            else:
                s1, ns = PHI, j + 1
            # The other tapes, split around the new tape's start (sigs stay sorted by s).
            before = tuple(sg for k, sg in enumerate(sigs) if k != k1 and k != k2 and sg[0] < ns)
            after = tuple(sg for k, sg in enumerate(sigs) if k != k1 and k != k2 and sg[0] > ns)
            if k2 != PHI:
                b = sigs[k2]
                s2, nt, nwt, bws = b[0], b[2], b[3], b[1]
                pen2 = eta * (t + 1 - b[0])
            else:
                s2 = PHI
            for opt in opts:
                score = opt.score
                if k1 != PHI:
                    score += row1[opt.first] - pen1
                else:
                    nws = opt.first
                if k2 != PHI:
                    score += lam[opt.last][bws] - pen2
                    yield t, before + ((ns, nws, nt, nwt),) + after, score, opt, s1, s2
                else:
                    yield t, before + ((ns, nws, t, opt.last),) + after, score, opt, s1, s2


Step = tuple[Option, int, int]


def replay(steps: list[Step], bos: Option) -> Iterator[dict[int, list[Option]]]:
    """Rebuild the tapes along a path of transitions ``(option, s1, s2)``.

    ``bos`` is the ``<s>`` option that opens the first tape. Yields the tapes
    (start position -> options in target order) after each step; after the
    last step of a complete path there is one tape, from ``<s>`` to ``</s>``.
    Only ``option.s`` is read, so options need not carry words or scores.
    """
    tapes: dict[int, list[Option]] = {0: [bos]}
    for opt, s1, s2 in steps:
        if s1 == PHI and s2 == PHI:
            tapes[opt.s] = [opt]
        elif s2 == PHI:
            tapes[s1].append(opt)
        elif s1 == PHI:
            tapes[opt.s] = [opt] + tapes.pop(s2)
        else:
            tapes[s1] += [opt] + tapes.pop(s2)
        yield {s: list(v) for s, v in sorted(tapes.items())}


def phrases_of(problem: SearchProblem, steps: list[Step]) -> tuple[Phrase, ...]:
    """The phrases of a complete path, in target order (without <s> and </s>)."""
    tapes: dict[int, list[Option]] = {}
    for tapes in replay(steps, problem.bos_option):
        pass
    if len(tapes) != 1:
        raise SearchError(f"path ends with {len(tapes)} tapes; a complete path has one")
    (only,) = tapes.values()
    return tuple(o.phrase for o in only if o.phrase is not None)
