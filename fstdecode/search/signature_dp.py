"""The exact signature-state dynamic program of Chang & Collins (2017), Figure 2.

States are processed in order of j; transitions come from
:func:`fstdecode.statespace.signature.expand` (already filtered by ``valid()``).
Each state keeps its k best (score, backpointer) entries, so ``nbest=k``
returns the k best derivations, all distinct (a derivation is one path).

This is a reference oracle, not an engine a user can pick: ``--method dp`` is the native
core's (:mod:`fstdecode.search.native_signature`), and the tests hold its results to this one.
:class:`DpOptions`, the method's options, stays here: the native wrapper reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from fstdecode.problem.problem import SearchError, SearchLimitError, SearchProblem, SearchResult, no_derivation_message
from fstdecode.search.base import SearchOptions, option
from fstdecode.search.kbest import first, insert_best
from fstdecode.statespace.ngram import state_space
from fstdecode.statespace.signature import Sigs, Step, phrases_of

# A hypothesis: (score, backpointer); backpointer = (j, sigs, rank, option, s1, s2).
Hyp = tuple


def minimize_field() -> bool:
    """The ``minimize`` option of every method that walks LM states (a fresh dataclass field)."""
    return field(
        default=True,
        metadata=option("KenLM-style LM state minimisation (orders > 2); off only for experiments", cli=False),
    )


@dataclass(frozen=True)
class DpOptions(SearchOptions):
    """``--method dp``: the n-best size, the state budget and state minimisation."""

    minimize: bool = minimize_field()


@dataclass
class Chart:
    """``layers[j][sigs]``: the k best hypotheses of state (j, sigs), best first."""

    layers: list[dict[Sigs, list[Hyp]]]
    states: int
    transitions: int


def run(
    problem: SearchProblem,
    *,
    nbest: int = 1,
    max_states: int | None = None,
    minimize: bool = True,
    beam: Callable[[int, dict[Sigs, list[Hyp]]], dict[Sigs, list[Hyp]]] | None = None,
    admit: Callable[[int, Sigs, float], bool] | None = None,
) -> Chart:
    """Fill the chart in order of j; ``layers[end][goal]`` holds the result.

    Any LM order (:func:`fstdecode.statespace.ngram.state_space`); ``minimize``
    switches KenLM-style state minimisation for orders above 2. ``beam``,
    if given, is Section 5.1's beam(T_j): it selects the states of layer j
    to expand, once all of them are complete (every transition into layer j
    comes from an earlier layer). ``Chart.states`` then counts the states
    kept, ``Chart.transitions`` the transitions evaluated. ``admit(t, sigs,
    score)``, if given, must be True for a transition's result to enter the
    chart (a bound test; a state refused at one score may enter at a better one).
    Raises SearchLimitError once more than ``max_states`` states exist.
    """
    end = problem.end
    start, _, expand = state_space(problem, minimize)
    layers: list[dict[Sigs, list[Hyp]]] = [{} for _ in range(end + 1)]
    layers[0][start] = [(0.0, None)]
    states = 1
    transitions = 0
    kept = 0
    for j in range(end):
        if beam is not None:
            layers[j] = beam(j, layers[j])
            kept += len(layers[j])
        for sigs, hyps in layers[j].items():
            for t, new, delta, opt, s1, s2 in expand(problem, j, sigs):
                transitions += 1
                if admit is not None and not admit(t, new, hyps[0][0] + delta):
                    continue
                target = layers[t]
                entry = target.get(new)
                if entry is None:
                    states += 1
                    if max_states is not None and states > max_states:
                        raise SearchLimitError(f"more than {max_states} states (--max-states)")
                    target[new] = entry = []
                if nbest == 1:
                    score = hyps[0][0] + delta
                    if not entry or score > entry[0][0]:
                        entry[:] = [(score, (j, sigs, 0, opt, s1, s2))]
                else:
                    for rank, hyp in enumerate(hyps):
                        insert_best(entry, (hyp[0] + delta, (j, sigs, rank, opt, s1, s2)), nbest, first)
    return Chart(layers, states if beam is None else kept + len(layers[end]), transitions)


def backtrack(layers: list[dict[Sigs, list[Hyp]]], j: int, sigs: Sigs, rank: int) -> list[Step]:
    """The transitions ``(option, s1, s2)`` from the start state to hypothesis ``rank`` of (j, sigs)."""
    steps: list[Step] = []
    while True:
        _, bp = layers[j][sigs][rank]
        if bp is None:
            break
        j, sigs, rank, opt, s1, s2 = bp
        steps.append((opt, s1, s2))
    steps.reverse()
    return steps


def result(problem: SearchProblem, chart: Chart, *, optimal: bool, empty: str) -> SearchResult:
    """The goal state's hypotheses as derivations; SearchError(``empty``) if it was never reached."""
    _, goal, _ = state_space(problem)
    hyps = chart.layers[problem.end].get(goal)
    if not hyps:
        raise SearchError(empty)
    out = tuple(
        (score, phrases_of(problem, backtrack(chart.layers, problem.end, goal, rank)))
        for rank, (score, _) in enumerate(hyps)
    )
    return SearchResult(out, optimal=optimal, states=chart.states, transitions=chart.transitions)


def search(problem: SearchProblem, options: DpOptions = DpOptions()) -> SearchResult:
    """The k best derivations under the distortion limit, exactly (``optimal`` is True)."""
    chart = run(problem, nbest=options.nbest, max_states=options.max_states, minimize=options.minimize)
    return result(problem, chart, optimal=True, empty=no_derivation_message(problem.d))

