#!/usr/bin/env python3
"""Compile every grammar module in grammars/ into its FAR archive.

    python -m scripts.compile_grammars [--out DIR]     (default DIR: build/grammars/)

writes DIR/<module>.far for each module of :data:`grammars.GRAMMARS`
(phrase_table.far, bigram_lm.far, numbers_de_en.far), each by running the
module's ``generator_main`` with :func:`grammars.export_far`, as pynini's
``grm.run`` would (without needing absl), and prints what each file holds.
grammars/ is not installed with fstdecode: run this from the repository root.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from grammars import GRAMMARS, export_far
from scripts.benchlib import ROOT, script


def compile_all(out: Path) -> dict[Path, list[str]]:
    """Write ``out/<module>.far`` for every grammar module; the keys of each file."""
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for name in GRAMMARS:
        module = importlib.import_module(f"grammars.{name}")
        path = out / f"{name}.far"
        written[path] = export_far(module.generator_main, path)
    return written


def add_args(ap) -> None:
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "grammars", metavar="DIR",
                    help="output directory (default: build/grammars/ in the repository)")


def run(args, record) -> int:
    for path, keys in compile_all(args.out).items():
        print(f"wrote {path}: {', '.join(keys)}")
    return 0


main = script("compile_grammars", __doc__, run, add_args=add_args)


if __name__ == "__main__":
    sys.exit(main())
