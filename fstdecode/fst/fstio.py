"""Reading and writing OpenFst files through Python's own file I/O.

OpenFst reports a failed read or write twice: an ``ERROR:`` line of its own on file descriptor 2,
then an exception that says only "Read failed" / "Write failed". Here the bytes go through Python
(``write_to_string``, ``read_from_string``), so a missing, unreadable or unwritable file, or a
full disk, is Python's ``OSError`` with its reason; OpenFst's parser runs with its log silenced
and its message folded into ours, so the user sees one ``fstdecode: error:`` line.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pywrapfst as fst

from fstdecode.errors import FstdecodeError
from fstdecode.io.writing import cannot_write
from fstdecode.io.files import read_bytes


@contextlib.contextmanager
def quiet_openfst() -> Iterator[list[str]]:
    """Hold file descriptor 2 (OpenFst's C++ log) in a temporary file while the block runs.

    Yields a list that receives, after the block, what OpenFst logged (its ``ERROR:`` lines,
    stripped), for the caller's message.
    """
    logged: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as held:
            os.dup2(held.fileno(), 2)
            try:
                yield logged
            finally:
                os.dup2(saved, 2)
                held.seek(0)
                text = held.read().decode("utf-8", "replace")
                logged.extend(line.removeprefix("ERROR: ").strip() for line in text.splitlines() if line.strip())
    finally:
        os.close(saved)


def read_fst_file(path: str | Path, error: type[FstdecodeError], kind: type[fst.Fst] = fst.Fst) -> fst.Fst:
    """The FST in the file ``path`` (``kind``: ``fst.Fst``, or ``fst.VectorFst`` for a mutable one).

    Raises ``error`` naming the path: no such file, cannot read, or not an OpenFst file (with
    OpenFst's own reason).
    """
    data = read_bytes(path, error)
    with quiet_openfst() as logged:
        try:
            return kind.read_from_string(data)
        except Exception:  # noqa: BLE001 (pywrapfst's FstIOError, FstOpError: they say only "failed")
            pass
    reason = "; ".join(logged) or "OpenFst cannot parse it"
    raise error(f"{path}: not an OpenFst file that can be read ({reason})")


def write_fst_file(machine: fst.Fst, path: str | Path) -> None:
    """Write ``machine`` to ``path``. Raises :class:`~fstdecode.io.writing.WriteError` naming the path.

    A regular file is written atomically (a temporary file beside it, then renamed), so a reader
    never sees half a file and a failure leaves what was there; a device or a pipe (``/dev/stdout``)
    is written to as it is.
    """
    spath = os.fspath(path)
    data = machine.write_to_string()
    if os.path.exists(spath) and not os.path.isfile(spath):
        _write_in_place(spath, data)
        return
    try:
        fd, temp = tempfile.mkstemp(prefix=".fstdecode-", suffix=".fst.tmp", dir=os.path.dirname(os.path.abspath(spath)))
    except OSError as e:
        raise cannot_write(spath, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temp, spath)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise cannot_write(spath, e) from None


def _write_in_place(path: str, data: bytes) -> None:
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as e:
        raise cannot_write(path, e) from None
