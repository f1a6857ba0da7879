"""One loaded model and its decoders: what every request decodes with.

A :class:`Service` is made once at start-up and again on each reload (SIGHUP); a request keeps
the service it started with, so a reload never changes a request's model half-way.

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
from fstdecode.model.model import Model
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
    """

    def __init__(self, setup: ModelSetup) -> None:
        self.setup = setup
        self.model = setup.load()
        self.base = Decoder(self.model, setup.method, setup.options[setup.method], xml_input=setup.xml_input)
        self.moses_scores = setup.formats.moses_scores(self.model)
        self._decoders: OrderedDict[tuple[str, int, bool], Decoder] = OrderedDict()
        self._decoders[LineRequest(setup.method).key()] = self.base
        self._lock = threading.Lock()

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
        """Decode one checked sentence (:func:`~fstdecode.server.limits.check_text`)."""
        return self.decoder(request).decode(text, id)

    def json_line(self, result: DecodeResult, alignment: bool) -> str:
        return self.setup.formats.json_line(result, alignment)

    def summary(self) -> dict[str, Any]:
        """The model as /health and the start-up line describe it."""
        m = self.model
        return {
            "name": m.name,
            "phrase_pairs": len(m.table),
            "lm_order": m.lm.order,
            "distortion_limit": m.distortion_limit,
            "features": [f.name for f in m.features],
            "method": self.setup.method,
            "methods": sorted(self.setup.options),
        }
