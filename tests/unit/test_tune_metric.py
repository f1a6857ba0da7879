"""fstdecode.tune.metric: the statistics a tuner sums give sacrebleu's own corpus scores.

The oracle is sacrebleu's public API (corpus_bleu / corpus_chrf on the picked translations);
the vectorized scores (the line search's) must equal the one-at-a-time ones.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sacrebleu = pytest.importorskip("sacrebleu")

from fstdecode.tune.metric import Metric, MetricError, MetricSettings  # noqa: E402

from shared import examples  # noqa: E402

WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "The", "Cat", ".", ","]
sentence = st.lists(st.sampled_from(WORDS), min_size=0, max_size=9).map(" ".join)


def corpus(name: str, hyps, refs, lowercase: bool, tokenize: str) -> float:
    columns = [list(c) for c in zip(*refs)]
    if name == "bleu":
        return sacrebleu.corpus_bleu(hyps, columns, tokenize=tokenize, lowercase=lowercase).score
    return sacrebleu.metrics.CHRF(lowercase=lowercase).corpus_score(hyps, columns).score


@settings(max_examples=examples(80), deadline=None)
@given(data=st.data(), name=st.sampled_from(["bleu", "chrf"]), lowercase=st.booleans(),
       tokenize=st.sampled_from(["none", "13a"]), nrefs=st.integers(1, 3))
def test_summed_statistics_score_as_sacrebleu(data, name, lowercase, tokenize, nrefs):
    """Random hypotheses against 1-3 references: the score of the summed statistics is sacrebleu's
    corpus score of the same translations, and the vectorized score equals it."""
    n = data.draw(st.integers(1, 6))
    refs = [[data.draw(sentence.filter(bool)) for _ in range(nrefs)] for _ in range(n)]
    hyps = [data.draw(sentence) for _ in range(n)]
    metric = Metric(MetricSettings(name, tokenize, lowercase), refs)
    total = np.sum([metric.stats(i, h) for i, h in enumerate(hyps)], axis=0)
    want = corpus(name, hyps, refs, lowercase, tokenize)
    assert metric.score(total) == pytest.approx(want, abs=1e-9)
    assert metric.scores(total[None, :])[0] == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("name", ["bleu", "chrf"])
def test_vectorized_scores_equal_the_scalar_ones_on_edge_rows(name):
    """Rows with no match at some order, no n-gram at some order, empty hypotheses: the numpy form
    follows sacrebleu's smoothing and breaks (why: those are where the formulas branch)."""
    refs = [["the cat sat on the mat"], ["a dog"]]
    metric = Metric(MetricSettings(name), refs)
    rows = []
    for hyp_a in ("", "the", "the cat", "cat the mat", "the cat sat on the mat", "dog dog dog dog dog"):
        for hyp_b in ("", "a", "a dog", "dog a"):
            rows.append(np.add(metric.stats(0, hyp_a), metric.stats(1, hyp_b)))
    rows = np.array(rows)
    got = metric.scores(rows)
    for row, value in zip(rows, got):
        assert value == pytest.approx(metric.score(row), abs=1e-9)


def test_unknown_metric_and_tokenizer_are_refused():
    with pytest.raises(MetricError, match="unknown metric 'ter'"):
        Metric(MetricSettings("ter"), [["a"]])
    with pytest.raises(MetricError, match="unknown tokenizer 'spacy'"):
        Metric(MetricSettings("bleu", "spacy"), [["a"]])


def test_signature_is_sacrebleus():
    metric = Metric(MetricSettings("bleu", "none", True), [["a b", "a c"]])
    assert metric.signature().startswith("nrefs:2|case:lc|eff:no|tok:none|smooth:exp|version:")
