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
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from fstdecode._native import core as _core
from fstdecode.errors import FstdecodeError
from fstdecode.io.binarized import BINARIZED_INI_HEADER, is_binary_table, is_lm_image, source_stamp, written_by_binarize
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
        raise BinarizeError(f"{options.out}: its folder {parent} does not exist")
    work = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.", dir=parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(work, 0o777 & ~umask)  # mkdtemp's folder is private; DIR is an ordinary folder
    try:
        paths = _write_files(cfg, work, out, options)
        header = (
            f"{BINARIZED_INI_HEADER} from {os.path.abspath(options.config)} (binarized tables: format "
            f"{_core.BINARY_TABLE_VERSION}, LM image: format {_core.LM_IMAGE_VERSION}).\n"
            "# The binarized tables and LM image are fstdecode's own formats (README.md, \"Binarized models\").\n"
        )
        Path(work, INI_FILE).write_text(rewritten_ini(options.config, paths, header), encoding="utf-8")
        files = tuple(sorted((name, os.path.getsize(os.path.join(work, name))) for name in os.listdir(work)))
        _move_into_place(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return Binarized(options.out, files, time.perf_counter() - start)


def _write_files(cfg, work: str, out: str, options: BinarizeOptions) -> dict[str, str]:
    """Write each binarized file into ``work``; their final paths (in ``out``) by feature name."""
    paths: dict[str, str] = {}
    for k, pt in enumerate(cfg.phrase_tables()):  # phrase-table.bin, then phrase-table1.bin ...
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
    if lr is not None:
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
    aside = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.old.", dir=os.path.dirname(out))
    os.rmdir(aside)
    os.rename(out, aside)
    os.rename(work, out)
    if os.path.isdir(aside) and not os.path.islink(aside):
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.remove(aside)
