"""Tests of the LM image (native/lm_image.h) and its score codes (native/lm_value_code.h).

An image (``fstdecode binarize``'s ``lm.bin``) is queried in place by ``_core.ImageLM``, which
must answer every query bit for bit as the ``_core.NgramLM`` read from the ARPA file (values
compared with ``repr``, which tells -0.0 from 0.0), under every ``restrict`` order as
``parse_arpa(text, order)`` reads the file, and as KenLM (the ``kenlm`` package) scores the
ARPA file, to 1e-6. The codes are checked against Python's own ``float()`` and
``math.log(10)``. A corrupt image is an ``LmImageError`` or a model whose queries return
(perhaps nonsense, never a crash); an image of format version 1 is refused with a rebuild hint.
"""

from __future__ import annotations

import decimal
import math
import random
import struct
from pathlib import Path

import pytest

from fstdecode._native import core as _core
from fstdecode.io.arpa import ArpaError
from fstdecode.io.binarized import write_checksums
from fstdecode.io.native_lm import NativeLM
from shared import arpa_text, data_path

LN10 = math.log(10)
#: lm_image.cpp's layout: begin[] at 80 (after magic, six u32, three u64, two i64), end[] after
#: its 42 entries; the sections' numbers.
SECTION_BEGIN, SECTIONS = 80, 42
S_ESCAPES, S_SHAPES, S_EXT, S_SLOTS = 8, 9, 10, 11
ESCAPE = 15 << 27


def same(a: float, b: float) -> bool:
    """Bit-identical floats (NaN equals NaN)."""
    return repr(a) == repr(b)


# ---- the codes --------------------------------------------------------------------------------


def code_decimal(code: int) -> decimal.Decimal:
    """The decimal a code holds: (-1)^sign * m / 10^k."""
    sign, k, m = code >> 31, (code >> 27) & 15, code & ((1 << 27) - 1)
    return (-1) ** sign * decimal.Decimal(m).scaleb(-k)


def test_every_short_decimal_has_a_code_that_decodes_exactly():
    rng = random.Random(5)
    cases = ["0", "-0", "-99", "-100", "-4.6543042", "-0.0000001", "-0.00000000000001", "12.5", "-99999999"]
    for _ in range(20000):
        digits = rng.randint(1, 8)
        k = rng.randint(0, min(14, digits + 6))
        m = rng.randrange(10 ** (digits - 1) if digits > 1 else 0, 10**digits)
        cases.append(("-" if rng.random() < 0.8 else "") + str(decimal.Decimal(m).scaleb(-k)))
    for text in cases:
        value = float(text) * LN10  # how the ARPA readers store a log10 value
        code = _core.lm_value_code(value)
        assert code is not None, text
        assert same(_core.lm_value_decode(code), value), text
        # The code holds the decimal itself: the shortest one that reads as float(text).
        assert code_decimal(code) == decimal.Decimal(repr(float(text))), text


@pytest.mark.parametrize(
    "value",
    [
        math.inf,  # "inf" or "-inf" in the file: an escape
        -math.inf,
        math.nan,
        -LN10 / 3,  # 16-17 significant digits: no 27-bit mantissa
        float("-1e-20") * LN10,  # k = 20 > 14
        float("-123456789.5") * LN10,  # ten digits
    ],
)
def test_values_without_a_short_decimal_have_no_code(value):
    assert _core.lm_value_code(value) is None


def test_a_code_is_exact_or_absent_for_any_double():
    rng = random.Random(9)
    for _ in range(20000):
        value = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        code = _core.lm_value_code(value)
        assert code is None or same(_core.lm_value_decode(code), value)


def test_an_escape_has_no_value_of_its_own():
    with pytest.raises(ValueError):
        _core.lm_value_decode(ESCAPE | 3)


# ---- the image answers as NgramLM -------------------------------------------------------------

#: An ARPA file with every kind of value and entry an image must hold: -99, -0, and (escapes
#: below the unigrams, which are raw doubles) -inf, 0 (a prob field holds negatives), 17 digits
#: and 1e-20 (k > 14), a positive backoff, a backoff on the highest order (dropped),
#: n-grams whose prefixes are not stored (prefix-only entries; "h a c d" makes "h a" extended
#: first by a 4-gram, an exception to "min_ext = n + 1"), a stored bigram ("a c") extended only
#: by a 4-gram, and <UNK> (an alias of <unk>).
TRICKY = arpa_text(
    [
        "-99\t<s>\t-0.30103",
        "-1.2345678\t</s>",
        "-0.5\ta\t-0.25",
        "-inf\tb\t0",
        "0\tc\t-0",
        "-0\td\t0.125",
        "-1.3333333333333333\te\t-0.1234567891234567",
        "-0.00000000000001\tf",
        "-1e-20\tg\t1.5",
        "-123456789.5\th",
        "-2.5\t<UNK>",
    ],
    [
        "-0.7\t<s> a\t-0.2",
        "-0.6\ta b\t-0",
        "-1\ta c",
        "-inf\tc d\t0.3",
        "-0.333\tb e",
        "0\tb a\t-0.1234567891234567",
        "-1.3333333333333333\td e\t1e-20",
        "-0\tf a\t-0",
    ],
    ["-0.1\t<s> a b\t-0.05", "-0.2\ta b e", "-0.3\te f g\t-0.5"],
    ["-0.05\t<s> a b e\t-0.7", "-0.4\th a c d", "-0.45\ta c d f"],
)


def arpa_ngrams(text: str) -> list[tuple[str, ...]]:
    """Every n-gram of an ARPA text, as words."""
    grams, section = [], 0
    for line in text.splitlines():
        if line.startswith("\\") and line.endswith("-grams:"):
            section = int(line[1:].split("-")[0])
        elif section and line.strip() and not line.startswith("\\"):
            grams.append(tuple(line.split("\t")[1].split(" ")))
    return grams


def write_image(lm: _core.NgramLM, path: Path) -> _core.ImageLM:
    lm.write_image("source.arpa", 1, 2, str(path))
    image, stamp = _core.ImageLM.map_image(str(path))
    assert stamp == ("source.arpa", 1, 2)
    return image


def queries(lm, grams: list[tuple[str, ...]], count: int, seed: int) -> list[list[int]]:
    """The ids of every n-gram (and its suffixes), then random id sequences of up to 7 words
    (longer than the order: only the last order-1 count)."""
    out = []
    for g in grams:
        ids = [lm.index(w) for w in g]
        out += [ids[i:] for i in range(len(ids))]
    rng = random.Random(seed)
    out += [[rng.randrange(lm.vocab_size) for _ in range(rng.randint(0, 7))] for _ in range(count)]
    return out


def assert_answers_as(want, got, ids_list: list[list[int]]) -> None:
    assert (got.order, got.counts, got.vocab_size, got.unk) == (want.order, want.counts, want.vocab_size, want.unk)
    assert got.words() == want.words()
    for ids in ids_list:
        for k in range(len(ids)):
            assert same(got.logprob(ids[:k], ids[k]), want.logprob(ids[:k], ids[k])), (ids, k)
        for k in range(len(ids) + 1):
            assert same(got.backoff(ids[:k]), want.backoff(ids[:k])), (ids, k)
            assert got.extends(ids[:k]) == want.extends(ids[:k]), (ids, k)
        assert got.unigram_logprob(want.word(ids[-1]) if ids else "zz") == want.unigram_logprob(
            want.word(ids[-1]) if ids else "zz"
        )


def test_tricky_image_answers_as_the_arpa_model_at_every_order(tmp_path):
    lm = _core.NgramLM.parse_arpa(TRICKY.encode(), 0)
    image = write_image(lm, tmp_path / "lm.bin")
    # The tables have escapes (-inf, 0, two of 17 digits, 1e-20) and min_ext exceptions ("h a", "a c").
    begin, end = sections((tmp_path / "lm.bin").read_bytes())
    assert end[S_ESCAPES] - begin[S_ESCAPES] == 8 * 5 and end[S_EXT] - begin[S_EXT] == 16 * 2
    ids = queries(lm, arpa_ngrams(TRICKY), 3000, seed=1)
    assert_answers_as(lm, image, ids)
    assert image.index("<UNK>") == image.unk == lm.unk and image.contains("<UNK>")
    for order in range(1, lm.order + 1):
        # restrict is a view of the same tables; it answers as the file read up to `order`
        assert_answers_as(_core.NgramLM.parse_arpa(TRICKY.encode(), order), image.restrict(order), ids)
    # The cases the file was written for: extends() of "a c" needs its 4-gram; "e" needs "e f g".
    a_c, e = [lm.index("a"), lm.index("c")], [lm.index("e")]
    assert image.extends(a_c) and image.restrict(4).extends(a_c) and not image.restrict(3).extends(a_c)
    assert image.extends(e) and not image.restrict(2).extends(e)
    with pytest.raises(ValueError):
        image.restrict(0)


def test_an_image_of_an_image_model_read_through_nativelm_decodes_the_same_scores(tmp_path):
    source = tmp_path / "lm.arpa"
    source.write_text(TRICKY, encoding="utf-8")
    text_lm = NativeLM.from_file(source, max_order=3)
    lm = _core.NgramLM.parse_arpa(TRICKY.encode(), 0)
    st = source.stat()
    lm.write_image(str(source), st.st_size, st.st_mtime_ns, str(tmp_path / "lm.bin"))
    write_checksums(str(tmp_path), ["lm.bin"])  # as binarize records it
    image_lm = NativeLM.from_file(tmp_path / "lm.bin", max_order=3)
    assert isinstance(image_lm.core, _core.ImageLM) and image_lm.order == 3
    for words in (["a", "b", "e"], ["<s>", "a", "c", "d"], ["h", "a", "zz", "c", "d"], []):
        assert same(image_lm.score_sentence(words), text_lm.score_sentence(words))
        assert same(image_lm.phrase_estimate(words), text_lm.phrase_estimate(words))


@pytest.fixture(scope="module")
def europarl(tmp_path_factory):
    """europarl.lm (a 5-gram) read as text and as its image; the image's file."""
    path = data_path("moses-lexreo-europarl-fr-en", "europarl.lm")
    lm = _core.NgramLM.parse_arpa(path.read_bytes(), 0)
    out = tmp_path_factory.mktemp("europarl") / "lm.bin"
    return path, lm, write_image(lm, out), out


@pytest.mark.slow
def test_real_image_answers_as_the_arpa_model(europarl):
    path, lm, image, _ = europarl
    ids = queries(lm, arpa_ngrams(path.read_text(encoding="utf-8")), 20000, seed=2)
    assert_answers_as(lm, image, ids)
    assert_answers_as(lm.restrict(3), image.restrict(3), ids[::7])


def test_real_image_scores_as_kenlm(europarl):
    kenlm = pytest.importorskip("kenlm")
    path, lm, image, _ = europarl
    model = kenlm.Model(str(path))
    state, out = kenlm.State(), kenlm.State()
    rng = random.Random(3)
    words = lm.words()
    grams = arpa_ngrams(path.read_text(encoding="utf-8"))
    for g in grams[:: max(1, len(grams) // 5000)] + [tuple(rng.choice(words) for _ in range(6)) for _ in range(2000)]:
        model.NullContextWrite(state)
        for w in g[:-1]:
            model.BaseScore(state, w, out)
            state, out = out, state
        want = model.BaseScore(state, g[-1], out) * LN10
        ids = [image.index(w) for w in g]
        # KenLM sums in floats: a few float roundings of a score (~1e-7 each, relative)
        assert math.isclose(image.logprob(ids[:-1], ids[-1]), want, rel_tol=1e-6, abs_tol=1e-6), g


def test_image_is_compact(europarl):
    """16 bytes a slot below the highest order, 12 there, at a load of 0.85, plus the words."""
    path, lm, _, out = europarl
    counts = lm.counts
    size = out.stat().st_size
    tables = (16 * sum(counts[1:-1]) + 12 * counts[-1]) / 0.85
    assert size <= tables * 1.01 + 24 * counts[0] + path.stat().st_size // 50 + 65536


# ---- corrupt and old images -------------------------------------------------------------------


@pytest.fixture
def tricky_image(tmp_path) -> tuple[_core.NgramLM, Path]:
    lm = _core.NgramLM.parse_arpa(TRICKY.encode(), 0)
    path = tmp_path / "lm.bin"
    lm.write_image("source.arpa", 1, 2, str(path))
    return lm, path


def sections(data: bytes) -> tuple[tuple[int, ...], tuple[int, ...]]:
    begin = struct.unpack_from(f"={SECTIONS}Q", data, SECTION_BEGIN)
    end = struct.unpack_from(f"={SECTIONS}Q", data, SECTION_BEGIN + 8 * SECTIONS)
    return begin, end


def load(path: Path, data: bytes):
    path.write_bytes(data)
    return _core.ImageLM.map_image(str(path))[0]


def test_a_version_1_image_is_refused_with_a_rebuild_hint(tricky_image):
    _, path = tricky_image
    data = bytearray(path.read_bytes())
    struct.pack_into("=I", data, 20, 1)
    path.write_bytes(bytes(data))
    write_checksums(str(path.parent), [path.name])  # past the checksum, to the reader's version check
    with pytest.raises(ArpaError) as err:
        NativeLM.from_file(path)
    message = str(err.value)
    assert message.startswith(f"{path}:") and "\n" not in message
    assert "version 1" in message and "fstdecode binarize" in message


@pytest.mark.parametrize("flips", [400, pytest.param(1500, marks=pytest.mark.slow)])  # the fast set: 400
@pytest.mark.slow
def test_truncations_and_byte_changes_are_errors_or_models_that_answer(tricky_image, flips):
    lm, path = tricky_image
    good = path.read_bytes()
    ids = queries(lm, arpa_ngrams(TRICKY), 300, seed=4)
    outcomes = {"error": 0, "ok": 0}
    for n in range(len(good)):
        with pytest.raises(_core.LmImageError) as err:
            load(path, good[:n])
        assert str(err.value).startswith(f"{path}:") and "\n" not in str(err.value)
    rng = random.Random(6)
    for i in rng.sample(range(len(good)), min(len(good), flips)):
        try:
            image = load(path, good[:i] + bytes([good[i] ^ (1 << rng.randrange(8))]) + good[i + 1:])
        except _core.LmImageError as err:
            assert str(err).startswith(f"{path}:") and "\n" not in str(err)
            outcomes["error"] += 1
            continue
        outcomes["ok"] += 1
        for q in ids:  # whatever the answers, every lookup returns
            for k in range(len(q)):
                image.logprob(q[:k], q[k])
                image.extends(q[:k])
                image.backoff(q[:k])
            image.restrict(1).extends(q[:1])
    assert outcomes["error"] > 0 and outcomes["ok"] > 0


def test_a_table_larger_than_its_slots_is_refused(tricky_image):
    _, path = tricky_image
    data = bytearray(path.read_bytes())
    begin, _ = sections(bytes(data))
    cap, slots, _size = struct.unpack_from("=3Q", data, begin[S_SHAPES])
    struct.pack_into("=Q", data, begin[S_SHAPES], slots + 1)
    with pytest.raises(_core.LmImageError, match="malformed"):
        load(path, bytes(data))


def test_an_escape_out_of_range_reads_nan_and_unsorted_keys_end_their_lookups(tricky_image):
    lm, path = tricky_image
    data = bytearray(path.read_bytes())
    begin, end = sections(bytes(data))
    bigrams = [g for g in arpa_ngrams(TRICKY) if len(g) == 2]
    # Every bigram's prob an escape past the table: each stored bigram reads NaN.
    for at in range(begin[S_SLOTS], end[S_SLOTS], 16):
        if struct.unpack_from("=Q", data, at)[0]:
            struct.pack_into("=I", data, at + 8, ESCAPE | ((1 << 27) - 2))
    image = load(path, bytes(data))
    for g in bigrams:
        assert math.isnan(image.logprob([lm.index(g[0])], lm.index(g[1])))
    # Keys in decreasing order (a table no writer makes): lookups still stop at the table's end.
    keys = [struct.unpack_from("=Q", data, at)[0] for at in range(begin[S_SLOTS], end[S_SLOTS], 16)]
    for at, key in zip(range(begin[S_SLOTS], end[S_SLOTS], 16), sorted(keys, reverse=True)):
        struct.pack_into("=Q", data, at, key or 2**64 - 1)
    image = load(path, bytes(data))
    for g in bigrams:
        image.logprob([lm.index(g[0])], lm.index(g[1]))
        image.extends([lm.index(g[0]), lm.index(g[1])])
