"""Moses-format text phrase tables.

A line is ``source ||| target ||| s1 s2 ... [||| alignment [||| counts [||| ...]]]``.
The alignment field (``0-0 1-1``: source-target word positions inside the pair, 0-based) is
kept, as one interned string per pair (tables repeat a few patterns); later fields are ignored.
The file may be plain or gzip-compressed (detected by its magic bytes) and must be UTF-8.

Invariants of a loaded :class:`PhraseTable`:

* every :class:`PhrasePair` has a non-empty source and target and exactly
  ``num_scores`` feature values;
* every feature value is a natural-log score, finite and ``>= LOWEST_SCORE``;
* ``lookup(source)`` returns pairs best first when a table limit was applied,
  otherwise in file order; duplicated ``(source, target)`` lines stay distinct
  pairs, as in Moses (its loader adds every line to the source's collection, and the
  table limit ranks them all), with one warning per table (:class:`_Repeats`).
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from fstdecode.errors import FstdecodeError
from fstdecode.io.files import numbered_lines
from fstdecode.io.tokens import split_tokens
from fstdecode.io.values import parse_number

__all__ = [
    "LOWEST_SCORE",
    "SCORE_FORMATS",
    "PhrasePair",
    "PhraseTable",
    "PhraseTableError",
    "alignment_points",
    "load_phrase_table",
]

LOWEST_SCORE = -100.0
"""Moses' FloorScore: ln(0), and any feature value below it, becomes -100."""

SCORE_FORMATS = ("prob", "ln", "log10")
"""Accepted ``score_format`` values: probabilities (Moses), natural logs, log10."""

_FIELD_SEPARATOR = "|||"
_LOG = logging.getLogger("fstdecode")
_LN10 = math.log(10.0)


class PhraseTableError(FstdecodeError):
    """A phrase table is missing, unreadable or malformed (message names file and line)."""


@dataclass(frozen=True)
class PhrasePair:
    """One translation option: a source phrase, a target phrase and its features.

    Invariant (for pairs made by :func:`load_phrase_table`): ``source`` and
    ``target`` are non-empty word tuples and ``scores`` are natural-log feature
    values floored at :data:`LOWEST_SCORE`. ``unknown`` is True only for
    copied-through unknown words, which are made elsewhere.
    """

    source: tuple[str, ...]
    target: tuple[str, ...]
    scores: tuple[float, ...]
    unknown: bool = False
    #: The word alignment inside the pair, Moses' ``0-0 1-1`` (source-target, 0-based), normalized:
    #: single spaces, each point once, sorted by (source, target); "" when the table gives none.
    alignment: str = ""


def alignment_points(pair: PhrasePair) -> tuple[tuple[int, int], ...]:
    """The pair's word alignment as ``(source, target)`` positions inside the pair, sorted."""
    if not pair.alignment:
        return ()
    return tuple((int(a), int(b)) for a, _, b in (point.partition("-") for point in pair.alignment.split()))


class PhraseTable:
    """Phrase pairs grouped by source phrase; read-only after construction.

    Invariant: every pair stored under key ``s`` has ``pair.source == s`` and
    ``len(pair.scores) == num_scores``; no key maps to an empty tuple.
    """

    __slots__ = ("_path", "_num_scores", "_entries", "_size", "_max_source_len")

    def __init__(
        self,
        path: str,
        num_scores: int,
        entries: Mapping[tuple[str, ...], tuple[PhrasePair, ...]],
    ) -> None:
        self._path = path
        self._num_scores = num_scores
        self._entries: dict[tuple[str, ...], tuple[PhrasePair, ...]] = {
            source: pairs for source, pairs in entries.items() if pairs
        }
        self._size = sum(len(pairs) for pairs in self._entries.values())
        self._max_source_len = max((len(s) for s in self._entries), default=0)

    @property
    def path(self) -> str:
        """The file the table was read from."""
        return self._path

    @property
    def num_scores(self) -> int:
        """Number of feature values of every pair."""
        return self._num_scores

    @property
    def max_source_len(self) -> int:
        """Length in words of the longest source phrase kept (0 when empty)."""
        return self._max_source_len

    def lookup(self, source: tuple[str, ...]) -> tuple[PhrasePair, ...]:
        """Pairs for ``source``; ``()`` when absent.

        Order: best first when a table limit was applied, otherwise file order.
        """
        return self._entries.get(tuple(source), ())

    def limited(self, table_limit: int, ranker: Callable[[PhrasePair], float]) -> "PhraseTable":
        """A table keeping the ``table_limit`` best pairs per source phrase by ``ranker``.

        The ranking needs the model's weights, which need ``num_scores``: so
        the model reads the file once, then limits (ties keep file order).
        """
        if table_limit <= 0:
            return self
        return PhraseTable(
            self._path,
            self._num_scores,
            {src: _limit(list(pairs), table_limit, ranker) for src, pairs in self._entries.items()},
        )

    def sources(self) -> Iterable[tuple[str, ...]]:
        """Distinct source phrases kept, in order of first appearance in the file."""
        return iter(self._entries.keys())

    def __contains__(self, source: object) -> bool:
        return source in self._entries

    def __len__(self) -> int:
        """Number of pairs kept (after the vocabulary filter and table limit)."""
        return self._size

    def __repr__(self) -> str:
        return (
            f"PhraseTable(path={self._path!r}, pairs={self._size}, "
            f"sources={len(self._entries)}, num_scores={self._num_scores})"
        )


# --------------------------------------------------------------------------
# Score conversion


def _floor(value: float) -> float:
    """Moses' FloorScore."""
    return value if value > LOWEST_SCORE else LOWEST_SCORE


def _from_prob(value: float) -> float:
    """ln(value) floored; the caller has rejected negative values."""
    return _floor(math.log(value)) if value > 0.0 else LOWEST_SCORE


def _from_ln(value: float) -> float:
    return _floor(value)


def _from_log10(value: float) -> float:
    return _floor(value * _LN10)


_CONVERTERS: dict[str, Callable[[float], float]] = {
    "prob": _from_prob,
    "ln": _from_ln,
    "log10": _from_log10,
}


def _parse_scores(
    tokens: list[str], score_format: str, where: str
) -> tuple[float, ...]:
    """Raw score tokens -> natural-log features floored at LOWEST_SCORE."""
    convert = _CONVERTERS[score_format]
    features = []
    for token in tokens:
        value = parse_number(
            token, "score", where, PhraseTableError,
            hint="; the third field must hold space-separated numbers",
        )
        if math.isnan(value) or value == math.inf:
            raise PhraseTableError(
                f"{where}: score {token!r} is not a finite number; "
                "write a finite value (0 for an impossible pair in prob format)"
            )
        if score_format == "prob" and value < 0.0:
            raise PhraseTableError(
                f"{where}: score {token!r} is a negative probability; "
                "prob-format scores must be >= 0 (use score_format='ln' or "
                "'log10' if the table holds log scores)"
            )
        features.append(convert(value))
    return tuple(features)


# --------------------------------------------------------------------------
# Reading


def _split_line(
    text: str, where: str
) -> tuple[tuple[str, ...], tuple[str, ...], list[str], str]:
    """Split a line into source words, target words, raw score tokens and the alignment field."""
    fields = text.split(_FIELD_SEPARATOR)
    if len(fields) < 3:
        raise PhraseTableError(
            f"{where}: expected 'source ||| target ||| scores', found "
            f"{len(fields)} field(s); separate the fields with '|||'"
        )
    source = tuple(sys.intern(w) for w in split_tokens(fields[0]))
    target = tuple(sys.intern(w) for w in split_tokens(fields[1]))
    if not source:
        raise PhraseTableError(f"{where}: empty source phrase; every pair needs source words")
    if not target:
        raise PhraseTableError(f"{where}: empty target phrase; every pair needs target words")
    return source, target, split_tokens(fields[2]), fields[3] if len(fields) > 3 else ""


def _alignment(text: str, where: str) -> tuple[str, int, int]:
    """``(normalized alignment, largest source position, largest target position)`` of an
    alignment field (see :attr:`PhrasePair.alignment`; -1 for none); the caller checks the
    positions against the pair's lengths.

    Raises PhraseTableError naming ``where`` for a point that is not ``i-j``.
    """
    points = set()
    for token in split_tokens(text):
        a, dash, b = token.partition("-")
        if not (dash and a.isdigit() and b.isdigit()):
            raise PhraseTableError(
                f"{where}: alignment point {token!r} is not 'i-j'; the fourth field holds "
                "source-target word positions such as '0-0 1-1'"
            )
        points.add((int(a), int(b)))
    normalized = sys.intern(" ".join(f"{i}-{j}" for i, j in sorted(points)))
    return normalized, max((i for i, _ in points), default=-1), max((j for _, j in points), default=-1)


def _check_alignment(got: tuple[str, int, int], text: str, source_len: int, target_len: int, where: str) -> None:
    """Raise PhraseTableError unless every point of ``got`` lies inside the pair."""
    if got[1] >= source_len or got[2] >= target_len:
        bad = next(
            t for t in split_tokens(text)
            if int(t.partition("-")[0]) >= source_len or int(t.partition("-")[2]) >= target_len
        )
        raise PhraseTableError(
            f"{where}: alignment point {bad!r} is outside the pair "
            f"({source_len} source and {target_len} target word(s), counted from 0)"
        )


def _check_score_count(
    found: int, expected: int, first_lineno: int | None, where: str
) -> None:
    """Raise unless a line has the expected number of scores."""
    if found == expected:
        return
    if first_lineno is None:
        reason = f"num-features is {expected}"
    else:
        reason = f"line {first_lineno} has {expected}"
    raise PhraseTableError(
        f"{where}: found {found} score(s) but {reason}; "
        "every line must have the same number of scores"
    )


def _check_arguments(
    path: str, score_format: str, num_features: int | None, table_limit: int
) -> None:
    if score_format not in _CONVERTERS:
        raise PhraseTableError(
            f"{path}: unknown score format {score_format!r}; use one of "
            + ", ".join(SCORE_FORMATS)
        )
    if num_features is not None and num_features < 1:
        raise PhraseTableError(
            f"{path}: num_features must be at least 1, got {num_features}"
        )
    if table_limit < 0:
        raise PhraseTableError(
            f"{path}: table_limit must be >= 0 (0 keeps all pairs), got {table_limit}"
        )


def _sum_of_scores(pair: PhrasePair) -> float:
    """Default ranking when no ranker is given: the unweighted sum of features."""
    return math.fsum(pair.scores)


def _limit(
    pairs: list[PhrasePair], table_limit: int, ranker: Callable[[PhrasePair], float]
) -> tuple[PhrasePair, ...]:
    """The ``table_limit`` best pairs, best first; ties keep file order (stable sort)."""
    ranked = sorted(pairs, key=ranker, reverse=True)  # reverse=True keeps stability
    return tuple(ranked[:table_limit])


def _warn_if_empty(table: PhraseTable, sources_read: int) -> None:
    """Warn on the ``fstdecode`` logger when ``table`` kept no pair."""
    if len(table):
        return
    if sources_read:
        why = f"none of its {sources_read} source phrase(s) passed the source-vocabulary filter"
    else:
        why = "the file has no entries"
    _LOG.warning(
        "%s: the phrase table is empty (%s); every source word will be copied through "
        "as an unknown word",
        table.path,
        why,
    )


#: Tables whose repeated pairs were reported already: a filtered decode reads its table once per
#: batch of input lines, and one warning per table is enough.
_REPEATS_REPORTED: set[str] = set()


class _Repeats:
    """Lines that repeat an earlier ``(source, target)`` pair of their table, for one warning.

    Moses keeps such lines as distinct options, and so does fstdecode; a repeat with other
    scores is most likely a mistake, so it is reported. Lines of one source phrase are compared
    within each run of consecutive lines (a table sorted by source, as Moses writes them, has
    one run per source), with their line numbers, whether or not the vocabulary filter keeps
    them; memory stays bounded by the largest run. A source whose lines come back after other
    sources (an unsorted table) is compared again over all its kept pairs once the file is
    read, without line numbers.
    """

    def __init__(self) -> None:
        self.count = 0
        self.other_scores = 0
        #: ``(line, line of the pair's first copy, "source ||| target", scores differ)``.
        self.first: tuple[int, int, str, bool] | None = None
        #: The current run's targets, each with its first line and scores (the caller fills it).
        self.run: dict[tuple[str, ...], tuple[int, tuple[float, ...]]] = {}
        self._within: dict[tuple[str, ...], tuple[int, int]] = {}
        self._reopened: dict[tuple[str, ...], None] = {}  # a dict: file order, so the warning is stable

    def new_run(self, reopened: tuple[str, ...] | None) -> None:
        """Start a run of lines of a new source; ``reopened``: that source, if it was kept before."""
        self.run.clear()
        if reopened is not None:
            self._reopened[reopened] = None

    def repeat(self, lineno: int, source: tuple[str, ...], target: tuple[str, ...], scores: tuple[float, ...]) -> None:
        """Line ``lineno`` repeats ``target``, already in :attr:`run`."""
        earlier = self.run[target]
        differs = earlier[1] != scores
        self.count += 1
        self.other_scores += differs
        count, other = self._within.get(source, (0, 0))
        self._within[source] = (count + 1, other + differs)
        if self.first is None:
            self.first = (lineno, earlier[0], f"{' '.join(source)} ||| {' '.join(target)}", differs)

    def finish(self, groups: Mapping[tuple[str, ...], list[PhrasePair]]) -> None:
        """Count the repeats of every reopened source over all its kept pairs (in place of its runs')."""
        for source in self._reopened:
            seen: dict[tuple[str, ...], tuple[float, ...]] = {}
            count = other = 0
            for pair in groups[source]:
                if pair.target not in seen:
                    seen[pair.target] = pair.scores
                    continue
                differs = seen[pair.target] != pair.scores
                count, other = count + 1, other + differs
                if self.first is None:
                    self.first = (0, 0, f"{' '.join(source)} ||| {' '.join(pair.target)}", differs)
            within = self._within.get(source, (0, 0))
            self.count += count - within[0]
            self.other_scores += other - within[1]

    def warn(self, path: str) -> None:
        """One warning on the ``fstdecode`` logger, once per table per process; none without repeats."""
        if not self.count or path in _REPEATS_REPORTED or self.first is None:
            return
        _REPEATS_REPORTED.add(path)
        lineno, original, pair, differs = self.first
        how = " with other scores" if differs else ""
        where = (
            f"{path}:{lineno}: '{pair}' repeats line {original}{how}" if lineno
            else f"{path}: '{pair}' is repeated{how}, in another block of its source phrase's lines"
        )
        _LOG.warning(
            "%s; %d line(s) of this table repeat an earlier (source, target) pair, %d of them with other "
            "scores; each is kept as a translation option of its own, as Moses keeps them",
            where, self.count, self.other_scores,
        )


def load_phrase_table(
    path: str | os.PathLike[str],
    *,
    score_format: str = "prob",
    num_features: int | None = None,
    table_limit: int = 0,
    ranker: Callable[[PhrasePair], float] | None = None,
    vocabulary: Callable[[tuple[str, ...]], bool] | None = None,
) -> PhraseTable:
    """Read a Moses text phrase table (plain or gzip, UTF-8).

    ``score_format``: ``"prob"`` (Moses; feature = ln(score), 0 -> LOWEST_SCORE),
    ``"ln"`` (as is) or ``"log10"`` (times ln 10). Every value is floored at
    :data:`LOWEST_SCORE`.

    ``num_features``: the number of scores every line must have; by default the
    first line's count.

    ``vocabulary``: if given, only source phrases for which it returns True are
    kept (e.g. a :class:`~fstdecode.io.table_filter.SourceFilter`, which keeps the
    phrases of an input). It is called once per run of consecutive lines with the
    same source (once per source in a sorted table, as Moses writes them), so that
    memory is bounded by the pairs kept, not by the file. Every line is still
    validated, so the same file gives the same errors with or without a filter.

    ``table_limit``: if > 0, keep the ``table_limit`` best pairs per source
    phrase by ``ranker(pair)`` (higher is better; default: sum of scores),
    best first; ties keep file order. 0 keeps all pairs in file order.

    Blank lines are skipped. An empty file gives an empty table whose
    ``num_scores`` is ``num_features`` (or 0). An empty table, whether the file
    has no entries or the ``vocabulary`` filter kept none, is not an error but
    logs a warning on the ``fstdecode`` logger naming the file: every source
    word will then be copied through as an unknown word. Lines that repeat an earlier
    ``(source, target)`` pair are kept, as Moses keeps them, and reported in one warning per
    table and process (the first repeat's line, and how many there are; :class:`_Repeats`).
    """
    path_str = os.fspath(path)
    _check_arguments(path_str, score_format, num_features, table_limit)
    groups: dict[tuple[str, ...], list[PhrasePair]] = {}
    # The filter's answer for the current run of lines with one source (Moses' tables are
    # sorted by source): a dict of every source would grow with the table, not the input.
    last_source: tuple[str, ...] | None = None
    keep = True
    runs = 0
    expected = num_features
    first_lineno: int | None = None
    patterns: dict[str, tuple[str, int, int]] = {"": ("", -1, -1)}
    repeats = _Repeats()
    for lineno, text in numbered_lines(path_str, PhraseTableError):
        if not text.strip():
            continue
        where = f"{path_str}:{lineno}"
        source, target, tokens, align_text = _split_line(text, where)
        if expected is None:
            if not tokens:
                raise PhraseTableError(
                    f"{where}: no scores; the third field must hold at least one number"
                )
            expected, first_lineno = len(tokens), lineno
        _check_score_count(len(tokens), expected, first_lineno, where)
        scores = _parse_scores(tokens, score_format, where)
        if source != last_source:
            last_source, runs = source, runs + 1
            keep = vocabulary is None or bool(vocabulary(source))
            repeats.new_run(source if keep and source in groups else None)
        if target in repeats.run:  # inline, not a call per line: this loop reads every line of big tables
            repeats.repeat(lineno, source, target, scores)
        else:
            repeats.run[target] = (lineno, scores)
        got = patterns.get(align_text)
        if got is None:
            got = patterns[align_text] = _alignment(align_text, where)
        if got[1] >= len(source) or got[2] >= len(target):
            _check_alignment(got, align_text, len(source), len(target), where)
        if keep:
            groups.setdefault(source, []).append(PhrasePair(source, target, scores, False, got[0]))
    repeats.finish(groups)
    repeats.warn(path_str)
    rank = ranker if ranker is not None else _sum_of_scores
    entries = {
        source: (_limit(pairs, table_limit, rank) if table_limit > 0 else tuple(pairs))
        for source, pairs in groups.items()
    }
    table = PhraseTable(path_str, expected or 0, entries)
    _warn_if_empty(table, runs)
    return table
