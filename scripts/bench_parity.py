#!/usr/bin/env python3
"""Moses parity on its own regression-test model, and what state minimisation saves.

Model: ../shared/data/moses-early-distortion-de-en/moses.ini (trigram LM,
d = 6, table-limit 20, early distortion cost). For each of the 5 sentences,
in one run, every search method with and without KenLM-style LM state
minimisation: its best score against Moses' SCORE_i, its translation
against Moses', its time and its states (signature states for dp and beam,
coverage states for coverage, hypotheses kept for stack). Exact methods
run under ``--max-states`` and a time budget; what does not finish is
reported as such. Replaces the ``bench_parity`` section of docs/benchmarks.md.

    python -m scripts.bench_parity [--budget SEC] [--max-states N] [--limit N] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import dataclasses
import re
import sys

from scripts.benchlib import DATA as SHARED, DOCS, log, script, timed, write_section

from fstdecode.decoder import Decoder
from fstdecode.search.base import METHODS, Method
from fstdecode.model.model import load_model
from fstdecode.problem.problem import SearchLimitError

DATA = SHARED / "moses-early-distortion-de-en"
EXACT = ("dp", "coverage")
BEAMS = ("beam", "stack")


def moses_truth() -> tuple[dict[int, float], dict[int, str]]:
    text = (DATA / "truth" / "results.txt").read_text(encoding="utf-8")
    scores = {int(i): float(v) for i, v in re.findall(r"^SCORE_(\d+) = (\S+)$", text, re.M)}
    best = {int(i): t.strip() for i, t in re.findall(r"^TRANSLATION_(\d+)=(.*)$", text, re.M)}
    return scores, best


def run_one(method: Method, problem, budget: float, max_states: int, minimize: bool):
    """One method at its default settings but for the budget (and minimisation, where it has it)."""
    values = {"max_states": max_states}
    if has_minimize(method):
        values["minimize"] = minimize
    searcher = method.searcher(None, method.options(**values), "python")
    try:
        out, secs = timed(lambda: searcher.search(problem), budget)
    except SearchLimitError:
        return {"status": f"> {max_states:,} states"}
    if out is None:
        return {"status": f"> {budget:.0f} s"}
    return {"status": "ok", "score": out.hypotheses[0][0], "phrases": out.hypotheses[0][1], "states": out.states, "s": secs}


def has_minimize(method: Method) -> bool:
    return any(f.name == "minimize" for f in dataclasses.fields(method.options))


def add_args(ap) -> None:
    ap.add_argument("--budget", type=float, default=120.0)
    ap.add_argument("--max-states", type=int, default=3_000_000)
    ap.add_argument("--limit", type=int, default=None, help="only the first N sentences (a smoke test)")


def run(args, record) -> int:
    model = load_model(DATA / "moses.ini")
    decoder = Decoder(model)
    scores, best = moses_truth()
    lines = (DATA / "to-translate.txt").read_text(encoding="utf-8").splitlines()[: args.limit]
    methods = [m for m in (*EXACT, *BEAMS) if m in METHODS]
    rows = []
    for i, line in enumerate(lines):
        words = line.split()
        problem = decoder.problem(words)
        for method in methods:
            for minimize in (True, False) if has_minimize(METHODS[method]) else (True,):
                res = run_one(METHODS[method], problem, args.budget, args.max_states, minimize)
                res.update(id=i, n=len(words), method=method, minimize=minimize)
                if res["status"] == "ok":
                    res["translation"] = " ".join(w for p in res["phrases"] for w in p.target)
                rows.append(res)
                shown = {k: v for k, v in res.items() if k != "phrases"}
                log(f"{i} {method} {minimize} {shown}")
    out = [
        "<!-- bench_parity:start -->",
        "## Moses parity: the de-en regression-test model (trigram LM, d = 6, table-limit 20)",
        "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s; exact methods capped at "
        f"{args.max_states:,} states and {args.budget:.0f} s per sentence",
        "- methods: dp = signature DP (exact), coverage = coverage-vector DP (exact), beam = signature "
        "beam, stack = stack decoder, at their default settings; min = KenLM-style right-state "
        "minimisation on/off (the stack decoder always minimises)",
        "",
        "| sent | n | method | min | states | seconds | score | Moses SCORE | ≥ Moses − 1e-3 | same translation |",
        "|---:|---:|---|:---:|---:|---:|---:|---:|:---:|:---:|",
    ]
    for r in rows:
        i = r["id"]
        if r["status"] != "ok":
            out.append(f"| {i} | {r['n']} | {r['method']} | {'on' if r['minimize'] else 'off'} | {r['status']} | | | {scores[i]} | | |")
            continue
        out.append(
            f"| {i} | {r['n']} | {r['method']} | {'on' if r['minimize'] else 'off'} | {r['states']:,} | {r['s']:.2f} | "
            f"{r['score']:.4f} | {scores[i]} | {'yes' if r['score'] >= scores[i] - 1e-3 else 'NO'} | "
            f"{'yes' if r['translation'] == best[i] else 'no'} |"
        )
    saved = [
        (a["states"], b["states"])
        for a in rows
        for b in rows
        if a["status"] == b["status"] == "ok" and a["id"] == b["id"] and a["method"] == b["method"] and a["minimize"] and not b["minimize"]
    ]
    if saved:
        ratio = sum(b for _, b in saved) / max(1, sum(a for a, _ in saved))
        out += ["", f"State minimisation: {sum(b for _, b in saved):,} states without it against {sum(a for a, _ in saved):,} with it over the {len(saved)} runs that finished both ways ({ratio:.2f}x)."]
    out.append("<!-- bench_parity:end -->")
    write_section(args.out, "bench_parity", "\n".join(out) + "\n")
    log(f"wrote {args.out}")
    return 0


main = script("bench_parity", __doc__, run, add_args=add_args, out=DOCS / "benchmarks.md", needs_data=True)


if __name__ == "__main__":
    sys.exit(main())
