"""Beam search over signature states: Figure 2 with beam(T_j) (Chang & Collins, Section 5.1).

Before the states of position j are expanded, only the best ``beam_size``
by γ(T) = α(T) + β(T) are kept, and (``beam_threshold``) those within that
many score units of the best. All states of T_j translate the same prefix
x_1..x_j, so the cost of what remains to translate is the same for all of
them and cancels in the ranking; β only has to say how far each state's
open tapes are from being joined:

* ``"unigram"`` — the paper's proposal: the unigram LM score of every
  tape-start word (the words whose left context is still unknown);
* ``"unigram+distortion"`` — the paper's proposal plus the distortion
  bound below;
* ``"bound"`` — what joining the tapes must still cost at best: each start
  word's best LM score after any word that can precede it, plus a lower
  bound on the distortion still to come (a tape that ends at t < j must be
  left by a jump of at least j − t, but for the ``<s>`` tape at j = n under Moses'
  semantics without early distortion cost, left by the uncharged jump into
  ``</s>``; a tape that starts at s > 0 must be entered by a jump of at least j + 2 − s);
* ``"none"`` — β = 0.

``"bound"`` is an upper bound (the exact :mod:`.bounded` search needs one),
but as a beam ranking it flatters states with many open tapes; the
default, ``"unigram+distortion"``, made no search errors at the smallest
beams on both real models. ``docs/search.md`` compares them (search errors
against the exact result, and time).

The search runs in the native core (:func:`fstdecode.search.native_signature.beam_search`,
native/signature.cpp); this module holds its options, which the core reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fstdecode.search.base import DEFAULT_BEAM_MAX_STATES, DEFAULT_BEAM_SIZE, SearchOptions, option
from fstdecode.search.signature_dp import minimize_field

HEURISTICS = ("bound", "unigram+distortion", "unigram", "none")
#: The default β: fewest search errors for the time on both real models (docs/search.md).
DEFAULT_HEURISTIC = "unigram+distortion"


@dataclass(frozen=True)
class BeamPruning(SearchOptions):
    """Histogram and threshold pruning, shared by ``--method beam`` and ``--method stack``."""

    max_states: int = field(
        default=DEFAULT_BEAM_MAX_STATES,
        metadata=option("state budget per sentence; beyond it the line is marked as over budget", minimum=1),
    )
    beam_size: int = field(
        default=DEFAULT_BEAM_SIZE, metadata=option("histogram pruning: keep K states per step", minimum=1)
    )
    beam_threshold: float | None = field(
        default=None, metadata=option("threshold pruning: drop states W below the best (default: off)", minimum=0, infinite=True)
    )


@dataclass(frozen=True)
class BeamOptions(BeamPruning):
    """``--method beam``: Section 5.1's beam(T_j), ranked by α + β."""

    heuristic: str = field(
        default=DEFAULT_HEURISTIC,
        metadata=option("beam: the estimate β that ranks states", flag="--beam-heuristic", choices=HEURISTICS),
    )
    minimize: bool = minimize_field()
