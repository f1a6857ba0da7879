"""Moses lexicalized reordering tables (``reordering-table.*``), plain or gzip, UTF-8.

A line is ``source ||| target ||| p1 p2 ...`` for a table conditioned on both
phrases (Moses' ``fe``), or ``source ||| p1 p2 ...`` for one conditioned on the
source phrase alone (``f``). Every line has the same number of probabilities.
As Moses' ``LexicalReorderingTableMemory`` does, each probability p becomes the
feature value ln(p), floored at ``LOWEST_SCORE`` (−100; p = 0 gives −100).

Which column holds which orientation is the model's business
(:mod:`fstdecode.model.lexical_reordering`); this module only reads numbers.
Bad lines raise :class:`ReorderingTableError` naming the file and line.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from fstdecode.errors import FstdecodeError
from fstdecode.io.files import numbered_lines
from fstdecode.io.phrase_table import LOWEST_SCORE
from fstdecode.io.tokens import split_tokens
from fstdecode.io.values import parse_number

__all__ = ["ReorderingTable", "ReorderingTableError", "load_reordering_table", "reordering_score"]

_FIELD_SEPARATOR = "|||"

#: Key of one entry: (source words, target words); the target is () in a table conditioned on ``f``.
Key = tuple[tuple[str, ...], tuple[str, ...]]


class ReorderingTableError(FstdecodeError):
    """A reordering table that cannot be read (message names file and line)."""


@dataclass(frozen=True)
class ReorderingTable:
    """The entries of one reordering table.

    Invariant: every value of ``entries`` has exactly ``num_scores`` floats, each
    ln(p) floored at ``LOWEST_SCORE``; keys are ``(source, target)`` with
    ``target == ()`` iff ``conditioned_on_target`` is False. ``entries`` is a
    plain dict (so that a model pickles, for process pools) that nothing mutates.
    """

    path: str
    num_scores: int
    conditioned_on_target: bool
    entries: Mapping[Key, tuple[float, ...]] = field(hash=False, repr=False)

    def lookup(self, source: tuple[str, ...], target: tuple[str, ...]) -> tuple[float, ...] | None:
        """The scores of the pair (only ``source`` counts for an ``f`` table), or None if absent."""
        return self.entries.get((source, target if self.conditioned_on_target else ()))

    def __len__(self) -> int:
        return len(self.entries)


def reordering_score(p: float) -> float:
    """Moses' TransformScore then FloorScore of one table probability: max(ln p, −100)."""
    return max(math.log(p), LOWEST_SCORE) if p > 0.0 else LOWEST_SCORE


def _parse_probabilities(tokens: list[str], where: str) -> tuple[float, ...]:
    """Probability tokens -> floored ln values; anything but a finite number >= 0 raises."""
    out = []
    for token in tokens:
        value = parse_number(token, "reordering probability", where, ReorderingTableError)
        if not math.isfinite(value) or value < 0.0:
            raise ReorderingTableError(
                f"{where}: reordering probability {token!r} must be a finite number >= 0"
            )
        out.append(reordering_score(value))
    return tuple(out)


def _split(text: str, where: str, with_target: bool) -> tuple[Key, list[str]]:
    """One line -> its key and its probability tokens."""
    fields = text.split(_FIELD_SEPARATOR)
    want = 3 if with_target else 2
    if len(fields) != want:
        shape = "'source ||| target ||| probabilities'" if with_target else "'source ||| probabilities'"
        kind = "fe (source and target)" if with_target else "f (source only)"
        raise ReorderingTableError(
            f"{where}: expected {shape} for a table conditioned on {kind}, found {len(fields)} field(s)"
        )
    source = tuple(sys.intern(w) for w in split_tokens(fields[0]))
    target = tuple(sys.intern(w) for w in split_tokens(fields[1])) if with_target else ()
    if not source:
        raise ReorderingTableError(f"{where}: empty source phrase")
    if with_target and not target:
        raise ReorderingTableError(f"{where}: empty target phrase")
    tokens = split_tokens(fields[-1])
    if not tokens:
        raise ReorderingTableError(f"{where}: no probabilities; the last field must hold numbers")
    return (source, target), tokens


def load_reordering_table(
    path: str | os.PathLike[str],
    *,
    num_scores: int | None = None,
    conditioned_on_target: bool = True,
    vocabulary: Callable[[tuple[str, ...]], bool] | None = None,
) -> ReorderingTable:
    """Read a Moses reordering table (see the module docstring).

    ``num_scores``: the number of probabilities every line must have (by
    default the first line's). ``conditioned_on_target``: ``fe`` tables (3
    fields) if True, ``f`` tables (2 fields) if False. ``vocabulary``: if
    given, only source phrases for which it returns True are kept (every line
    is still validated). Blank lines are skipped; a repeated key keeps the
    last line, as Moses' in-memory table does.
    """
    path_str = os.fspath(path)
    entries: dict[Key, tuple[float, ...]] = {}
    wanted: dict[tuple[str, ...], bool] = {}
    expected, first = num_scores, None
    for lineno, text in numbered_lines(path_str, ReorderingTableError):
        if not text.strip():
            continue
        where = f"{path_str}:{lineno}"
        key, tokens = _split(text, where, conditioned_on_target)
        if expected is None:
            expected, first = len(tokens), lineno
        if len(tokens) != expected:
            reason = f"line {first} has {expected}" if first is not None else f"the model needs {expected}"
            raise ReorderingTableError(
                f"{where}: found {len(tokens)} probabilities but {reason}; "
                "every line must have the same number"
            )
        scores = _parse_probabilities(tokens, where)
        keep = wanted.get(key[0])
        if keep is None:
            keep = wanted[key[0]] = vocabulary is None or bool(vocabulary(key[0]))
        if keep:
            entries[key] = scores
    return ReorderingTable(path_str, expected or 0, conditioned_on_target, entries)
