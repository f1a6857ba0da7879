"""L: the bigram LM transducer over the events R emits, with exact ARPA backoff.

R writes each target bigram ``a b`` it creates as one symbol, so L is a
one-state machine with one arc per bigram symbol whose cost is
−λ_lm · ln p(b | a), computed by the ARPA model with full backoff (no
ε-backoff approximation: every cost is the model's own probability).
Operation symbols pass through L at cost 0.
"""

from __future__ import annotations

import pywrapfst as fst

from fstdecode.model.arpa import ArpaLM


def bigram_cost(lm: ArpaLM, weight: float, a: str, b: str) -> float:
    """−weight · ln p(b | a) under ``lm`` (exact backoff)."""
    return -weight * lm.logprob((a,), b)


def build_lm_fst(
    symbols: fst.SymbolTable, bigrams: dict[int, tuple[str, str]], lm: ArpaLM, weight: float
) -> fst.VectorFst:
    """L over ``symbols``: bigram labels (``bigrams[label] = (a, b)``) scored, all others free."""
    lfst = fst.VectorFst()
    q = lfst.add_state()
    lfst.set_start(q)
    lfst.set_final(q)
    for label in range(1, symbols.num_symbols()):
        pair = bigrams.get(label)
        cost = bigram_cost(lm, weight, *pair) if pair else 0.0
        lfst.add_arc(q, fst.Arc(label, label, cost, q))
    lfst.set_input_symbols(symbols)
    lfst.set_output_symbols(symbols)
    return lfst
