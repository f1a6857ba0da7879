"""The Dask runner (fstdecode.run.dask) on a LocalCluster of two worker processes.

The same checks as the local pool's in tests/unit/test_run.py, against the serial run: every
line once, in order, also when a worker is SIGKILLed mid-run (from inside at a chosen line, and
from outside by its pid); a chunk that always kills its worker fails clearly; each worker
unpickles the decoder once, not once per task. Skipped with a reason without the cluster extra
(CI installs it: the test extra includes it).
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("distributed", reason="the Dask runner needs the cluster extra: pip install 'fstdecode[cluster]'")

import faulty  # noqa: E402
from faulty import Counted, KillAlways, KillOnce, Slow, SlowAt  # noqa: E402
from shared import EXAMPLE_DATA, run_cli  # noqa: E402

from fstdecode.cli.output import text  # noqa: E402
from fstdecode.run import RunError, decode_lines  # noqa: E402
from fstdecode.run.dask import ClusterSpec, DaskRunner  # noqa: E402

EXAMPLE_LINES = (EXAMPLE_DATA / "input.txt").read_text(encoding="utf-8").splitlines()
LINES = list(itertools.islice(itertools.cycle(EXAMPLE_LINES + ["", "xyzzy plugh", "das <s>"]), 120))

pytestmark = pytest.mark.slow  # a LocalCluster takes ~2 s to start, each kill ~1 s to recover


@pytest.fixture(scope="module")
def decoder(example_model):
    from fstdecode.decoder import Decoder

    return Decoder(example_model, "stack")


@pytest.fixture(scope="module")
def expected(decoder) -> list[str]:
    return [text(r) for r in decode_lines(decoder, LINES)]


@pytest.fixture(scope="module")
def runner():
    with DaskRunner(ClusterSpec(local_workers=2), chunk_size=4) as r:
        yield r


def test_cluster_listens_on_loopback_only(runner):
    assert runner.client.scheduler.address.startswith("tcp://127.0.0.1:")
    assert all(address.startswith("tcp://127.0.0.1:") for address in runner.worker_pids())
    assert runner.client.dashboard_link.startswith("http://127.0.0.1:")


def test_dask_equals_serial_and_loads_the_decoder_once_per_worker(runner, expected, decoder):
    results = list(decode_lines(Counted(decoder), LINES, runner))
    assert [r.id for r in results] == list(range(len(LINES)))
    assert [text(r) for r in results] == expected
    per_worker = runner.client.run(faulty.loads)
    assert len(per_worker) == 2 and max(per_worker.values()) == 1, per_worker  # 30 tasks, one load each at most


def test_dask_sizes_its_chunks_and_counts_progress_as_futures_complete(decoder, expected):
    """No chunk size given: the first chunks hold one line each and later ones grow (these lines
    take ~1 ms, far under the 0.5 s a chunk aims at); progress is told each chunk's lines as its
    future completes, so while line 0 is slow the chunks after it are counted before it is written."""
    calls: list[int] = []
    results, seen = [], []
    with DaskRunner(ClusterSpec(local_workers=2)) as r:
        for result in decode_lines(SlowAt(decoder, 0, 1.0), LINES, r, progress=calls.append):
            results.append(result)
            seen.append(sum(calls))
    assert [text(x) for x in results] == expected
    assert sum(calls) == len(LINES) and calls[0] == 1 and max(calls) > 4
    assert all(done >= k + 1 for k, done in enumerate(seen))
    assert seen[0] > 1  # chunks after line 0's finished (and counted) before line 0 came out


def test_dask_redoes_the_chunk_of_a_worker_killed_mid_chunk(runner, expected, decoder, tmp_path):
    marker = tmp_path / "killed"
    out = [text(r) for r in decode_lines(KillOnce(decoder, 37, marker), LINES, runner)]
    assert marker.exists()  # a worker process did SIGKILL itself at line 37
    assert out == expected


def test_dask_survives_a_worker_killed_from_outside(runner, expected, decoder):
    out, killed = [], None
    for result in decode_lines(Slow(decoder, 0.01), LINES, runner):
        out.append(text(result))
        if len(out) == 12:
            killed = sorted(runner.worker_pids().values())[0]
            os.kill(killed, signal.SIGKILL)
    assert killed is not None and killed not in runner.worker_pids().values()
    assert out == expected


def test_dask_fails_clearly_on_a_chunk_that_always_kills_its_worker(decoder):
    # Dask counts a death against every task on the dying worker, so a chunk queued beside the
    # killer (lines 37-40) may use up its retries first and be the one named: the run must fail
    # with the error naming a chunk, never hang or lose lines silently.
    with DaskRunner(ClusterSpec(local_workers=2), chunk_size=4, retries=1) as r:
        with pytest.raises(RunError, match=r"input lines \d+-\d+: the Dask workers decoding them died too often"):
            list(decode_lines(KillAlways(decoder, 37), LINES, r))


def test_automatic_chunks_aim_longer_on_a_large_cluster():
    """0.5 s a task up to 500 worker threads; beyond, threads / 1,000 s, so that the scheduler is
    asked for at most ~1,000 tasks a second (all workers busy: threads / seconds a task)."""
    from fstdecode.run.dask import task_seconds

    assert task_seconds(1) == task_seconds(500) == 0.5
    assert task_seconds(1600) == 1.6 and 1600 / task_seconds(1600) == 1000


def test_cluster_spec_refuses_bad_combinations():
    for kwargs, message in [
        ({}, "exactly one of"),
        ({"local_workers": 2, "scheduler": "tcp://x:1"}, "exactly one of"),
        ({"local_workers": 0}, "--cluster local:N takes N >= 1"),
        ({"scheduler": "tls://x:1", "tls_ca_file": "ca.pem"}, "go together"),
        ({"local_workers": 2, "tls_ca_file": "a", "tls_cert": "b", "tls_key": "c"}, "loopback|127.0.0.1"),
        ({"scheduler": "tcp://x:1", "worker_memory": "1GB"}, "--memory-limit"),
    ]:
        with pytest.raises(RunError, match=message):
            ClusterSpec(**kwargs)
    tls = ClusterSpec(scheduler="tls://x:1", tls_ca_file="ca.pem", tls_cert="c.pem", tls_key="k.pem").security()
    assert tls.require_encryption and tls.tls_ca_file == "ca.pem" and tls.tls_client_cert == "c.pem"


def test_cli_cluster_equals_one_worker_and_logs_the_dashboard():
    source = "\n".join(LINES) + "\n"
    one = run_cli(["decode", "--method", "stack", "--format", "nbest"], source)
    dask = run_cli(["-v", "decode", "--method", "stack", "--format", "nbest", "--cluster", "local:2", "--worker-memory", "1GB"], source)
    assert dask.returncode == 0, dask.stderr
    assert dask.stdout == one.stdout
    assert "dask: scheduler tcp://127.0.0.1:" in dask.stderr and "dashboard http://127.0.0.1:" in dask.stderr


def test_cli_unreachable_scheduler_is_a_clean_error():
    proc = run_cli(["decode", "--scheduler", "tcp://127.0.0.1:1"], "das\n", DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="2s")
    assert proc.returncode == 2, proc.stderr
    assert "cannot start or reach the Dask cluster tcp://127.0.0.1:1" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_refused_scheduler_fails_fast_in_one_line():
    # Dask's own default spent 30 s retrying a refused port; the run gives up after 5 s.
    proc = run_cli(["decode", "--scheduler", "tcp://127.0.0.1:1"], "das\n", timeout=20)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("fstdecode: error: cannot start or reach the Dask cluster tcp://127.0.0.1:1")
    assert len(proc.stderr.splitlines()) == 1, proc.stderr


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


def _worker_of(pid: int) -> int | None:
    """A Dask worker process of the run ``pid`` (a spawned multiprocessing child), if one is up."""
    for child in _children(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if b"multiprocessing" in cmdline and b"resource_tracker" not in cmdline:
            return child
    return None


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the worker processes in /proc")
def test_cli_worker_killed_while_the_cluster_starts_costs_only_time():
    # The first worker process is SIGKILLed as soon as it exists: while the LocalCluster starts
    # (Dask then fails the whole cluster: it is started again) or just after (its nanny restarts
    # it). Either way every line comes out, in order, as the serial run writes them.
    lines = list(itertools.islice(itertools.cycle(LINES), 1200))
    source = ("\n".join(lines) + "\n").encode()
    expected = run_cli(["decode", "--method", "stack"], source).stdout
    proc = subprocess.Popen(
        [sys.executable, "-m", "fstdecode", "decode", "--method", "stack", "--cluster", "local:2"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    killed = None
    with proc:
        proc.stdin.write(source)
        proc.stdin.close()
        proc.stdin = None  # closed: communicate() has nothing to send
        deadline = time.monotonic() + 30
        while killed is None and proc.poll() is None and time.monotonic() < deadline:
            killed = _worker_of(proc.pid)
            if killed is None:
                time.sleep(0.01)
        assert killed is not None, "no worker process appeared"
        os.kill(killed, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert out.decode() == expected
    assert b"Traceback" not in err


@pytest.mark.skipif(shutil.which("openssl") is None, reason="makes its TLS certificate with the openssl command")
def test_cli_joins_a_tls_scheduler_with_the_tls_flags(tmp_path):
    """A LocalCluster that requires TLS (a self-signed certificate, its own CA): the CLI joins it
    with --tls-ca-file/--tls-cert/--tls-key and decodes as serially; without them it is refused
    with a clean error."""
    from distributed import LocalCluster
    from distributed.security import Security

    cert, key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
         "-subj", "/CN=127.0.0.1"],
        check=True, capture_output=True,
    )
    files = dict(tls_scheduler_cert=cert, tls_scheduler_key=key, tls_worker_cert=cert, tls_worker_key=key,
                 tls_client_cert=cert, tls_client_key=key)
    security = Security(tls_ca_file=cert, require_encryption=True, **files)
    source = "\n".join(EXAMPLE_LINES) + "\n"
    serial = run_cli(["decode", "--method", "stack"], source).stdout
    with LocalCluster(n_workers=1, threads_per_worker=1, host="127.0.0.1", protocol="tls://", security=security,
                      dashboard_address="127.0.0.1:0", silence_logs=logging.ERROR) as cluster:
        assert cluster.scheduler_address.startswith("tls://127.0.0.1:")
        joined = run_cli(["decode", "--method", "stack", "--scheduler", cluster.scheduler_address,
                          "--tls-ca-file", cert, "--tls-cert", cert, "--tls-key", key], source)
        assert joined.returncode == 0, joined.stderr
        assert joined.stdout == serial
        refused = run_cli(["decode", "--scheduler", cluster.scheduler_address], source,
                          DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="3s")
        assert refused.returncode == 2 and "cannot start or reach the Dask cluster tls://" in refused.stderr
        assert "Traceback" not in refused.stderr
