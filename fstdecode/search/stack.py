"""The beam stack decoder of Pharaoh/Moses (Koehn 2003), with Moore & Quirk's improvements.

This is the beam version of :mod:`fstdecode.search.coverage_dp`: the same
states ``(coverage, last source position, LM context)``, the same jumps
``|last_t + 1 − s|``, the same LM events (:func:`fstdecode.statespace.ngram.join`)
and the same final jump into ``</s>`` at ``end``, so with a beam large
enough to keep everything it returns exactly the DP's scores. Pruning makes
it approximate (``optimal`` is always False).

The algorithm is Moore & Quirk (2007), Figure 1 (taken from Koehn 2003):
stacks ``stacks[c]`` hold the hypotheses that cover c source words; stack c
is pruned before any of its hypotheses is extended. Two hypotheses that
agree on the recombination key recombine (M&Q Section 3, "lossless
pruning"): the best of them stands for the key, the others stay reachable
for n-best lists (each key keeps up to ``nbest`` derivations, like the
k-best lists of the coverage DP).

Hypotheses are ranked by score + future estimate (M&Q Section 3). The two
switchable improvements of M&Q are:

* ``distortion_estimate`` (Section 4): the running score charges the
  modified distortion Δd of :func:`mq_delta`, which front-loads the
  distortion still to come. Δd = jump + Φ(after) − Φ(before), where Φ is
  :func:`remaining_distortion`, so the sums telescope to the plain total;
* ``early_pruning`` (Section 5): extensions whose estimated score, before
  the LM adjustment of the phrase's first words, falls below the stack's
  best estimate minus a threshold are never scored (:func:`_candidates`).

Two additions keep small beams from ending empty-handed without removing
any valid derivation (the distortion limit is the DP's, with no gap
constraint): hypotheses that provably cannot finish within the limit are
dropped (:func:`is_dead`), and each stack keeps an *anchor*, a hypothesis
whose cheapest completion fits the limit, whose first step is always
generated (:func:`_prune`).

**Moses' models.** With a lexicalized reordering model the recombination key
also holds the last phrase's start and its weighted forward row (``Option.lr_next``):
the next phrase's orientation depends on the last span, and the score it
then pays on that row (:meth:`SearchProblem.reordering_score`). Under
``moses`` distortion semantics (:mod:`fstdecode.model.distortion`) an
extension must also obey Moses' rule ``t + 1 − g ≤ d`` when it does not start
at the first gap g, nothing is checked at ``</s>``, and the jump into
``</s>`` is charged only with ``[early-distortion-cost]``
(:func:`final_delta`); :func:`is_dead` and :func:`minimal_completion_fits`
follow the semantics. The native engine (native/stack.cpp) implements the same keys
and rules, so both engines keep the same states.

Example (the built-in model)::

    >>> from fstdecode import load_model, Decoder
    >>> from fstdecode.search import stack
    >>> problem = Decoder(load_model()).problem("das muss unsere sorge gleichermaßen sein".split())
    >>> result = stack.search(problem, stack.StackOptions(beam_size=10))
    >>> " ".join(w for p in result.hypotheses[0][1] for w in p.target)
    'this must also be our concern'
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from fstdecode.problem.problem import Option, SearchError, SearchLimitError, SearchProblem, SearchResult
from fstdecode.problem.sentence import Phrase
from fstdecode.search.base import option, register
from fstdecode.search.kbest import insert_best
from fstdecode.search.signature_beam import BeamPruning
from fstdecode.statespace.ngram import joined

#: The early-pruning threshold when neither ``early_threshold`` nor ``beam_threshold``
#: is given: ln(1e5) = 11.5, Moses' default beam threshold (``-b 0.00001``, a
#: probability ratio) as a difference of ln model scores. M&Q (Section 6) set
#: the early-pruning threshold equal to the other thresholds; this is the
#: same choice for a decoder whose beam threshold is off.
DEFAULT_EARLY_THRESHOLD = math.log(1e5)

#: Recombination key: (coverage bits, bit p − 1 for position p; end position of
#: the last phrase; LM context, minimised as in :mod:`fstdecode.statespace.ngram`;
#: with a lexicalized reordering model the last phrase's start and weighted forward
#: row, else ()).
Key = tuple[int, int, tuple[int, ...], tuple]


# ---------------------------------------------------------------------------
# Hypotheses and settings


@dataclass(frozen=True, eq=False, slots=True)
class Hypothesis:
    """One derivation prefix: ``option`` appended to the derivation ``prev``.

    Invariants: ``score`` is the exact model score of the prefix (TM, word,
    phrase, unknown-word and LM features of the target so far) minus
    ``eta`` times its distortion, where the distortion is the plain sum of
    jumps, or, with ``distortion_estimate``, that sum plus
    :func:`remaining_distortion` Φ of the state (M&Q Section 4). ``future`` is
    the Pharaoh estimate of the uncovered words (:meth:`Tables.future_of`).
    A hypothesis that covers every word has also been closed with ``</s>``
    (its LM event and, where the model charges it, the final jump are in
    ``score``), so its ``last_t`` is ``end``, its context ``(</s>,)`` and its
    ``score`` the model score. With a lexicalized reordering model the score
    includes the weighted reordering features too, and ``reordering`` holds
    the last phrase's start and weighted forward row (part of the key); else ().
    Compared by identity (``eq=False``): comparing fields would walk the
    back-pointer chain.
    """

    coverage: int
    last_t: int
    context: tuple[int, ...]
    score: float
    future: float
    prev: Hypothesis | None = None
    option: Option | None = None
    reordering: tuple = ()

    @property
    def key(self) -> Key:
        """Hypotheses with equal keys have equal completions and recombine."""
        return (self.coverage, self.last_t, self.context, self.reordering)

    @property
    def estimate(self) -> float:
        """Score + future: what pruning ranks by (M&Q Section 3)."""
        return self.score + self.future

    def phrases(self) -> tuple[Phrase, ...]:
        """The derivation's phrases in target order (follows the back-pointers)."""
        out = []
        hyp: Hypothesis | None = self
        while hyp is not None and hyp.option is not None:
            out.append(hyp.option.phrase)
            hyp = hyp.prev
        return tuple(reversed(out))


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

    @property
    def threshold(self) -> float:
        if self.early_threshold is not None:
            return self.early_threshold
        if self.beam_threshold is not None:
            return self.beam_threshold
        return DEFAULT_EARLY_THRESHOLD


# ---------------------------------------------------------------------------
# Distortion: Koehn's jumps and Moore & Quirk's modified increments


def lowest_uncovered(coverage: int) -> int:
    """The leftmost uncovered position g (``n + 1 = end`` when every word is covered).

    M&Q's S'' (the longest fully covered prefix) is positions 1..g−1.
    """
    return ((coverage + 1) & ~coverage).bit_length()


def plain_delta(last_t: int, s: int) -> int:
    """Koehn's distortion increment |last_t + 1 − s| (M&Q Section 4; the scorer's ``jumps``)."""
    return abs(last_t + 1 - s)


def mq_delta(coverage: int, last_t: int, s: int, t: int) -> int:
    """M&Q's modified Δd (Section 4) for adding the phrase S = [s, t].

    ``coverage`` and ``last_t`` (the end of S') are those before adding S;
    S'' = 1..g−1. The four cases, in the paper's order:

    1. S adjacent to S'' (s = g): 0;
    2. S left of S' (s ≤ last_t): 2 L(S);
    3. S' ⊆ S'' (last_t < g): 2 (D(S, S'') + L(S)), D(S, S'') = s − g;
    4. otherwise: 2 (D(S, S') + L(S)), D(S, S') = s − last_t − 1.

    Each case equals ``plain_delta + Φ(after) − Φ(before)`` with Φ =
    :func:`remaining_distortion` (the tests check this identity), so over a
    complete derivation the sum telescopes to the plain sum of jumps
    *including* the final jump into ``</s>`` (footnote 5's sentence-final
    penalty; see :func:`final_delta`).
    """
    g = lowest_uncovered(coverage)
    length = t - s + 1
    if s == g:
        return 0
    if s <= last_t:
        return 2 * length
    if last_t < g:
        return 2 * (s - g + length)
    return 2 * (s - last_t - 1 + length)


def final_delta(last_t: int, end: int, distortion_estimate: bool, charged: bool = True) -> int:
    """The distortion charged for the final jump into ``</s>`` (at ``end``) from ``last_t``.

    When the model does not charge that jump (``charged`` False: Moses'
    semantics without early distortion cost), plain: 0; modified: minus the
    jump, which the Δd of the earlier phrases charged in advance (Φ of a
    full coverage is that jump), so that the total is again the model's.

    Plain: the jump ``end − 1 − last_t``. Modified: 0. Why 0: Φ of a full
    coverage is exactly that final jump (g = end), so the modified Δd of
    the phrase that completed the coverage already charged it; the final
    step, Φ(full) → Φ(closed) = 0, adds ``jump + 0 − Φ(full) = 0``. This is
    what makes Σ Δd over a complete derivation equal the plain total (M&Q
    footnotes 4 and 5 assume such a sentence-final penalty; ours has one).
    """
    if not charged:
        return -(end - 1 - last_t) if distortion_estimate else 0
    return 0 if distortion_estimate else end - 1 - last_t


def remaining_distortion(coverage: int, last_t: int) -> int:
    """Φ: the least distortion still to come from this state (M&Q Section 4), ignoring the limit d.

    M&Q prove that the cheapest completion jumps to the leftmost uncovered
    word g and then goes left to right: it pays |last_t + 1 − g| and then
    skips every covered word right of g once (the last skip being the final
    jump into ``</s>``). With full coverage (g = end) this is the final jump.
    """
    g = lowest_uncovered(coverage)
    covered_right = bin(coverage >> g).count("1")  # covered positions g+1..n
    return abs(last_t + 1 - g) + covered_right


def _covered_blocks(coverage: int, g: int):
    """``(a, b)`` for each maximal run a..b of covered positions right of g, left to right."""
    rest = coverage >> g  # bit i: position g + 1 + i
    offset = g + 1
    while rest:
        skip = (rest & -rest).bit_length() - 1  # uncovered positions before the run
        rest >>= skip
        length = (~rest & (rest + 1)).bit_length() - 1
        a = offset + skip
        yield a, a + length - 1
        rest >>= length
        offset = a + length


def is_dead(coverage: int, last_t: int, n: int, d: int, moses: bool = False) -> bool:
    """True if the state provably cannot complete within the distortion limit d.

    Under Moses' semantics (``moses``) only the second test applies: there is
    no final jump, and a phrase ending at u with g uncovered was allowed only
    with ``u + 1 − g ≤ d``, the same bound.

    A sufficient test: it removes no valid derivation (unlike Moses' gap
    constraint), so a huge beam stays exact. With g the leftmost uncovered
    word:

    * full coverage: the final jump ``n − last_t`` exceeds d;
    * g must start a phrase (everything left of it is covered), entered
      from the current end (|last_t + 1 − g| ≤ d) or from a future phrase
      that ends at an uncovered u in (g, g + d − 1] (|u + 1 − g| ≤ d);
    * a covered block [a, b] right of g (B = b − a + 1 words) must be
      crossed rightwards after the last visit left of it (the path ends at
      ``</s>``), a jump of at least B: B ≤ d;
    * if the path is now right of that block (last_t ≥ b) it must also
      cross it leftwards, a jump of at least B + 1 from its end (last_t = b)
      and B + 2 from anywhere further right.
    """
    g = lowest_uncovered(coverage)
    if g > n:
        return not moses and n - last_t > d
    if abs(last_t + 1 - g) > d:
        hi = min(g + d - 1, n)
        if hi <= g or not ~coverage & ((1 << (hi - g)) - 1) << g:  # positions g+1..hi
            return True
    if moses:
        return False
    for a, b in _covered_blocks(coverage, g):
        length = b - a + 1
        if length > d or (last_t >= b and length + (1 if last_t == b else 2) > d):
            return True
    return False


def minimal_completion_fits(coverage: int, last_t: int, n: int, d: int, moses: bool = False) -> bool:
    """True if M&Q's cheapest completion obeys the limit d (one-word phrases assumed).

    Under Moses' semantics (``moses``) a covered block that reaches word n is
    never jumped over (no final jump), and every step of the completion starts
    at the first gap, so Moses' gap rule holds.

    That completion (Section 4) jumps to g, then goes left to right, jumping
    over each covered block right of g and finally into ``</s>``: its jumps
    are |last_t + 1 − g| and the blocks' lengths. A state where it fits can
    certainly complete, and so can the state after its first step (the
    one-word phrase at g), whose minimal completion is the rest of it. This
    is the invariant behind the anchor of :func:`_prune`.
    """
    g = lowest_uncovered(coverage)
    if g > n:
        return moses or n - last_t <= d
    blocks = (b - a + 1 for a, b in _covered_blocks(coverage, g) if not (moses and b == n))
    return abs(last_t + 1 - g) <= d and all(length <= d for length in blocks)


# ---------------------------------------------------------------------------
# Future-cost estimates (Koehn 2003; M&Q Section 3)


def option_estimate(problem: SearchProblem, opt: Option) -> float:
    """Pharaoh's estimated score of one phrase pair, out of context (M&Q Section 3).

    ŵ(p) (``opt.score``) already holds the LM score of every word from the
    N-th on; the first N − 1 words are added with the context available
    inside the phrase (a unigram for the first, a bigram for the second,
    ...), so the LM part equals ``weights.lm * lm.phrase_estimate(words)``.
    """
    words = opt.words
    extra = sum(problem.ngram(words[:i], words[i]) for i in range(min(problem.order - 1, len(words))))
    return opt.score + extra


@dataclass(frozen=True)
class Tables:
    """Per-problem tables, built once by :func:`tables`.

    * ``ends[s]``: the end positions t of the options starting at s, ascending;
    * ``options[(s, t)]``: ``(estimate, option)`` pairs, best estimate first
      (M&Q Section 5 scans translations "from highest scoring to lowest");
    * ``span[i][j]``: Pharaoh's future estimate of positions i..j (−inf if
      no sequence of options covers them exactly), 1 ≤ i ≤ j ≤ n;
    * ``singles``: bit p − 1 set iff position p has a one-word option (every
      position does for sentences from :func:`fstdecode.problem.sentence.build_sentence`).
    """

    n: int
    ends: tuple[tuple[int, ...], ...]
    options: dict[tuple[int, int], tuple[tuple[float, Option], ...]]
    span: tuple[tuple[float, ...], ...]
    singles: int
    _future: dict[int, float] = field(default_factory=dict, repr=False)

    def future_of(self, coverage: int) -> float:
        """The sum of ``span`` over the maximal uncovered runs of ``coverage`` (cached)."""
        got = self._future.get(coverage)
        if got is None:
            got, start = 0.0, None
            for p in range(1, self.n + 2):
                free = p <= self.n and not coverage >> (p - 1) & 1
                if free and start is None:
                    start = p
                elif not free and start is not None:
                    got += self.span[start][p - 1]
                    start = None
            self._future[coverage] = got
        return got


def tables(problem: SearchProblem) -> Tables:
    """Sorted options and the future-cost table of Pharaoh (M&Q Section 3).

    ``span[i][j] = max(best option estimate for exactly i..j,
    max_k span[i][k] + span[k+1][j])``, filled by increasing length: O(n³).
    """
    n = problem.n
    options: dict[tuple[int, int], list[tuple[float, Option]]] = {}
    for s in range(1, n + 1):
        for opt in problem.by_start[s]:
            options.setdefault((s, opt.t), []).append((option_estimate(problem, opt), opt))
    ranked = {k: tuple(sorted(v, key=lambda e: -e[0])) for k, v in options.items()}
    span = [[-math.inf] * (n + 2) for _ in range(n + 2)]
    for length in range(1, n + 1):
        for i in range(1, n - length + 2):
            j = i + length - 1
            best = ranked[(i, j)][0][0] if (i, j) in ranked else -math.inf
            for k in range(i, j):
                best = max(best, span[i][k] + span[k + 1][j])
            span[i][j] = best
    ends: list[list[int]] = [[] for _ in range(n + 2)]
    for s, t in sorted(ranked):
        ends[s].append(t)
    singles = sum(1 << (s - 1) for s in range(1, n + 1) if (s, s) in ranked)
    return Tables(n, tuple(map(tuple, ends)), ranked, tuple(map(tuple, span)), singles)


# ---------------------------------------------------------------------------
# Expansion


@dataclass(frozen=True, slots=True)
class Candidate:
    """A legal extension of a hypothesis, before its LM adjustment is scored.

    ``delta_d`` is the distortion the running score charges (plain or M&Q),
    ``coverage``/``future`` those of the extended hypothesis.
    """

    option: Option
    delta_d: int
    coverage: int
    future: float


def _candidates(problem: SearchProblem, tabs: Tables, hyp: Hypothesis, settings: StackOptions, min_ok: float | None):
    """Yield every extension of ``hyp`` that obeys the distortion limit, is not
    provably dead (:func:`is_dead`) and, if ``min_ok`` is not None, passes
    M&Q's early pruning; in order of start, end, then estimate.

    Early pruning (M&Q Section 5): the estimated score of an extension is
    ``hyp.score + future(new coverage) + option estimate − eta·Δd``: everything
    but the LM adjustment of the phrase's first words. Since the future table
    maximises over splits, ``future(new) + option estimate ≤ hyp.future``, so
    ``hyp.estimate − eta·Δd`` bounds every extension with that Δd. The scans
    stop on M&Q's three observations (they need eta ≥ 0):

    * starts, left to right: the least Δd of a start is that of its one-word
      phrase. With M&Q's Δd it never decreases as s moves right (0 at g, 2
      up to last_t, then increasing), so the scan stops. With the plain
      jump it decreases up to last_t + 1, so a failing start left of there
      is only skipped;
    * ends, left to right: Δd never decreases as the phrase grows;
    * translations, best estimate first: the first failure stops the scan.

    Every yielded extension has estimated score >= ``min_ok``; every skipped
    live one has estimated score < ``min_ok``.
    """
    n, d, eta = problem.n, problem.d, problem.eta
    cov, last_t = hyp.coverage, hyp.last_t
    mq = settings.distortion_estimate
    moses = problem.semantics == "moses"
    g = lowest_uncovered(cov)
    bound_by_distortion = min_ok is not None and eta >= 0
    for s in range(max(1, last_t + 1 - d), min(n, last_t + 1 + d) + 1):
        if cov >> (s - 1) & 1:
            continue
        if bound_by_distortion:
            least = mq_delta(cov, last_t, s, s) if mq else plain_delta(last_t, s)
            if hyp.estimate - eta * least < min_ok:
                if mq or s > last_t:
                    break
                continue
        for t in tabs.ends[s]:
            span = ((1 << (t - s + 1)) - 1) << (s - 1)
            if cov & span:
                break  # ends ascend: every longer phrase overlaps too
            if moses and s != g and t + 1 - g > d:
                break  # Moses' gap rule (fstdecode.model.distortion); ends ascend
            delta_d = mq_delta(cov, last_t, s, t) if mq else plain_delta(last_t, s)
            if bound_by_distortion and hyp.estimate - eta * delta_d < min_ok:
                break
            new_cov = cov | span
            if is_dead(new_cov, t, n, d, moses):
                continue
            future = tabs.future_of(new_cov)
            if future == -math.inf:
                continue
            base = hyp.score + future - eta * delta_d
            for est, opt in tabs.options[(s, t)]:
                if min_ok is not None and base + est < min_ok:
                    break
                yield Candidate(opt, delta_d, new_cov, future)


def _extend(problem: SearchProblem, hyp: Hypothesis, cand: Candidate, full: int, mq: bool) -> tuple[Key, float]:
    """The key of ``hyp`` extended by ``cand`` and the score it adds (same for every
    hypothesis of ``hyp``'s key: the key holds what the reordering score reads of
    the last phrase). A completed coverage is closed at once with ``</s>``.
    """
    opt, eta = cand.option, problem.eta
    new, lm = joined(problem, (0, (), hyp.last_t, hyp.context), opt, None, True)
    delta = opt.score + lm - eta * cand.delta_d
    reordering: tuple = ()
    if problem.reordering is not None:
        delta += problem.reordering_score(hyp.option, opt)
        reordering = (opt.s, opt.lr_next)
    if cand.coverage != full:
        return (cand.coverage, opt.t, new[3], reordering), delta
    _, close = joined(problem, (0, (), opt.t, new[3]), problem.eos_option, None, True)
    delta += close - eta * final_delta(opt.t, problem.end, mq, problem.charge_final)
    return (full, problem.end, (problem.eos,), ()), delta


def _prune(
    stack: dict[Key, list[Hypothesis]], beam_size: int, threshold: float | None, fits: Callable[[Hypothesis], bool]
) -> tuple[list[list[Hypothesis]], list[Hypothesis] | None]:
    """Histogram and threshold pruning of one stack (M&Q Section 6's beam limit and beam
    threshold), ranked by each key's best estimate; returns ``(kept, anchor)``.

    ``anchor`` is the best kept key for which ``fits`` (its minimal completion obeys
    the distortion limit) holds. If pruning dropped every such key, the best of them
    is kept as well (beam_size + 1 keys): a safety net, not in Pharaoh, that with the
    anchor's first minimal step (:func:`_first_step`) always carries one hypothesis to
    the last stack, so a small beam cannot end empty-handed. ``anchor`` is None only
    if the stack holds no such key.
    """
    ranked = sorted(stack.values(), key=lambda entries: -entries[0].estimate)
    kept = ranked[:beam_size]
    if threshold is not None and kept:
        floor = kept[0][0].estimate - threshold
        kept = [entries for entries in kept if entries[0].estimate >= floor]  # still a prefix
    anchor = next((entries for entries in kept if fits(entries[0])), None)
    if anchor is None:
        anchor = next((entries for entries in ranked[len(kept):] if fits(entries[0])), None)
        if anchor is not None:
            kept.append(anchor)
    return kept, anchor


def _first_step(problem: SearchProblem, tabs: Tables, hyp: Hypothesis, mq: bool) -> Candidate:
    """The first step of ``hyp``'s minimal completion: the best one-word option at g."""
    g = lowest_uncovered(hyp.coverage)
    coverage = hyp.coverage | 1 << (g - 1)
    delta_d = mq_delta(hyp.coverage, hyp.last_t, g, g) if mq else plain_delta(hyp.last_t, g)
    return Candidate(tabs.options[(g, g)][0][1], delta_d, coverage, tabs.future_of(coverage))


# ---------------------------------------------------------------------------
# The search


def search(problem: SearchProblem, options: StackOptions = StackOptions()) -> SearchResult:
    """The stack decoder: up to ``nbest`` complete derivations, best first.

    ``beam_size`` hypotheses (recombination keys) are kept per stack, and
    with ``beam_threshold`` only those within that many score units of the
    stack's best estimate. ``distortion_estimate`` and ``early_pruning``
    switch on M&Q's Sections 4 and 5 (see :class:`StackOptions`).

    Reported scores are the model scores of the derivations (with either
    distortion accounting). ``states`` counts the hypotheses (keys) kept
    after pruning, summed over stacks (a stack may keep ``beam_size + 1``:
    the anchor of :func:`_prune`); ``transitions`` the extensions scored
    (M&Q's "partial hypotheses evaluated"). Once more than ``max_states``
    hypotheses (keys) have been created, each stack extends only its anchor
    (:func:`_prune`) by its minimal step (:func:`_first_step`), one new key
    per stack, so that the best hypothesis whose minimal completion fits is
    completed; then SearchLimitError carries those derivations as ``best``
    (no derivation if no key could complete). Raises
    SearchError if no complete hypothesis survives (possible only when
    some word has no one-word option, so that no anchor exists).
    """
    return _run(problem, options)


def _run(problem: SearchProblem, settings: StackOptions, recombine: bool = True) -> SearchResult:
    """:func:`search` proper; ``recombine=False`` (tests only) gives each hypothesis its own key."""
    n, d = problem.n, problem.d
    full = (1 << n) - 1
    tabs = tables(problem)
    fresh = itertools.count()
    stacks: list[dict] = [{} for _ in range(n + 1)]
    created = states = transitions = 0
    over: SearchLimitError | None = None  # the budget ran out: minimal steps only, from then on

    def push(c: int, key: Key, hyp: Hypothesis) -> None:
        nonlocal created
        if not recombine:
            key = (next(fresh),)
        entries = stacks[c].get(key)
        if entries is None:
            created += 1
            if over is None and settings.max_states is not None and created > settings.max_states:
                raise SearchLimitError(f"more than {settings.max_states} hypotheses (--max-states)")
            entries = stacks[c][key] = []
        insert_best(entries, hyp, settings.nbest, _score)

    start = Hypothesis(0, 0, (problem.bos,), 0.0, tabs.future_of(0))
    if n == 0:  # nothing to translate: close <s> with </s> at once
        _, close = joined(problem, (0, (), 0, start.context), problem.eos_option, None, True)
        start = Hypothesis(0, problem.end, (problem.eos,), close, 0.0)
    push(0, start.key, start)

    moses = problem.semantics == "moses"

    def fits(hyp: Hypothesis) -> bool:  # its minimal completion is legal and has one-word options
        return not full & ~hyp.coverage & ~tabs.singles and minimal_completion_fits(
            hyp.coverage, hyp.last_t, n, d, moses
        )

    def extend(c: int, entries: list[Hypothesis], cand: Candidate) -> None:
        nonlocal transitions
        transitions += 1
        key, delta = _extend(problem, entries[0], cand, full, settings.distortion_estimate)
        future = 0.0 if cand.coverage == full else cand.future
        target = c + cand.option.t - cand.option.s + 1
        for hyp in entries:
            push(target, key, Hypothesis(*key[:3], hyp.score + delta, future, hyp, cand.option, key[3]))

    def minimal_step(c: int, anchor: list[Hypothesis]) -> None:
        extend(c, anchor, _first_step(problem, tabs, anchor[0], settings.distortion_estimate))

    for c in range(n):
        kept, anchor = _prune(stacks[c], settings.beam_size, settings.beam_threshold, fits)
        stacks[c] = {}  # expanded stacks are reached only through back-pointers
        if over is not None:
            if anchor is None:  # no key here can complete
                raise over
            states += 1
            minimal_step(c, anchor)
            continue
        states += len(kept)
        min_ok = None
        if settings.early_pruning and kept:
            min_ok = kept[0][0].estimate - settings.threshold
        try:
            for entries in kept:
                head = entries[0]
                cands = list(_candidates(problem, tabs, head, settings, min_ok))
                if entries is anchor and min_ok is not None:
                    # Early pruning may skip the anchor's minimal step; keep it (the safety net
                    # of _prune; M&Q's footnote 6 argues their Δd keeps such a step, but our
                    # distortion limit and the plain Δd can defeat that argument).
                    g = lowest_uncovered(head.coverage)
                    if not any(cand.option.s == cand.option.t == g for cand in cands):
                        cands.append(_first_step(problem, tabs, head, settings.distortion_estimate))
                for cand in cands:
                    extend(c, entries, cand)
        except SearchLimitError as e:
            # The budget ran out: from here on each stack extends only its anchor (the best key
            # whose minimal completion fits) by its minimal step, so that the line still gets a
            # derivation, the best the budget allowed; one key per stack, so bounded.
            if anchor is None:
                raise
            over = e
            minimal_step(c, anchor)
    finals = [hyp for entries in stacks[n].values() for hyp in entries]
    states += len(stacks[n])
    if over is not None:
        # The anchor's minimal step may have been taken twice (among its candidates, then after
        # the budget ran out): each derivation is listed once, the k best of them.
        finals.sort(key=lambda h: -h.score)
        unique: dict[tuple, float] = {}
        for h in finals:
            if len(unique) == settings.nbest:
                break
            unique.setdefault(h.phrases(), h.score)
        best = tuple((score, phrases) for phrases, score in unique.items())
        raise SearchLimitError(str(over), SearchResult(best, False, states, transitions) if best else None)
    if not finals:
        raise SearchError(
            f"no complete hypothesis: every partial hypothesis was pruned or could not finish within "
            f"the distortion limit d={d}; widen the beam (beam size {settings.beam_size}, beam threshold "
            f"{settings.beam_threshold}, early threshold {settings.threshold if settings.early_pruning else None})"
        )
    finals.sort(key=lambda h: -h.score)
    best = tuple((h.score, h.phrases()) for h in finals[: settings.nbest])
    return SearchResult(best, optimal=False, states=states, transitions=transitions)


def _score(hyp: Hypothesis) -> float:
    return hyp.score


register(
    "stack",
    StackOptions,
    function=search,
    exact=False,
    summary="the stack decoder of Pharaoh/Moses, with Moore & Quirk's improvements",
    moses_model=True,
)
