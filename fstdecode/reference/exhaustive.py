"""The exhaustive oracle: every derivation, in target order, scored by the scorer.

It shares nothing with the DPs but the phrase options: each complete
derivation is scored by :func:`fstdecode.problem.scorer.score` from its
strings. Exponential; for small inputs and tests only.
"""

from __future__ import annotations

from fstdecode.problem.problem import SearchError, SearchLimitError, SearchProblem, SearchResult
from fstdecode.problem.scorer import score as score_derivation
from fstdecode.problem.sentence import Phrase


def derivations(problem: SearchProblem, *, limit: int | None = None):
    """Yield every phrase sequence that is a derivation under the distortion limit.

    Definition 2 of Chang & Collins, with tokens 0-based: each token covered
    once, every jump (from <s> at −1, and into </s> at n) at most d.
    Raises SearchLimitError after ``limit`` partial derivations.
    """
    n, d = problem.n, problem.d
    by_start = [list(o.phrase for o in problem.by_start[p + 1]) for p in range(n)]
    covered = [False] * n
    seq: list[Phrase] = []
    visited = 0

    def rec(prev_end: int, left: int):
        nonlocal visited
        visited += 1
        if limit is not None and visited > limit:
            raise SearchLimitError(f"exhaustive search visited more than {limit} partial derivations")
        if left == 0:
            if abs(prev_end + 1 - n) <= d:
                yield tuple(seq)
            return
        for s in range(max(0, prev_end + 1 - d), min(n, prev_end + 2 + d)):
            if covered[s]:
                continue
            for p in by_start[s]:
                span = range(p.start, p.end + 1)
                if any(covered[i] for i in span):
                    continue
                for i in span:
                    covered[i] = True
                seq.append(p)
                yield from rec(p.end, left - len(span))
                seq.pop()
                for i in span:
                    covered[i] = False

    yield from rec(-1, n)


def search(problem: SearchProblem, *, nbest: int = 1, max_states: int | None = None) -> SearchResult:
    """The k best derivations by enumeration (``max_states`` caps partial derivations)."""
    scored = []
    count = 0
    for phrases in derivations(problem, limit=max_states):
        count += 1
        _, total = score_derivation(problem.n, phrases, problem.lm, problem.weights)
        scored.append((total, phrases))
    if not scored:
        raise SearchError(f"no derivation satisfies the distortion limit d={problem.d}")
    scored.sort(key=lambda x: -x[0])
    return SearchResult(tuple(scored[:nbest]), optimal=True, states=count, transitions=count)
