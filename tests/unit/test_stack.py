"""The stack decoder (fstdecode.search.stack) against the exact solvers and its own invariants.

References: the coverage DP (the same states, exact) and the exhaustive
oracle (every derivation, scored by the scorer from strings).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode.search.base import OptionsError
from fstdecode.model.features import UNKNOWN_WORD_VALUE
from fstdecode.problem.scorer import jumps
from fstdecode.problem.scorer import score as score_derivation
from fstdecode.search import coverage_dp, stack
from fstdecode.reference import exhaustive
from fstdecode.problem.problem import SearchError, SearchLimitError

from randmodels import NO_BUDGET, problem_of, random_case
from shared import SEARCH_SETTINGS as SETTINGS

HUGE = 10**6

#: The switch combinations of M&Q's evaluation (Section 6), each with a beam that keeps everything.
SWITCHES = [
    # Pharaoh as Koehn (2003) describes it.
    dict(distortion_estimate=False, early_pruning=False),
    # + M&Q Section 4: the distortion estimate changes the running scores, not the totals.
    dict(distortion_estimate=True, early_pruning=False),
    # + M&Q Section 5: early pruning ignores the LM adjustment, which can raise a score, so
    # it is exact only with an infinite threshold; this runs its scans without pruning.
    dict(distortion_estimate=True, early_pruning=True, early_threshold=math.inf),
]


def scorer_total(problem, phrases) -> float:
    return score_derivation(problem.n, phrases, problem.lm, problem.weights)[1]


def assert_scored_derivations(problem, result) -> None:
    """Every returned derivation is complete, within the limit, and scored as the scorer scores it."""
    for score, phrases in result.hypotheses:
        assert abs(scorer_total(problem, phrases) - score) < 1e-9  # also checks the coverage
        assert max(jumps(problem.n, phrases)) <= problem.d


# --- exactness with a huge beam ---------------------------------------------------------


# Bigram signatures and (s, F, t, L) n-gram contexts; the trigram cases take seconds.
@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])
@settings(max_examples=25, **SETTINGS)
@given(data=st.data())
def test_huge_beam_equals_exact_best(order, data):
    problem = problem_of(data.draw(random_case(max_n=6, order=order)))
    best = coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET)).hypotheses[0][0]
    for switches in SWITCHES:
        result = stack.search(problem, stack.StackOptions(beam_size=HUGE, **switches))
        assert abs(result.hypotheses[0][0] - best) < 1e-9, switches
        assert_scored_derivations(problem, result)
        assert not result.optimal


@settings(max_examples=25, **SETTINGS)
@given(random_case(max_n=4, order=3))
def test_recombination_never_changes_the_best(case):
    # Without recombination every derivation prefix is its own hypothesis (a tree search).
    problem = problem_of(case)
    for switches in SWITCHES[:2]:
        config = stack.StackOptions(beam_size=HUGE, **switches)
        merged = stack._run(problem, config)
        tree = stack._run(problem, config, recombine=False)
        assert abs(merged.hypotheses[0][0] - tree.hypotheses[0][0]) < 1e-9
        assert merged.states <= tree.states


@settings(max_examples=25, **SETTINGS)
@given(random_case(max_n=4))
def test_huge_beam_nbest_equals_exhaustive_nbest(case):
    problem = problem_of(case)
    k = 5
    oracle = exhaustive.search(problem, exhaustive.ExhaustiveOptions(max_states=NO_BUDGET, nbest=k)).hypotheses
    for switches in SWITCHES[:2]:
        result = stack.search(problem, stack.StackOptions(nbest=k, beam_size=HUGE, **switches))
        assert len(result.hypotheses) == len(oracle)
        for (a, _), (b, _) in zip(result.hypotheses, oracle):
            assert abs(a - b) < 1e-9
        assert len({phrases for _, phrases in result.hypotheses}) == len(result.hypotheses)
        assert_scored_derivations(problem, result)


# --- Moore & Quirk's distortion estimate ------------------------------------------------


@st.composite
def derivation_spans(draw, max_n: int = 8):
    """(n, spans in target order): a random segmentation of 1..n in a random order.

    Every such order is a derivation within the distortion limit d = its largest jump.
    """
    n = draw(st.integers(1, max_n))
    cuts = draw(st.lists(st.booleans(), min_size=n - 1, max_size=n - 1))
    spans, s = [], 1
    for p in range(1, n + 1):
        if p == n or cuts[p - 1]:
            spans.append((s, p))
            s = p + 1
    return n, draw(st.permutations(spans))


@settings(max_examples=300, **SETTINGS)
@given(derivation_spans())
def test_mq_delta_sums_to_the_plain_jumps(case):
    n, spans = case
    plain = jumps(n, [SimpleNamespace(start=s - 1, end=t - 1) for s, t in spans])  # incl. the final jump
    d = max(plain)
    cov, last_t, total = 0, 0, 0
    assert stack.remaining_distortion(cov, last_t) == 0
    for s, t in spans:
        delta = stack.mq_delta(cov, last_t, s, t)
        new_cov = cov | ((1 << (t - s + 1)) - 1) << (s - 1)
        # The four cases of Section 4 are the plain jump plus the change in Φ.
        phi = stack.remaining_distortion(new_cov, t) - stack.remaining_distortion(cov, last_t)
        assert delta == stack.plain_delta(last_t, s) + phi
        assert not stack.is_dead(new_cov, t, n, d)  # the dead test removes no valid derivation
        cov, last_t, total = new_cov, t, total + delta
    total += stack.final_delta(last_t, n + 1, distortion_estimate=True)
    assert total == sum(plain)
    assert stack.final_delta(last_t, n + 1, distortion_estimate=False) == plain[-1]


@settings(max_examples=30, **SETTINGS)
@given(random_case(max_n=6, order=3), st.integers(1, 20), st.booleans())
def test_mq_reported_score_is_the_model_score(case, beam_size, early):
    # The front-loaded running score must end as the true score of the derivation.
    problem = problem_of(case)
    result = stack.search(problem, stack.StackOptions(nbest=3, beam_size=beam_size, distortion_estimate=True, early_pruning=early))
    assert_scored_derivations(problem, result)


# --- small beams ------------------------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=60, **SETTINGS)
@given(
    random_case(max_n=8, order=2),
    st.integers(1, 4),
    st.one_of(st.none(), st.floats(0, 3)),
    # Every switch combination, including early pruning on the plain Δd, which can leave a
    # stack's best hypothesis no extension (M&Q footnote 6): the anchor must still finish.
    st.sampled_from([(False, False), (True, False), (True, True), (False, True)]),
)
def test_small_beams_return_scored_derivations(case, beam_size, threshold, switches):
    problem = problem_of(case)
    estimate, early = switches
    result = stack.search(problem, stack.StackOptions(beam_size=beam_size, beam_threshold=threshold, distortion_estimate=estimate, early_pruning=early))
    assert_scored_derivations(problem, result)
    assert result.hypotheses[0][0] <= coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET)).hypotheses[0][0] + 1e-9
    assert result.states <= (beam_size + 1) * problem.n + 1  # + the anchor per stack, + the final stack


# --- the pieces: estimates, future table, early pruning -----------------------------------


@settings(max_examples=30, **SETTINGS)
@given(random_case(max_n=5, order=3))
def test_option_estimate_uses_the_isolated_phrase_lm_score(case):
    # ŵ(p) minus its LM part, plus the LM's own phrase estimate (M&Q Section 3).
    problem = problem_of(case)
    w = problem.weights
    for opts in problem.by_start[1 : problem.n + 1]:
        for opt in opts:
            pair = opt.phrase.pair
            tm = sum(wk * v for wk, v in zip(w.tm, pair.scores)) + w.word * -len(pair.target) + w.phrase
            tm += w.unknown * UNKNOWN_WORD_VALUE * len(pair.source) if pair.unknown else 0.0
            expected = tm + w.lm * problem.lm.phrase_estimate(pair.target)
            assert abs(stack.option_estimate(problem, opt) - expected) < 1e-9


@settings(max_examples=30, **SETTINGS)
@given(random_case(max_n=6))
def test_future_table_is_the_best_segmentation(case):
    problem = problem_of(case)
    tabs = stack.tables(problem)
    n = problem.n

    def best(i: int, j: int) -> float:  # by enumeration of the first phrase
        if i > j:
            return 0.0
        return max(
            (tabs.options[(i, t)][0][0] + best(t + 1, j) for t in range(i, j + 1) if (i, t) in tabs.options),
            default=-math.inf,
        )

    for i in range(1, n + 1):
        for j in range(i, n + 1):
            assert tabs.span[i][j] == pytest.approx(best(i, j), abs=1e-9)
    assert tabs.future_of(0) == pytest.approx(best(1, n), abs=1e-9)


def _completable_by_enumeration(problem, coverage: int, last_t: int, memo: dict, moses: bool = False) -> bool:
    """Can the state complete within the limit? Under ``moses``, Moses' rule
    (fstdecode.model.distortion.step_allowed, 1-based here): the gap rule, no final jump."""
    key = (coverage, last_t)
    if key not in memo:
        n, d = problem.n, problem.d
        if coverage == (1 << n) - 1:
            memo[key] = moses or problem.end - 1 - last_t <= d
        else:
            g = stack.lowest_uncovered(coverage)
            memo[key] = any(
                _completable_by_enumeration(problem, coverage | span, opt.t, memo, moses)
                for s in range(1, n + 1)
                if abs(last_t + 1 - s) <= d
                for opt in problem.by_start[s]
                if not moses or s == g or opt.t + 1 - g <= d
                for span in [((1 << (opt.t - s + 1)) - 1) << (s - 1)]
                if not coverage & span
            )
    return memo[key]


# The paper's semantics, and Moses' (no final jump, the gap rule).
@pytest.mark.parametrize("moses", [False, True])
@settings(max_examples=30, **SETTINGS)
@given(data=st.data())
def test_dead_and_minimal_completion_tests_agree_with_enumeration(moses, data):
    # is_dead may drop a state only if no completion exists (else a huge beam is not exact);
    # minimal_completion_fits may vouch for a state only if one does (the anchor's invariant).
    problem = problem_of(data.draw(random_case(max_n=7)))
    n, d = problem.n, problem.d
    memo: dict = {}
    for coverage in range(1 << n):
        for last_t in range(n + 1):
            if last_t == 0 or coverage >> (last_t - 1) & 1:
                possible = _completable_by_enumeration(problem, coverage, last_t, memo, moses)
                if stack.is_dead(coverage, last_t, n, d, moses=moses):
                    assert not possible
                if stack.minimal_completion_fits(coverage, last_t, n, d, moses=moses):
                    assert possible


@pytest.mark.parametrize("mq", [False, True])  # the plain jump is not monotone in s; M&Q's Δd is
@settings(max_examples=30, **SETTINGS)
@given(data=st.data())
def test_early_pruning_skips_exactly_the_extensions_below_the_minimum(mq, data):
    # Along a random partial derivation, the scans that stop early (M&Q Section 5) must yield
    # exactly the legal extensions whose estimated score reaches the minimum acceptable score.
    problem = problem_of(data.draw(random_case(max_n=7)))
    tabs = stack.tables(problem)
    config = stack.StackOptions(distortion_estimate=mq, early_pruning=False)
    full = (1 << problem.n) - 1
    hyp = stack.Hypothesis(0, 0, (problem.bos,), 0.0, tabs.future_of(0))
    while hyp.coverage != full:
        every = list(stack._candidates(problem, tabs, hyp, config, None))
        if not every:
            break
        min_ok = hyp.estimate - data.draw(st.floats(0, 4))
        kept = [
            c for c in every
            if hyp.score + c.future - problem.eta * c.delta_d + stack.option_estimate(problem, c.option) >= min_ok
        ]
        early = list(stack._candidates(problem, tabs, hyp, config, min_ok))
        assert [(c.option, c.delta_d) for c in early] == [(c.option, c.delta_d) for c in kept]
        cand = data.draw(st.sampled_from(every))
        key, delta = stack._extend(problem, hyp, cand, full, mq)
        future = 0.0 if cand.coverage == full else cand.future
        hyp = stack.Hypothesis(key[0], key[1], key[2], hyp.score + delta, future, hyp, cand.option)


def test_early_pruning_evaluates_fewer_hypotheses_on_the_example(example_decoder):
    problem = example_decoder.problem("das muss unsere sorge gleichermaßen sein".split())
    without = stack.search(problem, stack.StackOptions(beam_size=10, distortion_estimate=True, early_pruning=False))
    early = stack.search(problem, stack.StackOptions(beam_size=10, distortion_estimate=True, early_pruning=True))
    assert early.transitions < without.transitions
    assert early.hypotheses[0][0] == pytest.approx(without.hypotheses[0][0], abs=1e-9)


# --- limits and errors ------------------------------------------------------------------


def test_empty_input_is_just_the_sentence_markers(example_decoder):
    # n = 0: no stack is expanded; <s> is closed with </s> at once, as in the coverage DP.
    problem = example_decoder.problem(())
    result = stack.search(problem, stack.StackOptions(distortion_estimate=False, early_pruning=False))
    assert result.hypotheses[0][1] == ()
    assert result.hypotheses[0][0] == pytest.approx(coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET)).hypotheses[0][0], abs=1e-12)


@settings(max_examples=40, **SETTINGS)
@given(data=st.data())
def test_over_budget_completes_its_best_hypotheses_by_minimal_steps(data):
    # Over budget, each stack extends only its anchor by its minimal step: the line still gets
    # complete derivations, scored as the scorer scores them, within the limit, never above the
    # proven optimum, and never marked optimal.
    problem = problem_of(data.draw(random_case(max_n=7, order=2)))
    budget = data.draw(st.integers(1, 12))
    best = coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET)).hypotheses[0][0]
    try:
        result = stack.search(problem, stack.StackOptions(max_states=budget, nbest=3))
    except SearchLimitError as e:
        assert e.best is not None, "an anchor always exists here: every word has a one-word option"
        result = e.best
    assert not result.optimal
    assert_scored_derivations(problem, result)
    assert len({phrases for _, phrases in result.hypotheses}) == len(result.hypotheses)  # each listed once
    assert result.hypotheses[0][0] <= best + 1e-9


def test_max_states_raises_search_limit_error(example_decoder):
    problem = example_decoder.problem("das muss unsere sorge gleichermaßen sein".split())
    with pytest.raises(SearchLimitError, match="more than 5 hypotheses"):
        stack.search(problem, stack.StackOptions(max_states=5, distortion_estimate=False, early_pruning=False))


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(beam_size=0),  # an empty beam keeps nothing
        dict(nbest=0),  # as the other searches
        dict(beam_threshold=-1.0),  # a negative threshold would prune the best itself
        dict(early_pruning=True, early_threshold=math.nan),  # NaN compares false: reject it
    ],
)
def test_bad_settings_raise_options_error(kwargs):
    with pytest.raises(OptionsError):
        stack.StackOptions(**kwargs)


@given(random_case(max_n=6), st.booleans())
@settings(max_examples=30, **SETTINGS)
def test_final_delta_keeps_the_total_when_the_final_jump_is_free(case, estimate):
    # Under Moses' semantics without early distortion cost, the running distortion of a complete
    # derivation is the plain sum of its jumps without the one into </s>, with either accounting.
    problem = problem_of(case)
    n = problem.n
    spans = [(s, s) for s in range(1, n + 1)][::-1]  # right to left, one word at a time
    coverage, last_t, total = 0, 0, 0
    for s, t in spans:
        total += stack.mq_delta(coverage, last_t, s, t) if estimate else stack.plain_delta(last_t, s)
        coverage |= 1 << (s - 1)
        last_t = t
    total += stack.final_delta(last_t, n + 1, estimate, charged=False)
    plain = jumps(n, [SimpleNamespace(start=s - 1, end=t - 1) for s, t in spans], final=False)
    assert total == sum(plain)
