#!/usr/bin/env python3
"""``fstdecode tune`` against ``mert-moses.pl`` with Moses: dev BLEU and whole time, one run.

Two set-ups:

* **Hansards** (``--hansards DIR``, written by ``../shared/tools/moses-hansards DIR 3`` when DIR
  lacks it): ``fstdecode tune`` (MERT, ``--nbest 100 --max-iterations 8 --lowercase``) with seeds
  ``--seeds``, and ``mert-moses.pl`` with Moses (``--nbest 100 --maximum-iterations 8
  --no-filter-phrase-table``, as bench_nbest runs it).
* **The generated real-size model** (``--big DIR``, scripts/make_big_model.py's, with ``--binarized
  BIN`` its binarized folder): its LexicalReordering line and weights dropped; references are
  ``fstdecode moses``'s 1-best translations of its input under hidden weights
  (:data:`HIDDEN`); both tuners start from the generated ini's weights. ``fstdecode tune`` tunes the
  binarized model; ``mert-moses.pl`` the text model with Moses (it filters the table to the dev
  set, then reloads the filtered model each iteration), on ``--kenlm-binary``'s LM when given.

Every tuned ini is decoded by ``fstdecode moses`` and scored by sacrebleu (``-tok none -lc``);
times are whole processes. Moses and its ``mert``, ``extractor`` and ``kbmira`` are built from
their source outside the repository (``--moses``, ``--mert-dir``, ``--mert-script``); nothing of
them is committed. Writes the ``bench_tune`` section of docs/benchmarks.md.

    python -m scripts.bench_tune --hansards /tmp/hz --big /tmp/bbm_full --binarized /tmp/bin_full3 \\
        --moses /tmp/mosesbin/moses --mert-dir /tmp/mosesbin --mert-script .../mert-moses.pl [--seeds 1,2,3]
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.benchlib import DOCS, ROOT, load_avg, log, marked, script, write_section

SETUP = ROOT.parent / "shared" / "tools" / "moses-hansards"
#: The hidden weights whose 1-best translations are the big model's references.
HIDDEN = {"LM0": "0.8", "WordPenalty0": "0.3", "PhrasePenalty0": "-0.2", "Distortion0": "0.2",
          "TranslationModel0": "0.1 0.3 0.2 0.2"}


def add_args(ap) -> None:
    ap.add_argument("--hansards", type=Path, default=None, help="the Hansards set-up's folder")
    ap.add_argument("--big", type=Path, default=None, help="scripts/make_big_model.py's folder")
    ap.add_argument("--binarized", type=Path, default=None, help="fstdecode binarize's folder of --big")
    ap.add_argument("--kenlm-binary", type=Path, default=None,
                    help="a KenLM binary of --big's LM, for Moses (else it reads the ARPA file each iteration)")
    ap.add_argument("--moses", type=Path, default=None, help="Moses' moses executable")
    ap.add_argument("--mert-dir", type=Path, default=None, help="the folder of Moses' mert, extractor and kbmira")
    ap.add_argument("--mert-script", type=Path, default=None, help="Moses' scripts/training/mert-moses.pl")
    ap.add_argument("--seeds", default="1,2,3", help="fstdecode tune's seeds, comma-separated")


def fstdecode(*words: str) -> list[str]:
    return [sys.executable, "-m", "fstdecode", *words]


def timed(argv: list[str], cwd: Path, stdin: bytes | None = None) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv[:6]))} ... failed ({proc.returncode}): "
                         f"{proc.stderr.decode(errors='replace')[-1500:]}")
    return seconds, proc


def dev_bleu(ini: Path, src: Path, ref: Path, cwd: Path) -> float:
    """sacrebleu -tok none -lc of ``fstdecode moses -f ini``'s 1-best of ``src``."""
    import sacrebleu

    _, proc = timed(fstdecode("moses", "-f", str(ini), "-v", "0", "-input-file", str(src)), cwd)
    hyps = proc.stdout.decode("utf-8").splitlines()
    refs = ref.read_text(encoding="utf-8").splitlines()
    return sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", lowercase=True).score


def ours(ini: Path, src: Path, ref: Path, seed: int, work: Path, extra: list[str]) -> dict:
    out = work / f"{ini.stem}-tuned-seed{seed}.ini"
    seconds, proc = timed(fstdecode("tune", "-f", str(ini), "--input", str(src), "--reference", str(ref), "-o", str(out),
                                    "--lowercase", "--seed", str(seed), *extra), work)
    last = proc.stderr.decode("utf-8").strip().splitlines()[-1]
    log(f"fstdecode tune seed {seed}: {seconds:.1f} s; {last}")
    iterations = int(re.search(r"(\d+) iterations?", last).group(1))
    return {"seconds": seconds, "ini": out, "bleu": dev_bleu(out, src, ref, work), "iterations": iterations}


def mert_moses(args, ini: Path, src: Path, ref: Path, work: Path, extra: list[str], threads: int = 1) -> dict:
    folder = work / f"mert-work-{ini.stem}"
    argv = ["perl", str(args.mert_script), str(src), str(ref), str(args.moses), str(ini), "--mertdir",
            str(args.mert_dir), "--nbest", "100", "--maximum-iterations", "8", "--decoder-flags",
            f"-threads {threads} -v 0", "--working-dir", str(folder), *extra]
    seconds, proc = timed(argv, work)
    runs = re.findall(r"\((\d+)\) BEST at", proc.stdout.decode("utf-8", errors="replace"))
    log(f"mert-moses.pl with Moses: {seconds:.1f} s, {len(runs)} iterations")
    tuned = folder / "moses.ini"
    return {"seconds": seconds, "ini": tuned, "bleu": dev_bleu(tuned, src, ref, work), "iterations": len(runs)}


def hansards(args, work: Path) -> tuple[list[dict], list[tuple[str, dict]], float]:
    folder = args.hansards
    if not (folder / "moses.ini").is_file():
        subprocess.run([str(SETUP), str(folder), "3"], check=True, capture_output=True)
    src, ref, ini = folder / "dev.src", folder / "dev.ref", folder / "moses.ini"
    mine = [ours(ini, src, ref, int(s), work, ["--max-iterations", "8"]) for s in args.seeds.split(",")]
    theirs = [("mert-moses.pl with Moses", mert_moses(args, ini, src, ref, work, ["--no-filter-phrase-table"]))] \
        if args.moses else []
    return mine, theirs, dev_bleu(ini, src, ref, work)


def _ini_without_lr(path: Path, folder: Path, weights: dict[str, str] | None = None) -> str:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.replace("${MODEL_DIR}", str(folder))
        s = line.strip()
        if s.startswith("LexicalReordering"):
            continue
        name = s.split("=", 1)[0]
        if weights is not None and "=" in s and name in weights and not s.startswith(("KENLM", "PhraseDictionary")):
            line = f"{name}= {weights[name]}"
        out.append(line)
    return "\n".join(out) + "\n"


def big(args, work: Path) -> tuple[list[dict], list[tuple[str, dict]], float]:
    model, binarized = args.big, args.binarized
    text_ini, bin_ini, hidden_ini = work / "big-text.ini", work / "big-bin.ini", work / "big-hidden.ini"
    arpa_ini = work / "big-arpa.ini"
    text = _ini_without_lr(model / "moses.ini", model)
    arpa_ini.write_text(text, encoding="utf-8")
    if args.kenlm_binary is not None:
        text = re.sub(r"^(KENLM.*\bpath=)\S+", lambda m: m.group(1) + str(args.kenlm_binary), text, flags=re.M)
    text_ini.write_text(text, encoding="utf-8")
    bin_ini.write_text(_ini_without_lr(binarized / "moses.ini", binarized), encoding="utf-8")
    hidden_ini.write_text(_ini_without_lr(binarized / "moses.ini", binarized, HIDDEN), encoding="utf-8")
    src, ref = model / "input.txt", work / "big.ref"
    _, proc = timed(fstdecode("moses", "-f", str(hidden_ini), "-v", "0", "-input-file", str(src)), work)
    ref.write_bytes(proc.stdout)
    mine = [ours(bin_ini, src, ref, int(s), work, ["--threads", "2"]) for s in args.seeds.split(",")]
    theirs = []
    if args.moses:
        theirs.append(("mert-moses.pl with Moses, the ARPA LM, 1 thread (the issue's set-up)",
                       mert_moses(args, arpa_ini, src, ref, work, [], threads=1)))
        if args.kenlm_binary is not None:
            theirs.append(("mert-moses.pl with Moses, the KenLM binary, 2 threads",
                           mert_moses(args, text_ini, src, ref, work, [], threads=2)))
    return mine, theirs, dev_bleu(bin_ini, src, ref, work)


def _rows(name: str, mine: list[dict], theirs: list[tuple[str, dict]], start: float) -> tuple[list[str], list[str]]:
    rows = [f"| {name} | start (the ini's weights) | | | {start:.2f} |"]
    for r in mine:
        rows.append(f"| {name} | fstdecode tune, seed {r['ini'].stem.split('seed')[-1]} | {r['seconds']:.1f} | "
                    f"{r['iterations']} | {r['bleu']:.2f} |")
    mean_bleu = sum(r["bleu"] for r in mine) / len(mine)
    mean_time = sum(r["seconds"] for r in mine) / len(mine)
    rows.append(f"| {name} | fstdecode tune, mean of {len(mine)} seeds | {mean_time:.1f} | | {mean_bleu:.2f} |")
    notes = []
    for label, them in theirs:
        rows.append(f"| {name} | {label} | {them['seconds']:.1f} | {them['iterations']} | {them['bleu']:.2f} |")
        notes.append(f"- {name}, against {label}: fstdecode tune's mean BLEU {mean_bleu:.2f} against {them['bleu']:.2f} "
                     f"({mean_bleu - them['bleu']:+.2f}), in {mean_time / them['seconds']:.2f}x its time "
                     f"(the slowest seed {max(r['seconds'] for r in mine) / them['seconds']:.2f}x)")
    return rows, notes


def run(args, record) -> int:
    work = Path(tempfile.mkdtemp(prefix="bench_tune_"))
    rows, notes = [], []
    if args.hansards is not None:
        mine, theirs, start = hansards(args, work)
        r, n = _rows("Hansards", mine, theirs, start)
        rows += r
        notes += n
    if args.big is not None:
        mine, theirs, start = big(args, work)
        r, n = _rows("real-size model", mine, theirs, start)
        rows += r
        notes += n
    lines = [
        "## fstdecode tune against mert-moses.pl (`scripts/bench_tune.py`)",
        "",
        *record.header(load_avg()),
        "- each tuner a whole process; every tuned ini decoded by `fstdecode moses` and scored by sacrebleu "
        "(`-tok none -lc`) on the dev set; Hansards: both at n-best 100 and at most 8 iterations, 1 thread (mert-moses.pl "
        "`--no-filter-phrase-table`); real-size model, fstdecode tune with `--threads 2`: the generated model without its LexicalReordering, references "
        f"its 1-best under hidden weights {HIDDEN}, both from the generated weights (fstdecode tune on the binarized "
        "model, mert-moses.pl on the text model, which it filters to the dev set: with the model's ARPA LM and 1 "
        "thread, as the issue measured it, and with the KenLM binary and 2 threads), defaults otherwise",
        "",
        "| set-up | tuner | seconds | iterations | dev BLEU |",
        "|---|---|---:|---:|---:|",
        *rows,
        "",
        *notes,
    ]
    section = marked("bench_tune", lines)
    print(section)
    write_section(args.out, "bench_tune", section)
    return 0


main = script("bench_tune", __doc__, run, add_args=add_args, out=DOCS / "benchmarks.md")

if __name__ == "__main__":
    sys.exit(main())
