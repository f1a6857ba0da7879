"""A loaded translation model: phrase table, LM, weights and distortion limit.

:func:`load_model` mirrors the CLI: a moses.ini supplies everything, and
explicit arguments (the command-line flags) override it. With no arguments
at all it loads the built-in example (:func:`example_model`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Callable, Collection, Mapping, Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.io.arpa import ArpaLM
from fstdecode.io.kenlm_binary import KenLMBinaryLM, is_kenlm_binary
from fstdecode.io.native_lm import NativeLM
from fstdecode.io.moses_ini import (
    DEFAULT_TABLE_LIMIT, PHRASE_TABLE_KINDS, FeatureLine, MosesConfig, load_moses_ini, moses_file_exists,
)
from fstdecode.model.combined_lm import CombinedLM
from fstdecode.model.decoding_paths import alternatives, check_mapping, offsets
from fstdecode.io.binarized import (
    is_binary_table, is_lm_image, is_mapped_table, moses_reordering_kind, moses_table_kind, open_binary_table,
    open_moses_table, written_by_binarize,
)
from fstdecode.io.files import is_regular
from fstdecode.io.phrase_table import PhrasePair, PhraseTable, PhraseTableError, load_phrase_table
from fstdecode.io.reordering_table import ReorderingTable, ReorderingTableError, load_reordering_table
from fstdecode.model.distortion import SEMANTICS
from fstdecode.model.features import (
    MOSES_KINDS, MosesFeature, Weights, assignment_name, moses_layout, moses_names, show_weights,
)
from fstdecode.model.lexical_reordering import (
    LexicalReorderingError,
    ReorderingModel,
    parse_default_scores,
    parse_reordering_type,
)

_LOG = logging.getLogger("fstdecode")


class ModelError(FstdecodeError):
    """A model that cannot be assembled from the given files and flags."""


#: The distortion limit when neither moses.ini nor a flag gives one (Moses' default).
DEFAULT_DISTORTION_LIMIT = 6

#: The distortion limit that means "no limit" (Moses' -1): larger than any sentence.
UNLIMITED = 2**31 - 1

#: The value that asks for :data:`UNLIMITED`, as in Moses (``-d -1``, ``[distortion-limit] -1``).
NO_LIMIT = -1


def distortion_limit_text(d: int) -> str:
    """How messages name distortion limit ``d``: "no distortion limit (-1)" for :data:`NO_LIMIT`
    and :data:`UNLIMITED` alike, else "distortion limit D"."""
    return "no distortion limit (-1)" if d in (NO_LIMIT, UNLIMITED) else f"distortion limit {d}"

# moses.ini feature kind -> fstdecode weight name.
_INI_WEIGHTS = MOSES_KINDS


@dataclass(frozen=True)
class TableSource:
    """How a model's phrase table was read, so that it can be read again with another filter.

    ``num_features`` is the column count the table had; ``table_limit`` the pairs kept per
    source phrase (0: all).
    """

    path: str
    score_format: str
    num_features: int
    table_limit: int
    #: False for a table no decoding path names (one of several): not read, its columns 0.
    in_use: bool = True

# The weight names that hold one weight per feature of their function.
_LIST_WEIGHTS = ("tm", "lr")


@dataclass(frozen=True)
class Model:
    """Everything a search needs but the sentence.

    Invariant: ``len(weights.tm) == table.num_scores`` and ``distortion_limit >= 0``
    (:data:`UNLIMITED` for no limit). ``lm`` is read up to the order the searches use:
    ``--lm-order``, or else the file's own order (a KENLM line's ``order=`` is not a truncation,
    as in Moses); with several KENLM lines it is their
    :class:`~fstdecode.model.combined_lm.CombinedLM` and ``weights.lm`` is 1 (``weights.lms``
    holds each LM's weight). With several phrase tables, ``table`` is their alternative decoding
    paths (:mod:`~fstdecode.model.decoding_paths`), one ``table_sources`` entry per table.
    ``nbest_size`` is moses.ini's ``[n-best-list]`` size (None without one), ``nbest_distinct``
    its ``distinct`` word. ``features`` names the features as Moses does, in Moses' order
    (:func:`~fstdecode.model.features.moses_layout`): n-best lists and ``--show-weights`` use it.
    ``reordering`` is the lexicalized reordering model (None without one), with
    ``len(weights.lr) == reordering.num_features`` (else ``weights.lr == ()``).
    ``distortion_semantics`` is ``"moses"`` or ``"paper"`` (:mod:`fstdecode.model.distortion`).
    """

    table: PhraseTable
    lm: ArpaLM | NativeLM | KenLMBinaryLM
    weights: Weights
    distortion_limit: int
    name: str = "model"
    early_distortion_cost: bool = False
    nbest_size: int | None = None
    nbest_distinct: bool = False
    features: tuple[MosesFeature, ...] = ()
    #: moses.ini's ``[print-alignment-info]`` / ``[print-alignment-info-in-n-best]``: the word
    #: alignment in the output (as ``--print-alignment-info``).
    print_alignment: bool = False
    #: Where the phrase table came from: one source, or one per table of several (alternative
    #: decoding paths, :mod:`~fstdecode.model.decoding_paths`); () for a table given in memory
    #: (e.g. ``--phrase-fst``).
    table_sources: tuple[TableSource, ...] = ()
    reordering: ReorderingModel | None = None
    distortion_semantics: str = "paper"
    #: True when the semantics was asked for (``--distortion-semantics``), False for the default.
    semantics_given: bool = False

    def __post_init__(self) -> None:
        if not self.features:  # a model made by hand: Moses' default names
            object.__setattr__(self, "features", moses_layout((), self.weights))

    def show_weights(self) -> list[str]:
        """Moses' ``-show-weights`` lines for this model (``--show-weights``)."""
        return show_weights(self.features, self.weights)

    def search_lm(self) -> ArpaLM | NativeLM | KenLMBinaryLM:
        """The LM the searches score with (its order is the search's order)."""
        return self.lm


def example_dir() -> Path:
    """The folder of the built-in example model (Chang & Collins' slides example)."""
    return Path(str(resources.files("fstdecode") / "data"))


def _check_arguments(
    *, config: object, phrase_table: object, lm: object, lm_order: object, table_limit: object, weights: object
) -> None:
    """Refuse what :func:`load_model` cannot take, with ModelError naming the argument and its flag,
    before any file is read (so the API refuses what the CLI refuses, in the same words)."""
    for name, flag, value in (("config", "-f", config), ("phrase_table", "--phrase-table", phrase_table), ("lm", "--lm", lm)):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise ModelError(f"{name} ({flag}) must be a path (str or os.PathLike), got {type(value).__name__}")
        try:
            if value is not None:
                os.fsencode(value)
        except UnicodeEncodeError as e:  # a lone surrogate such as '\ud800': no file can have that name
            raise ModelError(f"{name} ({flag}) {os.fspath(value)!r} is not a path the file system can name: "
                             f"character {e.start + 1} is a lone surrogate") from None
    for name, flag, value, least in (("lm_order", "--lm-order", lm_order, 1), ("table_limit", "--table-limit", table_limit, 0)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ModelError(f"{name} ({flag}) must be an integer, got {value!r}")
        if value < least:
            raise ModelError(f"{name} ({flag}) must be >= {least}, got {value}")
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence):
        raise ModelError(f"weights (--weight) takes a list of NAME=VALUE strings, e.g. ['lm=0.5'], not a {type(weights).__name__}")
    bad = [w for w in weights if not isinstance(w, str)]
    if bad:
        raise ModelError(f"weights (--weight) takes NAME=VALUE strings, e.g. 'lm=0.5'; got {bad[0]!r}")


def checked_distortion_limit(d: int) -> int:
    """The distortion limit to use for ``d``: ``d`` itself if 0 <= d < :data:`UNLIMITED`, else
    (-1, or a value too large for the core's int) :data:`UNLIMITED`, no limit. Moses reads the
    value with stream extraction into an int (Parameter::SetParameter's Scan<int>), which stores
    2^31 - 1 for anything larger: a limit no sentence reaches, so no limit there too.

    Any other value (another negative number, a non-integer) raises ModelError. Every
    distortion limit of a :class:`Model` made here goes through this function.
    """
    if isinstance(d, bool) or not isinstance(d, int) or d < NO_LIMIT:
        raise ModelError(f"distortion limit must be an integer >= 0, or -1 for no limit; got {d!r}")
    return UNLIMITED if d == NO_LIMIT or d >= UNLIMITED else d


def _weights_from_ini(cfg: MosesConfig) -> Weights:
    """Weights from the ini's [weight] section.

    A feature the ini does not declare weighs 0, but UnknownWordPenalty, which Moses adds
    with weight 1; a declared feature without a [weight] line weighs 1.0 (see
    :func:`_warn_missing_ini_weights`).
    """
    values: dict[str, object] = {name: 0.0 for name in _INI_WEIGHTS.values()}
    values["tm"] = (0.0,)
    values["lr"] = ()
    for feat in cfg.features:
        key = _INI_WEIGHTS.get(feat.kind)
        if key is None:
            continue
        w = cfg.weight(feat.name, (1.0,) * feat.num_features)
        values[key] = tuple(w) if key in _LIST_WEIGHTS else w[0]
    tables = cfg.phrase_tables()
    if len(tables) > 1:  # alternative decoding paths: every table's columns, in [feature] order
        values["tm"] = tuple(v for f in tables for v in cfg.weight(f.name, (1.0,) * f.num_features))
    if not any(f.kind == "UnknownWordPenalty" for f in cfg.features):
        values["unknown"] = 1.0
    lms = cfg.lms()
    if len(lms) > 1:  # each LM its own weight; the searches score their weighted sum at weight 1
        values["lms"] = tuple(cfg.weight(f.name, (1.0,))[0] for f in lms)
        values["lm"] = 1.0
    return Weights(**values)  # type: ignore[arg-type]


def _one_feature_per_kind(cfg: MosesConfig) -> None:
    """Raise MosesIniError, naming both lines, at the first kind the ini declares twice.

    A :class:`Weights` holds one weight per kind (one ``word``, one ``tm`` list, ...), so a
    second ``WordPenalty`` line could only be merged or dropped, changing every score without
    a word; Moses would read it as a second feature with its own weight. Several LMs are read,
    each a feature with its own weight (:class:`~fstdecode.model.combined_lm.CombinedLM`).
    """
    for kind in dict.fromkeys(f.kind for f in cfg.features):
        if kind != "KENLM" and kind not in PHRASE_TABLE_KINDS:  # several LMs (CombinedLM) or tables (decoding paths)
            cfg.single(kind)


def _warn_missing_ini_weights(cfg: MosesConfig) -> None:
    """Warn, on the ``fstdecode`` logger, about each declared feature with no [weight] line.

    UnknownWordPenalty is the exception: Moses weighs it 1.0 by default (its regression
    tests' moses.ini files rely on that), so a missing line is no surprise.
    """
    for feat in cfg.features:
        if feat.kind in _INI_WEIGHTS and feat.kind != "UnknownWordPenalty" and feat.name not in cfg.weights:
            _LOG.warning(
                "%s:%d: feature %s has no weight in [weight]; using 1.0 "
                "(Moses refuses such a file; fstdecode warns and uses 1.0)",
                cfg.path,
                feat.lineno,
                feat.name,
            )


def _warn_negative_lm(w: Weights, cfg: MosesConfig | None) -> None:
    """Warn, in one line, of a negative weight of a single LM: the search then prefers what the LM
    finds unlikely, almost surely a mistake. Moses runs it without a word, so it is not refused.
    (Several LMs are refused below 0 by :class:`~fstdecode.model.combined_lm.CombinedLM`.)"""
    if w.lms or not w.lm < 0:
        return
    lms = [f.name for f in cfg.features if MOSES_KINDS.get(f.kind) == "lm"] if cfg is not None else []
    _LOG.warning(
        "the LM weight (%s) is %s, below 0: the search prefers translations the LM finds unlikely; "
        "Moses runs it without a word, but a tuned LM weight is positive", lms[0] if len(lms) == 1 else "lm", w.lm,
    )


def _tm_origin(
    cfg: MosesConfig | None, ini_pt: FeatureLine | None, assignments: Sequence[str], flag: str
) -> str | None:
    """Where the TM weights were given (named in a warning if one is repeated; ``flag`` the
    command's weight flag); None: default."""
    aliases = moses_names(_declared(cfg))
    given = [item for item in assignments if assignment_name(item, aliases) == "tm"]
    if given:
        return f"{flag} {given[-1]}"
    if cfg is not None and ini_pt is not None and ini_pt.name in cfg.weights:
        return f"{cfg.path}: [weight] {ini_pt.name}="
    return None


@dataclass(frozen=True)
class MosesRanker:
    """Moses' table-limit ranking of a pair: weighted TM + word penalty + weighted LM estimate of
    the target (the LM's context-free estimate, :meth:`ArpaLM.phrase_estimate`)."""

    lm: ArpaLM | NativeLM | KenLMBinaryLM
    weights: Weights

    def __call__(self, pair: PhrasePair) -> float:
        weights = self.weights
        return (
            sum(w * v for w, v in zip(weights.tm, pair.scores))
            + weights.word * -len(pair.target)
            + weights.lm * self.lm.phrase_estimate(pair.target)
        )

    def limit_store(self, store: object, limit: int) -> object:
        """The core's store limited by this ranking, computed in the core (its LM's core)."""
        core = getattr(self.lm, "core", None)
        if core is None and isinstance(self.lm, KenLMBinaryLM):
            core = self.lm.native_core()
        if core is None:  # the Python reference LM: ranked in Python
            return None
        w = self.weights
        return store.limited(limit, core, [float(x) for x in w.tm], float(w.word), float(w.lm))


def moses_ranker(lm: ArpaLM | NativeLM | KenLMBinaryLM, weights: Weights) -> MosesRanker:
    """Moses' table-limit ranking (:class:`MosesRanker`)."""
    return MosesRanker(lm, weights)


def _table_limit(table_limit: int | None, ini_pt: FeatureLine | None) -> int:
    """The flag's table limit, else the ini line's ``table-limit=`` (Moses' default 20), else 0."""
    if table_limit is not None:
        return table_limit
    if ini_pt is not None:
        return ini_pt.int_arg("table-limit", DEFAULT_TABLE_LIMIT)
    return 0


def _distortion_limit(distortion_limit: int | None, cfg: MosesConfig | None) -> int:
    """The argument, else the ini's [distortion-limit], else the default; validated."""
    if distortion_limit is None and cfg is not None:
        distortion_limit = cfg.distortion_limit
    if distortion_limit is None:
        distortion_limit = DEFAULT_DISTORTION_LIMIT
    return checked_distortion_limit(distortion_limit)


def _model_paths(
    cfg: MosesConfig | None, lm: str | Path | None, phrase_table: str | Path | None, have_table: bool
) -> tuple[tuple[str | Path, ...], str | Path | None]:
    """The LM files and the phrase-table file: the arguments, else the ini's; ModelError if one is
    missing, or if --lm is given for an ini with several LMs (which one it would replace is not said)."""
    ini_lms = cfg.lms() if cfg else ()
    where = f"{cfg.path}: " if cfg is not None else ""
    if lm is not None and len(ini_lms) > 1:
        raise ModelError(f"{where}--lm replaces the model's LM, but the ini has {len(ini_lms)} KENLM lines; "
                         "edit their path= instead")
    lm_paths = (lm,) if lm is not None else tuple(f.path for f in ini_lms)
    tables = cfg.phrase_tables() if cfg else ()
    if phrase_table is not None and len(tables) > 1:
        raise ModelError(f"{where}--phrase-table replaces the model's table, but the ini has {len(tables)} "
                         "PhraseDictionaryMemory lines; edit their path= instead")
    pt_path = phrase_table or (tables[0].path if tables else None)
    if not lm_paths:
        raise ModelError(f"{where}no language model: give --lm FILE or a moses.ini with a KENLM line")
    if pt_path is None and not have_table:
        raise ModelError(
            f"{where}no phrase table: give --phrase-table FILE or a moses.ini with a PhraseDictionaryMemory line"
        )
    return lm_paths, pt_path


def load_lm(path: str | Path, order: int | None) -> NativeLM | KenLMBinaryLM:
    """The LM in ``path`` read up to ``order`` (None: the file's order), by the native core's
    readers: a KenLM binary (detected by its magic bytes, whatever its name) is a
    :class:`~fstdecode.io.kenlm_binary.KenLMBinaryLM`, an ARPA file a
    :class:`~fstdecode.io.native_lm.NativeLM`. (:class:`~fstdecode.io.arpa.ArpaLM`, the Python
    reader, is a reference the tests use; a model built on one still searches natively.)
    """
    if is_kenlm_binary(path):
        return KenLMBinaryLM.from_file(path, max_order=order)
    return NativeLM.from_file(path, max_order=order)


def load_model(
    config: str | Path | None = None,
    *,
    phrase_table: str | Path | None = None,
    lm: str | Path | None = None,
    distortion_limit: int | None = None,
    weights: Sequence[str] = (),
    tm_score_format: str | None = None,
    table_limit: int | None = None,
    lm_order: int | None = None,
    source_vocabulary: Callable[[tuple[str, ...]], bool] | None = None,
    table: PhraseTable | None = None,
    distortion_semantics: str | None = None,
    ini_paths: str = "ini",
    honoured: Collection[str] = (),
    weight_flag: str = "--weight",
) -> Model:
    """Assemble a model; explicit arguments override the moses.ini ``config``.

    ``ini_paths``: how the ini's relative paths resolve (:data:`~fstdecode.io.moses_ini.PATH_RULES`:
    "ini", against its folder, with a warning where Moses' rule would read another file; "cwd",
    Moses' rule: from the working directory only, a file not found there being an error).
    ``honoured``: ini sections the caller applies itself (``fstdecode moses``: Moses' search
    settings), so not warned about as ignored. ``weight_flag``: the flag that gave
    ``weights``, named in their errors and warnings (``fstdecode moses``: ``-weight-overwrite``).

    The LM is read by the native core (:func:`load_lm`); every search runs there (the
    ``engine`` argument was removed: there is no other engine).

    With neither a config nor a phrase table nor an LM, the built-in example
    is loaded (and the other arguments still apply). ``weights`` are
    ``NAME=VALUE`` strings as for ``--weight``. ``source_vocabulary`` (a
    predicate on source phrases) filters the phrase table while loading.
    ``table``, if given, is used instead of reading one (``--phrase-fst``).

    ``distortion_limit``: >= 0, or -1 for no limit (:data:`UNLIMITED`), as in
    Moses; default: the ini's ``[distortion-limit]``, else
    :data:`DEFAULT_DISTORTION_LIMIT`. ``table_limit``: pairs kept per source
    phrase, 0 for all; default: the ini's ``table-limit=``, which is Moses'
    :data:`~fstdecode.io.moses_ini.DEFAULT_TABLE_LIMIT` (20) when the
    PhraseDictionaryMemory line has none; a table with no ini line keeps all.

    TM weights: one per table column; a single weight given (``--weight tm=X``
    or the ini) is used for every column with a warning, the built-in default
    silently; any other count is an error. A feature the ini declares without
    a [weight] line weighs 1.0, with a warning. Warnings go to the
    ``fstdecode`` logger once the files have loaded.

    ``distortion_semantics``: ``"moses"`` or ``"paper"``
    (:mod:`fstdecode.model.distortion`); default ``"moses"`` when ``config``
    (a moses.ini) is given, ``"paper"`` otherwise (the built-in example included).
    Every method implements both.

    A moses.ini ``LexicalReordering`` line loads its table
    (:mod:`fstdecode.model.lexical_reordering`); its weights are ``lr``.

    Raises ModelError, FeatureError or the reader's error, naming the file
    and line where there is one.
    """
    _check_arguments(config=config, phrase_table=phrase_table, lm=lm, lm_order=lm_order, table_limit=table_limit,
                     weights=weights)
    cfg = load_moses_ini(config, ini_paths) if config is not None else None
    if cfg is not None:
        _one_feature_per_kind(cfg)
        _binarized_files_intact(cfg)
    semantics = _semantics(distortion_semantics, config)
    if cfg is None and phrase_table is None and lm is None:
        cfg = load_moses_ini(example_dir() / "moses.ini")
        name = "built-in example"
    else:
        name = str(config or phrase_table)
    ini_pts = cfg.phrase_tables() if cfg else ()
    ini_pt = ini_pts[0] if len(ini_pts) == 1 else None
    in_use = check_mapping(cfg, ini_pts) if cfg is not None and table is None and phrase_table is None else ()
    for line, used in zip(ini_pts, in_use):
        if not used:
            _LOG.warning(
                "%s:%d: phrase table %s is not in a decoding path of [mapping] (default: 0 T 0), so, as in Moses, no "
                "option comes from it and its features are 0; give it a path (0 T 0 / 1 T 1 ...) to use it",
                cfg.path, line.lineno, line.name)
    lm_paths, pt_path = _model_paths(cfg, lm, phrase_table, table is not None)
    if cfg is not None:
        _ini_files_exist(cfg, lms=lm is None, tables=phrase_table is None and table is None)
    d = _distortion_limit(distortion_limit, cfg)
    w = _weights_from_ini(cfg) if cfg is not None else Weights()
    w = w.override(list(weights), moses_names(_declared(cfg)), weight_flag)
    parts = []
    for k, lm_path in enumerate(lm_paths):
        with reading_phase("language model", lm_path) as phase:
            parts.append(load_lm(lm_path, lm_order))
            phase.said(f"order {parts[-1].order}, {sum(getattr(parts[-1], 'counts', ())):,} n-grams")
        if cfg is not None and lm is None and lm_order is None:
            _check_ini_order(cfg, cfg.lms()[k], parts[-1].order)
    language_model = parts[0]
    if len(parts) > 1:
        language_model = CombinedLM(parts, w.lms, [f.name for f in cfg.lms()])
    num = ini_pt.num_features if ini_pt and phrase_table is None and "num-features" in ini_pt.args else None
    read_table = table is None
    several = read_table and phrase_table is None and len(ini_pts) > 1
    if several:
        specs = tuple(TableSource(f.path, tm_score_format or "prob", f.num_features, _table_limit(table_limit, f),
                                  used) for f, used in zip(ini_pts, in_use))
        table = _read_alternatives(specs, source_vocabulary, language_model, w, name)
    elif table is None:
        with reading_phase("phrase table", pt_path, filtered=source_vocabulary is not None) as phase:
            table = load_phrase_table(
                pt_path, score_format=tm_score_format or "prob", num_features=num, vocabulary=source_vocabulary,
                progress=phase.progress,
            )
            phase.said(f"{len(table):,} phrase pairs kept")
    with reading_phase("reordering table", _reordering_path(cfg), filtered=source_vocabulary is not None) as phase:
        reordering = _reordering_model(cfg, source_vocabulary, phase.progress, getattr(table, "store", None))
        phase.said(f"{len(reordering.table):,} entries kept" if reordering is not None else "")
    if cfg is not None:
        _warn_missing_ini_weights(cfg)
        for section, message in zip(cfg.ignored_sections, cfg.ignored):
            if section not in honoured:
                _LOG.warning("%s", message)
    w = w.with_tm_columns(table.num_scores, _tm_origin(cfg, ini_pt, weights, weight_flag))
    w = _reordering_weights(w, reordering, cfg, weights, weight_flag)
    _warn_negative_lm(w, cfg)
    if several:  # each table was limited on its own, by its own weights
        sources = specs
    else:
        limit = _table_limit(table_limit, ini_pt)
        table = table.limited(limit, moses_ranker(language_model, w))
        sources = (TableSource(str(pt_path), tm_score_format or "prob", table.num_scores, limit),) if read_table else ()
    return Model(
        table=table,
        lm=language_model,
        weights=w,
        distortion_limit=d,
        name=name,
        early_distortion_cost=bool(cfg and cfg.early_distortion_cost),
        nbest_size=cfg.nbest_size if cfg else None,
        nbest_distinct=bool(cfg and cfg.nbest_distinct),
        features=moses_layout(_declared(cfg), w),
        print_alignment=_ini_switch(cfg, "print-alignment-info") or _ini_switch(cfg, "print-alignment-info-in-n-best"),
        table_sources=sources,
        reordering=reordering,
        distortion_semantics=semantics,
        semantics_given=distortion_semantics is not None,
    )


def _check_ini_order(cfg: MosesConfig, line: FeatureLine, order: int) -> None:
    """Warn when a KENLM line's ``order=`` is below its file's order (where it reads like a
    truncation): Moses (KENLM's constructor reads only the file) scores with the file's order,
    and so does fstdecode; ``--lm-order`` truncates on purpose."""
    given = line.int_arg("order", order)
    if given < order:
        _LOG.warning(
            "%s:%d: %s order=%d, but the file holds a %d-gram model; Moses ignores order= and scores with the "
            "file's order, and so does fstdecode (--lm-order N truncates on purpose)",
            cfg.path, line.lineno, line.name, given, order,
        )


class _Phase:
    """One model file being read: ``said(text)`` sets the summary logged at its end, and
    ``progress(bytes, lines)`` (the core readers' callback) moves a tqdm bar on stderr when
    stderr is a terminal (bytes of the file on disk)."""

    def __init__(self, what: str, size: int | None) -> None:
        self.summary = ""
        self._what = what
        self._size = size
        self._bar = None

    def said(self, text: str) -> None:
        self.summary = text

    def progress(self, done: int, lines: int) -> None:
        if self._bar is None:
            if not (self._size and sys.stderr.isatty()):
                return
            from tqdm import tqdm

            self._bar = tqdm(total=self._size, unit="B", unit_scale=True, desc=f"reading the {self._what}",
                             leave=False, file=sys.stderr)
        self._bar.update(done - self._bar.n)
        self._bar.set_postfix_str(f"{lines:,} lines", refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


@contextlib.contextmanager
def reading_phase(what: str, path: object, filtered: bool = False, quiet: bool = False):
    """Log (INFO, ``-v``) the loading of one model file: its size as it starts, then what was
    kept and the seconds it took, so that a long load is never silent; on a terminal a bar shows
    the bytes read meanwhile. Yields a :class:`_Phase`; nothing is logged when ``path`` is None
    (no such file) or ``quiet``."""
    if path is None or quiet:
        yield _Phase(what, None)
        return
    try:
        size = os.path.getsize(path) if os.path.isfile(path) else None
    except OSError:
        size = None
    how = " (filtered to the input)" if filtered else ""
    _LOG.info("reading the %s %s%s%s", what, path, f", {size / 2**20:,.1f} MiB" if size is not None else "", how)
    start = time.perf_counter()
    phase = _Phase(what, size)
    try:
        yield phase
    finally:
        phase.close()
    seconds = time.perf_counter() - start
    _LOG.info("%s %s: %s%s%.1f s", what, path, phase.summary, ", " if phase.summary else "", seconds)


def _reordering_path(cfg: MosesConfig | None) -> str | None:
    """The path of the ini's lexicalized reordering table, or None."""
    feat = cfg.lexical_reordering() if cfg is not None else None
    return None if feat is None else feat.path


def _ini_switch(cfg: MosesConfig | None, section: str) -> bool:
    """Whether a moses.ini's boolean section is on (present with no value, or a true word)."""
    if cfg is None or section not in cfg.other:
        return False
    values = cfg.other[section]
    return not values or values[0].strip().lower() in ("1", "true", "yes", "y")


def _declared(cfg: MosesConfig | None) -> list[MosesFeature]:
    """The moses.ini's features that fstdecode computes, by their Moses names, in file order, each
    with its ``tuneable=`` and ``tuneable-components=`` (what tuning outputs print of it)."""
    if cfg is None:
        return []
    lms = [f.name for f in cfg.lms()]
    tables = cfg.phrase_tables()
    starts = dict(zip((f.name for f in tables), offsets([f.num_features for f in tables])))
    several = len(tables) > 1
    return [MosesFeature(f.name, f.kind, lms.index(f.name) if f.name in lms else 0,
                         starts.get(f.name, 0) if several else 0, f.num_features if several and f.name in starts else 0,
                         f.tuneable, f.tuneable_components)
            for f in cfg.features if f.kind in MOSES_KINDS]


def _read_alternatives(
    specs: Sequence[TableSource], vocabulary: Callable[[tuple[str, ...]], bool] | None,
    lm: object, weights: Weights, name: str, quiet: bool = False, mapped: Mapping[str, object] | None = None,
) -> PhraseTable:
    """Several tables read, each limited on its own as Moses limits each PhraseDictionary (ranked by
    its own columns' weights, the word penalty and the LM estimate), then made one table of
    alternative decoding paths (:func:`~fstdecode.model.decoding_paths.alternatives`)."""
    tables = []
    for spec, start in zip(specs, offsets([s.num_features for s in specs])):
        if not spec.in_use:  # no decoding path: Moses never looks it up
            tables.append(PhraseTable(spec.path, spec.num_features, {}))
            continue
        with reading_phase("phrase table", spec.path, filtered=vocabulary is not None, quiet=quiet) as phase:
            table = load_phrase_table(spec.path, score_format=spec.score_format, num_features=spec.num_features,
                                      vocabulary=vocabulary, progress=phase.progress, mapped=mapped,
                                      warn_empty=not quiet)
            phase.said(f"{len(table):,} phrase pairs kept")
        own = replace(weights, tm=weights.tm[start:start + spec.num_features])
        tables.append(table.limited(spec.table_limit, moses_ranker(lm, own)))
    return alternatives(tables, name)


def refiltered(
    model: Model, vocabulary: Callable[[tuple[str, ...]], bool] | None, *, quiet: bool = False,
    mapped: Mapping[str, object] | None = None,
) -> Model:
    """``model`` with its phrase table read again from its file, keeping the source phrases
    ``vocabulary`` accepts (None: all), and limited as before (same ranking: same LM, weights).

    The LM and weights are shared, not re-read: this is how a filtered decode moves from one
    batch of input lines to the next, and how the translation server makes each sentence's
    tables from binarized ones. ``quiet``: log nothing (no reading phases, no empty-table
    warning). ``mapped``: binarized tables opened already, by path (:func:`mapped_tables`), looked
    up instead of opening their paths again. ``model`` is not changed, so threads may refilter
    one model at once. Raises ModelError for a model whose table came from memory (no file to
    read again).
    """
    if not model.table_sources:
        raise ModelError(f"{model.name}: its phrase table was given in memory; there is no file to filter")
    check_refilterable(model, mapped)
    if len(model.table_sources) > 1:
        table = _read_alternatives(model.table_sources, vocabulary, model.lm, model.weights, model.name, quiet, mapped)
    else:
        spec = model.table_sources[0]
        with reading_phase("phrase table", spec.path, filtered=vocabulary is not None, quiet=quiet) as phase:
            table = load_phrase_table(
                spec.path, score_format=spec.score_format, num_features=spec.num_features or None,
                vocabulary=vocabulary, progress=phase.progress, mapped=mapped, warn_empty=not quiet,
            )
            phase.said(f"{len(table):,} phrase pairs kept")
        table = table.limited(spec.table_limit, moses_ranker(model.lm, model.weights))
    reordering = model.reordering
    if reordering is not None:  # its table is filtered to the same source phrases
        with reading_phase("reordering table", reordering.table.path, filtered=vocabulary is not None,
                           quiet=quiet) as phase:
            rows = load_reordering_table(
                reordering.table.path, conditioned_on_target=reordering.table.conditioned_on_target,
                vocabulary=vocabulary, progress=phase.progress, mapped=mapped,
                property_index=reordering.table.property_index, pairs=getattr(table, "store", None),
            )
            phase.said(f"{len(rows):,} entries kept")
        reordering = replace(reordering, table=rows)
    return replace(model, table=table, reordering=reordering)


def check_refilterable(model: Model, mapped: Mapping[str, object] | None = None) -> None:
    """ModelError naming the first table file of ``model`` that :func:`refiltered` could not read
    again: a pipe or FIFO, which is read once (its data are gone after the first reading)."""
    paths = [spec.path for spec in model.table_sources if spec.in_use]
    if model.reordering is not None:
        paths.append(model.reordering.table.path)
    for path in paths:
        if (mapped is None or path not in mapped) and not is_regular(path) and os.path.exists(path) \
                and moses_table_kind(path) is None:
            raise ModelError(
                f"{path}: filtering to the input reads the table again for each batch of input lines "
                "(--filter-chunk), and a pipe or FIFO can be read only once; give a regular file, or decode without --filter"
            )


def table_path(config: str | Path | None, phrase_table: str | Path | None, ini_paths: str = "ini") -> str | None:
    """The phrase-table file a load would read: ``phrase_table``, else the ini's (a Moses binary
    table first, else the largest of several), else None."""
    if phrase_table is not None:
        return str(phrase_table)
    if config is None:
        return None
    lines = load_moses_ini(config, ini_paths).phrase_tables()
    sizes = [(moses_table_kind(f.path) is not None, os.path.getsize(f.path) if os.path.isfile(f.path) else 0, f.path)
             for f in lines]
    return max(sizes)[-1] if sizes else None


def _ini_files_exist(cfg: MosesConfig, lms: bool, tables: bool) -> None:
    """A file a moses.ini names that is not there, in any form Moses would look for (the path,
    ``.gz``, a compact table's extensions), is an error naming the ini's line: the reader would
    name the path alone. ``lms``, ``tables``: whether the ini's LMs and phrase tables are read
    (not replaced by ``--lm``, ``--phrase-table``)."""
    for f in cfg.model_files(lms, tables):
        if not moses_file_exists(f.path):
            raise ModelError(f"{cfg.path}:{f.lineno}: {f.name}'s path {f.path}: no such file")


def _binarized_files_intact(cfg: MosesConfig) -> None:
    """A moses.ini ``fstdecode binarize`` wrote names binarized files beside it: each of them must
    still be one (a file cut to a few bytes no longer shows the magic, and would read as an empty
    text table: every word copied through)."""
    if not written_by_binarize(cfg.path):
        return
    here = os.path.dirname(os.path.realpath(cfg.path))
    for f in cfg.model_files():
        path = f.path
        if os.path.dirname(os.path.realpath(path)) != here or not os.path.isfile(path):
            continue  # a file elsewhere (a KenLM binary is used where it is), or none: the reader says
        binarized = (is_lm_image(path) or is_kenlm_binary(path)) if f.kind == "KENLM" else is_binary_table(path)
        if not binarized:
            raise ModelError(f"{path}: not a binarized file, though {cfg.path} (written by fstdecode binarize) "
                             "names it as one: it was cut short or replaced; run fstdecode binarize again")


def binarized_tables(config: str | Path | None, phrase_table: str | Path | None, ini_paths: str = "ini") -> bool:
    """Whether every table a load would read is binarized (``fstdecode binarize``): the phrase
    tables (``phrase_table``, else the ini's) and the ini's reordering table, if any. False when
    there is no table file, or one cannot be opened (the load then says what is wrong)."""
    if config is None and phrase_table is None:
        return False
    cfg = load_moses_ini(config, ini_paths) if config is not None else None
    paths = [str(phrase_table)] if phrase_table is not None else [f.path for f in cfg.phrase_tables()]
    reordering = _reordering_path(cfg)
    if reordering is not None:
        paths.append(reordering)
    try:
        return bool(paths) and all(is_mapped_table(path) for path in paths)
    except OSError:
        return False


def mapped_tables(model: Model) -> dict[str, object]:
    """The binarized tables of ``model`` (phrase tables and reordering table) and its Moses binary
    tables (a ProbingPT, shared by a LexicalReordering that reads its pairs' rows), each opened
    (mapped) and checked once, by the path its reader is given: :func:`refiltered`'s ``mapped``, so that
    the tables a model filters stay those it was loaded with, whatever happens to the paths. A
    text table is not in it. Raises the reader's error for a file that is bad or stale."""
    mapped: dict[str, object] = {}
    for spec in model.table_sources:
        if spec.in_use and is_binary_table(spec.path):
            mapped[spec.path] = open_binary_table(spec.path, "phrases", PhraseTableError, "not a phrase table")
        elif spec.in_use and moses_table_kind(spec.path) is not None:
            mapped[spec.path] = open_moses_table(spec.path, PhraseTableError)
    reordering = model.reordering
    if reordering is not None and reordering.table.property_index is not None:  # the pairs' rows: their table's
        if reordering.table.path not in mapped:
            mapped[reordering.table.path] = open_moses_table(reordering.table.path, ReorderingTableError)
    elif reordering is not None and moses_reordering_kind(reordering.table.path) is not None:
        mapped[reordering.table.path] = open_moses_table(reordering.table.path, ReorderingTableError, reordering=True)
    elif reordering is not None and is_binary_table(reordering.table.path):
        want = "reordering-fe" if reordering.table.conditioned_on_target else "reordering-f"
        mapped[reordering.table.path] = open_binary_table(
            reordering.table.path, want, ReorderingTableError, f"but the feature needs a {want} table")
    return mapped


def _semantics(semantics: str | None, config: str | Path | None) -> str:
    """The distortion semantics asked for, else ``moses`` for a moses.ini and ``paper`` otherwise."""
    if semantics is None:
        return "moses" if config is not None else "paper"
    if semantics not in SEMANTICS:
        raise ModelError(f"unknown distortion semantics {semantics!r}; choose from {', '.join(SEMANTICS)}")
    return semantics


def _reordering_model(
    cfg: MosesConfig | None,
    source_vocabulary: Callable[[tuple[str, ...]], bool] | None,
    progress: Callable[[int, int], None] | None = None,
    pairs: object = None,
) -> ReorderingModel | None:
    """The ini's LexicalReordering feature with its table loaded, or None; errors name the ini line.
    ``pairs``: the phrase table's store (a compact reordering table is looked up for its pairs)."""
    feat = cfg.lexical_reordering() if cfg is not None else None
    if feat is None:
        return None
    where = f"{cfg.path}:{feat.lineno}: "
    try:
        config = parse_reordering_type(feat.args["type"], where)
        if "num-features" in feat.args and feat.num_features != config.num_features:
            raise LexicalReorderingError(
                f"{where}num-features={feat.num_features} but type {config.type_string!r} has "
                f"{config.num_features} feature(s)"
            )
        defaults = feat.args.get("default-scores")
        if "property-index" in feat.args:
            table = _kept_reordering(cfg, feat, config.condition, source_vocabulary)
        else:
            table = load_reordering_table(
                feat.path, conditioned_on_target=config.condition == "fe", vocabulary=source_vocabulary,
                progress=progress, pairs=pairs,
            )
        return ReorderingModel(
            config, table, parse_default_scores(defaults, where) if defaults else None, feat.name
        )
    except LexicalReorderingError as err:
        message = str(err)
        raise LexicalReorderingError(message if message.startswith(cfg.path) else where + message) from None


def _kept_reordering(
    cfg: MosesConfig, feat: FeatureLine, condition: str, source_vocabulary: Callable[[tuple[str, ...]], bool] | None,
) -> ReorderingTable:
    """The rows of a ``LexicalReordering ... property-index=K`` line (Moses2's form): the reordering
    scores that the ini's one ProbingPT keeps in its pairs, from the K-th on (one row a pair, so
    conditioned on source and target)."""
    probing = [f for f in cfg.phrase_tables() if f.kind == "ProbingPT"]
    if len(probing) != 1:
        raise LexicalReorderingError(
            f"property-index reads the reordering scores a ProbingPT keeps in its pairs, and the ini has "
            f"{len(probing)} ProbingPT lines; give it one (or the reordering table's path=)")
    if condition != "fe":
        raise LexicalReorderingError(
            "property-index reads one row a phrase pair, a table conditioned on source and target: give a type "
            "ending in -fe")
    try:
        return load_reordering_table(probing[0].path, vocabulary=source_vocabulary,
                                     property_index=feat.int_arg("property-index", 0))
    except ReorderingTableError as err:
        raise LexicalReorderingError(str(err)) from None


def _reordering_weights(
    w: Weights, reordering: ReorderingModel | None, cfg: MosesConfig | None, assignments: Sequence[str], flag: str
) -> Weights:
    """``w`` with one ``lr`` weight per reordering feature (1.0 each when none was given);
    errors name ``flag`` (the command's weight flag) when the weights came from it."""
    items = [item for item in assignments if assignment_name(item, moses_names(_declared(cfg))) == "lr"]
    given = bool(items)
    if reordering is None:
        if given or w.lr:
            where = f"{flag} {items[-1]!r}" if given else "the lr weights"
            raise ModelError(f"{where}: the model has no lexicalized reordering (LexicalReordering) feature")
        return w
    n = reordering.num_features
    if not w.lr or (not given and cfg is not None and reordering.name not in cfg.weights):
        return replace(w, lr=(1.0,) * n)
    if len(w.lr) != n:
        origin = f"{flag} {items[-1]!r}" if given else f"{cfg.path if cfg else ''}: [weight] {reordering.name}="
        raise ModelError(
            f"{origin}: {len(w.lr)} weight(s) for {n} lexicalized reordering feature(s) "
            f"(type {reordering.config.type_string!r}); give one per feature"
        )
    return w


def empty_table(path: str, num_scores: int) -> PhraseTable:
    """A table with no pairs: the model of a decode whose pairs live in a compiled P."""
    return PhraseTable(str(path), num_scores, {})


def with_distortion_limit(model: Model, d: int) -> Model:
    """The same model with distortion limit ``d`` (>= 0, or -1 for no limit)."""
    return replace(model, distortion_limit=checked_distortion_limit(d))


def example_model() -> Model:
    """The built-in example model (``fstdecode decode`` with no model flags)."""
    return load_model()
