"""Lines of more than 512 words (issue 22, defect 3) and the time limit's one meaning (defect 5).

The core once held coverages of at most 512 words: a longer line went to the Python engine,
where the default method's budget took minutes, and the stack decoder copied it through. Now
every search keeps such a line in the core (a sliding coverage window), so its budget bounds
its time. Checked against the Python oracles and the scorer (every method: test_no_fallback.py).
"""

from __future__ import annotations

import pytest
from randmodels import NO_BUDGET
from shared import run_cli

from fstdecode import Decoder, load_model
from fstdecode.problem.problem import SearchLimitError
from fstdecode.problem.scorer import jumps
from fstdecode.problem.scorer import score as score_derivation
from fstdecode.search import coverage_dp, native_stack, stack
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
    # The Python A* once took the line (400 s at the default budget); no Python search may serve it.
    monkeypatch.setattr(coverage_dp, "search", lambda *a, **k: pytest.fail("a Python search was called"))
    decoder = Decoder(model, max_states=20_000)
    result = decoder.decode(LONG)
    assert result.best is not None
    problem = decoder.problem(LONG)
    assert abs(score_derivation(problem.n, result.best.phrases, problem.lm, problem.weights)[1] - result.best.search_score) < 1e-6
    assert max(jumps(problem.n, result.best.phrases)) <= problem.d


def test_stack_translates_a_long_line_and_never_beats_the_coverage_dp_monotone():
    # Monotone (d = 0): the coverage DP oracle is cheap on 600 words; the stack decoder's beam
    # may only lose to it. With gaps (d = 4), the derivation is legal and scored right.
    monotone = Decoder(load_model(distortion_limit=0), "stack").problem(LONG)
    core = native_stack.stack_search(monotone, stack.StackOptions(beam_size=5))
    best = coverage_dp.search(monotone, CoverageOptions(max_states=NO_BUDGET)).hypotheses[0][0]
    assert core.hypotheses[0][0] <= best + 1e-9
    assert_valid(monotone, core)
    problem = Decoder(load_model(), "stack").problem(LONG)
    assert_valid(problem, native_stack.stack_search(problem, stack.StackOptions(beam_size=5)))


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
    assert (core.states, core.transitions) == (python.states, python.transitions)  # the same space


def test_time_limit_zero_is_refused(model):
    # The core read 0 as "no limit", the retired Python A* as "stop at once": one meaning, refused.
    with pytest.raises(OptionsError, match=r"time_limit \(--time-limit\) must be > 0 seconds"):
        Decoder(model, "exact", time_limit=0).decode(EXAMPLE)


def test_cli_time_limit_zero_is_an_error():
    proc = run_cli(["decode", "--time-limit", "0"], "das\n")
    assert proc.returncode == 2
    assert proc.stderr.startswith("fstdecode: error:") and "--time-limit" in proc.stderr and "Traceback" not in proc.stderr


def test_over_budget_stack_lower_bound_still_gives_exact_a_derivation(model):
    # A stack budget too small to finish normally: exact still starts from a real derivation.
    problem = Decoder(model).problem(LONG)
    with pytest.raises(SearchLimitError) as raised:
        native_stack.stack_search(problem, stack.StackOptions(max_states=50))
    assert raised.value.best is not None
    assert_valid(problem, raised.value.best)
