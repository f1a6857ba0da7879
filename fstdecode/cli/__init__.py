"""The command line, ``fstdecode``: a thin layer over the Python API."""

from fstdecode.cli.main import main

__all__ = ["main"]
