#!/usr/bin/env python3
"""What the binarized model's checksum check costs: each file's CRC-32C, a whole decode and ``fstdecode verify``.

The model is a folder of ``fstdecode binarize`` (default /tmp/bin_full: the generated model of
8 million pairs, lexicalized reordering and a 5-gram LM image):

    python -m scripts.make_big_model --out /tmp/bbm_full --preset full
    fstdecode binarize -f /tmp/bbm_full/moses.ini -o /tmp/bin_full
    python -m scripts.bench_checksum [--model DIR] [--input FILE] [--repeats K]

``DIR/checksums.crc32c`` lists each binarized file's CRC-32C and size; a process checks each
file once, before it trusts it (``fstdecode.io.binarized.verify_checksum``, through the core's
``file_crc32c``: ``read()`` in 1 MiB blocks, the crc32 instruction). Measured in one run, on the
same files, with the page cache warm (each file read once, untimed, first):

* ``file_crc32c`` of every file the folder's checksums list, in this process: seconds and GB/s
  (10^9 bytes) per file and in total, best of ``--repeats`` passes (default 3; each value also
  checked against the recorded one);
* a whole ``python -m fstdecode -q decode -f DIR/moses.ini`` process on the first line of
  ``--input``: wall time and peak RSS (its own rusage, ``os.wait4``), best of the runs; and the
  same command with the core's ``file_crc32c`` wrapped in a timer (``python -c``), which gives
  the seconds that process spent checking and the files it checked; its share of the process.
  Without the timer, the share is estimated as those files' ``file_crc32c`` time above over the
  plain process's wall time;
* a whole ``python -m fstdecode -q verify DIR`` process (every file), the same way.

The three processes alternate, ``--repeats`` rounds. Writes the ``bench_checksum`` section of
docs/benchmarks.md.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from scripts.benchlib import DOCS, load_avg, log, marked, script, whole_process, write_section

#: ``fstdecode`` with the core's file_crc32c timed: one ``bench_checksum: SECONDS BYTES PATH`` line
#: on stderr per file checked, at the end.
TIMED = (
    "import sys, time\n"
    "from fstdecode._native import core\n"
    "real, checked = core.file_crc32c, []\n"
    "def timed(path):\n"
    "    t = time.perf_counter()\n"
    "    out = real(path)\n"
    "    checked.append((time.perf_counter() - t, out[1], path))\n"
    "    return out\n"
    "core.file_crc32c = timed\n"
    "from fstdecode.cli.main import main\n"
    "try:\n"
    "    status = main()\n"
    "finally:\n"
    "    for s, size, path in checked:\n"
    "        print(f'bench_checksum: {s:.6f} {size} {path}', file=sys.stderr)\n"
    "sys.exit(status)\n"
)

GB = 1e9


def add_args(ap) -> None:
    ap.add_argument("--model", type=Path, default=Path("/tmp/bin_full"), help="a folder fstdecode binarize wrote "
                    "(default /tmp/bin_full)")
    ap.add_argument("--input", type=Path, default=Path("/tmp/bbm_full/input.txt"),
                    help="input lines; the decode gets the first (default /tmp/bbm_full/input.txt)")
    ap.add_argument("--repeats", type=int, default=3, help="passes and rounds, best kept (default 3)")


def warm(path: Path) -> float:
    """Read ``path`` once (the page cache warm); the seconds."""
    t = time.perf_counter()
    with path.open("rb", buffering=0) as f:
        while f.read(1 << 23):
            pass
    return time.perf_counter() - t


def checked_inside(err: bytes) -> list[tuple[float, int, str]]:
    """The (seconds, bytes, path) lines of :data:`TIMED`."""
    out = []
    for line in err.decode(errors="replace").splitlines():
        if line.startswith("bench_checksum: "):
            s, size, path = line[len("bench_checksum: "):].split(" ", 2)
            out.append((float(s), int(size), path))
    return out


def run(args, record) -> int:
    from fstdecode._native import core
    from fstdecode.io.binarized import BinarizedFileError, read_checksums

    folder, ini = args.model, args.model / "moses.ini"
    for path in (ini, args.input):
        if not path.is_file():
            raise SystemExit(f"{path}: no such file (see this script's docstring for how to make the model)")
    first = args.input.read_text(encoding="utf-8").splitlines()[0]
    recorded = read_checksums(str(folder), BinarizedFileError)
    names = sorted(recorded)
    paths = {name: folder / name for name in names}
    total_bytes = sum(recorded[n].size for n in names)

    # The page cache warm: every file read once, untimed.
    for name in names:
        log(f"warm-up: {name} read in {warm(paths[name]):.2f} s")

    # 1. file_crc32c of each file in this process, best of the passes.
    per_file: dict[str, list[float]] = {n: [] for n in names}
    passes: list[float] = []
    for k in range(args.repeats):
        total = 0.0
        for name in names:
            t = time.perf_counter()
            crc, size = core.file_crc32c(str(paths[name]))
            s = time.perf_counter() - t
            if (crc, size) != (recorded[name].crc, recorded[name].size):
                raise SystemExit(f"{paths[name]}: CRC-32C {crc:08x}, {size} bytes; checksums.crc32c says "
                                 f"{recorded[name].crc:08x}, {recorded[name].size}")
            per_file[name].append(s)
            total += s
        passes.append(total)
        log(f"pass {k + 1}: file_crc32c of {len(names)} files, {total_bytes / GB:.2f} GB, in {total:.3f} s "
            f"({total_bytes / GB / total:.2f} GB/s)")
    best_total = min(passes)

    # 2 and 3. Whole processes, alternating.
    decode = [sys.executable, "-m", "fstdecode", "-q", "decode", "-f", str(ini)]
    kinds = {
        "decode": decode,
        "decode, timed": [sys.executable, "-c", TIMED, *decode[3:]],
        "verify": [sys.executable, "-m", "fstdecode", "-q", "verify", str(folder)],
    }
    stdin = {"decode": (first + "\n").encode(), "decode, timed": (first + "\n").encode(), "verify": b""}
    walls: dict[str, list[float]] = {k: [] for k in kinds}
    peaks: dict[str, list[int]] = {k: [] for k in kinds}
    inside: list[list[tuple[float, int, str]]] = []
    outputs: dict[str, set[bytes]] = {k: set() for k in kinds}
    for r in range(args.repeats):
        for kind, argv in kinds.items():
            wall, peak, out, err = whole_process(argv, stdin[kind])
            walls[kind].append(wall)
            peaks[kind].append(peak)
            outputs[kind].add(out)
            if kind == "decode, timed":
                inside.append(checked_inside(err))
            log(f"round {r + 1}: {kind} {wall:.2f} s, peak RSS {peak / 2**20:.0f} MB")
    load_end = load_avg()

    # Checks: decode's output the same in every run (timed or not), verify's one OK line a file.
    checks = []
    same = len(outputs["decode"] | outputs["decode, timed"]) == 1
    translated = next(iter(outputs["decode"])).decode(errors="replace").splitlines()
    checks.append(("decode: the same one output line in all its runs, timed or not", same and len(translated) == 1))
    verify_lines = next(iter(outputs["verify"])).decode(errors="replace").splitlines()
    checks.append((f"verify: one `OK` line for each of the {len(names)} files, in all its runs",
                   len(outputs["verify"]) == 1 and len(verify_lines) == len(names)
                   and all(": OK (CRC-32C " in line for line in verify_lines)))
    checks.append((f"file_crc32c: each file's CRC-32C and size equal checksums.crc32c's, in all {args.repeats} passes",
                   True))
    decode_names = [sorted(os.path.basename(p) for _, _, p in run_) for run_ in inside]
    checks.append(("decode, timed: the same files checked in every run, each once",
                   all(d == decode_names[0] for d in decode_names) and len(set(decode_names[0])) == len(decode_names[0])))
    ok = all(passed for _, passed in checks)

    # The numbers.
    best = {k: min(v) for k, v in walls.items()}
    i_best = walls["decode, timed"].index(best["decode, timed"])
    inside_s = [sum(s for s, _, _ in run_) for run_ in inside]
    inside_bytes = sum(size for _, size, _ in inside[0])
    share_inside = [s / w for s, w in zip(inside_s, walls["decode, timed"])]
    checked = decode_names[0]
    checked_best = sum(min(per_file[n]) for n in checked if n in per_file)
    share_estimate = checked_best / best["decode"]
    verify_share = best_total / best["verify"]

    def gbs(size: int, s: float) -> str:
        return f"{size / GB / s:.2f}" if s > 0 else "inf"

    rows = []
    for name in names:
        size = recorded[name].size
        b = min(per_file[name])
        rows.append(f"| `{name}` | {size:,} | {size / GB:.3f} | {b:.4f} | {gbs(size, b)} | "
                    f"{', '.join(f'{s:.4f}' for s in per_file[name])} | {'yes' if name in checked else 'no'} |")
    rows.append(f"| **total** ({len(names)} files) | {total_bytes:,} | {total_bytes / GB:.3f} | **{best_total:.3f}** | "
                f"**{gbs(total_bytes, best_total)}** | {', '.join(f'{s:.3f}' for s in passes)} | "
                f"{len(checked)} of {len(names)} |")

    def prow(kind: str, label: str, checks_s: str, share: str) -> str:
        return (f"| {label} | {best[kind]:.2f} | {', '.join(f'{w:.2f}' for w in walls[kind])} | "
                f"{', '.join(f'{b / 2**20:.0f}' for b in peaks[kind])} | {checks_s} | {share} |")

    procs = [
        prow("decode", "`fstdecode -q decode -f DIR/moses.ini`, 1 line",
             f"{checked_best:.3f} (estimate: its {len(checked)} files' file_crc32c above)",
             f"{100 * share_estimate:.1f}% (estimate)"),
        prow("decode, timed", "the same, file_crc32c timed inside (`python -c`)",
             f"{inside_s[i_best]:.3f} (runs {', '.join(f'{s:.3f}' for s in inside_s)})",
             f"{100 * share_inside[i_best]:.1f}% (runs {', '.join(f'{100 * x:.1f}' for x in share_inside)}%)"),
        prow("verify", "`fstdecode -q verify DIR`", f"{best_total:.3f} (the total above)",
             f"{100 * verify_share:.1f}%"),
    ]
    lines = [
        "## The binarized model's checksum check: what it costs (`scripts/bench_checksum.py`)",
        "",
        f"- command: `{record.command}`",
        f"  (the model: `python -m scripts.make_big_model --out /tmp/bbm_full --preset full`, then "
        f"`fstdecode binarize -f /tmp/bbm_full/moses.ini -o {folder}`)",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s; load average at start {record.load_start}, "
        f"at the end {load_end}",
        f"- model: `{folder}` ({len(names)} files in `checksums.crc32c`, {total_bytes / GB:.2f} GB); the decode's input: "
        f"the first line of `{args.input}` ({len(first.split())} words); the page cache warm (each file read once "
        "first, untimed); GB = 10^9 bytes",
        f"- *file_crc32c*: the core's `file_crc32c(path)` (what a process's check runs) called from this process, "
        f"{args.repeats} passes over the files, best of each; *checked by the decode*: the files the timed decode "
        "checked",
        f"- processes: each one `python -m fstdecode ...`, timed whole (Python's start included), its peak RSS its own "
        f"(`os.wait4`); the three alternating, {args.repeats} rounds, best wall kept; the timed decode is the same "
        "command under `python -c` with `fstdecode._native.core.file_crc32c` wrapped in a timer",
        "",
        "| file | bytes | GB | best s | GB/s | passes s | checked by the decode |",
        "|---|---:|---:|---:|---:|---|---|",
        *rows,
        "",
        "| process | best wall s | walls s | peak RSS MB (each run) | checksums s | share of the process |",
        "|---|---:|---|---|---|---|",
        *procs,
        "",
        f"- checksums, from the page cache: {gbs(total_bytes, best_total)} GB/s over {total_bytes / GB:.2f} GB "
        f"({best_total:.3f} s); in the decode process {gbs(inside_bytes, inside_s[i_best])} GB/s over its "
        f"{inside_bytes / GB:.2f} GB",
        f"- the decode of one line: {best['decode']:.2f} s whole; its checks {inside_s[i_best]:.3f} s, "
        f"{100 * share_inside[i_best]:.1f}% of the process (the estimate from file_crc32c here: "
        f"{100 * share_estimate:.1f}%); the timer's run {best['decode, timed']:.2f} s against {best['decode']:.2f} s",
        f"- `fstdecode verify`: {best['verify']:.2f} s whole, {best['verify'] / best_total:.2f}x the checksums' "
        f"{best_total:.3f} s (the rest is Python's start and the import)",
        "",
        "| check | outcome |",
        "|---|---|",
        *(f"| {what} | {'ok' if passed else 'FAILED'} |" for what, passed in checks),
    ]
    write_section(args.out, "bench_checksum", marked("bench_checksum", lines))
    log(f"wrote {args.out}")
    print("\n".join(lines))
    return 0 if ok else 1


main = script("bench_checksum", __doc__, run, add_args=add_args, out=DOCS / "benchmarks.md")

if __name__ == "__main__":
    sys.exit(main())
