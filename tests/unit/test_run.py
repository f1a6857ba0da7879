"""The batch runners (fstdecode.run): order, faults, shards, resume, and the CLI flags over them.

Every runner is checked against the serial run of the same decoder: the same results, once
each, in input order. The fault tests SIGKILL a worker process mid-chunk (from inside, at a
chosen line, so the test is deterministic; and from outside, by pid, mid-run) and expect the
lost chunk to be redone. Dask's own runner has the same checks in tests/integration/test_dask.py.
"""

from __future__ import annotations

import itertools
import json
import os
import select
import signal
import subprocess
import sys
import threading

import pytest
from hypothesis import given, settings, strategies as st

from faulty import KillAlways, KillOnce, Slow, SlowAt
from shared import EXAMPLE_DATA, ROOT, examples, kill_all, run_cli

from fstdecode.cli.output import OutputError, json_line, resume_point, text
from fstdecode.run import Line, ProcessRunner, RunError, SerialRunner, ThreadRunner, decode_lines, runner_for
from fstdecode.run.base import ChunkSizer, LineFeed
from fstdecode.run.lines import ShardError, count_lines, parse_shard, shard_span

EXAMPLE_LINES = (EXAMPLE_DATA / "input.txt").read_text(encoding="utf-8").splitlines()
#: 120 lines: the example's sentences, an empty line, an unknown word, a reserved token (a
#: per-line error that must not stop the batch), so every kind of result crosses the pipes.
LINES = list(itertools.islice(itertools.cycle(EXAMPLE_LINES + ["", "xyzzy plugh", "das <s>"]), 120))


def serial(decoder, lines=LINES) -> list[str]:
    return [text(r) for r in decode_lines(decoder, lines)]


@pytest.fixture(scope="module")
def stack_decoder(example_model):
    from fstdecode.decoder import Decoder

    return Decoder(example_model, "stack")


@pytest.fixture(scope="module")
def expected(stack_decoder) -> list[str]:
    out = serial(stack_decoder)
    assert len(out) == len(LINES) and out[LINES.index("das <s>")] == "das <s>"  # the failed line passes through
    return out


# chunk sizes: 1 (a task per line), 7 (does not divide 120: a short last chunk), 200 (one chunk).
@pytest.mark.parametrize("chunk_size", [1, 7, 200])
def test_pool_equals_serial(stack_decoder, expected, chunk_size):
    results = list(decode_lines(stack_decoder, LINES, ProcessRunner(2, chunk_size=chunk_size)))
    assert [r.id for r in results] == list(range(len(LINES)))
    assert [text(r) for r in results] == expected


def test_pool_redoes_the_chunk_of_a_worker_killed_mid_chunk(stack_decoder, expected, tmp_path, caplog):
    marker = tmp_path / "killed"
    out = [text(r) for r in decode_lines(KillOnce(stack_decoder, 37, marker), LINES, ProcessRunner(2, chunk_size=4))]
    assert marker.exists()  # a worker did die at line id 37, in the middle of chunk 36-39
    assert out == expected
    assert "input lines 37-40: a worker died (killed by SIGKILL); decoding them again on a fresh worker (retry 1 of 2)" in caplog.text


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_pool_survives_a_worker_killed_from_outside(stack_decoder, expected):
    runner = ProcessRunner(2, chunk_size=3)
    out, killed = [], []
    for result in decode_lines(Slow(stack_decoder, 0.01), LINES, runner):
        out.append(text(result))
        if len(out) == 10:  # both workers are busy on later chunks by now
            killed = runner.pids[:1]
            os.kill(killed[0], signal.SIGKILL)
    assert killed and killed[0] not in runner.pids  # cleared at the end; replaced during the run
    assert out == expected


#: A parent of two workers that prints their ids after its first line, then waits for input that never comes.
_PARENT = """
import time
from fstdecode import Decoder, load_model
from fstdecode.run import ProcessRunner, decode_lines

def lines():
    yield "das muss"
    time.sleep(60)

runner = ProcessRunner(2, chunk_size=1)
for result in decode_lines(Decoder(load_model(), "stack"), lines(), runner):
    print(*runner.pids, flush=True)
"""


@pytest.mark.slow
def test_workers_end_with_a_parent_killed_outright():
    """A parent that SIGKILL ends has no time to stop its workers: they end by themselves (they once
    waited for good, each holding its own copy of the parent's end of its pipe)."""
    import psutil

    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, cwd=ROOT)
    workers = []
    try:
        workers = [psutil.Process(int(pid)) for pid in parent.stdout.readline().split()]
        assert len(workers) == 2
        parent.kill()
        parent.wait(timeout=10)
        gone, alive = psutil.wait_procs(workers, timeout=5)
        assert not alive, f"workers left running: {alive}"
    finally:
        kill_all([parent, *workers])
        parent.wait(timeout=10)


def test_pool_fails_clearly_on_a_chunk_that_always_kills_its_worker(stack_decoder):
    # Line id 37 (0-based) falls in chunk 9 of 4 lines, ids 36-39: input lines 37-40 as a user counts them.
    with pytest.raises(RunError, match=r"input lines 37-40: a worker died decoding them 3 times \(killed by SIGKILL"):
        list(decode_lines(KillAlways(stack_decoder, 37), LINES, ProcessRunner(2, chunk_size=4, retries=2)))


class _Jumbled:
    """Decodes as the example decoder, but slower on some lines, so chunks finish out of order."""

    def __init__(self, decoder, delays) -> None:
        self.decoder, self.delays = decoder, delays

    def decode(self, text: str, id: int = 0):
        import time

        time.sleep(self.delays[id % len(self.delays)])
        return self.decoder.decode(text, id=id)


@settings(max_examples=examples(8), deadline=None)
@given(
    n=st.integers(0, 40),
    workers=st.integers(1, 3),
    chunk_size=st.integers(1, 6),
    delays=st.lists(st.sampled_from([0.0, 0.0, 0.003, 0.01]), min_size=1, max_size=7),
)
@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_pool_order_and_count_whatever_finishes_first(stack_decoder, expected, n, workers, chunk_size, delays):
    out = [text(r) for r in decode_lines(_Jumbled(stack_decoder, delays), LINES[:n], ProcessRunner(workers, chunk_size))]
    assert out == expected[:n]


@settings(max_examples=examples(8), deadline=None)
@given(n=st.integers(0, 40), threads=st.integers(2, 4),
       delays=st.lists(st.sampled_from([0.0, 0.0, 0.003, 0.01]), min_size=1, max_size=7))
def test_threads_keep_order_and_count_whatever_finishes_first(stack_decoder, expected, n, threads, delays):
    """Threads sharing one decoder: N lines in, N results out, in order, each the serial run's."""
    out = [text(r) for r in decode_lines(_Jumbled(stack_decoder, delays), LINES[:n], ThreadRunner(threads))]
    assert out == expected[:n]


def test_threads_equal_serial_and_count_progress(stack_decoder, expected):
    """The whole input on two threads: the serial run's results; each line counted before it is written."""
    results, calls, seen = progress_trace(stack_decoder, ThreadRunner(2))
    assert [r.id for r in results] == list(range(len(LINES))) and [text(r) for r in results] == expected
    assert calls == [1] * len(LINES) and all(done >= k + 1 for k, done in enumerate(seen))


def test_threads_raise_an_input_error_after_the_lines_before_it(stack_decoder, expected):
    def failing():
        yield from (Line(k, LINES[k]) for k in range(3))
        raise ValueError("the input broke")

    got = []
    with pytest.raises(ValueError, match="the input broke"):
        for result in ThreadRunner(2).map(stack_decoder, failing()):
            got.append(text(result))
    assert got == expected[:3]


def test_threads_read_the_input_lazily(stack_decoder):
    """At most threads * WINDOW_PER_WORKER lines in flight, even of an endless input."""
    read = itertools.count()

    def endless():
        for k in itertools.count():
            next(read)
            yield Line(k, EXAMPLE_LINES[k % len(EXAMPLE_LINES)])

    results = decode_lines(stack_decoder, endless(), ThreadRunner(2))
    first = list(itertools.islice(results, 3))
    results.close()
    assert [r.id for r in first] == [0, 1, 2]
    assert next(read) <= 2 * 4 + 3 + 1


def test_threads_share_the_core_table_of_a_moses_nbest_decoder():
    """The n-best lines the core writes, on threads: the serial run's, byte for byte."""
    from fstdecode.decoder import Decoder
    from fstdecode.model.model import load_model
    from fstdecode.search.moses_nbest import MosesNbest
    from fstdecode.search.stack import StackOptions

    model = load_model(EXAMPLE_DATA / "moses.ini", distortion_semantics="moses")
    decoder = Decoder(model, "stack", StackOptions(nbest=20, moses_nbest_pruning=True), moses_nbest=MosesNbest())
    lines = [line for line in LINES if "<s>" not in line]
    one = [r.nbest_text for r in decode_lines(decoder, lines)]
    two = [r.nbest_text for r in decode_lines(decoder, lines, ThreadRunner(3))]
    assert one == two and sum(t is not None for t in one) > len(lines) // 2


def test_pool_reads_the_input_lazily(stack_decoder):
    """A window of chunks in flight, not the whole input: the pool has read a bounded number of
    lines when the first result comes out, even of an endless input."""
    read = itertools.count()

    def endless():
        for k in itertools.count():
            next(read)
            yield Line(k, EXAMPLE_LINES[k % len(EXAMPLE_LINES)])

    results = decode_lines(stack_decoder, endless(), ProcessRunner(2, chunk_size=5))
    first = list(itertools.islice(results, 3))
    results.close()
    assert [r.id for r in first] == [0, 1, 2]
    assert next(read) <= 2 * 4 * 5 + 5 + 1  # workers * WINDOW_PER_WORKER chunks of 5, and the one being read


def progress_trace(decoder, runner, lines=LINES):
    """The results, the ``progress`` calls, and for each result the lines reported done when it came out."""
    calls: list[int] = []
    results, seen = [], []
    for result in decode_lines(decoder, lines, runner, progress=calls.append):
        results.append(result)
        seen.append(sum(calls))
    return results, calls, seen


@pytest.mark.parametrize("make", [SerialRunner, lambda: ProcessRunner(2, chunk_size=7)], ids=["serial", "pool"])
def test_progress_counts_each_chunk_as_it_finishes(stack_decoder, expected, make):
    results, calls, seen = progress_trace(stack_decoder, make())
    assert [text(r) for r in results] == expected
    assert sum(calls) == len(LINES)
    assert all(done >= k + 1 for k, done in enumerate(seen))  # a line is counted before it is written
    if isinstance(make(), ProcessRunner):
        assert sorted(calls) == sorted([7] * (len(LINES) // 7) + [len(LINES) % 7])  # one call per chunk
    else:
        assert calls == [1] * len(LINES)


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_pool_progress_runs_ahead_of_a_slow_first_chunk(stack_decoder, expected):
    """Counted by completion, not by writing: while line 0 is slow, the later chunks finish and count."""
    results, calls, seen = progress_trace(SlowAt(stack_decoder, 0, 0.5), ProcessRunner(2, chunk_size=2))
    assert [text(r) for r in results] == expected
    assert seen[0] > 2 and calls[-1] == 2 and sum(calls) == len(LINES)


def test_chunk_sizer_doubles_up_to_the_target_then_follows_the_rate():
    # 1/256 s a line (exact in binary): 0.5 s is 128 lines.
    sizer, sizes = ChunkSizer(0.5, first=1, most=1024), []
    for _ in range(10):
        sizer.observe(sizer.size, sizer.size / 256)
        sizes.append(sizer.size)
    assert sizes == [2, 4, 8, 16, 32, 64, 128, 128, 128, 128]
    # Eight times slower (1/32 s a line): the size falls, never below the new target of 16, and reaches it.
    falling = []
    for _ in range(12):
        sizer.observe(sizer.size, sizer.size / 32)
        falling.append(sizer.size)
    assert falling == sorted(falling, reverse=True) and falling[0] < 128 and falling[-1] == 16
    # Lines that take no measurable time: the size doubles to `most`, and stays there.
    fast = ChunkSizer(0.5, first=3, most=20)
    for _ in range(5):
        fast.observe(fast.size, 0.0)
    assert fast.size == 20
    fast.observe(0, 100.0)  # an empty chunk says nothing
    assert fast.size == 20
    for bad in [dict(target=0), dict(target=1, first=0), dict(target=1, first=5, most=4)]:
        with pytest.raises(RunError):
            ChunkSizer(**bad)


def test_line_feed_cuts_a_fast_input_into_full_chunks_of_the_size_asked_for():
    lines = [Line(k, str(k)) for k in range(20)]
    feed = LineFeed(lines)
    got = [feed.take(size, timeout=30) for size in (2, 4, 8, 8)]
    assert [len(c) for c in got] == [2, 4, 8, 6]  # the last one short: the input ended
    assert [ln for c in got for ln in c] == lines
    assert feed.take(8) is None and feed.take(8) is None  # over, and stays over


def test_line_feed_sends_what_it_has_when_the_input_pauses():
    """A line typed into a pipe must not wait for its chunk to fill: a paused input gives a short
    chunk (the timeout of 30 s only bounds a hang), and a later line comes in the next one."""
    typed = threading.Event()

    def slow():
        yield Line(0, "first")
        typed.wait(60)  # the user reads the answer before typing on
        yield Line(1, "second")

    feed = LineFeed(slow())
    assert feed.take(16, timeout=30) == (Line(0, "first"),)
    assert feed.take(16, timeout=0) == ()  # nothing more yet, and no wait asked for
    typed.set()
    assert feed.take(16, timeout=30) == (Line(1, "second"),)
    assert feed.take(16, timeout=30) is None
    feed.close()


def test_line_feed_raises_an_input_error_after_the_lines_before_it():
    def failing():
        yield Line(0, "a")
        raise OSError("the disk went away")

    feed = LineFeed(failing())
    assert feed.take(4, timeout=30) == (Line(0, "a"),)
    with pytest.raises(OSError, match="the disk went away"):
        feed.take(4, timeout=30)


def test_serial_and_bad_settings(stack_decoder, expected):
    assert [text(r) for r in SerialRunner().map(stack_decoder, [Line(k, s) for k, s in enumerate(LINES)])] == expected
    for make, flag in [(lambda: ProcessRunner(0), "--workers"), (lambda: ProcessRunner(2, retries=-1), "--retries"),
                       (lambda: ProcessRunner(2, chunk_size=0), "--chunk-size")]:
        with pytest.raises(RunError, match=flag):
            make()
    assert isinstance(runner_for(1), SerialRunner) and isinstance(runner_for(3), ProcessRunner)
    assert isinstance(runner_for(threads=2), ThreadRunner)
    with pytest.raises(RunError, match="--workers .* or --threads"):
        runner_for(2, threads=2)
    with pytest.raises(RunError, match="--chunk-size"):
        runner_for(threads=2, chunk_size=4)
    with pytest.raises(RunError, match="--threads"):
        ThreadRunner(0)
    with pytest.raises(RunError, match="--cluster takes local:N"):
        runner_for(cluster="slurm:4")
    with pytest.raises(RunError, match="need --cluster or --scheduler"):
        runner_for(2, worker_memory="1GB")


# --- shards ------------------------------------------------------------------------------------


@given(total=st.integers(0, 500), n=st.integers(1, 40))
def test_shards_tile_the_input_in_order(total, n):
    spans = [shard_span(total, (i, n)) for i in range(1, n + 1)]
    assert [k for a, b in spans for k in range(a, b)] == list(range(total))
    sizes = [b - a for a, b in spans]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("bad", ["0/4", "5/4", "2", "a/b", "1/0", "-1/3"])
def test_shard_syntax(bad):
    with pytest.raises(ShardError, match="--shard takes I/N"):
        parse_shard(bad)


# an empty file, a last line with and without an end of line, CRLF.
@pytest.mark.parametrize("data, lines", [(b"", 0), (b"a\n", 1), (b"a\nb", 2), (b"a\r\nb\r\n", 2), (b"\n\n", 2)])
def test_count_lines(tmp_path, data, lines):
    path = tmp_path / "in.txt"
    path.write_bytes(data)
    with open(path, "rb") as f:
        f.read(1)
        f.seek(0)
        assert count_lines(f) == lines
        assert f.read() == data  # rewound


def test_count_lines_of_a_pipe_is_unknown():
    r, w = os.pipe()
    with os.fdopen(r, "rb") as f, os.fdopen(w, "wb"):
        assert count_lines(f) is None


# --- resume ------------------------------------------------------------------------------------


def test_resume_point_text_and_json(tmp_path):
    out = tmp_path / "out"
    assert resume_point(str(out), "text") == (0, 0)  # no file yet
    out.write_bytes(b"one\ntwo\nthr")
    assert resume_point(str(out), "text") == (2, 8)  # the cut third line goes
    out.write_bytes(b'{"id": 0}\n{"id": 1}\n')
    assert resume_point(str(out), "json") == (2, 20)


def test_resume_point_nbest_redoes_the_last_group(tmp_path):
    out = tmp_path / "out"
    out.write_bytes(b"0 ||| a |||\n0 ||| b |||\n1 ||| c |||\n1 ||| d")
    assert resume_point(str(out), "nbest") == (1, 24)  # id 1 may have been cut between its lines
    out.write_bytes(b"garbage\n")
    with pytest.raises(Exception, match=r":1: not an n-best line"):
        resume_point(str(out), "nbest")


# Each a file that --resume must not take for this run's results: the id of the line named is wrong,
# or the line is no result of the format at all.
@pytest.mark.parametrize("fmt, data, first_id, line", [
    ("json", b'{"id": 0}\n{"id": 1}\n', 5, 1),  # a whole run's output, resumed as shard 2 (ids from 5)
    ("json", b'{"id": 0}\n{"id": 2}\n', 0, 2),  # a line missing
    ("json", b'{"id": 0}\nnot json\n', 0, 2),  # a foreign line
    ("json", b'{"id": 0}\n[0]\n', 0, 2),  # JSON, but not a result
    ("json", b'{"id": true}\n', 1, 1),  # JSON's true is no line id, though Python's True == 1
    ("nbest", b"0 ||| a |||\n2 ||| b |||\n", 0, 2),  # a group missing
    ("nbest", b"3 ||| a |||\n", 0, 1),  # another shard's output
])
def test_resume_point_refuses_results_of_another_run(tmp_path, fmt, data, first_id, line):
    out = tmp_path / "out"
    out.write_bytes(data)
    with pytest.raises(OutputError, match=rf"^{out}:{line}: "):
        resume_point(str(out), fmt, first_id)


def test_resume_point_checks_the_ids_of_a_shard(tmp_path):
    out = tmp_path / "out"
    out.write_bytes(b'{"id": 5}\n{"id": 6}\n{"id": 7')  # shard output from line id 5, cut in its third line
    assert resume_point(str(out), "json", first_id=5) == (2, 20)
    out.write_bytes(b"5 ||| a |||\n5 ||| b |||\n6 ||| c |||\n")
    assert resume_point(str(out), "nbest", first_id=5) == (1, 24)


# --- the CLI -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def input_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("in") / "input.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def cli(args, input_file):
    """``fstdecode decode --method stack ARGS < input_file`` (stdin a file, as --shard needs); str output."""
    with open(input_file, "rb") as f:
        proc = subprocess.run(
            [sys.executable, "-m", "fstdecode", "decode", "--method", "stack", *args],
            stdin=f, capture_output=True, cwd=ROOT, env={**os.environ, "PYTHONUTF8": "1"}, timeout=300,
        )
    proc.stdout, proc.stderr = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    return proc


@pytest.fixture(scope="module")
def full_outputs(input_file):
    outs = {fmt: cli(["--format", fmt], input_file).stdout for fmt in ("text", "json", "nbest")}
    assert len(outs["text"].splitlines()) == len(LINES)
    return outs


def _no_seconds(out: str, fmt: str) -> str:
    if fmt != "json":
        return out
    rows = [json.loads(x) for x in out.splitlines()]
    for row in rows:
        row.get("stats", {}).pop("seconds", None)
    return "\n".join(json.dumps(row) for row in rows)


@pytest.mark.slow
def test_cli_shards_concatenate_to_the_whole_run(input_file, full_outputs):
    parts = []
    for i in range(1, 4):
        proc = cli(["--format", "nbest", "--shard", f"{i}/3"], input_file)
        assert proc.returncode == 0, proc.stderr
        parts.append(proc.stdout)
    assert [len({ln.split(" ||| ")[0] for ln in p.splitlines()}) for p in parts] == [40, 40, 40]
    assert "".join(parts) == full_outputs["nbest"]


def test_cli_shard_needs_a_file():
    proc = run_cli(["decode", "--shard", "1/2"], "das\n")  # stdin is a pipe here
    assert proc.returncode == 2 and "--shard needs the input as a file" in proc.stderr
    assert "Traceback" not in proc.stderr


# text and json: one line per result; nbest: a group of lines per result.
@pytest.mark.parametrize("fmt", ["text", pytest.param("json", marks=pytest.mark.slow), "nbest"])  # json: as text, one line a result
@pytest.mark.slow
def test_cli_resume_after_a_cut_write_equals_the_whole_run(input_file, full_outputs, tmp_path, fmt):
    whole = full_outputs[fmt].encode()
    for cut in (0, len(whole) // 3, len(whole) // 2 + 5, len(whole)):  # nothing, mid-line cuts, everything
        out = tmp_path / f"out.{fmt}"
        out.write_bytes(whole[:cut])
        proc = cli(["--format", fmt, "--workers", "2", "--resume", str(out)], input_file)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == ""
        assert _no_seconds(out.read_text(encoding="utf-8"), fmt) == _no_seconds(full_outputs[fmt], fmt)


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_cli_resume_of_a_shard(input_file, full_outputs, tmp_path):
    """--resume with --shard: OUT is the shard's output; resumed, it is the shard's part of the whole."""
    whole = full_outputs["text"].splitlines(keepends=True)
    out = tmp_path / "out.2"
    out.write_text("".join(whole[40:47]) + whole[47][:3], encoding="utf-8")  # 7 lines done, the 8th cut
    proc = cli(["--shard", "2/3", "--resume", str(out)], input_file)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text(encoding="utf-8") == "".join(whole[40:80])


def test_cli_resume_refuses_a_longer_file(input_file, tmp_path):
    out = tmp_path / "out"
    out.write_text("x\n" * (len(LINES) + 1))
    proc = cli(["--resume", str(out)], input_file)
    assert proc.returncode == 2 and "more than the 120 input lines" in proc.stderr


def test_cli_resume_refuses_a_foreign_file(input_file, full_outputs, tmp_path):
    """A JSON output whose second line is another run's (an id out of sequence) is refused, naming
    the file and line, and left as it was."""
    rows = full_outputs["json"].splitlines(keepends=True)
    out = tmp_path / "out.json"
    out.write_text(rows[0] + rows[2], encoding="utf-8")
    proc = cli(["--format", "json", "--resume", str(out)], input_file)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{out}:2: holds the result of line id 2, where this run's output has id 1" in proc.stderr
    assert out.read_text(encoding="utf-8") == rows[0] + rows[2]


def answers_as_typed(args: list[str], lines: list[str], timeout: float = 60) -> tuple[list[str], list[str], str]:
    """Run ``fstdecode decode --method stack ARGS`` on a pipe written one line at a time, each
    after the answer to the one before: the answers as they came (stdin still open), then the
    output left once stdin is closed, and stderr. An answer not there within ``timeout`` seconds
    (a bound on a hang, not a speed check) ends the typing."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "fstdecode", "decode", "--method", "stack", *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        env={**os.environ, "PYTHONUTF8": "1"},
    )
    answers = []
    try:
        for line in lines:
            proc.stdin.write(line.encode("utf-8") + b"\n")
            proc.stdin.flush()
            if not select.select([proc.stdout], [], [], timeout)[0]:
                break
            answers.append(proc.stdout.readline().decode("utf-8").rstrip("\n"))
        proc.stdin.close()
        rest = proc.stdout.read().decode("utf-8").splitlines()
        err = proc.stderr.read().decode("utf-8")
        assert proc.wait(timeout=60) == 0, err
    finally:
        proc.kill()
        proc.wait()
    return answers, rest, err


@pytest.mark.parametrize("flags", [["--workers", "2"], ["--threads", "2"]], ids=["processes", "threads"])
def test_cli_pool_answers_a_slow_input_line_by_line(expected, flags):
    """A user typing into a pipe: each line is answered while the pipe stays open, though a chunk
    holds 16 lines (the pool sends what it has when no new line comes; the threads take a line a
    task); then nothing is left over, and the answers are the serial run's."""
    typed = LINES[:3]
    answers, rest, _ = answers_as_typed(flags, typed)
    assert answers == expected[:3] and rest == []


@pytest.mark.slow
def test_cli_workers_and_threads(input_file, full_outputs):
    """--workers (processes) and --threads (threads of one process) give the serial run's output;
    --chunk-size is the processes' (and Dask's), refused with --threads."""
    for flags in (["--workers", "2", "--chunk-size", "3"], ["--threads", "2"], ["--threads", "all"]):
        proc = cli(flags, input_file)
        assert proc.returncode == 0 and proc.stdout == full_outputs["text"], (flags, proc.stderr)
    refused = cli(["--threads", "2", "--chunk-size", "3"], input_file)
    assert refused.returncode == 2 and "--chunk-size" in refused.stderr


@pytest.mark.slow
def test_cli_progress_bar(input_file, full_outputs):
    shown = cli(["--progress"], input_file)
    assert shown.stdout == full_outputs["text"]
    assert f"{len(LINES)}/{len(LINES)}" in shown.stderr  # tqdm's count of lines written, of the known total
    hidden = cli(["--no-progress"], input_file)
    assert hidden.stderr == cli([], input_file).stderr and f"/{len(LINES)}" not in hidden.stderr


@pytest.mark.slow
def test_cli_without_dask_says_what_to_install(tmp_path):
    """A ``distributed`` that fails to import, as when the cluster extra is not installed."""
    (tmp_path / "distributed").mkdir()
    (tmp_path / "distributed" / "__init__.py").write_text("raise ImportError(\"No module named 'distributed'\")\n")
    for flag in (["--cluster", "local:2"], ["--scheduler", "tcp://127.0.0.1:8786"]):
        proc = run_cli(["decode", *flag], "das\n", PYTHONPATH=str(tmp_path))
        assert proc.returncode == 2, proc.stderr
        assert "pip install 'fstdecode[cluster]'" in proc.stderr and "Traceback" not in proc.stderr


# each a flag combination that makes no sense, refused before anything runs.
@pytest.mark.parametrize("args, message", [
    (["--cluster", "local:2", "--workers", "2"], "--workers and --threads run locally"),
    (["--cluster", "local:2", "--threads", "2"], "--workers and --threads run locally"),
    (["--workers", "2", "--threads", "2"], "not both"),
    (["--cluster", "local:2", "--scheduler", "tcp://x:1"], "not both"),
    (["--cluster", "remote"], "--cluster takes local:N"),
    (["--worker-memory", "1GB"], "need --cluster or --scheduler"),
    (["--chunk-size", "0"], "--chunk-size must be >= 1"),
    (["--retries", "-1"], "--retries must be >= 0"),
    (["--shard", "3/2"], "--shard takes I/N"),
    (["--cluster", "local:0"], "--cluster local:N takes N >= 1 worker processes, got local:0"),  # not --workers'
    (["--cluster", "local:-1"], "--cluster takes local:N"),
    (["--cluster", "local:x"], "--cluster takes local:N"),
    (["--cluster", "foo:2"], "--cluster takes local:N"),
])
@pytest.mark.slow
def test_cli_bad_run_flags(args, message):
    proc = run_cli(["decode", *args], "das\n")
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


# Each a --scheduler that is no scheduler: refused in one line, before any connection is tried.
@pytest.mark.parametrize("target, message", [
    ("README.md", "--scheduler README.md: not a Dask scheduler file"),  # a file, but not the JSON of one
    ("/no/such/dir/sched.json", "no such scheduler file (no folder /no/such/dir)"),  # was: "missing port number"
    # The address forms: in the slow set (each a process that imports Dask, ~0.4 s).
    pytest.param("tcp://", "--scheduler tcp://: not a scheduler address", marks=pytest.mark.slow),
    pytest.param("127.0.0.1:99999", "port in 1..65535", marks=pytest.mark.slow),  # was tried for 30 s
    pytest.param("http://127.0.0.1:8786", "unknown scheme 'http'", marks=pytest.mark.slow),
    ("", "--scheduler takes a scheduler's address"),
])
@pytest.mark.slow
def test_cli_bad_scheduler(target, message):
    pytest.importorskip("distributed", reason="--scheduler needs the cluster extra")
    proc = run_cli(["decode", "--scheduler", target], "das\n", timeout=20)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
