"""Moses' XML-RPC protocol at /RPC2 (fstdecode.server.xmlrpc), through Starlette's TestClient.

The oracles are outside the server: the command line's outputs for the same lines
(``fstdecode decode`` text with ``--print-alignment-info``, ``fstdecode moses -n-best-list``),
mosesserver's reply shapes (moses/server/TranslationRequest.cpp: ``pack_hypothesis``,
``add_phrase_aln_info``, ``outputNBest``; Hypothesis_4server.cpp), a phrase alignment worked out
by hand, and the calls Moses' own clients make (contrib/server/client.py, moses-client.py).
"""

from __future__ import annotations

import logging
import xmlrpc.client

import pytest

from fstdecode.decoder import DecodeResult
from fstdecode.errors import FstdecodeError

from serving import LINES, SENTENCE, aligned_example, client, make_state, load_example
from shared import run_cli


@pytest.fixture(scope="module")
def ini(tmp_path_factory) -> str:
    return aligned_example(tmp_path_factory.mktemp("aligned"))


@pytest.fixture(scope="module")
def state(ini):
    from fstdecode.model.model import load_model

    return make_state(load=lambda: load_model(ini), max_chars=2000, max_body_bytes=20_000, max_nbest=10)


@pytest.fixture(scope="module")
def http(state):
    return client(state)


def call(http, params, method: str = "translate", headers=None):
    """The reply of one XML-RPC call (raises xmlrpc.client.Fault for a fault), checking that the
    answer is HTTP 200 with XML-RPC's content type."""
    body = xmlrpc.client.dumps((params,) if params is not None else (), method)
    return reply(http.post("/RPC2", content=body.encode("utf-8"), headers=headers or {}))


def reply(response):
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/xml")
    return xmlrpc.client.loads(response.content)[0][0]


def fault(http, params=None, method="translate", body: bytes | None = None, headers=None) -> xmlrpc.client.Fault:
    if body is None:
        body = xmlrpc.client.dumps((params,) if params is not None else (), method).encode("utf-8")
    with pytest.raises(xmlrpc.client.Fault) as info:
        reply(http.post("/RPC2", content=body, headers=headers or {}))
    return info.value


# ----------------------------------------------------------------------------- the oracles


@pytest.fixture(scope="module")
def decode_text(ini) -> list[str]:
    """``fstdecode decode --print-alignment-info`` (text) on LINES, with the server's method and budget."""
    proc = run_cli(["decode", "-f", ini, "--method", "stack", "--max-states", "2000000", "--print-alignment-info"],
                   "\n".join(LINES) + "\n")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def moses_nbest(ini: str, k: int, distinct: bool = False) -> dict[int, list[list[str]]]:
    """``fstdecode moses -n-best-list - k [distinct]`` on LINES[:-1]: line -> its entries' fields."""
    args = ["moses", "-f", ini, "-n-best-list", "-", str(k), *(["distinct"] if distinct else []),
            "-print-alignment-info-in-n-best"]
    proc = run_cli(args, "\n".join(LINES[:-1]) + "\n")
    assert proc.returncode == 0, proc.stderr
    out: dict[int, list[list[str]]] = {}
    for line in proc.stdout.splitlines():
        fields = line.split(" ||| ")
        out.setdefault(int(fields[0]), []).append(fields)
    return out


# ----------------------------------------------------------------------------- replies


def test_text_equals_decode_with_moses_trailing_space(http, decode_text):
    for line, expected in zip(LINES, decode_text):
        got = call(http, {"text": line})
        assert set(got) == {"text"}  # no key that was not asked for
        translation = expected.partition("|||")[0]
        assert got["text"] == "".join(w + " " for w in translation.split())  # every word followed by a space


def test_word_align_equals_decode_print_alignment_info(http, decode_text):
    for line, expected in zip(LINES, decode_text):
        got = call(http, {"text": line, "word-align": "true"})
        assert set(got) == {"text", "word-align"}
        points = [f"{p['source-word']}-{p['target-word']}" for p in got["word-align"]]
        assert " ".join(points) == expected.partition("|||")[2].strip()
        assert all(set(p) == {"source-word", "target-word"} for p in got["word-align"])


def test_phrase_alignment_of_the_slides_sentence_by_hand(http):
    # The best derivation of the slides' sentence: this must (0-1) | also (4) | be (5) | our concern (2-3).
    got = call(http, {"text": SENTENCE, "align": "true"})
    assert got["text"] == "this must also be our concern "
    assert got["align"] == [
        {"tgt-start": 0, "src-start": 0, "src-end": 1},
        {"tgt-start": 2, "src-start": 4, "src-end": 4},
        {"tgt-start": 3, "src-start": 5, "src-end": 5},
        {"tgt-start": 4, "src-start": 2, "src-end": 3},
    ]


@pytest.mark.parametrize("distinct", [False, True])  # Moses' "nbest-distinct" and the list's "distinct" word
def test_nbest_equals_fstdecode_moses_nbest(http, ini, distinct):
    k = 5
    expected = moses_nbest(ini, k, distinct)
    for i, line in enumerate(LINES[:-1]):
        params = {"text": line, "nbest": k, "align": "true", "word-align": "true"}
        if distinct:
            params["nbest-distinct"] = "true"
        got = call(http, params)
        assert set(got) == {"text", "align", "word-align", "nbest"}
        entries = got["nbest"]
        assert len(entries) == len(expected[i])
        for entry, fields in zip(entries, expected[i]):
            assert set(entry) == {"hyp", "totalScore", "fvals", "align", "word-align"}
            assert entry["hyp"] == fields[1]
            assert entry["fvals"] == " " + fields[2]  # Moses' OutputAllFeatureScores: each name after a space
            assert f"{entry['totalScore']:.6g}" == fields[3]
            points = " ".join(f"{p['source-word']}-{p['target-word']}" for p in entry["word-align"])
            assert points == fields[-1].strip()
        assert entries[0]["hyp"] == got["text"]  # the 1-best is the list's first
        if distinct:
            assert len({e["hyp"] for e in entries}) == len(entries)


def test_an_empty_line_scores_0_in_every_feature_and_in_total(http):
    # Defect 7: its totalScore was 0.0 beside KENLM0= -3.10627. As in Moses (and fstdecode moses),
    # the empty line's one hypothesis is the initial one, which no feature scores.
    (entry,) = call(http, {"text": "", "nbest": 3})["nbest"]
    assert entry["hyp"] == "" and entry["totalScore"] == 0.0
    names = [t for t in entry["fvals"].split() if t.endswith("=")]
    assert names == ["KENLM0=", "Distortion0=", "WordPenalty0=", "PhraseDictionaryMemory0="]
    assert [t for t in entry["fvals"].split() if not t.endswith("=")] == ["0"] * 5


def test_an_ini_n_best_list_is_each_calls_default_as_in_mosesserver(ini, tmp_path):
    """mosesserver starts each request from the moses.ini's options: its ``[n-best-list] FILE N
    distinct`` gives every call without ``nbest`` the N distinct best (NBestOptions::update), and
    FILE is not written (issue 38: the section was ignored without a word)."""
    from fstdecode.model.model import load_model
    from fstdecode.server.state import nbest_note

    from pathlib import Path

    listed = Path(ini).with_name("listed.ini")  # (beside the tables its relative paths name)
    listed.write_text(open(ini, encoding="utf-8").read() + f"\n[n-best-list]\n{tmp_path / 'nbest.txt'}\n3\ndistinct\n",
                      encoding="utf-8")
    state = make_state(load=lambda: load_model(str(listed)))
    http = client(state)
    expected = moses_nbest(ini, 3, distinct=True)
    for i, line in enumerate(LINES[:-1]):
        entries = call(http, {"text": line})["nbest"]
        assert [e["hyp"] for e in entries] == [fields[1] for fields in expected[i]]
    assert len(call(http, {"text": SENTENCE, "nbest": 5})["nbest"]) == 5  # the request's own size wins
    assert set(call(http, {"text": SENTENCE, "nbest": 0})) == {"text"}
    assert "results" not in http.post("/translate", json={"text": SENTENCE}).json()  # JSON: one result, as before
    assert not (tmp_path / "nbest.txt").exists()
    assert "an XML-RPC request without 'nbest' gets the 3 distinct best" in nbest_note(state.service)
    with pytest.raises(FstdecodeError, match=r"\[n-best-list\] asks the 3 best .* over --max-nbest 2"):
        make_state(load=lambda: load_model(str(listed)), max_nbest=2)


def test_nbest_zero_gives_no_list(http):
    assert set(call(http, {"text": SENTENCE, "nbest": 0})) == {"text"}


@pytest.mark.parametrize("value", ["true", "false", False, 0, ""])  # mosesserver's check(): the key's presence
def test_a_flag_is_on_whatever_its_value(http, value):
    got = call(http, {"text": SENTENCE, "align": value, "word-align": value, "report-all-factors": value})
    assert set(got) == {"text", "align", "word-align"}


def test_the_calls_of_moses_client_py(http):
    # contrib/server/client.py: a French sentence (unknown words here: copied through), align and
    # report-all-factors as the string "true"; it prints text, 'id' when present, and each alignment.
    text = "il a souhaité que la présidence trace à nice le chemin pour l' avenir ."
    result = call(http, {"text": text, "align": "true", "report-all-factors": "true"})
    assert result["text"] == text + " "
    assert "id" not in result
    printed = ["%s,%s,%s" % (a["tgt-start"], a["src-start"], a["src-end"]) for a in result["align"]]
    covered = sorted(i for a in result["align"] for i in range(a["src-start"], a["src-end"] + 1))
    assert covered == list(range(len(text.split()))) and len(printed) == len(result["align"])
    # contrib/server/moses-client.py sends each stdin line as read, its newline included.
    assert call(http, {"text": SENTENCE + "\n"})["text"] == "this must also be our concern "


# ----------------------------------------------------------------------------- refusals

BOMB = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>'
        b"<methodCall><methodName>translate</methodName><params><param><value><struct><member><name>text</name>"
        b"<value><string>&lol2;</string></value></member></struct></value></param></params></methodCall>")
EXTERNAL = (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><methodCall>'
            b"<methodName>translate</methodName><params><param><value><struct><member><name>text</name>"
            b"<value><string>&e;</string></value></member></struct></value></param></params></methodCall>")
GOOD = xmlrpc.client.dumps(({"text": "das muss"},), "translate").encode("utf-8")
#: A struct that gives ``text`` twice (xmlrpc.client.dumps cannot write one): refused, as the JSON API
#: refuses a repeated key (issue 38: the standard unmarshaller kept the last one, "sein").
TWICE = GOOD.replace(b"</member>", b"</member><member><name>text</name><value><string>sein</string></value></member>")

# Each case: the body (or params), the fault code and a fragment of its message. Every case is one
# kind of bad request in issue 26's list.
BAD = [
    ("truncated XML", GOOD[:-30], None, -503, "malformed XML-RPC request"),
    ("text given twice", TWICE, None, -503, "the struct member 'text' is given twice"),
    ("a DTD with entities (a billion laughs)", BOMB, None, -503, "malformed"),
    ("an external entity", EXTERNAL, None, -503, "malformed"),
    ("invalid UTF-8", GOOD.replace(b"das muss", b"das \xff\xfe muss"), None, -503, "malformed"),
    ("a reply, not a call", xmlrpc.client.dumps(({"text": "x"},), methodresponse=True).encode(), None, -503,
     "not a methodCall"),
    ("an unknown method", None, ("translated", {"text": "x"}), -506, "no method 'translated'"),
    ("no parameter", None, ("translate", None), -501, "one parameter, a struct"),
    ("a string parameter", None, ("translate", "das muss"), -501, "one parameter, a struct"),
    ("no text", None, ("translate", {"align": "true"}), -503, "missing source text"),
    ("text an integer", None, ("translate", {"text": 5}), -501, "text must be a string, got an integer"),
    ("text in base64", None, ("translate", {"text": xmlrpc.client.Binary(b"das")}), -501, "text must be a string"),
    ("a negative n-best size", None, ("translate", {"text": "das", "nbest": -1}), -501, "nbest must be >= 0"),
    ("an n-best size as a string", None, ("translate", {"text": "das", "nbest": "3"}), -501, "nbest must be an integer"),
    ("an n-best size over the cap", None, ("translate", {"text": "das", "nbest": 11}), -509, "at most 10"),
    ("Moses' field separator", None, ("translate", {"text": "das ||| muss"}), -501, "reserved token(s) |||"),
    ("a sentence marker", None, ("translate", {"text": "<s> das muss </s>"}), -501, "reserved token(s) </s> <s>"),
    ("an oversized text", None, ("translate", {"text": "das " * 600}), -509, "2,400 characters: a request holds at most 2,000"),
    ("an oversized body", xmlrpc.client.dumps(({"text": "a" * 30_000},), "translate").encode(), None, -509,
     "bytes: at most 20,000"),
    ("the search graph", None, ("translate", {"text": "das", "sg": "true"}), -507, "'sg' (the search graph)"),
    ("translation options", None, ("translate", {"text": "das", "topt": 1}), -507, "'topt'"),
    ("a score breakdown", None, ("translate", {"text": "das", "add-score-breakdown": 1}), -507, "'add-score-breakdown'"),
    ("multi-model weights", None, ("translate", {"text": "das", "lambda": [0.5], "model_name": "pt"}), -507,
     "'lambda' (multi-model weights); 'model_name'"),
    ("a context", None, ("translate", {"text": "das", "context": "x"}), -507, "'context'"),
    ("an unknown key", None, ("translate", {"text": "das", "nbset": 3}), -507, "unknown parameter(s) 'nbset'"),
]


@pytest.mark.parametrize("what, body, params, code, message", BAD, ids=[case[0] for case in BAD])
def test_each_bad_request_gets_its_fault_and_the_next_one_is_served(http, what, body, params, code, message):
    if body is None:
        method, value = params
        got = fault(http, value, method)
    else:
        got = fault(http, body=body)
    assert got.faultCode == code, got.faultString
    assert message in got.faultString
    assert call(http, {"text": "das muss"})["text"] == "this must "


def test_a_compressed_body_is_refused_before_it_is_read(http):
    got = fault(http, body=GOOD, headers={"content-encoding": "gzip"})
    assert "send the body uncompressed" in got.faultString


def test_a_refusal_is_logged_on_one_line_without_the_text(http, caplog):
    secret = "geheimnis <s> vertraulich"
    with caplog.at_level(logging.INFO, logger="fstdecode.server"):
        fault(http, {"text": secret})
        call(http, {"text": "das muss unsere"})
    lines = [r.getMessage() for r in caplog.records if r.name == "fstdecode.server"]
    assert len(lines) == 2 and all("\n" not in line for line in lines)
    assert "/RPC2" in lines[0] and " 400 " in lines[0] and "reserved token(s) <s>" in lines[0]
    assert "/RPC2" in lines[1] and " 200 " in lines[1] and "chars=15" in lines[1]
    assert not any("geheimnis" in line or "unsere" in line for line in lines)


def test_a_line_without_a_derivation_is_a_fault_naming_why():
    state = make_state()
    state.service.decode = lambda text, id, request: DecodeResult(id, tuple(text.split()), error="no derivation within d")
    got = fault(client(state), {"text": "das muss"})
    assert got.faultCode == -500 and "no translation: no derivation within d" in got.faultString


def test_the_server_answers_with_the_decoders_own_result():
    # The reply comes from Decoder.decode on the same line, not from a second implementation.
    from fstdecode.decoder import Decoder

    best = Decoder(load_example(), "stack", max_states=2_000_000).decode(SENTENCE).best
    got = call(client(make_state()), {"text": SENTENCE, "nbest": 1})
    assert got["text"] == best.translation + " "
    assert got["nbest"][0]["hyp"] == got["text"]
