"""Tests of the old moses.ini format (fstdecode.io.moses_ini, ``[ttable-file]``, ``[weight-t]``, ...).

The expected feature lines are written out by hand from Moses' conversion rule
(moses/Parameter.cpp, ``ConvertWeightArgs``): LMs first, then Distortion and the
lexicalized tables, PhrasePenalty, WordPenalty, UnknownWordPenalty, the phrase tables.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from fstdecode import Decoder
from fstdecode.io.moses_ini import MosesIniError, load_moses_ini, old_format_lines
from fstdecode.model.model import load_model

from shared import EXAMPLE_DATA, data_path, example_ini_text, expect_reader_error


def write(tmp_path: Path, text: str, name: str = "moses.ini") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# The built-in example (fstdecode/data/moses.ini) written in the old format.
EXAMPLE_OLD = f"""\
# the built-in example, old format
[ttable-file]
0 0 0 2 {EXAMPLE_DATA}/phrase-table

[ttable-limit]
0

[lmodel-file]
8 0 2 {EXAMPLE_DATA}/lm.arpa

[distortion-limit]
4

[weight-d]
0.3

[weight-l]
1.0

[weight-t]
0.5
0.5

[weight-w]
0

[weight-u]
1
"""


def test_old_example_reads_as_the_new_one(tmp_path: Path) -> None:
    old = load_moses_ini(write(tmp_path, EXAMPLE_OLD))
    new = load_moses_ini(write(tmp_path, example_ini_text(), "new.ini"))
    assert old.old_format and not new.old_format
    # Moses' order, not the new file's: LM, Distortion, WordPenalty, UnknownWordPenalty, table.
    assert [f.name for f in old.features] == [
        "KENLM0", "Distortion0", "WordPenalty0", "UnknownWordPenalty0", "PhraseDictionaryMemory0"
    ]
    assert {f.name: (f.kind, f.path, f.num_features) for f in old.features} == {
        f.name: (f.kind, f.path, f.num_features) for f in new.features
    }
    assert old.lm().int_arg("order", 0) == new.lm().int_arg("order", 0) == 2
    assert old.phrase_table().int_arg("table-limit", -1) == new.phrase_table().int_arg("table-limit", -1) == 0
    assert dict(old.weights) == dict(new.weights)
    assert old.distortion_limit == new.distortion_limit == 4


def test_old_example_gives_the_same_model_and_decodes(tmp_path: Path) -> None:
    old = load_model(write(tmp_path, EXAMPLE_OLD))
    new = load_model(write(tmp_path, example_ini_text(), "new.ini"))
    assert old.weights == new.weights and old.distortion_limit == new.distortion_limit
    assert sorted(old.table.sources()) == sorted(new.table.sources())
    for source in new.table.sources():
        assert old.table.lookup(source) == new.table.lookup(source)
    assert (old.lm.path, old.lm.order) == (new.lm.path, new.lm.order)
    sentence = "das muss unsere sorge gleichermaßen sein"
    a, b = Decoder(old, "stack").decode(sentence), Decoder(new, "stack").decode(sentence)
    assert a.best.translation == b.best.translation == "this must also be our concern"
    assert a.best.score == b.best.score


def test_lexicalized_reordering_and_every_section_convert(tmp_path: Path) -> None:
    # weight-d: the distance weight first, then the 6 lexicalized ones; two LMs, weight-p.
    path = write(tmp_path, """\
[lmodel-file]
8 0 5 lm.bin
0 0 3 other.arpa
[weight-l]
0.5
0.25
[distortion-file]
0-0 wbe-msd-bidirectional-fe-allff 6 reordering-table.gz
[weight-d]
0.3
0.1
0.2
0.3
0.4
0.5
0.6
[weight-p]
0.2
[weight-w]
-1
[ttable-file]
0 0 0 5 phrase-table.gz
[ttable-limit]
30
[weight-t]
0.2 0.2 0.2
0.2 0.2
""")
    converted = old_format_lines(path)
    assert [text for _, text in converted.features] == [
        "KENLM factor=0 order=5 num-features=1 lazyken=0 path=lm.bin",
        # type 0 is SRILM in Moses (ConvertWeightArgsLM), its weight SRILM + the LM's index; the
        # line is written as Moses writes it (loading it is refused: see the type-code tests)
        "SRILM factor=0 order=3 num-features=1 path=other.arpa",
        "Distortion",
        "LexicalReordering type=wbe-msd-bidirectional-fe-allff input-factor=0 output-factor=0 "
        "num-features=6 path=reordering-table.gz",
        "PhrasePenalty",
        "WordPenalty",
        "UnknownWordPenalty",
        "PhraseDictionaryMemory input-factor=0 output-factor=0 path=phrase-table.gz num-features=5 table-limit=30",
    ]
    assert [text for _, text in converted.weights] == [
        "KENLM0= 0.5",
        "SRILM1= 0.25",
        "Distortion0= 0.3",
        "LexicalReordering0= 0.1 0.2 0.3 0.4 0.5 0.6",
        "PhrasePenalty0= 0.2",
        "WordPenalty0= -1.0",
        "PhraseDictionaryMemory0= 0.2 0.2 0.2 0.2 0.2",
    ]
    # Each converted line carries the line of the old entry it comes from.
    assert dict((text.split()[0], lineno) for lineno, text in converted.features)["LexicalReordering"] == 8


def test_lazy_kenlm_and_a_missing_ttable_limit(tmp_path: Path) -> None:
    path = write(tmp_path, "[lmodel-file]\n9 0 3 lm.bin\n[weight-l]\n1\n[ttable-file]\n0 0 0 1 pt\n[weight-t]\n1\n")
    features = [text for _, text in old_format_lines(path).features]
    assert features[0] == "KENLM factor=0 order=3 num-features=1 lazyken=1 path=lm.bin"
    assert features[-1].endswith("table-limit=20")  # Moses' default table limit
    config = load_moses_ini(path)
    assert config.lm().path == str(tmp_path / "lm.bin")  # relative to the ini's folder
    assert "Distortion" not in [f.kind for f in config.features]  # no [weight-d]: no Distortion, as in Moses


# Moses names an [lmodel-file] feature by its type code (Parameter::ConvertWeightArgsLM:
# 0 SRILM, 1 IRSTLM, 8 and 9 KENLM), and -show-weights and the n-best lists print that name;
# each case is one KenLM code (9 loads lazily in Moses), read as an ARPA file either way.
@pytest.mark.parametrize("code, name", [("8", "KENLM0"), ("9", "KENLM0")])
def test_lm_type_code_names_the_feature_as_moses_does(tmp_path: Path, code: str, name: str) -> None:
    path = write(tmp_path, EXAMPLE_OLD.replace("[lmodel-file]\n8 0 2", f"[lmodel-file]\n{code} 0 2"))
    model = load_model(path)
    assert model.lm.order == 2 and Path(model.lm.path) == EXAMPLE_DATA / "lm.arpa"
    assert model.show_weights() == [
        f"{name}= 1.000000",
        "Distortion0= 0.300000",
        "WordPenalty0= 0.000000",
        "UnknownWordPenalty0 UNTUNEABLE",
        "PhraseDictionaryMemory0= 0.500000 0.500000",
    ]


# Types 0 and 1 are Moses' SRILM and IRSTLM wrappers (moses/LM/SRI.cpp, IRST.cpp), which score
# unknown words unlike KenLM (SRILM floors at -100 and gives a word missing from an LM without
# <unk> -100, KenLM -230.26; IRSTLM has its own OOV rule): fstdecode read both as KenLM without a
# word (issue 38: -23.2 against Moses' -112.9 for IRSTLM). Each is refused as its [feature] line
# is, with the same words, saying how to read the file with KenLM.
@pytest.mark.parametrize("code, kind", [("0", "SRILM"), ("1", "IRSTLM")])
def test_srilm_and_irstlm_types_are_refused_as_their_feature_lines(tmp_path: Path, code: str, kind: str) -> None:
    old = write(tmp_path, EXAMPLE_OLD.replace("[lmodel-file]\n8 0 2", f"[lmodel-file]\n{code} 0 2"), "old.ini")
    lineno = EXAMPLE_OLD.splitlines().index(f"8 0 2 {EXAMPLE_DATA}/lm.arpa") + 1
    message = expect_reader_error(MosesIniError, load_model, old, lineno, f"feature '{kind}' is not supported")
    assert f"[lmodel-file] type {code}" in message and "make the [lmodel-file] type 8" in message
    assert f"write KENLM for {kind} on its [feature] line" in message and "\n" not in message
    new = write(tmp_path, f"[feature]\n{kind} factor=0 order=2 path={EXAMPLE_DATA}/lm.arpa\n", "new.ini")
    with pytest.raises(MosesIniError) as info:
        load_moses_ini(new)
    assert str(info.value).split(": ", 1)[1] == message.split(": ", 1)[1]  # one message, both forms
    # The way out it names: type 8 reads the same file with KenLM, as Moses would then.
    fixed = write(tmp_path, old.read_text(encoding="utf-8").replace(f"\n{code} 0 2 ", "\n8 0 2 "), "fixed.ini")
    assert load_model(fixed).show_weights()[0] == "KENLM0= 1.000000"


def test_lexicalized_reordering_is_converted_with_its_six_weights(tmp_path: Path) -> None:
    # Converted, it is read like a new-format LexicalReordering line, with its six weights.
    path = write(tmp_path, EXAMPLE_OLD.replace("[weight-d]\n0.3\n", "[weight-d]\n0.3\n0.1\n0.1\n0.1\n0.1\n0.1\n0.1\n")
                 + "[distortion-file]\n0-0 msd-bidirectional-fe 6 reo.gz\n")
    config = load_moses_ini(path)
    lexreo = [f for f in config.features if f.kind == "LexicalReordering"]
    assert len(lexreo) == 1 and config.weights[lexreo[0].name] == (0.1,) * 6


# Each bad file, the line its error names, and a fragment of the message.
BAD = [
    # too few [weight-t] values for the table's 2 scores: the [weight-t] header line
    ("[ttable-file]\n0 0 0 2 pt\n[weight-t]\n0.5\n", 3, "has 1 weight(s), but"),
    # too many: the first extra value
    ("[ttable-file]\n0 0 0 1 pt\n[weight-t]\n0.5\n0.5\n", 5, "remove the extra ones"),
    # Moses' retired 4-field table line
    ("[ttable-file]\n0 0 0 pt\n[weight-t]\n0.5\n", 2, "has 4 field(s)"),
    # an OnDisk table (hierarchical models): converted, then refused by name
    ("[ttable-file]\n2 0 0 1 pt\n[weight-t]\n0.5\n", 2, "'PhraseDictionaryOnDisk' is not supported"),
    ("[ttable-file]\n7 0 0 1 pt\n[weight-t]\n0.5\n", 2, "implementation '7' is unknown"),
    ("[lmodel-file]\n5 0 3 lm\n[weight-l]\n1\n", 2, "LM type '5' is not supported"),
    ("[lmodel-file]\n8 0 x lm\n[weight-l]\n1\n", 2, "LM order 'x'"),
    ("[lmodel-file]\n8 0 3 lm\n", 2, "without [weight-l]"),
    ("[distortion-file]\n0-0 msd-fe 3 r.gz\n[weight-d]\n0.3\n0.1\n", 3, "[weight-d] has 2 weight(s)"),
    ("[distortion-file]\n00 msd-fe 3 r.gz\n[weight-d]\n0.3\n0.1\n0.1\n0.1\n", 2, "must read input-output"),
    ("[distortion-file]\n0-0 msd-fe 3 r.gz\n", 2, "without [weight-d]"),
    ("[weight-w]\n-1\n0.5\n", 3, "holds one weight"),
    ("[weight-t]\nabc\n", 2, "[weight-t] weight 'abc' is not a number"),
    ("[weight-i]\n1\n[weight-t]\n1\n", 1, "[weight-i]"),
    # the two formats mixed: the later of the two sections
    ("[feature]\nWordPenalty\n[weight-w]\n-1\n", 3, "mixes the old format"),
    ("[search-algorithm]\n3\n[weight-w]\n-1\n", 2, "not phrase-based"),
]


@pytest.mark.parametrize("text, lineno, fragment", BAD)
def test_bad_old_format_names_file_and_line(tmp_path: Path, text: str, lineno: int, fragment: str) -> None:
    expect_reader_error(MosesIniError, load_moses_ini, write(tmp_path, text), lineno, fragment)


def test_moses_search_settings_are_ignored_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write(tmp_path, EXAMPLE_OLD + "[search-algorithm]\n1\n[stack]\n100\n[threads]\n4\n[cube-pruning-pop-limit]\n1000\n")
    config = load_moses_ini(path)
    search = ("is a setting of Moses' own search; fstdecode decode ignores it (its own search flags apply; "
              "fstdecode moses honours it)")
    assert config.ignored == (
        f"{path}:29: [search-algorithm] {search}", f"{path}:31: [stack] {search}", f"{path}:33: [threads] {search}",
        f"{path}:35: [cube-pruning-pop-limit] {search}",
    )
    with caplog.at_level(logging.WARNING, logger="fstdecode"):
        model = load_model(path)
    assert model.distortion_limit == 4
    warned = [r.getMessage() for r in caplog.records]
    assert any(f"{path}:31: [stack] is a setting of Moses' own search" in m for m in warned), warned


def test_gold_lexicalized_model_in_the_old_format(tmp_path: Path) -> None:
    # The gold Europarl config written by hand in the old format, as Moses users have it.
    gold = data_path("moses-lexreo-europarl-fr-en")
    old = write(tmp_path, f"""\
[input-factors]
0
[mapping]
T 0
[ttable-file]
0 0 0 5 {gold}/phrase-table.0-0.gz
[ttable-limit]
20
[lmodel-file]
8 0 5 {gold}/europarl.lm
[distortion-file]
0-0 msd-bidirectional-fe 6 {gold}/reordering-table.msd-bidirectional-fe.0.5.0-0.gz
[distortion-limit]
6
[weight-d]
0.5
0.3
0.3
0.3
0.3
0.3
0.3
[weight-l]
0.5
[weight-t]
0.2
0.2
0.2
0.2
0.2
[weight-w]
-1
""")
    new = load_moses_ini(gold / "moses.ini")
    config = load_moses_ini(old)

    def described(c):
        return sorted((f.kind, f.name, sorted(f.args.items())) for f in c.features)

    assert described(config) == described(new)
    assert dict(config.weights) == dict(new.weights)
    assert config.distortion_limit == new.distortion_limit == 6


def test_old_sections_beside_feature_lines_are_ignored_as_moses_does(tmp_path: Path) -> None:
    # Moses does not count [ttable-limit] and [distortion-file] as old-format sections when it
    # checks for a mixed file; beside [feature] it leaves them unconverted.
    path = write(tmp_path, example_ini_text() + "\n[ttable-limit]\n5\n[distortion-file]\n0-0 msd-fe 3 r.gz\n")
    config = load_moses_ini(path)
    assert not config.old_format
    assert config.phrase_table().int_arg("table-limit", -1) == 0  # the [feature] line's, not 5
    assert [m.split(": ", 1)[1].split("]")[0] for m in config.ignored] == ["[ttable-limit", "[distortion-file"]
    assert all("Moses ignores in a file with [feature] lines" in m for m in config.ignored)
