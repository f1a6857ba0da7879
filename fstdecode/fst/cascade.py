"""The cascade: ``ShortestPath(I ∘ P ∘ R ∘ L)`` and reading the best paths back.

* I is an acceptor of the input tokens over P's input symbols. A token
  with no one-word pair (an unknown word, as in Moses) also gets a
  ``<unk>`` arc; a token P has never seen gets only that arc.
* ``I ∘ P`` gives the phrase options (span and pair label of each
  labelled arc), from which R is built (:mod:`.reorder`); L scores R's
  LM events (:mod:`.lm_fst`).
* pynini/OpenFst's shortest path picks the best path.

OpenFst's tropical weights are 32-bit floats, so a path weight carries
rounding of about 1e-5 on scores near 100. The cascade therefore asks for
a few more shortest paths than wanted and ranks them by their exact
(double) weight: the sum of the exact costs of their labels (P's pair
costs, R's distortion costs and reordering charges, L's n-gram costs), which
:func:`exact_path_score` computes from the labels alone.

With a lexicalized reordering model R's arcs carry each transition's
reordering charge (:mod:`.reorder`), in the Python and the native R alike. Under Moses' distortion semantics R's
states carry the gap rule (:mod:`fstdecode.statespace.gaprule`) and the arc
into ``</s>`` charges no jump (without ``[early-distortion-cost]``), in the Python
and the native R alike.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import ChainMap
from dataclasses import dataclass
from functools import cached_property
from typing import Mapping

import pywrapfst as fst

from fstdecode.errors import FstdecodeError
from fstdecode.fst.phrase_fst import UNK, UNK_LABEL, PhraseFst, build_phrase_fst, pair_cost
from fstdecode.fst.reorder import Reordering, build_reordering, build_reordering_native
from fstdecode.model.model import Model
from fstdecode.problem.problem import Option, SearchLimitError, SearchProblem, SearchResult
from fstdecode.search.native_exact import kth_score, lower_bound, support
from fstdecode.statespace.signature import phrases_of
from fstdecode.problem.sentence import Phrase, Sentence, unknown_pair

#: Extra shortest paths re-ranked in double precision (see the module docstring).
EXTRA_PATHS = 8

class CascadeError(FstdecodeError):
    """An empty composition or a path that cannot be read back."""


@dataclass(frozen=True)
class Timings:
    """Seconds spent building R (and L), composing, and reading the shortest paths."""

    build_r: float
    compose: float
    shortest_path: float

    @property
    def total(self) -> float:
        return self.build_r + self.compose + self.shortest_path


@dataclass(frozen=True)
class CascadeResult:
    """The search result, the lattice ``I ∘ P ∘ R ∘ L`` and where the time went.

    ``raw_lattice`` has no symbol tables; :attr:`lattice` is the same machine with P's input
    symbols and R's output symbols (made on first use).
    """

    result: SearchResult
    raw_lattice: fst.VectorFst
    input_symbols: fst.SymbolTable
    problem: SearchProblem
    reordering: Reordering
    timings: Timings

    @cached_property
    def lattice(self) -> fst.VectorFst:
        lattice = self.raw_lattice.copy()
        lattice.set_input_symbols(self.input_symbols)
        lattice.set_output_symbols(self.reordering.symbols)
        return lattice


class Cascade:
    """Decodes with the WFST cascade; P is built from the model or read from a compiled file.

    P's costs carry the weights it was compiled with; the reported
    features and scores are always recomputed by the scorer with the
    model's weights, so compile P with the same weights you decode with.
    """

    def __init__(
        self, model: Model, phrase_fst: PhraseFst | None = None, pruned: bool = True, reference_r: bool = False
    ) -> None:
        self.model = model
        #: R and L are built by the native core, or (``reference_r``, for the tests) by the Python
        #: reference builder :func:`fstdecode.fst.reorder.build_reordering`, an oracle.
        self.build_reordering = build_reordering if reference_r else build_reordering_native
        #: R keeps only what can beat the stack decoder's derivation (see :meth:`_pruned`).
        self.pruned = pruned
        self.lm = model.search_lm()
        self.p = phrase_fst or build_phrase_fst(model.table, model.weights)
        self.isyms = self.p.fst.input_symbols()
        #: id(pair) -> P's output label for the model's pairs, fixed for the cascade's life (the
        #: pairs live in P); a sentence's unknown-word pairs are labelled by :meth:`labels_for`.
        self.labels = {id(pair): k for k, pair in enumerate(self.p.pairs) if pair is not None}
        self.num_scores = self.p.num_scores or model.table.num_scores

    def input_fst(self, words: tuple[str, ...]) -> fst.VectorFst:
        """I: the tokens as an acceptor; unknown words (as in Moses) also read as ``<unk>``."""
        i = fst.VectorFst()
        states = [i.add_state() for _ in range(len(words) + 1)]
        i.set_start(states[0])
        i.set_final(states[-1])
        for k, word in enumerate(words):
            label = self.isyms.find(word)
            if label > 0:
                i.add_arc(states[k], fst.Arc(label, label, 0.0, states[k + 1]))
            if word not in self.p.single:
                i.add_arc(states[k], fst.Arc(UNK_LABEL, UNK_LABEL, 0.0, states[k + 1]))
        i.set_input_symbols(self.isyms)
        i.set_output_symbols(self.isyms)
        return i.arcsort("olabel")

    def sentence(self, words: tuple[str, ...], ip: fst.VectorFst) -> Sentence:
        """The phrase options read off ``I ∘ P``: one per labelled arc (its span ends there)."""
        pos = {ip.start(): 0}
        stack = [ip.start()]
        found: dict[tuple[int, int], Phrase] = {}
        while stack:
            q = stack.pop()
            for arc in ip.arcs(q):
                after = pos[q] + (1 if arc.ilabel else 0)
                if arc.nextstate not in pos:
                    pos[arc.nextstate] = after
                    stack.append(arc.nextstate)
                if arc.olabel:
                    self._add_option(found, words, after - 1, arc.olabel)
        options: list[list[Phrase]] = [[] for _ in words]
        for (start, _), phrase in sorted(found.items()):
            options[start].append(phrase)
        unknown = frozenset(p.start for p in found.values() if p.pair.unknown)
        return Sentence(words, tuple(tuple(o) for o in options), unknown)

    def labels_for(self, sentence: Sentence) -> Mapping[int, int]:
        """id(pair) -> label for ``sentence``'s options: the model's, and its own unknown-word pairs'.

        The unknown pairs are made per sentence, so their labels live only as long as the
        sentence's search (kept in :attr:`labels`, they grew with every sentence decoded, and a
        dead pair's id could be reused by a later object).
        """
        unknown = {id(p.pair): UNK_LABEL for options in sentence.options for p in options if p.pair.unknown}
        return ChainMap(unknown, self.labels)

    def _add_option(self, found: dict, words: tuple[str, ...], end: int, label: int) -> None:
        if label == UNK_LABEL:
            found[(end, label)] = Phrase(end, end, unknown_pair(words[end], self.num_scores))
        else:
            pair = self.p.pairs[label]
            start = end - len(pair.source) + 1
            found[(start, label)] = Phrase(start, end, pair)

    def search(
        self,
        words: tuple[str, ...] | list[str],
        *,
        nbest: int = 1,
        unique: bool = False,
        max_states: int | None = None,
        prune: float | None = None,
        semantics: str = "paper",
    ) -> CascadeResult:
        """The ``nbest`` best derivations (distinct, or with distinct translations if ``unique``)
        under the distortion ``semantics`` (``moses``: R's states carry Moses' gap rule,
        :mod:`fstdecode.statespace.gaprule`, in either builder's R)."""
        words = tuple(words)
        ip = fst.compose(self.input_fst(words), self.p.fst)
        if ip.start() == fst.NO_STATE_ID:
            raise CascadeError("I ∘ P is empty: the input has no segmentation into phrases")
        sentence = self.sentence(words, ip)
        labels = self.labels_for(sentence)
        problem = SearchProblem(
            sentence, self.lm, self.model.weights, self.model.distortion_limit, reordering=self.model.reordering,
            semantics=semantics, early_distortion_cost=self.model.early_distortion_cost,
        )
        t0 = time.perf_counter()
        if self.pruned:
            r = self._pruned(problem, labels, nbest, unique, max_states, prune)
        else:
            r = self.build_reordering(problem, labels, max_states)
        t1 = time.perf_counter()
        rf = r.fst if r.ilabel_sorted else r.fst.arcsort("ilabel")
        lattice = fst.compose(fst.compose(ip.arcsort("olabel"), rf), r.lm)
        if lattice.start() == fst.NO_STATE_ID:
            raise CascadeError(f"I ∘ P ∘ R ∘ L is empty: no derivation within the distortion limit d={problem.d}")
        if prune is not None:
            # OpenFst sums path weights in float32: a path exactly ``prune`` from the best (the
            # best itself, with prune 0) may sum a little above it, so the margin gets some slack.
            slack = 1e-4 * max(1.0, abs(float(fst.shortestdistance(lattice, reverse=True)[lattice.start()])))
            lattice = fst.prune(lattice, weight=prune + slack)
        t2 = time.perf_counter()
        hyps = self._best_paths(lattice, problem, r, nbest, unique)
        t3 = time.perf_counter()
        bound = None
        if r.best is not None:  # pruned: what R left out scores below a known derivation, so below this
            if abs(hyps[0][0] - r.best) > 1e-6 * max(1.0, abs(r.best)):
                raise CascadeError(f"the shortest path scores {hyps[0][0]!r}, the pruned R's best {r.best!r} (a bug)")
            bound = max(hyps[0][0], r.best)
        result = SearchResult(tuple(hyps), optimal=True, states=r.states, transitions=r.transitions, upper_bound=bound)
        return CascadeResult(result, lattice, self.isyms, problem, r, Timings(t1 - t0, t2 - t1, t3 - t2))

    def _pruned(
        self,
        problem: SearchProblem,
        labels: Mapping[int, int],
        nbest: int,
        unique: bool,
        max_states: int | None,
        prune: float | None,
    ) -> Reordering:
        """R pruned to the derivations that can reach the stack decoder's k-th score (of its k-th
        distinct translation, if ``unique``), minus ``prune``, so that the lattice keeps every
        derivation within ``prune`` of the best.

        First the options of every derivation that can reach that threshold
        (:func:`fstdecode.search.native_exact.support`, an A* over coverage states run to exhaustion
        above it); then R over those options only, walked with the threshold
        (:func:`.reorder.build_reordering_native`, or the reference builder). Each step keeps every derivation reaching
        the threshold, so R does. Over ``max_states`` (in either step), SearchLimitError
        carries the stack decoder's derivations (with the A*'s upper bound if it ran out).
        With lexicalized reordering both steps charge it (the A*'s bound and the walk's
        ``Completion`` take each phrase's best reordering score).
        """
        lower = lower_bound(problem, nbest * (4 if unique else 1))
        if unique and lower is not None:  # the k best translations reach the k-th distinct one's score
            seen: dict[tuple[str, ...], float] = {}
            for score, phrases in lower.hypotheses:
                seen.setdefault(tuple(w for p in phrases for w in p.pair.target), score)
            threshold = list(seen.values())[nbest - 1] if len(seen) >= nbest else -math.inf
        else:
            threshold = kth_score(lower, nbest)
        threshold -= prune or 0.0
        if threshold == -math.inf:  # no known derivation (or fewer than k): nothing to prune by
            return self.build_reordering(problem, labels, max_states)
        winners, found, status = support(problem, threshold, max_states)
        # Over budget (either step): the stack's derivations, with the A*'s certified bound.
        best = None if lower is None else dataclasses.replace(lower, optimal=False, upper_bound=found.upper_bound)
        if winners is None:
            raise SearchLimitError(status.partition(": ")[2], best)
        try:
            r = self.build_reordering(restricted(problem, winners), labels, max_states, threshold=threshold)
        except SearchLimitError as e:
            raise SearchLimitError(str(e), best) from None
        return dataclasses.replace(r, states=r.states + found.states, transitions=r.transitions)

    def _best_paths(self, lattice, problem, r, nbest, unique):
        want = nbest
        k = nbest + EXTRA_PATHS
        while True:
            paths = read_paths(fst.shortestpath(lattice, nshortest=k))
            seen, hyps = set(), []
            for labels, _ in paths:
                ops = tuple(labels)
                phrases = phrases_of(problem, [(r.options[lab], r.s1[lab], r.s2[lab]) for lab in ops])
                key = tuple(w for p in phrases for w in p.target) if unique else ops
                if key in seen:
                    continue
                seen.add(key)
                hyps.append((exact_path_score(labels, r, problem), phrases))
            # Enough distinct paths (or the lattice has no more): rank exactly.
            if len(hyps) >= want + min(EXTRA_PATHS, len(paths) - want) or len(paths) < k:
                hyps.sort(key=lambda h: -h[0])
                return hyps[:want]
            k *= 2


def restricted(problem: SearchProblem, options: list[Option]) -> SearchProblem:
    """The same problem with only ``options`` (their phrases) as phrase options: its R is the
    part of the full R whose transitions place those phrases."""
    keep = {id(opt.phrase) for opt in options}
    sentence = problem.sentence
    phrases = tuple(tuple(ph for ph in opts if id(ph) in keep) for opts in sentence.options)
    return SearchProblem(
        Sentence(sentence.words, phrases, sentence.unknown), problem.lm, problem.weights, problem.d, problem.id,
        reordering=problem.reordering, semantics=problem.semantics, early_distortion_cost=problem.early_distortion_cost,
    )


def read_paths(sp: fst.VectorFst) -> list[tuple[list[int], float]]:
    """The paths of a ``shortestpath`` result: (output labels, float path cost) each."""
    out = []
    start = sp.start()
    if start == fst.NO_STATE_ID:
        return out
    for first in sp.arcs(start):
        labels, cost, arc = [], 0.0, first
        while True:
            if arc.olabel:
                labels.append(arc.olabel)
            cost += float(arc.weight)
            nxt = list(sp.arcs(arc.nextstate))
            if not nxt:
                cost += float(sp.final(arc.nextstate))
                break
            arc = nxt[0]
        out.append((labels, cost))
    return out


def exact_path_score(labels: list[int], r: Reordering, problem: SearchProblem) -> float:
    """The path's model score in double precision, from its output labels alone.

    For each operation: P's cost of its pair, R's distortion cost
    (eta · jumps) minus its reordering score (``r.lr``, with a reordering model)
    and L's cost of its LM events; negated (a score to maximise).
    """
    w = problem.weights
    cost = 0.0
    for lab in labels:
        opt = r.options[lab]
        if opt.phrase is not None:
            cost += pair_cost(opt.phrase.pair, w)
        cost += problem.eta * r.jumps[lab] + r.lm_cost[lab]
        if r.lr:
            cost -= r.lr[lab]
    return -cost


__all__ = ["Cascade", "CascadeError", "CascadeResult", "UNK", "read_paths"]
