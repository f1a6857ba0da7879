"""The Python R's completion bounds: what a signature state of the pruned R can still score.

:func:`tape_bounds` gives :class:`fstdecode.fst.reorder.build_reordering` (the Python
reference R builder, an oracle of the native one) the bounds the core's ``ExactBounds`` holds
(native/exact.h): lemmas 1 and 2 of docs/exact.md (the contexts that may precede a phrase, and
the LM score a phrase can get after them), applied to the tapes of signature states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fstdecode.problem.problem import Option, SearchProblem
from fstdecode.statespace.ngram import joined


def may_precede(q: Option, s: int, d: int) -> bool:
    """docs/exact.md, lemma 1: q may be the last phrase before one that starts at s."""
    return abs(q.t + 1 - s) <= d and (q.t < s or q.s > s)


def join(problem: SearchProblem, context: tuple[int, ...], opt: Option) -> tuple[tuple[int, ...], float]:
    """The context after appending ``opt`` to the ``<s>`` tape ending in ``context``, and the join's LM score."""
    sig, score = joined(problem, (0, (), 0, context), opt, None, True)
    return sig[3], score


def prefix_score(problem: SearchProblem, context: tuple[int, ...], words: tuple[int, ...], k: int) -> float:
    """The weighted LM scores of the first min(|words|, K) words after ``context`` (no minimisation)."""
    seq = list(context)
    total = 0.0
    for i in range(min(len(words), k)):
        have = len(seq)
        size = min(k, have)
        total += problem.ngram(tuple(seq[have - size:]), words[i])
        seq.append(words[i])
    return total


def end_charge(problem: SearchProblem, words: tuple[int, ...], k: int) -> float:
    """The backoffs charged when a phrase's last K words are minimised (its join's part that
    depends on the phrase alone, when it has K words or more)."""
    context = tuple(words[-k:])
    total = 0.0
    while context and not problem.extends(context):
        total += problem.backoff(context)
        context = context[1:]
    return total


def contexts(problem: SearchProblem) -> tuple[dict[int, set], list[set]]:
    """docs/exact.md, lemma 1: ``after[id(q)]`` and ``before[s]``, the least fixpoint."""
    n, k = problem.n, problem.order - 1
    d = min(problem.d, n + 2)
    bos = (problem.bos,)
    options = [q for a in range(1, n + 1) for q in problem.by_start[a]]
    preceders = [[q for q in options if may_precede(q, s, d)] for s in range(n + 1)]
    after: dict[int, set] = {id(q): set() for q in options}
    for q in options:
        if len(q.words) >= k:
            after[id(q)].add(join(problem, bos, q)[0])
    before: list[set] = [set() for _ in range(n + 1)]
    changed = True
    while changed:
        changed = False
        for s in range(1, n + 1):
            here = before[s]
            if s - 1 <= d:
                here.add(bos)
            for q in preceders[s]:
                here |= after[id(q)]
            for q in problem.by_start[s]:
                if len(q.words) >= k:
                    continue
                got = after[id(q)]
                for m in list(here):
                    c = join(problem, m, q)[0]
                    if c not in got:
                        got.add(c)
                        changed = True
    return after, before


@dataclass(frozen=True)
class TapeBounds:
    """Bounds for other state spaces (the signature states of the cascade's pruned R,
    :func:`fstdecode.fst.reorder.build_reordering`), as the core's ExactBounds holds them:
    ``before[s]`` (1 <= s <= n + 1) maps each LM context that may precede a phrase starting at s
    (s = n + 1: ``</s>``) to its *lift*, the largest backoff charge (at least 0) of the
    minimisation that made it, over the phrases that may precede s and the contexts before them
    (a junction's charge is paid with the junction or before it); ``eos`` is the best ``</s>``
    score after them, charge included; ``suffix[a]`` is the best segmentation of a..n by
    γ(p) = ŵ(p) + :meth:`tape` of p's first words at s(p)."""

    before: list[dict[tuple[int, ...], float]]
    suffix: list[float]
    eos: float
    k: int

    def tape(self, problem: SearchProblem, s: int, words: tuple[int, ...]) -> float:
        """An upper bound on the LM scores a tape starting at s gets for its first ``words`` (at
        most K, those lacking left context) once something precedes it, charge included."""
        return max((lift + prefix_score(problem, m, words, self.k) for m, lift in self.before[s].items()), default=-math.inf)


def tape_bounds(problem: SearchProblem) -> TapeBounds:
    """The :class:`TapeBounds` of a problem (the same values as the core's)."""
    n, k = problem.n, problem.order - 1
    d = min(problem.d, n + 2)
    _, before = contexts(problem)
    bos = (problem.bos,)
    options = [q for a in range(1, n + 1) for q in problem.by_start[a]]
    charged: dict[int, dict[tuple[int, ...], float]] = {}

    def charges_of(q: Option) -> dict[tuple[int, ...], float]:  # context after q -> its largest charge
        got = charged.get(id(q))
        if got is None:
            got = charged[id(q)] = {}
            if len(q.words) >= k:
                got[join(problem, bos, q)[0]] = max(0.0, end_charge(problem, q.words, k))
            else:
                for m in before[q.s]:
                    c, score = join(problem, m, q)
                    ch = max(0.0, score - prefix_score(problem, m, q.words, k))
                    got[c] = max(got.get(c, ch), ch)
        return got

    lifted: list[dict[tuple[int, ...], float]] = [{} for _ in range(n + 2)]
    for s in range(1, n + 2):
        here = lifted[s]
        if (s - 1 <= d) if s <= n else n == 0:
            here[bos] = 0.0
        for q in options:
            if may_precede(q, s, d) if s <= n else problem.end - q.t - 1 <= d:
                for c, ch in charges_of(q).items():
                    here[c] = max(here.get(c, ch), ch)
    eos = max((lift + prefix_score(problem, m, (problem.eos,), k) for m, lift in lifted[n + 1].items()), default=-math.inf)
    tb = TapeBounds(lifted, [-math.inf] * (n + 2), eos, k)
    tb.suffix[n + 1] = 0.0
    for a in range(n, 0, -1):
        tb.suffix[a] = max(
            (o.score + tb.tape(problem, a, o.words[:k]) + tb.suffix[o.t + 1] for o in problem.by_start[a]),
            default=-math.inf,
        )
    return tb
