"""``--method exact``: exact search with a certificate, A* over coverage states, for an LM of any order.

The search runs in the native core, one call a sentence (native/exact.cpp, ``exact_decode``,
wrapped by :func:`fstdecode.search.native_exact.exact_search`); docs/exact.md proves, lemma by
lemma, that its heuristic is admissible and consistent, so that the first complete derivation
popped is optimal and its ``f`` bounds every derivation (the certificate). A lower bound from the
stack decoder (run in the same call, under :class:`~fstdecode.search.stack.StackOptions`'
defaults) prunes what cannot beat it; over budget (``max_states`` states, or ``time_limit``
seconds), the result is that derivation, not proven, with the largest open ``f`` as upper bound.

This module holds the method's options, which the core reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fstdecode.search.base import OptionsError, SearchOptions, option

#: The state budget of ``--method exact``. The native search keeps about 200,000 states (4M
#: transitions) a second here, at about 160 bytes a state, so a line stops within about a minute
#: and 1.6 GB; every Hansards line (orders 2 and 3, d = 4, table-limit 20) needs at most 2.6M.
DEFAULT_EXACT_MAX_STATES = 10_000_000

@dataclass(frozen=True)
class ExactOptions(SearchOptions):
    """``--method exact``: the budgets. ``time_limit`` (seconds, opt-in) makes output depend on the machine's speed."""

    max_states: int = field(
        default=DEFAULT_EXACT_MAX_STATES,
        metadata=option("state budget per sentence; beyond it the line is marked not optimal, with its gap", minimum=1),
    )
    time_limit: float | None = field(
        default=None,
        metadata=option("exact: seconds of search per sentence before giving up the proof, > 0 (default: none)"),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        # A limit is a positive number of seconds. 0 is refused, not read as "no limit" (as the
        # core once did) nor as "stop at once" (as the retired Python search did).
        if self.time_limit is not None and self.time_limit <= 0:
            raise OptionsError(
                f"time_limit (--time-limit) must be > 0 seconds (leave it out for no limit), got {self.time_limit:g}"
            )
