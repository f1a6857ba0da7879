"""Knight's (1999) reduction, Section 4.1: a Hamilton circuit (or TSP) instance as a decoding instance.

Knight's graph has vertices 0..n; vertex 0 is the sentence boundary e0.
Here graphs are :class:`~fstdecode.research.tsp.Graph` objects on 1..n
(the edge-list format of ``fstdecode tsp``), so **vertex 1 plays Knight's
vertex 0** and vertices 2..n play his 1..n−1. The construction:

* the input sentence is f_2 .. f_n (n − 1 source words, token index v − 2);
* the dictionary is one-to-one: f_v translates only as e_v (Knight's
  s(f_j | e_i) = 1 iff i = j), score 0;
* the bigram LM carries the edge weights: λ(e_v | e_u) = −w(u, v), with
  e_1 = ``<s>`` as a context (edges 1 → v) and ``</s>`` as a predicted
  word (edges u → 1). A missing edge is an impossible bigram (−inf; Knight
  gives it probability 0, and the files written by
  :func:`write_knight_model` say so with an explicit ``-inf`` bigram);
* every other weight is 0, so a derivation's score is −(circuit cost).

A derivation with a finite score is then a Hamilton circuit
1 → e-order → 1 and conversely, *provided the distortion limit lets every
order through*: with n − 1 tokens the largest jump of a permutation is
from the last token back to the first, |(n − 1) + 1 − 1| = n − 1, so
d >= n − 1 (the number of source words) makes the decoder a TSP solver.
With a fixed d the decoder solves the TSP restricted to orders whose
jumps stay within d, in time linear in n.
"""

from __future__ import annotations


import math
from pathlib import Path

from fstdecode.research.problems import EdgeLM, word_for_word_problem
from fstdecode.research.tsp import Graph, Tour, held_karp_path
from fstdecode.errors import FstdecodeError
from fstdecode.io.arpa import BOS, EOS, LN10
from fstdecode.search import signature_dp
from fstdecode.search.base import MAX_INT_OPTION
from fstdecode.problem.problem import SearchProblem

__all__ = [
    "KnightError",
    "source_words",
    "target_words",
    "knight_lm",
    "knight_problem",
    "unlimited_d",
    "circuit_of",
    "solve_circuit",
    "circuit_as_path",
    "held_karp_circuit",
    "write_knight_model",
]


class KnightError(FstdecodeError):
    """A graph that Knight's construction cannot take (fewer than 2 vertices)."""


def _check(graph: Graph) -> None:
    if graph.n < 2:
        raise KnightError(f"a circuit instance needs >= 2 vertices, got {graph.n}")


def source_words(graph: Graph) -> tuple[str, ...]:
    """f_2 .. f_n: one source word per vertex but the boundary vertex 1."""
    return tuple(f"f{v}" for v in range(2, graph.n + 1))


def target_words(graph: Graph) -> tuple[str, ...]:
    """e_2 .. e_n, the one-to-one translations of :func:`source_words`."""
    return tuple(f"e{v}" for v in range(2, graph.n + 1))


def knight_lm(graph: Graph) -> dict[tuple[str, str], float]:
    """The bigram table: (e_u, e_v) -> −w(u, v), with e_1 = <s> as context and </s> as word."""
    _check(graph)
    table = {}
    for (u, v), w in graph.weights.items():
        a = BOS if u == 1 else f"e{u}"
        b = EOS if v == 1 else f"e{v}"
        table[(a, b)] = -w
    return table


def unlimited_d(graph: Graph) -> int:
    """n − 1, the number of source words: the smallest d that admits every word order."""
    return graph.n - 1


def knight_problem(graph: Graph, d: int | None = None) -> SearchProblem:
    """The decoding instance of Knight's reduction, with distortion limit ``d`` (default n − 1)."""
    _check(graph)
    return word_for_word_problem(
        source_words(graph), target_words(graph), EdgeLM(knight_lm(graph)), unlimited_d(graph) if d is None else d
    )


def circuit_of(phrases) -> tuple[int, ...]:
    """The circuit of a derivation: 1, the vertices of its phrases in target order, 1."""
    return (1, *(p.start + 2 for p in phrases), 1)


def solve_circuit(graph: Graph, d: int | None = None, max_states: int | None = None) -> Tour:
    """The cheapest Hamilton circuit by decoding Knight's instance (exact for d >= n − 1).

    ``tour`` starts and ends at vertex 1; ``cost`` is None when no
    circuit (with jumps <= d) exists.
    """
    problem = knight_problem(graph, d)
    result = signature_dp.search(problem, signature_dp.DpOptions(max_states=max_states or MAX_INT_OPTION))
    score, phrases = result.hypotheses[0]
    if score == -math.inf:
        return Tour(None, (), result.states, result.transitions, problem.d)
    tour = circuit_of(phrases)
    cost = graph.path_cost(tour)
    if cost is None:
        raise KnightError(f"internal: derivation {tour} uses a missing edge")
    return Tour(cost, tour, result.states, result.transitions, problem.d)


def circuit_as_path(graph: Graph) -> Graph:
    """The TSPP whose 1-(n+1) paths are the circuits of ``graph``: vertex 1 split into 1 and n + 1."""
    n = graph.n
    weights = {(u, n + 1 if v == 1 else v): w for (u, v), w in graph.weights.items()}
    return Graph(n + 1, weights)


def held_karp_circuit(graph: Graph) -> Tour:
    """The cheapest Hamilton circuit through vertex 1, by Held–Karp on :func:`circuit_as_path`."""
    _check(graph)
    best = held_karp_path(circuit_as_path(graph))
    if best.cost is None:
        return best
    return Tour(best.cost, best.tour[:-1] + (1,))


def write_knight_model(graph: Graph, directory: str | Path) -> tuple[Path, Path, Path]:
    """Write Knight's instance as real files: ``phrase-table``, ``lm.arpa`` and ``input.txt``.

    The phrase table holds ``f_v ||| e_v ||| 1`` (ln 1 = 0). The ARPA file
    lists *every* bigram over <s>, e_2..e_n, </s>: an edge's as
    −w / ln 10 (log10), a missing edge's as ``-inf`` — without the explicit
    ``-inf`` line, back-off would give a missing edge a finite score.
    Decode with ``fstdecode decode --phrase-table DIR/phrase-table --lm
    DIR/lm.arpa -d <n − 1> --weight distortion=0`` (word and phrase
    penalties default to 0). Returns the three paths.
    """
    _check(graph)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    src, tgt = source_words(graph), target_words(graph)
    table = out / "phrase-table"
    table.write_text("".join(f"{f} ||| {e} ||| 1\n" for f, e in zip(src, tgt)), encoding="utf-8")
    scores = knight_lm(graph)
    unigrams = [f"-99\t{BOS}\t0", f"0\t{EOS}", *(f"0\t{e}\t0" for e in tgt)]
    bigrams = []
    for a in (BOS, *tgt):
        for b in (*tgt, EOS):
            if a == b or (a == BOS and b == EOS):
                continue
            s = scores.get((a, b))
            bigrams.append(f"{'-inf' if s is None else repr(s / LN10)}\t{a} {b}")
    arpa = out / "lm.arpa"
    arpa.write_text(
        "\n".join(["\\data\\", f"ngram 1={len(unigrams)}", f"ngram 2={len(bigrams)}", "", "\\1-grams:", *unigrams,
                   "", "\\2-grams:", *bigrams, "", "\\end\\", ""]),
        encoding="utf-8",
    )
    sentence = out / "input.txt"
    sentence.write_text(" ".join(src) + "\n", encoding="utf-8")
    return table, arpa, sentence
