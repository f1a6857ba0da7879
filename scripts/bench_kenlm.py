#!/usr/bin/env python3
"""KenLM binary LMs against their ARPA file: load and decode cost (gold Europarl model).

The gold folder ../shared/data/moses-lexreo-europarl-fr-en has one 5-gram LM three ways:
ARPA (``europarl.lm``), and KenLM binaries with the probing and the trie structure. For
each, the model (its phrase table, table-limit 20, d = 6, the gold weights without the
LexicalReordering feature) is loaded and the 5 sentences are decoded by the stack decoder
with the native engine (the core reads binaries by mmap: native/kenlm_binary.h) and with the
Python engine (which reads binaries with the kenlm package). Reports load and decode seconds, the ratio to the ARPA file on the same
engine, and the largest score difference to the ARPA decode. Needs the kenlm extra.

    python -m scripts.bench_kenlm [--out docs/benchmarks.md]
"""

from __future__ import annotations

import sys
import time

from scripts.benchlib import DATA, DOCS, log, marked, script, write_section

from fstdecode import Decoder, load_model

GOLD = DATA / "moses-lexreo-europarl-fr-en"
WEIGHTS = ["word=-1", "lm=0.5", "distortion=0.5", "tm=0.2,0.2,0.2,0.2,0.2"]
# One engine since issue 23 (the Python engine, which read binaries with the kenlm package, retired):
# the "engine" column stays, so that the table reads as the earlier sections do.
RUNS = (("europarl.lm", "native"), ("europarl.probing.binlm", "native"), ("europarl.trie.binlm", "native"))


def one(lm: str, engine: str, sentences: list[str]) -> dict:
    start = time.perf_counter()
    model = load_model(phrase_table=GOLD / "phrase-table.0-0.gz", lm=GOLD / lm, weights=WEIGHTS,
                       table_limit=20, distortion_limit=6)
    loaded = time.perf_counter()
    decoder = Decoder(model, "stack")
    results = [decoder.decode(s) for s in sentences]
    return {"load": loaded - start, "decode": time.perf_counter() - loaded,
            "scores": [r.best.score for r in results], "words": sum(len(s.split()) for s in sentences)}


def run(args, record) -> int:
    try:
        import kenlm  # noqa: F401
    except ImportError:
        log("the kenlm package is absent: pip install -e '.[kenlm]'")
        return 2
    sentences = (GOLD / "to-translate.txt").read_text(encoding="utf-8").splitlines()
    out = {}
    for lm, engine in RUNS:
        out[lm, engine] = one(lm, engine, sentences)
        log(f"{lm} {engine}: load {out[lm, engine]['load']:.2f} s, decode {out[lm, engine]['decode']:.2f} s")
    ref = out["europarl.lm", "python"]
    lines = [
        "## KenLM binary LMs against the ARPA file (`scripts/bench_kenlm.py`)",
        "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s; load average at start {record.load_start}",
        f"- model: moses-lexreo-europarl-fr-en without its LexicalReordering, 5-gram LM, table-limit 20, d = 6; "
        f"the stack decoder (beam 100) on its 5 sentences ({ref['words']} words); one run each",
        "- the native core reads the binaries by mmap (`--engine auto` runs them natively); the Python engine reads them with the kenlm package",
        "",
        "| LM file | engine | load s | decode s | ms/word | decode / ARPA on the same engine | max score difference to ARPA |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for (lm, engine), r in out.items():
        diff = max(abs(a - b) for a, b in zip(r["scores"], ref["scores"]))
        lines.append(
            f"| `{lm}` | {engine} | {r['load']:.2f} | {r['decode']:.2f} | {1000 * r['decode'] / r['words']:.1f} | "
            f"{r['decode'] / out[('europarl.lm', engine)]['decode']:.2f} | {diff:.1e} |"
        )
    write_section(args.out, "bench_kenlm", marked("bench_kenlm", lines))
    log(f"wrote the bench_kenlm section of {args.out}")
    return 0


main = script("bench_kenlm", __doc__, run, out=DOCS / "benchmarks.md", needs_data=True)

if __name__ == "__main__":
    sys.exit(main())
