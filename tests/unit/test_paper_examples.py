"""The examples of Chang & Collins (2017), worked by hand: Figure 1, Figure 3 and the slides.

The built-in example model translates a German source for Figure 1,
"wir müssen auch diese kritik ernst nehmen" (x_2..x_8), and the slides'
"das muss unsere sorge gleichermaßen sein". The paper numbers <s> as
position 1; fstdecode's search numbers it 0, so paper = ours + 1.
"""

from __future__ import annotations

import math

import pytest

from fstdecode.decoder import Decoder
from fstdecode.model.model import with_distortion_limit
from fstdecode.search import coverage_dp, signature_dp
from fstdecode.reference import exhaustive, figure2
from fstdecode.statespace.signature import PHI, expand, goal_state, replay, valid

from randmodels import NO_BUDGET

FIGURE1 = "wir müssen auch diese kritik ernst nehmen"
SLIDES = "das muss unsere sorge gleichermaßen sein"


def best_path(decoder, sentence):
    problem = decoder.problem(sentence.split())
    chart = signature_dp.run(problem)
    steps = signature_dp.backtrack(chart.layers, problem.end, goal_state(problem), 0)
    return problem, chart, steps


def paper_signatures(problem, sigs):
    """Signatures in the paper's numbering and with words, as Figure 3 prints them."""
    return {(s + 1, problem.vocab[ws], t + 1, problem.vocab[wt]) for s, ws, t, wt in sigs}


def test_figure1_derivation(example_decoder):
    # H = (1,1,<s>)(2,3,we must)(4,4,also)(8,8,take)(5,6,these criticisms)(7,7,seriously)(9,9,</s>)
    best = example_decoder.decode(FIGURE1).best
    spans = [(p.start + 2, p.end + 2, " ".join(p.target)) for p in best.phrases]
    assert spans == [(2, 3, "we must"), (4, 4, "also"), (8, 8, "take"), (5, 6, "these criticisms"), (7, 7, "seriously")]
    # Eq. (1)'s distortion by hand: |1+1-2| + |3+1-4| + |4+1-8| + |8+1-5| + |6+1-7| + |7+1-9| = 0+0+3+4+0+1.
    assert best.features.distortion == -8
    assert best.features.word == -7 and best.features.phrase == 5
    # p(e|f) of the five pairs in fstdecode/data/phrase-table: 0.8, 0.8, 0.9, 0.7, 0.7.
    assert best.features.tm[0] == pytest.approx(math.log(0.8 * 0.8 * 0.9 * 0.7 * 0.7))


def test_figure3_states_along_the_best_path(example_decoder):
    problem, chart, steps = best_path(example_decoder, FIGURE1)
    figure3 = {
        3: {(1, "<s>", 3, "must")},
        4: {(1, "<s>", 4, "also")},
        6: {(1, "<s>", 4, "also"), (5, "these", 6, "criticisms")},
        7: {(1, "<s>", 4, "also"), (5, "these", 7, "seriously")},
        8: {(1, "<s>", 7, "seriously")},
        9: {(1, "<s>", 9, "</s>")},
    }
    seen = {}
    for (opt, _, _), tapes in zip(steps, replay(steps, problem.bos_option)):
        sigs = {(s, t[0].first, t[-1].t, t[-1].last) for s, t in tapes.items()}
        seen[opt.t + 1] = paper_signatures(problem, sigs)
        # Each state on the path is a state of the chart at its position j.
        assert tuple(sorted(sigs)) in chart.layers[opt.t]
    assert seen == figure3


def test_figure3_join_transition(example_decoder):
    # From T = (7, {(1,<s>,4,also), (5,these,7,seriously)}) the transition σ1 (8,8,take) σ2
    # leads to (8, {(1,<s>,7,seriously)}): a join (Case 4 of Section 4.2.1).
    problem, chart, _ = best_path(example_decoder, FIGURE1)
    ids = {w: i for i, w in enumerate(problem.vocab)}
    state = ((0, ids["<s>"], 3, ids["also"]), (4, ids["these"], 6, ids["seriously"]))
    assert state in chart.layers[6]
    joins = [
        (t, new) for t, new, _, opt, s1, s2 in expand(problem, 6, state)
        if opt.phrase is not None and opt.phrase.target == ("take",) and s1 == 0 and s2 == 4
    ]
    assert joins == [(7, ((0, ids["<s>"], 6, ids["seriously"]),))]


def test_figure5_valid():
    # Lemma 2 with d = 4 at j = 7 (paper numbering 8): ends must be >= j-d, starts (but <s>) >= j-d+2.
    assert valid(7, ((0, 0, 3, 0), (5, 0, 7, 0)), 4)
    assert not valid(7, ((0, 0, 2, 0), (5, 0, 7, 0)), 4)  # a tape ends at 2 < 7-4
    assert not valid(7, ((0, 0, 3, 0), (4, 0, 7, 0)), 4)  # a tape starts at 4 < 7-4+2
    assert valid(7, ((0, 0, 7, 0),), 0)


def test_distortion_limit_excludes_figure1_at_d3(example_model):
    # Figure 1's derivation jumps |8+1-5| = 4, so with d = 3 it is not a derivation.
    decoder = Decoder(with_distortion_limit(example_model, 3))
    problem = decoder.problem(FIGURE1.split())
    dp = signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET))
    oracle = exhaustive.search(problem, exhaustive.ExhaustiveOptions(max_states=NO_BUDGET))
    assert dp.hypotheses[0][0] == pytest.approx(oracle.hypotheses[0][0], abs=1e-9)
    assert " ".join(w for p in dp.hypotheses[0][1] for w in p.target) != "we must also take these criticisms seriously"


def test_slides_tapes(example_decoder):
    # The slides build π1 = (1,2,this must)(5,5,also)(6,6,be)(3,4,our concern) with a second
    # tape π2 = (3,4,our concern) until (6,6,be) joins them. Slide positions = ours.
    problem, _, steps = best_path(example_decoder, SLIDES)
    tapes = [
        [[(o.s, o.t, " ".join(o.phrase.target)) for o in tape if o.phrase] for tape in t.values()]
        for t in replay(steps, problem.bos_option)
    ]
    assert tapes[:4] == [
        [[(1, 2, "this must")]],
        [[(1, 2, "this must")], [(3, 4, "our concern")]],
        [[(1, 2, "this must"), (5, 5, "also")], [(3, 4, "our concern")]],
        [[(1, 2, "this must"), (5, 5, "also"), (6, 6, "be"), (3, 4, "our concern")]],
    ]
    assert [s1 != PHI and s2 != PHI for _, s1, s2 in steps][:4] == [False, False, False, True]


@pytest.mark.parametrize("sentence", [SLIDES, FIGURE1])
def test_figure2_program_finds_the_optimum_of_the_examples(example_decoder, sentence):
    # The paper's Figure 2 dynamic program (the reference) and the coverage DP, an independent
    # exact search, agree on the examples; random models: tests/integration/test_search_agreement.py.
    problem = example_decoder.problem(sentence.split())
    best, _, _ = figure2.best_score(problem)
    exact = coverage_dp.search(problem, coverage_dp.CoverageOptions(max_states=NO_BUDGET)).hypotheses[0][0]
    assert best == pytest.approx(exact, abs=1e-9)
