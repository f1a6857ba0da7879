"""Moses' float arithmetic for the n-best numbers (fstdecode.cli.moses_float).

Small hand-checkable cases of each rule, and the gold lists: every entry of Moses' de-en 50-best
and (slow) Europarl 100-best that fstdecode moses also lists, byte for byte, including those Moses
scores through TrellisPath's recombination arithmetic (ranked 2nd or lower; the winners come from
the stack decoder: tests/integration/test_trellis_winners.py checks them against an oracle).
"""

from __future__ import annotations

import collections
import math
import re

import numpy as np
import pytest
from shared import arpa_text, data_path, run_cli

from fstdecode.cli.moses_float import LN10_F, KenScorer, MosesFloat, NativeKenScorer, fsum, tm_value, transform_lm
from fstdecode.io.arpa import ArpaLM
from fstdecode.io.native_lm import NativeLM

f32 = np.float32


def test_thirteen_phrase_penalties_sum_in_float():
    """13 phrases of p = 2.718: Moses' float sum prints 12.9986, the exact sum 12.9987."""
    one = tm_value(math.log(2.718))
    assert one == f32(math.log(float(f32(2.718))))
    assert f"{float(fsum([one] * 13)):.6g}" == "12.9986"
    assert f"{13 * math.log(2.718):.6g}" == "12.9987"


def test_table_scores_are_floored_float_logs():
    assert tm_value(math.log(0.5)) == f32(math.log(0.5))
    assert tm_value(-1000.0) == f32(-100.0)  # probability 0 in float: FloorScore
    assert tm_value(math.log(1e-50)) == f32(-100.0)  # ln below -100: floored


def test_transform_lm_multiplies_in_float():
    assert LN10_F == f32(2.30258509299405)
    x = f32(-2.5)
    assert transform_lm(x) == f32(x * LN10_F)
    assert float(transform_lm(f32(-100.0))) != -100.0 * math.log(10)  # float, not double


def _lm(tmp_path):
    path = tmp_path / "lm.arpa"
    path.write_text(arpa_text(
        ["-1.0\t<s>\t-0.3", "-1.2\t</s>", "-0.7\ta\t-0.11", "-0.9\tb\t-0.2", "-1.5\tc"],
        ["-0.4\t<s> a\t-0.05", "-0.6\ta b"],
        ["-0.2\t<s> a b"],
    ), encoding="utf-8")
    return ArpaLM.from_file(path)


def test_kenlm_word_scores_add_backoffs_shortest_context_first(tmp_path):
    ken = KenScorer(_lm(tmp_path))
    # c after "<s> a": no bigram "a c", no trigram: p(c) + bo(a) + bo(<s> a), in that order, in float
    expected = f32(f32(f32(-1.5) + f32(-0.11)) + f32(-0.05))
    assert ken.word(["<s>", "a"], "c") == expected
    assert ken.word(["a"], "b") == f32(-0.6)  # the bigram itself: no backoff
    assert ken.word([], "b") == f32(-0.9)
    # an unknown word is <unk> (-100, KenLM's default) plus the context backoffs
    assert ken.word(ken.map(["b"]), ken.map(["zzz"])[0]) == f32(f32(-100.0) + f32(-0.2))


def test_native_lm_float_scores_are_kenscorers(tmp_path):
    """The core's LanguageModel.log10_float walks the tables as KenScorer (Python's reader) does."""
    python = KenScorer(_lm(tmp_path))
    native = NativeKenScorer(NativeLM.from_file(tmp_path / "lm.arpa").core)
    words = ["<s>", "a", "b", "c", "</s>", "zzz"]
    for w in words[1:]:
        for context in ([], ["a"], ["b"], ["<s>"], ["<s>", "a"], ["a", "b"], ["c", "a", "b"], ["zzz", "a"]):
            assert native.word(context, w) == python.word(python.map(context), python.map([w])[0]), (context, w)


def test_native_lm_float_scores_are_kenlms_on_the_un_lm():
    """Against the kenlm package (KenLM's own FullScore, a float) on a real trigram LM: every word
    of the Hansards references (English) in its sentence context, </s> included."""
    kenlm = pytest.importorskip("kenlm")
    path = data_path("english-lm-un", "lm.en.arpa")
    model = kenlm.Model(str(path))
    native = NativeKenScorer(NativeLM.from_file(path).core)
    lines = data_path("hansards-fr-en-decoder", "ref").read_text(encoding="utf-8").lower().splitlines()[:30]
    checked = 0
    for line in lines:
        words = line.split()
        want = [f32(prob) for prob, _, _ in model.full_scores(" ".join(words), bos=True, eos=True)]
        history = ["<s>"]
        for w, expected in zip(words + ["</s>"], want):
            assert native.word(history, w) == expected, (line, w)
            history.append(w)
            checked += 1
    assert checked > 200


def test_estimate_sums_gaps_left_to_right():
    m = [[f32(-1.0), f32(-3.0), f32(-7.0)], [None, f32(-2.0), f32(-4.0)], [None, None, f32(-0.5)]]
    assert MosesFloat.estimate(m, [False, True, False]) == f32(-1.5)
    assert MosesFloat.estimate(m, [False, False, True]) == f32(-3.0)
    assert MosesFloat.estimate(m, [True, True, True]) == f32(0.0)


def _entries(text: str) -> dict:
    """n-best lines keyed by (id, translation, segmentation), with the gold rank of each."""
    out, rank = {}, collections.Counter()
    for line in text.splitlines():
        f = line.split(" ||| ")
        rank[f[0]] += 1
        out.setdefault((f[0], f[1], f[4]), (rank[f[0]], line))
    return out


@pytest.mark.slow
def test_europarl_gold_byte_identical(tmp_path):
    """The Europarl lexicalized-reordering model against Moses' 100-best (about 90 s): the 106
    entries both lists hold, byte for byte (89 with double sums, 95 with float chains alone, all
    106 with TrellisPath's arithmetic for the paths through lost recombinations)."""
    model = data_path("moses-lexreo-europarl-fr-en")
    gold = _entries((model / "truth" / "moses-nbest-100.txt").read_text(encoding="utf-8"))
    nbest = tmp_path / "eu.nbest"
    proc = run_cli(
        ["moses", "-f", str(model / "moses.ini"), "-i", str(model / "to-translate.txt"),
         "-n-best-list", str(nbest), "100", "distinct", "-include-segmentation-in-n-best",
         "-print-alignment-info-in-n-best", "true"],
        cwd=tmp_path, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    ours = _entries(nbest.read_text(encoding="utf-8"))
    shared = [k for k in gold if k in ours]
    same = [k for k in shared if gold[k][1] == ours[k][1]]
    firsts = [k for k in shared if gold[k][0] == 1]
    assert len(firsts) == 5
    assert len(shared) >= 100
    assert same == shared, [(gold[k][1], ours[k][1]) for k in shared if k not in same][:3]


def test_de_en_gold_byte_identical(tmp_path):
    """The de-en early-distortion model against Moses' 50-best (its regression test's results.txt,
    which keeps every field but the id): each entry both lists hold has Moses' numbers and
    segmentation, byte for byte (217 of the 249 with float chains alone)."""
    model = data_path("moses-early-distortion-de-en")
    gold = {}
    for line in (model / "truth" / "results.txt").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^TRANSLATION_(\d+)_NBEST_(\d+)=(.*)$", line)
        if m:
            f = [x.strip() for x in m.group(3).split("|||")]
            gold.setdefault((m.group(1), f[0], f[3]), (int(m.group(2)), f[1], f[2]))
    nbest = tmp_path / "de.nbest"
    proc = run_cli(["moses", "-f", str(model / "moses.ini"), "-i", str(model / "to-translate.txt"),
                    "-n-best-list", str(nbest), "50"], cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    ours = {}
    for line in nbest.read_text(encoding="utf-8").splitlines():
        f = [x.strip() for x in line.split("|||")]
        ours.setdefault((f[0], f[1], f[4]), (f[2], f[3]))
    shared = [k for k in gold if k in ours]
    assert len(shared) >= 240  # 249 of Moses' 250
    assert sum(gold[k][0] >= 2 for k in shared) >= 200
    differ = [(k, gold[k], ours[k]) for k in shared if gold[k][1:] != ours[k]]
    assert not differ, differ[:3]
