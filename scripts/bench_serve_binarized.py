#!/usr/bin/env python3
"""``fstdecode serve`` on a big binarized model: start-up, memory and latency, per sentence against whole.

The model is a folder of ``fstdecode binarize`` (default /tmp/bin_full: the generated model of
8 million pairs, lexicalized reordering and a 5-gram LM image; ``scripts/make_big_model.py``, then
``fstdecode binarize``). Two ways to serve it, the runs alternating:

* ``per-sentence`` (what ``fstdecode serve -f DIR/moses.ini`` does): no pair read at start-up;
  each sentence is decoded with the mapped tables filtered to its words;
* ``whole`` (what serve did before, and still does for text tables): every pair read into the
  core's index at start-up (the same command with the binarized-table test forced off).

Each run: the server starts on a free port of 127.0.0.1 while a client keeps trying the first input
line; measured are the seconds from the process' start to its start-up line and to that first
answer, its RSS then and after the other lines (sent one at a time, JSON ``/translate``), and each
request's latency. Every answer must equal ``fstdecode decode --format json`` on the same lines
(translation and score). Writes the ``bench_serve_binarized`` section of docs/server.md.

    python -m scripts.bench_serve_binarized [--model DIR/moses.ini] [--input FILE] [--lines N] [--runs K]
"""

from __future__ import annotations

import http.client
import json
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from scripts.benchlib import DOCS, ROOT, load_avg, log, marked, script, write_section

#: The server with the binarized-table test forced off: the model read whole, as before issue 26's change.
WHOLE = ("import sys; from fstdecode.cli import main as m; "
         "m.binarized_tables = lambda *a, **k: False; sys.exit(m.main())")


def add_args(ap) -> None:
    ap.add_argument("--model", default="/tmp/bin_full/moses.ini", help="a binarized model's moses.ini")
    ap.add_argument("--input", default="/tmp/bbm_full/input.txt", help="input lines (one a request)")
    ap.add_argument("--lines", type=int, default=50, help="lines sent (default 50)")
    ap.add_argument("--runs", type=int, default=2, help="runs of each way, alternating (default 2)")
    ap.add_argument("--method", default=None, help="the server's --method and decode's (default: their default)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of process ``pid``, MB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return tuple(int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM"))  # type: ignore[return-value]


def translate(port: int, text: str, timeout: float = 600) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/translate", json.dumps({"text": text}), {"Content-Type": "application/json"})
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {body[:200]!r}")
        return json.loads(body)
    finally:
        conn.close()


def serve_run(way: str, model: str, lines: list[str], method: list[str]) -> dict:
    """One server's life: start, the first answer, the other lines one at a time, SIGTERM."""
    port = free_port()
    head = [sys.executable, "-m", "fstdecode"] if way == "per-sentence" else [sys.executable, "-c", WHOLE]
    t0 = time.perf_counter()
    proc = subprocess.Popen([*head, "-q", "serve", "-f", model, "--port", str(port), *method], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    said: dict[str, float | str] = {}

    def drain() -> None:
        for line in proc.stderr:
            if "serving" in line and "line" not in said:
                said["line"], said["at"] = line.strip(), time.perf_counter() - t0

    threading.Thread(target=drain, daemon=True).start()
    while True:
        try:
            first = translate(port, lines[0])
            break
        except (ConnectionRefusedError, ConnectionResetError):
            if proc.poll() is not None:
                raise RuntimeError(f"the server ({way}) stopped with status {proc.returncode}")
            time.sleep(0.01)
    first_at = time.perf_counter() - t0
    rss_first, _ = rss_mb(proc.pid)
    results, latencies = [first], []
    for text in lines[1:]:
        start = time.perf_counter()
        results.append(translate(port, text))
        latencies.append(time.perf_counter() - start)
    rss_end, peak = rss_mb(proc.pid)
    proc.send_signal(signal.SIGTERM)
    status = proc.wait(timeout=60)
    return {"way": way, "line_at": said.get("at"), "first_at": first_at, "rss_first": rss_first, "rss_end": rss_end,
            "peak": peak, "latencies": latencies, "results": results, "status": status, "line": said.get("line")}


def cli_results(model: str, lines: list[str], method: list[str]) -> list[dict]:
    proc = subprocess.run([sys.executable, "-m", "fstdecode", "-q", "decode", "-f", model, "--format", "json", *method],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, cwd=ROOT, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines()]


def key(result: dict) -> tuple:
    return result.get("translation"), result.get("score"), result.get("error")


def run(args, record) -> int:
    lines = [line.rstrip("\n") for line in open(args.input, encoding="utf-8")][: args.lines]
    method = ["--method", args.method] if args.method else []
    log(f"fstdecode decode on {len(lines)} lines (the reference)")
    reference = [key(r) for r in cli_results(args.model, lines, method)]
    runs = []
    for k in range(args.runs):
        for way in ("per-sentence", "whole"):
            before = load_avg()
            log(f"run {k + 1}: {way}")
            got = serve_run(way, args.model, lines, method)
            got.update(run=k + 1, before=before, after=load_avg())
            runs.append(got)
    rows, checks, ok = [], [], True
    for r in runs:
        lat = sorted(r["latencies"])
        p50 = statistics.median(lat) * 1000
        p90 = lat[int(0.9 * (len(lat) - 1))] * 1000
        rows.append(f"| {r['way']} | {r['run']} | {r['line_at']:.2f} | {r['first_at']:.2f} | {r['rss_first']:.0f} | "
                    f"{r['rss_end']:.0f} | {r['peak']:.0f} | {p50:.0f} | {p90:.0f} | {r['before']} | {r['after']} |")
        same = [key(x) for x in r["results"]] == reference
        ok = ok and same and r["status"] == 0
        checks.append(f"| {r['way']} run {r['run']}: {len(lines)} answers equal to decode's; SIGTERM exit 0 | "
                      f"{'ok' if same and r['status'] == 0 else 'FAILED'} |")
    start_line = next(r["line"] for r in runs if r["way"] == "per-sentence")
    section = marked("bench_serve_binarized", [
        "## A binarized model served per sentence (`scripts/bench_serve_binarized.py`)",
        "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s; load average at start {record.load_start}",
        f"- model: `{args.model}`; {len(lines)} lines of `{args.input}`, sent one at a time (JSON `/translate`), "
        f"method {args.method or 'the default (prove)'}, 1 server thread",
        f"- start-up line: `{start_line}`",
        "",
        "| tables | run | start-up line (s) | first answer (s) | RSS then (MB) | RSS at the end (MB) | peak RSS (MB) "
        "| p50 latency (ms) | p90 (ms) | load avg before | after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
        *rows,
        "",
        "| check | outcome |",
        "|---|---|",
        *checks,
    ])
    write_section(args.out, "bench_serve_binarized", section)
    log(f"wrote {args.out}")
    return 0 if ok else 1


main = script("bench_serve_binarized", __doc__, run, add_args=add_args, out=DOCS / "server.md")

if __name__ == "__main__":
    sys.exit(main())
