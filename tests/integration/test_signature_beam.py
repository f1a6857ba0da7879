"""The signature-state beam (Section 5.1): exact with a huge beam, sound when it prunes."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model
from fstdecode.problem.scorer import score as score_derivation
from fstdecode.search import signature_beam, signature_dp
from fstdecode.problem.problem import SearchError

from randmodels import NO_BUDGET, random_case

SETTINGS = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


@settings(max_examples=40, **SETTINGS)
@given(random_case(max_n=6), st.sampled_from(signature_beam.HEURISTICS))
def test_huge_beam_is_exact_bigram(case, heuristic):
    model, sentence = case
    problem = Decoder(model).problem(sentence)
    exact = signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET, nbest=3)).hypotheses
    beam = signature_beam.search(problem, signature_beam.BeamOptions(beam_size=10**6, heuristic=heuristic, nbest=3)).hypotheses
    assert [h[0] for h in beam] == pytest.approx([h[0] for h in exact], abs=1e-9)


@settings(max_examples=20, **SETTINGS)
@given(random_case(max_n=5, order=3))
def test_huge_beam_is_exact_trigram(case):
    model, sentence = case
    problem = Decoder(model).problem(sentence)
    exact = signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET)).hypotheses[0][0]
    assert signature_beam.search(problem, signature_beam.BeamOptions(beam_size=10**6)).hypotheses[0][0] == pytest.approx(exact, abs=1e-9)


@settings(max_examples=40, **SETTINGS)
@given(random_case(min_n=3, max_n=7), st.integers(1, 20), st.sampled_from(signature_beam.HEURISTICS))
def test_small_beams_return_true_scores_never_above_the_optimum(case, size, heuristic):
    model, sentence = case
    problem = Decoder(model).problem(sentence)
    exact = signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET)).hypotheses[0][0]
    try:
        out = signature_beam.search(problem, signature_beam.BeamOptions(beam_size=size, heuristic=heuristic))
    except SearchError:
        return  # a beam may find nothing even after widening; the error says so
    score, phrases = out.hypotheses[0]
    assert score <= exact + 1e-9
    assert score_derivation(len(sentence), phrases, model.lm, model.weights)[1] == pytest.approx(score, abs=1e-9)
    assert out.optimal is False


def test_bound_heuristic_is_exact_on_the_examples_with_a_tiny_beam():
    # On the paper's examples a beam of 3 states per j with the bound heuristic finds the optimum.
    model = load_model()
    decoder = Decoder(model)
    for sentence in ("das muss unsere sorge gleichermaßen sein", "wir müssen auch diese kritik ernst nehmen"):
        problem = decoder.problem(sentence.split())
        exact = signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET)).hypotheses[0][0]
        assert signature_beam.search(problem, signature_beam.BeamOptions(beam_size=3)).hypotheses[0][0] == pytest.approx(exact, abs=1e-9)


def test_threshold_prunes_states():
    problem = Decoder(load_model()).problem("das muss unsere sorge gleichermaßen sein".split())
    wide = signature_beam.search(problem, signature_beam.BeamOptions(beam_size=10**9, beam_threshold=None))
    narrow = signature_beam.search(problem, signature_beam.BeamOptions(beam_size=10**9, beam_threshold=2.0))
    assert narrow.states < wide.states


@settings(max_examples=40, **SETTINGS)
@given(random_case(max_n=7))
def test_bounded_search_is_exact(case):
    # The bound filter must never drop a state of an optimal derivation.
    from fstdecode.search import bounded

    model, sentence = case
    problem = Decoder(model).problem(sentence)
    exact = signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET))
    out = bounded.search(problem, bounded.BoundedOptions(max_states=NO_BUDGET))
    assert out.hypotheses[0][0] == pytest.approx(exact.hypotheses[0][0], abs=1e-9)
    assert out.optimal is True
