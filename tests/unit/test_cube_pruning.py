"""Cube pruning in the stack decoder (StackOptions.cube_pop_limit; Moses' -search-algorithm 1).

Held to the Python coverage DP (the oracle every native search is held to) and the scorer, on
random models under both distortion semantics, with and without lexicalized reordering:

* whatever the pop limit and beam, every reported score is the scorer's and never above the
  oracle's k-th best (shared.assert_native_sound);
* with a beam and a pop limit that keep everything, every grid cell is popped, so the k best are
  the oracle's;
* with a pop limit of 1 and a beam of 1 a translation is still found (the anchor's minimal step
  is pushed outside the limit) wherever every word has a one-word option;
* ``fstdecode moses -search-algorithm 1`` decodes with it, at Moses' default pop limit or the
  one given, as ``fstdecode decode --cube-pop-limit`` does.
"""

from __future__ import annotations

import dataclasses
import importlib.resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode.cli.moses import MOSES_CUBE_POP_LIMIT, moses_args
from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model
from fstdecode.search import native_stack, stack

from randmodels import moses_case, random_case
from shared import SEARCH_SETTINGS, assert_native_sound, examples, oracle_outcome, run_cli

SENTENCE = "das muss unsere sorge gleichermaßen sein"


def _problem(case):
    model, sentence = case
    return Decoder(model).problem(sentence)


@st.composite
def any_case(draw, max_n: int = 6):
    """A random model under paper or Moses semantics, with lexicalized reordering or without."""
    kind = draw(st.sampled_from(["plain", "moses", "lexreo-paper", "lexreo-moses"]))
    if kind == "plain":
        return draw(random_case(max_n=max_n, order=draw(st.sampled_from([2, 3])), any_sign=True))
    if kind == "moses":
        model, sentence = draw(random_case(max_n=max_n, order=2, any_sign=True))
        return dataclasses.replace(model, distortion_semantics="moses", semantics_given=True,
                                   early_distortion_cost=draw(st.booleans())), sentence
    return draw(moses_case(max_n=min(max_n, 5), order=2, semantics=kind.split("-")[1]))


@settings(max_examples=examples(60), **SEARCH_SETTINGS)
@given(case=any_case(), data=st.data())
def test_cube_pruning_is_sound(case, data):
    options = stack.StackOptions(
        nbest=data.draw(st.integers(1, 4)),
        beam_size=data.draw(st.integers(1, 20)),
        beam_threshold=data.draw(st.one_of(st.none(), st.floats(0, 3))),
        cube_pop_limit=data.draw(st.integers(1, 40)),
        distortion_estimate=data.draw(st.booleans()),
    )
    got = assert_native_sound("stack", _problem(case), options)
    if not isinstance(got, tuple):
        assert got.optimal is False


@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(case=any_case(max_n=5), nbest=st.integers(1, 4), estimate=st.booleans())
def test_a_limit_that_pops_everything_reaches_the_oracles_k_best(case, nbest, estimate):
    problem = _problem(case)
    options = stack.StackOptions(nbest=nbest, beam_size=10**6, cube_pop_limit=10**6, distortion_estimate=estimate,
                                 max_states=10**9)
    got = native_stack.stack_search(problem, options)
    want = oracle_outcome(problem, nbest)
    assert [round(s, 7) for s, _ in got.hypotheses] == [round(s, 7) for s, _ in want.hypotheses]


@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(case=any_case(max_n=7))
def test_the_smallest_limit_still_translates(case):
    # random_case and moses_case give every source word a one-word option: the anchor's minimal
    # step then completes, whatever the pops took.
    problem = _problem(case)
    got = native_stack.stack_search(problem, stack.StackOptions(beam_size=1, cube_pop_limit=1, max_states=10**9))
    assert got.hypotheses


def test_a_larger_limit_is_never_worse_on_the_built_in_model_here():
    # Not a theorem (pruning is not monotone), but on the built-in model's sentence the scores
    # rise to the normal search's as the limit grows, and never above the oracle's optimum.
    problem = Decoder(load_model()).problem(SENTENCE.split())
    best = oracle_outcome(problem).hypotheses[0][0]
    scores = [native_stack.stack_search(problem, stack.StackOptions(beam_size=5, cube_pop_limit=k)).hypotheses[0][0]
              for k in (1, 5, 50, 10**5)]
    assert all(s <= best + 1e-9 for s in scores)
    assert scores[-1] == pytest.approx(best, abs=1e-9)


def _ini() -> str:
    return str(importlib.resources.files("fstdecode") / "data" / "moses.ini")


def test_moses_search_algorithm_1_takes_moses_default_pop_limit():
    args, _ = moses_args(["-f", _ini(), "-search-algorithm", "1"])
    assert args.cube_pop_limit == MOSES_CUBE_POP_LIMIT == 1000
    args, _ = moses_args(["-f", _ini(), "-search-algorithm", "1", "-cube-pruning-pop-limit", "7"])
    assert args.cube_pop_limit == 7
    args, _ = moses_args(["-f", _ini()])
    assert args.cube_pop_limit is None


def test_moses_pop_limit_without_cube_pruning_is_ignored_with_a_warning(caplog):
    with caplog.at_level("WARNING", logger="fstdecode"):
        args, _ = moses_args(["-f", _ini(), "-cube-pruning-pop-limit", "7"])
    assert args.cube_pop_limit is None
    assert "-cube-pruning-pop-limit applies to cube pruning (-search-algorithm 1) only" in caplog.text


def test_moses_cube_pruning_matches_decode_with_the_same_limit(tmp_path):
    text = (SENTENCE + "\n") * 2 + "sein das muss\n"
    moses = run_cli(["moses", "-f", _ini(), "-search-algorithm", "1", "-cube-pruning-pop-limit", "3", "-s", "4",
                     "-output-hypo-score", "-v", "0"], text, cwd=tmp_path)
    assert moses.returncode == 0, moses.stderr
    assert moses.stderr == ""  # honoured: no warning that it is ignored
    lines = moses.stdout.splitlines()
    assert len(lines) == 3
    decode = run_cli(["decode", "-f", _ini(), "--method", "stack", "--cube-pop-limit", "3", "--beam-size", "4",
                      "--beam-threshold", "11.512925464970229", "--moses-nbest-pruning"], text, cwd=tmp_path)
    assert decode.returncode == 0, decode.stderr
    # (Moses' lines end in a space; decode's do not)
    assert [line.split(" ", 1)[1].rstrip(" ") for line in lines] == decode.stdout.splitlines()


def test_moses_pop_limit_below_one_is_refused(tmp_path):
    proc = run_cli(["moses", "-f", _ini(), "-search-algorithm", "1", "-cube-pruning-pop-limit", "0"], "das\n",
                   cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "-cube-pruning-pop-limit 0: must be >= 1" in proc.stderr
