"""Tests of fstdecode.io.kenlm_binary: KenLM binaries score as the ARPA file they were built from.

The reference is the gold folder's ARPA file read by ArpaLM; its two binaries (probing and
trie, not quantized) were built from it with KenLM's build_binary (SOURCE.md). Each scoring
test runs both backends of KenLMBinaryLM: the native core's reader (``engine`` ``native``)
and the ``kenlm`` package (``python``, the reference engine's); the latter skip, with the
reason, without the package. Native decoding: test_kenlm_native_decode.py.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import random
import sys
from pathlib import Path

import pytest

from fstdecode import Decoder, load_model
from fstdecode.io.arpa import ArpaLM
from fstdecode.io.kenlm_binary import KENLM_MAGIC, KenLMBinaryLM, KenLMError, is_kenlm_binary
from fstdecode.io.native_lm import NativeLM

from shared import EXAMPLE_DATA, data_path, run_cli

HAVE_KENLM = importlib.util.find_spec("kenlm") is not None
needs_kenlm = pytest.mark.skipif(
    not HAVE_KENLM, reason="the kenlm package is not installed (pip install '.[kenlm]')"
)
GOLD = "moses-lexreo-europarl-fr-en"
BINARIES = ["europarl.probing.binlm", "europarl.trie.binlm"]
TOLERANCE = 1e-4
# The gold model's weights, without its LexicalReordering (tested on the branch that adds it).
GOLD_WEIGHTS = ["word=-1", "lm=0.5", "distortion=0.5", "tm=0.2,0.2,0.2,0.2,0.2"]
#: KenLMBinaryLM's backends: the core's reader, and the kenlm package (needs it).
ENGINES = ["native", pytest.param("python", marks=needs_kenlm)]


@pytest.fixture(scope="module")
def arpa() -> ArpaLM:
    return ArpaLM.from_file(data_path(GOLD, "europarl.lm"))


def test_magic_bytes_detect_binaries() -> None:
    for name in BINARIES:
        path = data_path(GOLD, name)
        assert path.read_bytes()[: len(KENLM_MAGIC)] == KENLM_MAGIC
        assert is_kenlm_binary(path)
    assert not is_kenlm_binary(data_path(GOLD, "europarl.lm"))
    assert not is_kenlm_binary(EXAMPLE_DATA / "lm.arpa")
    assert not is_kenlm_binary(EXAMPLE_DATA / "no-such-file")


def test_without_kenlm_a_binary_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    path = data_path(GOLD, BINARIES[0])
    monkeypatch.setitem(sys.modules, "kenlm", None)  # import kenlm now raises ImportError
    load_model(phrase_table=EXAMPLE_DATA / "phrase-table", lm=path)  # the native reader needs no kenlm
    with pytest.raises(KenLMError) as info:
        load_model(phrase_table=EXAMPLE_DATA / "phrase-table", lm=path, engine="python")
    message = str(info.value)
    assert message.startswith(f"{path}: this is a KenLM binary") and "pip install 'fstdecode[kenlm]'" in message


def test_cli_without_kenlm_exits_2(tmp_path: Path) -> None:
    path = data_path(GOLD, BINARIES[0])
    blocker = tmp_path / "kenlm.py"  # shadows any installed kenlm: importing it fails
    blocker.write_text("raise ImportError('blocked for the test')\n")
    pythonpath = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    args = ["decode", "--phrase-table", str(EXAMPLE_DATA / "phrase-table"), "--lm", str(path)]
    native = run_cli(args, "das muss\n", PYTHONPATH=pythonpath)
    assert native.returncode == 0, native.stderr  # the native engine reads the binary itself
    proc = run_cli([*args, "--engine", "python"], "das muss\n", PYTHONPATH=pythonpath)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("fstdecode: error: ") and "pip install" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", BINARIES)
def test_every_stored_ngram_scores_as_in_the_arpa(arpa: ArpaLM, name: str, engine: str) -> None:
    lm = KenLMBinaryLM.from_file(data_path(GOLD, name), engine=engine)
    assert lm.order == arpa.order == 5 and lm.vocabulary == arpa.vocabulary
    for ngram in arpa._probs:
        context, word = ngram[:-1], ngram[-1]
        assert lm.logprob(context, word) == pytest.approx(arpa.logprob(context, word), abs=TOLERANCE), ngram
        if len(ngram) < arpa.order:
            assert lm.backoff(ngram) == pytest.approx(arpa.backoff(ngram), abs=TOLERANCE), ngram
            # Sound minimisation: a context the binary drops has no continuation in the ARPA file.
            if not lm.extends(ngram):
                assert not arpa.extends(ngram), ngram
            if arpa.extends(ngram):
                assert lm.extends(ngram), ngram


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", BINARIES)
def test_sentences_and_random_sequences_score_as_in_the_arpa(arpa: ArpaLM, name: str, engine: str) -> None:
    lm = KenLMBinaryLM.from_file(data_path(GOLD, name), engine=engine)
    rng = random.Random(13)
    vocabulary = sorted(arpa.vocabulary)
    ngrams = [ng for ng in arpa._probs if len(ng) >= 3]
    sequences = [line.split() for line in data_path(GOLD, "to-translate.txt").read_text().splitlines()]
    for _ in range(300):
        # Random words, with stored n-grams spliced in so that long matches and backoffs occur.
        words = [rng.choice(vocabulary) for _ in range(rng.randint(0, 6))]
        words += list(rng.choice(ngrams)) + [rng.choice(vocabulary), "never-seen-word"][: rng.randint(0, 2)]
        sequences.append(words)
    for words in sequences:
        assert lm.score_sentence(words) == pytest.approx(arpa.score_sentence(words), abs=TOLERANCE), words
        assert lm.score_sentence(words, bos=False, eos=False) == pytest.approx(
            arpa.score_sentence(words, bos=False, eos=False), abs=TOLERANCE)
        assert lm.phrase_estimate(words) == pytest.approx(arpa.phrase_estimate(words), abs=TOLERANCE), words
    assert lm.word("never-seen-word") == arpa.word("never-seen-word") == "<unk>"
    assert "<unk>" in lm and "the" in lm and "never-seen-word" not in lm


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_lower_orders_read_as_the_arpa_read_up_to_them(order: int, engine: str) -> None:
    arpa = ArpaLM.from_file(data_path(GOLD, "europarl.lm"), max_order=order)
    lm = KenLMBinaryLM.from_file(data_path(GOLD, BINARIES[0]), max_order=order, engine=engine)
    assert lm.order == order and lm.restrict(order) is lm
    full = ArpaLM.from_file(data_path(GOLD, "europarl.lm"))
    for ngram in list(full._probs)[::5]:
        assert lm.logprob(ngram[:-1], ngram[-1]) == pytest.approx(arpa.logprob(ngram[:-1], ngram[-1]), abs=TOLERANCE)
        context = ngram[-(order - 1):] if order > 1 else ()
        if context:
            assert lm.backoff(context) == pytest.approx(arpa.backoff(context), abs=TOLERANCE), context
            if arpa.extends(context):
                assert lm.extends(context), context


@pytest.mark.parametrize("engine", ENGINES)
def test_pickles_by_path(engine: str) -> None:
    lm = KenLMBinaryLM.from_file(data_path(GOLD, BINARIES[1]), max_order=3, engine=engine)
    again = pickle.loads(pickle.dumps(lm))
    assert again.order == 3 and again.path == lm.path and (again.core is None) == (lm.core is None)
    words = "the european parliament has".split()
    assert again.score_sentence(words) == lm.score_sentence(words)


@needs_kenlm
@pytest.mark.slow
def test_gold_sentences_decode_as_with_the_arpa_file() -> None:
    table = data_path(GOLD, "phrase-table.0-0.gz")
    sentences = data_path(GOLD, "to-translate.txt").read_text(encoding="utf-8").splitlines()[:3]
    common = dict(phrase_table=table, weights=GOLD_WEIGHTS, table_limit=20, distortion_limit=6)
    arpa_model = load_model(lm=data_path(GOLD, "europarl.lm"), engine="python", **common)
    for name in BINARIES:
        model = load_model(lm=data_path(GOLD, name), engine="python", **common)  # the kenlm package
        assert isinstance(model.lm, KenLMBinaryLM) and model.lm.core is None
        decoder = Decoder(model, "stack", engine="python")
        assert decoder.engine == "python"
        reference = Decoder(arpa_model, "stack", engine="python")
        for sentence in sentences:
            got, want = decoder.decode(sentence), reference.decode(sentence)
            assert got.best.translation == want.best.translation
            assert got.best.score == pytest.approx(want.best.score, abs=TOLERANCE)
            assert got.best.features.lm == pytest.approx(want.best.features.lm, abs=TOLERANCE)


@needs_kenlm
def test_the_native_engine_refuses_a_binary_it_cannot_read_and_says_what_to_do(tmp_path: Path) -> None:
    # A kenlm-package model runs natively when the core reads its file ...
    model = load_model(phrase_table=EXAMPLE_DATA / "phrase-table", lm=data_path(GOLD, BINARIES[0]), engine="python")
    assert Decoder(model, "stack").engine == "native"
    # ... else auto falls back to the Python engine, and native says why and what to do.
    path = tmp_path / "array.binlm"
    data = bytearray(data_path(GOLD, BINARIES[1]).read_bytes())
    data[96:100] = (4).to_bytes(4, "little")  # a trie with array-compressed pointers
    path.write_bytes(bytes(data))
    # (kenlm cannot read this patched copy either: the model reads the real file, named as the copy.)
    model = load_model(phrase_table=EXAMPLE_DATA / "phrase-table", lm=data_path(GOLD, BINARIES[1]), engine="python")
    model.lm.path = str(path)
    assert Decoder(model, "stack").engine == "python"
    with pytest.raises(KenLMError) as info:
        Decoder(model, "stack", engine="native")
    message = str(info.value)
    assert message.startswith(str(path)) and "\n" not in message
    assert "--engine python" in message and "ARPA" in message


@needs_kenlm
@pytest.mark.parametrize("code", ["0", "1", "8", "9"])  # SRILM, IRSTLM, KenLM, lazy KenLM: one reader
def test_old_format_lm_codes_read_binaries_through_kenlm_and_arpa_as_arpa(tmp_path: Path, code: str) -> None:
    for name, kind in ((BINARIES[0], KenLMBinaryLM), ("europarl.lm", NativeLM)):
        ini = tmp_path / f"{code}-{name}.ini"
        ini.write_text(
            f"[ttable-file]\n0 0 0 2 {EXAMPLE_DATA / 'phrase-table'}\n[ttable-limit]\n0\n"
            f"[lmodel-file]\n{code} 0 4 {data_path(GOLD, name)}\n[weight-l]\n0.5\n[weight-t]\n0.5\n0.5\n"
            "[weight-d]\n0.3\n[weight-w]\n-1\n",
            encoding="utf-8",
        )
        model = load_model(ini)
        assert isinstance(model.lm, kind) and model.lm.order == 4
