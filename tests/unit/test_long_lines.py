"""Lines of more than 512 words (issue 22, defect 3) and the time limit's one meaning (defect 5).

The core once held coverages of at most 512 words: a longer line went to the Python engine,
where the default method's budget took minutes, and the stack decoder copied it through. Now
every search keeps such a line in the core (a sliding coverage window), so its budget bounds
its time. Checked against the Python engine (the same searches) and the scorer.
"""

from __future__ import annotations

import pytest
from randmodels import NO_BUDGET
from shared import run_cli

from fstdecode import Decoder, load_model
from fstdecode.problem.problem import SearchLimitError
from fstdecode.problem.scorer import jumps
from fstdecode.problem.scorer import score as score_derivation
from fstdecode.search import coverage_dp, exact, native, stack
from fstdecode.search.base import OptionsError
from fstdecode.search.coverage_dp import CoverageOptions

EXAMPLE = "das muss unsere sorge gleichermaßen sein".split()
LONG = EXAMPLE * 100  # 600 words: beyond the fixed 512-word coverage


@pytest.fixture(scope="module")
def model():
    return load_model()


def assert_valid(problem, result) -> None:
    """Each derivation covers the line, keeps the limit and is scored as the scorer scores it."""
    for total, phrases in result.hypotheses:
        assert abs(score_derivation(problem.n, phrases, problem.lm, problem.weights)[1] - total) < 1e-6
        assert max(jumps(problem.n, phrases)) <= problem.d


def test_default_method_keeps_a_long_line_in_the_core(model, monkeypatch):
    # The Python A* once took the line (400 s at the default budget); it must not be called.
    monkeypatch.setattr(exact, "search", lambda *a, **k: pytest.fail("the Python engine was called"))
    decoder = Decoder(model, max_states=20_000)
    result = decoder.decode(LONG)
    assert result.best is not None
    problem = decoder.problem(LONG)
    assert abs(score_derivation(problem.n, result.best.phrases, problem.lm, problem.weights)[1] - result.best.search_score) < 1e-6
    assert max(jumps(problem.n, result.best.phrases)) <= problem.d


@pytest.mark.slow  # the Python stack decoder on 600 words: about 7 s
def test_stack_translates_a_long_line_as_the_python_engine_does(model):
    problem = Decoder(model, "stack").problem(LONG)
    options = stack.StackOptions(beam_size=5)
    core, python = native.stack_search(problem, options), stack.search(problem, options)
    assert abs(core.hypotheses[0][0] - python.hypotheses[0][0]) < 1e-9
    assert core.hypotheses[0][1] == python.hypotheses[0][1]
    assert_valid(problem, core)


def test_cli_stack_translates_a_long_line_without_a_warning():
    proc = run_cli(["decode", "--method", "stack"], " ".join(LONG) + "\n")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.split()
    assert len(out) > 500 and "das" not in out  # translated, not copied through
    assert proc.stderr == ""


def test_native_coverage_dp_equals_python_on_a_long_line():
    # Monotone (d = 0): the window slides along 600 words (the stack test above covers gaps).
    problem = Decoder(load_model(distortion_limit=0)).problem(LONG)
    from fstdecode.search import native_coverage

    core = native_coverage.coverage_search(problem, CoverageOptions(nbest=2, max_states=NO_BUDGET))
    python = coverage_dp.search(problem, CoverageOptions(nbest=2, max_states=NO_BUDGET))
    assert [round(s, 9) for s, _ in core.hypotheses] == [round(s, 9) for s, _ in python.hypotheses]
    assert (core.states, core.transitions) == (python.states, python.transitions)


@pytest.mark.parametrize("engine", ["auto", "python"])
def test_time_limit_zero_is_refused_in_both_engines(model, engine):
    # The core read 0 as "no limit", the Python engine as "stop at once": one meaning, refused.
    with pytest.raises(OptionsError, match=r"time_limit \(--time-limit\) must be > 0 seconds"):
        Decoder(model, "exact", time_limit=0, engine=engine).decode(EXAMPLE)


def test_cli_time_limit_zero_is_an_error():
    proc = run_cli(["decode", "--time-limit", "0"], "das\n")
    assert proc.returncode == 2
    assert proc.stderr.startswith("fstdecode: error:") and "--time-limit" in proc.stderr and "Traceback" not in proc.stderr


def test_over_budget_stack_lower_bound_still_gives_exact_a_derivation(model):
    # A stack budget too small to finish normally: exact still starts from a real derivation.
    problem = Decoder(model).problem(LONG)
    with pytest.raises(SearchLimitError) as raised:
        native.stack_search(problem, stack.StackOptions(max_states=50))
    assert raised.value.best is not None
    assert_valid(problem, raised.value.best)
