"""The native signature searches (fstdecode.search.native_signature) against the oracle.

dp and bounded must return the Python signature DP's k best scores; beam never beats them; every
reported score is the scorer's (shared.assert_sound); errors (no derivation, a budget) are
reported as such.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model
from fstdecode.problem.problem import SearchError, SearchLimitError
from fstdecode.search import native_signature, signature_dp
from fstdecode.search.bounded import BoundedOptions
from fstdecode.search.signature_beam import HEURISTICS, BeamOptions
from fstdecode.search.signature_dp import DpOptions

from randmodels import NO_BUDGET, problem_of, random_case
from shared import assert_native_sound, assert_scored, examples, native_outcome, outcome
from shared import SEARCH_SETTINGS, hansards_input, hansards_model

EXAMPLE = "das muss unsere sorge gleichermaßen sein".split()

def assert_same(method, problem, options):
    """The native search's outcome is sound against the oracle (shared.assert_native_sound): the
    scorer's scores, the signature DP's optimum (exact methods) or never above it (beam)."""
    return assert_native_sound(method, problem, options)


@st.composite
def beam_options(draw, max_beam: int = 8):
    return BeamOptions(
        nbest=draw(st.integers(1, 5)),
        beam_size=draw(st.integers(1, max_beam)),
        beam_threshold=draw(st.one_of(st.none(), st.floats(0, 3))),
        heuristic=draw(st.sampled_from(HEURISTICS)),
        minimize=draw(st.booleans()),
        max_states=NO_BUDGET,
    )


# --- agreement on random instances ------------------------------------------------------


# The fast subset runs a few examples of each check (the Python side is the slow one); the
# `_many` twins, marked slow, run the same checks on many more.
FEW = {"dp": 12, "beam": 25, "bounded": 6}


@pytest.mark.slow  # over half a second; the fast set keeps its siblings
@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # order 3: slow set
@settings(max_examples=FEW["dp"], **SEARCH_SETTINGS)
@given(data=st.data())
def test_dp_native_is_sound(order, data):
    # random_case draws d in 1..5; nbest > 1 exercises the k-best lists and their tie order.
    problem = problem_of(data.draw(random_case(max_n=6, order=order)))
    options = DpOptions(nbest=data.draw(st.integers(1, 5)), minimize=data.draw(st.booleans()), max_states=NO_BUDGET)
    assert_same("dp", problem, options)


@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # order 3: slow set
@settings(max_examples=FEW["beam"], **SEARCH_SETTINGS)
@given(data=st.data())
@pytest.mark.slow
def test_beam_native_is_sound(order, data):
    # Small beams prune, tie, drop dead states and widen; each heuristic ranks differently.
    problem = problem_of(data.draw(random_case(max_n=7, order=order)))
    assert_same("beam", problem, data.draw(beam_options()))


@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # order 3: slow set
@settings(max_examples=FEW["bounded"], **SEARCH_SETTINGS)
@given(data=st.data())
def test_bounded_native_is_sound(order, data):
    # Order 3 and nbest > 1 fall back to the plain DP; order 2 with nbest 1 runs the bounds.
    problem = problem_of(data.draw(random_case(max_n=7, order=order)))
    nbest = data.draw(st.sampled_from([1, 1, 1, 2]))
    assert_same("bounded", problem, BoundedOptions(nbest=nbest, max_states=NO_BUDGET))


@pytest.mark.slow
@pytest.mark.parametrize("check, examples", [
    (test_dp_native_is_sound, 50),
    (test_beam_native_is_sound, 100),
    (test_bounded_native_is_sound, 20),  # the Python side runs the plain DP at order 3: slow
], ids=["dp", "beam", "bounded"])
@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # order 3: slow set
def test_many_native_is_sound(check, examples, order):
    settings(max_examples=examples, **SEARCH_SETTINGS)(given(data=st.data())(check.hypothesis.inner_test))(order)


@pytest.mark.parametrize("method", ["dp", "bounded"])
@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # order 3: slow set
@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(data=st.data())
def test_budget_errors_agree(method, order, data):
    # The budget is hit at the same state count; bounded's error carries its beam's derivation.
    problem = problem_of(data.draw(random_case(max_n=6, order=order)))
    max_states = data.draw(st.integers(1, 60))
    options = DpOptions(max_states=max_states) if method == "dp" else BoundedOptions(max_states=max_states)
    assert_same(method, problem, options)


@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(random_case(max_n=6, order=3), st.integers(1, 80), st.sampled_from(HEURISTICS))
def test_beam_budget_errors_agree(case, max_states, heuristic):
    assert_same("beam", problem_of(case), BeamOptions(max_states=max_states, beam_size=3, heuristic=heuristic))


@pytest.mark.slow  # many hypothesis examples; the fast set keeps one agreement check per engine
@settings(max_examples=examples(100), **SEARCH_SETTINGS)
@given(random_case(min_n=3, max_n=8, order=2), st.data())
def test_beam_without_one_word_options(case, data):
    # A position without a one-word option and beams of 1-2 states make dead ends likelier:
    # more widening reruns and, with a threshold, layers whose states are all dead (which the
    # beam empties; a few percent of these examples).
    problem = problem_of(case)
    p = data.draw(st.integers(1, problem.n))
    problem.by_start[p] = [opt for opt in problem.by_start[p] if opt.t != p]
    problem.grouped[p] = problem.groups(p)
    assert_same("beam", problem, data.draw(beam_options(max_beam=2)))


# --- the built-in model -----------------------------------------------------------------


@pytest.mark.parametrize("words", [EXAMPLE, []], ids=["example", "empty"])
def test_example_sentence_and_empty_input(words):
    problem = Decoder(load_model()).problem(words)
    for nbest in (1, 3):
        assert_same("dp", problem, DpOptions(nbest=nbest))
        assert_same("bounded", problem, BoundedOptions(nbest=nbest))
        for heuristic in HEURISTICS:
            for beam_size in (1, 3, 100):
                assert_same("beam", problem, BeamOptions(nbest=nbest, beam_size=beam_size, heuristic=heuristic))


@pytest.mark.parametrize("beam_threshold, finds", [
    (0.5, False),  # the threshold prunes too hard at every width: both report no derivation
    (3.0, True),  # the widened beam finds a derivation
])
def test_beam_threshold_on_a_layer_of_dead_states(beam_threshold, finds):
    # d = 3, one state per j, β = 0: in the widened run (4 states per j) every state of T_n has
    # two tapes and cannot finish; the layer keeps no state and the search goes on.
    problem = Decoder(load_model(distortion_limit=3)).problem(EXAMPLE)
    options = BeamOptions(beam_size=1, beam_threshold=beam_threshold, heuristic="none")
    got = assert_same("beam", problem, options)
    if finds:
        assert got.hypotheses
    else:
        assert got[0] is SearchError and "kept no complete derivation" in got[1]


def test_no_distortion_limit():
    # -1 (no limit) is UNLIMITED = 2**31 - 1: the core must not overflow on it.
    problem = Decoder(load_model(distortion_limit=-1)).problem(EXAMPLE[:4])
    assert_same("dp", problem, DpOptions(nbest=2, max_states=NO_BUDGET))
    assert_same("bounded", problem, BoundedOptions(max_states=NO_BUDGET))
    for heuristic in HEURISTICS:
        assert_same("beam", problem, BeamOptions(nbest=2, beam_size=5, heuristic=heuristic))


def test_no_derivation_within_the_distortion_limit():
    # d = 0 with a sentence that needs a two-word phrase: every engine reports the limit alike.
    problem = Decoder(load_model(distortion_limit=0)).problem(EXAMPLE)
    for method, options in [("dp", DpOptions()), ("bounded", BoundedOptions()), ("beam", BeamOptions(beam_size=2))]:
        assert_same(method, problem, options)


def test_budget_raises():
    problem = Decoder(load_model()).problem(EXAMPLE)
    with pytest.raises(SearchLimitError, match="more than 5 states") as e:
        native_signature.dp_search(problem, DpOptions(max_states=5))
    assert e.value.best is None


def test_registered_as_the_methods():
    from fstdecode.search.base import METHODS

    assert METHODS["dp"].factory(None, DpOptions()).function is native_signature.dp_search
    assert METHODS["beam"].factory(None, BeamOptions()).function is native_signature.beam_search
    assert METHODS["bounded"].factory(None, BoundedOptions()).function is native_signature.bounded_search


# --- the real model (../shared/data) ----------------------------------------------------


def assert_within_certificate(problem, got, certificate) -> None:
    """A real model's line: every reported score is the scorer's, and none beats exact's
    certificate (its upper bound, proven or over budget; the Python oracles are too slow here)."""
    result = got[2] if isinstance(got, tuple) and got[0] is SearchLimitError else got
    if result is None or isinstance(result, tuple):
        return
    assert_scored(problem, result)
    if certificate is not None:
        assert result.hypotheses[0][0] <= certificate + 1e-6


def certificate_of(problem):
    """exact's upper bound on every derivation of ``problem`` (proven, or its budget's gap)."""
    from fstdecode.search.exact import ExactOptions

    got = native_outcome("exact", problem, ExactOptions(max_states=300_000))
    result = got[2] if isinstance(got, tuple) and got[0] is SearchLimitError else got
    return None if result is None or isinstance(result, tuple) else result.upper_bound


@pytest.mark.slow
def test_hansards_dp_native_is_sound():
    # The bigram Hansards model at d = 4 with 20 translations per phrase: most sentences run
    # over the budget; what each line reports is scored right and never beats exact's certificate.
    decoder = Decoder(hansards_model(lm_order=2, distortion_limit=4, table_limit=20))
    lines = hansards_input()
    options = DpOptions(max_states=300_000)
    for i, line in enumerate(lines[:20]):
        problem = decoder.problem(line.split(), i)
        got = native_outcome("dp", problem, options)
        assert_within_certificate(problem, got, certificate_of(problem))
        if not isinstance(got, tuple):  # proven: exact's optimum
            assert got.hypotheses[0][0] == pytest.approx(certificate_of(problem), abs=1e-6)


@pytest.mark.slow
def test_hansards_beam_and_bounded_native_are_sound():
    # Where the bounded DP runs over its budget after its beam finished (sentences 3 and 4),
    # the error carries the beam's derivation: a case small random models never reach.
    decoder = Decoder(hansards_model(lm_order=2, distortion_limit=4, table_limit=20))
    lines = hansards_input()
    outcomes = []
    for i, line in enumerate(lines[:6]):
        problem = decoder.problem(line.split(), i)
        bound = certificate_of(problem)
        outcomes.append(native_outcome("bounded", problem, BoundedOptions(max_states=100_000)))
        assert_within_certificate(problem, outcomes[-1], bound)
        assert_within_certificate(problem, native_outcome("beam", problem, BeamOptions(nbest=3)), bound)
    assert any(isinstance(o, tuple) and o[0] is SearchLimitError and o[2] is not None for o in outcomes)
