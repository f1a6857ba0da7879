"""Independent solvers agree on random models: signature DP = coverage DP = Figure 2 = exhaustive.

The exhaustive oracle scores each complete derivation with the scorer
(from strings), so agreement also checks the DP's incremental scores.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from fstdecode.decoder import Decoder
from fstdecode.search import coverage_dp, signature_dp
from fstdecode.reference import exhaustive, figure2

from randmodels import NO_BUDGET, problem_of, random_case
from shared import SEARCH_SETTINGS as SETTINGS, examples


@pytest.mark.slow
@settings(max_examples=examples(30), **SETTINGS)
@given(random_case(max_n=5))
def test_dp_coverage_figure2_and_oracle_agree(case):
    problem = problem_of(case)
    dp = signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET))
    cov = coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET))
    fig2, _, _ = figure2.best_score(problem)
    oracle = exhaustive.search(problem, exhaustive.ExhaustiveOptions(max_states=NO_BUDGET))
    best = oracle.hypotheses[0][0]
    assert abs(dp.hypotheses[0][0] - best) < 1e-9
    assert abs(cov.hypotheses[0][0] - best) < 1e-9
    assert abs(fig2 - best) < 1e-9


@pytest.mark.slow
@settings(max_examples=examples(40), **SETTINGS)
@given(random_case(min_n=4, max_n=8))
def test_dp_and_coverage_agree_on_longer_inputs(case):
    problem = problem_of(case)
    assert abs(signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET)).hypotheses[0][0] - coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET)).hypotheses[0][0]) < 1e-9


@settings(max_examples=examples(40), **SETTINGS)
@given(random_case(max_n=4))
def test_nbest_scores_agree_with_oracle(case):
    # The k-best DP must return the same top-k scores as enumeration, and k distinct derivations.
    problem = problem_of(case)
    k = 8
    dp = signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET, nbest=k))
    oracle = exhaustive.search(problem, exhaustive.ExhaustiveOptions(max_states=NO_BUDGET, nbest=k))
    cov = coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET, nbest=k))
    assert len(dp.hypotheses) == len(oracle.hypotheses) == len(cov.hypotheses)
    for (a, _), (b, _), (c, _) in zip(dp.hypotheses, oracle.hypotheses, cov.hypotheses):
        assert abs(a - b) < 1e-9 and abs(c - b) < 1e-9
    assert len({h[1] for h in dp.hypotheses}) == len(dp.hypotheses)


@pytest.mark.slow
@settings(max_examples=examples(40), **SETTINGS)
@given(random_case(max_n=6))
def test_scorer_total_equals_search_score(case):
    # The decoder rescoring each derivation from its strings must equal the DP's running sum.
    model, sentence = case
    result = Decoder(model, nbest=3).decode(sentence)
    for d in result.derivations:
        assert abs(d.score - d.search_score) < 1e-9
