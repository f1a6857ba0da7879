"""The travelling-salesman path problem on bandwidth-limited graphs, solved by decoding.

Chang & Collins (2017), Section 3: a directed graph on vertices 1..n has
bandwidth k when every edge (i, j) has |i − j| <= k; the TSP *path*
problem (TSPP) asks for the cheapest path from vertex 1 to vertex n that
visits every vertex exactly once. Their Section 4 DP is the phrase-based
analogue of the Lawler et al. algorithm for it; this module runs the
reduction the other way and solves a TSPP *with the decoder*.

The mapping (:func:`tsp_problem`); positions as in
:mod:`fstdecode.problem.problem`:

* vertex v sits at decoding position v − 1: vertex 1 is ``<s>``
  (position 0), vertex n is ``</s>`` (position n − 1 = end), and the
  vertices 2..n−1 are the n − 2 input tokens (token index v − 2,
  source word ``v<v>``);
* each token has exactly one phrase, a single word translating to the
  target word ``v<v>`` with score 0 (so a derivation is an order of the
  vertices, from 1 to n);
* the bigram score of (u, v) is −w(u, v) for every edge; every other
  bigram is impossible (−inf, see :mod:`fstdecode.research.problems`).
  Edges into vertex 1 or out of vertex n cannot lie on a 1-n path and
  are dropped. All other weights are 0, so score = −(path cost);
* the distortion limit is d = k + 1.

Why d = k + 1 (Definition 2): with single-word phrases the step u → v
of a tour is a jump |t(p_{i−1}) + 1 − s(p_i)| = |(u − 1) + 1 − (v − 1)| =
|u + 1 − v|. Every edge of a bandwidth-k graph has |u − v| <= k, so
|u + 1 − v| <= |u − v| + 1 <= k + 1 = d: *every tour is a derivation*.
Conversely a derivation with jumps <= d may step from u to v with
v − u = k + 1 or k + 2 (|u + 1 − v| <= k + 1 only bounds v − u by k + 2);
no such edge exists in a bandwidth-k graph, its bigram is −inf, so a
derivation with a finite score uses edges only: *every finite derivation
is a tour*, of cost −score. d = k + 1 is tight for k >= 3 (the tour
1, 3, 5, 2, 4, 6 of bandwidth 3 jumps |5 + 1 − 2| = 4); for k = 1 and
k = 2 a smaller d would do, but k + 1 is always enough.

Held–Karp (:func:`held_karp_path`) is the exact exponential reference.
"""

from __future__ import annotations


import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from fstdecode.research.problems import EdgeLM, word_for_word_problem
from fstdecode.errors import FstdecodeError
from fstdecode.io.arpa import BOS, EOS
from fstdecode.io.files import read_lines
from fstdecode.search import signature_dp
from fstdecode.search.base import MAX_INT_OPTION
from fstdecode.problem.problem import SearchError, SearchProblem

__all__ = [
    "TspError",
    "Graph",
    "Tour",
    "parse_graph",
    "read_graph",
    "distortion_limit_for_bandwidth",
    "tsp_problem",
    "tour_of",
    "solve_tsp",
    "held_karp_path",
    "HELD_KARP_MAX_VERTICES",
]

#: Held–Karp keeps n · 2^n numbers; beyond this the reference solver refuses.
HELD_KARP_MAX_VERTICES = 20


class TspError(FstdecodeError):
    """A graph file or a TSP instance the solvers cannot use (names the file and line)."""


@dataclass(frozen=True)
class Graph:
    """A weighted directed graph on vertices 1..n (Section 3.1).

    Invariants: every key (i, j) of ``weights`` has 1 <= i, j <= n and
    i != j; every weight is finite.
    """

    n: int
    weights: Mapping[tuple[int, int], float] = field(default_factory=dict)

    @property
    def bandwidth(self) -> int:
        """The smallest k with |i − j| <= k for every edge (0 without edges)."""
        return max((abs(i - j) for i, j in self.weights), default=0)

    def path_cost(self, tour: Sequence[int]) -> float | None:
        """The sum of the weights along ``tour``, or None if some step is not an edge."""
        total = 0.0
        for u, v in zip(tour, tour[1:]):
            w = self.weights.get((u, v))
            if w is None:
                return None
            total += w
        return total


@dataclass(frozen=True)
class Tour:
    """A solver's answer: the best 1-n path and its cost, or ``cost is None`` when none exists.

    ``states``/``transitions`` are the search's counts (0 for trivial
    cases); ``d`` is the distortion limit the decoder ran with (-1 when
    no decoder ran).
    """

    cost: float | None
    tour: tuple[int, ...]
    states: int = 0
    transitions: int = 0
    d: int = -1


def _parse_edge(name: str, lineno: int, fields: list[str]) -> tuple[int, int, float]:
    """One ``i j weight`` line; raises TspError naming ``name:lineno``."""
    where = f"{name}:{lineno}"
    if len(fields) != 3:
        raise TspError(f"{where}: expected 'i j weight' (3 fields), got {len(fields)}")
    try:
        i, j = int(fields[0]), int(fields[1])
    except ValueError:
        raise TspError(f"{where}: vertices must be integers >= 1, got {fields[0]!r} {fields[1]!r}") from None
    if i < 1 or j < 1:
        raise TspError(f"{where}: vertices are numbered from 1, got {i} {j}")
    if i == j:
        raise TspError(f"{where}: self-loop {i} -> {j}; a tour never uses one")
    try:
        w = float(fields[2])
    except ValueError:
        raise TspError(f"{where}: weight {fields[2]!r} is not a number") from None
    if not math.isfinite(w):
        raise TspError(f"{where}: weight {fields[2]!r} is not finite; leave the edge out instead")
    return i, j, w


def parse_graph(text: str, name: str = "<graph>", vertices: int | None = None, bandwidth: int | None = None) -> Graph:
    """Read an edge list: one ``i j weight`` per line, 1-based vertices, ``#`` starts a comment.

    n is the largest vertex named, or ``vertices`` if larger (a vertex
    without edges must be declared that way). With ``bandwidth`` given,
    an edge with |i − j| > bandwidth is an error. Raises TspError naming
    ``name`` and the line for every malformed or duplicated edge.
    """
    weights: dict[tuple[int, int], float] = {}
    first_line: dict[tuple[int, int], int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        i, j, w = _parse_edge(name, lineno, fields)
        if (i, j) in weights:
            raise TspError(f"{name}:{lineno}: edge {i} -> {j} already given on line {first_line[(i, j)]}")
        if bandwidth is not None and abs(i - j) > bandwidth:
            raise TspError(f"{name}:{lineno}: edge {i} -> {j} spans {abs(i - j)} > bandwidth {bandwidth}")
        weights[(i, j)] = w
        first_line[(i, j)] = lineno
    n = max((max(e) for e in weights), default=0)
    if vertices is not None:
        if vertices < n:
            raise TspError(f"{name}: --vertices {vertices} but the file names vertex {n}")
        n = vertices
    if n < 1:
        raise TspError(f"{name}: no edges and no vertex count; give edges 'i j weight' or --vertices N")
    return Graph(n, weights)


def read_graph(path: str | Path, vertices: int | None = None, bandwidth: int | None = None) -> Graph:
    """:func:`parse_graph` on a UTF-8 file (plain or gzip, :func:`~fstdecode.io.files.read_lines`); raises
    TspError naming the file (and line) when it cannot be read."""
    text = "\n".join(read_lines(path, TspError))  # once, each line bounded (a pipe works, /dev/zero is refused)
    return parse_graph(text, str(path), vertices, bandwidth)


def distortion_limit_for_bandwidth(k: int) -> int:
    """d = k + 1: every step of a bandwidth-k tour jumps |u + 1 − v| <= k + 1 (module docstring)."""
    if k < 0:
        raise TspError(f"bandwidth must be >= 0, got {k}")
    return k + 1


def _word(v: int, n: int) -> str:
    """The target word of vertex v: <s> for 1, </s> for n, else ``v<v>``."""
    return BOS if v == 1 else EOS if v == n else f"v{v}"


def tsp_problem(graph: Graph, bandwidth: int | None = None) -> SearchProblem:
    """The decoding instance of a TSPP (module docstring); ``bandwidth`` defaults to the graph's.

    Requires n >= 2 (vertex 1 and vertex n must differ to be <s> and </s>).
    Raises TspError when the graph exceeds ``bandwidth``.
    """
    n = graph.n
    if n < 2:
        raise TspError("a decoding instance needs n >= 2 vertices (<s> and </s>)")
    k = graph.bandwidth if bandwidth is None else bandwidth
    if graph.bandwidth > k:
        raise TspError(f"the graph has bandwidth {graph.bandwidth} > {k}")
    scores = {
        (_word(u, n), _word(v, n)): -w for (u, v), w in graph.weights.items() if v != 1 and u != n
    }
    inner = [f"v{v}" for v in range(2, n)]
    return word_for_word_problem(inner, inner, EdgeLM(scores), distortion_limit_for_bandwidth(k))


def tour_of(problem: SearchProblem, phrases) -> tuple[int, ...]:
    """The vertex order of a derivation: 1, then vertex (token index + 2) per phrase, then n."""
    return (1, *(p.start + 2 for p in phrases), problem.n + 2)


def solve_tsp(graph: Graph, bandwidth: int | None = None, max_states: int | None = None) -> Tour:
    """The optimal 1-n path of a bandwidth-limited graph, by the signature DP on :func:`tsp_problem`.

    Time O(n · g(k + 3) · (k + 3)²): linear in n for a fixed bandwidth k.
    Returns ``Tour(cost=None, tour=())`` when no 1-n path visits every vertex.
    """
    if graph.n == 1:
        return Tour(0.0, (1,))
    usable = sum(1 for u, v in graph.weights if v != 1 and u != graph.n and u != v)
    if usable < graph.n - 1:  # a 1-n path through all n vertices takes n - 1 edges: none, and nothing allocated
        return Tour(None, (), 0, 0, distortion_limit_for_bandwidth(graph.bandwidth if bandwidth is None else bandwidth))
    budget = max_states or MAX_INT_OPTION
    if graph.n - 1 > budget:  # the DP keeps at least one state per vertex after the first
        raise TspError(f"{graph.n:,} vertices: the DP needs at least {graph.n - 1:,} states, more than its budget "
                       f"of {budget:,} (--max-states)")
    problem = tsp_problem(graph, bandwidth)
    try:
        result = signature_dp.search(problem, signature_dp.DpOptions(max_states=max_states or MAX_INT_OPTION))
    except SearchError as e:  # no derivation at all (cannot happen with d >= 1, kept for safety)
        raise TspError(str(e)) from None
    score, phrases = result.hypotheses[0]
    if score == -math.inf:
        return Tour(None, (), result.states, result.transitions, problem.d)
    tour = tour_of(problem, phrases)
    cost = graph.path_cost(tour)
    if cost is None:  # a finite score uses edges only (module docstring)
        raise TspError(f"internal: derivation {tour} uses a missing edge")
    return Tour(cost, tour, result.states, result.transitions, problem.d)


def held_karp_path(graph: Graph) -> Tour:
    """The optimal 1-n path by Held–Karp's subset DP: exact, O(2^n · n · degree) time.

    ``best[S][v]``: the cheapest path from 1 through exactly the vertex
    set S (bit v−1 for vertex v), ending at v; n is only entered last.
    Raises TspError above :data:`HELD_KARP_MAX_VERTICES` vertices.
    """
    n = graph.n
    if n > HELD_KARP_MAX_VERTICES:
        raise TspError(f"Held-Karp is exponential: n = {n} > {HELD_KARP_MAX_VERTICES}")
    if n == 1:
        return Tour(0.0, (1,))
    out: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for (u, v), w in graph.weights.items():
        if v != 1 and u != n:
            out[u - 1].append((v - 1, w))
    inf = math.inf
    full = (1 << n) - 1
    last_bit = 1 << (n - 1)
    best = [[inf] * n for _ in range(1 << n)]
    back = [[-1] * n for _ in range(1 << n)]
    best[1][0] = 0.0
    for mask in range(1, full, 2):  # masks holding vertex 1, in increasing order
        if mask & last_bit:
            continue
        row = best[mask]
        for u in range(n):
            cost = row[u]
            if cost == inf:
                continue
            for v, w in out[u]:
                bit = 1 << v
                if mask & bit or (v == n - 1 and mask | bit != full):
                    continue
                nmask = mask | bit
                if cost + w < best[nmask][v]:
                    best[nmask][v] = cost + w
                    back[nmask][v] = u
    if best[full][n - 1] == inf:
        return Tour(None, ())
    tour = [n - 1]
    mask = full
    while tour[-1] != 0:
        u = back[mask][tour[-1]]
        mask ^= 1 << tour[-1]
        tour.append(u)
    return Tour(best[full][n - 1], tuple(v + 1 for v in reversed(tour)))
