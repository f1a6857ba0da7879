#!/usr/bin/env python3
"""A load test of ``fstdecode serve`` (issue 26): throughput and latency, overload, memory.

On loopback only, bounded in requests and in time (``--max-seconds``). The server is
``fstdecode serve`` on the Hansards fr-en model (stack decoder); the clients run in a process of
their own (threads on keep-alive connections, one request in four over XML-RPC, the rest JSON).

1. Throughput: 8 clients send 2,000 requests (the Hansards sentences, in turn) to a server of 1
   and of 2 decoding threads, the runs alternating (1, 2, 1, 2, ...); every answer must be the
   command line's (``fstdecode decode`` on the same lines), with no error. Reports p50/p99
   latency and throughput, and the ratio of 2 threads to 1 (the issue asks for at least 1.3).
2. Overload: 16 clients against 1 thread and a queue of 2; every request must get either the
   right answer or a refusal (503, or a fault over 200) carrying Retry-After, and the queue
   gauges must return to 0.
3. Memory: the server's RSS after request 10,000 must be at most its RSS after request 1,000
   plus 20 MB.

The load average is recorded before and after each run (the machine may be shared). Writes the
``bench_server`` section of docs/server.md; exit status 1 when a check fails.

    python -m scripts.bench_server [--quick] [--out docs/server.md]
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import xmlrpc.client
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

from scripts.benchlib import DOCS, HANSARDS, ROOT, UN_LM, load_avg, log, marked, script, write_section

#: The model's flags: the Hansards table (log10 scores), the UN trigram LM, d = 4, 20 options per phrase.
MODEL = ["--phrase-table", str(HANSARDS / "tm"), "--tm-score-format", "log10", "--lm", str(UN_LM),
         "-d", "4", "--table-limit", "20"]
METHOD = ["--method", "stack", "--allow-methods", "stack"]
#: Extra search flags of the server and of the CLI's reference run (``--search-flags``).
SEARCH: list[str] = []


class Server:
    """``fstdecode serve`` on a free port of 127.0.0.1, its stderr drained in a thread."""

    def __init__(self, *flags: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "fstdecode", "-q", "serve", "--port", "0", *MODEL, *SEARCH, *flags],
                                     cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.lines: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        end = time.monotonic() + 120
        while not any("serving" in line for line in self.lines):
            if self.proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError("the server did not start:\n" + "".join(self.lines))
            time.sleep(0.05)
        line = next(line for line in self.lines if "serving" in line)
        self.port = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))

    def _drain(self) -> None:
        for raw in self.proc.stderr:
            self.lines.append(raw.decode("utf-8", "replace"))

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024

    def gauges(self) -> dict[str, float]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
        return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if not line.startswith("#")}

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=120)


def load(port: int, lines: list[str], expected: list[str], requests: int, clients: int, first: int = 0) -> dict:
    """The client process: ``clients`` threads send requests ``first`` .. ``first + requests - 1``
    (request i: line i mod len(lines); XML-RPC when i mod 4 is 3). Returns what came back."""
    counter = iter(range(first, first + requests))
    lock = threading.Lock()
    out = {"latencies": [], "ok": 0, "busy": 0, "busy_without_retry_after": 0, "wrong": [], "errors": []}

    def worker() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                break
            k = i % len(lines)
            start = time.perf_counter()
            try:
                status, retry, got = _ask(conn, lines[k], xmlrpc_call=i % 4 == 3)
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                with lock:
                    out["errors"].append(f"{type(e).__name__}: {e}")
                continue
            seconds = time.perf_counter() - start
            with lock:
                if status == "busy":
                    out["busy"] += 1
                    out["busy_without_retry_after"] += retry is None
                elif status == "ok" and got == expected[k]:
                    out["ok"] += 1
                    out["latencies"].append(seconds)
                elif status == "ok":
                    out["wrong"].append(f"line {k}: {got!r}")
                else:
                    out["errors"].append(got)
        conn.close()

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out["seconds"] = time.perf_counter() - start
    return out


def _ask(conn: http.client.HTTPConnection, line: str, xmlrpc_call: bool) -> tuple[str, str | None, str]:
    """("ok" | "busy" | "error", the Retry-After header, the translation or the error)."""
    if xmlrpc_call:
        body = xmlrpc.client.dumps(({"text": line},), "translate").encode()
        conn.request("POST", "/RPC2", body, {"Content-Type": "text/xml"})
    else:
        conn.request("POST", "/translate", json.dumps({"text": line}).encode(), {"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    retry = response.getheader("Retry-After")
    if xmlrpc_call:
        try:
            return "ok", retry, xmlrpc.client.loads(data)[0][0]["text"].rstrip(" ")
        except xmlrpc.client.Fault as f:
            return ("busy" if "server busy" in f.faultString else "error"), retry, f.faultString
    if response.status == 503:
        return "busy", retry, ""
    if response.status != 200:
        return "error", retry, f"HTTP {response.status}: {data[:200]!r}"
    return "ok", retry, json.loads(data)["translation"]


def client_process(*args) -> dict:
    """:func:`load` in a process of its own (the clients must not share the server's cores' GIL)."""
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        return pool.submit(load, *args).result()


def cli_translations(lines: list[str]) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "fstdecode", "-q", "decode", *MODEL, *SEARCH, "--method", "stack"],
                          input="\n".join(lines).encode() + b"\n", capture_output=True, cwd=ROOT, check=True)
    return proc.stdout.decode("utf-8").splitlines()


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.999999) - 1))] if ordered else float("nan")


def add_args(ap) -> None:
    ap.add_argument("--requests", type=int, default=2000, help="requests per throughput run (default 2000)")
    ap.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each thread count, alternating (default 2)")
    ap.add_argument("--memory-requests", type=int, default=10_000, help="requests of the memory phase (default 10,000)")
    ap.add_argument("--max-seconds", type=float, default=1800, help="stop after this long (default 1800)")
    ap.add_argument("--search-flags", default="", metavar="FLAGS",
                    help="more search flags for the server and the CLI's reference run, e.g. '--beam-size 1000' "
                    "(a heavier decode per request)")


def run(args, record) -> int:
    if args.quick:
        args.requests, args.repeats, args.memory_requests = 400, 1, 2000
    deadline = time.monotonic() + args.max_seconds
    SEARCH[:] = args.search_flags.split()
    lines = (HANSARDS / "input").read_text(encoding="utf-8").splitlines()
    expected = cli_translations(lines)
    checks: list[tuple[str, bool]] = []
    rows = []
    for rep in range(args.repeats):
        for threads in (1, 2):
            if time.monotonic() > deadline:
                raise SystemExit("--max-seconds reached")
            server = Server(*METHOD, "--threads", str(threads))
            load_before = load_avg()
            client_process(server.port, lines, expected, 48, args.clients)  # warm-up: every line once
            got = client_process(server.port, lines, expected, args.requests, args.clients)
            status = server.stop()
            rows.append((threads, rep, got, load_before, load_avg()))
            log(f"threads {threads} run {rep + 1}: {args.requests / got['seconds']:.0f} req/s, ok {got['ok']}, "
                f"errors {len(got['errors'])}, wrong {len(got['wrong'])}, exit {status}")
            checks.append((f"threads {threads} run {rep + 1}: {args.requests} answers, all the CLI's, no error",
                           got["ok"] == args.requests and not got["errors"] and not got["wrong"] and got["busy"] == 0))
            checks.append((f"threads {threads} run {rep + 1}: SIGTERM exit status 0", status == 0))
    rate = {t: statistics.median(args.requests / g["seconds"] for (tt, _, g, _, _) in rows if tt == t) for t in (1, 2)}
    speedup = rate[2] / rate[1]
    checks.append((f"2 threads / 1 thread throughput {speedup:.2f} >= 1.3", speedup >= 1.3))

    server = Server(*METHOD, "--threads", "1", "--queue-size", "2")
    over = client_process(server.port, lines, expected, args.requests // 2, 16)
    time.sleep(0.2)
    gauges = server.gauges()
    checks.append(("overload: every request answered right or refused with Retry-After",
                   over["ok"] + over["busy"] == args.requests // 2 and not over["wrong"] and not over["errors"]
                   and over["busy_without_retry_after"] == 0))
    checks.append(("overload: queue gauges back to 0", gauges["fstdecode_queue_length"] == 0
                   and gauges["fstdecode_requests_in_flight"] == 0 and gauges["fstdecode_sentences_decoding"] == 0))
    checks.append(("overload: SIGTERM exit status 0", server.stop() == 0))
    log(f"overload: {over['ok']} answered, {over['busy']} refused (busy), {len(over['errors'])} errors")

    server = Server(*METHOD, "--threads", "2")
    early = client_process(server.port, lines, expected, 1000, args.clients)
    rss_1000 = server.rss_mb()
    late = client_process(server.port, lines, expected, args.memory_requests - 1000, args.clients, 1000)
    rss_last = server.rss_mb()
    server.stop()
    memory_ok = not early["errors"] and not late["errors"] and not late["wrong"]
    checks.append((f"RSS after request {args.memory_requests:,} ({rss_last:.1f} MB) <= after request 1,000 "
                   f"({rss_1000:.1f} MB) + 20 MB", rss_last <= rss_1000 + 20 and memory_ok))
    log(f"memory: {rss_1000:.1f} MB after 1,000, {rss_last:.1f} MB after {args.memory_requests:,}")

    lines_out = [
        "## Load test (`scripts/bench_server.py`)",
        "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s; load average at start {record.load_start}",
        f"- model: the Hansards fr-en table and the UN trigram LM (`{' '.join(MODEL[6:])}`), "
        f"`--method stack{' ' + ' '.join(SEARCH) if SEARCH else ''}`; "
        f"{args.clients} clients in a process of their own, keep-alive connections, one request in four over "
        "XML-RPC; each run after a warm-up of the 48 sentences",
        "",
        "| server threads | run | requests | req/s | p50 (ms) | p99 (ms) | load avg before | after |",
        "|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for threads, rep, got, before, after in rows:
        lat = got["latencies"]
        lines_out.append(f"| {threads} | {rep + 1} | {args.requests:,} | {args.requests / got['seconds']:.0f} | "
                         f"{1000 * quantile(lat, 0.5):.1f} | {1000 * quantile(lat, 0.99):.1f} | {before} | {after} |")
    lines_out += [
        "",
        f"Median throughput: {rate[1]:.0f} req/s with 1 thread, {rate[2]:.0f} with 2 ({speedup:.2f}x).",
        f"Overload (1 thread, queue 2, 16 clients, {args.requests // 2:,} requests): {over['ok']:,} answered, "
        f"{over['busy']:,} refused with Retry-After. Memory: RSS {rss_1000:.1f} MB after request 1,000, "
        f"{rss_last:.1f} MB after request {args.memory_requests:,}.",
        "",
        "| check | outcome |",
        "|---|---|",
        *(f"| {name} | {'ok' if ok else '**failed**'} |" for name, ok in checks),
    ]
    write_section(args.out, "bench_server", marked("bench_server", lines_out), title="# The translation server\n")
    log(f"wrote the bench_server section of {args.out}")
    failed = [name for name, ok in checks if not ok]
    for name in failed:
        log(f"failed: {name}")
    return 1 if failed else 0


main = script("bench_server", __doc__, run, add_args=add_args, out=DOCS / "server.md", needs_data=True,
              quick="400 requests per run, one run of each, 2,000 in the memory phase")

if __name__ == "__main__":
    sys.exit(main())
