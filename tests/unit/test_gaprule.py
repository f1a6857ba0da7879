"""fstdecode/statespace/gaprule.py: Moses' gap rule in signature states.

* The lemma of its docstring (Moses' rule, as ``derivation_violation`` applies it phrase by phrase
  in target order, holds iff no phrase starts left of ``m(p)`` of a phrase before it), checked
  on every ordering of every segmentation of up to 7 words and every d up to 5.
* README's example: two prefixes that reach the same ``paper`` signature state, one legal for
  Moses and one not: under ``moses`` the illegal one has no path.
* dp, bounded, beam, the cascade and the Python signature DP oracle equal the exhaustive oracle
  under ``moses`` semantics on random models without a reordering model (with one:
  tests/integration/test_lexreo_signature.py).
"""

from __future__ import annotations

import dataclasses
import itertools
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode.decoder import Decoder
from fstdecode.search import signature_dp
from fstdecode.model.distortion import derivation_violation, jump
from fstdecode.problem.scorer import check_distortion_limit
from fstdecode.statespace.gaprule import canonical, reach
from fstdecode.statespace.signature import least_jumps

from randmodels import NO_BUDGET, random_case
from shared import SEARCH_SETTINGS, examples
from test_signature_reordering import model_of, state_after


def segmentations(n: int, s: int = 0):
    if s == n:
        yield ()
        return
    for t in range(s, n):
        for rest in segmentations(n, t + 1):
            yield ((s, t),) + rest


def pairwise_legal(d: int, spans) -> bool:
    """Adjacent jumps <= d (no final jump: Moses'), and no phrase starting left of an earlier one's m."""
    prev = -1
    for s, t in spans:
        if jump(prev, s) > d:
            return False
        prev = t
    return all(
        spans[k][0] >= reach(d, SimpleNamespace(s=spans[i][0], t=spans[i][1]))
        for i in range(len(spans))
        for k in range(i + 1, len(spans))
    )


def test_pairwise_condition_is_moses_rule():
    checked = disagree = 0
    for n in range(1, 8):
        for d in range(0, 6):
            for seg in segmentations(n):
                for order in itertools.permutations(seg):
                    checked += 1
                    disagree += (derivation_violation("moses", d, n, order) is None) != pairwise_legal(d, order)
    assert checked > 10_000 and disagree == 0


def test_readme_example_is_told_apart(tmp_path):
    # n = 6, d = 2: [0,0] [3,3] [2,2] [1,1] [4,4] breaks Moses' rule ([3,3] leaves word 1 behind
    # with 3 + 1 - 1 = 3 > 2); [0,0] .. [4,4] in order does not. Under `paper` both reach one state
    # (tests/unit/test_signature_reordering.py); under `moses` the first has no path at all.
    bad = [(0, 0), (3, 3), (2, 2), (1, 1), (4, 4), (5, 5)]
    good = [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]
    model = dataclasses.replace(model_of(tmp_path, None), distortion_semantics="moses", semantics_given=True)
    decoder = Decoder(model, "dp")
    assert decoder.semantics == "moses"
    problem = decoder.problem(tuple("u v w x y z".split()))
    assert len(state_after(problem, good, 5)) == 1
    with pytest.raises(AssertionError, match="no transition follows"):
        state_after(problem, bad, 5)


def test_canonical_keeps_only_which_tapes_each_m_refuses():
    # Tapes (s, w_s, t, w_t, M, lo). At j = 10: the <s> tape with M = 8, a tape starting at 9 that
    # reaches back to lo = 7, one at 10 with M = 6. The open tapes' lo are 7 and 10. M = 8 and
    # M = 9 refuse the tape with lo 7 and no other, as M = 10 does: both are stored as 10; M = 6
    # refuses nothing (every tape to come starts after j) and is stored as 0; M = 11 refuses both
    # open tapes, as any M above 10 does: stored as 11. The <s> tape's lo is never compared: 0.
    sigs = ((0, 1, 8, 2, 8, 3), (9, 1, 9, 2, 9, 7), (10, 1, 10, 2, 6, 10))
    assert canonical(10, sigs) == ((0, 1, 8, 2, 10, 0), (9, 1, 9, 2, 10, 7), (10, 1, 10, 2, 0, 10))
    sigs = ((0, 1, 8, 2, 12, 3), (9, 1, 9, 2, 9, 7), (10, 1, 10, 2, 7, 10))
    assert canonical(10, sigs) == ((0, 1, 8, 2, 11, 0), (9, 1, 9, 2, 10, 7), (10, 1, 10, 2, 0, 10))
    # With no open tape nothing can be refused: M is stored as 0.
    assert canonical(10, ((0, 1, 10, 2, 11, 0),)) == ((0, 1, 10, 2, 0, 0),)


@pytest.mark.slow
@settings(max_examples=examples(60), **SEARCH_SETTINGS)
@given(data=st.data())
def test_signature_searches_equal_exhaustive_under_moses(data):
    order = data.draw(st.sampled_from([1, 2, 3]))
    model, sentence = data.draw(random_case(max_n=6, max_d=4, order=order, any_sign=True))
    model = dataclasses.replace(model, distortion_semantics="moses", semantics_given=True)
    best = Decoder(model, "exhaustive", max_states=NO_BUDGET, nbest=3).decode(sentence)
    # The native searches, and beside them the Python signature DP (the oracle the others are held to).
    decoders = {
        "dp": Decoder(model, "dp", max_states=NO_BUDGET, nbest=3),
        "bounded": Decoder(model, "bounded", max_states=NO_BUDGET),
        "beam": Decoder(model, "beam", beam_size=2, max_states=NO_BUDGET),
        "fst": Decoder(model, "fst", max_states=NO_BUDGET),
    }
    assert {d.semantics for d in decoders.values()} == {"moses"}
    results = {name: d.decode(sentence) for name, d in decoders.items()}
    if best.best is None:  # no derivation within the limit: the exact searches find none either
        assert results["dp"].best is None and results["bounded"].best is None
        return
    assert [d.score for d in results["dp"].derivations] == pytest.approx([d.score for d in best.derivations], abs=1e-9)
    problem = decoders["dp"].problem(sentence)
    oracle = signature_dp.search(problem, signature_dp.DpOptions(nbest=3, max_states=NO_BUDGET))
    assert [s for s, _ in oracle.hypotheses] == pytest.approx([d.score for d in best.derivations], abs=1e-9)
    assert results["bounded"].best.score == pytest.approx(best.best.score, abs=1e-9)
    assert results["fst"].best.score == pytest.approx(best.best.score, abs=1e-9)
    assert results["beam"].best is None or results["beam"].best.score <= best.best.score + 1e-9
    for result in results.values():
        for d in result.derivations:
            assert d.search_score == pytest.approx(d.score, abs=1e-9)  # the running score is the model's
            check_distortion_limit(len(sentence), d.phrases, model.distortion_limit, "moses")


@pytest.mark.parametrize("method", ["dp", "beam", "bounded", "fst"])
def test_explicit_moses_semantics_on_a_plain_model_runs_natively(tmp_path, method):
    # The native signature searches (and the native R) serve both semantics (native/statespace.h
    # carries the gap rule).
    paper = model_of(tmp_path, None)
    moses = dataclasses.replace(paper, distortion_semantics="moses", semantics_given=True)
    assert Decoder(paper, method).semantics == "paper"
    assert Decoder(moses, method).semantics == "moses"


def test_no_jump_into_eos_is_owed_under_moses(tmp_path):
    # The completion bounds of bounded (signature_beam's "bound") and of the pruned R charge each
    # open tape the jumps it still owes. At j = n the <s> tape is followed by </s>, which Moses'
    # semantics do not charge: a bound that charged it would drop the best derivation.
    paper = model_of(tmp_path, None)
    moses = dataclasses.replace(paper, distortion_semantics="moses", semantics_given=True)
    for model, owed in ((paper, 2), (moses, 0)):
        problem = Decoder(model, "dp").problem(tuple("u v w x y z".split()))
        n = problem.n
        bos_tape = (0, problem.bos, n - 2, problem.bos)
        assert least_jumps(problem, n, (bos_tape,)) == owed
        assert least_jumps(problem, n - 1, (bos_tape,)) == 1  # before n a phrase follows it: charged
        assert least_jumps(problem, n, ((n, 1, n, 1),)) == 2  # entered from a phrase before it


def test_the_free_final_jump_may_leave_any_tape_but_the_bos_one(tmp_path):
    # Before n, the tape that ends last (left by the jump into </s>) may be any open tape but
    # <s>'s: under Moses' semantics without early distortion cost, the largest of their leaving
    # charges is owed by no completion ("sorge gleichermaßen sein": order 2 3 1, and at j = 2 the
    # tape (1, 1) is left by </s>).
    paper = model_of(tmp_path, None)
    moses = dataclasses.replace(paper, distortion_semantics="moses", semantics_given=True)
    early = dataclasses.replace(moses, early_distortion_cost=True)
    for model, owed in ((paper, 1 + 3), (early, 1 + 3), (moses, 3)):
        problem = Decoder(model, "dp").problem(tuple("u v w x y z".split()))
        bos, tape = (0, problem.bos, 2, problem.bos), (1, 1, 1, 1)  # at j = 2: <s> x2, and x1 alone
        # <s>'s end (2) owes nothing at j = 2; the tape (1, 1) is left by >= 1 and entered by >= 3.
        assert least_jumps(problem, 2, (bos, tape)) == owed
        # Two tapes that may end last: only the larger leaving charge is free.
        two = (bos, (1, 1, 1, 1), (3, 1, 3, 1))  # at j = 5: ends 1 and 3 owe 4 and 2; entries 6 and 4
        assert least_jumps(problem, 5, two) == (4 + 2 + 6 + 4 + 3) - (4 if model is moses else 0)
