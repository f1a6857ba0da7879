"""The two distortion semantics (fstdecode.model.distortion): the documented examples, Moses'
rule against a direct reading of SearchNormal::ProcessOneHypothesis, and the exhaustive oracle's
derivations against a brute-force filter of every segmentation and order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode.decoder import Decoder
from fstdecode.model.distortion import EXAMPLES, derivation_violation, final_allowed, step_allowed
from fstdecode.problem.scorer import ScorerError, check_distortion_limit, jumps
from fstdecode.reference.exhaustive import derivations
from fstdecode.problem.sentence import Phrase

from randmodels import moses_case
from shared import SEARCH_SETTINGS, examples


@pytest.mark.parametrize("example", EXAMPLES)
def test_documented_examples(example):
    spans = example.spans
    assert (derivation_violation("paper", example.d, example.n, spans) is None) == example.paper_legal
    assert (derivation_violation("moses", example.d, example.n, spans) is None) == example.moses_legal
    phrases = [Phrase(s, t, None) for s, t in spans]
    assert -sum(jumps(example.n, phrases)) == example.paper_distortion
    assert -sum(jumps(example.n, phrases, final=False)) == example.moses_distortion


def moses_allows(d: int, covered: list[bool], prev: tuple[int, int] | None, s: int, t: int) -> bool:
    """Moses' SearchNormal::ProcessOneHypothesis, read directly: the distance from the previous range to the
    start word, then, unless the phrase starts at the first gap, the distance from the phrase to the first gap."""
    first_gap = covered.index(False)

    def distance(prev_range, cur_start):  # InputType::ComputeDistortionDistance
        return cur_start if prev_range is None else abs(prev_range[1] - cur_start + 1)

    if distance(prev, s) > d:
        return False
    return s == first_gap or distance((s, t), first_gap) <= d


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(1, 7), st.integers(0, 5), st.data())
def test_step_rule_is_moses_rule(n, d, data):
    covered = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if all(covered):
        return
    free = [i for i in range(n) if not covered[i]]
    s = data.draw(st.sampled_from(free))
    t = s
    while t + 1 < n and not covered[t + 1] and data.draw(st.booleans()):
        t += 1
    prev = data.draw(st.one_of(st.none(), st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).map(sorted).map(tuple)))
    prev_end = -1 if prev is None else prev[1]
    assert step_allowed("moses", d, prev_end, covered.index(False), s, t) == moses_allows(d, covered, prev, s, t)


def all_orders(problem):
    """Every sequence of the problem's phrases that covers each word once (no limit at all)."""
    n = problem.n
    phrases = [o.phrase for opts in problem.by_start for o in opts if o.phrase is not None]

    def rec(covered, seq):
        if all(covered):
            yield tuple(seq)
            return
        for p in phrases:
            if not any(covered[p.start : p.end + 1]):
                yield from rec(covered[: p.start] + [True] * (p.end - p.start + 1) + covered[p.end + 1 :], seq + [p])

    yield from rec([False] * n, [])


@pytest.mark.parametrize("semantics", ["moses", "paper"])
@settings(max_examples=examples(25), **SEARCH_SETTINGS)
@given(data=st.data())
def test_exhaustive_enumerates_exactly_the_legal_derivations(semantics, data):
    model, sentence = data.draw(moses_case(max_n=4, semantics=semantics))
    problem = Decoder(model, "exhaustive").problem(sentence)
    assert problem.semantics == semantics
    legal = {
        tuple(map(id, seq)) for seq in all_orders(problem)
        if derivation_violation(semantics, problem.d, problem.n, [(p.start, p.end) for p in seq]) is None
    }
    found = [tuple(map(id, seq)) for seq in derivations(problem)]
    assert len(found) == len(set(found)) and set(found) == legal


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(1, 6), st.integers(1, 4), st.data())
def test_moses_final_jump_never_exceeds_the_limit(n, d, data):
    # The docstring's claim: under Moses' rule the jump into </s> is at most d - 1.
    order = data.draw(st.permutations(range(n)))
    spans = [(i, i) for i in order]
    if derivation_violation("moses", d, n, spans) is None:
        assert n - 1 - spans[-1][1] <= d - 1 and final_allowed("paper", d, spans[-1][1], n)


def test_check_distortion_limit_names_the_rule():
    phrases = [Phrase(s, t, None) for s, t in ((2, 3), (1, 1), (0, 0), (4, 4))]
    check_distortion_limit(5, phrases, 3, "paper")
    with pytest.raises(ScorerError, match="Moses' rule"):
        check_distortion_limit(5, phrases, 3, "moses")
    with pytest.raises(ScorerError, match="jump 4 exceeds the distortion limit 3"):
        check_distortion_limit(5, [Phrase(s, t, None) for s, t in ((4, 4), (0, 3))], 3, "paper")
