"""The counting functions behind Theorem 1 of Chang & Collins (2017).

A *p-structure* over a finite set A (Definition 4) is a set of ordered
pairs {(s_i, t_i)} with s_i, t_i in A (s_i = t_i allowed) in which every
element of A occurs in at most one pair. g(k) is the number of
p-structures over a set of k elements; a DP state at position j has its
tape ends in {1} ∪ {j − d .. j}, a set of d + 2 positions, hence at most
g(d + 2) end-point patterns and at most g(d + 2) · h^(d+1) states per j.

Lemma 4 states g(0) = 0, g(1) = 2, g(k) = 2g(k−1) + 2(n−1)g(k−2). Two
things in it are typos, and this module uses the corrected forms:

* "(n − 1)" should be "(k − 1)", as the proof in Appendix A derives
  (Cases 3 and 4 pick the partner of element 1 among the other k − 1);
* g(0) must be 1, not 0: the empty set has exactly one p-structure, ∅,
  and with g(0) = 0 the recurrence gives g(2) = 4, while the six
  p-structures over {1, 2} are ∅, {(1,1)}, {(2,2)}, {(1,1),(2,2)},
  {(1,2)}, {(2,1)}. With g(0) = 1 the recurrence also gives g(1) = 2.

:func:`count_p_structures` enumerates Definition 4 literally (every subset
of A × A) so that tests can check the recurrence against it.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations, product

from fstdecode.errors import FstdecodeError

__all__ = ["BoundError", "g", "g_as_printed", "count_p_structures", "states_per_position_bound", "transition_bound"]


class BoundError(FstdecodeError):
    """A bound asked for outside its domain (a negative size)."""


def _check(name: str, value: int) -> None:
    if value < 0:
        raise BoundError(f"{name} must be >= 0, got {value}")


@lru_cache(maxsize=None)
def _g(k: int, g0: int) -> int:
    if k == 0:
        return g0
    if k == 1:
        return 2
    return 2 * _g(k - 1, g0) + 2 * (k - 1) * _g(k - 2, g0)


def g(k: int) -> int:
    """The number of p-structures over a k-element set (Appendix A's recurrence, g(0) = 1).

    g(0..6) = 1, 2, 6, 20, 76, 312, 1384.
    """
    _check("k", k)
    return _g(k, 1)


def g_as_printed(k: int) -> int:
    """Lemma 4 as printed, g(0) = 0 (with Appendix A's (k − 1)): an undercount from k = 2 on."""
    _check("k", k)
    return _g(k, 0)


def count_p_structures(k: int) -> int:
    """Definition 4 by brute force: the subsets of A × A, A = {1..k}, using each element at most once.

    Exponential in k² (2^(k²) subsets of A × A); meant for k <= 4.
    """
    _check("k", k)
    pairs = list(product(range(k), repeat=2))
    count = 0
    for r in range(k + 1):  # Definition 4's 0 <= r <= k
        for chosen in combinations(pairs, r):
            used = [x for s, t in chosen for x in ({s, t})]
            if len(used) == len(set(used)):
                count += 1
    return count


def states_per_position_bound(d: int, h: int) -> int:
    """g(d + 2) · h^(d+1): the proof of Theorem 1's bound on the DP states at one position j."""
    _check("d", d)
    _check("h", h)
    return g(d + 2) * h ** (d + 1)


def transition_bound(d: int, h: int, l: int) -> int:
    """g(d + 2) · h^(d+1) · (d + 2)² · l: the bound on transitions out of one position's states."""
    _check("l", l)
    return states_per_position_bound(d, h) * (d + 2) ** 2 * l
