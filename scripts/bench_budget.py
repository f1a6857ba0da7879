#!/usr/bin/env python3
"""A sentence at the default budget: time and peak memory of the worst cases (issue 22).

The README promises what one sentence costs at the default ``--max-states``. This measures it
on the cases that push hardest, with the built-in example model: a 100-word line with no
distortion limit (``-d -1``), and lines of 513, 1,000 and 5,000 words (beyond the core's fixed
512-word coverage, where a sliding window takes over). Each decode is ``fstdecode decode`` in
a fresh process, so that its peak RSS (VmHWM) is its own. Words are drawn (seed fixed) from the
example's source vocabulary.

Writes the ``bench_budget`` section of docs/benchmarks.md.

    python -m scripts.bench_budget [--quick] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
from pathlib import Path

from scripts.benchlib import DOCS, log, marked, script, write_section

WORDS = "das muss unsere sorge gleichermaßen sein ist ein haus".split()

#: (words, distortion limit or None for the default, methods).
CASES = [
    (100, -1, ("stack", "exact", "fst")),
    (513, None, ("stack", "exact")),
    (1000, None, ("stack", "exact")),
    (5000, None, ("stack", "exact")),
]

#: Runs the CLI and prints its wall time and VmHWM: the child's own peak, read from /proc as it exits.
_CHILD = """
import sys, time
start = time.perf_counter()
sys.argv = ["fstdecode", *sys.argv[1:]]
code = 0
try:
    from fstdecode.cli.main import main
    code = main()
finally:
    hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    print(f"{time.perf_counter() - start:.3f} {hwm / 1024:.0f} {code}", file=sys.stderr)
"""


def sentence(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def measure(text: Path, method: str, d: int | None) -> dict:
    """One decode in a fresh process: seconds, peak RSS (MiB) and the line's warning, if any."""
    args = ["decode", "--method", method, *([] if d is None else ["-d", str(d)])]
    with text.open("rb") as stdin:
        proc = subprocess.run([sys.executable, "-c", _CHILD, *args], stdin=stdin, capture_output=True, check=False)
    err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    seconds, rss, code = err[-1].split()
    warning = next((line.split(": ", 3)[-1] for line in err[:-1] if "warning" in line), "")
    return {"seconds": float(seconds), "rss": float(rss), "code": int(code), "warning": warning}


def add_args(ap) -> None:
    del ap  # --quick and --out only


def run(args, record) -> int:
    cases = CASES[:2] if args.quick else CASES
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, d, methods in cases:
            text = Path(tmp) / f"in{n}.txt"
            text.write_text(sentence(n, seed=n) + "\n", encoding="utf-8")
            for method in methods:
                r = measure(text, method, d)
                log(f"{n} words, d={d}, {method}: {r}")
                rows.append((n, d, method, r))
    lines = [
        "## One sentence at the default budget: time and memory (`scripts/bench_budget.py`)",
        "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s; load average at start {record.load_start}",
        "- model: the built-in example (bigram LM); each line drawn from its source words (seed fixed); each decode "
        "is `fstdecode decode --method M` in a fresh process at the default `--max-states`; peak RSS is its VmHWM",
        "",
        "| words | -d | method | seconds | peak RSS (MiB) | outcome |",
        "|---:|---:|---|---:|---:|---|",
    ]
    for n, d, method, r in rows:
        outcome = r["warning"] or "within budget"
        lines.append(f"| {n:,} | {'default (6)' if d is None else d} | {method} | {r['seconds']:.1f} | {r['rss']:,.0f} | {outcome} |")
    worst = max(rows, key=lambda row: row[3]["rss"])
    slowest = max(rows, key=lambda row: row[3]["seconds"])
    lines += [
        "",
        f"Worst peak memory: {worst[3]['rss']:,.0f} MiB ({worst[2]}, {worst[0]:,} words); longest: "
        f"{slowest[3]['seconds']:.1f} s ({slowest[2]}, {slowest[0]:,} words). The README's \"Budgets\" bullet quotes these.",
    ]
    write_section(args.out, "bench_budget", marked("bench_budget", lines))
    log(f"wrote the bench_budget section of {args.out}")
    return 0


main = script("bench_budget", __doc__, run, add_args=add_args, out=DOCS / "benchmarks.md",
              quick="only the 100- and 513-word lines")

if __name__ == "__main__":
    sys.exit(main())
