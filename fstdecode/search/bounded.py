"""Exact search with bounds: the signature DP that skips states which cannot win.

A beam run first gives a real derivation and its score LB. Then Figure 2
runs, and a transition's result enters the chart only if an upper bound on
the best completion through it reaches LB:

    UB(T) = α(T) + β(T) + future(j) + max_a λ(</s> | a)

* β(T): the ``bound`` heuristic of :mod:`.signature_beam` — each open
  tape's start word at its best LM score after any word that can precede
  it, and the least distortion its open ends still cost;
* future(j): the best segmentation of x_{j+1}..x_n into phrases, each
  counted with ŵ(p) and its first word's best LM score after any word.

Every LM junction of a completion is counted once (into a tape start in β,
into a future phrase in future(j), into </s> last) at an upper bound, and
the distortion still to come is at least β's, so no state on an optimal
path is dropped: the result is exact. The bounds need a bigram LM and a
distortion weight >= 0; otherwise this is the plain DP.

With lexicalized reordering, every charge still to come is counted at its
best too (:mod:`fstdecode.statespace.reordering`): each future phrase's best
backward score and best forward score (or 0, if it ends up last), each open
tape's pending backward score and its last phrase's best forward score (or 0).

The search runs in the native core (:func:`fstdecode.search.native_signature.bounded_search`,
native/signature.cpp); this module holds its options, which the core reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from fstdecode.search.base import SearchOptions
from fstdecode.search.signature_dp import minimize_field


@dataclass(frozen=True)
class BoundedOptions(SearchOptions):
    """``--method bounded``: the DP's options; the lower bound comes from a default beam."""

    minimize: bool = minimize_field()
