"""Shared pieces of the ``scripts/complexity_*.py`` experiments.

Each experiment writes one marked section of ``docs/complexity.md``
(between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->``) and its PNG
plots next to it; the record of every section states its command,
date, machine and run time (:func:`header`). Every experiment's ``main``
comes from :func:`experiment`, which adds the flags they share (``--out``,
``--quick``).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Callable, Sequence

from scripts.benchlib import DOCS, Run, load_avg, marked, script, write_section as _write_section

DOC = DOCS / "complexity.md"
TITLE = "# Complexity of phrase-based decoding\n"


def experiment(name: str, doc: str, run: Callable, add_args=None) -> Callable[..., int]:
    """The ``main(argv=None)`` of an experiment, with ``--out`` (the doc; the PNG goes beside it) and ``--quick``."""

    def run_in_place(args, record):
        args.out.parent.mkdir(parents=True, exist_ok=True)  # the PNG is written first
        return run(args, record)

    return script(
        name, doc, run_in_place, add_args=add_args, out=DOC,
        out_help="the doc whose section is rewritten; the PNG is written beside it (default docs/complexity.md)",
        quick="small sizes (a smoke test; the doc says so)",
    )


def header(run: Run) -> list[str]:
    """The lines every section starts with: command, date, machine, load and run time."""
    return [
        f"Command: `{run.command}`  ",
        f"Date: {run.date()}  ",
        f"Machine: {run.machine}  ",
        f"Load average (1/5/15 min) at start: {run.load_start}; at end: {load_avg()}. The machine is shared: "
        "other processes ran concurrently, so times are indicative; every measurement runs in one "
        "process (one core).  ",
        f"Run time of the whole command: {time.time() - run.started:.0f} s.",
    ]


def prepare(problem) -> float:
    """Build a problem's one-off search tables before timing the search; returns their build time.

    The signature DP fills a junction table over the vocabulary on first use
    (``SearchProblem.junctions``: V² entries for V distinct words, so O(n²)
    on instances whose words are all distinct, such as the TSP ones). It is
    built here, outside the timed search, and its time reported apart.
    """
    build = getattr(problem, "junctions", None)
    if build is None:
        return 0.0
    t0 = time.perf_counter()
    build()
    return time.perf_counter() - t0


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The least-squares slope of log y against log x (the exponent of a power law)."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def growth_factor(xs: Sequence[float], ys: Sequence[float]) -> float:
    """exp of the least-squares slope of log y against x: the factor per unit of x (exponential growth)."""
    ly = [math.log(y) for y in ys]
    mx, my = sum(xs) / len(xs), sum(ly) / len(ly)
    return math.exp(sum((a - mx) * (b - my) for a, b in zip(xs, ly)) / sum((a - mx) ** 2 for a in xs))


def table(head: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> list[str]:
    """A Markdown table; ``align`` is one of l/r per column (default: all right-aligned)."""
    align = align or "r" * len(head)
    rule = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(rule) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def fmt_int(x: int) -> str:
    """Thousands separators; very large integers as a power of ten with the exact bit length."""
    if x >= 10**12:
        return f"{float(x):.3e} (2^{math.log2(x):.1f})"
    return f"{x:,}"


def write_section(name: str, lines: Sequence[str], doc: Path = DOC) -> None:
    """Replace the section ``name`` of ``doc`` (append it if absent; create the doc if missing)."""
    _write_section(doc, name, marked(name, lines), title=TITLE)


def finish(name: str, run: Run, title: str, blocks: Sequence[str | Sequence[str]], doc: Path, png: Path, alt: str) -> int:
    """Write section ``name`` of ``doc`` and print it: ``title``, the run's header, then ``blocks``
    (each a paragraph, or a list of lines such as a table) and the plot ``png``, a blank line between each."""
    lines = [title]
    for part in [header(run), *blocks, [f"![{alt}]({png.name})"]]:
        lines += ["", *([part] if isinstance(part, str) else part)]
    write_section(name, lines, doc)
    print("\n".join(lines))
    return 0
