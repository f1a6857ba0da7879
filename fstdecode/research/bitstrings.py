"""Section 5.2 of Chang & Collins (2017): coverage bit-strings can be exponentially many.

**The family.** The paper's sentence x_1 .. x_n has x_1 = ``<s>``, x_n =
``</s>`` and (n − 2)/4 = m blocks; block k (0 <= k < m) holds the words
x_{4k+2} .. x_{4k+5} with the phrases (4k+2, 4k+2, u_k), (4k+3, 4k+3, v_k),
(4k+4, 4k+4, w_k), (4k+5, 4k+5, z_k) and (4k+4, 4k+5, y_k). Paper
position p is position p − 1 of :mod:`fstdecode.problem.problem` (``<s>``
= 0) and token index p − 2 of the :class:`~fstdecode.problem.sentence.Sentence`,
so :func:`section52_spans` lists, per block, the spans (4k+1..4k+1),
(4k+2..4k+2), (4k+3..4k+3), (4k+4..4k+4), (4k+3..4k+4) in positions.
The paper claims >= 2^m bit-strings for d >= 5.

**What is counted.** A coverage vector C ⊆ {1..N} (N = n − 2 tokens) is
*live* when some complete derivation (Definition 2: every word once,
every jump <= d, ``</s>`` last) has a prefix p_1 .. p_l (l >= 1, p_1 =
``<s>``) covering exactly C: these are the bit-strings the paper's
argument counts and the ones a target-left-to-right search (Koehn et
al. 2003; :mod:`fstdecode.search.coverage_dp`) must distinguish on the
way to any complete translation. :func:`enumerate_coverages` finds them by
brute force (a BFS over (C, end of the last phrase), then a backward
pass from the final states); it also returns the *reachable* vectors,
those of any prefix that keeps the distortion limit, dead ends included.
The coverage DP's own state count, (C, last end, last word), is larger
still; all three are reported for small n.

**Exact counting for large n** (:func:`count_live_coverages`). Colour each
phrase of a derivation red (in the prefix) or blue (in the rest): along
the derivation the colours read red…red blue…blue, ``<s>`` red and
``</s>`` blue, and C is the set of red tokens. Scanning the input left to
right, a coloured derivation is a path through the signature DP of
Section 4 whose tapes also carry the colour of their first and last
phrase, and whose joins ψ1 p ψ2 keep the colours monotone (colour(ψ1's
last) >= colour(p) >= colour(ψ2's first), red = 1 > blue = 0). This is
a nondeterministic automaton reading the bits of C left to right (a
phrase of colour c over tokens s..t reads c^(t−s+1)), with one accepting
run per coloured derivation. The number of *distinct* live C is the
number of strings it accepts, counted exactly by the subset construction
run forward: each layer maps a set of automaton configurations to the
number of bit prefixes leading to exactly that set. Configurations that
cannot reach acceptance are trimmed first, which keeps the sets few. The
tests hold this count to the brute force on small inputs.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Iterable

from fstdecode.research.problems import EdgeLM, PhraseSpec, build_problem
from fstdecode.errors import FstdecodeError
from fstdecode.problem.problem import SearchProblem

__all__ = [
    "BitstringError",
    "Coverages",
    "section52_spans",
    "section52_problem",
    "paper_lower_bound",
    "enumerate_coverages",
    "count_live_coverages",
]

class BitstringError(FstdecodeError):
    """An input outside the Section 5.2 family, or spans outside the sentence."""


def _blocks(n: int) -> int:
    """m = (n − 2)/4 for the paper's sentence length n; raises unless it is a positive integer."""
    if n < 6 or (n - 2) % 4:
        raise BitstringError(f"Section 5.2 needs n = 4m + 2 with m >= 1 (n counts <s> and </s>), got n = {n}")
    return (n - 2) // 4


def section52_spans(n: int) -> list[tuple[int, int]]:
    """The phrase spans (s, t) of the paper's sentence of length n, in search positions (<s> = 0).

    Paper position p is search position p − 1; N = n − 2 tokens at 1..N.
    """
    spans = []
    for k in range(_blocks(n)):
        a = 4 * k + 1  # paper 4k + 2
        spans += [(a, a), (a + 1, a + 1), (a + 2, a + 2), (a + 3, a + 3), (a + 2, a + 3)]
    return spans


def section52_problem(n: int, d: int) -> SearchProblem:
    """The paper's instance as a :class:`SearchProblem`: words x2..x_{n−1}, targets u_k v_k w_k z_k y_k.

    Every bigram scores −1 (all are possible, so the search space is the
    whole of it); phrase scores are 0.
    """
    m = _blocks(n)
    words = [f"x{p}" for p in range(2, n)]
    phrases = []
    for k in range(m):
        i = 4 * k  # token index of paper position 4k + 2
        phrases += [
            PhraseSpec(i, i, (f"u{k}",)),
            PhraseSpec(i + 1, i + 1, (f"v{k}",)),
            PhraseSpec(i + 2, i + 2, (f"w{k}",)),
            PhraseSpec(i + 3, i + 3, (f"z{k}",)),
            PhraseSpec(i + 2, i + 3, (f"y{k}",)),
        ]
    return build_problem(words, phrases, EdgeLM({}, missing=-1.0), d)


def paper_lower_bound(n: int) -> int:
    """2^((n − 2)/4), the paper's lower bound on the number of bit-strings."""
    return 2 ** _blocks(n)


def _by_start(spans: Iterable[tuple[int, int]], N: int) -> list[tuple[int, ...]]:
    """``ends[s]``: the distinct end positions of spans starting at s (1 <= s <= N)."""
    ends: list[set[int]] = [set() for _ in range(N + 2)]
    for s, t in spans:
        if not 1 <= s <= t <= N:
            raise BitstringError(f"span ({s}, {t}) is outside the tokens 1..{N}")
        ends[s].add(t)
    return [tuple(sorted(e)) for e in ends]


@dataclass(frozen=True)
class Coverages:
    """Brute-force results: the reachable and the live coverage vectors (bit p−1 = token p).

    Invariant: ``live <= reachable``; ``states`` counts the reachable
    (coverage, last end) pairs of the BFS.
    """

    reachable: frozenset[int]
    live: frozenset[int]
    states: int


def enumerate_coverages(spans: Iterable[tuple[int, int]], N: int, d: int) -> Coverages:
    """Every coverage vector of a distortion-limited prefix, by BFS over (C, last end); exponential.

    A step places a phrase (s, t) disjoint from C with |last + 1 − s| <= d;
    a state is final when C is full and the jump into ``</s>``,
    N − last, is <= d. *live* keeps the vectors of states that reach a
    final state (module docstring).
    """
    ends = _by_start(spans, N)
    full = (1 << N) - 1
    start = (0, 0)
    succ: dict[tuple[int, int], list[tuple[int, int]]] = {}
    queue = deque([start])
    seen = {start}
    while queue:
        cov, last = queue.popleft()
        out = succ[(cov, last)] = []
        for s in range(max(1, last + 1 - d), min(N, last + 1 + d) + 1):
            for t in ends[s]:
                span = ((1 << (t - s + 1)) - 1) << (s - 1)
                if cov & span:
                    continue
                nxt = (cov | span, t)
                out.append(nxt)
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
    good = {st for st in seen if st[0] == full and N - st[1] <= d}
    pred: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for st, out in succ.items():
        for nxt in out:
            pred[nxt].append(st)
    queue = deque(good)
    while queue:
        st = queue.popleft()
        for p in pred[st]:
            if p not in good:
                good.add(p)
                queue.append(p)
    return Coverages(frozenset(c for c, _ in seen), frozenset(c for c, _ in good), len(seen))


# ---------------------------------------------------------------- exact count

RED, BLUE = 1, 0
# A coloured tape other than <s>'s: (start, end, colour of its first phrase, colour of its
# last phrase), positions relative to the current position j (so start <= 0, end <= 0).
Tape = tuple[int, int, int, int]
# A coloured signature state, relative to j: (end of the <s> tape, colour of its last phrase,
# the other tapes sorted). The <s> tape starts at 0 and is red; keeping it apart lets every
# other position be relative, so that equal local situations at different j are equal keys.
State = tuple[int, int, tuple[Tape, ...]]
# An automaton configuration while reading the bits: ("S", state) is a signature state at j;
# ("P", k, colour, state) is k bits before the end of a phrase of that colour, whose last bit
# leads to ``state`` (relative to that bit's position).
Config = tuple
START: State = (0, RED, ())


def _shift(state: State, by: int) -> State:
    """The same state seen from position j + by."""
    bos_t, bos_c, others = state
    return bos_t - by, bos_c, tuple((s - by, t - by, cs, ct) for s, t, cs, ct in others)


def _valid(state: State, d: int) -> bool:
    """Figure 5's valid() relative to j: tapes end at >= −d, and start at >= −d + 2 unless they hold <s>."""
    bos_t, _, others = state
    return bos_t >= -d and all(s >= 2 - d and t >= -d for s, t, _, _ in others)


def _join(state: State, length: int, c: int, k1: int | None, k2: int | None) -> State:
    """τ(T, ψ1 p ψ2) for p = (j + 1, j + length) of colour c, seen from j + length.

    ``k1``: -1 for the <s> tape, an index into the other tapes, or None for φ;
    ``k2``: an index into the other tapes or None.
    """
    bos_t, bos_c, others = state
    b = others[k2] if k2 is not None else None
    end, end_c = (b[1], b[3]) if b else (length, c)
    rest = [x for k, x in enumerate(others) if k != k1 and k != k2]
    if k1 == -1:
        bos_t, bos_c = end, end_c
    elif k1 is not None:
        a = others[k1]
        rest.append((a[0], end, a[2], end_c))
    else:
        rest.append((1, end, c, end_c))
    return _shift((bos_t, bos_c, tuple(sorted(rest))), length)


def _moves(state: State, lengths: tuple[int, ...], d: int) -> list[tuple[int, int, State]]:
    """Figure 2's transitions ψ1 p ψ2 from a state at j, p = (j + 1, j + L) for L in ``lengths``.

    Returns ``(L, colour, new state relative to j + L)`` for each result
    that passes valid(). ψ1 needs jump −end(ψ1) <= d (relative: j − t(ψ1))
    and colour(ψ1's last) >= colour(p); ψ2, never the <s> tape, needs jump
    L + 1 − start(ψ2) <= d and colour(p) >= colour(ψ2's first).
    """
    bos_t, bos_c, others = state
    r = len(others)
    out = []
    for length in lengths:
        for c in (RED, BLUE):
            firsts: list[int | None] = [None]
            if -bos_t <= d and bos_c >= c:
                firsts.append(-1)
            firsts += [k for k in range(r) if -others[k][1] <= d and others[k][3] >= c]
            seconds = [None] + [k for k in range(r) if length + 1 - others[k][0] <= d and c >= others[k][2]]
            for k1 in firsts:
                for k2 in seconds:
                    if k2 is not None and k1 == k2:
                        continue
                    new = _join(state, length, c, k1, k2)
                    if _valid(new, d):
                        out.append((length, c, new))
    return out


def _accepting(state: State, d: int) -> bool:
    """At j = N: only the <s> tape is left, and its end can jump into </s> (N − t <= d)."""
    return not state[2] and -state[0] <= d


class _Counter:
    """The trimmed automaton and the subset construction, with every per-position step memoised.

    Each position's sets are interned, so a step seen before (same local
    spans, same live sets ahead) is a dictionary hit: on periodic inputs
    such as the Section 5.2 family the work per position becomes constant.
    """

    def __init__(self, lengths: list[tuple[int, ...]], N: int, d: int) -> None:
        self.lengths, self.N, self.d = lengths, N, d
        self.max_len = max((max(x) for x in lengths if x), default=1)
        self._moves: dict = {}
        self._memo: dict = {}
        self._intern: dict = {}

    def intern(self, x: frozenset) -> frozenset:
        return self._intern.setdefault(x, x)

    def moves(self, state: State, j: int) -> list[tuple[int, int, State]]:
        key = (state, self.lengths[j])
        got = self._moves.get(key)
        if got is None:
            got = self._moves[key] = _moves(state, self.lengths[j], self.d)
        return got

    def reachable(self) -> list[frozenset]:
        """``reach[j]``: the states the untrimmed automaton reaches at j."""
        N = self.N
        reach: list[set] = [set() for _ in range(N + 1)]
        reach[0].add(START)
        frozen: list[frozenset] = []
        for j in range(N + 1):
            fj = self.intern(frozenset(reach[j]))
            frozen.append(fj)
            if j == N:
                break
            key = ("reach", fj, self.lengths[j])
            got = self._memo.get(key)
            if got is None:
                by_len: dict[int, set] = {}
                for x in fj:
                    for length, _, y in self.moves(x, j):
                        by_len.setdefault(length, set()).add(y)
                got = self._memo[key] = tuple((length, frozenset(ys)) for length, ys in by_len.items())
            for length, ys in got:
                if j + length <= N:
                    reach[j + length] |= ys
        return frozen

    def live(self, reach: list[frozenset]) -> list[frozenset]:
        """``live[j]``: the states of ``reach[j]`` from which an accepting state at N is reachable."""
        N = self.N
        live: list[frozenset] = [frozenset()] * (N + 1)
        live[N] = self.intern(frozenset(x for x in reach[N] if _accepting(x, self.d)))
        for j in range(N - 1, -1, -1):
            ahead = self._ahead(live, j)
            key = ("live", reach[j], self.lengths[j], ahead)
            got = self._memo.get(key)
            if got is None:
                got = self._memo[key] = self.intern(
                    frozenset(x for x in reach[j] if any(y in live[j + ln] for ln, _, y in self.moves(x, j)))
                )
            live[j] = got
        return live

    def _ahead(self, live: list[frozenset], j: int) -> tuple:
        return tuple(live[j + k] if j + k <= self.N else None for k in range(1, self.max_len + 1))

    def step(self, subset: frozenset, bit: int, j: int, live: list[frozenset], ahead: tuple) -> frozenset:
        """The configurations after reading ``bit`` as token j + 1 (trimmed moves only)."""
        key = ("step", subset, bit, self.lengths[j], ahead)
        got = self._memo.get(key)
        if got is not None:
            return got
        out = set()
        for cfg in subset:
            if cfg[0] == "S":
                for length, c, y in self.moves(cfg[1], j):
                    if c == bit and y in live[j + length]:
                        out.add(("S", y) if length == 1 else ("P", length - 1, c, y))
            elif cfg[2] == bit:
                out.add(("S", cfg[3]) if cfg[1] == 1 else ("P", cfg[1] - 1, cfg[2], cfg[3]))
        got = self._memo[key] = self.intern(frozenset(out))
        return got

    def count(self) -> int:
        live = self.live(self.reachable())
        if START not in live[0]:
            return 0
        layer: dict[frozenset, int] = {self.intern(frozenset({("S", START)})): 1}
        for j in range(self.N):
            ahead = self._ahead(live, j)
            nxt: dict[frozenset, int] = defaultdict(int)
            for subset, count in layer.items():
                for bit in (RED, BLUE):
                    got = self.step(subset, bit, j, live, ahead)
                    if got:
                        nxt[got] += count
            layer = nxt
        # Trimming leaves only accepting states at N: every surviving prefix is accepted.
        return sum(count for subset, count in layer.items() if any(c[0] == "S" for c in subset))


def count_live_coverages(spans: Iterable[tuple[int, int]], N: int, d: int) -> int:
    """The exact number of live coverage vectors (module docstring), by the forward subset construction.

    Exact for any spans; fast when the local situation repeats (memoised
    steps), as in the Section 5.2 family.
    """
    ends = _by_start(spans, N)
    lengths = [tuple(t - j for t in ends[j + 1]) if j < N else () for j in range(N + 1)]
    return _Counter(lengths, N, d).count()
