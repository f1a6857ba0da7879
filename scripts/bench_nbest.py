#!/usr/bin/env python3
"""N-best lists for tuning: fstdecode-moses against Moses, one decoder call of mert-moses.pl, and whole tuning runs.

The set-up is issue 39's: ``../shared/tools/moses-hansards DIR 3`` writes ``DIR/moses.ini`` (the
shared Hansards table as probabilities, the UN LM at order 3, d=4, table-limit 20,
``[early-distortion-cost]``), ``DIR/dev.src`` and ``DIR/dev.ref`` (48 lines); the script makes it
when DIR lacks it. One decoder call of the tuning loop, for each decoder, as mert-moses.pl makes it::

    DECODER -config DIR/moses.ini -threads 1 -v 0 -weight-overwrite "WordPenalty0= 0.102485 ..."
            [-n-best-list FILE 100 [distinct]] -input-file DIR/dev.src

timed whole (the process' start included), with its peak RSS (``os.wait4``): the 1-best, the
100-best and the 100-best distinct, the calls alternating, ``--rounds`` rounds, best kept. The
decoders: ``fstdecode-moses`` (this checkout's, ``python -m fstdecode moses``) and, with
``--moses PATH``, Moses itself. With ``--mert-dir BIN`` (Moses' ``mert``, ``extractor``,
``kbmira``) and ``--mert-script`` (Moses' ``scripts/training/mert-moses.pl``) the script also
runs mert-moses.pl end to end with each decoder, MERT (``--nbest 100 --maximum-iterations 8
--no-filter-phrase-table --decoder-flags "-threads 1 -v 0"``) and, with ``--batch-mira``, its
``--batch-mira`` path too, and reports each run's time, iterations and final BLEU (its last
``BEST at`` line). Moses is built from its source outside the repository (nothing of it is
committed). Writes the ``bench_nbest`` section of docs/benchmarks.md.

    python -m scripts.bench_nbest [--dir DIR] [--moses PATH] [--mert-dir BIN --mert-script PL [--batch-mira]]
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.benchlib import DATA, DOCS, load_avg, log, marked, script, whole_process, write_section

#: The weights of the issue's decoder call (one iteration of the tuning loop).
WEIGHTS = "WordPenalty0= 0.102485 Distortion0= 0.142767 PhraseDictionaryMemory0= 0.651106 KENLM0= 0.103642"
SETUP = DATA.parent / "tools" / "moses-hansards"
CALLS = {"1-best": [], "100-best": ["100"], "100-best distinct": ["100", "distinct"]}


def add_args(ap) -> None:
    ap.add_argument("--dir", type=Path, default=Path("/tmp/hz"), help="the set-up's folder (made if absent; default /tmp/hz)")
    ap.add_argument("--moses", type=Path, default=None, help="Moses' moses binary, to compare with")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the decoder calls, best kept (default 3)")
    ap.add_argument("--mert-dir", type=Path, default=None, help="Moses' bin folder with mert, extractor, kbmira")
    ap.add_argument("--mert-script", type=Path, default=None, help="Moses' scripts/training/mert-moses.pl")
    ap.add_argument("--batch-mira", action="store_true", help="also tune with mert-moses.pl --batch-mira")


def fstdecode_moses() -> list[str]:
    """This checkout's fstdecode-moses: its console script when installed, else the module."""
    found = shutil.which("fstdecode-moses")
    return [found] if found else [sys.executable, "-m", "fstdecode", "moses"]


def call(decoder: list[str], folder: Path, nbest: list[str], out: Path) -> list[str]:
    argv = [*decoder, "-config", str(folder / "moses.ini"), "-threads", "1", "-v", "0", "-weight-overwrite", WEIGHTS]
    if nbest:
        argv += ["-n-best-list", str(out), *nbest]
    return argv + ["-input-file", str(folder / "dev.src")]


def tune(decoder: list[str], folder: Path, args, mira: bool) -> dict:
    """One mert-moses.pl run, in a fresh working folder: seconds, iterations, final BLEU."""
    work = Path(tempfile.mkdtemp(prefix="bench_nbest_mert_"))
    wrapper = work / "decoder"  # mert-moses.pl takes one executable path
    wrapper.write_text("#!/bin/sh\nexec " + " ".join(decoder) + ' "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    argv = ["perl", str(args.mert_script), str(folder / "dev.src"), str(folder / "dev.ref"), str(wrapper),
            str(folder / "moses.ini"), "--mertdir", str(args.mert_dir), "--nbest", "100", "--maximum-iterations", "8",
            "--no-filter-phrase-table", "--decoder-flags", "-threads 1 -v 0", "--working-dir", str(work / "mert-work")]
    if mira:
        argv.append("--batch-mira")
    t = time.perf_counter()
    proc = subprocess.run(argv, cwd=work, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    best = re.findall(r"\((\d+)\) BEST at \d+:? (.*?) => ([-\d.]+)", proc.stdout)
    log(f"mert-moses.pl{' --batch-mira' if mira else ''} with {decoder[-1]}: exit {proc.returncode}, {seconds:.0f} s")
    return {"seconds": seconds, "code": proc.returncode, "iterations": int(best[-1][0]) if best else 0,
            "bleu": float(best[-1][2]) if best else float("nan"), "work": work,
            "tail": (proc.stdout + proc.stderr)[-800:]}


def run(args, record) -> int:
    folder = args.dir
    if not (folder / "moses.ini").is_file():
        if not SETUP.is_file():
            raise SystemExit(f"{SETUP} is absent: the set-up needs ../shared")
        subprocess.run([str(SETUP), str(folder), "3"], check=True)
    lines = len((folder / "dev.src").read_text(encoding="utf-8").splitlines())
    decoders = {"fstdecode-moses": fstdecode_moses()}
    if args.moses is not None:
        decoders["Moses"] = [str(args.moses)]
    out = Path(tempfile.mkdtemp(prefix="bench_nbest_"))
    walls: dict = {}
    peaks: dict = {}
    sizes: dict = {}
    for r in range(args.rounds):
        for name, decoder in decoders.items():
            for kind, nbest in CALLS.items():
                listed = out / f"{name}.{kind.replace(' ', '-')}.nbest"
                wall, peak, _, _ = whole_process(call(decoder, folder, nbest, listed), cwd=folder)
                walls.setdefault((name, kind), []).append(wall)
                peaks.setdefault((name, kind), []).append(peak)
                if nbest:
                    sizes[(name, kind)] = len(listed.read_text(encoding="utf-8").splitlines())
                log(f"round {r + 1}: {name} {kind}: {wall:.2f} s, {peak / 2**20:.0f} MB")
    tuned = []
    if args.mert_dir is not None and args.mert_script is not None:
        for mira in ([False, True] if args.batch_mira else [False]):
            for name, decoder in decoders.items():
                tuned.append((name, mira, tune(decoder, folder, args, mira)))
    load_end = load_avg()

    best = {k: min(v) for k, v in walls.items()}
    peak = {k: min(v) / 2**20 for k, v in peaks.items()}
    rows = []
    for name in decoders:
        one, one_mb = best[(name, "1-best")], peak[(name, "1-best")]
        for kind in CALLS:
            key = (name, kind)
            listed = f"{sizes[key]:,}" if key in sizes else "-"
            rows.append(f"| {name} | {kind} | {best[key]:.2f} | {', '.join(f'{w:.2f}' for w in walls[key])} | "
                        f"{peak[key]:.0f} | {best[key] / one:.2f} | {peak[key] / one_mb:.2f} | {listed} |")
    lines_out = [
        "## N-best lists for tuning: fstdecode-moses against Moses (`scripts/bench_nbest.py`)",
        "",
        *record.header(load_end),
        f"- set-up: `../shared/tools/moses-hansards {folder} 3` ({lines} dev lines); each call is the tuning loop's "
        f"(`-threads 1 -v 0 -weight-overwrite \"{WEIGHTS}\"`), timed whole, peak RSS its own (`os.wait4`); the "
        f"calls alternate, {args.rounds} rounds, best kept"
        + ("; Moses: `" + str(args.moses) + "`, built from moses-smt/mosesdecoder outside the repository"
           if args.moses else ""),
        "",
        "| decoder | call | best s | rounds s | peak RSS MB | × its 1-best time | × its 1-best memory | entries |",
        "|---|---|---:|---|---:|---:|---:|---:|",
        *rows,
    ]
    if "Moses" in decoders:
        lines_out += ["", "fstdecode-moses against Moses, the same call: "
                      + "; ".join(f"{kind} {best[('fstdecode-moses', kind)] / best[('Moses', kind)]:.2f}x the time"
                                  for kind in CALLS)]
        lines_out += ["", "The lists themselves (the last round's files): " + "; ".join(
            f"{kind}: {same:,} of Moses' {theirs:,} entries byte for byte in fstdecode's {ours:,}"
            for kind, (same, ours, theirs) in same_entries(out).items())]
    if tuned:
        lines_out += [
            "",
            "Whole tuning runs (`mert-moses.pl dev.src dev.ref DECODER moses.ini --mertdir BIN --nbest 100 "
            "--maximum-iterations 8 --no-filter-phrase-table --decoder-flags \"-threads 1 -v 0\"`, one each, in turn):",
            "",
            "| decoder | optimiser | exit | seconds | iterations | final BLEU (its last `BEST at`) |",
            "|---|---|---:|---:|---:|---:|",
            *(f"| {name} | {'--batch-mira' if mira else 'MERT'} | {t['code']} | {t['seconds']:.0f} | {t['iterations']} | "
              f"{t['bleu']:.6f} |" for name, mira, t in tuned),
        ]
    lines_out += targets(best, peak, tuned)
    section = marked("bench_nbest", lines_out)
    print(section)
    write_section(args.out, "bench_nbest", section)
    failed = [t for _, _, t in tuned if t["code"] != 0]
    for t in failed:
        log(f"a tuning run failed in {t['work']}: {t['tail']}")
    return 1 if failed else 0


def same_entries(out: Path) -> dict[str, tuple[int, int, int]]:
    """Per listed call: how many of Moses' n-best lines fstdecode-moses wrote byte for byte (as
    multisets), and the two lists' lengths."""
    from collections import Counter

    found = {}
    for kind, nbest in CALLS.items():
        if not nbest:
            continue
        name = kind.replace(" ", "-")
        ours = (out / f"fstdecode-moses.{name}.nbest").read_text(encoding="utf-8").splitlines()
        theirs = (out / f"Moses.{name}.nbest").read_text(encoding="utf-8").splitlines()
        found[kind] = (sum((Counter(ours) & Counter(theirs)).values()), len(ours), len(theirs))
    return found


def targets(best: dict, peak: dict, tuned: list) -> list[str]:
    """Issue 39's targets, each with its measure in this run and whether it was met."""
    me = "fstdecode-moses"
    one, one_mb = best[(me, "1-best")], peak[(me, "1-best")]
    checks = [
        (f"100-best at most 2x its 1-best time: {best[(me, '100-best')] / one:.2f}x", best[(me, "100-best")] <= 2 * one),
        (f"100-best distinct at most 3x its 1-best time: {best[(me, '100-best distinct')] / one:.2f}x",
         best[(me, "100-best distinct")] <= 3 * one),
        *((f"{kind} peak memory at most 2x the 1-best's: {peak[(me, kind)] / one_mb:.2f}x", peak[(me, kind)] <= 2 * one_mb)
          for kind in ("100-best", "100-best distinct")),
    ]
    if ("Moses", "100-best distinct") in best:
        ratio = best[(me, "100-best distinct")] / best[("Moses", "100-best distinct")]
        checks.append((f"100-best distinct at most half Moses' time: {ratio:.2f}x", ratio <= 0.5))
    runs = {(name, mira): t for name, mira, t in tuned}
    for mira in sorted({m for _, m, _ in tuned}):
        ours, theirs = runs.get((me, mira)), runs.get(("Moses", mira))
        if ours is None or theirs is None:
            continue
        what = "--batch-mira" if mira else "MERT"
        checks.append((f"mert-moses.pl ({what}) no longer than with Moses: {ours['seconds']:.0f} s against "
                       f"{theirs['seconds']:.0f} s", ours["code"] == 0 and ours["seconds"] <= theirs["seconds"]))
        checks.append((f"the same final BLEU within 0.005 ({what}): {ours['bleu']:.6f} against {theirs['bleu']:.6f}",
                       abs(ours["bleu"] - theirs["bleu"]) <= 0.005))
    return ["", "Targets (issue 39), in this run:", "", *(f"- {text}: {'met' if ok else 'NOT met'}" for text, ok in checks)]


main = script("bench_nbest", __doc__, run, add_args=add_args, out=DOCS / "benchmarks.md")

if __name__ == "__main__":
    sys.exit(main())
