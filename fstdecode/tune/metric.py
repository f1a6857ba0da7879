"""The tuning metric: sacrebleu's BLEU or chrF, as sufficient statistics per hypothesis.

A corpus score is a function of the sum of its sentences' statistics (sacrebleu's
``_compute_score_from_stats``), so an optimizer sums the statistics of the hypotheses a weight
vector picks and scores the sum. The statistics of each hypothesis are sacrebleu's own
(``_compute_segment_statistics`` against the sentence's references, preprocessed by the
metric's tokenizer and lowercasing), so the corpus score of a set of picks is exactly what
``sacrebleu`` prints for those translations; :meth:`Metric.scores` computes the same number
for many sums at once (numpy), for the line search.

Invariant: ``stats(i, hyp)`` is a vector of ``width`` non-negative integers; ``score`` of the sum
of one hypothesis' statistics per sentence equals sacrebleu's corpus score of those hypotheses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fstdecode.errors import FstdecodeError

#: The metrics ``fstdecode tune --metric`` offers.
METRICS = ("bleu", "chrf")


class MetricError(FstdecodeError):
    """A metric that cannot be set up (sacrebleu missing, or an unknown name or tokenizer)."""


def _sacrebleu():
    try:
        import sacrebleu.metrics  # noqa: F401
    except ImportError:  # pragma: no cover - a dependency of fstdecode
        raise MetricError("fstdecode tune needs sacrebleu: pip install 'sacrebleu>=2.4'") from None
    import sacrebleu

    return sacrebleu


@dataclass(frozen=True)
class MetricSettings:
    """What the metric is: ``name`` in :data:`METRICS`; BLEU's ``tokenize`` (sacrebleu's name;
    ``none`` for text already tokenized, as Moses' input and references are) and ``lowercase``."""

    name: str = "bleu"
    tokenize: str = "none"
    lowercase: bool = False


class Metric:
    """sacrebleu's metric over one dev set's references (``references[i]``: sentence i's)."""

    def __init__(self, settings: MetricSettings, references: Sequence[Sequence[str]]) -> None:
        sacrebleu = _sacrebleu()
        self.settings = settings
        if settings.name == "bleu":
            tokenizers = sacrebleu.metrics.BLEU.TOKENIZERS
            if settings.tokenize not in tokenizers:
                raise MetricError(f"unknown tokenizer {settings.tokenize!r}; sacrebleu's: {', '.join(tokenizers)}")
            self._metric = sacrebleu.metrics.BLEU(tokenize=settings.tokenize, lowercase=settings.lowercase,
                                                  force=True)
            self.width = 2 + 2 * self._metric.max_ngram_order
        elif settings.name == "chrf":
            self._metric = sacrebleu.metrics.CHRF(lowercase=settings.lowercase)
            self.width = 3 * (self._metric.char_order + self._metric.word_order)
        else:
            raise MetricError(f"unknown metric {settings.name!r}; known: {', '.join(METRICS)}")
        m = self._metric
        self._refs = [m._extract_reference_info([m._preprocess_segment(r) for r in refs]) for refs in references]
        if references:  # (the signature counts the references of a scored corpus: score one line)
            m.corpus_score([references[0][0]], [[r] for r in references[0]])
            self._signature = m.get_signature()

    def __len__(self) -> int:
        return len(self._refs)

    def stats(self, i: int, hypothesis: str) -> list[int]:
        """Sentence ``i``'s hypothesis' sufficient statistics (sacrebleu's, ``width`` integers)."""
        m = self._metric
        return [int(v) for v in m._compute_segment_statistics(m._preprocess_segment(hypothesis), self._refs[i])]

    def score(self, total: Sequence[float]) -> float:
        """The corpus score (0-100) of summed statistics, as sacrebleu computes it."""
        return float(self._metric._compute_score_from_stats([int(v) for v in total]).score)

    def describe(self, total: Sequence[float]) -> str:
        """The score of summed statistics as sacrebleu prints it (``BLEU = 37.11 69.5/43.7/... (BP = ...)``)."""
        return str(self._metric._compute_score_from_stats([int(v) for v in total]))

    def signature(self) -> str:
        """sacrebleu's reproducibility signature of the metric (``nrefs:1|case:mixed|...``)."""
        return str(self._signature.format()) if len(self._refs) else ""

    def scores(self, totals: np.ndarray) -> np.ndarray:
        """:meth:`score` of each row of ``totals`` (k x width), vectorized; equal to it within
        1e-9 (the same operations in numpy's float64)."""
        if self.settings.name == "bleu":
            return _bleu_rows(totals, self._metric.max_ngram_order)
        return _chrf_rows(totals, self._metric.order, self._metric.beta, self._metric.eps_smoothing)


def _bleu_rows(totals: np.ndarray, order: int) -> np.ndarray:
    """sacrebleu's BLEU (``smooth_method='exp'``, its corpus default) of each row
    ``[sys_len, ref_len, correct_1..N, total_1..N]``."""
    t = np.asarray(totals, dtype=np.float64)
    sys_len, ref_len = t[:, 0], t[:, 1]
    correct, total = t[:, 2:2 + order], t[:, 2 + order:2 + 2 * order]
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(sys_len < ref_len, np.where(sys_len > 0, np.exp(1 - ref_len / np.maximum(sys_len, 1)), 0.0), 1.0)
        # exp smoothing: the k-th order with no match (k = 1, 2, ...) counts 100 / (2^k total)
        zero = correct == 0
        halvings = np.cumsum(zero, axis=1)
        smoothed = 100.0 / (np.power(2.0, halvings) * total)
        precision = np.where(zero, smoothed, 100.0 * correct / total)
        # an order with no n-gram at all ends the product (sacrebleu's break): it and the orders
        # after it count precision 0, i.e. log -9999999999 (its my_log)
        ended = np.cumsum(total == 0, axis=1) > 0
        logs = np.where(ended | (precision <= 0), -9999999999.0, np.log(np.where(precision > 0, precision, 1.0)))
    score = bp * np.exp(logs.sum(axis=1) / order)
    return np.where(correct.sum(axis=1) == 0, 0.0, score)


def _chrf_rows(totals: np.ndarray, order: int, beta: float, eps_smoothing: bool) -> np.ndarray:
    """sacrebleu's chrF of each row of ``[hyp, ref, match]`` triples, one per order."""
    t = np.asarray(totals, dtype=np.float64).reshape(len(totals), order, 3)
    n_hyp, n_ref, n_match = t[..., 0], t[..., 1], t[..., 2]
    eps = 1e-16
    factor = beta ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = np.where(n_hyp > 0, n_match / np.maximum(n_hyp, 1), eps)
        rec = np.where(n_ref > 0, n_match / np.maximum(n_ref, 1), eps)
        if eps_smoothing:
            denom = factor * prec + rec
            f = np.where(denom > 0, (1 + factor) * prec * rec / np.where(denom > 0, denom, 1), eps)
            return 100 * f.sum(axis=1) / order
        both = (n_hyp > 0) & (n_ref > 0)
        effective = both.sum(axis=1)
        avg_prec = np.where(effective > 0, np.where(both, prec, 0).sum(axis=1) / np.maximum(effective, 1), 0.0)
        avg_rec = np.where(effective > 0, np.where(both, rec, 0).sum(axis=1) / np.maximum(effective, 1), 0.0)
        den = factor * avg_prec + avg_rec
        score = np.where(avg_prec + avg_rec > 0, (1 + factor) * avg_prec * avg_rec / np.where(den > 0, den, 1), 0.0)
    return 100 * score
