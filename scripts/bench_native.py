#!/usr/bin/env python3
"""Historical: it compares the native core with the Python engine, which issue 23 retired (one
engine; ``--engine`` removed), so it runs only at the commits its sections in docs/benchmarks.md name
(``git worktree add /tmp/old COMMIT``). Benchmark the native core against the Python engine, and fstdecode against Moses' figures.

In one run, and written to the ``bench_native`` section of docs/benchmarks.md:

1. Every search method with a native engine (``METHODS[m].has_native``: a native twin function
   or a ``native_factory``, checked at run time; ``fst`` is one, its R and L built by the core),
   ``--engine native`` against ``--engine python``, on the Hansards fr-en table (log10 scores,
   table-limit 20) with the UN English LM at order 2 and 3, d = 4, and on the de-en
   regression-test model of Moses (its moses.ini): ms/word, states/s, mean model score, search
   errors against the exact result where one exists (a proven-optimal result of an exact
   method: dp, bounded, coverage or fst), and peak RSS. Each configuration runs in its own
   subprocess (its peak RSS is the child's ``ru_maxrss`` from ``os.wait4``) and decodes the
   sentences in order with :class:`fstdecode.decoder.Decoder`; a Python run stops at its time
   budget (``--budget``), and the ratios are taken over the sentences both engines decoded.
   ``fst`` stays in this table because its cost is bounded: at d = 4, table-limit 20 R outgrows
   the default state budget (200,000 states) on nearly every Hansards and de-en sentence (in
   about 0.1-0.2 s natively, 1.5-6 s in Python, so the Python rows stop at ``--budget`` as the
   other exact methods' do), and the line keeps the stack decoder's derivation, as ``dp``'s
   does; so these rows measure mostly that path. The FST method's own measurement is part 2.
2. The FST method where it searches to the end: the setting of scripts/bench_fst.py (the
   Hansards table at table-limit 5, the UN LM as a bigram, d = 3), where the Python signature
   DP finishes every sentence. In one subprocess, for each sentence: ``Cascade(model,
   engine="native").search``, ``Cascade(model, engine="python").search`` and the Python DP
   (``signature_dp.search`` on ``Decoder(model, engine="python").problem(words)``, no state
   budget), each under ``--fst-budget`` seconds (:func:`scripts.benchlib.timed`). The native
   cascade runs on the model loaded with ``engine="native"`` (NativeLM), the other two on the
   model loaded with ``engine="python"`` (ArpaLM), as ``--engine`` loads it in the CLI. All
   three run once on the shortest sentence first (a warm-up, not timed). Reported: R's build
   time in Python and natively and their ratio, the native cascade's composition and shortest
   path, its total (the whole ``search`` call), the Python DP's time, the ratio of the two, and
   whether the three best scores agree (to 1e-6).
3. Moses side by side when a ``moses`` binary is on PATH (the de-en model, whose moses.ini is
   Moses' own); otherwise Moses' figures are quoted (Hansards) or read from the regression
   test's truth (de-en), and labelled as such.
4. The whole process ``fstdecode decode ...`` on the 480-line input (the 48 Hansards sentences
   ten times) at LM order 3 and 2: the default method and engine, ``--method stack`` and
   ``--engine python``, run in rounds (the median of the paired runs is reported), with the
   mean model score over the 48 distinct sentences (``--format json``).
5. The LM load ratio: ArpaLM.from_file against NativeLM.from_file on the UN LM.

    python -m scripts.bench_native [--quick] [--budget SEC] [--fst-budget SEC] [--rounds N] [--out docs/benchmarks.md]

``--quick`` (a smoke test, about a minute): the 8 shortest Hansards sentences (in parts 1 and 2),
small Python budgets, one round on the 48-line input. The script rewrites only its own section
of the output file, between ``<!-- bench_native:start -->`` and ``<!-- bench_native:end -->``.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.benchlib import (
    DATA, DOCS, HANSARDS, NO_BUDGET, ROOT, UN_LM, Timeout, best_time, hansards_args, load_avg, log, marked, script,
    timed, write_section,
)

NAME = "bench_native"
DE_EN = DATA / "moses-early-distortion-de-en"
HANSARDS_D, TABLE_LIMIT = 4, 20
#: The FST part's setting (scripts/bench_fst.py's): d, table-limit; the LM is read as a bigram
#: (:func:`scripts.benchlib.hansards_args`). There the Python DP finishes every sentence.
FST_D, FST_TABLE_LIMIT = 3, 5
#: The native core's targets for the FST method: R built this many times faster than in Python,
#: and the native cascade's total at most this many times the Python DP's time.
TARGET_R_SPEEDUP, TARGET_FST_OVER_DP = 20.0, 2.0
#: Modules that attach native twins (those not imported by fstdecode.decoder yet are imported here).
TWIN_MODULES = ("fstdecode.search.native", "fstdecode.search.native_coverage", "fstdecode.search.native_signature")
SCORE_TOLERANCE = 1e-6  # search errors: a best score this far below the exact one
SAME_TOLERANCE = 1e-9  # python vs native: the same scores

#: Moses' figures on the 480-line Hansards input (trigram), quoted: no moses binary here.
MOSES_QUOTED = {"seconds": 5.32, "ms_per_word": 0.74, "mean_score": -86.6442, "lines": 480}
#: The best mean model score known at order 2 on the 48 sentences (quoted).
BEST_KNOWN_BIGRAM = -86.4994
TARGET_MS_PER_WORD = 0.25


# --------------------------------------------------------------------------- the methods


def twin_methods() -> list[str]:
    """The registered methods that have a native engine now (``Method.has_native``), in registration order."""
    importlib.import_module("fstdecode.decoder")
    for name in TWIN_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    from fstdecode.search.base import METHODS

    return [name for name, method in METHODS.items() if method.has_native]


# --------------------------------------------------------------------------- one configuration (child)


def model_of(spec: dict):
    from fstdecode.model.model import load_model

    if spec["model"] == "de-en":
        return load_model(DE_EN / "moses.ini", engine=spec["engine"])
    return load_model(
        phrase_table=HANSARDS / "tm", tm_score_format="log10", lm=UN_LM, lm_order=spec["order"],
        distortion_limit=HANSARDS_D, table_limit=TABLE_LIMIT, engine=spec["engine"],
    )


def lines_of(model: str) -> list[str]:
    path = DE_EN / "to-translate.txt" if model == "de-en" else HANSARDS / "input"
    return path.read_text(encoding="utf-8").splitlines()


def child_main(spec_json: str) -> int:
    """Decode ``spec["lines"]`` of one model with one method and engine; print the record as JSON.

    Each sentence runs under the time left of ``spec["budget"]``; the one that overruns it is
    dropped, and no later one is started.
    """
    import logging

    logging.getLogger("fstdecode").setLevel(logging.ERROR)  # over-budget warnings: counted, not printed
    spec = json.loads(spec_json)
    twin_methods()
    from fstdecode.decoder import Decoder

    t0 = time.perf_counter()
    model = model_of(spec)
    decoder = Decoder(model, method=spec["method"], engine=spec["engine"])
    load = time.perf_counter() - t0
    lines = lines_of(spec["model"])
    spent, out = 0.0, []
    for i in spec["lines"]:
        left = spec["budget"] - spent
        if left <= 0:
            break
        try:
            r, secs = timed(lambda: decoder.decode(lines[i], i), left)
        except Timeout:  # the alarm went off just as the sentence finished: cut off all the same
            break
        if r is None:
            break
        spent += secs
        best = r.best if r.derivations else None
        out.append({
            "id": i, "words": len(r.source), "seconds": secs, "states": r.stats.states,
            "transitions": r.stats.transitions, "optimal": r.optimal,
            "over_budget": bool(r.reason and r.reason.startswith("over budget")), "error": r.error,
            "score": best.score if best else None, "translation": best.translation if best else None,
        })
    print(json.dumps({"load": load, "engine": decoder.engine, "sentences": out}))
    return 0


def fst_child_main(spec_json: str) -> int:
    """Part 2 in one process: the native and the Python cascade and the Python DP on ``spec["lines"]``.

    All three run once on sentence ``spec["warm_up"]`` first (not timed: imports, the core's LM
    and phrase index, first calls). Then for each sentence, each of the three gets
    ``spec["budget"]`` seconds (:func:`timed`); one that overruns is left out of that sentence's
    record (``native``, ``python``, ``dp``). Prints ``{"sentences": [...]}`` as JSON.
    """
    import logging

    logging.getLogger("fstdecode").setLevel(logging.ERROR)
    spec = json.loads(spec_json)
    from fstdecode.decoder import Decoder
    from fstdecode.fst.cascade import Cascade
    from fstdecode.model.model import load_model
    from fstdecode.search.signature_dp import DpOptions
    from fstdecode.search.signature_dp import search as dp_search

    # Each engine on the model its --engine loads (NativeLM or ArpaLM), as in part 1.
    models = {engine: load_model(**hansards_args(FST_D, FST_TABLE_LIMIT), engine=engine) for engine in ("native", "python")}
    cascades = {engine: Cascade(models[engine], engine=engine) for engine in models}
    decoder = Decoder(models["python"], engine="python")
    lines = lines_of("hansards")

    def cascade_run(engine: str, words: tuple[str, ...]):
        return lambda: cascades[engine].search(words)

    def dp_run(words: tuple[str, ...]):
        return lambda: dp_search(decoder.problem(words), DpOptions(max_states=NO_BUDGET))

    warm = tuple(lines[spec["warm_up"]].split())
    for fn in (cascade_run("native", warm), cascade_run("python", warm), dp_run(warm)):
        fn()
    out = []
    for i in spec["lines"]:
        words = tuple(lines[i].split())
        row: dict = {"id": i, "words": len(words)}
        for engine in ("native", "python"):
            got, secs = timed(cascade_run(engine, words), spec["budget"])
            if got is not None:
                t, r = got.timings, got.reordering
                row[engine] = {"seconds": secs, "build_r": t.build_r, "compose": t.compose, "shortest_path": t.shortest_path,
                               "score": got.result.hypotheses[0][0], "states": r.states, "transitions": r.transitions}
            del got  # the lattice of this sentence, before the next search
        got, secs = timed(dp_run(words), spec["budget"])
        if got is not None:
            row["dp"] = {"seconds": secs, "score": got.hypotheses[0][0], "states": got.states}
        del got
        out.append(row)
    print(json.dumps({"sentences": out}))
    return 0


def run_child(spec: dict, wall: float, entry: str = "child_main") -> dict:
    """Run ``entry(spec)`` of this module in a subprocess (one configuration: :func:`child_main`;
    part 2: :func:`fst_child_main`); its record plus ``rss_mb`` (peak RSS) and ``status``."""
    cmd = [sys.executable, "-c", f"import sys; from scripts.bench_native import {entry}; sys.exit({entry}(sys.argv[1]))",
           json.dumps(spec)]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err)
        deadline = time.monotonic() + wall
        status, rusage = None, None
        while status is None:
            pid, status_code, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                status = os.waitstatus_to_exitcode(status_code)
                break
            if time.monotonic() > deadline:
                proc.kill()  # this child only, by its own handle
                _, status_code, rusage = os.wait4(proc.pid, 0)
                status = "killed"
                break
            time.sleep(0.02)
        proc.returncode = status if isinstance(status, int) else -9  # reaped here, by os.wait4
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(), err.read().decode(errors="replace")
    rss_mb = rusage.ru_maxrss / 1024 if rusage else None
    if status != 0:
        return {"status": f"failed ({status})", "stderr": errors[-2000:], "rss_mb": rss_mb, "sentences": []}
    record = json.loads(text.strip().splitlines()[-1])
    record.update(status="ok", rss_mb=rss_mb)
    return record


# --------------------------------------------------------------------------- the method tables


def summarize(rec: dict, exact: dict[int, float]) -> dict:
    """ms/word, states/s, mean score, search errors and counts of one configuration's record."""
    ss = rec["sentences"]
    words = sum(s["words"] for s in ss)
    secs = sum(s["seconds"] for s in ss)
    searched = [s for s in ss if not s["over_budget"]]  # over budget: stats are the fallback's
    scored = [s["score"] for s in ss if s["score"] is not None]
    checked = [s for s in ss if s["id"] in exact and s["score"] is not None]
    errors = [s["id"] for s in checked if s["score"] < exact[s["id"]] - SCORE_TOLERANCE]
    return {
        "sentences": len(ss), "words": words, "seconds": secs,
        "ms_per_word": 1000 * secs / words if words else None,
        "states_per_s": (sum(s["states"] for s in searched) / sum(s["seconds"] for s in searched)
                         if searched and sum(s["seconds"] for s in searched) > 0 else None),
        "mean_score": statistics.fmean(scored) if scored else None,
        "errors": len(errors), "checked": len(checked), "optimal": sum(s["optimal"] for s in ss),
        "over_budget": len(ss) - len(searched), "failed": sum(1 for s in ss if s["score"] is None),
    }


def compare(py: dict, nat: dict) -> dict:
    """The two engines on the sentences both decoded: time and states/s ratios, identical results."""
    a = {s["id"]: s for s in py["sentences"]}
    b = {s["id"]: s for s in nat["sentences"]}
    common = [i for i in a if i in b]
    if not common:
        return {"common": 0}
    same = all(
        a[i]["translation"] == b[i]["translation"] and a[i]["optimal"] == b[i]["optimal"]
        and a[i]["states"] == b[i]["states"] and a[i]["transitions"] == b[i]["transitions"]
        and (a[i]["score"] is None) == (b[i]["score"] is None)
        and (a[i]["score"] is None or abs(a[i]["score"] - b[i]["score"]) <= SAME_TOLERANCE)
        for i in common
    )
    pa, nb = sum(a[i]["seconds"] for i in common), sum(b[i]["seconds"] for i in common)
    searched = [i for i in common if not a[i]["over_budget"]]
    rate = None
    if searched:
        ps = sum(a[i]["seconds"] for i in searched)
        ns = sum(b[i]["seconds"] for i in searched)
        st = sum(a[i]["states"] for i in searched)
        if ps > 0 and ns > 0 and st:
            rate = (st / ns) / (st / ps)
    return {"common": len(common), "words": sum(a[i]["words"] for i in common), "time_ratio": pa / nb if nb else None,
            "rate_ratio": rate, "same": same}


def exact_scores(records: dict, methods_exact: set[str]) -> tuple[dict, list[str]]:
    """(model key -> {sentence: exact score}, disagreements) from proven-optimal results of exact methods."""
    exact: dict = {}
    clashes = []
    for (key, method, engine), rec in records.items():
        if method not in methods_exact:
            continue
        for s in rec["sentences"]:
            if s["optimal"] and s["score"] is not None:
                got = exact.setdefault(key, {})
                if s["id"] in got and abs(got[s["id"]] - s["score"]) > SCORE_TOLERANCE:
                    clashes.append(f"{key} sentence {s['id']}: {method}/{engine} {s['score']!r} vs {got[s['id']]!r}")
                got.setdefault(s["id"], s["score"])
    return exact, clashes


# --------------------------------------------------------------------------- the FST method (part 2)


def fst_rows(rec: dict) -> list[dict]:
    """Per sentence that all three searches finished: the times, the two ratios and the checks.

    ``other``: the native ``search`` call's time outside its three timings (I ∘ P, the phrase
    options); ``same_score``: the three best scores within SCORE_TOLERANCE; ``same_r``: both
    builders made R with the same numbers of states and arcs.
    """
    rows = []
    for s in rec["sentences"]:
        if not all(k in s for k in ("native", "python", "dp")):
            continue
        nat, py, dp = s["native"], s["python"], s["dp"]
        scores = (nat["score"], py["score"], dp["score"])
        rows.append({
            "id": s["id"], "words": s["words"], "states": nat["states"], "arcs": nat["transitions"],
            "r_python": py["build_r"], "r_native": nat["build_r"],
            "r_ratio": py["build_r"] / nat["build_r"] if nat["build_r"] > 0 else None,
            "compose": nat["compose"], "shortest_path": nat["shortest_path"],
            "other": nat["seconds"] - nat["build_r"] - nat["compose"] - nat["shortest_path"],
            "fst_native": nat["seconds"], "fst_python": py["seconds"], "dp": dp["seconds"],
            "fst_over_dp": nat["seconds"] / dp["seconds"] if dp["seconds"] > 0 else None,
            "same_score": max(scores) - min(scores) <= SCORE_TOLERANCE,
            "same_r": (nat["states"], nat["transitions"]) == (py["states"], py["transitions"]) and nat["states"] == dp["states"],
        })
    return rows


def fst_failures(rec: dict) -> list[str]:
    """What went wrong in part 2: the child, a search over its budget, scores or R that differ."""
    if rec["status"] != "ok":
        return [f"FST part {rec['status']}"]
    bad = [f"sentence {s['id']}: {k} over budget" for s in rec["sentences"] for k in ("native", "python", "dp") if k not in s]
    for r in fst_rows(rec):
        if not r["same_score"]:
            bad.append(f"sentence {r['id']}: best scores differ")
        if not r["same_r"]:
            bad.append(f"sentence {r['id']}: R differs between the builders (or from the DP's states)")
    return bad


# --------------------------------------------------------------------------- whole processes (CLI)


def cli_base() -> list[str]:
    exe = shutil.which("fstdecode")
    return [exe, "decode"] if exe else [sys.executable, "-m", "fstdecode", "decode"]


def hansards_flags(order: int) -> list[str]:
    return ["--phrase-table", str(HANSARDS / "tm"), "--tm-score-format", "log10", "--lm", str(UN_LM),
            "--lm-order", str(order), "-d", str(HANSARDS_D), "--table-limit", str(TABLE_LIMIT)]


def run_process(cmd: list[str], stdin: Path) -> tuple[float, float, str, int]:
    """(wall seconds, peak RSS MB, stdout, exit code) of one whole process."""
    with open(stdin, "rb") as inp, tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=inp, stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT)
        _, status, rusage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return wall, rusage.ru_maxrss / 1024, out.read().decode(), proc.returncode


CLI_CONFIGS = (("default method, default engine", []), ("--method stack", ["--method", "stack"]),
               ("--engine python", ["--engine", "python"]))


def cli_bench(order: int, timed_input: Path, distinct: Path, rounds: int, python_rounds: int) -> list[dict]:
    """Each configuration of CLI_CONFIGS at ``order``: rounds of paired runs, then one json run."""
    words = len(timed_input.read_text(encoding="utf-8").split())
    lines = len(timed_input.read_text(encoding="utf-8").splitlines())
    rows = [{"name": name, "extra": extra, "walls": [], "rss": []} for name, extra in CLI_CONFIGS]
    for r in range(rounds):
        for row in rows:
            if row["extra"] == ["--engine", "python"] and r >= python_rounds:
                continue
            wall, rss, _, code = run_process(cli_base() + hansards_flags(order) + row["extra"], timed_input)
            if code != 0:
                row["failed"] = code
            row["walls"].append(wall)
            row["rss"].append(rss)
            log(f"  cli order {order} {row['name']}: {wall:.3f} s, {rss:.0f} MB")
    for row in rows:
        _, _, text, code = run_process(cli_base() + hansards_flags(order) + row["extra"] + ["--format", "json"], distinct)
        results = [json.loads(line) for line in text.splitlines() if line.strip()]
        scores = [x["score"] for x in results if x.get("score") is not None]
        row.update(
            median=statistics.median(row["walls"]), runs=len(row["walls"]), words=words, lines=lines,
            mean_score=statistics.fmean(scores) if scores else None, scored=len(scores),
            optimal=sum(1 for x in results if x.get("optimal")), rss_max=max(row["rss"]),
        )
        row["ms_per_word"] = 1000 * row["median"] / words
    return rows


# --------------------------------------------------------------------------- Moses


def moses_truth_scores() -> list[float]:
    text = (DE_EN / "truth" / "results.txt").read_text(encoding="utf-8")
    return [float(v) for v in re.findall(r"^SCORE_\d+ = (\S+)$", text, re.M)]


def moses_de_en(moses: str) -> dict:
    """Moses itself on the de-en model (its own moses.ini, ${TEST_PATH} = the model directory)."""
    ini = (DE_EN / "moses.ini").read_text(encoding="utf-8").replace("${TEST_PATH}", str(DE_EN))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "moses.ini"
        path.write_text(ini.replace("[n-best-list]\nnbest\n50\n", ""), encoding="utf-8")
        wall, rss, out, code = run_process([moses, "-f", str(path)], DE_EN / "to-translate.txt")
    return {"seconds": wall, "rss_mb": rss, "code": code, "lines": len(out.splitlines())}


# --------------------------------------------------------------------------- the run


def fmt(x, spec: str, none: str = "–") -> str:
    return none if x is None else format(x, spec)


def run(args, record) -> int:
    quick = args.quick
    budget = args.budget if args.budget is not None else (1.5 if quick else 60.0)
    rounds = args.rounds if args.rounds is not None else (1 if quick else 5)
    methods = twin_methods()
    from fstdecode.search.base import METHODS

    methods_exact = {m for m in METHODS if METHODS[m].exact}
    hansards = lines_of("hansards")
    if quick:  # the shortest sentences, so that the Python engine finishes some of every method
        chosen = sorted(sorted(range(len(hansards)), key=lambda i: len(hansards[i].split()))[:8])
    else:
        chosen = list(range(len(hansards)))
    models = [("hansards", 2, chosen), ("hansards", 3, chosen), ("de-en", None, list(range(len(lines_of("de-en")))))]
    log(f"{NAME}: methods with a native engine: {', '.join(methods)}; python budget {budget:g} s per configuration")

    records: dict = {}
    for model, order, ids in models:
        key = model if order is None else f"{model} order {order}"
        for method in methods:
            for engine in ("native", "python"):
                spec = {"model": model, "order": order, "method": method, "engine": engine, "lines": ids,
                        "budget": budget if engine == "python" else 1e9}
                wall = (budget if engine == "python" else 1800) * 3 + 120
                rec = run_child(spec, wall)
                records[(key, method, engine)] = rec
                done = len(rec["sentences"])
                log(f"  {key:18s} {method:9s} {engine:6s} {rec['status']}: {done}/{len(ids)} sentences, "
                    f"{sum(s['seconds'] for s in rec['sentences']):.2f} s, RSS {fmt(rec['rss_mb'], '.0f')} MB")
                if rec["status"] != "ok":
                    log(rec.get("stderr", ""))
    exact, clashes = exact_scores(records, methods_exact)

    fst_budget = args.fst_budget if args.fst_budget is not None else (10.0 if quick else 60.0)
    warm_up = min(range(len(hansards)), key=lambda i: len(hansards[i].split()))
    log(f"{NAME}: the FST method (d = {FST_D}, table-limit {FST_TABLE_LIMIT}, bigram), {fst_budget:g} s per search; "
        f"warm-up on sentence {warm_up}")
    fst_rec = run_child({"lines": chosen, "budget": fst_budget, "warm_up": warm_up},
                        3 * fst_budget * len(chosen) + 300, entry="fst_child_main")
    if fst_rec["status"] != "ok":
        log(fst_rec.get("stderr", ""))
    for r in fst_rows(fst_rec):
        log(f"  {r['id']:2d} n={r['words']:2d} R {r['r_python']:.3f}/{r['r_native']:.3f} s ({fmt(r['r_ratio'], '.1f')}x), "
            f"native total {r['fst_native']:.3f} s, python {r['fst_python']:.3f} s, DP {r['dp']:.3f} s "
            f"(fst/dp {fmt(r['fst_over_dp'], '.2f')}){'' if r['same_score'] else ' SCORES DIFFER'}")
    fst_bad = fst_failures(fst_rec)

    log(f"{NAME}: whole processes")
    with tempfile.TemporaryDirectory() as tmp:
        distinct = Path(tmp) / "input48.txt"
        distinct.write_text("\n".join(hansards) + "\n", encoding="utf-8")
        timed_input = distinct
        if not quick:
            timed_input = Path(tmp) / "input480.txt"
            timed_input.write_text(("\n".join(hansards) + "\n") * 10, encoding="utf-8")
        cli = {order: cli_bench(order, timed_input, distinct, rounds, min(rounds, 3)) for order in (3, 2)}

    log(f"{NAME}: LM load")
    from fstdecode.io.arpa import ArpaLM
    from fstdecode.io.native_lm import NativeLM

    repeats = 1 if quick else 3
    _, arpa_s = best_time(lambda: ArpaLM.from_file(UN_LM), repeat_below=float("inf"), repeats=repeats)
    _, native_s = best_time(lambda: NativeLM.from_file(UN_LM), repeat_below=float("inf"), repeats=repeats)

    moses = shutil.which("moses")
    moses_run = moses_de_en(moses) if moses else None

    section = render(args, record, methods, models, records, exact, clashes, (fst_rec, fst_budget, warm_up), cli,
                     (arpa_s, native_s), moses, moses_run, budget, rounds, load_avg())
    write_section(args.out, NAME, section)
    log(f"wrote {args.out} ({record.elapsed():.0f} s)")
    bad = [k for k, rec in records.items() if rec["status"] != "ok"]
    differ = [k for k in {(a, m) for a, m, _ in records}
              if compare(records[(*k, "python")], records[(*k, "native")]).get("same") is False]
    if bad or differ or clashes or fst_bad:
        log(f"!!! {NAME}: failed {bad}; python and native differ in {differ}; exact results disagree in {clashes}; "
            f"FST part: {fst_bad}")
        return 1
    return 0


def render(args, record, methods, models, records, exact, clashes, fst_part, cli, lm_load, moses, moses_run, budget,
           rounds, load_end) -> str:
    L = ["## The native core against the Python engine, and Moses (`scripts/bench_native.py`)", ""]
    L += [
        f"- command: `{record.command}`",
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- load average (1/5/15 min) at start {record.load_start}, at end {load_end}. The machine is shared and "
        "noisy: other processes ran during the measurement, so times (and more so ratios of times taken minutes "
        "apart) carry that noise; each configuration runs in one process (one core).",
        f"- methods with a native engine at run time: {', '.join(methods)}",
        "",
        "### Methods: `--engine native` against `--engine python`",
        "",
        f"Hansards fr-en (table-limit {TABLE_LIMIT}, log10 scores) with the UN English LM, d = {HANSARDS_D}, at LM "
        "order 2 and 3; and the de-en regression-test model of Moses (its moses.ini: trigram, d = 6, table-limit "
        "20). Each row is one subprocess that loads the model with that engine and decodes the sentences in order "
        "with `Decoder(model, method, engine)` at the method's default options. *ms/word*: `decode()` wall time per "
        "source word (problem, search, any fallback, rescoring; model loading excluded). *states/s*: states over "
        "the search time of the sentences searched to the end (a sentence over its `--max-states` budget gets the "
        "stack decoder's result, whose stats are not the method's; *over budget* counts those). *errors*: "
        "sentences whose model score is below the exact one (a proven-optimal result of an exact method, dp, "
        f"bounded, coverage or fst, from any row) by more than {SCORE_TOLERANCE:g}, out of those that have one. "
        f"*peak RSS*: the subprocess's `ru_maxrss`. The Python engine stops at {budget:g} s of search per row "
        "(the sentence that overruns is dropped), so it may cover fewer sentences. At this d and table-limit, "
        "`fst` builds R up to the default state budget (200,000 states) on nearly every sentence and then keeps "
        "the stack decoder's derivation, as `dp` does: its rows measure mostly that path; the next section "
        "measures the cascade where it searches to the end.",
        "",
        "| model | method | engine | sentences | ms/word | states/s | mean model score | errors | proven optimal | over budget | peak RSS MB |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keys = [m if o is None else f"{m} order {o}" for m, o, _ in models]
    for key, (_, _, ids) in zip(keys, models):
        for method in methods:
            for engine in ("native", "python"):
                rec = records[(key, method, engine)]
                if rec["status"] != "ok":
                    L.append(f"| {key} | {method} | {engine} | {rec['status']} | | | | | | | {fmt(rec['rss_mb'], '.0f')} |")
                    continue
                s = summarize(rec, exact.get(key, {}))
                L.append(
                    f"| {key} | {method} | {engine} | {s['sentences']}/{len(ids)} | {fmt(s['ms_per_word'], '.3f')} | "
                    f"{fmt(s['states_per_s'], ',.0f')} | {fmt(s['mean_score'], '.4f')} | {s['errors']}/{s['checked']} | "
                    f"{s['optimal']} | {s['over_budget']} | {fmt(rec['rss_mb'], '.0f')} |"
                )
    L += ["", "Ratios, over the sentences both engines decoded (*time*: Python search time ÷ native; *states/s*: native "
          "÷ Python, over the sentences searched to the end; *identical*: the same translations, scores to "
          f"{SAME_TOLERANCE:g}, states, transitions and optimality on every one of them):", "",
          "| model | method | sentences | words | time ratio | states/s ratio | identical |", "|---|---|---:|---:|---:|---:|:---:|"]
    for key in keys:
        for method in methods:
            c = compare(records[(key, method, "python")], records[(key, method, "native")])
            if not c["common"]:
                L.append(f"| {key} | {method} | 0 | | | | |")
                continue
            L.append(f"| {key} | {method} | {c['common']} | {c['words']} | {fmt(c['time_ratio'], '.1f')}× | "
                     f"{fmt(c['rate_ratio'], '.1f')}{'×' if c['rate_ratio'] else ''} | {'yes' if c['same'] else '**NO**'} |")
    counts = ", ".join(f"{key} {len(exact.get(key, {}))}/{len(ids)}" for key, (_, _, ids) in zip(keys, models))
    L += ["", f"Sentences with an exact result: {counts}."
          + (" **Exact results disagree:** " + "; ".join(clashes) if clashes else "")]

    L += render_fst(*fst_part)

    L += ["", "### Moses", ""]
    de_en_key = keys[-1]
    truth = moses_truth_scores()
    if moses_run is not None:
        L.append(f"`{moses}` on the de-en model ({moses_run['lines']} lines): {moses_run['seconds']:.2f} s whole "
                 f"process, peak RSS {moses_run['rss_mb']:.0f} MB (exit code {moses_run['code']}).")
    else:
        L.append("No `moses` binary on PATH: Moses' figures are quoted, not measured in this run.")
    L += [
        "",
        f"- Hansards, 480-line input (the 48 sentences × 10), trigram, d = {HANSARDS_D}: Moses "
        f"{MOSES_QUOTED['seconds']:.2f} s, {MOSES_QUOTED['ms_per_word']:.2f} ms/word, mean model score "
        f"{MOSES_QUOTED['mean_score']:.4f} (quoted).",
        f"- de-en, 5 sentences: Moses' mean model score {statistics.fmean(truth):.4f} (the regression test's "
        "truth/results.txt, SCORE_i; quoted). Here, natively: "
        + "; ".join(f"{m} {fmt(summarize(records[(de_en_key, m, 'native')], exact.get(de_en_key, {}))['mean_score'], '.4f')}"
                    for m in methods) + ".",
    ]

    L += ["", "### Whole process: `fstdecode decode` on the Hansards input", ""]
    first = next(iter(cli.values()))[0]
    L.append(
        f"`{' '.join(['fstdecode', 'decode'] + hansards_flags(3))}` (and `--lm-order 2`) with the input on stdin and "
        f"the output to a file: {first['lines']} lines, {first['words']} words"
        + (" (the 48 sentences × 10)" if first["lines"] == 480 else " (the 48 sentences once: --quick)")
        + f". {rounds} round(s) of paired runs (each round runs every configuration once, in the order below; the "
        f"Python engine in the first {min(rounds, 3)} round(s) only); the median wall time is reported, and the fastest run (the one least disturbed by the other "
        "processes of this shared machine). The mean model "
        "score is over the 48 distinct sentences (one `--format json` run of each configuration)."
    )
    L += ["", "| LM order | configuration | runs | median s | ms/word | fastest s | ms/word (fastest) | mean model score | proven optimal | peak RSS MB |",
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for order, rows in cli.items():
        for row in rows:
            failed = f" (exit {row['failed']})" if row.get("failed") else ""
            L.append(f"| {order} | {row['name']}{failed} | {row['runs']} | {row['median']:.3f} | {row['ms_per_word']:.3f} | "
                     f"{min(row['walls']):.3f} | {1000 * min(row['walls']) / row['words']:.3f} | "
                     f"{fmt(row['mean_score'], '.4f')} | {row['optimal']}/48 | {row['rss_max']:.0f} |")
    L.append("")
    for order, rows in cli.items():
        default, stack, python = rows
        target = (MOSES_QUOTED["mean_score"], "Moses' quoted trigram mean") if order == 3 else (BEST_KNOWN_BIGRAM, "the best known bigram mean")
        ok_score = default["mean_score"] is not None and default["mean_score"] >= target[0] - 5e-5
        ok_speed = default["ms_per_word"] <= TARGET_MS_PER_WORD
        verdict = ("not comparable with" if first["lines"] != 480 else "within" if ok_speed else "**above**")
        L.append(
            f"- order {order}: the default configuration takes {default['ms_per_word']:.3f} ms/word "
            f"({verdict} the {TARGET_MS_PER_WORD} ms/word target on the 480-line input"
            + (f"; Moses, quoted: {MOSES_QUOTED['ms_per_word']} ms/word, so {MOSES_QUOTED['ms_per_word'] / default['ms_per_word']:.1f}× faster"
               if order == 3 and first["lines"] == 480 else "")
            + f"; its fastest run: {1000 * min(default['walls']) / default['words']:.3f} ms/word"
            + f") with mean model score {fmt(default['mean_score'], '.4f')} ({'≥' if ok_score else '**<**'} "
            f"{target[0]}, {target[1]}); the Python engine takes {python['median'] / default['median']:.1f}× as long "
            f"({python['ms_per_word']:.3f} ms/word); `--method stack`: {stack['ms_per_word']:.3f} ms/word."
        )
    arpa_s, native_s = lm_load
    L += ["", "### LM load", "",
          f"The UN English LM ({UN_LM.stat().st_size / 1e6:.1f} MB ARPA, order 3), best of {1 if args.quick else 3}: "
          f"`ArpaLM.from_file` {arpa_s:.3f} s, `NativeLM.from_file` {native_s:.3f} s: {arpa_s / native_s:.1f}× faster."]
    return marked(NAME, L)


def render_fst(rec: dict, fst_budget: float, warm_up: int) -> list[str]:
    """Part 2's subsection: the summary table, the targets and the per-sentence table."""
    L = ["", "### The FST method: R, composition and shortest path against the Python DP", ""]
    n = len(rec["sentences"]) if rec["status"] == "ok" else 0
    L.append(
        f"Hansards fr-en at table-limit {FST_TABLE_LIMIT} with the UN English LM read as a bigram, d = {FST_D} (the "
        "setting of `scripts/bench_fst.py`, where the Python DP finishes every sentence), in one subprocess. For each "
        'sentence, in this order: `Cascade(model, engine="native").search(words)` on the model loaded with '
        '`engine="native"`; `Cascade(model, engine="python").search(words)` and the Python signature DP '
        '(`signature_dp.search(Decoder(model, engine="python").problem(words), DpOptions(max_states=NO_BUDGET))`) '
        f'on the model loaded with `engine="python"` (ArpaLM), as `--engine` loads it; each under {fst_budget:g} s '
        f"(SIGALRM). All three ran once on sentence {warm_up} (the shortest) before the timing, so that first-call "
        "costs (imports, the core's LM and phrase index) are not counted. *R*: `Timings.build_r` (R and L); "
        "*compose*: `I∘P∘R∘L`; *shortest path*: `Timings.shortest_path` (with the exact re-ranking of the few best "
        "paths); *other*: the rest of the `search` call (`I∘P` and the phrase options read off it); *FST total*: "
        "the whole `search` call. *Python DP*: problem building and search. One run, so each ratio is of two "
        "times taken seconds apart on this shared machine."
    )
    if rec["status"] != "ok":
        return L + ["", f"**The FST part {rec['status']}:**", "", "```", rec.get("stderr", "").strip(), "```"]
    rows = fst_rows(rec)
    if not rows:
        return L + ["", f"No sentence finished all three searches within {fst_budget:g} s."]

    def stat(key: str, spec: str) -> str:
        values = [r[key] for r in rows if r[key] is not None]
        total = sum(values)
        return (f"| {total:{spec}} | {statistics.median(values):{spec}} | {min(values):{spec}} | {max(values):{spec}} |"
                if values else "| | | | |")

    def ratio(key: str, num: str, den: str) -> str:
        values = [r[key] for r in rows if r[key] is not None]
        tot = sum(r[num] for r in rows) / sum(r[den] for r in rows)
        return (f"| {tot:.2f}× (of the totals) | {statistics.median(values):.2f}× | {min(values):.2f}× | "
                f"{max(values):.2f}× |")

    L += ["", f"Over the {len(rows)} of {n} sentences that all three searches finished (peak RSS of the process "
          f"{fmt(rec['rss_mb'], '.0f')} MB):", "",
          "| | total | median | min | max |", "|---|---:|---:|---:|---:|",
          "| R build, Python s " + stat("r_python", ".3f"),
          "| R build, native s " + stat("r_native", ".4f"),
          "| R build, Python ÷ native " + ratio("r_ratio", "r_python", "r_native"),
          "| native compose s " + stat("compose", ".3f"),
          "| native shortest path s " + stat("shortest_path", ".4f"),
          "| native other s " + stat("other", ".4f"),
          "| **native FST total s** " + stat("fst_native", ".3f"),
          "| Python FST total s " + stat("fst_python", ".3f"),
          "| **Python DP s** " + stat("dp", ".3f"),
          "| native FST total ÷ Python DP " + ratio("fst_over_dp", "fst_native", "dp")]
    r_ratios = [r["r_ratio"] for r in rows if r["r_ratio"] is not None]
    over = [r["fst_over_dp"] for r in rows if r["fst_over_dp"] is not None]
    r_met = sum(x >= TARGET_R_SPEEDUP for x in r_ratios)
    dp_met = sum(x <= TARGET_FST_OVER_DP for x in over)
    same = sum(r["same_score"] for r in rows)
    same_r = sum(r["same_r"] for r in rows)
    L += ["",
          f"- R built {statistics.median(r_ratios):.1f}× faster natively (median; min {min(r_ratios):.1f}×): at least "
          f"{TARGET_R_SPEEDUP:g}× on {r_met} of {len(r_ratios)} sentences (target: ≥ {TARGET_R_SPEEDUP:g}×).",
          f"- The native FST total is {statistics.median(over):.2f}× the Python DP's time (median; max {max(over):.2f}×): "
          f"at most {TARGET_FST_OVER_DP:g}× on {dp_met} of {len(over)} sentences (target: ≤ {TARGET_FST_OVER_DP:g}×).",
          f"- Best scores: FST native = FST Python = Python DP to {SCORE_TOLERANCE:g} on {same} of {len(rows)} "
          f"sentences; R has the same states and arcs from both builders (and as many states as the DP) on {same_r} "
          f"of {len(rows)}."]
    missing = [f"{s['id']} ({', '.join(k for k in ('native', 'python', 'dp') if k not in s)})"
               for s in rec["sentences"] if not all(k in s for k in ("native", "python", "dp"))]
    if missing:
        L.append(f"- Over the {fst_budget:g} s budget (left out above): sentence " + "; ".join(missing) + ".")
    L += ["", "| id | n | R states | R arcs | R Python s | R native s | R ratio | compose s | shortest path s | other s | "
          "FST total s | Python FST s | Python DP s | FST ÷ DP | same score |",
          "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|"]
    for r in rows:
        L.append(f"| {r['id']} | {r['words']} | {r['states']:,} | {r['arcs']:,} | {r['r_python']:.3f} | {r['r_native']:.4f} | "
                 f"{fmt(r['r_ratio'], '.1f')}× | {r['compose']:.3f} | {r['shortest_path']:.4f} | {r['other']:.4f} | "
                 f"{r['fst_native']:.3f} | {r['fst_python']:.3f} | {r['dp']:.3f} | {fmt(r['fst_over_dp'], '.2f')} | "
                 f"{'yes' if r['same_score'] else '**NO**'} |")
    return L


def add_args(ap) -> None:
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds of search per Python-engine configuration (default 60; --quick 1.5)")
    ap.add_argument("--fst-budget", type=float, default=None,
                    help="seconds per search and sentence in the FST part (default 60; --quick 10)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds of paired whole-process runs (default 5; --quick 1)")


main = script(NAME, __doc__, run, add_args=add_args, out=DOCS / "benchmarks.md",
              quick="smoke test (about a minute): 8 short sentences, 1.5 s Python budgets, one round on 48 lines",
              needs_data=True)


if __name__ == "__main__":
    sys.exit(main())
