"""The native core's searches behind the Python seam: one whole search per sentence.

:func:`native_problem` turns a :class:`~fstdecode.problem.problem.SearchProblem` into the
core's ``Problem`` (the same options, in the same order, over the same per-sentence word ids,
so the core's states are the Python oracles'; with a lexicalized reordering model, each
option's weighted ``lr_back``/``lr_next`` rows, and the distortion semantics), :func:`to_result` turns the core's result back
into a :class:`~fstdecode.problem.problem.SearchResult` over the problem's Phrase objects, and
the searches are in :mod:`.native_stack`, :mod:`.native_signature`, :mod:`.native_coverage`
and :mod:`.native_exact`.

The core scores with a ``_core.LanguageModel``: the problem's LM's own (``problem.lm.core``: a
:class:`fstdecode.io.native_lm.NativeLM`'s ``NgramLM``, or a
:class:`fstdecode.io.kenlm_binary.KenLMBinaryLM`'s ``KenLMBinary``), or, for a Python
:class:`~fstdecode.io.arpa.ArpaLM` (the reference reader the tests build models with), one
parsed from the same file once per (path, order) and kept for the process.
"""

from __future__ import annotations

import bisect
import functools
import math
import os
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

from fstdecode._native import core as _core
from fstdecode.io.arpa import LN10, ArpaLM
from fstdecode.io.kenlm_binary import KenLMBinaryLM
from fstdecode.io.native_lm import NativeLM
from fstdecode.io.phrase_table import PhrasePair, PhraseTable
from fstdecode.model.features import UNKNOWN_WORD_VALUE, Weights
from fstdecode.model.lexical_reordering import BACKWARD, FORWARD
from fstdecode.problem.problem import Option, SearchError, SearchLimitError, SearchProblem, SearchResult, no_derivation_message
from fstdecode.problem.sentence import Phrase, unknown_pair
from fstdecode.search.moses_nbest import moses_reordering_width, reordering_values

__all__ = ["NativeForm", "NativeTable", "core_budget", "native_form", "native_problem", "to_result", "lm_core", "options_form"]

_CORES: dict[tuple[str, int], Any] = {}
_BY_OBJECT: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_CORES_LOCK = threading.Lock()


def core_budget(max_states: int | None) -> int:
    """A state budget as the core's option structs take it: -1 for none."""
    return -1 if max_states is None else int(max_states)


def lm_core(lm: Any) -> Any:
    """The ``_core.LanguageModel`` that scores like ``lm``: ``lm.core`` if it has one, a KenLM
    binary's core reader (:meth:`KenLMBinaryLM.native_core`), else the ARPA file of ``lm`` (an
    ArpaLM) parsed by the core at ``lm.order``, cached per (path, order).

    An ArpaLM whose file is gone (a model read from a temporary file) is written out from
    memory instead (:func:`_arpa_bytes`), and cached for that object only.
    """
    core = getattr(lm, "core", None)
    if core is not None:
        return core
    if isinstance(lm, KenLMBinaryLM):
        return lm.native_core()
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


class NativeTable:
    """The model's phrase table in the core (``_core.PhraseIndex``): every source phrase is
    registered once, when the table is made, with ŵ(p) of its pairs computed in the core; a
    sentence's options are then looked up there. A table the core read (``table.store``) is
    registered from its store without a Python object per pair, and its PhrasePairs are made only
    for the sources a result uses.

    Invariant: handle ``h`` of the core holds the pairs ``self.pairs[h]``, in that order.
    """

    def __init__(self, table: PhraseTable, lm: Any, weights: Weights, moses_values: bool = False) -> None:
        self.index = _core.PhraseIndex(
            lm_core(lm),
            [float(w) for w in weights.tm],
            float(weights.word),
            float(weights.phrase),
            float(weights.unknown),
            float(weights.lm),
            UNKNOWN_WORD_VALUE,
            moses_values,
        )
        #: The core problems carry Moses' values too (fstdecode.search.moses_nbest).
        self.moses_values = moses_values
        self.num_scores = table.num_scores
        #: Whether the core makes the reordering rows (set on the first problem with a reordering
        #: model; a NativeTable serves one model and one set of weights); for a table made in memory,
        #: handle -> its pairs' weighted rows (backward and forward, flattened) and, with
        #: moses_values, their Moses rows (moses_nbest.reordering_values), made on first use.
        self._rows_in_core: bool | None = None
        self._lr: dict[int, tuple[list[float], list[float], tuple | None]] = {}
        #: handle -> the pairs it stands for
        self.pairs: _Pairs
        store = table.store
        if store is not None:
            self.index.add_store(store)
            self.pairs = _Pairs(table)
            return
        listed: list[tuple[PhrasePair, ...]] = []
        for source in table.sources():
            pairs = table.lookup(source)
            scores = [v for pair in pairs for v in pair.scores]
            self.index.add_source(list(source), [list(pair.target) for pair in pairs], scores)
            listed.append(pairs)
        self.pairs = _Pairs(table, listed)

    def form(self, problem: SearchProblem) -> NativeForm:
        """The core Problem of a problem made by :meth:`SearchProblem.from_table`, with the options
        :func:`build_sentence` would give, in its order (and their reordering rows)."""
        rows_in_core = problem.reordering is not None and self._reordering_in_core(problem)
        core, starts, ends, handles = self.index.sentence(list(problem.words), problem.d, float(problem.eta))
        offsets = [0]
        pairs = self.pairs
        for h in handles:
            offsets.append(offsets[-1] + (pairs.count(h) if h >= 0 else 1))
        form = NativeForm(core, tuple(zip(starts, ends, handles)), tuple(offsets), pairs, problem.words, self.num_scores)
        if problem.reordering is not None and not rows_in_core:
            self._python_rows(problem, form)
        return form

    def _reordering_in_core(self, problem: SearchProblem) -> bool:
        """Whether the core makes the reordering rows: for a table the core holds (a store), the
        index is told the model's columns, weights and defaults once (PhraseIndex.set_reordering)."""
        if self._rows_in_core is None:
            model = problem.reordering
            store = model.table.store
            self._rows_in_core = store is not None
            if store is not None:
                cfg = model.config
                k = cfg.num_orientations
                weights = problem.weights.lr

                def column(direction: str) -> int:
                    return cfg.offset(direction) if direction in cfg.directions else -1

                def by_orientation(direction: str) -> list[float]:
                    if direction not in cfg.directions:
                        return []
                    return [float(weights[cfg.feature_index(direction, o)]) for o in range(k)]

                defaults = None if model.default_scores is None else [float(v) for v in model.default_scores]
                self.index.set_reordering(
                    store, _LR_KINDS[cfg.classes], k, column(BACKWARD), column(FORWARD), by_orientation(BACKWARD),
                    by_orientation(FORWARD), defaults, moses_reordering_width(model),
                )
        return self._rows_in_core

    def _python_rows(self, problem: SearchProblem, form: NativeForm) -> None:
        """The reordering rows of a table made in memory (no store), in Python."""
        back: list[float] = []
        after: list[float] = []
        moses: list[float] = []
        kinds: list[int] = []
        width = 0
        for i, (start, end, h) in enumerate(form.hits):
            if h < 0:  # an unknown word's copy: made per sentence, as SearchProblem does
                got = self._rows(problem, (form.phrase(form.offsets[i]).pair,))
            else:
                got = self._lr.get(h)
                if got is None:
                    got = self._lr[h] = self._rows(problem, form.pairs[h])
            b, a, m = got
            back.extend(b)
            after.extend(a)
            if m is not None:
                moses.extend(m[0])
                kinds.extend(m[1])
                width = m[2]
        _set_reordering(problem, form.core, back, after)
        if self.moses_values:
            form.core.set_moses_reordering(width, moses, kinds)

    def _rows(self, problem: SearchProblem, pairs) -> tuple[list[float], list[float], tuple | None]:
        """``pairs``' weighted backward and forward rows (:func:`_lr_rows`) and, with
        ``moses_values``, their Moses rows (:func:`~fstdecode.search.moses_nbest.reordering_values`)."""
        back, after = _lr_rows(problem, pairs)
        return back, after, reordering_values(problem.reordering, pairs) if self.moses_values else None


class _Pairs:
    """Handle -> the PhrasePairs of that source: a store's, made on first use (``table.pairs_at``),
    or a list made when the table was registered."""

    __slots__ = ("_table", "_listed")

    def __init__(self, table: PhraseTable, listed: list[tuple[PhrasePair, ...]] | None = None) -> None:
        self._table = table
        self._listed = listed

    def __getitem__(self, handle: int) -> tuple[PhrasePair, ...]:
        if self._listed is not None:
            return self._listed[handle]
        return self._table.pairs_at(handle)

    def count(self, handle: int) -> int:
        """The number of pairs of ``handle``."""
        if self._listed is not None:
            return len(self._listed[handle])
        return self._table.store.pair_count(handle)


@dataclass(frozen=True)
class NativeForm:
    """A problem's core ``Problem`` and how its option indices map back to Phrase objects.

    Option ``i`` is pair ``i - offsets[k]`` of hit ``k = bisect_right(offsets, i) - 1``; a
    hit is ``(start, end, handle)`` (0-based inclusive token span; handle −1 an unknown word of
    ``words``). ``flat`` is used instead when it is set (the options of a problem built in Python).
    """

    core: Any
    hits: tuple[tuple[int, int, int], ...] = ()
    offsets: tuple[int, ...] = ()
    pairs: Any = field(default_factory=list)
    words: tuple[str, ...] = ()
    num_scores: int = 0
    flat: tuple[Option, ...] = ()

    def phrase(self, i: int) -> Phrase:
        """The Phrase of option index ``i`` (handle −1: the copy of an unknown word)."""
        if self.flat:
            return self.flat[i].phrase
        k = bisect.bisect_right(self.offsets, i) - 1
        start, end, handle = self.hits[k]
        if handle < 0:
            return Phrase(start, end, unknown_pair(self.words[start], self.num_scores))
        return Phrase(start, end, self.pairs[handle][i - self.offsets[k]])


#: The core's code of each orientation class (Problem.set_reordering).
_LR_KINDS = {"msd": 1, "mslr": 2, "monotonicity": 3, "leftright": 4}


def _lr_rows(problem: SearchProblem, pairs) -> tuple[list[float], list[float]]:
    """The weighted backward and forward rows of ``pairs`` (as ``Option.lr_back``/``lr_next``), flattened."""
    model = problem.reordering
    back: list[float] = []
    after: list[float] = []
    for pair in pairs:
        row = model.weighted(model.row(pair), problem.weights.lr)
        back.extend(row.backward)
        after.extend(row.forward)
    return back, after


def _set_reordering(problem: SearchProblem, core: Any, back: list[float], after: list[float]) -> None:
    """Gives the core the problem's reordering rows (by option, in index order)."""
    cfg = problem.reordering.config
    k = cfg.num_orientations
    core.set_reordering(
        _LR_KINDS[cfg.classes], k if BACKWARD in cfg.directions else 0, k if FORWARD in cfg.directions else 0, back, after
    )


def _set_moses(problem: SearchProblem, form: NativeForm) -> None:
    """The problem's distortion semantics and (for Python options) reordering rows, in the core."""
    form.core.set_semantics(problem.semantics == "moses", problem.charge_final)
    if problem.reordering is not None and form.flat:
        back = [v for opt in form.flat for v in opt.lr_back]
        after = [v for opt in form.flat for v in opt.lr_next]
        _set_reordering(problem, form.core, back, after)


def _flat_options(problem: SearchProblem) -> list[Option]:
    """The problem's phrase options in ``by_start`` order: ``index`` i of the core is entry i."""
    return [opt for s in range(1, problem.n + 1) for opt in problem.by_start[s]]


def native_form(problem: SearchProblem) -> NativeForm:
    """The core's form of ``problem``, made once per problem: by the core from the phrase table
    (a problem of :meth:`SearchProblem.from_table` whose Python options were not built), else
    from the Python options (:func:`native_problem`)."""
    form = problem.native
    if form is None:
        scores = problem.phrase_scores
        if problem.table is not None and scores is not None and not problem.options_built:
            if scores.native is None:
                scores.native = NativeTable(problem.table, problem.lm, problem.weights)
            form = scores.native.form(problem)
        else:
            form = NativeForm(native_problem(problem), flat=tuple(_flat_options(problem)))
        _set_moses(problem, form)
        problem.native = form
    return form


def options_form(problem: SearchProblem) -> NativeForm:
    """The core's form of ``problem``'s Python options, whatever :func:`native_form` holds: for
    a search that must name the options it keeps (``flat[i]`` is the core's option i)."""
    form = native_form(problem)
    if not form.flat:  # a problem the core built from the table
        form = NativeForm(native_problem(problem), flat=tuple(_flat_options(problem)))
        _set_moses(problem, form)
    return form


def native_problem(problem: SearchProblem) -> Any:
    """The core ``Problem`` of ``problem``'s Python options (indexed as :func:`_flat_options`),
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
    """The core's ``Result`` as a SearchResult over the problem's phrases, with its upper bound
    (None where the core has none: NaN; only the exact search sets one).

    Raises SearchLimitError for status ``"budget"`` (with the best derivations found, if any,
    and the upper bound, as its ``best``) and SearchError for ``"none"``, as the Python oracles do.
    """
    status = result.status
    hypotheses, winners = (), None
    # (a copy of the core's list: read once; only its best where the list stays in the core)
    found = ([result.hypothesis(0)] if result.size else []) if problem.list_in_core else result.hypotheses
    form = native_form(problem)
    if found:
        # One Phrase per option index, shared by every derivation that places it (the n-best
        # lists' derivations and winners share most of theirs; the oracle MosesFloat keys on them).
        phrase = functools.lru_cache(maxsize=None)(form.phrase)
        hypotheses = tuple((h.score, tuple(phrase(i) for i in h.options)) for h in found)
        if any(h.winners for h in found):  # the stack decoder's n-best lists
            winners = tuple(tuple(tuple(phrase(i) for i in w) if w else None for w in h.winners) for h in found)
    bound = None if math.isnan(result.upper_bound) else result.upper_bound
    report = astar_report(result)
    native = (form, result)
    if status == "budget":
        best = SearchResult(hypotheses, False, result.states, result.transitions, bound, *report,
                            native=native) if hypotheses else None
        raise SearchLimitError(result.message, best)
    if status == "none":  # an empty message: no derivation within the distortion limit
        raise SearchError(result.message or no_derivation_message(problem.d))
    if status:
        raise SearchError(f"the native search ended with an unknown status {status!r}: {result.message}")
    return SearchResult(hypotheses, result.optimal, result.states, result.transitions, bound, *report,
                        winners=winners, native=native)


def astar_report(result: Any) -> tuple[float | None, tuple[tuple[str, float], ...]]:
    """The core Result's A* report as SearchResult's ``root_bound`` and ``phases``: (None, ())
    for a search that is not the A* (its root bound NaN and no phase timed)."""
    root = None if math.isnan(result.root_bound) else result.root_bound
    seconds = (("lower", result.lower_seconds), ("bounds", result.bounds_seconds), ("search", result.search_seconds))
    if root is None and not any(t for _, t in seconds):
        return None, ()
    return root, seconds
