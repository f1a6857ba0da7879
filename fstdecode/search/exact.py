"""Exact search with a certificate: A* over coverage states, for an LM of any order.

A state is ``(coverage, last end t, LM context)``, the context minimised as KenLM minimises
right states (:func:`fstdecode.statespace.ngram.minimise`), exactly as in :mod:`.coverage_dp`:
a transition appends one phrase p to the ``<s>`` tape,

    g' = g + ŵ(p) + join(context, p) − η |t + 1 − s(p)|,

where ``join`` (:func:`fstdecode.statespace.ngram.joined`) scores p's first K = order − 1 words
after the context and charges the backoffs of the new context's minimisation. ``g`` is the
exact score of the best known path to the state. The heuristic ``h(S)`` bounds the score of
every completion of S from above. The lemmas:

1. **Contexts.** Whatever precedes a phrase p starting at s is ``<s>`` (only if s − 1 <= d) or
   the last phrase q placed before it, with |q.t + 1 − s| <= d and q disjoint from p, so
   q.t < s or q.s > s (:func:`may_precede`). The state after q has the context join(m, q) for
   the context m before q: one context if q has K words or more (it fixes the last K words),
   else one per m. So the sets ``after[q]`` (contexts after q) and ``before[s]`` (contexts
   before a phrase starting at s: ``<s>``'s and every preceding q's) are the least fixpoint of
   these two rules (:func:`contexts`), and every reachable state's context lies in them.
2. **Option bounds.** β(p) = ŵ(p) + max over m in ``before[s(p)]`` of join(m, p). For p of K
   words or more the join is the prefix score of its first K words after m plus a charge that
   depends on p alone (:func:`end_charge`), so the max is taken over the prefix scores.
   Words after the K-th are in ŵ(p), which is exact. So β(p) >= the score of any transition
   that appends p, minus its jump.
3. **Covers.** cover[a][b] = the best segmentation of positions a..b into options by β. Every
   completion covers each gap (maximal uncovered run) of S by options inside it, so its
   phrases' ŵ and LM parts sum to at most Σ_gaps cover.
4. **End.** The LM score of ``</s>`` is at most ``eos``: the max of join(m, ``</s>``) over the
   contexts m after every option that can end a derivation (end − q.t − 1 <= d).
5. **Distortion.** With η >= 0, Moore & Quirk's Φ (:func:`.stack.remaining_distortion`):
   every completion jumps at least |t + 1 − g| + (covered positions right of g) in all, g the
   leftmost uncovered position. It is the least total jump of a relaxed problem (any spans,
   no limit) whose completions include the real ones, so Φ(S) <= jump + Φ(S') for every
   transition. With η < 0 each remaining jump (one per phrase, at most one per position, plus
   ``</s>``) is at most d, so −η d (uncovered + 1) bounds their reward. A state that
   :func:`.stack.is_dead` proves unable to finish within d has no completion (h = −inf) and is
   not kept.
6. **Full coverage.** A state covering every position has one completion, ``</s>``; h is its
   exact score (−inf if the final jump exceeds d).
7. **Lexicalized reordering.** With a reordering model the state also holds what the next
   orientation reads of the last phrase (:meth:`SearchProblem.reordering_state`: its start for
   ``msd``/``mslr``, its weighted forward row with a forward direction), and the transition that
   appends p is charged p's reordering score: ``lr_back[o]`` of p plus ``lr_next[o]`` of the
   phrase q before it (o the orientation of p after q; ``lr_back[o]`` alone when p is first);
   nothing is charged at ``</s>``. So every reordering score is paid by the transition of the
   phrase it orients, and β(p) adds the best one p can get (:func:`reordering_bounds`): the
   max, over the spans (a, b) of the phrases that may precede p (lemma 1) and ``<s>`` (when
   s − 1 <= d), of ``lr_back[o] + max lr_next[o]`` over the options of span (a, b), o the
   orientation of p after (a, b) (after ``<s>``: ``lr_back[o]`` alone). The orientation depends
   on the spans only, so this is at least the score of any transition that appends p, and the
   covers of lemma 3 stay admissible and consistent.
8. **Moses' distortion semantics** (:mod:`fstdecode.model.distortion`). A phrase that does not
   start at the first gap g must end within ``t + 1 − g <= d`` (a transition rule: lemma 1's
   predecessor sets, a superset, stay valid). No limit applies to the jump into ``</s>``, so a
   full coverage is never dead (lemma 6's −inf is gone) and :func:`.stack.is_dead` keeps only its
   first-gap test. Without ``[early-distortion-cost]`` the jump into ``</s>`` is not charged:
   lemma 6's exact end score drops it, and lemma 5's Φ becomes
   :func:`remaining_distortion_to_last`, Φ' = C + min(|c − g|, |c − (r + 1)|), with c = t + 1
   the cursor, r the last uncovered position and C the covered positions between g and r.
   Why: the cursor moves by the jumps plus the phrases' lengths (U, the uncovered count), and
   must reach both g and r + 1, so it moves at least (r + 1 − g) + min(...), and the jumps
   are that minus U. It is consistent (Φ'(S) <= jump + Φ'(S') for a phrase [s, t'] of length
   ℓ): with L = r + 1 − g, Φ' = L − U + dist(c, {g, r + 1}); a phrase inside the hull keeps L
   and the distance is 1-Lipschitz, so dist(c) <= |c − s| + ℓ + dist(t' + 1); a phrase at g
   shrinks L by ℓ plus the covered run c' after it, and its new distance is exactly c'; a
   phrase ending at r shrinks L by ℓ plus the run c' before it, and its new distance is ℓ + c',
   while dist(c) <= |c − (t' + 1)| <= |c − s| + ℓ; a last phrase (s = g, t' = r) costs at least
   dist(c) = Φ'. Φ' of a full coverage is 0. The −η d (uncovered + 1) bound for η < 0 still
   holds (the final jump is not charged, and the others are at most d).

So ``h(S) = Σ_gaps cover + eos + distortion bound`` is admissible, and consistent: appending
p inside gap G splits G into two gaps whose covers plus β(p) are at most cover(G) (3), the
distortion bound drops by at most the jump's cost (5), and at full coverage the exact end
score is at most eos plus the bound (4, 5). With a consistent heuristic, A* expands each
state first along a best path, and the first complete derivation popped has the largest
``f = g + h`` of everything open: its score bounds every derivation (the certificate). For k
best, each state is expanded at most k times, along its k best paths.

A lower bound from the stack decoder (a real derivation) prunes what cannot beat it; over
budget (``max_states`` states, or ``time_limit`` seconds), the result is that derivation, not
proven, with the largest open ``f`` (or the derivation's score, if larger) as upper bound.

:func:`search` is the Python reference; the native core runs the same search
(:mod:`fstdecode.search.native_exact`).
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field

from fstdecode.model.lexical_reordering import first_orientation, orientation
from fstdecode.problem.problem import Option, SearchError, SearchLimitError, SearchProblem, SearchResult, no_derivation_message
from fstdecode.search import stack
from fstdecode.search.base import OptionsError, SearchOptions, option, register
from fstdecode.statespace.ngram import joined

#: The state budget of ``--method exact``. The native search keeps about 200,000 states (4M
#: transitions) a second here, at about 160 bytes a state, so a line stops within about a minute
#: and 1.6 GB; every Hansards line (orders 2 and 3, d = 4, table-limit 20) needs at most 2.6M.
DEFAULT_EXACT_MAX_STATES = 10_000_000

@dataclass(frozen=True)
class ExactOptions(SearchOptions):
    """``--method exact``: the budgets. ``time_limit`` (seconds, opt-in) makes output depend on the machine's speed."""

    max_states: int = field(
        default=DEFAULT_EXACT_MAX_STATES,
        metadata=option("state budget per sentence; beyond it the line is marked not optimal, with its gap", minimum=1),
    )
    time_limit: float | None = field(
        default=None,
        metadata=option("exact: seconds of search per sentence before giving up the proof, > 0 (default: none)"),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        # One meaning in both engines: a limit is a positive number of seconds. 0 is refused, not
        # read as "no limit" (as the core once did) nor as "stop at once" (as the Python engine did).
        if self.time_limit is not None and self.time_limit <= 0:
            raise OptionsError(
                f"time_limit (--time-limit) must be > 0 seconds (leave it out for no limit), got {self.time_limit:g}"
            )


@dataclass(frozen=True)
class Bounds:
    """The heuristic's pieces: ``beta`` by option (lemma 3), ``eos`` (5), ``cover[a][b]`` (4)."""

    beta: dict[int, float]
    eos: float
    cover: list[list[float]]


def may_precede(q: Option, s: int, d: int) -> bool:
    """Lemma 1: q may be the last phrase before one that starts at s."""
    return abs(q.t + 1 - s) <= d and (q.t < s or q.s > s)


def join(problem: SearchProblem, context: tuple[int, ...], opt: Option) -> tuple[tuple[int, ...], float]:
    """The context after appending ``opt`` to the ``<s>`` tape ending in ``context``, and the join's LM score."""
    sig, score = joined(problem, (0, (), 0, context), opt, None, True)
    return sig[3], score


def prefix_score(problem: SearchProblem, context: tuple[int, ...], words: tuple[int, ...], k: int) -> float:
    """The weighted LM scores of the first min(|words|, K) words after ``context`` (no minimisation)."""
    seq = list(context)
    total = 0.0
    for i in range(min(len(words), k)):
        have = len(seq)
        size = min(k, have)
        total += problem.ngram(tuple(seq[have - size:]), words[i])
        seq.append(words[i])
    return total


def end_charge(problem: SearchProblem, words: tuple[int, ...], k: int) -> float:
    """The backoffs charged when a phrase's last K words are minimised (its join's part that
    depends on the phrase alone, when it has K words or more)."""
    context = tuple(words[-k:])
    total = 0.0
    while context and not problem.extends(context):
        total += problem.backoff(context)
        context = context[1:]
    return total


def contexts(problem: SearchProblem) -> tuple[dict[int, set], list[set]]:
    """Lemma 1: ``after[id(q)]`` and ``before[s]``, the least fixpoint."""
    n, k = problem.n, problem.order - 1
    d = min(problem.d, n + 2)
    bos = (problem.bos,)
    options = [q for a in range(1, n + 1) for q in problem.by_start[a]]
    preceders = [[q for q in options if may_precede(q, s, d)] for s in range(n + 1)]
    after: dict[int, set] = {id(q): set() for q in options}
    for q in options:
        if len(q.words) >= k:
            after[id(q)].add(join(problem, bos, q)[0])
    before: list[set] = [set() for _ in range(n + 1)]
    changed = True
    while changed:
        changed = False
        for s in range(1, n + 1):
            here = before[s]
            if s - 1 <= d:
                here.add(bos)
            for q in preceders[s]:
                here |= after[id(q)]
            for q in problem.by_start[s]:
                if len(q.words) >= k:
                    continue
                got = after[id(q)]
                for m in list(here):
                    c = join(problem, m, q)[0]
                    if c not in got:
                        got.add(c)
                        changed = True
    return after, before


def bounds(problem: SearchProblem) -> Bounds:
    """β of every option (by ``id``), the ``</s>`` bound and the cover table (lemmas 2-4)."""
    n, k = problem.n, problem.order - 1
    d = min(problem.d, n + 2)
    after, before = contexts(problem)
    beta: dict[int, float] = {}
    for s in range(1, n + 1):
        memo: dict[tuple[int, ...], float] = {}
        for o in problem.by_start[s]:
            long_phrase = len(o.words) >= k
            key = o.words[:k] if long_phrase else o.words
            if key not in memo:
                if long_phrase:
                    memo[key] = max(prefix_score(problem, m, o.words, k) for m in before[s])
                else:
                    memo[key] = max(join(problem, m, o)[1] for m in before[s])
            lm = memo[key] + end_charge(problem, o.words, k) if long_phrase else memo[key]
            beta[id(o)] = o.score + lm
    if problem.reordering is not None:
        for key, best in reordering_bounds(problem).items():
            beta[key] += best
    if n == 0:
        eos = join(problem, (problem.bos,), problem.eos_option)[1]
    else:
        eos = max(
            (join(problem, m, problem.eos_option)[1]
             for a in range(1, n + 1) for q in problem.by_start[a] if ends_ok(problem, q.t, d)
             for m in after[id(q)]),
            default=-math.inf,
        )
    cover = [[-math.inf] * (n + 1) for _ in range(n + 2)]
    for e in range(n + 1):
        cover[e + 1][e] = 0.0
        for a in range(e, 0, -1):
            cover[a][e] = max(
                (beta[id(o)] + cover[o.t + 1][e] for o in problem.by_start[a] if o.t <= e),
                default=-math.inf,
            )
    return Bounds(beta, eos, cover)


def ends_ok(problem: SearchProblem, t: int, d: int) -> bool:
    """May a derivation whose last phrase ends at t close with ``</s>``? (Moses' semantics: always.)"""
    return problem.semantics == "moses" or problem.end - t - 1 <= d


def reordering_bounds(problem: SearchProblem) -> dict[int, float]:
    """Lemma 7: for each option p, the best reordering score any transition appending p can pay
    (``id(p)`` -> bound; empty without a reordering model)."""
    if problem.reordering is None:
        return {}
    cfg = problem.reordering.config
    n = problem.n
    d = min(problem.d, n + 2)
    k = cfg.num_orientations
    # best_next[(a, b)][o]: the best forward score of orientation o over the options of span (a, b).
    best_next: dict[tuple[int, int], list[float]] = {}
    for a in range(1, n + 1):
        for q in problem.by_start[a]:
            row = best_next.setdefault((q.s, q.t), [-math.inf] * k)
            for o in range(k):
                row[o] = max(row[o], q.lr_next[o] if q.lr_next else 0.0)
    out: dict[int, float] = {}
    for (s, t), _ in sorted(best_next.items()):
        # best[o]: the best forward score that a possible predecessor charges for orientation o
        # (0 after <s>, which charges none).
        best = [-math.inf] * k
        if s - 1 <= d:
            o = first_orientation(cfg, s - 1)
            best[o] = max(best[o], 0.0)
        for (a, b), row in best_next.items():
            if abs(b + 1 - s) <= d and (b < s or a > s):  # may_precede
                o = orientation(cfg, (a, b), (s, t))
                best[o] = max(best[o], row[o])
        for p in problem.by_start[s]:
            if p.t == t:
                out[id(p)] = max(((p.lr_back[o] if p.lr_back else 0.0) + best[o] for o in range(k)), default=-math.inf)
    return out


def remaining_distortion_to_last(coverage: int, last_t: int, n: int) -> int:
    """Lemma 8's Φ without a final jump: the covered positions strictly between the first
    uncovered position g and the last one r, plus the distance from ``last_t + 1`` to the nearer
    of g and r + 1 (0 at full coverage)."""
    g = stack.lowest_uncovered(coverage)
    if g > n:
        return 0
    r = (~coverage & ((1 << n) - 1)).bit_length()  # the last uncovered position
    between = bin((coverage >> g) & ((1 << (r - g)) - 1)).count("1")  # positions g+1..r
    return between + min(abs(last_t + 1 - g), abs(last_t - r))


@dataclass(frozen=True)
class TapeBounds:
    """Bounds for other state spaces (the signature states of the cascade's pruned R,
    :func:`fstdecode.fst.reorder.build_reordering`), as the core's ExactBounds holds them:
    ``before[s]`` (1 <= s <= n + 1) maps each LM context that may precede a phrase starting at s
    (s = n + 1: ``</s>``) to its *lift*, the largest backoff charge (at least 0) of the
    minimisation that made it, over the phrases that may precede s and the contexts before them
    (a junction's charge is paid with the junction or before it); ``eos`` is the best ``</s>``
    score after them, charge included; ``suffix[a]`` is the best segmentation of a..n by
    γ(p) = ŵ(p) + :meth:`tape` of p's first words at s(p)."""

    before: list[dict[tuple[int, ...], float]]
    suffix: list[float]
    eos: float
    k: int

    def tape(self, problem: SearchProblem, s: int, words: tuple[int, ...]) -> float:
        """An upper bound on the LM scores a tape starting at s gets for its first ``words`` (at
        most K, those lacking left context) once something precedes it, charge included."""
        return max((lift + prefix_score(problem, m, words, self.k) for m, lift in self.before[s].items()), default=-math.inf)


def tape_bounds(problem: SearchProblem) -> TapeBounds:
    """The :class:`TapeBounds` of a problem (the same values as the core's)."""
    n, k = problem.n, problem.order - 1
    d = min(problem.d, n + 2)
    _, before = contexts(problem)
    bos = (problem.bos,)
    options = [q for a in range(1, n + 1) for q in problem.by_start[a]]
    charged: dict[int, dict[tuple[int, ...], float]] = {}

    def charges_of(q: Option) -> dict[tuple[int, ...], float]:  # context after q -> its largest charge
        got = charged.get(id(q))
        if got is None:
            got = charged[id(q)] = {}
            if len(q.words) >= k:
                got[join(problem, bos, q)[0]] = max(0.0, end_charge(problem, q.words, k))
            else:
                for m in before[q.s]:
                    c, score = join(problem, m, q)
                    ch = max(0.0, score - prefix_score(problem, m, q.words, k))
                    got[c] = max(got.get(c, ch), ch)
        return got

    lifted: list[dict[tuple[int, ...], float]] = [{} for _ in range(n + 2)]
    for s in range(1, n + 2):
        here = lifted[s]
        if (s - 1 <= d) if s <= n else n == 0:
            here[bos] = 0.0
        for q in options:
            if may_precede(q, s, d) if s <= n else problem.end - q.t - 1 <= d:
                for c, ch in charges_of(q).items():
                    here[c] = max(here.get(c, ch), ch)
    eos = max((lift + prefix_score(problem, m, (problem.eos,), k) for m, lift in lifted[n + 1].items()), default=-math.inf)
    tb = TapeBounds(lifted, [-math.inf] * (n + 2), eos, k)
    tb.suffix[n + 1] = 0.0
    for a in range(n, 0, -1):
        tb.suffix[a] = max(
            (o.score + tb.tape(problem, a, o.words[:k]) + tb.suffix[o.t + 1] for o in problem.by_start[a]),
            default=-math.inf,
        )
    return tb


def heuristic(problem: SearchProblem, b: Bounds, cov: int, t: int, context: tuple[int, ...]) -> float:
    """h(S): lemmas 4-7."""
    n, end, eta = problem.n, problem.end, problem.eta
    d = min(problem.d, n + 2)
    full = (1 << n) - 1
    if cov == full:
        if not ends_ok(problem, t, d):
            return -math.inf
        close = join(problem, context, problem.eos_option)[1]
        return close - eta * (end - t - 1) if problem.charge_final else close
    total, uncovered = b.eos, 0
    p = 1
    while p <= n:
        if cov >> (p - 1) & 1:
            p += 1
            continue
        a = p
        while p <= n and not cov >> (p - 1) & 1:
            p += 1
        total += b.cover[a][p - 1]
        uncovered += p - a
    if eta >= 0:
        if not problem.charge_final:
            return total - eta * remaining_distortion_to_last(cov, t, n)
        return total - eta * stack.remaining_distortion(cov, t)
    return total - eta * d * (uncovered + 1)


def astar(
    problem: SearchProblem,
    nbest: int,
    max_states: int | None,
    time_limit: float | None,
    lower_bound: float,
    edges: list | None = None,
) -> tuple[SearchResult, str]:
    """The A* search; returns its result (hypotheses, optimal, states, transitions, upper_bound)
    and a status: ``""`` (proven), ``"budget"`` (with the reason) or ``"none"``.

    With ``edges`` (a list, filled here; see :func:`support`), the search does not stop at the
    k-th goal: it expands every state whose bound reaches ``lower_bound`` and appends every
    transition that can (``(from key, to key or None for the goal, option or None, score,
    best g of the from state)``), so that the transitions of every derivation scoring at least
    ``lower_bound`` are among them."""
    n, end, eta = problem.n, problem.end, problem.eta
    d = min(problem.d, n + 2)
    full = (1 << n) - 1
    b = bounds(problem)
    spans = [_spans(problem, b, s) for s in range(n + 1)]
    floor = lower_bound - 1e-9 * max(1.0, abs(lower_bound)) if math.isfinite(lower_bound) else -math.inf
    start_time = time.perf_counter()
    # states: key -> [h, pops, kept g values]; nodes: (g, key or None for the goal, parent, option)
    states: dict[tuple, list] = {}
    nodes: list[tuple[float, tuple | None, int, Option | None]] = []
    heap: list[tuple[float, int, int]] = []
    count = transitions = 0
    found: list[tuple[float, tuple]] = []
    upper = math.nan

    def push(key: tuple | None, g: float, parent: int, opt: Option | None) -> None:
        h = 0.0 if key is None else states[key][0]
        nodes.append((g, key, parent, opt))
        heapq.heappush(heap, (-(g + h), len(nodes) - 1, len(nodes) - 1))

    def admit(key: tuple, g: float) -> bool:
        entry = states[key]
        if entry[1] >= nbest:
            return False
        kept = entry[2]
        if len(kept) < nbest:
            kept.append(g)
            return True
        worst = min(range(nbest), key=kept.__getitem__)
        if g <= kept[worst]:
            return False
        kept[worst] = g
        return True

    def new_state(key: tuple, h: float) -> None:
        nonlocal count
        count += 1
        if max_states is not None and count > max_states:
            raise _Stop(f"more than {max_states} states (--max-states)")
        states[key] = [h, 0, []]

    def phrases(node: int) -> tuple:
        out = []
        while node >= 0:
            _, _, parent, opt = nodes[node]
            if opt is not None:
                out.append(opt.phrase)
            node = parent
        return tuple(reversed(out))

    moses = problem.semantics == "moses"
    lr = problem.reordering is not None
    try:
        start = (0, 0, (problem.bos,), ())
        new_state(start, heuristic(problem, b, 0, 0, start[2]))
        push(start, 0.0, -1, None)
        pops = 0
        while heap:
            pops += 1
            if time_limit is not None and pops % 256 == 0 and time.perf_counter() - start_time > time_limit:
                raise _Stop(f"more than {time_limit:g} s of search (--time-limit)")
            neg_f, _, at = heapq.heappop(heap)
            g, key, _, _ = nodes[at]
            if key is None:
                if len(found) < nbest:
                    if not found:
                        upper = -neg_f
                    found.append((g, phrases(at)))
                if len(found) == nbest and edges is None:
                    break
                continue
            entry = states[key]
            if entry[1] >= nbest:
                continue
            entry[1] += 1
            cov, last_t, context, rstate = key
            if cov == full:
                transitions += 1
                push(None, g + entry[0], at, None)
                if edges is not None:
                    edges.append((key, None, None, entry[0], g))
                continue
            g0 = stack.lowest_uncovered(cov)
            for s in range(max(1, last_t + 1 - d), min(n, last_t + 1 + d) + 1):
                if cov >> (s - 1) & 1:
                    continue
                jump = abs(last_t + 1 - s)
                for t, opts in spans[s]:
                    span = ((1 << (t - s + 1)) - 1) << (s - 1)
                    if cov & span:
                        break  # so do the longer spans
                    if moses and s != g0 and t + 1 - g0 > d:
                        break  # Moses' gap rule (lemma 8); so do the longer spans
                    new_cov = cov | span
                    if stack.is_dead(new_cov, t, n, d, moses):  # no completion within the limit
                        continue
                    is_full = new_cov == full
                    # f <= g + β(p) − η jump + this: β bounds p's LM (and reordering) part, eos the
                    # closing score.
                    if is_full:
                        h_span = b.eos - eta * (end - t - 1) if problem.charge_final else b.eos
                    else:
                        h_span = heuristic(problem, b, new_cov, t, ())
                    base = g - eta * jump + h_span
                    for opt in opts:  # best β first
                        if not base + b.beta[id(opt)] >= floor:
                            break
                        transitions += 1
                        new_context, lm = join(problem, context, opt)
                        w = opt.score + lm - eta * jump
                        if lr:
                            w += problem.reordering_after(last_t, rstate, opt)
                        new_key = (new_cov, t, new_context, problem.reordering_state(opt))
                        new_g = g + w
                        got = states.get(new_key)
                        if got is not None:
                            h = got[0]
                        else:
                            h = heuristic(problem, b, new_cov, t, new_key[2]) if is_full else h_span
                        f = new_g + h
                        if not f > -math.inf or f < floor:
                            continue
                        if got is None:
                            new_state(new_key, h)
                        if edges is not None:
                            edges.append((key, new_key, opt, w, g))
                        if admit(new_key, new_g):
                            push(new_key, new_g, at, opt)
    except _Stop as stop:
        bound = -heap[0][0] if heap else -math.inf
        if found:
            bound = max(bound, found[0][0])
        if math.isfinite(lower_bound):
            bound = max(bound, lower_bound)
        return SearchResult(tuple(found), False, count, transitions, bound), f"budget: {stop}"
    if not found:
        return SearchResult((), False, count, transitions), "none"
    return SearchResult(tuple(found), True, count, transitions, upper), ""


def support(
    problem: SearchProblem, threshold: float, max_states: int | None = None, time_limit: float | None = None
) -> tuple[list[Option] | None, SearchResult, str]:
    """The options of every derivation scoring at least ``threshold`` (a superset: it may hold
    more), from an A* that expands every state whose bound reaches the threshold.

    Lemma: a derivation D scoring at least the threshold passes only through states whose
    f = g + h, at their best g, is at least D's score (h is admissible); so each of its states
    is expanded and each of its transitions recorded (:func:`astar` with ``edges``). β(S), the
    best completion of S within the recorded transitions, is at least D's remainder after S; so
    every transition u → v of D has g(u) + w + β(v) >= the score of D >= the threshold, and its
    option is kept. Returns (options in the order of the problem's options, or None when the
    budget ran out; the A* result; its status).
    """
    edges: list = []
    result, status = astar(problem, 1, max_states, time_limit, threshold, edges)
    if status.startswith("budget"):
        return None, result, status
    floor = threshold - 1e-9 * max(1.0, abs(threshold)) if math.isfinite(threshold) else -math.inf
    out: dict[tuple, list[tuple]] = {}
    for edge in edges:
        out.setdefault(edge[0], []).append(edge)
    beta: dict[tuple | None, float] = {None: 0.0}
    # Transitions add coverage, so states with more covered positions come first.
    for key in sorted(out, key=lambda k: -bin(k[0]).count("1")):
        beta[key] = max(w + beta.get(to, -math.inf) for _, to, _, w, _ in out[key])
    kept = {id(opt) for _, to, opt, w, g in edges if opt is not None and g + w + beta.get(to, -math.inf) >= floor}
    return [opt for s in range(1, problem.n + 1) for opt in problem.by_start[s] if id(opt) in kept], result, status


def _spans(problem: SearchProblem, b: Bounds, s: int) -> list[tuple[int, list[Option]]]:
    """The options starting at s grouped by end (ascending), best β first (ties: table order)."""
    if s == 0:
        return []
    return [(t, sorted(opts, key=lambda o: -b.beta[id(o)])) for t, opts in problem.groups(s)]


class _Stop(Exception):
    """A budget ran out."""


def lower_bound(problem: SearchProblem, nbest: int, search_stack=stack.search) -> SearchResult | None:
    """The stack decoder's k best (default settings): real derivations, so a lower bound; None if it finds none."""
    try:
        return search_stack(problem, stack.StackOptions(nbest=nbest))
    except SearchError:
        return None


def finish(problem: SearchProblem, result: SearchResult, status: str, lower: SearchResult | None) -> SearchResult:
    """The searcher's answer from the A* result and status (shared by both engines).

    Over budget: SearchLimitError carrying the best derivations known, not proven, with the
    upper bound. ``states`` and ``transitions`` include the lower bound's stack search.
    """
    states = result.states + (lower.states if lower else 0)
    transitions = result.transitions + (lower.transitions if lower else 0)
    if status.startswith("budget"):
        hypotheses = result.hypotheses
        if lower is not None and (not hypotheses or lower.hypotheses[0][0] > hypotheses[0][0]):
            hypotheses = lower.hypotheses
        best = SearchResult(hypotheses, False, states, transitions, result.upper_bound) if hypotheses else None
        raise SearchLimitError(status.partition(": ")[2], best)
    if status == "none" or not result.hypotheses:
        if lower is not None:
            raise SearchError("the exact search lost the stack decoder's derivation (a bug)")
        raise SearchError(no_derivation_message(problem.d))
    if lower is not None and result.hypotheses[0][0] < lower.hypotheses[0][0] - 1e-6 * max(1.0, abs(lower.hypotheses[0][0])):
        raise SearchError("the exact search scored below the stack decoder's derivation (a bug)")
    return SearchResult(result.hypotheses, True, states, transitions, result.upper_bound)


def kth_score(lower: SearchResult | None, nbest: int) -> float:
    """The score every one of the k best derivations reaches: the stack's k-th, if it found k."""
    if lower is None or len(lower.hypotheses) < nbest:
        return -math.inf
    return lower.hypotheses[nbest - 1][0]


def search(problem: SearchProblem, options: ExactOptions = ExactOptions()) -> SearchResult:
    """The k best derivations, proven (``optimal``, ``upper_bound`` = the best score); over budget,
    SearchLimitError with the best known derivations and a valid upper bound."""
    lower = lower_bound(problem, options.nbest)
    result, status = astar(problem, options.nbest, options.max_states, options.time_limit, kth_score(lower, options.nbest))
    return finish(problem, result, status, lower)


register("exact", ExactOptions, function=search, exact=True, summary="A* over coverage states with a certificate (exact, any LM order)", moses_model=True)
