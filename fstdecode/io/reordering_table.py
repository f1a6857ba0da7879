"""Moses lexicalized reordering tables (``reordering-table.*``), plain or gzip, UTF-8.

A line is ``source ||| target ||| p1 p2 ...`` for a table conditioned on both
phrases (Moses' ``fe``), or ``source ||| p1 p2 ...`` for one conditioned on the
source phrase alone (``f``). Every line has the same number of probabilities.
As Moses' ``LexicalReorderingTableMemory`` does, each probability p becomes the
feature value ln(p), floored at ``LOWEST_SCORE`` (−100; p = 0 gives −100).

Which column holds which orientation is the model's business
(:mod:`fstdecode.model.lexical_reordering`); this module only reads numbers, in the native core
(``_core.read_reordering_table``), which holds the rows. Bad lines raise
:class:`ReorderingTableError` naming the file and line (worded here, from the line the core
refused).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fstdecode._native import core as _core
from fstdecode.errors import FstdecodeError
from fstdecode.io.binarized import is_binary_table, moses_reordering_kind, open_binary_table, open_moses_table
from fstdecode.io.files import check_kind
from fstdecode.io.phrase_table import LOWEST_SCORE, line_error, native_line_limit, native_vocabulary
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

    Invariant: every row has exactly ``num_scores`` floats, each ln(p) floored at
    ``LOWEST_SCORE``; keys are ``(source, target)`` with ``target == ()`` iff
    ``conditioned_on_target`` is False. The rows are ``store`` (``_core.ReorderingStore``, a
    table read from a file; it pickles) or else ``entries`` (a plain dict that nothing mutates,
    a table made in memory).
    """

    path: str
    num_scores: int
    conditioned_on_target: bool
    entries: Mapping[Key, tuple[float, ...]] = field(hash=False, repr=False, default_factory=dict)
    store: Any = field(default=None, hash=False, repr=False, compare=False)
    #: Not None for the rows a phrase table's pairs carry (``path`` is that table; see
    #: :func:`load_reordering_table`), read again from there.
    property_index: int | None = None

    def lookup(self, source: tuple[str, ...], target: tuple[str, ...]) -> tuple[float, ...] | None:
        """The scores of the pair (only ``source`` counts for an ``f`` table), or None if absent."""
        if self.store is not None:
            return self.store.lookup(list(source), list(target) if self.conditioned_on_target else [])
        return self.entries.get((source, target if self.conditioned_on_target else ()))

    def __len__(self) -> int:
        return len(self.store) if self.store is not None else len(self.entries)


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


def _check_line(text: str, where: str, with_target: bool, expected: int | None, first: int | None) -> None:
    """Raise the ReorderingTableError one line of a table deserves, if any (the wording of every
    line error; the core finds the line)."""
    _, tokens = _split(text, where, with_target)
    if expected is not None and len(tokens) != expected:
        reason = f"line {first} has {expected}" if first is not None else f"the model needs {expected}"
        raise ReorderingTableError(
            f"{where}: found {len(tokens)} probabilities but {reason}; every line must have the same number"
        )
    _parse_probabilities(tokens, where)


def _kept_rows(
    path: str, property_index: int, mapped: Mapping[str, object] | None, native_filter: object, keep: object
) -> "_core.ReorderingStore":
    """The reordering rows the pairs of the phrase table ``path`` carry (``property_index`` on)."""
    table = mapped[path] if mapped is not None and path in mapped else open_moses_table(path, ReorderingTableError)
    if table is None or not hasattr(table, "num_lex_scores"):
        raise ReorderingTableError(f"{path}: property-index reads the reordering scores a ProbingPT keeps in its "
                                   "pairs, and this is no ProbingPT")
    try:
        return table.reordering(native_filter, keep, property_index)
    except _core.BinaryFormatError as err:
        raise ReorderingTableError(str(err)) from None


def _moses_rows(table: object, conditioned_on_target: bool, native_filter: object, keep: object,
               pairs: "_core.PhraseStore | None") -> "_core.ReorderingStore":
    """The rows a Moses binary reordering table holds for the filter (a compact one: for ``pairs``),
    once its conditioning is checked against the feature's type."""
    if table.conditioned_on_target != conditioned_on_target:
        have, want = ("fe", "f") if table.conditioned_on_target else ("f", "fe")
        raise ReorderingTableError(f"{table.path}: a table conditioned on {'source and target' if have == 'fe' else 'the source'} "
                                   f"({have}), but the feature's type ends in -{want}")
    try:
        if isinstance(table, _core.CompactReorderingTable):
            if pairs is None:
                raise ReorderingTableError(f"{table.path}: a compact reordering table is looked up for the phrase pairs "
                                           "of a batch; read it with the model's phrase table")
            return table.reordering(pairs)
        return table.reordering(native_filter, keep)
    except _core.BinaryFormatError as err:
        raise ReorderingTableError(str(err)) from None


def _binary_rows(path: str, with_target: bool, native_filter: object, keep: object) -> "_core.ReorderingStore":
    """The rows a binarized reordering table holds for the filter (all without one)."""
    want = "reordering-fe" if with_target else "reordering-f"
    return _binary_reordering(open_binary_table(path, want, ReorderingTableError, f"but the feature needs a {want} table"),
                              native_filter, keep)


def _binary_reordering(binary: "_core.BinaryTable", native_filter: object, keep: object) -> "_core.ReorderingStore":
    """The rows the mapped reordering table ``binary`` holds for the filter (the GIL released meanwhile)."""
    try:
        return binary.reordering(native_filter, keep)
    except _core.BinaryFormatError as err:
        raise ReorderingTableError(str(err)) from None


def load_reordering_table(
    path: str | os.PathLike[str],
    *,
    num_scores: int | None = None,
    conditioned_on_target: bool = True,
    vocabulary: Callable[[tuple[str, ...]], bool] | None = None,
    progress: Callable[[int, int], None] | None = None,
    mapped: Mapping[str, object] | None = None,
    property_index: int | None = None,
    pairs: "_core.PhraseStore | None" = None,
) -> ReorderingTable:
    """Read a Moses reordering table (see the module docstring), in the native core.

    ``num_scores``: the number of probabilities every line must have (by
    default the first line's). ``conditioned_on_target``: ``fe`` tables (3
    fields) if True, ``f`` tables (2 fields) if False. ``vocabulary``: if
    given, only source phrases for which it returns True are kept (every line
    is still validated; a :class:`~fstdecode.io.table_filter.SourceFilter` is asked in the core).
    ``progress(bytes, lines)`` is called as the file is read. Blank lines are skipped; a repeated
    key keeps the last line, as Moses' in-memory table does. ``mapped``: binarized tables opened
    already, by path (checked then, and of the kind this table needs); a ``path`` found there is
    looked up in that map, not opened again.

    A ``path`` that is one of Moses' binary reordering tables
    (:func:`~fstdecode.io.binarized.moses_reordering_kind`: ``.minlexr``, ``PREFIX.binlexr.*``) is
    mapped and looked up. A compact one keeps only hashes of its keys: it gives the rows of the
    phrase pairs ``pairs`` (the batch's phrase store, which the decoder asks about), and needs it.

    ``property_index``: ``path`` is a phrase table whose pairs carry their reordering scores
    (Moses2's LexicalReordering ``property-index=K``: a ProbingPT with num_lex_scores): each pair's
    row is its scores from the K-th on, keyed by (source, target).
    """
    path_str = os.fspath(path)
    native_filter, keep = native_vocabulary(vocabulary)
    if property_index is not None:
        store = _kept_rows(path_str, property_index, mapped, native_filter, keep)
        return ReorderingTable(path_str, store.num_scores, True, store=store, property_index=property_index)
    if moses_reordering_kind(path_str) is not None:  # (mapped already, or opened and checked now)
        moses = (mapped or {}).get(path_str) or open_moses_table(path_str, ReorderingTableError, reordering=True)
        store = _moses_rows(moses, conditioned_on_target, native_filter, keep, pairs)
        return ReorderingTable(path_str, store.num_scores, conditioned_on_target, store=store)
    if mapped is not None and path_str in mapped:  # (checked when mapped)
        store = _binary_reordering(mapped[path_str], native_filter, keep)
        return ReorderingTable(path_str, store.num_scores, conditioned_on_target, store=store)
    if is_binary_table(path_str):
        store = _binary_rows(path_str, conditioned_on_target, native_filter, keep)
        return ReorderingTable(path_str, store.num_scores, conditioned_on_target, store=store)
    check_kind(path_str, ReorderingTableError)
    try:
        store = _core.read_reordering_table(
            path_str, -1 if num_scores is None else num_scores, conditioned_on_target, native_filter, keep, progress,
            *native_line_limit(),
        )
    except (_core.TableLineError, _core.TableFileError) as err:
        raise line_error(
            err, path_str, ReorderingTableError,
            lambda text, where, n, first: _check_line(text, where, conditioned_on_target, n, first),
        ) from None
    return ReorderingTable(path_str, store.num_scores, conditioned_on_target, store=store)
