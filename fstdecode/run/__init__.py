"""Batch runners: one result per input line, in input order, whatever runs the searches.

A runner maps a :class:`~fstdecode.decoder.Decoder` over numbered :class:`Line` s and yields
their results in input order as they become ready (:class:`Runner`). :func:`decode_lines` is
the entry point, :func:`runner_for` picks a runner:

* :class:`SerialRunner` (:mod:`.local`): this process;
* :class:`ThreadRunner` (:mod:`.local`): threads of this process sharing its model (``--threads``);
* :class:`ProcessRunner` (:mod:`.local`): forked worker processes, surviving killed workers;
* ``DaskRunner`` (:mod:`.dask`, the ``cluster`` extra): a LocalCluster or an existing Dask
  cluster, imported only when asked for.
"""

from fstdecode.run.base import Chunk, Runner, RunError
from fstdecode.run.batch import decode_lines, runner_for
from fstdecode.run.lines import Line, input_lines
from fstdecode.run.filtered import decode_filtered
from fstdecode.run.local import ProcessRunner, SerialRunner, ThreadRunner

__all__ = [
    "Chunk", "Line", "ProcessRunner", "RunError", "Runner", "SerialRunner", "ThreadRunner", "decode_filtered", "decode_lines",
    "input_lines", "runner_for",
]
