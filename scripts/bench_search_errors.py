#!/usr/bin/env python3
"""Search errors of the heuristic searches on every shared model, against proven optima.

For each model of ../shared/data that decodes plain text (Hansards fr-en with the UN LM at
orders 2 and 3, d = 4, table-limit 20; the Europarl lexicalized-reordering model and the de-en
model with their own moses.ini files; the toy-numbers model is a word-lattice model and is left
out), ``--method exact`` gives each line's optimum with its certificate; then the stack decoder
at each beam size of ``--sizes`` (Moses' defaults otherwise: distortion estimate, early
pruning), the signature beam (``--method beam``) at the same sizes, and the default method
(``prove``) decode every line. A *search error* is a line whose score is below the proven optimum
by more than 1e-6 (lines exact could not prove within its budget are not counted). Every score
is checked never to exceed the optimum. The results replace the ``bench_search_errors`` section
of docs/benchmarks.md.

    python -m scripts.bench_search_errors [--sizes 1,10,100,1000] [--limit N] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import time

from scripts.benchlib import DOCS, log, marked, script, shared_models, write_section

from fstdecode.decoder import Decoder

TOL = 1e-6


def decode_all(decoder: Decoder, lines: list[str]) -> tuple[list, float]:
    """Each line's result, and the seconds of the whole pass."""
    t = time.perf_counter()
    results = [decoder.decode(line, i) for i, line in enumerate(lines)]
    return results, time.perf_counter() - t


def row(name: str, label: str, results: list, seconds: float, optimum: list, words: int) -> str:
    """One table row: mean score, search errors over the proven lines, ms/word."""
    scores = [r.best.search_score if r.best is not None else None for r in results]
    proven = [i for i, o in enumerate(optimum) if o is not None]
    for i in proven:
        if scores[i] is not None and scores[i] > optimum[i] + TOL:
            raise SystemExit(f"{name}, {label}, line {i}: {scores[i]} above the proven optimum {optimum[i]}")
    errors = sum(scores[i] is None or scores[i] < optimum[i] - TOL for i in proven)
    found = [s for s in scores if s is not None]
    mean = sum(found) / len(found) if found else float("nan")
    return f"| {name} | {label} | {errors}/{len(proven)} | {mean:.4f} | {1000 * seconds / words:.3f} |"


def run(args, record) -> int:
    sizes = [int(s) for s in args.sizes.split(",")]
    lines = [
        "## Search errors on every shared model (`bench_search_errors`)", "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; load average at start {record.load_start}",
        "- optimum: `--method exact` (default budget), each line's proven score; *errors*: lines scoring more than"
        " 1e-6 below it, over the lines it proved; *mean*: the mean model score over the lines with a derivation;"
        " *ms/word*: the pass's wall time over the source words (model loaded). stack: Moses' search with the"
        " distortion estimate and early pruning, `--beam-size` K; beam: the signature beam; prove: the default.",
        "",
        "| model | search | errors / proven | mean score | ms/word |",
        "|---|---|---:|---:|---:|",
    ]
    for name, model, text in shared_models(args.limit):
        words = sum(len(line.split()) for line in text)
        exact, seconds = decode_all(Decoder(model, "exact"), text)
        optimum = [r.best.search_score if r.optimal and r.best is not None else None for r in exact]
        log(f"{name}: exact proved {sum(o is not None for o in optimum)}/{len(text)} in {seconds:.1f} s")
        lines.append(row(name, "exact", exact, seconds, optimum, words))
        runs = [("prove (default)", Decoder(model, "prove"))]
        runs += [(f"stack {k}", Decoder(model, "stack", beam_size=k)) for k in sizes]
        runs += [(f"beam {k}", Decoder(model, "beam", beam_size=k)) for k in sizes]
        for label, decoder in runs:
            results, seconds = decode_all(decoder, text)
            lines.append(row(name, label, results, seconds, optimum, words))
            log(f"{name}: {label} {seconds:.2f} s")
    lines.append(f"- run time {record.elapsed():.0f} s")
    write_section(args.out, "bench_search_errors", marked("bench_search_errors", lines))
    log(f"wrote {args.out}")
    return 0


def _add_args(ap) -> None:
    ap.add_argument("--sizes", default="1,10,100,1000", help="beam sizes (default 1,10,100,1000)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N lines of each model")


main = script("bench_search_errors", __doc__, run, add_args=_add_args, out=DOCS / "benchmarks.md", needs_data=True)

if __name__ == "__main__":
    raise SystemExit(main())
