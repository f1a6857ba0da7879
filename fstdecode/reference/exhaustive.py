"""The exhaustive oracle: every derivation, in target order, scored by the scorer.

It shares nothing with the DPs but the phrase options: each complete
derivation is scored by :func:`fstdecode.problem.scorer.score` from its
strings, with every feature of the model (lexicalized reordering included),
under the problem's distortion semantics (:mod:`fstdecode.model.distortion`).
Exponential; for small inputs and tests only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fstdecode.model.distortion import final_allowed, step_allowed
from fstdecode.problem.problem import SearchError, SearchLimitError, SearchProblem, SearchResult, no_derivation_message
from fstdecode.problem.sentence import Phrase
from fstdecode.search.base import SearchOptions, option, register

#: Partial derivations the oracle may visit by default: a few seconds of Python.
DEFAULT_EXHAUSTIVE_STATES = 1_000_000


@dataclass(frozen=True)
class ExhaustiveOptions(SearchOptions):
    """``--method exhaustive``: ``max_states`` counts partial derivations visited."""

    max_states: int = field(
        default=DEFAULT_EXHAUSTIVE_STATES,
        metadata=option("partial derivations to visit per sentence; beyond it the line is marked not optimal", minimum=1),
    )


def derivations(problem: SearchProblem, *, limit: int | None = None):
    """Yield every phrase sequence that is a derivation under the distortion limit.

    ``paper`` semantics: Definition 2 of Chang & Collins, with tokens 0-based:
    each token covered once, every jump (from <s> at −1, and into </s> at n)
    at most d. ``moses``: each token covered once, and every phrase obeys
    Moses' rule (:func:`fstdecode.model.distortion.step_allowed`), with no
    check at ``</s>``. Raises SearchLimitError after ``limit`` partial derivations.
    """
    n, d, semantics = problem.n, problem.d, problem.semantics
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
            if final_allowed(semantics, d, prev_end, n):
                yield tuple(seq)
            return
        gap = covered.index(False)
        for s in range(max(0, prev_end + 1 - d), min(n, prev_end + 2 + d)):
            if covered[s]:
                continue
            for p in by_start[s]:
                span = range(p.start, p.end + 1)
                if any(covered[i] for i in span) or not step_allowed(semantics, d, prev_end, gap, p.start, p.end):
                    continue
                for i in span:
                    covered[i] = True
                seq.append(p)
                yield from rec(p.end, left - len(span))
                seq.pop()
                for i in span:
                    covered[i] = False

    yield from rec(-1, n)


def search(problem: SearchProblem, options: ExhaustiveOptions = ExhaustiveOptions()) -> SearchResult:
    """The k best derivations by enumeration (``max_states`` caps partial derivations).

    Over budget, SearchLimitError carries the best derivations scored so far.
    """
    scored: list[tuple[float, tuple[Phrase, ...]]] = []
    try:
        for phrases in derivations(problem, limit=options.max_states):
            _, total = problem.score(phrases)
            scored.append((total, phrases))
    except SearchLimitError as e:
        raise SearchLimitError(str(e), best=_best(scored, options.nbest, False, options.max_states)) from None
    if not scored:
        raise SearchError(no_derivation_message(problem.d))
    return _best(scored, options.nbest, True, len(scored))


def _best(scored: list, nbest: int, optimal: bool, visited: int) -> SearchResult | None:
    """The ``nbest`` best of ``scored`` (None if empty)."""
    if not scored:
        return None
    scored.sort(key=lambda x: -x[0])
    return SearchResult(tuple(scored[:nbest]), optimal=optimal, states=visited, transitions=visited)


register(
    "exhaustive",
    ExhaustiveOptions,
    function=search,
    exact=True,
    summary="enumeration of every derivation (for tiny inputs)",
)
