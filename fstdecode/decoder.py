"""Decode sentences with a model: the Python API behind ``fstdecode decode``.

>>> from fstdecode import load_model, Decoder
>>> decoder = Decoder(load_model())            # the built-in example
>>> result = decoder.decode("das muss unsere sorge gleichermaßen sein")
>>> result.best.translation
'this must also be our concern'

Every returned :class:`Derivation` carries the features and total computed
by the scorer (:mod:`fstdecode.problem.scorer`) from its strings, never the
search's own running sum; ``search_score`` keeps the latter so that tests
can hold the two together. The empty derivation (of an empty line) scores 0 in
every feature and in total, as in Moses (:meth:`Decoder._derivation`).
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.io.writing import WriteError
from fstdecode.io.phrase_table import alignment_points
from fstdecode.io.tokens import is_token, split_tokens
from fstdecode.io.xml_input import XML_INPUT_MODES, XmlInputError, XmlOption, parse_markup
from fstdecode.model.features import Features
from fstdecode.model.model import Model
from fstdecode.problem.problem import PhraseScores, SearchLimitError, SearchProblem, SearchResult
from fstdecode.problem.scorer import score as score_derivation
from fstdecode.problem.sentence import Phrase, build_sentence, with_xml_options
# Importing the method modules registers them, in this order (fstdecode.search.base.METHODS):
# the native core's searches, the cascade, then the reference oracle a user may still pick.
import fstdecode.search.native_signature  # noqa: F401, I001  (dp, beam, bounded)
import fstdecode.search.native_stack  # noqa: F401  (stack)
from fstdecode.search.native import NativeTable
from fstdecode.search.moses_nbest import MosesNbest, NbestWriter, supports
import fstdecode.search.native_coverage  # noqa: F401  (coverage)
import fstdecode.search.native_exact  # noqa: F401  (exact)
import fstdecode.search.prove  # noqa: F401  (prove)
import fstdecode.fst.searcher  # noqa: F401  (fst)
import fstdecode.reference.exhaustive  # noqa: F401  (exhaustive)
from fstdecode.search.base import METHODS, SearchOptions, Searcher
from fstdecode.search.stack import StackOptions
from fstdecode.search.kbest import distinct

#: The method of ``fstdecode decode`` and ``Decoder`` when none is named.
DEFAULT_METHOD = "prove"

#: Tokens an input line may not hold: the LM's sentence markers (Moses' KenLM would score them as
#: markers in mid-sentence) and Moses' field separator, which would break the n-best format.
RESERVED_TOKENS = ("<s>", "</s>", "|||")


class DecodeError(FstdecodeError):
    """A decoding request that cannot be served (e.g. an unknown method, or input that is not text)."""


@dataclass(frozen=True)
class Derivation:
    """A complete derivation: phrases in target order, with its features and model score."""

    source: tuple[str, ...]
    phrases: tuple[Phrase, ...]
    features: Features
    score: float
    search_score: float
    #: The stack decoder's n-best lists: each phrase's recombination winner (SearchResult.winners).
    winners: tuple[tuple[Phrase, ...] | None, ...] | None = None

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

    def alignment(self) -> tuple[tuple[int, int], ...]:
        """The word alignment as Moses prints it (``-print-alignment-info``): ``(source, target)``
        sentence positions, 0-based, phrase by phrase in target order, each phrase's points from
        its table entry's alignment field, sorted by (source, target) and shifted to where the
        phrase sits. A pair whose table entry has no alignment adds nothing; an unknown word
        copied through is aligned to itself."""
        out, k = [], 0
        for p in self.phrases:
            out.extend((p.start + i, k + j) for i, j in alignment_points(p.pair))
            k += len(p.target)
        return tuple(out)

    def alignment_text(self) -> str:
        """:meth:`alignment` in Moses' form: ``0-0 1-2 2-1`` (empty when there is none)."""
        return " ".join(f"{i}-{j}" for i, j in self.alignment())


@dataclass(frozen=True)
class Stats:
    """What one line's search cost: states created or kept (per method), transitions, wall time;
    for the A* (``exact``, ``prove``), ``phases``: the seconds of the stack decoder's lower bound
    (``lower``), of building the heuristic (``bounds``) and of the A*'s expansion (``search``)."""

    states: int
    transitions: int
    seconds: float
    phases: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class DecodeResult:
    """The outcome for one input line.

    * Proven best: ``derivations`` set, ``optimal`` True, ``upper_bound`` the best score (the
      certificate; ``gap`` 0).
    * Over budget (``--max-states``): the best derivations found (by the
      method, else by the default stack decoder), ``optimal`` False and
      ``reason`` saying so; no derivations only if none was found at all.
    * Failed (bad input, no derivation within the distortion limit):
      ``error`` set and ``derivations`` empty.
    """

    id: int
    source: tuple[str, ...]
    derivations: tuple[Derivation, ...] = ()
    optimal: bool = False
    stats: Stats = field(default_factory=lambda: Stats(0, 0, 0.0))
    error: str | None = None
    reason: str | None = None
    #: A bound on the model score of every derivation, when the search proved one.
    upper_bound: float | None = None
    #: The A*'s bound before it expanded anything (``exact``, ``prove``): see :attr:`root_gap`.
    root_bound: float | None = None
    #: Why ``prove`` left the line unproven (its state budget, or its tables' work cap), without
    #: the warning ``reason`` gives: that is the method's normal outcome.
    unproven: str | None = None
    #: A decoder with :class:`~fstdecode.search.moses_nbest.MosesNbest` lines: the n-best lines the
    #: core wrote, in Moses' float arithmetic and order (``derivations`` then holds only the best,
    #: unless the setting keeps them all); None otherwise.
    nbest_text: str | None = None
    #: With the derivations kept: each one's (feature field, total) in Moses' arithmetic, in order.
    nbest_fields: tuple[tuple[str, float], ...] | None = None

    @property
    def best(self) -> Derivation | None:
        return self.derivations[0] if self.derivations else None

    @property
    def gap(self) -> float | None:
        """``upper_bound`` minus the best derivation's score (0 at a proven optimum), when known."""
        return self._below(self.upper_bound)

    @property
    def root_gap(self) -> float | None:
        """``root_bound`` minus the best derivation's score: the gap the proof started from (the
        A*'s bound at its start against the stack decoder's result, or the A*'s own result if
        better), when known; :attr:`gap` is where it ended."""
        return self._below(self.root_bound)

    def _below(self, bound: float | None) -> float | None:
        """How far the best derivation's score lies below ``bound`` (at least 0), when both exist."""
        if bound is None or self.best is None:
            return None
        return max(0.0, bound - self.best.score)


def reported_bound(bound: float | None, derivations: Sequence[Derivation], optimal: bool) -> float | None:
    """The search's upper bound as reported beside the scorer's totals: the best derivation's own
    score when proven (the search's sum and the scorer's may differ in the last bits), and never
    below it otherwise, so that ``upper_bound >= score`` holds to the bit and equality means a
    proof."""
    if bound is None or not derivations:
        return bound
    return derivations[0].score if optimal else max(bound, derivations[0].score)


class Decoder:
    """Decodes sentences with one model and one search method.

    ``method`` is a registered method name (:data:`METHODS`); its options
    come either as one ``options`` object of the method's dataclass
    (e.g. :class:`~fstdecode.search.stack.StackOptions`) or as keyword
    arguments naming its fields (``beam_size=10``), which are validated
    there, for the API as for the CLI. ``nbest`` and ``max_states`` are
    options of every method. Every method but the ``exhaustive`` oracle runs in the native core,
    with every feature of the model; there is no other engine to pick (the ``engine`` keyword
    was removed). ``unique`` (an option of every method) makes the n-best hold distinct translations.

    ``xml_input`` is Moses' ``-xml-input`` (:mod:`fstdecode.io.xml_input`): ``pass-through``
    (the default) reads lines as they are; ``ignore`` strips markup; ``exclusive`` and
    ``inclusive`` also change the phrase options of a line with markup (that line's problem is
    then built in Python, and a native search runs on those options). ``--method fst`` builds
    its options from the table in the cascade and refuses them.

    Every line gets a result (:meth:`decode` never raises on a search
    failure); see :class:`DecodeResult` for the rule on budgets.
    """

    def __init__(
        self,
        model: Model,
        method: str = DEFAULT_METHOD,
        options: SearchOptions | None = None,
        *,
        xml_input: str = "pass-through",
        moses_nbest: MosesNbest | None = None,
        **values: Any,
    ) -> None:
        if not isinstance(model, Model):
            raise DecodeError(f"Decoder takes a Model (fstdecode.load_model()), got {type(model).__name__}")
        entry = METHODS.get(method) if isinstance(method, str) else None
        if entry is None:
            raise DecodeError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
        if xml_input not in XML_INPUT_MODES:
            raise DecodeError(f"unknown xml_input {xml_input!r}; choose from {', '.join(XML_INPUT_MODES)}")
        if xml_input in ("exclusive", "inclusive") and method == "fst":
            raise DecodeError(
                f"--xml-input {xml_input} is not supported by --method fst (its phrase options come from P); "
                "use another method, or --xml-input ignore"
            )
        self.xml_input = xml_input
        if moses_nbest is not None and not isinstance(moses_nbest, MosesNbest):
            raise DecodeError(f"moses_nbest takes a MosesNbest, got {type(moses_nbest).__name__}")
        self.moses_nbest = moses_nbest
        if options is None:
            options = entry.options.build(method, values)
        elif values:
            raise DecodeError("give the search options either as an options object or as keywords, not both")
        elif type(options) is not entry.options:
            raise DecodeError(f"--method {method} takes {entry.options.__name__}, not {type(options).__name__}")
        self.model = model
        self.method = method
        self.options = options
        #: The distortion semantics the searches use: the model's (README.md, "Distortion semantics").
        self.semantics = model.distortion_semantics
        self.lm = model.search_lm()
        self.searcher: Searcher = entry.searcher(model, options)
        self._fallback: Searcher | None = None
        self._phrase_scores = PhraseScores()  # ŵ(p) of the model's pairs, shared by every sentence
        # Moses' n-best lines, written by the core, for a model its arithmetic knows (else the
        # derivations' own values: moses_output.nbest).
        self._nbest_writer = NbestWriter(model, moses_nbest) if moses_nbest is not None and supports(model) else None
        # The table in the core, made with the decoder as Moses loads its own.
        self._phrase_scores.native = NativeTable(model.table, self.lm, model.weights,
                                                 moses_values=self._nbest_writer is not None)

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        """Pickle the recipe, not the searcher's native objects: every argument of ``__init__``
        (:func:`settings`), read back from the attribute of the same name.

        Unpickling builds the searcher again; the model pickles as its own ``__reduce__`` says
        (a NativeLM by its file's path, read again on unpickling). Deriving the recipe from the
        signature means a new setting cannot be lost on its way to a worker: it must be kept under
        its own name, or pickling fails at once (``tests/unit/test_hostile.py``).
        """
        return (_rebuild_decoder, (self.model, self.method, self.options, self.settings()))

    def settings(self) -> dict[str, Any]:
        """The keyword-only settings of ``__init__`` (xml_input, ...) as this decoder has them."""
        return {name: getattr(self, name) for name in _KEYWORD_SETTINGS}

    def variant(self, method: str, options: SearchOptions) -> Decoder:
        """A decoder of this one's model and settings for ``method`` with ``options`` (an object of
        the method's dataclass) that shares this decoder's table in the core instead of making its
        own: the translation server (:mod:`fstdecode.server`) keeps one decoder per method and
        n-best size of a model, with one copy of its table. Raises DecodeError as ``__init__`` does.
        """
        entry = METHODS.get(method) if isinstance(method, str) else None
        if entry is None or type(options) is not entry.options or (
            method == "fst" and self.xml_input in ("exclusive", "inclusive")
        ):
            return Decoder(self.model, method, options, **self.settings())  # refused there, with its message
        other = object.__new__(Decoder)  # (not copy.copy: that pickles through __reduce__, a rebuild)
        other.__dict__.update(self.__dict__)
        other.method, other.options = method, options
        other.searcher = entry.searcher(self.model, options)
        other._fallback = None
        return other

    @property
    def nbest(self) -> int:
        return self.options.nbest

    def problem(self, words: Sequence[str], id: int = 0, markup: Sequence[XmlOption] = ()) -> SearchProblem:
        """The integer search problem of one tokenized sentence (its options are looked up on first use).

        With ``markup`` (and ``xml_input`` exclusive or inclusive), the options are built here, in
        Python, and changed as :func:`~fstdecode.problem.sentence.with_xml_options` says; the
        per-decoder cache of pair scores is not used for them (their pairs live as long as the line).
        """
        m = self.model
        if markup and self.xml_input in ("exclusive", "inclusive"):
            sentence = with_xml_options(
                build_sentence(m.table, words), markup, self.xml_input == "exclusive", m.table.num_scores
            )
            return SearchProblem(
                sentence, self.lm, m.weights, m.distortion_limit, id,
                reordering=m.reordering, semantics=self.semantics, early_distortion_cost=m.early_distortion_cost,
            )
        return SearchProblem.from_table(
            words, m.table, self.lm, m.weights, m.distortion_limit, id, self._phrase_scores,
            reordering=m.reordering, semantics=self.semantics, early_distortion_cost=m.early_distortion_cost,
        )

    def decode(self, line: str | Sequence[str], id: int = 0) -> DecodeResult:
        """Decode one sentence (a string is whitespace-tokenized).

        Raises DecodeError only when ``line`` is not text (bytes, None, a
        non-string, a lone surrogate, empty or whitespace-holding token; :func:`tokens`) or ``id`` is not a line
        number, and WriteError when an output the search writes (``--lattice-dir``)
        cannot be written. Otherwise never raises: an empty line gives an
        empty translation; reserved tokens, or a search that finds no
        derivation, give ``error``; a search over budget gives its best
        derivation found, not marked optimal.
        """
        if isinstance(id, bool) or not isinstance(id, int) or id < 0:
            raise DecodeError(f"decode(): id must be an integer >= 0 (the 0-based line number), got {id!r}")
        if isinstance(line, str):
            _check_text(line, "the line")
        start = time.perf_counter()
        markup: tuple[XmlOption, ...] = ()
        if self.xml_input != "pass-through":
            text = line if isinstance(line, str) else " ".join(tokens(line))
            try:
                marked = parse_markup(text)
            except XmlInputError as e:
                return DecodeResult(id, tokens(text), (), False, Stats(0, 0, 0.0), f"XML markup: {e}")
            line, markup = marked.words, marked.options
        words = tokens(line)
        # An empty line has one derivation, the empty one: optimal, its own score the bound. (A
        # search that writes lattices is run all the same: every line gets its DIR/<id>.fst.)
        if not words and getattr(self.options, "lattice_dir", None) is None:
            empty = self._derivation(words, (), 0.0)
            empty = dataclasses.replace(empty, search_score=empty.score)
            return DecodeResult(id, words, (empty,), True, Stats(0, 0, 0.0), upper_bound=empty.score)
        reserved = sorted({w for w in words if w in RESERVED_TOKENS})
        if reserved:
            why = f"the input holds the reserved token(s) {' '.join(reserved)} (LM sentence markers and Moses' field separator)"
            return DecodeResult(id, words, (), False, Stats(0, 0, 0.0), why)
        reason = None
        try:
            problem = self.problem(words, id, markup)
            # The stack decoder's list (distinct in the core) is written by the core: Python needs its best alone.
            problem.list_in_core = self._nbest_writer is not None and not self.moses_nbest.derivations and self.method == "stack"
            try:
                result = self.searcher.search(problem)
            except SearchLimitError as e:
                result, reason = self._over_budget(problem, e)
        except WriteError:  # an output of the search (a lattice) that cannot be written stops the run
            raise
        except FstdecodeError as e:
            return DecodeResult(id, words, (), False, Stats(0, 0, time.perf_counter() - start), str(e))
        if self.options.unique:  # the fallback's list too
            result = distinct(result, self.options.nbest)
        text, fields, listed = self._moses_nbest(problem, result, id)
        winners = result.winners or (None,) * len(result.hypotheses)
        derivations = tuple(
            self._derivation(words, phrases, s, w) for (s, phrases), w in zip(result.hypotheses[:listed], winners)
        )
        stats = Stats(result.states, result.transitions, time.perf_counter() - start, result.phases)
        optimal = result.optimal and reason is None
        bound = reported_bound(result.certified().upper_bound if reason is None else result.upper_bound,
                               derivations, optimal)
        return DecodeResult(
            id, words, derivations, optimal, stats, reason=reason, upper_bound=bound, root_bound=result.root_bound,
            unproven=None if optimal else result.unproven, nbest_text=text, nbest_fields=fields,
        )

    def _moses_nbest(self, problem: SearchProblem, result: SearchResult, id: int) -> tuple[str | None, Any, int]:
        """With :class:`MosesNbest` lines: the core's n-best lines of ``result``, each derivation's
        (feature field, total) when the derivations are kept, and how many derivations to make
        (only the best, unless kept); (None, None, all) where the core's result is not the list
        (a non-native search, or a list filtered in Python)."""
        everything = len(result.hypotheses)
        native = result.native
        if self._nbest_writer is None or native is None or (native[1].size != everything and not problem.list_in_core):
            return None, None, everything
        form, core = native
        kept = self.moses_nbest.derivations
        text, fields = self._nbest_writer.lines(problem, form, core, id, fields=kept)
        return text, fields, everything if kept else min(everything, 1)

    def _over_budget(self, problem: SearchProblem, e: SearchLimitError) -> tuple[SearchResult, str]:
        """The one rule for a search over budget: its best derivations, else the stack decoder's.

        Raises SearchLimitError (the line then fails) only if neither found any.
        """
        if e.best is not None:
            return e.best, f"over budget: {e}; the best derivation found is not proven optimal"
        if self.method == "stack":
            raise e
        if self._fallback is None:
            fallback = METHODS["stack"]
            self._fallback = fallback.searcher(self.model, StackOptions(nbest=self.options.nbest))
        found = self._fallback.search(problem)
        return found, f"over budget: {e}; the derivation is the stack decoder's (default settings), not proven optimal"

    def _derivation(
        self, words: tuple[str, ...], phrases: tuple[Phrase, ...], search_score: float,
        winners: tuple[tuple[Phrase, ...] | None, ...] | None = None,
    ) -> Derivation:
        """The derivation ``phrases`` of ``words`` with the scorer's features and total; the empty
        derivation (of an empty line) has every feature 0 and total 0, as in Moses: its only
        hypothesis is the initial one, which no feature scores (not even the LM's ``</s>``:
        Hypothesis' seed constructor and SearchNormal::Decode), so Moses prints 0 for each."""
        m = self.model
        feats, total = score_derivation(
            len(words), phrases, self.lm, m.weights, reordering=m.reordering,
            semantics=self.semantics, early_distortion_cost=m.early_distortion_cost,
        )
        if not phrases:
            feats, total = _unscored(feats), 0.0
        return Derivation(words, phrases, feats, total, search_score, winners)


def _unscored(f: Features) -> Features:
    """``f`` with every value 0 (each list keeping its length, so outputs keep their layout)."""
    return dataclasses.replace(f, **{
        k.name: tuple(0.0 for _ in v) if isinstance(v, tuple) else 0.0
        for k in dataclasses.fields(f) for v in (getattr(f, k.name),)
    })


def _rebuild_decoder(model: Model, method: str, options: SearchOptions, settings: dict[str, Any]) -> Decoder:
    """Unpickle a :class:`Decoder` (see :meth:`Decoder.__reduce__`)."""
    return Decoder(model, method, options, **settings)


#: The keyword-only arguments of ``Decoder.__init__`` that a decoder keeps under the same name.
_KEYWORD_SETTINGS = tuple(
    name for name, p in inspect.signature(Decoder.__init__).parameters.items() if p.kind is p.KEYWORD_ONLY
)


def tokens(line: str | Sequence[str]) -> tuple[str, ...]:
    """The tokens of ``line``: a string is split as Moses splits it (:func:`~fstdecode.io.tokens.split_tokens`:
    on ASCII whitespace, not on Unicode spaces such as U+00A0); a sequence must hold tokens.

    Raises DecodeError for anything else (bytes, None, numbers, a sequence holding a non-string,
    an empty token or a token with whitespace inside), so that bytes are never decoded as a
    sequence of byte values and a sequence means the same as its tokens joined by spaces.
    """
    if isinstance(line, str):
        _check_text(line, "the line")
        return tuple(split_tokens(line))
    if isinstance(line, (bytes, bytearray)) or not isinstance(line, Sequence):
        raise DecodeError(f"decode() takes a str or a sequence of str, got {type(line).__name__}; decode bytes first")
    for i, w in enumerate(line):
        if not isinstance(w, str):
            raise DecodeError(f"decode() takes a str or a sequence of str; token {i} is {type(w).__name__}")
        _check_text(w, f"token {i}")
        if not is_token(w):
            raise DecodeError(
                f"decode(): token {i} ({w!r}) is {'empty' if not w else 'more than one token (it holds whitespace)'}; "
                "pass the sentence as one str to have it split"
            )
    return tuple(line)


def _check_text(text: str, what: str) -> None:
    """Raise DecodeError if ``text`` is not text that UTF-8 can write: a lone surrogate (``'\\ud800'``;
    undecodable bytes read with ``errors="surrogateescape"`` give them too) can reach neither the
    core nor an output."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise DecodeError(
            f"decode(): {what} is not valid text: a lone surrogate {text[e.start]!r} at character {e.start + 1}; "
            "decode the bytes it came from with errors='strict' or 'replace'"
        ) from None


def decode(model: Model, sentence: str, method: str = DEFAULT_METHOD, **options: Any) -> DecodeResult:
    """Decode one sentence: the functional form of :class:`Decoder`."""
    return Decoder(model, method, **options).decode(sentence)
