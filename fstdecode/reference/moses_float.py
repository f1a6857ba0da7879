"""The oracle of Moses' n-best numbers in Moses' own float arithmetic, in Python.

The production path is the native core's (native/moses_float.h, through
:mod:`fstdecode.search.moses_nbest`); this module is its independent twin, which the tests hold
it to (tests/unit/test_native_moses_float.py), and which no production module imports.

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
  ``FullScore``; the core's ``LanguageModel.log10_float`` walks an ARPA file's tables so, while
  an LM image or a KenLM binary gives its value rounded to float). In isolation, the phrase's words are summed in float with in-phrase context;
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

:class:`MosesFloat` needs numpy (float32 arithmetic).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from fstdecode._native import core as _core
from fstdecode.io.arpa import BOS, EOS, LN10, ArpaError, ArpaLM
from fstdecode.model.features import MOSES_KINDS, UNKNOWN_WORD_VALUE, MosesFeature

f32 = np.float32

#: The most option_future values kept (one per phrase pair met), before they are dropped.
FUTURES_KEPT = 1 << 18

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


class NativeKenScorer:
    """:class:`KenScorer`'s values from the native core's LM (``LanguageModel.log10_float``: an
    ARPA file's tables walked as KenLM's ``FullScore`` does, in float; for an LM image or a KenLM
    binary, its log-probability rounded to float, which may differ from Moses' in the 6th
    digit). Words are the LM's ids, each looked up once."""

    def __init__(self, core) -> None:
        self._core = core
        self.order = core.order
        self._ids: dict = {}

    def _id(self, word: str) -> int:
        got = self._ids.get(word)
        if got is None:
            got = self._ids[word] = self._core.index(word)
        return got

    def word(self, context: Sequence[str], word: str) -> np.float32:
        ctx = [self._id(w) for w in context[-(self.order - 1):]] if self.order > 1 and context else []
        return f32(self._core.log10_float(ctx, self._id(word)))

    def map(self, words: Sequence[str]) -> list[str]:
        return list(words)


@dataclass(frozen=True)
class Emulated:
    """A derivation's numbers as Moses prints them: feature values by fstdecode weight name
    (``lm``, ``tm``, ...; one float each, a tuple for ``tm`` and ``lr``) and the total."""

    values: dict
    total: float


class MosesFloat:
    """Moses' float arithmetic over a model (see the module docstring)."""

    def __init__(self, model, layout: Sequence[MosesFeature], sentence_of=None) -> None:
        self.model = model
        #: source words -> the Sentence whose options the future-cost estimate reads (default:
        #: build_sentence over the model's table; a line with XML markup has others).
        self.sentence_of = sentence_of
        self.layout = tuple(layout)
        lm = model.lm
        if isinstance(lm, ArpaLM):
            self.ken = KenScorer(lm)
        elif isinstance(getattr(lm, "core", None), _core.LanguageModel):
            self.ken = NativeKenScorer(lm.core)
        else:  # (no LM tables to walk: its own values, rounded to float)
            self.ken = None
        self._names = [MOSES_KINDS[f.kind] for f in self.layout]  # the dense features, in order
        self._matrices: dict = {}
        self._roots: dict = {}  # (source, num_tm, with_estimate) -> the trie of its chains' hypotheses (chain)
        self._isolations: dict = {}  # target words -> lm_isolation
        self._futures: dict = {}  # a pair's content -> option_future
        self._map = self.ken.map if self.ken is not None else (lambda ws: list(ws))
        self._eos = self._map([EOS])[0] if self.ken is not None else EOS
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

    def lm_delta(self, history: tuple[str, ...], words: Sequence[str], closes: bool) -> np.float32:
        """A hypothesis' KENLM delta (``LanguageModelKen::CalcScore`` + ``EvaluateWhenApplied``)
        placing ``words`` (spelled as the LM does) after ``history`` (at least the last
        ``order - 1`` words, <s> first); ``closes``: it completes the source (``</s>`` is scored)."""
        order = self.model.lm.order
        m = len(words)
        if not m and not closes:
            return f32(0.0)
        boundary = min(order - 1, m)
        ngram = self._isolation(words)[0]
        applied = f32(0.0)
        for j in range(boundary):
            ctx = (history + tuple(words[:j]))[-(order - 1):] if order > 1 else ()
            s = self._lm_word(ctx, words[j])
            applied = s if j == 0 else f32(applied + s)
        if closes:
            full = history + tuple(words)
            ctx = full[-(order - 1):] if order > 1 else ()
            applied = f32(applied + self._lm_word(ctx, self._eos))
        return f32(ngram + transform_lm(applied))

    def _isolation(self, words: Sequence[str]) -> tuple[np.float32, np.float32]:
        key = tuple(words)
        got = self._isolations.get(key)
        if got is None:
            got = self._isolations[key] = self.lm_isolation(words)
        return got

    # ------------------------------------------------------------------ reordering, distortion

    def lr_row(self, p):
        """Phrase ``p``'s LexicalReordering scores as Moses holds them: the table's probabilities
        as floored float logs, else default-scores (``TransformScore``, not floored), else None
        (no cost)."""
        rm = self.model.reordering
        found = rm.table.lookup(p.pair.source, p.pair.target)
        if found is not None:
            return [tm_value(v) for v in found]
        if rm.default_scores is not None:
            return [f32(v) for v in rm.default_scores]
        return None

    def lr_delta(self, prev, prev_row, p, row) -> list[np.float32]:
        """The LexicalReordering delta of placing ``p`` (scores ``row``) after ``prev`` (None at the
        start; its scores ``prev_row``), one float per component: its backward score for the
        orientation, and the previous phrase's forward score."""
        from fstdecode.model.lexical_reordering import BACKWARD, FORWARD, first_orientation, orientation

        cfg = self.model.reordering.config
        delta = [f32(0.0)] * cfg.num_features
        o = first_orientation(cfg, p.start) if prev is None else orientation(cfg, (prev.start, prev.end), (p.start, p.end))
        if BACKWARD in cfg.directions and row is not None:
            idx = cfg.feature_index(BACKWARD, o)
            delta[idx] = f32(delta[idx] + row[cfg.offset(BACKWARD) + o])
        if FORWARD in cfg.directions and prev is not None and prev_row is not None:
            idx = cfg.feature_index(FORWARD, o)
            delta[idx] = f32(delta[idx] + prev_row[cfg.offset(FORWARD) + o])
        return delta

    def distortion_delta(self, prev, gap: int, p) -> float:
        """A hypothesis' Distortion delta (``DistortionScoreProducer::CalculateDistortionScore``):
        ``prev`` the previous phrase (None at the start), ``gap`` the first uncovered word."""
        s, t = p.start, p.end
        if not self.model.early_distortion_cost:
            return -float(abs((prev.end if prev is not None else -1) + 1 - s))
        prefix_end = gap - 1
        if s == prefix_end + 1:
            return 0.0
        if prev is not None and t < prev.end:
            return float(-2 * (t - s + 1))
        if prev is None or prev.end <= prefix_end:
            return float(-2 * ((s - prefix_end - 1) + (t - s + 1)))
        return float(-2 * ((s - prev.end - 1) + (t - s + 1)))

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
        weighted in-isolation scores plus the weighted LM estimate (``full - ngram``), in float.
        Kept by the pair's content (a table's pairs are made again for each sentence that uses them)."""
        key = (pair.source, pair.target, pair.scores, pair.unknown, num_tm)
        got = self._futures.get(key)
        if got is None:
            if len(self._futures) >= FUTURES_KEPT:
                self._futures.clear()
            got = self._futures[key] = self._option_future(pair, num_tm)
        return got

    def _option_future(self, pair, num_tm: int) -> np.float32:
        ngram, full = self._isolation(self._map(pair.target))
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
        sentence = self.sentence_of(source) if self.sentence_of is not None else build_sentence(self.model.table, source)
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
        hypothesis; ``</s>`` is scored when they cover the source. Each chain's hypotheses are
        kept (a trie of the sentence's chains), so a chain that extends a known one costs only
        its new hypotheses: the n-best paths of a sentence share most of theirs."""
        node = self._root(source, num_tm)
        for p in phrases:
            child = node.children.get(id(p))
            if child is None:
                child = node.children[id(p)] = self._step(source, node, p, num_tm)
            node = child
        return node.sums, node.total

    def _root(self, source, num_tm: int) -> "_Hypo":
        key = (source, num_tm, self.with_estimate)
        root = self._roots.get(key)
        if root is None:
            if len(self._roots) > 8:
                self._roots.clear()
                self._isolations.clear()
            root = self._roots[key] = _Hypo(None, None, None, 0, 0, (BOS,), {}, f32(0.0), f32(0.0))
        return root

    def _step(self, source, node: "_Hypo", p, num_tm: int) -> "_Hypo":
        """The hypothesis that extends ``node`` by phrase ``p`` (Moses' order of sums, as above)."""
        n = len(source)
        covered = node.covered
        for k in range(p.start, p.end + 1):
            covered |= 1 << k
        gap = node.gap
        while gap < n and covered >> gap & 1:
            gap += 1
        closes = covered == (1 << n) - 1
        words = tuple(self._map(p.target))
        order = self.model.lm.order
        row = self.lr_row(p) if self.model.reordering is not None else None
        delta = {
            "lm": [self.lm_delta(node.history, words, closes)],
            "tm": [tm_value(v) for v in p.pair.scores] if len(p.pair.scores) == num_tm else [f32(0.0)] * num_tm,
            "distortion": [f32(self.distortion_delta(node.phrase, node.gap, p))],
            "word": [f32(-len(p.target))],
            "phrase": [f32(1.0)],
            "unknown": [f32(UNKNOWN_WORD_VALUE * len(p.pair.source)) if p.pair.unknown else f32(0.0)],
            "lr": self.lr_delta(node.phrase, node.row, p, row) if self.model.reordering is not None else [],
        }
        if self.with_estimate:
            est = self.estimate(self.future_matrix(source, num_tm), [bool(covered >> k & 1) for k in range(n)])
        else:
            est = f32(0.0)
        total = f32(f32(f32(self._inner(delta) + est)) + node.score)  # m_futureScore
        score = f32(total - est)  # GetScore()
        sums = {name: [f32(a + b) for a, b in zip(node.sums.get(name, [f32(0.0)] * len(vs)), vs)]
                for name, vs in delta.items()}
        history = (node.history + words)[-(order - 1):] if order > 1 else ()
        # p is kept (as phrase): the trie's keys are its id, which no other object takes while it lives.
        return _Hypo(p, row, node, covered, gap, history, sums, score, total)


class _Hypo:
    """One hypothesis of a chain (:meth:`MosesFloat.chain`): its phrase and reordering scores, the
    coverage (a bit set) and first uncovered word, the LM history (the last order - 1 words), the
    running breakdown, ``GetScore()`` and ``m_futureScore``; ``children`` by their phrase's id."""

    __slots__ = ("phrase", "row", "parent", "covered", "gap", "history", "sums", "score", "total", "children")

    def __init__(self, phrase, row, parent, covered, gap, history, sums, score, total) -> None:
        self.phrase, self.row, self.parent = phrase, row, parent
        self.covered, self.gap, self.history = covered, gap, history
        self.sums, self.score, self.total = sums, score, total
        self.children: dict = {}
