"""The server over a real socket: uvicorn in a thread on a free port of 127.0.0.1, called by real
clients (xmlrpc.client.ServerProxy, httpx, curl, raw sockets for the misbehaving ones).

The queue tests hold the decodes at a gate (tests/serving.py), so "the queue is full" is a state
the test builds, not a race it hopes to win.
"""

from __future__ import annotations

import gc
import json
import logging
import shutil
import socket
import ssl
import subprocess
import threading
import time
import xmlrpc.client

import httpx
import pytest

from fstdecode.decoder import Decoder

from serving import LINES, SENTENCE, Gate, LiveServer, live, load_example, make_state, wait_for


@pytest.fixture(scope="module")
def expected() -> dict[str, str]:
    """Each line's translation by Decoder.decode with the server's method and budget (the oracle)."""
    decoder = Decoder(load_example(), "stack", max_states=2_000_000)
    return {line: decoder.decode(line).best.translation for line in LINES}


def test_serverproxy_httpx_and_curl_get_the_decoders_answers(expected):
    with live(token="t0ken") as server:
        proxy = xmlrpc.client.ServerProxy(server.url + "/RPC2", headers=[("Authorization", "Bearer t0ken")])
        for line in LINES:
            got = proxy.translate({"text": line, "align": "true"})
            assert got["text"] == "".join(w + " " for w in expected[line].split())
        with pytest.raises(xmlrpc.client.ProtocolError) as info:  # no token
            xmlrpc.client.ServerProxy(server.url + "/RPC2").translate({"text": SENTENCE})
        assert info.value.errcode == 401
        auth = {"Authorization": "Bearer t0ken"}
        got = httpx.post(server.url + "/translate", json={"lines": LINES}, headers=auth).json()["results"]
        assert [r["translation"] for r in got] == [expected[line] for line in LINES]
        if shutil.which("curl"):
            out = subprocess.run(
                ["curl", "-s", "-H", "Authorization: Bearer t0ken", "-H", "Content-Type: application/json",
                 "-d", json.dumps({"text": SENTENCE}), server.url + "/translate"],
                capture_output=True, timeout=30, check=True).stdout
            assert json.loads(out)["translation"] == expected[SENTENCE]
            health = subprocess.run(["curl", "-s", server.url + "/health"], capture_output=True, timeout=30).stdout
            assert json.loads(health)["status"] == "ok"


def test_a_full_queue_answers_503_with_retry_after_at_once(expected):
    state = make_state(port=0, threads=1, queue_size=1, retry_after=7)
    gate = Gate(state)
    with LiveServer(state) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        answers: dict[str, httpx.Response] = {}

        def send(name: str, line: str) -> None:
            answers[name] = httpx.post(server.url + "/translate", json={"text": line}, timeout=30)

        first = threading.Thread(target=send, args=("decoding", SENTENCE))
        first.start()
        gate.wait_entered(1)  # the one thread holds the first
        second = threading.Thread(target=send, args=("queued", "das muss"))
        second.start()
        wait_for(lambda: state.pool.admission.admitted == 2, what="the second request to queue")
        start = time.monotonic()
        busy = http.post("/translate", json={"text": "sein"})
        assert busy.status_code == 503 and busy.headers["retry-after"] == "7"
        assert "server busy" in busy.json()["error"]
        fault = http.post("/RPC2", content=xmlrpc.client.dumps(({"text": "sein"},), "translate").encode())
        assert fault.status_code == 200 and fault.headers["retry-after"] == "7"
        with pytest.raises(xmlrpc.client.Fault, match="server busy") as info:
            xmlrpc.client.loads(fault.content)
        assert info.value.faultCode == -509
        assert time.monotonic() - start < 2  # refused at once, not after waiting for room
        gauges = _metrics(http)
        assert gauges["fstdecode_queue_length"] == 1 and gauges["fstdecode_sentences_decoding"] == 1
        assert gauges["fstdecode_requests_in_flight"] == 2
        gate.open()
        first.join(30)
        second.join(30)
        assert answers["decoding"].json()["translation"] == expected[SENTENCE]
        assert answers["queued"].json()["translation"] == expected["das muss"]
        wait_for(lambda: _metrics(http)["fstdecode_queue_length"] == 0, what="the queue to empty")
        gauges = _metrics(http)
        assert gauges["fstdecode_requests_in_flight"] == 0 and gauges["fstdecode_sentences_decoding"] == 0
        assert gauges['fstdecode_requests_total{endpoint="/translate",outcome="busy"}'] == 1
        assert gauges['fstdecode_requests_total{endpoint="/RPC2",outcome="busy"}'] == 1


def _metrics(http: httpx.Client) -> dict[str, float]:
    text = http.get("/metrics").text
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if not line.startswith("#")}


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_concurrent_clients_each_get_their_own_answer(expected):
    with live(threads=2) as server:
        errors: list[str] = []

        def client(k: int) -> None:
            with httpx.Client(base_url=server.url, timeout=60) as http:
                proxy = xmlrpc.client.ServerProxy(server.url + "/RPC2")
                for i in range(6):
                    line = LINES[(k + i) % len(LINES)]
                    if (k + i) % 2:
                        got = http.post("/translate", json={"text": line}).json()["translation"]
                    else:
                        got = proxy.translate({"text": line})["text"].rstrip(" ")
                    if got != expected[line]:
                        errors.append(f"{line!r}: {got!r}")

        threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors


def test_every_bad_request_while_a_client_keeps_getting_answers(expected):
    """Issue 26's fault test: each bad request in turn, while another client's answers stay right."""
    bad = [
        b"<methodCall><methodName>translate</methodName><params>",  # malformed XML
        xmlrpc.client.dumps(({"text": 5},), "translate").encode(),  # a wrong type
        xmlrpc.client.dumps(({"text": "das"},), "translate").encode().replace(b"das", b"d\xffas"),  # bad UTF-8
        xmlrpc.client.dumps(({"text": "das " * 30_000},), "translate").encode(),  # an oversized text
        xmlrpc.client.dumps(({"text": "das ||| muss"},), "translate").encode(),  # Moses' separator
        xmlrpc.client.dumps(({"text": "<s> das"},), "translate").encode(),  # a sentence marker
        xmlrpc.client.dumps(({"text": "das", "sg": 1},), "translate").encode(),  # an unknown parameter
        xmlrpc.client.dumps(({"text": "das", "nbest": -2},), "translate").encode(),  # a negative n-best size
    ]
    with live(threads=2) as server:
        stop = threading.Event()
        wrong: list[str] = []
        served = []

        def steady() -> None:
            proxy = xmlrpc.client.ServerProxy(server.url + "/RPC2")
            while not stop.is_set():
                got = proxy.translate({"text": SENTENCE})["text"]
                served.append(1)
                if got.rstrip(" ") != expected[SENTENCE]:
                    wrong.append(got)

        worker = threading.Thread(target=steady)
        worker.start()
        try:
            with httpx.Client(base_url=server.url, timeout=30) as http:
                for body in bad:
                    r = http.post("/RPC2", content=body)
                    with pytest.raises(xmlrpc.client.Fault):
                        xmlrpc.client.loads(r.content)
                for body in (b"{", b'{"text": 5}', b'{"text": "a", "nbest": -1}', b'{"text": "\\ud800"}'):
                    assert http.post("/translate", content=body).status_code == 400
                _disconnect_mid_body(server.port)
                _disconnect_mid_decode(server.port)
                n = len(served)
                wait_for(lambda: len(served) > n + 2, what="the steady client to be served again")
        finally:
            stop.set()
            worker.join(30)
        assert not wrong and len(served) > 3


def _disconnect_mid_body(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 500\r\n\r\n{\"text\": \"das")


def _disconnect_mid_decode(port: int) -> None:
    body = json.dumps({"lines": [SENTENCE] * 20}).encode()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


def test_a_client_gone_mid_request_releases_its_queued_sentences(caplog):
    state = make_state(port=0, threads=1, queue_size=8)
    gate = Gate(state)
    with LiveServer(state) as server:
        _disconnect_mid_decode(server.port)  # 20 sentences: one decoding, the rest queued
        gate.wait_entered(1)
        time.sleep(0.2)  # (the server sees the connection close)
        gate.open()
        wait_for(lambda: state.pool.admission.admitted == 0, what="the admitted sentences to be released")
        assert gate.entered < 20  # the queued ones were dropped, not decoded for nobody
        got = httpx.post(server.url + "/translate", json={"text": "das muss"}, timeout=30)
        assert got.json()["translation"] == "this must"
        assert state.metrics.count("/translate", "disconnected") == 1
    gc.collect()  # (asyncio says of an outcome never read when its future is collected)
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(logged) == 1 and "the client disconnected before its translation was ready" in logged[0], logged


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_slow_clients_time_out():
    with live(client_timeout=0.3) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as s:  # headers never finished
            s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\n")
            s.settimeout(5)
            start = time.monotonic()
            assert s.recv(100) == b""  # closed by the server
            assert time.monotonic() - start < 3
        with socket.create_connection(("127.0.0.1", server.port)) as s:  # a body that stops coming
            s.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"text\"")
            s.settimeout(5)
            answer = _read_all(s)
            assert answer.startswith(b"HTTP/1.1 408") and b"took over 0.3 s" in answer
        assert httpx.post(server.url + "/translate", json={"text": "das muss"}).json()["translation"] == "this must"


def _read_all(s: socket.socket) -> bytes:
    """What the server sends until it closes the connection."""
    out = b""
    while chunk := s.recv(4096):
        out += chunk
    return out


@pytest.mark.slow
def test_tls(tmp_path):
    if not shutil.which("openssl"):
        pytest.skip("no openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    with live(certfile=str(cert), keyfile=str(key)) as server:
        url = server.url.replace("http://", "https://")
        got = httpx.post(url + "/translate", json={"text": "das muss"}, verify=ssl.create_default_context(cafile=str(cert)),
                         timeout=30)
        assert got.json()["translation"] == "this must"
        with pytest.raises(httpx.HTTPError):  # plain HTTP to a TLS port
            httpx.post(server.url + "/translate", json={"text": "das muss"}, timeout=5)


def test_keep_alive_requests_are_not_held_by_nagle():
    # A keep-alive response's body written apart from its headers waited for the client's delayed
    # ACK (40 ms a request) until the server set TCP_NODELAY: ten requests took 0.4 s.
    import http.client

    with live() as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.request("GET", "/health")
        conn.getresponse().read()
        start = time.monotonic()
        for _ in range(10):
            conn.request("POST", "/translate", b'{"text": "das muss"}', {"Content-Type": "application/json"})
            assert json.loads(conn.getresponse().read())["translation"] == "this must"
        assert time.monotonic() - start < 0.3
        conn.close()
