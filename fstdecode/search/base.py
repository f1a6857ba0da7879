"""The seam every search method plugs into: its options, the Searcher contract, one registry.

A search method is three things, all registered here by the method's own module:

* a frozen options dataclass (a subclass of :class:`SearchOptions`) whose
  fields carry their help text, flag name and range in ``metadata``
  (:func:`option`). The dataclass validates itself on construction, so the
  API and the CLI (which builds its flags from these fields,
  :mod:`fstdecode.cli.options`) reject the same values with the same message;
* a factory ``(model, options) -> Searcher``, called once per decoder;
* whether its results are proven optimal (``exact``).

The seam is narrow on purpose: a :class:`Searcher` takes one whole
:class:`~fstdecode.problem.problem.SearchProblem` and returns one
:class:`~fstdecode.problem.problem.SearchResult`, never a call per state, so
a native core can stand behind it.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from fstdecode.errors import FstdecodeError
from fstdecode.model.model import ENGINES, Model
from fstdecode.problem.problem import SearchProblem, SearchResult

_LOG = logging.getLogger("fstdecode")


class OptionsError(FstdecodeError):
    """A search option out of its range, of the wrong type, or unknown to the method."""


#: Histogram pruning of the beam methods (beam, stack, bounded's lower bound): Moses' default
#: stack size is 100 too (``-s 100``); docs/search.md found no search error at this size.
DEFAULT_BEAM_SIZE = 100

#: The state budget of the exact methods. Counted in states, not seconds, so that output does not
#: depend on the machine's speed; about 10-30 s and 1-3 GB of Python per sentence at the limit.
DEFAULT_MAX_STATES = 200_000

#: The budget of the beam methods: generous, since their beams already bound the work.
DEFAULT_BEAM_MAX_STATES = 2_000_000


def option(
    help: str,
    *,
    flag: str | None = None,
    minimum: float | None = None,
    choices: tuple[str, ...] | None = None,
    metavar: str | None = None,
    infinite: bool = False,
    cli: bool = True,
) -> dict[str, Any]:
    """The ``metadata`` of an options field: its help, CLI flag (default ``--field-name``) and range.

    ``minimum`` bounds numbers from below (inclusive); floats must also be
    finite unless ``infinite`` (a threshold of +inf prunes nothing), and
    never NaN. ``cli=False`` keeps a field out of the command line. A help
    that does not say its default gets it appended by the CLI.
    """
    return {
        "help": help, "flag": flag, "minimum": minimum, "choices": choices,
        "metavar": metavar, "infinite": infinite, "cli": cli,
    }


def flag_of(f: dataclasses.Field) -> str:
    """The command-line flag of an options field."""
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def _check_field(f: dataclasses.Field, value: Any) -> None:
    """Raise OptionsError unless ``value`` fits the type, range and choices of field ``f``."""
    name = f"{f.name} ({flag_of(f)})"
    if value is None:
        if "None" not in str(f.type):
            raise OptionsError(f"{name} must be given, got None")
        return
    kind = str(f.type).replace(" | None", "")
    if kind == "bool":
        if not isinstance(value, bool):
            raise OptionsError(f"{name} must be True or False, got {value!r}")
    elif kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise OptionsError(f"{name} must be an integer, got {value!r}")
    elif kind == "float":
        number = not isinstance(value, bool) and isinstance(value, (int, float)) and not math.isnan(value)
        if not number or (math.isinf(value) and not f.metadata.get("infinite")):
            raise OptionsError(f"{name} must be a finite number, got {value!r}")
    elif kind == "str" and not isinstance(value, str):
        raise OptionsError(f"{name} must be a string, got {value!r}")
    low = f.metadata.get("minimum")
    if low is not None and value < low:
        raise OptionsError(f"{name} must be >= {low:g}, got {value}")
    choices = f.metadata.get("choices")
    if choices is not None and value not in choices:
        raise OptionsError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


@dataclass(frozen=True)
class SearchOptions:
    """What every method takes: the n-best size and a state budget.

    Invariant (checked on construction): every field fits its ``metadata``
    (:func:`option`). When a search exceeds ``max_states`` the line still
    gets a result, marked not optimal (see :class:`fstdecode.decoder.Decoder`).
    """

    nbest: int = field(default=1, metadata=option("K best derivations per sentence", flag="--nbest", minimum=1))
    unique: bool = field(
        default=False,
        metadata=option(
            "n-best with distinct translations (Moses' [n-best-list] ... distinct; default: moses.ini's, else off)",
            flag="--nbest-unique",
        ),
    )
    max_states: int = field(
        default=DEFAULT_MAX_STATES,
        metadata=option("state budget per sentence; beyond it the line is marked not optimal", minimum=1),
    )

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            _check_field(f, getattr(self, f.name))

    @classmethod
    def build(cls, method: str, values: dict[str, Any]) -> SearchOptions:
        """``cls(**values)``, naming the methods that take a value this one does not."""
        known = {f.name for f in dataclasses.fields(cls)}
        for name in values:
            if name not in known:
                users = [m.name for m in METHODS.values() if name in {f.name for f in dataclasses.fields(m.options)}]
                if not users:
                    raise OptionsError(f"unknown option {name!r} for --method {method}; it takes {', '.join(sorted(known))}")
                raise OptionsError(f"{name} (--{name.replace('_', '-')}) needs --method {' or '.join(users)}, not {method}")
        return cls(**values)


class Searcher(Protocol):
    """One configured search: a whole problem in, a result out.

    Raises :class:`~fstdecode.problem.problem.SearchLimitError` when the
    budget runs out (carrying the best derivations found, if any) and
    :class:`~fstdecode.problem.problem.SearchError` when no derivation exists.
    """

    def search(self, problem: SearchProblem) -> SearchResult: ...


@dataclass(frozen=True)
class Method:
    """A registered search method (``--method name``).

    ``native``, if not None, is the same search in the native core
    (``function(problem, options)``), or ``native_factory`` makes a native searcher from the
    model; the Python ``factory`` stays the reference. ``moses_model`` is True when the
    Python engine implements lexicalized reordering and Moses' distortion semantics;
    ``native_reordering`` and ``native_moses`` when the native engine implements the one and
    the other (:func:`resolve_model_support`).
    """

    name: str
    options: type[SearchOptions]
    factory: Callable[[Model, Any], Searcher]
    exact: bool
    summary: str
    native: Callable[[SearchProblem, Any], SearchResult] | None = None
    native_factory: Callable[[Model, Any], Searcher] | None = None
    #: The method's own searches honour ``unique`` (else :func:`searcher` wraps them in
    #: :class:`fstdecode.search.kbest.DistinctSearcher`).
    distinct: bool = False
    moses_model: bool = False
    native_reordering: bool = False
    native_moses: bool = False

    @property
    def has_native(self) -> bool:
        return self.native is not None or self.native_factory is not None

    def engine(self, engine: str) -> str:
        """The engine that serves ``engine`` (auto, native or python) for this method."""
        if engine not in ENGINES:
            raise OptionsError(f"unknown engine {engine!r}; choose from {', '.join(ENGINES)}")
        if engine == "auto":
            return "native" if self.has_native else "python"
        if engine == "native" and not self.has_native:
            raise OptionsError(f"--method {self.name} has no native implementation yet; use --engine python or auto")
        return engine

    def searcher(self, model: Model, options: SearchOptions, engine: str = "auto") -> Searcher:
        """The configured search; with ``options.unique`` and ``nbest > 1``, distinct translations
        (the method's own way, else by :class:`~fstdecode.search.kbest.DistinctSearcher`)."""
        if options.unique and options.nbest > 1 and not self.distinct:
            from fstdecode.search.kbest import DistinctSearcher

            return DistinctSearcher(functools.partial(_plain_searcher, self.name, model, options, engine), options.nbest)
        return self._searcher(model, options, engine)

    def _searcher(self, model: Model, options: SearchOptions, engine: str) -> Searcher:
        if self.engine(engine) == "native":
            if self.native_factory is not None:
                return self.native_factory(model, options)
            return FunctionSearcher(self.native, options)
        return self.factory(model, options)


def _plain_searcher(method: str, model: Model, options: SearchOptions, engine: str, size: int) -> Searcher:
    """Method ``method``'s plain searcher for ``nbest=size`` (a module function, so that a
    DistinctSearcher built on it pickles, for runners that ship decoders)."""
    return METHODS[method]._searcher(model, dataclasses.replace(options, nbest=size, unique=False), engine)


@dataclass(frozen=True)
class FunctionSearcher:
    """A Searcher from a function ``search(problem, options)`` that needs nothing of the model."""

    function: Callable[[SearchProblem, Any], SearchResult]
    options: SearchOptions

    def search(self, problem: SearchProblem) -> SearchResult:
        return self.function(problem, self.options)


#: ``--method`` name -> Method, in registration order.
METHODS: dict[str, Method] = {}


def register(
    name: str,
    options: type[SearchOptions],
    *,
    exact: bool,
    summary: str,
    factory: Callable[[Model, Any], Searcher] | None = None,
    function: Callable[[SearchProblem, Any], SearchResult] | None = None,
    native: Callable[[SearchProblem, Any], SearchResult] | None = None,
    native_factory: Callable[[Model, Any], Searcher] | None = None,
    distinct: bool = False,
    moses_model: bool = False,
    native_reordering: bool = False,
    native_moses: bool = False,
) -> Method:
    """Register a method by a ``factory``, or by a ``function(problem, options)``; ``native``
    (a function) or ``native_factory`` is its native-core twin, if it has one; ``distinct``: its
    searches honour ``unique`` themselves."""
    if factory is None:
        if function is None:
            raise ValueError("register() needs a factory or a function")
        factory = lambda model, opts: FunctionSearcher(function, opts)  # noqa: E731
    method = METHODS[name] = Method(
        name, options, factory, exact, summary, native, native_factory,
        distinct=distinct, moses_model=moses_model, native_reordering=native_reordering, native_moses=native_moses,
    )
    return method


def resolve_model_support(method: Method, engine: str, model: Model) -> tuple[str, str]:
    """The engine and distortion semantics a decoder of ``model`` with ``method`` uses: the one
    place that decides which searches serve Moses' reordering features.

    The Python engine of every method registered with ``moses_model`` implements lexicalized
    reordering and Moses' distortion semantics (the coverage-state searches directly, the
    signature-state ones through :mod:`fstdecode.statespace.reordering` and
    :mod:`fstdecode.statespace.gaprule`); a native engine implements what its
    ``native_reordering`` and ``native_moses`` say. Rules:

    * the semantics is the model's: ``moses`` for a moses.ini unless ``--distortion-semantics``
      says otherwise, else ``paper`` (README.md, "Distortion semantics");
    * under ``engine="auto"`` a model that needs a feature gets the native engine if it
      implements every feature needed, else the Python engine;
    * an engine (or method) that lacks a needed feature raises OptionsError
      ("... is not supported by --method X --engine native yet"), never searches without it.
    """
    lr = model.reordering is not None
    semantics = model.distortion_semantics
    needs = [
        (what, field)
        for what, field, needed in (
            ("lexicalized reordering", "native_reordering", lr),
            (f"Moses' distortion semantics ({_why_moses(model)})", "native_moses", semantics == "moses"),
        )
        if needed
    ]
    if needs and engine == "auto" and method.moses_model:
        native = method.has_native and all(getattr(method, field) for _, field in needs)
        resolved = "native" if native else "python"
        if method.has_native and not native:  # never behind the user's back
            lacking = " and ".join(what for what, field in needs if not getattr(method, field))
            _LOG.warning(
                "--method %s: the native engine lacks %s; decoding on the Python engine, 20-70x slower "
                "(--method stack or exact run it natively)", method.name, lacking,
            )
    else:
        resolved = method.engine(engine)
    where = f"--method {method.name}" + (" --engine native" if resolved == "native" else "")
    for what, field in needs:
        if not method.moses_model or (resolved == "native" and not getattr(method, field)):
            advice = "remove the LexicalReordering feature" if field == "native_reordering" else "--distortion-semantics paper"
            raise OptionsError(f"{what} is not supported by {where} yet; use {_moses_methods(field)}, or {advice}")
    return resolved, semantics


def _why_moses(model: Model) -> str:
    """Where a model's ``moses`` semantics comes from, for error messages."""
    return "--distortion-semantics moses" if model.semantics_given else "the default for a moses.ini"


def _moses_methods(field: str) -> str:
    """The methods whose Python engine implements Moses' reordering features, as a phrase (naming the
    Python engine where the native one lacks ``field``)."""
    return " or ".join(
        f"--method {m.name}" + ("" if getattr(m, field) or not m.has_native else " (the Python engine)")
        for m in METHODS.values()
        if m.moses_model
    )


def attach_native(
    name: str, native: Callable[[SearchProblem, Any], SearchResult], *, reordering: bool = False, moses: bool = False
) -> Method:
    """Give the registered method ``name`` its native-core twin (:mod:`fstdecode.search.native`);
    ``reordering``/``moses``: the twin implements lexicalized reordering / Moses' distortion
    semantics too."""
    method = METHODS[name] = dataclasses.replace(METHODS[name], native=native, native_reordering=reordering, native_moses=moses)
    return method
