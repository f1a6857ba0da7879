"""The command line, ``fstdecode``: a thin layer over the Python API.

:func:`run` is the console script. It imports the command line (and with it every search)
inside its own ``try``, so that a Ctrl-C in the first fraction of a second, while the imports
run, ends the process with status 130 and no traceback, as one later does.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["main", "run", "run_moses"]


def run() -> None:
    """``fstdecode``: :func:`fstdecode.cli.main.main`, its status the process's."""
    try:
        from fstdecode.cli.main import main as cli_main
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(cli_main())


def run_moses() -> None:
    """``fstdecode-moses``: ``fstdecode moses`` with Moses' switches (:mod:`fstdecode.cli.moses`)."""
    try:
        from fstdecode.cli.main import main as cli_main
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(cli_main(["moses", *sys.argv[1:]]))


def __getattr__(name: str) -> Any:
    if name == "main":
        from fstdecode.cli.main import main

        return main
    raise AttributeError(f"module 'fstdecode.cli' has no attribute {name!r}")
