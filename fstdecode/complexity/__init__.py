"""Reproducible complexity experiments for phrase-based decoding (docs/complexity.md).

* :mod:`~fstdecode.complexity.tsp` — the bandwidth-limited travelling-salesman
  path problem (Chang & Collins 2017, Section 3) solved by decoding, and
  Held–Karp as the exponential reference (``fstdecode tsp``);
* :mod:`~fstdecode.complexity.knight` — Knight's (1999) reduction from the
  Hamilton circuit / TSP problem: decoding without a distortion limit;
* :mod:`~fstdecode.complexity.bitstrings` — Section 5.2's family of inputs on
  which the coverage bit-vector search meets 2^((n−2)/4) and more bit-strings;
* :mod:`~fstdecode.complexity.bounds` — g(k) of Lemma 4 and Theorem 1's bounds;
* :mod:`~fstdecode.complexity.scaling` — random instances of fixed l and h;
* :mod:`~fstdecode.complexity.problems` — in-memory decoding instances with
  exact (and impossible) bigram scores.

The experiments themselves are ``scripts/complexity_*.py``.
"""

from fstdecode.complexity.bitstrings import count_live_coverages, enumerate_coverages, section52_problem
from fstdecode.complexity.bounds import g
from fstdecode.complexity.knight import held_karp_circuit, knight_problem, solve_circuit
from fstdecode.complexity.problems import EdgeLM
from fstdecode.complexity.tsp import Graph, Tour, held_karp_path, read_graph, solve_tsp, tsp_problem

__all__ = [
    "EdgeLM",
    "Graph",
    "Tour",
    "count_live_coverages",
    "enumerate_coverages",
    "g",
    "held_karp_circuit",
    "held_karp_path",
    "knight_problem",
    "read_graph",
    "section52_problem",
    "solve_circuit",
    "solve_tsp",
    "tsp_problem",
]
