#!/usr/bin/env python3
"""The exact search (``--method exact``) on the real models: proven sentences, times, states.

Runs, in one process, one sentence at a time:

* Hansards fr-en (../shared/data/hansards-fr-en-decoder, log10 scores) with the UN English LM
  at order 2 and at its real order 3, d = 4, table-limit 20, default weights: ``--method
  exact``, then ``--method fst`` (the cascade with the pruned R);
* moses-early-distortion-de-en with its own moses.ini (trigram, d = 6).

For each sentence: words, proven or not, the best score, the certificate's gap, states and
transitions, and seconds (the whole decode: the stack decoder's lower bound, the bounds, the
A*). Each search gets the default state budget and ``--time-limit`` seconds (default 60). The
stack decoder's (default settings) score is checked to be no better than the exact one. The
results replace the ``bench_exact`` section of docs/benchmarks.md.

    python -m scripts.bench_exact [--time-limit SEC] [--limit N] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import resource
import statistics
import time

from scripts.benchlib import DATA, DOCS, HANSARDS, UN_LM, log, marked, script, timed, write_section

from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model
from fstdecode.search.exact import DEFAULT_EXACT_MAX_STATES


def hansards(order: int):
    return load_model(
        phrase_table=HANSARDS / "tm", tm_score_format="log10", lm=UN_LM, lm_order=order,
        distortion_limit=4, table_limit=20,
    )


def de_en():
    return load_model(DATA / "moses-early-distortion-de-en" / "moses.ini")


def measure(model, lines: list[str], time_limit: float, name: str) -> list[dict]:
    """One row per line: the exact decode and the stack decoder's score."""
    exact = Decoder(model, "exact", time_limit=time_limit)
    stack = Decoder(model, "stack")
    rows = []
    for i, line in enumerate(lines):
        t = time.perf_counter()
        r = exact.decode(line, i)
        seconds = time.perf_counter() - t
        s = stack.decode(line, i)
        row = dict(
            i=i, n=len(line.split()), proven=r.optimal, score=r.best.search_score, gap=r.gap,
            states=r.stats.states, transitions=r.stats.transitions, seconds=seconds,
            stack=s.best.search_score,
        )
        if row["stack"] > row["score"] + 1e-6:
            raise SystemExit(f"{name} line {i}: the stack decoder beat the exact search ({row['stack']} > {row['score']})")
        log(f"{name} #{i} n={row['n']} proven={r.optimal} states={r.stats.states} {seconds:.2f}s")
        rows.append(row)
    return rows


def measure_fst(model, lines: list[str], exact_rows: list[dict], budget: float, name: str) -> list[dict]:
    """One row per line: ``--method fst`` (the pruned R) within ``budget`` seconds (SIGALRM), its
    score checked against the exact search's."""
    fst = Decoder(model, "fst", max_states=DEFAULT_EXACT_MAX_STATES)
    rows = []
    for i, line in enumerate(lines):
        r, seconds = timed(lambda: fst.decode(line, i), budget)
        proven = r is not None and r.optimal
        same = proven and abs(r.best.search_score - exact_rows[i]["score"]) <= 1e-6
        if proven and not same:
            raise SystemExit(f"{name} line {i}: fst {r.best.search_score} != exact {exact_rows[i]['score']}")
        row = dict(
            i=i, n=len(line.split()), proven=proven, score=r.best.search_score if r is not None else None,
            gap=r.gap if r is not None else None, states=r.stats.states if r is not None else 0,
            transitions=r.stats.transitions if r is not None else 0,
            seconds=seconds if seconds is not None else budget, stack=exact_rows[i]["stack"], timeout=r is None,
        )
        log(f"{name} fst #{i} n={row['n']} proven={proven} states={row['states']} {row['seconds']:.2f}s")
        rows.append(row)
    return rows


def summary(name: str, rows: list[dict]) -> list[str]:
    times = [r["seconds"] for r in rows]
    proven = sum(r["proven"] for r in rows)
    words = sum(r["n"] for r in rows)
    return [
        f"| {name} | {proven}/{len(rows)} | {statistics.median(times):.2f} | {max(times):.2f} | "
        f"{sum(times):.1f} | {1000 * sum(times) / words:.1f} | {max(r['states'] for r in rows):,} | "
        f"{sum(r['score'] is not None and r['stack'] > r['score'] + 1e-6 for r in rows)} |"
    ]


def table(name: str, rows: list[dict]) -> list[str]:
    out = [
        f"### {name}", "",
        "| # | words | proven | score | gap | states | transitions | seconds | stack's score |",
        "|---:|---:|:---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        gap = "" if r["gap"] is None else f"{r['gap']:.2e}" if r["gap"] else "0"
        score = "(time limit)" if r["score"] is None else f"{r['score']:.4f}"
        out.append(
            f"| {r['i']} | {r['n']} | {'yes' if r['proven'] else '**no**'} | {score} | {gap} | "
            f"{r['states']:,} | {r['transitions']:,} | {r['seconds']:.2f} | {r['stack']:.4f} |"
        )
    return out + [""]


def run(args, record) -> int:
    hansards_lines = (HANSARDS / "input").read_text(encoding="utf-8").splitlines()[: args.limit]
    de_lines = (DATA / "moses-early-distortion-de-en" / "to-translate.txt").read_text(encoding="utf-8").splitlines()
    runs = []
    for order, label in ((2, "bigram"), (3, "trigram")):
        model = hansards(order)
        exact_rows = measure(model, hansards_lines, args.time_limit, label)
        runs.append((f"Hansards, {label} (order {order}), d=4, tl=20", exact_rows))
        fst_rows = measure_fst(model, hansards_lines, exact_rows, args.time_limit, label)
        runs.append((f"Hansards, {label} (order {order}), d=4, tl=20, `--method fst`", fst_rows))
    runs.append(("moses-early-distortion-de-en (trigram, d=6)", measure(de_en(), de_lines, args.time_limit, "de-en")))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines = [
        "## Exact search (`bench_exact`)", "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; load average at start {record.load_start}; run time {record.elapsed():.0f} s; "
        f"peak resident memory of the process {peak:,.0f} MB",
        f"- budgets: the default {DEFAULT_EXACT_MAX_STATES:,} states and `--time-limit {args.time_limit:g}` per sentence;"
        " seconds are the whole decode (the stack decoder's lower bound, the bounds, the A*), one core.",
        "- *stack beats*: sentences where the default stack decoder scored higher than the exact search (must be 0);"
        " *proven*: `optimal: true`, the certificate (upper bound) equal to the score to 1e-6.",
        "- `--method fst` rows: the cascade `I ∘ P ∘ R ∘ L` with the pruned R (R over the options of the"
        " derivations that can reach the stack decoder's score, found by the exact search's A* run to exhaustion"
        " above it, then the signature states that can still reach it; see fstdecode/fst/cascade.py), the same"
        " state budget, and the time limit enforced by SIGALRM (a sentence cut there counts as not proven, at the"
        " limit); every proven score is checked equal to the exact search's. Its states are the A*'s states plus"
        " the signature states visited; its transitions, R's arcs.",
        "",
        "| run | proven | median s | max s | total s | ms/word | max states | stack beats |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, rows in runs:
        lines += summary(name, rows)
    lines.append("")
    for name, rows in runs:
        lines += table(name, rows)
    write_section(args.out, "bench_exact", marked("bench_exact", lines))
    log(f"wrote {args.out}")
    return 0


def _add_args(ap) -> None:
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per sentence and method (default 60)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N Hansards lines")


main = script("bench_exact", __doc__, run, add_args=_add_args, out=DOCS / "benchmarks.md", needs_data=True)

if __name__ == "__main__":
    raise SystemExit(main())
