"""BIGRAM_LM: a word-level bigram LM as a weighted acceptor over target words.

The acceptor scores a target sentence ``w1 … wn`` (without ``<s>`` and
``</s>``: both are implicit) with cost ``−ln p(<s> w1 … wn </s>)``, the
bigram LM's sentence log-probability with exact ARPA backoff:

* states: the start state, whose history is ``<s>``, and one state per
  vocabulary word ``h`` (not ``<s>``, ``</s>``), whose history is ``h``;
* arcs: from every history ``h``, one arc for EVERY vocabulary word ``w``
  (not ``<s>``, ``</s>``) to state ``w``, cost ``−ln p(w | h)`` as
  :meth:`ArpaLM.logprob` computes it (``lm.logprob((h,), w)``);
* final weights: ``−ln p(</s> | h)``.

Every bigram is an explicit arc, so backoff is exact, with no ε-backoff
approximation, but the acceptor has about |V|² arcs: it is meant for
small LMs such as the example's (26 words, 600 arcs). Costs are
natural-log units, stored as OpenFst's 32-bit tropical weights (about
1e-6 relative rounding). Words outside the vocabulary have no symbol:
map them to ``<unk>`` before composing.

Example (the built-in LM)::

    input  "this must also be our concern"
    output the same words, weight −lm.score_sentence(words) ≈ 6.88

Run::

    python -m grammars.bigram_lm --output=bigram_lm.far
"""

from __future__ import annotations

import math

import pynini
from pynini.export import export

from fstdecode.io.arpa import BOS, EOS, ArpaLM
from fstdecode.model.model import example_model

EPS = "<eps>"


def vocabulary(lm: ArpaLM) -> list[str]:
    """The LM's unigram vocabulary (``<s>``, ``</s>``, ``<unk>`` included), sorted."""
    return sorted(lm.vocabulary)


def bigram_lm_fst(lm: ArpaLM) -> pynini.Fst:
    """The bigram acceptor of ``lm`` (see the module docstring), input-label sorted.

    Its symbol table is ``<eps>`` (label 0) and the LM's vocabulary. An arc
    whose probability is zero (an ARPA ``-inf``) is left out.
    """
    syms = pynini.SymbolTable()
    syms.add_symbol(EPS, 0)
    for word in vocabulary(lm):
        syms.add_symbol(word)
    words = [w for w in vocabulary(lm) if w not in (BOS, EOS)]
    g = pynini.Fst()
    start = g.add_state()
    g.set_start(start)
    state = {w: g.add_state() for w in words}
    for history, q in [(BOS, start), *state.items()]:
        for w in words:
            cost = -lm.logprob((history,), w)
            if math.isfinite(cost):
                label = syms.find(w)
                g.add_arc(q, pynini.Arc(label, label, cost, state[w]))
        final = -lm.logprob((history,), EOS)
        if math.isfinite(final):
            g.set_final(q, final)
    g.set_input_symbols(syms)
    g.set_output_symbols(syms)
    return g.arcsort("ilabel")


def generator_main(exporter: export.Exporter, lm: ArpaLM | None = None) -> None:
    """Export ``BIGRAM_LM`` for ``lm`` (default: the built-in example's LM, read as a bigram LM)."""
    exporter["BIGRAM_LM"] = bigram_lm_fst(lm or example_model().search_lm())


if __name__ == "__main__":
    from pynini.export import grm

    grm.run(generator_main)
