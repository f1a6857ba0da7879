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
the native core stands behind it (every registered method but the oracles of
:mod:`fstdecode.reference`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from fstdecode.errors import FstdecodeError
from fstdecode.model.model import Model
from fstdecode.problem.problem import SearchProblem, SearchResult

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


#: The largest value of an integer option: the native core's int (sizes, counts, budgets alike;
#: a budget beyond it could not be held in memory anyway).
MAX_INT_OPTION = 2**31 - 1


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

    ``minimum`` bounds numbers from below (inclusive), :data:`MAX_INT_OPTION` integers from
    above; floats must also be
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
    if kind == "int" and value > MAX_INT_OPTION:
        raise OptionsError(f"{name} must be <= {MAX_INT_OPTION}, got {value}")
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
    """A registered search method (``--method name``): its options, its ``factory`` (the
    production search: the native core's, but for the oracles of :mod:`fstdecode.reference`),
    whether it proves optimality, and whether it honours ``unique`` itself.

    Every registered method implements every feature of a model (lexicalized reordering, both
    distortion semantics, any sentence length); nothing is decided per model, and nothing falls
    back to another engine.
    """

    name: str
    options: type[SearchOptions]
    factory: Callable[[Model, Any], Searcher]
    exact: bool
    summary: str
    #: The method's own searches honour ``unique`` (else :func:`searcher` wraps them in
    #: :class:`fstdecode.search.kbest.DistinctSearcher`).
    distinct: bool = False

    def searcher(self, model: Model, options: SearchOptions) -> Searcher:
        """The configured search; with ``options.unique`` and ``nbest > 1``, distinct translations
        (the method's own way, else by :class:`~fstdecode.search.kbest.DistinctSearcher`)."""
        if options.unique and options.nbest > 1 and not self.distinct:
            from fstdecode.search.kbest import DistinctSearcher

            return DistinctSearcher(functools.partial(_plain_searcher, self.name, model, options), options.nbest)
        return self.factory(model, options)


def _plain_searcher(method: str, model: Model, options: SearchOptions, size: int) -> Searcher:
    """Method ``method``'s plain searcher for ``nbest=size`` (a module function, so that a
    DistinctSearcher built on it pickles, for runners that ship decoders)."""
    return METHODS[method].factory(model, dataclasses.replace(options, nbest=size, unique=False))


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
    distinct: bool = False,
) -> Method:
    """Register a method by a ``factory``, or by a ``function(problem, options)``; ``distinct``:
    its searches honour ``unique`` themselves."""
    if factory is None:
        if function is None:
            raise ValueError("register() needs a factory or a function")
        factory = functools.partial(_function_searcher, function)
    method = METHODS[name] = Method(name, options, factory, exact, summary, distinct=distinct)
    return method


def _function_searcher(function: Callable[[SearchProblem, Any], SearchResult], model: Model, options: Any) -> Searcher:
    """A FunctionSearcher for a method registered by its function (the model is not needed)."""
    return FunctionSearcher(function, options)
