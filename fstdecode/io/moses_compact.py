"""Moses' compact tables, read natively and memory-mapped: ``PhraseDictionaryCompact``
(``.minphr``, written by ``processPhraseTableMin``) and ``LexicalReorderingTableCompact``
(``.minlexr``, ``processLexicalTableMin``). The format is described in native/compact_table.h.

A compact table stores its source phrases only as hashes (a minimal perfect hash per block of
1,024 keys, and a 16-bit fingerprint of each), so it cannot be listed: a decode looks up the
n-grams of its batch (a :class:`~fstdecode.io.table_filter.SourceFilter`) and gets the
``_core.PhraseStore`` the text reader gives for the table's text twin and that filter (sources
and pairs in file order). A reordering table gives the rows of the (source, target) pairs of a
phrase store, the only pairs a decoder asks it for. An absent n-gram whose fingerprint matches
another key's (1 in 65,536) gets that key's entry, as in Moses.

Where this differs from Moses: scores are Moses' own floats (ln p floored at -100, parsed as
float), so they agree with the text reader's doubles to float precision only; a table built with
rank encoding (``-encoding REnc`` or ``PREnc``) is refused; a target word that is not UTF-8, or
is ``<s>``/``</s>``, is refused when a batch looks its source up, as the text reader refuses
its line. Every problem raises :class:`CompactTableError` in one line naming the file.
"""

from __future__ import annotations

import os

from fstdecode._native import core as _core
from fstdecode.errors import FstdecodeError
from fstdecode.io.files import check_kind

__all__ = [
    "CompactTableError", "compact_phrase_store", "compact_reordering_row", "compact_reordering_store",
    "open_compact_phrase_table", "open_compact_reordering_table",
]


class CompactTableError(FstdecodeError):
    """A Moses compact table that cannot be read: missing, truncated, corrupt or of an unread kind."""


def open_compact_phrase_table(path: str | os.PathLike[str]) -> "_core.CompactPhraseTable":
    """The compact phrase table ``path``, mapped, its index and codes checked."""
    return _open(path, _core.CompactPhraseTable)


def open_compact_reordering_table(path: str | os.PathLike[str]) -> "_core.CompactReorderingTable":
    """The compact reordering table ``path``, mapped, its index and codes checked."""
    return _open(path, _core.CompactReorderingTable)


def compact_phrase_store(table: "_core.CompactPhraseTable", vocabulary: object,
                         keep: object = None) -> "_core.PhraseStore":
    """The pairs ``table`` holds for the sources of ``vocabulary`` (a SourceFilter: a compact
    table can only be looked up, not listed) that ``keep(words)`` (if given) accepts."""
    native = getattr(vocabulary, "native", None)
    if native is None:
        raise CompactTableError(f"{table.path}: a compact phrase table is read for the source phrases of a batch; "
                                "it needs a SourceFilter, not a predicate")
    try:
        return table.phrases(native, keep)
    except _core.CompactFormatError as err:
        raise CompactTableError(str(err)) from None


def compact_reordering_store(table: "_core.CompactReorderingTable", pairs: "_core.PhraseStore") -> "_core.ReorderingStore":
    """The rows ``table`` holds for the (source, target) pairs of the phrase store ``pairs`` (for
    the sources alone, in an ``f`` table)."""
    try:
        return table.reordering(pairs)
    except _core.CompactFormatError as err:
        raise CompactTableError(str(err)) from None


def compact_reordering_row(table: "_core.CompactReorderingTable", source: tuple[str, ...],
                           target: tuple[str, ...]) -> tuple[float, ...] | None:
    """The row of (source, target) in ``table`` (``target`` ignored in an ``f`` table), or None."""
    try:
        return table.lookup(list(source), list(target))
    except _core.CompactFormatError as err:
        raise CompactTableError(str(err)) from None


def _open(path: str | os.PathLike[str], kind: type) -> object:
    spath = os.fspath(path)
    check_kind(spath, CompactTableError)
    try:
        return kind(spath)
    except _core.CompactFormatError as err:
        raise CompactTableError(str(err)) from None
