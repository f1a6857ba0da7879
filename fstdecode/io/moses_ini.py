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
* ``[weight]``: ``Name= v1 v2 ...``, one line per feature; every value a finite
  number. A declared feature may lack its line (the model then warns).
* ``[distortion-limit]``: an integer >= 0, or ``-1`` for no limit (kept as
  -1); an absent section is stored as ``None`` (Moses' default then applies).
* ``[early-distortion-cost]``: yes/no/true/false/y/n/1/0; a section with no
  value means yes (Moses treats a bare boolean switch as true).
* ``[n-best-list]``: an output path and a size, on one line or two.

Every other section is kept verbatim in :attr:`MosesConfig.other`.

``${NAME}`` (any name) in any value is replaced by the absolute path of the
folder holding the ini file, and relative ``path=`` values of features are
resolved against that folder. The n-best path is an output file and is kept as
written (Moses opens it relative to the working directory). Whether feature
files exist is not checked here; their loaders report missing files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fstdecode.errors import FstdecodeError
from fstdecode.io.files import numbered_lines
from fstdecode.io.values import parse_finite

__all__ = [
    "DEFAULT_TABLE_LIMIT",
    "SUPPORTED_KINDS",
    "FeatureLine",
    "MosesConfig",
    "MosesIniError",
    "load_moses_ini",
]

DEFAULT_TABLE_LIMIT = 20
"""Moses' table-limit of a PhraseDictionaryMemory without ``table-limit=`` (its
``PhraseDictionary`` constructor's default); :func:`fstdecode.model.model.load_model`
uses it for such a line too."""

_COMMON_KEYS = frozenset({"name", "tuneable", "num-features"})

SUPPORTED_KINDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "Distortion": _COMMON_KEYS,
        "KENLM": _COMMON_KEYS | {"path", "order", "factor", "lazyken"},
        "LexicalReordering": _COMMON_KEYS
        | {"path", "type", "input-factor", "output-factor", "default-scores"},
        "PhraseDictionaryMemory": _COMMON_KEYS
        | {"path", "table-limit", "input-factor", "output-factor"},
        "PhrasePenalty": _COMMON_KEYS,
        "UnknownWordPenalty": _COMMON_KEYS,
        "WordPenalty": _COMMON_KEYS,
    }
)
"""Feature kinds this decoder implements, each with the keys it accepts."""

_REQUIRED_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"KENLM": ("path",), "PhraseDictionaryMemory": ("path", "num-features"),
     "LexicalReordering": ("path", "type")}
)

_HINTS: Mapping[str, str] = MappingProxyType(
    {
        "PhraseDictionaryBinary": "give a text phrase table with PhraseDictionaryMemory instead",
        "PhraseDictionaryCompact": "give a text phrase table with PhraseDictionaryMemory instead",
        "PhraseDictionaryOnDisk": "give a text phrase table with PhraseDictionaryMemory instead",
        "InputFeature": "lattice and confusion-network input is not supported; "
        "for plain-text input remove this line and its weight",
        "SRILM": "use KENLM with an ARPA file instead",
        "IRSTLM": "use KENLM with an ARPA file instead",
    }
)

#: Kinds with more than one dense feature (their count is ``num-features=``).
_MULTI_FEATURE_KINDS = frozenset({"PhraseDictionaryMemory", "LexicalReordering"})

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

    def lm(self) -> FeatureLine | None:
        """The KENLM feature, or None; more than one is an error (one LM is supported)."""
        return self._single("KENLM", "language model")

    def phrase_table(self) -> FeatureLine | None:
        """The PhraseDictionaryMemory feature, or None; more than one is an error.

        Its ``table-limit`` defaults to :data:`DEFAULT_TABLE_LIMIT` in Moses.
        """
        return self._single("PhraseDictionaryMemory", "phrase table")

    def lexical_reordering(self) -> FeatureLine | None:
        """The LexicalReordering feature, or None; more than one is an error."""
        return self._single("LexicalReordering", "lexicalized reordering model")

    def weight(self, name: str, default: tuple[float, ...]) -> tuple[float, ...]:
        """The weights of feature ``name``, or ``default`` when it has no [weight] line."""
        return self.weights.get(name, default)

    def _single(self, kind: str, what: str) -> FeatureLine | None:
        found = [f for f in self.features if f.kind == kind]
        if len(found) > 1:
            raise MosesIniError(
                f"{self.path}:{found[1].lineno}: a second {kind} feature; "
                f"fstdecode supports one {what}, remove all but one"
            )
        return found[0] if found else None


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


def _sections(
    lines: Iterable[tuple[int, str]], path: str, folder: str
) -> dict[str, list[tuple[int, str]]]:
    """Group value lines by section, in file order; repeated sections concatenate."""
    sections: dict[str, list[tuple[int, str]]] = {}
    current: list[tuple[int, str]] | None = None
    for lineno, text in lines:
        if text.startswith("["):
            match = _SECTION_RE.match(text)
            if match is None or not match.group(1).strip():
                raise MosesIniError(
                    f"{path}:{lineno}: malformed section header {text!r}; write [name]"
                )
            current = sections.setdefault(match.group(1).strip(), [])
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
    if kind not in _MULTI_FEATURE_KINDS and int(args.get("num-features", "1")) != 1:
        raise MosesIniError(
            f"{where}: {kind} has exactly 1 feature; remove num-features or set it to 1"
        )
    for key in _FACTOR_KEYS:
        if args.get(key, "0") != "0":
            raise MosesIniError(
                f"{where}: {key}={args[key]!r}: only factor 0 (surface words) is supported"
            )
    tuneable = args.get("tuneable")
    if tuneable is not None and tuneable.lower() not in _BOOLEANS:
        raise MosesIniError(f"{where}: tuneable={tuneable!r} must be true or false")


def _resolve_path(args: dict[str, str], folder: str) -> None:
    """Make a relative ``path`` absolute, relative to the ini's folder."""
    value = args.get("path")
    if value is not None and not os.path.isabs(value):
        args["path"] = os.path.normpath(os.path.join(folder, value))


def _parse_features(
    entries: list[tuple[int, str]], path: str, folder: str
) -> tuple[FeatureLine, ...]:
    """``[feature]`` lines -> FeatureLines; unnamed ones get Kind + per-kind counter."""
    features: list[FeatureLine] = []
    counters: dict[str, int] = {}
    seen: dict[str, int] = {}
    _check_kinds(entries, path)
    for lineno, text in entries:
        where = f"{path}:{lineno}"
        kind, *tokens = text.split()
        args = _parse_args(tokens, kind, where)
        _check_values(args, kind, where)
        _resolve_path(args, folder)
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
    return tuple(features)


# --------------------------------------------------------------------------
# [weight]


def _parse_weight_line(text: str, where: str) -> tuple[str, tuple[float, ...]]:
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or len(name.split()) != 1:
        raise MosesIniError(f"{where}: malformed weight line {text!r}; write Name= v1 v2 ...")
    values = [parse_finite(token, f"{name} weight", where, MosesIniError) for token in rest.split()]
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
) -> tuple[str | None, int | None]:
    """``path size`` (one line or two) -> (path as written, size >= 1)."""
    if entries is None:
        return None, None
    tokens = _tokens(entries)
    if len(tokens) != 2:
        lineno = _section_line(entries, header)
        raise MosesIniError(
            f"{path}:{lineno}: [n-best-list] needs an output path and a size, "
            f"found {len(tokens)} value(s)"
        )
    (_, nbest_path), (lineno, size_text) = tokens
    try:
        size = int(size_text)
    except ValueError:
        size = 0
    if size < 1:
        raise MosesIniError(
            f"{path}:{lineno}: n-best size {size_text!r} must be a positive integer"
        )
    return nbest_path, size


def _header_lines(lines: Iterable[tuple[int, str]]) -> dict[str, int]:
    """Line of the first header of each section (for errors about empty sections)."""
    headers: dict[str, int] = {}
    for lineno, text in lines:
        match = _SECTION_RE.match(text)
        if match is not None:
            headers.setdefault(match.group(1).strip(), lineno)
    return headers


_KNOWN_SECTIONS = frozenset(
    {"feature", "weight", "distortion-limit", "early-distortion-cost", "n-best-list"}
)


def load_moses_ini(path: str | os.PathLike[str]) -> MosesConfig:
    """Read the supported subset of a moses.ini (see the module docstring)."""
    path_str = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path_str))
    lines = _read_lines(path_str)
    sections = _sections(lines, path_str, folder)
    headers = _header_lines(lines)
    features = _parse_features(sections.get("feature", []), path_str, folder)
    weights = _parse_weights(sections.get("weight", []), path_str, features)
    nbest_path, nbest_size = _parse_nbest(
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
    )
