"""``--method exact`` (A* with a certificate) against independent solvers and its own claims.

* On random models of LM order 1, 2 and 3, d from 1 to 5, with negative and zero weights, the
  exact search returns the exhaustive oracle's best score and the coverage DP's k best, and
  proves it: ``optimal`` and ``upper_bound`` equal to the score.
* Its heuristic alone (no lower bound) is admissible and consistent (docs/exact.md): the k best
  come out in order; lemma 8's Φ' is checked by brute force.
* Out of budget it says so, with a gap that is a real bound (at least the oracle's best).
* It is one native call a sentence (``_core.exact_decode``: the stack decoder's lower bound, the
  A* and the answer all in the core), with the oracle's results.
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model
from fstdecode.problem.problem import SearchLimitError
from fstdecode.reference import exhaustive
from fstdecode.search import coverage_dp, exact
from fstdecode.search.native_exact import exact_search as native_exact_search

from randmodels import NO_BUDGET, moses_case, problem_of, random_case
from shared import SEARCH_SETTINGS as SETTINGS, examples
from shared import assert_exact_heuristic_alone_finds, assert_sound, assert_support_holds, oracle_outcome, outcome

TOL = 1e-9


def oracle_scores(problem, k: int = 1) -> list[float]:
    found = exhaustive.search(problem, exhaustive.ExhaustiveOptions(max_states=NO_BUDGET, nbest=k))
    return [s for s, _ in found.hypotheses]


def assert_proven(result, best: float) -> None:
    assert result.optimal
    assert abs(result.hypotheses[0][0] - best) < TOL
    assert result.upper_bound is not None and abs(result.upper_bound - best) < 1e-6


@pytest.mark.slow  # 60 oracle runs a order: ~40 s; the fast set keeps the k-best and gap checks
@pytest.mark.parametrize("order", [1, 2, 3])
@settings(max_examples=examples(60), **SETTINGS)
@given(data=st.data())
def test_exact_equals_the_oracle_for_any_order_and_sign(order, data):
    problem = problem_of(data.draw(random_case(max_n=5, order=order, any_sign=True)))
    best = oracle_scores(problem)[0]
    assert_proven(native_exact_search(problem, exact.ExactOptions(max_states=NO_BUDGET)), best)


@pytest.mark.parametrize("order", [1, 2, pytest.param(3, marks=pytest.mark.slow)])  # trigram: ~4 s
@settings(max_examples=examples(25), **SETTINGS)
@given(data=st.data())
@pytest.mark.slow
def test_support_holds_every_derivation_above_the_threshold(order, data):
    """The options that --method fst restricts R to: every derivation scoring at least the
    threshold (all derivations from the oracle) uses only them."""
    problem = problem_of(data.draw(random_case(max_n=5, order=order, any_sign=True)))
    everything = exhaustive.search(problem, exhaustive.ExhaustiveOptions(max_states=NO_BUDGET, nbest=2000)).hypotheses
    assume(len(everything) < 2000)
    margin = data.draw(st.sampled_from([0.0, 0.3, 1.0, 4.0]))
    threshold = everything[0][0] - margin
    assert_support_holds(problem, threshold, everything)


@pytest.mark.slow
@pytest.mark.parametrize("order", [2, 3])
@settings(max_examples=examples(40), **SETTINGS)
@given(data=st.data())
def test_exact_equals_the_coverage_dp_on_longer_inputs(order, data):
    problem = problem_of(data.draw(random_case(min_n=5, max_n=9, order=order, any_sign=True)))
    best = coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET)).hypotheses[0][0]
    options = exact.ExactOptions(max_states=NO_BUDGET)
    assert_proven(native_exact_search(problem, options), best)


@pytest.mark.slow  # over half a second; the fast set keeps its siblings
@pytest.mark.parametrize("order", [2, 3])
@settings(max_examples=examples(30), **SETTINGS)
@given(data=st.data())
def test_exact_k_best_equals_the_coverage_dp(order, data):
    problem = problem_of(data.draw(random_case(max_n=5, order=order, any_sign=True)))
    k = 5
    want = [s for s, _ in coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET, nbest=k)).hypotheses]
    for search in (native_exact_search,):
        got = search(problem, exact.ExactOptions(max_states=NO_BUDGET, nbest=k))
        assert len(got.hypotheses) == len(want)
        assert all(abs(a - b) < TOL for (a, _), b in zip(got.hypotheses, want))
        assert len({h[1] for h in got.hypotheses}) == len(got.hypotheses)


@pytest.mark.parametrize("order", [2, 3])
@settings(max_examples=examples(12), **SETTINGS)
@given(data=st.data())
def test_the_heuristic_alone_is_admissible_and_consistent(order, data):
    # docs/exact.md's lemmas end to end (formerly: the native β, eos and covers against the
    # Python A*'s): without the stack's lower bound, the A* returns the oracle's k best in order.
    problem = problem_of(data.draw(random_case(max_n=6, order=order, any_sign=True)))
    k_best = coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET, nbest=3)).hypotheses
    want = [score for score, _ in k_best]  # the coverage DP: exact, and cheaper than exhaustive
    assert_exact_heuristic_alone_finds(problem, len(want), want)


@pytest.mark.slow  # the exhaustive oracle on trigram cases: ~15 s
@settings(max_examples=examples(30), **SETTINGS)
@given(random_case(min_n=4, max_n=5, order=3, any_sign=True))
def test_over_budget_gives_a_valid_gap(case):
    problem = problem_of(case)
    best = oracle_scores(problem)[0]
    for search in (native_exact_search,):
        try:
            result = search(problem, exact.ExactOptions(max_states=3))
        except SearchLimitError as e:
            found = e.best
            assert found is not None and not found.optimal
            assert found.upper_bound is not None
            assert found.upper_bound >= best - 1e-9  # it bounds every derivation, the best included
            assert found.upper_bound >= found.hypotheses[0][0] - 1e-9
        else:  # proven within 3 states
            assert_proven(result, best)


def check_every_budget_stop(data):
    """A budget that stops the A* inside an expansion (the state popped, not all its successors
    pushed) once gave an upper bound below the optimum (9.21 against 13.82, k = 3): the popped
    state's f left the bound with it. Every budget from 1 state up, k = 1 and 3."""
    order = data.draw(st.sampled_from([1, 2, 3]))
    problem = problem_of(data.draw(random_case(max_n=5, order=order, any_sign=True)))
    k = data.draw(st.sampled_from([1, 3]))
    best = oracle_scores(problem)[0]
    for budget in range(1, 25):
        try:
            result = native_exact_search(problem, exact.ExactOptions(max_states=budget, nbest=k))
        except SearchLimitError as e:
            if e.best is not None:
                assert e.best.upper_bound >= best - 1e-9, (budget, e.best.upper_bound, best)
        else:
            assert result.hypotheses[0][0] == pytest.approx(best, abs=1e-6)
            break


@settings(max_examples=examples(25), **SETTINGS)
@given(data=st.data())
def test_every_budget_stop_keeps_a_valid_upper_bound(data):
    check_every_budget_stop(data)


@pytest.mark.slow  # the same on many more random models
@settings(max_examples=examples(250), **SETTINGS)
@given(data=st.data())
def test_every_budget_stop_keeps_a_valid_upper_bound_many(data):
    check_every_budget_stop(data)


@contextlib.contextmanager
def one_core_call_counted():
    """Every way into a search but ``_core.exact_decode`` raises (the core's stack, A* and
    support entry points; the Python stack wrapper and native_exact's lower-bound helpers, which
    --method fst keeps); yields the list that gets one item per exact_decode call."""
    from fstdecode._native import core
    from fstdecode.search import native_exact, native_stack

    def refuse(*_args, **_kwargs):
        raise AssertionError("--method exact left the core mid-search")

    calls: list[int] = []
    decode = core.exact_decode
    with pytest.MonkeyPatch.context() as mp:
        for module, name in (
            (core, "stack_search"), (core, "exact_search"), (core, "exact_support"),
            (native_stack, "stack_search"), (native_exact, "stack_search"), (native_exact, "_stack_lower_bound"),
            (native_exact, "lower_bound"), (native_exact, "kth_score"), (native_exact, "support"),
        ):
            mp.setattr(module, name, refuse)
        mp.setattr(core, "exact_decode", lambda *args: calls.append(1) or decode(*args))
        yield calls


@settings(max_examples=examples(40), **SETTINGS)
@given(data=st.data())
def test_one_native_call_per_sentence_with_the_oracles_results(data):
    # Issue 23 item 5: the stack decoder's lower bound, the A* and the answer (k best, proof,
    # budget) in one core call. Random models of LM order 1-3 with and without lexicalized
    # reordering (both semantics: the reordering and gap-rule paths), k = 1 and 3, and budgets
    # from none to 3 states (the over-budget answer merges the stack decoder's derivations).
    order = data.draw(st.sampled_from([1, 2, 3]))
    if data.draw(st.booleans()):
        case = data.draw(random_case(max_n=6, order=order, any_sign=True))
    else:
        case = data.draw(moses_case(max_n=5, order=order, semantics=data.draw(st.sampled_from(["moses", "paper"]))))
    problem = problem_of(case)
    k = data.draw(st.sampled_from([1, 3]))
    budget = data.draw(st.sampled_from([3, 30, NO_BUDGET]))
    oracle = oracle_outcome(problem, k)  # the Python coverage DP (exact for any order)
    with one_core_call_counted() as calls:
        got = outcome(native_exact_search, problem, exact.ExactOptions(max_states=budget, nbest=k))
    assert len(calls) == 1
    assert_sound(problem, got, exact=True, nbest=k, oracle=oracle)
    if isinstance(got, tuple) and got[0] is SearchLimitError and got[2] is not None:
        assert got[2].upper_bound >= oracle.hypotheses[0][0] - 1e-9  # the gap is a real bound
    elif not isinstance(got, tuple):
        assert got.upper_bound == pytest.approx(got.hypotheses[0][0], abs=1e-6)  # the certificate
        if k == 1:  # the exhaustive oracle too (independent of the coverage states)
            assert abs(got.hypotheses[0][0] - oracle_scores(problem)[0]) < 1e-6


def test_a_decoder_calls_the_core_once_a_line():
    from fstdecode.model.model import load_model

    root = Path(__file__).resolve().parents[2] / "fstdecode" / "data"
    lines = (root / "input.txt").read_text(encoding="utf-8").splitlines()
    decoder = Decoder(load_model(), "exact", nbest=2)
    with one_core_call_counted() as calls:
        results = [decoder.decode(line) for line in lines]
    assert len(calls) == len(lines)
    assert all(r.optimal for r in results)
    squeezed = Decoder(load_model(), "exact", max_states=2)
    with one_core_call_counted() as calls:
        results = [squeezed.decode(line) for line in lines]
    assert len(calls) == len(lines)
    assert any(not r.optimal for r in results)  # over budget: still one call, the answer made in the core


def test_decoder_reports_the_certificate_and_the_over_budget_gap():
    from fstdecode.model.model import load_model

    root = Path(__file__).resolve().parents[2] / "fstdecode" / "data"
    model = load_model()  # the built-in example
    line = max((root / "input.txt").read_text(encoding="utf-8").splitlines(), key=len)
    proven = Decoder(model, "exact").decode(line)
    assert proven.optimal and proven.gap == pytest.approx(0.0, abs=1e-6)
    squeezed = Decoder(model, "exact", max_states=2).decode(line)
    assert not squeezed.optimal and "over budget" in squeezed.reason
    assert squeezed.upper_bound >= proven.best.search_score - 1e-9
    assert squeezed.gap >= 0 and math.isfinite(squeezed.gap)


def test_time_limit_is_an_option_of_exact_only():
    from fstdecode.search.base import OptionsError

    assert exact.ExactOptions(time_limit=1.5).time_limit == 1.5
    with pytest.raises(OptionsError):
        exact.ExactOptions(time_limit=-1)
    with pytest.raises(OptionsError, match="--method exact"):
        from fstdecode.search.stack import StackOptions

        StackOptions.build("stack", {"time_limit": 1.0})


def test_cli_exact_gives_a_certificate_per_line():
    import json

    from shared import EXAMPLE_DATA, run_cli

    text = (EXAMPLE_DATA / "input.txt").read_text(encoding="utf-8")
    proc = run_cli(["decode", "--method", "exact", "--format", "json", "--time-limit", "30"], text)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(records) == len(text.splitlines())
    for r in records:
        assert r["optimal"] is True and r["gap"] == pytest.approx(0.0, abs=1e-6)
        assert r["upper_bound"] == pytest.approx(r["score"], abs=1e-6)
    squeezed = run_cli(["decode", "--method", "exact", "--format", "json", "--max-states", "2"], text)
    assert squeezed.returncode == 0, squeezed.stderr
    for r in map(json.loads, squeezed.stdout.splitlines()):
        if not r["optimal"]:
            assert r["gap"] >= 0 and r["upper_bound"] >= r["score"] - 1e-9


def remaining_distortion_to_last(coverage: int, last_t: int, n: int) -> int:
    """docs/exact.md, lemma 8's Φ' (native/coverage_set.h, remaining_distortion with final=false):
    the covered positions strictly between the first uncovered position g and the last one r,
    plus the distance from ``last_t + 1`` to the nearer of g and r + 1 (0 at full coverage)."""
    g = next((p for p in range(1, n + 1) if not coverage >> (p - 1) & 1), n + 1)
    if g > n:
        return 0
    r = (~coverage & ((1 << n) - 1)).bit_length()  # the last uncovered position
    between = bin((coverage >> g) & ((1 << (r - g)) - 1)).count("1")  # positions g+1..r
    return between + min(abs(last_t + 1 - g), abs(last_t - r))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_distortion_bound_without_a_final_jump_is_a_consistent_lower_bound(n):
    """Lemma 8's Φ' (Moses' semantics, no jump into </s>), checked on every state of n words:
    at most the least total jump of any completion (brute force over the orders of one-word
    phrases, to which any segmentation is equal or worse), and Φ'(S) <= jump + Φ'(S') for every
    phrase a completion may place next (any uncovered run [s, t]). Φ' of a full coverage is 0."""
    import itertools

    full = (1 << n) - 1
    for cov in range(full + 1):
        free = [p for p in range(1, n + 1) if not cov >> (p - 1) & 1]
        for last_t in range(0, n + 1):
            phi = remaining_distortion_to_last(cov, last_t, n)
            if not free:
                assert phi == 0
                continue
            least = min(
                sum(abs(prev + 1 - p) for prev, p in zip((last_t, *order), order)) for order in itertools.permutations(free)
            )
            assert phi <= least, (cov, last_t)
            for s in free:
                t = s
                while t <= n and not cov >> (t - 1) & 1:
                    span = ((1 << (t - s + 1)) - 1) << (s - 1)
                    after = remaining_distortion_to_last(cov | span, t, n)
                    assert phi <= abs(last_t + 1 - s) + after, (cov, last_t, s, t)
                    t += 1


@pytest.mark.parametrize("method", ["exact", "prove"])
def test_the_budget_counts_the_k_best_expansions(method):
    # With --nbest K the A* expands a state once for each of its K best paths: a budget of the
    # states the search makes would let K of them cost K times the work (at --nbest 100000 a
    # 7-word Hansards line took 9 GB). So a budget of exactly the states the whole 100-best
    # search made stops it, short of its expansions, and says so.
    model = load_model()
    line = "das muss unsere sorge gleichermaßen sein"
    whole = Decoder(model, method, nbest=100, max_states=10**7).decode(line)
    assert whole.optimal and len(whole.derivations) == 100
    cut = Decoder(model, method, nbest=100, max_states=whole.stats.states).decode(line)
    assert not cut.optimal and cut.upper_bound is not None and cut.upper_bound >= whole.best.score
    if method == "exact":
        assert "expansions (--max-states" in cut.reason
    # A 1-best search expands each state once: its budget of states is unchanged.
    one = Decoder(model, method, max_states=10**7).decode(line)
    assert Decoder(model, method, max_states=one.stats.states).decode(line).optimal


def test_time_limit_bounds_the_bounds_build_too():
    # The A*'s bounds of a long Hansards line (trigram, d=4) take millions of work units; a time
    # limit far below their build stops it there (it once stopped only the search, after the whole
    # build: lines ran 23 s under --time-limit 10), and the line keeps the stack decoder's
    # derivation, marked over budget.
    from fstdecode._native import core

    from shared import hansards_input, hansards_model

    model = hansards_model(lm_order=3, distortion_limit=4, table_limit=20)
    line = max(hansards_input()[:12], key=len)
    problem = Decoder(model, "exact").problem(line)
    from fstdecode.search.native import native_form

    options = core.ExactOptions(nbest=1, max_states=-1, time_limit=1e-9, lower_bound=-math.inf, bounds_work=-1)
    got = core.exact_search(native_form(problem).core, options)
    assert got.status == "budget" and not got.optimal
    assert got.message == "more than 1e-09 s of search (--time-limit), building the A*'s bounds"
    decoded = Decoder(model, "exact", time_limit=1e-9).decode(line)
    assert decoded.best is not None and not decoded.optimal and "--time-limit" in decoded.reason
