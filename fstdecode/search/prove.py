"""``--method prove`` (the default): the stack decoder's translation, proven optimal where a small
A* can.

One native call a sentence (``_core.exact_decode``, as ``--method exact``): the stack decoder
(its defaults, :class:`~fstdecode.search.stack.StackOptions`) finds the translation and gives
the A* its lower bound; the A* of ``--method exact`` (docs/exact.md: an admissible, consistent
heuristic) then tries to prove it within ``max_states`` states. The line gets:

* proven: ``optimal`` true, ``upper_bound`` = its score (the certificate; the A*'s best, which
  scores at least the stack decoder's);
* not proven within the budget: the better of the two searches' derivations, ``optimal`` false,
  and the A*'s ``upper_bound`` (every derivation scores at most it, so ``gap`` bounds what the
  translation may lose), without a warning: an unproven line is this method's normal outcome,
  not an error;
* the heuristic's tables too big to build within :func:`bounds_work`: the stack decoder's
  derivations, ``optimal`` false, and no bound (the A* did not run).

Unproven, the result's ``unproven`` says which (the budget, or the tables' work cap).

It never claims a proof it does not have: ``optimal`` is the A*'s own verdict. With ``--nbest
K`` the A* proves the K best (the stack decoder's K-th score is its lower bound); unproven, the
list is the better search's K best and the bound is on the first. ``root_bound`` (the A*'s bound
before it expands a state) and ``phases`` (the seconds of the stack decoder, the heuristic's
tables and the A*'s expansion) come with every line.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from fstdecode.problem.problem import SearchLimitError, SearchProblem, SearchResult
from fstdecode.search.base import SearchOptions, option, register
from fstdecode.search.native_exact import exact_decode

#: The state budget of the A* in ``--method prove`` (docs/benchmarks.md, ``bench_proof``): on the
#: shared models it proves 37 of the 48 Hansards trigram lines, and all 5 Europarl and all 5 de-en
#: lines, and an unproven line costs at most about this many states more (about 0.6 s here). The
#: heuristic's tables, built once a sentence, take most of the time below this budget.
DEFAULT_PROVE_MAX_STATES = 100_000

#: The work the heuristic's tables may take (phrase pairs, joins and context scores; native/exact.cpp,
#: Work) per state of the budget, and at least MIN_BOUNDS_WORK. Beyond it the A* is not run (the
#: line gets no bound). On the shared models a line's tables take at most 324,110 units
#: (Hansards trigram; Europarl at most 122,558, de-en 7,428), and every line the default proves
#: takes at most 239,811; on the real-size 5-gram model of scripts/make_big_model.py they take
#: 10-66 million, 5-30 s, tens of times the stack decoder's search, so such a line keeps the
#: stack decoder's translation, not proven and without a gap, after about 0.1 s there (what
#: keeps the default within 3x the stack decoder's time on that model).
BOUNDS_WORK_PER_STATE = 2
MIN_BOUNDS_WORK = 250_000


def bounds_work(max_states: int) -> int:
    """The work the heuristic's tables may take under a budget of ``max_states`` A* states."""
    return max(MIN_BOUNDS_WORK, BOUNDS_WORK_PER_STATE * max_states)


@dataclass(frozen=True)
class ProveOptions(SearchOptions):
    """``--method prove``: the A*'s state budget per sentence (after the stack decoder's search)."""

    max_states: int = field(
        default=DEFAULT_PROVE_MAX_STATES,
        metadata=option(
            "state budget per sentence; beyond it the line keeps the stack decoder's translation, not proven, with its gap",
            minimum=1,
        ),
    )


def prove_search(problem: SearchProblem, options: ProveOptions = ProveOptions()) -> SearchResult:
    """The stack decoder's k best, proven when the A* finishes within ``max_states`` (then the
    A*'s k best with the certificate); else those of the better search, not optimal, with the
    A*'s upper bound. Raises SearchLimitError only when neither search found a derivation, and
    SearchError when none exists."""
    try:
        return exact_decode(problem, options.nbest, options.max_states, None, bounds_work(options.max_states))
    except SearchLimitError as e:
        if e.best is None:
            raise
        return dataclasses.replace(e.best, unproven=str(e))


register(
    "prove",
    ProveOptions,
    function=prove_search,
    exact=False,
    summary="the stack decoder, then an A* proof within a small budget (the default: optimal where proven, else the gap)",
)
