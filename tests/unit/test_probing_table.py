"""Moses' ProbingPT folders (native/probing_table.h, ``_core.ProbingTable``) and their wiring.

The oracle is each ProbingPT's text twin in ../shared/data/moses-regression (SOURCE.md), read by
the project's text reader through a SourceFilter that holds every source phrase of the twin:

* every source, with its pairs in file order: the same targets and alignments, and the same
  scores at float32 precision. A ProbingPT keeps each score as a 32-bit float: the probability
  itself (log_prob 0), whose ln the reader takes in double, or max(ln p, -100) computed in float
  (log_prob 1). Rounding p to a float moves ln p by at most 2^-24 (absolute), and rounding an ln
  to a float by at most 2^-24 of it (relative), so a score is within 2^-23 (1 + |s|) of the text
  reader's double s, and exactly equal where the text has p = 1 (ln 0: CreateProbingPT writes
  1e-10, read back as 0) or p = 0 (-100);
* the reordering scores a pair carries (probing-withLexRO.v15, Moses2's form) against the text
  reordering table, likewise;
* refusals: each damaged copy (in tmp_path) of a folder gives a BinaryFormatError of one line
  naming the damaged file, at open or at the lookup that meets the damage, never a crash; the
  CLI exits 2 with that line and no traceback.
"""

from __future__ import annotations

import gzip
import os
import pickle
import random
import re
import shutil
import struct
from pathlib import Path

import pytest

from fstdecode._native import core as _core
from fstdecode.io.binarized import is_mapped_table, moses_table_kind, open_moses_table
from fstdecode.io.moses_ini import MosesIniError, load_moses_ini
from fstdecode.io.phrase_table import PhraseTableError, load_phrase_table
from fstdecode.io.reordering_table import ReorderingTableError, load_reordering_table
from fstdecode.io.table_filter import SourceFilter
from fstdecode.model.model import load_model, mapped_tables, refiltered
from shared import SHARED_DATA, run_cli

REGRESSION = SHARED_DATA / "moses-regression"
MODELS = REGRESSION / "models"
LEXREO = MODELS / "lexicalized-reordering"
needs_data = pytest.mark.skipif(not REGRESSION.is_dir(), reason="../shared/data/moses-regression is absent")

#: A score's bound (module docstring): float rounding of the probability, then of its ln.
TOLERANCE = 2.0**-23


def _close(text: float, probing: float) -> bool:
    return abs(text - probing) <= TOLERANCE * (1.0 + abs(text))


def _text_table(path: Path):
    """The whole text twin, as the text reader keeps it (table-limit 0: file order)."""
    return load_phrase_table(path)


def _filter_of(table) -> SourceFilter:
    """A filter holding each source phrase of ``table`` as a sentence of its own."""
    return SourceFilter(list(table.sources()))


def _assert_same_entries(text, probing_store) -> int:
    """Every source of ``text`` (a PhraseTable) against the ProbingPT's store for the same filter;
    the number of scores compared."""
    store = text.store
    assert probing_store.sources == store.sources and probing_store.pairs == store.pairs
    compared = 0
    for h in range(store.sources):
        source = store.source(h)
        assert probing_store.source(h) == source  # the same order: the text file's
        got, want = list(probing_store.pairs_of(h)), list(store.pairs_of(h))
        assert [(t, a) for t, _, a in got] == [(t, a) for t, _, a in want], source
        for (_, g, _), (_, w, _) in zip(got, want):
            assert all(_close(x, y) for x, y in zip(w, g)), (source, w, g)
            assert [x == 0.0 for x in w] == [y == 0.0 for y in g]  # p = 1 is exactly 0
            assert [x == -100.0 for x in w] == [y == -100.0 for y in g]
            compared += len(w)
    return compared


@needs_data
@pytest.mark.parametrize("folder", ["probing.v15", "probing-withLexRO.v15"])  # log_prob 0, and 1 with LexRO
def test_lexicalized_reordering_probing_matches_its_text_twin(folder):
    text = _text_table(LEXREO / "phrase-table.0-0.gz")
    table = _core.ProbingTable(str(LEXREO / folder))
    assert table.num_scores == text.num_scores == 5
    compared = _assert_same_entries(text, table.phrases(_filter_of(text).native, None))
    assert compared == 5 * 41915


@needs_data
def test_basic_surface_probing_matches_the_utf8_part_of_its_twin(tmp_path):
    """basic-surface-only's table is Latin-1 in part, which the text reader refuses; its sources
    whose every line is UTF-8 (376 of 468) are compared, from a copy of just those lines (and the
    ProbingPT asked for just those sources, by keep(): some of their n-grams are sources with a
    Latin-1 line, which the next test meets)."""
    lines: dict[bytes, list[bytes]] = {}
    for line in gzip.open(MODELS / "basic-surface-only" / "phrase-table.gz"):
        lines.setdefault(line.split(b" ||| ")[0], []).append(line)
    kept = [block for block in lines.values() if all(_utf8(line) for line in block)]
    assert len(kept) == 376
    twin = tmp_path / "phrase-table"
    twin.write_bytes(b"".join(line for block in kept for line in block))
    text = _text_table(twin)
    table = _core.ProbingTable(str(MODELS / "basic-surface-probing.v15"))
    assert (table.log_prob, table.num_lex_scores, table.sources) == (True, 0, 468)
    sources = set(text.sources())
    _assert_same_entries(text, table.phrases(_filter_of(text).native, lambda words: tuple(words) in sources))


def _utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@needs_data
def test_a_latin1_target_word_is_refused_when_met():
    """A pair whose target word is not UTF-8 is refused as the text reader refuses its line."""
    table = _core.ProbingTable(str(MODELS / "basic-surface-probing.v15"))
    with pytest.raises(_core.BinaryFormatError, match=r"TargetVocab\.dat: the target word of id \d+ is not UTF-8"):
        table.phrases(SourceFilter([["bei"]]).native, None)  # bei ||| d\xe9marches to, in the text twin


@needs_data
def test_reordering_scores_match_the_reordering_table():
    text = _text_table(LEXREO / "phrase-table.0-0.gz")
    keep = _filter_of(text)
    rows = load_reordering_table(LEXREO / "reordering-table.msd-bidirectional-fe.0.5.0-0.gz", vocabulary=keep)
    kept = load_reordering_table(LEXREO / "probing-withLexRO.v15", vocabulary=keep, property_index=0)
    assert kept.num_scores == rows.num_scores == 6 and len(kept) == len(rows) == 41915
    shifted = load_reordering_table(LEXREO / "probing-withLexRO.v15", vocabulary=keep, property_index=2)
    assert shifted.num_scores == 4
    for h in range(text.store.sources):
        source = text.store.source(h)
        for target, _, _ in text.store.pairs_of(h):
            want, got = rows.lookup(source, target), kept.lookup(source, target)
            assert all(_close(x, y) for x, y in zip(want, got)), (source, target, want, got)
            assert shifted.lookup(source, target) == got[2:]


@needs_data
def test_property_index_out_of_range_and_a_table_without_lex_scores():
    keep = SourceFilter([["monsieur"]])
    with pytest.raises(ReorderingTableError, match=r"property-index=6 but the ProbingPT holds 6 reordering score\(s\)"):
        load_reordering_table(LEXREO / "probing-withLexRO.v15", vocabulary=keep, property_index=6)
    with pytest.raises(ReorderingTableError, match=r"holds 0 reordering score\(s\) a pair"):
        load_reordering_table(LEXREO / "probing.v15", vocabulary=keep, property_index=0)


@needs_data
def test_a_probing_table_is_read_only_through_a_filter():
    table = _core.ProbingTable(str(LEXREO / "probing.v15"))
    with pytest.raises(_core.BinaryFormatError, match="holds no source phrases, only their hashes"):
        table.phrases(None, None)
    for vocabulary in (None, lambda source: True):  # a predicate cannot be asked of hashes either
        with pytest.raises(PhraseTableError, match=r"probing\.v15: a ProbingPT holds no source phrases.*--filter"):
            load_phrase_table(LEXREO / "probing.v15", vocabulary=vocabulary)
    empty = load_phrase_table(LEXREO / "probing.v15", vocabulary=SourceFilter(()))
    assert len(empty) == 0


@needs_data
def test_phrases_of_a_sentence_and_a_keep_predicate():
    """The n-grams of a sentence are looked up (not only whole sentences); keep() narrows them."""
    sentence = "monsieur le président , je".split()
    text = load_phrase_table(LEXREO / "phrase-table.0-0.gz", vocabulary=SourceFilter([sentence]))
    table = _core.ProbingTable(str(LEXREO / "probing.v15"))
    store = table.phrases(SourceFilter([sentence]).native, None)
    assert store.sources == text.store.sources > len(sentence)
    assert [store.source(h) for h in range(store.sources)] == list(text.sources())
    only = table.phrases(SourceFilter([sentence]).native, lambda words: len(words) == 1)
    assert sorted(only.source(h) for h in range(only.sources)) == sorted(s for s in text.sources() if len(s) == 1)
    unknown = table.phrases(SourceFilter([["zzz-not-a-word"]]).native, None)
    assert unknown.sources == 0


@needs_data
def test_score_format_and_num_features_are_checked():
    keep = SourceFilter([["monsieur"]])
    with pytest.raises(PhraseTableError, match="num-features=4, but the table holds 5 score"):
        load_phrase_table(LEXREO / "probing.v15", vocabulary=keep, num_features=4)
    with pytest.raises(PhraseTableError, match="score format 'log10' is for text tables"):
        load_phrase_table(LEXREO / "probing.v15", vocabulary=keep, score_format="log10")


@needs_data
def test_the_dispatch_and_pickling():
    folder = str(LEXREO / "probing.v15")
    assert moses_table_kind(folder) == "probing" and is_mapped_table(folder)
    assert moses_table_kind(str(LEXREO)) is None and moses_table_kind(str(LEXREO / "phrase-table.0-0.gz")) is None
    assert open_moses_table(str(LEXREO / "phrase-table.0-0.gz"), PhraseTableError) is None
    table = pickle.loads(pickle.dumps(_core.ProbingTable(folder)))
    assert table.path == folder and table.num_scores == 5


# --------------------------------------------------------------------------------------------
# moses.ini


def _ini(tmp_path: Path, table: str, reordering: str) -> Path:
    """The regression test's moses.ini with ${MODEL_PATH} filled in (SOURCE.md) and its ProbingPT
    and LexicalReordering lines replaced."""
    text = (REGRESSION / "tests" / "phrase.lexicalized-reordering-probing" / "moses.ini").read_text(encoding="utf-8")
    text = text.replace("${MODEL_PATH}", str(MODELS))
    lines = []
    for line in text.splitlines():
        if line.startswith("ProbingPT "):
            line = table
        elif line.startswith("LexicalReordering "):
            line = reordering
        lines.append(line)
    ini = tmp_path / "moses.ini"
    ini.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ini


_PT = "ProbingPT name=pt0 input-factor=0 output-factor=0 path={} num-features=5 table-limit=20"
_LR = "LexicalReordering type=msd-bidirectional-fe input-factor=0 output-factor=0 num-features=6 "


@needs_data
def test_moses_ini_lines_are_read(tmp_path):
    ini = _ini(tmp_path, _PT.format(LEXREO / "probing-withLexRO.v15"), _LR + "property-index=0")
    cfg = load_moses_ini(ini)
    assert [f.kind for f in cfg.phrase_tables()] == ["ProbingPT"]
    assert cfg.lexical_reordering().path is None and cfg.lexical_reordering().args["property-index"] == "0"
    for bad, match in (
        (_LR, "needs path=... .* or property-index=K"),
        (_LR + f"property-index=0 path={LEXREO / 'ro.minlexr'}", "not both"),
        (_LR + "property-index=-1", "property-index='-1' must be an integer >= 0"),
    ):
        with pytest.raises(MosesIniError, match=match):
            load_moses_ini(_ini(tmp_path, _PT.format(LEXREO / "probing-withLexRO.v15"), bad))
    with pytest.raises(MosesIniError, match="load='eager' is not one of Moses'"):
        load_moses_ini(_ini(tmp_path, _PT.format(LEXREO / "probing.v15") + " load=eager", _LR + "property-index=0"))


@needs_data
def test_a_filtered_model_refilters_with_its_mapped_table(tmp_path):
    """The server's and the batches' way: the ProbingPT (phrases and reordering rows) mapped once."""
    ini = _ini(tmp_path, _PT.format(LEXREO / "probing-withLexRO.v15"), _LR + "property-index=0")
    first = SourceFilter([["monsieur", "le", "président"]])
    model = load_model(config=ini, source_vocabulary=first)
    assert model.reordering.table.property_index == 0 and len(model.reordering.table) > 0
    mapped = mapped_tables(model)
    assert list(mapped) == [str(LEXREO / "probing-withLexRO.v15")]
    assert isinstance(mapped[str(LEXREO / "probing-withLexRO.v15")], _core.ProbingTable)
    second = refiltered(model, SourceFilter([["je", "vous", "remercie"]]), mapped=mapped)
    assert ("je", "vous", "remercie") in second.table and ("président",) not in second.table
    assert second.reordering.table.lookup(("je", "vous", "remercie"), ("thank", "you", "very", "much")) is not None


@needs_data
def test_binarize_keeps_the_probing_table_and_serving_maps_it(tmp_path):
    """binarize writes the text reordering table and the LM, names the ProbingPT as it is; the
    model is then all mapped (served per sentence) and decodes as the original."""
    from fstdecode.model.model import binarized_tables

    ini = _ini(tmp_path, _PT.format(LEXREO / "probing.v15"),
               _LR + f"path={LEXREO / 'reordering-table.msd-bidirectional-fe.0.5.0-0.gz'}")
    assert not binarized_tables(ini, None)
    proc = run_cli(["binarize", "-f", str(ini), "-o", str(tmp_path / "bin")], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(tmp_path / "bin")) == ["checksums.crc32c", "lm.bin", "moses.ini", "reordering-table.bin"]
    assert binarized_tables(tmp_path / "bin" / "moses.ini", None)
    model = load_model(config=tmp_path / "bin" / "moses.ini", source_vocabulary=SourceFilter(()))
    assert sorted(type(t).__name__ for t in mapped_tables(model).values()) == ["BinaryTable", "ProbingTable"]
    sentence = "monsieur le président , je vous remercie .\n"
    outputs = [run_cli(["moses", "-f", str(path)], sentence, cwd=tmp_path) for path in (ini, tmp_path / "bin" / "moses.ini")]
    assert outputs[0].returncode == outputs[1].returncode == 0 and outputs[0].stdout == outputs[1].stdout != ""


@needs_data
def test_property_index_needs_one_probing_table(tmp_path):
    from fstdecode.model.lexical_reordering import LexicalReorderingError

    ini = _ini(tmp_path, f"PhraseDictionaryMemory name=pt0 path={LEXREO / 'phrase-table.0-0.gz'} num-features=5",
               _LR + "property-index=0")
    with pytest.raises(LexicalReorderingError, match="the ini has 0 ProbingPT lines"):
        load_model(config=ini, source_vocabulary=SourceFilter([["monsieur"]]))


# --------------------------------------------------------------------------------------------
# Damaged copies


def _copy(tmp_path: Path, folder: str = "probing.v15") -> Path:
    target = tmp_path / folder
    shutil.copytree(LEXREO / folder, target)
    for name in os.listdir(target):
        os.chmod(target / name, 0o644)
    return target


def _lookup_all(folder: Path) -> None:
    """Opens ``folder`` and looks up every source of the twin (the damage may lie anywhere)."""
    text = _text_table(LEXREO / "phrase-table.0-0.gz")
    _core.ProbingTable(str(folder)).phrases(_filter_of(text).native, None)


def _one_line_error(folder: Path, name: str, match: str) -> None:
    with pytest.raises(_core.BinaryFormatError) as caught:
        _lookup_all(folder)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(folder / name)), message
    assert re.search(match, message), message


@needs_data
@pytest.mark.parametrize(
    "name, cut, match",
    [
        # each file cut short: the binary ones half way (mid-record, mid-bucket); the text ones in
        # a line, and at a line's end (a vocabulary then lacks some of its ids; a source
        # vocabulary cut there is not noticed: its words are only missing, as unknown words are)
        ("TargetColl.dat", "half", "runs past the end of the file|starts past the end|cannot hold"),
        ("probing_hash.dat", "half", "its size is 263888 bytes, where config's uniq_entries 27489 gives 527776"),
        ("TargetVocab.dat", "in a line", "last line has no newline"),
        ("TargetVocab.dat", "at a line's end", r"its ids are not 1\.\.\d+, each once"),
        ("source_vocabids", "in a line", "last line has no newline"),
        ("Alignments.dat", "in a line", "last line has no newline"),
        ("config", "in a line", "config: its last line has no newline"),
        ("config", "at a line's end", "config: no (num_scores|num_lex_scores|log_prob) line"),
    ],
)
def test_a_truncated_file_is_refused_naming_it(tmp_path, name, cut, match):
    folder = _copy(tmp_path)
    data = (folder / name).read_bytes()
    line_end = data.rindex(b"\n", 0, len(data) // 2) + 1 if b"\n" in data[: len(data) // 2] else 0
    data = {"half": data[: len(data) // 2], "at a line's end": data[:line_end], "in a line": data[: line_end + 1]}[cut]
    (folder / name).write_bytes(data)
    _one_line_error(folder, name, match)


@needs_data
@pytest.mark.parametrize(
    "config, match",
    [
        # a version that is not 15: Moses refuses it too ("The ProbingPT API has changed")
        ("API_VERSION\t14\nuniq_entries\t27489\nnum_scores\t5\nnum_lex_scores\t0\nlog_prob\t0\n", "API_VERSION 14; fstdecode reads API_VERSION 15"),
        # a line that is not key<TAB>number (Moses: "Wrong config format")
        ("API_VERSION\t15\nuniq_entries 27489\nnum_scores\t5\nnum_lex_scores\t0\nlog_prob\t0\n", r"config:2: 'uniq_entries 27489' is not a line"),
        ("API_VERSION\t15\nuniq_entries\t27489\nnum_scores\tfive\nnum_lex_scores\t0\nlog_prob\t0\n", r"config:3: "),
        # a missing field, and values out of range
        ("API_VERSION\t15\nuniq_entries\t27489\nnum_scores\t5\nlog_prob\t0\n", "no num_lex_scores line"),
        ("API_VERSION\t15\nuniq_entries\t27489\nnum_scores\t5\nnum_lex_scores\t0\nlog_prob\t2\n", "log_prob 2 is out of range"),
        ("API_VERSION\t15\nuniq_entries\t27489\nnum_scores\t0\nnum_lex_scores\t0\nlog_prob\t0\n", "num_scores 0"),
        # a count that does not fit the hash file
        ("API_VERSION\t15\nuniq_entries\t27490\nnum_scores\t5\nnum_lex_scores\t0\nlog_prob\t0\n", "probing_hash.dat: its size"),
    ],
)
def test_a_bad_config_is_refused_naming_it(tmp_path, config, match):
    folder = _copy(tmp_path)
    (folder / "config").write_text(config, encoding="utf-8")
    with pytest.raises(_core.BinaryFormatError, match=match) as caught:
        _core.ProbingTable(str(folder))
    assert "\n" not in str(caught.value)


@needs_data
def test_the_older_format_is_refused_by_name():
    with pytest.raises(PhraseTableError, match=r"probing/config: a ProbingPT of an older format \(its config has no "
                                               r"API_VERSION line\); fstdecode reads API_VERSION 15"):
        load_phrase_table(LEXREO / "probing", vocabulary=SourceFilter([["monsieur"]]))


@needs_data
def test_a_missing_file_is_named(tmp_path):
    folder = _copy(tmp_path)
    os.remove(folder / "TargetVocab.dat")
    with pytest.raises(_core.BinaryFormatError, match=r"TargetVocab\.dat: no such file, which a ProbingPT folder holds"):
        _core.ProbingTable(str(folder))


@needs_data
def test_stored_offsets_and_ids_are_checked(tmp_path):
    """Records whose count, offset, word id or alignment id point outside their file."""
    folder = _copy(tmp_path)
    coll = bytearray((folder / "TargetColl.dat").read_bytes())
    coll[0:8] = struct.pack("<Q", 2**40)  # the first source's count
    (folder / "TargetColl.dat").write_bytes(coll)
    _one_line_error(folder, "TargetColl.dat", "claims 1099511627776 target phrases")
    # The first record's first pair: u32 alignment ids at 8 and 12, u16 word count at 16, five
    # floats at 24, its first target word id at 44.
    for at, fmt, value, match in ((8, "<I", 7, "alignment id 7 is not one of Alignments.dat's 1"),
                                  (12, "<I", 1, "alignment id 1 is not one of Alignments.dat's 1"),
                                  (16, "<H", 0, "a target phrase without words"),
                                  (16, "<H", 65535, "runs past the end of the file|target word id"),
                                  (24, "<f", float("nan"), "a score is not a number"),
                                  (28, "<f", -0.5, "a score is a negative probability"),
                                  (44, "<I", 10**6, "target word id 1000000 is not one of TargetVocab.dat's")):
        folder = _copy(tmp_path / f"{at}-{value}")
        coll = bytearray((LEXREO / "probing.v15" / "TargetColl.dat").read_bytes())
        struct.pack_into(fmt, coll, at, value)
        (folder / "TargetColl.dat").write_bytes(coll)
        _one_line_error(folder, "TargetColl.dat", match)
    folder = _copy(tmp_path / "hash")
    buckets = bytearray((folder / "probing_hash.dat").read_bytes())
    for b in range(len(buckets) // 16):  # every record's offset past the end
        if struct.unpack_from("<Q", buckets, 16 * b)[0]:
            struct.pack_into("<Q", buckets, 16 * b + 8, 2**62)
    (folder / "probing_hash.dat").write_bytes(buckets)
    _one_line_error(folder, "TargetColl.dat", "starts past the end of the file")


@needs_data
def test_random_damage_never_reads_outside_the_files(tmp_path):
    """Sampled single-byte changes of the two binary files: each either reads or gives the one
    line naming a file of the folder, never a crash or another exception."""
    text = _text_table(LEXREO / "phrase-table.0-0.gz")
    keep = SourceFilter(list(text.sources())[::7])
    rng = random.Random(15)
    folder = _copy(tmp_path)
    for name in ("TargetColl.dat", "probing_hash.dat"):
        original = (LEXREO / "probing.v15" / name).read_bytes()
        for _ in range(25):
            data = bytearray(original)
            for _ in range(rng.choice((1, 8))):
                data[rng.randrange(len(data))] = rng.randrange(256)
            (folder / name).write_bytes(data)
            try:
                _core.ProbingTable(str(folder)).phrases(keep.native, None)
            except _core.BinaryFormatError as err:
                assert str(err).startswith(str(folder)) and "\n" not in str(err)
        (folder / name).write_bytes(original)


@needs_data
def test_the_cli_refuses_a_damaged_table_in_one_line(tmp_path):
    folder = _copy(tmp_path)
    data = (folder / "TargetColl.dat").read_bytes()
    (folder / "TargetColl.dat").write_bytes(data[: len(data) // 3])
    ini = _ini(tmp_path, _PT.format(folder), _LR + f"path={LEXREO / 'reordering-table.msd-bidirectional-fe.0.5.0-0.gz'}")
    sentence = (REGRESSION / "tests" / "phrase.lexicalized-reordering-probing" / "to-translate.txt").read_text(
        encoding="utf-8")
    proc = run_cli(["moses", "-f", str(ini)], sentence, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("fstdecode: error:")]
    assert len(errors) == 1 and str(folder / "TargetColl.dat") in errors[0], proc.stderr
    proc = run_cli(["decode", "-f", str(ini), "--no-filter"], "monsieur\n", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "a ProbingPT holds no source phrases" in proc.stderr and len(proc.stderr.splitlines()) == 1
