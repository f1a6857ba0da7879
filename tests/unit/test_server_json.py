"""The HTTP/JSON API (POST /translate), /health, /metrics and the bearer token, through
Starlette's TestClient.

The oracle of every reply is ``fstdecode decode --format json`` on the same lines (run as a
process), equal field for field but for the wall time in ``stats.seconds``.
"""

from __future__ import annotations

import json
import re

import pytest

from serving import EXAMPLE_INI, LINES, SENTENCE, client, make_state
from shared import run_cli


@pytest.fixture(scope="module")
def state():
    return make_state(max_chars=2000, max_lines=8, max_body_bytes=20_000, max_nbest=10)


@pytest.fixture(scope="module")
def http(state):
    return client(state)


def decode_json(*flags: str, lines=LINES) -> list[dict]:
    """``fstdecode decode --format json`` on ``lines`` with the server's method and budget."""
    proc = run_cli(["decode", "-f", EXAMPLE_INI, "--method", "stack", "--max-states", "2000000", "--format", "json",
                    *flags], "\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def timeless(obj: dict) -> dict:
    """``obj`` without the wall times (the fields two runs cannot share: the seconds, and those of
    each phase of the A*'s)."""
    return {**obj, "stats": {k: v for k, v in obj["stats"].items() if k not in ("seconds", "phases")}}


@pytest.mark.parametrize("flags, request_extra", [
    ((), {}),
    (("--print-alignment-info",), {"align": True}),  # the alignment field
    (("--nbest", "3"), {"nbest": 3}),  # the nbest list after the best
])
def test_a_batch_equals_decode_format_json(http, flags, request_extra):
    expected = decode_json(*flags)
    r = http.post("/translate", json={"lines": LINES, **request_extra})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    got = r.json()
    assert set(got) == {"results"}
    assert [timeless(x) for x in got["results"]] == [timeless(x) for x in expected]


def test_a_line_with_a_reserved_token_fails_alone_as_in_decode(http):
    # docs/server.md: a line the decoder cannot translate is a record with `error`, as in
    # `decode`'s output; the batch goes on (it was a 400 for the whole batch).
    lines = ["das muss", "a ||| b", "</s>", "sein"]
    expected = decode_json(lines=lines)
    r = http.post("/translate", json={"lines": lines})
    assert r.status_code == 200, r.text
    got = r.json()["results"]
    assert [timeless(x) for x in got] == [timeless(x) for x in expected]
    assert [("error" in x) for x in got] == [False, True, True, False]
    assert "reserved token(s) |||" in got[1]["error"]
    single = http.post("/translate", json={"text": "</s>"})
    assert single.status_code == 200 and "reserved token(s) </s>" in single.json()["error"]
    assert http.post("/translate", json={"text": SENTENCE}).json()["translation"] == "this must also be our concern"


def test_a_single_text_is_one_object_with_decodes_fields(http):
    expected = decode_json(lines=[SENTENCE])[0]
    got = http.post("/translate", json={"text": SENTENCE}).json()
    assert timeless(got) == timeless(expected)
    for key in ("translation", "score", "features", "derivation", "optimal"):
        assert key in got
    assert got["translation"] == "this must also be our concern"


def test_method_exact_carries_its_certificate(http):
    proc = run_cli(["decode", "-f", EXAMPLE_INI, "--method", "exact", "--max-states", "2000000", "--format", "json"],
                   SENTENCE + "\n")
    expected = json.loads(proc.stdout)
    got = http.post("/translate", json={"text": SENTENCE, "method": "exact"}).json()
    assert timeless(got) == timeless(expected)
    assert got["optimal"] is True and got["gap"] == 0 and got["upper_bound"] == pytest.approx(got["score"])


# Each case: the body, the status and a fragment of the error. One kind of bad request each.
BAD = [
    ("not JSON", b"{text: 'das'}", 400, "malformed JSON"),
    ("truncated JSON", b'{"text": "das', 400, "malformed JSON"),
    ("invalid UTF-8", b'{"text": "das \xff muss"}', 400, "not valid UTF-8 (byte 14)"),
    ("an unpaired surrogate", b'{"text": "das \\ud800 muss"}', 400, "unpaired surrogate"),
    ("NaN", b'{"text": "das", "nbest": NaN}', 400, "NaN is not a JSON number"),
    ("nested too deeply", b"[" * 100_00 + b"]" * 100_00, 400, "nested too deeply"),
    ("not an object", b'["das muss"]', 400, "must be a JSON object"),
    ("neither text nor lines", b'{"nbest": 2}', 400, "exactly one of 'text'"),
    ("both text and lines", b'{"text": "a", "lines": ["b"]}', 400, "exactly one of 'text'"),
    ("a repeated key", b'{"text": "a", "text": "b"}', 400, "'text' is given twice"),
    ("an unknown key", b'{"text": "a", "nbset": 2}', 400, "unknown key(s) 'nbset'"),
    ("text a number", b'{"text": 5}', 400, "text must be a string, got an integer"),
    ("lines a string", b'{"lines": "das muss"}', 400, "'lines' must be a list"),
    ("a line that is not a string", b'{"lines": ["das", null]}', 400, "lines[1] must be a string, got null"),
    ("nbest a string", b'{"text": "das", "nbest": "2"}', 400, "nbest must be an integer, got a string"),
    ("nbest a boolean", b'{"text": "das", "nbest": true}', 400, "nbest must be an integer, got a boolean"),
    ("nbest a float", b'{"text": "das", "nbest": 2.0}', 400, "nbest must be an integer, got a number"),
    ("nbest zero", b'{"text": "das", "nbest": 0}', 400, "nbest must be >= 1"),
    ("nbest negative", b'{"text": "das", "nbest": -3}', 400, "nbest must be >= 1, got -3"),
    ("nbest over the cap", b'{"text": "das", "nbest": 11}', 400, "at most 10"),
    # Issue 38, defect 6: Python's int() refuses 4,300+ digits with a ValueError (it was HTTP 500).
    ("nbest of 5,000 digits", b'{"text": "das", "nbest": ' + b"9" * 5000 + b"}", 400,
     "an integer of 5,000 digits; this server reads integers of at most 18 digits"),
    ("nbest of 19 digits", b'{"text": "das", "nbest": -' + b"1" * 19 + b"}", 400, "an integer of 19 digits"),
    ("align a string", b'{"text": "das", "align": "yes"}', 400, "align must be true or false"),
    ("method not allowed", b'{"text": "das", "method": "exhaustive"}', 400, "'exhaustive' is not allowed"),
    ("method unknown", b'{"text": "das", "method": "magic"}', 400, "'magic' is not allowed"),
    ("method a list", b'{"text": "das", "method": ["stack"]}', 400, "method must be a string, got a list"),
    ("too many lines", json.dumps({"lines": ["das"] * 9}).encode(), 413, "9 lines: a request holds at most 8"),
    ("too many characters", json.dumps({"text": "muss " * 401}).encode(), 413, "2,005 characters"),
    ("too big a body", json.dumps({"text": "a" * 25_000}).encode(), 413, "at most 20,000"),
]


@pytest.mark.parametrize("what, body, status, message", BAD, ids=[case[0] for case in BAD])
def test_each_bad_request_gets_its_error_and_the_next_one_is_served(http, what, body, status, message):
    r = http.post("/translate", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert message in r.json()["error"]
    assert http.post("/translate", json={"text": "das muss"}).json()["translation"] == "this must"


def test_a_body_without_content_length_is_cut_at_the_cap(http):
    def chunks():  # chunked transfer: the cap is counted as the bytes come
        for _ in range(30):
            yield b" " * 1000

    r = http.post("/translate", content=chunks())
    assert r.status_code == 413 and "over 20,000 bytes" in r.json()["error"]


def test_a_bad_content_length_is_refused(http):
    r = http.post("/translate", content=b'{"text": "das"}', headers={"content-length": "20000000"})
    assert r.status_code == 413 and "request body of 20,000,000 bytes" in r.json()["error"]


def test_the_token_guards_everything_but_health():
    http = client(make_state(token="s3cret"))
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "Basic s3cret"}):
        r = http.post("/translate", json={"text": "das"}, headers=headers)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert http.post("/RPC2", content=b"<x/>", headers=headers).status_code == 401
        assert http.get("/metrics", headers=headers).status_code == 401
    good = {"authorization": "Bearer s3cret"}
    assert http.post("/translate", json={"text": "das muss"}, headers=good).json()["translation"] == "this must"
    assert http.get("/metrics", headers=good).status_code == 200
    assert http.get("/health").status_code == 200


def test_health_names_the_model_and_the_last_reload(http, state):
    got = http.get("/health").json()
    assert got["status"] == "ok"
    assert got["model"]["phrase_pairs"] == 28 and got["model"]["lm_order"] == 2
    assert got["model"]["features"] == ["KENLM0", "Distortion0", "WordPenalty0", "UnknownWordPenalty0",
                                         "PhraseDictionaryMemory0"]
    assert got["model"]["methods"] == ["exact", "stack"] and got["model"]["method"] == "stack"
    assert got["reload"] == {"count": 0, "last_failed": False, "error": None, "at": None}


def test_health_and_metrics_say_the_queue_and_the_limit_as_the_start_up_line_does():
    """Issue 38: /health gave the queue's capacity as 65 (threads + queue) beside the start-up line's
    "queue 64"; ``-d -1`` was shown as "distortion limit 2147483647"."""
    from fstdecode.model.model import load_model
    from fstdecode.server.state import describe

    state = make_state(load=lambda: load_model(EXAMPLE_INI, distortion_limit=-1), threads=2, queue_size=5)
    http = client(state)
    got = http.get("/health").json()
    assert got["queue"] == {"waiting": 0, "capacity": 5}  # --queue-size, the start-up line's "queue 5"
    assert got["admitted"] == {"sentences": 0, "capacity": 7}  # decoding and waiting at most
    assert metrics(http)["fstdecode_queue_capacity"] == 5 and metrics(http)["fstdecode_admitted_capacity"] == 7
    assert got["model"]["distortion_limit"] == -1
    line = describe(state.service)
    assert "no distortion limit (-1)" in line and "2147483647" not in line


SAMPLE = re.compile(r'^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? (-?[0-9.e+-]+|NaN)$')


def metrics(http) -> dict[str, float]:
    """/metrics parsed as Prometheus' text format (every line a comment or a sample)."""
    r = http.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4")
    out = {}
    for line in r.text.splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (HELP|TYPE) [a-z_]+ .+$", line), line
            continue
        assert SAMPLE.match(line), line
        name, value = line.rsplit(" ", 1)
        out[name] = float(value)
    return out


def test_metrics_count_requests_errors_and_latency(http):
    before = metrics(http)
    http.post("/translate", json={"text": "das muss"})
    http.post("/translate", json={"text": 5})
    after = metrics(http)
    ok = 'fstdecode_requests_total{endpoint="/translate",outcome="ok"}'
    bad = 'fstdecode_requests_total{endpoint="/translate",outcome="bad_request"}'
    assert after[ok] == before.get(ok, 0) + 1 and after[bad] == before.get(bad, 0) + 1
    assert after["fstdecode_errors_total"] == before["fstdecode_errors_total"] + 1
    assert after["fstdecode_request_latency_seconds_count"] >= before.get("fstdecode_request_latency_seconds_count", 0) + 2
    assert after['fstdecode_request_latency_seconds{quantile="0.5"}'] >= 0
    for gauge in ("fstdecode_requests_in_flight", "fstdecode_queue_length", "fstdecode_sentences_decoding"):
        assert after[gauge] == 0
    assert after["fstdecode_last_reload_failed"] == 0


def test_no_endpoint_reads_a_file_the_client_names(http):
    # No request key names a file: the phrase_fst/lattice_dir options are the operator's alone.
    for key in ("phrase_fst", "lattice_dir", "config", "source_grammar"):
        r = http.post("/translate", json={"text": "das", key: "/etc/passwd"})
        assert r.status_code == 400 and "unknown key" in r.json()["error"]
    assert http.get("/translate").status_code == 405
    assert http.get("/etc/passwd").status_code == 404


def test_log_text_logs_the_source_on_the_same_line_cut_to_500_characters(caplog):
    import logging

    http = client(make_state(log_text=True))
    with caplog.at_level(logging.INFO, logger="fstdecode.server"):
        http.post("/translate", json={"lines": ["das muss", "unsere\nsorge"]})
        http.post("/translate", json={"text": "sein " * 300})
    lines = [r.getMessage() for r in caplog.records if r.name == "fstdecode.server"]
    assert len(lines) == 2 and all("\n" not in line for line in lines)
    assert "text='das muss ||| unsere\\nsorge'" in lines[0]
    assert "text='" + ("sein " * 100) + "'" in lines[1]
