#!/usr/bin/env python3
"""A real-size model: load time, first output line, search time, peak memory of ``fstdecode decode``.

The benchmark of issue 23's before/after comparisons. The model is one written by
``scripts/make_big_model.py`` (``--model DIR``), or generated first (``--generate DIR
--preset P [--pairs N --lm-words N --sentences N]``, in a subprocess, its time reported).
Each measured run is

    fstdecode -v decode -f MODEL.ini --method M --format json < DIR/input.txt

in a fresh process (so that its peak RSS, VmHWM read from /proc as it exits, is its own),
started in DIR (so that ``import fstdecode`` finds the installed package, not a checkout
in the working directory; ``--pythonpath`` puts another build first). The parent reads the
child's stdout and stderr line by line and time-stamps each line on arrival. Reported:

* ``wall``: the whole process, start to exit (interpreter start-up included);
* ``import``: start to the wrapper's marker after ``import fstdecode.cli.main``;
* ``load``: that marker to the ``-v`` line ``fstdecode: info: model ...: N phrase pairs``,
  which ``fstdecode`` logs once the model is read (phrase table, filtered to the input when
  ``--filter`` is on, as it is by default for a table of 32 MiB or more; reordering table;
  LM). Without the line the column says "not logged";
* ``LM``, ``phrase table``, ``reordering``: each file's load. Since b239d67 ``-v`` logs
  ``reading the KIND PATH, SIZE`` as a file starts and ``KIND PATH: ..., S s`` once it is
  read (S to 0.1 s); the column is the time between the two lines' arrivals, summed over
  the reloads of a filtered run (one per ``--filter-chunk`` batch). The log lines carry no
  time stamps: arrival times are the marks. An older build logs none: "not logged";
* ``first line``: start to the first output line on stdout;
* ``decode``: the sum over the lines of the JSON ``stats.seconds`` (per line: building the
  search problem, the search and reading the derivations back; not the model load);
  ``ms/word`` is that sum over the input's source words;
* ``peak RSS``: the child's VmHWM; ``mean score``: the JSON ``score`` averaged over lines
  (failed lines left out and counted).

Variants, each measured when its files exist or can be made:

* ``text``: DIR/moses.ini as generated (plain-text tables, ARPA LM);
* ``kenlm-probing``: the same moses.ini with the LM's path swapped for DIR/lm.probing.binlm
  (a KenLM probing binary of lm.arpa). When absent it is built with KenLM's ``build_binary
  probing`` if that is on the PATH (time reported); otherwise the row says so;
* ``binarized`` (``--binarized BIN``): BIN/moses.ini, a folder written by ``fstdecode binarize -f
  DIR/moses.ini -o BIN`` (binarized phrase and reordering tables, the LM as an image), decoding the
  same DIR/input.txt. When BIN has no moses.ini it is built first with that command, in a fresh
  process (its time and peak RSS reported); an existing BIN is used as it is. The section lists
  BIN's files against the text model's. Without ``--binarized`` the row says how to measure it;
* ``text@base`` (``--base-python EXE``): DIR/moses.ini decoded by another build, the child run
  with interpreter EXE (a venv with the base commit installed: see below). It comes first in
  every round, so that base and the working tree's build alternate within one invocation.

The JSON outputs of each variant are compared with ``text``'s first run: lines identical but for
``stats``, and lines whose translation is identical (``--outputs DIR`` keeps every run's stdout).

``--runs N`` (default 1) repeats every (variant, method); runs alternate between them
(run 1 of each, then run 2 of each, ...), so that a slow spell of the shared machine hits
all alike. The table gives the median of each column and every run's numbers.

Before/after comparisons (issue 23). Build the base commit apart from the working tree:
``git worktree add /tmp/base BASE`` (or ``git archive BASE | tar -x -C /tmp/base``), then
``pip install --target /tmp/base-site /tmp/base`` (or a venv: ``python -m venv /tmp/base-venv
&& /tmp/base-venv/bin/pip install /tmp/base``), which builds its native core. Then alternate
the two builds on the same model, three times each, one run per invocation, and take the
median of 3 of each::

    for i in 1 2 3; do
      python -m scripts.bench_big_model --model DIR --pythonpath /tmp/base-site --out /tmp/base-$i.md
      python -m scripts.bench_big_model --model DIR --out /tmp/head-$i.md
    done

(``--pythonpath`` is put first on the child's PYTHONPATH, so the child imports that build;
with a venv, run the first line with the venv's python instead.) Or, in one invocation, with
the runs alternated and both builds in one table::

    python -m scripts.bench_big_model --model DIR --binarized BIN --base-python /tmp/base-venv/bin/python --runs 3

(check first that ``cd /tmp && /tmp/base-venv/bin/python -c "import fstdecode; print(fstdecode.__file__)"``
prints a path inside the venv: a venv made with ``--system-site-packages`` may still see an
editable install of the working tree). The section's ``code`` line names the checkout the
script ran from, and each variant's line the package and native core its child imported.

Writes the ``bench_big_model`` section of docs/benchmarks.md (``--section NAME`` another marked
section, ``--title`` its heading: e.g. a one-off comparison kept next to the standing one).

    python -m scripts.bench_big_model (--model DIR | --generate DIR [--preset small|full] [--pairs N]
        [--lm-words N] [--sentences N]) [--methods stack[,exact]] [--runs N] [--timeout S]
        [--pythonpath DIR] [--decode-args "..."] [--binarized BIN] [--base-python EXE]
        [--outputs DIR] [--section NAME] [--title TEXT] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from scripts.benchlib import DOCS, ROOT, log, marked, script, write_section
from scripts.make_big_model import PRESETS, REORDERING_TYPE

SECTION = "bench_big_model"
PROBING = "lm.probing.binlm"
PT_NAMES = ("phrase-table", "phrase-table.gz")
RT_BASE = f"reordering-table.{REORDERING_TYPE.rsplit('-', 1)[0]}"
RT_NAMES = (RT_BASE, RT_BASE + ".gz")

#: The CLI in this process, with markers on stderr: after the import, and at exit the largest RssAnon and
#: RssFile (resident memory of its own, and resident pages of mapped files) that a thread sampling
#: /proc/self/status every 20 ms saw, the process's own seconds, VmHWM (its peak RSS, the two together,
#: read from /proc) and exit code, which is also the process's.
_CHILD = """
import sys, threading, time
start = time.perf_counter()
peak = {"RssAnon": 0, "RssFile": 0}
def _sample():
    while True:
        for l in open("/proc/self/status"):
            k = l.split(":")[0]
            if k in peak:
                peak[k] = max(peak[k], int(l.split()[1]))
        time.sleep(0.02)
threading.Thread(target=_sample, daemon=True).start()
sys.argv = ["fstdecode", *sys.argv[1:]]
code = 1
try:
    import fstdecode
    from fstdecode.cli.main import main
    print(f"bench-imported {getattr(fstdecode, '__version__', '?')} {fstdecode.__file__}", file=sys.stderr, flush=True)
    code = main()
finally:
    core = sys.modules.get("fstdecode._native._core")
    if core is not None and getattr(core, "__file__", None):
        print(f"bench-core {core.__file__}", file=sys.stderr, flush=True)
    hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    print(f"bench-rss {peak['RssAnon'] / 1024:.1f} {peak['RssFile'] / 1024:.1f}", file=sys.stderr, flush=True)
    print(f"bench-end {time.perf_counter() - start:.3f} {hwm / 1024:.1f} {code}", file=sys.stderr, flush=True)
sys.exit(code)
"""

#: The -v lines of each model file (fstdecode from b239d67 on): "reading the KIND PATH, SIZE ..." as it starts,
#: "KIND PATH: WHAT KEPT, S s" once done; a filtered run reloads the tables once per batch.
PHASES = ("language model", "phrase table", "reordering table")
_PHASE_START = re.compile(r"^fstdecode: info: reading the (language model|phrase table|reordering table) (.*?)(?:, [\d,.]+ MiB)?(?: \(.*\))?$")
_PHASE_DONE = re.compile(r"^fstdecode: info: (language model|phrase table|reordering table) (.*?): (?:.*, )?([\d.]+) s$")
_MODEL_LINE = re.compile(r"^fstdecode: info: model .*: (\d+) phrase pairs, LM order (\d+)")


# --------------------------------------------------------------------------- the model's size


def _open_lines(path: Path):
    if path.suffix == ".gz":
        import gzip

        return gzip.open(path, "rb")
    return open(path, "rb")


def count_lines(path: Path) -> int:
    with _open_lines(path) as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 22), b""))


def arpa_counts(path: Path) -> list[int]:
    """The n-gram counts of the ARPA header (``ngram N=C`` lines)."""
    counts = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if line.startswith("ngram "):
                counts.append(int(line.split("=", 1)[1]))
            elif line.startswith("\\1-grams:"):
                break
    return counts


def first_existing(folder: Path, names) -> Path | None:
    return next((folder / n for n in names if (folder / n).exists()), None)


def model_size(folder: Path) -> dict:
    pt, rt, lm = first_existing(folder, PT_NAMES), first_existing(folder, RT_NAMES), folder / "lm.arpa"
    text = (folder / "input.txt").read_text(encoding="utf-8").splitlines()
    mib = lambda p: p.stat().st_size / 2**20 if p is not None and p.exists() else 0.0  # noqa: E731
    return {
        "pairs": count_lines(pt) if pt else None, "pt_mib": mib(pt), "pt": pt.name if pt else None,
        "reordering": count_lines(rt) if rt else None, "rt_mib": mib(rt),
        "ngrams": arpa_counts(lm) if lm.exists() else [], "lm_mib": mib(lm),
        "sentences": len(text), "words": sum(len(line.split()) for line in text),
    }


def size_name(size: dict) -> str:
    """full or small when the pairs and sentences are a preset's; else medium (between them) or custom."""
    for name, p in PRESETS.items():
        if size["pairs"] == p["pairs"] and size["sentences"] == p["sentences"]:
            return name
    if size["pairs"] and PRESETS["small"]["pairs"] < size["pairs"] < PRESETS["full"]["pairs"]:
        return "medium"
    return "custom"


# --------------------------------------------------------------------------- variants


def variant_ini(folder: Path, lm: Path, tmp: Path) -> Path:
    """A copy of DIR/moses.ini in ``tmp`` with every ``path=`` made absolute and the KENLM one ``lm``."""
    lines = []
    for line in (folder / "moses.ini").read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if fields and fields[0] in ("KENLM", "LanguageModel") or (fields and "path=" in line):
            out = []
            for f in fields:
                if f.startswith("path="):
                    p = lm if fields[0] == "KENLM" else (folder / f[5:]).resolve()
                    f = f"path={p}"
                out.append(f)
            line = " ".join(out)
        lines.append(line)
    ini = tmp / "moses.probing.ini"
    ini.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ini


def probing_binary(folder: Path) -> tuple[Path | None, str]:
    """DIR/lm.probing.binlm, built with build_binary when absent and possible; (path or None, note)."""
    binlm = folder / PROBING
    if binlm.exists():
        return binlm, f"{PROBING} present ({binlm.stat().st_size / 2**20:,.0f} MiB)"
    tool = shutil.which("build_binary")
    if tool is None:
        return None, (f"no {PROBING} in the model folder, and KenLM's build_binary is not on the PATH "
                      "(it cannot be built here)")
    start = time.perf_counter()
    proc = subprocess.run([tool, "probing", str(folder / "lm.arpa"), str(binlm)], capture_output=True, text=True)
    if proc.returncode != 0:
        binlm.unlink(missing_ok=True)
        tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return None, f"build_binary probing failed: {tail}"
    return binlm, f"{PROBING} built with build_binary probing in {time.perf_counter() - start:.1f} s"


# --------------------------------------------------------------------------- one measured run


def _reader(stream, sink: list) -> None:
    for line in iter(stream.readline, b""):
        sink.append((time.perf_counter(), line.decode("utf-8", "replace").rstrip("\n")))
    stream.close()


def phases(err: list, start: float) -> dict:
    """Seconds of each model file's load, summed over reloads: from the arrival of its "reading the" line
    to that of its done line (the logged seconds, 0.1 s steps, when the start line is missing); None when
    the build logs no such lines."""
    out: dict = {kind: None for kind in PHASES}
    started: dict = {}
    for t, line in err:
        m = _PHASE_START.match(line)
        if m:
            started[(m.group(1), m.group(2))] = t
            continue
        m = _PHASE_DONE.match(line)
        if m:
            kind, path, logged = m.group(1), m.group(2), float(m.group(3))
            t0 = started.pop((kind, path), None)
            out[kind] = (out[kind] or 0.0) + (t - t0 if t0 is not None else logged)
    return out


def measure(ini: Path, method: str, folder: Path, timeout: float, pythonpath: str | None, extra: list[str],
            python: str | None = None) -> dict:
    """One decode of DIR/input.txt in a fresh process (interpreter ``python``, default this one); its timings,
    peak RSS, scores and output lines."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [python or sys.executable, "-c", _CHILD, "-v", "decode", "-f", str(ini), "--method", method,
           "--format", "json", *extra]
    out: list = []
    err: list = []
    load_avg = "/".join(f"{x:.2f}" for x in os.getloadavg())
    with open(folder / "input.txt", "rb") as stdin:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=folder, env=env)
        threads = [threading.Thread(target=_reader, args=(proc.stdout, out), daemon=True),
                   threading.Thread(target=_reader, args=(proc.stderr, err), daemon=True)]
        for t in threads:
            t.start()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()  # our own child, by its pid
            proc.wait()
            for t in threads:
                t.join()
            return {"error": f"timeout after {timeout:.0f} s", "load_avg": load_avg}
        wall = time.perf_counter() - start
        for t in threads:
            t.join()
    r: dict = {"wall": wall, "load_avg": load_avg, "code": proc.returncode,
               "load_avg_end": "/".join(f"{x:.2f}" for x in os.getloadavg()), "output": [line for _, line in out]}
    imported = next((t - start for t, line in err if line.startswith("bench-imported ")), None)
    r["import"] = imported
    r["core"] = next((line.split(" ", 1)[1] for _, line in err if line.startswith("bench-core ")), None)
    r["core_mtime"] = os.path.getmtime(r["core"]) if r["core"] and os.path.exists(r["core"]) else None
    r["fstdecode"] = next((line.split(" ", 2)[1:] for _, line in err if line.startswith("bench-imported ")), None)
    model = next(((t - start, m) for t, line in err if (m := _MODEL_LINE.match(line))), None)
    r["load"] = model[0] - imported if model and imported is not None else None
    r["pairs_loaded"] = int(model[1].group(1)) if model else None
    r.update(phases(err, start))
    end = next((line.split()[1:] for _, line in err if line.startswith("bench-end ")), None)
    r["rss"] = float(end[1]) if end else None
    rss_end = next((line.split()[1:] for _, line in err if line.startswith("bench-rss ")), None)
    r["rss_anon"], r["rss_file"] = (float(rss_end[0]), float(rss_end[1])) if rss_end else (None, None)
    r["first_line"] = out[0][0] - start if out else None
    warnings = [line for _, line in err if ": warning: " in line or ": error: " in line]
    r["warnings"] = warnings
    if proc.returncode != 0:
        r["error"] = (warnings or [line for _, line in err if not line.startswith("bench-")] or [f"exit {proc.returncode}"])[-1]
        return r
    seconds, scores, failed, not_optimal, states = [], [], 0, 0, 0
    for _, line in out:
        obj = json.loads(line)
        if "error" in obj or obj.get("score") is None:
            failed += 1
            continue
        scores.append(obj["score"])
        not_optimal += not obj.get("optimal", False)
        stats = obj.get("stats", {})
        seconds.append(stats.get("seconds", 0.0))
        states += stats.get("states", 0)
    r.update(lines=len(out), failed=failed, not_optimal=not_optimal, states=states,
             decode=sum(seconds) if seconds else None, scores=scores,
             mean_score=statistics.fmean(scores) if scores else None)
    return r


# --------------------------------------------------------------------------- the binarized model


def folder_files(folder: Path) -> list[tuple[str, int]]:
    """(name, bytes) of each file in ``folder``, sorted by name."""
    return sorted((p.name, p.stat().st_size) for p in folder.iterdir() if p.is_file())


def binarize(model: Path, out: Path, timeout: float) -> tuple[float | None, float | None, str]:
    """``fstdecode binarize -f MODEL/moses.ini -o OUT`` in a fresh process: (seconds, peak RSS MiB, note);
    seconds None when it failed."""
    cmd = [sys.executable, "-c", _CHILD, "-v", "binarize", "-f", str(model / "moses.ini"), "-o", str(out)]
    log("binarizing: fstdecode -v binarize -f " + str(model / "moses.ini") + " -o " + str(out))
    load_avg = "/".join(f"{x:.2f}" for x in os.getloadavg())
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=model, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"fstdecode binarize: timeout after {timeout:.0f} s"
    seconds = time.perf_counter() - start
    end = next((line.split()[1:] for line in proc.stderr.splitlines() if line.startswith("bench-end ")), None)
    rss = float(end[1]) if end else None
    if proc.returncode != 0:
        tail = [line for line in proc.stderr.splitlines() if not line.startswith("bench-")]
        return None, rss, f"fstdecode binarize failed: {(tail or [f'exit {proc.returncode}'])[-1]}"
    load_end = "/".join(f"{x:.2f}" for x in os.getloadavg())
    return seconds, rss, (f"built here by `fstdecode binarize -f {model / 'moses.ini'} -o {out}` in {seconds:,.1f} s, "
                          f"peak RSS {rss:,.0f} MiB (load average {load_avg} before, {load_end} after)")


def binarized_model(args, folder: Path) -> tuple[Path | None, str, list[str]]:
    """The binarized variant's moses.ini (None when not measured), its note, and the lines on its size."""
    if args.binarized is None:
        return None, "binarized: not measured (pass --binarized BIN, a folder of `fstdecode binarize`)", []
    bin_dir = args.binarized.resolve()
    if (bin_dir / "moses.ini").exists():
        note = f"`{bin_dir}/moses.ini`, present (written by `fstdecode binarize`; not rebuilt here)"
    else:
        seconds, _, note = binarize(folder, bin_dir, args.timeout)
        if seconds is None:
            return None, "binarized: " + note, []
    files = folder_files(bin_dir)
    text = [(n, s) for n, s in folder_files(folder) if n != "input.txt"]
    mib = lambda b: f"{b / 2**20:,.0f} MiB"  # noqa: E731
    size = [
        f"  - binarized `{bin_dir}`: " + ", ".join(f"`{n}` {mib(s)}" for n, s in files)
        + f"; {mib(sum(s for _, s in files))} in all",
        f"  - text `{folder}`: " + ", ".join(f"`{n}` {mib(s)}" for n, s in text) + f"; {mib(sum(s for _, s in text))} in all",
    ]
    return bin_dir / "moses.ini", note, size


def _without_stats(line: str):
    obj = json.loads(line)
    obj.pop("stats", None)
    return obj


def compare_outputs(ref: list[str], other: list[str]) -> str:
    """How ``other``'s JSON lines compare with ``ref``'s: identical but for ``stats``, same translations."""
    if len(ref) != len(other):
        return f"{len(other)} lines against {len(ref)}"
    a, b = [_without_stats(x) for x in ref], [_without_stats(x) for x in other]
    same = sum(x == y for x, y in zip(a, b))
    same_tr = sum(x.get("translation") == y.get("translation") for x, y in zip(a, b))
    diff = [abs(x["score"] - y["score"]) for x, y in zip(a, b)
            if isinstance(x.get("score"), float) and isinstance(y.get("score"), float)]
    keys = sorted(set().union(*map(set, a)) ^ set().union(*map(set, b)))
    return (f"{same} of {len(a)} lines identical but for `stats`; {same_tr} of {len(a)} translations identical"
            + (f"; largest score difference {max(diff):.3g}" if diff else "")
            + (f"; keys in one only: {', '.join(keys)}" if keys else ""))


# --------------------------------------------------------------------------- the run


def generate(args) -> tuple[float | None, str]:
    """Run make_big_model into ``--generate``; (seconds, its last line) or (None, the error)."""
    cmd = [sys.executable, "-m", "scripts.make_big_model", "--out", str(args.generate), "--preset", args.preset]
    for flag, value in (("--pairs", args.pairs), ("--lm-words", args.lm_words), ("--sentences", args.sentences)):
        if value is not None:
            cmd += [flag, str(value)]
    log("generating: " + " ".join(cmd[1:]))
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    last = (proc.stderr.strip().splitlines() or [""])[-1]
    if proc.returncode != 0:
        return None, last or f"exit {proc.returncode}"
    return seconds, last.removeprefix("[make_big_model] ")


def add_args(ap) -> None:
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", type=Path, help="an existing model folder written by scripts.make_big_model")
    src.add_argument("--generate", type=Path, metavar="DIR", help="generate the model into DIR first (absent or empty)")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="full", help="with --generate: make_big_model's preset")
    ap.add_argument("--pairs", type=int, help="with --generate: phrase pairs (overrides the preset)")
    ap.add_argument("--lm-words", type=int, help="with --generate: words of LM text (overrides the preset)")
    ap.add_argument("--sentences", type=int, help="with --generate: input sentences (overrides the preset)")
    ap.add_argument("--methods", default="stack", help="comma-separated search methods (default stack; e.g. stack,exact)")
    ap.add_argument("--runs", type=int, default=1, help="runs of each variant and method, alternated (default 1; "
                    "3 for a comparison)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds before a run is killed (default 3600)")
    ap.add_argument("--pythonpath", help="put this first on the child's PYTHONPATH (another build of fstdecode)")
    ap.add_argument("--decode-args", default="", help="more arguments for fstdecode decode (one string, shell-split)")
    ap.add_argument("--binarized", type=Path, metavar="BIN", help="measure BIN/moses.ini too, a folder written by "
                    "`fstdecode binarize -f DIR/moses.ini -o BIN` (built first, timed, when BIN has no moses.ini)")
    ap.add_argument("--base-python", metavar="EXE", help="measure DIR/moses.ini with this interpreter too (a venv "
                    "with the base commit installed): the row text@base, first in every round")
    ap.add_argument("--outputs", type=Path, metavar="DIR", help="write every run's stdout to DIR/VARIANT-METHOD-RUN.jsonl")
    ap.add_argument("--section", default=SECTION, help=f"the marked section of --out to write (default {SECTION})")
    ap.add_argument("--title", help="the section's heading (default: the script's)")


def _s(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:,.{digits}f}"


def _med(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def tree_state() -> str:
    """HEAD and a hash of the uncommitted changes to the measured code (fstdecode/, native/)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
        diff = subprocess.run(["git", "diff", "HEAD", "--", "fstdecode", "native"], cwd=ROOT, capture_output=True).stdout
    except OSError:
        return "unknown"
    return f"{head.strip()} {hashlib.sha1(diff).hexdigest()[:12]}"


def _phase_cells(runs: list[dict], med) -> str:
    """The LM, phrase table and reordering table cells: medians, or "not logged"."""
    return " | ".join("not logged" if (x := med(runs, kind)) is None else _s(x) for kind in PHASES)


def run(args, record) -> int:
    state_start = tree_state()
    if args.runs < 1:
        log("--runs must be at least 1")
        return 2
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    gen_seconds, gen_note = None, None
    if args.generate is not None:
        gen_seconds, gen_note = generate(args)
        if gen_seconds is None:
            log(f"make_big_model failed: {gen_note}")
            return 1
        log(f"generated in {gen_seconds:.1f} s: {gen_note}")
        folder = args.generate
    else:
        folder = args.model
    folder = folder.resolve()
    if not (folder / "moses.ini").exists() or not (folder / "input.txt").exists():
        log(f"{folder}: no moses.ini and input.txt (is it a scripts.make_big_model folder?)")
        return 2
    size = model_size(folder)
    log(f"model {folder}: {size}")
    extra = shlex.split(args.decode_args)

    bin_ini, bin_note, bin_size = binarized_model(args, folder)
    with tempfile.TemporaryDirectory() as tmp:
        variants: list[tuple[str, Path | None, str]] = []
        if args.base_python:
            variants.append(("text@base", folder / "moses.ini", f"moses.ini as generated, decoded by `{args.base_python}`"))
        variants.append(("text", folder / "moses.ini", "moses.ini as generated (text tables, ARPA LM)"))
        binlm, note = probing_binary(folder)
        variants.append(("kenlm-probing", variant_ini(folder, binlm, Path(tmp)) if binlm else None,
                         f"moses.ini with the LM swapped for {PROBING}: {note}"))
        variants.append(("binarized", bin_ini, bin_note))
        configs = [(v, ini, m) for v, ini, _ in variants if ini is not None for m in methods]
        results: dict[tuple[str, str], list[dict]] = {(v, m): [] for v, _, m in configs}
        if args.outputs:
            args.outputs.mkdir(parents=True, exist_ok=True)
        for i in range(args.runs):
            for v, ini, m in configs:
                log(f"run {i + 1}/{args.runs}: {v}, {m} ... (load average {os.getloadavg()})")
                python = args.base_python if v == "text@base" else None
                r = measure(ini, m, folder, args.timeout, None if python else args.pythonpath, extra, python)
                results[(v, m)].append(r)
                if args.outputs:
                    (args.outputs / f"{v}-{m}-{i + 1}.jsonl").write_text(
                        "".join(line + "\n" for line in r.get("output", [])), encoding="utf-8")
                log(f"  {', '.join(f'{k}={val}' for k, val in r.items() if k not in ('scores', 'warnings', 'output'))}")

    state_end = tree_state()
    measured_lines = []
    for v, _, _ in variants:
        r = next((r for m in methods for r in results.get((v, m), []) if r.get("fstdecode")), None)
        if r is None:
            continue
        core = r.get("core")
        built = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(os.path.getmtime(core))) if core and os.path.exists(core) else "?"
        mtimes = {x.get("core_mtime") for m in methods for x in results.get((v, m), []) if x.get("core_mtime")}
        measured_lines.append(f"  - {v}: fstdecode `{Path(r['fstdecode'][1]).parent}` (version {r['fstdecode'][0]})"
                              + (f"; native core `{core}` (file dated {built})" if core else "")
                              + ("; **the native core file changed between this variant's runs** (rebuilt)"
                                 if len(mtimes) > 1 else ""))
    name = size_name(size)
    full = PRESETS["full"]
    lines = [
        "## " + (args.title or "A real-size model: load, first line, search, memory (`scripts/bench_big_model.py`)"),
        "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code} (the checkout the script ran from)"
        + (f"; child PYTHONPATH first: `{args.pythonpath}`" if args.pythonpath else "")
        + ("" if state_start == state_end else
           "; **the code (fstdecode/ or native/, HEAD or uncommitted changes) changed during the run**: "
           "the runs may not have measured the same code"),
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s; load average at start {record.load_start} "
        "(2 cores, shared: see each run's load below)",
        f"- model: `{folder}`, size **{name}**"
        + ("" if name == "full" else
           f" (not the issue's full size, `--preset full`: {full['pairs']:,} pairs, LM of {full['lm_words']:,} words, "
           f"{full['sentences']} sentences)")
        + (f"; generated by `scripts.make_big_model` in {gen_seconds:.1f} s ({gen_note})" if gen_seconds is not None else ""),
        f"  - phrase table `{size['pt']}`: {size['pairs']:,} pairs ({size['pt_mib']:,.0f} MiB); reordering table: "
        f"{size['reordering']:,} lines ({size['rt_mib']:,.0f} MiB)" if size["pairs"] is not None else "  - phrase table: absent",
        f"  - LM `lm.arpa` ({size['lm_mib']:,.0f} MiB): "
        + (", ".join(f"{n}-grams {c:,}" for n, c in enumerate(size["ngrams"], 1)) + f" ({sum(size['ngrams']):,} in all)"
           if size["ngrams"] else "no ARPA header"),
        f"  - input: {size['sentences']:,} sentences, {size['words']:,} words",
        *( [f"- binarized: {bin_note}", *bin_size] if bin_ini is not None else []),
        "- fstdecode measured, by variant:",
        *measured_lines,
        f"- each run: `fstdecode -v decode -f INI --method M --format json{(' ' + args.decode_args) if args.decode_args else ''} "
        "< input.txt` in a fresh process; runs alternate between the rows; medians of "
        f"{args.runs} run(s) below, every run after",
        "- columns: *wall* the whole process; *import* to `import fstdecode.cli.main` done; *load* from there to the `-v` "
        "line `model ...: N phrase pairs`; *LM*, *phrase table*, *reordering* each file's load, from the arrival of "
        "its `-v` line `reading the ...` to that of its done line, summed over a filtered run's batches (the "
        "rest of *load* is the ini, the features and the model's assembly; \"not logged\" for a build older "
        "than b239d67, which logs no per-file lines); *first line* start to the first output line; *decode* the sum of the lines' JSON "
        "`stats.seconds` (problem + search + derivations; no load); *ms/word* decode over the source words; "
        "*peak RSS* the child's VmHWM (resident pages of mapped model files included); *anon / file* the largest "
        "RssAnon (its own memory) and RssFile (resident pages of mapped files: page cache, shared and "
        "reclaimable) seen by a thread sampling every 20 ms; *pairs loaded* from the `model` line (after the table limit, and `--filter`, "
        "on by default for a table of 32 MiB or more); *not optimal* counts lines without a proof of optimality "
        "(every stack line: a beam search proves none)",
        "",
        "| variant | method | wall s | import s | load s | LM s | phrase table s | reordering s | first line s | "
        "decode s | ms/word | peak RSS MiB | anon / file MiB | pairs loaded | mean score | "
        "not optimal / failed |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for v, ini, what in variants:
        if ini is None:
            lines.append(f"| {v} | {', '.join(methods)} | {what} |" + " |" * 13)
            continue
        for m in methods:
            rs = results[(v, m)]
            ok = [r for r in rs if "error" not in r]
            if not ok:
                lines.append(f"| {v} | {m} | failed: {rs[-1]['error']} |" + " |" * 13)
                continue
            decode = _med(ok, "decode")
            load = _med(ok, "load")
            lines.append(
                f"| {v} | {m} | {_s(_med(ok, 'wall'))} | {_s(_med(ok, 'import'))} | "
                f"{'not logged' if load is None else _s(load)} | {_phase_cells(ok, _med)} | "
                f"{_s(_med(ok, 'first_line'))} | {_s(decode, 2)} | "
                f"{_s(None if decode is None else 1000 * decode / size['words'], 2)} | {_s(_med(ok, 'rss'), 0)} | "
                f"{_s(_med(ok, 'rss_anon'), 0)} / {_s(_med(ok, 'rss_file'), 0)} | "
                f"{'not logged' if ok[0]['pairs_loaded'] is None else format(ok[0]['pairs_loaded'], ',')} | "
                f"{_s(ok[0]['mean_score'], 4)} | {ok[0]['not_optimal']} / {ok[0]['failed']} of {ok[0]['lines']} |"
            )
    lines += [
        "",
        "Every run:",
        "",
        "| run | variant | method | load avg at start | load avg at end | wall s | import s | load s | LM s | "
        "phrase table s | reordering s | first line s | decode s | peak RSS MiB | anon / file MiB | outcome |",
        "|---:|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    notes = []
    for (v, m), rs in results.items():
        for i, r in enumerate(rs, 1):
            outcome = r.get("error", "ok")
            if "error" not in r and r["scores"] != rs[0].get("scores"):
                outcome = "scores differ from run 1"
            elif "error" not in r and i > 1 and "error" not in rs[0]:
                same = [_without_stats(x) for x in r["output"]] == [_without_stats(x) for x in rs[0]["output"]]
                outcome += "" if same else "; JSON (without stats) differs from run 1"
            if r.get("warnings") and "error" not in r:
                outcome += f"; {len(r['warnings'])} warning(s)"
            lines.append(
                f"| {i} | {v} | {m} | {r['load_avg']} | {r.get('load_avg_end', 'n/a')} | {_s(r.get('wall'))} | "
                f"{_s(r.get('import'))} | "
                f"{'not logged' if r.get('load') is None else _s(r['load'])} | {_phase_cells([r], _med)} | "
                f"{_s(r.get('first_line'))} | "
                f"{_s(r.get('decode'), 2)} | {_s(r.get('rss'), 0)} | "
                f"{_s(r.get('rss_anon'), 0)} / {_s(r.get('rss_file'), 0)} | {outcome} |"
            )
            if r.get("warnings") and not notes:
                notes.append(f"First warning ({v}, {m}, run {i}): `{r['warnings'][0]}`")
    ref = next((rs[0] for (v, m), rs in results.items() if v == "text" and rs and "error" not in rs[0]), None)
    if ref is not None:
        lines += ["", "Outputs against text's run 1 (same method), every run:", ""]
        for (v, m), rs in results.items():
            ref_m = results.get(("text", m), [None])[0]
            if ref_m is None or "error" in ref_m:
                continue
            for i, r in enumerate(rs, 1):
                if (v, i) != ("text", 1) and "error" not in r:
                    lines.append(f"- {v}, {m}, run {i}: {compare_outputs(ref_m['output'], r['output'])}")
    if notes:
        lines += ["", *notes]
    write_section(args.out, args.section, marked(args.section, lines))
    log(f"wrote the {args.section} section of {args.out}")
    return 0 if all("error" not in r for rs in results.values() for r in rs) else 1


main = script(SECTION, __doc__, run, add_args=add_args, out=DOCS / "benchmarks.md")

if __name__ == "__main__":
    sys.exit(main())
