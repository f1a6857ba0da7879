"""Shared pieces of the benchmark and experiment scripts.

* :func:`run_main`, the one ``main()`` frame every script runs under
  (``python -m scripts.NAME`` from the repository root; :func:`script`
  makes a script's ``main``): the argument parser with the common flags,
  the record of the run (:class:`Run`: command, date, machine, commit,
  load average) and the exit code;
* the paths: the repository (:data:`ROOT`, :data:`DOCS`) and the real
  models under ``../shared/data`` (:data:`DATA`, :data:`HANSARDS`,
  :func:`hansards_args`, :func:`shared_models`);
* timing: :func:`timed` (one run under a wall-clock budget) and
  :func:`best_time` (best of a few runs, garbage collector off);
* output: :func:`write_section` (one marked section of a Markdown doc),
  :func:`plt` (matplotlib without a display), :func:`grid_and_legend` and
  :func:`save_figure`.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import math
import os
import platform
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: The real models and data, shared between checkouts: ``../shared/data`` next to the repository.
DATA = ROOT.parent / "shared" / "data"
HANSARDS = DATA / "hansards-fr-en-decoder"
UN_LM = DATA / "english-lm-un" / "lm.en.arpa"


def hansards_args(distortion_limit: int, table_limit: int, lm_order: int = 2) -> dict:
    """``load_model`` arguments of the Hansards fr-en table (log10 scores) with the UN English LM
    read at order ``lm_order`` (default 2, a bigram; the file's own order is 3)."""
    return dict(
        phrase_table=HANSARDS / "tm",
        tm_score_format="log10",
        lm=UN_LM,
        lm_order=lm_order,
        distortion_limit=distortion_limit,
        table_limit=table_limit,
    )


def shared_models(limit: int | None = None, hansards_orders: Sequence[int] = (2, 3)):
    """(name, model, input lines) of each shared model that takes plain text: Hansards (d = 4,
    table-limit 20) with the UN LM at each of ``hansards_orders``, then the Europarl
    lexicalized-reordering and the de-en models with their own moses.ini (toy-numbers, a
    word-lattice model, is left out); ``limit``: the first N lines of each."""
    from fstdecode.model.model import load_model

    hansards = (HANSARDS / "input").read_text(encoding="utf-8").splitlines()[:limit]
    for order in hansards_orders:
        yield f"Hansards, UN LM order {order}, d=4, tl=20", load_model(**hansards_args(4, 20, order)), hansards
    for folder, name in (
        ("moses-lexreo-europarl-fr-en", "Europarl 5-gram, lexicalized reordering (its moses.ini)"),
        ("moses-early-distortion-de-en", "de-en trigram, d=6 (its moses.ini)"),
    ):
        lines = (DATA / folder / "to-translate.txt").read_text(encoding="utf-8").splitlines()[:limit]
        yield name, load_model(DATA / folder / "moses.ini"), lines


# --------------------------------------------------------------------------- the record of a run


def machine() -> str:
    """CPU model, cores, Python and OS, for the record next to every measurement."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} logical cores, Python {platform.python_version()} "
        f"({platform.python_implementation()}), {platform.system()} {platform.release()}"
    )


def code_version(root: Path | None = None, watched: str = "fstdecode") -> str:
    """The git commit measured, and whether ``watched`` had uncommitted changes."""
    root = root or ROOT
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", watched], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"commit {commit}" + (f" with uncommitted changes in {watched}/" if dirty else "")


def load_avg() -> str:
    """The 1/5/15-minute load averages, as ``a/b/c``."""
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


@dataclass
class Run:
    """The record of one run of a script: its command line, start, machine, commit and load."""

    command: str
    started: float = field(default_factory=time.time)
    t0: float = field(default_factory=time.perf_counter)
    load_start: str = field(default_factory=load_avg)
    machine: str = field(default_factory=machine)
    code: str = field(default_factory=code_version)

    def date(self) -> str:
        """The start, in UTC (``2026-11-22 09:17 UTC``)."""
        return datetime.datetime.fromtimestamp(self.started, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    def elapsed(self) -> float:
        """Seconds since the start."""
        return time.perf_counter() - self.t0

    def header(self, load_end: str) -> list[str]:
        """A section's first lines: the command, machine, commit, and the run's date, length and load."""
        return [
            f"- command: `{self.command}`",
            f"- machine: {self.machine}",
            f"- code: {self.code}",
            f"- date: {self.date()}; whole run {self.elapsed():.0f} s; load average at start {self.load_start}, "
            f"at the end {load_end}",
        ]


def log(msg: str) -> None:
    """Print a progress line to stderr, flushed."""
    print(msg, file=sys.stderr, flush=True)


def run_main(
    name: str,
    doc: str | None,
    run: Callable[[argparse.Namespace, Run], int | None],
    argv: Sequence[str] | None = None,
    *,
    add_args: Callable[[argparse.ArgumentParser], None] | None = None,
    out: Path | None = None,
    out_help: str | None = None,
    quick: str | None = None,
    needs_data: bool = False,
) -> int:
    """The ``main()`` of script ``scripts/NAME.py``: parse ``argv``, record the run, call ``run(args, record)``.

    The parser's description is the first line of ``doc`` (the script's
    docstring). Common flags: ``--out`` when ``out`` (its default) is given,
    ``--quick`` when ``quick`` (its help) is given; ``add_args`` adds the
    script's own. With ``needs_data`` the script stops with exit code 2 when
    ``../shared/data`` is absent. The record's command is
    ``python -m scripts.NAME`` with the arguments as given. ``run`` returns
    the exit code (``None`` counts as 0).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    description = doc.strip().splitlines()[0] if doc else None
    ap = argparse.ArgumentParser(prog=f"python -m scripts.{name}", description=description)
    if out is not None:
        ap.add_argument("--out", type=Path, default=out, help=out_help or f"output file (default {_shown(out)})")
    if quick is not None:
        ap.add_argument("--quick", action="store_true", help=quick)
    if add_args is not None:
        add_args(ap)
    args = ap.parse_args(argv)
    if needs_data and not DATA.exists():
        log(f"{DATA} is absent: scripts.{name} needs ../shared/data")
        return 2
    record = Run(f"python -m scripts.{name}" + "".join(f" {a}" for a in argv))
    code = run(args, record)
    return 0 if code is None else code


def script(name: str, doc: str | None, run: Callable[[argparse.Namespace, Run], int | None], **frame) -> Callable[..., int]:
    """The ``main(argv=None)`` of ``scripts/NAME.py``: :func:`run_main` with these arguments."""

    def main(argv: Sequence[str] | None = None) -> int:
        return run_main(name, doc, run, argv, **frame)

    main.__doc__ = f"Run scripts.{name} with ``argv`` (default: the command line); the exit code."
    return main


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def whole_process(argv: Sequence[str], stdin: bytes = b"", cwd: Path | None = None, check: bool = True,
                  env: dict | None = None) -> tuple[float, int, bytes, bytes]:
    """(wall seconds, peak RSS bytes, stdout, stderr) of one process, timed whole; its rusage is
    its own (``os.wait4``). With ``check``, a failure stops the script, naming the command."""
    import tempfile

    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr:
        fin.write(stdin)
        fin.seek(0)
        t = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdin=fin, stdout=fout, stderr=ferr, cwd=cwd or ROOT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        code = os.waitstatus_to_exitcode(status)
        fout.seek(0)
        ferr.seek(0)
        out, err = fout.read(), ferr.read()
    if check and code != 0:
        raise SystemExit(f"{' '.join(argv[:4])} ... failed ({code}): {err.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_maxrss * 1024, out, err


# --------------------------------------------------------------------------- timing


class Timeout(Exception):
    """Raised inside :func:`timed` when the budget runs out."""


def _alarm(signum, frame):
    raise Timeout()


def timed(fn: Callable[[], T], budget: float) -> tuple[T, float] | tuple[None, None]:
    """(result, seconds) of ``fn()``, or (None, None) past ``budget`` seconds (SIGALRM; main thread only)."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)
    t = time.perf_counter()
    try:
        out = fn()
    except Timeout:
        return None, None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return out, time.perf_counter() - t


def best_time(fn: Callable[[], T], repeat_below: float = 0.5, repeats: int = 3) -> tuple[T, float]:
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


# --------------------------------------------------------------------------- output


def write_section(path: Path, name: str, section: str, title: str = "# Benchmarks\n") -> None:
    """Replace the section between ``<!-- name:start -->`` and ``<!-- name:end -->`` of ``path``.

    ``section`` must include both markers (:func:`marked` adds them); the
    file is created with ``title`` if needed, and the section appended if absent.
    """
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = path.read_text(encoding="utf-8") if path.exists() else title
    i, j = text.find(start), text.find(end)
    if i != -1 and j != -1 and j > i:
        text = text[:i] + section.rstrip("\n") + text[j + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def marked(name: str, lines: Sequence[str]) -> str:
    """``lines`` between the markers of section ``name``, one a line, ending with a newline."""
    return "\n".join([f"<!-- {name}:start -->", *lines, f"<!-- {name}:end -->"]) + "\n"


def plt():
    """matplotlib.pyplot with the file-only Agg backend (``pip install -e .[bench]``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


def grid_and_legend(ax) -> None:
    """The grid and the legend of the scripts' plots."""
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def save_figure(fig, path: Path, dpi: int) -> None:
    """Lay ``fig`` out, write it to ``path`` and close it."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt().close(fig)


#: The state budget of the experiments: they measure whole searches, so only their own caps
#: (each script's --max-states, where it has one) stop them; the library's default is for users.
NO_BUDGET = 10**12
