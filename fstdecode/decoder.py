"""Decode sentences with a model: the Python API behind ``fstdecode decode``.

>>> from fstdecode import load_model, Decoder
>>> decoder = Decoder(load_model())            # the built-in example
>>> result = decoder.decode("das muss unsere sorge gleichermaßen sein")
>>> result.best.translation
'this must also be our concern'

Every returned :class:`Derivation` carries the features and total computed
by the scorer (:mod:`fstdecode.problem.scorer`) from its strings, never the
search's own running sum; ``search_score`` keeps the latter so that tests
can hold the two together.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.model.features import Features
from fstdecode.model.model import Model
from fstdecode.problem.scorer import score as score_derivation
from fstdecode.search import bounded, coverage_dp, signature_beam, signature_dp, stack
from fstdecode.reference import exhaustive
from fstdecode.problem.problem import SearchProblem, SearchResult
from fstdecode.problem.sentence import Phrase, Sentence, build_sentence


class DecodeError(FstdecodeError):
    """A decoding request that cannot be served (e.g. an unknown method)."""


Searcher = Callable[..., SearchResult]

#: ``--method`` name -> search function (each proves optimality).
METHODS: dict[str, Searcher | None] = {
    "dp": signature_dp.search,
    "fst": None,  # the WFST cascade, served by fstdecode.fst.cascade.Cascade
    "bounded": bounded.search,
    "beam": signature_beam.search,
    "stack": stack.search,
    "coverage": coverage_dp.search,
    "exhaustive": exhaustive.search,
}

#: The search options each method takes beyond nbest and max_states (CLI flag names).
OPTIONS: dict[str, tuple[str, ...]] = {
    "beam": ("beam_size", "beam_threshold", "heuristic"),
    "stack": ("beam_size", "beam_threshold", "distortion_estimate", "early_pruning", "early_threshold"),
}


@dataclass(frozen=True)
class Derivation:
    """A complete derivation: phrases in target order, with its features and model score."""

    source: tuple[str, ...]
    phrases: tuple[Phrase, ...]
    features: Features
    score: float
    search_score: float

    @property
    def translation(self) -> str:
        return " ".join(w for p in self.phrases for w in p.target)

    def segmentation(self) -> str:
        """Moses' n-best segmentation: ``src=tgt`` spans, 0-based and inclusive."""
        out, k = [], 0
        for p in self.phrases:
            m = len(p.target)
            src = f"{p.start}" if p.start == p.end else f"{p.start}-{p.end}"
            tgt = f"{k}" if m == 1 else f"{k}-{k + m - 1}"
            out.append(f"{src}={tgt}")
            k += m
        return " ".join(out)


@dataclass(frozen=True)
class Stats:
    states: int
    transitions: int
    seconds: float


@dataclass(frozen=True)
class DecodeResult:
    """The outcome for one input line; ``error`` is set (and ``derivations`` empty) on failure."""

    id: int
    source: tuple[str, ...]
    derivations: tuple[Derivation, ...] = ()
    optimal: bool = False
    stats: Stats = field(default_factory=lambda: Stats(0, 0, 0.0))
    error: str | None = None

    @property
    def best(self) -> Derivation | None:
        return self.derivations[0] if self.derivations else None


class Decoder:
    """Decodes sentences with one model and one search method.

    ``nbest`` derivations are returned per sentence (best first);
    ``max_states`` caps the states a search may create, after which the
    line's result carries an error instead of derivations.

    ``options`` are the method's own search options (:data:`OPTIONS`): the
    beam methods take ``beam_size`` and ``beam_threshold``; ``beam`` also
    ``heuristic``; ``stack`` also ``distortion_estimate`` and
    ``early_pruning`` (Moore & Quirk 2007). Options left at None keep the
    method's defaults.

    The ``fst`` method also takes ``phrase_fst`` (a compiled P, see
    :mod:`fstdecode.fst.phrase_fst`), ``lattice_dir`` (write each
    sentence's lattice there as ``<id>.fst``), ``lattice_prune`` (prune it
    to paths within that cost of the best first) and ``unique`` (n-best
    with distinct translations).
    """

    def __init__(
        self,
        model: Model,
        method: str = "dp",
        *,
        nbest: int = 1,
        max_states: int | None = None,
        phrase_fst=None,
        lattice_dir: str | None = None,
        lattice_prune: float | None = None,
        unique: bool = False,
        **options,
    ) -> None:
        if method not in METHODS:
            raise DecodeError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
        if nbest < 1:
            raise DecodeError(f"--nbest must be >= 1, got {nbest}")
        self.model = model
        self.method = method
        self.nbest = nbest
        self.max_states = max_states
        self.lm = model.search_lm()
        self.lattice_dir = lattice_dir
        self.lattice_prune = lattice_prune
        self.unique = unique
        self.options = {k: v for k, v in options.items() if v is not None and v is not False}
        allowed = OPTIONS.get(method, ())
        for name in self.options:
            if name not in allowed:
                users = [m for m, names in OPTIONS.items() if name in names]
                flag = "--" + name.replace("_", "-")
                raise DecodeError(f"{flag} needs --method {' or '.join(users) or '?'}, not {method}")
        self.cascade = None
        if method == "fst":
            from fstdecode.fst.cascade import Cascade

            self.cascade = Cascade(model, phrase_fst)
        elif phrase_fst is not None or lattice_dir is not None or unique:
            raise DecodeError("--phrase-fst, --lattice-dir and --nbest-unique need --method fst")

    def problem(self, words: Sequence[str]) -> SearchProblem:
        """The integer search problem of one tokenized sentence."""
        sentence: Sentence = build_sentence(self.model.table, tuple(words))
        return SearchProblem(sentence, self.lm, self.model.weights, self.model.distortion_limit)

    def decode(self, line: str | Sequence[str], id: int = 0) -> DecodeResult:
        """Decode one sentence (a string is whitespace-tokenized).

        Never raises on a search failure: an empty line gives an empty
        translation, a search that hits its limits gives ``error``.
        """
        words = tuple(line.split()) if isinstance(line, str) else tuple(line)
        start = time.perf_counter()
        if not words:
            empty = self._derivation(words, (), 0.0)
            return DecodeResult(id, words, (empty,), True, Stats(0, 0, 0.0))
        try:
            result = self._search(words, id)
        except FstdecodeError as e:
            return DecodeResult(id, words, (), False, Stats(0, 0, time.perf_counter() - start), str(e))
        derivations = tuple(self._derivation(words, phrases, s) for s, phrases in result.hypotheses)
        stats = Stats(result.states, result.transitions, time.perf_counter() - start)
        return DecodeResult(id, words, derivations, result.optimal, stats)

    def _search(self, words: tuple[str, ...], id: int) -> SearchResult:
        if self.cascade is None:
            return METHODS[self.method](self.problem(words), nbest=self.nbest, max_states=self.max_states, **self.options)
        out = self.cascade.search(
            words, nbest=self.nbest, unique=self.unique, max_states=self.max_states, prune=self.lattice_prune
        )
        if self.lattice_dir is not None:
            os.makedirs(self.lattice_dir, exist_ok=True)
            out.lattice.write(os.path.join(self.lattice_dir, f"{id}.fst"))
        return out.result

    def _derivation(self, words: tuple[str, ...], phrases: tuple[Phrase, ...], search_score: float) -> Derivation:
        feats, total = score_derivation(len(words), phrases, self.lm, self.model.weights)
        return Derivation(words, phrases, feats, total, search_score)


def decode(model: Model, sentence: str, method: str = "dp", **kwargs) -> DecodeResult:
    """Decode one sentence: the functional form of :class:`Decoder`."""
    return Decoder(model, method, **kwargs).decode(sentence)
