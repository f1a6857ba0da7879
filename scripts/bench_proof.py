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

import statistics

from scripts.benchlib import DATA, DOCS, HANSARDS, UN_LM, log, marked, script, write_section

from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model
from fstdecode.search.prove import DEFAULT_PROVE_MAX_STATES

BUDGETS = (1_000, 3_000, 10_000, 20_000, 50_000, 100_000, 1_000_000)


def models(limit: int | None):
    """(name, model, lines) of each shared model."""
    hansards = load_model(
        phrase_table=HANSARDS / "tm", tm_score_format="log10", lm=UN_LM, lm_order=3, distortion_limit=4, table_limit=20
    )
    yield "Hansards trigram, d=4, tl=20", hansards, (HANSARDS / "input").read_text(encoding="utf-8").splitlines()[:limit]
    for folder, name in (
        ("moses-lexreo-europarl-fr-en", "Europarl 5-gram, lexicalized reordering"),
        ("moses-early-distortion-de-en", "de-en trigram, d=6"),
    ):
        lines = (DATA / folder / "to-translate.txt").read_text(encoding="utf-8").splitlines()[:limit]
        yield name, load_model(DATA / folder / "moses.ini"), lines


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
    for name, model, text in models(args.limit):
        words = sum(len(line.split()) for line in text)
        lines += summary(name, measure(model, text, budgets, name), words)
    lines.append(f"- run time {record.elapsed():.0f} s")
    write_section(args.out, "bench_proof", marked("bench_proof", lines))
    log(f"wrote {args.out}")
    return 0


def _add_args(ap) -> None:
    ap.add_argument("--budgets", default=",".join(str(b) for b in BUDGETS), help="comma-separated state budgets")
    ap.add_argument("--limit", type=int, default=None, help="only the first N lines of each model")


main = script("bench_proof", __doc__, run, add_args=_add_args, out=DOCS / "benchmarks.md", needs_data=True)

if __name__ == "__main__":
    raise SystemExit(main())
