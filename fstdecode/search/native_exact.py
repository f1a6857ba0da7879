"""``--method exact`` in the native core: the twin of :func:`fstdecode.search.exact.search`.

The lower bound comes from the native stack decoder; the core runs the same A* (the same
states, bounds and budgets) and :func:`fstdecode.search.exact.finish` turns its result into the
searcher's answer, as for the Python engine. Scores agree with the Python engine's to rounding
(the sums are formed in the same order; ties may pop in another order).

The core keeps coverages in at most eight 64-bit words: a sentence of more than
:data:`MAX_WORDS` words is searched by the Python reference (the same search).
"""

from __future__ import annotations

import math

from fstdecode._native import core as _core
from fstdecode.problem.problem import SearchProblem, SearchResult
from fstdecode.search import exact
from fstdecode.search.base import attach_native
from fstdecode.search.exact import ExactOptions
from fstdecode.search.native import native_form, stack_search
from fstdecode.search.native_coverage import MAX_WORDS

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


def exact_search(problem: SearchProblem, options: ExactOptions = ExactOptions()) -> SearchResult:
    """:func:`fstdecode.search.exact.search` in the native core."""
    if problem.n > MAX_WORDS:
        return exact.search(problem, options)
    lower = exact.lower_bound(problem, options.nbest, stack_search)
    core_options = _core.ExactOptions(
        nbest=options.nbest,
        max_states=-1 if options.max_states is None else options.max_states,
        time_limit=-1.0 if options.time_limit is None else float(options.time_limit),
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
    if problem.n > MAX_WORDS or not form.flat:  # (no Python options to name: a problem the core built)
        return exact.support(problem, threshold, max_states, time_limit)
    core_options = _core.ExactOptions(
        nbest=1,
        max_states=-1 if max_states is None else max_states,
        time_limit=-1.0 if time_limit is None else float(time_limit),
        lower_bound=threshold,
    )
    out = _core.exact_support(form.core, core_options)
    result, status = _core_result(problem, out.result)
    if status.startswith("budget"):
        return None, result, status
    return [form.flat[i] for i in out.options], result, status
