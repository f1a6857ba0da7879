#!/usr/bin/env python3
"""The default method's proof budget: proof rate and time against the A*'s state budget.

Runs, in one process, ``--method prove`` (the stack decoder, then the A* within a state budget)
at each budget of ``--budgets``, and the stack decoder alone, on:

* Hansards fr-en (../shared/data/hansards-fr-en-decoder, log10 scores) with the UN English LM at
  its real order 3, d = 4, table-limit 20 (the 48 input lines);
* moses-lexreo-europarl-fr-en with its own moses.ini (5-gram, lexicalized reordering);
* moses-early-distortion-de-en with its own moses.ini (trigram, d = 6).

For each budget: lines proven, the decode time (the sum of the lines' ``stats.seconds``: the
stack decoder, the heuristic's tables and the A*, no model load) against the stack decoder's
alone, the time of each phase, and the median root and final gaps of the lines not proven. Every
budget's score is checked to be at least the stack decoder's (prove keeps the better), and every
proven score at least every other row's (a proof is never beaten). Budgets alternate line by
line, so the machine's load falls on all of them alike. The results replace the ``bench_proof``
section of docs/benchmarks.md.

    python -m scripts.bench_proof [--budgets 1000,10000,...] [--limit N] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scripts.benchlib import DOCS, log, marked, script, shared_models, write_section

from fstdecode.decoder import Decoder
from fstdecode.search.prove import DEFAULT_PROVE_MAX_STATES

BUDGETS = (1_000, 3_000, 10_000, 20_000, 50_000, 100_000, 1_000_000)


def measure(model, lines: list[str], budgets: tuple[int, ...], name: str) -> dict:
    """Per budget (0: the stack decoder alone): per-line results, budgets alternating per line."""
    decoders = {0: Decoder(model, "stack")} | {b: Decoder(model, "prove", max_states=b) for b in budgets}
    rows: dict[int, list] = {b: [] for b in decoders}
    for i, line in enumerate(lines):
        for b, decoder in decoders.items():
            rows[b].append(decoder.decode(line, i))
        stack = rows[0][-1].best.search_score
        proven = [rows[b][-1].best.search_score for b in budgets if rows[b][-1].optimal]
        for b in budgets:
            got = rows[b][-1].best.search_score
            if got < stack - 1e-6 or any(got > p + 1e-6 for p in proven):
                raise SystemExit(f"{name} line {i} budget {b}: score {got} against stack {stack}, proven {proven}")
        log(f"{name} #{i}: proven at " + ",".join(str(b) for b in budgets if rows[b][-1].optimal))
    return rows


def summary(name: str, rows: dict, words: int) -> list[str]:
    stack_seconds = sum(r.stats.seconds for r in rows[0])
    out = []
    for b, results in rows.items():
        seconds = sum(r.stats.seconds for r in results)
        if b == 0:
            out.append(f"| {name} | stack alone | | {seconds:.3f} | {1000 * seconds / words:.3f} | 1.0 | | | | | |")
            continue
        phase = {k: sum(dict(r.stats.phases).get(k, 0.0) for r in results) for k in ("lower", "bounds", "search")}
        unproven = [r for r in results if not r.optimal]
        root = [r.root_gap for r in unproven if r.root_gap is not None]
        final = [r.gap for r in unproven if r.gap is not None]
        proven = len(results) - len(unproven)
        out.append(
            f"| {name} | {b:,} | {proven}/{len(results)} ({100 * proven / len(results):.0f}%) | {seconds:.3f} | "
            f"{1000 * seconds / words:.3f} | {seconds / stack_seconds:.1f} | {phase['lower']:.3f} | {phase['bounds']:.3f} | "
            f"{phase['search']:.3f} | {statistics.median(root) if root else 0:.3g} | {statistics.median(final) if final else 0:.3g} |"
        )
    return out


def big_model(ini: Path, text: Path, budgets: tuple[int, ...]) -> list[str]:
    """Rows for a generated real-size model: each budget's ``fstdecode decode --format json`` in a
    fresh process (the model filtered to the input, as the CLI loads it), and ``--method stack``."""
    rows = []
    words = sum(len(line.split()) for line in text.read_text(encoding="utf-8").splitlines())
    runs = [("stack alone", ["--method", "stack"])] + [(f"{b:,}", ["--max-states", str(b)]) for b in budgets]
    stack_seconds = None
    for label, flags in runs:
        t = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "fstdecode", "decode", "-f", str(ini), "--format", "json", *flags],
            stdin=text.open("rb"), capture_output=True, check=True,
        )
        wall = time.perf_counter() - t
        lines = [json.loads(line) for line in out.stdout.splitlines()]
        seconds = sum(r["stats"]["seconds"] for r in lines)
        log(f"{ini}: {label} {wall:.1f} s")
        if stack_seconds is None:
            stack_seconds = seconds
            rows.append(f"| {ini.parent.name} | {label} | | {seconds:.3f} | {1000 * seconds / words:.3f} | 1.0 | | | | | | {wall:.1f} |")
            continue
        phase = {k: sum(r["stats"]["phases"][k] for r in lines) for k in ("lower", "bounds", "search")}
        proven = sum(r["optimal"] for r in lines)
        bounded = sum("upper_bound" in r for r in lines)
        unproven = [r for r in lines if not r["optimal"] and "root_gap" in r]
        root = statistics.median(r["root_gap"] for r in unproven) if unproven else 0
        final = statistics.median(r["gap"] for r in unproven) if unproven else 0
        rows.append(
            f"| {ini.parent.name} | {label} | {proven}/{len(lines)} ({bounded} with a bound) | {seconds:.3f} | "
            f"{1000 * seconds / words:.3f} | {seconds / stack_seconds:.1f} | {phase['lower']:.3f} | {phase['bounds']:.3f} | "
            f"{phase['search']:.3f} | {root:.3g} | {final:.3g} | {wall:.1f} |"
        )
    return rows


def run(args, record) -> int:
    budgets = tuple(int(b) for b in args.budgets.split(","))
    lines = [
        "## The default's proof budget (`bench_proof`)", "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; load average at start {record.load_start}",
        f"- `--method prove` (the default, budget {DEFAULT_PROVE_MAX_STATES:,}): the native stack decoder, then the A* of"
        " `--method exact` within the budget; *stack alone*: `--method stack`. Budgets alternate line by line in one"
        " process. *seconds*: the sum of the lines' `stats.seconds` (stack decoder, heuristic, A*; no model load);"
        " *× stack*: against the stack decoder alone; *lower / bounds / search*: the phases' seconds (`stats.phases`);"
        " *root gap / final gap*: medians over the lines not proven (`root_gap`, `gap`).",
        "",
        "| model | budget | proven | seconds | ms/word | × stack | lower s | bounds s | search s | root gap | final gap |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, model, text in shared_models(args.limit, hansards_orders=(3,)):
        words = sum(len(line.split()) for line in text)
        lines += summary(name, measure(model, text, budgets, name), words)
    if args.big is not None:
        big = Path(args.big)
        lines += [
            "",
            f"The generated real-size model `{big}` (`scripts/make_big_model.py --preset full`, then"
            " `fstdecode binarize`; 8M phrase pairs with lexicalized reordering, a 5-gram LM of 18.5M n-grams,"
            " d = 6, 50 lines of 15-35 words): each row one `fstdecode decode -f MODEL/moses.ini --format json"
            " [--max-states B]` in a fresh process (*wall s*: the whole process, load included). *with a bound*:"
            " lines whose heuristic was built within its work cap (`prove.bounds_work`), so that the A* ran.",
            "",
            "| model | budget | proven | seconds | ms/word | × stack | lower s | bounds s | search s | root gap | final gap | wall s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        lines += big_model(big / "moses.ini", Path(args.big_input), tuple(int(b) for b in args.big_budgets.split(",")))
    lines.append(f"- run time {record.elapsed():.0f} s")
    write_section(args.out, "bench_proof", marked("bench_proof", lines))
    log(f"wrote {args.out}")
    return 0


def _add_args(ap) -> None:
    ap.add_argument("--budgets", default=",".join(str(b) for b in BUDGETS), help="comma-separated state budgets")
    ap.add_argument("--limit", type=int, default=None, help="only the first N lines of each model")
    ap.add_argument("--big", default=None, help="a generated real-size model's folder (binarized or text) to run too")
    ap.add_argument("--big-input", default="/tmp/bbm_full/input.txt", help="its input (default /tmp/bbm_full/input.txt)")
    ap.add_argument("--big-budgets", default=str(DEFAULT_PROVE_MAX_STATES), help="its budgets (default: the default's)")


main = script("bench_proof", __doc__, run, add_args=_add_args, out=DOCS / "benchmarks.md", needs_data=True)

if __name__ == "__main__":
    raise SystemExit(main())
