"""Loading Moses' binary phrase tables against fstdecode's binarized table and the text table.

For each table given (``--table NAME=PATH``, any of: a text table, a binarized table from
``fstdecode binarize``, a ProbingPT folder, and Moses' other binary tables once read), one whole
process loads the pairs of an input's source phrases (``load_phrase_table`` with a SourceFilter of
the input's sentences, as ``fstdecode decode`` filters a table to its batch; ``--kind reordering``:
``load_reordering_table``) and reports its time
(the table's open and lookup alone, from inside the process) and its peak RSS. Rounds alternate;
the best time is kept. Every table must give the same number of sources and pairs (they are one
table's twins), which the script checks.

    python -m scripts.bench_moses_tables --input /tmp/bbm_full/input.txt \\
        --table text=/tmp/bbm_full/phrase-table --table binarized=/tmp/bin_full3/phrase-table.bin \\
        --table probing=/tmp/bbm_full/pt.probing
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from scripts.benchlib import DOCS, load_avg, log, marked, script, whole_process, write_section

#: The measuring child: loads the table's pairs for the input and prints its numbers as JSON.
_CHILD = r"""
import json, sys, time
from fstdecode.io.phrase_table import load_phrase_table
from fstdecode.io.table_filter import SourceFilter
from fstdecode.io.reordering_table import load_reordering_table
path, input_path, kind = sys.argv[1], sys.argv[2], sys.argv[3]
with open(input_path, encoding="utf-8") as f:
    sentences = [line.split() for line in f]
t = time.perf_counter()
if kind == "phrases":
    table = load_phrase_table(path, vocabulary=SourceFilter(sentences), warn_empty=False)
    counts = {"sources": sum(1 for _ in table.sources()), "pairs": len(table)}
else:
    table = load_reordering_table(path, vocabulary=SourceFilter(sentences))
    counts = {"sources": 0, "pairs": len(table)}
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, **counts}))
"""


def add_args(ap) -> None:
    ap.add_argument("--input", type=Path, required=True, help="the sentences whose source phrases are looked up")
    ap.add_argument("--table", action="append", default=[], metavar="NAME=PATH", required=True,
                    help="a table to load (repeat): a text table, a binarized one, a ProbingPT folder ...")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, alternating; the best time kept (default 3)")
    ap.add_argument("--kind", choices=("phrases", "reordering"), default="phrases",
                    help="phrase tables (default) or lexicalized-reordering tables (conditioned on source and target)")


def run(args, record) -> int:
    tables = dict(item.split("=", 1) for item in args.table)
    got: dict[str, dict] = {}
    for r in range(args.rounds):
        for name, path in tables.items():
            wall, peak, out, _ = whole_process([sys.executable, "-c", _CHILD, path, str(args.input), args.kind])
            numbers = json.loads(out)
            seen = got.setdefault(name, {"load": [], "wall": [], "peak": 0, **numbers})
            if (numbers["sources"], numbers["pairs"]) != (seen["sources"], seen["pairs"]):
                raise SystemExit(f"{name}: the rounds disagree on the pairs loaded")
            seen["load"].append(numbers["seconds"])
            seen["wall"].append(wall)
            seen["peak"] = max(seen["peak"], peak)
            log(f"round {r + 1}: {name}: load {numbers['seconds']:.3f} s, whole {wall:.2f} s, {peak / 2**20:.0f} MB")
    counts = {(g["sources"], g["pairs"]) for g in got.values()}
    base = got.get("binarized")
    rows = []
    for name, g in got.items():
        ratio = f"{min(g['load']) / min(base['load']):.2f}" if base else "-"
        rows.append(f"| {name} | `{tables[name]}` | {min(g['load']):.3f} | {ratio} | {min(g['wall']):.2f} | "
                    f"{g['peak'] / 2**20:.0f} | {g['sources']:,} | {g['pairs']:,} |")
    lines = [
        f"## Loading Moses' binary {'phrase' if args.kind == 'phrases' else 'reordering'} tables "
        "(`scripts/bench_moses_tables.py`)",
        "",
        *record.header(load_avg()),
        f"- input: `{args.input}`; each load a whole process: `load_phrase_table` with a SourceFilter of the "
        f"input's sentences (as `decode` filters a table to its batch; a reordering table: `load_reordering_table`); "
        f"{args.rounds} rounds alternating, best kept; "
        "load = the call's own time (open, checks and lookups), whole = the process (Python's start included)",
        f"- the same sources and pairs from every table: {'yes' if len(counts) == 1 else 'NO: ' + str(counts)}",
        "",
        "| table | path | load s | load / binarized | whole s | peak RSS MB | sources | pairs |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
        *rows,
    ]
    name = "bench_moses_tables" + ("" if args.kind == "phrases" else "_reordering")
    section = marked(name, lines)
    print(section)
    write_section(args.out, name, section)
    return 0 if len(counts) == 1 else 1


main = script("bench_moses_tables", __doc__, run, add_args=add_args, out=DOCS / "benchmarks.md")

if __name__ == "__main__":
    sys.exit(main())
