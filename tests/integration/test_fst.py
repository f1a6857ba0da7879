"""The WFST cascade: P, R, L, their composition, and agreement with the DP."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import shutil
import subprocess

import pytest
import pywrapfst as fst
from hypothesis import given, settings

from fstdecode.decoder import Decoder
from fstdecode.fst.cascade import Cascade, exact_path_score, read_paths
from fstdecode.fst.phrase_fst import UNK_LABEL, build_phrase_fst, read_phrase_fst
from fstdecode.problem.scorer import score as score_derivation
from fstdecode.search import signature_dp

from randmodels import NO_BUDGET, random_case
from shared import SEARCH_SETTINGS as SETTINGS, examples, machine

EXAMPLES = ["das muss unsere sorge gleichermaßen sein", "wir müssen auch diese kritik ernst nehmen", "das muss XYZ sein"]


@pytest.fixture(scope="module")
def cascade(example_model):
    return Cascade(example_model)


def translation(phrases):
    return " ".join(w for p in phrases for w in p.target)


@pytest.mark.parametrize("sentence", EXAMPLES)
def test_fst_equals_dp_on_examples(example_model, cascade, sentence):
    words = tuple(sentence.split())
    dp = signature_dp.search(Decoder(example_model).problem(words), signature_dp.DpOptions(max_states=NO_BUDGET))
    out = cascade.search(words)
    full = Cascade(example_model, pruned=False).search(words)
    for got in (out, full):
        assert got.result.hypotheses[0][0] == pytest.approx(dp.hypotheses[0][0], abs=1e-6)
    # The full R is built over the same reachable signature states as the DP; the pruned R over
    # some of them.
    assert full.result.states == dp.states
    assert out.result.states <= full.result.states


@pytest.mark.parametrize("sentence", EXAMPLES)
def test_scorer_total_equals_path_weight(example_model, cascade, sentence):
    words = tuple(sentence.split())
    out = cascade.search(words)
    sp = fst.shortestpath(out.lattice)
    [(labels, float_cost)] = read_paths(sp)
    exact = exact_path_score(labels, out.reordering, out.problem)
    _, total = score_derivation(len(words), out.result.hypotheses[0][1], cascade.lm, example_model.weights)
    assert total == pytest.approx(exact, abs=1e-6)
    # OpenFst's float32 path weight agrees up to float rounding.
    assert -float_cost == pytest.approx(exact, abs=1e-3)


@pytest.mark.slow
@settings(max_examples=examples(30), **SETTINGS)
@given(random_case(max_n=6))
def test_fst_equals_dp_on_random_models(case):
    model, sentence = case
    dp = signature_dp.search(Decoder(model).problem(sentence), signature_dp.DpOptions(max_states=NO_BUDGET, nbest=3))
    out = Cascade(model).search(sentence, nbest=3)
    assert len(out.result.hypotheses) == len(dp.hypotheses)
    for (a, phrases), (b, _) in zip(out.result.hypotheses, dp.hypotheses):
        assert a == pytest.approx(b, abs=1e-6)
        _, total = score_derivation(len(sentence), phrases, model.search_lm(), model.weights)
        assert total == pytest.approx(a, abs=1e-6)


def test_nbest_distinct_derivations_and_unique_translations(example_model, cascade):
    words = tuple(EXAMPLES[0].split())
    dp = signature_dp.search(Decoder(example_model).problem(words), signature_dp.DpOptions(max_states=NO_BUDGET, nbest=10))
    out = cascade.search(words, nbest=10)
    assert [h[0] for h in out.result.hypotheses] == pytest.approx([h[0] for h in dp.hypotheses], abs=1e-6)
    assert len({h[1] for h in out.result.hypotheses}) == 10
    uniq = cascade.search(words, nbest=5, unique=True).result.hypotheses
    texts = [translation(h[1]) for h in uniq]
    assert len(set(texts)) == 5 and texts[0] == "this must also be our concern"
    assert all(a[0] >= b[0] for a, b in zip(uniq, uniq[1:]))


def test_phrase_fst_shape_and_round_trip(example_model, tmp_path):
    p = build_phrase_fst(example_model.table, example_model.weights)
    props = p.fst.properties(fst.I_LABEL_SORTED, True)
    assert props == fst.I_LABEL_SORTED
    # One labelled arc per pair plus <unk>; the pairs come back from the symbols alone.
    labelled = sum(1 for q in p.fst.states() for a in p.fst.arcs(q) if a.olabel)
    assert labelled == len(example_model.table) + 1
    p.write(tmp_path / "p.fst")
    back = read_phrase_fst(tmp_path / "p.fst")
    assert back.pairs == p.pairs and back.single == p.single
    c1, c2 = Cascade(example_model, back), Cascade(example_model)
    for s in EXAMPLES:
        assert c1.search(s.split()).result.hypotheses[0][0] == pytest.approx(c2.search(s.split()).result.hypotheses[0][0], abs=1e-9)


def test_unknown_word_reads_as_unk(example_model, cascade):
    i = cascade.input_fst(("das", "XYZ"))
    labels = [[a.ilabel for a in i.arcs(q)] for q in i.states()]
    assert labels[1] == [UNK_LABEL]
    assert labels[0] == [cascade.isyms.find("das")]


def test_unknown_words_leave_no_labels_behind(example_model):
    """A sentence's unknown-word pairs are labelled for its own search only: the Cascade's label
    map is the model's pairs' and stays so (it once gained an entry per unknown word decoded,
    and a freed pair's id() could come back as another object's)."""
    c = Cascade(example_model)
    model_labels = dict(c.labels)
    base = EXAMPLES[0].split()
    for k in range(30):
        words = base[:2] + [f"unk{k}a", f"unk{k}b"] + base[2:]
        out = c.search(words)
        translation = [w for _, phrases in out.result.hypotheses[:1] for p in phrases for w in p.pair.target]
        assert f"unk{k}a" in translation and f"unk{k}b" in translation  # copied through, as in Moses
    assert c.labels == model_labels


def test_reordering_and_lattice_properties(cascade):
    out = cascade.search(EXAMPLES[1].split())
    r = out.reordering.fst
    assert r.properties(fst.ACYCLIC, True) == fst.ACYCLIC
    assert out.lattice.properties(fst.ACYCLIC, True) == fst.ACYCLIC
    # One arc per transition, and every output symbol of R is an operation L can score.
    assert sum(r.num_arcs(q) for q in r.states()) == out.result.transitions
    assert set(out.reordering.ops) == set(range(1, out.reordering.symbols.num_symbols()))
    assert r.properties(fst.I_LABEL_SORTED, True) == fst.I_LABEL_SORTED


def assert_same_reordering(words, model, minimize=True, threshold=None) -> None:
    """R and L built by the core and in Python: the same machines, labels, symbols and operations
    (with a ``threshold``: the same pruned R, and the same best score)."""
    from fstdecode.fst.reorder import build_reordering, build_reordering_native
    from fstdecode.problem.problem import SearchProblem

    c = Cascade(model)
    ip = fst.compose(c.input_fst(words), c.p.fst)
    problems = [SearchProblem(c.sentence(words, ip), c.lm, model.weights, model.distortion_limit) for _ in range(2)]
    py = build_reordering(problems[0], c.labels_for(problems[0].sentence), minimize=minimize, threshold=threshold)
    nat = build_reordering_native(problems[1], c.labels_for(problems[1].sentence), minimize=minimize, threshold=threshold)
    if threshold is not None:
        assert nat.best == pytest.approx(py.best, abs=1e-9)
    assert (nat.states, nat.transitions) == (py.states, py.transitions)
    assert list(nat.names) == list(py.names)
    assert machine(nat.fst) == machine(py.fst)
    assert machine(nat.lm) == machine(py.lm)
    assert list(nat.jumps) == list(py.jumps) and list(nat.s1) == list(py.s1) and list(nat.s2) == list(py.s2)
    assert list(nat.lm_cost) == pytest.approx(list(py.lm_cost), rel=0, abs=1e-12)
    assert [(o.s, o.t, o.phrase) for o in nat.options[1:]] == [(o.s, o.t, o.phrase) for o in py.options[1:]]
    assert [nat.symbols.find(k) for k in range(len(nat.names))] == list(py.names)


@pytest.mark.parametrize("sentence", EXAMPLES)
def test_native_reordering_equals_python(example_model, sentence):
    assert_same_reordering(tuple(sentence.split()), example_model)


@pytest.mark.slow
@pytest.mark.parametrize("order", [2, 3])
@settings(max_examples=examples(25), **SETTINGS)
@given(case=random_case(max_n=6, order=3))
def test_native_reordering_equals_python_random(order, case):
    model, sentence = case
    if order == 2:
        model = dataclasses.replace(model, lm=model.lm.restrict(2))
    assert_same_reordering(tuple(sentence), model, minimize=order == 3)


def test_native_reordering_budget(example_model):
    """Over budget, the core stops where the Python builder does, with the same error."""
    from fstdecode.fst.reorder import build_reordering, build_reordering_native
    from fstdecode.problem.problem import SearchLimitError, SearchProblem

    c = Cascade(example_model)
    words = tuple(EXAMPLES[1].split())
    ip = fst.compose(c.input_fst(words), c.p.fst)
    messages = []
    for build in (build_reordering, build_reordering_native):
        problem = SearchProblem(c.sentence(words, ip), c.lm, example_model.weights, example_model.distortion_limit)
        with pytest.raises(SearchLimitError) as err:
            build(problem, c.labels_for(problem.sentence), max_states=50)
        messages.append(str(err.value))
    assert messages[0] == messages[1]


@pytest.mark.skipif(shutil.which("fstprint") is None, reason="fstprint not installed (apt install libfst-tools; .ci/run does)")
def test_lattice_opens_in_fstprint(example_model, tmp_path):
    decoder = Decoder(example_model, "fst", lattice_dir=str(tmp_path))
    decoder.decode(EXAMPLES[0], id=0)
    printed = subprocess.run(["fstprint", str(tmp_path / "0.fst")], capture_output=True, text=True, check=True).stdout
    assert "das" in printed and "this must" in printed and "op:" in printed
    info = subprocess.run(["fstinfo", str(tmp_path / "0.fst")], capture_output=True, text=True, check=True).stdout
    assert re.search(r"^cyclic\s+n$", info, re.M) and re.search(r"^# of states\s+[1-9]", info, re.M)


def test_lattice_prune_keeps_the_best(example_model, tmp_path):
    full = Decoder(example_model, "fst").decode(EXAMPLES[0])
    pruned = Decoder(example_model, "fst", lattice_dir=str(tmp_path), lattice_prune=1.0).decode(EXAMPLES[0], id=0)
    assert pruned.best.score == pytest.approx(full.best.score, abs=1e-9)
    small = fst.Fst.read(str(tmp_path / "0.fst"))
    assert 0 < small.num_states() < Cascade(example_model, pruned=False).search(EXAMPLES[0].split()).lattice.num_states()


def run_cli(*args, stdin=""):
    return subprocess.run([sys.executable, "-m", "fstdecode", *args], input=stdin, capture_output=True, text=True)


@pytest.mark.slow
def test_compile_then_decode_from_the_compiled_file(tmp_path):
    # `compile` writes P; `decode --method fst --phrase-fst` uses it instead of the text table.
    assert run_cli("compile", "-o", str(tmp_path / "P.fst")).returncode == 0
    text = "\n".join(EXAMPLES) + "\n"
    from_file = run_cli("decode", "--method", "fst", "--phrase-fst", str(tmp_path / "P.fst"), "--format", "json", stdin=text)
    from_dp = run_cli("decode", "--format", "json", stdin=text)
    assert from_file.returncode == 0, from_file.stderr
    a = [json.loads(x) for x in from_file.stdout.splitlines()]
    b = [json.loads(x) for x in from_dp.stdout.splitlines()]
    assert [x["translation"] for x in a] == [x["translation"] for x in b]
    assert [x["score"] for x in a] == pytest.approx([x["score"] for x in b], abs=1e-6)


@pytest.mark.slow
def test_inspect_prints_lattice_derivations(tmp_path):
    run_cli("decode", "--method", "fst", "--lattice-dir", str(tmp_path), stdin=EXAMPLES[1] + "\n")
    out = run_cli("inspect", str(tmp_path / "0.fst"), "--nbest", "2")
    assert out.returncode == 0, out.stderr
    assert "acyclic:             y" in out.stdout
    # The best path, read from the lattice's labels alone, is Figure 1's derivation.
    assert "[0-1] we must [2-2] also [6-6] take [3-4] these criticisms [5-5] seriously" in out.stdout


@pytest.mark.slow
def test_inspect_counts_the_paths_it_prints_and_refuses_a_count_below_one(tmp_path):
    run_cli("decode", "--method", "fst", "--lattice-dir", str(tmp_path), stdin="das\n")
    out = run_cli("inspect", str(tmp_path / "0.fst"), "--nbest", "50")
    assert out.returncode == 0, out.stderr
    printed = len(re.findall(r"^  \d+\. score ", out.stdout, flags=re.M))
    assert 0 < printed < 50 and f"lattice: {printed} best derivation(s)" in out.stdout
    for bad in ("0", "-1"):
        refused = run_cli("inspect", str(tmp_path / "0.fst"), "--nbest", bad)
        assert refused.returncode == 2 and "--nbest must be >= 1" in refused.stderr and refused.stdout == ""


@pytest.mark.slow
def test_inspect_search_graph_of_a_cyclic_fst_names_the_file(tmp_path):
    run_cli("decode", "--method", "fst", "--lattice-dir", str(tmp_path), stdin="das\n")
    cyclic = fst.VectorFst.read(str(tmp_path / "0.fst"))
    arc = next(iter(cyclic.arcs(cyclic.start())))
    cyclic.add_arc(arc.nextstate, fst.Arc(arc.ilabel, arc.olabel, arc.weight, cyclic.start()))  # back to the start
    path = tmp_path / "loop.fst"
    cyclic.write(str(path))
    out = run_cli("inspect", str(path), "--search-graph")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr == f"fstdecode: error: {path}: the FST has a cycle: not a lattice\n"


@pytest.mark.slow
def test_every_line_but_a_failed_one_gets_its_lattice_an_empty_one_too(tmp_path):
    out = run_cli("decode", "--method", "fst", "--lattice-dir", str(tmp_path), "--format", "json",
                  stdin="das muss\n\nder <s> x\nsein\n")
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.fst", "1.fst", "3.fst"]
    empty = json.loads(out.stdout.splitlines()[1])
    shown = run_cli("inspect", str(tmp_path / "1.fst"))
    assert shown.returncode == 0 and f"1. score {empty['score']:.4f}" in shown.stdout


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_inspect_bad_file_is_a_clean_error(tmp_path):
    (tmp_path / "x.fst").write_text("not an fst")
    out = run_cli("inspect", str(tmp_path / "x.fst"))
    assert out.returncode == 2 and "x.fst" in out.stderr and "Traceback" not in out.stderr


def test_fst_only_flags_need_method_fst():
    # (--nbest-unique is no longer one of them: every method takes it, tests/unit/test_distinct_nbest.py)
    out = run_cli("decode", "--lattice-dir", "lat", stdin="das\n")
    assert out.returncode == 2 and "--method fst" in out.stderr


def test_binary_vector_fst_equals_add_arc():
    # The byte-level builder must give exactly the machine add_arc gives.
    from fstdecode.fst.binary import vector_fst

    arcs = [(0, 3, 4, 0.25, 1), (2, 5, 6, 2.0, 0), (0, 7, 0, 1.5, 2), (1, 1, 1, 0.0, 2)]
    ref = fst.VectorFst()
    for _ in range(3):
        ref.add_state()
    ref.set_start(0)
    ref.set_final(2, 1.25)
    for q, i, o, w, n in arcs:
        ref.add_arc(q, fst.Arc(i, o, w, n))
    got = vector_fst(3, 0, {2: 1.25}, *[list(col) for col in zip(*arcs)])
    assert str(got) == str(ref)
    assert fst.equal(got, ref)


@pytest.mark.slow
@pytest.mark.parametrize("order", [2, 3])
@settings(max_examples=examples(12), **SETTINGS)
@given(case=random_case(max_n=5, order=3, any_sign=True))
def test_native_pruned_reordering_equals_python(order, case):
    """The pruned R (threshold: the best derivation's score) is the same machine from both R builders (the Python oracle and the core)."""
    model, sentence = case
    if order == 2:
        model = dataclasses.replace(model, lm=model.lm.restrict(2))
    best = Decoder(model, "exact").decode(list(sentence)).best
    if best is not None:
        assert_same_reordering(tuple(sentence), model, threshold=best.search_score)
