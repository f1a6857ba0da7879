"""The searches in target order with lexicalized reordering and both distortion semantics.

* On random Moses models (a random reordering type and table, weights of any sign): the
  exhaustive oracle's best is the best scorer value over the derivations it enumerates (which
  tests/unit/test_distortion.py holds to the semantics), and the stack decoder with a beam that
  keeps everything finds the same best score, its running score equal to the scorer's.
* On the Europarl gold model: the stack decoder scores at least Moses' own 1-best on all
  5 sentences (to the 6 digits Moses printed).
* The coverage-state searches on random Moses models (every reordering type, both semantics, LM
  orders 1-3, d 1-5, weights of any sign): the stack decoder never beats the oracle, reports the
  scorer's scores and, with a beam that keeps everything, reaches the optimum (from Python options
  and from the core's own table); the exact A* and the coverage DP (native, and the Python
  coverage DP oracle) return the exhaustive oracle's k best (the A* also without the stack's lower
  bound, so that its heuristic alone must be admissible); the A*'s support mode keeps every
  option of every derivation above its threshold. On the gold model the native stack decoder reaches
  Moses' 1-best and the exact search proves its optimum on all 5 sentences.
"""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model
from fstdecode.problem.scorer import check_distortion_limit
from fstdecode.problem.problem import SearchError
from fstdecode.reference import exhaustive
from fstdecode.reference.exhaustive import derivations
from fstdecode.search import coverage_dp, exact, stack
from fstdecode.search.native_coverage import coverage_search as native_coverage_search
from fstdecode.search.native_exact import exact_search as native_exact_search

from randmodels import NO_BUDGET, moses_case
from shared import SEARCH_SETTINGS, assert_exact_heuristic_alone_finds, assert_native_sound, assert_support_holds, data_path, examples, oracle_outcome

#: A beam that keeps every hypothesis of these small cases.
HUGE = 10**6


@pytest.mark.slow
@pytest.mark.parametrize("semantics", ["moses", "paper"])
@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(data=st.data())
def test_exhaustive_best_is_the_best_scored_derivation(semantics, data):
    model, sentence = data.draw(moses_case(max_n=5, semantics=semantics))
    decoder = Decoder(model, "exhaustive", max_states=NO_BUDGET, nbest=3)
    result = decoder.decode(sentence)
    problem = decoder.problem(sentence)
    scored = sorted(problem.score(p)[1] for p in derivations(problem))
    assert [d.score for d in result.derivations] == pytest.approx(scored[::-1][:3], abs=1e-9)
    for d in result.derivations:
        check_distortion_limit(len(sentence), d.phrases, model.distortion_limit, semantics)
        assert d.search_score == pytest.approx(d.score, abs=1e-9)
        assert len(d.features.lr) == model.reordering.num_features


@pytest.mark.slow
@pytest.mark.parametrize("semantics", ["moses", "paper"])
@pytest.mark.parametrize("estimate", [False, True])  # plain jumps, and M&Q's Δd with its final correction
@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(data=st.data())
def test_stack_with_a_huge_beam_equals_exhaustive(semantics, estimate, data):
    model, sentence = data.draw(moses_case(max_n=5, order=data.draw(st.sampled_from([2, 3])), semantics=semantics))
    exhaustive = Decoder(model, "exhaustive", max_states=NO_BUDGET).decode(sentence)
    stack = Decoder(
        model, "stack", beam_size=HUGE, early_pruning=False, distortion_estimate=estimate, max_states=NO_BUDGET
    ).decode(sentence)
    assert stack.best is not None, stack.error
    assert stack.best.score == pytest.approx(exhaustive.best.score, abs=1e-9)
    assert stack.best.search_score == pytest.approx(stack.best.score, abs=1e-9)  # the running score is the model's
    check_distortion_limit(len(sentence), stack.best.phrases, model.distortion_limit, semantics)


@pytest.mark.slow
@settings(max_examples=examples(30), **SEARCH_SETTINGS)
@given(moses_case(max_n=6), st.integers(1, 5), st.booleans())
def test_stack_small_beams_report_model_scores(case, beam_size, estimate):
    # Whatever pruning drops, every reported derivation is legal and scored as the scorer scores it.
    model, sentence = case
    result = Decoder(model, "stack", beam_size=beam_size, distortion_estimate=estimate, nbest=3).decode(sentence)
    for d in result.derivations:
        check_distortion_limit(len(sentence), d.phrases, model.distortion_limit, "moses")
        assert d.search_score == pytest.approx(d.score, abs=1e-9)


@pytest.mark.slow
def test_stack_reaches_moses_one_best_on_the_gold_model():
    folder = data_path("moses-lexreo-europarl-fr-en")
    model = load_model(folder / "moses.ini")
    gold = [float(v) for v in re.findall(r"^SCORE_\d+ = (\S+)$", (folder / "truth" / "results.txt").read_text(), re.M)]
    decoder = Decoder(model, "stack")
    assert decoder.semantics == "moses"
    lines = (folder / "to-translate.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(gold) == 5
    for line, moses in zip(lines, gold):
        best = decoder.decode(line).best
        # At least Moses' score, to the 6 significant digits it printed (-894.141 stands for
        # anything in [-894.1415, -894.1405]).
        assert best.score >= moses - 5e-4, line
        assert best.search_score == pytest.approx(best.score, abs=1e-9)
        check_distortion_limit(len(line.split()), best.phrases, 6, "moses")


def test_moses_gap_rule_changes_the_best_derivation(tmp_path):
    # The docstring example of fstdecode.model.distortion: n = 5, d = 3. The LM wants "b" first, and
    # only the phrase "w x" (words 2-3) gives "b". Starting there is legal for the paper (jump 2) but
    # not for Moses (3 + 1 - 0 = 4 > 3, word 0 left behind).
    (tmp_path / "pt").write_text(
        "u ||| a ||| 0.5\nv ||| a ||| 0.5\nw ||| a ||| 0.5\nx ||| a ||| 0.5\ny ||| a ||| 0.5\nw x ||| b ||| 0.5\n",
        encoding="utf-8",
    )
    (tmp_path / "lm").write_text(
        "\\data\\\nngram 1=5\nngram 2=2\n\n\\1-grams:\n-1\t<s>\t0\n-1\t</s>\n-1\t<unk>\n-1\ta\t0\n-1\tb\t0\n\n"
        "\\2-grams:\n0\t<s> b\n-5\t<s> a\n\n\\end\\\n",
        encoding="utf-8",
    )
    firsts = {}
    for semantics in ("paper", "moses"):
        model = load_model(
            phrase_table=tmp_path / "pt", lm=tmp_path / "lm", distortion_limit=3,
            weights=["distortion=0"], distortion_semantics=semantics,
        )
        exhaustive = Decoder(model, "exhaustive").decode("u v w x y")
        stack = Decoder(model, "stack", beam_size=HUGE, early_pruning=False).decode("u v w x y")
        assert stack.best.score == pytest.approx(exhaustive.best.score, abs=1e-9), semantics
        check_distortion_limit(5, stack.best.phrases, 3, semantics)
        firsts[semantics] = (stack.best.phrases[0].start, stack.best.phrases[0].end)
    assert firsts["paper"] == (2, 3) and firsts["moses"] != (2, 3)


# ---------------------------------------------------------------------------
# The coverage-state searches against the oracles (issue 13: native stack, coverage DP, exact A*)


@pytest.mark.slow
@pytest.mark.parametrize("semantics", ["moses", "paper"])
@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(data=st.data())
def test_native_stack_is_sound(semantics, data):
    # For every beam, both distortion accountings and early pruning: never above the oracle's
    # optimum, every score the scorer's; a beam that keeps everything (no early pruning) reaches it.
    order = data.draw(st.sampled_from([1, 2, 3]))
    model, sentence = data.draw(moses_case(max_n=6, max_d=5, order=order, semantics=semantics))
    problem = Decoder(model, "stack").problem(sentence)
    beam = data.draw(st.sampled_from([1, 3, HUGE]))
    early = data.draw(st.booleans())
    options = stack.StackOptions(
        beam_size=beam, nbest=data.draw(st.sampled_from([1, 3])),
        distortion_estimate=data.draw(st.booleans()), early_pruning=early, max_states=NO_BUDGET,
    )
    got = assert_native_sound("stack", problem, options)
    if beam == HUGE and not early and not isinstance(got, tuple):
        want = oracle_outcome(problem, options.nbest)
        assert _scores(got) == pytest.approx(_scores(want), abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("semantics", ["moses", "paper"])
@settings(max_examples=examples(25), **SEARCH_SETTINGS)
@given(data=st.data())
def test_native_stack_from_the_core_table_is_sound(semantics, data):
    # The decoders' own path: the options (and their reordering rows, unknown words' included)
    # come from the core's copy of the table, never from Python options; what it finds is legal,
    # scored as the scorer scores it, and never above the exhaustive optimum.
    model, sentence = data.draw(moses_case(max_n=6, max_d=5, order=data.draw(st.sampled_from([2, 3])), semantics=semantics))
    got = Decoder(model, "stack", nbest=3).decode(sentence)
    best = Decoder(model, "exhaustive", max_states=NO_BUDGET).decode(sentence).best
    for d in got.derivations:
        assert d.search_score == pytest.approx(d.score, abs=1e-9)
        check_distortion_limit(len(sentence), d.phrases, model.distortion_limit, semantics)
        assert best is not None and d.score <= best.score + 1e-9


def _scores(result):
    return [score for score, _ in result.hypotheses]


@pytest.mark.slow
@pytest.mark.parametrize("semantics", ["moses", "paper"])
@pytest.mark.parametrize("order", [1, 2, 3])
@settings(max_examples=examples(25), **SEARCH_SETTINGS)
@given(data=st.data())
def test_exact_and_coverage_dp_equal_the_oracle(semantics, order, data):
    model, sentence = data.draw(moses_case(max_n=5, max_d=5, order=order, semantics=semantics))
    problem = Decoder(model, "exhaustive").problem(sentence)
    k = 3
    want = _scores(exhaustive.search(problem, exhaustive.ExhaustiveOptions(max_states=NO_BUDGET, nbest=k)))
    cover = coverage_dp.CoverageOptions(max_states=NO_BUDGET, nbest=k)
    python_dp, native_dp = coverage_dp.search(problem, cover), native_coverage_search(problem, cover)
    assert _scores(python_dp) == pytest.approx(want, abs=1e-9)
    assert _scores(native_dp) == pytest.approx(want, abs=1e-9)
    assert (native_dp.states, native_dp.transitions) == (python_dp.states, python_dp.transitions)  # the same space
    native = native_exact_search(problem, exact.ExactOptions(max_states=NO_BUDGET, nbest=k))
    assert native.optimal and _scores(native) == pytest.approx(want, abs=1e-9)
    assert native.upper_bound == pytest.approx(want[0], abs=1e-6)
    assert_exact_heuristic_alone_finds(problem, k, want)


@pytest.mark.parametrize("semantics", ["moses", "paper"])
@settings(max_examples=examples(12), **SEARCH_SETTINGS)  # the exhaustive oracle dominates
@given(data=st.data())
def test_exact_heuristic_alone_is_admissible_and_consistent_with_reordering(semantics, data):
    # Lemmas 5-8 (docs/exact.md) end to end, weights of any sign (the distortion bound's both
    # cases): the native A* without a lower bound returns the exhaustive oracle's k best in order.
    # (Formerly: the Python A*'s h checked edge by edge, and its β against the core's.)
    order = data.draw(st.sampled_from([1, 2, 3]))
    model, sentence = data.draw(moses_case(max_n=5, max_d=5, order=order, semantics=semantics))
    problem = Decoder(model, "exhaustive").problem(sentence)
    try:  # the coverage DP: exact (held to exhaustive above), and cheaper
        want = _scores(coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET, nbest=3)))
    except SearchError:
        want = []
    if want:
        assert_exact_heuristic_alone_finds(problem, len(want), want)


@pytest.mark.slow
@pytest.mark.parametrize("semantics", ["moses", "paper"])
@settings(max_examples=examples(25), **SEARCH_SETTINGS)
@given(data=st.data())
def test_exact_support_holds_every_derivation_above_the_threshold(semantics, data):
    # --method fst restricts its options to this support; with reordering it must still hold
    # every derivation that scores at least the threshold.
    model, sentence = data.draw(moses_case(max_n=5, max_d=5, order=data.draw(st.sampled_from([2, 3])), semantics=semantics))
    problem = Decoder(model, "exhaustive").problem(sentence)
    everything = exhaustive.search(problem, exhaustive.ExhaustiveOptions(max_states=NO_BUDGET, nbest=2000)).hypotheses
    threshold = everything[0][0] - data.draw(st.sampled_from([0.0, 0.3, 1.0, 4.0]))
    assert_support_holds(problem, threshold, everything)


def _gold():
    folder = data_path("moses-lexreo-europarl-fr-en")
    gold = [float(v) for v in re.findall(r"^SCORE_\d+ = (\S+)$", (folder / "truth" / "results.txt").read_text(), re.M)]
    lines = (folder / "to-translate.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(gold) == 5
    return load_model(folder / "moses.ini"), lines, gold


@pytest.mark.slow
@pytest.mark.parametrize("method", ["stack", "exact"])
def test_native_searches_reach_moses_one_best_on_the_gold_model(method):
    # The exact search must also prove its optimum (within the 10 minutes a sentence).
    model, lines, gold = _gold()
    decoder = Decoder(model, method, **({"time_limit": 600} if method == "exact" else {}))
    assert decoder.semantics == "moses"
    for line, moses in zip(lines, gold):
        result = decoder.decode(line)
        best = result.best
        assert best.score >= moses - 5e-4, line  # Moses printed 6 significant digits
        assert best.search_score == pytest.approx(best.score, abs=1e-9)
        check_distortion_limit(len(line.split()), best.phrases, 6, "moses")
        if method == "exact":
            assert result.optimal, line
