"""A loaded translation model: phrase table, LM, weights and distortion limit.

:func:`load_model` mirrors the CLI: a moses.ini supplies everything, and
explicit arguments (the command-line flags) override it. With no arguments
at all it loads the built-in example (:func:`example_model`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.io.arpa import ArpaLM
from fstdecode.model.features import Weights
from fstdecode.io.moses_ini import MosesConfig, load_moses_ini
from fstdecode.io.phrase_table import PhrasePair, PhraseTable, load_phrase_table


class ModelError(FstdecodeError):
    """A model that cannot be assembled from the given files and flags."""


#: The distortion limit when neither moses.ini nor a flag gives one (Moses' default).
DEFAULT_DISTORTION_LIMIT = 6

#: moses.ini's ``[distortion-limit] -1`` (no limit): larger than any sentence.
UNLIMITED = 2**31 - 1

# moses.ini feature name prefix -> fstdecode weight name.
_INI_WEIGHTS = {
    "KENLM": "lm",
    "PhraseDictionaryMemory": "tm",
    "Distortion": "distortion",
    "WordPenalty": "word",
    "PhrasePenalty": "phrase",
    "UnknownWordPenalty": "unknown",
}


@dataclass(frozen=True)
class Model:
    """Everything a search needs but the sentence.

    Invariant: ``len(weights.tm) == table.num_scores`` and ``distortion_limit >= 0``.
    ``lm`` is read up to the order the searches use: moses.ini's KENLM
    ``order=``, or ``--lm-order``, or else the file's own order.
    """

    table: PhraseTable
    lm: ArpaLM
    weights: Weights
    distortion_limit: int
    name: str = "model"
    early_distortion_cost: bool = False

    def search_lm(self) -> ArpaLM:
        """The LM the searches score with (its order is the search's order)."""
        return self.lm


def example_dir() -> Path:
    """The folder of the built-in example model (Chang & Collins' slides example)."""
    return Path(str(resources.files("fstdecode") / "data"))


def _weights_from_ini(cfg: MosesConfig) -> Weights:
    """Weights from the ini's [weight] section; features absent from the ini weigh 0."""
    values: dict[str, object] = {"lm": 0.0, "tm": (0.0,), "distortion": 0.0, "word": 0.0, "phrase": 0.0, "unknown": 0.0}
    for feat in cfg.features:
        key = _INI_WEIGHTS.get(feat.kind)
        if key is None:
            continue
        default = (1.0,) if key != "tm" else (1.0,) * int(feat.args.get("num-features", "1"))
        w = cfg.weight(feat.name, default)
        values[key] = tuple(w) if key == "tm" else w[0]
    # Moses adds UnknownWordPenalty with weight 1 even when the ini does not list it.
    if not any(f.kind == "UnknownWordPenalty" for f in cfg.features):
        values["unknown"] = 1.0
    return Weights(**values)  # type: ignore[arg-type]


def moses_ranker(lm: ArpaLM, weights: Weights):
    """Moses' table-limit ranking: weighted TM + word penalty + weighted LM estimate of the target."""

    def rank(pair: PhrasePair) -> float:
        return (
            sum(w * v for w, v in zip(weights.tm, pair.scores))
            + weights.word * -len(pair.target)
            + weights.lm * lm.phrase_estimate(pair.target)
        )

    return rank


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
    source_vocabulary=None,
    table: PhraseTable | None = None,
) -> Model:
    """Assemble a model; explicit arguments override the moses.ini ``config``.

    With neither a config nor a phrase table nor an LM, the built-in example
    is loaded (and the other arguments still apply). ``weights`` are
    ``NAME=VALUE`` strings as for ``--weight``. ``source_vocabulary`` (a
    predicate on source phrases) filters the phrase table while loading.
    ``table``, if given, is used instead of reading one (``--phrase-fst``).
    Raises ModelError (or the reader's error) naming the file and line.
    """
    if distortion_limit is not None and distortion_limit < 0:
        raise ModelError(f"--distortion-limit must be >= 0, got {distortion_limit}")
    cfg = load_moses_ini(config) if config is not None else None
    if cfg is None and phrase_table is None and lm is None:
        cfg = load_moses_ini(example_dir() / "moses.ini")
        name = "built-in example"
    else:
        name = str(config or phrase_table)
    ini_lm = cfg.lm() if cfg else None
    ini_pt = cfg.phrase_table() if cfg else None
    lm_path = lm or (ini_lm.args.get("path") if ini_lm else None)
    pt_path = phrase_table or (ini_pt.args.get("path") if ini_pt else None)
    if lm_path is None:
        raise ModelError("no language model: give --lm FILE or a moses.ini with a KENLM line")
    if pt_path is None and table is None:
        raise ModelError("no phrase table: give --phrase-table FILE or a moses.ini with a PhraseDictionaryMemory line")
    order = lm_order or (int(ini_lm.args.get("order", "0")) if ini_lm and lm is None else 0) or None
    language_model = ArpaLM.from_file(lm_path, max_order=order)

    w = _weights_from_ini(cfg) if cfg is not None else Weights()
    w = w.override(list(weights))
    limit = table_limit if table_limit is not None else int(ini_pt.args.get("table-limit", "0")) if ini_pt else 0
    num = int(ini_pt.args["num-features"]) if ini_pt and phrase_table is None and "num-features" in ini_pt.args else None
    if table is None:
        table = load_phrase_table(
            pt_path, score_format=tm_score_format or "prob", num_features=num, vocabulary=source_vocabulary
        )
    w = w.with_tm_columns(table.num_scores)
    table = table.limited(limit, moses_ranker(language_model, w))
    if distortion_limit is None:
        distortion_limit = cfg.distortion_limit if cfg and cfg.distortion_limit is not None else DEFAULT_DISTORTION_LIMIT
        if distortion_limit == -1:
            distortion_limit = UNLIMITED
    return Model(
        table=table,
        lm=language_model,
        weights=w,
        distortion_limit=distortion_limit,
        name=name,
        early_distortion_cost=bool(cfg and cfg.early_distortion_cost),
    )


def empty_table(path: str, num_scores: int) -> PhraseTable:
    """A table with no pairs: the model of a decode whose pairs live in a compiled P."""
    return PhraseTable(str(path), num_scores, {})


def with_distortion_limit(model: Model, d: int) -> Model:
    """The same model with another distortion limit."""
    if d < 0:
        raise ModelError(f"distortion limit must be >= 0, got {d}")
    return replace(model, distortion_limit=d)


def example_model() -> Model:
    """The built-in example model (``fstdecode decode`` with no model flags)."""
    return load_model()
