"""Reproducible complexity experiments for phrase-based decoding (docs/complexity.md).

* :mod:`~fstdecode.research.tsp` — the bandwidth-limited travelling-salesman
  path problem (Chang & Collins 2017, Section 3) solved by decoding, and
  Held–Karp as the exponential reference (``fstdecode tsp``);
* :mod:`~fstdecode.research.knight` — Knight's (1999) reduction from the
  Hamilton circuit / TSP problem: decoding without a distortion limit;
* :mod:`~fstdecode.research.bitstrings` — Section 5.2's family of inputs on
  which the coverage bit-vector search meets 2^((n−2)/4) and more bit-strings;
* :mod:`~fstdecode.research.bounds` — g(k) of Lemma 4 and Theorem 1's bounds;
* :mod:`~fstdecode.research.scaling` — random instances of fixed l and h;
* :mod:`~fstdecode.research.problems` — in-memory decoding instances with
  exact (and impossible) bigram scores.

The experiments themselves are ``scripts/complexity_*.py``.
"""

from fstdecode.research.bitstrings import count_live_coverages, enumerate_coverages, section52_problem
from fstdecode.research.bounds import g
from fstdecode.research.knight import held_karp_circuit, knight_problem, solve_circuit
from fstdecode.research.problems import EdgeLM
from fstdecode.research.tsp import Graph, Tour, held_karp_path, read_graph, solve_tsp, tsp_problem

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
