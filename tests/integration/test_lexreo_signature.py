"""Lexicalized reordering in the signature-state searches and R (issue 13).

The signature states carry each tape's LR ends (fstdecode/statespace/reordering.py); these
tests hold every signature search to the exhaustive oracle (an independent enumeration in
target order, scored by the scorer) on random Moses models of every reordering type, LM
orders 1-3 and weights of any sign, under both distortion semantics (``moses``: the signature
states also carry Moses' gap rule, fstdecode/statespace/gaprule.py):

* dp == bounded == oracle (best score, and dp's k best), beam <= oracle, each running score
  equal to the scorer's, in both engines (the native one's states and charges against the
  Python one's: tests/unit/test_native_lexreo.py);
* the cascade with the full Python R == oracle, and every lattice path's exact score (from its
  labels alone) == the scorer's value of its derivation;
* R walked with the oracle's best as its threshold (the pruned R's Completion bound) keeps
  that best derivation.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import pywrapfst as fst

from fstdecode.decoder import Decoder
from fstdecode.search import signature_dp
from fstdecode.fst.cascade import Cascade, exact_path_score, read_paths
from fstdecode.fst.reorder import build_reordering
from fstdecode.problem.scorer import check_distortion_limit
from fstdecode.statespace.signature import phrases_of

from randmodels import NO_BUDGET, REORDERING_TYPES, moses_case
from shared import SEARCH_SETTINGS, examples

ORDERS = st.sampled_from([1, 2, 3])


def oracle(model, sentence, nbest: int = 1):
    return Decoder(model, "exhaustive", max_states=NO_BUDGET, nbest=nbest).decode(sentence)


SEMANTICS = pytest.mark.parametrize("semantics", ["paper", "moses"])


@pytest.mark.slow
@SEMANTICS
@pytest.mark.parametrize("type_string", REORDERING_TYPES)  # each type reads spans and rows differently
@settings(max_examples=examples(15), **SEARCH_SETTINGS)
@given(data=st.data())
def test_signature_searches_equal_exhaustive(semantics, type_string, data):
    model, sentence = data.draw(moses_case(max_n=5, order=data.draw(ORDERS), semantics=semantics, types=(type_string,)))
    best = oracle(model, sentence, nbest=3)
    assert best.best is not None, best.error
    decoders = [
        Decoder(model, "dp", max_states=NO_BUDGET, nbest=3),
        Decoder(model, "bounded", max_states=NO_BUDGET),
        Decoder(model, "beam", beam_size=2, max_states=NO_BUDGET),
    ]
    assert all(d.semantics == semantics for d in decoders)
    dp, bounded, beam = (d.decode(sentence) for d in decoders)
    want = [d.score for d in best.derivations]
    assert [d.score for d in dp.derivations] == pytest.approx(want, abs=1e-9)
    assert bounded.best.score == pytest.approx(best.best.score, abs=1e-9)
    assert beam.best.score <= best.best.score + 1e-9
    for result in (dp, bounded, beam):
        for d in result.derivations:
            assert d.search_score == pytest.approx(d.score, abs=1e-9)  # the running score is the model's
            check_distortion_limit(len(sentence), d.phrases, model.distortion_limit, semantics)
    # The Python signature DP, the oracle the native searches are held to elsewhere, against exhaustive.
    problem = decoders[0].problem(sentence)
    oracle_dp = signature_dp.search(problem, signature_dp.DpOptions(nbest=3, max_states=NO_BUDGET))
    assert [s for s, _ in oracle_dp.hypotheses] == pytest.approx(want, abs=1e-9)


@pytest.mark.slow
@SEMANTICS
@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(data=st.data())
def test_full_python_r_equals_exhaustive_and_scores_paths_exactly(semantics, data):
    model, sentence = data.draw(moses_case(max_n=5, order=data.draw(ORDERS), semantics=semantics))
    best = oracle(model, sentence)
    out = Cascade(model, pruned=False, reference_r=True).search(sentence, semantics=semantics)
    assert out.result.hypotheses[0][0] == pytest.approx(best.best.score, abs=1e-9)
    problem = out.problem
    for labels, _ in read_paths(fst.shortestpath(out.raw_lattice, nshortest=6)):
        phrases = phrases_of(problem, [(out.reordering.options[k], out.reordering.s1[k], out.reordering.s2[k]) for k in labels])
        assert exact_path_score(labels, out.reordering, problem) == pytest.approx(problem.score(phrases)[1], abs=1e-9)


@pytest.mark.slow
@SEMANTICS
@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(data=st.data())
def test_r_walked_with_the_best_score_as_threshold_keeps_it(semantics, data):
    # The pruned R drops a transition when its best prefix plus Completion's bound falls below the
    # threshold: with the oracle's best as the threshold, a bound that missed a positive reordering
    # charge would drop the best derivation.
    model, sentence = data.draw(moses_case(max_n=5, order=data.draw(ORDERS), semantics=semantics))
    best = oracle(model, sentence).best.score
    cascade = Cascade(model, pruned=False, reference_r=True)
    problem = cascade.search(sentence, semantics=semantics).problem
    labels = cascade.labels_for(problem.sentence)  # the unknown words' labels are per sentence
    pruned = build_reordering(problem, labels, threshold=best)
    assert pruned.best == pytest.approx(best, abs=1e-9)
    full = build_reordering(problem, labels)
    assert pruned.transitions <= full.transitions


@pytest.mark.slow
@SEMANTICS
@settings(max_examples=examples(20), **SEARCH_SETTINGS)
@given(data=st.data())
def test_fst_method_decodes_reordering_models(semantics, data):
    model, sentence = data.draw(moses_case(max_n=4, semantics=semantics))
    best = oracle(model, sentence).best.score
    decoder = Decoder(model, "fst", max_states=NO_BUDGET)
    assert decoder.semantics == semantics
    result = decoder.decode(sentence)
    assert result.best.score == pytest.approx(best, abs=1e-9)
    assert result.best.search_score == pytest.approx(result.best.score, abs=1e-9)


def test_cascade_charges_reordering_in_both_r_builders(tmp_path):
    # R's labels spell each transition's charge (|lr:O1,O2=V); the native R writes the same ones
    # (tests/unit/test_native_lexreo.py compares the machines on random models).
    from fstdecode.model.model import load_model

    (tmp_path / "pt").write_text("u ||| a ||| 0.5\n", encoding="utf-8")
    (tmp_path / "rt").write_text("u ||| a ||| 0.1 0.2 0.3\n", encoding="utf-8")
    (tmp_path / "lm").write_text("\\data\\\nngram 1=4\n\n\\1-grams:\n-1\t<s>\n-1\t</s>\n-1\t<unk>\n-1\ta\n\n\\end\\\n")
    (tmp_path / "moses.ini").write_text(
        "[feature]\nKENLM path=lm order=2\nDistortion\nWordPenalty\nPhraseDictionaryMemory path=pt num-features=1\n"
        "LexicalReordering type=msd-backward-fe path=rt\n[weight]\nKENLM0= 1\nDistortion0= 1\nWordPenalty0= 0\n"
        "PhraseDictionaryMemory0= 1\nLexicalReordering0= 1 1 1\n",
        encoding="utf-8",
    )
    model = load_model(tmp_path / "moses.ini", distortion_semantics="paper")
    for reference in (True, False):  # the Python R builder (the oracle) and the core's
        out = Cascade(model, pruned=False, reference_r=reference).search(("u",))
        # u alone: monotone from the sentence start, ln 0.1 on top of ln 0.5 (TM) and the unigram LM.
        assert out.result.hypotheses[0][0] == pytest.approx(out.problem.score(out.result.hypotheses[0][1])[1], abs=1e-9)
        # Its labels: u after <s> (monotone, charged ln 0.1), u opening a tape of its own (its charge
        # pending: nothing yet), and </s> (nothing).
        assert list(out.reordering.names[1:]) == [
            "op:0-0:_:_:_:2:a|lr:_,_=0.0",
            f"op:0-0:-1:-1:_:2:a|<s> a|lr:monotone,_={math.log(0.1)!r}",
            "op:1-1:-1:0:_:0:</s>|a </s>|lr:_,_=0.0",
        ], reference
        assert list(out.reordering.lr) == [0.0, 0.0, math.log(0.1), 0.0]
