"""Word alignment in the output (Moses' ``-print-alignment-info``, its n-best field, JSON).

Expected values come from outside the code: alignments worked out by hand on a small table,
and Moses' own n-best alignment field in the lexicalized-reordering gold.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from fstdecode.cli import output
from fstdecode.cli.main import main
from fstdecode.decoder import DecodeResult, Decoder, Derivation
from fstdecode.fst.phrase_fst import pair_symbol, parse_pair_symbol
from fstdecode.io.phrase_table import PhraseTableError, load_phrase_table
from fstdecode.model.features import Features
from fstdecode.model.model import load_model
from fstdecode.problem.sentence import Phrase, unknown_pair

from shared import arpa_text, data_path

TABLE = (
    "a b ||| x y z ||| 0.5 ||| 1-2 0-1 1-0 1-0\n"  # unsorted, with a repeated point
    "c ||| w ||| 0.5 |||   0-0   ||| 3 4\n"  # extra spaces, and a counts field after it
    "d ||| v ||| 0.5\n"  # no alignment field at all
    "a ||| x ||| 0.5 ||| 0-0\n"
    "b ||| y ||| 0.5 |||\n"  # an empty alignment field
)


@pytest.fixture()
def table(tmp_path: Path):
    path = tmp_path / "pt"
    path.write_text(TABLE, encoding="utf-8")
    return load_phrase_table(path)


def test_the_table_keeps_each_pairs_alignment_normalized(table):
    assert table.lookup(("a", "b"))[0].alignment == "0-1 1-0 1-2"
    assert table.lookup(("c",))[0].alignment == "0-0"
    assert table.lookup(("d",))[0].alignment == ""
    assert table.lookup(("b",))[0].alignment == ""
    # One string per pattern, shared by the pairs that have it (interned).
    assert table.lookup(("c",))[0].alignment is table.lookup(("a",))[0].alignment


@pytest.mark.parametrize(
    "field, message",
    [
        ("0-0 1", "alignment point '1' is not 'i-j'"),  # not a pair
        ("0-x", "alignment point '0-x' is not 'i-j'"),
        ("0-3", "alignment point '0-3' is outside the pair (1 source and 2 target word(s)"),  # target 3 of 2
        ("1-0", "alignment point '1-0' is outside the pair"),  # source 1 of 1
    ],
)
def test_a_bad_alignment_is_an_error_naming_file_and_line(tmp_path: Path, field, message):
    path = tmp_path / "pt"
    path.write_text(f"c ||| w ||| 0.5\nd ||| v u ||| 0.5 ||| {field}\n", encoding="utf-8")
    with pytest.raises(PhraseTableError, match=re.escape(f"{path}:2: {message}")):
        load_phrase_table(path)


def _derivation(table) -> Derivation:
    """Source 'c a b d e' (e unknown), target order: [a b]=x y z, [c]=w, [d]=v, [e]=e."""
    words = ("c", "a", "b", "d", "e")
    phrases = (
        Phrase(1, 2, table.lookup(("a", "b"))[0]),
        Phrase(0, 0, table.lookup(("c",))[0]),
        Phrase(3, 3, table.lookup(("d",))[0]),
        Phrase(4, 4, unknown_pair("e", 1)),
    )
    return Derivation(words, phrases, Features(-1.0, (0.0,), 0.0, -6.0, 4.0, -100.0), -2.0, -2.0)


# Worked out by hand: "a b" sits at source 1, target 0: its points (0,1) (1,0) (1,2) become
# 1-1 2-0 2-2; "c" at source 0, target 3: 0-3; "d" has no alignment: nothing (target 4);
# the unknown "e" at source 4, target 5, aligned to itself: 4-5.
BY_HAND = "1-1 2-0 2-2 0-3 4-5"


def test_alignment_maps_phrase_internal_points_to_sentence_positions(table):
    d = _derivation(table)
    assert d.translation == "x y z w v e"
    assert d.alignment_text() == BY_HAND
    assert d.alignment() == ((1, 1), (2, 0), (2, 2), (0, 3), (4, 5))


def test_each_format_writes_the_alignment(table):
    d = _derivation(table)
    result = DecodeResult(0, d.source, (d,), True)
    assert output.text(result, alignment=True) == f"x y z w v e ||| {BY_HAND}"
    assert output.text(result) == "x y z w v e"
    obj = json.loads(output.json_line(result, alignment=True))
    assert obj["alignment"] == [[1, 1], [2, 0], [2, 2], [0, 3], [4, 5]]
    assert "alignment" not in json.loads(output.json_line(result))
    line = output.nbest_lines(result, load_model().features, alignment=True)[0]
    assert line.endswith(f" ||| 1-2=0-2 0=3 3=4 4=5 ||| {BY_HAND}")
    # Without the flag the last field stays empty, as before (Moses' line without alignments).
    assert output.nbest_lines(result, load_model().features)[0].endswith(" ||| 1-2=0-2 0=3 3=4 4=5 |||")


def test_a_compiled_phrase_fst_keeps_the_alignment(table):
    pair = table.lookup(("a", "b"))[0]
    assert parse_pair_symbol(pair_symbol(pair), "P") == pair
    bare = table.lookup(("d",))[0]
    assert pair_symbol(bare) == "d ||| v ||| " + repr(bare.scores[0])  # unchanged for pairs without one


def test_cli_prints_alignment_info_and_writes_the_alignment_file(table, tmp_path, capsys, monkeypatch):
    # Monotone word-for-word model: "a b" -> "x y z" (aligned 0-1 1-0 1-2) beats "a" + "b".
    (tmp_path / "lm").write_text(arpa_text([f"-1.0\t{w}" for w in ["<s>", "</s>", "<unk>", "x", "y", "z", "w", "v"]]))
    align_file = tmp_path / "align.txt"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"a b\n\nc d\n"), encoding="utf-8"))
    args = ["decode", "--phrase-table", str(table.path), "--lm", str(tmp_path / "lm"), "--weight", "word=-5"]
    assert main([*args, "--print-alignment-info", "--alignment-output-file", str(align_file)]) == 0
    out = capsys.readouterr().out.splitlines()
    # "a b" -> x y z (word=-5 rewards length: 3 words beat 2); an empty line has an empty alignment;
    # "c d" -> w v, c aligned, d not (no alignment field).
    assert out == ["x y z ||| 0-1 1-0 1-2", "|||", "w v ||| 0-0"]
    assert align_file.read_text(encoding="utf-8").splitlines() == ["0-1 1-0 1-2", "", "0-0"]


def test_moses_nbest_alignment_field_of_the_lexreo_gold():
    # Moses printed this field (print-alignment-info-in-n-best) for its 100-best lists: a table
    # without alignments, so only unknown words appear, each aligned to itself. Rebuild each
    # entry's derivation from its segmentation and compare our field with Moses'.
    folder = data_path("moses-lexreo-europarl-fr-en")
    table = load_phrase_table(folder / "phrase-table.0-0.gz")
    sources = (folder / "to-translate.txt").read_text(encoding="utf-8").splitlines()
    rows = (folder / "truth" / "moses-nbest-100.txt").read_text(encoding="utf-8").splitlines()
    with_points = 0
    for row in rows:
        fields = row.split(" ||| ")
        sid, target, segmentation, gold = int(fields[0]), fields[1].split(), fields[4], fields[5].strip()
        words = tuple(sources[sid].split())
        phrases = []
        for seg in segmentation.split():
            src, tgt = seg.split("=")
            s, _, t = src.partition("-")
            a, _, b = tgt.partition("-")
            s, t, a, b = int(s), int(t or s), int(a), int(b or a)
            source, tw = words[s : t + 1], tuple(target[a : b + 1])
            if s == t and not table.lookup(source):
                pair = unknown_pair(source[0], table.num_scores)
            else:
                pair = next(p for p in table.lookup(source) if p.target == tw)
            phrases.append(Phrase(s, t, pair))
        d = Derivation(words, tuple(phrases), None, 0.0, 0.0)
        assert d.alignment_text() == gold, row
        with_points += bool(gold)
    assert len(rows) == 500 and with_points > 0


def test_moses_ini_switch_turns_alignment_on(tmp_path, capsys, monkeypatch):
    # The lexicalized-reordering gold was made with "[print-alignment-info-in-n-best] true".
    from shared import example_ini_text

    ini = tmp_path / "moses.ini"
    ini.write_text(example_ini_text() + "\n[print-alignment-info-in-n-best]\ntrue\n", encoding="utf-8")
    assert load_model(ini).print_alignment and not load_model().print_alignment
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("das muss\n".encode()), encoding="utf-8"))
    assert main(["decode", "-f", str(ini), "--format", "nbest"]) == 0
    # The example table has no alignment field: only unknown words would show; none here.
    assert capsys.readouterr().out.rstrip("\n").endswith("|||")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("das xyz\n".encode()), encoding="utf-8"))
    assert main(["decode", "-f", str(ini)]) == 0
    # The unknown "xyz" (source 1) is aligned to itself, wherever it lands in the target.
    translation, alignment = capsys.readouterr().out.strip().split(" ||| ")
    assert alignment == f"1-{translation.split().index('xyz')}"


def test_json_nbest_entries_carry_their_alignment(table, tmp_path, capsys, monkeypatch):
    # Each n-best entry has its own alignment: "a b" read as one pair (0-1 1-0 1-2) or as
    # "a" + "b" (0-0 only: "b" has an empty alignment field).
    (tmp_path / "lm").write_text(arpa_text([f"-1.0\t{w}" for w in ["<s>", "</s>", "<unk>", "x", "y", "z", "w", "v"]]))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"a b\n"), encoding="utf-8"))
    args = ["decode", "--phrase-table", str(table.path), "--lm", str(tmp_path / "lm"), "--method", "exhaustive"]
    assert main([*args, "--format", "json", "--nbest", "4", "--print-alignment-info"]) == 0
    obj = json.loads(capsys.readouterr().out)
    by_translation = {e["translation"]: e["alignment"] for e in obj["nbest"]}
    assert by_translation["x y z"] == [[0, 1], [1, 0], [1, 2]]
    assert by_translation["x y"] == [[0, 0]]
    assert by_translation["y x"] == [[0, 1]]  # "b" first in the target, "a" (source 0) at target 1
    assert obj["alignment"] == obj["nbest"][0]["alignment"]
