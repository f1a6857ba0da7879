"""L: the n-gram LM transducer over the events R emits, with exact ARPA backoff.

Each output symbol of R carries the LM events its operation settles
(:mod:`.reorder`): n-grams ``(context, word)`` and, above order 2, the
backoffs charged by state minimisation ``(context, None)``. L is a
one-state machine with one arc per symbol whose cost is −λ_lm times the sum
of their ln values, each computed by the ARPA model with full backoff: no
ε-backoff approximation, every n-gram costs exactly what the model gives it.
The native core builds the same machine (native/reorder.cpp).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import pywrapfst as fst

from fstdecode.fst.binary import vector_fst
from fstdecode.io.arpa import ArpaLM


def event_cost(lm: ArpaLM, weight: float, context: Sequence[str], word: str | None) -> float:
    """−weight · ln p(word | context), or −weight · backoff(context) when ``word`` is None."""
    return -weight * (lm.backoff(context) if word is None else lm.logprob(context, word))


def events_cost(lm: ArpaLM, weight: float, events: Iterable[tuple[Sequence[str], str | None]]) -> float:
    """The cost of a list of LM events: the sum of their exact costs."""
    return sum(event_cost(lm, weight, c, w) for c, w in events)


def build_lm_fst(symbols: fst.SymbolTable, costs: Sequence[float]) -> fst.VectorFst:
    """L over ``symbols``: label k (1 <= k <= len(costs)) costs ``costs[k - 1]``, the exact LM
    cost of its events (:func:`events_cost`); arcs sorted by label."""
    labels = list(range(1, len(costs) + 1))
    lfst = vector_fst(1, 0, {0: 0.0}, [0] * len(labels), labels, labels, list(costs), [0] * len(labels))
    lfst.set_input_symbols(symbols)
    lfst.set_output_symbols(symbols)
    return lfst
