"""Several LMs (moses.ini KENLM lines, each a feature with its own weight), searched as one
:class:`~fstdecode.model.combined_lm.CombinedLM` whose scores are their weighted sum.

Checks: the combined core's queries are the weighted sums of its parts' (and its trim drops a
word only when no part extends the context); every method's result on small models is the
Python coverage DP's (the oracle, which scores through the same LM object's word queries) and
each reported score is the scorer's; each LM's feature is that LM's own sentence score.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

from fstdecode.decoder import Decoder
from fstdecode.model.combined_lm import CombinedLM, CombinedLMError
from fstdecode.model.features import FeatureError
from fstdecode.model.model import load_lm, load_model
from fstdecode.problem.scorer import features

from shared import EXAMPLE_DATA, arpa_text, assert_sound, oracle_outcome

#: A second LM over the example's English words, with other probabilities (and a word the first lacks).
SECOND = arpa_text(
    ["-1.2\t<s>\t-0.3", "-0.9\t</s>", "-1.5\t<unk>", "-0.7\tthis\t-0.2", "-0.8\tmust\t-0.1", "-1.1\tbe\t-0.4",
     "-1.3\tour\t-0.2", "-1.0\tconcern\t-0.3", "-1.4\talso\t-0.2", "-1.6\tequally", "-2.0\textra"],
    ["-0.2\t<s> this", "-0.3\tthis must", "-0.25\tmust be\t-0.1", "-0.4\tour concern", "-0.5\tbe our"],
    ["-0.1\tmust be our"],
)


@pytest.fixture(scope="module")
def two_lm_ini(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("two")
    (root / "second.arpa").write_text(SECOND, encoding="utf-8")
    text = (EXAMPLE_DATA / "moses.ini").read_text(encoding="utf-8").replace("${MODEL_DIR}", str(EXAMPLE_DATA))
    text = text.replace("[feature]\n", f"[feature]\nKENLM name=Second path={root / 'second.arpa'}\n")
    text = text.replace("[weight]\n", "[weight]\nSecond= 0.4\n")
    ini = root / "moses.ini"
    ini.write_text(text, encoding="utf-8")
    return ini


def test_the_model_has_each_lm_as_a_feature(two_lm_ini):
    model = load_model(two_lm_ini)
    assert isinstance(model.lm, CombinedLM) and model.lm.names == ("Second", "KENLM0")
    assert model.weights.lms == (0.4, 1.0) and model.weights.lm == 1.0
    assert model.show_weights()[:2] == ["Second= 0.400000", "KENLM0= 1.000000"]
    assert model.lm.order == 3  # the larger part's


def test_the_combined_queries_are_the_weighted_sums(two_lm_ini):
    model = load_model(two_lm_ini)
    lm = model.lm
    words = ["<s>", "this", "must", "be", "our", "concern", "also", "extra", "nowhere", "</s>"]
    for n in range(0, 3):
        for context in itertools.product(words[:-1], repeat=n):
            for word in words[1:]:
                want = sum(w * part.logprob(context, word) for w, part in zip(lm.weights, lm.parts))
                assert lm.logprob(context, word) == pytest.approx(want, abs=1e-12), (context, word)
            if n:
                assert lm.backoff(context) == pytest.approx(
                    sum(w * part.backoff(context) for w, part in zip(lm.weights, lm.parts)), abs=1e-12)
                assert lm.extends(context) == any(part.extends(context) for part in lm.parts)
    sentence = ["this", "must", "be", "our", "concern", "extra"]
    assert lm.score_sentence(sentence) == pytest.approx(sum(lm.core.score_words(sentence, True, True)), abs=1e-9)
    assert lm.part_scores(sentence) == tuple(part.score_sentence(sentence) for part in lm.parts)
    assert "extra" in lm and "nowhere" not in lm and lm.word("nowhere") == "<unk>"


@pytest.mark.parametrize("method", ["stack", "beam", "dp", "bounded", "coverage", "exact", "fst"])
def test_every_method_finds_the_oracles_best_with_two_lms(two_lm_ini, method):
    model = load_model(two_lm_ini)
    decoder = Decoder(model, method)
    exact = method in ("dp", "bounded", "coverage", "exact", "fst")
    for line in ("das muss unsere sorge gleichermaßen sein", "das muss sein", "unsere sorge"):
        words = line.split()
        problem = decoder.problem(words)
        result = decoder.decode(line)
        oracle = oracle_outcome(problem)
        best = oracle.hypotheses[0][0]
        if exact:
            assert result.optimal and result.best.score == pytest.approx(best, abs=1e-9), (method, line)
        else:
            assert result.best.score <= best + 1e-9
        # the reported score is the scorer's, and each LM's feature is that LM's own score
        f = features(len(words), result.best.phrases, model.lm, model.table.num_scores,
                     semantics=model.distortion_semantics)
        assert model.weights.total(f) == pytest.approx(result.best.score, abs=1e-9)
        target = result.best.translation.split()
        assert result.best.features.lms == pytest.approx([part.score_sentence(target) for part in model.lm.parts])
        assert result.best.features.lm == pytest.approx(
            sum(w * v for w, v in zip(model.weights.lms, result.best.features.lms)), abs=1e-9)


def test_several_lms_need_weights_of_zero_or_more_and_each_by_its_name(two_lm_ini):
    with pytest.raises(CombinedLMError, match="Second's weight is -0.5"):
        load_model(two_lm_ini, weights=["Second=-0.5"])
    with pytest.raises(FeatureError, match="the model has 2 LMs; give each its weight by its name"):
        load_model(two_lm_ini, weights=["lm=0.5"])
    model = load_model(two_lm_ini, weights=["KENLM0=0.25", "Second=2"])
    assert model.weights.lms == (2.0, 0.25) and model.lm.weights == (2.0, 0.25)


def test_the_native_combined_lm_checks_its_arguments(two_lm_ini):
    from fstdecode._native import core

    part = load_lm(EXAMPLE_DATA / "lm.arpa", None).core
    with pytest.raises(ValueError, match="1 weight\\(s\\) for 2 language models"):
        core.CombinedLM([part, part], [1.0], ["a"])
    with pytest.raises(ValueError, match="must be a finite number >= 0"):
        core.CombinedLM([part, part], [1.0, math.nan], ["a"])
    with pytest.raises(ValueError, match="at least one part"):
        core.CombinedLM([], [], [])
    combined = core.CombinedLM([part, part], [0.5, 0.5], ["a", "b"])
    assert combined.vocab_size == 3 and combined.index("b") == 1 and combined.index("zzz") == combined.unk


def test_a_combined_model_pickles_and_decodes_the_same(two_lm_ini):
    import pickle

    model = load_model(two_lm_ini)
    again = pickle.loads(pickle.dumps(model))
    line = "das muss unsere sorge gleichermaßen sein"
    assert Decoder(again, "exact").decode(line).best.score == Decoder(model, "exact").decode(line).best.score
