#!/usr/bin/env python3
"""What Moses' gap rule costs the signature DP in states (gold Europarl model, issue 13).

Under ``moses`` semantics each tape signature also carries its largest m(p) and its leftmost
start (fstdecode/statespace/gaprule.py): states that ``paper`` semantics would merge can split,
and transitions that break the rule are dropped. This script runs the exact signature DP
(``signature_dp.run``, Python engine) on the first K words of each of the 5 gold sentences
(moses-lexreo-europarl-fr-en, table-limit 20) under both semantics, without the model's
reordering feature and with it, and reports the states and transitions (summed over the 5
prefixes), their ratio moses / paper, and the seconds. State and transition counts are exact
and do not depend on the machine's load; the seconds do.

    python -m scripts.gaprule_state_counts [--cap N] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import dataclasses
import sys

from scripts.benchlib import DATA, DOCS, log, marked, script, write_section
from scripts.lr_state_counts import count

from fstdecode import load_model

GOLD = DATA / "moses-lexreo-europarl-fr-en"
#: (LM order, d, prefix length K)
CASES = ((2, 3, 12), (2, 4, 8), (5, 3, 8), (5, 6, 6))


def run(args, record) -> int:
    lines = (GOLD / "to-translate.txt").read_text(encoding="utf-8").splitlines()
    rows = []
    for order, d, k in CASES:
        prefixes = [" ".join(line.split()[:k]) for line in lines]
        for reordering in (False, True):
            got = {}
            for semantics in ("paper", "moses"):
                model = load_model(GOLD / "moses.ini", distortion_semantics=semantics, lm_order=order)
                model = dataclasses.replace(model, distortion_limit=d)
                if not reordering:
                    model = dataclasses.replace(model, reordering=None)
                got[semantics] = count(model, prefixes, args.cap)
                log(f"order {order} d {d} K {k} LR {reordering} {semantics}: {got[semantics]}")
            rows.append((order, d, k, reordering, got["paper"], got["moses"]))
    out = [
        "## Moses' gap rule in the signature DP: states under both semantics (`scripts/gaprule_state_counts.py`)",
        "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s; load average at start {record.load_start}",
        "- model: moses-lexreo-europarl-fr-en (table-limit 20), the exact signature DP (the Python oracle), "
        "without and with its msd-bidirectional-fe reordering feature; each row sums the first K words of "
        f"its 5 sentences; one run each; a case over {args.cap:,} states on a prefix reads \"over cap\"; "
        "the seconds were measured on a shared machine, the counts are exact",
        "",
        "| LM order | d | K | reordering | states paper | states moses | ratio | transitions paper "
        "| transitions moses | ratio | s paper | s moses |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for order, d, k, reordering, paper, moses in rows:
        lr = "msd-bidirectional-fe" if reordering else "none"
        if paper is None or moses is None:
            out.append(f"| {order} | {d} | {k} | {lr} | {'over cap' if paper is None else f'{paper[0]:,}'} "
                       f"| {'over cap' if moses is None else f'{moses[0]:,}'} | | | | | | |")
            continue
        out.append(
            f"| {order} | {d} | {k} | {lr} | {paper[0]:,} | {moses[0]:,} | {moses[0] / paper[0]:.2f} | "
            f"{paper[1]:,} | {moses[1]:,} | {moses[1] / paper[1]:.2f} | {paper[2]:.1f} | {moses[2]:.1f} |"
        )
    write_section(args.out, "gaprule_state_counts", marked("gaprule_state_counts", out))
    log(f"wrote the gaprule_state_counts section of {args.out}")
    return 0


def add_args(ap) -> None:
    ap.add_argument("--cap", type=int, default=1_000_000, help="state cap per prefix (default 1,000,000)")


main = script("gaprule_state_counts", __doc__, run, out=DOCS / "benchmarks.md", needs_data=True, add_args=add_args)

if __name__ == "__main__":
    sys.exit(main())
