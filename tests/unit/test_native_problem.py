"""A sentence's problem built by the native core (fstdecode.search.native.NativeTable) against
the one built in Python (SearchProblem's options, handed to the core by native_problem).

Both must give the core the same options in the same order, over the same word ids, with the
same ŵ(p); and a Decoder must decode the same way whichever built the problem.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from fstdecode.decoder import Decoder
from fstdecode.search.native import native_form

from randmodels import NO_BUDGET, random_case
from shared import examples, outcome
from shared import hansards_input, hansards_model

SETTINGS = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


def both_forms(decoder: Decoder, words):
    """(native-built form, Python-built form) of the same sentence, each from a fresh problem."""
    native = decoder.problem(words)
    form = native_form(native)
    assert not native.options_built, "the native form must not need the Python options"
    python = decoder.problem(words)
    python.by_start  # noqa: B018  (builds the Python options, so the core takes its options from them)
    return form, native_form(python)


def assert_same_problem(decoder: Decoder, words) -> None:
    a, b = both_forms(decoder, words)
    assert a.core.lm_ids == b.core.lm_ids
    opts_a, opts_b = a.core.options(), b.core.options()
    assert [(s, t, w, i) for s, t, _, w, i in opts_a] == [(s, t, w, i) for s, t, _, w, i in opts_b]
    for (*_, score_a, _, _), (*_, score_b, _, _) in zip(opts_a, opts_b):
        assert score_a == pytest.approx(score_b, rel=0, abs=1e-12)
    assert [a.phrase(i) for i in range(len(opts_a))] == [b.phrase(i) for i in range(len(opts_b))]


@settings(max_examples=examples(60), **SETTINGS)
@given(random_case(max_n=7, order=2))
def test_same_options_bigram(case):
    model, sentence = case
    assert_same_problem(Decoder(model), sentence)


@pytest.mark.slow  # over half a second; the fast set keeps its siblings
@settings(max_examples=examples(60), **SETTINGS)
@given(random_case(max_n=7, order=3))
def test_same_options_trigram(case):
    model, sentence = case
    assert_same_problem(Decoder(model), sentence)


@pytest.mark.parametrize("method", ["stack", "beam", pytest.param("dp", marks=pytest.mark.slow), "coverage"])  # dp: ~25 s
@settings(max_examples=examples(25), **SETTINGS)
@given(case=random_case(max_n=6, order=3))
@pytest.mark.slow
def test_decoder_same_output(method, case):
    """The native decoder's problem (its options built in the core from the table) against the same
    problem's options built in Python (the scorer's and the oracles' route): the same search finds
    the same derivations."""
    model, sentence = case
    decoder = Decoder(model, method, max_states=NO_BUDGET)
    native = decoder.decode(sentence)
    problem = decoder.problem(tuple(sentence.split()) if isinstance(sentence, str) else tuple(sentence))
    assert problem.by_start is not None  # the Python options, built first: native_form then uses them
    python = outcome(lambda p, o: decoder.searcher.search(p), problem, None)
    if native.error is not None:
        assert isinstance(python, tuple), native.error
        return
    assert not isinstance(python, tuple), python
    assert [d.score for d in native.derivations] == pytest.approx([s for s, _ in python.hypotheses], abs=1e-6)
    assert [[(p.start, p.end, p.target) for p in d.phrases] for d in native.derivations] == [
        [(p.start, p.end, p.target) for p in phrases] for _, phrases in python.hypotheses
    ]


def test_the_table_is_registered_once():
    """The native decoder registers every source phrase once, when it is made; decoding lines (with
    unknown words, whose copies are per sentence) adds nothing."""
    model = hansards_model(lm_order=2, distortion_limit=4, table_limit=20)
    decoder = Decoder(model)
    table = decoder.problem(["x"]).phrase_scores.native
    assert len(table.index) == len(list(model.table.sources()))
    lines = [line.split() for line in hansards_input()]
    assert any((w,) not in model.table for line in lines for w in line)  # some unknown words
    for line in lines:
        native_form(decoder.problem(line))
    assert len(table.index) == len(list(model.table.sources()))


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_hansards_sentences():
    """Every Hansards line: the same options either way (trigram LM, d = 4, table limit 20)."""
    decoder = Decoder(hansards_model(lm_order=3, distortion_limit=4, table_limit=20))
    for line in hansards_input():
        assert_same_problem(decoder, line.split())
