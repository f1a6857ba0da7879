#!/usr/bin/env python3
"""What lexicalized reordering costs the signature DP in states (gold Europarl model, issue 13).

With a reordering model each tape signature also carries its first phrase's pending backward
row and its last phrase's span and forward row (fstdecode/statespace/reordering.py), so
states that the LM and the positions alone would merge split. This script runs the exact
signature DP (``signature_dp.run``, the Python oracle, ``paper`` semantics) on the first K words
of each of the 5 gold sentences (moses-lexreo-europarl-fr-en, table-limit 20), with the
model's reordering feature and without it, and reports the states and transitions (summed
over the 5 prefixes), their ratio, and the seconds. Cases:

* the gold reordering type (msd-bidirectional-fe) and, on the same table, types whose
  orientations read less of the spans or that have one direction (msd-backward-fe,
  mslr-backward-fe, monotonicity-bidirectional-fe, leftright-forward-fe), weights 0.3;
* the LM searched as a bigram (``lm_order=2``) and at its full order 5;
* d = 3, and d = 4 for the bigram LM.

A case that exceeds ``--cap`` states on some prefix is reported as such. The whole run takes
about 40 minutes on one core (the 5-gram cases about 4 minutes each).

    python -m scripts.lr_state_counts [--cap N] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import dataclasses
import sys
import time

from scripts.benchlib import DATA, DOCS, log, marked, script, write_section

from fstdecode import Decoder, load_model
from fstdecode.model.lexical_reordering import ReorderingModel, parse_reordering_type
from fstdecode.problem.problem import SearchLimitError
from fstdecode.search import signature_dp

GOLD = DATA / "moses-lexreo-europarl-fr-en"
TYPES = ("msd-bidirectional-fe", "msd-backward-fe", "mslr-backward-fe", "monotonicity-bidirectional-fe",
         "leftright-forward-fe")
#: (LM order, d, prefix length K)
CASES = ((2, 3, 12), (2, 4, 8), (5, 3, 10))


def with_type(model, type_string: str):
    """The model with its reordering table read as ``type_string`` (weights 0.3 each)."""
    config = parse_reordering_type(type_string)
    lr = ReorderingModel(config, model.reordering.table, None, model.reordering.name)
    weights = dataclasses.replace(model.weights, lr=(0.3,) * config.num_features)
    return dataclasses.replace(model, reordering=lr, weights=weights)


def count(model, prefixes: list[str], cap: int) -> tuple[int, int, float] | None:
    """Summed states and transitions of the DP on the prefixes, and seconds; None over ``cap``."""
    decoder = Decoder(model, "dp")
    states = transitions = 0
    start = time.perf_counter()
    for line in prefixes:
        try:
            chart = signature_dp.run(decoder.problem(line), max_states=cap)
        except SearchLimitError:
            return None
        states += chart.states
        transitions += chart.transitions
    return states, transitions, time.perf_counter() - start


def run(args, record) -> int:
    lines = (GOLD / "to-translate.txt").read_text(encoding="utf-8").splitlines()
    rows = []
    for order, d, k in CASES:
        base = load_model(GOLD / "moses.ini", distortion_semantics="paper", lm_order=order)
        base = dataclasses.replace(base, distortion_limit=d)
        prefixes = [" ".join(line.split()[:k]) for line in lines]
        plain = count(dataclasses.replace(base, reordering=None), prefixes, args.cap)
        log(f"order {order} d {d} K {k} without LR: {plain}")
        for type_string in TYPES:
            lr = count(with_type(base, type_string), prefixes, args.cap)
            log(f"  {type_string}: {lr}")
            rows.append((order, d, k, type_string, plain, lr))
    out = [
        "## Lexicalized reordering in the signature DP: states with and without it (`scripts/lr_state_counts.py`)",
        "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s; load average at start {record.load_start}",
        "- model: moses-lexreo-europarl-fr-en (table-limit 20), `paper` semantics, the exact signature DP "
        "(the Python oracle); each row sums the first K words of its 5 sentences; one run each; "
        f"a case over {args.cap:,} states on a prefix reads \"over cap\"",
        "",
        "| LM order | d | K | reordering type | states without | states with | ratio | transitions without "
        "| transitions with | ratio | s without | s with |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for order, d, k, type_string, plain, lr in rows:
        if plain is None or lr is None:
            out.append(f"| {order} | {d} | {k} | {type_string} | {'over cap' if plain is None else f'{plain[0]:,}'} "
                       f"| {'over cap' if lr is None else f'{lr[0]:,}'} | | | | | | |")
            continue
        out.append(
            f"| {order} | {d} | {k} | {type_string} | {plain[0]:,} | {lr[0]:,} | {lr[0] / plain[0]:.2f} | "
            f"{plain[1]:,} | {lr[1]:,} | {lr[1] / plain[1]:.2f} | {plain[2]:.1f} | {lr[2]:.1f} |"
        )
    write_section(args.out, "lr_state_counts", marked("lr_state_counts", out))
    log(f"wrote the lr_state_counts section of {args.out}")
    return 0


def add_args(ap) -> None:
    ap.add_argument("--cap", type=int, default=1_000_000, help="state cap per prefix (default 1,000,000)")


main = script("lr_state_counts", __doc__, run, out=DOCS / "benchmarks.md", needs_data=True, add_args=add_args)

if __name__ == "__main__":
    sys.exit(main())
