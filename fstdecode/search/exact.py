"""Exact search with a certificate: A* over coverage states, for an LM of any order.

A state is ``(coverage, last end t, the last K = order − 1 target words)`` (the words are
not minimised: the bounds below reason about real contexts). ``g`` is the exact score of the
best known path to it; a transition appends one phrase p, as in :mod:`.coverage_dp`:

    g' = g + ŵ(p) + Σ_{i < K} λ ln p(p_i | last K words) − η |t + 1 − s(p)|.

The heuristic ``h(S)`` bounds the score of every completion of S from above. The lemmas:

1. **Tails.** Whatever precedes a phrase p starting at s is ``<s>`` (only if s − 1 <= d) or
   the last phrase q placed before it, with |q.t + 1 − s| <= d and q disjoint from p, so
   q.t < s or q.s > s. The context of p's first words ends with q's last min(|q|, K) words
   (its *tail*). If q has K − 1 words, the word x before it is the last word of what may
   precede q (by the same rule) or ``<s>``: each x for which x + q extends in the LM gives a
   complete tail; for every other x, the next word backs off through x + q, so its score is
   its score after q plus backoff(x + q), at most the largest such backoff (a *charged* tail).
   If q is shorter still, the words before it are unknown (a *partial* tail).
2. **Word bounds.** For a known context c and J unknown words before it,
   ``ArpaLM.context_bounds`` bounds ln p(w | u c) over every u: the score either backs off
   through c (then it is ln p(w | c) plus the backoffs of the longer contexts, each within the
   extreme backoffs of the stored n-grams ending in c) or matches a stored n-gram u' c w (within
   the extreme probabilities of those). With λ >= 0 the upper bound is used, else the lower.
3. **Option bounds.** β(p) = ŵ(p) + max over the tails τ before s(p) of the bounded LM scores
   of p's first K words after τ. By 1 and 2, β(p) >= ŵ(p) + (the LM part of any transition
   that appends p). Words after the K-th are in ŵ(p), which is exact.
4. **Covers.** cover[a][b] = the best segmentation of positions a..b into options by β. Every
   completion covers each gap (maximal uncovered run) of S by options inside it, so its
   phrases' ŵ and LM parts sum to at most Σ_gaps cover.
5. **End.** The LM score of ``</s>`` is at most ``eos``: the max over the tails of every
   option that can end a derivation (end − q.t − 1 <= d).
6. **Distortion.** With η >= 0, Moore & Quirk's Φ (:func:`.stack.remaining_distortion`):
   every completion jumps at least |t + 1 − g| + (covered positions right of g) in all, g the
   leftmost uncovered position. It is the least total jump of a relaxed problem (any spans,
   no limit) whose completions include the real ones, so Φ(S) <= jump + Φ(S') for every
   transition. With η < 0 each remaining jump (one per phrase, at most one per position, plus
   ``</s>``) is at most d, so −η d (uncovered + 1) bounds their reward. A state that
   :func:`.stack.is_dead` proves unable to finish within d has no completion (h = −inf) and is
   not kept.
7. **Full coverage.** A state covering every position has one completion, ``</s>``; h is its
   exact score (−inf if the final jump exceeds d).

So ``h(S) = Σ_gaps cover + eos + distortion bound`` is admissible, and consistent: appending
p inside gap G splits G into two gaps whose covers plus β(p) are at most cover(G) (4), the
distortion bound drops by at most the jump's cost (6), and at full coverage the exact end
score is at most eos plus the bound (5, 6). With a consistent heuristic, A* expands each
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

from fstdecode.problem.problem import Option, SearchError, SearchLimitError, SearchProblem, SearchResult
from fstdecode.search import stack
from fstdecode.search.base import SearchOptions, option, register

#: The state budget of ``--method exact``: the native search keeps about 1-2M states a second
#: and 100-200 bytes a state, so this is at most a minute or so and a few GB per sentence.
DEFAULT_EXACT_MAX_STATES = 20_000_000

#: (words, partial, charge): the last words of what may precede a phrase; ``partial``: words
#: before them matter and are unknown; ``charge`` (not None): the first word is bounded by its
#: score after ``words`` plus this weighted backoff (lemma 1).
Tail = tuple[tuple[int, ...], bool, float | None]


@dataclass(frozen=True)
class ExactOptions(SearchOptions):
    """``--method exact``: the budgets. ``time_limit`` (seconds, opt-in) makes output depend on the machine's speed."""

    max_states: int = field(
        default=DEFAULT_EXACT_MAX_STATES,
        metadata=option("state budget per sentence; beyond it the line is marked not optimal, with its gap", minimum=1),
    )
    time_limit: float | None = field(
        default=None,
        metadata=option("exact: seconds of search per sentence before giving up the proof (default: none)", minimum=0),
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


def tails_of(problem: SearchProblem, q: Option, k: int, d: int) -> set[Tail]:
    """Lemma 1: the tails of q (complete, charged or partial)."""
    if len(q.words) >= k:
        return {(q.words[-k:], False, None)}
    if len(q.words) < k - 1:
        return {(q.words, True, None)}
    xs = {problem.bos} if q.s - 1 <= d else set()
    xs |= {r.last for a in range(1, problem.n + 1) for r in problem.by_start[a] if may_precede(r, q.s, d)}
    out: set[Tail] = set()
    charge = -math.inf
    for x in xs:
        ctx = (x, *q.words)
        if problem.extends(ctx):
            out.add((ctx, False, None))
        charge = max(charge, problem.backoff(ctx))
    if xs:
        out.add((q.words, False, charge))
    return out


def word_bound(problem: SearchProblem, known: tuple[int, ...], unknown: int, w: int) -> float:
    """Lemma 2: an upper bound on λ ln p(w | u + known) over every u of ``unknown`` words."""
    lam = problem.weights.lm
    if lam == 0:
        return 0.0
    if unknown <= 0:
        return problem.ngram(known, w)
    vocab = problem.vocab
    lo, hi = problem.lm.context_bounds([vocab[c] for c in known], unknown, vocab[w])
    return lam * hi if lam > 0 else lam * lo


def prefix_bound(problem: SearchProblem, tail: Tail, words: tuple[int, ...], k: int) -> float:
    """The bounded LM scores of the first min(|words|, K) words after ``tail``."""
    seq, partial, charge = list(tail[0]), tail[1], tail[2]
    total = 0.0
    for i in range(min(len(words), k)):
        have = len(seq)
        size = min(k, have)
        unknown = k - have if partial else 0
        if i == 0 and charge is not None:
            total += problem.ngram(tuple(seq), words[i]) + charge
        else:
            total += word_bound(problem, tuple(seq[have - size:]), unknown, words[i])
        seq.append(words[i])
    return total


def tails_before(problem: SearchProblem, s: int, k: int, d: int, memo: dict[int, set[Tail]]) -> set[Tail]:
    """Lemma 1: the tails of everything that may precede a phrase starting at s."""
    out: set[Tail] = set()
    if s - 1 <= d:
        out.add(((problem.bos,), False, None))
    for a in range(1, problem.n + 1):
        for q in problem.by_start[a]:
            if may_precede(q, s, d):
                out |= _tails(problem, q, k, d, memo)
    return out


def _tails(problem: SearchProblem, q: Option, k: int, d: int, memo: dict[int, set[Tail]]) -> set[Tail]:
    got = memo.get(id(q))
    if got is None:
        got = memo[id(q)] = tails_of(problem, q, k, d)
    return got


def bounds(problem: SearchProblem) -> Bounds:
    """β of every option (by ``id``), the ``</s>`` bound and the cover table."""
    n, k = problem.n, problem.order - 1
    d = min(problem.d, n + 2)
    beta: dict[int, float] = {}
    memo: dict[int, set[Tail]] = {}
    for s in range(1, n + 1):
        opts = problem.by_start[s]
        if not opts:
            continue
        tails = tails_before(problem, s, k, d, memo)
        memo: dict[tuple[int, ...], float] = {}
        for o in opts:
            prefix = o.words[:k]
            if prefix not in memo:
                memo[prefix] = max(prefix_bound(problem, t, o.words, k) for t in tails)
            beta[id(o)] = o.score + memo[prefix]
    last: set[Tail] = {((problem.bos,), False, None)} if n == 0 else set()
    for a in range(1, n + 1):
        for q in problem.by_start[a]:
            if problem.end - q.t - 1 <= d:
                last |= _tails(problem, q, k, d, memo)
    eos = max((prefix_bound(problem, t, (problem.eos,), k) for t in last), default=-math.inf)
    cover = [[-math.inf] * (n + 1) for _ in range(n + 2)]
    for e in range(n + 1):
        cover[e + 1][e] = 0.0
        for a in range(e, 0, -1):
            cover[a][e] = max(
                (beta[id(o)] + cover[o.t + 1][e] for o in problem.by_start[a] if o.t <= e),
                default=-math.inf,
            )
    return Bounds(beta, eos, cover)


def heuristic(problem: SearchProblem, b: Bounds, cov: int, t: int, context: tuple[int, ...]) -> float:
    """h(S): lemmas 4-7."""
    n, end, eta = problem.n, problem.end, problem.eta
    d = min(problem.d, n + 2)
    full = (1 << n) - 1
    if cov == full:
        if end - t - 1 > d:
            return -math.inf
        return problem.ngram(context, problem.eos) - eta * (end - t - 1)
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
        return total - eta * stack.remaining_distortion(cov, t)
    return total - eta * d * (uncovered + 1)


def astar(problem: SearchProblem, nbest: int, max_states: int | None, time_limit: float | None, lower_bound: float) -> tuple[SearchResult, str]:
    """The A* search; returns its result (hypotheses, optimal, states, transitions, upper_bound)
    and a status: ``""`` (proven), ``"budget"`` (with the reason) or ``"none"``."""
    n, end, eta, k = problem.n, problem.end, problem.eta, problem.order - 1
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

    try:
        start = (0, 0, (problem.bos,))
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
                if not found:
                    upper = -neg_f
                found.append((g, phrases(at)))
                if len(found) == nbest:
                    break
                continue
            entry = states[key]
            if entry[1] >= nbest:
                continue
            entry[1] += 1
            cov, last_t, context = key
            if cov == full:
                transitions += 1
                push(None, g + entry[0], at, None)
                continue
            for s in range(max(1, last_t + 1 - d), min(n, last_t + 1 + d) + 1):
                if cov >> (s - 1) & 1:
                    continue
                jump = abs(last_t + 1 - s)
                for t, opts in spans[s]:
                    span = ((1 << (t - s + 1)) - 1) << (s - 1)
                    if cov & span:
                        break  # so do the longer spans
                    new_cov = cov | span
                    if stack.is_dead(new_cov, t, n, d):  # no completion within the limit
                        continue
                    is_full = new_cov == full
                    # f <= g + β(p) − η jump + this: β bounds p's LM part, eos the closing score.
                    h_span = b.eos - eta * (end - t - 1) if is_full else heuristic(problem, b, new_cov, t, ())
                    base = g - eta * jump + h_span
                    for opt in opts:  # best β first
                        if not base + b.beta[id(opt)] >= floor:
                            break
                        transitions += 1
                        seq = list(context)
                        lm = 0.0
                        for i in range(min(len(opt.words), k)):
                            lm += problem.ngram(tuple(seq[-k:]), opt.words[i])
                            seq.append(opt.words[i])
                        seq.extend(opt.words[min(len(opt.words), k):])
                        new_key = (new_cov, t, tuple(seq[-k:]))
                        new_g = g + (opt.score + lm - eta * jump)
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
        raise SearchError(f"no derivation satisfies the distortion limit d={problem.d}")
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


register("exact", ExactOptions, function=search, exact=True, summary="A* over coverage states with a certificate (exact, any LM order)")
