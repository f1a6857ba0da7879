"""A direct transcription of Figure 2 of Chang & Collins (2017), for reference.

States are ``(j, frozenset of signatures)``; every (ψ1, p, ψ2) of Section
4.2.1 is built and *then* filtered with ``valid()`` (Figure 5), exactly as
the figure reads. It is slow on purpose: the benchmark measures
:mod:`fstdecode.search.signature_dp` against it, and the tests use it as one
more independent solver. Best score only (no derivation).
"""

from __future__ import annotations

from fstdecode.problem.problem import SearchError, SearchProblem, no_derivation_message
from fstdecode.statespace.signature import valid

PHI = None


def transitions(problem: SearchProblem, j: int, sigs: frozenset):
    """δ(T) and τ(T, Δ) of Section 4.2.1: yields (new state, score(Δ)) before valid()."""
    d, n, eta, lam = problem.d, problem.end, problem.eta, problem.bigram
    for p in problem.by_start[j + 1]:
        for psi1 in [PHI, *sigs]:
            if psi1 is not PHI and not (abs(psi1[2] + 1 - p.s) <= d and psi1[2] != n):
                continue
            for psi2 in [PHI, *sigs]:
                if psi2 is not PHI and not (abs(p.t + 1 - psi2[0]) <= d and psi2[0] != 0):
                    continue
                if psi1 is not PHI and psi1 == psi2:
                    continue
                score = p.score  # Figure 4
                s, ws, t, wt = p.s, p.first, p.t, p.last
                if psi1 is not PHI:
                    score += lam(psi1[3], p.first) - eta * abs(psi1[2] + 1 - p.s)
                    s, ws = psi1[0], psi1[1]
                if psi2 is not PHI:
                    score += lam(p.last, psi2[1]) - eta * abs(p.t + 1 - psi2[0])
                    t, wt = psi2[2], psi2[3]
                new = frozenset(x for x in sigs if x != psi1 and x != psi2) | {(s, ws, t, wt)}
                yield (p.t, new), score


def best_score(problem: SearchProblem) -> tuple[float, int, int]:
    """(α of the goal state, states, transitions tried) by Figure 2 verbatim."""
    start = (0, frozenset({(0, problem.bos, 0, problem.bos)}))
    alpha = {start: 0.0}
    layers: list[list] = [[] for _ in range(problem.end + 1)]
    layers[0].append(start)
    tried = 0
    for j in range(problem.end):
        for state in layers[j]:
            for new, score in transitions(problem, j, state[1]):
                tried += 1
                if not valid(new[0], tuple(new[1]), problem.d):
                    continue
                total = alpha[state] + score
                if new not in alpha:
                    alpha[new] = total
                    layers[new[0]].append(new)
                elif total > alpha[new]:
                    alpha[new] = total
    goal = (problem.end, frozenset({(0, problem.bos, problem.end, problem.eos)}))
    if goal not in alpha:
        raise SearchError(no_derivation_message(problem.d))
    return alpha[goal], len(alpha), tried
