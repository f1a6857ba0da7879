"""L: the n-gram LM transducer over the events R emits, with exact ARPA backoff.

Each output symbol of R carries the LM events its operation settles
(:mod:`.reorder`): n-grams ``(context, word)`` and, above order 2, the
backoffs charged by state minimisation ``(context, None)``. L is a
one-state machine with one arc per symbol whose cost is −λ_lm times the sum
of their ln values, each computed by the ARPA model with full backoff: no
ε-backoff approximation, every n-gram costs exactly what the model gives it.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import pywrapfst as fst

from fstdecode.io.arpa import ArpaLM


def event_cost(lm: ArpaLM, weight: float, context: Sequence[str], word: str | None) -> float:
    """−weight · ln p(word | context), or −weight · backoff(context) when ``word`` is None."""
    return -weight * (lm.backoff(context) if word is None else lm.logprob(context, word))


def events_cost(lm: ArpaLM, weight: float, events: Iterable[tuple[Sequence[str], str | None]]) -> float:
    """The cost of a list of LM events: the sum of their exact costs."""
    return sum(event_cost(lm, weight, c, w) for c, w in events)


def build_lm_fst(
    symbols: fst.SymbolTable, events: dict[int, list[tuple[Sequence[str], str | None]]], lm: ArpaLM, weight: float
) -> fst.VectorFst:
    """L over ``symbols``: label k costs the exact LM cost of the events ``events[k]``."""
    lfst = fst.VectorFst()
    q = lfst.add_state()
    lfst.set_start(q)
    lfst.set_final(q)
    for label in range(1, symbols.num_symbols()):
        lfst.add_arc(q, fst.Arc(label, label, events_cost(lm, weight, events.get(label, ())), q))
    lfst.set_input_symbols(symbols)
    lfst.set_output_symbols(symbols)
    return lfst
