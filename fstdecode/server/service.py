"""One loaded model and its decoders: what every request decodes with.

A :class:`Service` is made once at start-up and again on each reload (SIGHUP); a request keeps
the service it started with, so a reload never changes a request's model half-way.

Two ways to hold the tables (:attr:`ModelSetup.per_sentence`):

* whole (a text model): ``load()`` reads every pair into the core's index once, at start-up;
* per sentence (a model whose tables are all binarized, ``fstdecode binarize``): ``load()`` reads
  the model with no pair (the tables mapped, the LM mapped or read), which is instant whatever
  the table size; each sentence then decodes with the tables filtered to its words, made in the
  decoding thread by the very code ``decode`` filters each batch with
  (:func:`~fstdecode.run.filtered.decode_filtered` on a batch of one line, whose decoder is made
  on :func:`~fstdecode.model.model.refiltered`), so the replies are ``decode``'s. Nothing of a
  sentence's tables outlives its decode, and threads share only what does not change (the
  model, the mapped files, the LM).

The output code of the command line (``decode --format json`` lines, Moses' n-best feature
values) comes in as :class:`Formats`: the server sits beside the CLI, not above it, and the CLI
hands it the functions it writes its own output with, so each format is written by one function.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

from fstdecode.decoder import DecodeResult, Decoder, Derivation
from fstdecode.errors import FstdecodeError
from fstdecode.io.binarized import is_binary_table
from fstdecode.io.table_filter import SourceFilter
from fstdecode.model.model import NO_LIMIT, UNLIMITED, Model, mapped_tables, refiltered
from fstdecode.search.moses_nbest import MosesNbest
from fstdecode.run.filtered import batch_filter, decode_filtered
from fstdecode.run.lines import Line
from fstdecode.search.base import SearchOptions

#: Decoders kept per service (one per method, n-best size and distinctness asked for); the least
#: recently used goes beyond it. Bounded because ``fst``'s decoders each hold a phrase transducer.
DECODERS_KEPT = 32


class Error(FstdecodeError):
    """A model setup the server cannot serve (a method without options)."""


@dataclass(frozen=True)
class Formats:
    """The command line's writers, used as they are.

    ``json_line(result, alignment)`` is ``fstdecode decode --format json``'s line;
    ``moses_scores(model)`` gives, for a model, the function from a derivation to its n-best
    feature field and total as ``fstdecode moses`` writes them (``" Name= v ..."``, float).
    """

    json_line: Callable[[DecodeResult, bool], str]
    moses_scores: Callable[[Model], Callable[[Derivation], tuple[str, float]]]


@dataclass(frozen=True)
class ModelSetup:
    """How to make the server's model and decoders: ``load()`` reads the model (again on SIGHUP);
    ``options`` holds each allowed method's search options (n-best 1), ``method`` the default."""

    load: Callable[[], Model]
    options: Mapping[str, SearchOptions]
    method: str
    formats: Formats
    xml_input: str = "pass-through"
    #: True: ``load()`` gives the model with its (binarized) tables filtered to nothing, and each
    #: sentence decodes with them filtered to its words (the module docstring); False: whole.
    per_sentence: bool = False

    def __post_init__(self) -> None:
        if self.method not in self.options:
            raise Error(f"no search options for the default method {self.method}")


@dataclass(frozen=True)
class LineRequest:
    """What a sentence's decode asks for. Invariant: ``nbest >= 1``; ``method`` is allowed (checked
    by the protocol layer, :func:`~fstdecode.server.limits.check_method`)."""

    method: str
    nbest: int = 1
    distinct: bool = False

    def key(self) -> tuple[str, int, bool]:
        """The decoder this request needs (distinctness means nothing for one derivation)."""
        return self.method, self.nbest, self.distinct and self.nbest > 1


class Service:
    """A loaded model, its decoders and its Moses feature writer; safe to share between threads.

    The decoder of the default method is made at once (so a model that cannot be searched fails at
    start-up or reload, not on the first request); the others on first use, sharing its table in
    the core (:meth:`Decoder.variant`). The searches themselves keep no state between sentences.
    Per sentence, these decoders hold no pair: each sentence's decoder is made from one of them
    (its method and options) over that sentence's tables (:meth:`filtered_decoder`).
    """

    def __init__(self, setup: ModelSetup) -> None:
        self.setup = setup
        self.model = setup.load()
        #: The binarized tables a per-sentence service filters, mapped once (empty when whole).
        self.mapped: Mapping[str, object] = self._mapped() if setup.per_sentence else {}
        #: The phrase pairs served: the binarized tables' (per sentence), else the index's; None when
        #: a table does not count them (Moses' binary tables: a ProbingPT or a compact table keeps
        #: only hashes of its sources, and a binary one would be walked whole).
        self.phrase_pairs = self._pairs() if setup.per_sentence else len(self.model.table)
        # Each derivation's n-best fields in Moses' float arithmetic, from the core (XML-RPC's fvals).
        self.base = Decoder(self.model, setup.method, setup.options[setup.method], xml_input=setup.xml_input,
                            moses_nbest=MosesNbest(derivations=True))
        self.moses_scores = setup.formats.moses_scores(self.model)
        self._decoders: OrderedDict[tuple[str, int, bool], Decoder] = OrderedDict()
        self._decoders[LineRequest(setup.method).key()] = self.base
        self._lock = threading.Lock()

    def _tables(self) -> str:
        """How the tables are served: loaded whole, or mapped (binarized by fstdecode, or Moses' own
        binary tables) and filtered to each sentence."""
        if not self.setup.per_sentence:
            return "loaded whole"
        binarized = all(is_binary_table(path) for path in self.mapped)
        return f"{'binarized' if binarized else 'mapped'}, filtered to each sentence"

    def _pairs(self) -> int | None:
        counts = [getattr(self.mapped[s.path], "entries", None) for s in self.model.table_sources if s.in_use]
        return None if None in counts else sum(counts)

    def decoder(self, request: LineRequest) -> Decoder:
        """The decoder of ``request``'s method, n-best size and distinctness (made on first use)."""
        key = request.key()
        with self._lock:
            found = self._decoders.get(key)
            if found is not None:
                self._decoders.move_to_end(key)
                return found
            method, nbest, distinct = key
            made = self.base.variant(method, replace(self.setup.options[method], nbest=nbest, unique=distinct))
            self._decoders[key] = made
            if len(self._decoders) > DECODERS_KEPT:
                self._decoders.popitem(last=False)
            return made

    def decode(self, text: str, id: int, request: LineRequest) -> DecodeResult:
        """Decode one checked sentence (:func:`~fstdecode.server.limits.check_text`); per sentence,
        with the tables filtered to it as ``decode`` filters a batch (the module docstring)."""
        if not self.setup.per_sentence:
            return self.decoder(request).decode(text, id)
        (result,) = decode_filtered(lambda keep: self.filtered_decoder(keep, request), [Line(id, text)])
        return result

    def filtered_decoder(self, keep: SourceFilter, request: LineRequest) -> Decoder:
        """``request``'s decoder over the model with its tables filtered by ``keep`` (made for one
        sentence and dropped after it; the mapped tables are read with the GIL released)."""
        like = self.decoder(request)
        return Decoder(self.filtered_model(keep), like.method, like.options, **like.settings())

    def filtered_model(self, keep: SourceFilter) -> Model:
        """The model with its tables filtered by ``keep`` (a per-sentence service), quietly: the
        request's log line speaks for it."""
        return refiltered(self.model, keep, quiet=True, mapped=self.mapped)

    def moses_scores_for(self, text: str) -> Callable[[Derivation], tuple[str, float]]:
        """The n-best feature writer of ``text``'s derivations: over the tables they were decoded
        with (per sentence: filtered again to ``text``, by the filter its decode used)."""
        if not self.setup.per_sentence:
            return self.moses_scores
        return self.setup.formats.moses_scores(self.filtered_model(batch_filter([Line(0, text)])))

    @property
    def default_nbest(self) -> tuple[int, bool]:
        """The n-best size (0: none) and distinctness of an XML-RPC request that asks for none: the
        moses.ini's ``[n-best-list]``, as mosesserver takes it (its file is not written)."""
        return self.model.nbest_size or 0, self.model.nbest_distinct

    def json_line(self, result: DecodeResult, alignment: bool) -> str:
        return self.setup.formats.json_line(result, alignment)

    def summary(self) -> dict[str, Any]:
        """The model as /health and the start-up line describe it."""
        m = self.model
        return {
            "name": m.name,
            "phrase_pairs": self.phrase_pairs,
            "tables": self._tables(),
            "lm_order": m.lm.order,
            "distortion_limit": NO_LIMIT if m.distortion_limit == UNLIMITED else m.distortion_limit,  # (-1: none)
            "features": [f.name for f in m.features],
            "method": self.setup.method,
            "methods": sorted(self.setup.options),
        }

    def _mapped(self) -> Mapping[str, object]:
        """The model's binarized tables, mapped (:func:`~fstdecode.model.model.mapped_tables`);
        Error unless every table it reads is one (a text table would be read again per sentence)."""
        m = self.model
        mapped = mapped_tables(m)
        paths = [s.path for s in m.table_sources if s.in_use] + ([m.reordering.table.path] if m.reordering else [])
        text = [path for path in paths if path not in mapped]
        if not paths or text:
            raise Error(f"{m.name}: serving per sentence needs every table binarized (fstdecode binarize); "
                        f"{', '.join(text) or 'no table file'} is not")
        return mapped
