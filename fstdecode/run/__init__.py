"""Batch runners: one result per input line, in input order, whatever runs the searches.

A runner maps a :class:`~fstdecode.decoder.Decoder` over numbered
:class:`Line` s and yields their results in input order as they become
ready. :func:`decode_lines` is the entry point; :class:`SerialRunner` and
:class:`ProcessRunner` are the runners here (a Dask runner plugs in beside them).
"""

from fstdecode.run.lines import Line, input_lines
from fstdecode.run.local import ProcessRunner, Runner, SerialRunner, decode_lines, runner_for
from fstdecode.run.filtered import decode_filtered

__all__ = [
    "Line", "ProcessRunner", "Runner", "SerialRunner", "decode_filtered", "decode_lines", "input_lines", "runner_for",
]
