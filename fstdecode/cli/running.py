"""The flags and helpers of ``fstdecode decode`` that choose what runs where: the runner
(``--workers``, ``--cluster``, ``--scheduler``), the share of the input (``--shard``,
``--resume``) and where the output goes; the CLI's thin layer over :mod:`fstdecode.run`."""

from __future__ import annotations

import argparse
import errno
import itertools
import logging
import os
import resource
import sys
from typing import BinaryIO, Iterator, TextIO

from fstdecode.cli import output
from fstdecode.cli.options import check_min
from fstdecode.cli.progress import wanted
from fstdecode.errors import FstdecodeError
from fstdecode.io.files import is_regular
from fstdecode.run import Line, Runner, SerialRunner, input_lines, runner_for
from fstdecode.run.base import DASK_TASK_SECONDS, DEFAULT_CHUNK_SIZE, DEFAULT_RETRIES
from fstdecode.run.lines import count_lines, parse_shard, shard_span


def add_run_flags(p: argparse.ArgumentParser, input_flags: bool = True) -> None:
    """The flags that choose where and how much of the input runs (README, 'Running on many cores and
    machines'); without ``input_flags`` only where (no --shard, --resume or --progress: fstdecode tune)."""
    g = p.add_argument_group("running (README.md, 'Running on many cores and machines')")
    g.add_argument(
        "--workers", dest="workers", type=worker_count, default=1, metavar="N",
        help="decode N sentences at once, in N local worker processes, each with its own copy of the model "
        "(default: 1, this process; all: one per core); a worker that dies loses only its lines, which are retried",
    )
    g.add_argument(
        "--threads", dest="threads", type=worker_count, default=1, metavar="N",
        help="decode N sentences at once on N threads of this process, sharing one loaded model (all: one per "
        "core); fstdecode moses' -threads N|all",
    )
    g.add_argument("--cluster", metavar="local:N", help="decode on a Dask LocalCluster of N worker processes on 127.0.0.1 (the cluster extra)")
    g.add_argument(
        "--scheduler", metavar="ADDRESS",
        help="decode on an existing Dask cluster: its scheduler's address (tcp://host:8786, tls://...) or scheduler file",
    )
    g.add_argument("--worker-memory", metavar="SIZE", help="memory limit per --cluster worker, Dask's syntax (e.g. 2GB; default: Dask's)")
    g.add_argument("--tls-ca-file", metavar="PEM", help="with --scheduler tls://...: the CA certificate (with --tls-cert and --tls-key)")
    g.add_argument("--tls-cert", metavar="PEM", help="with --scheduler: this client's TLS certificate")
    g.add_argument("--tls-key", metavar="PEM", help="with --scheduler: this client's TLS private key")
    g.add_argument(
        "--chunk-size", type=int, metavar="K",
        help=f"lines per task sent to a worker (default: {DEFAULT_CHUNK_SIZE} for --workers; on Dask, sized as it runs "
        f"to about {DASK_TASK_SECONDS:g} s of decoding per task, from 1 line up to at most doubling each time)",
    )
    g.add_argument(
        "--retries", type=int, default=DEFAULT_RETRIES, metavar="R",
        help=f"times a chunk is retried after its worker died (killed, out of memory) before the run fails (default: {DEFAULT_RETRIES})",
    )
    if not input_flags:
        return
    g.add_argument(
        "--shard", metavar="I/N",
        help="decode only the I-th of N contiguous blocks of the input (stdin must be a file); "
        "the outputs of shards 1/N..N/N concatenated in order are the whole run's",
    )
    g.add_argument(
        "--resume", metavar="OUT",
        help="write to OUT instead of stdout, keeping the results already complete in OUT and decoding only the rest",
    )
    g.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None,
        help="a progress bar on stderr (default: when stderr is a terminal)",
    )


def worker_count(text: str) -> int:
    """``--workers N`` / ``--threads N|all``: N (an integer; the runner checks it is >= 1), or one
    worker per core for ``all`` (Moses' -threads all)."""
    if text == "all":
        return os.cpu_count() or 1
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of workers, or all (one per core)") from None


def runner(args: argparse.Namespace) -> Runner:
    """The runner of the --workers, --cluster and --scheduler flags (one kind at a time)."""
    threads = getattr(args, "threads", 1)
    if (args.workers != 1 or threads != 1) and (args.cluster or args.scheduler):
        raise FstdecodeError("--workers and --threads run locally; give the Dask workers with --cluster local:N instead")
    if args.cluster and args.scheduler:
        raise FstdecodeError("give --cluster or --scheduler, not both")
    check_min("--chunk-size", args.chunk_size, 1)
    check_min("--retries", args.retries, 0)
    tls = dict(tls_ca_file=args.tls_ca_file, tls_cert=args.tls_cert, tls_key=args.tls_key)
    dashboard = {"dashboard": True} if args.cluster and args.verbose else {}  # a LocalCluster's dashboard with -v only
    return runner_for(
        args.workers, threads=threads, cluster=args.cluster, scheduler=args.scheduler, chunk_size=args.chunk_size,
        retries=args.retries, worker_memory=args.worker_memory, **tls, **dashboard,
    )


def input_range(args: argparse.Namespace, runner: Runner) -> tuple[Iterator[Line], int | None, int]:
    """The input lines this run decodes (``--shard``'s block, less what ``--resume`` found done),
    how many lines the run's output will hold when known, and how many of them are done.

    The input file is counted (one extra pass) only when something uses the count: ``--shard``,
    ``--resume`` (its check of the output's length) or a progress bar's total."""
    bar = wanted(False if args.quiet and args.progress is None else args.progress)
    total = count_lines(sys.stdin) if args.shard or args.resume or bar else None
    start, stop = 0, total
    if args.shard:
        shard = parse_shard(args.shard)
        if total is None:
            raise FstdecodeError("--shard needs the input as a file (`< input.txt`), to count its lines")
        start, stop = shard_span(total, shard)
    done = 0
    if args.resume:
        if os.path.exists(args.resume) and not is_regular(args.resume):
            raise FstdecodeError(f"{args.resume}: --resume reads, cuts and appends to its file, so it must be a regular "
                                 "file, not a device, a pipe or a FIFO; give a file (a new name starts afresh)")
        done, cut = output.resume_point(args.resume, args.format, first_id=start)
        if stop is not None and done > stop - start:
            raise FstdecodeError(f"{args.resume}: holds {done} results, more than the {stop - start} input lines; is it this input's output?")
        if os.path.exists(args.resume):
            os.truncate(args.resume, cut)
        logging.getLogger("fstdecode").info("%s: %d results done; decoding the rest", args.resume, done)
    threaded = not isinstance(runner, SerialRunner)  # the pool, the threads and Dask read their lines in a LineFeed thread
    name = getattr(args, "input_name", "<stdin>")
    lines = itertools.islice(input_lines(_standard_input(threaded), name), start + done, stop)
    return lines, (None if stop is None else stop - start), done


def _standard_input(threaded: bool) -> BinaryIO | TextIO:
    """Standard input to read the sentences from: ``sys.stdin`` for a serial run, read by the
    main thread (where a Ctrl-C interrupts the read); for a run whose runner reads its lines in
    a thread, a duplicate of its file descriptor (at the offset ``count_lines`` rewound it to).
    A pool's or Dask's lines are read by a thread
    (:class:`~fstdecode.run.base.LineFeed`) that may still be blocked reading an open pipe when
    the run ends (an error, ``| head``): were it reading ``sys.stdin`` itself, the interpreter,
    closing ``sys.stdin`` at exit, would wait for that thread's lock and abort."""
    if not threaded:
        return sys.stdin
    try:
        return os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    except (AttributeError, OSError, ValueError):  # no file descriptor (a StringIO in a test)
        return sys.stdin


def out_of_files(error: OSError) -> str | None:
    """The one error line for an OSError that says the process ran out of file descriptors
    (EMFILE: its own limit, ``ulimit -n``; ENFILE: the system's), else None. Each ``--workers``
    worker holds a pipe and its process's sentinel, so a low limit fails as the pool starts."""
    if error.errno not in (errno.EMFILE, errno.ENFILE):
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    limit = "no limit" if soft == resource.RLIM_INFINITY else f"{soft}"
    return (f"{error.strerror.lower()} (this process may open {limit}: ulimit -n); raise the limit "
            "(e.g. ulimit -n 4096), or run fewer --workers")


def output_stream(args: argparse.Namespace) -> TextIO:
    if not args.resume:
        return sys.stdout
    try:
        return open(args.resume, "a", encoding="utf-8")
    except OSError as e:
        raise FstdecodeError(f"{args.resume}: cannot write: {e.strerror}") from None
