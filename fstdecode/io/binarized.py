"""Files of a binarized model (``fstdecode binarize``): which a path is, and whether it is stale.

A binarized phrase or reordering table (native/binary_table.h) and an LM image
(native/lm_image.h) each carry a format version and a stamp of the text file they were built
from: its absolute path, size and modification time. A reader maps them instead of reading
text; before it does, :func:`verify_checksum` refuses a file whose bytes are not those binarize
wrote (its CRC-32C, recorded in the folder's :data:`CHECKSUMS_FILE`: a reader checks every
offset it follows, but not the values it reads), and :func:`check_stamp` one whose source still
exists but has changed since (a rebuilt table would otherwise go unnoticed). A source that is
gone (a model moved to another machine) is not checked.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from fstdecode._native import core as _core
from fstdecode.errors import FstdecodeError
from fstdecode.io.files import is_regular

__all__ = [
    "BINARIZED_INI_HEADER", "CHECKSUMS_FILE", "BinarizedFileError", "Checksum", "check_stamp", "is_binary_table",
    "UNLISTABLE_KINDS", "is_lm_image", "is_mapped_table", "moses_reordering_kind", "moses_table_kind",
    "open_binary_table", "warn_factors",
    "open_moses_table", "read_checksums", "source_stamp", "verify_checksum", "verify_folder", "write_checksums",
    "written_by_binarize",
]

#: The files of a Moses ProbingPT folder (CreateProbingPT) that tell one, in any of its versions.
_PROBING_FILES = ("config", "probing_hash.dat")

#: The native reader of each kind of Moses phrase table :func:`moses_table_kind` names, and of
#: reordering table :func:`moses_reordering_kind` names.
_MOSES_READERS = {
    "probing": _core.ProbingTable, "compact": _core.CompactPhraseTable, "binary": _core.MosesPhraseTable,
    "compact-reordering": _core.CompactReorderingTable, "binary-reordering": _core.MosesReorderingTable,
}

#: The kinds whose source phrases are kept as hashes only: looked up for a batch, never listed
#: (so never converted by ``fstdecode binarize``, which names them as they are).
UNLISTABLE_KINDS = frozenset({"probing", "compact", "compact-reordering"})


def _named(path: str, ext: str) -> bool:
    """Whether ``path`` is a file ending in ``ext``, or a prefix with no file of its own beside
    which ``path + ext`` is (Moses names its binary tables by such prefixes)."""
    return (path.endswith(ext) and os.path.isfile(path)) or (not os.path.exists(path) and os.path.isfile(path + ext))


def moses_table_kind(path: str | os.PathLike[str]) -> str | None:
    """Which of Moses' binary phrase-table formats that fstdecode reads natively ``path`` is:
    ``"probing"`` for a ProbingPT folder (native/probing_table.h), ``"compact"`` for a ``.minphr``
    (native/compact_table.h), ``"binary"`` for PhraseDictionaryBinary's ``PREFIX.binphr.*``
    (``PREFIX`` or its ``.binphr.idx``; native/moses_binary_table.h); None for any other path. The
    one place that tells them (by what Moses finds there)."""
    spath = os.fspath(path)
    if os.path.isdir(spath) and all(os.path.isfile(os.path.join(spath, name)) for name in _PROBING_FILES):
        return "probing"
    if spath.endswith(".minphr") and os.path.isfile(spath):
        return "compact"
    if _named(spath, ".binphr.idx"):
        return "binary"
    return None


def moses_reordering_kind(path: str | os.PathLike[str]) -> str | None:
    """Which of Moses' binary reordering-table formats ``path`` is: ``"compact-reordering"`` for a
    ``.minlexr``, ``"binary-reordering"`` for ``PREFIX.binlexr.*`` (``PREFIX`` or its
    ``.binlexr.idx``); None for any other path (a text or binarized table)."""
    spath = os.fspath(path)
    if spath.endswith(".minlexr") and os.path.isfile(spath):
        return "compact-reordering"
    if _named(spath, ".binlexr.idx"):
        return "binary-reordering"
    return None


def open_moses_table(path: str, error: type[FstdecodeError], reordering: bool = False) -> object | None:
    """The Moses binary table ``path`` (a reordering table with ``reordering``) opened (mapped
    and checked) by its native reader, or None when :func:`moses_table_kind`
    (:func:`moses_reordering_kind`) knows no format there. A phrase table's ``phrases(filter,
    keep)`` is a BinaryTable's; every problem raises ``error`` in one line naming the file."""
    kind = moses_reordering_kind(path) if reordering else moses_table_kind(path)
    if kind is None:
        return None
    try:
        table = _MOSES_READERS[kind](path)
    except _core.BinaryFormatError as err:
        raise error(str(err)) from None
    if kind == "binary":
        warn_factors(table)
    return table


def is_mapped_table(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a table that is mapped and looked up, not read: a binarized table or a
    Moses binary table fstdecode reads (:func:`moses_table_kind`, :func:`moses_reordering_kind`)."""
    return is_binary_table(path) or moses_table_kind(path) is not None or moses_reordering_kind(path) is not None


#: Tables whose factored target words were reported already (once per table and process).
_FACTORS_REPORTED: set[str] = set()


def warn_factors(table: "_core.MosesPhraseTable") -> None:
    """One warning on the ``fstdecode`` logger, once per table and process, when a binary phrase
    table's target words carry more than one factor (judged by its first record: Moses writes every
    word with the same factors): fstdecode reads factor 0, as Moses does with output-factor=0."""
    if table.factors <= 1 or table.path in _FACTORS_REPORTED:
        return
    _FACTORS_REPORTED.add(table.path)
    logging.getLogger("fstdecode").warning(
        "%s: the target words have %d factors (e.g. '%s'); fstdecode reads factor 0 (the surface words) only",
        table.path, table.factors, table.factored_word,
    )


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
    """Whether ``path`` is a binarized table (by its magic bytes, whatever its name). Only a regular
    file can be one (it is mapped): a pipe or FIFO is not opened, so its reader still has it whole."""
    return is_regular(path) and _core.is_binary_table(os.fspath(path))


def is_lm_image(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an LM image (by its magic bytes, whatever its name; a regular file only,
    as :func:`is_binary_table`)."""
    return is_regular(path) and _core.is_lm_image(os.fspath(path))


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


class BinarizedFileError(FstdecodeError):
    """A binarized model folder that fails ``fstdecode verify`` (the readers raise their own kinds)."""


#: The file ``fstdecode binarize`` writes beside a model's binarized files: a line a file,
#: ``crc32c HEX SIZE NAME`` (the CRC-32C of the whole file, its size in bytes, its name).
CHECKSUMS_FILE = "checksums.crc32c"

#: Files checked in this process (by device, inode, size and mtime): each once, in the process
#: that opens it; forked workers inherit the mapping and the check.
_VERIFIED: set[tuple[int, int, int, int]] = set()


@dataclass(frozen=True)
class Checksum:
    """A file's recorded CRC-32C and size (a line of :data:`CHECKSUMS_FILE`)."""

    crc: int
    size: int


def write_checksums(folder: str, names: list[str]) -> None:
    """Write ``folder``'s :data:`CHECKSUMS_FILE` for the files ``names`` in it."""
    lines = []
    for name in sorted(names):
        crc, size = _core.file_crc32c(os.path.join(folder, name))
        lines.append(f"crc32c {crc:08x} {size} {name}\n")
    with open(os.path.join(folder, CHECKSUMS_FILE), "w", encoding="utf-8") as f:
        f.writelines(lines)


def read_checksums(folder: str, error: type[FstdecodeError], *, needed_by: str | None = None) -> dict[str, Checksum]:
    """``folder``'s recorded checksums by file name; a missing or malformed file raises ``error``
    naming it (and the line), or, when it is missing, the file ``needed_by`` that needs it."""
    path = os.path.join(folder, CHECKSUMS_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(1 << 20)
    except FileNotFoundError:
        what = f"{needed_by}: no {CHECKSUMS_FILE} beside it, so it" if needed_by else f"{folder}: no {CHECKSUMS_FILE}, so its files"
        raise error(
            f"{what} cannot be checked (a model binarized by an older fstdecode, or a binarized file moved out of its "
            "folder); run fstdecode binarize again") from None
    except (OSError, UnicodeDecodeError) as e:
        raise error(f"{path}: cannot read it: {getattr(e, 'strerror', None) or e}") from None
    out: dict[str, Checksum] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        parts = line.split(" ", 3)
        try:
            if len(parts) != 4 or parts[0] != "crc32c" or len(parts[1]) != 8:
                raise ValueError
            out[parts[3]] = Checksum(int(parts[1], 16), int(parts[2]))
        except ValueError:
            raise error(f"{path}:{lineno}: not a line 'crc32c HEX SIZE NAME'; run fstdecode binarize again") from None
    return out


def verify_checksum(path: str, error: type[FstdecodeError], *, recorded: dict[str, Checksum] | None = None) -> None:
    """Check the binarized file ``path`` against the checksum recorded beside it (once per process
    for an unchanged file): a file whose bytes differ from what binarize wrote, or one with no
    checksum, raises ``error`` in one line naming it. Its values are trusted only after this."""
    key = _identity(path)
    if key in _VERIFIED:
        return
    folder, name = os.path.split(os.path.abspath(path))
    if recorded is None:
        recorded = read_checksums(folder, error, needed_by=path)
    want = recorded.get(name)
    if want is None:
        raise error(f"{path}: {os.path.join(folder, CHECKSUMS_FILE)} has no checksum for it; run fstdecode binarize again")
    try:
        crc, size = _core.file_crc32c(path)
    except _core.ChecksumError as e:
        raise error(str(e)) from None
    if size != want.size:
        raise error(f"{path}: {size:,} bytes where binarize wrote {want.size:,}: the file is damaged; "
                    "run fstdecode binarize again")
    if crc != want.crc:
        raise error(f"{path}: its CRC-32C is {crc:08x} where binarize wrote {want.crc:08x}: the file is damaged; "
                    "run fstdecode binarize again")
    _VERIFIED.add(key)


def verify_folder(folder: str, error: type[FstdecodeError]) -> list[tuple[str, Checksum]]:
    """Check every file ``folder``'s :data:`CHECKSUMS_FILE` lists (``fstdecode verify DIR``), and
    that every binarized file in it is listed; the files checked, by name. The first problem
    raises ``error`` naming the file."""
    if not os.path.isdir(folder):
        raise error(f"{folder}: not a folder (fstdecode verify takes a model folder that fstdecode binarize wrote)")
    recorded = read_checksums(folder, error)
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name not in recorded and (is_binary_table(path) or is_lm_image(path)):
            raise error(f"{path}: a binarized file that {CHECKSUMS_FILE} does not list; run fstdecode binarize again")
    done = []
    for name, want in sorted(recorded.items()):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            raise error(f"{path}: missing ({CHECKSUMS_FILE} lists it)")
        _VERIFIED.discard(_identity(path))  # on demand: read it again, whatever this process checked
        verify_checksum(path, error, recorded=recorded)
        done.append((name, want))
    return done


def _identity(path: str) -> tuple[int, int, int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def open_binary_table(path: str, kind: str, error: type[FstdecodeError], other: str) -> "_core.BinaryTable":
    """The binarized table ``path``, checksummed, mapped, checked to be of ``kind`` (``"phrases"``,
    ``"reordering-fe"`` or ``"reordering-f"``; ``other`` ends the message for another kind) and
    not stale; every problem raises ``error`` in one line naming the file."""
    verify_checksum(path, error)
    try:
        binary = _core.BinaryTable(path)
    except _core.BinaryFormatError as err:
        raise error(str(err)) from None
    if binary.kind != kind:
        raise error(f"{path}: a binarized {binary.kind} table, {other}")
    check_stamp(path, binary.stamp, error)
    return binary
