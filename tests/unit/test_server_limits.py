"""The server's settings, its admission bound, its request checks, its metrics' quantiles, and
``fstdecode serve``'s refusals of bad flags (one line, exit status 2, no traceback)."""

from __future__ import annotations

import socket
import threading

import pytest

from fstdecode.cli.main import main
from fstdecode.server.limits import Admission, Busy, RequestError, RequestLimits, check_nbest, check_text
from fstdecode.server.metrics import quantile
from fstdecode.server.options import Error, ServerOptions

from serving import EXAMPLE_INI


@pytest.mark.parametrize("settings, message", [
    ({"threads": 0}, "--threads must be an integer >= 1"),
    ({"queue_size": -1}, "--queue-size must be an integer >= 0"),
    ({"port": 70000}, "--port must be at most 65535"),
    ({"max_chars": 0}, "--max-chars must be an integer >= 1"),
    ({"client_timeout": 0.0}, "--client-timeout must be a number of seconds > 0"),
    ({"drain_timeout": float("inf")}, "--drain-timeout must be a number of seconds > 0"),
    ({"certfile": "c.pem"}, "--certfile and --keyfile come together"),
    ({"allow_methods": ()}, "--allow-methods names no method"),
    ({"method": "exact", "allow_methods": ("stack",)}, "--method exact is not in --allow-methods (stack)"),
    ({"token": "two words"}, "--token must be non-empty printable ASCII"),
    ({"token": ""}, "--token must be non-empty"),
])
def test_server_options_refuse_out_of_range_settings(settings, message):
    with pytest.raises(Error, match=message.replace("(", r"\(").replace(")", r"\)")):
        ServerOptions(**settings)


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("::1", True), ("localhost", True),
                                             ("0.0.0.0", False), ("192.168.1.2", False), ("example.org", False)])
def test_loopback_hosts(host, loopback):
    assert ServerOptions(host=host).loopback() is loopback


def test_admission_takes_what_fits_and_a_batch_alone():
    gate = Admission(capacity=3, retry_after=2)
    gate.admit(2)
    gate.admit(1)
    with pytest.raises(Busy, match="retry after 2 s") as info:
        gate.admit(1)
    assert info.value.status == 503
    gate.release(3)
    gate.admit(5)  # more than the capacity, into an empty server: a batch of --max-lines always runs
    with pytest.raises(Busy):
        gate.admit(1)
    gate.release(5)
    assert gate.admitted == 0
    with pytest.raises(RuntimeError):  # a release without its admission is a bug, said at once
        gate.release(1)


def test_admission_is_exact_under_threads():
    gate = Admission(capacity=50, retry_after=1)
    taken = []

    def grab():
        for _ in range(100):
            try:
                gate.admit(1)
                taken.append(1)
            except Busy:
                pass

    threads = [threading.Thread(target=grab) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(taken) == 50 == gate.admitted


LIMITS = RequestLimits(max_chars=10, max_lines=2, max_nbest=5, allow_methods=("stack",))


@pytest.mark.parametrize("text, message", [
    (b"das", "must be a string, got bytes"),
    (None, "must be a string, got null"),
    ("das \ud800", "unpaired surrogate at character 4"),
    ("a <s> b", "reserved token(s) <s>"),
    ("a|||b", None),  # not a token of its own: a word like any other
    ("a\t|||\nb", "reserved token(s) |||"),  # split on ASCII whitespace, as the decoder splits
    ("a\u00a0|||", None),  # a no-break space is part of a token (as in Moses)
])
def test_check_text(text, message):
    if message is None:
        assert check_text(text, "text") == text
    else:
        with pytest.raises(RequestError, match=message.replace("(", r"\(").replace(")", r"\)")):
            check_text(text, "text")


@pytest.mark.parametrize("value, ok", [(0, True), (5, True), (6, False), (-1, False), (True, False), (2.0, False)])
def test_check_nbest(value, ok):
    if ok:
        assert check_nbest(value, "nbest", LIMITS) == value
    else:
        with pytest.raises(RequestError):
            check_nbest(value, "nbest", LIMITS)


def test_quantiles_by_nearest_rank():
    values = [float(x) for x in range(1, 101)]
    assert quantile(values, 0.5) == 50 and quantile(values, 0.9) == 90 and quantile(values, 0.99) == 99
    assert quantile([3.0], 0.99) == 3.0
    assert quantile([], 0.5) != quantile([], 0.5)  # NaN: no request yet


@pytest.mark.parametrize("flags, message", [
    (["--port", "70000"], "--port must be at most 65535"),
    (["--threads", "0"], "--threads must be an integer >= 1"),
    (["--threads", "many"], "give a number of workers"),
    (["--allow-methods", "stack,magic"], "--allow-methods: unknown method 'magic'"),
    (["--allow-methods", ""], "--allow-methods names no method; give one or more"),  # (issue 38: an IndexError)
    (["--allow-methods", " , "], "--allow-methods names no method; give one or more"),
    (["--method", "exact", "--allow-methods", "stack"], "--method exact is not in --allow-methods"),
    (["--certfile", "cert.pem"], "--certfile and --keyfile come together"),
    (["--token", "a", "--token-file", "f"], "give --token or --token-file, not both"),
    (["--token-file", "/nonexistent/token"], "--token-file /nonexistent/token: cannot read it"),
    (["--lattice-dir", "/tmp/lattices", "--method", "fst", "--allow-methods", "fst"], "the server writes no lattices"),
    (["--method", "exact", "--allow-methods", "exact", "--beam-size", "5"], "--beam-size: no allowed method takes it"),
    (["--max-chars", "0"], "--max-chars must be an integer >= 1"),
])
def test_bad_flags_are_one_line_and_status_2(flags, message, capsys):
    try:
        status = main(["serve", "-f", EXAMPLE_INI, "--port", "0", *flags])
    except SystemExit as e:  # argparse's own refusals (a value of the wrong type): its usage, then one line
        status = e.code
    assert status == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in last and last.startswith("fstdecode"), last


def test_a_bad_model_and_a_taken_port_stop_the_start(tmp_path, capsys):
    assert main(["serve", "-f", str(tmp_path / "missing.ini"), "--port", "0"]) == 2
    assert "missing.ini" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "-f", EXAMPLE_INI, "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"fstdecode: error: cannot listen on 127.0.0.1:{port}" in err and "Traceback" not in err
