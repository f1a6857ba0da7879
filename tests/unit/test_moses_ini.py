"""Tests of fstdecode.io.moses_ini."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fstdecode.io.moses_ini import (
    DEFAULT_TABLE_LIMIT,
    SUPPORTED_KINDS,
    FeatureLine,
    MosesConfig,
    MosesIniError,
    load_moses_ini,
)

from fstdecode.model.model import load_model

from shared import data_path, example_ini_text, expect_reader_error, run_cli


def write(tmp_path: Path, text: str, name: str = "moses.ini") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


MINIMAL = """\
[feature]
KENLM path=lm.arpa order=3
Distortion
WordPenalty
PhraseDictionaryMemory path=pt.gz num-features=2

[weight]
KENLM0= 0.5
Distortion0= 0.3
WordPenalty0= -1
PhraseDictionaryMemory0= 0.2 0.2
"""


# --------------------------------------------------------------------------
# Real configs


def test_moses_early_distortion_de_en() -> None:
    ini = data_path("moses-early-distortion-de-en", "moses.ini")
    folder = os.path.dirname(os.path.abspath(ini))
    config = load_moses_ini(ini)
    assert config.path == str(ini)

    lm = config.lm()
    assert lm is not None
    assert lm.kind == "KENLM" and lm.name == "KENLM0"
    assert lm.path == os.path.join(folder, "mini.irstlm.en.3g.lm")
    assert os.path.exists(lm.path)
    assert lm.int_arg("order", 0) == 3
    assert lm.num_features == 1

    pt = config.phrase_table()
    assert pt is not None and pt.name == "PhraseDictionaryMemory0"
    assert pt.path == os.path.join(folder, "phrase-table.gz")
    assert pt.num_features == 5
    assert pt.int_arg("table-limit", DEFAULT_TABLE_LIMIT) == 20
    assert pt.args["input-factor"] == "0" and pt.args["output-factor"] == "0"

    assert [(f.kind, f.name) for f in config.features] == [
        ("KENLM", "KENLM0"),
        ("Distortion", "Distortion0"),
        ("WordPenalty", "WordPenalty0"),
        ("UnknownWordPenalty", "UnknownWordPenalty0"),
        ("PhraseDictionaryMemory", "PhraseDictionaryMemory0"),
    ]
    assert dict(config.weights) == {
        "WordPenalty0": (-1.0,),
        "KENLM0": (0.5,),
        "Distortion0": (0.05,),
        "PhraseDictionaryMemory0": (0.2,) * 5,
    }
    assert config.weight("UnknownWordPenalty0", (1.0,)) == (1.0,)  # no [weight] line
    assert config.distortion_limit == 6
    assert config.early_distortion_cost is True
    # The n-best path is an output file: kept as written, not resolved.
    assert (config.nbest_path, config.nbest_size) == ("nbest", 50)
    assert config.other["mapping"] == ("0 T 0",)
    assert config.other["input-factors"] == ("0",)
    assert config.other["include-segmentation-in-n-best"] == ("yes",)


def test_moses_toy_numbers_is_rejected_clearly() -> None:
    """InputFeature (line 39) is not supported (PhraseDictionaryBinary, line 38, is read).

    Ignoring it would decode with a different model than the ini describes
    (InputFeature adds lattice arc weights to every score), so loading fails and
    the message names it and the supported kinds.
    """
    ini = data_path("moses-toy-numbers", "moses.ini")
    with pytest.raises(MosesIniError) as info:
        load_moses_ini(ini)
    message = str(info.value)
    assert message.startswith(f"{ini}:39: feature 'InputFeature' is not supported")
    assert "PhraseDictionaryBinary" in message  # among the supported kinds
    for kind in SUPPORTED_KINDS:
        assert kind in message


def test_moses_toy_numbers_adapted_to_the_subset(tmp_path: Path) -> None:
    """The same ini with a text table, plain-text input and without InputFeature loads."""
    ini = data_path("moses-toy-numbers", "moses.ini")
    kept = [
        line.replace("PhraseDictionaryBinary", "PhraseDictionaryMemory").replace("[recover-input-path]", "[verbose]")
        for line in ini.read_text(encoding="utf-8").replace("[inputtype]\n2", "[inputtype]\n0").splitlines()
        if not line.startswith("InputFeature")
    ]
    copy = write(tmp_path, "\n".join(kept) + "\n")
    config = load_moses_ini(copy)
    assert config.distortion_limit == 25
    assert config.early_distortion_cost is False
    assert (config.nbest_path, config.nbest_size) == ("nbest", 10)
    lm = config.lm()
    assert lm is not None
    assert lm.path == str(tmp_path / "small.lm")
    assert lm.args["lazyken"] == "0"
    pt = config.phrase_table()
    assert pt is not None
    assert pt.path == str(tmp_path / "phrase-table")
    assert pt.num_features == 2 and pt.int_arg("table-limit", DEFAULT_TABLE_LIMIT) == 0
    assert dict(config.weights) == {
        "WordPenalty0": (-5.0,),
        "KENLM0": (1.0,),
        "Distortion0": (1.0,),
        "PhraseDictionaryMemory0": (0.5, 0.5),
    }
    assert config.other["inputtype"] == ("0",)
    assert config.other["beam-threshold"] == ("0.0001",)
    assert config.other["mapping"] == ("T 0",)


# --------------------------------------------------------------------------
# Parsing details


def test_minimal_relative_paths_resolve_against_ini_folder(tmp_path: Path) -> None:
    config = load_moses_ini(write(tmp_path, MINIMAL))
    lm, pt = config.lm(), config.phrase_table()
    assert lm is not None and pt is not None
    assert lm.path == str(tmp_path / "lm.arpa")
    assert pt.path == str(tmp_path / "pt.gz")
    assert pt.int_arg("table-limit", DEFAULT_TABLE_LIMIT) == DEFAULT_TABLE_LIMIT == 20
    assert config.distortion_limit is None
    assert config.early_distortion_cost is False
    assert (config.nbest_path, config.nbest_size) == (None, None)
    assert dict(config.other) == {}


def test_relative_path_with_subfolder_and_absolute_path(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "lm.arpa"
    text = (
        "[feature]\n"
        f"KENLM path={elsewhere}\n"
        "PhraseDictionaryMemory path=models/../models/pt num-features=1\n"
    )
    config = load_moses_ini(write(tmp_path, text))
    assert config.features[0].path == str(elsewhere)
    assert config.features[1].path == str(tmp_path / "models" / "pt")


def test_variables_resolve_to_ini_folder_anywhere(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    text = (
        "[feature]\n"
        "KENLM path=${TEST_PATH}/lm.arpa\n"
        "PhraseDictionaryMemory path=${MODEL_DIR}/a/${X}.gz num-features=1\n"
        "[description]\n"
        "see ${TEST_PATH} here\n"
    )
    config = load_moses_ini(write(sub, text))
    assert config.features[0].path == f"{sub}/lm.arpa"
    assert config.features[1].path == f"{sub}/a/{sub}.gz"
    assert config.other["description"] == (f"see {sub} here",)


def test_ini_given_as_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "[feature]\nKENLM path=${TEST_PATH}/lm\n")
    monkeypatch.chdir(tmp_path)
    config = load_moses_ini("moses.ini")
    assert config.path == "moses.ini"
    assert config.features[0].path == f"{tmp_path}/lm"


def test_names_and_counters(tmp_path: Path) -> None:
    text = (
        "[feature]\n"
        "KENLM name=big path=a\n"
        "KENLM path=b\n"
        "PhrasePenalty\n"
        "UnknownWordPenalty\n"
        "WordPenalty tuneable=false\n"
        "PhraseDictionaryMemory name=TM path=c num-features=3\n"
        "[weight]\n"
        "big= 1\n"
        "KENLM0=2\n"
        "PhrasePenalty0= 0.2\n"
        "TM= 1 2 3e-1\n"
    )
    config = load_moses_ini(write(tmp_path, text))
    assert [f.name for f in config.features] == [
        "big", "KENLM0", "PhrasePenalty0", "UnknownWordPenalty0", "WordPenalty0", "TM",
    ]
    assert config.weights["KENLM0"] == (2.0,)
    assert config.weights["TM"] == (1.0, 2.0, 0.3)
    assert [f.lineno for f in config.features] == [2, 3, 4, 5, 6, 7]
    with pytest.raises(MosesIniError, match=r"moses\.ini:3: a second KENLM feature"):
        config.lm()


def test_comments_blank_lines_and_repeated_sections(tmp_path: Path) -> None:
    text = (
        "# header comment\n"
        "\n"
        "[feature]   \n"
        "KENLM path=lm   # trailing comment\n"
        "   # indented comment\n"
        "[distortion-limit]\n"
        "0\n"
        "[feature]\n"
        "Distortion\n"
        "[weight]\n"
        "Distortion0= 1 # one\n"
    )
    config = load_moses_ini(write(tmp_path, text))
    assert [f.kind for f in config.features] == ["KENLM", "Distortion"]
    assert config.features[0].path == str(tmp_path / "lm")
    assert config.distortion_limit == 0
    assert config.weights == {"Distortion0": (1.0,)}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("yes", True), ("YES", True), ("true", True), ("1", True), ("y", True),
     ("no", False), ("false", False), ("0", False), ("False", False), ("", True)],
)
def test_early_distortion_cost_values(tmp_path: Path, value: str, expected: bool) -> None:
    config = load_moses_ini(write(tmp_path, f"[early-distortion-cost]\n{value}\n"))
    assert config.early_distortion_cost is expected


def test_distortion_limit_minus_one_is_no_limit(tmp_path: Path) -> None:
    # Moses: -1 = unlimited, which differs from an absent section (Moses' default of 6).
    assert load_moses_ini(write(tmp_path, "[distortion-limit]\n-1\n")).distortion_limit == -1
    assert load_moses_ini(write(tmp_path, "[weight]\n")).distortion_limit is None


def test_nbest_values_are_lines(tmp_path: Path) -> None:
    # Moses reads each line of a section as one value (Parameter::ReadConfigFile): the path, the
    # size, then 'distinct' on a third line of its own (NBestOptions::init).
    config = load_moses_ini(write(tmp_path, "[n-best-list]\nout/nbest.txt\n100\n"))
    assert (config.nbest_path, config.nbest_size, config.nbest_distinct) == ("out/nbest.txt", 100, False)
    assert config.ignored == ()
    config = load_moses_ini(write(tmp_path, "[n-best-list]\neu.nbest\n100\ndistinct\n"))
    assert (config.nbest_path, config.nbest_size, config.nbest_distinct) == ("eu.nbest", 100, True)


def test_nbest_distinct_on_the_size_line_is_a_plain_list(tmp_path: Path) -> None:
    # The lexicalized-reordering gold's own section ('eu.nbest' / '100 distinct'): Moses reads the
    # size's line as 100 (Scan<size_t>) and writes a plain list (its truth has 18 distinct
    # strings in sentence 0's 100 entries: ../shared/data/moses-lexreo-europarl-fr-en/SOURCE.md).
    path = write(tmp_path, "[n-best-list]\neu.nbest\n100 distinct\n")
    config = load_moses_ini(path)
    assert (config.nbest_path, config.nbest_size, config.nbest_distinct) == ("eu.nbest", 100, False)
    assert config.ignored_sections == ("n-best-list",)
    assert config.ignored[0].startswith(f"{path}:3: [n-best-list] 'distinct' is ignored, as Moses ignores it")
    # A third line other than 'distinct', and any line after it, are ignored too (with a warning).
    config = load_moses_ini(write(tmp_path, "[n-best-list]\neu.nbest\n100\nunique\n"))
    assert not config.nbest_distinct and "'unique' is ignored" in config.ignored[0]


def test_config_is_frozen_and_hashable(tmp_path: Path) -> None:
    config = load_moses_ini(write(tmp_path, MINIMAL))
    assert isinstance(config, MosesConfig)
    assert isinstance(config.features[0], FeatureLine)
    hash(config)
    hash(config.features[0])
    assert config == load_moses_ini(tmp_path / "moses.ini")
    with pytest.raises(AttributeError):
        config.distortion_limit = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.weights["KENLM0"] = (1.0,)  # type: ignore[index]
    with pytest.raises(TypeError):
        config.features[0].args["path"] = "x"  # type: ignore[index]


# --------------------------------------------------------------------------
# Errors: each names the file and the line


def expect_error(path: Path, lineno: int | None, fragment: str) -> str:
    return expect_reader_error(MosesIniError, load_moses_ini, path, lineno, fragment)


def test_error_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "none.ini"
    assert expect_error(path, None, "no such file") == f"{path}: no such file"


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("LexicalReordering type=msd num-features=6", "LexicalReordering needs path=..."),  # the table is required
        ("LexicalReordering path=rt num-features=6", "LexicalReordering needs type=..."),  # and the type
        ("LexicalReordering type=msd-fe path=rt sparse-x=1", "does not take 'sparse-x'"),  # sparse features: refused
        ("KENLM path=lm order", "malformed argument 'order'"),
        ("KENLM path=lm order=", "malformed argument 'order='"),
        ("KENLM =3 path=lm", "malformed argument '=3'"),
        ("KENLM path=lm colour=blue", "KENLM does not take 'colour'"),
        ("KENLM path=lm path=lm2", "'path' given twice"),
        ("KENLM order=3", "KENLM needs path="),
        ("PhraseDictionaryMemory path=pt", "PhraseDictionaryMemory needs num-features="),
        ("PhraseDictionaryMemory path=pt num-features=five", "num-features='five' must be an integer"),
        ("PhraseDictionaryMemory path=pt num-features=0", "must be an integer >= 1"),
        ("PhraseDictionaryMemory path=pt num-features=1 table-limit=-3", "table-limit='-3'"),
        ("KENLM path=lm order=x", "order='x'"),
        ("WordPenalty num-features=2", "WordPenalty has exactly 1 feature"),
        ("KENLM path=lm factor=1", "only factor 0"),
        ("PhraseDictionaryMemory path=pt num-features=1 output-factor=0,1", "only factor 0"),
        ("Distortion tuneable=maybe", "tuneable='maybe'"),
        ("WordPenalty name=Distortion0", "feature name 'Distortion0' is already used on line 2"),
    ],
)
def test_error_feature_line(tmp_path: Path, line: str, fragment: str) -> None:
    path = write(tmp_path, f"[feature]\nDistortion\n\n{line}\n")
    expect_error(path, 4, fragment)


def test_error_unsupported_kind_lists_supported(tmp_path: Path) -> None:
    path = write(tmp_path, "[feature]\nKENLM path=lm\nSRILM path=lm\n")
    message = expect_error(path, 3, "'SRILM' is not supported (Moses' SRILM wrapper")
    assert "write KENLM for SRILM" in message  # the way to read its file with KenLM
    assert "supported kinds: Distortion, KENLM, LexicalReordering, PhraseDictionaryBinary, PhraseDictionaryCompact, " \
           "PhraseDictionaryMemory, PhrasePenalty, ProbingPT, UnknownWordPenalty, WordPenalty" in message


def test_error_duplicate_explicit_name(tmp_path: Path) -> None:
    path = write(tmp_path, "[feature]\nKENLM name=KENLM0 path=a\nKENLM path=b\n")
    expect_error(path, 3, "'KENLM0' is already used on line 2")


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("Distortion0= 0.5 abc", "Distortion0 weight 'abc' is not a number"),
        ("Distortion1= 0.5", "weight for 'Distortion1', which is not a [feature]"),
        ("Distortion0= 0.5 0.5", "Distortion0 has 2 weight(s) but the feature on line 2 has 1"),
        ("PhraseDictionaryMemory0= 0.2 0.2", "has 2 weight(s) but the feature on line 3 has 3"),
        ("Distortion0 0.5", "malformed weight line"),
        ("= 0.5", "malformed weight line"),
        ("Distortion0=", "Distortion0 has no weights"),
        ("WordPenalty0= -1", "second weight line for 'WordPenalty0'"),
    ],
)
def test_error_weight_line(tmp_path: Path, line: str, fragment: str) -> None:
    text = (
        "[feature]\n"
        "Distortion\n"
        "PhraseDictionaryMemory path=pt num-features=3\n"
        "WordPenalty\n"
        "[weight]\n"
        "WordPenalty0= -1\n"
        f"{line}\n"
    )
    expect_error(write(tmp_path, text), 7, fragment)


def test_error_weight_before_features_still_checked(tmp_path: Path) -> None:
    text = "[weight]\nKENLM0= 1 2\n[feature]\nKENLM path=lm\n"
    expect_error(write(tmp_path, text), 2, "KENLM0 has 2 weight(s) but the feature on line 4 has 1")


@pytest.mark.parametrize(
    ("text", "lineno", "fragment"),
    [
        ("[distortion-limit]\n\n-2\n", 3, "distortion limit '-2' must be an integer >= 0"),
        ("[distortion-limit]\nsix\n", 2, "distortion limit 'six'"),
        ("[distortion-limit]\n6 7\n", 2, "needs exactly one integer, found 2"),
        ("[distortion-limit]\n[weight]\n", 1, "needs exactly one integer, found 0"),
        ("[early-distortion-cost]\nmaybe\n", 2, "must be one of yes, no"),
        ("[early-distortion-cost]\nyes\nno\n", 2, "found 'yes no'"),
        ("[n-best-list]\nnbest\n", 2, "needs an output path and a size, and optionally the word 'distinct', each "
         "on a line of its own (Moses reads each line as one value); found 'nbest'"),
        # the values on one line: one value for Moses, which says "wrong format" and writes no list
        ("[n-best-list]\nnbest 10 distinct\n", 2, "each on a line of its own (Moses reads each line as one value); "
         "found 'nbest 10 distinct'"),
        ("[n-best-list]\nnbest\nten\n", 3, "n-best size 'ten' must be a positive integer"),
        ("[n-best-list]\nnbest\n0\n", 3, "n-best size '0'"),
        ("# comment\nKENLM path=lm\n", 2, "before any [section]"),
        ("[feature\nKENLM path=lm\n", 1, "malformed section header"),
        ("[feature]\n[]\n", 2, "malformed section header"),
    ],
)
def test_error_sections(tmp_path: Path, text: str, lineno: int, fragment: str) -> None:
    expect_error(write(tmp_path, text), lineno, fragment)


def test_error_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "moses.ini"
    path.write_bytes(b"[feature]\nKENLM path=\xff\n")
    expect_error(path, 2, "invalid UTF-8")


# --------------------------------------------------------------------------
# A second feature of one kind (issue 22): Moses reads each line as a feature of its own, with
# its own weight (WordPenalty0, WordPenalty1); fstdecode's model has one weight per kind, so it
# refuses the file, naming both lines, where it used to merge them into one weight without a word.


@pytest.mark.parametrize(
    ("kind", "what"),
    [
        ("WordPenalty", "word penalty"),  # the case found: WordPenalty0's weight was replaced by 1.0
        ("Distortion", "distance-based distortion feature"),
        ("PhrasePenalty", "phrase penalty"),
        ("UnknownWordPenalty", "unknown-word penalty"),  # untuneable, with Moses' default weight
    ],
)
def test_a_second_feature_of_one_kind_is_an_error_naming_both_lines(tmp_path: Path, kind: str, what: str) -> None:
    # The example's [feature] lines: KENLM on line 6, Distortion 7, WordPenalty 8,
    # UnknownWordPenalty 9, PhraseDictionaryMemory 10; the added lines go at 11 (and 12).
    ini = example_ini_text()
    present = f"\n{kind}\n" in ini
    added = f"{kind}\n" if present else f"{kind}\n{kind}\n"
    path = write(tmp_path, ini.replace("table-limit=0\n", f"table-limit=0\n{added}", 1))
    first, second = ({"Distortion": 7, "WordPenalty": 8, "UnknownWordPenalty": 9}[kind], 11) if present else (11, 12)
    with pytest.raises(MosesIniError) as info:
        load_model(path)
    message = str(info.value)
    assert message.startswith(
        f"{path}:{second}: a second {kind} feature ({kind}1; the first, {kind}0, is on line {first})"
    ), message
    assert f"fstdecode supports one {what}" in message


def test_a_second_word_penalty_fails_the_cli_in_one_line(tmp_path: Path) -> None:
    ini = example_ini_text().replace("WordPenalty\n", "WordPenalty\nWordPenalty\n", 1)
    path = write(tmp_path, ini)
    proc = run_cli(["decode", "-f", str(path), "--show-weights"])
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"fstdecode: error: {path}:9: a second WordPenalty feature (WordPenalty1; the first, WordPenalty0, "
        "is on line 8); fstdecode supports one word penalty, remove all but one (Moses would read each line "
        "as a feature of its own, with its own weight)"
    ]
