"""``--method exact`` in the native core: the twin of :func:`fstdecode.search.exact.search`.

The lower bound comes from the native stack decoder; the core runs the same A* (the same
states, bounds and budgets) and :func:`fstdecode.search.exact.finish` turns its result into the
searcher's answer, as for the Python engine. Scores agree with the Python engine's to rounding
(the sums are formed in the same order; ties may pop in another order).

A sentence of any length stays in the core: beyond 512 words its coverages are held in a
sliding window (``WinCov``, native/coverage_set.h). A transition the window cannot hold is
not searched; the largest ``f`` of the states it leaves joins the upper bound, and no
derivation below it is claimed optimal (the line is then over budget, with its gap).
"""

from __future__ import annotations

import math

from fstdecode._native import core as _core
from fstdecode.problem.problem import SearchLimitError, SearchProblem, SearchResult
from fstdecode.search import exact
from fstdecode.search.base import OptionsError, attach_native
from fstdecode.search.exact import ExactOptions
from fstdecode.search.native import native_form, stack_search
from fstdecode.search.stack import StackOptions

__all__ = ["exact_search"]


def _core_result(problem: SearchProblem, result) -> tuple[SearchResult, str]:
    phrase = native_form(problem).phrase
    hypotheses = tuple((h.score, tuple(phrase(i) for i in h.options)) for h in result.hypotheses)
    bound = None if math.isnan(result.upper_bound) else result.upper_bound
    status = result.status
    if status == "budget":
        status = f"budget: {result.message}"
    elif status not in ("", "none"):
        status = "none"
    return SearchResult(hypotheses, result.optimal, result.states, result.transitions, bound), status


def _core_time_limit(seconds: float | None) -> float:
    """The core's time limit: -1 for none (None). A limit must be positive, as ExactOptions
    checks: the core reads any value <= 0 as none, so 0 must never reach it as a limit."""
    if seconds is None:
        return -1.0
    if not seconds > 0:
        raise OptionsError(f"time_limit (--time-limit) must be > 0 seconds (leave it out for no limit), got {seconds:g}")
    return float(seconds)


def _stack_lower_bound(problem: SearchProblem, options: StackOptions) -> SearchResult:
    """The native stack decoder's k best; over its budget, the derivations it completed anyway
    (real derivations, so still a lower bound: a line too long for the stack decoder's budget
    keeps one for the A*)."""
    try:
        return stack_search(problem, options)
    except SearchLimitError as e:
        if e.best is None:
            raise
        return e.best


def exact_search(problem: SearchProblem, options: ExactOptions = ExactOptions()) -> SearchResult:
    """:func:`fstdecode.search.exact.search` in the native core."""
    lower = exact.lower_bound(problem, options.nbest, _stack_lower_bound)
    core_options = _core.ExactOptions(
        nbest=options.nbest,
        max_states=-1 if options.max_states is None else options.max_states,
        time_limit=_core_time_limit(options.time_limit),
        lower_bound=exact.kth_score(lower, options.nbest),
    )
    result, status = _core_result(problem, _core.exact_search(native_form(problem).core, core_options))
    return exact.finish(problem, result, status, lower)


attach_native("exact", exact_search, reordering=True, moses=True)



def support(
    problem: SearchProblem, threshold: float, max_states: int | None = None, time_limit: float | None = None
) -> tuple[list | None, SearchResult, str]:
    """:func:`fstdecode.search.exact.support` in the native core (the same A*, transitions and β)."""
    form = native_form(problem)
    if not form.flat:  # (no Python options to name: a problem the core built)
        return exact.support(problem, threshold, max_states, time_limit)
    core_options = _core.ExactOptions(
        nbest=1,
        max_states=-1 if max_states is None else max_states,
        time_limit=_core_time_limit(time_limit),
        lower_bound=threshold,
    )
    out = _core.exact_support(form.core, core_options)
    result, status = _core_result(problem, out.result)
    if status.startswith("budget"):
        return None, result, status
    return [form.flat[i] for i in out.options], result, status
