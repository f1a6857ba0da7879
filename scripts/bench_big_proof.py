#!/usr/bin/env python3
"""Issue 25's Done-when on the generated real-size model, whole process: exact, the default and the stack decoder.

The model is one written by ``scripts/make_big_model.py`` (5-gram LM, lexicalized reordering,
d = 6), best binarized (``fstdecode binarize -f MODEL/moses.ini -o BIN``), and its input lines:

    python -m scripts.make_big_model --out /tmp/bbm_full --preset full
    fstdecode binarize -f /tmp/bbm_full/moses.ini -o /tmp/bin_full
    python -m scripts.bench_big_proof --ini /tmp/bin_full/moses.ini --input /tmp/bbm_full/input.txt

Each run is ``python -m fstdecode -q decode -f INI --format json [--method M] < INPUT`` in a
fresh process, timed whole (Python's start, the model's load, every line), its peak RSS read
from its own rusage (``os.wait4``). ``--rounds`` rounds (default 3), the three commands
alternating (``--method stack``, the default, ``--method exact``), after one untimed
``--method stack`` run (so that no timed run reads the model's files cold); medians over the
rounds:

* the default against ``--method stack`` (target: at most 3x), and the lines it proves;
* ``--method exact``: the lines proven within its budget (target: at least 80%), the longest
  line (its ``stats.seconds``: the stack decoder, the heuristic's tables and the A*; target: at
  most 60 s) and the process's peak RSS (target: at most 4 GB), and where a line's time went
  (the sums of ``stats.phases``).

No result is cached across lines or runs. The results replace the ``bench_big_proof`` section of
docs/benchmarks.md.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

from scripts.benchlib import DOCS, log, marked, script, whole_process, write_section

RUNS = (("stack", "stack"), ("default", None), ("exact", "exact"))


def decode(ini: Path, method: str | None, source: Path) -> tuple[float, int, list[dict]]:
    """(wall seconds, peak RSS bytes, JSON lines) of one ``fstdecode decode`` process on ``source``.
    The child is reaped by ``os.wait4``, so its rusage (peak RSS) is its own."""
    flags = [] if method is None else ["--method", method]
    argv = [sys.executable, "-m", "fstdecode", "-q", "decode", "-f", str(ini), "--format", "json", *flags]
    wall, peak, out, _ = whole_process(argv, source.read_bytes())
    results = [json.loads(line) for line in out.splitlines()]
    expected = len(source.read_text(encoding="utf-8").splitlines())
    if len(results) != expected:
        raise SystemExit(f"{method or 'default'}: {len(results)} lines out for {expected} in")
    return wall, peak, results


def met(ok: bool) -> str:
    return "met" if ok else "**not met**"


def run(args, record) -> int:
    ini, source = Path(args.ini), Path(args.input)
    for path in (ini, source):
        if not path.is_file():
            raise SystemExit(f"{path}: no such file (see this script's docstring for how to make the model)")
    text = source.read_text(encoding="utf-8")
    shown = f"`{source}`"
    if args.limit is not None:  # a smoke run: the first N lines
        text = "".join(line + "\n" for line in text.splitlines()[: args.limit])
        limited = tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".txt", delete=False)
        with limited:
            limited.write(text)
        source = Path(limited.name)
        shown = f"the first {args.limit} lines of `{args.input}`"
    count = len(text.splitlines())
    walls: dict[str, list[float]] = {name: [] for name, _ in RUNS}
    rss: dict[str, list[int]] = {name: [] for name, _ in RUNS}
    results: dict[str, list[list[dict]]] = {name: [] for name, _ in RUNS}
    # One untimed run first, so that the first timed one does not read the model's files cold.
    wall, _, _ = decode(ini, "stack", source)
    log(f"warm-up: stack {wall:.2f} s (not counted)")
    for r in range(args.rounds):
        for name, method in RUNS:
            wall, peak, lines = decode(ini, method, source)
            walls[name].append(wall)
            rss[name].append(peak)
            results[name].append(lines)
            log(f"round {r + 1}: {name} {wall:.2f} s, peak RSS {peak / 2**30:.2f} GB, "
                f"{sum(x.get('optimal', False) for x in lines)}/{count} proven")
    med = {name: statistics.median(walls[name]) for name in walls}
    ratio = med["default"] / med["stack"]
    default_proven = statistics.median(sum(x.get("optimal", False) for x in run_) for run_ in results["default"])
    exact_proven = statistics.median(sum(x.get("optimal", False) for x in run_) for run_ in results["exact"])
    longest = [max(x["stats"]["seconds"] for x in run_) for run_ in results["exact"]]
    phases = {k: statistics.median(sum(x["stats"].get("phases", {}).get(k, 0.0) for x in run_) for run_ in results["exact"])
              for k in ("lower", "bounds", "search")}
    per_line = statistics.median(statistics.median(x["stats"]["seconds"] for x in run_) for run_ in results["exact"])
    peak = max(rss["exact"])
    share = exact_proven / count
    optimum = {}
    disagree = 0
    for run_ in results["exact"]:
        for x in run_:
            if x.get("optimal"):
                optimum[x["id"]] = x["score"]
    for run_ in results["default"]:
        for x in run_:
            if x.get("optimal") and x["id"] in optimum and abs(x["score"] - optimum[x["id"]]) > 1e-6 * max(1.0, abs(optimum[x["id"]])):
                disagree += 1

    def row(name: str, label: str, proven: float) -> str:
        shown = ", ".join(f"{w:.1f}" for w in walls[name])
        peaks = ", ".join(f"{b / 2**30:.2f}" for b in rss[name])
        return f"| {label} | {count} | {med[name]:.1f} | {shown} | {peaks} | {proven:.0f}/{count} |"

    lines = [
        "## Proof on the generated real-size model, whole process (`bench_big_proof`)", "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; load average at start {record.load_start}",
        f"- model: `{ini}` (scripts/make_big_model.py's, 5-gram LM, lexicalized reordering, d = 6), input"
        f" {shown} ({count} lines); each run one `fstdecode decode -f INI --format json` process, timed"
        f" whole, its peak RSS its own; an untimed `--method stack` run first (the page cache warm);"
        f" {args.rounds} rounds, the three commands alternating; medians.",
        "",
        "| run | lines | median wall s | walls s | peak RSS GB | proven |",
        "|---|---:|---:|---|---|---:|",
        row("stack", "`--method stack`", 0),
        row("default", "default (`prove`)", default_proven),
        row("exact", "`--method exact`", exact_proven),
        "",
        f"`--method exact`'s decode time (medians over the rounds): the stack decoder {phases['lower']:.1f} s, the"
        f" heuristic's tables {phases['bounds']:.1f} s, the A* {phases['search']:.1f} s; a line's median"
        f" {per_line:.1f} s.",
        "",
        "Against issue 25's targets:",
        "",
        f"- exact's lines proven within its budget: {100 * share:.0f}% (target at least 80%: {met(share >= 0.8)})",
        f"- exact's longest line: {statistics.median(longest):.1f} s (median over the rounds; {max(longest):.1f} s at"
        f" most; target at most 60 s: {met(max(longest) <= 60)})",
        f"- exact's peak RSS: {peak / 2**30:.2f} GB (target at most 4 GB: {met(peak <= 4 * 2**30)})",
        f"- default / stack, whole process: {ratio:.1f}x (target at most 3x: {met(ratio <= 3)});"
        f" the default proves {default_proven:.0f}/{count}",
        f"- the default's proofs that disagree with exact's score: {disagree} (target 0: {met(disagree == 0)})",
        f"- run time {record.elapsed():.0f} s",
    ]
    if args.limit is not None:
        source.unlink()
    write_section(args.out, "bench_big_proof", marked("bench_big_proof", lines))
    log(f"wrote {args.out}")
    return 0


def _add_args(ap) -> None:
    ap.add_argument("--ini", required=True, help="the model's moses.ini (best its binarized copy)")
    ap.add_argument("--input", required=True, help="the lines to decode (make_big_model's input.txt)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    ap.add_argument("--limit", type=int, metavar="N", help="only the first N lines (a smoke run)")


main = script("bench_big_proof", __doc__, run, add_args=_add_args, out=DOCS / "benchmarks.md")

if __name__ == "__main__":
    raise SystemExit(main())
