#!/usr/bin/env python3
"""Historical: it compares the native core with the Python engine, which issue 23 retired (one
engine; ``--engine`` removed), so it runs only at the commits its sections in docs/benchmarks.md name
(``git worktree add /tmp/old COMMIT``). Lexicalized reordering on the gold Europarl model: every method that accepts it.

The gold folder ../shared/data/moses-lexreo-europarl-fr-en is Moses' regression test
``phrase.lexicalized-reordering``: msd-bidirectional-fe reordering, an ARPA 5-gram LM, d = 6,
Moses' distortion semantics, and Moses' own 1-best score of each of its 5 sentences
(truth/results.txt ``SCORE_i``). The model is loaded once from its moses.ini; each
(method, engine) below decodes the 5 sentences, one after the other, and reports its decode
time (ms per source word, model load excluded), the states it created or kept (as the
method counts them, summed), how many sentences it proved optimal, and its best score minus
Moses' (the smallest and the largest over the sentences: >= 0 means at least Moses' 1-best,
to the 6 digits Moses printed, so > -5e-4). A method that refuses the model is listed with
its message; one over budget on a sentence counts that line as not proven. For the cost of the
reordering state, the native stack and exact searches also run on the same model without its
LexicalReordering feature (same weights otherwise, Moses' semantics kept).

For the cost of a KenLM binary LM (issue 13, section 4), the stack and exact searches also run
on ``moses.binlm.ini``: the same model with its LM as a KenLM probing binary, which only the
Python engine reads (through the ``kenlm`` extra; without it those rows say so). The table then
gives ms/word for the binary on the Python engine against the ARPA file on the Python and the
native engine, and a summary line their ratios, with each ini's load time.

    python -m scripts.bench_lexreo [--time-limit SEC] [--python-exact-limit SEC] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import dataclasses
import re
import sys
import time

from scripts.benchlib import DATA, DOCS, log, marked, script, write_section

from fstdecode import Decoder, load_model
from fstdecode.errors import FstdecodeError

GOLD = DATA / "moses-lexreo-europarl-fr-en"
#: The gold model with its LM as a KenLM probing binary (Python engine only, needs the kenlm extra).
BINLM = "moses.binlm.ini"
#: Options that choose the model, not the search.
MODEL_KEYS = ("without", "ini")

#: (method, engine, options): the coverage-state searches in both engines, the exhaustive
#: oracle, and the signature-state methods (listed whether or not they accept the model yet).
RUNS = (
    ("stack", "native", {}),
    ("stack", "python", {}),
    ("exact", "native", {"time_limit": "LIMIT"}),
    ("exact", "python", {"time_limit": "PYLIMIT"}),
    ("coverage", "native", {"max_states": 2_000_000}),
    ("stack", "native", {"without": "LexicalReordering"}),
    ("exact", "native", {"time_limit": "LIMIT", "without": "LexicalReordering"}),
    ("stack", "python", {"ini": BINLM}),
    ("exact", "python", {"time_limit": "PYLIMIT", "ini": BINLM}),
    ("beam", "auto", {}),
    ("dp", "auto", {}),
    ("bounded", "auto", {}),
    ("fst", "auto", {}),
)


def gold_scores() -> list[float]:
    text = (GOLD / "truth" / "results.txt").read_text()
    return [float(v) for v in re.findall(r"^SCORE_\d+ = (\S+)$", text, re.M)]


def one(model, method: str, engine: str, options: dict, sentences: list[str], gold: list[float]) -> dict:
    try:
        decoder = Decoder(model, method, engine=engine, **options)
    except FstdecodeError as error:
        return {"refused": str(error)}
    start = time.perf_counter()
    results = [decoder.decode(s) for s in sentences]
    seconds = time.perf_counter() - start
    diffs = [r.best.score - g for r, g in zip(results, gold) if r.best is not None]
    return {
        "engine": decoder.engine,
        "seconds": seconds,
        "states": sum(r.stats.states for r in results),
        "proven": sum(r.optimal for r in results),
        "found": len(diffs),
        "diffs": diffs,
        "reasons": [r.reason or r.error for r in results if r.reason or r.error],
    }


def without_reordering(model):
    """The model without its LexicalReordering feature, searched under Moses' semantics still."""
    return dataclasses.replace(
        model, reordering=None, semantics_given=True, weights=dataclasses.replace(model.weights, lr=())
    )


def binlm_model():
    """The gold model from moses.binlm.ini and its load seconds, or the reason it cannot load."""
    try:
        import kenlm  # noqa: F401
    except ImportError:
        return None, 0.0, "the kenlm package is absent: pip install -e '.[kenlm]'"
    start = time.perf_counter()
    model = load_model(GOLD / BINLM)
    return model, time.perf_counter() - start, None


def ms_per_word(rows, method: str, engine: str, ini: str | None, words: int) -> float | None:
    """The decode ms/word of the row (method, engine, ini=...) with every sentence decoded."""
    for m, e, opts, r in rows:
        if (m, e, opts.get("ini"), "without" in opts) == (method, engine, ini, False) and r.get("found") == 5:
            return 1000 * r["seconds"] / words
    return None


def kenlm_summary(rows, words: int, loads: dict) -> list[str]:
    """One line per search: the binary LM's ms/word against the ARPA file's on both engines."""
    out = [f"KenLM binary against ARPA (issue 13, section 4): load {loads['moses.ini']:.2f} s (moses.ini, ARPA) "
           f"and {loads[BINLM]:.2f} s ({BINLM}, probing binary, the kenlm package)."]
    for method in ("stack", "exact"):
        binary = ms_per_word(rows, method, "python", BINLM, words)
        arpa_py = ms_per_word(rows, method, "python", None, words)
        arpa_native = ms_per_word(rows, method, "native", None, words)
        if None in (binary, arpa_py, arpa_native):
            out.append(f"- {method}: not measured (a row above did not decode all 5 sentences)")
            continue
        out.append(
            f"- {method}: binary {binary:.1f} ms/word (Python engine) against ARPA {arpa_py:.1f} (Python engine, "
            f"{binary / arpa_py:.2f}x) and {arpa_native:.1f} (native engine, {binary / arpa_native:.0f}x)"
        )
    return out


def run(args, record) -> int:
    sentences = (GOLD / "to-translate.txt").read_text(encoding="utf-8").splitlines()
    gold = gold_scores()
    words = sum(len(s.split()) for s in sentences)
    start = time.perf_counter()
    model = load_model(GOLD / "moses.ini")
    load = time.perf_counter() - start
    binary, binary_load, binary_missing = binlm_model()
    rows = []
    for method, engine, options in RUNS:
        opts = {k: {"LIMIT": args.time_limit, "PYLIMIT": args.python_exact_limit}.get(v, v) for k, v in options.items()}
        searched = without_reordering(model) if opts.get("without") else binary if opts.get("ini") else model
        if opts.get("ini") and binary is None:
            rows.append((method, engine, opts, {"refused": binary_missing}))
            continue
        search_opts = {k: v for k, v in opts.items() if k not in MODEL_KEYS}
        r = one(searched, method, engine, search_opts, sentences, gold)
        rows.append((method, engine, opts, r))
        log(f"{method} {engine}: {r if 'refused' in r else {k: r[k] for k in ('seconds', 'states', 'proven')}}")
    lines = [
        "## Lexicalized reordering: the gold Europarl model (`scripts/bench_lexreo.py`)",
        "",
        f"- command: `{record.command}`",
        f"- machine: {record.machine}",
        f"- code: {record.code}",
        f"- date: {record.date()}; whole run {record.elapsed():.0f} s; load average at start {record.load_start}",
        f"- model: moses-lexreo-europarl-fr-en/moses.ini as it is (msd-bidirectional-fe reordering, 5-gram ARPA LM, "
        f"d = 6, Moses' distortion semantics); loaded once in {load:.1f} s; its 5 sentences ({words} words), one run each",
        "- rows with `without=LexicalReordering` search another model (no reordering features), so their "
        "scores are not comparable with Moses'; they show what the reordering state costs in states and time",
        f"- rows with `ini={BINLM}` search the same model with its LM read from the KenLM probing binary "
        "(`europarl.probing.binlm`; Python engine, the only one that reads binaries)"
        + (f"; loaded in {binary_load:.1f} s" if binary is not None else ""),
        "- score − Moses: the best score minus Moses' 1-best (`SCORE_i`), smallest and largest over the sentences; "
        "Moses printed 6 digits, so anything above −5e-4 is at least Moses' score",
        "",
        "| method | engine | options | decode s | ms/word | states | proven | score − Moses (min / max) |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for method, engine, opts, r in rows:
        shown = ", ".join(f"{k}={v}" for k, v in opts.items()) or "defaults"
        if "refused" in r:
            lines.append(f"| {method} | {engine} | {shown} | refused (below) | | | | |")
            continue
        diffs = r["diffs"]
        span = f"{min(diffs):+.1e} / {max(diffs):+.1e}" if diffs else "none found"
        if "without" in opts:
            span = "n/a (another model)"
        if r["found"] < len(sentences):
            span += f" ({r['found']}/5 found)"
        lines.append(
            f"| {method} | {r['engine']} | {shown} | {r['seconds']:.2f} | {1000 * r['seconds'] / words:.1f} | "
            f"{r['states']:,} | {r['proven']}/5 | {span} |"
        )
    if binary is not None:
        lines += ["", *kenlm_summary(rows, words, {"moses.ini": load, BINLM: binary_load})]
    refusals = sorted({r["refused"] for *_, r in rows if "refused" in r})
    if refusals:
        lines += ["", "Refused, as the decoder says:", *(f"- {n}" for n in refusals)]
    notes = sorted({reason for *_, r in rows if "reasons" in r for reason in r["reasons"]})
    if notes:
        lines += ["", "Lines not proven or failed, as reported:", *(f"- {n}" for n in notes)]
    write_section(args.out, "bench_lexreo", marked("bench_lexreo", lines))
    log(f"wrote the bench_lexreo section of {args.out}")
    return 0


def _options(parser) -> None:
    parser.add_argument("--time-limit", type=float, default=600.0, help="native exact: seconds per sentence (default 600)")
    parser.add_argument(
        "--python-exact-limit", type=float, default=120.0, help="Python exact: seconds per sentence (default 120)"
    )


main = script("bench_lexreo", __doc__, run, out=DOCS / "benchmarks.md", needs_data=True, add_args=_options)

if __name__ == "__main__":
    sys.exit(main())
