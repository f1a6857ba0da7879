"""``--method coverage``: the coverage-vector DP in the native core (its Python oracle:
:func:`fstdecode.search.coverage_dp.search`).

The core receives the whole problem (:func:`fstdecode.search.native.native_form`) and
returns the k best derivations with the oracle's scores, ``states`` and
``transitions`` (:func:`fstdecode.search.native.to_result`); a budget overrun raises
:class:`~fstdecode.problem.problem.SearchLimitError` and a sentence without a derivation
:class:`~fstdecode.problem.problem.SearchError`, with the oracle's messages.

A sentence of any length stays in the core: beyond 512 words its coverages are held in a
sliding window (``WinCov``, native/coverage_set.h), and a coverage the window cannot hold
ends the search as the budget does (:class:`~fstdecode.problem.problem.SearchLimitError`).
"""

from __future__ import annotations

from fstdecode._native import core as _core
from fstdecode.problem.problem import SearchProblem, SearchResult
from fstdecode.search.base import register
from fstdecode.search.coverage_dp import CoverageOptions
from fstdecode.search.native import core_budget, native_form, to_result

__all__ = ["coverage_search"]


def coverage_search(problem: SearchProblem, options: CoverageOptions = CoverageOptions()) -> SearchResult:
    """:func:`fstdecode.search.coverage_dp.search` in the native core: the same derivations,
    scores, ``states`` and ``transitions``, and the same errors."""
    core_options = _core.CoverageOptions(
        nbest=options.nbest,
        max_states=core_budget(options.max_states),
        minimize=options.minimize,
    )
    return to_result(problem, _core.coverage_search(native_form(problem).core, core_options))


register("coverage", CoverageOptions, function=coverage_search, exact=True, summary="the bit-vector DP over coverage vectors (exact, exponential)")
