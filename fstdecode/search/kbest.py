"""k-best lists: the per-state lists of the exact DPs and the stack decoder's recombined keys."""

from __future__ import annotations

from typing import Callable, TypeVar

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
