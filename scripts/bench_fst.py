#!/usr/bin/env python3
"""The WFST cascade against the native DP on the real Hansards model, sentence by sentence.

Model: ../shared/data/hansards-fr-en-decoder/tm (log10 scores) with the UN
English LM read as a bigram (../shared/data/english-lm-un), d = 3,
table-limit 5, default weights. For each of the 48 sentences, in one run:

* the DP (``--method dp``): time and states;
* the cascade (``--method fst``): states and arcs of R, time to build R,
  to compose ``I ∘ P ∘ R ∘ L``, and for the shortest path;
* agreement: both best scores, which must be equal to 1e-6.

Each method gets ``--budget`` seconds per sentence (default 60, enforced
with SIGALRM); a sentence that does not finish is reported as such. The
results replace the ``bench_fst`` section of docs/benchmarks.md.

    python -m scripts.bench_fst [--budget SEC] [--limit N] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import statistics
import sys

from scripts.benchlib import NO_BUDGET, DOCS, HANSARDS, hansards_args, log, script, timed, write_section

from fstdecode.decoder import Decoder
from fstdecode.fst.cascade import Cascade
from fstdecode.model.model import load_model
from fstdecode.search import signature_dp


def hansards_model(d: int = 3, table_limit: int = 5):
    return load_model(**hansards_args(d, table_limit))


def run(budget: float, limit: int | None, log) -> list[dict]:
    model = hansards_model()
    decoder, cascade = Decoder(model), Cascade(model)
    lines = (HANSARDS / "input").read_text(encoding="utf-8").splitlines()[:limit]
    rows = []
    for i, line in enumerate(lines):
        words = tuple(line.split())
        row = {"id": i, "n": len(words)}
        dp, dp_s = timed(lambda: signature_dp.search(decoder.problem(words), signature_dp.DpOptions(max_states=NO_BUDGET)), budget)
        fst_out, fst_s = timed(lambda: cascade.search(words), budget)
        if dp is not None:
            row.update(dp_s=dp_s, dp_score=dp.hypotheses[0][0], states=dp.states)
        if fst_out is not None:
            r = fst_out.reordering
            row.update(
                fst_s=fst_s,
                fst_score=fst_out.result.hypotheses[0][0],
                r_states=r.fst.num_states(),
                r_arcs=sum(r.fst.num_arcs(q) for q in r.fst.states()),
                build_r=fst_out.timings.build_r,
                compose=fst_out.timings.compose,
                shortest=fst_out.timings.shortest_path,
            )
        if dp is not None and fst_out is not None:
            row["agree"] = abs(row["dp_score"] - row["fst_score"]) < 1e-6
        rows.append(row)
        log(f"{i:2d} n={row['n']:2d} " + " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items() if k not in ("id", "n")))
    return rows


def render(rows: list[dict], record, budget: float) -> str:
    both = [r for r in rows if "agree" in r]
    agree = sum(r["agree"] for r in both)
    ratios = [r["fst_s"] / r["dp_s"] for r in both]
    out = [
        "<!-- bench_fst:start -->",
        "## WFST cascade vs. native DP (Hansards fr-en, bigram UN LM, d = 3, table-limit 5)",
        "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s; budget {budget:.0f} s per method and sentence",
        f"- finished by both methods: {len(both)} of {len(rows)} sentences; "
        f"best scores equal to 1e-6 on {agree} of {len(both)}",
    ]
    if ratios:
        out.append(
            f"- time ratio fst/dp: median {statistics.median(ratios):.2f}, "
            f"min {min(ratios):.2f}, max {max(ratios):.2f} (target: within 3x)"
        )
    out += [
        "",
        "| id | n | DP states | DP s | R states | R arcs | build R s | compose s | shortest path s | FST total s | fst/dp | same score |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in rows:
        if "agree" not in r:
            out.append(f"| {r['id']} | {r['n']} | " + " | ".join(["over budget"] * 10) + " |")
            continue
        out.append(
            f"| {r['id']} | {r['n']} | {r['states']} | {r['dp_s']:.3f} | {r['r_states']} | {r['r_arcs']} | "
            f"{r['build_r']:.3f} | {r['compose']:.3f} | {r['shortest']:.3f} | {r['fst_s']:.3f} | "
            f"{r['fst_s'] / r['dp_s']:.2f} | {'yes' if r['agree'] else 'NO'} |"
        )
    out += [
        "",
        "R states include only the signature states reachable from the start (R is built "
        "lazily per sentence), so they equal the DP's state count. FST total = building I∘P, "
        "R and L, composing, and the shortest path (plus re-ranking the few best paths in "
        "double precision).",
        "<!-- bench_fst:end -->",
    ]
    return "\n".join(out) + "\n"


def add_args(ap) -> None:
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--limit", type=int, default=None, help="only the first N sentences")


def run_bench(args, record) -> int:
    rows = run(args.budget, args.limit, log)
    write_section(args.out, "bench_fst", render(rows, record, args.budget))
    log(f"wrote {args.out}")
    return 0 if all(r.get("agree", True) for r in rows) else 1


main = script("bench_fst", __doc__, run_bench, add_args=add_args, out=DOCS / "benchmarks.md", needs_data=True)


if __name__ == "__main__":
    sys.exit(main())
