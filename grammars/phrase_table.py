"""PHRASE_TABLE: the phrase-table transducer P of a model, as a named FST in a FAR.

P maps source words to phrase-pair labels (see
:mod:`fstdecode.fst.phrase_fst`); its input symbols are the source words
and its output symbols spell each pair as ``src ||| tgt ||| f1 f2 …``, so
the FST carries its whole phrase table. The costs are those
``build_phrase_fst`` bakes in with the model's weights, which is why the
FST is the same as the one ``fstdecode compile`` writes.

Example (the built-in model)::

    input  "unsere sorge"
    output "unsere sorge ||| our concern ||| -0.356… -0.510…"  (one path among several)

Run::

    python -m grammars.phrase_table --output=phrase_table.far
"""

from __future__ import annotations

import pynini
from pynini.export import export

from fstdecode.fst.phrase_fst import build_phrase_fst
from fstdecode.model.model import Model, example_model


def phrase_table_fst(model: Model) -> pynini.Fst:
    """P for ``model`` (input-label sorted, symbol tables attached) as a pynini FST."""
    return pynini.Fst.from_pywrapfst(build_phrase_fst(model.table, model.weights).fst)


def generator_main(exporter: export.Exporter, model: Model | None = None) -> None:
    """Export ``PHRASE_TABLE``: P of ``model`` (default: the built-in example model)."""
    exporter["PHRASE_TABLE"] = phrase_table_fst(model or example_model())


if __name__ == "__main__":
    from pynini.export import grm

    grm.run(generator_main)
