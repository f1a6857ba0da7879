"""Shared pieces of the ``scripts/complexity_*.py`` experiments.

Each experiment writes one marked section of ``docs/complexity.md``
(between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->``) and its PNG
plots under ``docs/``; the record of every section states its command,
date, machine and run time (:class:`Run`).
"""

from __future__ import annotations

import datetime
import gc
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import machine  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "complexity.md"
T = TypeVar("T")


def plt():
    """matplotlib.pyplot with the file-only Agg backend (``pip install -e .[bench]``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


@dataclass
class Run:
    """The record of one experiment run: command, start date, load and elapsed time."""

    command: str
    started: float = field(default_factory=time.time)
    load_start: str = field(default_factory=lambda: _load())

    def header(self) -> list[str]:
        """The lines every section starts with (the brief: command, machine, date, and the shared machine)."""
        date = datetime.datetime.fromtimestamp(self.started, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        return [
            f"Command: `{self.command}`  ",
            f"Date: {date}  ",
            f"Machine: {machine()}  ",
            f"Load average (1/5/15 min) at start: {self.load_start}; at end: {_load()}. The machine is shared: "
            "other processes ran concurrently, so times are indicative; every measurement runs in one "
            "process (one core).  ",
            f"Run time of the whole command: {time.time() - self.started:.0f} s.",
        ]


def _load() -> str:
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def timed(fn: Callable[[], T], repeat_below: float = 0.5, repeats: int = 3) -> tuple[T, float]:
    """(result, seconds) of ``fn()``; runs shorter than ``repeat_below`` s are repeated, best kept.

    As ``timeit`` does, the garbage collector is off while ``fn`` runs: its
    full passes over millions of live chart entries would add a cost that
    grows with the chart, not with the search.
    """
    best = math.inf
    result = None
    for i in range(repeats):
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            result = fn()
            best = min(best, time.perf_counter() - t0)
        finally:
            gc.enable()
        if best >= repeat_below:
            break
    return result, best  # type: ignore[return-value]


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
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    body = "\n".join([start, *lines, end])
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Complexity of phrase-based decoding\n"
    i, j = text.find(start), text.find(end)
    if i != -1 and j > i:
        text = text[:i] + body + text[j + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + body + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text, encoding="utf-8")
