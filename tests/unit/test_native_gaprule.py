"""Moses' gap rule in the native signature state space (native/statespace.h, issue 13).

The core carries gaprule.py's ``(M, lo)`` in each signature, with its canonical clipping, and gives
back the charge of the jump into ``</s>`` without ``[early-distortion-cost]``. So under ``moses``
semantics, on random models of LM orders 1-3 (random_case, weights of any sign):

* dp, beam and bounded are sound against the Python signature DP (shared.assert_sound); formerly the
  scores bit for bit, and the same ``states`` and ``transitions`` (the Python engine walks
  gaprule.py's states; the core walks its own);
* the native R (fst) has the Python R's states and transitions, and its cascade's best score is
  the exhaustive oracle's;
* dp, bounded and the native cascade equal the Python coverage DP's optimum (dp its 3 best; the
  coverage DP is exact, and test_exact holds it to the exhaustive oracle), ``search_score`` and
  the scorer's score alike, and every derivation keeps Moses' rule (``check_distortion_limit(...,
  "moses")``).

The real models (the de-en gold model, its moses.ini with and without early distortion cost):
tests/integration/test_native_gaprule_models.py.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pywrapfst as fst

from fstdecode.decoder import Decoder
from fstdecode.fst.cascade import Cascade
from fstdecode.fst.reorder import build_reordering, build_reordering_native
from fstdecode.problem.problem import SearchError, SearchProblem
from fstdecode.problem.scorer import check_distortion_limit
from fstdecode.search import coverage_dp, native_signature, signature_dp
from fstdecode.search.bounded import BoundedOptions
from fstdecode.search.coverage_dp import CoverageOptions
from fstdecode.search.signature_dp import DpOptions

from randmodels import NO_BUDGET, draw_beam_options, random_case
from shared import assert_native_sound, examples, machine
from shared import SEARCH_SETTINGS, outcome


@st.composite
def moses_case(draw, max_n: int = 6, max_d: int = 4):
    """(model, sentence) under Moses' semantics, with or without early distortion cost (which
    decides whether the jump into </s> is charged), LM order 1, 2 or 3."""
    order = draw(st.sampled_from([1, 2, 3]))
    model, sentence = draw(random_case(max_n=max_n, max_d=max_d, order=order, any_sign=True))
    model = dataclasses.replace(
        model, distortion_semantics="moses", semantics_given=True, early_distortion_cost=draw(st.booleans())
    )
    return model, sentence


def moses_problem(case):
    model, sentence = case
    problem = Decoder(model, "dp").problem(sentence)
    assert problem.semantics == "moses"
    assert problem.charge_final is model.early_distortion_cost
    return problem


def assert_same(method, problem, options):
    """The native search's outcome is sound against the oracle (shared.assert_native_sound): the
    scorer's scores, the Python coverage DP's optimum (exact methods) or never above it (beam)."""
    return assert_native_sound(method, problem, options)


@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(case=moses_case(), nbest=st.integers(1, 4), minimize=st.booleans())
def test_dp_native_is_sound_under_moses(case, nbest, minimize):
    assert_same("dp", moses_problem(case), DpOptions(nbest=nbest, minimize=minimize, max_states=NO_BUDGET))


@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(case=moses_case(max_n=7), data=st.data())
def test_beam_native_is_sound_under_moses(case, data):
    options = draw_beam_options(data)
    assert_same("beam", moses_problem(case), options)


@settings(max_examples=examples(20), **SEARCH_SETTINGS)
@given(case=moses_case())
def test_bounded_native_is_sound_under_moses(case):
    # (At LM orders 1 and 3 bounded is the plain DP, in both engines; at order 2 its bounds prune.)
    assert_same("bounded", moses_problem(case), BoundedOptions(max_states=NO_BUDGET))


@settings(max_examples=examples(25), **SEARCH_SETTINGS)
@given(case=moses_case(), max_states=st.integers(1, 60))
def test_budget_overrun_at_the_same_state_under_moses(case, max_states):
    assert_same("dp", moses_problem(case), DpOptions(max_states=max_states))


@settings(max_examples=examples(15), **SEARCH_SETTINGS)
@given(case=moses_case(), pruned=st.booleans())
def test_native_r_equals_python_r_under_moses(case, pruned):
    # The same R: its states and arcs (gaprule's states, one arc per transition, no distortion on
    # the arc into </s> without early distortion cost), labels and operations; pruned at the
    # exhaustive oracle's best score, the same pruned R and the same best path.
    model, sentence = case
    threshold = None
    if pruned:
        best = Decoder(model, "exhaustive", max_states=NO_BUDGET).decode(sentence).best
        threshold = None if best is None else best.score
    cascade = Cascade(model)
    ip = fst.compose(cascade.input_fst(sentence), cascade.p.fst)
    built = []
    for build in (build_reordering, build_reordering_native):
        problem = SearchProblem(
            cascade.sentence(sentence, ip), cascade.lm, model.weights, model.distortion_limit,
            semantics="moses", early_distortion_cost=model.early_distortion_cost,
        )
        built.append(build(problem, cascade.labels_for(problem.sentence), NO_BUDGET, threshold=threshold))
    py, nat = built
    assert (nat.states, nat.transitions) == (py.states, py.transitions)
    assert list(nat.names) == list(py.names)
    assert machine(nat.fst) == machine(py.fst)
    assert machine(nat.lm) == machine(py.lm)
    assert list(nat.jumps) == list(py.jumps) and list(nat.s1) == list(py.s1) and list(nat.s2) == list(py.s2)
    if threshold is not None:
        assert nat.best == py.best
        assert nat.best == pytest.approx(threshold, abs=1e-9)  # the oracle's derivation stays in R


@settings(max_examples=examples(20), **SEARCH_SETTINGS)
@given(case=moses_case())
def test_native_signature_searches_equal_the_oracle_under_moses(case):
    # The oracle is the Python coverage DP (exact, and equal to the exhaustive search, which
    # test_exact checks): the exhaustive search took a minute on some 6-word draws.
    model, sentence = case
    try:
        oracle = coverage_dp.search(moses_problem(case), CoverageOptions(max_states=NO_BUDGET, nbest=3)).hypotheses
    except SearchError:
        oracle = ()
    decoders = {
        "dp": Decoder(model, "dp", max_states=NO_BUDGET, nbest=3),
        "bounded": Decoder(model, "bounded", max_states=NO_BUDGET),
        "beam": Decoder(model, "beam", beam_size=2, max_states=NO_BUDGET),
        "fst": Decoder(model, "fst", max_states=NO_BUDGET),
    }
    assert {d.semantics for d in decoders.values()} == {"moses"}
    results = {name: d.decode(sentence) for name, d in decoders.items()}
    if not oracle:  # no derivation within the limit: the exact searches find none either
        assert results["dp"].best is None and results["bounded"].best is None and results["fst"].best is None
        return
    exact = [score for score, _ in oracle]
    assert [d.score for d in results["dp"].derivations] == pytest.approx(exact, abs=1e-9)
    assert results["bounded"].best.score == pytest.approx(exact[0], abs=1e-9)
    assert results["fst"].best.score == pytest.approx(exact[0], abs=1e-9)
    assert results["beam"].best is None or results["beam"].best.score <= exact[0] + 1e-9
    for result in results.values():
        for d in result.derivations:
            assert d.search_score == pytest.approx(d.score, abs=1e-9)  # the running score is the model's
            check_distortion_limit(len(sentence), d.phrases, model.distortion_limit, "moses")


@pytest.mark.slow  # over half a second; the fast set keeps its siblings
@settings(max_examples=examples(60), **SEARCH_SETTINGS)
@given(case=random_case(max_n=5, max_d=4, order=2))
def test_bounded_keeps_the_free_final_jump(case):
    # Without early distortion cost the jump into </s> is free, so at j = n the bound may not
    # charge the <s> tape's exit (signature_beam.Heuristic, the core's Heuristic and Completion):
    # charged, bounded lost its lower bound on derivations that end with a jump back ("bound
    # search lost the lower bound (a bug)"), and the pruned R could lose the best path.
    model, sentence = case
    model = dataclasses.replace(model, distortion_semantics="moses", semantics_given=True, early_distortion_cost=False)
    best = Decoder(model, "exhaustive", max_states=NO_BUDGET).decode(sentence).best
    for method in ("bounded", "fst"):
        got = Decoder(model, method, max_states=NO_BUDGET).decode(sentence)
        where = f"--method {method}"
        if best is None:
            assert got.best is None, where
        else:
            assert got.best is not None, (where, got.error)
            assert got.best.score == pytest.approx(best.score, abs=1e-9), where
