"""Moses' binary tables (native/moses_binary_table.h, fstdecode/io/moses_binary.py) against their
text twins in ``../shared/data/moses-regression`` (SOURCE.md), read by the project's text readers:

* ``phrase.TargetNGramFeature``: ``phrase-table.0-0.1.1`` (12 scores, alignments, a sparse feature
  on every line) beside its ``.binphr.*`` (``.wa``: with alignments), and
  ``reordering-table.81.wbe-msd-bidirectional-fe`` beside its ``.binlexr.*``;
* ``phrase.sparse-features``: ``phrase-table.0-0,1.1.1.gz``, whose target words have two factors
  (``word|tag``), beside its ``.binphr.*``: factor 0 is compared, and warned about once.

Entry for entry: every source with every pair (target words, alignment, scores) in the same order,
without a filter and through SourceFilters (every source of the twin; a part of them; the test's
own input). Scores are compared at the precision the format stores: a binary phrase table holds
each probability as a float32 (the reader takes ln of it), so its score is within 2^-24 of ln of the
text's decimal (|ln(p (1 + e))- ln p| <= |e| <= 2^-24); a binary reordering table holds each
ln(p) as a float32, so within 2^-24 + 2^-23 |score| (the float32 rounding of p, then of its log,
by a float log within an ulp). An independent reading of the text (float32 of each decimal, then
math.log) gives the binary phrase table's scores exactly.

``models/lexicalized-reordering-cn/fr-en.binphr.*`` has no twin: its structure is checked against
what can be read independently (its vocabulary files, its index file, its moses.ini).

Corrupt copies (each file truncated; bytes changed in the index, the tree and the records; random
byte changes) give one error line naming the file, never a crash or a read outside a mapping.
"""

from __future__ import annotations

import gzip
import logging
import math
import pickle
import random
import shutil
import struct
from itertools import groupby
from pathlib import Path

import pytest

from fstdecode._native import core as _core
from fstdecode.io import binarized, moses_binary
from fstdecode.io.moses_binary import MosesBinaryTableError, open_moses_phrase_table, open_moses_reordering_table
from fstdecode.io.phrase_table import load_phrase_table
from fstdecode.io.reordering_table import load_reordering_table
from fstdecode.io.table_filter import SourceFilter

from shared import SHARED_DATA

DATA = SHARED_DATA / "moses-regression"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"needs the Moses regression data in {DATA}")

NGRAM = DATA / "tests" / "phrase.TargetNGramFeature"
SPARSE = DATA / "tests" / "phrase.sparse-features"
CN = DATA / "models" / "lexicalized-reordering-cn" / "fr-en"

#: (text twin, binary prefix, whether the target words are factored).
PHRASE_TABLES = {
    "TargetNGramFeature": (NGRAM / "phrase-table.0-0.1.1", NGRAM / "phrase-table.0-0.1.1", False),
    "sparse-features": (SPARSE / "phrase-table.0-0,1.1.1.gz", SPARSE / "phrase-table.0-0,1.1.1", True),
}
REORDERING = NGRAM / "reordering-table.81.wbe-msd-bidirectional-fe"

#: A phrase table's scores: ln of a float32 probability (module docstring).
PHRASE_PRECISION = 2.0**-24
#: What Moses' writer stores for a probability of 0 (and below): 1e-38 as a float32.
FLOORED_ZERO = math.log(struct.unpack("<f", struct.pack("<f", 1e-38))[0])


def f32(x: float) -> float:
    """x rounded to a float32 (as Moses' writer stores it)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def text_lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def twin_sources(path: Path) -> list[tuple[str, ...]]:
    """The source phrases of a text table, in file order (read here, not by the readers)."""
    return [tuple(src.split()) for src, _ in groupby(line.split("|||")[0] for line in text_lines(path))]


def assert_same_phrases(text: "_core.PhraseStore", binary: "_core.PhraseStore", factored: bool, whole: bool) -> int:
    """The binary store holds the text store's entries, in its order (factor 0 of a factored
    table's target words); `whole`: read without a filter. Returns the number of pairs compared."""
    assert binary.num_scores == text.num_scores
    assert (binary.sources, binary.pairs) == (text.sources, text.pairs)
    assert binary.max_source_length == text.max_source_length
    # the sources read, kept or not (the empty-table warning's count): the binary reader counts
    # them all (a walk of the whole tree) only for the whole table or an empty store
    if whole or binary.sources == 0:
        assert binary.runs == text.runs
    else:
        assert binary.runs == binary.sources
    for h in range(text.sources):
        assert binary.source(h) == text.source(h)
        assert binary.find(list(text.source(h))) == h
        for (t_words, t_scores, t_align), (b_words, b_scores, b_align) in zip(
            text.pairs_of(h), binary.pairs_of(h), strict=True
        ):
            assert b_words == (tuple(w.split("|")[0] for w in t_words) if factored else t_words)
            assert b_align == t_align
            for t, b in zip(t_scores, b_scores, strict=True):
                if t == -100.0:  # ln(0) in the text reader; Moses' writer stored 1e-38
                    assert b == FLOORED_ZERO
                else:
                    assert abs(b - t) <= PHRASE_PRECISION, (text.source(h), t_words, t, b)
    return text.pairs


def binary_phrases(prefix: Path, vocabulary: SourceFilter | None = None, keep=None) -> "_core.PhraseStore":
    return open_moses_phrase_table(prefix).phrases(vocabulary.native if vocabulary is not None else None, keep)


# ---------------------------------------------------------------------------------------------
# Phrase tables against their text twins


@pytest.mark.parametrize("name", sorted(PHRASE_TABLES))
def test_whole_phrase_table_is_its_text_twin(name):
    text, prefix, factored = PHRASE_TABLES[name]
    compared = assert_same_phrases(load_phrase_table(text).store, binary_phrases(prefix), factored, whole=True)
    assert compared == len(text_lines(text))  # every line of the twin


@pytest.mark.parametrize("name", sorted(PHRASE_TABLES))
@pytest.mark.parametrize(
    "part",
    [
        "all",  # every source of the twin, each a sentence of the filter
        "every-7th",  # a filter that drops most sources (and keeps their sub-phrases)
        "input",  # the test's own input sentences (n-grams of real sentences, many absent)
    ],
)
def test_filtered_phrase_table_is_its_filtered_text_twin(name, part):
    text, prefix, factored = PHRASE_TABLES[name]
    sources = twin_sources(text)
    if part == "all":
        sentences = sources
    elif part == "every-7th":
        sentences = sources[::7]
    else:
        sentences = [line.split() for line in (prefix.parent / "to-translate.txt").read_text(encoding="utf-8").splitlines()]
    wanted = SourceFilter(sentences)
    reference = load_phrase_table(text, vocabulary=SourceFilter(sentences), warn_empty=False).store
    assert reference.sources > 0
    if part == "all":
        assert reference.sources == len(sources)
    assert_same_phrases(reference, binary_phrases(prefix, wanted), factored, whole=False)


def test_nothing_kept_counts_every_source():
    """A filter that keeps nothing: an empty store whose runs is every source of the table, as
    the text reader's (the empty-table warning says how many sources the filter refused)."""
    text, prefix, factored = PHRASE_TABLES["TargetNGramFeature"]
    reference = load_phrase_table(text, vocabulary=SourceFilter([["no-such-word"]]), warn_empty=False).store
    binary = binary_phrases(prefix, SourceFilter([["no-such-word"]]))
    assert binary.sources == 0 and binary.runs == reference.runs == len(twin_sources(text))
    assert_same_phrases(reference, binary, factored, whole=False)


def test_keep_predicate_is_the_text_readers():
    """A predicate on the source words (the readers' ``keep``), asked once per source."""
    text, prefix, factored = PHRASE_TABLES["TargetNGramFeature"]

    def short(source) -> bool:
        return len(source) <= 2

    reference = load_phrase_table(text, vocabulary=short).store
    assert 0 < reference.sources < len(twin_sources(text))
    assert_same_phrases(reference, binary_phrases(prefix, keep=lambda words: short(tuple(words))), factored, whole=False)


def test_scores_are_ln_of_the_stored_float32():
    """An oracle independent of both readers: each decimal of the text, rounded to a float32 as
    Moses' writer stored it, then math.log, is the binary table's score bit for bit."""
    text, prefix, _ = PHRASE_TABLES["TargetNGramFeature"]
    store = binary_phrases(prefix)
    lines = [line.split("|||") for line in text_lines(text)]
    h = 0
    compared = 0
    for source, group in groupby(lines, key=lambda fields: tuple(fields[0].split())):
        assert store.source(h) == source
        for fields, (_, scores, _) in zip(group, store.pairs_of(h), strict=True):
            assert scores == tuple(math.log(f32(float(tok))) for tok in fields[2].split())
            compared += 1
        h += 1
    assert compared == store.pairs


def test_factored_table_warns_once(caplog, monkeypatch):
    """output-factor=0,1: factor 0 is read, and said so in one warning per table and process."""
    monkeypatch.setattr(binarized, "_FACTORS_REPORTED", set())
    prefix = PHRASE_TABLES["sparse-features"][1]
    with caplog.at_level(logging.WARNING, logger="fstdecode"):
        table = open_moses_phrase_table(prefix)
        open_moses_phrase_table(prefix)
        open_moses_phrase_table(PHRASE_TABLES["TargetNGramFeature"][1])  # one factor: no warning
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert str(prefix) in warnings[0] and "2 factors" in warnings[0] and "factor 0" in warnings[0]
    assert "|" in table.factored_word and table.factors == 2


def test_opened_by_its_index_file_and_pickled():
    """The dispatch may name the table by its prefix (moses.ini's path=) or by its .binphr.idx;
    a table pickles as its prefix (workers map the same files)."""
    _, prefix, _ = PHRASE_TABLES["TargetNGramFeature"]
    by_prefix = open_moses_phrase_table(prefix)
    by_index = open_moses_phrase_table(f"{prefix}.binphr.idx")
    assert by_index.path == by_prefix.path == str(prefix)
    assert by_prefix.has_alignment and by_prefix.num_scores == 12  # moses.ini: num-features=12
    again = pickle.loads(pickle.dumps(by_prefix))
    assert_same_phrases(by_prefix.phrases(None, None), again.phrases(None, None), False, whole=True)


# ---------------------------------------------------------------------------------------------
# The reordering table against its text twin


def reordering_keys(path: Path) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    return [tuple(tuple(field.split()) for field in line.split("|||")[:2]) for line in text_lines(path)]


def assert_same_rows(text, binary: "_core.ReorderingStore", keys) -> int:
    """Every key of `keys` has the same row in both (at the precision of a float32 log), and the
    binary store has no other rows."""
    assert (binary.num_scores, binary.conditioned_on_target) == (text.num_scores, text.conditioned_on_target)
    assert len(binary) == len(text)
    for source, target in keys:
        expected = text.lookup(source, target)
        got = binary.lookup(list(source), list(target))
        assert expected is not None and got is not None
        for t, b in zip(expected, got, strict=True):
            assert abs(b - t) <= 2.0**-24 + 2.0**-23 * abs(t), (source, target, t, b)
    return len(keys)


def test_whole_reordering_table_is_its_text_twin():
    keys = reordering_keys(REORDERING)
    table = open_moses_reordering_table(REORDERING)
    assert table.conditioned_on_target and table.num_scores == 6  # moses.ini: num-features=6
    text = load_reordering_table(REORDERING)
    assert len(text) == len(set(keys)) == len(keys)
    assert_same_rows(text, table.reordering(None, None), keys)
    # absent keys are absent
    assert table.reordering(None, None).lookup(["%", "("], ["no-such-word"]) is None


@pytest.mark.parametrize("part", ["all", "every-7th", "input"])  # as for the phrase tables
def test_filtered_reordering_table_is_its_filtered_text_twin(part):
    keys = reordering_keys(REORDERING)
    sources = list(dict.fromkeys(source for source, _ in keys))
    if part == "all":
        sentences = sources
    elif part == "every-7th":
        sentences = sources[::7]
    else:
        sentences = [line.split() for line in (NGRAM / "to-translate.txt").read_text(encoding="utf-8").splitlines()]
    text = load_reordering_table(REORDERING, vocabulary=SourceFilter(sentences))
    kept = [(s, t) for s, t in keys if text.lookup(s, t) is not None]
    assert kept and (part == "all") == (len(kept) == len(keys))
    binary = open_moses_reordering_table(REORDERING).reordering(SourceFilter(sentences).native, None)
    assert_same_rows(text, binary, kept)


# ---------------------------------------------------------------------------------------------
# A table without a twin: structural facts read independently


def read_vocabulary(path: Path) -> dict[int, str]:
    """A Moses vocabulary file, read here: 'id word' lines."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        i, word = line.split(" ")
        out[int(i)] = word
    return out


def test_table_without_a_twin():
    table = open_moses_phrase_table(CN)
    store = table.phrases(None, None)
    source_vocab = set(read_vocabulary(CN.with_name("fr-en.binphr.srcvoc")).values())
    target_vocab = set(read_vocabulary(CN.with_name("fr-en.binphr.tgtvoc")).values())
    index = CN.with_name("fr-en.binphr.idx").read_bytes()
    (count,) = struct.unpack_from("<I", index)
    roots = [off for off in struct.unpack_from(f"<{count}q", index, 4) if off != -1]
    # moses.ini of phrase.lexicalized-reordering-cn: num-features=5, no alignment files
    assert store.num_scores == table.num_scores == 5 and not table.has_alignment
    assert store.sources == table.sources > 0 and store.pairs >= store.sources
    sources = [store.source(h) for h in range(store.sources)]
    assert all(w in source_vocab for s in sources for w in s)
    # one tree per first word: as many roots in the index as first words
    assert len({s[0] for s in sources}) == len(roots)
    # file order (the records' order): Moses' training sorts the text table by bytes (LC_ALL=C) as
    # "source ||| ..." before processPhraseTable
    keys = [(" ".join(s) + " |||").encode() for s in sources]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    for h in range(store.sources):
        for words, scores, alignment in store.pairs_of(h):
            assert words and all(w in target_vocab for w in words) and alignment == ""
            assert len(scores) == 5
            assert all(-100.0 <= s <= 0.0 for s in scores[:4])  # ln of probabilities
            assert scores[4] == math.log(f32(2.718))  # Moses' phrase penalty column
    # each source alone through a filter: that source (and its sub-phrases), the same pairs
    for h in range(0, store.sources, 997):
        one = table.phrases(SourceFilter([sources[h]]).native, None)
        k = one.find(list(sources[h]))
        assert k >= 0 and one.pairs_of(k) == store.pairs_of(h)
        assert all(" ".join(one.source(i)) in " ".join(sources[h]) for i in range(one.sources))


# ---------------------------------------------------------------------------------------------
# Corrupt copies

PHRASE_FILES = ("binphr.idx", "binphr.srctree.wa", "binphr.tgtdata.wa", "binphr.srcvoc", "binphr.tgtvoc")
REORDERING_FILES = ("binlexr.idx", "binlexr.srctree", "binlexr.tgtdata", "binlexr.voc0", "binlexr.voc1")


def copy_table(prefix: Path, files: tuple[str, ...], tmp_path: Path) -> Path:
    out = tmp_path / prefix.name
    for ext in files:
        shutil.copyfile(f"{prefix}.{ext}", f"{out}.{ext}")
    return out


def read_all(prefix: Path, reordering: bool = False) -> None:
    if reordering:
        open_moses_reordering_table(prefix).reordering(None, None)
    else:
        open_moses_phrase_table(prefix).phrases(None, None)


def assert_one_line_error(prefix: Path, names: str, reordering: bool = False) -> str:
    """Reading all of the table raises one line naming the file `names` (opening raises
    MosesBinaryTableError; a lookup _core.MosesBinaryError, a BinaryFormatError, which the
    readers' lookup wrappers turn into their own errors)."""
    with pytest.raises((MosesBinaryTableError, _core.BinaryFormatError)) as info:
        read_all(prefix, reordering)
    message = str(info.value)
    assert "\n" not in message and names in message, message
    return message


def change(path: str, offset: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


@pytest.mark.parametrize("ext", PHRASE_FILES)
@pytest.mark.parametrize("keep", [0.0, 0.5, 0.999])  # emptied, halved, its last bytes cut
def test_truncated_phrase_table_file(tmp_path, ext, keep):
    prefix = copy_table(PHRASE_TABLES["TargetNGramFeature"][1], PHRASE_FILES, tmp_path)
    path = f"{prefix}.{ext}"
    size = Path(path).stat().st_size
    with open(path, "r+b") as f:
        f.truncate(int(size * keep))
    assert_one_line_error(prefix, path)


@pytest.mark.parametrize("ext", REORDERING_FILES)
@pytest.mark.parametrize("keep", [0.0, 0.5, 0.999])
def test_truncated_reordering_table_file(tmp_path, ext, keep):
    prefix = copy_table(REORDERING, REORDERING_FILES, tmp_path)
    path = f"{prefix}.{ext}"
    size = Path(path).stat().st_size
    with open(path, "r+b") as f:
        f.truncate(int(size * keep))
    assert_one_line_error(prefix, path, reordering=True)


@pytest.mark.parametrize(
    "ext, offset, data, says",
    [
        # the index: its count, a root beyond the tree, a root off a node's start, a negative root
        ("binphr.idx", 0, struct.pack("<I", 645), "offsets take"),
        ("binphr.idx", 4, struct.pack("<q", 10**9), "lies outside"),
        ("binphr.idx", 4, struct.pack("<q", 3), ""),
        ("binphr.idx", 4 + 8, struct.pack("<q", -5), "lies outside"),
        # the tree: a root's key count, its key, its record offset, its child offset
        ("binphr.srctree.wa", 0, struct.pack("<I", 10**8), "runs past the end"),
        ("binphr.srctree.wa", 4, struct.pack("<I", 7), "lacks it"),
        ("binphr.srctree.wa", 12, struct.pack("<q", 10**9), "lies outside"),
        ("binphr.srctree.wa", 20, struct.pack("<q", 4), "child node"),
        # the records: the first record's pair count, its first target word, its second pair's
        # score count (at 125: the first pair's 4 target words, 13 floats, 1 sparse feature and
        # 9 alignment bytes take 105 bytes, the second's 3 target words 16)
        ("binphr.tgtdata.wa", 0, struct.pack("<I", 10**6), "cut short"),
        ("binphr.tgtdata.wa", 8, struct.pack("<I", 10**6), "not in"),
        ("binphr.tgtdata.wa", 125, struct.pack("<I", 11), "has 11 scores, the first 12"),
        # the vocabularies: an id listed twice, a line that is not 'id word'
        ("binphr.srcvoc", 0, b"642", "listed twice"),
        ("binphr.tgtvoc", 0, b"x", "is not 'id word'"),
    ],
)
def test_corrupt_phrase_table_bytes(tmp_path, ext, offset, data, says):
    prefix = copy_table(PHRASE_TABLES["TargetNGramFeature"][1], PHRASE_FILES, tmp_path)
    change(f"{prefix}.{ext}", offset, data)
    message = assert_one_line_error(prefix, str(prefix))
    assert says in message and "corrupt or truncated" in message


def test_random_byte_changes_never_crash(tmp_path):
    """Random changes of one to four bytes anywhere in the index, tree and records: each copy
    reads the same as the original, or reads otherwise (a changed score) or gives one error line
    naming a file of the table; none reads outside a mapping (the process would crash)."""
    source = PHRASE_TABLES["TargetNGramFeature"][1]
    rng = random.Random(42)
    outcomes = {"error": 0, "read": 0}
    for trial in range(45):
        ext = PHRASE_FILES[trial % 3]
        folder = tmp_path / str(trial)
        folder.mkdir()
        prefix = copy_table(source, PHRASE_FILES, folder)
        path = f"{prefix}.{ext}"
        size = Path(path).stat().st_size
        at = rng.randrange(size)
        change(path, at, bytes(rng.randrange(256) for _ in range(min(rng.randint(1, 4), size - at))))
        try:
            read_all(prefix)
            outcomes["read"] += 1
        except (MosesBinaryTableError, _core.BinaryFormatError) as err:
            assert "\n" not in str(err) and str(prefix) in str(err)
            outcomes["error"] += 1
    assert outcomes["error"] > 0


def test_missing_files(tmp_path):
    """No table at the prefix, or one file gone: one line naming the missing file."""
    with pytest.raises(MosesBinaryTableError, match="no such file"):
        open_moses_phrase_table(tmp_path / "absent")
    prefix = copy_table(PHRASE_TABLES["TargetNGramFeature"][1], PHRASE_FILES, tmp_path)
    Path(f"{prefix}.binphr.tgtvoc").unlink()
    with pytest.raises(MosesBinaryTableError) as info:
        open_moses_phrase_table(prefix)
    assert str(info.value) == f"{prefix}.binphr.tgtvoc: no such file"


def test_lookup_errors_are_binary_format_errors():
    """The readers' wrappers of a mapped table's lookups (phrase_table._binary_phrases,
    reordering_table._binary_reordering) catch BinaryFormatError: a Moses table's errors are one."""
    assert issubclass(_core.MosesBinaryError, _core.BinaryFormatError)
    assert issubclass(_core.MosesBinaryError, ValueError)
