"""The native coverage DP (fstdecode.search.native_coverage.coverage_search) against the Python one.

The native core is a port of fstdecode/search/coverage_dp.py: on every instance both engines
must return the same derivations with the same scores (to 1e-9), the same ``states`` and
``transitions``, and raise the same errors (the budget exactly where Python raises).
"""

from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fstdecode.decoder import Decoder
from fstdecode.io.arpa import ArpaLM
from fstdecode.model.model import load_model
from fstdecode.problem.problem import SearchError, SearchLimitError
from fstdecode.search import coverage_dp, native_coverage
from fstdecode.search.base import METHODS
from fstdecode.search.coverage_dp import CoverageOptions

from randmodels import NO_BUDGET, problem_of, python_lm_case, random_case
from shared import examples, outcome
from shared import hansards_input, hansards_model

SETTINGS = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
EXAMPLE = "das muss unsere sorge gleichermaßen sein".split()


def assert_same(problem, options):
    python = outcome(coverage_dp.search, problem, options)
    core = outcome(native_coverage.coverage_search, problem, options)
    if isinstance(python, tuple):
        assert core == python
        return python
    assert not isinstance(core, tuple), core
    assert (core.states, core.transitions) == (python.states, python.transitions)
    assert len(core.hypotheses) == len(python.hypotheses)
    for (a, pa), (b, pb) in zip(core.hypotheses, python.hypotheses):
        assert abs(a - b) < 1e-9
        assert pa == pb  # the same Phrase objects, in the same order (ties too)
    assert core.optimal is python.optimal is True
    return python


@st.composite
def coverage_options(draw, max_states=NO_BUDGET):
    return CoverageOptions(nbest=draw(st.integers(1, 5)), max_states=max_states, minimize=draw(st.booleans()))


# --- agreement on random instances ------------------------------------------------------


@pytest.mark.slow  # many hypothesis examples; the fast set keeps one agreement check per engine
@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # order 3: slow set
@settings(max_examples=examples(100), **SETTINGS)
@given(data=st.data())
def test_native_equals_python_on_random_instances(order, data):
    problem = problem_of(data.draw(random_case(max_n=7, max_d=5, order=order)))
    assert_same(problem, data.draw(coverage_options()))


@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # order 3: slow set
@settings(max_examples=examples(30), **SETTINGS)
@given(data=st.data())
def test_budget_errors_agree(order, data):
    # The budget counts states as Python does: the same instances pass, the others raise alike.
    problem = problem_of(data.draw(random_case(max_n=6, order=order)))
    assert_same(problem, data.draw(coverage_options(max_states=data.draw(st.integers(1, 60)))))


@pytest.mark.slow  # over half a second; the fast set keeps its siblings
@settings(max_examples=examples(40), **SETTINGS)
@given(random_case(min_n=2, max_n=6, order=3), st.data())
def test_no_derivation_errors_agree(case, data):
    # Without an option covering position p, no derivation exists: both raise SearchError.
    problem = problem_of(case)
    p = data.draw(st.integers(1, problem.n))
    for s in range(1, problem.n + 1):
        problem.by_start[s] = [opt for opt in problem.by_start[s] if not opt.s <= p <= opt.t]
    got = assert_same(problem, data.draw(coverage_options()))
    assert got == (SearchError, f"no derivation satisfies the distortion limit d={problem.d}")


@pytest.mark.slow  # many hypothesis examples; the fast set keeps one agreement check per engine
@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # order 3: slow set
@settings(max_examples=examples(20), **SETTINGS)
@given(data=st.data())
def test_native_equals_python_with_a_python_lm(order, data):
    problem = problem_of(data.draw(python_lm_case(order)))
    assert isinstance(problem.lm, ArpaLM)
    assert_same(problem, data.draw(coverage_options()))


# --- the built-in model -----------------------------------------------------------------


@pytest.mark.parametrize("d", [0, 1, 2, 4, -1])  # -1: no limit (UNLIMITED = 2**31 - 1)
def test_example_sentence_and_empty_input(d):
    decoder = Decoder(load_model(distortion_limit=d))
    for words in [EXAMPLE, []]:
        problem = decoder.problem(words)
        for nbest in (1, 2, 7):
            for minimize in (True, False):
                assert_same(problem, CoverageOptions(nbest=nbest, minimize=minimize))


@pytest.mark.slow  # long sentences; the fast set keeps the short-sentence checks
@pytest.mark.parametrize("copies", [11, 22])  # 66 and 132 words: coverages of 2 and 4 64-bit words
def test_native_equals_python_beyond_64_words(copies):
    problem = Decoder(load_model(distortion_limit=1)).problem(EXAMPLE * copies)
    assert_same(problem, CoverageOptions(nbest=2))


def test_budget_raises_as_in_python():
    problem = Decoder(load_model()).problem(EXAMPLE)
    with pytest.raises(SearchLimitError, match="more than 5 states") as raised:
        native_coverage.coverage_search(problem, CoverageOptions(max_states=5))
    assert raised.value.best is None
    # The Python DP builds 344 states here: a budget of exactly that passes, one less raises.
    assert_same(problem, CoverageOptions(max_states=344))
    assert assert_same(problem, CoverageOptions(max_states=343))[0] is SearchLimitError


def test_registered_as_the_method():
    method = METHODS["coverage"]
    assert method.factory(None, CoverageOptions()).function is native_coverage.coverage_search
    decoder = Decoder(load_model(), method="coverage")
    result = decoder.decode(EXAMPLE)
    oracle = coverage_dp.search(decoder.problem(EXAMPLE), CoverageOptions())
    assert result.best.search_score == pytest.approx(oracle.hypotheses[0][0], abs=1e-9)
    assert result.best.translation == " ".join(w for p in oracle.hypotheses[0][1] for w in p.target)


# --- the real model (../shared/data) ----------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # order 3: slow set
def test_hansards_native_equals_python(order):
    decoder = Decoder(hansards_model(lm_order=order, distortion_limit=4, table_limit=20))
    lines = hansards_input()
    short = [i for i, line in enumerate(lines) if len(line.split()) <= 8]  # the Python DP takes seconds beyond
    assert len(short) >= 8
    for i in short:
        problem = decoder.problem(lines[i].split(), i)
        assert_same(problem, CoverageOptions(nbest=3))
