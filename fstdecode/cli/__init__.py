"""The command line, ``fstdecode``: a thin layer over the Python API.

:func:`run` is the console script. It imports the command line (and with it every search)
inside its own ``try``, so that a Ctrl-C in the first fraction of a second, while the imports
run, ends the process with status 130 and no traceback, as one later does.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

__all__ = ["main", "run", "run_moses"]


def run() -> None:
    """``fstdecode``: :func:`fstdecode.cli.main.main`, its status the process's."""
    sys.exit(_command_line()())


def run_moses() -> None:
    """``fstdecode-moses``: ``fstdecode moses`` with Moses' switches (:mod:`fstdecode.cli.moses`)."""
    sys.exit(_command_line()(["moses", *sys.argv[1:]]))


def _command_line() -> Callable[..., int]:
    """:func:`fstdecode.cli.main.main`, imported: a Ctrl-C meanwhile exits 130; a copy of
    fstdecode that cannot run (its native core not built: :mod:`fstdecode._native`) exits 2
    with its one error line."""
    from fstdecode.errors import FstdecodeError

    try:
        from fstdecode.cli.main import main as cli_main
    except KeyboardInterrupt:
        sys.exit(130)
    except FstdecodeError as e:
        print(f"fstdecode: error: {e}", file=sys.stderr)
        sys.exit(2)
    return cli_main


def __getattr__(name: str) -> Any:
    if name == "main":
        from fstdecode.cli.main import main

        return main
    raise AttributeError(f"module 'fstdecode.cli' has no attribute {name!r}")
