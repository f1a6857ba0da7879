"""L: the bigram LM transducer over the events R emits, with exact ARPA backoff.

Each output symbol of R carries the target bigrams its operation creates
(:mod:`.reorder`). L is a one-state machine with one arc per symbol whose
cost is −λ_lm · Σ ln p(b | a) over those bigrams, each computed by the ARPA
model with full backoff: no ε-backoff approximation, every bigram costs
exactly what the model gives it.
"""

from __future__ import annotations

from typing import Iterable

import pywrapfst as fst

from fstdecode.model.arpa import ArpaLM


def bigram_cost(lm: ArpaLM, weight: float, a: str, b: str) -> float:
    """−weight · ln p(b | a) under ``lm`` (exact backoff)."""
    return -weight * lm.logprob((a,), b)


def events_cost(lm: ArpaLM, weight: float, bigrams: Iterable[tuple[str, str]]) -> float:
    """The cost of a list of bigram events: the sum of their exact costs."""
    return sum(bigram_cost(lm, weight, a, b) for a, b in bigrams)


def build_lm_fst(
    symbols: fst.SymbolTable, events: dict[int, list[tuple[str, str]]], lm: ArpaLM, weight: float
) -> fst.VectorFst:
    """L over ``symbols``: label k costs the exact LM cost of the bigrams ``events[k]``."""
    lfst = fst.VectorFst()
    q = lfst.add_state()
    lfst.set_start(q)
    lfst.set_final(q)
    for label in range(1, symbols.num_symbols()):
        lfst.add_arc(q, fst.Arc(label, label, events_cost(lm, weight, events.get(label, ())), q))
    lfst.set_input_symbols(symbols)
    lfst.set_output_symbols(symbols)
    return lfst
