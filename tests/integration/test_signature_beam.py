"""The signature-state beam (Section 5.1): exact with a huge beam, sound when it prunes.

The reference optimum is the coverage DP's (:func:`optimum`): exact for any LM order, independent
of the signature state space that the beam prunes, and far cheaper than the signature DP on
these random models.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode.decoder import Decoder
from fstdecode.problem.scorer import score as score_derivation
from fstdecode.search import bounded, coverage_dp, native_signature, signature_beam
from fstdecode.problem.problem import SearchError

from randmodels import NO_BUDGET, problem_of, random_case
from shared import SEARCH_SETTINGS as SETTINGS, examples

EXAMPLES = ("das muss unsere sorge gleichermaßen sein", "wir müssen auch diese kritik ernst nehmen")


def optimum(problem, nbest: int = 1) -> list[float]:
    """The scores of the ``nbest`` best derivations, by the exact coverage DP."""
    result = coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET, nbest=nbest))
    return [h[0] for h in result.hypotheses]


@pytest.mark.slow
@settings(max_examples=examples(40), **SETTINGS)
@given(random_case(max_n=6), st.sampled_from(signature_beam.HEURISTICS))
def test_huge_beam_is_exact_bigram(case, heuristic):
    problem = problem_of(case)
    beam = native_signature.beam_search(problem, signature_beam.BeamOptions(beam_size=10**6, heuristic=heuristic, nbest=3)).hypotheses
    assert [h[0] for h in beam] == pytest.approx(optimum(problem, nbest=3), abs=1e-9)


@pytest.mark.slow  # over half a second; the fast set keeps its siblings
@settings(max_examples=examples(20), **SETTINGS)
@given(random_case(max_n=5, order=3))
def test_huge_beam_is_exact_trigram(case):
    problem = problem_of(case)
    exact = optimum(problem)[0]
    assert native_signature.beam_search(problem, signature_beam.BeamOptions(beam_size=10**6)).hypotheses[0][0] == pytest.approx(exact, abs=1e-9)


@pytest.mark.slow
@settings(max_examples=examples(40), **SETTINGS)
@given(random_case(min_n=3, max_n=7), st.lists(st.integers(1, 20), min_size=1, max_size=3, unique=True))
def test_small_beams_return_true_scores_never_above_the_optimum(case, sizes):
    # The optimum once per model; then every heuristic with each beam size drawn.
    model, sentence = case
    problem = Decoder(model).problem(sentence)
    exact = optimum(problem)[0]
    for heuristic in signature_beam.HEURISTICS:
        for size in sizes:
            try:
                out = native_signature.beam_search(problem, signature_beam.BeamOptions(beam_size=size, heuristic=heuristic))
            except SearchError:
                continue  # a beam may find nothing even after widening; the error says so
            score, phrases = out.hypotheses[0]
            assert score <= exact + 1e-9, (heuristic, size)
            assert score_derivation(len(sentence), phrases, model.lm, model.weights)[1] == pytest.approx(score, abs=1e-9)
            assert out.optimal is False


def test_bound_heuristic_is_exact_on_the_examples_with_a_tiny_beam(example_decoder):
    # On the paper's examples a beam of 3 states per j with the bound heuristic finds the optimum.
    for sentence in EXAMPLES:
        problem = example_decoder.problem(sentence.split())
        exact = optimum(problem)[0]
        assert native_signature.beam_search(problem, signature_beam.BeamOptions(beam_size=3)).hypotheses[0][0] == pytest.approx(exact, abs=1e-9)


def test_threshold_prunes_states(example_decoder):
    problem = example_decoder.problem(EXAMPLES[0].split())
    wide = native_signature.beam_search(problem, signature_beam.BeamOptions(beam_size=10**9, beam_threshold=None))
    narrow = native_signature.beam_search(problem, signature_beam.BeamOptions(beam_size=10**9, beam_threshold=2.0))
    assert narrow.states < wide.states


def assert_bounded_search_is_exact(problem) -> None:
    # The bound filter must never drop a state of an optimal derivation.
    out = native_signature.bounded_search(problem, bounded.BoundedOptions(max_states=NO_BUDGET))
    assert out.hypotheses[0][0] == pytest.approx(optimum(problem)[0], abs=1e-9)
    assert out.optimal is True


def test_bounded_search_is_exact_on_the_examples(example_decoder):
    for sentence in EXAMPLES:
        assert_bounded_search_is_exact(example_decoder.problem(sentence.split()))


@pytest.mark.slow
@settings(max_examples=examples(40), **SETTINGS)
@given(random_case(max_n=7))
def test_bounded_search_is_exact(case):
    assert_bounded_search_is_exact(problem_of(case))
