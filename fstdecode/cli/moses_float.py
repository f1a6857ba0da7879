"""Moses' n-best numbers in Moses' own float arithmetic (``fstdecode moses``).

Moses keeps every feature value in a C ``float`` (``ScoreComponentCollection`` over
``FVector``, ``FValue = float``) and adds them up hypothesis by hypothesis, so its 6-digit
output can differ in the last digit from the exact (double) sums fstdecode computes. This module
recomputes, for one derivation (phrases in target order, i.e. the order Moses builds the
hypotheses), each hypothesis' feature delta and the running sums as Moses does. The rules, with
the Moses source they follow (moses-smt/mosesdecoder, read at the commits named; the gold files
were made with 34452895, whose versions of these functions are the ones below):

* **Per hypothesis** (``moses/Hypothesis.cpp`` @ 7128701f, ``Hypothesis::Hypothesis`` and
  ``Hypothesis::EvaluateWhenApplied``): the delta starts as the translation option's own scores
  (phrase table, word penalty, unknown-word penalty, the LM's in-phrase n-grams), then each
  stateful feature adds to it (LM, distortion, reordering). The running breakdown is the
  previous hypothesis' breakdown plus this delta, per component, in ``float``
  (``TrellisPath::GetScoreBreakdown`` @ 7128701f sums the winning chain this way).
* **Phrase table** (:func:`tm_value`): each probability read as a float, ``log`` then floored
  at -100 (``TransformScore``, ``FloorScore`` in ``moses/Util.h``).
* **KENLM** (``moses/LM/Ken.cpp`` @ 00c35fb5, ``LanguageModelKen::CalcScore`` and
  ``LanguageModelKen::EvaluateWhenApplied``): KenLM returns each word's log10 probability as a
  float (the n-gram's prob plus the context backoffs, shortest context first: KenLM's
  ``FullScore``). In isolation, the phrase's words are summed in float with in-phrase context;
  ``B`` is the sum after the first ``order - 1`` words, ``F`` after all; the option carries
  ``TransformLMScore(F - B)``. When applied, the first ``order - 1`` words are scored in their
  sentence context (and ``</s>`` when the hypothesis completes the source), summed in float and
  transformed. ``TransformLMScore(x) = x * 2.30258509299405f`` in float (``moses/Util.h``).
  The LM delta is ``ngram + applied`` in float.
* **LexicalReordering** (``moses/FF/LexicalReordering/LRState.cpp``, ``LRState::CopyScores``,
  ``PhraseBasedReorderingState::Expand``): the table's probabilities become floored float logs
  as for the phrase table; placing phrase i adds its backward score to the orientation's
  backward component and phrase i-1's forward score to the forward one (nothing at the end).
* **Distortion** (``moses/FF/DistortionScoreProducer.cpp``, ``CalculateDistortionScore``):
  minus the jump, or with ``[early-distortion-cost]`` Moore and Quirk's per-phrase charge.
  Integers: exact in float.
* **Total** (``Hypothesis::EvaluateWhenApplied``; ``FVector::inner_product`` in
  ``moses/FeatureVector.cpp``): each hypothesis' weighted delta is a float inner product over
  the dense features in their registration order (``product += value * weight``); then
  ``m_futureScore = (weighted + estimate) + previous score`` and ``GetScore() = m_futureScore -
  estimate``, each step in float, where the estimate is the future cost of the words still
  uncovered (``SquareMatrix::CalcEstimatedScore``, gaps left to right, over the matrix of
  ``TranslationOptionCollection::CalcEstimatedScore``: each span's best option
  ``TargetPhrase::EvaluateInIsolation`` future score, then the best split, in float). The
  n-best total is the last hypothesis' ``m_futureScore`` (its estimate is 0).
  (moses/SquareMatrix.cpp, moses/TargetPhrase.cpp, moses/Hypothesis.h ``GetScore``.)

* **A path through lost recombinations** (``moses/TrellisPath.cpp`` @ 7128701f,
  ``TrellisPath::GetScoreBreakdown`` and ``InitTotalScore``; ``Hypothesis::AddArc`` and the
  recombination in ``HypothesisStackNormal::AddPrune``): an n-best entry is a path of hypotheses,
  hypothesis i the extension by phrase i of the winner of hypothesis i - 1's recombination key
  (the best hypothesis of the key: ``GetWinningHypo``). Where hypothesis i lost its own key's
  recombination, it is an arc: the breakdown is the last hypothesis' winner's, then, last phrase
  first, for each arc ``MinusEquals`` its winner's breakdown and ``PlusEquals`` its own, per
  component in float; the total is the last winner's ``m_futureScore`` plus, for each arc, its
  ``m_futureScore`` minus its winner's (float). Every breakdown here is a chain's, as above. The
  winners come from the stack decoder (``Derivation.winners``: native/stack.cpp reports them with
  its n-best lists, by Moses' keys: coverage, the KenLM state, the last phrase's end and, with
  lexicalized reordering, its span and forward scores; a complete hypothesis' LM state, after
  ``</s>``, is every complete one's). On the two gold models in ../shared/data every entry both
  lists hold matches byte for byte.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fstdecode.io.arpa import BOS, EOS, LN10, ArpaError, ArpaLM
from fstdecode.io.binarized import is_lm_image
from fstdecode.io.kenlm_binary import is_kenlm_binary
from fstdecode.model.features import MOSES_KINDS, UNKNOWN_WORD_VALUE, MosesFeature

f32 = np.float32

#: The largest ARPA file read again (in Python) for KenLM's per-word float values. Beyond it, or
#: for a KenLM binary or an LM image, the native LM's values rounded to float stand in, so the LM
#: feature may differ from Moses' in its 6th digit: a real-size LM is not loaded twice.
KENLM_REREAD_BYTES = 64 * 2**20

#: ``TransformLMScore``'s constant, a float literal in moses/Util.h.
LN10_F = f32(2.30258509299405)

#: Moses' floor of a log score (LOWEST_SCORE in moses/TypeDef.h).
LOWEST_SCORE = -100.0


def fsum(values: Sequence[float], start: float = 0.0) -> np.float32:
    """``values`` added one by one to ``start`` in float, as a C ``float`` accumulator does."""
    acc = f32(start)
    for v in values:
        acc = f32(acc + f32(v))
    return acc


def tm_value(ln_score: float) -> np.float32:
    """A phrase-table (or reordering-table) score as Moses holds it: the probability read as a
    float, its natural log rounded to float, floored at -100 (``TransformScore``, ``FloorScore``).
    ``ln_score`` is fstdecode's exact ln of the probability."""
    prob = f32(math.exp(ln_score)) if ln_score > -745.0 else f32(0.0)
    if prob <= 0:
        return f32(LOWEST_SCORE)
    return f32(max(math.log(float(prob)), LOWEST_SCORE))


def transform_lm(log10_sum: np.float32) -> np.float32:
    """``TransformLMScore``: a float log10 score times ln(10) as a float literal, in float."""
    return f32(f32(log10_sum) * LN10_F)


class KenScorer:
    """Per-word log10 scores of an ARPA LM as KenLM returns them (``float``).

    ``FullScore``: the probability of the longest n-gram found, then the backoff of each longer
    context up to the state's length, shortest first, each addition in float. Values come from
    fstdecode's ARPA reader (ln, double) and are turned back into the file's float log10 values.
    """

    def __init__(self, lm: ArpaLM) -> None:
        self.lm = lm
        self.order = lm.order
        self._probs = lm._probs
        self._backoffs = lm._backoffs

    @staticmethod
    def _f(ln_value: float) -> np.float32:
        return f32(ln_value / LN10) if math.isfinite(ln_value) else f32(ln_value)

    def word(self, context: Sequence[str], word: str) -> np.float32:
        """log10 p(word | context) in float; words already spelled as the LM does (:meth:`map`)."""
        ctx = tuple(context[-(self.order - 1):]) if self.order > 1 and context else ()
        probs, backoffs = self._probs, self._backoffs
        length = 1
        prob = probs[(word,)]
        for k in range(len(ctx), 0, -1):
            p = probs.get(ctx[-k:] + (word,))
            if p is not None:
                length, prob = k + 1, p
                break
        score = self._f(prob)
        for k in range(length, len(ctx) + 1):  # the contexts the match did not use, shortest first
            b = backoffs.get(ctx[-k:])  # absent: no such context, or a zero backoff (adds 0 exactly)
            if b is not None:
                score = f32(score + self._f(b))
        return score

    def map(self, words: Sequence[str]) -> list[str]:
        return [self.lm.word(w) for w in words]


@dataclass(frozen=True)
class Emulated:
    """A derivation's numbers as Moses prints them: feature values by fstdecode weight name
    (``lm``, ``tm``, ...; one float each, a tuple for ``tm`` and ``lr``) and the total."""

    values: dict
    total: float


class MosesFloat:
    """Moses' float arithmetic over a model (see the module docstring)."""

    def __init__(self, model, layout: Sequence[MosesFeature]) -> None:
        self.model = model
        self.layout = tuple(layout)
        lm = model.lm
        arpa = lm if isinstance(lm, ArpaLM) else None
        path = getattr(lm, "_source", None) or getattr(lm, "path", None)
        if arpa is None and path and os.path.isfile(path) and not is_kenlm_binary(path) and not is_lm_image(path) \
                and os.path.getsize(path) <= KENLM_REREAD_BYTES:
            try:
                arpa = ArpaLM.from_file(path, lm.order)
            except (ArpaError, OSError, ValueError):  # not an ARPA file: the LM's own values instead
                arpa = None
        self.ken = KenScorer(arpa) if arpa is not None else None
        self._names = [MOSES_KINDS[f.kind] for f in self.layout]  # the dense features, in order
        self._matrices: dict = {}
        #: Emulate the future-cost estimate's rounding (``m_futureScore - m_estimatedScore``).
        self.with_estimate = True
        w = model.weights
        self.weights = {name: tuple(f32(x) for x in (v if isinstance(v, tuple) else (v,)))
                        for name, v in (("lm", w.lm), ("tm", w.tm), ("distortion", w.distortion),
                                        ("word", w.word), ("phrase", w.phrase), ("unknown", w.unknown),
                                        ("lr", w.lr))}

    # ------------------------------------------------------------------ LM

    def _lm_word(self, context: Sequence[str], word: str) -> np.float32:
        if self.ken is not None:
            return self.ken.word(context, word)
        return f32(self.model.lm.logprob(list(context), word) / LN10)

    def lm_isolation(self, words: Sequence[str]) -> tuple[np.float32, np.float32]:
        """``LanguageModelKen::CalcScore`` of a target phrase (words spelled as the LM does):
        ``(ngram, full)``, both transformed to ln; the option carries ``ngram`` and its estimate
        is ``full - ngram``."""
        order = self.model.lm.order
        boundary = min(order - 1, len(words))
        acc, before = f32(0.0), f32(0.0)
        for j, w in enumerate(words):
            acc = f32(acc + self._lm_word(words[max(0, j - order + 1):j], w))
            if j == boundary - 1:
                before = acc
        return transform_lm(f32(acc - before)), transform_lm(acc)

    def lm_deltas(self, phrases, complete: bool = True) -> list[np.float32]:
        """Each hypothesis' KENLM delta (``LanguageModelKen::CalcScore`` + ``EvaluateWhenApplied``);
        ``complete``: the last one completes the source (``</s>`` is scored)."""
        order = self.model.lm.order
        mapw = self.ken.map if self.ken is not None else (lambda ws: list(ws))
        history = [BOS]
        out = []
        for i, p in enumerate(phrases):
            words = mapw(p.target)
            m = len(words)
            boundary = min(order - 1, m)
            ngram = self.lm_isolation(words)[0]
            applied = f32(0.0)
            for j in range(boundary):
                ctx = (history + words[:j])[-(order - 1):] if order > 1 else []
                s = self._lm_word(ctx, words[j])
                applied = s if j == 0 else f32(applied + s)
            history = history + words
            closes = complete and i == len(phrases) - 1
            if closes:
                ctx = history[-(order - 1):] if order > 1 else []
                applied = f32(applied + self._lm_word(ctx, mapw([EOS])[0] if self.ken else EOS))
            out.append(f32(ngram + transform_lm(applied)) if (m or closes) else f32(0.0))
        return out

    # ------------------------------------------------------------------ reordering, distortion

    def lr_deltas(self, phrases) -> list[list[np.float32]]:
        """Each hypothesis' LexicalReordering delta, one float per component."""
        from fstdecode.model.lexical_reordering import BACKWARD, FORWARD, first_orientation, orientation

        rm = self.model.reordering
        cfg = rm.config
        rows = []
        for p in phrases:
            found = rm.table.lookup(p.pair.source, p.pair.target)
            if found is not None:  # table probabilities: floored float logs
                rows.append([tm_value(v) for v in found])
            elif rm.default_scores is not None:  # default-scores: TransformScore, not floored
                rows.append([f32(v) for v in rm.default_scores])
            else:  # no scores: no cost
                rows.append(None)
        out = []
        for i, p in enumerate(phrases):
            delta = [f32(0.0)] * cfg.num_features
            cur = (p.start, p.end)
            prev = (phrases[i - 1].start, phrases[i - 1].end) if i else None
            o = first_orientation(cfg, cur[0]) if prev is None else orientation(cfg, prev, cur)
            if BACKWARD in cfg.directions and rows[i] is not None:
                idx = cfg.feature_index(BACKWARD, o)
                delta[idx] = f32(delta[idx] + rows[i][cfg.offset(BACKWARD) + o])
            if FORWARD in cfg.directions and i > 0 and rows[i - 1] is not None:
                idx = cfg.feature_index(FORWARD, o)
                delta[idx] = f32(delta[idx] + rows[i - 1][cfg.offset(FORWARD) + o])
            out.append(delta)
        return out

    def distortion_deltas(self, n: int, phrases) -> list[float]:
        """Each hypothesis' Distortion delta (``DistortionScoreProducer::CalculateDistortionScore``)."""
        out, prev, covered, gap = [], None, [False] * n, 0
        early = self.model.early_distortion_cost
        for p in phrases:
            s, t = p.start, p.end
            if not early:
                out.append(-float(abs((prev[1] if prev else -1) + 1 - s)))
            else:
                prefix_end = gap - 1
                if s == prefix_end + 1:
                    v = 0
                elif prev is not None and t < prev[1]:
                    v = -2 * (t - s + 1)
                elif prev is None or prev[1] <= prefix_end:
                    v = -2 * ((s - prefix_end - 1) + (t - s + 1))
                else:
                    v = -2 * ((s - prev[1] - 1) + (t - s + 1))
                out.append(float(v))
            for k in range(s, t + 1):
                covered[k] = True
            while gap < n and covered[gap]:
                gap += 1
            prev = (s, t)
        return out

    # ------------------------------------------------------------------ the future-cost estimate

    def _inner(self, delta: dict) -> np.float32:
        """``FVector::inner_product`` of a delta with the weights: dense features in order,
        ``product += value * weight`` in float."""
        product = f32(0.0)
        for name in self._names:
            for v, w in zip(delta.get(name, ()), self.weights[name]):
                product = f32(product + f32(f32(v) * w))
        return product

    def option_future(self, pair, num_tm: int) -> np.float32:
        """A translation option's ``TargetPhrase::EvaluateInIsolation`` future score: the
        weighted in-isolation scores plus the weighted LM estimate (``full - ngram``), in float."""
        mapw = self.ken.map if self.ken is not None else (lambda ws: list(ws))
        ngram, full = self.lm_isolation(mapw(pair.target))
        delta = {
            "lm": [ngram],
            "tm": [tm_value(v) for v in pair.scores] if len(pair.scores) == num_tm else [f32(0.0)] * num_tm,
            "word": [f32(-len(pair.target))],
            "phrase": [f32(1.0)],
            "unknown": [f32(UNKNOWN_WORD_VALUE * len(pair.source)) if pair.unknown else f32(0.0)],
        }
        estimate = self._inner({"lm": [f32(full - ngram)]})
        return f32(self._inner(delta) + f32(f32(0.0) + estimate))

    def future_matrix(self, source: tuple[str, ...], num_tm: int) -> list[list[np.float32]]:
        """``TranslationOptionCollection::CalcEstimatedScore``: each span's best option, then
        each span the best of itself and every split into two (``joinedScore``), in float."""
        cached = self._matrices.get(source)
        if cached is not None:
            return cached
        from fstdecode.problem.sentence import build_sentence

        n = len(source)
        neg = f32(-np.inf)
        m = [[neg] * n for _ in range(n)]
        sentence = build_sentence(self.model.table, source)
        for options in sentence.options:
            for ph in options:
                v = self.option_future(ph.pair, num_tm)
                if v > m[ph.start][ph.end]:
                    m[ph.start][ph.end] = v
        for colstart in range(1, n):
            for diag in range(n - colstart):
                s, e = diag, colstart + diag
                for j in range(s, e):
                    joined = f32(m[s][j] + m[j + 1][e])
                    if joined > m[s][e]:
                        m[s][e] = joined
        if len(self._matrices) > 8:
            self._matrices.clear()
        self._matrices[source] = m
        return m

    @staticmethod
    def estimate(matrix, covered: Sequence[bool]) -> np.float32:
        """``SquareMatrix::CalcEstimatedScore``: the gaps' estimates, left to right, in float."""
        total, gap = f32(0.0), None
        for pos, c in enumerate(covered):
            if not c and gap is None:
                gap = pos
            elif c and gap is not None:
                total = f32(total + matrix[gap][pos - 1])
                gap = None
        if gap is not None:
            total = f32(total + matrix[gap][len(covered) - 1])
        return total

    # ------------------------------------------------------------------ everything

    def emulate(self, d) -> Emulated:
        """The derivation's feature values and total in Moses' float arithmetic: its own chain of
        hypotheses, or with ``d.winners`` (the stack decoder's n-best lists) as Moses' TrellisPath
        scores a path through its recombination winners (:meth:`trellis`)."""
        num_tm = len(d.features.tm)
        if d.winners and any(w is not None for w in d.winners):
            sums, total = self.trellis(tuple(d.source), d.phrases, d.winners, num_tm)
        else:
            sums, total = self.chain(tuple(d.source), d.phrases, num_tm)
        values = {name: tuple(float(v) for v in vs) for name, vs in sums.items()}
        return Emulated(values, float(total))

    def trellis(self, source, phrases, winners, num_tm: int) -> tuple[dict, np.float32]:
        """A path of Moses' n-best list (``TrellisPath`` @ 7128701f): hypothesis i is the winner of
        step i - 1's recombination key extended by phrase i; where it lost its own key's
        recombination (``winners[i]``: the winner's phrases), the path's breakdown is the last
        winner's chain minus each such winner's chain plus the hypothesis' own (``GetScoreBreakdown``:
        ``MinusEquals`` then ``PlusEquals``, last phrase first) and its total the last winner's
        ``m_futureScore`` plus each hypothesis' minus its winner's (``InitTotalScore``), in float."""
        won, prev = [], ()
        for p, w in zip(phrases, winners):
            prev = prev + (p,) if w is None else tuple(w)
            won.append(prev)
        sums, total = self.chain(source, won[-1], num_tm)
        for i in reversed(range(len(phrases))):
            if winners[i] is None:
                continue
            own, own_total = self.chain(source, (won[i - 1] if i else ()) + (phrases[i],), num_tm)
            lost, lost_total = self.chain(source, won[i], num_tm)
            total = f32(total + f32(own_total - lost_total))
            sums = {name: [f32(f32(a - b) + c) for a, b, c in zip(sums[name], lost[name], own[name])] for name in sums}
        return sums, total

    def chain(self, source, phrases, num_tm: int) -> tuple[dict, np.float32]:
        """The breakdown (float sums by weight name) and ``m_futureScore`` of the hypothesis whose
        own chain places ``phrases`` (target order), as Moses accumulates them hypothesis by
        hypothesis; ``</s>`` is scored when they cover the source."""
        n = len(source)
        complete = sum(p.end - p.start + 1 for p in phrases) == n
        deltas = []  # per hypothesis: {name: [float32, ...]}
        lm = self.lm_deltas(phrases, complete)
        lr = self.lr_deltas(phrases) if self.model.reordering is not None else [[] for _ in phrases]
        dist = self.distortion_deltas(n, phrases)
        for i, p in enumerate(phrases):
            deltas.append({
                "lm": [lm[i]],
                "tm": [tm_value(v) for v in p.pair.scores] if len(p.pair.scores) == num_tm else [f32(0.0)] * num_tm,
                "distortion": [f32(dist[i])],
                "word": [f32(-len(p.target))],
                "phrase": [f32(1.0)],
                "unknown": [f32(UNKNOWN_WORD_VALUE * len(p.pair.source)) if p.pair.unknown else f32(0.0)],
                "lr": lr[i],
            })
        matrix = self.future_matrix(source, num_tm) if self.with_estimate else None
        sums = {name: [f32(0.0)] * len(deltas[0][name]) for name in deltas[0]} if deltas else {}
        covered = [False] * n
        score = total = f32(0.0)
        for p, delta in zip(phrases, deltas):
            for k in range(p.start, p.end + 1):
                covered[k] = True
            est = self.estimate(matrix, covered) if matrix is not None else f32(0.0)
            total = f32(f32(f32(self._inner(delta) + est)) + score)  # m_futureScore
            score = f32(total - est)  # GetScore()
            for name, vs in delta.items():
                sums[name] = [f32(a + b) for a, b in zip(sums[name], vs)]
        return sums, total
