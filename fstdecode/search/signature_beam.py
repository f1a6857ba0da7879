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
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field, replace

from fstdecode.problem.problem import SearchError, SearchProblem, SearchResult
from fstdecode.search import signature_dp
from fstdecode.search.base import DEFAULT_BEAM_MAX_STATES, DEFAULT_BEAM_SIZE, SearchOptions, option, register
from fstdecode.search.signature_dp import minimize_field
from fstdecode.statespace.signature import least_jumps

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
#: A beam that finishes no derivation is retried this many times wider, up to MAX_BEAM states per j.
WIDEN = 4
MAX_BEAM = 1_000_000


def _start_words(problem: SearchProblem, sig: tuple) -> tuple[int, ...]:
    """The words of a tape whose LM scores still wait for a left context."""
    if sig[0] == 0:
        return ()
    return sig[1] if problem.order > 2 else (sig[1],)


class Heuristic:
    """β(T) for one problem; values per word are cached."""

    def __init__(self, problem: SearchProblem, kind: str) -> None:
        if kind not in HEURISTICS:
            raise SearchError(f"unknown beam heuristic {kind!r}; choose from {', '.join(HEURISTICS)}")
        self.problem = problem
        self.kind = kind
        self._best_into: dict[int, float] = {}
        self.preceders = sorted({problem.bos} | {o.last for opts in problem.by_start for o in opts})

    def start_word(self, w: int) -> float:
        """Unigram (paper) or the best score of ``w`` after any word that can precede it (bound)."""
        got = self._best_into.get(w)
        if got is None:
            if self.kind.startswith("unigram"):
                got = self.problem.ngram((), w)
            else:
                got = max(self.problem.ngram((a,), w) for a in self.preceders)
            self._best_into[w] = got
        return got

    def __call__(self, j: int, sigs: tuple) -> float:
        if self.kind == "none":
            return 0.0
        beta = 0.0
        for sig in sigs:
            words = _start_words(self.problem, sig)
            if words:
                beta += self.start_word(words[0])
                # Later deferred words: scored with the context inside the tape.
                for k in range(1, len(words)):
                    beta += self.problem.ngram(words[max(0, k - self.problem.order + 1) : k], words[k])
            if self.kind != "unigram":
                beta -= self.problem.eta * least_jumps(self.problem, j, sig)
        return beta


def make_beam(heuristic: Heuristic, beam_size: int | None, beam_threshold: float | None):
    """beam(T_j): the best ``beam_size`` states by α + β, within ``beam_threshold`` of the best.

    States that cannot finish are dropped first: each remaining phrase joins
    at most two tapes into one, so r tapes need r − 1 more phrases, at most
    one per untranslated word. A layer whose states are all dead keeps none
    (there is no best to measure the threshold from); the search goes on with
    the other layers and, if nothing reaches the goal, widens or reports that
    the beam kept no complete derivation.
    """
    n = heuristic.problem.n

    def beam(j: int, layer: dict) -> dict:
        if not layer:
            return layer
        scored = [(hyps[0][0] + heuristic(j, sigs), sigs) for sigs, hyps in layer.items() if len(sigs) - 1 <= n - j]
        if beam_threshold is not None and scored:
            top = max(g for g, _ in scored)
            scored = [x for x in scored if x[0] >= top - beam_threshold]
        if beam_size is not None and len(scored) > beam_size:
            scored = heapq.nlargest(beam_size, scored, key=lambda x: x[0])
        return {sigs: layer[sigs] for _, sigs in scored}

    return beam


def search(problem: SearchProblem, options: BeamOptions = BeamOptions()) -> SearchResult:
    """The best derivations the beam keeps (``optimal`` False: the beam may prune the best).

    A beam can keep only states that later turn out to be dead ends (their
    open tapes expire before they can be joined). Then the search runs
    again with a beam ``WIDEN`` times as wide, up to ``MAX_BEAM``; the stats
    count every run.
    """
    h = Heuristic(problem, options.heuristic)
    states = transitions = 0
    size = options.beam_size
    while True:
        beam = make_beam(h, size, options.beam_threshold)
        chart = signature_dp.run(
            problem, nbest=options.nbest, max_states=options.max_states, minimize=options.minimize, beam=beam
        )
        states += chart.states
        transitions += chart.transitions
        try:
            found = signature_dp.result(problem, chart, optimal=False, empty="no complete derivation in the beam")
        except SearchError:
            if size >= MAX_BEAM:
                raise SearchError(
                    f"the beam kept no complete derivation even at --beam-size {size}; "
                    "raise --beam-threshold or use --method dp"
                ) from None
            size *= WIDEN
            continue
        return replace(found, states=states, transitions=transitions)


register(
    "beam", BeamOptions, function=search, exact=False,
    summary="the signature DP with beam(T_j) of Section 5.1",
    moses_model=True,  # signature states with lexicalized reordering and Moses' gap rule (statespace.reordering, .gaprule)
)
