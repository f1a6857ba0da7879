"""Nothing falls back to Python: every registered method decodes in the native core.

For every method (but the ``exhaustive`` oracle of fstdecode.reference) × {the gold Europarl
model with its msd-bidirectional-fe lexicalized reordering, the same table and LM without it} ×
{the ARPA LM, its KenLM probing binary, its KenLM trie binary} × a 600-word sentence, a Decoder
decodes with every Python search that could serve it made to raise (the signature and coverage
DPs, the Python R builder, the Python ARPA reader) and the ``kenlm`` package blocked, and the line
gets a derivation whose score is the scorer's. Budgets are small (a 600-word line runs over them
and keeps the native stack decoder's derivation, the decoder's one rule for a budget), so that
each decode is well under a second.

The shared data (../shared/data) holds the model; without it the module skips.
"""

from __future__ import annotations

import sys

import pytest

from fstdecode import Decoder, load_model
from fstdecode.decoder import METHODS
from fstdecode.fst import reorder
from fstdecode.io import arpa
from fstdecode.io.kenlm_binary import KenLMBinaryLM
from fstdecode.io.native_lm import NativeLM
from fstdecode.search import coverage_dp, signature_dp

from shared import data_path

GOLD = "moses-lexreo-europarl-fr-en"
LMS = ["europarl.lm", "europarl.probing.binlm", "europarl.trie.binlm"]
#: The gold model's weights without its LexicalReordering.
PLAIN_WEIGHTS = ["word=-1", "lm=0.5", "distortion=0.5", "tm=0.2,0.2,0.2,0.2,0.2"]
#: Options that keep each of the 600-word decodes short: small beams, small budgets.
OPTIONS = {
    "stack": {"beam_size": 5},
    "beam": {"beam_size": 2},
    "dp": {"max_states": 2_000},
    "bounded": {"max_states": 2_000},
    "coverage": {"max_states": 2_000},
    "exact": {"max_states": 2_000},
    "prove": {"max_states": 2_000},
    "fst": {"max_states": 2_000},
}
NATIVE_METHODS = [name for name in METHODS if name != "exhaustive"]


def test_every_method_but_the_oracles_is_covered():
    # A new method must say here how it is decoded (and so be checked to be native).
    assert set(NATIVE_METHODS) == set(OPTIONS)


@pytest.fixture(autouse=True)
def no_python_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Python search and reader a decoder could fall back to raises; ``import kenlm`` fails."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("a Python oracle served a user's decode")

    monkeypatch.setitem(sys.modules, "kenlm", None)
    monkeypatch.setattr(signature_dp, "search", refuse)
    monkeypatch.setattr(signature_dp, "run", refuse)
    monkeypatch.setattr(coverage_dp, "search", refuse)
    monkeypatch.setattr(reorder, "build_reordering", refuse)
    monkeypatch.setattr(arpa.ArpaLM, "from_file", refuse)


@pytest.fixture(scope="module")
def models():
    """(reordering?, LM file) -> the model; skips without the shared data."""
    folder = data_path(GOLD)
    plain = dict(phrase_table=folder / "phrase-table.0-0.gz", weights=PLAIN_WEIGHTS, table_limit=20, distortion_limit=6)
    out = {}
    for name in LMS:
        out[True, name] = load_model(folder / "moses.ini", lm=folder / name)
        out[False, name] = load_model(lm=folder / name, **plain)
    return out


@pytest.fixture(scope="module")
def long_line() -> list[str]:
    """600 words: the gold input's sentences, one after another, repeated."""
    words = data_path(GOLD, "to-translate.txt").read_text(encoding="utf-8").split()
    return (words * (600 // len(words) + 1))[:600]


@pytest.mark.slow  # 42 decodes of 600 words: about 30 s on 2 busy cores
@pytest.mark.parametrize("lm", LMS)
@pytest.mark.parametrize("lexreo", [True, False], ids=["lexreo", "plain"])
@pytest.mark.parametrize("method", NATIVE_METHODS)
def test_every_method_decodes_natively(models, long_line, method, lexreo, lm):
    model = models[lexreo, lm]
    assert (model.reordering is not None) == lexreo
    assert isinstance(model.lm, NativeLM if lm.endswith(".lm") else KenLMBinaryLM)
    decoder = Decoder(model, method, **OPTIONS[method])
    assert not hasattr(decoder, "engine")  # no engine to resolve: the method's search is the core's
    got = decoder.decode(long_line)
    assert got.error is None, got.error
    assert got.best is not None and sum(p.end - p.start + 1 for p in got.best.phrases) == 600
    assert got.best.search_score == pytest.approx(got.best.score, abs=1e-4 * max(1.0, abs(got.best.score)))


@pytest.mark.parametrize("method", NATIVE_METHODS)
@pytest.mark.slow
def test_every_method_decodes_natively_fast(models, method):
    # The fast set's slice of the matrix: a short line, the trie binary, with reordering.
    words = data_path(GOLD, "to-translate.txt").read_text(encoding="utf-8").splitlines()[0].split()
    got = Decoder(models[True, "europarl.trie.binlm"], method, **OPTIONS[method]).decode(words)
    assert got.error is None and got.best is not None, got.error
