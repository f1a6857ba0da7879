"""Tests of the native KenLM binary reader (native/kenlm_binary.cpp, ``_core.KenLMBinary``).

The reader must score a probing or trie binary exactly as KenLM does: the ``kenlm`` package's
per-word scores (log10 floats) times ln 10 are compared with ours word by word, on the model's
own test sentences, the gold outputs, every n-gram of the ARPA file the binaries were built
from and thousands of random word sequences. Against the ARPA file read by the native
NgramLM the scores agree to float precision (binaries store floats, ARPA files are read in
doubles). Broken files (truncated anywhere, corrupt header, unsupported types) are one-line
``KenLMFormatError``s naming the file, never a crash.

The real binaries are in ../shared/data (the tests skip without them); no ``build_binary``
is available here, so other binaries are made by cutting or patching copies of these.
"""

from __future__ import annotations

import importlib.util
import math
import random
import struct
from pathlib import Path

import pytest

from fstdecode._native import core as _core
from shared import data_path

LN10 = math.log(10)
GOLD = "moses-lexreo-europarl-fr-en"
BINARIES = ["europarl.probing.binlm", "europarl.trie.binlm"]
OOV = "zz-not-a-word"

needs_kenlm = pytest.mark.skipif(
    importlib.util.find_spec("kenlm") is None, reason="the kenlm package is not installed (pip install '.[kenlm]')"
)


def close(a: float, b: float) -> bool:
    """Equal to float precision: 1e-6, relative for large values (<s> scores ln 10^-99)."""
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


@pytest.fixture(scope="module", params=BINARIES)
def binary(request) -> Path:
    return data_path(GOLD, request.param)


@pytest.fixture(scope="module")
def native(binary: Path) -> _core.KenLMBinary:
    return _core.KenLMBinary(str(binary))


@pytest.fixture(scope="module")
def reference(binary: Path):
    if importlib.util.find_spec("kenlm") is None:
        pytest.skip("the kenlm package is not installed (pip install '.[kenlm]')")
    import kenlm

    return kenlm.Model(str(binary))


@pytest.fixture(scope="module")
def arpa_ngrams() -> list[tuple[str, ...]]:
    """Every n-gram of europarl.lm, the ARPA file the binaries were built from."""
    grams: list[tuple[str, ...]] = []
    section = 0
    for line in data_path(GOLD, "europarl.lm").read_text(encoding="utf-8").splitlines():
        if line.startswith("\\") and line.endswith("-grams:"):
            section = int(line[1:].split("-")[0])
        elif section and line.strip() and not line.startswith("\\"):
            fields = line.split("\t")
            grams.append(tuple(fields[1].split(" ")))
    return grams


@pytest.fixture(scope="module")
def arpa_lm() -> _core.NgramLM:
    return _core.NgramLM.parse_arpa(data_path(GOLD, "europarl.lm").read_bytes(), 0)


def sentences() -> list[list[str]]:
    """The model's input sentences and the gold outputs (translations and the 100-best)."""
    out = [line.split() for line in data_path(GOLD, "to-translate.txt").read_text(encoding="utf-8").splitlines()]
    for line in data_path(GOLD, "truth", "results.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("TRANSLATION_"):
            out.append(line.split("=", 1)[1].split())
    for line in data_path(GOLD, "truth", "moses-nbest-100.txt").read_text(encoding="utf-8").splitlines():
        out.append(line.split(" ||| ")[1].split())
    return out


def random_sequences(words: list[str], count: int, seed: int, longest: int = 12) -> list[list[str]]:
    rnd = random.Random(seed)
    pool = words + [OOV, "<s>", "</s>", "<unk>"]
    return [[rnd.choice(pool) for _ in range(rnd.randint(0, longest))] for _ in range(count)]


def kenlm_context_score(model, context: list[str], word: str) -> float:
    """KenLM's ln p(word | context): the state after ``context`` from the null context."""
    import kenlm

    state, out = kenlm.State(), kenlm.State()
    model.NullContextWrite(state)
    for w in context:
        model.BaseScore(state, w, out)
        state, out = out, state
    return model.BaseScore(state, word, out) * LN10


# ---- the header, the vocabulary --------------------------------------------------------


def test_header_and_vocabulary(native: _core.KenLMBinary, binary: Path) -> None:
    assert native.path == str(binary)
    assert native.kind == ("probing" if "probing" in binary.name else "trie")
    assert native.order == 5
    # The ARPA counts (probing), or those of build_binary's trie with <unk> and SRI blanks.
    arpa_counts = (3305, 14915, 2103, 980, 568)
    if native.kind == "probing":
        assert native.counts == arpa_counts
    else:
        assert native.counts[0] == 3306 and native.counts[1:] >= arpa_counts[1:] and native.counts[-1] == 568
    words = native.words()
    assert len(words) == native.vocab_size == 3306 and words[0] == "<unk>" and native.has_words
    assert [native.index(w) for w in words] == list(range(len(words)))
    assert native.index(OOV) == native.index("<UNK>") == native.index("") == native.unk == 0
    assert native.index("\udcff") == 0 and native.index(7) == 0  # not encodable, not a str


@needs_kenlm
def test_vocabulary_is_kenlms(native: _core.KenLMBinary, reference, binary: Path) -> None:
    from fstdecode.io.kenlm_binary import KenLMBinaryLM

    words = native.words()
    assert set(words) == KenLMBinaryLM.from_file(binary).vocabulary
    assert all(w in reference for w in words[1:])


def test_vocabulary_equals_the_arpa_files(native: _core.KenLMBinary, arpa_lm: _core.NgramLM) -> None:
    assert set(native.words()) == set(arpa_lm.words())


# ---- scores equal KenLM's --------------------------------------------------------------


@needs_kenlm
def test_sentences_score_as_kenlm(native: _core.KenLMBinary, reference) -> None:
    checked = 0
    for words in sentences():
        want = [p * LN10 for p, _, _ in reference.full_scores(" ".join(words))]
        got = native.score_words(words)
        assert len(got) == len(want) == len(words) + 1
        for g, w in zip(got, want):
            assert close(g, w), (words, g, w)
        checked += len(got)
    assert checked > 10000


@needs_kenlm
def test_random_sequences_score_as_kenlm(native: _core.KenLMBinary, reference) -> None:
    words = native.words()
    for seq in random_sequences(words, 3000, seed=11):
        text = " ".join(seq)
        for bos in (True, False):
            want = [p * LN10 for p, _, _ in reference.full_scores(text, bos=bos, eos=True)]
            got = native.score_words(seq, bos=bos)
            assert all(close(g, w) for g, w in zip(got, want)) and len(got) == len(want), (seq, bos, got, want)


@needs_kenlm
@pytest.mark.slow
def test_every_arpa_ngram_scores_as_kenlm(native: _core.KenLMBinary, reference, arpa_ngrams) -> None:
    """Each stored n-gram as a query, alone and after a random word (deep matches, backoffs)."""
    rnd = random.Random(5)
    words = native.words()
    for gram in arpa_ngrams:
        for ctx in (list(gram[:-1]), [rnd.choice(words), *gram[:-1]], ["<s>", *gram[:-1]]):
            want = kenlm_context_score(reference, ctx, gram[-1])
            got = native.logprob_words(ctx, gram[-1])
            assert close(got, want), (ctx, gram[-1], got, want)
            ids = native.indices(ctx)
            assert native.logprob(ids, native.index(gram[-1])) == got


@needs_kenlm
def test_unigrams_backoffs_and_extends_are_kenlms(native: _core.KenLMBinary, binary: Path, arpa_ngrams) -> None:
    from fstdecode.io.kenlm_binary import KenLMBinaryLM

    py = KenLMBinaryLM.from_file(binary)
    for w in native.words():
        assert close(native.unigram(native.index(w)), py.unigram_logprob(w)), w
    rnd = random.Random(3)
    contexts = [list(g) for g in arpa_ngrams if len(g) < 5]
    contexts = rnd.sample(contexts, 1500) + random_sequences(native.words(), 500, seed=4, longest=4)
    for ctx in contexts:
        ids = native.indices(ctx)
        assert native.extends(ids) == py.extends(ctx), ctx
        assert close(native.backoff(ids), py.backoff(ctx)), ctx


# ---- scores equal the ARPA file's (native NgramLM) ----------------------------------------


@pytest.mark.slow
def test_scores_equal_the_arpa_files(native: _core.KenLMBinary, arpa_lm: _core.NgramLM, arpa_ngrams) -> None:
    rnd = random.Random(9)
    words = native.words()
    queries = [(list(g[:-1]), g[-1]) for g in arpa_ngrams]
    queries += [([rnd.choice(words), *g[:-1]], g[-1]) for g in arpa_ngrams]
    for seq in random_sequences(words, 3000, seed=12):
        seq = ["<s>", *seq, "</s>"]
        queries += [(seq[:i], seq[i]) for i in range(1, len(seq))]
    for ctx, w in queries:
        got = native.logprob_words(ctx, w)
        want = arpa_lm.logprob_words(ctx, w)
        assert close(got, want), (ctx, w, got, want)
    for w in words:
        assert close(native.unigram(native.index(w)), arpa_lm.unigram_logprob(w)), w


@pytest.mark.slow
def test_backoffs_and_extends_agree_with_the_arpa_file(
    native: _core.KenLMBinary, arpa_lm: _core.NgramLM, arpa_ngrams
) -> None:
    """Backoffs are the ARPA file's. extends() is KenLM's state test: true for every context
    the ARPA file extends, and beyond that only for n-grams with a written backoff."""
    rnd = random.Random(2)
    contexts = [list(g) for g in arpa_ngrams if len(g) < 5]
    contexts += random_sequences(native.words(), 2000, seed=6, longest=4)
    rnd.shuffle(contexts)
    for ctx in contexts:
        ids = native.indices(ctx)
        assert close(native.backoff(ids), arpa_lm.backoff_words(ctx)), ctx
        if arpa_lm.extends_words(ctx):
            assert native.extends(ids), ctx
        elif native.extends(ids):
            assert arpa_lm.backoff_words(ctx) != 0.0 or tuple(ctx) in set(arpa_ngrams), ctx


def test_queries_check_ids(native: _core.KenLMBinary) -> None:
    with pytest.raises(IndexError):
        native.logprob([0], native.vocab_size)
    with pytest.raises(IndexError):
        native.backoff([-1])
    with pytest.raises(TypeError):
        native.score_words("a str")
    assert native.backoff([]) == 0.0 and not native.extends([])
    long_ctx = native.indices(["<s>"] * 9)  # only the last order-1 words count
    assert native.logprob(long_ctx, 1) == native.logprob(long_ctx[-4:], 1)


# ---- broken files ----------------------------------------------------------------------


def load_error(path: Path) -> str:
    with pytest.raises(_core.KenLMFormatError) as info:
        _core.KenLMBinary(str(path))
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    return message


def test_truncated_files_are_errors(binary: Path, tmp_path: Path) -> None:
    data = binary.read_bytes()
    cuts = [0, 1, 20, 60, 87, 88, 100, 120, 150, 152, 160, 4000, len(data) // 3, len(data) // 2]
    cuts += [len(data) - 30000, len(data) - 20000, len(data) - 100, len(data) - 2, len(data) - 1]
    cuts += random.Random(1).sample(range(len(data)), 20)
    for cut in cuts:
        path = tmp_path / f"cut-{cut}.binlm"
        path.write_bytes(data[:cut])
        message = load_error(path)
        assert any(key in message for key in ("truncated", "not a KenLM binary", "fewer words")), (cut, message)


def patched(data: bytes, offset: int, fmt: str, value) -> bytes:
    return data[:offset] + struct.pack(fmt, value) + data[offset + struct.calcsize(fmt) :]


def test_corrupt_and_unsupported_headers_are_errors(binary: Path, tmp_path: Path) -> None:
    data = binary.read_bytes()
    trie = b"trie" in binary.name.encode()

    def check(name: str, content: bytes, *expected: str) -> None:
        path = tmp_path / name
        path.write_bytes(content)
        message = load_error(path)
        assert all(e in message for e in expected), message

    check("quant.binlm", patched(data, 96, "<I", 3), "quantized trie")
    check("array.binlm", patched(data, 96, "<I", 4), "array-compressed")
    check("quant-array.binlm", patched(data, 96, "<I", 5), "quantized", "array-compressed")
    check("rest.binlm", patched(data, 96, "<I", 1), "rest costs")
    check("type.binlm", patched(data, 96, "<I", 77), "unknown model type 77")
    check("sanity.binlm", patched(data, 60, "<f", 2.0), "corrupt KenLM binary header")
    check("magic.binlm", data[:40] + b"X" + data[41:], "corrupt KenLM binary header")
    check("version.binlm", data.replace(b"format version 5", b"format version 4", 1), "version 4")
    check("incomplete.binlm", b"mmap lm http://kheafield.com/code incomplete\n" + bytes(200), "did not finish")
    check("order0.binlm", patched(data, 88, "<B", 0), "order 0")
    check("order9.binlm", patched(data, 88, "<B", 9), "KenLM binary")
    check("search-version.binlm", patched(data, 104, "<I", 7), "version 7")
    check("multiplier.binlm", patched(data, 92, "<f", float("nan")), "probing multiplier")
    check("count.binlm", patched(data, 108 + 8, "<Q", 1 << 60), "impossible 2-gram count")
    check("count-big.binlm", patched(data, 108 + 16, "<Q", 10**6), "truncated")
    check("novocab.binlm", patched(data, 152 if trie else 156, "<Q" if trie else "<I", 10**6), "corrupt")
    check("words.binlm", data + b"extra\0", "more words")
    check("arpa.binlm", data_path(GOLD, "europarl.lm").read_bytes(), "not a KenLM binary")
    check("empty.binlm", b"", "not a KenLM binary")
    message = load_error(tmp_path / "missing.binlm")
    assert "cannot open" in message
    with pytest.raises(_core.KenLMFormatError, match="not a regular file"):
        _core.KenLMBinary(str(tmp_path))


def test_damaged_tables_never_crash(binary: Path, tmp_path: Path) -> None:
    """Random bytes over the tables: the load may refuse, queries must stay in the file."""
    data = bytearray(binary.read_bytes())
    words = _core.KenLMBinary(str(binary)).words()
    rnd = random.Random(8)
    # The n-gram tables start after the vocabulary (probing: 8 + 4957 12-byte slots; trie:
    # 8 + 3306 hashes); the word list takes the last ~28 kB.
    tables = 152 + (8 + 4957 * 12 if "probing" in binary.name else 8 + 3306 * 8)
    loaded = 0
    for trial in range(8):
        damaged = bytearray(data)
        start = 152 if trial % 4 == 0 else tables  # now and then the vocabulary too
        for _ in range(len(data) // 50):
            damaged[rnd.randrange(start, len(data) - 30000)] = rnd.randrange(256)
        path = tmp_path / f"damaged-{trial}.binlm"
        path.write_bytes(bytes(damaged))
        try:
            lm = _core.KenLMBinary(str(path))
        except _core.KenLMFormatError:
            continue
        loaded += 1
        for seq in random_sequences(words, 300, seed=trial):
            for score in lm.score_words(seq):
                assert isinstance(score, float)
            ids = lm.indices(seq[:4])
            lm.backoff(ids)
            lm.extends(ids)
    assert loaded >= 4
