"""The WFST cascade ``ShortestPath(I ∘ P ∘ R ∘ L)``, one module per machine.

* :mod:`.phrase_fst` — P, source words -> phrase-pair labels (compiled once per model);
* :mod:`.reorder` — R, the reordering automaton of signature states (built per sentence);
* :mod:`.lm_fst` — L, scores the n-gram events that R emits, with exact ARPA backoff;
* :mod:`.cascade` — I, the composition, the shortest path and reading it back.
"""
