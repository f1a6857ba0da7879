"""Lexicalized reordering in the native signature state space (native/statespace.h, ``Ends``).

The core carries reordering.py's head and tail of each tape beside its signature (row ids shared
by equal rows, the spans for msd and mslr only) and charges each transition reordering.charge's
score in its order of operations. So on random Moses models of every reordering type
(randmodels.moses_case: weights of any sign, a table that misses some pairs), LM orders 1-3,
under both distortion semantics:

* dp and bounded return the Python signature DP's k best scores, beam never beats them, and every
  score is the scorer's (shared.assert_sound); formerly compared bit for bit with Python twins, the
  scores bit for bit, and the same ``states`` and ``transitions`` (or the same error, over budget
  at the same state);
* native dp and bounded equal the oracles: the exhaustive enumeration and the Python coverage DP
  (independent of signature states);
* the native R has the Python R's states, arcs, weights and operation symbols (``|lr:O1,O2=V``),
  pruned or not, and the native cascade's best is the oracle's;
* the CLI decodes such a model with every signature method, and refuses ``--engine``.

The Python oracles' own agreement: tests/integration/test_lexreo_signature.py.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pywrapfst as fst

from fstdecode.decoder import Decoder
from fstdecode.fst.cascade import Cascade
from fstdecode.fst.reorder import build_reordering, build_reordering_native
from fstdecode.problem.problem import SearchProblem
from fstdecode.search import native_signature, signature_dp
from fstdecode.search.bounded import BoundedOptions
from fstdecode.search.signature_beam import BeamOptions
from fstdecode.search.signature_dp import DpOptions

from randmodels import NO_BUDGET, draw_beam_options, REORDERING_TYPES, moses_case
from shared import assert_native_sound, examples, machine
from shared import SEARCH_SETTINGS, outcome, run_cli

SEMANTICS = pytest.mark.parametrize("semantics", ["paper", "moses"])  # moses: the gap entries beside the LR ends


@st.composite
def lexreo_case(draw, semantics: str, max_n: int = 5, types=REORDERING_TYPES):
    """(model, sentence): a random model with a reordering feature, LM order 1, 2 or 3."""
    order = draw(st.sampled_from([1, 2, 3]))
    return draw(moses_case(max_n=max_n, order=order, semantics=semantics, types=types))


def python_problem(case):
    model, sentence = case
    problem = Decoder(model, "dp").problem(sentence)
    assert problem.reordering is not None
    return problem


def assert_same(method, problem, options):
    """The native search's outcome is sound against the oracle (shared.assert_native_sound): the
    scorer's scores, the Python coverage DP's optimum (exact methods) or never above it (beam)."""
    return assert_native_sound(method, problem, options)


@SEMANTICS
@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(data=st.data())
@pytest.mark.slow
def test_dp_native_is_sound(semantics, data):
    case = data.draw(lexreo_case(semantics))
    options = DpOptions(nbest=data.draw(st.integers(1, 4)), minimize=data.draw(st.booleans()), max_states=NO_BUDGET)
    assert_same("dp", python_problem(case), options)


@SEMANTICS
@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(data=st.data())
def test_beam_native_is_sound(semantics, data):
    case = data.draw(lexreo_case(semantics))
    options = draw_beam_options(data)
    assert_same("beam", python_problem(case), options)


@SEMANTICS
@settings(max_examples=examples(30), **SEARCH_SETTINGS)
@given(data=st.data())
def test_bounded_native_is_sound(semantics, data):
    # At LM order 2 the bounds prune, counting the pending and future reordering charges at their
    # best (reordering.pending_bound, phrase_bound): the same admissions in both engines.
    assert_same("bounded", python_problem(data.draw(lexreo_case(semantics))), BoundedOptions(max_states=NO_BUDGET))


@SEMANTICS
@settings(max_examples=examples(15), **SEARCH_SETTINGS)
@given(data=st.data())
def test_budget_overrun_at_the_same_state(semantics, data):
    case = data.draw(lexreo_case(semantics))
    assert_same("dp", python_problem(case), DpOptions(max_states=data.draw(st.integers(1, 60))))


@SEMANTICS
@pytest.mark.parametrize("type_string", REORDERING_TYPES)  # each type reads spans and rows differently
@settings(max_examples=examples(8), **SEARCH_SETTINGS)
@given(data=st.data())
@pytest.mark.slow
def test_native_dp_and_bounded_equal_the_oracles(semantics, type_string, data):
    model, sentence = data.draw(lexreo_case(semantics, max_n=4, types=(type_string,)))
    exhaustive = Decoder(model, "exhaustive", max_states=NO_BUDGET, nbest=3).decode(sentence)
    coverage = Decoder(model, "coverage", max_states=NO_BUDGET).decode(sentence)
    dp = Decoder(model, "dp", max_states=NO_BUDGET, nbest=3)
    bound = Decoder(model, "bounded", max_states=NO_BUDGET)
    assert {d.semantics for d in (dp, bound)} == {semantics}
    dp_result, bounded_result = dp.decode(sentence), bound.decode(sentence)
    if exhaustive.best is None:  # no derivation within the limit
        assert coverage.best is None and dp_result.best is None and bounded_result.best is None
        return
    exact = [d.score for d in exhaustive.derivations]
    assert coverage.best.score == pytest.approx(exact[0], abs=1e-9)
    assert [d.score for d in dp_result.derivations] == pytest.approx(exact, abs=1e-9)
    assert bounded_result.best.score == pytest.approx(exact[0], abs=1e-9)
    for d in (*dp_result.derivations, bounded_result.best):
        assert d.search_score == pytest.approx(d.score, abs=1e-9)  # the running score is the model's


@pytest.mark.slow  # longer sentences (6 words), where more tapes stay open at once: several seconds
@SEMANTICS
@settings(max_examples=examples(100), **SEARCH_SETTINGS)
@given(data=st.data())
def test_signature_searches_native_are_sound_longer(semantics, data):
    model, sentence = data.draw(lexreo_case(semantics, max_n=6))
    problem = python_problem((model, sentence))
    assert_same("dp", problem, DpOptions(nbest=2, max_states=NO_BUDGET))
    assert_same("beam", problem, BeamOptions(beam_size=3, max_states=NO_BUDGET))
    assert_same("bounded", problem, BoundedOptions(max_states=NO_BUDGET))


def both_rs(model, sentence, semantics, threshold=None):
    """R built by the Python builder and by the core, for the same problem."""
    cascade = Cascade(model)
    ip = fst.compose(cascade.input_fst(sentence), cascade.p.fst)
    built = []
    for build in (build_reordering, build_reordering_native):
        problem = SearchProblem(
            cascade.sentence(sentence, ip), cascade.lm, model.weights, model.distortion_limit,
            reordering=model.reordering, semantics=semantics, early_distortion_cost=model.early_distortion_cost,
        )
        built.append(build(problem, cascade.labels_for(problem.sentence), NO_BUDGET, threshold=threshold))
    return built


@SEMANTICS
@settings(max_examples=examples(25), **SEARCH_SETTINGS)
@given(data=st.data())
@pytest.mark.slow
def test_native_r_equals_python_r(semantics, data):
    # The same R: its states and arcs (the LR ends in every state), arc weights eta x jumps - lr,
    # labels (the symbols' |lr:O1,O2=V, V as Python's repr) and operations; pruned at the
    # exhaustive oracle's best score (Completion counts the charges to come at their best), the
    # same pruned R and the same best path.
    model, sentence = data.draw(lexreo_case(semantics))
    threshold = None
    if data.draw(st.booleans()):
        best = Decoder(model, "exhaustive", max_states=NO_BUDGET).decode(sentence).best
        threshold = None if best is None else best.score
    py, nat = both_rs(model, sentence, semantics, threshold)
    assert (nat.states, nat.transitions) == (py.states, py.transitions)
    assert list(nat.names) == list(py.names)
    assert list(nat.lr) == list(py.lr)  # bit for bit
    assert machine(nat.fst) == machine(py.fst)
    assert machine(nat.lm) == machine(py.lm)
    assert list(nat.jumps) == list(py.jumps) and list(nat.s1) == list(py.s1) and list(nat.s2) == list(py.s2)
    if threshold is not None:
        assert nat.best == py.best
        assert nat.best == pytest.approx(threshold, abs=1e-9)  # the oracle's derivation stays in R


@SEMANTICS
@settings(max_examples=examples(15), **SEARCH_SETTINGS)
@given(data=st.data())
def test_native_cascade_equals_the_oracle(semantics, data):
    model, sentence = data.draw(lexreo_case(semantics, max_n=4))
    decoder = Decoder(model, "fst", max_states=NO_BUDGET)
    assert decoder.semantics == semantics
    got = decoder.decode(sentence)
    best = Decoder(model, "exhaustive", max_states=NO_BUDGET).decode(sentence).best
    if best is None:
        assert got.best is None
        return
    assert got.best.score == pytest.approx(best.score, abs=1e-9)
    assert got.best.search_score == pytest.approx(got.best.score, abs=1e-9)


def lexreo_ini(tmp_path) -> str:
    """One word u (-> a) with an msd-backward-fe row 0.1 0.2 0.3; the built-in example's shape."""
    (tmp_path / "pt").write_text("u ||| a ||| 0.5\nv ||| b ||| 0.5\n", encoding="utf-8")
    (tmp_path / "rt").write_text("u ||| a ||| 0.1 0.2 0.3\n", encoding="utf-8")
    (tmp_path / "lm").write_text(
        "\\data\\\nngram 1=5\n\n\\1-grams:\n-1\t<s>\n-1\t</s>\n-1\t<unk>\n-1\ta\n-1\tb\n\n\\end\\\n", encoding="utf-8"
    )
    (tmp_path / "moses.ini").write_text(
        "[feature]\nKENLM path=lm order=2\nDistortion\nWordPenalty\nPhraseDictionaryMemory path=pt num-features=1\n"
        "LexicalReordering type=msd-backward-fe path=rt\n[weight]\nKENLM0= 1\nDistortion0= 1\nWordPenalty0= 0\n"
        "PhraseDictionaryMemory0= 1\nLexicalReordering0= 1 1 1\n",
        encoding="utf-8",
    )
    return str(tmp_path / "moses.ini")


def test_native_r_labels_spell_the_charges(tmp_path):
    # u alone: u after <s> (monotone, charged ln 0.1), u opening a tape of its own (its charge
    # pending: nothing yet), and </s> (nothing); the core writes what the Python builder writes.
    from fstdecode.model.model import load_model

    model = load_model(lexreo_ini(tmp_path), distortion_semantics="paper")
    py, nat = both_rs(model, ("u",), "paper")
    assert list(nat.names[1:]) == [
        "op:0-0:_:_:_:2:a|lr:_,_=0.0",
        f"op:0-0:-1:-1:_:2:a|<s> a|lr:monotone,_={math.log(0.1)!r}",
        "op:1-1:-1:0:_:0:</s>|a </s>|lr:_,_=0.0",
    ] == list(py.names[1:])
    assert list(nat.lr) == list(py.lr) == [0.0, 0.0, math.log(0.1), 0.0]


@pytest.mark.slow  # four CLI processes; the searches themselves are checked natively above
def test_cli_decodes_reordering_models_with_every_signature_method(tmp_path):
    # Every method's native search takes the model (no warning, no other engine); the exact ones
    # agree on the output, and --engine is refused in one line.
    ini = lexreo_ini(tmp_path)
    args = ["decode", "-f", ini, "--max-states", "2000"]
    outputs = {}
    for method in ("dp", "beam", "bounded", "fst"):
        out = run_cli([*args, "--method", method], "u v\nv u\n")
        assert out.returncode == 0 and not out.stderr, (method, out.stderr)
        outputs[method] = out.stdout
    assert outputs["dp"] == outputs["bounded"] == outputs["fst"]
    old = run_cli([*args, "--engine", "python"], "u v\n")
    assert old.returncode == 2 and old.stderr.count("\n") == 1 and "--engine was removed" in old.stderr
