"""The Dask runner: chunks of lines as futures on a ``dask.distributed`` cluster.

Needs the ``cluster`` extra (``pip install 'fstdecode[cluster]'``); import this module only
when a Dask run is asked for (:func:`fstdecode.run.batch.runner_for` does so lazily).

* **The model, once per worker.** The decoder is pickled once, on the client (a Decoder pickles
  as its recipe: the model, whose NativeLM pickles as its file's path, and the method and
  options). A worker plugin carries those bytes to every worker, including workers that join
  or restart later; each worker unpickles them on its first chunk and keeps the decoder in a
  per-process cache keyed by the bytes' hash. A task carries only that key and its lines.
  The model's files must therefore be readable at the same absolute paths on every worker
  (a shared file system, as on a SLURM cluster).
* **Compact tasks.** A task's lines go as one pickled bytes object and its results come back as
  one: Dask serializes the items of a list or tuple one by one, with a header each, which cost
  ~0.2 ms a line on top of the decoding (docs/benchmarks.md, bench_scale).
* **Chunk size.** Unless one is given, each chunk holds about ``DASK_TASK_SECONDS`` (0.5 s) of
  decoding (longer beyond 500 worker threads: :func:`task_seconds`), from the time the workers
  report (:class:`~fstdecode.run.base.ChunkSizer`): a task costs ~5 ms of client, scheduler and worker time whatever its size, so a fixed line count is
  either too small for fast searches (the stack decoder, ~1 ms a line) or too large for slow
  ones (an exact search, ~1 s a line, where 64 lines a chunk would leave one worker with all of a
  48-line test set). The first chunks hold one line each and the size at most doubles a step.
* **Order and memory.** At most ``window`` chunks (``WINDOW_PER_WORKER`` per worker thread) are
  submitted ahead of the first one not yet yielded; results are yielded in input order as they
  arrive, and wait as bytes until their turn.
* **Progress.** ``progress(n)`` is called as each chunk completes (as its future does), with its
  number of lines.
* **Quiet workers.** A LocalCluster's workers run one thread each, in their own processes, with
  Dask's statistical profiler off (it sampled the decoding thread every 10 ms), the event loop's
  health tick every 1 s rather than 20 ms, its system monitor every 2 s rather than 0.5 s, the
  memory limit (``--worker-memory``) checked every 0.5 s rather than 0.1 s, and the dashboard
  pages only when asked for (``-v``).
* **malloc.** Dask's nannies start their workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which
  makes glibc hand freed memory back to the kernel at once and map every large block afresh: a
  search allocates and frees its states per sentence, so each sentence page-faulted its memory
  in again (~80 page faults a line, a quarter to a third more CPU a line for the stack decoder).
  A LocalCluster unsets it (``distributed.nanny.pre-spawn-environ``); for a cluster of one's own,
  the README says how. Memory stays flat all the same: glibc's own dynamic threshold reuses the
  freed blocks.
* **Faults.** A chunk whose worker dies (SIGKILL, out of memory, a lost node) is rescheduled by
  the Dask scheduler on another worker; a chunk that killed ``allowed-failures`` workers fails
  with ``KilledWorker``, reported as a :class:`RunError` naming its lines. For a LocalCluster,
  ``retries`` sets that number; an existing scheduler keeps its own
  ``distributed.scheduler.allowed-failures`` (default 3).
* **Security.** A LocalCluster listens on 127.0.0.1 only (scheduler, workers and dashboard).
  Joining a scheduler uses Dask's own configuration (``distributed.comm.tls.*``), or the TLS
  files given in :class:`ClusterSpec`, with encryption then required.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import pickle
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Iterable, Iterator

import dask
from distributed import Client, LocalCluster, as_completed
from distributed.diagnostics.plugin import WorkerPlugin
from distributed.security import Security

from fstdecode.decoder import DecodeResult, Decoder
from fstdecode.run.base import (
    DASK_SCHEDULER_TASKS_PER_SECOND,
    DASK_TASK_SECONDS,
    DEFAULT_RETRIES,
    LINGER_SECONDS,
    WINDOW_PER_WORKER,
    Chunk,
    ChunkSizer,
    LineFeed,
    Progress,
    RunError,
    check_chunk_size,
    check_retries,
    decode_chunk,
)
from fstdecode.run.lines import Line

log = logging.getLogger("fstdecode")


#: Seconds an existing scheduler has to answer before the run fails. Dask's default, 30 s spent
#: retrying even a refused connection (for a scheduler still starting), made a mistyped address
#: look like a hang; a running scheduler answers in milliseconds, a starting one within a second
#: or two.
CONNECT_SECONDS = 5.0


def _is_address(target: str) -> bool:
    """Whether ``--scheduler TARGET`` names an address rather than a scheduler file: it has a
    scheme (``tcp://``), or is ``host:port`` and no file of that name exists."""
    if "://" in target:
        return True
    host, colon, port = target.rpartition(":")
    return bool(colon) and port.isdigit() and "/" not in host and not os.path.exists(target)


def check_address(address: str) -> None:
    """RunError unless ``address`` is a Dask address this client can use: a known scheme, and for
    ``tcp``/``tls`` (the default when there is none) a host and a port in 1..65535."""
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import backends

    try:
        scheme, location = parse_address(address)
        if scheme not in backends:
            raise ValueError(f"unknown scheme {scheme!r} (known: {', '.join(sorted(backends))})")
        if scheme in ("tcp", "tls"):
            host, port = parse_host_port(location)
            if not host or not 1 <= port <= 65535:
                raise ValueError("expected host:port with a port in 1..65535")
    except ValueError as e:
        raise RunError(f"--scheduler {address}: not a scheduler address (e.g. tcp://host:8786): {e}") from None


def scheduler_address(target: str, wait: float = CONNECT_SECONDS) -> str:
    """The address ``--scheduler TARGET`` names: TARGET itself, or the ``address`` in the scheduler
    file TARGET (the JSON that ``dask scheduler --scheduler-file`` writes as the scheduler starts,
    waited for up to ``wait`` seconds). RunError for a file that is missing or not a scheduler file."""
    if _is_address(target):
        check_address(target)
        return target
    deadline = time.monotonic() + wait
    folder = os.path.dirname(os.path.abspath(target))
    while not os.path.exists(target) and os.path.isdir(folder) and time.monotonic() < deadline:
        time.sleep(0.1)
    for _ in range(3):  # a file being written as we read it: the scheduler writes it in one go
        try:
            with open(target, encoding="utf-8") as f:
                info = json.load(f)
        except FileNotFoundError:
            waited = f" (waited {wait:g} s for it)" if os.path.isdir(folder) else f" (no folder {folder})"
            raise RunError(
                f"--scheduler {target}: no such scheduler file{waited}, and not an address (tcp://host:8786)"
            ) from None
        except OSError as e:
            raise RunError(f"--scheduler {target}: cannot read the scheduler file: {e.strerror or e}") from None
        except (ValueError, UnicodeDecodeError):
            info = None
        if isinstance(info, dict) and isinstance(info.get("address"), str):
            check_address(info["address"])
            return info["address"]
        time.sleep(0.05)
    raise RunError(
        f"--scheduler {target}: not a Dask scheduler file (the JSON with an \"address\" that "
        "`dask scheduler --scheduler-file FILE` writes)"
    )


def _reason(error: BaseException) -> str:
    """What went wrong, from the innermost cause of ``error`` (Dask wraps a worker's failure twice)."""
    while error.__cause__ is not None:
        error = error.__cause__
    return str(error) or type(error).__name__


@dataclass(frozen=True)
class ClusterSpec:
    """Where to run: a LocalCluster of ``local_workers`` processes, or the ``scheduler`` at an
    address (``tcp://host:8786``, ``tls://...``) or named by a scheduler file (a path to the JSON
    that ``dask scheduler --scheduler-file`` writes)."""

    local_workers: int | None = None
    scheduler: str | None = None
    #: Memory limit per LocalCluster worker (Dask's syntax: "2GB", "500MiB"; None: Dask's default).
    worker_memory: str | None = None
    tls_ca_file: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    #: Start a LocalCluster's dashboard (on 127.0.0.1, a free port); the CLI does with -v.
    dashboard: bool = False
    #: Seconds to reach the scheduler (and to wait for its scheduler file to appear).
    connect_timeout: float = CONNECT_SECONDS

    def __post_init__(self) -> None:
        if (self.local_workers is None) == (self.scheduler is None):
            raise RunError("give exactly one of --cluster local:N and --scheduler ADDRESS")
        if self.local_workers is not None and self.local_workers < 1:
            raise RunError(f"--cluster local:N takes N >= 1 worker processes, got local:{self.local_workers}")
        tls = (self.tls_ca_file, self.tls_cert, self.tls_key)
        if any(tls) and not all(tls):
            raise RunError("--tls-ca-file, --tls-cert and --tls-key go together")
        if any(tls) and self.scheduler is None:
            raise RunError("the TLS flags are for --scheduler; a LocalCluster listens on 127.0.0.1 only")
        if self.worker_memory is not None and self.scheduler is not None:
            raise RunError("--worker-memory sets a LocalCluster's workers; give `dask worker --memory-limit` to an existing cluster's")
        if self.scheduler is not None and not self.scheduler.strip():
            raise RunError("--scheduler takes a scheduler's address (tcp://host:8786) or its scheduler file, got ''")
        if self.scheduler is not None and _is_address(self.scheduler):
            check_address(self.scheduler)  # at once, before a model loads; a file is read as the run starts
        if not self.connect_timeout > 0:
            raise RunError(f"the connection timeout must be > 0 seconds, got {self.connect_timeout}")

    def security(self) -> Security | None:
        """The TLS settings of the flags; None: Dask's configuration decides."""
        if self.tls_ca_file is None:
            return None
        return Security(
            tls_ca_file=self.tls_ca_file,
            tls_client_cert=self.tls_cert,
            tls_client_key=self.tls_key,
            require_encryption=True,
        )


# --- on the workers -------------------------------------------------------------------------

#: Per worker process: pickled decoders by key (set by the plugin) and the decoders built from them.
_PAYLOADS: dict[str, bytes] = {}
_DECODERS: dict[str, Decoder] = {}
_LOCK = threading.Lock()


class DecoderPlugin(WorkerPlugin):
    """Carries one pickled decoder to every worker (those that join or restart later too)."""

    def __init__(self, key: str, payload: bytes) -> None:
        self.key = key
        self.payload = payload

    def setup(self, worker) -> None:  # noqa: ANN001 (a distributed.Worker)
        _PAYLOADS[self.key] = self.payload

    def teardown(self, worker) -> None:  # noqa: ANN001
        with _LOCK:
            _PAYLOADS.pop(self.key, None)
            _DECODERS.pop(self.key, None)


def worker_decoder(key: str) -> Decoder:
    """This worker's decoder for ``key``, unpickled (the model loaded) on first use only."""
    with _LOCK:
        decoder = _DECODERS.get(key)
        if decoder is None:
            payload = _PAYLOADS.get(key)
            if payload is None:
                raise RunError(f"worker {os.getpid()} has no decoder {key[:12]}: its plugin was not set up")
            decoder = _DECODERS[key] = pickle.loads(payload)
        return decoder


def decode_task(key: str, lines: bytes) -> bytes:
    """One chunk on a worker: ``lines`` is a pickled tuple of Lines; the answer is the pickled
    ``(seconds, results)``, the decoding's wall time and the results in order (one object each
    way, see the module's docstring)."""
    decoder = worker_decoder(key)
    start = time.perf_counter()
    results = decode_chunk(decoder, pickle.loads(lines))
    return pickle.dumps((time.perf_counter() - start, results), protocol=pickle.HIGHEST_PROTOCOL)


# --- on the client --------------------------------------------------------------------------


class DaskRunner:
    """Decodes on a Dask cluster, ``chunk_size`` lines per task (None: about
    :data:`~fstdecode.run.base.DASK_TASK_SECONDS` of decoding per task; see the module's docstring).

    :meth:`start` connects (or starts the LocalCluster); :meth:`map` does so on first use,
    :meth:`close` (or the ``with`` block) stops what this runner started.
    """

    def __init__(
        self,
        spec: ClusterSpec,
        chunk_size: int | None = None,
        retries: int = DEFAULT_RETRIES,
        window: int | None = None,
    ) -> None:
        check_chunk_size(chunk_size)
        check_retries(retries)
        self.spec = spec
        self.chunk_size = chunk_size
        self.retries = retries
        self.window = window
        self.client: Client | None = None
        self.cluster: LocalCluster | None = None
        #: Tasks and lines submitted so far (retries not counted), for monitoring and benchmarks.
        self.tasks = 0
        self.lines_sent = 0

    def __enter__(self) -> DaskRunner:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> Client:
        """The client: connected to the scheduler, or to the LocalCluster started for it.

        A RunError, naming the cluster, when it cannot be started or reached (within
        ``spec.connect_timeout`` seconds for a scheduler)."""
        if self.client is not None:
            return self.client
        spec = self.spec
        where = f"local:{spec.local_workers}" if spec.local_workers is not None else spec.scheduler
        try:
            if spec.local_workers is not None:
                self.cluster = self._local_cluster()
                self.client = Client(self.cluster)
            else:
                address = scheduler_address(spec.scheduler, spec.connect_timeout)
                where = spec.scheduler if address == spec.scheduler else f"{address} (from {spec.scheduler})"
                self.client = Client(address, security=spec.security(), timeout=spec.connect_timeout)
        except (OSError, ValueError, TypeError, ImportError) as e:
            self.close()
            raise RunError(f"cannot start or reach the Dask cluster {where}: {e}") from None
        except BaseException:
            self.close()
            raise
        log.info("dask: scheduler %s, dashboard %s", self.client.scheduler.address, self._dashboard())
        return self.client

    def _local_cluster(self) -> LocalCluster:
        """A LocalCluster of ``spec.local_workers`` single-threaded workers, started again (up to
        ``retries`` times) when one of its workers dies before it is up.

        Dask fails a LocalCluster as a whole when a worker process dies while it starts (killed,
        out of memory: "Nanny failed to start"), although its nannies restart a worker that dies
        at any later time. A fresh start costs a second or two; a setting Dask refuses
        (ValueError, TypeError: a malformed --worker-memory) is not retried."""
        spec = self.spec
        # Read when the scheduler starts: a task is tried on retries + 1 workers before
        # KilledWorker; and tasks go to the workers as they are submitted (the window
        # bounds them) rather than wait at the scheduler for a free thread, which cost a
        # scheduler round trip of idle worker per chunk (docs/benchmarks.md, bench_scale).
        # Read by the nannies as they start, and passed to their workers: no statistical
        # profiler sampling the decoding thread every 10 ms, event-loop health ticks, system
        # samples and memory checks 50, 4 and 5 times rarer (each wakes an event loop: the
        # worker's, which then waits for the decoding thread's GIL, or the nannies' in this
        # process; idle, the cluster's processes then use half the CPU they did), and
        # glibc's malloc left to its own trim threshold (see the module's docstring).
        settings = {
            "distributed.scheduler.allowed-failures": self.retries,
            "distributed.scheduler.worker-saturation": "inf",
            "distributed.worker.profile.enabled": False,
            "distributed.admin.tick.interval": "1s",
            "distributed.admin.system-monitor.interval": "2s",
            "distributed.worker.memory.monitor-interval": "500ms",
            "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
        }
        for attempt in range(self.retries + 1):
            try:
                with dask.config.set(settings):
                    return LocalCluster(
                        n_workers=spec.local_workers,
                        threads_per_worker=1,
                        processes=True,
                        host="127.0.0.1",
                        # The scheduler's HTTP server (health, metrics) runs either way, on a free
                        # loopback port; its dashboard pages only with -v.
                        dashboard_address="127.0.0.1:0",
                        scheduler_kwargs={"dashboard": spec.dashboard},
                        memory_limit=spec.worker_memory if spec.worker_memory is not None else "auto",
                        # Dask's own log (workers restarted, keys refetched) with -v only; a chunk
                        # that fails for good is our RunError.
                        silence_logs=logging.WARNING if log.isEnabledFor(logging.INFO) else logging.CRITICAL,
                    )
            except (ValueError, TypeError):
                raise
            except Exception as e:  # noqa: BLE001 (RuntimeError "Nanny failed to start", a closed comm)
                failure = _reason(e)
                if attempt == self.retries:
                    raise RunError(
                        f"cannot start the Dask cluster local:{spec.local_workers}: {failure}; "
                        f"gave up after {self.retries} retries (out of memory?)"
                    ) from None
                log.warning(
                    "a Dask worker died while the cluster started (%s); starting it again (retry %d of %d)",
                    failure, attempt + 1, self.retries,
                )
        raise RunError(f"--retries must be >= 0, got {self.retries}")  # range() was empty

    def _dashboard(self) -> str:
        """The dashboard's address for the log (a LocalCluster's runs with -v only)."""
        if self.cluster is not None and not self.spec.dashboard:
            return "off (-v starts it)"
        bokeh = "" if importlib.util.find_spec("bokeh") else " (shows its pages once bokeh is installed)"
        return f"{self.client.dashboard_link}{bokeh}"

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    def worker_pids(self) -> dict[str, int]:
        """Worker address -> process id, for monitoring (and the fault tests)."""
        return self.start().run(os.getpid)

    def map(self, decoder: Decoder, lines: Iterable[Line], progress: Progress | None = None) -> Iterator[DecodeResult]:
        client = self.start()
        payload = pickle.dumps(decoder, protocol=pickle.HIGHEST_PROTOCOL)
        key = hashlib.sha256(payload).hexdigest()
        name = f"fstdecode-decoder-{key[:16]}"
        client.register_plugin(DecoderPlugin(key, payload), name=name)
        run = uuid.uuid4().hex[:8]
        threads = sum(client.nthreads().values())
        window = self.window or max(2, threads * WINDOW_PER_WORKER)
        sizer = None if self.chunk_size else ChunkSizer(task_seconds(threads))
        # Results come back as they complete (fetched in batches by as_completed), wait in `done`
        # (pickled) until their turn, and go out in input order; in flight + waiting <= window chunks.
        arrivals = as_completed(with_results=True, raise_errors=False)
        inflight: dict[str, Chunk] = {}
        done: dict[int, bytes] = {}
        submitted = next_out = 0
        exhausted = False
        feed = LineFeed(lines)

        def submit(lines: tuple[Line, ...]) -> None:
            nonlocal submitted
            chunk = Chunk(submitted, lines)
            lines_bytes = pickle.dumps(chunk.lines, protocol=pickle.HIGHEST_PROTOCOL)
            future = client.submit(decode_task, key, lines_bytes, key=f"fstdecode-{run}-{chunk.index}", pure=False)
            inflight[future.key] = chunk
            arrivals.add(future)
            submitted += 1
            self.tasks += 1
            self.lines_sent += len(chunk.lines)

        try:
            while True:
                room = not exhausted and len(inflight) + len(done) < window
                if room:
                    # Wait for input without limit only when nothing is in flight; else look at
                    # the arrivals at least every LINGER_SECONDS, so that a finished line never
                    # waits behind one the user has not typed yet.
                    taken = feed.take(self.chunk_size or sizer.size, timeout=LINGER_SECONDS if inflight else None)
                    exhausted = taken is None
                    if taken:
                        submit(taken)
                        continue
                if exhausted and not inflight:
                    return
                for future, answer in arrivals.next_batch(block=not room):
                    chunk = inflight.pop(future.key)
                    if future.status == "error":
                        _raise(chunk, future.exception())
                    done[chunk.index] = answer
                    if progress is not None:
                        progress(len(chunk.lines))
                while next_out in done:
                    seconds, results = pickle.loads(done.pop(next_out))
                    if sizer is not None:
                        sizer.observe(len(results), seconds)
                    yield from results
                    next_out += 1
        finally:
            feed.close()
            arrivals.clear()
            if inflight:
                client.cancel(list(inflight))
            try:
                client.unregister_worker_plugin(name)
            except Exception:  # noqa: BLE001 (a closing cluster: the plugin goes with its workers)
                pass


def task_seconds(threads: int) -> float:
    """The decoding time an automatically sized chunk aims at on ``threads`` worker threads:
    :data:`DASK_TASK_SECONDS`, or longer on a cluster large enough that the scheduler would
    otherwise be asked for more than :data:`DASK_SCHEDULER_TASKS_PER_SECOND` tasks a second."""
    return max(DASK_TASK_SECONDS, threads / DASK_SCHEDULER_TASKS_PER_SECOND)


def _raise(chunk: Chunk, error: BaseException) -> None:
    """A chunk that killed too many workers is a RunError naming its lines; any other error is re-raised."""
    from distributed.scheduler import KilledWorker

    if isinstance(error, KilledWorker):
        raise RunError(f"{chunk.describe()}: the Dask workers decoding them died too often ({error}); out of memory?") from None
    raise error
