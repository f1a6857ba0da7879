"""The native signature searches under Moses' distortion semantics on a real Moses model (issue 13).

moses-early-distortion-de-en is Moses' regression test: a moses.ini without lexicalized
reordering (trigram LM, d = 6, ``[early-distortion-cost]``, so the jump into ``</s>`` is
charged), and Moses' 1-best totals (``SCORE_i`` of truth/results.txt, 3 decimals). Decoded under
``--distortion-semantics moses`` by the native engine:

* the cascade (native R with the gap rule) at the model's own limit reproduces Moses' 1-best
  totals, and equals the exact A* (which implements Moses' rule on coverage states);
* dp, bounded and fst equal exact's proven scores at d = 3 on all five sentences, both with the
  moses.ini as it is and with ``[early-distortion-cost]`` removed (the jump into ``</s>`` then
  free: the R arc and the signature DP's refund); dp at d = 6 on the shortest sentence too;
* dp agrees with the Python signature DP oracle (which walks gaprule.py's states) on states and
  derivations.

Random models: tests/unit/test_native_gaprule.py.
"""

from __future__ import annotations

import re

import pytest

from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model


pytestmark = pytest.mark.slow

#: Moses' 1-best totals, as truth/results.txt prints them (read by the test, not copied here).
_SCORE = re.compile(r"^SCORE_(\d+) = (\S+)$", re.M)


@pytest.fixture(scope="module")
def inis(moses_de_en, tmp_path_factory):
    """The gold moses.ini, and the same without ``[early-distortion-cost]`` (paths filled in)."""
    text = (moses_de_en / "moses.ini").read_text(encoding="utf-8").replace("${TEST_PATH}", str(moses_de_en))
    late = re.sub(r"\[early-distortion-cost\]\s*yes\s*", "", text)
    assert late != text
    folder = tmp_path_factory.mktemp("de-en")
    (folder / "early.ini").write_text(text, encoding="utf-8")
    (folder / "late.ini").write_text(late, encoding="utf-8")
    return {"early": folder / "early.ini", "late": folder / "late.ini"}


@pytest.fixture(scope="module")
def lines(moses_de_en):
    return (moses_de_en / "to-translate.txt").read_text(encoding="utf-8").splitlines()


def test_native_cascade_reproduces_moses_one_best(moses_de_en, inis, lines):
    scores = {int(i): float(v) for i, v in _SCORE.findall((moses_de_en / "truth" / "results.txt").read_text(encoding="utf-8"))}
    assert sorted(scores) == list(range(len(lines))) == list(range(5))
    model = load_model(inis["early"], distortion_semantics="moses")
    assert model.distortion_limit == 6 and model.early_distortion_cost
    fst, exact = Decoder(model, "fst"), Decoder(model, "exact")
    assert fst.semantics == "moses"
    for i, line in enumerate(lines):
        got, proven = fst.decode(line, i), exact.decode(line, i)
        assert got.optimal and proven.optimal, line
        assert got.best.score == pytest.approx(proven.best.score, abs=1e-9), line
        assert got.best.score == pytest.approx(scores[i], abs=6e-4), line  # Moses prints 3 decimals


@pytest.mark.parametrize("ini", ["early", "late"])
def test_native_signature_searches_equal_exact(inis, lines, ini):
    model = load_model(inis[ini], distortion_semantics="moses", distortion_limit=3)
    assert model.early_distortion_cost is (ini == "early")
    exact = Decoder(model, "exact")
    searches = {m: Decoder(model, m, max_states=10**6) for m in ("dp", "bounded", "fst")}
    assert {d.semantics for d in searches.values()} == {"moses"}
    for i, line in enumerate(lines):
        proven = exact.decode(line, i)
        assert proven.optimal, line
        for name, decoder in searches.items():
            got = decoder.decode(line, i)
            assert got.optimal, (name, line)
            assert got.best.score == pytest.approx(proven.best.score, abs=1e-9), (name, line)
            assert got.best.search_score == pytest.approx(got.best.score, abs=1e-9), (name, line)


def test_native_dp_at_the_models_limit(inis, lines):
    # d = 6 on the 5-word sentence: about 2.5 million signature states.
    model = load_model(inis["early"], distortion_semantics="moses")
    line = min(lines, key=lambda s: len(s.split()))
    got = Decoder(model, "dp", max_states=10**7).decode(line)
    proven = Decoder(model, "exact").decode(line)
    assert got.optimal and proven.optimal
    assert got.best.score == pytest.approx(proven.best.score, abs=1e-9)


@pytest.mark.parametrize("ini", ["early", "late"])
def test_native_dp_equals_the_python_dp_oracle(inis, lines, ini):
    from fstdecode.search import signature_dp

    model = load_model(inis[ini], distortion_semantics="moses", distortion_limit=3)
    native = Decoder(model, "dp", nbest=3, max_states=10**6)
    for i in (2, 3):  # the 7- and 5-word sentences: 31k and 36k states (the Python oracle is slow)
        a = native.decode(lines[i], i)
        b = signature_dp.search(native.problem(lines[i].split(), i), signature_dp.DpOptions(nbest=3, max_states=10**6))
        assert a.stats.states == b.states  # the same space (gaprule.py's states)
        assert [d.search_score for d in a.derivations] == pytest.approx([s for s, _ in b.hypotheses], abs=1e-9)
