"""Files of a binarized model (``fstdecode binarize``): which a path is, and whether it is stale.

A binarized phrase or reordering table (native/binary_table.h) and an LM image
(native/lm_image.h) each carry a format version and a stamp of the text file they were built
from: its absolute path, size and modification time. A reader maps them instead of reading
text; before it does, :func:`check_stamp` refuses a file whose source still exists but has
changed since (a rebuilt table would otherwise go unnoticed). A source that is gone (a model
moved to another machine) is not checked.
"""

from __future__ import annotations

import os

from fstdecode._native import core as _core
from fstdecode.errors import FstdecodeError

__all__ = [
    "BINARIZED_INI_HEADER", "check_stamp", "is_binary_table", "is_lm_image", "moses_binary_table", "open_binary_table",
    "source_stamp", "written_by_binarize",
]

#: Moses' own binary table files, by the extension Moses gives them (and looks for: a compact
#: reordering table named without its extension is found as ``path.minlexr``, then
#: ``path.binlexr.idx``; LexicalReordering's constructor, moses/FF/LexicalReordering).
_MOSES_BINARY = (
    (".minphr", "Moses' compact phrase table (processPhraseTableMin)"),
    (".minlexr", "Moses' compact reordering table (processLexicalTableMin)"),
    (".binphr.idx", "Moses' binary phrase table (processPhraseTable)"),
    (".binlexr.idx", "Moses' binary reordering table (processLexicalTable)"),
    (".probing", "Moses' probing phrase table (CreateProbingPT)"),
)


def moses_binary_table(path: str) -> str | None:
    """A message naming the Moses binary table ``path`` is (by its extension), or that Moses would
    read for ``path`` (``path.minlexr`` ... when ``path`` itself is absent); None otherwise."""
    for ext, what in _MOSES_BINARY:
        if path.endswith(ext) and os.path.exists(path):
            found = path
        elif not os.path.exists(path) and not os.path.exists(path + ".gz") and os.path.exists(path + ext):
            found = path + ext
        else:
            continue
        return (f"{found} is {what}, which fstdecode does not read; give the text table (plain or .gz) instead, "
                "and run fstdecode binarize -f moses.ini -o DIR for fstdecode's own binarized model")
    return None


#: The first line of every moses.ini ``fstdecode binarize`` writes begins so.
BINARIZED_INI_HEADER = "# Written by fstdecode binarize"


def written_by_binarize(ini: str | os.PathLike[str]) -> bool:
    """Whether the moses.ini ``ini`` is one ``fstdecode binarize`` wrote (its first line says so)."""
    try:
        with open(ini, encoding="utf-8") as f:
            return f.readline().startswith(BINARIZED_INI_HEADER)
    except (OSError, UnicodeDecodeError):
        return False


def is_binary_table(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a binarized table (by its magic bytes, whatever its name)."""
    return _core.is_binary_table(os.fspath(path))


def is_lm_image(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an LM image (by its magic bytes, whatever its name)."""
    return _core.is_lm_image(os.fspath(path))


def source_stamp(path: str | os.PathLike[str]) -> tuple[str, int, int]:
    """``(absolute path, size, mtime in ns)`` of a text file a binarized file is built from."""
    spath = os.path.abspath(os.fspath(path))
    st = os.stat(spath)
    return spath, st.st_size, st.st_mtime_ns


def check_stamp(path: str, stamp: tuple[str, int, int], error: type[FstdecodeError]) -> None:
    """Raise ``error`` if the source file of the binarized file ``path`` has changed since it
    was built (``stamp``: its path, size and mtime then); a source that is gone passes."""
    source, size, mtime_ns = stamp
    try:
        st = os.stat(source)
    except OSError:
        return
    if st.st_size != size or st.st_mtime_ns != mtime_ns:
        raise error(
            f"{path}: built from {source}, which has changed since (size {size:,} -> {st.st_size:,} bytes); "
            "run fstdecode binarize again"
            if st.st_size != size
            else f"{path}: built from {source}, which has changed since (it was modified later); "
            "run fstdecode binarize again"
        )


def open_binary_table(path: str, kind: str, error: type[FstdecodeError], other: str) -> "_core.BinaryTable":
    """The binarized table ``path``, mapped, checked to be of ``kind`` (``"phrases"``,
    ``"reordering-fe"`` or ``"reordering-f"``; ``other`` ends the message for another kind) and
    not stale; every problem raises ``error`` in one line naming the file."""
    try:
        binary = _core.BinaryTable(path)
    except _core.BinaryFormatError as err:
        raise error(str(err)) from None
    if binary.kind != kind:
        raise error(f"{path}: a binarized {binary.kind} table, {other}")
    check_stamp(path, binary.stamp, error)
    return binary
