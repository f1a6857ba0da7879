#!/usr/bin/env python3
"""Big phrase tables: load time and peak memory, filtered to an input vs. whole.

Generates a Moses phrase table of ``--lines`` lines (default 5,000,000; sorted by source
phrase, as Moses writes them; 5 scores a line) over a source vocabulary of
``--vocabulary`` words, and an input of ``--sentences`` sentences of 25 words drawn from
the same vocabulary. Then, each in a fresh process (so that its peak RSS is its own):

* ``whole``: ``load_phrase_table(table)``, what fstdecode did before ``--filter``;
* ``filtered``: ``load_phrase_table(table, vocabulary=SourceFilter(input))``, one batch
  of ``--filter`` (the input is one batch: fewer lines than ``--filter-chunk``).

Writes the ``bench_table`` section of docs/benchmarks.md.

    python -m scripts.bench_table [--lines N] [--sentences N] [--vocabulary N] [--keep DIR] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scripts.benchlib import DOCS, log, marked, script, write_section

WORDS_PER_SENTENCE = 25


def make_table(path: Path, lines: int, vocabulary: int, seed: int = 1) -> None:
    """``lines`` lines ``src ||| tgt ||| 5 scores``, sorted by source; 1-4 word sources, ~5 per source."""
    rng = random.Random(seed)
    words = [f"s{i}" for i in range(vocabulary)]
    sources: set[str] = set()
    while len(sources) < lines // 5:
        n = rng.choice((1, 2, 2, 3, 3, 4))
        sources.add(" ".join(rng.choice(words) for _ in range(n)))
    written = 0
    with path.open("w", encoding="utf-8") as out:
        for source in sorted(sources):
            for _ in range(5):
                if written == lines:
                    return
                target = " ".join(f"t{rng.randrange(vocabulary)}" for _ in range(rng.randint(1, 4)))
                scores = " ".join(f"{rng.uniform(0.001, 1):.4f}" for _ in range(4)) + " 2.718"
                out.write(f"{source} ||| {target} ||| {scores}\n")
                written += 1


def make_input(path: Path, sentences: int, vocabulary: int, seed: int = 2) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for _ in range(sentences):
            out.write(" ".join(f"s{rng.randrange(vocabulary)}" for _ in range(WORDS_PER_SENTENCE)) + "\n")


# Peak RSS is the process's own VmHWM: getrusage's ru_maxrss keeps the parent's peak across
# fork and exec, so it would count the generator's memory too.
_HWM = """
def peak_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
"""

_CHILD = _HWM + """
import json, sys, time
from fstdecode.io.phrase_table import load_phrase_table
from fstdecode.io.table_filter import SourceFilter
mode, table, text = sys.argv[1:4]
start = time.perf_counter()
keep = None
if mode == "filtered":
    keep = SourceFilter(line.split() for line in open(text, encoding="utf-8"))
loaded = load_phrase_table(table, vocabulary=keep)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "rss_mib": peak_mib(), "pairs": len(loaded),
                  "sources": sum(1 for _ in loaded.sources())}))
"""


def measure(mode: str, table: Path, text: Path) -> dict:
    """One load in a fresh Python process: its time, peak RSS and what it kept."""
    proc = subprocess.run([sys.executable, "-c", _CHILD, mode, str(table), str(text)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout)


def baseline_rss() -> float:
    """Peak RSS (MiB) of a process that only imports fstdecode's table reader."""
    proc = subprocess.run(
        [sys.executable, "-c", _HWM + "import fstdecode.io.phrase_table, fstdecode.io.table_filter\nprint(peak_mib())"],
        capture_output=True, text=True, check=True)
    return float(proc.stdout)


def add_args(ap) -> None:
    ap.add_argument("--lines", type=int, default=5_000_000, help="table lines (default 5,000,000)")
    ap.add_argument("--sentences", type=int, default=1000, help="input sentences of 25 words (default 1,000)")
    ap.add_argument("--vocabulary", type=int, default=50_000, help="source words (default 50,000)")
    ap.add_argument("--keep", type=Path, help="write the generated files here and keep them")


def run(args, record) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        table, text = folder / "phrase-table", folder / "input.txt"
        start = time.perf_counter()
        make_table(table, args.lines, args.vocabulary)
        make_input(text, args.sentences, args.vocabulary)
        log(f"generated {args.lines:,} lines ({table.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - start:.0f} s")
        size = table.stat().st_size
        base = baseline_rss()
        results = {}
        for mode in ("filtered", "whole"):
            results[mode] = measure(mode, table, text)
            log(f"{mode}: {results[mode]}")
    whole, filtered = results["whole"], results["filtered"]
    lines = [
        "## Big phrase tables: filtered to the input vs. whole (`scripts/bench_table.py`)",
        "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s; load average at start {record.load_start}",
        f"- table: {args.lines:,} generated lines ({size / 2**20:.0f} MiB, plain text), sorted by source, 5 scores a line, "
        f"{args.vocabulary:,} source words; input: {args.sentences:,} sentences of {WORDS_PER_SENTENCE} words over "
        "the same words (one `--filter` batch)",
        f"- each load in a fresh process; peak RSS is its VmHWM (a process that only imports the reader: {base:.0f} MiB)",
        "",
        "| load | seconds | peak RSS (MiB) | pairs kept | source phrases kept |",
        "|---|---:|---:|---:|---:|",
    ]
    for mode, label in (("whole", "whole table"), ("filtered", "filtered to the input")):
        r = results[mode]
        if "error" in r:
            lines.append(f"| {label} | failed: {r['error']} | | | |")
        else:
            lines.append(f"| {label} | {r['seconds']:.1f} | {r['rss_mib']:,.0f} | {r['pairs']:,} | {r['sources']:,} |")
    if "error" not in whole and "error" not in filtered:
        lines += [
            "",
            f"Filtering took {filtered['seconds'] / whole['seconds']:.2f}x the time of the whole load (every line is "
            f"still read and checked) and {filtered['rss_mib'] / whole['rss_mib']:.3f}x its peak memory "
            f"({filtered['rss_mib'] - base:,.0f} MiB above the bare process, against "
            f"{whole['rss_mib'] - base:,.0f} MiB). A filtered decode pays the load time once per batch of "
            "`--filter-chunk` input lines.",
        ]
    write_section(args.out, "bench_table", marked("bench_table", lines))
    log(f"wrote the bench_table section of {args.out}")
    return 0


main = script("bench_table", __doc__, run, add_args=add_args, out=DOCS / "benchmarks.md")

if __name__ == "__main__":
    sys.exit(main())
