"""``--method fst`` with the native, pruned R: the same optimum, a certificate, and lattices that
keep every derivation within ``--lattice-prune`` of the best.

The reference is the full R (``Cascade(..., pruned=False)``: every signature state), whose
lattice holds every derivation; the pruned R must keep exactly those that reach its threshold.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fstdecode.decoder import Decoder
from fstdecode.fst.cascade import Cascade
from fstdecode.reference import exhaustive

from randmodels import NO_BUDGET, problem_of, random_case
from shared import SEARCH_SETTINGS as SETTINGS, examples


#: More derivations than a random case's sentence has (checked by assume).
LIMIT = 3000


def derivation(phrases) -> tuple:
    return tuple((p.start, p.end, p.pair.target, p.pair.scores) for p in phrases)


@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # trigram: seconds
@settings(max_examples=examples(40), **SETTINGS)
@given(data=st.data())
def test_pruned_cascade_equals_the_oracle_with_a_certificate(order, data):
    case = data.draw(random_case(max_n=5, order=order, any_sign=True))
    model, sentence = case
    best = exhaustive.search(problem_of(case), exhaustive.ExhaustiveOptions(max_states=NO_BUDGET)).hypotheses[0][0]
    got = Decoder(model, "fst").decode(list(sentence))
    assert got.optimal
    assert got.best.search_score == pytest.approx(best, abs=1e-6)
    assert got.upper_bound == pytest.approx(best, abs=1e-6)


@pytest.mark.parametrize("order", [2, pytest.param(3, marks=pytest.mark.slow)])  # trigram: seconds
@settings(max_examples=examples(30), **SETTINGS)
@given(data=st.data())
def test_pruned_lattice_keeps_every_derivation_within_the_margin(order, data):
    model, sentence = data.draw(random_case(max_n=5, order=order, any_sign=True))
    margin = data.draw(st.sampled_from([0.0, 0.5, 2.0, 5.0]))
    everything = Cascade(model, pruned=False).search(sentence, nbest=LIMIT).result.hypotheses
    assume(len(everything) < LIMIT)  # the full lattice's every derivation
    cascade = Cascade(model)
    out = cascade.search(sentence, prune=margin)
    kept = cascade._best_paths(out.raw_lattice, out.problem, out.reordering, LIMIT, False)
    best = everything[0][0]
    assert kept[0][0] == pytest.approx(best, abs=1e-6)
    scores = {derivation(phrases): score for score, phrases in everything}
    got = {derivation(phrases): score for score, phrases in kept}
    for key, score in scores.items():
        if score >= best - margin + 1e-6:  # within the margin (a tie at its edge may go either way)
            assert key in got
    for key, score in got.items():  # (pruning arcs may keep a few more) scored as the full lattice scores them
        assert score == pytest.approx(scores[key], abs=1e-6)


def test_pruned_reordering_is_much_smaller_on_hansards():
    """Sentence 9 (6 words, bigram, d = 4, table-limit 20): the full R has 2.69M states."""
    from shared import hansards_input, hansards_model

    model = hansards_model(lm_order=2, distortion_limit=4, table_limit=20)
    line = hansards_input()[9]
    out = Cascade(model).search(line.split())
    exact = Decoder(model, "exact").decode(line)
    assert out.result.hypotheses[0][0] == pytest.approx(exact.best.search_score, abs=1e-6)
    assert out.reordering.states < 1000


@pytest.mark.slow  # the exhaustive oracle on 6 trigram words: up to minutes on an unlucky draw
@settings(max_examples=examples(8), **SETTINGS)
@given(case=random_case(min_n=4, max_n=6, order=3, any_sign=True))
def test_pruned_cascade_over_budget_gives_a_valid_gap(case):
    """A budget that runs out (in the A* that finds R's options, or in the walk) gives the stack
    decoder's derivation, not optimal, with a gap that bounds the oracle's best."""
    model, sentence = case
    best = exhaustive.search(problem_of(case), exhaustive.ExhaustiveOptions(max_states=NO_BUDGET)).hypotheses[0][0]
    for budget in (3, 12):
        got = Decoder(model, "fst", max_states=budget).decode(list(sentence))
        if got.optimal:
            assert got.best.search_score == pytest.approx(best, abs=1e-6)
            continue
        assert got.best is not None and got.gap is not None
        assert got.best.search_score + got.gap >= best - 1e-6
