#!/usr/bin/env python3
"""Issue 25's Done-when on Hansards, whole process: the default against ``--method stack``, and exact.

Each row is ``python -m fstdecode decode --format json`` in a fresh process, timed whole (Python's
start, the model's load, every line), on Hansards fr-en (../shared/data/hansards-fr-en-decoder,
log10 scores) with the UN English LM at its order 3, d = 4, table-limit 20:

* the 480-line input (the 48 test sentences, ten times over): the default (``--method prove``)
  and ``--method stack``, alternating, ``--rounds`` times (default 3); the medians and their
  ratio, the lines the default proves, and the check that every proven line's score is exact's;
* the 48 sentences with ``--method exact``, ``--rounds`` times: lines proven, the search seconds
  (the sum of the lines' ``stats.phases`` search, the A*'s expansion) and the most any line took
  (its ``stats.seconds``: stack decoder, heuristic and A*), medians over the rounds.

Each measured figure is set beside the issue's target. No result is cached across lines (the
480-line input repeats each sentence ten times, and each is decoded afresh). The results replace
the ``bench_default`` section of docs/benchmarks.md.

    python -m scripts.bench_default [--rounds N] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from scripts.benchlib import DOCS, HANSARDS, UN_LM, log, marked, script, write_section

FLAGS = [
    "--phrase-table", str(HANSARDS / "tm"), "--tm-score-format", "log10", "--lm", str(UN_LM),
    "--lm-order", "3", "--distortion-limit", "4", "--table-limit", "20", "--format", "json",
]


def decode(method: str | None, text: str) -> tuple[float, list[dict]]:
    """(wall seconds, JSON lines) of one ``fstdecode decode`` process on ``text``."""
    flags = [] if method is None else ["--method", method]
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "fstdecode", "-q", "decode", *FLAGS, *flags],
        input=text.encode("utf-8"), capture_output=True, check=True,
    )
    wall = time.perf_counter() - t
    results = [json.loads(line) for line in out.stdout.splitlines()]
    if len(results) != len(text.splitlines()):
        raise SystemExit(f"{method}: {len(results)} lines out for {len(text.splitlines())} in")
    return wall, results


def met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def run(args, record) -> int:
    sentences = (HANSARDS / "input").read_text(encoding="utf-8").splitlines()
    text48 = "\n".join(sentences) + "\n"
    text480 = text48 * 10
    walls: dict[str, list[float]] = {"stack": [], "default": [], "exact": []}
    default_runs, exact_runs = [], []
    for r in range(args.rounds):
        for name, method, text in (("stack", "stack", text480), ("default", None, text480), ("exact", "exact", text48)):
            wall, results = decode(method, text)
            walls[name].append(wall)
            if name == "default":
                default_runs.append(results)
            elif name == "exact":
                exact_runs.append(results)
            log(f"round {r + 1}: {name} {wall:.2f} s")
    optimum = [x["score"] for x in exact_runs[0]]
    if not all(x["optimal"] for run_ in exact_runs for x in run_):
        log("exact left a line unproven")
    disagree = 0
    for run_ in default_runs:
        for i, x in enumerate(run_):
            if x["optimal"] and abs(x["score"] - optimum[i % len(sentences)]) > 1e-6 * max(1.0, abs(optimum[i % len(sentences)])):
                disagree += 1
    proven = statistics.median(sum(x["optimal"] for x in run_) for run_ in default_runs)
    stack, default, exact = (statistics.median(walls[k]) for k in ("stack", "default", "exact"))
    ratio = default / stack
    search = statistics.median(sum(x["stats"]["phases"]["search"] for x in run_) for run_ in exact_runs)
    worst = statistics.median(max(x["stats"]["seconds"] for x in run_) for run_ in exact_runs)
    exact_proven = min(sum(x["optimal"] for x in run_) for run_ in exact_runs)
    share = proven / len(text480.splitlines())
    lines = [
        "## The default and exact on Hansards, whole process (`bench_default`)", "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; load average at start {record.load_start}",
        "- Hansards fr-en, UN LM order 3, d = 4, table-limit 20; each run one `fstdecode decode --format json`"
        f" process, timed whole; {args.rounds} rounds, the three commands alternating; medians.",
        "",
        "| run | lines | median wall s | walls s | proven |",
        "|---|---:|---:|---|---:|",
        f"| `--method stack` | 480 | {stack:.2f} | {', '.join(f'{w:.2f}' for w in walls['stack'])} | |",
        f"| default (`prove`) | 480 | {default:.2f} | {', '.join(f'{w:.2f}' for w in walls['default'])} | {proven:.0f}/480 |",
        f"| `--method exact` | 48 | {exact:.2f} | {', '.join(f'{w:.2f}' for w in walls['exact'])} | {exact_proven}/48 |",
        "",
        "Against issue 25's targets:",
        "",
        f"- default / stack, whole process: {ratio:.1f}x (target at most 3x: {met(ratio <= 3)}; stretch 2x)",
        f"- default's lines proven: {100 * share:.0f}% (target at least 75%: {met(share >= 0.75)}; stretch 90%)",
        f"- proofs that disagree with exact's score: {disagree} (target 0: {met(disagree == 0)})",
        f"- exact, 48 lines: {exact_proven}/48 proven, {search:.1f} s of A* search (target at most 20 s:"
        f" {met(exact_proven == 48 and search <= 20)}), the slowest line {worst:.2f} s (target at most 5 s:"
        f" {met(worst <= 5)}; stretch 2 s)",
        f"- run time {record.elapsed():.0f} s",
    ]
    write_section(args.out, "bench_default", marked("bench_default", lines))
    log(f"wrote {args.out}")
    return 0


def _add_args(ap) -> None:
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")


main = script("bench_default", __doc__, run, add_args=_add_args, out=DOCS / "benchmarks.md", needs_data=True)

if __name__ == "__main__":
    raise SystemExit(main())
