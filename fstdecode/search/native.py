"""The native core's searches behind the Python seam: one whole search per sentence.

:func:`native_problem` turns a :class:`~fstdecode.problem.problem.SearchProblem` into the
core's ``Problem`` (the same options, in the same order, over the same per-sentence word ids,
so the core's states are the Python engine's), :func:`to_result` turns the core's result back
into a :class:`~fstdecode.problem.problem.SearchResult` over the problem's Phrase objects, and
:func:`stack_search` is the native twin of :func:`fstdecode.search.stack.search`.

The core scores with an ``NgramLM``: the problem's LM's own (``problem.lm.core``, a
:class:`fstdecode.io.native_lm.NativeLM`), or, for a Python :class:`~fstdecode.io.arpa.ArpaLM`
(``--engine python`` models), one parsed from the same file once per (path, order) and kept
for the process.
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from typing import Any

from fstdecode._native import core as _core
from fstdecode.io.arpa import LN10, ArpaLM
from fstdecode.io.native_lm import NativeLM
from fstdecode.problem.problem import Option, SearchError, SearchLimitError, SearchProblem, SearchResult
from fstdecode.search.base import attach_native
from fstdecode.search.stack import StackOptions

__all__ = ["native_problem", "to_result", "stack_search", "lm_core"]

_CORES: dict[tuple[str, int], Any] = {}
_BY_OBJECT: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_CORES_LOCK = threading.Lock()


def lm_core(lm: Any) -> Any:
    """The ``_core.NgramLM`` that scores like ``lm``: ``lm.core`` if it has one, else the
    ARPA file of ``lm`` (an ArpaLM) parsed by the core at ``lm.order``, cached per (path, order).

    An ArpaLM whose file is gone (a model read from a temporary file) is written out from
    memory instead (:func:`_arpa_bytes`), and cached for that object only.
    """
    core = getattr(lm, "core", None)
    if core is not None:
        return core
    with _CORES_LOCK:
        core = _BY_OBJECT.get(lm)
        if core is not None:
            return core
        key = (str(lm.path), int(lm.order))
        core = _CORES.get(key)
        if core is None:
            if os.path.isfile(lm.path):
                core = _CORES[key] = NativeLM.from_file(lm.path, max_order=lm.order).core
            else:
                core = _core.NgramLM.parse_arpa(_arpa_bytes(lm), 0)
        _BY_OBJECT[lm] = core
    return core


def _log10_text(value: float) -> str:
    """A log10 value ``s`` whose ``float(s) * LN10`` is ``value`` exactly (how both readers
    turn a file's log10 into the natural log they store)."""
    if math.isinf(value):
        return repr(value / LN10)
    guess = value / LN10
    for _ in range(64):  # the file's own value lies within a few ulps of the guess
        if guess * LN10 == value:
            return repr(guess)
        guess = math.nextafter(guess, math.inf if guess * LN10 < value else -math.inf)
    raise SearchError(f"{value!r} has no log10 value that reads back exactly")


def _arpa_bytes(lm: ArpaLM) -> bytes:
    """The ARPA text of an ArpaLM's n-grams, values exact (see :func:`_log10_text`)."""
    probs, backoffs = lm._probs, lm._backoffs
    by_order: list[list[str]] = [[] for _ in range(lm.order)]
    for ngram, prob in probs.items():
        line = f"{_log10_text(prob)}\t{' '.join(ngram)}"
        if ngram in backoffs:
            line += f"\t{_log10_text(backoffs[ngram])}"
        by_order[len(ngram) - 1].append(line)
    out = ["\\data\\", *(f"ngram {i + 1}={len(lines)}" for i, lines in enumerate(by_order)), ""]
    for i, lines in enumerate(by_order):
        out += [f"\\{i + 1}-grams:", *lines, ""]
    out += ["\\end\\", ""]
    return "\n".join(out).encode("utf-8")


def _flat_options(problem: SearchProblem) -> list[Option]:
    """The problem's phrase options in ``by_start`` order: ``index`` i of the core is entry i."""
    return [opt for s in range(1, problem.n + 1) for opt in problem.by_start[s]]


def native_problem(problem: SearchProblem) -> Any:
    """The core ``Problem`` of ``problem``: its options (indexed as :func:`_flat_options`),
    word ids, distortion limit and weights (ŵ(p) comes from ``Option.score`` as computed in Python)."""
    core_lm = lm_core(problem.lm)
    index = core_lm.index
    core = _core.Problem(
        core_lm,
        [index(w) for w in problem.vocab],
        problem.n,
        problem.d,
        float(problem.eta),
        float(problem.weights.lm),
        problem.bos,
        problem.eos,
    )
    starts: list[int] = []
    ends: list[int] = []
    scores: list[float] = []
    words: list[int] = []
    lengths: list[int] = []
    for s in range(1, problem.n + 1):
        for opt in problem.by_start[s]:
            starts.append(opt.s)
            ends.append(opt.t)
            scores.append(opt.score)
            words.extend(opt.words)
            lengths.append(len(opt.words))
    core.add_options(starts, ends, scores, words, lengths, list(range(len(starts))))
    core.finish()
    return core


def to_result(problem: SearchProblem, result: Any) -> SearchResult:
    """The core's ``Result`` as a SearchResult over the problem's phrases.

    Raises SearchLimitError for status ``"budget"`` (with the best derivations found, if any,
    as its ``best``) and SearchError for ``"none"``, as the Python searches do.
    """
    status = result.status
    hypotheses = ()
    if result.hypotheses:
        flat = _flat_options(problem)
        hypotheses = tuple((h.score, tuple(flat[i].phrase for i in h.options)) for h in result.hypotheses)
    if status == "budget":
        best = SearchResult(hypotheses, False, result.states, result.transitions) if hypotheses else None
        raise SearchLimitError(result.message, best)
    if status == "none":
        raise SearchError(result.message)
    if status:
        raise SearchError(f"the native search ended with an unknown status {status!r}: {result.message}")
    return SearchResult(hypotheses, result.optimal, result.states, result.transitions)


def _off(value: float | None) -> float:
    return -1.0 if value is None else float(value)


def stack_search(problem: SearchProblem, options: StackOptions = StackOptions()) -> SearchResult:
    """:func:`fstdecode.search.stack.search` in the native core: the same derivations, scores,
    ``states`` and ``transitions``, and the same errors."""
    core_options = _core.StackOptions(
        nbest=options.nbest,
        max_states=-1 if options.max_states is None else options.max_states,
        beam_size=options.beam_size,
        beam_threshold=_off(options.beam_threshold),
        distortion_estimate=options.distortion_estimate,
        early_pruning=options.early_pruning,
        # The threshold early pruning uses, resolved in Python (ln 1e5 computed once, by Python).
        early_threshold=float(options.threshold),
    )
    result = _core.stack_search(native_problem(problem), core_options)
    if result.status == "none" and problem.n <= 512:
        # The Python engine's message, formatted by Python.
        raise SearchError(
            f"no complete hypothesis: every partial hypothesis was pruned or could not finish within "
            f"the distortion limit d={problem.d}; widen the beam (beam size {options.beam_size}, beam threshold "
            f"{options.beam_threshold}, early threshold {options.threshold if options.early_pruning else None})"
        )
    return to_result(problem, result)


attach_native("stack", stack_search)
