"""Moses' own binary tables, memory-mapped and read by the native core (native/moses_binary_table.h,
which states the format): PhraseDictionaryBinary's phrase tables (``PREFIX.binphr.*``, written by
Moses' ``processPhraseTable``) and LexicalReorderingTableTree's reordering tables
(``PREFIX.binlexr.*``, ``processLexicalTable``). ``PREFIX`` is the ``path=`` of the moses.ini line.

An opened table's ``phrases(filter, keep)`` (``reordering(filter, keep)``) gives, for a batch's
:class:`~fstdecode.io.table_filter.SourceFilter` (or none: every entry), the same
``_core.PhraseStore`` (``_core.ReorderingStore``) the text readers give for the text table it was
built from, as a mapped ``_core.BinaryTable`` does; but the files hold float32 numbers, so a score
differs from the text reader's by up to 2^-24 (a phrase table's: ln of a float32 probability) or
2^-24 + 2^-23 |score| (a reordering table's: a float32 of the log). Where they differ from the text
table, Moses' binary reading is kept:

* a probability of 0 is stored as 1e-38 by Moses' writer (feature -87.5, where the text reader
  and Moses' text table give -100);
* of a target word ``word|tag|...`` only factor 0 is read (warned once per table);
* sparse features (a phrase table's sixth field) are read past and ignored, as the text reader
  ignores that field.

Invariant: every problem with the files (missing, truncated, corrupt) raises
:class:`MosesBinaryTableError` in one line naming the file.
"""

from __future__ import annotations

import os

from fstdecode._native import core as _core
from fstdecode.errors import FstdecodeError
from fstdecode.io.binarized import warn_factors

__all__ = ["MosesBinaryTableError", "open_moses_phrase_table", "open_moses_reordering_table"]

class MosesBinaryTableError(FstdecodeError):
    """A Moses binary table that is missing, truncated, corrupt, or of a kind not read."""


def open_moses_phrase_table(path: str | os.PathLike[str]) -> "_core.MosesPhraseTable":
    """The binary phrase table ``path.binphr.*`` (``path`` may also name its ``.binphr.idx``),
    mapped and its index checked; its target words' factors beyond the first are warned about once."""
    prefix = os.fspath(path)
    try:
        table = _core.MosesPhraseTable(prefix)
    except _core.MosesBinaryError as err:
        raise MosesBinaryTableError(str(err)) from None
    warn_factors(table)
    return table


def open_moses_reordering_table(path: str | os.PathLike[str]) -> "_core.MosesReorderingTable":
    """The binary reordering table ``path.binlexr.*`` (``path`` may also name its ``.binlexr.idx``),
    mapped and its index checked; conditioned on the target iff its ``.binlexr.voc1`` exists."""
    try:
        return _core.MosesReorderingTable(os.fspath(path))
    except _core.MosesBinaryError as err:
        raise MosesBinaryTableError(str(err)) from None
