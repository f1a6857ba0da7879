"""Exact search with bounds: the signature DP that skips states which cannot win.

A beam run first gives a real derivation and its score LB. Then Figure 2
runs, and a transition's result enters the chart only if an upper bound on
the best completion through it reaches LB:

    UB(T) = α(T) + β(T) + future(j) + max_a λ(</s> | a)

* β(T): the ``bound`` heuristic of :mod:`.signature_beam` — each open
  tape's start word at its best LM score after any word that can precede
  it, and the least distortion its open ends still cost;
* future(j): the best segmentation of x_{j+1}..x_n into phrases, each
  counted with ŵ(p) and its first word's best LM score after any word.

Every LM junction of a completion is counted once (into a tape start in β,
into a future phrase in future(j), into </s> last) at an upper bound, and
the distortion still to come is at least β's, so no state on an optimal
path is dropped: the result is exact. The bounds need a bigram LM and a
distortion weight >= 0; otherwise this is the plain DP.

With lexicalized reordering, every charge still to come is counted at its
best too (:mod:`fstdecode.statespace.reordering`): each future phrase's best
backward score and best forward score (or 0, if it ends up last), each open
tape's pending backward score and its last phrase's best forward score (or 0).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fstdecode.problem.problem import SearchLimitError, SearchProblem, SearchResult
from fstdecode.search import signature_beam, signature_dp
from fstdecode.search.base import SearchOptions, register
from fstdecode.search.signature_dp import DpOptions, minimize_field
from fstdecode.statespace.reordering import pending_bound, phrase_bound


@dataclass(frozen=True)
class BoundedOptions(SearchOptions):
    """``--method bounded``: the DP's options; the lower bound comes from a default beam."""

    minimize: bool = minimize_field()


def future_bounds(problem: SearchProblem, h: signature_beam.Heuristic) -> list[float]:
    """``future[j]``: an upper bound on the score of translating positions j+1..n (with a
    reordering model, each phrase's reordering charges at their best included)."""
    n = problem.n
    neg = float("-inf")
    lr = problem.reordering is not None
    best_span: dict[tuple[int, int], float] = {}
    for s in range(1, n + 1):
        for opt in problem.by_start[s]:
            v = opt.score + h.start_word(opt.first) + (phrase_bound(opt) if lr else 0.0)
            if v > best_span.get((s, opt.t), neg):
                best_span[(s, opt.t)] = v
    future = [neg] * (n + 1)
    future[n] = 0.0
    for j in range(n - 1, -1, -1):
        future[j] = max(
            (v + future[t] for (s, t), v in best_span.items() if s == j + 1 and future[t] > neg),
            default=neg,
        )
    return future


def search(problem: SearchProblem, options: BoundedOptions = BoundedOptions()) -> SearchResult:
    """The best derivation, exactly; ``states`` counts the states admitted (plus the beam's).

    Over budget, SearchLimitError carries the beam's derivation (not optimal).
    """
    nbest, max_states, minimize = options.nbest, options.max_states, options.minimize
    if problem.order != 2 or problem.eta < 0 or nbest != 1:
        return signature_dp.search(problem, DpOptions(nbest=nbest, max_states=max_states, minimize=minimize))
    h = signature_beam.Heuristic(problem, "bound")
    lower = signature_beam.search(problem, signature_beam.BeamOptions(max_states=max_states))
    lb = lower.hypotheses[0][0] - 1e-9
    future = future_bounds(problem, h)
    close = max(problem.ngram((a,), problem.eos) for a in h.preceders)

    end = problem.end
    pending = pending_bound if problem.reordering is not None else lambda sigs: 0.0

    def admit(t: int, sigs, score: float) -> bool:
        if t == end:  # complete: its score is exact
            return score >= lb
        return score + h(t, sigs) + pending(sigs) + future[t] + close >= lb

    try:
        chart = signature_dp.run(problem, max_states=max_states, minimize=minimize, admit=admit)
    except SearchLimitError as e:
        raise SearchLimitError(str(e), best=lower) from None
    found = signature_dp.result(problem, chart, optimal=True, empty="bound search lost the lower bound (a bug)")
    return replace(
        found,
        states=found.states + lower.states,
        transitions=found.transitions + lower.transitions,
    )


register(
    "bounded", BoundedOptions, function=search, exact=True,
    summary="the signature DP pruned by upper bounds (exact; bigram LMs)",
    moses_model=True,  # signature states with lexicalized reordering and Moses' gap rule (statespace.reordering, .gaprule)
)
