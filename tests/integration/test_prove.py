"""``--method prove`` (the default): the stack decoder, then an A* proof within a small budget.

Against the exhaustive oracle on random models (orders 1-3, any sign of the weights):

* at every budget it never claims a proof it does not have: ``optimal`` only at the oracle's
  optimum, with ``upper_bound`` equal to it; unproven, ``upper_bound`` is still at least the
  optimum (a real gap) and the score at least the stack decoder's;
* the root bound is at least the final bound (the proof only tightens), and both bound the
  optimum;
* with a budget no instance exhausts, it proves the oracle's k best.

And as the default of ``fstdecode decode``: the JSON fields of both gaps and the phases, and no
warning for a line left unproven (that is the method's normal outcome).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode.decoder import DEFAULT_METHOD, Decoder
from fstdecode.model.model import load_model
from fstdecode.reference import exhaustive
from fstdecode.search.native_stack import stack_search
from fstdecode.search.prove import DEFAULT_PROVE_MAX_STATES, ProveOptions, prove_search
from fstdecode.search.stack import StackOptions

from randmodels import NO_BUDGET, problem_of, random_case
from shared import SEARCH_SETTINGS as SETTINGS, examples
from shared import data_path

TOL = 1e-6


def oracle_scores(problem, k: int = 1) -> list[float]:
    found = exhaustive.search(problem, exhaustive.ExhaustiveOptions(max_states=NO_BUDGET, nbest=k))
    return [s for s, _ in found.hypotheses]


@settings(max_examples=examples(12), **SETTINGS)
@given(data=st.data())
@pytest.mark.slow
def test_prove_never_claims_a_proof_it_does_not_have(data):
    check_never_claims(data)


@pytest.mark.slow  # the same on many more random models
@settings(max_examples=examples(150), **SETTINGS)
@given(data=st.data())
def test_prove_never_claims_a_proof_it_does_not_have_many(data):
    check_never_claims(data)


def check_never_claims(data):
    """At every budget: a real derivation no worse than the stack decoder's, a real bound, and
    ``optimal`` only at the oracle's optimum."""
    order = data.draw(st.sampled_from([1, 2, 3]))
    problem = problem_of(data.draw(random_case(max_n=5, order=order, any_sign=True)))
    best = oracle_scores(problem)[0]
    stack = stack_search(problem, StackOptions()).hypotheses[0][0]
    for budget in (1, 2, 5, 20, NO_BUDGET):
        result = prove_search(problem, ProveOptions(max_states=budget))
        score = result.hypotheses[0][0]
        assert score <= best + TOL and score >= stack - TOL  # a real derivation, no worse than the stack's
        assert dict(result.phases).keys() == {"lower", "bounds", "search"}
        assert result.upper_bound is not None and result.upper_bound >= best - TOL  # a real bound
        assert result.root_bound is not None and result.root_bound >= result.upper_bound - TOL
        if result.optimal:
            assert abs(score - best) < TOL and abs(result.upper_bound - best) < TOL
        if budget == NO_BUDGET:
            assert result.optimal


@settings(max_examples=examples(20), **SETTINGS)
@given(data=st.data())
def test_prove_with_room_proves_the_oracles_k_best(data):
    problem = problem_of(data.draw(random_case(max_n=5, order=data.draw(st.sampled_from([2, 3])))))
    want = oracle_scores(problem, 3)
    result = prove_search(problem, ProveOptions(max_states=NO_BUDGET, nbest=3))
    assert result.optimal
    assert [round(s, 6) for s, _ in result.hypotheses] == [round(s, 6) for s in want]


def test_prove_is_the_default_with_its_budget():
    assert DEFAULT_METHOD == "prove"
    model_ini = data_path("moses-early-distortion-de-en", "moses.ini")
    decoder = Decoder(load_model(model_ini))
    assert decoder.method == "prove" and decoder.options.max_states == DEFAULT_PROVE_MAX_STATES


def _decode_json(*args: str, text: str, cwd) -> tuple[list[dict], str]:
    # In a folder of its own: the de-en ini's [n-best-list] makes decode write ./nbest, as Moses.
    run = subprocess.run(
        [sys.executable, "-m", "fstdecode", "decode", *args, "--format", "json"],
        input=text, capture_output=True, text=True, check=True, cwd=cwd,
    )
    return [json.loads(line) for line in run.stdout.splitlines()], run.stderr


@pytest.mark.slow
def test_default_json_reports_both_gaps_and_the_phases_without_warning_when_unproven(tmp_path):
    ini = str(data_path("moses-early-distortion-de-en", "moses.ini"))
    text = data_path("moses-early-distortion-de-en", "to-translate.txt").read_text(encoding="utf-8")
    # A budget of one A* state (the heuristic's tables still built: prove.bounds_work) proves
    # only what the start state's bound settles.
    lines, stderr = _decode_json("-f", ini, "--max-states", "1", text=text, cwd=tmp_path)
    proven, _ = _decode_json("-f", ini, "--method", "exact", text=text, cwd=tmp_path)
    assert len(lines) == len(proven) == len(text.splitlines())
    assert "over budget" not in stderr and "not proven" not in stderr
    for got, exact in zip(lines, proven):
        assert exact["optimal"]
        assert set(got["stats"]["phases"]) == {"lower", "bounds", "search"}
        assert got["root_bound"] >= got["upper_bound"] - TOL >= exact["score"] - 2 * TOL
        assert math.isclose(got["root_gap"], got["root_bound"] - got["score"], abs_tol=TOL)
        assert math.isclose(got["gap"], got["upper_bound"] - got["score"], abs_tol=TOL)
        assert got["score"] <= exact["score"] + TOL
        if got["optimal"]:
            assert abs(got["score"] - exact["score"]) < TOL and got["gap"] == 0 and "unproven" not in got
        else:
            assert "reason" not in got and got["gap"] > 0
            assert got["unproven"] == "more than 1 states (--max-states)"
    assert any(not got["optimal"] for got in lines)  # the budget of 1 leaves some line unproven


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_stack_json_has_no_proof_fields(tmp_path):
    ini = str(data_path("moses-early-distortion-de-en", "moses.ini"))
    lines, _ = _decode_json("-f", ini, "--method", "stack", text="das ist ein haus\n", cwd=tmp_path)
    assert "root_gap" not in lines[0] and "phases" not in lines[0]["stats"] and not lines[0]["optimal"]


def test_prove_gives_up_without_a_bound_when_the_tables_outgrow_their_share(monkeypatch):
    # The real-size case in small: tables bigger than their work cap. The A* is not run, the line
    # keeps the stack decoder's translation, not proven, with no bound and no warning.
    import fstdecode.search.prove as prove

    monkeypatch.setattr(prove, "MIN_BOUNDS_WORK", 10)
    monkeypatch.setattr(prove, "BOUNDS_WORK_PER_STATE", 0)
    ini = data_path("moses-early-distortion-de-en", "moses.ini")
    model = load_model(ini)
    line = data_path("moses-early-distortion-de-en", "to-translate.txt").read_text(encoding="utf-8").splitlines()[0]
    got = Decoder(model, "prove").decode(line)
    stack = Decoder(model, "stack").decode(line)
    assert not got.optimal and got.upper_bound is None and got.gap is None and got.reason is None
    assert got.unproven.startswith("the A*'s bounds need more than 10 ")  # why, without a warning
    assert got.best.translation == stack.best.translation and got.best.score == stack.best.score
    assert got.stats.phases and dict(got.stats.phases)["search"] == 0.0


@pytest.mark.parametrize("order", [1, 2, 3, 4])
@settings(max_examples=examples(20), **SETTINGS)
@given(data=st.data())
@pytest.mark.slow
def test_the_tables_give_up_exactly_past_their_work_cap(order, data):
    # The tables give up as soon as the work they will certainly do passes the cap (Work::expect,
    # native/exact.cpp), before doing it: the same lines give up as if they had counted every
    # unit. So a cap of exactly the tables' work (ExactBounds.work, counted uncapped) builds them
    # and runs the A*, and one unit less gives up with no bound.
    from fstdecode._native import core
    from fstdecode.search.native import native_form

    problem = problem_of(data.draw(random_case(max_n=6, order=order, any_sign=True)))
    form = native_form(problem).core
    work = core.exact_bounds(form).work
    assert work > 0

    def search(cap):
        options = core.ExactOptions(nbest=1, max_states=10**6, time_limit=-1.0, lower_bound=-math.inf, bounds_work=cap)
        return core.exact_search(form, options)

    built = search(work)
    assert built.status in ("", "none")  # the tables built, the A* ran to its end
    short = search(work - 1)
    assert short.status == "budget" and math.isnan(short.upper_bound) and not short.hypotheses and short.states == 0


@pytest.mark.parametrize("method", ["prove", "exact", "dp"])
def test_a_reported_bound_is_never_below_the_reported_score(method):
    # The search's sum and the scorer's total may differ in the last bits; the bound reported
    # beside the scorer's total is its score when proven and never below it (the probe found
    # proven lines whose upper_bound was 1e-14 below their score, here 'xyz abc qqq').
    decoder = Decoder(load_model(), method)
    lines = ["xyz abc qqq", "das muss unsere sorge gleichermaßen sein", "das ist ein haus", "sein das muss"]
    for line in lines:
        got = decoder.decode(line)
        assert got.upper_bound is not None and got.upper_bound >= got.best.score
        if got.optimal:
            assert got.upper_bound == got.best.score and got.gap == 0.0
