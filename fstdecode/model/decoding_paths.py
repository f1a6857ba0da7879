"""Several phrase tables as Moses' alternative decoding paths (``[mapping] 0 T 0`` / ``1 T 1``).

Moses collects a span's translation options from each decoding path; with one table per path,
an option comes from one table, and the other tables' features are 0 for it (each score is a
log, so 0 adds nothing). docs/moses-reference/decoding-paths.md gives each rule with the Moses
source it follows. Here:

* :func:`check_mapping` says which tables the ``[mapping]`` decodes with: one path per table
  (the tables in ``[feature]`` order; absent, Moses' default ``0 T 0``, the first table only: the
  others stay loaded in Moses and their features 0). Several tables on one path (Moses'
  factored, intersected steps) and generation steps are refused by name;
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


def _steps(cfg: MosesConfig) -> list[tuple[str, int, int, str]]:
    """The ``[mapping]`` lines as ``(kind, path, table, text)``; ``T 0`` is path 0; absent, Moses'
    default ``0 T 0`` (StaticData::LoadDecodeGraphs)."""
    lines = cfg.other.get("mapping") or ("0 T 0",)
    steps = []
    for text in lines:
        tokens = text.split()
        if len(tokens) == 2:
            tokens = ["0", *tokens]
        if len(tokens) != 3 or not tokens[0].isdigit() or not tokens[2].isdigit():
            raise DecodingPathError(f"{cfg.path}: [mapping] line {text!r}: write 'PATH T TABLE', e.g. 0 T 0")
        steps.append((tokens[1], int(tokens[0]), int(tokens[2]), text))
    return steps


def check_mapping(cfg: MosesConfig, tables: Sequence[FeatureLine]) -> tuple[bool, ...]:
    """Which phrase tables the ``[mapping]`` decodes with (module docstring), in ``[feature]``
    order. A table it does not name is loaded by Moses but never looked up: its features stay 0
    (so a second table with no ``[mapping]``, whose default is ``0 T 0``, adds nothing); the
    caller warns about it. Refused, as Moses would misread them or fstdecode cannot follow:
    generation steps, several tables on one path (factored decoding: the intersection of their
    options), paths that do not count 0, 1, 2 ..., and a table index out of range."""
    steps = _steps(cfg)
    for kind, _, _, text in steps:
        if kind != "T":
            raise DecodingPathError(f"{cfg.path}: [mapping] {text!r}: a generation step (factored models) is not "
                                    "supported; use translation steps, 'PATH T TABLE'")
    paths = [path for _, path, _, _ in steps]
    if paths != list(range(len(paths))):
        if len(set(paths)) < len(paths):
            raise DecodingPathError(
                f"{cfg.path}: [mapping] puts several tables on one decoding path (Moses then decodes with the "
                "intersection of their options: factored decoding); fstdecode supports one table per path: "
                + " / ".join(f"{k} T {k}" for k in range(len(steps))))
        raise DecodingPathError(f"{cfg.path}: [mapping] paths {paths}: number them 0, 1, 2 ... (Moses: 'Malformed "
                                "mapping')")
    used = [False] * len(tables)
    for _, _, table, text in steps:
        if table >= len(tables):
            raise DecodingPathError(f"{cfg.path}: [mapping] {text!r}: no phrase table with index {table} (the ini "
                                    f"has {len(tables)}, numbered from 0 in [feature] order)")
        if used[table]:
            raise DecodingPathError(f"{cfg.path}: [mapping] names table {table} twice; give each table one path")
        used[table] = True
    return tuple(used)


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
