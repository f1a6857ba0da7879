#!/usr/bin/env python3
"""``fstdecode moses`` against Moses and Moses2 at real size: time, memory and model score, and a time–quality curve.

The model is one written by ``scripts/make_big_model.py`` (``--model DIR``: DIR/moses.ini, its
tables and DIR/input.txt) and binarized by ``fstdecode binarize -f DIR/moses.ini -o BIN``
(``--binarized BIN``). Without ``--with-lr`` its LexicalReordering line and weights are dropped
(issue 40's first set-up); with it they are kept. The variants, each a whole process reading
DIR/input.txt on stdin and writing its 1-best with ``-output-hypo-score``:

* ``fstdecode moses (LM image)``: ``fstdecode-moses -f BIN/moses.ini`` (binarized tables, the LM image);
* ``fstdecode moses (KenLM binary)``: the same with ``--kenlm-binary FILE`` as its LM (a KenLM
  probing binary of DIR/lm.arpa, made with KenLM's ``build_binary``);
* ``Moses2`` (``--moses2 EXE``) and ``Moses`` (``--moses EXE``): on ``--probing-pt PT`` (a ProbingPT
  of DIR's phrase table made with Moses' ``CreateProbingPT``; with ``--with-lr``, one built with the
  reordering scores inside, ``--num-lex-scores 6``) and the KenLM binary.

Each runs at every stack size of ``--stacks`` (``-s N``; Moses' default 200 first) and thread
count of ``--threads`` (``-threads N``), ``--rounds`` rounds alternating between the variants, the
best time kept. Reported per run: wall seconds, peak RSS of the process (``os.wait4``: with
``-threads N > 1`` fstdecode's workers are processes whose memory this does not add), and the
mean of the printed model scores (each decoder's own: Moses' float sums, fstdecode's exact ones).
With ``--optima-time-limit W`` each line's optimum is first proven by ``fstdecode decode --method
exact`` (untimed), and every run counts the lines it reaches it on (a run that beats a proven
optimum stops the script). fstdecode's bytecode is compiled first, as ``pip install`` does. The
curve plots time against mean model score per variant (docs/benchmarks-moses2*.png), and the
summary says which of Moses2's points a run of ours matches in score at half its time. Moses
and Moses2 are built from their source outside the repository; nothing of them is committed.
Writes the ``bench_moses2`` (or ``bench_moses2_lr``) section of docs/benchmarks.md.

    python -m scripts.bench_moses2 --model DIR --binarized BIN [--kenlm-binary F] [--moses2 EXE]
        [--moses EXE --probing-pt PT] [--with-lr] [--stacks 200,100,50,20,10] [--threads 1,2] [--rounds 2]
        [--optima-time-limit W]
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

from scripts.benchlib import DOCS, load_avg, log, marked, plt, save_figure, script, whole_process, write_section

#: The moses.ini feature kinds the ProbingPT ini replaces (its table) or drops (without --with-lr).
_LR = re.compile(r"^LexicalReordering")


def add_args(ap) -> None:
    ap.add_argument("--model", type=Path, required=True, help="scripts/make_big_model.py's folder")
    ap.add_argument("--binarized", type=Path, required=True, help="fstdecode binarize's folder of the model")
    ap.add_argument("--kenlm-binary", type=Path, default=None, help="a KenLM binary of the model's LM")
    ap.add_argument("--moses2", type=Path, default=None, help="Moses2's moses2 executable")
    ap.add_argument("--moses", type=Path, default=None, help="Moses' moses executable")
    ap.add_argument("--probing-pt", type=Path, default=None, help="a ProbingPT folder of the model's phrase table")
    ap.add_argument("--with-lr", action="store_true", help="keep the model's lexicalized reordering")
    ap.add_argument("--stacks", default="200,100,50,20,10", help="stack sizes (-s), comma-separated")
    ap.add_argument("--cube", default="", metavar="S:P,...",
                    help="cube-pruning runs too, for every decoder: -search-algorithm 1 -s S -cube-pruning-pop-limit P")
    ap.add_argument("--threads", default="1,2", help="thread counts (-threads), comma-separated")
    ap.add_argument("--rounds", type=int, default=2, help="rounds, best time kept (default 2)")
    ap.add_argument("--optima-time-limit", type=float, default=None, metavar="W",
                    help="first prove each line's optimum with fstdecode decode --method exact --time-limit W "
                         "(untimed), and count the lines each run reaches it on")


def _ini_lines(path: Path, with_lr: bool, model_dir: Path) -> list[str]:
    """A moses.ini's lines with ${MODEL_DIR} resolved; without ``with_lr`` its reordering lines dropped."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.replace("${MODEL_DIR}", str(model_dir))
        if not with_lr and _LR.match(line.strip()):
            continue
        out.append(line)
    return out


def _with_lm(lines: list[str], lm: Path) -> list[str]:
    return [re.sub(r"\bpath=\S+", f"path={lm}", l) if l.strip().startswith("KENLM") else l for l in lines]


def _probing(lines: list[str], pt: Path, with_lr: bool) -> list[str]:
    """The ini for Moses and Moses2 on a ProbingPT (the reordering read from it with ``with_lr``)."""
    out = []
    for line in lines:
        s = line.strip()
        if s.startswith("PhraseDictionaryMemory"):
            line = re.sub(r"\bpath=\S+", f"path={pt}", line.replace("PhraseDictionaryMemory", "ProbingPT", 1))
        elif with_lr and s.startswith("LexicalReordering"):
            line = re.sub(r"\bpath=\S+", "property-index=0", line)
        out.append(line)
    return out


def variants(args, work: Path) -> dict[str, tuple[list[str], Path]]:
    """name -> (the decoder's command before its -f, its moses.ini)."""
    fst = shutil.which("fstdecode-moses")
    fst = [fst] if fst else [sys.executable, "-m", "fstdecode", "moses"]
    binarized = _ini_lines(args.binarized / "moses.ini", args.with_lr, args.binarized)
    found: dict[str, tuple[list[str], Path]] = {}

    def ini(name: str, lines: list[str]) -> Path:
        path = work / f"{name}.ini"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    found["fstdecode moses (LM image)"] = (fst, ini("fstdecode-image", binarized))
    if args.kenlm_binary is not None:
        found["fstdecode moses (KenLM binary)"] = (fst, ini("fstdecode-kenlm", _with_lm(binarized, args.kenlm_binary)))
    if args.probing_pt is not None and args.kenlm_binary is not None:
        text = _ini_lines(args.model / "moses.ini", args.with_lr, args.model)
        probing = ini("probing", _probing(_with_lm(text, args.kenlm_binary), args.probing_pt, args.with_lr))
        for name, exe in (("Moses2", args.moses2), ("Moses", args.moses)):
            if exe is not None:
                found[name] = ([str(exe)], probing)
    return found


def line_scores(out: bytes) -> list[float | None]:
    """The score that starts each 1-best line (-output-hypo-score), None for a line with none."""
    scores: list[float | None] = []
    for line in out.decode("utf-8").splitlines():
        try:
            scores.append(float(line.split(" ", 1)[0]))
        except ValueError:
            scores.append(None)
    return scores


def mean_score(out: bytes) -> tuple[float, int]:
    """The mean of the scores that start the 1-best lines (-output-hypo-score), and how many lines have none."""
    scores = [v for v in line_scores(out) if v is not None]
    return (sum(scores) / len(scores) if scores else float("nan")), len(line_scores(out)) - len(scores)


#: A printed score within this of the proven optimum reaches it (Moses prints float sums, 4-6 digits).
OPTIMUM_TOLERANCE = 1e-3


def proven_optima(ini: Path, text: bytes, limit: float, cwd: Path) -> list[float | None]:
    """Each line's optimum by ``fstdecode decode --method exact`` (None: not proven within ``limit`` s)."""
    import json

    argv = [sys.executable, "-m", "fstdecode", "decode", "-f", str(ini), "--method", "exact", "--time-limit", str(limit),
            "--format", "json"]
    _, _, out, _ = whole_process(argv, stdin=text, cwd=cwd, check=False)
    optima: list[float | None] = []
    for line in out.decode("utf-8").splitlines():
        got = json.loads(line)
        optima.append(got["score"] if got.get("optimal") else None)
    return optima


def reached(scores: list[float | None], optima: list[float | None]) -> int:
    """How many lines with a proven optimum a run's scores reach (no line beats a proven optimum)."""
    hits = 0
    for got, best in zip(scores, optima):
        if best is None or got is None:
            continue
        if got > best + OPTIMUM_TOLERANCE:
            raise SystemExit(f"a run's score {got} beats the proven optimum {best}: a search is wrong")
        hits += got >= best - OPTIMUM_TOLERANCE
    return hits


def search_flags(config: tuple[int, int]) -> list[str]:
    """The Moses flags of a search configuration (stack size, pop limit; 0: the normal search)."""
    s, pop = config
    return ["-s", str(s)] + (["-search-algorithm", "1", "-cube-pruning-pop-limit", str(pop)] if pop else [])


def label(config: tuple[int, int]) -> str:
    s, pop = config
    return f"cube {s}/{pop}" if pop else f"-s {s}"


def compile_bytecode() -> None:
    """Compile fstdecode's bytecode, as ``pip install`` does for a regular install (an editable install
    under PYTHONDONTWRITEBYTECODE would compile every module at every start)."""
    import compileall

    import fstdecode

    compileall.compile_dir(str(Path(fstdecode.__file__).parent), quiet=1)


def run(args, record) -> int:
    stacks = [(int(s), 0) for s in args.stacks.split(",")]
    stacks += [(int(c.split(":")[0]), int(c.split(":")[1])) for c in args.cube.split(",") if c]
    threads = [int(t) for t in args.threads.split(",")]
    text = (args.model / "input.txt").read_bytes()
    work = Path(tempfile.mkdtemp(prefix="bench_moses2_"))
    found = variants(args, work)
    compile_bytecode()
    optima: list[float | None] = []
    if args.optima_time_limit is not None:
        log(f"proving each line's optimum (--method exact --time-limit {args.optima_time_limit:g}) ...")
        optima = proven_optima(found["fstdecode moses (LM image)"][1], text, args.optima_time_limit, work)
        log(f"{sum(o is not None for o in optima)} of {len(optima)} lines proven")
    results: dict[tuple[str, int, int], dict] = {}
    for r in range(args.rounds):
        for s in stacks:
            for t in threads:
                for name, (exe, ini) in found.items():
                    argv = [*exe, "-f", str(ini), *search_flags(s), "-threads", str(t), "-output-hypo-score", "-v", "0"]
                    wall, peak, out, _ = whole_process(argv, stdin=text, cwd=work)
                    score, empty = mean_score(out)
                    got = results.setdefault((name, s, t), {"walls": [], "peak": 0, "score": score, "empty": empty,
                                                            "optimal": reached(line_scores(out), optima)})
                    got["walls"].append(wall)
                    got["peak"] = max(got["peak"], peak)
                    log(f"round {r + 1}: {name} {label(s)} -threads {t}: {wall:.2f} s, {peak / 2**20:.0f} MB, mean {score:.4f}")
    load_end = load_avg()
    suffix = "_lr" if args.with_lr else ""
    figure = DOCS / f"benchmarks-moses2{suffix}.png"
    _plot(results, found, threads, figure)
    proven = sum(o is not None for o in optima)
    rows = []
    for (name, s, t), got in results.items():
        rows.append(f"| {name} | {label(s)} | {t} | {min(got['walls']):.2f} | {', '.join(f'{w:.2f}' for w in got['walls'])} | "
                    f"{got['peak'] / 2**20:.0f} | {got['score']:.4f} | {got['empty']} |"
                    + (f" {got['optimal']} |" if optima else ""))
    optima_note = ([f"- proven optima: `fstdecode decode --method exact --time-limit {args.optima_time_limit:g}` on the "
                    f"LM image's ini proved {proven} of {len(optima)} lines (untimed); 'at optimum' counts the lines "
                    f"whose printed score is within {OPTIMUM_TOLERANCE:g} of theirs"] if optima else [])
    lines = [
        f"## fstdecode moses against Moses and Moses2 at real size{' (lexicalized reordering)' if args.with_lr else ''} "
        "(`scripts/bench_moses2.py`)",
        "",
        *record.header(load_end),
        f"- model: `{args.model}` (scripts/make_big_model.py), binarized in `{args.binarized}`; "
        f"{'with' if args.with_lr else 'without'} its LexicalReordering; input: its input.txt; each run a whole "
        f"process with `-s N -threads T -output-hypo-score -v 0` (cube pruning, `cube S/P`: `-search-algorithm 1 -s S "
        f"-cube-pruning-pop-limit P`), {args.rounds} rounds alternating, best time kept; "
        "peak RSS of the main process (os.wait4); fstdecode's bytecode compiled first, as pip install does",
        *optima_note,
        "",
        "| decoder | search | -threads | best s | rounds s | peak RSS MB | mean model score | lines without |"
        + (f" at optimum (of {proven}) |" if optima else ""),
        "|---|---:|---:|---:|---|---:|---:|---:|" + ("---:|" if optima else ""),
        *rows,
        "",
        f"![time against mean model score]({figure.name})",
        *_summary(results, found, stacks, threads),
    ]
    section = marked(f"bench_moses2{suffix}", lines)
    print(section)
    write_section(args.out, f"bench_moses2{suffix}", section)
    return 0


def _summary(results, found, stacks, threads) -> list[str]:
    """Each fstdecode variant against Moses2 at Moses' default stack, and the curve's matches."""
    out = ["", "Against Moses2 (its -s 200 points):", ""]
    if "Moses2" not in found:
        return out + ["- Moses2 not measured (--moses2)"]
    for t in threads:
        ref = results.get(("Moses2", (200, 0), t))
        if ref is None:
            continue
        rt = min(ref["walls"])
        for name in found:
            if not name.startswith("fstdecode"):
                continue
            fit = [(min(g["walls"]), s, g["score"]) for (n, s, tt), g in results.items()
                   if n == name and tt == t and g["score"] >= ref["score"]]
            same = results.get((name, (200, 0), t))
            line = f"- -threads {t}, {name}: at -s 200 {min(same['walls']) / rt:.2f}x Moses2's time, mean {same['score']:.4f} against {ref['score']:.4f}"
            if fit:
                w, s, sc = min(fit)
                line += f"; the fastest run at a mean score no lower than Moses2's: {label(s)}, {w / rt:.2f}x its time ({sc:.4f})"
            out.append(line)
    out += ["", "The curve: each Moses2 point against fstdecode's runs at the same -threads with a mean score no "
            "lower, at half its time or less:", ""]
    for t in threads:
        points = sorted((s, g) for (n, s, tt), g in results.items() if n == "Moses2" and tt == t)
        for name in found:
            if not name.startswith("fstdecode"):
                continue
            met, missed = 0, []
            for s, ref in points:
                rt = min(ref["walls"])
                if any(min(g["walls"]) <= rt / 2 and g["score"] >= ref["score"]
                       for (n, _, tt), g in results.items() if n == name and tt == t):
                    met += 1
                else:
                    missed.append(f"{label(s)} ({rt:.2f} s, {ref['score']:.4f})")
            out.append(f"- -threads {t}, {name}: {met} of {len(points)} Moses2 points matched at half the time"
                       + (f"; not: {', '.join(missed)}" if missed else ""))
    return out


def _plot(results, found, threads, path: Path) -> None:
    pyplot = plt()
    fig, axes = pyplot.subplots(1, len(threads), figsize=(5.5 * len(threads), 4.2), squeeze=False)
    for ax, t in zip(axes[0], threads):
        for name in found:
            for cube in (False, True):
                points = sorted((min(g["walls"]), g["score"], s) for (n, s, tt), g in results.items()
                                if n == name and tt == t and bool(s[1]) == cube)
                if not points:
                    continue
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="s" if cube else "o",
                        linestyle="--" if cube else "-", label=f"{name}{', cube pruning' if cube else ''}")
                for w, sc, s in points:
                    ax.annotate(label(s).replace("-s ", "").replace("cube ", ""), (w, sc), fontsize=6, xytext=(2, 2),
                                textcoords="offset points")
        ax.set_xlabel("seconds, whole process")
        ax.set_ylabel("mean model score")
        ax.set_title(f"-threads {t} (labels: -s, or cube S/P)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    save_figure(fig, path, dpi=110)


main = script("bench_moses2", __doc__, run, add_args=add_args, out=DOCS / "benchmarks.md")

if __name__ == "__main__":
    sys.exit(main())
