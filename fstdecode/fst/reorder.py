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
* weight: the distortion feature times its weight, as a cost (eta · jumps).

The operation symbols alone rebuild the derivation (the tapes are replayed
from s1/s2) and carry everything L scores.
"""

from __future__ import annotations

from dataclasses import dataclass

import pywrapfst as fst

from fstdecode.fst.binary import vector_fst
from fstdecode.problem.problem import Option, SearchLimitError, SearchProblem
from fstdecode.statespace.ngram import Event, join, state_space
from fstdecode.statespace.signature import PHI, Sigs


@dataclass(frozen=True)
class Operation:
    """What an output label of R stands for: a transition and the LM events it settles.

    ``events`` are ``(context, word)`` (ln p(word | context)) or
    ``(context, None)`` (a backoff charged by state minimisation), in word
    ids of the problem; ``jumps`` is the sum of the distortion distances
    |t(ψ1)+1−s(p)| and |t(p)+1−s(ψ2)| (Figure 4).
    """

    option: Option
    s1: int
    s2: int
    jumps: int
    events: tuple[Event, ...]


@dataclass(frozen=True)
class Reordering:
    """R, its output symbols, and ``ops[label]`` for every output label."""

    fst: fst.VectorFst
    symbols: fst.SymbolTable
    ops: dict[int, Operation]
    states: int
    transitions: int


def _token(p: int) -> str:
    """A search position as a 0-based token position (``<s>`` = −1, ``</s>`` = n); φ as ``_``."""
    return "_" if p == PHI else str(p - 1)


def _position(text: str) -> int:
    """The inverse of :func:`_token`."""
    return PHI if text == "_" else int(text) + 1


def parse_op_symbol(symbol: str) -> tuple[int, int, int, int, int, int, str, list[str]]:
    """``(s, t, s1, t1, s2, label, target, events)`` of an operation symbol, in search positions.

    The symbol spells positions as 0-based tokens (``op:S-T:S1:T1:S2:…``, φ as
    ``_``); the tuple gives them back as the search counts them (``<s>`` = 0).
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

    def __init__(self, problem: SearchProblem, labels: dict[int, int], minimize: bool) -> None:
        self.problem = problem
        self.labels = labels  # id(phrase pair) -> P's output label
        self.minimize = minimize
        self.syms = fst.SymbolTable("reorder")
        self.syms.add_symbol("<eps>", 0)
        self.ops: dict[int, Operation] = {}
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
        if self.problem.order == 2:
            # Only ψ1's end and last word and ψ2's start and first word matter.
            short = (id(opt), s1, t1, a[3] if a else PHI, s2, c[1] if c else PHI)
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
        v = self.problem.vocab
        target = " ".join(opt.phrase.target) if opt.phrase else "</s>"
        span = f"{_token(opt.s)}-{_token(opt.t)}:{_token(s1)}:{_token(t1)}:{_token(s2)}"
        head = f"op:{span}:{self.input_label(opt)}:{target}"
        label = self.cache[key] = self._short[short] = self.syms.add_symbol(
            head + "".join("|" + event_text(e, v) for e in events)
        )
        self.ops[label] = Operation(opt, s1, s2, jumps, tuple(events))
        self.arc_parts[label] = (self.input_label(opt), self.problem.eta * jumps)
        return label


def build_reordering(
    problem: SearchProblem, labels: dict[int, int], max_states: int | None = None, minimize: bool = True
) -> Reordering:
    """Build R for one sentence, reachable states only, in order of j.

    ``labels`` maps ``id(pair)`` of each option's phrase pair to P's output label.
    Raises SearchLimitError after ``max_states`` signature states. The arcs
    are collected in arrays and turned into a VectorFst at once
    (:func:`fstdecode.fst.binary.vector_fst`).
    """
    b = _Builder(problem, labels, minimize)
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
            for t, new, _, opt, s1, s2 in expand(problem, j, sigs):
                transitions += 1
                target = layers[t].get(new)
                if target is None:
                    target = layers[t][new] = states
                    states += 1
                    if max_states is not None and states > max_states:
                        raise SearchLimitError(f"more than {max_states} states (--max-states)")
                a, c = by_start.get(s1), by_start.get(s2)
                op = cache.get((id(opt), a, c))
                if op is None:
                    op = b.op(j, opt, a, c)
                ilabel, cost = arc_parts[op]
                src.append(sid)
                ilabels.append(ilabel)
                olabels.append(op)
                costs.append(cost)
                dst.append(target)
    goal = layers[end].get(goal_sigs)
    finals = {goal: 0.0} if goal is not None else {}
    r = vector_fst(states, 0, finals, src, ilabels, olabels, costs, dst)
    r.set_output_symbols(b.syms)
    return Reordering(r, b.syms, b.ops, states, transitions)
