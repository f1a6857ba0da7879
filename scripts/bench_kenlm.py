#!/usr/bin/env python3
"""KenLM binary LMs against their ARPA file: load and decode cost (gold Europarl model).

The gold folder ../shared/data/moses-lexreo-europarl-fr-en has one 5-gram LM three ways:
ARPA (``europarl.lm``), and KenLM binaries with the probing and the trie structure. For
each, the model (its phrase table, table-limit 20, d = 6, the gold weights without the
LexicalReordering feature) is loaded and the 5 sentences are decoded by the native stack
decoder (the core reads the binaries by mmap: native/kenlm_binary.h), three rounds alternating
the three files. Reports the medians of load and decode seconds, the decode's ratio to the ARPA
file's, and the largest score difference to the ARPA decode. Needs the kenlm extra (the
issue-23 form of this script checks that the oracle is installed, as the tests do).

    python -m scripts.bench_kenlm [--out docs/benchmarks.md]
"""

from __future__ import annotations

import statistics
import sys
import time

from scripts.benchlib import DATA, DOCS, log, marked, script, write_section

from fstdecode import Decoder, load_model

GOLD = DATA / "moses-lexreo-europarl-fr-en"
WEIGHTS = ["word=-1", "lm=0.5", "distortion=0.5", "tm=0.2,0.2,0.2,0.2,0.2"]
# One engine since issue 23: the Python engine, which read binaries with the kenlm package, retired.
LMS = ("europarl.lm", "europarl.probing.binlm", "europarl.trie.binlm")
ROUNDS = 3


def one(lm: str, sentences: list[str]) -> dict:
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
    runs: dict[str, list[dict]] = {lm: [] for lm in LMS}
    for round_ in range(ROUNDS):
        for lm in LMS:
            r = one(lm, sentences)
            runs[lm].append(r)
            log(f"round {round_ + 1} {lm}: load {r['load']:.2f} s, decode {r['decode']:.2f} s")
    med = {lm: {k: statistics.median(r[k] for r in rs) for k in ("load", "decode")} for lm, rs in runs.items()}
    ref = runs["europarl.lm"][0]
    lines = [
        "## KenLM binary LMs against the ARPA file (`scripts/bench_kenlm.py`)",
        "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s; load average at start {record.load_start}",
        f"- model: moses-lexreo-europarl-fr-en without its LexicalReordering, 5-gram LM, table-limit 20, d = 6; "
        f"the native stack decoder (beam 100) on its 5 sentences ({ref['words']} words); {ROUNDS} rounds alternating "
        "the three files, medians",
        "- the core reads the binaries by mmap (native/kenlm_binary.h); the issue's targets: probing within 1.5x "
        "of the ARPA decode, trie within 2x",
        "",
        "| LM file | load s | decode s | ms/word | decode / ARPA decode | max score difference to ARPA |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for lm in LMS:
        diff = max(abs(a - b) for r in runs[lm] for a, b in zip(r["scores"], ref["scores"]))
        lines.append(
            f"| `{lm}` | {med[lm]['load']:.2f} | {med[lm]['decode']:.2f} | {1000 * med[lm]['decode'] / ref['words']:.1f} | "
            f"{med[lm]['decode'] / med['europarl.lm']['decode']:.2f} | {diff:.1e} |"
        )
    write_section(args.out, "bench_kenlm", marked("bench_kenlm", lines))
    log(f"wrote the bench_kenlm section of {args.out}")
    return 0


main = script("bench_kenlm", __doc__, run, out=DOCS / "benchmarks.md", needs_data=True)

if __name__ == "__main__":
    sys.exit(main())
