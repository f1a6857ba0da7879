"""Tests of fstdecode.io.kenlm_binary: KenLM binaries score as the ARPA file they were built from.

The reference is the gold folder's ARPA file read by ArpaLM; its two binaries (probing and
trie, not quantized) were built from it with KenLM's build_binary (SOURCE.md). The binaries are
read by the native core's reader; the ``kenlm`` package is an oracle only (its scores against the
reader's; skipped, with the reason, without it). Native decoding: test_kenlm_native_decode.py.
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


def test_without_kenlm_a_binary_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    path = data_path(GOLD, BINARIES[0])
    monkeypatch.setitem(sys.modules, "kenlm", None)  # import kenlm now raises ImportError
    model = load_model(phrase_table=EXAMPLE_DATA / "phrase-table", lm=path)  # the native reader needs no kenlm
    assert Decoder(model, "stack").decode("das muss").best is not None


@pytest.mark.slow
def test_cli_refuses_the_engine_flag_in_one_line(tmp_path: Path) -> None:
    path = data_path(GOLD, BINARIES[0])
    blocker = tmp_path / "kenlm.py"  # shadows any installed kenlm: importing it fails
    blocker.write_text("raise ImportError('blocked for the test')\n")
    pythonpath = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    args = ["decode", "--phrase-table", str(EXAMPLE_DATA / "phrase-table"), "--lm", str(path)]
    native = run_cli(args, "das muss\n", PYTHONPATH=pythonpath)
    assert native.returncode == 0, native.stderr  # the native reader reads the binary itself
    for old in (["--engine", "python"], ["--engine=native"]):
        proc = run_cli([*args, *old], "das muss\n", PYTHONPATH=pythonpath)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr == (
            "fstdecode: error: --engine was removed: every method runs in the native core "
            "(the Python searches are reference oracles for the tests)\n"
        )
        assert proc.stdout == ""


@needs_kenlm
@pytest.mark.parametrize("name", BINARIES)
def test_the_native_reader_scores_as_the_kenlm_package(name: str) -> None:
    # The kenlm package as an oracle of the core's reader: the same sentence scores (log10 there).
    import kenlm

    lm, oracle = KenLMBinaryLM.from_file(data_path(GOLD, name)), kenlm.Model(str(data_path(GOLD, name)))
    for words in (line.split() for line in data_path(GOLD, "to-translate.txt").read_text().splitlines()):
        want = oracle.score(" ".join(words), bos=True, eos=True) * 2.302585092994046
        assert lm.score_sentence(words) == pytest.approx(want, rel=1e-6, abs=TOLERANCE), words  # float sums


@pytest.mark.parametrize("name", BINARIES)
@pytest.mark.slow
def test_every_stored_ngram_scores_as_in_the_arpa(arpa: ArpaLM, name: str) -> None:
    lm = KenLMBinaryLM.from_file(data_path(GOLD, name))
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


@pytest.mark.parametrize("name", BINARIES)
def test_sentences_and_random_sequences_score_as_in_the_arpa(arpa: ArpaLM, name: str) -> None:
    lm = KenLMBinaryLM.from_file(data_path(GOLD, name))
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


@pytest.mark.parametrize("order", [1, 2, 3, 4])
@pytest.mark.slow
def test_lower_orders_read_as_the_arpa_read_up_to_them(order: int) -> None:
    arpa = ArpaLM.from_file(data_path(GOLD, "europarl.lm"), max_order=order)
    lm = KenLMBinaryLM.from_file(data_path(GOLD, BINARIES[0]), max_order=order)
    assert lm.order == order and lm.restrict(order) is lm
    full = ArpaLM.from_file(data_path(GOLD, "europarl.lm"))
    for ngram in list(full._probs)[::5]:
        assert lm.logprob(ngram[:-1], ngram[-1]) == pytest.approx(arpa.logprob(ngram[:-1], ngram[-1]), abs=TOLERANCE)
        context = ngram[-(order - 1):] if order > 1 else ()
        if context:
            assert lm.backoff(context) == pytest.approx(arpa.backoff(context), abs=TOLERANCE), context
            if arpa.extends(context):
                assert lm.extends(context), context


def test_pickles_by_path() -> None:
    lm = KenLMBinaryLM.from_file(data_path(GOLD, BINARIES[1]), max_order=3)
    again = pickle.loads(pickle.dumps(lm))
    assert again.order == 3 and again.path == lm.path and again.core is not None
    words = "the european parliament has".split()
    assert again.score_sentence(words) == lm.score_sentence(words)


def test_a_binary_the_reader_cannot_read_is_refused_with_what_to_do(tmp_path: Path) -> None:
    # No fallback to the kenlm package: an array-compressed trie is refused in one line.
    path = tmp_path / "array.binlm"
    data = bytearray(data_path(GOLD, BINARIES[1]).read_bytes())
    data[96:100] = (4).to_bytes(4, "little")  # a trie with array-compressed pointers
    path.write_bytes(bytes(data))
    with pytest.raises(KenLMError) as info:
        load_model(phrase_table=EXAMPLE_DATA / "phrase-table", lm=path)
    message = str(info.value)
    assert "\n" not in message and "ARPA" in message


@pytest.mark.parametrize("code", ["8", "9"])  # KenLM, lazy KenLM: one reader (0 SRILM and 1 IRSTLM are refused)
def test_old_format_lm_codes_read_binaries_through_kenlm_and_arpa_as_arpa(tmp_path: Path, code: str) -> None:
    for name, kind in ((BINARIES[0], KenLMBinaryLM), ("europarl.lm", NativeLM)):
        ini = tmp_path / f"{code}-{name}.ini"
        ini.write_text(
            f"[ttable-file]\n0 0 0 2 {EXAMPLE_DATA / 'phrase-table'}\n[ttable-limit]\n0\n"
            f"[lmodel-file]\n{code} 0 4 {data_path(GOLD, name)}\n[weight-l]\n0.5\n[weight-t]\n0.5\n0.5\n"
            "[weight-d]\n0.3\n[weight-w]\n-1\n",
            encoding="utf-8",
        )
        model = load_model(ini)  # the line's order 4 is not a truncation: Moses' KENLM reads the file's 5
        assert isinstance(model.lm, kind) and model.lm.order == 5
