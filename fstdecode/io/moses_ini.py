"""A subset of Moses' ``moses.ini`` configuration format.

The file is a list of sections: a ``[name]`` line followed by value lines up to
the next section. Text from ``#`` to the end of a line is a comment (as in
Moses); blank lines are ignored. A section may appear more than once; its lines
are then concatenated.

Understood sections:

* ``[feature]``: ``Kind key=value ...``, one feature function per line. Only the
  kinds in :data:`SUPPORTED_KINDS` are accepted; any other kind (for example
  ``PhraseDictionaryBinary``, ``InputFeature``) is an
  error, because ignoring a feature would silently change the model's scores.
  ``LexicalReordering`` lines are checked here for their keys only; their
  ``type=`` is parsed by :mod:`fstdecode.model.lexical_reordering`.
  ``tuneable=`` (a boolean) and ``tuneable-components=`` (one boolean per dense
  feature) are read as Moses reads them (:func:`_check_tuneable`); they change
  what ``-show-weights`` and n-best lists print, not the search. Moses'
  LexicalReordering refuses both keys, and so does this reader.
* ``[weight]``: ``Name= v1 v2 ...``, one line per feature; every value a finite
  number. A declared feature may lack its line (the model then warns).
* ``[distortion-limit]``: an integer >= 0, or ``-1`` for no limit (kept as
  -1); an absent section is stored as ``None`` (Moses' default then applies).
* ``[early-distortion-cost]``: yes/no/true/false/y/n/1/0; a section with no
  value means yes (Moses treats a bare boolean switch as true).
* ``[n-best-list]``: an output path and a size, then optionally the word ``distinct``
  (distinct translations only), one value a line or all on one.

The old format, which Moses still reads, is understood too: ``[ttable-file]``,
``[ttable-limit]``, ``[lmodel-file]``, ``[distortion-file]`` and the weight sections
``[weight-d]``, ``[weight-l]``, ``[weight-t]``, ``[weight-w]``, ``[weight-u]``,
``[weight-p]``. They are converted into the [feature] and [weight] lines that Moses
derives from them (the rule is stated above :data:`OLD_FORMAT_SECTIONS`), which are then
checked like a new-format file's. A file that mixes the two formats is an error, as in Moses.

The settings of Moses' own search (:data:`SEARCH_ONLY_SECTIONS`: ``[search-algorithm]``,
``[stack]``, ``[cube-pruning-pop-limit]``, ``[threads]``, ...) are listed in
:attr:`MosesConfig.ignored`, for a warning (as are [ttable-limit] and [distortion-file]
in a file with [feature] lines, which Moses ignores there too); a ``[search-algorithm]`` other than 0 or 1
(phrase-based) is an error.

Every other section is kept verbatim in :attr:`MosesConfig.other`.

``${NAME}`` (any name) in any value is replaced by the absolute path of the
folder holding the ini file, and relative ``path=`` values of features are
resolved against that folder (``decode``'s rule), or, with ``paths="cwd"``
(``fstdecode moses``), against the working directory alone, as Moses opens them
(:data:`PATH_RULES`). The n-best path is an output file and is kept as written
(Moses opens it relative to the working directory). Whether feature files exist
is not checked here, except that under "cwd" a relative path not found from the
working directory is an error (Moses fails there too); their loaders report other
missing files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from fstdecode.errors import FstdecodeError
from fstdecode.io.files import numbered_lines
from fstdecode.io.moses_params import (
    HONOURED_SEARCH, NO_EFFECT, NOT_IN_STACK_SEARCH, PARAMETERS, REFUSED, SEARCH, SHORT_NAMES, long_name,
)
from fstdecode.io.values import parse_weight

__all__ = [
    "DEFAULT_TABLE_LIMIT",
    "OLD_FORMAT_SECTIONS",
    "PHRASE_TABLE_KINDS",
    "SEARCH_ONLY_SECTIONS",
    "SUPPORTED_KINDS",
    "UNTUNEABLE_BY_DEFAULT",
    "FeatureLine",
    "MosesConfig",
    "MosesIniError",
    "ConvertedIni",
    "PATH_RULES",
    "load_moses_ini",
    "moses_file_exists",
    "moses_boolean",
    "old_format_lines",
    "parse_weight_overwrite",
]

DEFAULT_TABLE_LIMIT = 20
"""Moses' table-limit of a PhraseDictionaryMemory without ``table-limit=`` (its
``PhraseDictionary`` constructor's default); :func:`fstdecode.model.model.load_model`
uses it for such a line too."""

_COMMON_KEYS = frozenset({"name", "tuneable", "tuneable-components", "num-features"})

#: The kinds Moses makes untuneable unless their line says ``tuneable=true``
#: (UnknownWordPenaltyProducer sets m_tuneable false before it reads its line).
UNTUNEABLE_BY_DEFAULT = frozenset({"UnknownWordPenalty"})

#: The keys a kind refuses although other kinds take them, and why (Moses' own refusal).
_REFUSED_KEYS: Mapping[tuple[str, str], str] = MappingProxyType(
    {("LexicalReordering", key): "Moses' LexicalReordering refuses it too (\"Unknown argument "
     f"{key}\"): it reads only its own keys, so its weights are always tuned; remove it"
     for key in ("tuneable", "tuneable-components")}
)

SUPPORTED_KINDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "Distortion": _COMMON_KEYS,
        "KENLM": _COMMON_KEYS | {"path", "order", "factor", "lazyken"},
        "LexicalReordering": _COMMON_KEYS - {"tuneable", "tuneable-components"}
        | {"path", "type", "input-factor", "output-factor", "default-scores", "property-index"},
        "PhraseDictionaryMemory": _COMMON_KEYS
        | {"path", "table-limit", "input-factor", "output-factor"},
        "ProbingPT": _COMMON_KEYS | {"path", "table-limit", "input-factor", "output-factor", "load"},
        "PhraseDictionaryCompact": _COMMON_KEYS | {"path", "table-limit", "input-factor", "output-factor"},
        "PhraseDictionaryBinary": _COMMON_KEYS | {"path", "table-limit", "input-factor", "output-factor"},
        "PhrasePenalty": _COMMON_KEYS,
        "UnknownWordPenalty": _COMMON_KEYS,
        "WordPenalty": _COMMON_KEYS,
    }
)
"""Feature kinds this decoder implements, each with the keys it accepts."""

_REQUIRED_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"KENLM": ("path",), "PhraseDictionaryMemory": ("path", "num-features"), "ProbingPT": ("path", "num-features"),
     "PhraseDictionaryCompact": ("path", "num-features"), "PhraseDictionaryBinary": ("path", "num-features"),
     "LexicalReordering": ("type",)}
)

#: The kinds of phrase table a moses.ini may name (each a PhraseDictionary of Moses): the text
#: table, and Moses' binary formats that fstdecode reads natively
#: (:func:`fstdecode.io.binarized.moses_table_kind` tells them by their path).
PHRASE_TABLE_KINDS = ("PhraseDictionaryMemory", "ProbingPT", "PhraseDictionaryCompact", "PhraseDictionaryBinary")

#: ProbingPT's ``load=`` values (how Moses brings its files in: moses/TranslationModel/ProbingPT.cpp,
#: SetParameter); fstdecode maps them whatever the value.
_PROBING_LOADS = ("lazy", "populate_or_lazy", "populate_or_read", "populate", "read", "parallel_read")

_ON_DISK = ("Moses' OnDisk tables (hierarchical and syntax models) are not read: give a phrase-based model's "
            "text table (phrase-table.gz) with PhraseDictionaryMemory, or its ProbingPT, compact or binary table")

# Moses' SRILM and IRSTLM wrappers score n-grams otherwise than its KenLM one (moses/LM/Ken.cpp,
# which fstdecode's LM reader follows), so reading their files as KenLM would change the LM feature
# without a word. Each refusal, of a [feature] line or of an old-format [lmodel-file] type (which
# Moses converts into that [feature] line: Parameter::ConvertWeightArgsLM), says how to read the
# file with KenLM instead: as Moses then reads it too.
# * SRILM (moses/LM/SRI.cpp, LanguageModelSRI::GetValue): every log probability goes through
#   FloorScore (at least LOWEST_SCORE, -100), and a word the LM lacks is SRILM's <unk> index: with
#   no <unk> in the file its probability is 0, floored to -100, where KenLM gives the missing <unk>
#   log10 -100 (-230.26); a <unk> the file has, SRILM keeps and uses as KenLM does. Moses knows
#   SRILM only when built with it (moses/FF/Factory.cpp, LM_SRI).
# * IRSTLM (moses/LM/IRST.cpp, LanguageModelIRST::GetValue): IRSTLM's own dictionary gives an
#   unknown word its OOV code and the dub= penalty, and a short context is padded with </s> <s>.
_KENLM_INSTEAD = ("to read the file with KenLM, write KENLM for {kind} on its [feature] line, or make the "
                  "[lmodel-file] type 8: Moses then reads it with KenLM too")
_LM_REFUSED: Mapping[str, str] = MappingProxyType(
    {
        "SRILM": "Moses' SRILM wrapper, [lmodel-file] type 0, floors each log probability at -100 and scores a word "
        "missing from an LM without <unk> -100, where KenLM scores it -230.26; " + _KENLM_INSTEAD.format(kind="SRILM"),
        "IRSTLM": "Moses' IRSTLM wrapper, [lmodel-file] type 1, scores unknown words by IRSTLM's rule, with its OOV "
        "code and dub= penalty, and pads short contexts with </s> <s>, unlike KenLM; "
        + _KENLM_INSTEAD.format(kind="IRSTLM"),
    }
)
"""Why each of Moses' other n-gram LMs is refused, and how to read its file with KenLM instead."""

_HINTS: Mapping[str, str] = MappingProxyType(
    {
        "PhraseDictionaryOnDisk": _ON_DISK,
        "InputFeature": "lattice and confusion-network input is not supported; "
        "for plain-text input remove this line and its weight",
        "SRILM": _LM_REFUSED["SRILM"],
        "IRSTLM": _LM_REFUSED["IRSTLM"],
        "PhraseDictionaryMultiModel": "several tables combined into one are not supported",
    }
)

#: Kinds with more than one dense feature (their count is ``num-features=``).
_MULTI_FEATURE_KINDS = frozenset({*PHRASE_TABLE_KINDS, "LexicalReordering"})

_FACTOR_KEYS = ("factor", "input-factor", "output-factor")
_BOOLEANS: Mapping[str, bool] = MappingProxyType(
    {"yes": True, "y": True, "true": True, "1": True,
     "no": False, "n": False, "false": False, "0": False}
)
_SECTION_RE = re.compile(r"^\[([^\[\]]+)\]$")
_VARIABLE_RE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


class MosesIniError(FstdecodeError):
    """A moses.ini file is missing or malformed (message names file and line)."""


@dataclass(frozen=True)
class FeatureLine:
    """One ``[feature]`` line.

    Invariant (for lines made by :func:`load_moses_ini`): ``kind`` is in
    :data:`SUPPORTED_KINDS`; ``args`` holds only keys that kind accepts, with
    ``${...}`` substituted and ``path`` made absolute; integer keys hold valid
    integers; ``name`` is unique within the file.
    """

    kind: str
    name: str
    args: Mapping[str, str] = field(hash=False)
    lineno: int

    @property
    def num_features(self) -> int:
        """Number of dense feature values (``num-features=``, default 1; a LexicalReordering
        line without it has as many as its ``type=`` gives, which the model checks)."""
        return int(self.args.get("num-features", "1"))

    @property
    def path(self) -> str | None:
        """The absolute ``path=`` value, or None."""
        return self.args.get("path")

    @property
    def tuneable(self) -> bool:
        """Whether Moses tunes the feature (``-show-weights`` prints its weights, n-best lists its
        values): ``tuneable=`` (validated at load), else true but for :data:`UNTUNEABLE_BY_DEFAULT`."""
        value = self.args.get("tuneable")
        return self.kind not in UNTUNEABLE_BY_DEFAULT if value is None else _BOOLEANS[value.lower()]

    @property
    def tuneable_components(self) -> tuple[bool, ...]:
        """``tuneable-components=``: whether each dense feature is tuned (validated at load: one
        boolean per feature), or () when the line has none (every feature is)."""
        value = self.args.get("tuneable-components")
        return () if value is None else tuple(_BOOLEANS[item.lower()] for item in value.split(",") if item)

    def int_arg(self, key: str, default: int) -> int:
        """``args[key]`` as an int (validated at load), or ``default`` when absent."""
        value = self.args.get(key)
        return default if value is None else int(value)


@dataclass(frozen=True)
class MosesConfig:
    """The understood part of a moses.ini.

    Invariant (for configs made by :func:`load_moses_ini`): feature names are
    unique; every key of ``weights`` names a feature and holds exactly that
    feature's ``num_features`` values; ``distortion_limit`` is None (absent),
    -1 (no limit) or >= 0; ``nbest_path`` and ``nbest_size`` are both set or both None.
    Features without a ``[weight]`` line are absent from ``weights``.
    """

    path: str
    features: tuple[FeatureLine, ...]
    weights: Mapping[str, tuple[float, ...]] = field(hash=False)
    distortion_limit: int | None
    early_distortion_cost: bool
    nbest_path: str | None
    nbest_size: int | None
    other: Mapping[str, tuple[str, ...]] = field(hash=False)
    #: ``[n-best-list]`` ends with ``distinct``: the n-best list holds distinct translations.
    nbest_distinct: bool = False
    #: True when the file is in the old format (``[ttable-file]``, ``[weight-t]``, ...).
    old_format: bool = False
    #: One warning (``path:line: [section] ...``) per section read but ignored: the settings
    #: of Moses' own search, and old-format sections beside [feature].
    ignored: tuple[str, ...] = ()
    #: The section each warning of ``ignored`` is about (the same order).
    ignored_sections: tuple[str, ...] = ()

    def lm(self) -> FeatureLine | None:
        """The KENLM feature, or None; more than one is an error (see :meth:`lms`)."""
        return self.single("KENLM")

    def lms(self) -> tuple[FeatureLine, ...]:
        """Every KENLM feature, in file order (Moses scores each as a feature of its own)."""
        return tuple(f for f in self.features if f.kind == "KENLM")

    def phrase_table(self) -> FeatureLine | None:
        """The PhraseDictionaryMemory feature, or None; more than one is an error (see
        :meth:`phrase_tables`).

        Its ``table-limit`` defaults to :data:`DEFAULT_TABLE_LIMIT` in Moses.
        """
        return self.single("PhraseDictionaryMemory")

    def phrase_tables(self) -> tuple[FeatureLine, ...]:
        """Every phrase table feature (:data:`PHRASE_TABLE_KINDS`), in file order (Moses' alternative
        decoding paths, :mod:`fstdecode.model.decoding_paths`)."""
        return tuple(f for f in self.features if f.kind in PHRASE_TABLE_KINDS)

    def lexical_reordering(self) -> FeatureLine | None:
        """The LexicalReordering feature, or None; more than one is an error."""
        return self.single("LexicalReordering")

    def model_files(self, lms: bool = True, tables: bool = True) -> tuple[FeatureLine, ...]:
        """The features that name a model file: the LMs (with ``lms``), the phrase tables (with
        ``tables``) and the reordering table (not one that reads a phrase table's pairs:
        ``property-index=``), in that order."""
        reordering = self.lexical_reordering()
        return (*(self.lms() if lms else ()), *(self.phrase_tables() if tables else ()),
                *((reordering,) if reordering is not None and reordering.path is not None else ()))

    def weight(self, name: str, default: tuple[float, ...]) -> tuple[float, ...]:
        """The weights of feature ``name``, or ``default`` when it has no [weight] line."""
        return self.weights.get(name, default)

    def single(self, kind: str) -> FeatureLine | None:
        """The one feature of ``kind``, or None.

        A second feature of the kind raises MosesIniError naming both lines. Moses would read
        each line as a feature of its own (``WordPenalty0``, ``WordPenalty1``), each with its
        own weight; fstdecode's model has one of each kind (one LM, one table, one weight per
        penalty), so it refuses the file rather than drop or merge a feature.
        """
        found = [f for f in self.features if f.kind == kind]
        if len(found) > 1:
            first, second = found[0], found[1]
            raise MosesIniError(
                f"{self.path}:{second.lineno}: a second {kind} feature ({second.name}; the first, "
                f"{first.name}, is on line {first.lineno}); fstdecode supports one "
                f"{_KIND_NAMES.get(kind, kind)}, remove all but one (Moses would read each line as "
                "a feature of its own, with its own weight)"
            )
        return found[0] if found else None


#: What one feature of each kind is, for the error on a second one.
_KIND_NAMES: Mapping[str, str] = MappingProxyType(
    {
        "KENLM": "language model",
        "PhraseDictionaryMemory": "phrase table",
        "ProbingPT": "phrase table",
        "PhraseDictionaryCompact": "phrase table",
        "PhraseDictionaryBinary": "phrase table",
        "LexicalReordering": "lexicalized reordering model",
        "Distortion": "distance-based distortion feature",
        "WordPenalty": "word penalty",
        "PhrasePenalty": "phrase penalty",
        "UnknownWordPenalty": "unknown-word penalty",
    }
)


# --------------------------------------------------------------------------
# Reading lines and sections


def _read_lines(path: str) -> list[tuple[int, str]]:
    """Non-empty lines with comments removed, as ``(lineno, text)`` (1-based).

    A file with no such line (empty, or only blanks and comments) is an error:
    it is not a moses.ini, and reading it as one would silently decode nothing.
    """
    lines = []
    for lineno, text in numbered_lines(path, MosesIniError):
        text = text.split("#", 1)[0].strip()
        if text:
            lines.append((lineno, text))
    if not lines:
        raise MosesIniError(f"{path}: the file is empty (or only comments); a moses.ini needs a [feature] section")
    return lines


def _substitute(text: str, folder: str) -> str:
    """Replace every ``${NAME}`` by the ini file's folder."""
    return _VARIABLE_RE.sub(lambda _match: folder, text)


def _section_name(name: str, path: str, lineno: int) -> str:
    """The long name of section ``[name]`` (``[s]`` is ``[stack]``); a name that is no Moses
    parameter is an error naming it, as in Moses ("Unknown parameter")."""
    full = long_name(name)
    if full is None:
        raise MosesIniError(
            f"{path}:{lineno}: [{name}] is not a Moses parameter (moses/Parameter.cpp), so Moses refuses it "
            "too; remove it (a fork's own section, or a misspelt one)"
        )
    return full


def _sections(
    lines: Iterable[tuple[int, str]], path: str, folder: str
) -> dict[str, list[tuple[int, str]]]:
    """Group value lines by section (by long name), in file order; repeated sections concatenate,
    and a short name's lines join its long name's."""
    sections: dict[str, list[tuple[int, str]]] = {}
    current: list[tuple[int, str]] | None = None
    for lineno, text in lines:
        if text.startswith("["):
            match = _SECTION_RE.match(text)
            if match is None or not match.group(1).strip():
                raise MosesIniError(
                    f"{path}:{lineno}: malformed section header {text!r}; write [name]"
                )
            current = sections.setdefault(_section_name(match.group(1).strip(), path, lineno), [])
        elif current is None:
            raise MosesIniError(
                f"{path}:{lineno}: value {text!r} before any [section]; "
                "put it under a section header"
            )
        else:
            current.append((lineno, _substitute(text, folder)))
    return sections


# --------------------------------------------------------------------------
# [feature]


def _check_kinds(entries: list[tuple[int, str]], path: str) -> None:
    """Raise at the first unsupported kind, also naming any later ones."""
    bad = [(lineno, text.split()[0]) for lineno, text in entries
           if text.split()[0] not in SUPPORTED_KINDS]
    if not bad:
        return
    lineno, kind = bad[0]
    hint = _HINTS.get(kind)
    also = ", ".join(f"{k} (line {n})" for n, k in bad[1:])
    raise MosesIniError(
        f"{path}:{lineno}: feature {kind!r} is not supported"
        + (f" ({hint})" if hint else "")
        + f"; supported kinds: {', '.join(sorted(SUPPORTED_KINDS))}"
        + (f"; also unsupported: {also}" if also else "")
    )


def _parse_args(tokens: list[str], kind: str, where: str) -> dict[str, str]:
    """``key=value`` tokens -> dict; only keys the kind accepts, no duplicates."""
    allowed = SUPPORTED_KINDS[kind]
    args: dict[str, str] = {}
    for token in tokens:
        key, sep, value = token.partition("=")
        if not sep or not key or not value:
            raise MosesIniError(
                f"{where}: malformed argument {token!r}; write key=value with no spaces"
            )
        if (kind, key) in _REFUSED_KEYS:
            raise MosesIniError(f"{where}: {kind} does not take {key!r}: {_REFUSED_KEYS[kind, key]}")
        if key not in allowed:
            raise MosesIniError(
                f"{where}: {kind} does not take {key!r}; accepted keys: "
                + ", ".join(sorted(allowed))
            )
        if key in args:
            raise MosesIniError(f"{where}: {key!r} given twice; keep one")
        args[key] = value
    return args


def _check_int(args: Mapping[str, str], key: str, low: int, where: str) -> None:
    value = args.get(key)
    if value is None:
        return
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or number < low:
        raise MosesIniError(
            f"{where}: {key}={value!r} must be an integer >= {low}"
        )


def _check_values(args: Mapping[str, str], kind: str, where: str) -> None:
    """Required keys present; integers, factors and booleans valid."""
    for key in _REQUIRED_KEYS.get(kind, ()):
        if key not in args:
            raise MosesIniError(f"{where}: {kind} needs {key}=...; add it")
    _check_int(args, "num-features", 1, where)
    _check_int(args, "order", 1, where)
    _check_int(args, "table-limit", 0, where)
    _check_int(args, "lazyken", 0, where)
    _check_int(args, "property-index", 0, where)
    if kind == "LexicalReordering" and ("path" in args) == ("property-index" in args):
        raise MosesIniError(
            f"{where}: LexicalReordering needs path=... (its table) or property-index=K (the reordering scores a "
            "ProbingPT keeps in its pairs, from the K-th: Moses2's form)" + (", not both" if "path" in args else "")
        )
    if args.get("load", _PROBING_LOADS[0]) not in _PROBING_LOADS:
        raise MosesIniError(f"{where}: load={args['load']!r} is not one of Moses' ({', '.join(_PROBING_LOADS)})")
    if kind not in _MULTI_FEATURE_KINDS and int(args.get("num-features", "1")) != 1:
        raise MosesIniError(
            f"{where}: {kind} has exactly 1 feature; remove num-features or set it to 1"
        )
    for key in _FACTOR_KEYS:
        if args.get(key, "0") != "0":
            raise MosesIniError(
                f"{where}: {key}={args[key]!r}: only factor 0 (surface words) is supported"
            )
    _check_tuneable(args, kind, where)


def _check_tuneable(args: Mapping[str, str], kind: str, where: str) -> None:
    """``tuneable=`` and ``tuneable-components=`` read as Moses reads them (FeatureFunction's
    SetParameter, key by key in line order): ``tuneable`` one of Moses' booleans (Scan<bool>);
    ``tuneable-components`` a comma list of one boolean per dense feature (empty items skipped, as
    Moses' Tokenize skips them), refused while the feature is untuneable at that point of the line
    (after ``tuneable=false``, or on an UnknownWordPenalty without an earlier ``tuneable=true``)."""
    tuneable, given = kind not in UNTUNEABLE_BY_DEFAULT, False
    for key, value in args.items():
        if key == "tuneable":
            if value.lower() not in _BOOLEANS:
                raise MosesIniError(
                    f"{where}: tuneable={value!r} must be a boolean: true or false (or yes, no, y, n, 1, 0)"
                )
            tuneable, given = _BOOLEANS[value.lower()], True
        elif key == "tuneable-components":
            if not tuneable:
                raise MosesIniError(
                    f"{where}: tuneable-components cannot be set "
                    + ("after tuneable=false (as in Moses); remove one of them" if given else
                       f"on {kind}, which Moses does not tune unless tuneable=true comes before it; add that, or "
                       "remove tuneable-components")
                )
            items = [item for item in value.split(",") if item]
            count = int(args.get("num-features", "1"))
            bad = [item for item in items if item.lower() not in _BOOLEANS]
            if bad or len(items) != count:
                raise MosesIniError(
                    f"{where}: tuneable-components={value!r} must be a comma-separated list of {count} "
                    f"boolean value(s), one per feature (1 to tune it, 0 to keep its weight), e.g. "
                    + ",".join(["1"] * count)
                )


#: How relative ``path=`` values resolve: against the ini's folder (``decode``'s documented
#: rule), or against the working directory alone (Moses' rule: ``fstdecode moses``). Moses opens
#: a feature's path as written (InputFileStream, KenLM's loader), so a relative one is found from
#: the working directory or not at all ("Can't read"); under "cwd" a file not found there is an
#: error, which names the file of that name beside the ini when there is one.
PATH_RULES = ("ini", "cwd")


def _moses_file(path: str) -> str | None:
    """The file Moses would open for ``path``: the path itself, or with the extension Moses adds
    (``.gz``; a compact or binary reordering table's); None when there is none."""
    for ext in ("", ".gz", ".minlexr", ".binlexr.idx", ".minphr", ".binphr.idx"):
        if os.path.exists(path + ext):
            return path + ext
    return None


def moses_file_exists(path: str) -> bool:
    """Whether a model file is at ``path`` as Moses looks for one (:func:`_moses_file`)."""
    return _moses_file(path) is not None


def _moses_table_file(kind: str, args: dict[str, str]) -> None:
    """The file Moses reads for a table feature's ``path`` (made absolute), in place: a
    PhraseDictionaryCompact's ``path.minphr`` (unless it ends so: PhraseDictionaryCompact's Load);
    a LexicalReordering's ``path.minlexr``, else ``path.binlexr.idx``, if there, before the text table
    (LexicalReorderingTable::LoadAvailable); a PhraseDictionaryBinary's ``path.binphr.idx``."""
    path = args.get("path")
    if path is None:
        return
    if kind == "PhraseDictionaryCompact" and not path.endswith(".minphr"):
        args["path"] = path + ".minphr"
    elif kind == "PhraseDictionaryBinary" and not path.endswith(".binphr.idx") and os.path.isfile(path + ".binphr.idx"):
        args["path"] = path + ".binphr.idx"
    elif kind == "LexicalReordering":
        for ext in (".minlexr", ".binlexr.idx"):
            if not path.endswith(ext) and os.path.isfile(path + ext):
                args["path"] = path + ext
                return


def _resolve_path(args: dict[str, str], folder: str, rule: str, where: str) -> str | None:
    """Make a relative ``path`` absolute by ``rule`` (:data:`PATH_RULES`); returns a warning when
    the other rule would have found another file (else None). Under "cwd", a path not found from
    the working directory raises MosesIniError naming ``where``."""
    value = args.get("path")
    if value is None or os.path.isabs(value):
        return None
    by_ini = os.path.normpath(os.path.join(folder, value))
    by_cwd = os.path.abspath(value)
    if rule == "cwd":
        if not moses_file_exists(by_cwd):
            beside = _moses_file(by_ini)
            raise MosesIniError(
                f"{where}: path={value} is not found from the working directory {os.getcwd()}; Moses resolves "
                "relative paths from there"
                + (f"; a file of that name is beside the ini: {beside} — give an absolute path or run from the "
                   "ini's folder" if beside is not None else "")
            )
        args["path"] = by_cwd
        return None
    args["path"] = by_ini
    if by_cwd != by_ini and moses_file_exists(by_cwd):
        return (
            f"path={value} is read as {by_ini} (decode resolves against the moses.ini's folder); Moses, and "
            f"fstdecode moses, would read {by_cwd} (from the working directory)"
        )
    return None


def _parse_features(
    entries: list[tuple[int, str]], path: str, folder: str, rule: str = "ini"
) -> tuple[tuple[FeatureLine, ...], tuple[str, ...]]:
    """``[feature]`` lines -> FeatureLines (unnamed ones get Kind + per-kind counter), and a
    warning for each relative path the other rule would resolve elsewhere."""
    features: list[FeatureLine] = []
    warnings: list[str] = []
    counters: dict[str, int] = {}
    seen: dict[str, int] = {}
    _check_kinds(entries, path)
    for lineno, text in entries:
        where = f"{path}:{lineno}"
        kind, *tokens = text.split()
        args = _parse_args(tokens, kind, where)
        _check_values(args, kind, where)
        moved = _resolve_path(args, folder, rule, where)
        if moved is not None:
            warnings.append(f"{where}: {moved}")
        _moses_table_file(kind, args)
        name = args.get("name")
        if name is None:  # Moses counts only unnamed features of a kind
            name = f"{kind}{counters.get(kind, 0)}"
            counters[kind] = counters.get(kind, 0) + 1
        if name in seen:
            raise MosesIniError(
                f"{where}: feature name {name!r} is already used on line {seen[name]}; "
                "give each feature a distinct name="
            )
        seen[name] = lineno
        features.append(FeatureLine(kind, name, MappingProxyType(args), lineno))
    return tuple(features), tuple(warnings)


# --------------------------------------------------------------------------
# [weight]


def _parse_weight_line(text: str, where: str) -> tuple[str, tuple[float, ...]]:
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or len(name.split()) != 1:
        raise MosesIniError(f"{where}: malformed weight line {text!r}; write Name= v1 v2 ...")
    values = [parse_weight(token, f"{name} weight", where, MosesIniError) for token in rest.split()]
    if not values:
        raise MosesIniError(f"{where}: {name} has no weights; write Name= v1 v2 ...")
    return name, tuple(values)


def _parse_weights(
    entries: list[tuple[int, str]], path: str, features: tuple[FeatureLine, ...]
) -> dict[str, tuple[float, ...]]:
    """``[weight]`` lines -> name -> weights, checked against the features."""
    by_name = {f.name: f for f in features}
    weights: dict[str, tuple[float, ...]] = {}
    for lineno, text in entries:
        where = f"{path}:{lineno}"
        name, values = _parse_weight_line(text, where)
        feature = by_name.get(name)
        if feature is None:
            known = ", ".join(by_name) or "none"
            raise MosesIniError(
                f"{where}: weight for {name!r}, which is not a [feature] "
                f"(features: {known}); fix the name or add the feature"
            )
        counted = feature.kind != "LexicalReordering" or "num-features" in feature.args
        if counted and len(values) != feature.num_features:  # else the model checks it against type=
            raise MosesIniError(
                f"{where}: {name} has {len(values)} weight(s) but the feature on line "
                f"{feature.lineno} has {feature.num_features}; give one weight per feature"
            )
        if name in weights:
            raise MosesIniError(f"{where}: second weight line for {name!r}; keep one")
        weights[name] = values
    return weights


def parse_weight_overwrite(text: str, where: str) -> dict[str, tuple[float, ...]]:
    """Moses' ``weight-overwrite`` value (one line): ``Name= v1 v2 Name2= v ...``, each token
    that ends in ``=`` starting a feature, whose values follow (Parameter::WeightOverwrite).
    Raises MosesIniError naming ``where`` for a value before any name, a name without values,
    a repeated name or a value that is not a finite number."""
    out: dict[str, list[float]] = {}
    current: str | None = None
    for token in text.split():
        if token.endswith("="):
            current = token[:-1]
            if not current or current in out:
                raise MosesIniError(f"{where}: weight-overwrite names {token!r} twice or without a name; "
                                    "write 'Name= v1 v2 Name2= v ...'")
            out[current] = []
        elif current is None:
            raise MosesIniError(f"{where}: weight-overwrite value {token!r} before any 'Name='; "
                                "write 'Name= v1 v2 Name2= v ...'")
        else:
            out[current].append(parse_weight(token, f"{current} weight", where, MosesIniError))
    for name, values in out.items():
        if not values:
            raise MosesIniError(f"{where}: weight-overwrite gives {name}= no value; write 'Name= v1 v2 ...'")
    return {name: tuple(values) for name, values in out.items()}


def _overwrite_weights(
    entries: list[tuple[int, str]] | None, path: str, weights: dict[str, tuple[float, ...]],
    features: tuple[FeatureLine, ...],
) -> None:
    """Apply a ``[weight-overwrite]`` section (one line, as in Moses) to ``weights``."""
    if not entries:
        return
    if len(entries) > 1:
        raise MosesIniError(f"{path}:{entries[1][0]}: [weight-overwrite] takes one line (Moses: 'Weight override "
                            "should only be on 1 line')")
    lineno, text = entries[0]
    known = {f.name: f for f in features}
    for name, values in parse_weight_overwrite(text, f"{path}:{lineno}").items():
        if name not in known:
            raise MosesIniError(f"{path}:{lineno}: [weight-overwrite] names {name!r}, which is not a [feature] "
                                f"(features: {', '.join(known)})")
        weights[name] = values


# --------------------------------------------------------------------------
# Scalar sections


def _tokens(entries: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """All whitespace-separated tokens of a section, each with its line number."""
    return [(lineno, token) for lineno, text in entries for token in text.split()]


def _section_line(entries: list[tuple[int, str]], default: int) -> int:
    return entries[0][0] if entries else default


def _parse_distortion_limit(
    entries: list[tuple[int, str]] | None, path: str, header: int
) -> int | None:
    """One integer >= -1 (-1 is Moses' "no limit"); an absent section gives None."""
    if entries is None:
        return None
    tokens = _tokens(entries)
    where = f"{path}:{_section_line(entries, header)}"
    if len(tokens) != 1:
        raise MosesIniError(
            f"{where}: [distortion-limit] needs exactly one integer, found {len(tokens)} value(s)"
        )
    lineno, token = tokens[0]
    try:
        limit = int(token)
    except ValueError:
        limit = None
    if limit is None or limit < -1:
        raise MosesIniError(
            f"{path}:{lineno}: distortion limit {token!r} must be an integer >= 0 "
            "(or -1 for no limit)"
        )
    return limit


def moses_boolean(values: Sequence[str], name: str) -> bool:
    """A Moses boolean parameter's values (Parameter's Scan<bool>): none is true (a bare switch or
    section), else one of yes/y/true/1/no/n/false/0 in any case; MosesIniError otherwise."""
    if not values:
        return True
    if len(values) > 1 or values[0].lower() not in _BOOLEANS:
        raise MosesIniError(f"[{name}] / -{name} {' '.join(values)}: could not read it as a boolean "
                            "(yes, no, true, false, 1, 0)")
    return _BOOLEANS[values[0].lower()]


def _parse_bool(entries: list[tuple[int, str]] | None, name: str, path: str) -> bool:
    """Absent -> False; a bare section -> True; else one yes/no/true/false/1/0."""
    if entries is None:
        return False
    tokens = _tokens(entries)
    if not tokens:
        return True
    lineno, token = tokens[0]
    if len(tokens) > 1 or token.lower() not in _BOOLEANS:
        raise MosesIniError(
            f"{path}:{lineno}: [{name}] must be one of yes, no, true, false, 1, 0; "
            f"found {' '.join(t for _, t in tokens)!r}"
        )
    return _BOOLEANS[token.lower()]


def _parse_nbest(
    entries: list[tuple[int, str]] | None, path: str, header: int
) -> tuple[str | None, int | None, bool, tuple[str, ...]]:
    """(path as written, size >= 1, distinct, warnings) of [n-best-list], read as Moses reads it:
    each line is one value (Parameter::ReadConfigFile), the output path, then the size (its
    leading integer: NBestOptions' Scan<size_t>), then, optionally, ``distinct`` on a third line.

    Fewer than two lines (``nbest.txt 100`` on one line) is an error: Moses says "wrong format"
    there and writes no list. What Moses ignores (words after the size, so ``100 distinct`` is a
    plain list; a third line other than ``distinct``; more lines) is kept out, with a warning.
    """
    if entries is None:
        return None, None, False, ()
    values = [(lineno, " ".join(text.split())) for lineno, text in entries if text.strip()]
    if len(values) < 2:
        lineno = _section_line(entries, header)
        raise MosesIniError(
            f"{path}:{lineno}: [n-best-list] needs an output path and a size, and optionally the word "
            f"'distinct', each on a line of its own (Moses reads each line as one value); "
            f"found {' / '.join(v for _, v in values)!r}"
        )
    (_, nbest_path), (lineno, size_line) = values[:2]
    size_text, _, rest = size_line.partition(" ")
    try:
        size = int(size_text)
    except ValueError:
        size = 0
    if size < 1:
        raise MosesIniError(
            f"{path}:{lineno}: n-best size {size_text!r} must be a positive integer"
        )
    distinct = len(values) > 2 and values[2][1] == "distinct"
    ignored = ([(lineno, rest)] if rest else []) + values[3 if distinct else 2:]
    warnings = tuple(
        f"{path}:{n}: [n-best-list] {text!r} is ignored, as Moses ignores it (it reads the path, the size and "
        "'distinct' each from a line of its own); the list is " + ("distinct" if distinct else "not distinct")
        for n, text in ignored
    )
    return nbest_path, size, distinct, warnings


def _header_lines(lines: Iterable[tuple[int, str]]) -> dict[str, int]:
    """Line of the first header of each section (for errors about empty sections)."""
    headers: dict[str, int] = {}
    for lineno, text in lines:
        match = _SECTION_RE.match(text)
        if match is not None:
            name = match.group(1).strip()
            headers.setdefault(long_name(name) or name, lineno)
    return headers


# --------------------------------------------------------------------------
# The old format: [ttable-file], [lmodel-file], [distortion-file], [weight-*]
#
# Moses turns these sections into [feature] and [weight] lines before anything else reads
# the file (Parameter::ConvertWeightArgs and the functions it calls). The rule, as read there:
#
# * The features come in this order: one LM per [lmodel-file] line, then Distortion (when
#   [weight-d] is present), one LexicalReordering per [distortion-file] line, PhrasePenalty
#   (when [weight-p] is present), WordPenalty, UnknownWordPenalty, and one phrase table per
#   [ttable-file] line. Each is named as an unnamed [feature] line is: Kind + a per-kind count.
# * [lmodel-file] ``type factor order path``: type 0 (SRILM), 1 (IRSTLM), 8 (KenLM) or 9
#   (KenLM, lazily loaded); Moses refuses any other ("Unkown language model type id"). The LM
#   weights are [weight-l], one per LM. Moses turns each line into a [feature] line of its kind
#   (SRILM, IRSTLM or KENLM: Parameter::ConvertWeightArgsLM) and names its weight by the kind and
#   the line's index among all LMs (SRILM0, KENLM1). The SRILM and IRSTLM lines are then refused
#   as their [feature] lines are (_LM_REFUSED: they score unlike KenLM).
# * [weight-d]: the Distance weight first, then each [distortion-file] table's weights in turn.
#   A [distortion-file] line is ``inputfactor-outputfactor type num-features path``.
# * [ttable-file] ``implementation input-factor output-factor num-scores path``; [weight-t]
#   holds every table's weights in turn; [ttable-limit] holds one limit per table, or one for
#   all of them.
# * [weight-w] is WordPenalty's weight, [weight-u] UnknownWordPenalty's, [weight-p] the
#   phrase penalty's.
#
# The converted lines carry the line number of the old line they come from, and then go
# through the same checks as a new-format file's lines.

#: The sections of the old format that fstdecode converts.
OLD_FORMAT_SECTIONS = frozenset(
    {
        "ttable-file", "ttable-limit", "lmodel-file", "distortion-file",
        "weight-d", "weight-l", "weight-t", "weight-w", "weight-u", "weight-p",
    }
)

# Old-format sections that define features fstdecode does not implement.
_OLD_UNSUPPORTED: Mapping[str, str] = MappingProxyType(
    {
        "weight-i": "input weights of lattice or confusion-network input",
        "input-scores": "scores of lattice or confusion-network input",
        "generation-file": "generation steps of factored models",
        "weight-generation": "generation steps of factored models",
        "weight-slm": "a syntactic LM",
        "slmodel-file": "a syntactic LM",
        "lmodel-oov-feature": "the LM's out-of-vocabulary feature",
        "weight-lr": "a lexicalized reordering weight outside [weight-d]",
        "weight-dlm": "a discriminative LM",
        "weight-bl": "the BLEU score feature",
        "weight-glm": "a global lexical model",
        "global-lexical-file": "a global lexical model",
        "weight-wt": "a word translation feature",
        "weight-pp": "a phrase pair feature",
        "weight-pb": "a phrase boundary feature",
        "weight-e": "a word deletion feature",
        "weight-lex": "a global lexical reordering feature",
    }
)

#: Settings of Moses' own search (:data:`fstdecode.io.moses_params.PARAMETERS`' SEARCH ones):
#: ``decode`` reads them with a warning (:attr:`MosesConfig.ignored`); ``fstdecode moses`` honours
#: those its stack search has. Both formats.
SEARCH_ONLY_SECTIONS = frozenset(name for name, param in PARAMETERS.items() if param.treatment == SEARCH)

#: [search-algorithm] values of phrase-based decoding (normal stack search, cube pruning).
_PHRASE_BASED_SEARCH = ("0", "1")

# [lmodel-file] type code -> the feature kind Moses makes of it (Parameter::ConvertWeightArgsLM).
_LM_TYPES: Mapping[str, str] = MappingProxyType({"0": "SRILM", "1": "IRSTLM", "8": "KENLM", "9": "KENLM"})

# [ttable-file] implementation code -> Moses' feature kind.
_TABLE_TYPES: Mapping[str, str] = MappingProxyType(
    {
        "0": "PhraseDictionaryMemory", "6": "PhraseDictionaryMemory", "1": "PhraseDictionaryBinary",
        "2": "PhraseDictionaryOnDisk", "12": "PhraseDictionaryCompact", "8": "PhraseDictionarySuffixArray",
        "14": "PhraseDictionaryDynSuffixArray", "15": "PhraseDictionaryDynamicCacheBased",
    }
)

Entries = list[tuple[int, str]]


@dataclass
class ConvertedIni:
    """The [feature] and [weight] lines that an old-format file stands for, in Moses' order.

    Each entry is ``(lineno, text)``: the line of the old section it comes from, and the
    new-format line (paths as written, ``${...}`` substituted).
    """

    features: Entries = field(default_factory=list)
    weights: Entries = field(default_factory=list)

    def add(self, lineno: int, feature: str, name: str, values: list[float]) -> None:
        self.features.append((lineno, feature))
        if values:
            self.weights.append((lineno, f"{name}= " + " ".join(repr(v) for v in values)))


class _OldFormat:
    """Reads the old sections of one file; each method converts one kind of feature."""

    def __init__(self, sections: Mapping[str, Entries], headers: Mapping[str, int], path: str) -> None:
        self.sections = sections
        self.headers = headers
        self.path = path

    def where(self, lineno: int) -> str:
        return f"{self.path}:{lineno}"

    def header(self, name: str) -> int:
        """The line of section ``name``'s header (1 when the file has none)."""
        return self.headers.get(name, 1)

    def weights(self, name: str) -> list[tuple[int, float]]:
        """Every value of a [weight-x] section, in file order (one a line, or several)."""
        return [
            (lineno, parse_weight(token, f"[{name}] weight", self.where(lineno), MosesIniError))
            for lineno, token in _tokens(self.sections.get(name, []))
        ]

    def take(self, values: list[tuple[int, float]], start: int, count: int, name: str, needed: str) -> list[float]:
        """``values[start:start + count]``; too few values is an error naming what needs them."""
        if start + count > len(values):
            raise MosesIniError(
                f"{self.where(self.header(name))}: [{name}] has {len(values)} weight(s), "
                f"but {needed}; give one weight per feature"
            )
        return [v for _, v in values[start:start + count]]

    def check_used(self, values: list[tuple[int, float]], used: int, name: str, needed: str) -> None:
        if len(values) > used:
            raise MosesIniError(
                f"{self.where(values[used][0])}: [{name}] has {len(values)} weight(s), "
                f"but {needed} only {used}; remove the extra ones"
            )

    def fields(self, lineno: int, text: str, section: str, count: int, form: str) -> list[str]:
        tokens = text.split()
        if len(tokens) < count:
            raise MosesIniError(
                f"{self.where(lineno)}: [{section}] line {text!r} has {len(tokens)} field(s); write {form}"
            )
        return tokens

    def count(self, token: str, lineno: int, what: str) -> int:
        try:
            value = int(token)
        except ValueError:
            value = 0
        if value < 1:
            raise MosesIniError(f"{self.where(lineno)}: {what} {token!r} must be an integer >= 1")
        return value

    # ---------------------------------------------------------------- features

    def language_models(self, out: ConvertedIni) -> None:
        models = self.sections.get("lmodel-file", [])
        values = self.weights("weight-l")
        if models and "weight-l" not in self.sections:
            raise MosesIniError(
                f"{self.where(models[0][0])}: [lmodel-file] without [weight-l] (Moses then drops the LM); "
                "add [weight-l] with one weight per LM"
            )
        form = "'type factor order path', e.g. '8 0 5 lm.arpa'"
        for index, (lineno, text) in enumerate(models):
            kind, factor, order, path = self.fields(lineno, text, "lmodel-file", 4, form)[:4]
            if kind not in _LM_TYPES:
                raise MosesIniError(
                    f"{self.where(lineno)}: LM type {kind!r} is not supported; Moses knows 0 (SRILM), 1 (IRSTLM), "
                    "8 and 9 (KenLM; 9 loads lazily) and refuses others too: use 8 (an ARPA file or a KenLM binary)"
                )
            self.count(order, lineno, "LM order")
            lazy = " lazyken=1" if kind == "9" else " lazyken=0" if kind == "8" else ""
            weight = self.take(values, index, 1, "weight-l", f"[lmodel-file] has {len(models)} LM(s)")
            # Moses names the weight (so the n-best and -show-weights name) by its LM kind and the
            # line's index among all LMs: KENLM1 for the second line. A SRILM or IRSTLM line is
            # written as Moses writes it; reading it is refused as for a [feature] line.
            name = f"{_LM_TYPES[kind]}{index}"
            out.add(lineno, f"{_LM_TYPES[kind]} factor={factor} order={order} num-features=1{lazy} path={path}",
                    name, weight)
        self.check_used(values, len(models), "weight-l", f"[lmodel-file] has {len(models)} LM(s), so it needs")

    def reordering(self, out: ConvertedIni) -> None:
        tables = self.sections.get("distortion-file", [])
        if "weight-d" not in self.sections:
            if tables:
                raise MosesIniError(
                    f"{self.where(tables[0][0])}: [distortion-file] without [weight-d] (Moses then drops the "
                    "reordering model); add [weight-d]: the distance weight, then each table's weights"
                )
            return
        values = self.weights("weight-d")
        first = self.take(values, 0, 1, "weight-d", "the distance-based Distortion needs one")
        out.add(values[0][0] if values else self.header("weight-d"), "Distortion", "Distortion0", first)
        used = 1
        form = "'0-0 type num-features path', e.g. '0-0 wbe-msd-bidirectional-fe-allff 6 reordering-table.gz'"
        for index, (lineno, text) in enumerate(tables):
            factors, kind, num, path = self.fields(lineno, text, "distortion-file", 4, form)[:4]
            source, sep, target = factors.partition("-")
            if not sep or not source or not target:
                raise MosesIniError(
                    f"{self.where(lineno)}: factors {factors!r} must read input-output, e.g. 0-0"
                )
            n = self.count(num, lineno, "the number of reordering features")
            weight = self.take(values, used, n, "weight-d", f"Distortion and the [distortion-file] tables need {used + n} or more")
            used += n
            out.add(
                lineno,
                f"LexicalReordering type={kind} input-factor={source} output-factor={target} num-features={n} path={path}",
                f"LexicalReordering{index}",
                weight,
            )
        self.check_used(values, used, "weight-d", "Distortion and the [distortion-file] tables use")

    def penalties(self, out: ConvertedIni) -> None:
        """PhrasePenalty ([weight-p], if any), then WordPenalty and UnknownWordPenalty, always."""
        for section, kind in (("weight-p", "PhrasePenalty"), ("weight-w", "WordPenalty"), ("weight-u", "UnknownWordPenalty")):
            values = self.weights(section)
            if section == "weight-p" and section not in self.sections:
                continue
            if len(values) > 1:
                raise MosesIniError(
                    f"{self.where(values[1][0])}: [{section}] holds one weight, for {kind}; found {len(values)}"
                )
            out.add(values[0][0] if values else self.header(section), kind, f"{kind}0", [v for _, v in values])

    def phrase_tables(self, out: ConvertedIni) -> None:
        tables = self.sections.get("ttable-file", [])
        values = self.weights("weight-t")
        limits = [(lineno, self.count(t, lineno, "ttable-limit") if t != "0" else 0)
                  for lineno, t in _tokens(self.sections.get("ttable-limit", []))]
        if len(limits) not in (0, 1) and len(limits) < len(tables):
            raise MosesIniError(
                f"{self.where(limits[0][0])}: [ttable-limit] has {len(limits)} value(s) for {len(tables)} "
                "tables; give one for all, or one per table"
            )
        used = 0
        counters: dict[str, int] = {}
        form = "'implementation input-factor output-factor num-scores path', e.g. '0 0 0 5 phrase-table.gz'"
        for index, (lineno, text) in enumerate(tables):
            tokens = self.fields(lineno, text, "ttable-file", 5, form)
            code, source, target, num, path = tokens[:5]
            kind = _TABLE_TYPES.get(code)
            if kind is None:
                raise MosesIniError(
                    f"{self.where(lineno)}: phrase-table implementation {code!r} is unknown; "
                    "use 0 (a text table, PhraseDictionaryMemory)"
                )
            n = self.count(num, lineno, "the number of phrase-table scores")
            needed = f"the [ttable-file] tables need {used + n} or more"
            weight = self.take(values, used, n, "weight-t", needed)
            used += n
            limit = limits[0][1] if len(limits) == 1 else limits[index][1] if limits else DEFAULT_TABLE_LIMIT
            ordinal = counters.get(kind, 0)
            counters[kind] = ordinal + 1
            out.add(
                lineno,
                f"{kind} input-factor={source} output-factor={target} path={path} num-features={n} table-limit={limit}",
                f"{kind}{ordinal}",
                weight,
            )
        self.check_used(values, used, "weight-t", "the [ttable-file] tables use")


def _convert_old_format(
    sections: Mapping[str, Entries], headers: Mapping[str, int], path: str
) -> ConvertedIni:
    """The new-format lines of an old-format file, in Moses' order; errors name file and line."""
    for name, what in _OLD_UNSUPPORTED.items():
        if name in sections:
            raise MosesIniError(
                f"{path}:{headers.get(name, 1)}: [{name}] ({what}) is not supported; remove it and its weights"
            )
    old = _OldFormat(sections, headers, path)
    out = ConvertedIni()
    old.language_models(out)
    old.reordering(out)
    old.penalties(out)
    old.phrase_tables(out)
    return out


def old_format_lines(path: str | os.PathLike[str]) -> ConvertedIni:
    """The new-format lines of the old-format moses.ini ``path`` (Moses' conversion rule).

    Raises MosesIniError, naming the file and line, when the file is not in the old format
    or its old sections do not convert.
    """
    path_str = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path_str))
    lines = _read_lines(path_str)
    sections = _sections(lines, path_str, folder)
    headers = _header_lines(lines)
    if not _check_format(sections, headers, path_str):
        raise MosesIniError(f"{path_str}: not an old-format moses.ini (no [ttable-file], [weight-t], ...)")
    return _convert_old_format(sections, headers, path_str)


# Old sections that make a file old-format, and so may not sit beside [feature] or [weight]
# (Moses' own list: [ttable-limit], [distortion-file] and the input-scores are not on it).
_MIXING = (OLD_FORMAT_SECTIONS | set(_OLD_UNSUPPORTED)) - {"ttable-limit", "distortion-file", "input-scores",
                                                            "lmodel-oov-feature"}


def _check_format(sections: Mapping[str, Entries], headers: Mapping[str, int], path: str) -> bool:
    """True for an old-format file; a file that mixes the two formats is an error (as in Moses)."""
    old = sorted((headers.get(s, 1), s) for s in _MIXING if s in sections)
    new = sorted((headers.get(s, 1), s) for s in ("feature", "weight") if s in sections)
    if old and new:
        raise MosesIniError(
            f"{path}:{max(old[0][0], new[0][0])}: the file mixes the old format ([{old[0][1]}], line {old[0][0]}) "
            f"and the new one ([{new[0][1]}], line {new[0][0]}); Moses refuses that too: use one"
        )
    if old:
        return True
    return not new and any(s in sections for s in OLD_FORMAT_SECTIONS)


def _ignored(
    sections: Mapping[str, Entries], headers: Mapping[str, int], path: str, old_format: bool
) -> tuple[tuple[str, str], ...]:
    """``(section, warning)`` for each section read but ignored, in file order; a non-phrase-based
    search is an error.

    Ignored: the settings of Moses' own search (``fstdecode moses`` honours those its stack
    search has, and drops their warnings), the sections nothing in the output depends on, and,
    beside [feature], the old sections that Moses does not convert there ([ttable-limit],
    [distortion-file]).
    """
    for lineno, token in _tokens(sections.get("search-algorithm", []))[:1]:
        if token not in _PHRASE_BASED_SEARCH:
            raise MosesIniError(
                f"{path}:{lineno}: [search-algorithm] {token} is not phrase-based decoding "
                "(0: normal, 1: cube pruning); fstdecode decodes phrase-based models only"
            )
    why = {name: "is a setting of Moses' own search; fstdecode decode ignores it (its own search flags apply; "
           "fstdecode moses honours it)" if name in HONOURED_SEARCH else NOT_IN_STACK_SEARCH
           for name in SEARCH_ONLY_SECTIONS}
    for name, param in PARAMETERS.items():
        if param.treatment == NO_EFFECT:
            why[name] = f"is {param.why}; nothing in the output depends on it, so fstdecode ignores it"
    if not old_format:
        for name in OLD_FORMAT_SECTIONS | set(_OLD_UNSUPPORTED):
            why[name] = "is an old-format section, which Moses ignores in a file with [feature] lines; so does fstdecode"
    return tuple(
        (name, f"{path}:{headers.get(name, 1)}: [{name}] {why[name]}")
        for name in sorted(set(why) & set(sections), key=lambda s: headers.get(s, 1))
    )


#: Sections whose values must be these (one line each) for fstdecode to decode as Moses would.
_ONLY_VALUES: Mapping[str, tuple[tuple[str, ...], str]] = MappingProxyType(
    {
        "input-factors": (("0",), "factored input is not supported: fstdecode reads surface words (factor 0)"),
        "inputtype": (("0",), "only plain-text input (0) is supported; 1 (confusion network), 2 (word lattice) "
                      "and 3 (tree) are not"),
        "output-factors": (("0",), "factored output is not supported: fstdecode writes surface words (factor 0)"),
        "n-best-factor": (("20",), "fstdecode's distinct n-best examines 20 x N derivations, Moses' default (20)"),
        "sort-word-alignment": (("0",), "alignments are written in Moses' default order (0)"),
    }
)


def _check_sections(sections: Mapping[str, Entries], headers: Mapping[str, int], path: str, old_format: bool) -> None:
    """Refuse each section fstdecode cannot honour (moses_params' REFUSED ones, and values of
    :data:`_ONLY_VALUES` other than the ones given), naming it and the way out."""
    for name in sorted(sections, key=lambda s: headers.get(s, 1)):
        where = f"{path}:{headers.get(name, 1)}"
        param = PARAMETERS[name]
        if param.treatment == REFUSED and (old_format or name not in _OLD_UNSUPPORTED):
            raise MosesIniError(f"{where}: [{name}] is not supported: {param.why}")
        if name == "config":
            raise MosesIniError(f"{where}: [config] inside a moses.ini: give the file with -f (Moses reads one)")
        if name in _ONLY_VALUES:
            allowed, why = _ONLY_VALUES[name]
            values = [" ".join(text.split()) for _, text in sections[name]]
            if values == [] or all(v in allowed for v in " ".join(values).split()):
                continue
            raise MosesIniError(
                f"{where}: [{name}] {' / '.join(values) or '(empty)'}: {why}"
            )


_KNOWN_SECTIONS = frozenset(
    {"feature", "weight", "distortion-limit", "early-distortion-cost", "n-best-list", "weight-overwrite"}
) | OLD_FORMAT_SECTIONS


def load_moses_ini(path: str | os.PathLike[str], paths: str = "ini") -> MosesConfig:
    """Read the supported subset of a moses.ini (see the module docstring); relative ``path=``
    values resolve by ``paths`` (:data:`PATH_RULES`: "ini", the ini's folder; "cwd", Moses' rule, the
    working directory only: a relative path not found there is an error)."""
    if paths not in PATH_RULES:
        raise MosesIniError(f"paths={paths!r}: choose from {', '.join(PATH_RULES)}")
    path_str = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path_str))
    lines = _read_lines(path_str)
    sections = _sections(lines, path_str, folder)
    headers = _header_lines(lines)
    old_format = _check_format(sections, headers, path_str)
    ignored = _ignored(sections, headers, path_str, old_format)
    if old_format:
        converted = _convert_old_format(sections, headers, path_str)
        feature_entries, weight_entries = converted.features, converted.weights
    else:
        feature_entries, weight_entries = sections.get("feature", []), sections.get("weight", [])
    try:
        features, moved = _parse_features(feature_entries, path_str, folder, paths)
    except MosesIniError as err:
        kind = " ".join(text for _, text in sections.get("inputtype", [])).strip()
        if kind in ("1", "2", "3"):  # say the root cause too: the file is for input fstdecode does not read
            what = {"1": "confusion-network", "2": "word-lattice", "3": "tree"}[kind]
            raise MosesIniError(f"{err}; the file is for {what} input ([inputtype] {kind}), which fstdecode does not "
                                "read (plain text only)") from None
        raise
    weights = _parse_weights(weight_entries, path_str, features)
    _overwrite_weights(sections.get("weight-overwrite"), path_str, weights, features)
    _check_sections(sections, headers, path_str, old_format)
    nbest_path, nbest_size, nbest_distinct, nbest_warnings = _parse_nbest(
        sections.get("n-best-list"), path_str, headers.get("n-best-list", 0)
    )
    other = {
        name: tuple(text for _, text in entries)
        for name, entries in sections.items()
        if name not in _KNOWN_SECTIONS
    }
    return MosesConfig(
        path=path_str,
        features=features,
        weights=MappingProxyType(weights),
        distortion_limit=_parse_distortion_limit(
            sections.get("distortion-limit"), path_str, headers.get("distortion-limit", 0)
        ),
        early_distortion_cost=_parse_bool(
            sections.get("early-distortion-cost"),
            "early-distortion-cost",
            path_str,
        ),
        nbest_path=nbest_path,
        nbest_size=nbest_size,
        other=MappingProxyType(other),
        nbest_distinct=nbest_distinct,
        old_format=old_format,
        ignored=tuple(message for _, message in ignored) + moved + nbest_warnings,
        ignored_sections=tuple(name for name, _ in ignored) + ("feature",) * len(moved)
        + ("n-best-list",) * len(nbest_warnings),
    )


def rewritten_ini(path: str | os.PathLike[str], paths: Mapping[str, str], header: str = "") -> str:
    """The text of the moses.ini ``path`` in the current format, with the ``path=`` of each
    feature named in ``paths`` replaced by its value and every other ``path=`` made absolute.

    Every feature line (name, arguments), every weight and every other section is kept, in file
    order (an old-format file's lines as Moses converts them); ``header`` (comment lines) comes
    first. Used by ``fstdecode binarize`` to write the binarized model's moses.ini.
    """
    path_str = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path_str))
    lines = _read_lines(path_str)
    sections = _sections(lines, path_str, folder)
    headers = _header_lines(lines)
    if _check_format(sections, headers, path_str):
        converted = _convert_old_format(sections, headers, path_str)
        feature_entries, weight_entries = converted.features, converted.weights
        dropped = OLD_FORMAT_SECTIONS | {"feature", "weight"}
    else:
        feature_entries, weight_entries = sections.get("feature", []), sections.get("weight", [])
        dropped = frozenset({"feature", "weight"})
    out = [header.rstrip("\n")] if header else []
    out.append("[feature]")
    counters: dict[str, int] = {}
    for lineno, text in feature_entries:
        kind, *tokens = text.split()
        args = _parse_args(tokens, kind, f"{path_str}:{lineno}")
        name = args.get("name")
        if name is None:
            name = f"{kind}{counters.get(kind, 0)}"
            counters[kind] = counters.get(kind, 0) + 1
        new = dict(args)
        if name in paths:
            new["path"] = paths[name]
        elif "path" in new:
            _resolve_path(new, folder, "ini", f"{path_str}:{lineno}")
        new.setdefault("name", name)
        out.append(" ".join([kind, *(f"{key}={value}" for key, value in new.items())]))
    out.append("")
    out.append("[weight]")
    out.extend(text for _, text in weight_entries)
    for section, entries in sections.items():
        if section in dropped:
            continue
        out.append("")
        out.append(f"[{section}]")
        out.extend(text for _, text in entries)
    return "\n".join(out) + "\n"
