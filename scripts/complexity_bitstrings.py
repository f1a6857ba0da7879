#!/usr/bin/env python3
"""Section 5.2: live coverage bit-vectors against signature states on the paper's input family.

For the paper's sentence lengths n = 4m + 2 (n counts <s> and </s>) up to
n = 398 and d = 5 (the paper's smallest d):

* the exact number of live coverage vectors (reachable by a prefix of some
  complete derivation), by :func:`count_live_coverages`, against the paper's
  lower bound 2^((n−2)/4);
* for small n, the brute force (:func:`enumerate_coverages`): live and
  reachable vectors, BFS (coverage, last end) states, and the coverage DP's
  (coverage, last end, last word) states;
* the signature DP's states and transitions on the same input.

    python -m scripts.complexity_bitstrings [--d D] [--quick] [--out docs/complexity.md]

Writes the ``bitstrings`` section of docs/complexity.md (``--out``) and complexity_bitstrings.png beside it.
"""

from __future__ import annotations

import math
import sys

from scripts.benchlib import NO_BUDGET, best_time, grid_and_legend, plt, save_figure
from scripts.complexity_common import finish, fmt_int, loglog_slope, experiment, prepare, table

from fstdecode.research.bitstrings import (
    count_live_coverages,
    enumerate_coverages,
    paper_lower_bound,
    section52_problem,
    section52_spans,
)
from fstdecode.search import coverage_dp, signature_dp

NS = (6, 10, 14, 18, 22, 26, 30, 50, 102, 150, 202, 250, 302, 350, 398)
BRUTE_MAX = 18  # the BFS has ~360,000 states at n = 18 and ~6 million at n = 22
COVERAGE_DP_MAX = 18
TITLE = "## 3. Section 5.2: coverage bit-vectors vs signature states (d = {d})"


def measure(n: int, d: int) -> dict:
    """Every count of one instance; brute-force columns only up to BRUTE_MAX."""
    N = n - 2
    spans = section52_spans(n)
    row: dict = {"n": n, "m": (n - 2) // 4, "bound": paper_lower_bound(n)}
    row["live"], row["count_s"] = best_time(lambda: count_live_coverages(spans, N, d), repeat_below=0)
    if n <= BRUTE_MAX:
        brute = enumerate_coverages(spans, N, d)
        row["brute_live"], row["reachable"], row["bfs_states"] = len(brute.live), len(brute.reachable), brute.states
        if row["brute_live"] != row["live"]:
            print(f"MISMATCH n={n}: count {row['live']} vs brute force {row['brute_live']}", file=sys.stderr)
    if n <= COVERAGE_DP_MAX:
        row["coverage_dp"] = coverage_dp.search(section52_problem(n, d), coverage_dp.CoverageOptions(max_states=NO_BUDGET)).states
    problem = section52_problem(n, d)
    prepare(problem)  # the junction table, quadratic in the vocabulary (5 words per block), is not timed
    chart, row["sig_s"] = best_time(lambda: signature_dp.run(problem), repeat_below=0)
    row["sig_states"], row["sig_transitions"] = chart.states, chart.transitions
    return row


def rows_of(data: list[dict]) -> list[str]:
    rows = []
    for r in data:
        rows.append([
            r["n"], r["m"], fmt_int(r["bound"]), fmt_int(r["live"]), f"{math.log2(r['live']) / (r['n'] - 2):.3f}",
            f"{r['count_s']:.2f}",
            fmt_int(r["brute_live"]) if "brute_live" in r else "",
            fmt_int(r["reachable"]) if "reachable" in r else "",
            fmt_int(r["bfs_states"]) if "bfs_states" in r else "",
            fmt_int(r["coverage_dp"]) if "coverage_dp" in r else "",
            fmt_int(r["sig_states"]), fmt_int(r["sig_transitions"]), f"{r['sig_s']:.2f}",
        ])
    head = ["n", "m", "2^m (paper)", "live vectors (exact)", "log2(live)/(n−2)", "count s", "live (brute force)",
            "reachable (brute)", "BFS (C, last) states", "coverage DP states", "signature states",
            "signature transitions", "signature s"]
    return table(head, rows)


def plot(data: list[dict], d: int, path) -> None:
    pyplot = plt()
    fig, ax = pyplot.subplots(figsize=(6.4, 4.4))
    ns = [r["n"] for r in data]
    ax.semilogy(ns, [float(r["live"]) for r in data], "o-", label="live coverage vectors (exact)")
    ax.semilogy(ns, [float(r["bound"]) for r in data], "k--", label="2^((n−2)/4), the paper's bound")
    small = [r for r in data if "coverage_dp" in r]
    ax.semilogy([r["n"] for r in small], [r["coverage_dp"] for r in small], "s-", label="coverage DP states")
    ax.semilogy(ns, [r["sig_states"] for r in data], "^-", label="signature DP states")
    ax.set_xlabel("n (sentence length with <s> and </s>)")
    ax.set_ylabel("count (log scale)")
    ax.set_title(f"Section 5.2 family, d = {d}")
    grid_and_legend(ax)
    save_figure(fig, path, 110)


def add_args(ap) -> None:
    ap.add_argument("--d", type=int, default=5, help="distortion limit (>= 5 in the paper; d = 6 is ~10x slower)")


def run(args, record) -> int:
    ns = (6, 10, 14, 50) if args.quick else NS
    data = []
    for n in ns:
        data.append(measure(n, args.d))
        print(f"n={n} done", file=sys.stderr)
    png = args.out.parent / "complexity_bitstrings.png"
    plot(data, args.d, png)
    big = [r for r in data if r["n"] >= 50]
    rate = math.log2(data[-1]["live"]) / (data[-1]["n"] - 2)
    notes = [
        f"- Live vectors >= 2^m on {sum(r['live'] >= r['bound'] for r in data)} of {len(data)} rows; at n = {data[-1]['n']} there are 2^{math.log2(data[-1]['live']):.1f} "
        f"of them, {rate:.3f} bits per word: the paper's 2^((n−2)/4) (0.25 bits per word) is a loose lower bound.",
    ]
    if len(big) >= 2:
        notes.append(
            f"- Signature states: log–log slope against n (n >= 50) "
            f"{loglog_slope([r['n'] for r in big], [r['sig_states'] for r in big]):.3f} — linear, "
            f"{big[-1]['sig_states'] / (big[-1]['n'] - 2):.0f} states per word."
        )
    blocks = [
        "The paper's family: block k of four words with phrases u_k, v_k, w_k, z_k (single words) and y_k "
        "(the last two words); n = 4m + 2 counts <s> and </s>. Counted (see `fstdecode/research/bitstrings.py`):",
        [
            "- *live vectors*: coverage vectors C such that some complete derivation (every jump <= d) has a prefix "
            "covering exactly C — the bit-strings of the paper's argument. Exact, by a subset construction over "
            "the signature DP with coloured tapes (red = in the prefix), checked against the brute force for n <= "
            f"{BRUTE_MAX} here and by the tests;",
            "- *reachable (brute)*: coverage vectors of any prefix within the distortion limit, dead ends included "
            "(what a Moses-style search without a look-ahead check may create);",
            "- *BFS (C, last) states* and *coverage DP states*: the (coverage, last end) pairs of the brute force and "
            "the (coverage, last end, last word) states of `fstdecode.search.coverage_dp` (exact, no pruning);",
            "- *signature states*: `signature_dp.run`'s states on the same input (every bigram possible).",
        ],
        rows_of(data),
        notes,
    ]
    return finish("bitstrings", record, TITLE.format(d=args.d), blocks, args.out, png, "Section 5.2 counts")


main = experiment("complexity_bitstrings", __doc__, run, add_args)


if __name__ == "__main__":
    sys.exit(main())
