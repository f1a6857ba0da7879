"""Moses' stateless sparse features and sparse weights, as pure functions.

A sparse feature is a named count, ``FEATURE_detail`` (the feature's name, ``_``, a detail the
feature makes up: Moses' FName(description, name), moses/FeatureVector.h), that a phrase pair
adds to its derivation's score with the weight of that full name (no weight: 0). The kinds here
are evaluated on a phrase pair alone (Moses' EvaluateInIsolation, and EvaluateWithSourceContext
for WordTranslationFeature), so each is a term of the pair's own score:

* ``PhraseLengthFeature`` (moses/FF/PhraseLengthFeature.cpp, EvaluateInIsolation): one each of
  ``NAME_sI``, ``NAME_tJ`` and ``NAME_I,J`` for a pair of I source and J target words.
* ``TargetWordInsertionFeature`` (TargetWordInsertionFeature.cpp, ComputeFeatures): ``NAME_w``
  for each target word ``w`` that no alignment point of the pair reaches; with ``path=`` (a word
  list, one word a line) a word not in the list counts as ``NAME_OTHER``. ``<s>`` and ``</s>``
  never count, and a 1-to-1 pair with no alignment point adds nothing (Moses' special case).
* ``SourceWordDeletionFeature`` (SourceWordDeletionFeature.cpp): the same for the unaligned
  source words of the pair.
* ``WordTranslationFeature`` (WordTranslationFeature.cpp, EvaluateWithSourceContext): for each
  alignment point ``(i, j)`` of source word ``s`` and target word ``t`` (each ``OTHER`` when
  ``source-path=`` / ``target-path=`` restrict them and it is not in its list):
  ``simple=1`` (the default) adds ``NAME_s~t``; ``source-context=1`` adds, for every other word
  ``c`` of the sentence (only the listed ones when restricted), ``NAME_c,s~t`` if ``c`` comes
  before ``s`` in the sentence, else ``NAME_s,c~t``, and ``NAME_<s>,s~t`` when ``s`` is the
  sentence's first word; ``domain-trigger=1`` reads ``source-path=`` as one line of trigger words
  per document (split at spaces and tabs, as boost::split does) and adds ``NAME_d_s~t`` for each
  trigger ``d`` of the sentence's document (with ``source-context=1``: only for the triggers
  that occur elsewhere in the sentence); ``ignore-punctuation=1`` skips a point whose ``s`` or
  ``t`` starts with a byte of Moses' punctuation list, and such context words.
  ``simple=0 source-context=0`` (domain-trigger off) adds nothing at all. ``target-context=1``
  is refused: Moses throws "Can't use target words outside current translation option in a
  stateless feature" on the first aligned pair.
* The phrase table's sixth field (``dom_nc-5k 1``: ``name value`` pairs) is the table
  feature's own sparse scores, ``TABLE_name`` (``TranslationModel0_dom_nc-5k``): Moses' loader
  (moses/TranslationModel/RuleTable/LoaderStandard.cpp, after the counts field) calls
  ScoreComponentCollection::Assign(table, field), which sets each name (a repeated name: the
  last value).

Values are summed per full name (ScoreComponentCollection::PlusEquals). Moses keeps values and
weights in C ``float``; here they are doubles, and :func:`format_sparse` prints the float's digits.

Sparse weights come from the ``[weight-file]`` (``-weight-file``): one ``FULLNAME value`` a line
(FVector::load, moses/FeatureVector.cpp; StaticData::LoadData adds them to the weights), and
``[weight]`` lines that name no feature override them (StaticData::LoadSparseWeightsFromConfig).

Where this module is stricter than Moses, it says so at the function: Moses reads a bad number,
a missing value or a repeated name without a word (0, 0, the last), and fstdecode refuses them.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from fstdecode.errors import FstdecodeError
from fstdecode.io.files import numbered_lines
from fstdecode.io.moses_ini import FeatureLine, MosesIniError, moses_boolean
from fstdecode.io.values import parse_finite, parse_weight

__all__ = [
    "OTHER",
    "PUNCTUATION_BYTES",
    "SPARSE_KEYS",
    "PhraseLength",
    "SentenceContext",
    "SourceWordDeletion",
    "SparseConfig",
    "SparseFeatureError",
    "TargetWordInsertion",
    "WordTranslation",
    "add_features",
    "configure",
    "format_sparse",
    "producer_features",
    "read_weight_file",
    "read_word_list",
    "sparse_feature",
    "sparse_features",
    "sparse_score",
    "table_sparse",
]

#: The detail a restricted feature gives a word outside its list (Moses' ``"OTHER"``).
OTHER = "OTHER"

#: The bytes a word may start with to count as punctuation under ``ignore-punctuation=1``: the
#: UTF-8 bytes of Moses' list (WordTranslationFeature's constructor), which it tests against a
#: word's first byte only; so any word that starts with the lead byte 0xC2 or 0xE2 (``«``, ``€``)
#: counts, as in Moses.
PUNCTUATION_BYTES = frozenset("\"'!?¿·()#_,.:;•&@‑/\\0123456789~=".encode())

_COMMON = frozenset({"name", "tuneable", "tuneable-components", "num-features", "verbosity", "filterable",
                     "require-sorting-after-source-context"})

#: The keys each kind takes on its moses.ini line (its SetParameter, then FeatureFunction's).
SPARSE_KEYS: Mapping[str, frozenset[str]] = MappingProxyType({
    "PhraseLengthFeature": _COMMON,
    "TargetWordInsertionFeature": _COMMON | {"factor", "path"},
    "SourceWordDeletionFeature": _COMMON | {"factor", "path"},
    "WordTranslationFeature": _COMMON | {"input-factor", "output-factor", "simple", "source-context",
                                         "target-context", "ignore-punctuation", "domain-trigger", "texttype",
                                         "source-path", "target-path"},
})

_SENTENCE_MARKERS = ("<s>", "</s>")
_SPLIT_TRIGGERS = re.compile(r"[\t ]")


class SparseFeatureError(FstdecodeError):
    """A sparse feature's line, word list, weight file or table field is malformed (names file:line)."""


# --------------------------------------------------------------------------
# Configuration


@dataclass(frozen=True)
class PhraseLength:
    """``PhraseLengthFeature``: ``NAME_sI``, ``NAME_tJ``, ``NAME_I,J`` once per pair."""

    name: str
    tuneable: bool = True


@dataclass(frozen=True)
class TargetWordInsertion:
    """``TargetWordInsertionFeature``: ``NAME_w`` per unaligned target word; ``vocabulary`` None
    means every word is its own detail, else words outside it are :data:`OTHER`."""

    name: str
    vocabulary: frozenset[str] | None = field(default=None, repr=False)
    tuneable: bool = True


@dataclass(frozen=True)
class SourceWordDeletion:
    """``SourceWordDeletionFeature``: ``NAME_w`` per unaligned source word (``vocabulary`` as for
    :class:`TargetWordInsertion`)."""

    name: str
    vocabulary: frozenset[str] | None = field(default=None, repr=False)
    tuneable: bool = True


@dataclass(frozen=True)
class WordTranslation:
    """``WordTranslationFeature`` (module docstring). Invariant: ``source_vocabulary`` and
    ``target_vocabulary`` are both None (unrestricted) or both sets; ``domains`` (one trigger set
    per document, line order) is set iff ``domain_trigger``, and then the vocabularies are None
    (Moses reads ``source-path=`` as the domain file then, and ``target-path=`` not at all)."""

    name: str
    simple: bool = True
    source_context: bool = False
    ignore_punctuation: bool = False
    domain_trigger: bool = False
    source_vocabulary: frozenset[str] | None = field(default=None, repr=False)
    target_vocabulary: frozenset[str] | None = field(default=None, repr=False)
    domains: tuple[frozenset[str], ...] | None = field(default=None, repr=False)
    tuneable: bool = True


SparseFeature = PhraseLength | TargetWordInsertion | SourceWordDeletion | WordTranslation


@dataclass(frozen=True)
class SparseConfig:
    """The sparse features of a model, in moses.ini order (the order Moses prints them in)."""

    features: tuple[SparseFeature, ...] = ()

    @property
    def needs_context(self) -> bool:
        """Whether a pair's features depend on its sentence (source context or domain triggers)."""
        return any(isinstance(f, WordTranslation) and (f.source_context or f.domain_trigger) for f in self.features)


@dataclass(frozen=True)
class SentenceContext:
    """Where a pair is used: the sentence's words, the sentence position of the pair's first
    source word, and the sentence's document id (Moses' ``<seg docid=N>``; needed by
    ``domain-trigger=1`` only)."""

    words: tuple[str, ...]
    start: int
    document: int | None = None


def read_word_list(path: str, where: str, key: str = "path") -> frozenset[str]:
    """The words of a feature's word list ``path``, one a line, compared whole, as Moses reads
    them (getline into a set). Blank lines are skipped (Moses adds the empty word, which matches
    nothing). A line with a space or tab is an error naming ``path:line``: Moses would keep it
    as one word that no single word ever equals. Unlike Moses, a ``\\r\\n`` line end is dropped
    (:func:`~fstdecode.io.files.numbered_lines`; Moses keeps the ``\\r`` and so never matches)."""
    words = set()
    for lineno, text in numbered_lines(path, SparseFeatureError):
        if not text:
            continue
        if text != text.strip() or len(text.split()) != 1:
            raise SparseFeatureError(
                f"{path}:{lineno}: {text!r} is not one word: the {key}= list of the feature at {where} holds one "
                "word a line (Moses compares the whole line with a word, so it would never match)"
            )
        words.add(text)
    return frozenset(words)


def _read_domains(path: str) -> tuple[frozenset[str], ...]:
    """A ``domain-trigger=1`` file: line N (0-based) holds document N's trigger words, split at each
    space or tab (boost::split: two separators in a row, or one at an end, give the empty trigger)."""
    return tuple(frozenset(_SPLIT_TRIGGERS.split(text)) for _, text in numbered_lines(path, SparseFeatureError))


def _flag(args: Mapping[str, str], key: str, default: bool, where: str) -> bool:
    """A boolean key as Moses' Scan<bool> reads it (yes, y, true, 1, no, n, false, 0; any case)."""
    value = args.get(key)
    if value is None:
        return default
    try:
        return moses_boolean([value], key)
    except MosesIniError:
        raise SparseFeatureError(f"{where}: {key}={value!r} is not a boolean: write 1 or 0 (or true, false, yes, "
                                 "no, y, n)") from None


def _path(args: Mapping[str, str], key: str, folder: str | None) -> str | None:
    value = args.get(key)
    if value is None or folder is None or os.path.isabs(value):
        return value
    return os.path.normpath(os.path.join(folder, value))


def _check_keys(kind: str, args: Mapping[str, str], where: str) -> None:
    """Only the kind's keys; factors 0 (surface words); no dense values (``num-features=0``)."""
    allowed = SPARSE_KEYS[kind]
    for key, value in args.items():
        if key not in allowed:
            raise SparseFeatureError(f"{where}: {kind} does not take {key!r} (Moses: \"Unknown argument\"); "
                                     f"accepted keys: {', '.join(sorted(allowed))}")
        if key in ("factor", "input-factor", "output-factor") and value != "0":
            raise SparseFeatureError(f"{where}: {key}={value!r}: only factor 0 (surface words) is supported")
    if args.get("num-features", "0") != "0":
        raise SparseFeatureError(f"{where}: {kind} has sparse features only; remove num-features={args['num-features']}")
    if "tuneable-components" in args:
        raise SparseFeatureError(f"{where}: {kind} has no dense feature for tuneable-components= to tune (Moses "
                                 "refuses it too: the list must have one value per dense feature); remove it")


def sparse_feature(kind: str, name: str, args: Mapping[str, str], where: str,
                   folder: str | None = None) -> SparseFeature:
    """The feature of a ``[feature]`` line of ``kind`` (a key of :data:`SPARSE_KEYS`) named ``name``
    with its ``key=value`` ``args``; ``where`` (``path:line``) starts every error. Relative
    ``path=``, ``source-path=`` and ``target-path=`` are taken from ``folder`` when given (else as
    written). The word lists are read here; a missing one is an error (Moses: "could not open
    file"). ``factor=`` defaults to 0 (Moses leaves it unset)."""
    if kind not in SPARSE_KEYS:
        raise SparseFeatureError(f"{where}: {kind!r} is not a sparse feature ({', '.join(SPARSE_KEYS)})")
    _check_keys(kind, args, where)
    tuneable = _flag(args, "tuneable", True, where)
    if kind == "PhraseLengthFeature":
        return PhraseLength(name, tuneable)
    if kind in ("TargetWordInsertionFeature", "SourceWordDeletionFeature"):
        path = _path(args, "path", folder)
        vocabulary = None if path is None else read_word_list(path, where)
        cls = TargetWordInsertion if kind == "TargetWordInsertionFeature" else SourceWordDeletion
        return cls(name, vocabulary, tuneable)
    return _word_translation(name, args, where, folder, tuneable)


def _word_translation(name: str, args: Mapping[str, str], where: str, folder: str | None,
                      tuneable: bool) -> WordTranslation:
    """WordTranslationFeature's line: its flags, then its files as its Load reads them."""
    if _flag(args, "target-context", False, where):
        raise SparseFeatureError(
            f"{where}: WordTranslationFeature target-context=1 is not supported: Moses stops on it too (\"Can't use "
            "target words outside current translation option in a stateless feature\"); set target-context=0"
        )
    flags = {key: _flag(args, key, default, where) for key, default in
             (("simple", True), ("source-context", False), ("ignore-punctuation", False), ("domain-trigger", False))}
    source, target = _path(args, "source-path", folder), _path(args, "target-path", folder)
    domains = vocab_s = vocab_t = None
    if source is not None and flags["domain-trigger"]:
        domains = _read_domains(source)
    elif source is not None:
        if target is None:
            raise SparseFeatureError(f"{where}: WordTranslationFeature source-path= needs target-path= too (Moses "
                                     "opens both lists); add it, or remove source-path=")
        vocab_s = read_word_list(source, where, "source-path")
        vocab_t = read_word_list(target, where, "target-path")
    if flags["domain-trigger"] and domains is None:
        raise SparseFeatureError(f"{where}: WordTranslationFeature domain-trigger=1 needs source-path= (one line of "
                                 "trigger words per document)")
    return WordTranslation(name, flags["simple"], flags["source-context"], flags["ignore-punctuation"],
                           flags["domain-trigger"], vocab_s, vocab_t, domains, tuneable)


def configure(lines: Iterable[FeatureLine], ini_path: str, folder: str | None = None) -> SparseConfig:
    """The sparse features among a moses.ini's ``[feature]`` lines (the others are skipped), in file
    order; errors name ``ini_path:line``."""
    return SparseConfig(tuple(sparse_feature(line.kind, line.name, line.args, f"{ini_path}:{line.lineno}", folder)
                              for line in lines if line.kind in SPARSE_KEYS))


# --------------------------------------------------------------------------
# Features of one phrase pair


def table_sparse(table: str, text: str, where: str) -> dict[str, float]:
    """The phrase table's sixth field ``text`` (``name value ...``) as ``TABLE_name -> value``; a
    repeated name keeps its last value (Moses' Assign). Unlike Moses, which reads a bad or missing
    value as 0 and drops the rest of the field, a name without a finite number after it is an
    error naming ``where``."""
    tokens = text.split()
    if len(tokens) % 2:
        raise SparseFeatureError(f"{where}: the sparse-feature field {text.strip()!r} ends with a name without a "
                                 "value; write name value pairs")
    out: dict[str, float] = {}
    for name, value in zip(tokens[::2], tokens[1::2]):
        out[f"{table}_{name}"] = parse_finite(value, f"sparse feature {name}", where, SparseFeatureError)
    return out


def _count(out: dict[str, float], name: str, value: float = 1.0) -> None:
    out[name] = out.get(name, 0.0) + value


def _restricted(word: str, vocabulary: frozenset[str] | None) -> str:
    return word if vocabulary is None or word in vocabulary else OTHER


def _unaligned(feature: TargetWordInsertion | SourceWordDeletion, words: Sequence[str], aligned: set[int],
               one_to_one_unaligned: bool, out: dict[str, float]) -> None:
    if one_to_one_unaligned:  # Moses' special case (meant for unknown words): a 1-1 pair with no point adds nothing
        return
    for i, word in enumerate(words):
        if i not in aligned and word not in _SENTENCE_MARKERS:
            _count(out, f"{feature.name}_{_restricted(word, feature.vocabulary)}")


def _punctuation(word: str) -> bool:
    return bool(word) and word.encode()[0] in PUNCTUATION_BYTES


def _word_translation_features(f: WordTranslation, source: Sequence[str], target: Sequence[str],
                               alignment: Iterable[tuple[int, int]], context: SentenceContext | None,
                               out: dict[str, float]) -> None:
    """WordTranslationFeature's features of one pair (module docstring), point by point."""
    if (f.source_context or f.domain_trigger) and context is None:
        raise SparseFeatureError(f"{f.name}: source-context and domain-trigger need the pair's sentence")
    triggers = _document_triggers(f, context) if f.domain_trigger else frozenset()
    for i, j in alignment:
        s, t = source[i], target[j]
        if f.ignore_punctuation and (_punctuation(s) or _punctuation(t)):
            continue
        s, t = _restricted(s, f.source_vocabulary), _restricted(t, f.target_vocabulary)
        if f.simple:
            _count(out, f"{f.name}_{s}~{t}")
        if f.domain_trigger and not f.source_context:
            for d in triggers:
                _count(out, f"{f.name}_{d}_{s}~{t}")
        if f.source_context:
            assert context is not None  # checked above
            _source_context(f, s, t, context.start + i, context.words, triggers, out)


def _document_triggers(f: WordTranslation, context: SentenceContext) -> frozenset[str]:
    assert f.domains is not None  # a domain-trigger feature has its domains (WordTranslation's invariant)
    doc = context.document
    if doc is None or not 0 <= doc < len(f.domains):
        raise SparseFeatureError(
            f"{f.name}: domain-trigger=1 needs the sentence's document id (<seg docid=N>, 0 <= N < "
            f"{len(f.domains)}, the lines of its source-path= file); got {doc}"
        )
    return f.domains[doc]


def _source_context(f: WordTranslation, s: str, t: str, at: int, sentence: Sequence[str],
                    triggers: frozenset[str], out: dict[str, float]) -> None:
    """The source-context features of the point whose source word ``s`` is sentence word ``at``."""
    if not f.domain_trigger and at == 0:
        _count(out, f"{f.name}_<s>,{s}~{t}")
    for k, c in enumerate(sentence):
        if k == at or (f.ignore_punctuation and _punctuation(c)):
            continue
        if f.domain_trigger:
            if c in triggers:
                _count(out, f"{f.name}_{c}_{s}~{t}")
        elif f.source_vocabulary is None or c in f.source_vocabulary:
            _count(out, f"{f.name}_{c},{s}~{t}" if k < at else f"{f.name}_{s},{c}~{t}")


def sparse_features(
    pair_source_words: Sequence[str],
    pair_target_words: Sequence[str],
    alignment_points: Iterable[tuple[int, int]],
    table_sparse_field: Mapping[str, float] | None,
    config: SparseConfig,
    context: SentenceContext | None = None,
) -> dict[str, float]:
    """Every sparse feature of one phrase pair under ``config``: full name -> value.

    ``alignment_points`` are the pair's ``(source, target)`` word positions (0-based, in range;
    an unknown word's pair has ``(0, 0)``, as Moses gives it); ``table_sparse_field`` is the
    table's field as :func:`table_sparse` returns it (or None). ``context`` is needed only when
    ``config.needs_context``. The result is the sum, per name, of the table's values and each
    configured feature's counts; it is empty when nothing fires.
    """
    out: dict[str, float] = dict(table_sparse_field or {})
    points = tuple(alignment_points)
    one_to_one_unaligned = len(pair_source_words) == 1 and len(pair_target_words) == 1 and not points
    for f in config.features:
        if isinstance(f, PhraseLength):
            n, m = len(pair_source_words), len(pair_target_words)
            for detail in (f"s{n}", f"t{m}", f"{n},{m}"):
                _count(out, f"{f.name}_{detail}")
        elif isinstance(f, TargetWordInsertion):
            _unaligned(f, pair_target_words, {j for _, j in points}, one_to_one_unaligned, out)
        elif isinstance(f, SourceWordDeletion):
            _unaligned(f, pair_source_words, {i for i, _ in points}, one_to_one_unaligned, out)
        else:
            _word_translation_features(f, pair_source_words, pair_target_words, points, context, out)
    return out


def add_features(parts: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """The per-name sums of ``parts`` (a derivation's pairs, in order): Moses' PlusEquals."""
    out: dict[str, float] = {}
    for part in parts:
        for name, value in part.items():
            _count(out, name, value)
    return out


# --------------------------------------------------------------------------
# Weights, score, n-best text


def read_weight_file(path: str) -> dict[str, float]:
    """The sparse weights of a ``[weight-file]``: ``FULLNAME value`` a line (FVector::load), a line
    that starts with ``#`` a comment; blank lines are skipped. Each error names ``path:line``: a
    line without exactly a name and a value, a value that is no finite number (or is over
    :data:`~fstdecode.io.values.MAX_WEIGHT`), a name given twice. Moses reads the first two tokens
    and no more, a bad or missing value as 0, and a repeated name's last value; fstdecode refuses
    all three."""
    weights: dict[str, float] = {}
    seen: dict[str, int] = {}
    for lineno, text in numbered_lines(path, SparseFeatureError):
        if text.startswith("#") or not text.strip():
            continue
        where = f"{path}:{lineno}"
        tokens = text.split()
        if len(tokens) != 2:
            raise SparseFeatureError(f"{where}: {text.strip()[:80]!r}: write one sparse weight a line, "
                                     "FEATURE_name value (e.g. pl_s1 0.05)")
        name, value = tokens
        if name in seen:
            raise SparseFeatureError(f"{where}: {name} has a weight already, on line {seen[name]}; keep one")
        seen[name] = lineno
        weights[name] = parse_weight(value, f"the weight of {name}", where, SparseFeatureError)
    return weights


def sparse_score(features: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """Σ value × weight over ``features`` (a feature without a weight counts 0, as in Moses)."""
    return sum(value * weights.get(name, 0.0) for name, value in features.items())


def producer_features(features: Mapping[str, float], producer: str) -> dict[str, float]:
    """The features Moses prints under feature ``producer``: those whose full name starts with
    ``producer_`` (ScoreComponentCollection::GetVectorForProducer's prefix test)."""
    prefix = producer + "_"
    return {name: value for name, value in features.items() if name.startswith(prefix)}


def _float_text(value: float) -> str:
    """``value`` as Moses' ostream prints a C float: rounded to single precision, 6 significant digits."""
    single: float = struct.unpack("f", struct.pack("f", value))[0]
    return f"{single:.6g}"


def format_sparse(features: Mapping[str, float]) -> str:
    """``features`` as an n-best line holds them: `` NAME= value`` each (a space before the name,
    one after ``=``; ScoreComponentCollection::OutputFeatureScores), sorted by name in byte order.

    Moses prints a feature's sparse values in its hash map's order (boost::unordered_map keyed by
    the order names were first met), which no input fixes; fstdecode sorts them, the order Moses'
    regression harness compares them in. A value that sums to 0 is still printed (Moses keeps it)."""
    return "".join(f" {name}= {_float_text(features[name])}" for name in sorted(features))
