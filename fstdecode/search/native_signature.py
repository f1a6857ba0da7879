"""The signature-state searches in the native core: the twins of ``--method dp``, ``beam`` and
``bounded``.

* :func:`dp_search` — :func:`fstdecode.search.signature_dp.search`;
* :func:`beam_search` — :func:`fstdecode.search.signature_beam.search`;
* :func:`bounded_search` — :func:`fstdecode.search.bounded.search`.

The core receives the whole problem (:func:`fstdecode.search.native.native_form`) and walks
the same signature states (:mod:`fstdecode.statespace.signature` for bigram LMs,
:mod:`fstdecode.statespace.ngram` above) in the same order, so it returns the Python engine's
derivations, scores, ``states`` and ``transitions``
(:func:`fstdecode.search.native.to_result`), under either distortion semantics (Moses' gap rule
as :mod:`fstdecode.statespace.gaprule` has it) and with a lexicalized reordering model (each
tape's LR ends and each transition's charge as :mod:`fstdecode.statespace.reordering` has them;
``bounded``'s bounds count the charges still to come at their best). A budget overrun raises
:class:`~fstdecode.problem.problem.SearchLimitError` at the same state count (``bounded``
carrying its beam's derivation), and a sentence without a derivation
:class:`~fstdecode.problem.problem.SearchError`, with the Python engine's messages.
"""

from __future__ import annotations

from fstdecode._native import core as _core
from fstdecode.problem.problem import SearchError, SearchProblem, SearchResult
from fstdecode.search import signature_beam
from fstdecode.search.base import attach_native
from fstdecode.search.bounded import BoundedOptions
from fstdecode.search.native import native_form, to_result
from fstdecode.search.signature_beam import HEURISTICS, BeamOptions
from fstdecode.search.signature_dp import DpOptions

__all__ = ["dp_search", "beam_search", "bounded_search"]


def _budget(max_states: int | None) -> int:
    return -1 if max_states is None else int(max_states)


def dp_search(problem: SearchProblem, options: DpOptions = DpOptions()) -> SearchResult:
    """:func:`fstdecode.search.signature_dp.search` in the native core."""
    core_options = _core.SignatureDpOptions(
        nbest=options.nbest, max_states=_budget(options.max_states), minimize=options.minimize
    )
    return to_result(problem, _core.signature_dp(native_form(problem).core, core_options))


def beam_search(problem: SearchProblem, options: BeamOptions = BeamOptions()) -> SearchResult:
    """:func:`fstdecode.search.signature_beam.search` in the native core."""
    if options.heuristic not in HEURISTICS:
        raise SearchError(f"unknown beam heuristic {options.heuristic!r}; choose from {', '.join(HEURISTICS)}")
    if options.beam_size > 2**62:  # the core's sizes are 64-bit; Python's are not
        return signature_beam.search(problem, options)
    core_options = _core.SignatureBeamOptions(
        nbest=options.nbest,
        max_states=_budget(options.max_states),
        beam_size=options.beam_size,
        beam_threshold=-1.0 if options.beam_threshold is None else float(options.beam_threshold),
        heuristic=options.heuristic,
        minimize=options.minimize,
    )
    return to_result(problem, _core.signature_beam(native_form(problem).core, core_options))


def bounded_search(problem: SearchProblem, options: BoundedOptions = BoundedOptions()) -> SearchResult:
    """:func:`fstdecode.search.bounded.search` in the native core."""
    core_options = _core.SignatureDpOptions(
        nbest=options.nbest, max_states=_budget(options.max_states), minimize=options.minimize
    )
    return to_result(problem, _core.signature_bounded(native_form(problem).core, core_options))


# The core's signature states carry the tapes' LR ends (reordering.py's head and tail) and Moses'
# gap rule (gaprule.py's (M, lo)), native/statespace.h.
attach_native("dp", dp_search, reordering=True, moses=True)
attach_native("beam", beam_search, reordering=True, moses=True)
attach_native("bounded", bounded_search, reordering=True, moses=True)
