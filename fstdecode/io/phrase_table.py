"""Moses-format text phrase tables, read by the native core; and binarized ones
(``fstdecode binarize``, :mod:`fstdecode.io.binarized`) and Moses' binary tables (ProbingPT, compact, PhraseDictionaryBinary)
(native/probing_table.h), mapped and looked up by it.

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

from fstdecode._native import core as _core
from fstdecode.errors import FstdecodeError
from fstdecode.io.binarized import is_binary_table, open_binary_table, open_moses_table
from fstdecode.io.files import check_kind, decode_line, line_too_long, max_line_bytes
from fstdecode.io.table_filter import SourceFilter
from fstdecode.io.tokens import split_tokens
from fstdecode.io.values import parse_number

__all__ = [
    "LOWEST_SCORE",
    "SCORE_FORMATS",
    "PhrasePair",
    "PhraseTable",
    "PhraseTableError",
    "alignment_points",
    "line_error",
    "load_phrase_table",
    "native_line_limit",
    "native_vocabulary",
]

LOWEST_SCORE = -100.0
"""Moses' FloorScore: ln(0), and any feature value below it, becomes -100."""

SCORE_FORMATS = ("prob", "ln", "log10")
"""Accepted ``score_format`` values: probabilities (Moses), natural logs, log10."""

_FIELD_SEPARATOR = "|||"
#: Words no target phrase may hold (the core refuses them too): the LM's sentence markers.
_SENTENCE_MARKERS = ("<s>", "</s>")
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

    A table read from a file holds its pairs in the native core (``_core.PhraseStore``) and makes
    the :class:`PhrasePair` objects of a source on its first lookup; a table made in memory
    (``PhraseTable(path, num_scores, entries)``) holds them in a dict.

    Invariant: every pair stored under key ``s`` has ``pair.source == s`` and
    ``len(pair.scores) == num_scores``; no key maps to an empty tuple.
    """

    __slots__ = ("_path", "_num_scores", "_entries", "_size", "_max_source_len", "_store")

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
        self._store = None

    @classmethod
    def from_store(cls, store: "_core.PhraseStore") -> "PhraseTable":
        """The table of a store the core read (its pairs made into PhrasePairs on lookup)."""
        table = cls.__new__(cls)
        table._path = store.path
        table._num_scores = store.num_scores
        table._entries = {}  # a cache: source -> its pairs, made on first lookup
        table._size = store.pairs
        table._max_source_len = store.max_source_length
        table._store = store
        return table

    def __getstate__(self) -> tuple:
        if self._store is not None:
            return (self._path, self._num_scores, {}, self._size, self._max_source_len, self._store)
        return (self._path, self._num_scores, self._entries, self._size, self._max_source_len, None)

    def __setstate__(self, state: tuple) -> None:
        self._path, self._num_scores, self._entries, self._size, self._max_source_len, self._store = state

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

    @property
    def store(self) -> "_core.PhraseStore | None":
        """The core's store of a table read from a file (handles: :meth:`source_at`), else None."""
        return self._store

    def lookup(self, source: tuple[str, ...]) -> tuple[PhrasePair, ...]:
        """Pairs for ``source``; ``()`` when absent.

        Order: best first when a table limit was applied, otherwise file order.
        """
        source = tuple(source)
        pairs = self._entries.get(source)
        if pairs is not None or self._store is None:
            return pairs or ()
        handle = self._store.find(list(source))
        return () if handle < 0 else self.pairs_at(handle, source)

    def pairs_at(self, handle: int, source: tuple[str, ...] | None = None) -> tuple[PhrasePair, ...]:
        """The pairs of the store's source ``handle`` (a table read from a file)."""
        if source is None:
            source = self._store.source(handle)
        pairs = self._entries.get(source)
        if pairs is None:
            pairs = self._entries[source] = tuple(
                PhrasePair(source, target, scores, False, sys.intern(alignment))
                for target, scores, alignment in self._store.pairs_of(handle)
            )
        return pairs

    def limited(self, table_limit: int, ranker: Callable[[PhrasePair], float]) -> "PhraseTable":
        """A table keeping the ``table_limit`` best pairs per source phrase by ``ranker``.

        The ranking needs the model's weights, which need ``num_scores``: so
        the model reads the file once, then limits (ties keep file order). A ranker with a
        ``limit_store(store, table_limit)`` method (Moses' ranking,
        :func:`fstdecode.model.model.moses_ranker`) ranks a store in the core (unless it
        returns None).
        """
        if table_limit <= 0:
            return self
        native = getattr(ranker, "limit_store", None)
        if self._store is not None and native is not None:
            store = native(self._store, table_limit)
            if store is not None:
                return PhraseTable.from_store(store)
        return PhraseTable(
            self._path,
            self._num_scores,
            {src: _limit(list(self.lookup(src)), table_limit, ranker) for src in self.sources()},
        )

    def sources(self) -> Iterable[tuple[str, ...]]:
        """Distinct source phrases kept, in order of first appearance in the file."""
        if self._store is not None:
            return (self._store.source(h) for h in range(self._store.sources))
        return iter(self._entries.keys())

    def __contains__(self, source: object) -> bool:
        if self._store is not None:
            return isinstance(source, tuple) and self._store.find(list(source)) >= 0
        return source in self._entries

    def __len__(self) -> int:
        """Number of pairs kept (after the vocabulary filter and table limit)."""
        return self._size

    def __repr__(self) -> str:
        sources = self._store.sources if self._store is not None else len(self._entries)
        return (
            f"PhraseTable(path={self._path!r}, pairs={self._size}, "
            f"sources={sources}, num_scores={self._num_scores})"
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
        feature = convert(value)
        if feature == math.inf:  # a log10 value above ~1.3e307: times ln 10 it is no longer a float
            raise PhraseTableError(
                f"{where}: score {token!r} overflows when converted to a natural log; "
                "log10 scores are at most about 1.3e307"
            )
        features.append(feature)
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
    if "\0" in text:
        raise PhraseTableError(
            f"{where}: a NUL byte at column {len(text[: text.index(chr(0))].encode()) + 1}; "
            "a phrase table is text (is the file binary, or cut?)"
        )
    markers = sorted({w for w in target if w in _SENTENCE_MARKERS})
    if markers:
        raise PhraseTableError(
            f"{where}: the target phrase holds the LM sentence marker {' '.join(markers)}, which is no word of a "
            "translation; escape it (&lt;s&gt;, as Moses' escape-special-chars.perl writes it) or drop the line"
        )
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
        # ASCII digits only, as the core reads them ("²".isdigit() holds, but int("²") fails)
        if not (dash and a.isascii() and b.isascii() and a.isdigit() and b.isdigit()):
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


def _warn_repeats(path: str, repeats: tuple | None) -> None:
    """One warning on the ``fstdecode`` logger, once per table per process, about the lines that
    repeat an earlier ``(source, target)`` pair of their table (the core counts them: within each
    run of one source's lines, with line numbers, whether or not the filter keeps them; a source
    whose lines come back after other sources, over all its kept pairs, without line numbers).

    Moses keeps such lines as distinct options, and so does fstdecode; a repeat with other
    scores is most likely a mistake, so it is reported. ``repeats``: ``PhraseStore.repeats``.
    """
    if repeats is None or path in _REPEATS_REPORTED:
        return
    count, other_scores, lineno, original, pair, differs = repeats
    if not count:
        return
    _REPEATS_REPORTED.add(path)
    how = " with other scores" if differs else ""
    where = (
        f"{path}:{lineno}: '{pair}' repeats line {original}{how}" if lineno
        else f"{path}: '{pair}' is repeated{how}, in another block of its source phrase's lines"
    )
    _LOG.warning(
        "%s; %d line(s) of this table repeat an earlier (source, target) pair, %d of them with other "
        "scores; each is kept as a translation option of its own, as Moses keeps them",
        where, count, other_scores,
    )


def _check_line(text: str, where: str, score_format: str, expected: int | None, first_lineno: int | None) -> None:
    """Raise the PhraseTableError that one line of a table deserves, if any: the wording of every
    line error (the core finds the line, this says what is wrong with it)."""
    source, target, tokens, align_text = _split_line(text, where)
    if expected is None:
        if not tokens:
            raise PhraseTableError(f"{where}: no scores; the third field must hold at least one number")
        expected = len(tokens)
    _check_score_count(len(tokens), expected, first_lineno, where)
    _parse_scores(tokens, score_format, where)
    got = _alignment(align_text, where)
    _check_alignment(got, align_text, len(source), len(target), where)


def line_error(
    err: ValueError, path: str, error: type[FstdecodeError], check: Callable[[str, str, int | None, int | None], None]
) -> FstdecodeError:
    """The ``error`` for a ``_core.TableLineError`` (a line the core refused) or
    ``_core.TableFileError`` (a file it could not read, worded already).

    ``check(text, where, expected, first_lineno)`` raises the reader's error for the line (its
    one wording); should it find nothing wrong, the core's own account is the message. The
    line's bytes are decoded first, so invalid UTF-8 gets :func:`~fstdecode.io.files.decode_line`'s
    message.
    """
    if not isinstance(err, _core.TableLineError):
        return error(str(err))
    message, lineno, raw, expected, first = err.args
    where = f"{path}:{lineno}"
    try:
        text = decode_line(raw, where, error)
        check(text, where, None if expected < 0 or first == lineno else expected, first or None)
    except FstdecodeError as found:
        return found
    return error(message)


def load_phrase_table(
    path: str | os.PathLike[str],
    *,
    score_format: str = "prob",
    num_features: int | None = None,
    table_limit: int = 0,
    ranker: Callable[[PhrasePair], float] | None = None,
    vocabulary: Callable[[tuple[str, ...]], bool] | None = None,
    progress: Callable[[int, int], None] | None = None,
    mapped: Mapping[str, object] | None = None,
    warn_empty: bool = True,
) -> PhraseTable:
    """Read a Moses text phrase table (plain or gzip, UTF-8), in the native core.

    ``score_format``: ``"prob"`` (Moses; feature = ln(score), 0 -> LOWEST_SCORE),
    ``"ln"`` (as is) or ``"log10"`` (times ln 10). Every value is floored at
    :data:`LOWEST_SCORE`.

    ``num_features``: the number of scores every line must have; by default the
    first line's count.

    ``vocabulary``: if given, only source phrases for which it returns True are
    kept: a :class:`~fstdecode.io.table_filter.SourceFilter` (the phrases of an input, checked
    in the core) or any predicate on word tuples (called once per run of consecutive lines with
    the same source: once per source in a sorted table, as Moses writes them), so that memory is
    bounded by the pairs kept, not by the file. Every line is still validated, so the same file
    gives the same errors with or without a filter.

    ``table_limit``: if > 0, keep the ``table_limit`` best pairs per source
    phrase by ``ranker(pair)`` (higher is better; default: sum of scores),
    best first; ties keep file order. 0 keeps all pairs in file order.

    ``progress(bytes, lines)``: called as the file is read (bytes of the file on disk).

    A ``path`` that is one of Moses' binary tables (:func:`~fstdecode.io.binarized.moses_table_kind`:
    a ProbingPT folder, a compact ``.minphr``, PhraseDictionaryBinary's ``PREFIX.binphr.*``) is
    mapped and looked up: a ProbingPT or a compact table holds no source text, so it needs a
    SourceFilter ``vocabulary`` (its refusal otherwise names the file); its pairs are those of its
    text twin for the filter's phrases, in file order, with the scores as 32-bit floats.

    Blank lines are skipped. An empty file gives an empty table whose
    ``num_scores`` is ``num_features`` (or 0). An empty table, whether the file
    has no entries or the ``vocabulary`` filter kept none, is not an error but
    logs a warning on the ``fstdecode`` logger naming the file: every source
    word will then be copied through as an unknown word. Lines that repeat an earlier
    ``(source, target)`` pair are kept, as Moses keeps them, and reported in one warning per
    table and process (the first repeat's line, and how many there are; :func:`_warn_repeats`).
    """
    path_str = os.fspath(path)
    _check_arguments(path_str, score_format, num_features, table_limit)
    native_filter, keep = native_vocabulary(vocabulary)
    if mapped is not None and path_str in mapped:  # (checked when mapped)
        store = _mapped_phrases(mapped[path_str], score_format, num_features, native_filter, keep)
    elif (moses_table := open_moses_table(path_str, PhraseTableError)) is not None:
        store = _mapped_phrases(moses_table, score_format, num_features, native_filter, keep)
    elif is_binary_table(path_str):
        store = _binary_store(path_str, native_filter, keep)
    else:
        store = _text_store(path_str, score_format, num_features, native_filter, keep, progress)
        _warn_repeats(path_str, store.repeats)
    table = PhraseTable.from_store(store)
    if table_limit > 0:
        table = table.limited(table_limit, ranker if ranker is not None else _sum_of_scores)
    if warn_empty and not (isinstance(vocabulary, SourceFilter) and len(vocabulary) == 0):
        _warn_if_empty(table, store.runs)
    return table


def _text_store(
    path: str, score_format: str, num_features: int | None, native_filter: object, keep: object, progress: object
) -> "_core.PhraseStore":
    """The pairs of a text table the core reads (kept by the filter); its refused line worded here."""
    check_kind(path, PhraseTableError)
    try:
        return _core.read_phrase_table(
            path, SCORE_FORMATS.index(score_format), -1 if num_features is None else num_features,
            native_filter, keep, progress, *native_line_limit(),
        )
    except (_core.TableLineError, _core.TableFileError) as err:
        raise line_error(
            err, path, PhraseTableError, lambda text, where, n, first: _check_line(text, where, score_format, n, first)
        ) from None


def native_line_limit() -> tuple[int, str]:
    """``(max_line, too_long)`` for the core's table readers: the line limit and what follows
    ``path:line`` in its message (:func:`~fstdecode.io.files.line_too_long`)."""
    limit = max_line_bytes()
    return limit, line_too_long("", limit)


def _binary_store(path: str, native_filter: object, keep: object) -> "_core.PhraseStore":
    """The pairs a binarized phrase table holds for the filter (all without one)."""
    return _binary_phrases(open_binary_table(path, "phrases", PhraseTableError, "not a phrase table"), native_filter, keep)


def _mapped_phrases(
    table: object, score_format: str, num_features: int | None, native_filter: object, keep: object
) -> "_core.PhraseStore":
    """The pairs a mapped table holds for the filter: a binarized one, or a Moses binary table
    (:func:`~fstdecode.io.binarized.open_moses_table`), which holds probabilities (Moses reads no
    other score format from it) and must have ``num_features`` scores a pair."""
    if isinstance(table, _core.BinaryTable):
        return _binary_phrases(table, native_filter, keep)
    if score_format != "prob":
        raise PhraseTableError(f"{table.path}: score format {score_format!r} is for text tables; Moses' binary "
                               "tables hold probabilities (their ln is the feature), so give the default, prob")
    if num_features is not None and table.num_scores != num_features:
        raise PhraseTableError(f"{table.path}: num-features={num_features}, but the table holds {table.num_scores} "
                               "score(s) a pair; make num-features match")
    return _binary_phrases(table, native_filter, keep)


def _binary_phrases(binary: "_core.BinaryTable", native_filter: object, keep: object) -> "_core.PhraseStore":
    """The pairs the mapped phrase table ``binary`` holds for the filter (the GIL released meanwhile)."""
    try:
        return binary.phrases(native_filter, keep)
    except _core.BinaryFormatError as err:
        raise PhraseTableError(str(err)) from None


def native_vocabulary(
    vocabulary: Callable[[tuple[str, ...]], bool] | None,
) -> tuple["_core.SourceFilter | None", Callable[[list[str]], bool] | None]:
    """``(filter, keep)`` for the core's readers: a SourceFilter's native filter, or a predicate
    called with each source's words (as a tuple), or neither."""
    if vocabulary is None:
        return None, None
    native = getattr(vocabulary, "native", None)
    if native is not None:
        return native, None
    return None, lambda words: bool(vocabulary(tuple(words)))
