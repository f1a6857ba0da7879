#!/usr/bin/env python3
"""Historical: it compares the native core with the Python engine, which issue 23 retired (one
engine; ``--engine`` removed), so it runs only at the commits its sections in docs/benchmarks.md name
(``git worktree add /tmp/old COMMIT``). Benchmark the gap rule in the native signature state space: the paper path before/after, and Moses' cost.

In one run, and written to the ``bench_gaprule`` section of docs/benchmarks.md:

1. **The paper path, before and after** (``--base-core``: a ``_core*.so`` built from the commit
   before the gap rule, e.g. with ``cmake -S <checkout> -B <dir> -DCMAKE_BUILD_TYPE=Release``):
   the native dp, beam, bounded and fst under ``paper`` semantics on the first ``--sentences``
   Hansards fr-en sentences (the UN LM as a bigram and at order 3, d = 4, table-limit 20; the
   settings of scripts/bench_native.py), with the installed core and with the base core, each in
   its own subprocess, alternating for ``--rounds`` rounds: the median ms/word of each, and the
   ratio installed / base. Both must find the same states and scores (checked).
2. **What Moses' semantics costs** (installed core only): dp under ``paper`` and ``moses`` on
   the de-en gold model (trigram, d = 4, so that dp finishes every sentence; early distortion
   cost as in its moses.ini): states, transitions and ms/word of each.

    python -m scripts.bench_gaprule [--base-core SO] [--sentences N] [--rounds R] [--out docs/benchmarks.md]

The script rewrites only its own section of the output file, between
``<!-- bench_gaprule:start -->`` and ``<!-- bench_gaprule:end -->``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import time

from scripts.benchlib import DATA, DOCS, hansards_args, load_avg, log, marked, script, write_section

METHODS = ("dp", "beam", "bounded", "fst")


def _load_core(path: str) -> None:
    """Load the core at ``path`` as ``fstdecode._native._core`` (before fstdecode imports it)."""
    spec = importlib.util.spec_from_file_location("fstdecode._native._core", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fstdecode._native._core"] = module
    spec.loader.exec_module(module)


def child(core: str | None, order: int, sentences: int) -> dict:
    """Part 1 in one process: each method's search seconds, words, states and scores."""
    if core:
        _load_core(core)
    from fstdecode.decoder import Decoder
    from fstdecode.model.model import load_model

    model = load_model(**hansards_args(4, 20, order))
    lines = (DATA / "hansards-fr-en-decoder" / "input").read_text(encoding="utf-8").splitlines()[:sentences]
    out = {}
    for method in METHODS:
        decoder = Decoder(model, method, engine="native")
        decoder.decode(lines[0])  # warm-up (caches, page faults), not timed
        seconds, states, scores = 0.0, [], []
        for i, line in enumerate(lines):
            t0 = time.perf_counter()
            result = decoder.decode(line, i)
            seconds += time.perf_counter() - t0
            states.append(result.stats.states)
            scores.append(None if result.best is None else round(result.best.score, 9))
        out[method] = {"seconds": seconds, "words": sum(len(s.split()) for s in lines), "states": states, "scores": scores}
    return out


def moses_cost() -> list[tuple]:
    """Part 2: dp's states, transitions and seconds under each semantics on the de-en gold model."""
    from fstdecode.decoder import Decoder
    from fstdecode.model.model import load_model

    folder = DATA / "moses-early-distortion-de-en"
    lines = (folder / "to-translate.txt").read_text(encoding="utf-8").splitlines()
    rows = []
    for semantics in ("paper", "moses"):
        model = load_model(folder / "moses.ini", distortion_semantics=semantics, distortion_limit=4)
        decoder = Decoder(model, "dp", max_states=10**8)
        states = transitions = words = 0
        seconds = 0.0
        for i, line in enumerate(lines):
            t0 = time.perf_counter()
            result = decoder.decode(line, i)
            seconds += time.perf_counter() - t0
            assert result.optimal, (semantics, line)
            states += result.stats.states
            transitions += result.stats.transitions
            words += len(line.split())
        rows.append((semantics, decoder.engine, states, transitions, 1000 * seconds / words))
    return rows


def _run_child(core: str | None, order: int, sentences: int) -> dict:
    cmd = [sys.executable, "-m", "scripts.bench_gaprule", "--child", str(order), "--sentences", str(sentences)]
    if core:
        cmd += ["--base-core", core]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def run(args, record) -> int:
    if args.child:
        print(json.dumps(child(args.base_core, args.child, args.sentences)))
        return 0
    lines = [
        "## The gap rule in the native signature states (scripts/bench_gaprule.py)",
        "",
        f"`{record.command}` — {record.date()}, {record.machine}, code {record.code}, load at start {record.load_start}.",
        "",
    ]
    if args.base_core:
        lines += [
            f"**The paper path, before and after**: the native searches under `paper` on the first {args.sentences} "
            f"Hansards sentences (d = 4, table-limit 20; default budgets), installed core vs the base core "
            f"`{args.base_core}`, alternating subprocesses, {args.rounds} rounds each.",
            "",
            "| LM order | method | base ms/word (median, min) | gap-rule core ms/word (median, min) | ratio of medians | ratio of minima |",
            "|---|---|---|---|---|---|",
        ]
        for order in (2, 3):
            runs = {"base": [], "new": []}
            for r in range(args.rounds):
                for which in ("base", "new") if r % 2 == 0 else ("new", "base"):
                    log(f"order {order} round {r + 1}: {which}")
                    runs[which].append(_run_child(args.base_core if which == "base" else None, order, args.sentences))
            for method in METHODS:
                base, new = runs["base"][0][method], runs["new"][0][method]
                if (base["states"], base["scores"]) != (new["states"], new["scores"]):
                    raise SystemExit(f"order {order} {method}: the cores disagree on states or scores")
                per = {k: [1000 * x[method]["seconds"] / x[method]["words"] for x in v] for k, v in runs.items()}
                med = {k: statistics.median(v) for k, v in per.items()}
                low = {k: min(v) for k, v in per.items()}
                lines.append(
                    f"| {order} | {method} | {med['base']:.3f}, {low['base']:.3f} | {med['new']:.3f}, {low['new']:.3f} "
                    f"| {med['new'] / med['base']:.3f} | {low['new'] / low['base']:.3f} |"
                )
        lines.append("")
    log("Moses' cost")
    lines += [
        "**What Moses' semantics costs**: `dp` (native) on the 5 de-en gold sentences at d = 4 (trigram, early "
        "distortion cost), every sentence proven.",
        "",
        "| semantics | engine | states | transitions | ms/word |",
        "|---|---|---|---|---|",
    ]
    for semantics, engine, states, transitions, ms in moses_cost():
        lines.append(f"| {semantics} | {engine} | {states:,} | {transitions:,} | {ms:.1f} |")
    lines += ["", f"Load at end {load_avg()}."]
    write_section(args.out, "bench_gaprule", marked("bench_gaprule", lines))
    log("\n".join(lines))
    return 0


def _args(ap) -> None:
    ap.add_argument("--base-core", help="a _core*.so built from the commit before the gap rule (part 1)")
    ap.add_argument("--sentences", type=int, default=10, help="Hansards sentences in part 1 (default 10)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per core in part 1 (default 3)")
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)  # part 1's subprocesses: the LM order


main = script("bench_gaprule", __doc__, run, add_args=_args, out=DOCS / "benchmarks.md", needs_data=True)

if __name__ == "__main__":
    sys.exit(main())
