"""R: the reordering automaton of signature states, built per sentence.

States are the signature states ``(j, sigs)`` of Chang & Collins (Section
4.2) reachable from the start under this sentence's phrase options, created
in order of j: the same space the DP walks (:func:`fstdecode.search.signature.expand`,
so every state passes ``valid()`` of Figure 5). Arcs:

* input: the phrase-pair label that P writes (ε for the closing ``</s>``);
* output: an *operation* symbol ``op:s-t:s1:t1:s2:label:target``
  (positions as in :mod:`fstdecode.search.problem`; s1/t1 are the start and
  end of ψ1 and s2 the start of ψ2, −1 for φ; label is P's pair label), then the target bigrams the operation creates — first those
  inside the phrase, then the junctions with ψ1 and ψ2 — as symbols ``a b``;
* weight: the distortion feature times its weight (−eta·jumps as a cost).

The operation symbols alone rebuild the derivation (the tapes are replayed
from s1/s2), so a lattice can be read without the search.

A transition ψ1 p ψ2 becomes a short chain: ``(j, sigs) -label:ε-> m``
then the bigrams inside p (shared by all transitions of this state and
phrase), then ``-ε:op/cost->`` and the junction bigrams into the new state.
"""

from __future__ import annotations

from dataclasses import dataclass

import pywrapfst as fst

from fstdecode.search.problem import Option, SearchLimitError, SearchProblem
from fstdecode.search.signature import PHI, Sigs, expand, goal_state, start_state


@dataclass(frozen=True)
class Reordering:
    """R with its output symbols and what the cascade needs to read paths back.

    ``ops[label]`` is ``(option, s1, s2, jumps)`` for an operation label;
    ``bigrams[label]`` is ``(a, b)`` (word ids of the problem) for a bigram label.
    """

    fst: fst.VectorFst
    symbols: fst.SymbolTable
    ops: dict[int, tuple[Option, int, int, int]]
    bigrams: dict[int, tuple[int, int]]
    states: int
    transitions: int


def op_symbol(opt: Option, s1: int, t1: int, s2: int, label: int, target: str) -> str:
    return f"op:{opt.s}-{opt.t}:{s1}:{t1}:{s2}:{label}:{target}"


def parse_op_symbol(symbol: str) -> tuple[int, int, int, int, int, int, str]:
    """``(s, t, s1, t1, s2, label, target)`` of an operation symbol; jumps follow from them."""
    _, span, s1, t1, s2, label, target = symbol.split(":", 6)
    s, t = span.split("-")
    return int(s), int(t), int(s1), int(t1), int(s2), int(label), target


def op_jumps(s: int, t: int, t1: int, s2: int) -> int:
    """Distortion distances of an operation: |t(ψ1)+1−s(p)| and |t(p)+1−s(ψ2)| (Figure 4)."""
    return (abs(t1 + 1 - s) if t1 != PHI else 0) + (abs(t + 1 - s2) if s2 != PHI else 0)


class _Builder:
    def __init__(self, problem: SearchProblem, labels: dict[int, int]) -> None:
        self.problem = problem
        self.labels = labels  # id(phrase pair) -> P's output label
        self.r = fst.VectorFst()
        self.syms = fst.SymbolTable("reorder")
        self.syms.add_symbol("<eps>", 0)
        self.ops: dict[int, tuple[Option, int, int, int]] = {}
        self.bigrams: dict[int, tuple[int, int]] = {}
        self._bigram_label: dict[tuple[int, int], int] = {}

    def bigram(self, a: int, b: int) -> int:
        key = (a, b)
        label = self._bigram_label.get(key)
        if label is None:
            v = self.problem.vocab
            label = self._bigram_label[key] = self.syms.add_symbol(f"{v[a]} {v[b]}")
            self.bigrams[label] = key
        return label

    def op(self, opt: Option, s1: int, t1: int, s2: int) -> int:
        label = self.input_label(opt)
        target = " ".join(opt.phrase.target) if opt.phrase else "</s>"
        lab = self.syms.add_symbol(op_symbol(opt, s1, t1, s2, label, target))
        self.ops[lab] = (opt, s1, s2, op_jumps(opt.s, opt.t, t1, s2))
        return lab

    def input_label(self, opt: Option) -> int:
        if opt.phrase is None:
            return 0
        return self.labels[id(opt.phrase.pair)]

    def chain(self, state: int, olabels: list[int], last_cost: float, end: int, first_cost_at: int = 0) -> None:
        """Arcs ε:olabel from ``state`` through fresh states to ``end``; the cost on arc ``first_cost_at``."""
        r = self.r
        for k, lab in enumerate(olabels):
            nxt = end if k == len(olabels) - 1 else r.add_state()
            r.add_arc(state, fst.Arc(0, lab, last_cost if k == first_cost_at else 0.0, nxt))
            state = nxt


def build_reordering(problem: SearchProblem, labels: dict[int, int], max_states: int | None = None) -> Reordering:
    """Build R for one sentence, reachable states only, in order of j.

    ``labels`` maps ``id(pair)`` of each option's phrase pair to P's output label.
    Raises SearchLimitError after ``max_states`` signature states.
    """
    b = _Builder(problem, labels)
    r = b.r
    end = problem.end
    eta = problem.eta
    layers: list[dict[Sigs, int]] = [{} for _ in range(end + 1)]
    start = r.add_state()
    r.set_start(start)
    layers[0][start_state(problem)] = start
    states, transitions = 1, 0
    for j in range(end):
        for sigs, sid in layers[j].items():
            by_start = {sg[0]: sg for sg in sigs}
            inner: dict[int, int] = {}  # id(option) -> state after its input label and inner bigrams
            for t, new, _, opt, s1, s2 in expand(problem, j, sigs):
                transitions += 1
                target = layers[t].get(new)
                if target is None:
                    states += 1
                    if max_states is not None and states > max_states:
                        raise SearchLimitError(f"more than {max_states} states (--max-states)")
                    target = layers[t][new] = r.add_state()
                mid = inner.get(id(opt))
                if mid is None:
                    mid = inner[id(opt)] = r.add_state()
                    ids = [problem.word_id(w) for w in opt.phrase.target] if opt.phrase else []
                    inside = [b.bigram(x, y) for x, y in zip(ids, ids[1:])]
                    if inside:
                        first = r.add_state()
                        r.add_arc(sid, fst.Arc(b.input_label(opt), 0, 0.0, first))
                        b.chain(first, inside, 0.0, mid)
                    else:
                        r.add_arc(sid, fst.Arc(b.input_label(opt), 0, 0.0, mid))
                a = by_start[s1] if s1 != PHI else None
                c = by_start[s2] if s2 != PHI else None
                op = b.op(opt, s1, a[2] if a else PHI, s2)
                out = [op]
                if a:
                    out.append(b.bigram(a[3], opt.first))
                if c:
                    out.append(b.bigram(opt.last, c[1]))
                b.chain(mid, out, eta * b.ops[op][3], target)
    goal = layers[end].get(goal_state(problem))
    if goal is not None:
        r.set_final(goal)
    r.set_output_symbols(b.syms)
    return Reordering(r, b.syms, b.ops, b.bigrams, states, transitions)
