#!/usr/bin/env python3
"""Benchmark the signature DP against Figure 2 verbatim and the coverage DP.

For n = 10, 20, 40, 80 source words and d = 3, 4, 5 this builds one random
model per n (real files read back through :func:`load_model`, as
``tests/randmodels.py`` does) and runs, on the same :class:`SearchProblem`:

* ``signature_dp.search`` -- states/s and transitions/s;
* ``figure2.best_score`` (the direct transcription of Figure 2) -- states/s;
  the headline is the ratio of the two states/s figures;
* ``coverage_dp.search`` with ``max_states`` -- its state count, or "> cap".

Each solver runs in a forked child process per case with a wall-clock
budget (``--budget``); a solver that overran its budget (or, for the
coverage DP, its state cap) at some n is not run for larger n with the
same d, and a solver whose time extrapolated linearly in n from the last
finished n exceeds the budget is skipped. Both are recorded as such.
Only the search is timed (``time.perf_counter``); cases whose first run
takes < 1 s are run 3 times and the best time is kept.

    python -m scripts.bench_dp [--seed S] [--budget SEC] [--cap N] [--quick] [--out docs/benchmarks.md]

The script rewrites only its own section of the output file, between
``<!-- bench_dp:start -->`` and ``<!-- bench_dp:end -->``.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from scripts.benchlib import NO_BUDGET, DOCS, load_avg, script, write_section

from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model
from fstdecode.search import coverage_dp, signature_dp
from fstdecode.reference import figure2
from fstdecode.problem.problem import SearchLimitError, SearchProblem

START = "<!-- bench_dp:start -->"
END = "<!-- bench_dp:end -->"

FULL_NS = (10, 20, 40, 80)
FULL_DS = (3, 4, 5)
QUICK_NS = (6, 10)
QUICK_DS = (3, 4)

SOURCE_VOCAB = [f"s{i}" for i in range(50)]
TARGET_VOCAB = [f"t{i}" for i in range(30)]
MAX_SOURCE_LEN = 3  # l: longest source phrase
MAX_TRANSLATIONS = 3  # h: most translations of one source phrase
WEIGHTS = ["lm=1", "tm=1,1", "distortion=0.5"]
TOLERANCE = 1e-9
REPEAT_BELOW = 1.0  # seconds: faster first runs are repeated ...
REPEATS = 3  # ... up to this many runs in all, keeping the best time


# --------------------------------------------------------------------------- random models


def random_files(seed: int, n: int) -> tuple[list[str], str, str]:
    """(sentence, phrase table text, ARPA text): deterministic in (seed, n).

    Every span of up to 3 words gets translations: each distinct single word
    2-3 of them, a 2-word span one with probability 0.3, a 3-word span one
    with probability 0.1. Targets are 1..min(3, span + 1) words of the target
    vocabulary. The LM is a random (unnormalised) bigram ARPA model over the
    target vocabulary with about 30% of the bigrams listed.
    """
    rng = random.Random(f"bench_dp:{seed}:{n}")
    words = [rng.choice(SOURCE_VOCAB) for _ in range(n)]
    entries: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
    for s in range(n):
        for length in range(1, MAX_SOURCE_LEN + 1):
            if s + length > n:
                break
            key = tuple(words[s : s + length])
            if key in entries:  # a repeated source phrase has one set of entries
                continue
            if length == 1:
                k = rng.randint(2, MAX_TRANSLATIONS)
            else:
                k = 1 if rng.random() < (0.3 if length == 2 else 0.1) else 0
            outs: set[tuple[str, ...]] = set()
            while len(outs) < k:
                outs.add(tuple(rng.choice(TARGET_VOCAB) for _ in range(rng.randint(1, min(3, length + 1)))))
            entries[key] = sorted(outs)
    pt_lines = []
    for key, outs in sorted(entries.items()):
        for out in outs:
            a, b = rng.uniform(0.05, 1.0), rng.uniform(0.05, 1.0)
            pt_lines.append(f"{' '.join(key)} ||| {' '.join(out)} ||| {a:.4f} {b:.4f}\n")
    unigrams = []
    for w in ["<s>", "</s>", "<unk>", *TARGET_VOCAB]:
        p = -99.0 if w == "<s>" else rng.uniform(-3.0, -0.5)
        unigrams.append(f"{p:.4f}\t{w}\t{rng.uniform(-1.0, 0.0):.4f}")
    bigrams = []
    for a in ["<s>", *TARGET_VOCAB]:
        for b in ["</s>", *TARGET_VOCAB]:
            if rng.random() < 0.3:
                bigrams.append(f"{rng.uniform(-2.5, -0.1):.4f}\t{a} {b}")
    arpa = "\n".join(
        ["\\data\\", f"ngram 1={len(unigrams)}", f"ngram 2={len(bigrams)}", "", "\\1-grams:", *unigrams, "",
         "\\2-grams:", *bigrams, "", "\\end\\", ""]
    )
    return words, "".join(pt_lines), arpa


def build_problem(seed: int, n: int, d: int) -> SearchProblem:
    """The search problem of case (n, d), its model read from real files."""
    words, pt, arpa = random_files(seed, n)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "phrase-table").write_text(pt, encoding="utf-8")
        (Path(tmp) / "lm.arpa").write_text(arpa, encoding="utf-8")
        model = load_model(
            phrase_table=Path(tmp) / "phrase-table", lm=Path(tmp) / "lm.arpa", distortion_limit=d, weights=WEIGHTS
        )
    problem = Decoder(model).problem(words)
    # Fill the bigram cache for every word pair, so that no solver (and no
    # repeat) pays for LM look-ups the others got for free.
    for a in range(len(problem.vocab)):
        for b in range(len(problem.vocab)):
            problem.bigram(a, b)
    return problem


# --------------------------------------------------------------------------- solvers


def solve_dp(problem: SearchProblem, cap: int) -> dict:
    r = signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET))
    return {"score": r.hypotheses[0][0], "states": r.states, "transitions": r.transitions}


def solve_figure2(problem: SearchProblem, cap: int) -> dict:
    score, states, tried = figure2.best_score(problem)
    return {"score": score, "states": states, "transitions": tried}


def solve_coverage(problem: SearchProblem, cap: int) -> dict:
    r = coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=cap))
    return {"score": r.hypotheses[0][0], "states": r.states, "transitions": r.transitions}


SOLVERS = {"dp": solve_dp, "figure2": solve_figure2, "coverage": solve_coverage}


def _child(conn, name: str, problem: SearchProblem, cap: int) -> None:
    """Run one solver, sending ("run", result) after each timed run, then ("done", None)."""
    solver = SOLVERS[name]
    try:
        for i in range(REPEATS):
            t0 = time.perf_counter()
            try:
                res = solver(problem, cap)
            except SearchLimitError:
                conn.send(("cap", {"seconds": time.perf_counter() - t0}))
                return
            res["seconds"] = time.perf_counter() - t0
            conn.send(("run", res))
            if i == 0 and res["seconds"] >= REPEAT_BELOW:
                break
        conn.send(("done", None))
    except BaseException as e:  # report, never hang the parent
        conn.send(("error", {"error": f"{type(e).__name__}: {e}"}))
    finally:
        conn.close()


def run_solver(name: str, problem: SearchProblem, budget: float, cap: int) -> dict:
    """Run ``name`` in a forked child under ``budget`` seconds per timed run.

    Returns a dict with ``status`` in {"ok", "cap", "budget", "error"}; for
    "ok" also score, states, transitions, seconds (best run) and runs.
    """
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, name, problem, cap), daemon=True)
    wall = time.perf_counter()
    proc.start()
    child.close()
    best: dict | None = None
    runs = 0
    status = "ok"
    info: dict = {}
    try:
        while True:
            # Each timed run gets the budget (plus a little for fork and pickling).
            if not parent.poll(budget * 1.02 + 0.2):
                status = "budget"
                break
            try:
                kind, payload = parent.recv()
            except EOFError:
                status, info = "error", {"error": f"child exited with code {proc.exitcode}"}
                break
            if kind == "run":
                runs += 1
                if best is None or payload["seconds"] < best["seconds"]:
                    best = payload
            elif kind == "done":
                break
            else:
                status, info = kind, payload
                break
    finally:
        if proc.is_alive():
            proc.kill()  # only this child, by its own handle
        proc.join()
        parent.close()
    if status == "budget" and best is not None:
        status = "ok"  # a repeat overran; keep the finished run(s)
    out = {"status": status, "wall": time.perf_counter() - wall, **info}
    if status == "ok" and best is not None:
        out.update(best)
        out["runs"] = runs
    return out


# --------------------------------------------------------------------------- running the grid


def run_grid(seed: int, budget: float, cap: int, ns, ds, log) -> list[dict]:
    """Every (n, d) case; solvers that overran at a smaller n are skipped at larger n."""
    rows = []
    last_ok: dict[tuple[str, int], tuple[int, float]] = {}  # (solver, d) -> (n, seconds)
    gave_up: dict[tuple[str, int], str] = {}  # (solver, d) -> reason at a smaller n
    for d in ds:
        for n in ns:
            problem = build_problem(seed, n, d)
            row = {"n": n, "d": d, "options": sum(len(o) for o in problem.by_start[1 : problem.end])}
            for name in SOLVERS:
                key = (name, d)
                if key in gave_up:
                    res = {"status": "skipped", "why": gave_up[key]}
                elif key in last_ok and last_ok[key][1] * n / last_ok[key][0] > budget:
                    pred = last_ok[key][1] * n / last_ok[key][0]
                    res = {"status": "skipped", "why": f"predicted {pred:.3g} s > budget"}
                    gave_up[key] = f"predicted > budget at n={n}"
                else:
                    res = run_solver(name, problem, budget, cap)
                    if res["status"] == "ok":
                        last_ok[key] = (n, res["seconds"])
                    elif res["status"] == "budget":
                        gave_up[key] = f"over budget at n={n}"
                    elif res["status"] == "cap":
                        gave_up[key] = f"> cap at n={n}"
                row[name] = res
                log(f"  n={n:3d} d={d} {name:8s} {describe(res)}")
            check_agreement(row, log)
            rows.append(row)
    return rows


#: How a solver that did not finish is reported: status -> (progress line, table cell).
UNFINISHED = {
    "cap": ("> cap after {seconds:.1f} s", "> cap ({cap:,})"),
    "budget": ("over budget (killed after {wall:.1f} s)", "skipped (budget {budget:g} s)"),
    "skipped": ("skipped ({why})", "skipped ({why})"),
    "error": ("ERROR {error}", "error: {error}"),
}


def describe(res: dict) -> str:
    """The progress line of one solver run."""
    if res["status"] == "ok":
        return (f"{res['states']:>10,} states {res['transitions']:>11,} transitions "
                f"{res['seconds']:9.3f} s (best of {res['runs']}) score {res['score']:.6f}")
    return UNFINISHED.get(res["status"], UNFINISHED["error"])[0].format_map({"error": None, **res})


def check_agreement(row: dict, log) -> None:
    """Every finished solver must find the signature DP's best score (to 1e-9)."""
    row["mismatch"] = []
    dp = row["dp"]
    if dp["status"] != "ok":
        return
    for name in ("figure2", "coverage"):
        other = row[name]
        if other["status"] == "ok" and abs(other["score"] - dp["score"]) > TOLERANCE:
            row["mismatch"].append(name)
            banner = "!" * 78
            log(f"{banner}\n!!! MISMATCH n={row['n']} d={row['d']}: signature DP {dp['score']!r} "
                f"!= {name} {other['score']!r}\n{banner}", err=True)


# --------------------------------------------------------------------------- report


def fmt_int(x: float) -> str:
    return f"{round(x):,}"


def fmt_s(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def cell(res: dict, cap: int, budget: float) -> str:
    """The table cell of a solver run that did not finish ("" for one that did)."""
    if res["status"] not in UNFINISHED:
        return ""
    return UNFINISHED[res["status"]][1].format_map({"error": None, **res, "cap": cap, "budget": budget})


def ratios(rows: list[dict]) -> list[tuple[int, int, float, float]]:
    """(n, d, states/s ratio, time ratio) for the cases where both DP and Figure 2 finished."""
    out = []
    for r in rows:
        a, b = r["dp"], r["figure2"]
        if a["status"] == "ok" and b["status"] == "ok":
            out.append((r["n"], r["d"], (a["states"] / a["seconds"]) / (b["states"] / b["seconds"]),
                        b["seconds"] / a["seconds"]))
    return out


def render(rows, args, record, elapsed, load_after) -> str:
    L = []
    L.append(START)
    L.append("## Signature DP vs. Figure 2 verbatim vs. coverage DP (`scripts/bench_dp.py`)")
    L.append("")
    L.append(f"Command: `{record.command}`  ")
    L.append(f"Date: {record.date()}  ")
    L.append(f"Code: {record.code}  ")
    L.append(f"Machine: {record.machine}  ")
    L.append(f"Load average (1/5/15 min) at start: {record.load_start}; at end: {load_after}. "
             "The machine is shared: other processes may have been running during the measurement, "
             "and every solver runs in one process (one core).  ")
    L.append(f"Total runtime of the script: {elapsed:.0f} s.")
    L.append("")
    L.append("Setup. One random model per n (seed "
             f"{args.seed}): a sentence of n words drawn from {len(SOURCE_VOCAB)} source words; every distinct "
             "single word has 2-3 translations, a 2-word span one with probability 0.3, a 3-word span one with "
             f"probability 0.1 (l = {MAX_SOURCE_LEN}, h = {MAX_TRANSLATIONS}); targets are 1-3 words of a "
             f"{len(TARGET_VOCAB)}-word vocabulary; a random bigram ARPA LM over that vocabulary. "
             "The files are written to a temporary directory and read with `load_model` "
             f"(weights `{' '.join(WEIGHTS)}`); the problem is `Decoder(model).problem(words)`. "
             "The same sentence and model are used for every d at a given n, and all three solvers "
             "run on the same `SearchProblem` (bigram cache pre-filled). "
             "Only the search call is timed (`time.perf_counter`); a solver whose first run takes "
             f"< {REPEAT_BELOW:g} s is run {REPEATS} times and the best time is kept, otherwise once.")
    L.append("")
    L.append(f"Limits. Each solver runs in a forked child per case, killed after {args.budget:g} s per run "
             f"(`--budget`). A solver that overran (or, for the coverage DP, exceeded `max_states={args.cap:,}`) "
             "at some n is not run at larger n for the same d; a solver whose time, extrapolated linearly in n "
             "from its last finished n, would exceed the budget is skipped. These cases read \"skipped\".")
    L.append("")
    L.append("Columns. *DP* = `signature_dp.search` (chart fill and backtrack); its transitions are the valid "
             "transitions `expand` yields. *Fig. 2* = `figure2.best_score`; its \"tried\" counts every "
             "(ψ1, p, ψ2) built before `valid()` filters it, and its states include dead states at "
             "j = n + 1 that the DP never builds (it only appends `</s>` to a lone tape), so its state "
             "count is slightly higher. *ratio* = DP states/s ÷ Fig. 2 states/s (the headline); "
             "*speedup* = Fig. 2 seconds ÷ DP seconds. *options* = phrase options of the sentence "
             "(unknown-word copies included). *Coverage* = `coverage_dp.search` states.")
    L.append("")
    header = ["n", "d", "options", "DP states", "DP transitions", "DP s", "DP states/s", "DP transitions/s",
              "Fig. 2 states", "Fig. 2 tried", "Fig. 2 s", "Fig. 2 states/s", "ratio", "speedup", "Coverage states"]
    L.append("| " + " | ".join(header) + " |")
    L.append("|" + "|".join("---:" for _ in header) + "|")
    for r in rows:
        a, b, c = r["dp"], r["figure2"], r["coverage"]
        cells = [str(r["n"]), str(r["d"]), str(r["options"])]
        if a["status"] == "ok":
            cells += [fmt_int(a["states"]), fmt_int(a["transitions"]), fmt_s(a["seconds"]),
                      fmt_int(a["states"] / a["seconds"]), fmt_int(a["transitions"] / a["seconds"])]
        else:
            cells += [cell(a, args.cap, args.budget)] + [""] * 4
        if b["status"] == "ok":
            cells += [fmt_int(b["states"]), fmt_int(b["transitions"]), fmt_s(b["seconds"]),
                      fmt_int(b["states"] / b["seconds"])]
        else:
            cells += [cell(b, args.cap, args.budget)] + [""] * 3
        if a["status"] == "ok" and b["status"] == "ok":
            ratio = (a["states"] / a["seconds"]) / (b["states"] / b["seconds"])
            cells += [f"{ratio:.2f}", f"{b['seconds'] / a['seconds']:.2f}"]
        else:
            cells += ["", ""]
        cells.append(fmt_int(c["states"]) if c["status"] == "ok" else cell(c, args.cap, args.budget))
        if r["mismatch"]:
            cells[-1] += " **SCORE MISMATCH: " + ", ".join(r["mismatch"]) + "**"
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    L.append(summary(rows))
    L.append(END)
    return "\n".join(L) + "\n"


def summary(rows: list[dict]) -> str:
    rs = ratios(rows)
    mismatches = [(r["n"], r["d"], m) for r in rows for m in r["mismatch"]]
    compared = sum(1 for r in rows for m in ("figure2", "coverage") if r["dp"]["status"] == "ok" and r[m]["status"] == "ok")
    parts = ["Summary."]
    if rs:
        vals = [x[2] for x in rs]
        lo, hi = min(rs, key=lambda x: x[2]), max(rs, key=lambda x: x[2])
        at5 = sum(1 for v in vals if v >= 5)
        parts.append(
            f"In this run the states/s ratio (signature DP ÷ Figure 2) was measured on {len(rs)} of "
            f"{len(rows)} cases"
            + (" (in the others Figure 2 or the DP was skipped or over budget)" if len(rs) < len(rows) else "")
            + ": "
            f"min {lo[2]:.2f} (n={lo[0]}, d={lo[1]}), median {statistics.median(vals):.2f}, "
            f"max {hi[2]:.2f} (n={hi[0]}, d={hi[1]}); {at5} of {len(rs)} cases reached 5x. "
            f"The wall-time speedup over the same cases: min {min(x[3] for x in rs):.2f}, "
            f"median {statistics.median(x[3] for x in rs):.2f}, max {max(x[3] for x in rs):.2f}."
        )
    else:
        parts.append("No case finished with both the signature DP and Figure 2, so no ratio was measured.")
    cov_ok = [(r["n"], r["d"]) for r in rows if r["coverage"]["status"] == "ok"]
    parts.append(
        f"The coverage DP finished within its cap and budget on {len(cov_ok)} of {len(rows)} cases"
        + (f" ({', '.join(f'n={n} d={d}' for n, d in cov_ok)})." if cov_ok else ".")
    )
    if mismatches:
        parts.append("**Best scores DISAGREED** in: " + "; ".join(f"n={n} d={d} ({m})" for n, d, m in mismatches) + ".")
    else:
        parts.append(f"All {compared} solver pairs that both finished found the same best score (to {TOLERANCE:g}).")
    return " ".join(parts)


def add_args(ap) -> None:
    ap.add_argument("--seed", type=int, default=1, help="random seed of the models (default 1)")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per solver per run (default 60)")
    ap.add_argument("--cap", type=int, default=2_000_000, help="max_states of the coverage DP (default 2,000,000)")


def log(msg: str, err: bool = False) -> None:
    print(msg, file=sys.stderr if err else sys.stdout, flush=True)


def run(args, record) -> int:
    ns, ds = (QUICK_NS, QUICK_DS) if args.quick else (FULL_NS, FULL_DS)
    log(f"bench_dp: seed={args.seed} budget={args.budget:g}s cap={args.cap:,} n={ns} d={ds}")
    rows = run_grid(args.seed, args.budget, args.cap, ns, ds, log)
    elapsed = record.elapsed()
    section = render(rows, args, record, elapsed, load_avg())
    write_section(args.out, "bench_dp", section)
    log(summary(rows))
    log(f"wrote {args.out} ({elapsed:.0f} s)")
    if any(r["mismatch"] for r in rows):
        log("!!! bench_dp: BEST SCORES DISAGREE (see above) !!!", err=True)
        return 1
    return 0


main = script("bench_dp", __doc__, run, add_args=add_args, out=DOCS / "benchmarks.md",
                    quick=f"smoke test: n in {QUICK_NS}, d in {QUICK_DS}")


if __name__ == "__main__":
    sys.exit(main())
