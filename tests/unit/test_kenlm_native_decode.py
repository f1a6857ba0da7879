"""KenLM binaries decode in the native engine as the ARPA file they were built from.

The gold folder's moses.binlm.ini is its moses.ini with the probing binary instead of the
ARPA LM (both built from europarl.lm with KenLM's build_binary, not quantized). With either
binary, every sentence of to-translate.txt decodes in the native core (the LM's ``core`` a ``_core.KenLMBinary``) to the ARPA model's translation, with
scores within 1e-4 (binaries store floats, ARPA files are read in doubles). The ``kenlm``
package is blocked throughout: nothing in the native path may score through it.
"""

from __future__ import annotations

import sys

import pytest

from fstdecode import Decoder, load_model
from fstdecode._native import core as _core
from fstdecode.io.kenlm_binary import KenLMBinaryLM, KenLMError

from shared import data_path, run_cli

GOLD = "moses-lexreo-europarl-fr-en"
BINARIES = ["europarl.probing.binlm", "europarl.trie.binlm"]
TOLERANCE = 1e-4
#: (model, method): the gold moses.ini ("lexreo": msd-bidirectional-fe reordering, Moses'
#: distortion) for the methods whose native search has that model; the same table and LM without
#: the reordering model ("plain", the paper's distortion) for the signature searches. The fast set
#: keeps the stack decoder with lexicalized reordering.
CASES = [("lexreo", "stack"),
         pytest.param("lexreo", "exact", marks=pytest.mark.slow),
         pytest.param("lexreo", "coverage", marks=pytest.mark.slow),
         pytest.param("plain", "stack", marks=pytest.mark.slow),
         pytest.param("plain", "dp", marks=pytest.mark.slow),
         pytest.param("plain", "beam", marks=pytest.mark.slow),
         pytest.param("plain", "bounded", marks=pytest.mark.slow),
]
#: The gold model's weights without its LexicalReordering.
PLAIN_WEIGHTS = ["word=-1", "lm=0.5", "distortion=0.5", "tm=0.2,0.2,0.2,0.2,0.2"]


@pytest.fixture(autouse=True)
def no_kenlm_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import kenlm` raises ImportError: nothing in the decoder may score through the package."""
    monkeypatch.setitem(sys.modules, "kenlm", None)



def sentences() -> list[str]:
    return data_path(GOLD, "to-translate.txt").read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def models():
    """The gold models with the ARPA LM and with each binary, keyed by (kind, LM file name)."""
    folder = data_path(GOLD)
    plain = dict(phrase_table=folder / "phrase-table.0-0.gz", weights=PLAIN_WEIGHTS, table_limit=20, distortion_limit=6)
    out = {("lexreo", "europarl.lm"): load_model(folder / "moses.ini"),
           ("plain", "europarl.lm"): load_model(lm=folder / "europarl.lm", **plain)}
    for name in BINARIES:
        out["lexreo", name] = load_model(folder / "moses.binlm.ini", lm=folder / name)
        out["plain", name] = load_model(lm=folder / name, **plain)
    return out


@pytest.fixture(scope="module")
def references(models):
    """The ARPA model's 1-best per method: (translation, score, LM feature) per sentence."""
    cache: dict[tuple[str, str], list[tuple[str, float, float]]] = {}

    def get(kind: str, method: str) -> list[tuple[str, float, float]]:
        if (kind, method) not in cache:
            decoder = Decoder(models[kind, "europarl.lm"], method)
            cache[kind, method] = [
                (r.best.translation, r.best.score, r.best.features.lm)
                for r in (decoder.decode(s) for s in sentences())
            ]
        return cache[kind, method]

    return get


@pytest.mark.parametrize(("kind", "method"), CASES)
@pytest.mark.parametrize("name", BINARIES)
@pytest.mark.slow
def test_binaries_decode_natively_as_the_arpa_file(models, references, kind: str, method: str, name: str) -> None:
    model = models[kind, name]
    assert isinstance(model.lm, KenLMBinaryLM) and model.lm.path.endswith(name)
    assert isinstance(model.lm.core, _core.KenLMBinary)
    decoder = Decoder(model, method)
    for sentence, (translation, score, lm) in zip(sentences(), references(kind, method)):
        got = decoder.decode(sentence)
        assert got.best.translation == translation, sentence
        assert got.best.score == pytest.approx(score, abs=TOLERANCE), sentence
        assert got.best.features.lm == pytest.approx(lm, abs=TOLERANCE), sentence


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
@pytest.mark.parametrize("name", BINARIES)
def test_engine_auto_is_native_for_a_binary(models, name: str) -> None:
    assert Decoder(models["lexreo", name], "stack").searcher is not None


@pytest.mark.slow  # two model loads and decodes a order: ~3.5 s each
@pytest.mark.parametrize("order", [2, 3])
def test_a_lower_lm_order_decodes_as_the_arpa_file_read_up_to_it(order: int) -> None:
    folder = data_path(GOLD)
    arpa = Decoder(load_model(folder / "moses.ini", lm_order=order), "stack")
    for name in BINARIES:
        model = load_model(folder / "moses.binlm.ini", lm=folder / name, lm_order=order)
        assert model.lm.order == order and isinstance(model.lm.core, _core.RestrictedLM)
        decoder = Decoder(model, "stack")
        for sentence in sentences():
            got, want = decoder.decode(sentence), arpa.decode(sentence)
            assert got.best.translation == want.best.translation, (name, sentence)
            assert got.best.score == pytest.approx(want.best.score, abs=TOLERANCE), (name, sentence)


@pytest.mark.slow
def test_cli_decodes_the_binary_ini_as_the_arpa_ini() -> None:
    folder = data_path(GOLD)
    text = (folder / "to-translate.txt").read_text(encoding="utf-8")
    arpa = run_cli(["decode", "-f", str(folder / "moses.ini"), "--method", "stack"], text)
    binary = run_cli(["decode", "-f", str(folder / "moses.binlm.ini"), "--method", "stack"], text)
    assert arpa.returncode == 0 and binary.returncode == 0, (arpa.stderr, binary.stderr)
    assert binary.stdout == arpa.stdout and len(binary.stdout.splitlines()) == len(text.splitlines())


def test_an_unsupported_binary_is_the_readers_one_line_error(tmp_path) -> None:
    path = tmp_path / "quantized.binlm"
    data = bytearray(data_path(GOLD, "europarl.trie.binlm").read_bytes())
    data[96:100] = (3).to_bytes(4, "little")  # model type 3: a quantized trie
    path.write_bytes(bytes(data))
    with pytest.raises(KenLMError) as info:
        load_model(data_path(GOLD, "moses.ini"), lm=path)
    message = str(info.value)
    assert message.startswith(str(path)) and "\n" not in message and "quantized" in message.lower()
    proc = run_cli(["decode", "-f", str(data_path(GOLD, "moses.ini")), "--lm", str(path)], "une phrase\n")
    assert proc.returncode == 2 and proc.stderr.startswith("fstdecode: error: ") and "Traceback" not in proc.stderr
