"""A lattice (``decode --method fst --lattice-dir``) written as Moses' ``-output-search-graph``.

Moses writes one line per hypothesis (``Manager::OutputSearchNode`` in moses-smt/mosesdecoder)::

    ID hyp=0 stack=0 forward=F fscore=FS
    ID hyp=H stack=S back=B score=SC transition=TR [recombined=R] forward=F fscore=FS covered=A-E out=WORDS

In the lattice ``I ∘ P ∘ R ∘ L`` a hypothesis is an *operation arc* (output label ``op:…``,
:mod:`fstdecode.fst.reorder`): one phrase placed. The arcs before it with an ε output read
the phrase's source words; the *junctions* are the start state and the states that operation
arcs enter. So, for an operation arc ``u → v`` reached from junction J over such a chain:

* ``back`` is the best hypothesis entering J (0 at the start), and ``recombined`` names the
  best hypothesis entering ``v`` when this one is not it: the lattice's states are already
  merged, as Moses' recombined hypotheses are;
* ``score`` is −(best cost from the start to J, plus the chain and the arc), ``transition``
  the part this arc adds; the closing ``</s>`` operation is folded into the hypotheses that it
  follows, as Moses scores ``</s>`` with the last phrase;
* ``forward`` is the hypothesis after ``v`` on the best path to the end (−1 at the end) and
  ``fscore`` the score of that best complete path through this hypothesis;
* ``covered`` is the operation's source span (0-based, inclusive), ``stack`` its end + 1: the
  signature DP places phrases by source start, so exactly the words up to the end are covered.

Scores are the lattice's (float32 tropical weights, as −cost), so they match the decoder's
double-precision scores to about 1e-4 relative. Unlike Moses' graph, which holds what its beam
kept, the lattice holds the derivations that ``--lattice-prune`` kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pywrapfst as fst

from fstdecode.errors import FstdecodeError
from fstdecode.fst.reorder import parse_op_symbol


class SearchGraphError(FstdecodeError):
    """An FST that is not a lattice written by ``decode --lattice-dir``."""


@dataclass(frozen=True)
class Hypothesis:
    """One line of Moses' search graph (see the module docstring); ``id`` 0 is the start."""

    id: int
    stack: int
    back: int
    score: float
    transition: float
    recombined: int | None
    forward: int
    fscore: float
    start: int
    end: int
    out: str

    def line(self, sentence: int) -> str:
        if self.id == 0:
            return f"{sentence} hyp=0 stack=0 forward={self.forward} fscore={_g(self.fscore)}"
        rec = f" recombined={self.recombined}" if self.recombined is not None else ""
        return (
            f"{sentence} hyp={self.id} stack={self.stack} back={self.back} score={_g(self.score)} "
            f"transition={_g(self.transition)}{rec} forward={self.forward} fscore={_g(self.fscore)} "
            f"covered={self.start}-{self.end} out={self.out}"
        )


def _g(x: float) -> str:
    return f"{x:.6g}"


def _cost(w: fst.Weight) -> float:
    return float(str(w))


def search_graph(lattice: fst.Fst) -> list[Hypothesis]:
    """The hypotheses of ``lattice`` in Moses' terms, the start first, then by stack.

    Raises SearchGraphError if the FST has no operation symbols (not a lattice).
    """
    osyms = lattice.output_symbols()
    if osyms is None or lattice.start() == fst.NO_STATE_ID:
        raise SearchGraphError("not a lattice of `decode --lattice-dir`: no output symbols or no start state")
    zero = fst.Weight.zero(lattice.weight_type())
    start = lattice.start()
    order = _topological(lattice)
    incoming: dict[int, list[tuple[int, fst.Arc]]] = {}
    for q in order:
        for a in lattice.arcs(q):
            incoming.setdefault(a.nextstate, []).append((q, a))
    dist = {start: 0.0}
    for q in order:
        if q not in dist:
            continue
        for a in lattice.arcs(q):
            c = dist[q] + _cost(a.weight)
            if c < dist.get(a.nextstate, math.inf):
                dist[a.nextstate] = c
    back_cost: dict[int, float] = {}
    for q in reversed(order):
        best = _cost(lattice.final(q)) if lattice.final(q) != zero else math.inf
        for a in lattice.arcs(q):
            best = min(best, _cost(a.weight) + back_cost.get(a.nextstate, math.inf))
        back_cost[q] = best
    ops = []  # (arc source, arc, op fields) of every operation arc, in topological order
    for q in order:
        for a in lattice.arcs(q):
            if a.olabel != 0:
                symbol = osyms.find(a.olabel)
                if not symbol.startswith("op:"):
                    raise SearchGraphError(f"output symbol {symbol!r} is not an operation: not a lattice")
                ops.append((q, a, parse_op_symbol(symbol)))
    closing: dict[int, float] = {}  # state -> cost of the </s> operation that leaves it
    for q, a, op in ops:
        if op[6] == "</s>":
            closing[q] = min(closing.get(q, math.inf), _cost(a.weight) + back_cost.get(a.nextstate, math.inf))
    return _hypotheses(lattice, start, ops, incoming, dist, back_cost, closing)


def _hypotheses(lattice, start, ops, incoming, dist, back_cost, closing) -> list[Hypothesis]:
    """One Hypothesis per (origin junction, operation arc); see :func:`search_graph`."""
    entries = []  # (origin junction, chain cost, u, arc, op)
    for u, a, op in ops:
        if op[6] == "</s>":
            continue
        for junction, chain in _origins(u, incoming, start):
            if junction in dist:  # reachable (a trimmed lattice has no other state)
                entries.append((junction, chain, u, a, op))
    ids = dict(enumerate(entries, 1))
    score: dict[int, float] = {}
    into: dict[int, list[int]] = {}
    for k, (junction, chain, u, a, op) in ids.items():
        v = a.nextstate
        # A hypothesis that completes the sentence carries the </s> operation that follows it.
        score[k] = -(dist[junction] + chain + _cost(a.weight) + closing.get(v, 0.0))
        into.setdefault(v, []).append(k)
    winner = {v: max(ks, key=lambda k: (score[k], -k)) for v, ks in into.items()}
    forward_of: dict[int, int] = {}  # junction -> best hypothesis leaving it toward the end
    fscore: dict[int, float] = {}
    for k, (junction, chain, u, a, op) in ids.items():
        v = a.nextstate
        rest = back_cost.get(v, math.inf)
        fscore[k] = -(dist[junction] + chain + _cost(a.weight) + rest)
        best = forward_of.get(junction)
        if best is None or fscore[k] > fscore[best]:
            forward_of[junction] = k
    out = [Hypothesis(0, 0, -1, 0.0, 0.0, None, forward_of.get(start, -1), -back_cost[start], -1, -1, "")]
    for k, (junction, chain, u, a, op) in ids.items():
        v = a.nextstate
        back = 0 if junction == start else winner[junction]
        prev = 0.0 if junction == start else score[back]
        s, t, target = op[0] - 1, op[1] - 1, op[6]
        rec = winner[v] if winner[v] != k else None
        forward = forward_of.get(v, -1) if v not in closing else -1
        out.append(Hypothesis(k, t + 1, back, score[k], score[k] - prev, rec, forward, fscore[k], s, t, target))
    return [out[0]] + sorted(out[1:], key=lambda h: (h.stack, h.id))


def _origins(u: int, incoming, start: int) -> list[tuple[int, float]]:
    """The junctions that reach state ``u`` over arcs with an ε output (source words of one
    phrase), each with the cost of that chain; ``u`` itself (cost 0) when it is a junction."""
    found: list[tuple[int, float]] = []
    stack = [(u, 0.0)]
    while stack:
        q, cost = stack.pop()
        arcs = incoming.get(q, [])
        if q == start or any(a.olabel != 0 for _, a in arcs):
            found.append((q, cost))
            continue
        for p, a in arcs:
            stack.append((p, cost + _cost(a.weight)))
    return found


def _topological(lattice: fst.Fst) -> list[int]:
    """The lattice's states in topological order (it is acyclic: I is a linear acceptor)."""
    indegree = {q: 0 for q in lattice.states()}
    for q in lattice.states():
        for a in lattice.arcs(q):
            indegree[a.nextstate] += 1
    ready = [q for q, d in indegree.items() if d == 0]
    order = []
    while ready:
        q = ready.pop()
        order.append(q)
        for a in lattice.arcs(q):
            indegree[a.nextstate] -= 1
            if indegree[a.nextstate] == 0:
                ready.append(a.nextstate)
    if len(order) != len(indegree):
        raise SearchGraphError("the FST has a cycle: not a lattice")
    return order


def search_graph_lines(lattice: fst.Fst, sentence: int) -> list[str]:
    """Moses' ``-output-search-graph`` lines of ``lattice``, for input line ``sentence``."""
    return [h.line(sentence) for h in search_graph(lattice)]
