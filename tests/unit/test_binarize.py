"""``fstdecode binarize`` (fstdecode/model/binarize.py) and the loaders of its files.

Checks, against the text model as the oracle:

* identity: ``decode --format json`` of the text model, of DIR/moses.ini and of the text model
  with ``--filter`` are the same but for "stats", by the stack decoder and by exact search,
  under two weight settings that give different outputs, and with ``--table-limit 3`` (a limit
  applied at lookup, not at build);
* DIR/moses.ini keeps every feature's name, kind and weight and the distortion limit, its
  binarized paths pointing into DIR; an old-format moses.ini binarizes too; a KenLM binary LM
  is referenced as it is, not copied;
* the CLI's refusals and failures, each exit status 2 with one line "fstdecode: error: ...":
  an existing DIR (untouched) without --force, a failure part way (no DIR, no temporary folder
  left), an already-binarized model, a source changed since the build (a moved-away one is fine);
* corrupt files: every sampled truncation and single-byte change of phrase-table.bin,
  reordering-table.bin and lm.bin either loads and decodes or raises the loader's error, one
  line naming the file; never a crash or another exception;
* pickles: a filtered model of DIR/moses.ini decodes the same after a round trip, and a
  ``_core.BinaryTable`` pickles as its path.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import random
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fstdecode import Decoder, load_model
from fstdecode._native import core as _core
from fstdecode.cli import output
from fstdecode.cli.main import main
from fstdecode.io.arpa import ArpaError
from fstdecode.io.binarized import CHECKSUMS_FILE, write_checksums
from fstdecode.io.moses_ini import load_moses_ini
from fstdecode.io.phrase_table import PhraseTableError, load_phrase_table
from fstdecode.io.reordering_table import ReorderingTableError, load_reordering_table
from fstdecode.io.table_filter import SourceFilter
from fstdecode.model.binarize import BinarizeError, BinarizeOptions, binarize
from fstdecode.model.model import ModelError
from scripts import make_big_model

from shared import arpa_text, data_path, examples, run_cli

FILES = ("phrase-table.bin", "reordering-table.bin", "lm.bin")
#: The error each loader raises for its binarized file.
LOADER_ERRORS = {"phrase-table.bin": PhraseTableError, "reordering-table.bin": ReorderingTableError, "lm.bin": ArpaError}

# ---------------------------------------------------------------------------------------------
# Models

#: A tiny model: a phrase table with alignments, an msd-bidirectional-fe reordering table (one
#: source's rows missing, as real tables may have) and a bigram ARPA LM.
TINY_PHRASES = """\
das ||| the ||| 0.6 0.5 0.4 0.3 ||| 0-0
das ||| this ||| 0.3 0.2 0.4 0.3 ||| 0-0
haus ||| house ||| 0.8 0.7 0.6 0.5 ||| 0-0
ist klein ||| is small ||| 0.7 0.6 0.5 0.4 ||| 0-0 1-1
klein ||| small ||| 0.5 0.5 0.5 0.5 ||| 0-0
"""
TINY_REORDERING = """\
das ||| the ||| 0.5 0.3 0.2 0.6 0.2 0.2
das ||| this ||| 0.4 0.3 0.3 0.5 0.3 0.2
haus ||| house ||| 0.7 0.2 0.1 0.6 0.2 0.2
ist klein ||| is small ||| 0.6 0.2 0.2 0.5 0.3 0.2
"""
TINY_LM = arpa_text(
    ["-99\t<s>\t-0.5", "-1.0\t</s>", "-1.2\tthe\t-0.3", "-1.5\tthis\t-0.3", "-1.1\thouse\t-0.2",
     "-1.4\tis\t-0.2", "-1.3\tsmall\t-0.2", "-2.0\t<unk>"],
    ["-0.3\t<s> the", "-0.4\tthe house", "-0.3\thouse is", "-0.2\tis small", "-0.1\tsmall </s>"],
)
TINY_FEATURES = """\
[feature]
UnknownWordPenalty
WordPenalty
PhrasePenalty
PhraseDictionaryMemory name=TranslationModel0 num-features=4 path=pt table-limit=20
LexicalReordering name=LexicalReordering0 num-features=6 type=msd-bidirectional-fe path=rt
Distortion
KENLM name=LM0 path={lm} order=2
"""
TINY_WEIGHTS = """
[weight]
UnknownWordPenalty0= 1
WordPenalty0= -1
PhrasePenalty0= 0.2
TranslationModel0= 0.2 0.2 0.2 0.2
LexicalReordering0= 0.3 0.3 0.3 0.3 0.3 0.3
Distortion0= 0.3
LM0= 0.5

[distortion-limit]
4

[print-alignment-info]
true
"""
#: The tiny model in the old format, as Moses still reads it.
TINY_OLD = """\
[ttable-file]
0 0 0 4 pt

[ttable-limit]
20

[lmodel-file]
8 0 2 lm

[distortion-file]
0-0 msd-bidirectional-fe 6 rt

[distortion-limit]
4

[weight-d]
0.3
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

[weight-w]
-1

[weight-u]
1

[weight-p]
0.2
"""
#: Inputs of the tiny model: known phrases, a reordering, an unknown word.
TINY_INPUT = ["das haus ist klein", "klein das haus", "das xyz haus", "ist klein"]


def make_tiny(folder: Path, lm: str = "lm") -> Path:
    """The tiny model's files in ``folder`` (``lm``: the KENLM path); its moses.ini."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pt").write_text(TINY_PHRASES, encoding="utf-8")
    (folder / "rt").write_text(TINY_REORDERING, encoding="utf-8")
    (folder / "lm").write_text(TINY_LM, encoding="utf-8")
    ini = folder / "moses.ini"
    ini.write_text(TINY_FEATURES.format(lm=lm) + TINY_WEIGHTS, encoding="utf-8")
    return ini


def build(ini: Path, out: Path, **options) -> Path:
    binarize(BinarizeOptions(str(ini), str(out), **options))
    return out


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """scripts/make_big_model.py's small model (20,000 pairs, wbe-msd-bidirectional-fe-allff
    reordering, 5-gram ARPA LM): a model the size of which exercises the hashes."""
    folder = tmp_path_factory.mktemp("big") / "model"
    assert make_big_model.main(["--out", str(folder), "--preset", "small", "--lm-tool", "builtin"]) == 0
    return folder


@pytest.fixture(scope="module")
def big_bin(big, tmp_path_factory) -> Path:
    return build(big / "moses.ini", tmp_path_factory.mktemp("big-bin") / "bin")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """The tiny model's folder (text files and moses.ini) with its binarized model in ./bin."""
    folder = tmp_path_factory.mktemp("tiny")
    build(make_tiny(folder), folder / "bin")
    return folder


def decode_cli(args: list[str], lines: list[str], capsys, monkeypatch) -> list[dict]:
    """``fstdecode decode ARGS --format json`` in this process: each line's object, "stats" removed."""
    data = ("\n".join(lines) + "\n").encode("utf-8")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    capsys.readouterr()
    assert main(["-q", "decode", *args, "--format", "json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == len(lines)
    for row in rows:
        del row["stats"]
    return rows


def decode_all(ini: Path, lines: list[str], method: str = "stack", filtered: bool = False, **options) -> list[str]:
    """Each line's JSON output (alignment included) by a Decoder of ``load_model(ini)`` (``filtered``:
    with a SourceFilter of ``lines``, so binarized tables are looked up by hash), "stats" removed."""
    keep = SourceFilter([line.split() for line in lines]) if filtered else None
    decoder = Decoder(load_model(ini, source_vocabulary=keep), method, **options)
    return [strip_stats(output.json_line(decoder.decode(line, i), alignment=True)) for i, line in enumerate(lines)]


def strip_stats(line: str) -> str:
    row = json.loads(line)
    del row["stats"]
    return json.dumps(row, sort_keys=True)


def one_line_error(proc, *fragments: str) -> str:
    """``proc`` exited 2 with a single stderr line "fstdecode: error: ..." holding ``fragments``."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fstdecode: error: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder`` with its bytes and mtime."""
    return {str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------------------------------
# 1. The binarized model decodes as the text model

#: Two weight settings: the ini's, and others for every feature family, so that a binarized
#: file that kept the wrong scores (or order of pairs, for the table limit) shows.
OTHER_WEIGHTS = ["--weight", "lm=0.3", "--weight", "tm=0.5,0.05,0.3,0.02", "--weight", "distortion=0.9",
                 "--weight", "lr=0.05,0.6,0.1,0.4,0.05,0.6", "--weight", "word=0.5"]


def identity_outputs(big: Path, big_bin: Path, extra: list[str], lines: list[str], capsys, monkeypatch) -> list[dict]:
    """The decode of the text model (unfiltered), the binarized one and the filtered text one: equal."""
    text = decode_cli(["-f", str(big / "moses.ini"), "--no-filter", *extra], lines, capsys, monkeypatch)
    binary = decode_cli(["-f", str(big_bin / "moses.ini"), *extra], lines, capsys, monkeypatch)
    assert binary == text
    filtered = decode_cli(["-f", str(big / "moses.ini"), "--filter", *extra], lines, capsys, monkeypatch)
    assert filtered == text
    return text


@pytest.mark.parametrize(
    "method",
    [
        # the stack decoder on the whole sentences (15-35 words)
        pytest.param(["--method", "stack"], id="stack"),
        # exact A* search, on the first 8 words of each (a small budget: the best found, the same in both)
        pytest.param(["--method", "exact", "--max-states", "3000"], id="exact", marks=pytest.mark.slow),
    ],
)
@pytest.mark.slow
def test_binarized_decodes_as_text_under_two_weight_settings(big, big_bin, method, capsys, monkeypatch):
    lines = (big / "input.txt").read_text(encoding="utf-8").splitlines()
    if method[1] == "exact":
        lines = [" ".join(line.split()[:8]) for line in lines]
    default = identity_outputs(big, big_bin, method, lines, capsys, monkeypatch)
    other = identity_outputs(big, big_bin, method + OTHER_WEIGHTS, lines, capsys, monkeypatch)
    # The check is not vacuous: the weights change the translations, not only the scores; exact
    # search proves its results optimal (so equal outputs are equal models' optima).
    assert [r["translation"] for r in default] != [r["translation"] for r in other]
    assert all(r["translation"] for r in default)
    if method[1] == "exact":
        assert all(r["optimal"] for r in default)


@pytest.mark.slow  # three more decodes of the generated model
def test_table_limit_is_applied_at_lookup(big, big_bin, capsys, monkeypatch):
    lines = (big / "input.txt").read_text(encoding="utf-8").splitlines()
    limited = identity_outputs(big, big_bin, ["--method", "stack", "--table-limit", "3"], lines, capsys, monkeypatch)
    # The ini's table-limit is 20: 3 must change some translation, else the build could have cut.
    full = decode_cli(["-f", str(big_bin / "moses.ini"), "--method", "stack"], lines, capsys, monkeypatch)
    assert [r["translation"] for r in limited] != [r["translation"] for r in full]
    # No limit at build: the binarized table holds every pair of the text file.
    table = _core.BinaryTable(str(big_bin / "phrase-table.bin"))
    pairs = sum(1 for line in (big / "phrase-table").read_text(encoding="utf-8").splitlines() if line)
    assert table.entries == pairs and table.kind == "phrases"


def test_tiny_binarized_decodes_as_text_with_alignments(tiny):
    # Alignments, an unknown word and the reordering rows, through the Decoder and the JSON output.
    want = decode_all(tiny / "moses.ini", TINY_INPUT)
    assert decode_all(tiny / "bin" / "moses.ini", TINY_INPUT) == want
    assert decode_all(tiny / "bin" / "moses.ini", TINY_INPUT, filtered=True) == want
    assert '"alignment": [[0, 0], [1, 1]' in decode_all(tiny / "bin" / "moses.ini", TINY_INPUT)[0]


# The stores a lookup gives against the text reader's, score for score bit for bit, on random
# tables whose scores are every kind of number: the short decimals of real tables (each a decimal
# code), 17-digit doubles, subnormals, huge values, zeros and the floor (the codes' escape and
# the transforms' edges), in every score format.

SOURCES = ["u", "v", "w", "x", "\u00fc"]
TARGETS = ["a", "b", "c", "\u00e9"]
#: Numbers that are not short decimals, or that meet the readers' transforms at their edges.
EDGE_NUMBERS = {
    "prob": ["0", "1", "1e-300", "3e-45", "5e-324", "1e-320", "1e300", "-0", "0.1000000000000000055511151231257827",
             "3.7200759760208356e-44", "3.720075976020836e-44"],  # around e^-100, the floor
    "ln": ["0", "-0", "-inf", "-100", "-101", "-99.99999999999999", "1e300", "-1e-320", "2.5"],
    "log10": ["0", "-0", "-inf", "-43.42944819032518", "-44", "-43.4", "1e300", "-1e300", "2.5"],
}


def short_decimal(m: int, k: int, sign: str) -> str:
    text = str(m).rjust(k + 1, "0")
    return sign + (text[: len(text) - k] + "." + text[len(text) - k:] if k else text)


def score_token(score_format: str):
    sign = st.just("") if score_format == "prob" else st.sampled_from(["", "-"])
    decimal = st.builds(short_decimal, st.integers(0, 10**9), st.integers(0, 12), sign)
    six_digits = st.builds(short_decimal, st.integers(0, 10**6), st.just(6), sign)  # as real tables
    double = st.floats(0 if score_format == "prob" else None, 1e6, allow_nan=False, allow_infinity=False).map(repr)
    return st.one_of(six_digits, decimal, double, st.sampled_from(EDGE_NUMBERS[score_format]))


@st.composite
def random_table(draw, score_format: str, reordering: bool) -> tuple[list[str], int]:
    """Lines grouped by source (a source's lines may also recur later), and the score count."""
    num_scores = draw(st.integers(1, 6))
    lines = []
    for _ in range(draw(st.integers(1, 30))):
        source = draw(st.lists(st.sampled_from(SOURCES), min_size=1, max_size=3))
        target = draw(st.lists(st.sampled_from(TARGETS), min_size=1, max_size=3))
        scores = draw(st.lists(score_token(score_format), min_size=num_scores, max_size=num_scores))
        line = f"{' '.join(source)} ||| {' '.join(target)} ||| {' '.join(scores)}"
        if not reordering and draw(st.booleans()):
            points = draw(st.lists(st.tuples(st.integers(0, len(source) - 1), st.integers(0, len(target) - 1)), max_size=4))
            line += " ||| " + " ".join(f"{i}-{j}" for i, j in points)
        lines.append(line)
    return lines, num_scores


def score_bits(scores) -> bytes:
    return struct.pack(f"={len(scores)}d", *scores)


def same_phrase_stores(got, want) -> None:
    assert (got.sources, got.pairs, got.num_scores, got.max_source_length) == (
        want.sources, want.pairs, want.num_scores, want.max_source_length)
    for h in range(want.sources):
        assert got.source(h) == want.source(h)
        assert [(t, score_bits(s), a) for t, s, a in got.pairs_of(h)] == [
            (t, score_bits(s), a) for t, s, a in want.pairs_of(h)]


lossless = settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
@lossless
@given(st.data(), st.sampled_from(["prob", "ln", "log10"]))
def test_phrase_lookups_give_the_text_readers_store_bit_for_bit(tmp_path, data, score_format):
    lines, _ = data.draw(random_table(score_format, reordering=False))
    text = tmp_path / "pt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    binary = tmp_path / "pt.bin"
    _core.write_binary_table(load_phrase_table(text, score_format=score_format).store, str(text), 0, 0, str(binary))
    table = _core.BinaryTable(str(binary))
    same_phrase_stores(table.phrases(None, None), load_phrase_table(text, score_format=score_format).store)
    sentences = data.draw(st.lists(st.lists(st.sampled_from(SOURCES + ["y"]), max_size=6), max_size=3))
    keep = SourceFilter(sentences)
    same_phrase_stores(table.phrases(keep.native, None),
                       load_phrase_table(text, score_format=score_format, vocabulary=SourceFilter(sentences)).store)


@lossless
@given(st.data(), st.booleans())
def test_reordering_lookups_give_the_text_readers_rows_bit_for_bit(tmp_path, data, with_target):
    lines, _ = data.draw(random_table("prob", reordering=True))
    if not with_target:
        lines = [line.split(" ||| ")[0] + " ||| " + line.split(" ||| ")[2] for line in lines]
    text = tmp_path / "rt"
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    binary = tmp_path / "rt.bin"
    store = load_reordering_table(text, conditioned_on_target=with_target).store
    _core.write_binary_table(store, str(text), 0, 0, str(binary))
    sentences = data.draw(st.lists(st.lists(st.sampled_from(SOURCES + ["y"]), max_size=6), max_size=3))
    for keep in (None, SourceFilter(sentences)):
        got = _core.BinaryTable(str(binary)).reordering(None if keep is None else keep.native, None)
        want = load_reordering_table(text, conditioned_on_target=with_target, vocabulary=keep).store
        assert len(got) == len(want)
        for line in lines:
            fields = line.split(" ||| ")
            source, target = fields[0].split(), fields[1].split() if with_target else []
            row, expected = got.lookup(source, target), want.lookup(source, target)
            assert (row is None) == (expected is None)
            if row is not None:
                assert score_bits(row) == score_bits(expected)


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_the_tables_are_about_the_size_of_their_text_gzipped(big, big_bin):
    # Issue 23: format 1's tables were 2.2 times their text gzipped (-1) on the full-size model
    # (2.5 times here); format 2's are 0.85 times there, and under 1.25 times on this small model,
    # whose 5.5 pairs a source leave the per-source index a larger share.
    for text, binary in (("phrase-table", "phrase-table.bin"),
                         ("reordering-table.wbe-msd-bidirectional-fe", "reordering-table.bin")):
        gzipped = len(gzip.compress((big / text).read_bytes(), compresslevel=1))
        assert (big_bin / binary).stat().st_size < 1.25 * gzipped, text


# ---------------------------------------------------------------------------------------------
# 2. DIR/moses.ini


def features_of(ini: Path) -> tuple:
    cfg = load_moses_ini(ini)
    return [(f.name, f.kind) for f in cfg.features], dict(cfg.weights), cfg.distortion_limit


def test_ini_keeps_every_feature_weight_and_the_distortion_limit(big, big_bin):
    assert features_of(big_bin / "moses.ini") == features_of(big / "moses.ini")
    old, new = load_moses_ini(big / "moses.ini"), load_moses_ini(big_bin / "moses.ini")
    assert new.phrase_table().path == str(big_bin / "phrase-table.bin")
    assert new.lexical_reordering().path == str(big_bin / "reordering-table.bin")
    assert new.lm().path == str(big_bin / "lm.bin")
    # Every other argument as it was (table-limit, type, order, num-features, factors).
    for a, b in zip(old.features, new.features):
        assert {k: v for k, v in a.args.items() if k not in ("path", "name")} == {
            k: v for k, v in b.args.items() if k not in ("path", "name")}
    assert sorted(p.name for p in big_bin.iterdir()) == sorted([*FILES, "moses.ini", CHECKSUMS_FILE])


def test_old_format_ini_binarizes_and_decodes_the_same(tmp_path):
    make_tiny(tmp_path)
    old = tmp_path / "old.ini"
    old.write_text(TINY_OLD, encoding="utf-8")
    assert load_moses_ini(old).old_format
    build(old, tmp_path / "bin")
    ini = tmp_path / "bin" / "moses.ini"
    assert not load_moses_ini(ini).old_format
    assert features_of(ini) == features_of(old)
    assert load_moses_ini(ini).lexical_reordering().path == str(tmp_path / "bin" / "reordering-table.bin")
    assert decode_all(ini, TINY_INPUT) == decode_all(old, TINY_INPUT)
    # ... which is the new-format tiny model's output: the conversion lost nothing.
    assert decode_all(ini, TINY_INPUT) == decode_all(tmp_path / "moses.ini", TINY_INPUT)


def test_kenlm_binary_lm_is_referenced_as_it_is(tmp_path):
    binlm = data_path("moses-lexreo-europarl-fr-en", "europarl.probing.binlm")
    ini = make_tiny(tmp_path, lm=str(binlm))
    build(ini, tmp_path / "bin")
    assert sorted(p.name for p in (tmp_path / "bin").iterdir()) == [
        CHECKSUMS_FILE, "moses.ini", "phrase-table.bin", "reordering-table.bin"]
    assert load_moses_ini(tmp_path / "bin" / "moses.ini").lm().path == str(binlm)
    assert decode_all(tmp_path / "bin" / "moses.ini", TINY_INPUT) == decode_all(ini, TINY_INPUT)


# ---------------------------------------------------------------------------------------------
# 3. The CLI: refusals, failures, stale and moved sources


def test_existing_dir_is_refused_without_force_and_replaced_with_it(tmp_path):
    ini = make_tiny(tmp_path / "model")
    out = build(ini, tmp_path / "out")
    (out / "phrase-table.bin").write_bytes(b"stale")
    before = snapshot(out)
    proc = run_cli(["binarize", "-f", str(ini), "-o", str(out)])
    one_line_error(proc, str(out), "exists; pass --force to replace it")
    assert snapshot(out) == before
    proc = run_cli(["binarize", "-f", str(ini), "-o", str(out), "--force"])
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILES, "moses.ini", CHECKSUMS_FILE])
    assert (out / "phrase-table.bin").read_bytes() != b"stale"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "out"]  # nothing set aside is left
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_cli(["binarize", "-f", str(ini), "-o", str(empty), "--force"])
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in empty.iterdir()) == sorted([*FILES, "moses.ini", CHECKSUMS_FILE])


@pytest.mark.parametrize("kind", ["other files", "a file", "the model itself", "the model's parent", "the current folder"])
def test_force_replaces_only_an_empty_folder_or_a_binarized_model(tmp_path, kind):
    # --force renames DIR aside and deletes it: a folder of other files, or one holding the model
    # being binarized, would be lost.
    ini = make_tiny(tmp_path / "parent" / "model")
    target = {
        "other files": tmp_path / "other",
        "a file": tmp_path / "file.txt",
        "the model itself": ini.parent,
        "the model's parent": ini.parent.parent,
        "the current folder": Path("."),
    }[kind]
    if kind == "other files":
        target.mkdir()
        (target / "keep-me").write_text("not a model\n")
    elif kind == "a file":
        target.write_text("not a model\n")
    before = snapshot(tmp_path)
    proc = run_cli(["binarize", "-f", str(ini), "-o", str(target), "--force"], cwd=tmp_path / "parent")
    one_line_error(proc, str(target), "neither empty nor a model fstdecode binarize wrote")
    assert snapshot(tmp_path) == before


def test_an_output_folder_holding_a_file_the_model_reads_is_refused(tmp_path):
    # A binarized model's folder may be replaced, but not while the model being binarized reads a
    # file in it: --force would delete it.
    ini = make_tiny(tmp_path / "model")
    out = build(ini, tmp_path / "out")
    shutil.move(tmp_path / "model" / "pt", out / "pt")
    ini.write_text(ini.read_text(encoding="utf-8").replace("path=pt", f"path={out / 'pt'}"), encoding="utf-8")
    before = snapshot(out)
    proc = run_cli(["binarize", "-f", str(ini), "-o", str(out), "--force"])
    one_line_error(proc, str(out), f"holds {out / 'pt'}, which the model reads")
    assert snapshot(out) == before


def test_an_empty_output_path_is_refused(tmp_path):
    ini = make_tiny(tmp_path / "model")
    before = snapshot(tmp_path)
    proc = run_cli(["binarize", "-f", str(ini), "-o", "", "--force"], cwd=tmp_path / "model")
    one_line_error(proc, "the output folder's path (-o) is empty")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "broken, line",
    [
        # the first file read: nothing written yet
        ("pt", "das ||| the ||| 0.6 0.5 zero 0.3 ||| 0-0\n"),
        # the last one: both tables are already written into the temporary folder
        ("lm", "\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0\t<s>\n\n\\end\\\n"),
    ],
)
def test_failure_part_way_leaves_no_dir_and_no_temporary_folder(tmp_path, broken, line):
    ini = make_tiny(tmp_path / "model")
    path = tmp_path / "model" / broken
    path.write_text(line if broken == "lm" else path.read_text() + line, encoding="utf-8")
    proc = run_cli(["binarize", "-f", str(ini), "-o", str(tmp_path / "out")])
    one_line_error(proc, str(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    # With --force over an existing model, that model is left whole.
    good = build(make_tiny(tmp_path / "good"), tmp_path / "out")
    before = snapshot(good)
    proc = run_cli(["binarize", "-f", str(ini), "-o", str(good), "--force"])
    one_line_error(proc, str(path))
    assert snapshot(good) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good", "model", "out"]


def test_binarizing_a_binarized_model_is_refused(tiny, tmp_path):
    proc = run_cli(["binarize", "-f", str(tiny / "bin" / "moses.ini"), "-o", str(tmp_path / "again")])
    one_line_error(proc, str(tiny / "bin" / "phrase-table.bin"), "already a binarized table")
    assert list(tmp_path.iterdir()) == []
    # An ini naming only the LM image: refused too.
    ini = make_tiny(tmp_path / "m", lm=str(tiny / "bin" / "lm.bin"))
    with pytest.raises(BinarizeError, match="already an LM image"):
        build(ini, tmp_path / "out")


@pytest.mark.parametrize("source, binary", [("pt", "phrase-table.bin"), ("rt", "reordering-table.bin"), ("lm", "lm.bin")])
def test_a_source_changed_since_the_build_is_refused(tmp_path, source, binary):
    out = build(make_tiny(tmp_path / "model"), tmp_path / "bin")
    path = tmp_path / "model" / source
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    with pytest.raises(LOADER_ERRORS[binary]) as info:
        load_model(out / "moses.ini")
    assert str(info.value) == (
        f"{out / binary}: built from {path}, which has changed since (it was modified later); run fstdecode binarize again"
    )
    with path.open("a", encoding="utf-8") as f:
        f.write("\n")
    size = path.stat().st_size
    with pytest.raises(LOADER_ERRORS[binary]) as info:
        load_model(out / "moses.ini")
    assert str(info.value) == (
        f"{out / binary}: built from {path}, which has changed since (size {size - 1:,} -> {size:,} bytes); "
        "run fstdecode binarize again"
    )
    if source == "pt":
        proc = run_cli(["decode", "-f", str(out / "moses.ini")], "das haus\n")
        one_line_error(proc, str(out / binary), str(path), "has changed since", "run fstdecode binarize again")


def test_a_moved_source_is_fine(tmp_path):
    model = tmp_path / "model"
    out = build(make_tiny(model), tmp_path / "bin")
    want = decode_all(out / "moses.ini", TINY_INPUT)
    model.rename(tmp_path / "elsewhere")
    assert decode_all(out / "moses.ini", TINY_INPUT) == want
    proc = run_cli(["decode", "-f", str(out / "moses.ini")], "das haus ist klein\n")
    assert (proc.returncode, proc.stdout) == (0, "the house is small ||| 0-0 1-1 2-2 3-3\n"), proc.stderr


def test_a_moved_binarized_model_decodes_the_same(tmp_path):
    """DIR/moses.ini names its files as ${MODEL_DIR}/..., its own folder: DIR moves whole (and its
    sources may be gone)."""
    model = tmp_path / "model"
    out = build(make_tiny(model), tmp_path / "bin")
    want = decode_all(out / "moses.ini", TINY_INPUT)
    assert "${MODEL_DIR}/phrase-table.bin" in (out / "moses.ini").read_text(encoding="utf-8")
    out.rename(tmp_path / "moved")
    model.rename(tmp_path / "sources-gone")
    assert decode_all(tmp_path / "moved" / "moses.ini", TINY_INPUT) == want


# ---------------------------------------------------------------------------------------------
# 4. Corrupt files: a loader error or a decode, never a crash


@pytest.fixture
def corruptible(tiny, tmp_path) -> Path:
    """A copy of the tiny binarized model whose files a test may overwrite."""
    out = tmp_path / "bin"
    shutil.copytree(tiny / "bin", out)
    ini = out / "moses.ini"
    ini.write_text(ini.read_text(encoding="utf-8").replace(str(tiny / "bin"), str(out)), encoding="utf-8")
    return out


def rechecksum(folder: Path) -> None:
    """Record the checksums of ``folder``'s files as they are now, so that a load gets past the
    checksum to the reader's own checks (what a file damaged before binarize checksummed it, or
    made to match, would meet): the readers must hold on their own."""
    names = [line.split(" ", 3)[3] for line in (folder / CHECKSUMS_FILE).read_text(encoding="utf-8").splitlines()]
    write_checksums(str(folder), [name for name in names if (folder / name).exists()])


def load_and_decode(folder: Path, name: str, data: bytes) -> str:
    """Put ``data`` as ``folder/name`` (a new file: earlier models may still map the old one),
    its checksum re-recorded (:func:`rechecksum`), then load and decode; "ok", or the loader's
    error (one line naming the file), or the model's for a file cut inside the magic (no longer
    binarized, though the moses.ini says it is)."""
    path = folder / name
    tmp = folder / (name + ".new")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    rechecksum(folder)
    try:
        decode_all(folder / "moses.ini", TINY_INPUT, filtered=True)
        decode_all(folder / "moses.ini", TINY_INPUT)
    except (LOADER_ERRORS[name], ModelError) as err:
        message = str(err)
        assert message.startswith(f"{path}:") and "\n" not in message, message
        return "error"
    return "ok"


def truncations(size: int, step: int) -> list[int]:
    """Every ``step``-th length up to 300 (the headers), then ~50 evenly spaced up to ``size``."""
    return sorted({*range(0, min(300, size), step), *range(300, size, max(1, (size - 300) // 50))})


def byte_changes(data: bytes, count: int, seed: int) -> list[tuple[int, int]]:
    """``count`` (position, new value) pairs, each value differing from the byte it replaces."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        i, v = rng.randrange(len(data)), rng.randrange(256)
        if data[i] != v:
            out.append((i, v))
    return out


def sweep(folder: Path, name: str, step: int, changes: int) -> dict[str, int]:
    data = (folder / name).read_bytes()
    seen = {"ok": 0, "error": 0}
    for n in truncations(len(data), step):
        outcome = load_and_decode(folder, name, data[:n])
        # Under 6 bytes ("fstdec") the file no longer looks binarized, but the moses.ini binarize
        # wrote names it as binarized (the model's error); from 6 on it is a binarized file cut
        # short (the reader's).
        assert outcome == "error", f"{name} cut to {n} bytes loaded"
        seen[outcome] += 1
    for i, v in byte_changes(data, changes, seed=len(name)):
        seen[load_and_decode(folder, name, data[:i] + bytes([v]) + data[i + 1:])] += 1
    assert load_and_decode(folder, name, data) == "ok"
    return seen


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("n", [6, 10, 15])
def test_a_file_cut_inside_its_magic_is_named_as_cut_short(corruptible, name, n):
    """Not read as a text table or ARPA file (which would warn of an empty table or complain of
    its text): the binarized file's own one-line error."""
    path = corruptible / name
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data[:n])
    rechecksum(corruptible)
    with pytest.raises(LOADER_ERRORS[name], match="header is cut short") as info:
        decode_all(corruptible / "moses.ini", TINY_INPUT)
    assert str(info.value).startswith(f"{path}:") and "\n" not in str(info.value)


@pytest.mark.parametrize("name", FILES)
@pytest.mark.slow
def test_corrupt_files_give_the_loaders_error(corruptible, name):
    seen = sweep(corruptible, name, step=7, changes=40)
    assert seen["error"] > 0


@pytest.mark.slow  # about 2,000 loads and decodes
@pytest.mark.parametrize("name", FILES)
def test_every_sampled_corruption_gives_the_loaders_error_or_a_decode(corruptible, name):
    seen = sweep(corruptible, name, step=1, changes=300)
    # Both outcomes occur: a change to a score (or padding) loads, one to a header errs.
    assert seen["ok"] > 0 and seen["error"] > 0


#: Where the fields a lookup follows lie: the offset, in the header, of each section's begin
#: (binary_table.cpp's Header: 16 + 6 * 4 + 7 * 8 + 2 * 8 = 112 bytes before begin[]), and the
#: header's version field (after the magic and the byte-order marker).
SECTION_BEGIN = 112
VERSION_AT = 20
#: binary_table.cpp's sections (10 of them): the word bytes, the records' offsets, the records,
#: the alignment bytes.
S_WORD_BLOB, S_RECORD_OFF, S_RECORDS, S_ALIGN_BLOB, SECTIONS = 2, 5, 6, 9, 10
#: lm_image.cpp's Header: 16 + 6 * 4 + 3 * 8 + 2 * 8 = 80 bytes before begin[].
LM_SECTION_BEGIN = 80


def read_varint(data: bytes, at: int) -> tuple[int, int]:
    """The LEB128 varint at ``at`` and the position after it (the format's, read here)."""
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def record_fields(data: bytes, source: int) -> dict[str, int]:
    """Where the first fields of source ``source``'s record lie (binary_table.h's format): its
    first word id, its first target's first word id, and (a phrase table's) that pair's alignment id."""
    begins = struct.unpack_from(f"={SECTIONS}Q", data, SECTION_BEGIN)
    (start,) = struct.unpack_from("=Q", data, begins[S_RECORD_OFF] + 8 * source)
    at = begins[S_RECORDS] + start
    n, at = read_varint(data, at)
    fields = {"source word": at}
    for _ in range(n):
        _, at = read_varint(data, at)
    _, at = read_varint(data, at)  # the number of entries
    t, at = read_varint(data, at)
    assert t >= 1
    fields["target word"] = at
    for _ in range(t):
        _, at = read_varint(data, at)
    fields["alignment"] = at
    return fields


#: The largest varint (2^64 - 1, ten bytes): "id + 1" wraps to 0 in 64 bits.
HUGE = b"\xff" * 9 + b"\x01"


@pytest.mark.parametrize(
    "field",
    [
        # A word id of 2^64 - 1 (written over the id and the bytes after it): "id + 1" wrapped to
        # 0 would pass a range check and read past the offsets (a segfault); a source's and a target's.
        "source word",
        "target word",
        # An alignment id of 2^64 - 1: the same wrap.
        "alignment",
    ],
)
def test_largest_ids_are_out_of_range_not_a_crash(corruptible, field):
    good = (corruptible / "phrase-table.bin").read_bytes()
    at = record_fields(good, 0)[field]
    assert load_and_decode(corruptible, "phrase-table.bin", good[:at] + HUGE + good[at + len(HUGE):]) == "error"
    if field != "alignment":
        assert load_and_decode(corruptible, "phrase-table.bin", good) == "ok"
        rgood = (corruptible / "reordering-table.bin").read_bytes()
        at = record_fields(rgood, 0)[field]
        assert load_and_decode(corruptible, "reordering-table.bin", rgood[:at] + HUGE + rgood[at + len(HUGE):]) == "error"


@pytest.mark.parametrize("name", ["phrase-table.bin", "reordering-table.bin"])
@pytest.mark.slow
def test_every_byte_of_the_records_changed_gives_the_loaders_error_or_a_decode(corruptible, name):
    # The records are varint streams read front to back: each byte (about 45 a table) set to a
    # varint's edge values (0, a last byte of 127, a continuation 0x80, 0xff), a load and decode
    # each; a changed count or length shifts every later field.
    data = (corruptible / name).read_bytes()
    begins = struct.unpack_from(f"={SECTIONS}Q", data, SECTION_BEGIN)
    ends = struct.unpack_from(f"={SECTIONS}Q", data, SECTION_BEGIN + 8 * SECTIONS)
    seen = {"ok": 0, "error": 0}
    for i in range(begins[S_RECORDS], ends[S_RECORDS]):
        for v in {0x00, 0x7F, 0x80, 0xFF} - {data[i]}:
            seen[load_and_decode(corruptible, name, data[:i] + bytes([v]) + data[i + 1:])] += 1
    assert seen["ok"] > 0 and seen["error"] > 0  # a score changed decodes; a count changed errs


@pytest.mark.parametrize("name", ["phrase-table.bin", "reordering-table.bin"])
def test_a_version_1_table_is_refused_with_the_command_that_rebuilds_it(corruptible, name):
    data = bytearray((corruptible / name).read_bytes())
    assert struct.unpack_from("=I", data, VERSION_AT) == (_core.BINARY_TABLE_VERSION,) == (2,)
    struct.pack_into("=I", data, VERSION_AT, 1)
    (corruptible / name).write_bytes(bytes(data))
    rechecksum(corruptible)
    proc = run_cli(["decode", "-f", str(corruptible / "moses.ini")], "das haus\n")
    one_line_error(proc, str(corruptible / name), "format version 1", "reads version 2", "run fstdecode binarize again")


@pytest.mark.parametrize(
    "what, change",
    [
        # the stamp's path (the first section) with a byte that is not UTF-8, then with a NUL:
        # a UnicodeDecodeError, then os.stat's "embedded null byte", escaped the loaders
        ("path not UTF-8", lambda data, begin: data[:begin] + b"\xff" + data[begin + 1:]),
        ("path with NUL", lambda data, begin: data[:begin + 2] + b"\0" + data[begin + 3:]),
    ],
)
@pytest.mark.parametrize("name", FILES)
def test_a_corrupt_source_path_is_the_loaders_error(corruptible, name, what, change):
    data = (corruptible / name).read_bytes()
    (begin,) = struct.unpack_from("=Q", data, SECTION_BEGIN if name != "lm.bin" else LM_SECTION_BEGIN)
    assert load_and_decode(corruptible, name, change(data, begin)) == "error"


def test_a_corrupt_word_alignment_or_repeated_source_is_the_loaders_error(corruptible, tiny):
    data = (corruptible / "phrase-table.bin").read_bytes()
    begins = struct.unpack_from(f"={SECTIONS}Q", data, SECTION_BEGIN)
    # A word's first byte not UTF-8: Python could not decode the pair (a SystemError).
    blob = begins[S_WORD_BLOB]
    assert load_and_decode(corruptible, "phrase-table.bin", data[:blob] + b"\xff" + data[blob + 1:]) == "error"
    # An alignment "0-0" (the most frequent, so the first) made "0-\x7f" or "0-5": int() failed,
    # or the point lay outside the pair.
    align = begins[S_ALIGN_BLOB]
    assert data[align:align + 3] == b"0-0"
    for bad in (b"\x7f", b"5"):
        assert load_and_decode(corruptible, "phrase-table.bin", data[:align + 2] + bad + data[align + 3:]) == "error"
    # The second source's word id made the first's: two sources "das" (the native index refused it).
    first, second = record_fields(data, 0)["source word"], record_fields(data, 1)["source word"]
    assert data[first] != data[second] and data[first] < 0x80 and data[second] < 0x80  # one-byte ids
    assert load_and_decode(corruptible, "phrase-table.bin", data[:second] + data[first:first + 1] + data[second + 1:]) == "error"
    # An LM word not UTF-8 (the LM's vocabulary is Python strings too).
    lm = (corruptible / "lm.bin").read_bytes()
    (lm_blob,) = struct.unpack_from("=Q", lm, LM_SECTION_BEGIN + 8 * 2)
    assert load_and_decode(corruptible, "lm.bin", lm[:lm_blob] + b"\xff" + lm[lm_blob + 1:]) == "error"


@pytest.mark.parametrize("name", FILES)
def test_cli_on_corrupt_files_exits_2_with_one_line(corruptible, name):
    data = (corruptible / name).read_bytes()
    (corruptible / name).write_bytes(data[: len(data) // 2])
    rechecksum(corruptible)
    proc = run_cli(["decode", "-f", str(corruptible / "moses.ini")], "das haus\n")
    one_line_error(proc, str(corruptible / name), "corrupt or truncated", "run fstdecode binarize again")
    (corruptible / name).write_bytes(data[:100])
    rechecksum(corruptible)
    proc = run_cli(["decode", "-f", str(corruptible / "moses.ini")], "das haus\n")
    one_line_error(proc, str(corruptible / name))


# ---------------------------------------------------------------------------------------------
# 5. Pickles


def test_filtered_binarized_model_pickles_and_decodes_the_same(big, big_bin):
    lines = (big / "input.txt").read_text(encoding="utf-8").splitlines()[:3]
    model = load_model(big_bin / "moses.ini", source_vocabulary=SourceFilter([line.split() for line in lines]))
    again = pickle.loads(pickle.dumps(model))
    # The LM image pickles as its path (a worker maps the file; 14 MiB of tables are not copied).
    assert len(pickle.dumps(model.lm)) < 1000 < (big_bin / "lm.bin").stat().st_size
    want = [output.json_line(Decoder(model, "stack").decode(line, i)) for i, line in enumerate(lines)]
    got = [output.json_line(Decoder(again, "stack").decode(line, i)) for i, line in enumerate(lines)]
    assert list(map(strip_stats, got)) == list(map(strip_stats, want))
    text = Decoder(load_model(big / "moses.ini"), "stack")
    assert [strip_stats(output.json_line(text.decode(line, i))) for i, line in enumerate(lines)] == list(map(strip_stats, want))


@pytest.mark.parametrize("name", ["phrase-table.bin", "reordering-table.bin"])
def test_binary_table_pickles_as_its_path(big_bin, name):
    table = _core.BinaryTable(str(big_bin / name))
    data = pickle.dumps(table)
    assert len(data) < 500 < (big_bin / name).stat().st_size
    again = pickle.loads(data)
    assert (again.path, again.kind, again.num_scores, again.sources, again.entries, again.stamp) == (
        table.path, table.kind, table.num_scores, table.sources, table.entries, table.stamp)
    if name == "phrase-table.bin":  # the pairs of the text table's first source, looked up in both
        with open(table.stamp[0], encoding="utf-8") as f:
            keep = SourceFilter([f.readline().split(" ||| ")[0].split()])
        assert again.phrases(keep.native, None).pairs_of(0) == table.phrases(keep.native, None).pairs_of(0)


@pytest.mark.parametrize("name", ["phrase-table.bin", "reordering-table.bin", "lm.bin"])
@pytest.mark.parametrize("size", [0, 3, 5])
def test_a_binarized_file_cut_below_its_magic_is_an_error(tiny, tmp_path, name, size):
    # Cut to fewer bytes than the magic, a file no longer looks binarized: without the check it
    # read as an empty text table (every word copied through, exit 0).
    model = tmp_path / "model"
    shutil.copytree(tiny / "bin", model)
    path = model / name
    path.write_bytes(path.read_bytes()[:size])
    rechecksum(model)
    proc = run_cli(["decode", "-f", str(model / "moses.ini")], "das haus\n")
    one_line_error(proc, str(path), "not a binarized file", "run fstdecode binarize again")
