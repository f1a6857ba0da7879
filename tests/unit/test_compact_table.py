"""Moses' compact tables (native/compact_table.h, fstdecode/io/moses_compact.py) against their
text twins in ../shared/data/moses-regression, read by the project's own text readers:

* ``models/basic-surface-compact/phrase-table.minphr`` against
  ``models/basic-surface-only/phrase-table.gz`` (468 sources, 52,567 pairs);
* ``models/lexicalized-reordering/ro.minlexr`` against
  ``reordering-table.msd-bidirectional-fe.0.5.0-0.gz`` beside it (41,915 rows).

SOURCE.md says to check that they are twins: these tests are that check, entry for entry.

The phrase table's twin is Latin-1, not UTF-8: the text reader refuses it, and so does the
compact reader for a source whose target words are not UTF-8 (one error line, asserted below).
The oracle is therefore the text reader on the twin's sources whose every line is UTF-8 (the
others: the others are checked apart: a Latin-1 source is absent to a UTF-8 query, as it is to
Moses given UTF-8 input, and a UTF-8 source with a Latin-1 target is refused).

Scores are compared at the precision the format keeps: the creator parses each probability as a
float and stores float(ln p) floored at -100 (FloorScore(TransformScore(p)),
PhraseTableCreator::EncodeScores), where the text reader keeps the double ln p of the text's
number. So each compact score must be a float32 value, within 2^-24 (the float rounding of p,
as an error of ln p) plus two float ulps of |ln p| (the float log and its rounding) of the text
reader's. A wrong code or a shifted column misses by far more.

The corrupt-file tests run in this process under the built core: a read outside the mapping
would crash the run, not fail one test.
"""

from __future__ import annotations

import gzip
import pickle
import random
import struct
from collections import OrderedDict

import pytest

from fstdecode.io.moses_compact import (
    CompactTableError,
    compact_phrase_store,
    compact_reordering_row,
    compact_reordering_store,
    open_compact_phrase_table,
    open_compact_reordering_table,
)
from fstdecode.io.phrase_table import load_phrase_table
from fstdecode.io.reordering_table import load_reordering_table
from fstdecode.io.table_filter import SourceFilter
from tests.shared import data_path

MODELS = ("moses-regression", "models")


def _minphr():
    return data_path(*MODELS, "basic-surface-compact", "phrase-table.minphr")


def _minlexr():
    return data_path(*MODELS, "lexicalized-reordering", "ro.minlexr")


def _close(compact: float, text: float) -> bool:
    """Whether ``compact`` is a float32 within the format's precision of the text reader's ``text``."""
    is_float32 = struct.unpack("f", struct.pack("f", compact))[0] == compact
    return is_float32 and abs(compact - text) <= 2**-24 + 2 * 2**-23 * abs(text)


def _twin_lines(path) -> "OrderedDict[bytes, list[bytes]]":
    """The twin's lines (bytes, newline stripped) by source field, in file order."""
    out: OrderedDict[bytes, list[bytes]] = OrderedDict()
    with gzip.open(path) as f:
        for raw in f:
            line = raw.rstrip(b"\n")
            out.setdefault(line.split(b"|||")[0].strip(), []).append(line)
    return out


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _ngrams(words: tuple[str, ...]):
    return {words[i:j] for i in range(len(words)) for j in range(i + 1, len(words) + 1)}


# ---------------------------------------------------------------------------------------------
# The phrase table

@pytest.fixture(scope="module")
def phrase_twin(tmp_path_factory):
    """(compact table, the twin's lines by source, a text file of the all-UTF-8 sources' lines)."""
    twin = _twin_lines(data_path(*MODELS, "basic-surface-only", "phrase-table.gz"))
    clean = tmp_path_factory.mktemp("twin") / "phrase-table"
    clean.write_bytes(b"".join(line + b"\n" for lines in twin.values() if all(map(_utf8, lines)) for line in lines))
    return open_compact_phrase_table(_minphr()), twin, clean


def test_opens_and_reports_the_tables_shape(phrase_twin):
    table, twin, _ = phrase_twin
    assert (table.sources, table.num_scores, table.has_alignments) == (len(twin), 5, False)
    assert table.max_source_length == max(len(s.split()) for s in twin)


def test_phrase_table_matches_its_text_twin_source_for_source(phrase_twin):
    """Every all-UTF-8 source of the twin, through one SourceFilter: the compact store holds the
    text reader's sources in its order, each with the same pairs in file order (targets,
    alignments, and scores at float precision)."""
    table, twin, clean = phrase_twin
    refused = {s.decode() for s, lines in twin.items() if _utf8(s) and not all(map(_utf8, lines))}
    # Sentences whose n-grams meet no refused source (those raise, tested below).
    sentences = [tuple(s.decode().split()) for s, lines in twin.items() if all(map(_utf8, lines))]
    sentences = [s for s in sentences if not any(" ".join(g) in refused for g in _ngrams(s))]
    text = load_phrase_table(clean, vocabulary=SourceFilter(sentences)).store
    compact = compact_phrase_store(table, SourceFilter(sentences))
    assert compact.sources == text.sources >= len(sentences)
    assert compact.pairs == text.pairs
    compared = 0
    for h in range(text.sources):
        assert compact.source(h) == text.source(h)
        got, want = compact.pairs_of(h), text.pairs_of(h)
        assert [(t, a) for t, _, a in got] == [(t, a) for t, _, a in want]
        for (_, scores, _), (_, expected, _) in zip(got, want):
            assert len(scores) == len(expected) == 5
            assert all(_close(c, e) for c, e in zip(scores, expected)), (compact.source(h), scores, expected)
            compared += 1
    # Every line of every source kept, counted from the twin itself.
    lines = sum(len(twin[" ".join(text.source(h)).encode()]) for h in range(text.sources))
    assert compared == text.pairs == lines > 30_000


def test_a_latin1_source_is_absent_to_a_utf8_query(phrase_twin):
    """A source whose bytes are Latin-1 is stored under those bytes: its UTF-8 spelling (what a
    str input gives) finds nothing, as Moses finds nothing for UTF-8 input there."""
    table, twin, _ = phrase_twin
    latin1 = [tuple(s.decode("latin-1").split()) for s in twin if not _utf8(s)]
    assert len(latin1) > 50
    for source in latin1:
        store = compact_phrase_store(table, SourceFilter([source]), keep=lambda words, s=source: tuple(words) == s)
        assert store.sources == 0, source


def test_a_source_with_latin1_targets_is_refused_in_one_line(phrase_twin):
    table, twin, _ = phrase_twin
    refused = [s.decode() for s, lines in twin.items() if _utf8(s) and not all(map(_utf8, lines))]
    assert refused
    with pytest.raises(CompactTableError) as err:
        compact_phrase_store(table, SourceFilter([refused[0].split()]))
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{_minphr()}: ") and "not UTF-8" in message


@pytest.mark.parametrize("sentence", [
    ("zzyzx",),                     # a word the table never saw
    ("%", "zzyzx", "qqq"),          # a known first word, then unknown n-grams
    ("aller", "zzyzx"),             # a known word's n-gram with an unknown one
])
def test_sources_absent_from_the_table_give_nothing(phrase_twin, sentence):
    table, twin, clean = phrase_twin
    compact = compact_phrase_store(table, SourceFilter([sentence]))
    text = load_phrase_table(clean, vocabulary=SourceFilter([sentence]), warn_empty=False).store
    assert [compact.source(h) for h in range(compact.sources)] == [text.source(h) for h in range(text.sources)]
    assert all(" ".join(compact.source(h)).encode() in twin for h in range(compact.sources))


def test_keep_and_pickling(phrase_twin):
    table, _, _ = phrase_twin
    again = pickle.loads(pickle.dumps(table))
    sentence = [("%", "aller", "das")]
    kept = compact_phrase_store(again, SourceFilter(sentence), keep=lambda words: len(words) == 1)
    assert [kept.source(h) for h in range(kept.sources)] == [("%",), ("aller",), ("das",)]
    with pytest.raises(CompactTableError, match="needs a SourceFilter"):
        compact_phrase_store(table, lambda words: True)


# ---------------------------------------------------------------------------------------------
# The reordering table

@pytest.fixture(scope="module")
def reordering_twin(tmp_path_factory):
    """(compact table, text ReorderingTable, the twin's (source, target) pairs as a PhraseStore, pairs)."""
    twin_path = data_path(*MODELS, "lexicalized-reordering", "reordering-table.msd-bidirectional-fe.0.5.0-0.gz")
    pairs = []
    with gzip.open(twin_path, "rt", encoding="utf-8") as f:
        for line in f:
            source, target, _ = (field.strip() for field in line.split("|||"))
            pairs.append((tuple(source.split()), tuple(target.split())))
    sources = SourceFilter(sorted({s for s, _ in pairs}))
    text = load_reordering_table(twin_path, vocabulary=sources)
    # The pairs a decoder would ask for: a phrase table of exactly the twin's pairs.
    fake = tmp_path_factory.mktemp("pairs") / "phrase-table"
    fake.write_text("".join(f"{' '.join(s)} ||| {' '.join(t)} ||| 1\n" for s, t in pairs), encoding="utf-8")
    store = load_phrase_table(fake, vocabulary=sources).store
    return open_compact_reordering_table(_minlexr()), text, store, pairs


def test_reordering_table_matches_its_text_twin_row_for_row(reordering_twin):
    """Every (source, target) of the twin: the compact row is the text reader's, at float precision,
    both looked up directly and through the ReorderingStore of the pairs."""
    table, text, store, pairs = reordering_twin
    assert (len(table), table.num_scores, table.conditioned_on_target) == (len(pairs), 6, True)
    rows = compact_reordering_store(table, store)
    assert len(rows) == len(text) == len(pairs) == 41_915
    for source, target in pairs:
        want = text.lookup(source, target)
        for got in (table.lookup(list(source), list(target)), rows.lookup(list(source), list(target))):
            assert got is not None and len(got) == len(want) == 6
            assert all(_close(c, e) for c, e in zip(got, want)), (source, target, got, want)


def test_reordering_pairs_absent_from_the_table_give_nothing(reordering_twin):
    table, text, _, pairs = reordering_twin
    present = set(pairs)
    rng = random.Random(7)
    targets = [t for _, t in pairs]
    tried = 0
    for source, _ in rng.sample(pairs, 300):  # a known source with another pair's target
        target = rng.choice(targets)
        if (source, target) in present:
            continue
        tried += 1
        assert table.lookup(list(source), list(target)) is None
        assert text.lookup(source, target) is None
    assert tried > 250
    assert table.lookup(["zzyzx"], ["qqq"]) is None
    assert table.lookup(list(pairs[0][0]), []) is None  # an fe table's key needs the target


# ---------------------------------------------------------------------------------------------
# Corrupt files: one error line naming the file, never a crash

def _string_vector_end(data: bytes, at: int, pos_width: int) -> int:
    """The offset after a Moses StringVector at ``at`` (the layout of native/compact_table.h)."""
    at += 2 + 8 + pos_width  # sorted, final, size, last
    for width in (4, 4):  # the codes, the group offsets
        (n,) = struct.unpack_from("<Q", data, at)
        at += 8 + n * width
    (n,) = struct.unpack_from("<Q", data, at)
    return at + 8 + n


def _index_end(data: bytes) -> int:
    (rel,) = struct.unpack_from("<Q", data, 16)
    at = _string_vector_end(data, 16 + rel, 8)
    (blocks,) = struct.unpack_from("<Q", data, at)
    return at + 8 + 8 * blocks + 8


def _huffman_fields(data: bytes, at: int, width: int) -> tuple[int, int, int]:
    """Offsets of a Huffman code's symbols, first codes and first indexes (their first element)."""
    (n,) = struct.unpack_from("<Q", data, at)
    symbols = at + 8
    first = symbols + n * width + 8
    (m,) = struct.unpack_from("<Q", data, first - 8)
    return symbols, first, first + 8 * m + 8


def _open_and_read(kind: str, path) -> None:
    """Open a (possibly damaged) copy and look a batch up in it, as a decode would."""
    if kind == "phrases":
        table = open_compact_phrase_table(path)
        compact_phrase_store(table, SourceFilter([("%", "aller", "das", "ist", "ein", "haus"), ("und", "die")]))
    else:
        table = open_compact_reordering_table(path)
        compact_reordering_row(table, ('"', ",", "un", "premier"), ("a", "maiden"))
        compact_reordering_row(table, ("à",), ("to",))


def _one_line_error(kind: str, path) -> str:
    with pytest.raises(CompactTableError) as err:
        _open_and_read(kind, path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}: "), message
    return message


@pytest.mark.parametrize("kind", ["phrases", "reordering"])
@pytest.mark.parametrize("fraction", [0.0, 0.00001, 0.0001, 0.001, 0.3, 0.5, 0.9, 0.99999])
def test_a_truncated_table_gives_one_error_line(tmp_path, kind, fraction):
    data = (_minphr() if kind == "phrases" else _minlexr()).read_bytes()
    cut = tmp_path / "cut"
    cut.write_bytes(data[: int(len(data) * fraction)])
    _one_line_error(kind, cut)


def _flipped(tmp_path, data: bytes, at: int, xor: int = 0x5A, *, nan: bool = False):
    damaged = bytearray(data)
    if nan:  # a float symbol made a NaN (a flip to another finite float cannot be told)
        damaged[at - 3:at + 1] = b"\xff\xff\xff\xff"
    else:
        damaged[at] ^= xor
    path = tmp_path / "flipped"
    path.write_bytes(bytes(damaged))
    return path


@pytest.mark.parametrize("kind", ["phrases", "reordering"])
@pytest.mark.parametrize("field", [
    20,  # the CHD hash's seed (byte 24 "chd\0", then keys, size, algorithm, hash family, seed)
    24,  # its number of bins
    28,  # its number of buckets
    48,  # its displacements' select structure (ones, zeros, bits)
])
def test_a_flipped_byte_in_the_hash_gives_one_error_line(tmp_path, kind, field):
    data = (_minphr() if kind == "phrases" else _minlexr()).read_bytes()
    assert data[24:28] == b"chd\0"
    _one_line_error(kind, _flipped(tmp_path, data, 24 + field))


@pytest.mark.parametrize("part", ["symbols", "first", "index"])
def test_a_flipped_byte_in_the_huffman_codes_gives_one_error_line(tmp_path, part):
    """The reordering table's first score code: a symbol made NaN, a first code, a first index."""
    data = _minlexr().read_bytes()
    symbols, first, index = _huffman_fields(data, _index_end(data) + 9, 4)
    at = {"symbols": symbols + 3, "first": first + 8, "index": index + 16}[part]
    _one_line_error("reordering", _flipped(tmp_path, data, at, 0x01, nan=part == "symbols"))


def test_a_flipped_byte_in_the_target_word_code_gives_one_error_line(tmp_path):
    data = _minphr().read_bytes()
    words_end = _string_vector_end(data, _index_end(data) + 4 + 8 + 1 + 8 + 8, 4)
    _, first, index = _huffman_fields(data, words_end, 4)
    for at in (first + 8, index + 16):
        _one_line_error("phrases", _flipped(tmp_path, data, at, 0x01))


@pytest.mark.parametrize("kind", ["phrases", "reordering"])
def test_random_damage_gives_an_error_line_or_a_store_never_a_crash(tmp_path, kind):
    """Single bytes flipped anywhere (the index, the codes, the records): each copy opens and
    reads, or refuses in one line; an undetected flip (a record's bits, a fingerprint) may only
    change what is found."""
    data = (_minphr() if kind == "phrases" else _minlexr()).read_bytes()
    rng = random.Random(20120101)
    index_end = _index_end(data)
    refused = 0
    for trial in range(300):
        # half in the index and codes (small, dense with structure), half anywhere
        at = rng.randrange(index_end + 4096 if trial % 2 else len(data)) % len(data)
        path = _flipped(tmp_path, data, at, rng.randrange(1, 256))
        try:
            _open_and_read(kind, path)
        except CompactTableError as err:
            assert "\n" not in str(err) and str(err).startswith(f"{path}: ")
            refused += 1
    assert refused > 50
