#!/usr/bin/env python3
"""Print README.md's table of Moses' parameters: what ``decode`` and ``fstdecode moses`` do with
each moses.ini section and switch (from :data:`fstdecode.io.moses_params.PARAMETERS`).

    python -m scripts.moses_params_table

tests/unit/test_moses_params_table.py checks that README.md holds this table as printed.
"""

from __future__ import annotations

from fstdecode.io.moses_params import MODEL, NO_EFFECT, OUTPUT, PARAMETERS, REFUSED, SEARCH

#: What each parameter does in each command, where the treatment alone does not say it.
NOTES: dict[str, tuple[str, str]] = {
    # name: (decode, fstdecode moses)
    "feature": ("read", "read"),
    "weight": ("read", "read"),
    "weight-overwrite": ("read (section)", "read (section and switch)"),
    "distortion-limit": ("read; --distortion-limit wins", "read; -dl wins"),
    "early-distortion-cost": ("read", "read (section only)"),
    "input-factors": ("0 only, else refused", "0 only, else refused"),
    "mapping": ("one path (0 T 0) only, else refused", "one path (0 T 0) only, else refused"),
    "inputtype": ("0 only, else refused", "0 only, else refused"),
    "config": ("-f", "-f / -config"),
    "input-file": ("refused: decode reads stdin", "read"),
    "show-weights": ("read (--show-weights)", "read"),
    "ttable-limit": ("old format: read; beside [feature]: warned, as Moses ignores it",
                     "as decode; the -ttl switch sets every table's limit"),
    "distortion-file": ("old format: read; beside [feature]: warned, as Moses ignores it",
                        "old format: read; beside [feature]: warned, as Moses ignores it"),
    "n-best-list": ("the file is written (Moses' format)", "written; '-' is stdout, with no 1-best"),
    "print-alignment-info": ("honoured", "honoured"),
    "print-alignment-info-in-n-best": ("honoured in the n-best file", "honoured"),
    "include-segmentation-in-n-best": ("honoured in the n-best file", "honoured"),
    "alignment-output-file": ("honoured", "honoured"),
    "xml-input": ("honoured (constraint refused); --xml-input wins", "honoured (constraint refused)"),
    "labeled-n-best-list": ("honoured in the n-best file", "honoured"),
    "n-best-factor": ("20 only (Moses' default)", "20 only (Moses' default)"),
    "report-segmentation": ("refused: use fstdecode moses", "honoured"),
    "output-unknowns": ("honoured", "honoured"),
    "mark-unknown": ("refused: use fstdecode moses", "honoured (UNK prefix)"),
    "print-id": ("refused: use fstdecode moses", "honoured"),
    "output-hypo-score": ("refused: use fstdecode moses", "honoured"),
    "start-translation-id": ("refused: use fstdecode moses", "honoured"),
    "sort-word-alignment": ("0 only (Moses' default)", "0 only (Moses' default)"),
    "output-factors": ("0 only", "0 only"),
    "report-all-factors": ("honoured (one factor: no change)", "honoured (one factor: no change)"),
    "report-all-factors-in-n-best": ("honoured (one factor: no change)", "honoured (one factor: no change)"),
    "stack": ("warned: --beam-size", "honoured (default 200; 0: no limit)"),
    "beam-threshold": ("warned: --beam-threshold (a log margin)", "honoured: P becomes the margin ln(1/P)"),
    "max-phrase-length": ("warned", "honoured; refused if the table has longer source phrases"),
    "threads": ("warned: --threads N (or all)", "honoured: N sentences at once"),
    "search-algorithm": ("0 and 1 warned: --cube-pop-limit N; others refused",
                         "0 (normal); 1 (cube pruning) honoured; others refused"),
    "cube-pruning-pop-limit": ("warned: --cube-pop-limit N",
                               "honoured with -search-algorithm 1 (default 1000, Moses'); warned otherwise"),
    "verbose": ("warned: -v", "honoured: 0 errors, 1 warnings, 2 progress, 3 debug; at 1 and above (Moses' "
                "default) Moses' `Loading NAME` lines, its `Created input-output object` line and each line's "
                "`BEST TRANSLATION: ... [total=X] core=(...)` line on stderr, as Moses writes them (its regression "
                "harness reads `SCORE_n` there); Moses' -v 3 dump of the translation options is not written (warned)"),
}


def row(name: str) -> str:
    param = PARAMETERS[name]
    short = f"`{param.short}`" if param.short else ""
    if name in NOTES:
        decode, moses = NOTES[name]
    elif param.treatment == MODEL:
        decode = moses = "old format: read; beside [feature]: refused (a mixed file, as in Moses)"
    elif param.treatment == SEARCH:
        decode, moses = "warned", "warned: fstdecode's stack search has no such setting"
    elif param.treatment == NO_EFFECT:
        decode = moses = f"warned: {param.why}"
    elif param.treatment == REFUSED:
        decode = moses = f"refused: {param.why}"
    else:
        raise AssertionError(f"{name}: an {OUTPUT} parameter needs a note")
    return f"| `{name}` | {short} | {decode} | {moses} |"


def table() -> str:
    lines = ["| parameter | short | `decode` | `fstdecode moses` |", "|---|---|---|---|"]
    lines.extend(row(name) for name in PARAMETERS)
    lines.append("| any other name | | refused: not a Moses parameter | refused: not a Moses parameter |")
    return "\n".join(lines) + "\n"


def main() -> int:
    print(table(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
