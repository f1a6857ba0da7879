"""LMs of order 3 in every exact search: signature DP (with and without state
minimisation) = coverage DP = exhaustive oracle (scored by the scorer) = FST cascade."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from fstdecode.decoder import Decoder
from fstdecode.fst.cascade import Cascade
from fstdecode.problem.scorer import score as score_derivation
from fstdecode.search import coverage_dp, signature_dp
from fstdecode.reference import exhaustive
from fstdecode.statespace.ngram import expand_ngram, start_state, goal_state

from randmodels import NO_BUDGET, problem_of, random_case
from shared import SEARCH_SETTINGS as SETTINGS, examples


@pytest.mark.slow
@settings(max_examples=examples(40), **SETTINGS)
@given(random_case(max_n=5, order=3))
def test_trigram_solvers_agree(case):
    model, sentence = case
    assert model.lm.order == 3
    problem = Decoder(model).problem(sentence)
    oracle = exhaustive.search(problem, exhaustive.ExhaustiveOptions(max_states=NO_BUDGET)).hypotheses[0][0]
    dp = signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET))
    assert dp.hypotheses[0][0] == pytest.approx(oracle, abs=1e-9)
    assert signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET, minimize=False)).hypotheses[0][0] == pytest.approx(oracle, abs=1e-9)
    assert coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET)).hypotheses[0][0] == pytest.approx(oracle, abs=1e-9)
    assert coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET, minimize=False)).hypotheses[0][0] == pytest.approx(oracle, abs=1e-9)
    # The derivation the DP returns scores, by the scorer, what the DP said.
    _, total = score_derivation(len(sentence), dp.hypotheses[0][1], model.lm, model.weights)
    assert total == pytest.approx(dp.hypotheses[0][0], abs=1e-9)


@pytest.mark.slow  # over half a second; the fast set keeps its siblings
@settings(max_examples=examples(20), **SETTINGS)
@given(random_case(max_n=4, order=3))
def test_trigram_nbest_agrees_with_oracle(case):
    problem = problem_of(case)
    dp = signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET, nbest=6)).hypotheses
    oracle = exhaustive.search(problem, exhaustive.ExhaustiveOptions(max_states=NO_BUDGET, nbest=6)).hypotheses
    assert [h[0] for h in dp] == pytest.approx([h[0] for h in oracle], abs=1e-9)


@pytest.mark.slow
@settings(max_examples=examples(20), **SETTINGS)
@given(random_case(max_n=5, order=3))
def test_trigram_fst_equals_dp(case):
    model, sentence = case
    dp = signature_dp.search(Decoder(model).problem(sentence), signature_dp.DpOptions(max_states=NO_BUDGET, nbest=2))
    out = Cascade(model).search(sentence, nbest=2)
    assert [h[0] for h in out.result.hypotheses] == pytest.approx([h[0] for h in dp.hypotheses], abs=1e-6)


@pytest.mark.slow
@settings(max_examples=examples(20), **SETTINGS)
@given(random_case(min_n=3, max_n=5, order=3))
def test_minimisation_never_adds_states(case):
    # Minimised states are merges of unminimised ones: never more states, same score.
    problem = problem_of(case)
    a, b = signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET)), signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET, minimize=False))
    assert a.states <= b.states
    assert a.hypotheses[0][0] == pytest.approx(b.hypotheses[0][0], abs=1e-9)


def assert_ngram_signatures_reduce_to_figure4(problem) -> None:
    # expand_ngram at order 2 (F/L tuples) must find the bigram DP's best score.
    layers = [dict() for _ in range(problem.end + 1)]
    layers[0][start_state(problem)] = 0.0
    for j in range(problem.end):
        for sigs, score in layers[j].items():
            for t, new, delta, *_ in expand_ngram(problem, j, sigs, minimize=False):
                if score + delta > layers[t].get(new, float("-inf")):
                    layers[t][new] = score + delta
    best = layers[problem.end][goal_state(problem)]
    assert best == pytest.approx(signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET)).hypotheses[0][0], abs=1e-9)


def test_generic_ngram_signatures_reduce_to_figure4_on_the_examples(example_decoder):
    for sentence in ("das muss unsere sorge gleichermaßen sein", "wir müssen auch diese kritik ernst nehmen"):
        assert_ngram_signatures_reduce_to_figure4(example_decoder.problem(sentence.split()))


@pytest.mark.slow
@settings(max_examples=examples(20), **SETTINGS)
@given(random_case(max_n=6, order=2))
def test_generic_ngram_signatures_reduce_to_figure4_for_bigrams(case):
    assert_ngram_signatures_reduce_to_figure4(problem_of(case))
