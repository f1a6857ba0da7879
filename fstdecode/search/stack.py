"""The beam stack decoder of Pharaoh/Moses (Koehn 2003), with Moore & Quirk's improvements.

This is the beam version of the coverage DP (:mod:`fstdecode.search.coverage_dp`): the same
states ``(coverage, last source position, LM context)``, the same jumps
``|last_t + 1 − s|``, the same LM events (:func:`fstdecode.statespace.ngram.join`)
and the same final jump into ``</s>`` at ``end``, so with a beam large
enough to keep everything it returns exactly the DP's scores. Pruning makes
it approximate (``optimal`` is always False).

The algorithm is Moore & Quirk (2007), Figure 1 (taken from Koehn 2003):
stacks ``stacks[c]`` hold the hypotheses that cover c source words; stack c
is pruned before any of its hypotheses is extended. Two hypotheses that
agree on the recombination key recombine (M&Q Section 3, "lossless
pruning"): the best of them stands for the key and alone is extended; the
others stay as the key's arcs, from which n-best lists are extracted lazily
once the search is done, as Moses' are (native/kbest.h; docs/moses-outputs.md).

Hypotheses are ranked by score + future estimate (M&Q Section 3). The two
switchable improvements of M&Q are:

* ``distortion_estimate`` (Section 4): the running score charges the
  modified distortion Δd, which front-loads the distortion still to come.
  Δd = jump + Φ(after) − Φ(before), where Φ is Moore & Quirk's remaining
  distortion (docs/exact.md, lemma 5), so the sums telescope to the plain total;
* ``early_pruning`` (Section 5): extensions whose estimated score, before
  the LM adjustment of the phrase's first words, falls below the stack's
  best estimate minus a threshold are never scored.

Two additions keep small beams from ending empty-handed without removing
any valid derivation (the distortion limit is the DP's, with no gap
constraint): hypotheses that provably cannot finish within the limit are
dropped, and each stack keeps an *anchor*, a hypothesis
whose cheapest completion fits the limit, whose first step is always
generated.

**Moses' models.** With a lexicalized reordering model the recombination key
also holds the last phrase's start and its weighted forward row (``Option.lr_next``):
the next phrase's orientation depends on the last span, and the score it
then pays on that row (:meth:`SearchProblem.reordering_score`). Under
``moses`` distortion semantics (:mod:`fstdecode.model.distortion`) an
extension must also obey Moses' rule ``t + 1 − g ≤ d`` when it does not start
at the first gap g, nothing is checked at ``</s>``, and the jump into
``</s>`` is charged only with ``[early-distortion-cost]``; the dead-state and anchor tests follow the semantics.

**Cube pruning** (``cube_pop_limit``; Moses' ``-search-algorithm 1``, after Chiang 2007 and
Huang & Chiang 2007, as Moses' SearchCubePruning does it): each pruned stack's keys are grouped
by coverage, and each group and next span is a grid of the group's keys (by score minus the
jump's distortion cost) against the span's options (by estimate). A stack is filled by popping
the best scored cell (by score + future estimate) of every grid into it, scoring its two
neighbours, at most ``cube_pop_limit`` times; the previous stack's anchor step is pushed too if
no pop pushed it. Only popped and neighbour cells are scored with the LM: far fewer joins than
extending every key by every option. Early pruning does not apply. Where Moses differs: its
recombination keys, distortion and future estimates are its own (the normal search's here).

Example (the built-in model)::

    >>> from fstdecode import load_model, Decoder
    >>> decoder = Decoder(load_model(), "stack", beam_size=10)
    >>> decoder.decode("das muss unsere sorge gleichermaßen sein").best.translation
    'this must also be our concern'

The search runs in the native core (:func:`fstdecode.search.native_stack.stack_search`,
native/stack.cpp); this module holds its options, which the core reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from fstdecode.search.base import option
from fstdecode.search.signature_beam import BeamPruning

#: The early-pruning threshold when neither ``early_threshold`` nor ``beam_threshold``
#: is given: ln(1e5) = 11.5, Moses' default beam threshold (``-b 0.00001``, a
#: probability ratio) as a difference of ln model scores. M&Q (Section 6) set
#: the early-pruning threshold equal to the other thresholds; this is the
#: same choice for a decoder whose beam threshold is off.
DEFAULT_EARLY_THRESHOLD = math.log(1e5)


@dataclass(frozen=True)
class StackOptions(BeamPruning):
    """``--method stack``: the beam, Moore & Quirk's two improvements and early pruning's threshold.

    Both improvements are on by default: docs/search.md found this setting
    the fastest with no search error on both real models. ``threshold`` is
    the early-pruning threshold actually used (M&Q Section 5):
    ``early_threshold``, else ``beam_threshold``, else
    :data:`DEFAULT_EARLY_THRESHOLD`.
    """

    distortion_estimate: bool = field(
        default=True, metadata=option("stack: Moore & Quirk's distortion estimation")
    )
    early_pruning: bool = field(default=True, metadata=option("stack: Moore & Quirk's early pruning"))
    early_threshold: float | None = field(
        default=None,
        metadata=option("stack: early pruning's threshold (default: --beam-threshold, else ln 1e5)", minimum=0, infinite=True),
    )
    moses_nbest_pruning: bool = field(
        default=False,
        metadata=option(
            "stack: n-best lists leave out, as Moses' do, the derivations through a recombined "
            "hypothesis that reached its stack more than --beam-threshold below the stack's best so far "
            "(fstdecode moses: on)"
        ),
    )

    cube_pop_limit: int | None = field(
        default=None,
        metadata=option(
            "stack: cube pruning (Moses' -search-algorithm 1): each stack is filled by popping at most N "
            "hypotheses, best estimate first, from grids of its sources' keys against their options "
            "(Moses' -cube-pruning-pop-limit; early pruning does not apply); default off: the normal search",
            minimum=1, metavar="N",
        ),
    )

    @property
    def threshold(self) -> float:
        if self.early_threshold is not None:
            return self.early_threshold
        if self.beam_threshold is not None:
            return self.beam_threshold
        return DEFAULT_EARLY_THRESHOLD
