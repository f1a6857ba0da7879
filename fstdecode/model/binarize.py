"""``fstdecode binarize -f moses.ini -o DIR``: a model whose files are memory-mapped, not read.

DIR holds, for the moses.ini's features:

* ``phrase-table.bin``: the phrase table (native/binary_table.h): every pair of the text table,
  grouped by source phrase. No table limit is applied at build time: the ranking depends on the
  weights, which tuning changes, so the limit (the ini's ``table-limit=``, or ``--table-limit``)
  is applied when a decode looks the pairs up, as it is for the text table;
* ``reordering-table.bin``: the lexicalized reordering table, every row (same format);
* ``lm.bin``: the LM image (native/lm_image.h) of an ARPA LM, queried in place and answering
  bit for bit as the ARPA reader (its scores kept as the file's decimals); a KenLM binary LM is
  used as it is (the new moses.ini names the original file);
* ``checksums.crc32c``: the CRC-32C and size of each binarized file, checked before a process
  trusts the file's values (:func:`fstdecode.io.binarized.verify_checksum`; ``fstdecode verify DIR``);
* ``moses.ini``: the original's every feature (name and arguments), weight and section, in the
  current format, naming the binarized files ``${MODEL_DIR}/FILE`` (fstdecode reads ``${...}`` as
  the ini's own folder, so DIR may be moved whole); any other path made absolute.

A decode of ``DIR/moses.ini`` gives the text model's output: the same pairs, scores and rows,
found by lookups of the batch's source n-grams in the mapped files (the CLI filters a binarized
table to its input by default, whatever its size). Each file carries its format version and a stamp of its source
file (:mod:`fstdecode.io.binarized`): a source changed since the build is refused at load.

DIR is written atomically: into a fresh sibling folder, renamed into place once complete. An
existing DIR is refused unless ``force`` (``--force``), which replaces it whole: only an empty
folder or one binarize wrote (its moses.ini's first line says so), and never one holding a file
the model reads.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import socket
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from fstdecode._native import core as _core
from fstdecode.errors import FstdecodeError
from fstdecode.io.binarized import (
    BINARIZED_INI_HEADER, UNLISTABLE_KINDS, is_binary_table, is_lm_image, moses_reordering_kind, moses_table_kind,
    source_stamp, write_checksums, written_by_binarize,
)
from fstdecode.io.kenlm_binary import is_kenlm_binary
from fstdecode.io.moses_ini import load_moses_ini, rewritten_ini
from fstdecode.io.native_lm import NativeLM
from fstdecode.io.phrase_table import load_phrase_table
from fstdecode.io.reordering_table import load_reordering_table
from fstdecode.model.lexical_reordering import parse_reordering_type
from fstdecode.model.model import reading_phase

__all__ = ["BinarizeError", "BinarizeOptions", "Binarized", "binarize"]

_LOG = logging.getLogger("fstdecode")

PHRASES_FILE = "phrase-table.bin"
REORDERING_FILE = "reordering-table.bin"
LM_FILE = "lm.bin"
INI_FILE = "moses.ini"
#: How DIR/moses.ini names DIR: fstdecode reads ``${NAME}`` in a moses.ini as the ini's own folder,
#: so a binarized model may be moved or copied whole.
_HERE = "${MODEL_DIR}"


class BinarizeError(FstdecodeError):
    """A model that cannot be binarized (an existing DIR, an already-binarized file, ...)."""


@dataclass(frozen=True)
class BinarizeOptions:
    """``fstdecode binarize``'s options: the moses.ini, the output folder, whether an existing
    one is replaced, and the phrase table's score format (as ``decode --tm-score-format``)."""

    config: str
    out: str
    force: bool = False
    tm_score_format: str = "prob"


@dataclass(frozen=True)
class Binarized:
    """What :func:`binarize` wrote: the folder, its files and their sizes in bytes, and seconds."""

    out: str
    files: tuple[tuple[str, int], ...]
    seconds: float


def binarize(options: BinarizeOptions) -> Binarized:
    """Write the binarized model of ``options.config`` to ``options.out`` (see the module docstring)."""
    start = time.perf_counter()
    if not options.out.strip():
        raise BinarizeError("the output folder's path (-o) is empty")
    out = os.path.abspath(options.out)
    if os.path.lexists(out):
        if not options.force:
            raise BinarizeError(f"{options.out}: exists; pass --force to replace it")
        if not _replaceable(out):
            raise BinarizeError(
                f"{options.out}: exists and is neither empty nor a model fstdecode binarize wrote; --force "
                "replaces only those (remove it yourself if it is to go)")
    cfg = load_moses_ini(options.config)
    _not_inside(options.out, [cfg.path, *(f.path for f in cfg.model_files())])
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        raise BinarizeError(f"{options.out}: its folder {parent} " + ("is not a folder" if os.path.lexists(parent) else "does not exist"))
    _remove_stale(out)
    with _stopped_cleanly():
        work = _work_folder(out, options.out)
        try:
            files = _build(cfg, work, out, options)
        except BaseException as e:
            shutil.rmtree(work, ignore_errors=True)
            failed = _write_error(e, options.out)
            if failed is not None:
                raise failed from None
            raise
    return Binarized(options.out, files, time.perf_counter() - start)


def _build(cfg, work: str, out: str, options: BinarizeOptions) -> tuple[tuple[str, int], ...]:
    """Write the model into ``work``, then move it to ``out``; the files written and their sizes."""
    paths = _write_files(cfg, work, out, options)
    header = (
        f"{BINARIZED_INI_HEADER} from {os.path.abspath(options.config)} (binarized tables: format "
        f"{_core.BINARY_TABLE_VERSION}, LM image: format {_core.LM_IMAGE_VERSION}).\n"
        "# The binarized tables and LM image are fstdecode's own formats (README.md, \"Binarized models\").\n"
    )
    Path(work, INI_FILE).write_text(rewritten_ini(options.config, paths, header), encoding="utf-8")
    write_checksums(work, [name for name in os.listdir(work) if name != INI_FILE])
    files = tuple(sorted((name, os.path.getsize(os.path.join(work, name))) for name in os.listdir(work)))
    _move_into_place(work, out)
    return files


def _write_files(cfg, work: str, out: str, options: BinarizeOptions) -> dict[str, str]:
    """Write each binarized file into ``work``; their final paths (in ``out``) by feature name."""
    paths: dict[str, str] = {}
    for k, pt in enumerate(cfg.phrase_tables()):  # phrase-table.bin, then phrase-table1.bin ...
        if moses_table_kind(pt.path) in UNLISTABLE_KINDS:  # mapped already, and its sources cannot be listed
            _LOG.info("phrase table %s: a Moses %s table, used as it is", pt.path, moses_table_kind(pt.path))
            continue
        _not_binarized(pt.path)
        num = pt.num_features if "num-features" in pt.args else None
        with reading_phase("phrase table", pt.path) as phase:
            table = load_phrase_table(pt.path, score_format=options.tm_score_format, num_features=num,
                                      progress=phase.progress)
            phase.said(f"{len(table):,} phrase pairs")
        name = PHRASES_FILE if k == 0 else PHRASES_FILE.replace(".bin", f"{k}.bin")
        _core.write_binary_table(table.store, *source_stamp(pt.path), os.path.join(work, name))
        paths[pt.name] = f"{_HERE}/{name}"
    lr = cfg.lexical_reordering()
    if lr is not None and moses_reordering_kind(lr.path or "") in UNLISTABLE_KINDS:
        _LOG.info("reordering table %s: a Moses %s table, used as it is", lr.path, moses_reordering_kind(lr.path))
    elif lr is not None and lr.path is not None:  # (property-index=: the rows are in a ProbingPT's pairs)
        _not_binarized(lr.path)
        config = parse_reordering_type(lr.args["type"], f"{cfg.path}:{lr.lineno}: ")
        with reading_phase("reordering table", lr.path) as phase:
            rows = load_reordering_table(lr.path, conditioned_on_target=config.condition == "fe",
                                         progress=phase.progress)
            phase.said(f"{len(rows):,} entries")
        _core.write_binary_table(rows.store, *source_stamp(lr.path), os.path.join(work, REORDERING_FILE))
        paths[lr.name] = f"{_HERE}/{REORDERING_FILE}"
    for k, lm in enumerate(cfg.lms()):  # lm.bin, then lm1.bin, lm2.bin ... for a model with several
        if is_kenlm_binary(lm.path):
            _LOG.info("language model %s: a KenLM binary, used as it is", lm.path)
            continue
        if is_lm_image(lm.path):
            raise BinarizeError(f"{lm.path}: already an LM image; binarize the ARPA file it was made from")
        with reading_phase("language model", lm.path) as phase:
            model = NativeLM.from_file(lm.path)
            phase.said(f"order {model.order}, {sum(model.counts):,} n-grams")
        name = LM_FILE if k == 0 else LM_FILE.replace(".bin", f"{k}.bin")
        model.core.write_image(*source_stamp(lm.path), os.path.join(work, name))
        paths[lm.name] = f"{_HERE}/{name}"
    return paths


def _replaceable(out: str) -> bool:
    """Whether --force may replace ``out``: an empty folder, or one holding a moses.ini that
    :func:`binarize` wrote (its first line names it). A file, a link or any other folder is not."""
    if os.path.islink(out) or not os.path.isdir(out):
        return False
    return not os.listdir(out) or written_by_binarize(os.path.join(out, INI_FILE))


def _not_inside(out: str, inputs: list[str]) -> None:
    """Refuse an output folder that is, or holds, a file the model reads (--force would delete it)."""
    folder = os.path.realpath(out)
    for path in inputs:
        real = os.path.realpath(path)
        if real == folder or real.startswith(folder.rstrip(os.sep) + os.sep):
            raise BinarizeError(f"{out}: holds {path}, which the model reads; write the binarized model elsewhere")


def _not_binarized(path: str) -> None:
    if is_binary_table(path):
        raise BinarizeError(f"{path}: already a binarized table; binarize the text table it was made from")


def _move_into_place(work: str, out: str) -> None:
    """Rename the finished ``work`` folder to ``out``; an existing ``out`` (--force) is renamed
    aside first and removed after, so ``out`` is always either the old model or the new one."""
    if not os.path.lexists(out):
        os.rename(work, out)
        return
    aside = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.old.{_owner()}.", dir=os.path.dirname(out))
    os.rmdir(aside)
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)  # no DIR between the two renames: a signal waits
    try:
        os.rename(out, aside)
        os.rename(work, out)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    if os.path.isdir(aside) and not os.path.islink(aside):
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.remove(aside)


#: The signals that end a binarize, its work folder removed first (:func:`_stopped_cleanly`).
_STOPS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def _owner() -> str:
    """The tag in the names of this process's hidden folders beside DIR: ``HOST-PID``
    (:func:`_remove_stale` reads it)."""
    return f"{socket.gethostname()}-{os.getpid()}"


def _work_folder(out: str, shown: str) -> str:
    """A fresh folder beside ``out`` to write the model into: ``.NAME.HOST-PID.xxxxxxxx``, with
    the permissions of an ordinary folder. ``shown``: ``out`` as the user wrote it."""
    parent = os.path.dirname(out)
    try:
        work = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.{_owner()}.", dir=parent)
    except OSError as e:  # /proc, a read-only or full file system
        raise BinarizeError(f"{shown}: cannot write in its folder {parent}: {e.strerror}") from None
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(work, 0o777 & ~umask)  # mkdtemp's folder is private; DIR is an ordinary folder
    return work


def _write_error(error: BaseException, shown: str) -> BinarizeError | None:
    """A write into the work folder that failed (a full disk, a quota) as one line naming DIR
    (``shown``), else None: an OSError, or the core's RuntimeError ``PATH: cannot write: REASON``
    (native/binary_table.cpp, native/lm_image.cpp)."""
    if isinstance(error, OSError) and error.strerror:
        name = os.path.basename(error.filename) if isinstance(error.filename, str) else None
        return BinarizeError(f"{shown}: cannot write{' ' + name if name else ''}: {error.strerror}")
    if isinstance(error, RuntimeError) and ": cannot write: " in str(error):
        path, _, reason = str(error).partition(": cannot write: ")
        return BinarizeError(f"{shown}: cannot write {os.path.basename(path)}: {reason}")
    return None


def _remove_stale(out: str) -> None:
    """Remove the hidden folders beside ``out`` that a binarize of the same DIR on this machine
    left when it was killed past cleaning up (SIGKILL, a crash, a power cut): named as
    :func:`_work_folder` and :func:`_move_into_place` name them, their process gone. Another
    machine's (a shared file system) and a live process's are left alone."""
    parent, name = os.path.split(out)
    pattern = re.compile(rf"\.{re.escape(name)}\.(?:old\.)?{re.escape(socket.gethostname())}-([0-9]+)\.[a-z0-9_]{{8}}")
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for entry in entries:
        m = pattern.fullmatch(entry)
        if m is None or _alive(int(m.group(1))):
            continue
        path = os.path.join(parent, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
            _LOG.info("removed %s, left by binarize process %s, which ended before cleaning up", path, m.group(1))


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (another user's counts)."""
    if pid <= 0:  # (0 and below name process groups: not a binarize's folder, so kept)
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # (no process has a number that large)
        return False
    except PermissionError:
        return True
    return True


class _Stopped(BaseException):
    """A SIGTERM or SIGHUP that arrived while binarize wrote: unwinds to remove the work folder."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _stopped_cleanly() -> Iterator[None]:
    """Run the body with SIGTERM and SIGHUP raising :class:`_Stopped` (where their action is the
    default, to end the process), so that the body's cleanup runs; then end the process by that
    signal, as its default action would have. (SIGINT raises KeyboardInterrupt already.) Only
    the main thread sets signal handlers: in another, the body runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise _Stopped(signum)

    saved = {sig: signal.signal(sig, stop) for sig in _STOPS[:2] if signal.getsignal(sig) == signal.SIG_DFL}
    try:
        yield
    except _Stopped as e:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        saved = {}
        os.kill(os.getpid(), e.signum)  # the default action: ended by the signal (exit 128 + N to a shell)
        raise SystemExit(128 + e.signum) from None  # (only if the signal was not delivered at once)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
