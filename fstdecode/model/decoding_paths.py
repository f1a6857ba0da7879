"""Several phrase tables as Moses' alternative decoding paths (``[mapping] 0 T 0`` / ``1 T 1``).

Moses collects a span's translation options from each decoding path; with one table per path,
an option comes from one table, and the other tables' features are 0 for it (each score is a
log, so 0 adds nothing). docs/moses-reference/decoding-paths.md gives each rule with the Moses
source it follows. Here:

* :func:`check_mapping` accepts exactly one path per table (the tables in ``[feature]`` order);
  several tables on one path (Moses' factored or intersected steps) and generation steps are
  refused by name;
* :func:`alternatives` is the one table a model searches: every table's pairs (each limited
  on its own, by its own weights, before), each pair's scores placed in its table's columns
  and 0 in the others'. The same pair in two tables stays two options, as in Moses.

Invariant of the table :func:`alternatives` returns: ``num_scores`` is the sum of the tables'
columns; table ``j``'s pairs have their scores at columns ``offsets[j] .. offsets[j] + width_j``.
"""

from __future__ import annotations

from collections.abc import Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.io.moses_ini import FeatureLine, MosesConfig
from fstdecode.io.phrase_table import PhrasePair, PhraseTable

__all__ = ["DecodingPathError", "alternatives", "check_mapping", "offsets"]


class DecodingPathError(FstdecodeError):
    """A ``[mapping]`` fstdecode cannot decode as Moses would."""


def _steps(cfg: MosesConfig) -> list[tuple[int, str, int, int]]:
    """The ``[mapping]`` lines as ``(lineno, kind, path, table)``; ``T 0`` is path 0."""
    steps = []
    for text in cfg.other.get("mapping", ()):
        tokens = text.split()
        if len(tokens) == 2:
            tokens = ["0", *tokens]
        if len(tokens) != 3 or not tokens[0].isdigit() or not tokens[2].isdigit():
            raise DecodingPathError(f"{cfg.path}: [mapping] line {text!r}: write 'PATH T TABLE', e.g. 0 T 0")
        steps.append((0, tokens[1], int(tokens[0]), int(tokens[2])))
    return steps


def check_mapping(cfg: MosesConfig, tables: Sequence[FeatureLine]) -> None:
    """Refuse a ``[mapping]`` that is not one decoding path per phrase table (module docstring)."""
    steps = _steps(cfg)
    if not steps:
        if len(tables) > 1:
            raise DecodingPathError(
                f"{cfg.path}: {len(tables)} phrase tables and no [mapping]; give each table its own decoding path "
                "(" + " / ".join(f"{k} T {k}" for k in range(len(tables))) + "), Moses' alternative paths"
            )
        return
    for _, kind, _, _ in steps:
        if kind != "T":
            raise DecodingPathError(f"{cfg.path}: [mapping] step {kind!r}: generation steps (factored models) are "
                                    "not supported; use translation steps (T)")
    paths = [path for _, _, path, _ in steps]
    used = sorted(table for _, _, _, table in steps)
    if used != list(range(len(tables))):
        raise DecodingPathError(
            f"{cfg.path}: [mapping] uses tables {used} but the ini has {len(tables)} phrase table(s) (0 .. "
            f"{len(tables) - 1}); give each its own path: " + " / ".join(f"{k} T {k}" for k in range(len(tables)))
        )
    if len(set(paths)) != len(paths):
        raise DecodingPathError(
            f"{cfg.path}: [mapping] puts several tables on one decoding path (Moses then combines their options "
            "step by step, for factored models); fstdecode supports one table per path: "
            + " / ".join(f"{k} T {k}" for k in range(len(tables)))
        )


def offsets(widths: Sequence[int]) -> list[int]:
    """Where each table's columns start in the merged scores."""
    out, at = [], 0
    for width in widths:
        out.append(at)
        at += width
    return out


def alternatives(tables: Sequence[PhraseTable], name: str) -> PhraseTable:
    """The tables as one (module docstring): pairs in table order within each source phrase."""
    widths = [t.num_scores for t in tables]
    starts = offsets(widths)
    total = sum(widths)
    entries: dict[tuple[str, ...], list[PhrasePair]] = {}
    for table, start, width in zip(tables, starts, widths):
        before, after = (0.0,) * start, (0.0,) * (total - start - width)
        for source in table.sources():
            entries.setdefault(source, []).extend(
                PhrasePair(p.source, p.target, before + p.scores + after, p.unknown, p.alignment)
                for p in table.lookup(source)
            )
    return PhraseTable(name, total, {source: tuple(pairs) for source, pairs in entries.items()})
