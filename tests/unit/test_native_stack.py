"""The native stack decoder (fstdecode.search.native_stack) by properties and against the oracle.

It never beats the Python signature DP's optimum (its i-th best at most the oracle's i-th), every
score it reports is the scorer's (shared.assert_sound), a beam that keeps everything reaches the
optimum, and errors (every hypothesis pruned, a budget) are reported as such.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fstdecode.decoder import Decoder
from fstdecode.io.arpa import ArpaLM
from fstdecode.model.model import load_model
from fstdecode.problem.problem import SearchLimitError
from fstdecode.problem.scorer import jumps
from fstdecode.search import native, native_stack, stack

from randmodels import python_lm_case, random_case
from shared import assert_native_sound, assert_scored, examples, hansards_input, hansards_model, oracle_outcome

SETTINGS = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)

#: M&Q's evaluation settings, plus early pruning at its default
#: threshold with either distortion accounting (the default setting is the last one).
SWITCHES = [
    dict(distortion_estimate=False, early_pruning=False),
    dict(distortion_estimate=True, early_pruning=False),
    dict(distortion_estimate=True, early_pruning=True, early_threshold=math.inf),
    dict(distortion_estimate=False, early_pruning=True),
    dict(distortion_estimate=True, early_pruning=True),
]


def problem_of(case):
    model, sentence = case
    return Decoder(model).problem(sentence)


def assert_same(problem, options, huge: bool = False):
    """The native stack decoder is sound against the oracle; with ``huge`` (a beam that keeps every
    state), it reaches the oracle's k best scores."""
    core = assert_native_sound("stack", problem, options)
    # (Early pruning drops extensions far below the stack's best, however wide the beam: only
    # without it, or at an infinite threshold, must the k best all be found.)
    keeps_all = not options.early_pruning or options.threshold == math.inf
    if huge and keeps_all and not isinstance(core, tuple):
        want = oracle_outcome(problem, options.nbest)
        assert [round(a, 7) for a, _ in core.hypotheses] == [round(b, 7) for b, _ in want.hypotheses]
    if not isinstance(core, tuple):
        assert core.optimal is False
    return core


@st.composite
def stack_options(draw):
    return stack.StackOptions(
        nbest=draw(st.integers(1, 5)),
        beam_size=draw(st.integers(1, 20)),
        beam_threshold=draw(st.one_of(st.none(), st.floats(0, 3))),
        **draw(st.sampled_from(SWITCHES)),
    )


# --- agreement on random instances ------------------------------------------------------


@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # order 3: slow set
@settings(max_examples=examples(100), **SETTINGS)
@given(data=st.data())
@pytest.mark.slow
def test_native_is_sound_on_random_instances(order, data):
    problem = problem_of(data.draw(random_case(max_n=7, order=order)))
    assert_same(problem, data.draw(stack_options()))


@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # order 3: slow set
@settings(max_examples=examples(20), **SETTINGS)
@given(data=st.data())
def test_native_is_sound_with_huge_beams(order, data):
    # Everything is kept: the most states, recombinations and k-best insertions.
    problem = problem_of(data.draw(random_case(max_n=6, order=order)))
    for switches in SWITCHES:
        assert_same(problem, stack.StackOptions(nbest=data.draw(st.integers(1, 5)), beam_size=10**6, **switches), huge=True)


@pytest.mark.slow  # long sentences; the fast set keeps the short-sentence checks
@pytest.mark.parametrize("copies", [11, 22])  # 66 and 132 words: coverages of 2 and 4 64-bit words
def test_native_is_sound_beyond_64_words(copies):
    # Too long for the oracle: every derivation is scored right and keeps the limit.
    problem = Decoder(load_model()).problem("das muss unsere sorge gleichermaßen sein".split() * copies)
    for switches in SWITCHES:
        got = native_stack.stack_search(problem, stack.StackOptions(nbest=2, beam_size=3, **switches))
        assert_scored(problem, got)
        for _, phrases in got.hypotheses:
            assert max(jumps(problem.n, phrases)) <= problem.d


@settings(max_examples=examples(30), **SETTINGS)
@given(random_case(max_n=6, order=3), st.integers(1, 40))
def test_budget_errors_agree(case, max_states):
    assert_same(problem_of(case), stack.StackOptions(max_states=max_states, beam_size=10**6))


@settings(max_examples=examples(30), **SETTINGS)
@given(random_case(max_n=6, order=3))
def test_core_lm_scores_equal_the_problems(case):
    # The seam: the core Problem scores the problem's ids as SearchProblem does, bit for bit.
    problem = problem_of(case)
    core = native.native_problem(problem)
    ids = range(len(problem.vocab))
    for a in ids:
        assert core.extends([a]) == problem.extends((a,))
        assert core.backoff([a]) == problem.backoff((a,))
        for b in ids:
            assert core.ngram([a], b) == problem.ngram((a,), b)
            assert core.ngram([], b) == problem.ngram((), b)
            for c in ids:
                assert core.ngram([a, b], c) == problem.ngram((a, b), c)


@pytest.mark.slow  # many hypothesis examples; the fast set keeps one agreement check per engine
@settings(max_examples=examples(60), **SETTINGS)
@given(random_case(min_n=2, max_n=7, order=3), st.data())
def test_native_is_sound_without_one_word_options(case, data):
    # A position without a one-word option has no anchor: small beams may then end with no
    # complete hypothesis (SearchError), which both engines must raise alike.
    problem = problem_of(case)
    p = data.draw(st.integers(1, problem.n))
    problem.by_start[p] = [opt for opt in problem.by_start[p] if opt.t != p]
    assert_same(problem, data.draw(stack_options()))


@pytest.mark.slow  # many hypothesis examples; the fast set keeps one agreement check per engine
@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # order 3: slow set
@settings(max_examples=examples(30), **SETTINGS)
@given(data=st.data())
def test_native_is_sound_with_a_python_lm(order, data):
    problem = problem_of(data.draw(python_lm_case(order)))
    assert isinstance(problem.lm, ArpaLM) and not Path(problem.lm.path).exists()
    assert_same(problem, data.draw(stack_options()))


# --- the built-in model -----------------------------------------------------------------


def test_example_sentence_and_empty_input():
    decoder = Decoder(load_model())
    for words in ["das muss unsere sorge gleichermaßen sein".split(), []]:
        problem = decoder.problem(words)
        for switches in SWITCHES:
            for beam_size in (1, 3, 10, 100):
                assert_same(problem, stack.StackOptions(nbest=3, beam_size=beam_size, **switches))


def test_python_lm_read_from_its_file():
    # A model on the reference reader ArpaLM (as tests build them) whose file exists: the core
    # parses that file once.
    model = load_model()
    model = dataclasses.replace(model, lm=ArpaLM.from_file(model.lm.path))
    problem = Decoder(model).problem("das muss unsere sorge gleichermaßen sein".split())
    assert native.lm_core(problem.lm) is native.lm_core(ArpaLM.from_file(model.lm.path))  # cached per (path, order)
    for switches in SWITCHES:
        assert_same(problem, stack.StackOptions(nbest=3, beam_size=4, **switches))


def test_no_distortion_limit():
    # -1 (no limit) is UNLIMITED = 2**31 - 1: the core must not overflow on it.
    problem = Decoder(load_model(distortion_limit=-1)).problem("das muss unsere sorge gleichermaßen sein".split())
    for switches in SWITCHES:
        assert_same(problem, stack.StackOptions(nbest=2, beam_size=5, **switches))


def test_budget_raises():
    decoder = Decoder(load_model())
    problem = decoder.problem("das muss unsere sorge gleichermaßen sein".split())
    with pytest.raises(SearchLimitError, match="more than 5 hypotheses"):
        native_stack.stack_search(problem, stack.StackOptions(max_states=5, distortion_estimate=False, early_pruning=False))


def test_native_problem_keeps_the_option_order():
    problem = Decoder(load_model()).problem("das muss unsere sorge gleichermaßen sein".split())
    core = native.native_problem(problem)
    assert core.option_count == sum(len(problem.by_start[s]) for s in range(1, problem.n + 1))
    assert (core.n, core.d, core.order) == (problem.n, problem.d, problem.order)


# --- the real model (../shared/data) ----------------------------------------------------


@pytest.mark.slow
def test_hansards_never_beats_the_exact_optimum():
    # The trigram Hansards model at d = 4: the stack decoder's best against exact's certificate
    # (where exact proves within its budget), every score the scorer's.
    model = hansards_model(lm_order=3, distortion_limit=4, table_limit=20)
    stack_decoder, exact = Decoder(model, "stack"), Decoder(model, "exact", max_states=200_000)
    for i, line in enumerate(hansards_input()[:16]):
        got, proven = stack_decoder.decode(line, i), exact.decode(line, i)
        assert got.best is not None, line
        assert abs(got.best.search_score - got.best.score) <= 1e-6 * max(1.0, abs(got.best.score))
        if proven.optimal:
            assert got.best.score <= proven.upper_bound + 1e-6, line


# --- Moses' n-best pruning (StackOptions.moses_nbest_pruning) -----------------------------


def _lists(problem, **options):
    """The plain lists with Moses' n-best pruning off and on (the same search otherwise)."""
    off, on = (native_stack.stack_search(problem, stack.StackOptions(moses_nbest_pruning=m, **options))
               for m in (False, True))
    return [(s, tuple(p)) for s, p in off.hypotheses], [(s, tuple(p)) for s, p in on.hypotheses]


def _is_sublist(short, long) -> bool:
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


@settings(max_examples=examples(30), **SETTINGS)
@given(data=st.data())
def test_moses_nbest_pruning_only_leaves_derivations_out(data):
    # It drops derivations and never adds or reorders one; the best is kept (a winner is never
    # dropped); with no beam threshold it changes nothing. Its k best are held to a longer plain
    # list (WIDER times k), above that list's last score: a derivation it drops from the plain k
    # best lets in the plain (k+1)-th (the sanitizer run's falsifying example: nbest 2, threshold
    # 0, every derivation tied, where the plain 2 best could not hold its second).
    problem = problem_of(data.draw(random_case(max_n=6, order=2)))
    nbest = data.draw(st.integers(2, 30))
    threshold = data.draw(st.one_of(st.none(), st.floats(0, 3)))
    options = dict(beam_size=10**6, beam_threshold=threshold, early_pruning=False)
    off, on = _lists(problem, nbest=nbest, **options)
    wider, _ = _lists(problem, nbest=WIDER * nbest, **options)
    assert wider[:nbest] == off
    cut = wider[-1][0] if len(wider) == WIDER * nbest else -math.inf  # every derivation above it is listed
    assert _is_sublist([x for x in on if x[0] > cut], wider)
    assert on[:1] == off[:1]
    if threshold is None:
        assert on == off


#: How much longer the plain list is that Moses' pruned list is held to.
WIDER = 4


def test_moses_nbest_pruning_drops_far_recombinations_on_the_built_in_model():
    # A 1-nat beam threshold: some derivations of the plain 200-best go through a recombined
    # hypothesis that arrived more than 1 below its stack's best; they are dropped, nothing else.
    problem = Decoder(load_model()).problem("das muss unsere sorge gleichermaßen sein".split())
    off, on = _lists(problem, nbest=200, beam_size=10**6, beam_threshold=1.0, early_pruning=False)
    assert len(on) < len(off)
    assert _is_sublist(on, off) and on[0] == off[0]
