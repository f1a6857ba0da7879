"""Tests of the grammar modules in grammars/, scripts/compile_grammars.py and ``--source-grammar``.

Each module's generator runs into a FAR (through ``grammars.export_far``,
as compile_grammars.py does); the FAR is reopened and its keys checked,
then the FSTs' properties. The expected values come from the LM itself
(``ArpaLM.score_sentence``), from German and English (the number words),
and from the feature definitions (an unknown word costs -100).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pynini
import pytest
import pywrapfst as fst

from shared import ROOT

sys.path.insert(0, str(ROOT))  # grammars/ is not installed with fstdecode

from fstdecode import Decoder  # noqa: E402
from fstdecode.fst.phrase_fst import build_phrase_fst, grammar_pairs  # noqa: E402
from grammars import GRAMMARS, export_far, far_keys  # noqa: E402
from grammars import numbers_de_en  # noqa: E402
from grammars.bigram_lm import bigram_lm_fst  # noqa: E402

SLIDES_TGT = "this must also be our concern"  # Chang & Collins' slides
FIG1_TGT = "we must also take these criticisms seriously"  # Figure 1 of the paper
NUMBER_SRC = "wir müssen zwei kritik ernst nehmen"


def has(f: fst.Fst, prop: int) -> bool:
    return f.properties(prop, True) == prop


@pytest.fixture(scope="module")
def fars(tmp_path_factory) -> dict[str, Path]:
    """Every grammar module compiled once, as scripts/compile_grammars.py does."""
    spec = importlib.util.spec_from_file_location("compile_grammars", ROOT / "scripts" / "compile_grammars.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path_factory.mktemp("grammars")
    written = script.compile_all(out)
    return {path.stem: path for path in written}


def read(far_path: Path, key: str) -> pynini.Fst:
    with pynini.Far(str(far_path), mode="r") as far:
        return far[key]


# ----------------------------------------------------------------------------- the FARs


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_generator_exports_its_keys(name, tmp_path):
    module = importlib.import_module(f"grammars.{name}")
    path = tmp_path / f"{name}.far"
    assert export_far(module.generator_main, path) == list(GRAMMARS[name])
    assert far_keys(path) == list(GRAMMARS[name])  # reopened from the file


def test_compile_grammars_writes_one_far_per_module(fars):
    assert sorted(fars) == sorted(GRAMMARS)
    for name, path in fars.items():
        assert far_keys(path) == list(GRAMMARS[name])


def test_compile_grammars_script_prints_what_it_wrote(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "scripts.compile_grammars", "--out", str(tmp_path / "g")],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout
    expected = [f"wrote {tmp_path / 'g' / name}.far: {', '.join(keys)}" for name, keys in GRAMMARS.items()]
    assert out.splitlines() == expected


@pytest.mark.skipif(importlib.util.find_spec("absl") is None, reason="pynini's grm runner needs absl-py")
def test_module_runs_under_pynini_grm_runner(tmp_path):
    # Run as a script, as pynini's build rules do: grammars/ is then first on
    # sys.path, so a module there must not shadow the standard library.
    out = tmp_path / "numbers.far"
    subprocess.run(
        [sys.executable, str(ROOT / "grammars" / "numbers_de_en.py"), f"--output={out}"],
        capture_output=True, check=True, cwd=tmp_path,
    )
    assert far_keys(out) == ["NUMBERS"]


# ----------------------------------------------------------------------------- PHRASE_TABLE


def test_phrase_table_is_p_with_its_symbols(fars, example_model):
    p = read(fars["phrase_table"], "PHRASE_TABLE")
    assert has(p, fst.I_LABEL_SORTED)
    expected = build_phrase_fst(example_model.table, example_model.weights).fst
    assert (p.num_states(), p.num_arcs(0)) == (expected.num_states(), expected.num_arcs(0))
    osyms = p.output_symbols()
    assert [osyms.find(k) for k in range(osyms.num_symbols())] == [
        expected.output_symbols().find(k) for k in range(expected.output_symbols().num_symbols())
    ]
    assert p.input_symbols().member("gleichermaßen")


# ----------------------------------------------------------------------------- BIGRAM_LM


@pytest.mark.parametrize(
    "sentence",
    [
        SLIDES_TGT,  # the brief's sentence: every bigram seen in training
        FIG1_TGT,  # a second seen sentence
        "concern this also",  # unseen bigrams: every arc comes from backoff
        "we <unk> must",  # the unknown word is a vocabulary word too
        "",  # the empty sentence: the start state's final weight, p(</s> | <s>)
    ],
)
def test_bigram_lm_path_weight_is_sentence_logprob(fars, example_model, sentence):
    g = read(fars["bigram_lm"], "BIGRAM_LM")
    words = g.input_symbols()
    path = pynini.compose(pynini.accep(sentence, token_type=words), g)
    cost = float(pynini.shortestdistance(path, reverse=True)[path.start()])
    assert cost == pytest.approx(-example_model.lm.score_sentence(sentence.split()), abs=1e-4)


def test_bigram_lm_shape(fars, example_model):
    g = read(fars["bigram_lm"], "BIGRAM_LM")
    v = g.input_symbols().num_symbols() - 1  # the LM's vocabulary (without <eps>)
    assert v == example_model.lm.counts[0]  # the example has <unk> in its file, so no synthetic one
    # Histories: <s> (the start) and every word but <s> and </s>; arcs: each of those words.
    assert g.num_states() == v - 1
    assert sum(g.num_arcs(q) for q in g.states()) == (v - 1) * (v - 2)
    assert has(g, fst.ACCEPTOR) and has(g, fst.I_LABEL_SORTED) and has(g, fst.I_DETERMINISTIC)
    assert has(g, fst.NO_EPSILONS)


def test_bigram_lm_uses_exact_backoff(example_model):
    # "concern" -> "this" is not a bigram of the ARPA file: its arc must carry
    # backoff(concern) + ln p(this), not some ε-path approximation.
    lm = example_model.search_lm()
    g = bigram_lm_fst(lm)
    words = g.input_symbols()
    path = pynini.compose(pynini.accep("concern this", token_type=words), g)
    arcs = [a for q in path.states() for a in path.arcs(q)]
    assert float(arcs[1].weight) == pytest.approx(-lm.logprob(("concern",), "this"), abs=1e-5)


# ----------------------------------------------------------------------------- NUMBERS


@pytest.fixture(scope="module")
def numbers(fars) -> dict[str, str]:
    g = read(fars["numbers_de_en"], "NUMBERS")
    return {src: tgt for src, tgt, _ in g.paths().items()}


def test_numbers_is_an_acyclic_string_transducer_of_weight_one(fars):
    g = read(fars["numbers_de_en"], "NUMBERS")
    assert has(g, fst.ACYCLIC)
    assert all(float(w) == 0.0 for _, _, w in g.paths().items())  # see the module: no weights


@pytest.mark.parametrize(
    "src, tgt",
    [
        ("eins", "one"),  # the first word of the TSV
        ("zwei", "two"),  # the word of the decoding test below
        ("zwölf", "twelve"),  # a non-ASCII letter in the source
        ("zwanzig", "twenty"),  # a tens word that is also among 1..20
        ("dreißig", "thirty"),  # ß
        ("hundert", "hundred"),
        ("tausend", "thousand"),
        ("einundzwanzig", "twenty-one"),  # the unit's combining form: ein, not eins
        ("siebenundachtzig", "eighty-seven"),
        ("neunundneunzig", "ninety-nine"),  # the last compound
        ("0", "0"),  # the first digit token
        ("1984", "1984"),
        ("2100", "2100"),  # the last digit token
    ],
)
def test_numbers_maps(numbers, src, tgt):
    assert numbers[src] == tgt


@pytest.mark.parametrize("src", ["2101", "007", "einsundzwanzig", "zehnundzwanzig", "null"])
def test_numbers_does_not_map(numbers, src):
    # Beyond the digit range, leading zeros, a non-combining unit, a non-unit in a compound, zero.
    assert src not in numbers


def test_numbers_size(numbers):
    # 20 words for 1..20, 7 tens from 30, hundert, tausend, 8 x 9 compounds, 2101 digit tokens.
    assert len(numbers) == 20 + 7 + 2 + 72 + 2101


@pytest.mark.parametrize(
    "line, message",
    [
        ("eins\tone\n", r"tsv:1: expected german"),  # too few columns
        ("eins\tone\teins\tein\n", r"tsv:1: value 'eins' is not an integer"),
        ("# comment\nzwei\ttwo\t2\n", r"tsv:2: the unit 'zwei' needs its combining form"),
    ],
)
def test_numbers_tsv_errors_name_file_and_line(tmp_path, line, message):
    bad = tmp_path / "bad.tsv"
    bad.write_text(line, encoding="utf-8")
    with pytest.raises(numbers_de_en.Error, match=message):
        numbers_de_en.read_number_words(bad)


# ----------------------------------------------------------------------------- decoding with NUMBERS


def test_external_grammar_changes_the_translation(example_model, fars):
    without = Decoder(example_model, "fst").decode(NUMBER_SRC).best
    assert "zwei" in without.translation.split()  # an unknown word, copied through
    assert without.features.unknown == -100.0
    best = Decoder(example_model, "fst", source_grammar=f"{fars['numbers_de_en']}:NUMBERS").decode(NUMBER_SRC).best
    assert "two" in best.translation.split() and "zwei" not in best.translation.split()
    assert best.features.unknown == 0.0


def test_digit_token_is_a_pair_with_the_grammar(example_model, fars):
    without = Decoder(example_model, "fst").decode("das muss 1984 sein").best
    assert "1984" in without.translation.split() and without.features.unknown == -100.0
    best = Decoder(example_model, "fst", source_grammar=f"{fars['numbers_de_en']}:NUMBERS").decode("das muss 1984 sein").best
    assert "1984" in best.translation.split() and best.features.unknown == 0.0
    assert any(p.pair.source == ("1984",) and not p.pair.unknown for p in best.phrases)


# ----------------------------------------------------------------------------- the CLI flag


def fstdecode(*args: str, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fstdecode", *args], input=stdin, capture_output=True, text=True, encoding="utf-8"
    )


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_cli_source_grammar(fars):
    done = fstdecode("decode", "--method", "fst", "--source-grammar", f"{fars['numbers_de_en']}:NUMBERS",
                     stdin=NUMBER_SRC + "\n")
    assert done.returncode == 0, done.stderr
    words = done.stdout.split()
    assert "two" in words and "zwei" not in words


@pytest.mark.parametrize(
    "spec, args, message",
    [
        ("{dir}/missing.far", (), "{dir}/missing.far: no such file"),  # a wrong path
        ("{numbers}:NOPE", (), "{numbers}: no FST named 'NOPE'"),  # a wrong key
        ("{junk}", (), "{junk}: not a FAR archive"),  # not a FAR at all
        ("{bigram}", (), "{bigram}:BIGRAM_LM: a source grammar must be acyclic"),  # an LM is cyclic
        ("{numbers}", ("--method", "dp"), "--source-grammar needs --method fst"),  # P is for the cascade only
    ],
)
@pytest.mark.slow
def test_cli_source_grammar_errors(fars, tmp_path, spec, args, message):
    junk = tmp_path / "junk.far"
    junk.write_text("not a far\n")
    names = {"dir": tmp_path, "numbers": fars["numbers_de_en"], "junk": junk, "bigram": fars["bigram_lm"]}
    done = fstdecode("decode", "--method", "fst", *args, "--source-grammar", spec.format(**names), stdin="zwei\n")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(f"fstdecode: error: {message.format(**names)}")
    assert len(done.stderr.splitlines()) == 1  # one line: no traceback, no OpenFst log


# ----------------------------------------------------------------------------- docs/grammars.md


def test_docs_snippet_runs_and_prints_what_it_says(example_model, fars, tmp_path, monkeypatch, capsys):
    doc = (ROOT / "docs" / "grammars.md").read_text(encoding="utf-8")
    code = "\n".join(re.findall(r"```python\n(.*?)```", doc, re.S))
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "grammars").symlink_to(fars["bigram_lm"].parent)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/grammars.md", "exec"), {"__name__": "docs"})
    lines = capsys.readouterr().out.splitlines()
    translation, cost = lines[0].rsplit(" ", 1)
    assert translation == FIG1_TGT
    best = Decoder(example_model, "fst").decode("wir müssen auch diese kritik ernst nehmen").best
    assert float(cost) == pytest.approx(-best.score - example_model.lm.score_sentence(FIG1_TGT.split()), abs=1e-3)
    assert lines[1] == FIG1_TGT.replace("criticisms", "critiques")
