"""What a new user and hostile input find: the defects of the redesign issue, one test each.

Each test runs the real CLI (``python -m fstdecode``) or the public API on
the built-in example and asserts behaviour a Moses or OpenFst user relies
on: exit statuses, one output line per input line, messages on stderr,
valid JSON. Expected values come from the rules, never from a run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from fstdecode import Decoder, load_model
from fstdecode.decoder import DecodeError
from fstdecode.search.base import METHODS, OptionsError
from shared import EXAMPLE_DATA, kill_all

SLIDES = "das muss unsere sorge gleichermaßen sein"
SLIDES_TGT = "this must also be our concern"  # Chang & Collins' slides


def fstdecode(args: list[str], stdin: bytes = b"", timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUTF8="1")
    return subprocess.run(
        [sys.executable, "-m", "fstdecode", *args], input=stdin, capture_output=True, env=env, timeout=timeout
    )


@pytest.fixture(scope="module")
def model():
    return load_model()


# 1 and 7: every method has a default budget; over it, a line says so and still gets a derivation.
@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_has_a_finite_default_budget(method):
    assert METHODS[method].options().max_states > 0


def test_over_budget_line_keeps_a_real_translation_and_says_so():
    proc = fstdecode(["decode", "--method", "dp", "--max-states", "5", "--format", "json"], (SLIDES + "\n").encode())
    assert proc.returncode == 0
    obj = json.loads(proc.stdout)
    assert obj["optimal"] is False
    assert "budget" in obj["reason"]
    assert obj["translation"] == SLIDES_TGT  # the stack decoder's best: the slides' translation
    assert "line 1: over budget" in proc.stderr.decode()


@pytest.mark.parametrize("method", [name for name, m in sorted(METHODS.items()) if m.exact])
def test_a_proven_optimum_carries_its_certificate(model, method):
    """An exact method's line: an upper bound on every derivation's score, equal to the best's."""
    result = Decoder(model, method).decode(SLIDES)
    assert result.optimal
    assert result.upper_bound == pytest.approx(result.best.score, abs=1e-6)
    assert result.gap == pytest.approx(0.0, abs=1e-9)


def test_no_certificate_without_a_proof(model):
    """A heuristic's line, and an exact method's line over budget, claim no bound."""
    for result in (Decoder(model, "stack").decode(SLIDES), Decoder(model, "dp", max_states=5).decode(SLIDES)):
        assert not result.optimal
        assert result.upper_bound is None and result.gap is None
    proc = fstdecode(["decode", "--method", "dp", "--format", "json"], (SLIDES + "\n").encode())
    obj = json.loads(proc.stdout)
    assert obj["optimal"] is True and obj["gap"] == 0.0
    assert obj["upper_bound"] == pytest.approx(obj["score"], abs=1e-6)


def test_over_budget_text_line_is_reported_on_stderr():
    proc = fstdecode(["decode", "--method", "dp", "--max-states", "5"], (SLIDES + "\n").encode())
    assert proc.returncode == 0
    assert proc.stdout.decode().strip() == SLIDES_TGT  # not the source copied through
    assert "--max-states" in proc.stderr.decode()


def test_stack_over_budget_still_translates_and_says_so():
    # The stack decoder over a 5-hypothesis budget completes its best hypothesis by minimal
    # steps (the line's budget bounds its time): a translation, not the source copied through.
    proc = fstdecode(["decode", "--method", "stack", "--max-states", "5"], (SLIDES + "\n").encode())
    assert proc.returncode == 0
    out = proc.stdout.decode().strip()
    assert out and out != SLIDES and "das" not in out.split()
    assert "line 1: over budget: more than 5 hypotheses (--max-states); the best derivation found is not proven optimal" in proc.stderr.decode()


def test_exhaustive_over_budget_returns_its_best_so_far(model):
    result = Decoder(model, "exhaustive", max_states=50).decode(SLIDES)
    assert result.best is not None and result.optimal is False
    assert "50 partial derivations" in result.reason


def test_bounded_over_budget_returns_the_beam_lower_bound(model):
    result = Decoder(model, "bounded", max_states=120).decode(SLIDES)
    assert result.optimal is False and result.best is not None


# 2: options are validated in the options dataclasses, for the API as for the CLI.
@pytest.mark.parametrize("method", ["beam", "stack"])
@pytest.mark.parametrize("size", [0, -3])
def test_api_rejects_a_bad_beam_at_once(model, method, size):
    with pytest.raises(OptionsError, match="beam_size .*>= 1"):
        Decoder(model, method, beam_size=size)


@pytest.mark.parametrize(
    "values",
    [
        {"beam_threshold": float("nan")},  # not finite
        {"beam_threshold": -1.0},  # below its minimum
        {"heuristic": "best"},  # not a choice
        {"nbest": 0},
        {"max_states": 0},
        {"beam_size": 2.5},  # not an integer
        {"beam_size": True},  # a bool is not a size
    ],
)
def test_api_rejects_bad_beam_options(model, values):
    with pytest.raises(OptionsError):
        Decoder(model, "beam", **values)


def test_cli_rejects_the_same_bad_beam_with_the_same_words():
    proc = fstdecode(["decode", "--method", "beam", "--beam-size", "0"], b"das\n")
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith("fstdecode: error: beam_size (--beam-size) must be >= 1")
    assert b"Traceback" not in proc.stderr


def test_a_flag_of_another_method_names_the_methods_that_take_it():
    proc = fstdecode(["decode", "--method", "dp", "--early-pruning"], b"das\n")
    assert proc.returncode == 2
    assert "--early-pruning needs --method stack, not dp" in proc.stderr.decode()


# 3: non-finite weights.
@pytest.mark.parametrize("weight", ["lm=nan", "lm=inf", "distortion=-inf", "tm=1,nan"])
@pytest.mark.slow
def test_non_finite_weights_are_refused(weight):
    proc = fstdecode(["decode", "--weight", weight], b"das muss\n")
    assert proc.returncode == 2
    assert b"Traceback" not in proc.stderr and proc.stdout == b""


# 4: coverage and exhaustive stop at their budget on a long sentence, with a result.
@pytest.mark.parametrize("method", ["coverage", "exhaustive"])
@pytest.mark.slow
def test_exponential_methods_stop_on_a_long_sentence(method):
    line = " ".join([SLIDES] * 8)  # 48 words
    proc = fstdecode(["decode", "--method", method, "--max-states", "20000", "--format", "json"], (line + "\n").encode())
    assert proc.returncode == 0
    obj = json.loads(proc.stdout)
    assert obj["optimal"] is False and "budget" in obj["reason"]
    assert len(obj["translation"].split()) >= 40


# 5 and 14: reserved tokens are refused per line; the batch goes on.
@pytest.mark.parametrize("bad", ["das muss ||| sein", "<s> das muss", "das muss </s>"])
@pytest.mark.slow
def test_reserved_tokens_fail_their_line_only(bad):
    proc = fstdecode(["decode", "--format", "nbest"], f"{bad}\n{SLIDES}\n".encode())
    assert proc.returncode == 0
    lines = proc.stdout.decode().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("0 ||| ") and lines[0].count("|||") == 5  # no extra separator
    assert lines[1].startswith(f"1 ||| {SLIDES_TGT} |||")
    assert "line 1: " in proc.stderr.decode() and "reserved" in proc.stderr.decode()


# 6: one invalid UTF-8 line fails alone.
@pytest.mark.parametrize("fmt", ["text", "json", "nbest"])
@pytest.mark.slow
def test_invalid_utf8_line_is_reported_and_the_batch_goes_on(fmt):
    data = b"das muss\n\xff\xfe sein\n" + SLIDES.encode() + b"\n"
    proc = fstdecode(["decode", "--format", fmt], data)
    assert proc.returncode == 0
    out = proc.stdout.decode().splitlines()
    assert len(out) == 3
    assert "<stdin>:2: invalid UTF-8" in proc.stderr.decode()
    assert SLIDES_TGT in out[2]
    if fmt == "json":
        assert "invalid UTF-8" in json.loads(out[1])["error"]


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.slow
def test_n_lines_in_n_lines_out_in_order(workers):
    lines = [SLIDES, "", "xyzzy plugh", "das muss\r", "\xff", "<s>", "das"] * 3
    data = "\n".join(lines).encode("utf-8", "surrogateescape").replace("\xff".encode(), b"\xff") + b"\n"
    proc = fstdecode(["decode", "--format", "json", "--workers", workers], data)
    assert proc.returncode == 0
    ids = [json.loads(x)["id"] for x in proc.stdout.decode().splitlines()]
    assert ids == list(range(len(lines)))


# 8: Ctrl-C exits 130 without a traceback.
def _as_at_a_terminal() -> None:
    """Ctrl-C at its default in the child, as in a terminal's foreground job: a test run started
    in the background (``cmd &`` without job control) ignores SIGINT, and children inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_sigint_exits_130_quietly():
    env = dict(os.environ, PYTHONUTF8="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fstdecode", "decode"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        preexec_fn=_as_at_a_terminal,
    )
    proc.stdin.write(b"das muss\n")
    proc.stdin.flush()
    line = proc.stdout.readline()  # the first line is done: the CLI waits for more input
    assert line.strip() == b"this must"
    proc.send_signal(signal.SIGINT)
    try:  # as at a terminal: the input stays open while Ctrl-C is handled
        proc.wait(timeout=30)
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err


# Issue 38, defect 4: SIGTERM or SIGHUP to a run of workers (processes, or threads) stops them, keeps the
# lines done, exits 128 + N.
#: Eight words: the exhaustive oracle needs seconds on them, so a worker is mid-decode when the signal comes.
EIGHT = "das muss unsere sorge gleichermaßen sein das muss"
QUICK = ["das muss", "unsere sorge"]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("command", [
    ["decode", "--method", "exhaustive", "--workers", "2", "--chunk-size", "1"],
    ["moses", "-f", str(EXAMPLE_DATA / "moses.ini"), "-threads", "2"],
], ids=["decode", "moses"])
def test_a_signal_stops_the_workers_and_keeps_the_lines_done_in_order(command, sig):
    import psutil

    proc = subprocess.Popen([sys.executable, "-m", "fstdecode", *command], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, PYTHONUTF8="1"))
    workers: list[psutil.Process] = []
    try:
        proc.stdin.write("".join(line + "\n" for line in QUICK).encode())
        proc.stdin.flush()
        first = [proc.stdout.readline() for _ in QUICK]  # decoded: the run is on, its input still open
        workers = psutil.Process(proc.pid).children()
        # decode --workers 2: two processes; fstdecode moses -threads 2: threads of this one
        assert len(workers) == (2 if command[0] == "decode" else 0), workers
        proc.stdin.write((EIGHT + "\ndas muss\n").encode())  # (exhaustive: a worker decodes it for seconds)
        proc.stdin.flush()
        time.sleep(0.2)
        proc.send_signal(sig)
        proc.wait(timeout=20)
        out, err = first + proc.stdout.read().splitlines(keepends=True), proc.stderr.read().decode()
        assert proc.returncode == 128 + sig, err
        gone, alive = psutil.wait_procs(workers, timeout=5)
        assert not alive, f"workers left running: {alive}"
        expected = _serial_output(command, QUICK + [EIGHT, "das muss"])
        assert out and all(line.endswith(b"\n") for line in out)  # whole lines
        assert out == expected[: len(out)]  # a prefix of the whole run's output, in order
        if command[0] == "decode":
            assert len(out) == len(QUICK)  # the eight words' line was still decoding: not written
        assert f"stopped by {signal.Signals(sig).name}" in err and "Traceback" not in err
    finally:
        kill_all([proc, *workers])
        proc.wait(timeout=10)


def _serial_output(command: list[str], lines: list[str]) -> list[bytes]:
    """The output lines of ``command`` run in this process's way, serially (the exhaustive search
    through the API: as decode writes its text line, the translation)."""
    if command[0] == "decode":
        decoder = Decoder(load_model(), "exhaustive")
        return [(decoder.decode(line).best.translation + "\n").encode() for line in lines[:2]]
    serial = [w for w in command if w not in ("-threads", "2")]
    return fstdecode(serial, "".join(line + "\n" for line in lines).encode()).stdout.splitlines(keepends=True)


# 9: -d -1 means no limit, on the command line too, and a long sentence still ends.
def test_distortion_limit_minus_one_means_no_limit():
    proc = fstdecode(["decode", "-d", "-1", "--method", "stack", "--format", "json"], (SLIDES + "\n").encode())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["translation"] == SLIDES_TGT


def test_distortion_limit_below_minus_one_is_refused():
    proc = fstdecode(["decode", "-d", "-2"], b"das\n")
    assert proc.returncode == 2 and b"Traceback" not in proc.stderr


# 12: the API takes text only.
@pytest.mark.parametrize("bad", [b"das muss", None, 42, ["das", 7]])
def test_decode_refuses_what_is_not_text(model, bad):
    with pytest.raises(DecodeError, match="str"):
        Decoder(model).decode(bad)


# 13: the front door.
@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_top_level_help_is_plain_text_and_version_exists():
    help = fstdecode(["--help"]).stdout.decode()
    assert ":mod:" not in help and "decode" in help
    version = fstdecode(["--version"])
    assert version.returncode == 0 and version.stdout.decode().startswith("fstdecode ")


def test_decode_help_gives_defaults_and_says_stdin():
    help = " ".join(fstdecode(["decode", "--help"]).stdout.decode().split())
    assert "standard input" in help
    assert "else 6" in help  # -d
    assert "lm=1" in help  # the weights
    assert "--max-states" in help and "200,000" in help


# A closed stdout ends quietly.
def test_closed_stdout_ends_quietly():
    env = dict(os.environ, PYTHONUTF8="1")
    cmd = f"{sys.executable} -m fstdecode decode --method stack | head -1"
    data = (SLIDES + "\n") * 200
    proc = subprocess.run(["bash", "-c", cmd], input=data.encode(), capture_output=True, env=env, timeout=120)
    assert proc.stdout.decode().strip() == SLIDES_TGT
    assert b"Traceback" not in proc.stderr and b"Broken" not in proc.stderr
