"""k-best lists: the per-state lists of the exact DPs and the stack decoder's recombined keys;
distinct translations for every method (:class:`DistinctSearcher`)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Callable, TypeVar

from fstdecode.problem.problem import SearchLimitError, SearchProblem, SearchResult

if TYPE_CHECKING:
    from fstdecode.search.base import Searcher

T = TypeVar("T")


def insert_best(entries: list[T], item: T, k: int, score: Callable[[T], float]) -> None:
    """Insert ``item`` into ``entries`` (best ``score`` first), keeping at most ``k``.

    Invariant: ``entries`` stays sorted by descending score; among equal
    scores the earlier insertion ranks first, so results are deterministic.
    """
    s = score(item)
    if len(entries) >= k and s <= score(entries[-1]):
        return
    i = len(entries)
    while i > 0 and score(entries[i - 1]) < s:
        i -= 1
    entries.insert(i, item)
    del entries[k:]


def first(item: tuple) -> float:
    """The score of a ``(score, backpointer)`` hypothesis."""
    return item[0]


#: At most this many derivations per distinct translation asked for are searched (Moses'
#: ``n-best-factor``, whose default is 20 too): a list that needs more gets fewer entries.
DISTINCT_FACTOR = 20


def distinct_search_size(k: int, factor: int = DISTINCT_FACTOR) -> int:
    """How many derivations a distinct list of ``k`` looks at, at the most (Moses' n-best-factor)."""
    return max(2 * k, factor * k)


def distinct(result: SearchResult, k: int) -> SearchResult:
    """``result`` with its first ``k`` hypotheses of distinct translations (the target words of the
    phrases), best first: each translation's best derivation, in the order of the list."""
    seen: set[tuple[str, ...]] = set()
    kept = []
    for i, hyp in enumerate(result.hypotheses):
        key = tuple(w for p in hyp[1] for w in p.target)
        if key not in seen:
            seen.add(key)
            kept.append(i)
            if len(kept) == k:
                break
    winners = None if result.winners is None else tuple(result.winners[i] for i in kept)
    return dataclasses.replace(result, hypotheses=tuple(result.hypotheses[i] for i in kept), winners=winners)


class DistinctSearcher:
    """The ``k`` best distinct translations from a method's plain k-best lists.

    It asks the method (``plain(size)``: its searcher for ``nbest=size``) for ``2k`` derivations,
    then 4 times more while fewer than ``k`` distinct translations came back and the list was
    full, up to ``DISTINCT_FACTOR * k``. For an exact method the answer is exact: a full list of the
    ``size`` best derivations holds the best derivation of each of the first translations in its
    order, and a short list holds every derivation. An inexact method's lists are its own.

    Over budget, the SearchLimitError carries the distinct part of the best derivations found.
    """

    def __init__(self, plain: Callable[[int], Searcher], k: int, factor: int = DISTINCT_FACTOR) -> None:
        self._plain = plain
        self._searchers: dict[int, Searcher] = {}
        self.k = k
        self.limit = distinct_search_size(k, factor)

    def _searcher(self, size: int) -> Searcher:
        got = self._searchers.get(size)
        if got is None:
            got = self._searchers[size] = self._plain(size)
        return got

    def search(self, problem: SearchProblem) -> SearchResult:
        size = 2 * self.k
        while True:
            try:
                result = self._searcher(size).search(problem)
            except SearchLimitError as e:
                if e.best is None:
                    raise
                raise SearchLimitError(str(e), best=distinct(e.best, self.k)) from None
            got = distinct(result, self.k)
            if len(got.hypotheses) >= self.k or len(result.hypotheses) < size or size >= self.limit:
                return got
            size = min(4 * size, self.limit)
