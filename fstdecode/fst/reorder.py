"""R: the reordering automaton of signature states, built per sentence.

States are the signature states ``(j, sigs)`` of Chang & Collins (Section
4.2) reachable from the start under this sentence's phrase options, created
in order of j: the same space the DP walks (:func:`fstdecode.statespace.signature.expand`,
so every state passes ``valid()`` of Figure 5). One arc per transition ψ1 p ψ2:

* input: the phrase-pair label that P writes (ε for the closing ``</s>``);
* output: an *operation* symbol that spells the operation and the LM
  events it settles, ``op:s-t:s1:t1:s2:label:target|a b|c d…`` —
  positions as in :mod:`fstdecode.problem.problem`, s1/t1 the start and end
  of ψ1 and s2 the start of ψ2 (−1 for φ), label P's pair label; then the
  n-grams inside the phrase and those the operation completes at the
  junctions with ψ1 and ψ2, each ``|context word`` (``|bo:context`` for a
  backoff charged by state minimisation, orders above 2; see
  :mod:`fstdecode.statespace.ngram`). Moses reserves ``|`` for factors, so
  words never contain it;
* weight: the distortion feature times its weight, as a cost (eta · jumps),
  minus the weighted lexicalized reordering charge of the transition when
  the model has a reordering model (:func:`fstdecode.statespace.reordering.charge`;
  the signatures then carry their tapes' LR ends). Its symbol then ends with
  ``|lr:O1,O2=V``: O1 the orientation of p after ψ1's last phrase and O2 that
  of ψ2's first phrase after p (names as in
  :data:`~fstdecode.model.lexical_reordering.ORIENTATION_NAMES`, ``_`` for φ)
  and V the weighted score charged (Python's ``repr`` of the double), so that
  operations that charge differently never share a label.

The operation symbols alone rebuild the derivation (the tapes are replayed
from s1/s2) and carry everything L scores; with a reordering model, the
per-label ``lr`` scores (:class:`Reordering`) what R's weights charge.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import pywrapfst as fst

from fstdecode._native import core as _core
from fstdecode.fst.binary import vector_fst
from fstdecode.fst.lm_fst import build_lm_fst, events_cost
from fstdecode.model.lexical_reordering import ORIENTATION_NAMES
from fstdecode.problem.problem import Option, SearchLimitError, SearchProblem
from fstdecode.search.native import native_form
from fstdecode.statespace import reordering as lexreo
from fstdecode.statespace.ngram import Event, join, state_space
from fstdecode.statespace.signature import PHI, Sigs, least_jumps


@dataclass(frozen=True)
class Operation:
    """What an output label of R stands for: a transition ψ1 p ψ2.

    ``s1``/``s2`` are the starts of ψ1 and ψ2 (PHI for φ); ``jumps`` is the
    sum of the distortion distances |t(ψ1)+1−s(p)| and |t(p)+1−s(ψ2)| (Figure 4); ``lr`` the
    weighted lexicalized reordering score it charges (0 without a reordering model).
    """

    option: Option
    s1: int
    s2: int
    jumps: int
    lr: float = 0.0


@dataclass(frozen=True)
class Reordering:
    """R and L of one sentence, and what each output label of R stands for.

    Per label k >= 1 (entry 0, ε, is unused): ``options[k]``, ``s1[k]``,
    ``s2[k]`` and ``jumps[k]`` make its :class:`Operation`, and ``lm_cost[k]``
    is −λ_lm times the sum of the ln values of its LM events, in double
    precision (L's arc weight before OpenFst rounds it to a float); ``lr[k]``, with a
    reordering model, is the weighted reordering score the label's arcs charge (R's arc
    weight is ``eta * jumps[k] - lr[k]``; empty without one, all charges 0).
    ``ilabel_sorted`` says that R's arcs are already sorted by input label.
    The output symbols are ``names`` (by label), as a table made on first use
    of :attr:`symbols` (R itself carries them only when built in Python).
    """

    fst: fst.Fst
    lm: fst.Fst
    names: Sequence[str]
    states: int
    transitions: int
    options: Sequence[Option | None]
    s1: Sequence[int]
    s2: Sequence[int]
    jumps: Sequence[int]
    lm_cost: Sequence[float]
    ilabel_sorted: bool = False
    table: fst.SymbolTable | None = None
    #: A pruned R's best path score (:func:`build_reordering_native` with a threshold), else None.
    best: float | None = None
    #: Per label, the weighted lexicalized reordering score (empty without a reordering model).
    lr: Sequence[float] = ()

    @cached_property
    def symbols(self) -> fst.SymbolTable:
        """R's output symbols: label k is ``names[k]`` (``<eps>`` = 0)."""
        if self.table is not None:
            return self.table
        syms = fst.SymbolTable("reorder")
        for name in self.names:
            syms.add_symbol(name)
        return syms

    def operation(self, label: int) -> Operation:
        lr = self.lr[label] if self.lr else 0.0
        return Operation(self.options[label], self.s1[label], self.s2[label], self.jumps[label], lr)

    @property
    def ops(self) -> dict[int, Operation]:
        """Every output label's operation."""
        return {label: self.operation(label) for label in range(1, len(self.options))}


def _token(p: int) -> str:
    """A search position as a 0-based token position (``<s>`` = −1, ``</s>`` = n); φ as ``_``."""
    return "_" if p == PHI else str(p - 1)


def _position(text: str) -> int:
    """The inverse of :func:`_token`."""
    return PHI if text == "_" else int(text) + 1


def parse_op_symbol(symbol: str) -> tuple[int, int, int, int, int, int, str, list[str]]:
    """``(s, t, s1, t1, s2, label, target, events)`` of an operation symbol, in search positions.

    The symbol spells positions as 0-based tokens (``op:S-T:S1:T1:S2:…``, φ as
    ``_``); the tuple gives them back as the search counts them (``<s>`` = 0). ``events`` are
    the ``|``-separated items after the head: the LM events, then, with a reordering model,
    ``lr:O1,O2=V`` (see the module docstring).
    """
    head, *events = symbol.split("|")
    _, span, s1, t1, s2, label, target = head.split(":", 6)
    s, t = span.split("-")
    return _position(s), _position(t), _position(s1), _position(t1), _position(s2), int(label), target, events


def event_text(event: Event, vocab: list[str]) -> str:
    """``a b c`` for ln p(c | a b); ``bo:a b`` for the backoff of ``a b``."""
    context, w = event
    words = " ".join(vocab[x] for x in context)
    return f"bo:{words}" if w is None else (f"{words} {vocab[w]}" if context else vocab[w])


class _Builder:
    """Interns operation symbols: one label per distinct (phrase, ψ1, ψ2) as far as the LM can tell."""

    def __init__(self, problem: SearchProblem, labels: Mapping[int, int], minimize: bool) -> None:
        self.problem = problem
        self.labels = labels  # id(phrase pair) -> P's output label
        self.minimize = minimize
        self.syms = fst.SymbolTable("reorder")
        self.syms.add_symbol("<eps>", 0)
        #: per label (0: ε): option, s1, s2, jumps, LM cost
        self.options: list[Option | None] = [None]
        self.s1, self.s2, self.jumps, self.lm_cost, self.lr = [PHI], [PHI], [0], [0.0], [0.0]
        #: (id(option), ψ1 signature, ψ2 signature) -> label
        self.cache: dict[tuple, int] = {}
        self._short: dict[tuple, int] = {}
        self._inside: dict[int, tuple[Event, ...]] = {}
        #: label -> (input label, distortion cost), made once per label.
        self.arc_parts: dict[int, tuple[int, float]] = {}

    def input_label(self, opt: Option) -> int:
        return 0 if opt.phrase is None else self.labels[id(opt.phrase.pair)]

    def inside(self, opt: Option) -> tuple[Event, ...]:
        """The n-grams inside the phrase of ``opt`` (its words from the N-th on: ŵ's LM part)."""
        got = self._inside.get(id(opt))
        if got is None:
            k, w = self.problem.order - 1, opt.words if opt.phrase else ()
            got = self._inside[id(opt)] = tuple((w[i - k : i], w[i]) for i in range(k, len(w)))
        return got

    def op(self, j: int, opt: Option, a: tuple | None, c: tuple | None) -> int:
        """The label of appending ``opt`` to tape ``a`` (ψ1) and prepending it to tape ``c`` (ψ2).

        Cached on (phrase, ψ1, ψ2): j = s(p) − 1 is fixed by the phrase.
        """
        key = (id(opt), a, c)
        s1, t1 = (a[0], a[2]) if a else (PHI, PHI)
        s2 = c[0] if c else PHI
        lr = self.problem.reordering is not None
        if self.problem.order == 2:
            # Only ψ1's end and last word and ψ2's start and first word matter (and, with a
            # reordering model, ψ1's tail and ψ2's head).
            short = (id(opt), s1, t1, a[3] if a else PHI, s2, c[1] if c else PHI)
            if lr:
                short += (a[5] if a else PHI, c[4] if c else PHI)
        else:
            short = key
        label = self._short.get(short)
        if label is not None:
            self.cache[key] = label
            return label
        events = list(self.inside(opt))
        if self.problem.order == 2:
            if a:
                events.append(((a[3],), opt.first))
            if c:
                events.append(((opt.last,), c[1]))
        else:
            events += join(self.problem, a, opt, c, self.minimize)[1]
        jumps = (j - a[2] if a else 0) + (opt.t + 1 - c[0] if c else 0)
        if opt.s == self.problem.end and not self.problem.charge_final:
            jumps = 0  # Moses' semantics: no jump into </s> (fstdecode.model.distortion)
        v = self.problem.vocab
        target = " ".join(opt.phrase.target) if opt.phrase else "</s>"
        span = f"{_token(opt.s)}-{_token(opt.t)}:{_token(s1)}:{_token(t1)}:{_token(s2)}"
        head = f"op:{span}:{self.input_label(opt)}:{target}"
        text = head + "".join("|" + event_text(e, v) for e in events)
        charge = 0.0
        if lr:
            o1, o2, charge = lexreo.charge(self.problem, a, opt, c)
            names = ORIENTATION_NAMES[self.problem.reordering.config.classes]
            text += f"|lr:{'_' if o1 == PHI else names[o1]},{'_' if o2 == PHI else names[o2]}={charge!r}"
        label = self.cache[key] = self._short[short] = self.syms.add_symbol(text)
        if label == len(self.options):  # a new symbol
            p = self.problem
            self.options.append(opt)
            self.s1.append(s1)
            self.s2.append(s2)
            self.jumps.append(jumps)
            self.lr.append(charge)
            words = [([v[x] for x in context], None if w is None else v[w]) for context, w in events]
            self.lm_cost.append(events_cost(p.lm, p.weights.lm, words))
            self.arc_parts[label] = (self.input_label(opt), p.eta * jumps - charge)
        return label

    def reordering(self, r: fst.VectorFst, states: int, transitions: int) -> Reordering:
        r.set_output_symbols(self.syms)
        parts = (tuple(self.options), tuple(self.s1), tuple(self.s2), tuple(self.jumps), tuple(self.lm_cost))
        lm = build_lm_fst(self.syms, self.lm_cost[1:])
        names = [self.syms.find(k) for k in range(len(self.options))]
        lr = tuple(self.lr) if self.problem.reordering is not None else ()
        return Reordering(r, lm, names, states, transitions, *parts, table=self.syms, lr=lr)


class Completion:
    """An upper bound on every completion of a signature state (the pruned R; the core's
    ``Completion`` in native/reorder.cpp computes the same values): the best segmentation of the
    positions after j, each open tape's first words at their best after any context that may
    precede it (with the charges of minimising that context), the ``</s>`` bound, and the
    distortion still to come: with eta >= 0 at least signature_beam's "bound" (a tape ending at
    t < j is left by a jump of at least j − t, one starting at s > 0 entered by one of at least
    j + 2 − s; tapes are only ever joined through a phrase placed after j, or ``</s>``, whose
    jump Moses' semantics without early distortion cost does not charge); with
    eta < 0 at most d per junction still to form. With a reordering model, the reordering charges
    still to come at their best too (:mod:`fstdecode.statespace.reordering`): each open tape's
    pending ones (:func:`~fstdecode.statespace.reordering.pending_bound`) and the best
    segmentation of the positions after j by each phrase's best charges
    (:func:`~fstdecode.statespace.reordering.phrase_bound`), a separate maximum, so the sum
    bounds the joint one.
    """

    def __init__(self, problem: SearchProblem) -> None:
        from fstdecode.fst.bounds import tape_bounds

        self.problem = problem
        self.b = tape_bounds(problem)
        self.eos = self.b.eos
        self.ngram = problem.order > 2
        self.d = min(problem.d, problem.n + 2)
        self._tapes: dict[tuple, float] = {}
        self.lr = problem.reordering is not None
        #: ``lr_suffix[p]``: the most the phrases covering positions p..n can be charged for reordering.
        self.lr_suffix = _lr_suffix(problem) if self.lr else []

    def __call__(self, j: int, sigs: Sigs) -> float:
        p = self.problem
        if j >= p.end:
            return 0.0
        h = self.b.suffix[j + 1] + self.eos
        if self.lr:
            h += self.lr_suffix[j + 1] + lexreo.pending_bound(sigs)
        for sig in sigs:
            if sig[0] != 0:
                h += self._tape(sig)
        jumps = least_jumps(p, j, sigs)
        if p.eta >= 0:
            return h - p.eta * jumps
        return h - p.eta * self.d * (p.n - j + len(sigs))

    def _tape(self, sig) -> float:
        key = (sig[0], sig[1])
        got = self._tapes.get(key)
        if got is None:
            words = tuple(sig[1][: self.b.k]) if self.ngram else (sig[1],)
            got = self._tapes[key] = self.b.tape(self.problem, sig[0], words)
        return got


def _lr_suffix(problem: SearchProblem) -> list[float]:
    """``out[p]``: the best, over segmentations of positions p..n into options, of the sum of
    their :func:`~fstdecode.statespace.reordering.phrase_bound` (−inf where none exists)."""
    n = problem.n
    out = [-math.inf] * (n + 2)
    out[n + 1] = 0.0
    for p in range(n, 0, -1):
        for opt in problem.by_start[p]:
            if out[opt.t + 1] > -math.inf:
                out[p] = max(out[p], lexreo.phrase_bound(opt) + out[opt.t + 1])
    return out


def build_reordering(
    problem: SearchProblem,
    labels: Mapping[int, int],
    max_states: int | None = None,
    minimize: bool = True,
    threshold: float | None = None,
) -> Reordering:
    """Build R (and L) for one sentence, reachable states only, in order of j.

    ``labels`` maps ``id(pair)`` of each option's phrase pair to P's output label.
    Raises SearchLimitError after ``max_states`` signature states. The arcs
    are collected in arrays and turned into a VectorFst at once
    (:func:`fstdecode.fst.binary.vector_fst`). With a ``threshold``, R keeps only what can lie
    on a derivation scoring at least that (see :func:`build_reordering_native`).
    """
    b = _Builder(problem, labels, minimize)
    completion = Completion(problem) if threshold is not None else None
    floor = threshold - 1e-9 * max(1.0, abs(threshold)) if threshold is not None else -math.inf
    alpha = [0.0]  # by state id: the best score of a path from the start
    deltas: list[float] = []  # by arc: its score
    end = problem.end
    start, goal_sigs, expand = state_space(problem, minimize)
    layers: list[dict[Sigs, int]] = [{} for _ in range(end + 1)]
    layers[0][start] = 0
    states, transitions = 1, 0
    src: list[int] = []
    ilabels: list[int] = []
    olabels: list[int] = []
    costs: list[float] = []
    dst: list[int] = []
    cache, arc_parts = b.cache, b.arc_parts
    for j in range(end):
        for sigs, sid in layers[j].items():
            by_start = {sg[0]: sg for sg in sigs}
            for t, new, delta, opt, s1, s2 in expand(problem, j, sigs):
                # The label first, pruned or not: the core names a group's operations together.
                a, c = by_start.get(s1), by_start.get(s2)
                op = cache.get((id(opt), a, c))
                if op is None:
                    op = b.op(j, opt, a, c)
                reach = alpha[sid] + delta
                if completion is not None and reach + completion(t, new) < floor:
                    continue
                transitions += 1
                target = layers[t].get(new)
                if target is None:
                    target = layers[t][new] = states
                    states += 1
                    if max_states is not None and states > max_states:
                        raise SearchLimitError(f"more than {max_states} states (--max-states)")
                    alpha.append(reach)
                alpha[target] = max(alpha[target], reach)
                deltas.append(delta)
                ilabel, cost = arc_parts[op]
                src.append(sid)
                ilabels.append(ilabel)
                olabels.append(op)
                costs.append(cost)
                dst.append(target)
    goal = layers[end].get(goal_sigs)
    best = alpha[goal] if goal is not None else -math.inf
    visited = states
    if completion is not None:
        states, goal, (src, ilabels, olabels, costs, dst) = _keep_completing(
            layers, alpha, deltas, floor, goal, (src, ilabels, olabels, costs, dst)
        )
        transitions = len(src)
    finals = {goal: 0.0} if goal is not None else {}
    r = b.reordering(vector_fst(states, 0, finals, src, ilabels, olabels, costs, dst), visited, transitions)
    return r if threshold is None else dataclasses.replace(r, best=best)


def _keep_completing(layers, alpha, deltas, floor, goal, arrays):
    """The backward pass of a pruned walk (the core's keep_completing): each state's best
    completion within R; only the arcs of derivations scoring at least ``floor`` stay, and the
    states they join, renumbered in order (the start stays 0). Returns (states, goal, arrays)."""
    src, ilabels, olabels, costs, dst = arrays
    states = len(alpha)
    out_arcs: list[list[int]] = [[] for _ in range(states)]
    for a, q in enumerate(src):
        out_arcs[q].append(a)
    beta = [-math.inf] * states
    for layer in reversed(layers):  # arcs go from a layer to a later one
        for q in layer.values():
            b = 0.0 if q == goal else -math.inf
            for a in out_arcs[q]:
                b = max(b, deltas[a] + beta[dst[a]])
            beta[q] = b
    keep = [alpha[src[a]] + deltas[a] + beta[dst[a]] >= floor for a in range(len(src))]
    used = [False] * states
    used[0] = True
    for a, k in enumerate(keep):
        if k:
            used[dst[a]] = True
    number, count = [-1] * states, 0
    for q in range(states):
        if used[q]:
            number[q], count = count, count + 1
    kept = [a for q in range(states) if used[q] for a in out_arcs[q] if keep[a]]
    new = ([number[src[a]] for a in kept], [ilabels[a] for a in kept], [olabels[a] for a in kept],
           [costs[a] for a in kept], [number[dst[a]] for a in kept])
    return count, (number[goal] if goal is not None and number[goal] >= 0 else None), new


def build_reordering_native(
    problem: SearchProblem,
    labels: Mapping[int, int],
    max_states: int | None = None,
    minimize: bool = True,
    threshold: float | None = None,
) -> Reordering:
    """:func:`build_reordering` in the native core: the same states, arcs, labels and symbols, and
    the same L. The core writes both as ConstFsts with arcs sorted by input label (read by
    OpenFst in bulk); the symbol table is made only if asked for (:attr:`Reordering.symbols`).

    With a ``threshold``, R keeps only what can lie on a derivation scoring at least that: a
    transition is dropped when the best score of a path to it, plus its own, plus an upper bound
    on every completion of its target is below it. The bound (``native/reorder.cpp``,
    ``Completion``) takes the positions still to translate at their best segmentation, each open
    tape's first words at their best after any LM context that may precede it (the contexts of
    :func:`fstdecode.fst.bounds.contexts`), every backoff charge at its largest, and the best
    ``</s>``; so every derivation scoring at least the threshold stays in R, with its score.
    ``best`` is then the best path's score (−inf if none reaches the threshold).
    """
    form = native_form(problem)
    inputs = [labels[id(opt.phrase.pair)] for opt in form.flat]
    limit = -1 if max_states is None else max_states
    bar = -math.inf if threshold is None else float(threshold)
    out = _core.build_reordering(form.core, problem.vocab, inputs, limit, minimize, bar)
    if out["status"] == "budget":
        raise SearchLimitError(out["message"])
    return Reordering(
        fst.Fst.read_from_string(out["fst"]),
        fst.Fst.read_from_string(out["lm_fst"]),
        out["symbols"].split("\n")[:-1],
        out["states"],
        out["transitions"],
        _OptionsByIndex(out["option"], form.flat, problem.eos_option),
        out["s1"],
        out["s2"],
        out["jumps"],
        out["lm_cost"],
        ilabel_sorted=True,
        best=out["best"] if threshold is not None else None,
        lr=tuple(out["lr"]),
    )


class _OptionsByIndex(Sequence):
    """Label -> Option, from the core's option index of each label (−1: ``</s>``; label 0: None)."""

    def __init__(self, indices: list[int], flat: Sequence[Option], eos: Option) -> None:
        self.indices, self.flat, self.eos = indices, flat, eos

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, label):  # type: ignore[override]
        if isinstance(label, slice):
            return [self[k] for k in range(len(self))[label]]
        i = self.indices[label]
        return None if label == 0 else self.eos if i < 0 else self.flat[i]
