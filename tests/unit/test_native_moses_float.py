"""The core's n-best lines in Moses' float arithmetic (native/moses_float.h, through
fstdecode.search.moses_nbest) against their Python oracle, fstdecode.reference.moses_float.

The oracle recomputes each derivation's feature values and total from its phrases and its
recombination winners (Derivation.winners), hypothesis by hypothesis in numpy float32, and the
line is formatted here, independently of the core's writer: ``id ||| words  ||| Name= v ... |||
total[ ||| segmentation][ ||| alignment]``, entries in the order of the float totals (stable).
Every value, total and byte must be the core's, on random moses.ini models (lexicalized
reordering of every type, weights of any sign, LM orders 2 and 3, with and without
[early-distortion-cost]), plain and distinct lists, with Moses' n-best pruning and without; on
the built-in example with XML markup (options built in Python, whose values the core receives
from Python, not from its PhraseIndex); and on the Europarl gold model (its 100-best from the
core equals Moses' truth byte for byte: tests/unit/test_moses_float.py).
"""

from __future__ import annotations

import dataclasses
import importlib.resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode.decoder import Decoder
from fstdecode.io.xml_input import parse_markup
from fstdecode.problem.sentence import build_sentence, with_xml_options
from fstdecode.model.features import MOSES_KINDS
from fstdecode.model.model import load_model
from fstdecode.reference.moses_float import MosesFloat
from fstdecode.search.moses_nbest import MosesNbest, supports
from fstdecode.search.stack import StackOptions

from randmodels import moses_case
from shared import SEARCH_SETTINGS, examples


#: The built-in example's moses.ini.
EXAMPLE_INI = str(importlib.resources.files("fstdecode") / "data" / "moses.ini")


def _g(x: float) -> str:
    return "0" if x == 0 else f"{x:.6g}"


def oracle_fields(model, emulated) -> str:
    """The feature field of an entry whose values the oracle emulated (labeled)."""
    out = []
    for f in model.features:
        if f.in_nbest:
            out.append(f" {f.name}=")
            out.extend(f" {_g(v)}" for v in f.tuned(emulated.values[MOSES_KINDS[f.kind]]))
    return "".join(out)


def oracle_lines(emu, result, setting: MosesNbest) -> str:
    """The n-best lines of ``result`` (every derivation kept) as the oracle ``emu`` computes them."""
    model = emu.model
    entries = [(d, emu.emulate(d)) for d in result.derivations]
    entries.sort(key=lambda e: -e[1].total)
    lines = []
    for d, e in entries:
        words = "".join(w + " " for p in d.phrases for w in p.target)
        line = f"{result.id + setting.start_id} ||| {words} |||{oracle_fields(model, e)} ||| {_g(e.total)}"
        if setting.segmentation:
            line += " |||" + "".join(" " + span for span in d.segmentation().split())
        if setting.alignment:
            line += " ||| " + "".join(f"{i}-{j} " for i, j in d.alignment())
        lines.append(line + "\n")
    return "".join(lines)


def assert_core_is_oracle(model, line: str, options: StackOptions, setting: MosesNbest, xml_input="pass-through"):
    """The core's lines, fields and totals of ``line`` are the oracle's (the future-cost estimate
    over the line's options: with XML markup, those the markup leaves and adds)."""
    decoder = Decoder(model, "stack", options, moses_nbest=setting, xml_input=xml_input)
    sentence_of = None
    if xml_input in ("inclusive", "exclusive"):
        marked = parse_markup(line)
        sentence_of = lambda source: with_xml_options(  # noqa: E731
            build_sentence(model.table, source), marked.options, xml_input == "exclusive", model.table.num_scores)
    result = decoder.decode(line, 3)
    if result.error is not None:  # no derivation within the distortion limit: nothing to list
        assert result.nbest_text is None and not result.derivations
        return
    assert result.nbest_text is not None, "the core wrote no lines"
    assert len(result.derivations) == len(result.nbest_fields) == result.nbest_text.count("\n")
    emu = MosesFloat(model, tuple(model.features), sentence_of)
    for d, (fields, total) in zip(result.derivations, result.nbest_fields):
        e = emu.emulate(d)
        assert fields == oracle_fields(model, e), (d.translation, d.winners)
        assert total == e.total
    assert result.nbest_text == oracle_lines(emu, result, setting)


SETTINGS = st.builds(MosesNbest, segmentation=st.booleans(), alignment=st.booleans(),
                     start_id=st.integers(0, 5), derivations=st.just(True))


@settings(**SEARCH_SETTINGS, max_examples=examples(60))
@given(case=st.one_of(moses_case(order=2), moses_case(order=3, max_n=4)), early=st.booleans(), k=st.integers(2, 8),
       unique=st.booleans(), pruning=st.booleans(), setting=SETTINGS)
def test_core_lines_are_the_oracles(case, early, k, unique, pruning, setting):
    """Random moses.ini models: every entry's values, total and line, and the list's order."""
    model, sentence = case
    model = dataclasses.replace(model, early_distortion_cost=early)
    assert supports(model)
    options = StackOptions(nbest=k, unique=unique, moses_nbest_pruning=pruning)
    assert_core_is_oracle(model, " ".join(sentence), options, setting)


@pytest.mark.parametrize("mode", ["inclusive", "exclusive"])
def test_options_built_in_python(mode):
    """A line with XML markup has its options built in Python: the core's values come from them."""
    model = load_model(EXAMPLE_INI)
    line = 'das muss <np translation="our concern">unsere sorge</np> gleichermaßen sein'
    setting = MosesNbest(segmentation=True, alignment=True, derivations=True)
    assert_core_is_oracle(model, line, StackOptions(nbest=10), setting, xml_input=mode)


def test_only_the_best_derivation_is_kept():
    """Without ``derivations`` the result holds the best derivation only; the lines are the same."""
    model = load_model(EXAMPLE_INI)
    line = "das muss unsere sorge gleichermaßen sein"
    kept = Decoder(model, "stack", StackOptions(nbest=10), moses_nbest=MosesNbest(derivations=True)).decode(line)
    lean = Decoder(model, "stack", StackOptions(nbest=10), moses_nbest=MosesNbest()).decode(line)
    assert len(kept.derivations) == 10 and len(lean.derivations) == 1
    assert lean.best.phrases == kept.best.phrases and lean.nbest_text == kept.nbest_text
    assert lean.nbest_fields is None
