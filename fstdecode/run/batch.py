"""The batch API: :func:`decode_lines` over a runner, and :func:`runner_for` to pick one."""

from __future__ import annotations

from typing import Iterable, Iterator

from fstdecode.decoder import DecodeError, DecodeResult, Decoder
from fstdecode.run.base import DEFAULT_CHUNK_SIZE, DEFAULT_RETRIES, Progress, Runner, RunError, missing_module
from fstdecode.run.lines import Line
from fstdecode.run.local import ProcessRunner, SerialRunner, ThreadRunner

#: What to install for --cluster and --scheduler.
CLUSTER_EXTRA = "pip install 'fstdecode[cluster]'"


def runner_for(
    workers: int = 1,
    *,
    threads: int = 1,
    cluster: str | None = None,
    scheduler: str | None = None,
    chunk_size: int | None = None,
    retries: int = DEFAULT_RETRIES,
    dashboard: bool = False,
    **dask_options: str | None,
) -> Runner:
    """The runner the CLI's flags name.

    ``cluster`` is ``local:N`` (a Dask LocalCluster of N worker processes); ``scheduler`` an
    existing Dask scheduler's address or scheduler file; neither: ``workers`` local processes
    (1: this process), or ``threads`` threads of this process sharing its model (one of the two). ``chunk_size``: lines per task (default: :data:`DEFAULT_CHUNK_SIZE` for
    the local pool; on Dask, about :data:`~fstdecode.run.base.DASK_TASK_SECONDS` of decoding per
    task). ``dashboard``: start a LocalCluster's dashboard. ``dask_options`` are
    :class:`fstdecode.run.dask.ClusterSpec`'s ``worker_memory`` and ``tls_*`` fields.
    """
    if cluster is None and scheduler is None:
        if any(v is not None for v in dask_options.values()):
            raise RunError("--worker-memory and the TLS flags need --cluster or --scheduler")
        if threads != 1:
            if workers != 1:
                raise RunError("give --workers (processes) or --threads (threads of one process), not both")
            if chunk_size is not None:
                raise RunError("--chunk-size sizes the tasks of --workers and Dask; --threads decodes a line a task")
            return ThreadRunner(threads)
        return SerialRunner() if workers == 1 else ProcessRunner(workers, chunk_size or DEFAULT_CHUNK_SIZE, retries)
    local = None
    if cluster is not None:
        kind, _, n = cluster.partition(":")
        if kind != "local" or not n.isdigit():
            raise RunError(f"--cluster takes local:N (N worker processes), got {cluster!r}")
        local = int(n)
    try:
        from fstdecode.run.dask import ClusterSpec, DaskRunner
    except ImportError as e:
        raise RunError(missing_module("--cluster and --scheduler need Dask", e, CLUSTER_EXTRA)) from None
    return DaskRunner(ClusterSpec(local, scheduler, dashboard=dashboard, **dask_options), chunk_size, retries)


def _line(i: int, line: object) -> Line:
    """Input item ``i`` as a Line: a Line as it is, a str without its end of line; else DecodeError."""
    if isinstance(line, Line):
        return line
    if not isinstance(line, str):
        raise DecodeError(f"decode_lines(): line {i + 1} is a {type(line).__name__}, not a str; decode bytes first")
    return Line(i, line.rstrip("\r\n"))


def decode_lines(
    decoder: Decoder, lines: Iterable[str | Line], runner: Runner | None = None, progress: Progress | None = None
) -> Iterator[DecodeResult]:
    """Decode ``lines`` (strings or :class:`Line` s), one result per line, in order, streamed.

    Strings are numbered from 0 and lose their end of line. ``runner``: :class:`SerialRunner`
    (the default), :class:`ProcessRunner`, :class:`~fstdecode.run.dask.DaskRunner`, or any
    object with the :class:`Runner` protocol's ``map``. ``progress(n)``: told as each chunk of
    ``n`` lines finishes decoding (see :class:`Runner`); passed to the runner only when given.
    """
    if not callable(getattr(decoder, "decode", None)):  # a Decoder, or a wrapper with its decode()
        raise DecodeError(f"decode_lines() takes a Decoder first, got {type(decoder).__name__}")
    if isinstance(lines, (str, bytes, bytearray)) or not isinstance(lines, Iterable):
        raise DecodeError(
            f"decode_lines() takes an iterable of lines (a file, a list of str), not a {type(lines).__name__}; "
            "for one sentence use Decoder.decode, or pass [sentence]"
        )
    numbered = (_line(i, ln) for i, ln in enumerate(lines))
    runner = runner or SerialRunner()
    yield from runner.map(decoder, numbered) if progress is None else runner.map(decoder, numbered, progress)
