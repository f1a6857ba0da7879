"""``--method exact`` in the native core: A* over coverage states with a certificate.

One native call a sentence (``_core.exact_decode``, native/exact.cpp): the core runs the stack
decoder (native/stack.cpp) for the lower bound, under the options of
``StackOptions(nbest=k)`` made here from the dataclass; then the A* whose heuristic docs/exact.md
proves admissible and consistent; and it returns the searcher's answer (proven k best with the
certificate, or over budget the better of the two searches' derivations with the A*'s upper
bound, or no derivation). Python only converts the options in and the result out
(:func:`fstdecode.search.native.to_result`).

A sentence of any length stays in the core: beyond 512 words its coverages are held in a
sliding window (``WinCov``, native/coverage_set.h). A transition the window cannot hold is
not searched; the largest ``f`` of the states it leaves joins the upper bound, and no
derivation below it is claimed optimal (the line is then over budget, with its gap).

:func:`support`, :func:`lower_bound` and :func:`kth_score` serve ``--method fst``'s pruned R
(fstdecode.fst.cascade), which runs the stack decoder and the A*'s support mode as two calls.
"""

from __future__ import annotations

import math

from fstdecode._native import core as _core
from fstdecode.problem.problem import SearchError, SearchLimitError, SearchProblem, SearchResult
from fstdecode.search.base import OptionsError, register
from fstdecode.search.exact import ExactOptions
from fstdecode.search.native import astar_report, core_budget, native_form, options_form, to_result
from fstdecode.search.native_stack import core_options as stack_core_options
from fstdecode.search.native_stack import stack_search
from fstdecode.search.stack import StackOptions

__all__ = ["exact_decode", "exact_search", "kth_score", "lower_bound", "support"]


def _core_result(problem: SearchProblem, result) -> tuple[SearchResult, str]:
    phrase = native_form(problem).phrase
    hypotheses = tuple((h.score, tuple(phrase(i) for i in h.options)) for h in result.hypotheses)
    bound = None if math.isnan(result.upper_bound) else result.upper_bound
    status = result.status
    if status == "budget":
        status = f"budget: {result.message}"
    elif status not in ("", "none"):
        status = "none"
    return SearchResult(hypotheses, result.optimal, result.states, result.transitions, bound, *astar_report(result)), status


def _core_time_limit(seconds: float | None) -> float:
    """The core's time limit: -1 for none (None). A limit must be positive, as ExactOptions
    checks: the core reads any value <= 0 as none, so 0 must never reach it as a limit."""
    if seconds is None:
        return -1.0
    if not seconds > 0:
        raise OptionsError(f"time_limit (--time-limit) must be > 0 seconds (leave it out for no limit), got {seconds:g}")
    return float(seconds)


def _stack_lower_bound(problem: SearchProblem, options: StackOptions) -> SearchResult:
    """(``--method fst``'s pruned R) The native stack decoder's k best; over its budget, the
    derivations it completed anyway (real derivations, so still a lower bound: a line too long
    for the stack decoder's budget keeps one)."""
    try:
        return stack_search(problem, options)
    except SearchLimitError as e:
        if e.best is None:
            raise
        return e.best


def lower_bound(problem: SearchProblem, nbest: int) -> SearchResult | None:
    """(``--method fst``'s pruned R) The native stack decoder's k best (default settings): real
    derivations, so a lower bound; None if it finds none. ``--method exact`` runs the same in the
    core (exact_decode)."""
    try:
        return _stack_lower_bound(problem, StackOptions(nbest=nbest))
    except SearchError:
        return None


def kth_score(lower: SearchResult | None, nbest: int) -> float:
    """The score every one of the k best derivations reaches: the stack's k-th, if it found k
    (``--method fst``'s pruned R; exact_decode computes it in the core for ``--method exact``)."""
    if lower is None or len(lower.hypotheses) < nbest:
        return -math.inf
    return lower.hypotheses[nbest - 1][0]


def exact_decode(
    problem: SearchProblem, nbest: int, max_states: int | None, time_limit: float | None, bounds_work: int | None = None
) -> SearchResult:
    """One core call (``_core.exact_decode``): the stack decoder's k best (its default options)
    as the lower bound, then the A* within the budgets. The k best derivations, proven
    (``optimal``, ``upper_bound`` = the best score); over budget, SearchLimitError with the best
    known derivations and a valid upper bound (``--method exact`` and ``--method prove``).
    ``bounds_work`` caps the work of the heuristic's tables (None: the core's rule for
    ``max_states``, native/exact.h bounds_cap); past it the A* does not run (no bound)."""
    core_options = _core.ExactOptions(
        nbest=nbest,
        max_states=core_budget(max_states),
        time_limit=_core_time_limit(time_limit),
        lower_bound=-math.inf,  # the core takes the stack decoder's k-th score
        bounds_work=core_budget(bounds_work),
    )
    stack = stack_core_options(StackOptions(nbest=nbest))
    return to_result(problem, _core.exact_decode(native_form(problem).core, core_options, stack))


def exact_search(problem: SearchProblem, options: ExactOptions = ExactOptions()) -> SearchResult:
    """``--method exact``: :func:`exact_decode` under the method's budgets."""
    return exact_decode(problem, options.nbest, options.max_states, options.time_limit)


register("exact", ExactOptions, function=exact_search, exact=True, summary="A* over coverage states with a certificate (exact, any LM order)")


def support(
    problem: SearchProblem, threshold: float, max_states: int | None = None, time_limit: float | None = None
) -> tuple[list | None, SearchResult, str]:
    """The options of every derivation scoring at least ``threshold`` (a superset: it may hold
    more), from the A* run to exhaustion above the threshold (the lemma: a derivation reaching
    the threshold passes only through states whose bound reaches it, so each of its transitions
    is recorded and its options kept). Returns (options in the order of the problem's options,
    or None when the budget ran out; the A* result; its status)."""
    form = options_form(problem)
    core_options = _core.ExactOptions(
        nbest=1,
        max_states=core_budget(max_states),
        time_limit=_core_time_limit(time_limit),
        lower_bound=threshold,
        bounds_work=-1,  # the core's rule for max_states
    )
    out = _core.exact_support(form.core, core_options)
    result, status = _core_result(problem, out.result)
    if status.startswith("budget"):
        return None, result, status
    return [form.flat[i] for i in out.options], result, status
