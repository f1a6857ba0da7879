"""The CLI's standard streams and output files, each failure named once.

A write that fails (a full disk, ``> /dev/full``, a file system gone read-only) raises
:class:`~fstdecode.io.writing.WriteError` naming the destination, which the CLI prints as one
``fstdecode: error:`` line with status 2. A closed pipe (``| head``) is not a failure: its
``BrokenPipeError`` passes through, and the CLI ends quietly. A standard stream closed before
the run (``>&-``, ``<&-``) is an error said at once.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from fstdecode.errors import FstdecodeError
from fstdecode.io.writing import WriteError, cannot_write

STDOUT = "standard output"


class Guarded:
    """``stream``, whose writes, flushes and close raise WriteError naming ``name`` on failure."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self.stream = stream
        self.name = name

    def _do(self, what: str, *args: Any) -> Any:
        try:
            return getattr(self.stream, what)(*args)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise cannot_write(self.name, e) from None

    def write(self, text: str) -> int:
        return self._do("write", text)

    def flush(self) -> None:
        self._do("flush")

    def close(self) -> None:
        self._do("close")

    def __getattr__(self, attr: str) -> Any:  # encoding, isatty, fileno, ...: the stream's own
        return getattr(self.stream, attr)


def standard_output() -> Guarded:
    """sys.stdout, guarded; WriteError when it was closed before the run (``>&-``)."""
    if sys.stdout is None:
        raise WriteError(f"{STDOUT} is closed; redirect it somewhere (e.g. > out.txt)")
    return Guarded(sys.stdout, STDOUT)


def check_standard_input() -> None:
    """FstdecodeError when standard input was closed before the run (``<&-``)."""
    if sys.stdin is None:
        raise FstdecodeError("standard input is closed; give the sentences on it, one per line (e.g. < in.txt)")


def open_output(path: str, what: str) -> Guarded:
    """``path`` opened for writing (UTF-8, truncated), guarded; WriteError naming it (and ``what`` it is for)."""
    try:
        return Guarded(open(path, "w", encoding="utf-8"), f"{path} ({what})")
    except OSError as e:
        raise cannot_write(f"{path} ({what})", e) from None


def drop_unwritten_output() -> None:
    """After standard output failed: send what Python still holds for it to /dev/null, so that
    the interpreter's last flush at exit neither fails nor prints a second error."""
    if sys.__stdout__ is None:
        return
    try:
        sys.__stdout__.flush()
    except OSError:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno())
        except (OSError, ValueError):
            pass
