"""``tuneable=`` / ``tuneable-components=`` and the weights' 32-bit floats in ``-show-weights`` and
the n-best lists (issue 38's silent divergences), held to Moses' semantics as its source gives them:

* FeatureFunction::SetParameter reads ``tuneable`` with Scan<bool> and ``tuneable-components`` with
  SetTuneableComponents (a comma list of one boolean per dense feature, refused while the feature
  is untuneable); UnknownWordPenaltyProducer is untuneable before it reads its line.
* ShowWeights / PrintFeatureWeight (moses/Util.cpp) print ``NAME UNTUNEABLE`` for an untuneable
  feature and ``UNTUNEABLECOMPONENT`` for each fixed component; the weights are floats
  (Parameter::CreateWeightsMap's Scan<float>) printed fixed with 6 decimals.
* ScoreComponentCollection::OutputAllFeatureScores leaves out an untuneable feature, a feature
  with no tuneable component, and each untuneable component.
* The weights still count in the search (the 1-best and the totals do not change).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fstdecode.cli.moses_output import features_field
from fstdecode.cli.output import moses_features
from fstdecode.decoder import Decoder
from fstdecode.model.features import moses_weight
from fstdecode.model.model import load_model

from shared import EXAMPLE_DATA, run_cli

#: The first two lines of the built-in example's input, and one with an unknown word ("xyz").
LINES = (EXAMPLE_DATA / "input.txt").read_text(encoding="utf-8").splitlines()[:2]
UNKNOWN = "das muss xyz"


def ini(tmp_path: Path, table: str = "", unknown: str = "", distortion: str = "0.3", name: str = "moses.ini") -> Path:
    """The built-in example's moses.ini with absolute paths, its table named TranslationModel2
    with ``table`` added to its line, ``unknown`` to UnknownWordPenalty's, and the distortion
    weight ``distortion``."""
    text = (EXAMPLE_DATA / "moses.ini").read_text(encoding="utf-8").replace("${MODEL_DIR}", str(EXAMPLE_DATA))
    text = text.replace("name=PhraseDictionaryMemory0", "name=TranslationModel2").replace(
        "PhraseDictionaryMemory0=", "TranslationModel2=")
    text = text.replace("table-limit=0", f"table-limit=0 {table}".rstrip())
    text = text.replace("UnknownWordPenalty\n", f"UnknownWordPenalty {unknown}".rstrip() + "\n")
    text = text.replace("Distortion0= 0.3", f"Distortion0= {distortion}")
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def show_weights(path: Path) -> list[str]:
    proc = run_cli(["moses", "-f", str(path), "-show-weights"])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def nbest(path: Path, lines: list[str] = LINES, size: int = 2) -> list[list[str]]:
    """``fstdecode moses -n-best-list - SIZE``: each entry's fields."""
    proc = run_cli(["moses", "-f", str(path), "-n-best-list", "-", str(size)], "".join(f"{x}\n" for x in lines))
    assert proc.returncode == 0, proc.stderr
    return [line.split(" ||| ") for line in proc.stdout.splitlines()]


def labels(entry: list[str]) -> list[str]:
    return [tok for tok in entry[2].split() if tok.endswith("=")]


def values_of(entry: list[str], name: str) -> list[str]:
    """The values after ``name=`` in an entry's feature field, up to the next label."""
    toks = entry[2].split()
    start = toks.index(f"{name}=") + 1
    end = next((i for i in range(start, len(toks)) if toks[i].endswith("=")), len(toks))
    return toks[start:end]


def one_best(path: Path, lines: list[str] = LINES) -> str:
    proc = run_cli(["moses", "-f", str(path)], "".join(f"{x}\n" for x in lines))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# --------------------------------------------------------------------------
# tuneable=false


def test_untuneable_table_is_shown_untuneable_and_left_out_of_the_nbest(tmp_path: Path):
    plain, fixed = ini(tmp_path), ini(tmp_path, "tuneable=false", name="fixed.ini")
    # Moses' order (stateful first), the table in its place; the other lines unchanged.
    assert show_weights(fixed) == [
        "KENLM0= 1.000000",
        "Distortion0= 0.300000",
        "WordPenalty0= 0.000000",
        "UnknownWordPenalty0 UNTUNEABLE",
        "TranslationModel2 UNTUNEABLE",
    ]
    ours, theirs = nbest(fixed), nbest(plain)
    assert [labels(e) for e in ours] == [["KENLM0=", "Distortion0=", "WordPenalty0="]] * 4
    assert [labels(e) for e in theirs] == [["KENLM0=", "Distortion0=", "WordPenalty0=", "TranslationModel2="]] * 4
    # The weight still counts: the same translations, the same totals, the same 1-best.
    assert [(e[0], e[1], e[3]) for e in ours] == [(e[0], e[1], e[3]) for e in theirs]
    assert one_best(fixed) == one_best(plain)
    # ... and the other features' values are untouched.
    assert [values_of(e, "KENLM0") for e in ours] == [values_of(e, "KENLM0") for e in theirs]


@pytest.mark.parametrize("word", ["false", "FALSE", "no", "N", "0"])  # Moses' Scan<bool>, any case
def test_every_moses_false_word_makes_it_untuneable(tmp_path: Path, word: str):
    assert show_weights(ini(tmp_path, f"tuneable={word}"))[-1] == "TranslationModel2 UNTUNEABLE"


def test_tuneable_true_makes_the_unknown_word_penalty_tuneable(tmp_path: Path):
    # UnknownWordPenaltyProducer sets m_tuneable false, then reads its line: tuneable=true wins.
    path = ini(tmp_path, unknown="tuneable=true")
    assert show_weights(path)[3] == "UnknownWordPenalty0= 1.000000"
    (entry, *_) = nbest(path, [UNKNOWN], 1)
    assert labels(entry) == ["KENLM0=", "Distortion0=", "WordPenalty0=", "UnknownWordPenalty0=", "TranslationModel2="]
    assert values_of(entry, "UnknownWordPenalty0") == ["-100"]  # one unknown word


def test_components_before_tuneable_false_are_accepted(tmp_path: Path):
    # Moses reads the keys in line order: tuneable-components while still tuneable, then false.
    assert show_weights(ini(tmp_path, "tuneable-components=1,0 tuneable=false"))[-1] == "TranslationModel2 UNTUNEABLE"


# --------------------------------------------------------------------------
# tuneable-components=


def test_untuneable_component_is_shown_and_its_value_left_out(tmp_path: Path):
    plain, part = ini(tmp_path), ini(tmp_path, "tuneable-components=1,0", name="part.ini")
    assert show_weights(part)[-1] == "TranslationModel2= 0.500000 UNTUNEABLECOMPONENT"
    ours, theirs = nbest(part), nbest(plain)
    assert [labels(e) for e in ours] == [labels(e) for e in theirs]
    # The first column's value alone, then the total as before.
    assert [values_of(e, "TranslationModel2") for e in ours] == [values_of(e, "TranslationModel2")[:1] for e in theirs]
    assert all(len(values_of(e, "TranslationModel2")) == 2 for e in theirs)
    assert [(e[1], e[3]) for e in ours] == [(e[1], e[3]) for e in theirs]


def test_second_component_alone(tmp_path: Path):
    plain, part = ini(tmp_path), ini(tmp_path, "tuneable-components=false,TRUE", name="part.ini")
    assert show_weights(part)[-1] == "TranslationModel2= UNTUNEABLECOMPONENT 0.500000"
    assert [values_of(e, "TranslationModel2") for e in nbest(part)] == [
        values_of(e, "TranslationModel2")[1:] for e in nbest(plain)]


def test_no_tuneable_component_leaves_the_label_out(tmp_path: Path):
    # HasTuneableComponents is false: OutputFeatureScores prints neither the name nor a value.
    path = ini(tmp_path, "tuneable-components=0,0")
    assert show_weights(path)[-1] == "TranslationModel2= UNTUNEABLECOMPONENT UNTUNEABLECOMPONENT"
    assert [labels(e) for e in nbest(path)] == [["KENLM0=", "Distortion0=", "WordPenalty0="]] * 4


def test_all_components_tuneable_is_as_without(tmp_path: Path):
    # Empty items are skipped (Moses' Tokenize on ","), so "1,,1" is two values.
    path = ini(tmp_path, "tuneable-components=1,,1")
    assert show_weights(path)[-1] == "TranslationModel2= 0.500000 0.500000"
    assert nbest(path) == nbest(ini(tmp_path, name="plain.ini"))


def test_the_other_writers_follow_the_components(tmp_path: Path):
    # decode's n-best (cli/output.py) and the server's fvals (moses_output.features_field) too.
    model = load_model(ini(tmp_path, "tuneable-components=0,1"))
    d = Decoder(model, "stack", nbest=1).decode(LINES[0]).derivations[0]
    second = f"{d.features.tm[1]:.6g}"
    assert moses_features(d, model.features).endswith(f"WordPenalty0= -6 TranslationModel2= {second}")
    assert features_field(d, model.features).endswith(f" WordPenalty0= -6 TranslationModel2= {second}")
    fixed = load_model(ini(tmp_path, "tuneable=false", name="fixed.ini"))
    assert "TranslationModel2" not in moses_features(d, fixed.features)
    assert "TranslationModel2" not in features_field(d, fixed.features)
    proc = run_cli(["decode", "-f", str(ini(tmp_path, "tuneable=0", name="decode.ini")), "--format", "nbest",
                    "--nbest", "2"], LINES[0] + "\n")
    assert proc.returncode == 0, proc.stderr
    assert all("TranslationModel2" not in line for line in proc.stdout.splitlines())


# --------------------------------------------------------------------------
# bad values: one error line naming the file and line, exit status 2


@pytest.mark.parametrize(
    ("table", "unknown", "lineno", "fragment"),
    [
        ("tuneable=maybe", "", 10, "tuneable='maybe' must be a boolean"),  # Scan<bool> throws
        ("tuneable=", "", 10, "malformed argument 'tuneable='"),  # no value
        ("tuneable-components=1", "", 10, "list of 2 boolean value(s)"),  # too few
        ("tuneable-components=1,0,1", "", 10, "list of 2 boolean value(s)"),  # too many
        ("tuneable-components=1,2", "", 10, "list of 2 boolean value(s)"),  # 2 is no boolean
        ("tuneable-components=,", "", 10, "list of 2 boolean value(s)"),  # empty (Moses: "Empty")
        ("tuneable=false tuneable-components=1,0", "", 10, "cannot be set after tuneable=false"),
        ("", "tuneable-components=1", 9, "cannot be set on UnknownWordPenalty"),  # untuneable by default
        ("", "tuneable-components=1 tuneable=true", 9, "cannot be set on UnknownWordPenalty"),  # too late
    ],
)
def test_bad_values_are_one_error_line(tmp_path: Path, table: str, unknown: str, lineno: int, fragment: str):
    path = ini(tmp_path, table, unknown)
    proc = run_cli(["moses", "-f", str(path), "-show-weights"])
    assert proc.returncode == 2
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert f"{path}:{lineno}: " in line and fragment in line, line


def test_lexical_reordering_refuses_tuneable(tmp_path: Path):
    # Moses' LexicalReordering reads its own keys only: "Unknown argument tuneable".
    path = ini(tmp_path)
    text = path.read_text(encoding="utf-8").replace(
        "[weight]\n", "[weight]\nLexicalReordering0= 0.3 0.3 0.3 0.3 0.3 0.3\n").replace(
        "Distortion\n", "Distortion\nLexicalReordering type=wbe-msd-bidirectional-fe-allff input-factor=0 "
        "output-factor=0 path=reordering-table tuneable=false\n")
    path.write_text(text, encoding="utf-8")
    proc = run_cli(["moses", "-f", str(path), "-show-weights"])
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert f"{path}:8: LexicalReordering does not take 'tuneable'" in line and "Moses'" in line, line


# --------------------------------------------------------------------------
# the weights as 32-bit floats


@pytest.mark.parametrize(
    ("weight", "shown"),
    [
        # C++'s `stringstream >> float` then `cout << fixed << setprecision(6)` print these (checked
        # with a 5-line C++ program); the double would print -0.066053, -0.123456, -0.012500.
        ("-0.0660525", "-0.066052"),
        ("-0.1234565", "-0.123457"),
        ("-0.0125005", "-0.012501"),
        ("0.0289617", "0.028962"),  # float and double agree
        ("1e20", "100000002004087734272.000000"),  # the largest weight accepted, as a float
    ],
)
def test_weights_print_as_moses_floats(weight: str, shown: str):
    assert moses_weight(float(weight)) == shown


def test_show_weights_prints_the_float(tmp_path: Path):
    assert show_weights(ini(tmp_path, distortion="-0.0660525"))[1] == "Distortion0= -0.066052"
    proc = run_cli(["decode", "-f", str(ini(tmp_path, distortion="-0.1234565", name="d.ini")), "--show-weights"])
    assert proc.stdout.splitlines()[1] == "Distortion0= -0.123457"
