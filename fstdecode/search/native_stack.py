"""``--method stack`` in the native core (native/stack.cpp): the beam stack decoder of
Pharaoh/Moses with Moore & Quirk's improvements; its options and their meaning are in
:mod:`fstdecode.search.stack`.
"""

from __future__ import annotations

from fstdecode._native import core as _core
from fstdecode.problem.problem import SearchError, SearchProblem, SearchResult
from fstdecode.search.base import register
from fstdecode.search.kbest import distinct_search_size
from fstdecode.search.native import core_budget, native_form, to_result
from fstdecode.search.stack import StackOptions

__all__ = ["core_options", "stack_search"]


def _off(value: float | None) -> float:
    return -1.0 if value is None else float(value)


def core_options(options: StackOptions) -> _core.StackOptions:
    """The core's ``StackOptions`` from the dataclass, field for field (the core restates no default):
    for ``--method stack`` and for the lower bound ``--method exact`` runs in the core
    (:mod:`fstdecode.search.native_exact`). A distinct list (``unique``) of k translations looks
    at the :func:`distinct_search_size` best derivations (Moses' n-best-factor), extracted lazily
    in the core, of which it keeps the first of each translation."""
    listed = options.unique and options.nbest > 1
    return _core.StackOptions(
        nbest=distinct_search_size(options.nbest) if listed else options.nbest,
        distinct=options.nbest if listed else 0,
        max_states=core_budget(options.max_states),
        beam_size=options.beam_size,
        beam_threshold=_off(options.beam_threshold),
        distortion_estimate=options.distortion_estimate,
        early_pruning=options.early_pruning,
        # The threshold early pruning uses, resolved in Python (ln 1e5 computed once, by Python).
        early_threshold=float(options.threshold),
        moses_nbest=options.moses_nbest_pruning,
        cube_pop_limit=options.cube_pop_limit or 0,
    )


def stack_search(problem: SearchProblem, options: StackOptions = StackOptions()) -> SearchResult:
    """``--method stack`` (:mod:`fstdecode.search.stack`, native/stack.cpp): the k best derivations
    the beam keeps (``optimal`` False); SearchLimitError over budget, SearchError when every
    hypothesis was pruned."""
    result = _core.stack_search(native_form(problem).core, core_options(options))
    if result.status == "none":
        # The message names the settings to widen, formatted here.
        raise SearchError(
            f"no complete hypothesis: every partial hypothesis was pruned or could not finish within "
            f"the distortion limit d={problem.d}; widen the beam (beam size {options.beam_size}, beam threshold "
            f"{options.beam_threshold}, early threshold {options.threshold if options.early_pruning else None})"
        )
    return to_result(problem, result)


register("stack", StackOptions, function=stack_search, exact=False, distinct=True,
         summary="the stack decoder of Pharaoh/Moses, with Moore & Quirk's improvements")
