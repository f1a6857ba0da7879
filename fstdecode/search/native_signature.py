"""The signature-state searches in the native core: ``--method dp``, ``beam`` and ``bounded``.

* :func:`dp_search` — Figure 2's DP; :func:`fstdecode.search.signature_dp.search` is its
  Python oracle;
* :func:`beam_search` — beam(T_j) (:mod:`fstdecode.search.signature_beam`);
* :func:`bounded_search` — the DP pruned by upper bounds (:mod:`fstdecode.search.bounded`).

The core receives the whole problem (:func:`fstdecode.search.native.native_form`) and walks
the same signature states (:mod:`fstdecode.statespace.signature` for bigram LMs,
:mod:`fstdecode.statespace.ngram` above) in the same order, so it returns the Python oracle's
derivations, scores, ``states`` and ``transitions``
(:func:`fstdecode.search.native.to_result`), under either distortion semantics (Moses' gap rule
as :mod:`fstdecode.statespace.gaprule` has it) and with a lexicalized reordering model (each
tape's LR ends and each transition's charge as :mod:`fstdecode.statespace.reordering` has them;
``bounded``'s bounds count the charges still to come at their best). A budget overrun raises
:class:`~fstdecode.problem.problem.SearchLimitError` at the same state count (``bounded``
carrying its beam's derivation), and a sentence without a derivation
:class:`~fstdecode.problem.problem.SearchError`.
"""

from __future__ import annotations

from fstdecode._native import core as _core
from fstdecode.problem.problem import SearchError, SearchProblem, SearchResult
from fstdecode.search.base import register
from fstdecode.search.bounded import BoundedOptions
from fstdecode.search.native import core_budget, native_form, to_result
from fstdecode.search.signature_beam import HEURISTICS, BeamOptions
from fstdecode.search.signature_dp import DpOptions

__all__ = ["dp_search", "beam_search", "bounded_search"]


def dp_search(problem: SearchProblem, options: DpOptions = DpOptions()) -> SearchResult:
    """The k best derivations of Figure 2's DP, exactly (``optimal``)."""
    core_options = _core.SignatureDpOptions(
        nbest=options.nbest, max_states=core_budget(options.max_states), minimize=options.minimize
    )
    return to_result(problem, _core.signature_dp(native_form(problem).core, core_options))


def beam_search(problem: SearchProblem, options: BeamOptions = BeamOptions()) -> SearchResult:
    """The k best derivations the beam keeps (widened x4 while it finishes none, up to 1,000,000
    states per j; native/signature.h)."""
    if options.heuristic not in HEURISTICS:
        raise SearchError(f"unknown beam heuristic {options.heuristic!r}; choose from {', '.join(HEURISTICS)}")
    core_options = _core.SignatureBeamOptions(
        nbest=options.nbest,
        max_states=core_budget(options.max_states),
        beam_size=min(options.beam_size, 2**62),  # the core's sizes are 64-bit; such a beam keeps every state
        beam_threshold=-1.0 if options.beam_threshold is None else float(options.beam_threshold),
        heuristic=options.heuristic,
        minimize=options.minimize,
    )
    return to_result(problem, _core.signature_beam(native_form(problem).core, core_options))


def bounded_search(problem: SearchProblem, options: BoundedOptions = BoundedOptions()) -> SearchResult:
    """The k best derivations, exactly: the DP, skipping states whose upper bound cannot reach a
    default beam's derivation."""
    core_options = _core.SignatureDpOptions(
        nbest=options.nbest, max_states=core_budget(options.max_states), minimize=options.minimize
    )
    return to_result(problem, _core.signature_bounded(native_form(problem).core, core_options))


# The core's signature states carry the tapes' LR ends (reordering.py's head and tail) and Moses'
# gap rule (gaprule.py's (M, lo)), native/statespace.h. Registered in this order (--method's listing).
register("dp", DpOptions, function=dp_search, exact=True, summary="the signature-state DP of Chang & Collins (exact)")
register("beam", BeamOptions, function=beam_search, exact=False, summary="the signature DP with beam(T_j) of Section 5.1")
register(
    "bounded", BoundedOptions, function=bounded_search, exact=True,
    summary="the signature DP pruned by upper bounds (exact; bigram LMs)",
)
