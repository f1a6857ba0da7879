"""The integer form of one decoding problem, shared by every search module.

Positions follow Chang & Collins (Section 4.1), shifted to start at 0:
``<s>`` is position 0, input token ``k`` is position ``k + 1`` and ``</s>``
is position ``end = n + 1``. Words are integer ids; strings stay at the
edges (the :class:`~fstdecode.problem.sentence.Phrase` an option carries).

Scores are model scores to *maximise* (the weighted sum of features):

* ``Option.score`` is ŵ(p) of Figure 4: the weighted TM, word, phrase and
  unknown-word features of p plus the weighted LM score of the bigrams
  inside p;
* :meth:`SearchProblem.bigram` is the weighted LM score of one junction bigram;
* a jump of distance δ costs ``eta * δ`` (eta = the distortion weight, since
  the Distortion feature is −δ).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.io.arpa import BOS, EOS, ArpaLM
from fstdecode.io.phrase_table import PhrasePair, PhraseTable
from fstdecode.model.distortion import SEMANTICS, charges_final_jump
from fstdecode.model.features import UNKNOWN_WORD_VALUE, Features, Weights
from fstdecode.model.lexical_reordering import ReorderingModel, first_orientation, orientation
from fstdecode.problem.scorer import score as score_derivation
from fstdecode.problem.sentence import Phrase, Sentence, build_sentence


class SearchError(FstdecodeError):
    """A search that cannot run or cannot finish within its limits."""


def no_derivation_message(d: int) -> str:
    """The message of the SearchError raised when no derivation satisfies the distortion limit
    ``d``: written here once, for every engine (the native core reports that case as status
    ``"none"`` with an empty message, and fstdecode.search.native.to_result fills it in)."""
    return f"no derivation satisfies the distortion limit d={d}"


class SearchLimitError(SearchError):
    """The search hit its budget (``--max-states``) before it could prove a result.

    ``best``, if not None, holds the best complete derivations it had found
    (never marked optimal); the decoder reports those for the line.
    """

    def __init__(self, message: str, best: SearchResult | None = None) -> None:
        super().__init__(message)
        self.best = best


class PhraseScores(dict):
    """``id(pair)`` -> ŵ(p) of a phrase-table pair, for one model and one set of weights.

    Owned by whoever keeps the model's pairs alive for as long as the cache
    (the :class:`~fstdecode.decoder.Decoder`), and shared by its problems:
    ŵ(p) does not depend on the sentence. Unknown-word pairs, made per
    sentence, are never cached.

    ``native`` holds the native core's copy of the same pairs and scores
    (:class:`fstdecode.search.native.NativeTable`), made by the native Decoder (or on first use).
    """

    native: Any = None


class JoinCache(dict):
    """``(id(option), ψ1, ψ2, minimize)`` -> (new tape signature, weighted LM score of the join).

    Owned by one :class:`SearchProblem`, shared by every search run on it
    (the beam's widening reruns, bounded search's lower bound, the stack
    decoder), so a join is scored once per sentence. Keys use ``id(option)``:
    the options live as long as the problem.
    """


@dataclass(frozen=True)
class Option:
    """A phrase p = (s, t, e) in integer form (Figure 4's notation).

    ``first``/``last`` are the ids of e_1 and e_m and ``words`` all of e;
    ``score`` is ŵ(p): for an LM of order N, the LM part scores the words of
    p from the N-th on (their whole context lies inside p). ``phrase`` is
    None only for the pseudo-phrases of ``<s>`` and ``</s>``.

    With a lexicalized reordering model, ``lr_back[o]`` is the weighted score
    the phrase pays when its own orientation (relative to the phrase before
    it) is o, and ``lr_next[o]`` the weighted score it pays when the phrase
    *after* it has orientation o (a weighted
    :class:`~fstdecode.model.lexical_reordering.ReorderingRow`); each is empty
    when the model has no such direction, both without a model.
    """

    s: int
    t: int
    first: int
    last: int
    score: float
    phrase: Phrase | None
    words: tuple[int, ...] = ()
    lr_back: tuple[float, ...] = ()
    lr_next: tuple[float, ...] = ()


class SearchProblem:
    """One sentence, an n-gram LM, weights and a distortion limit d, as integers.

    The search uses the LM's whole order (``order = max(2, lm.order)``: a unigram LM as a bigram one);
    restrict the LM first to search with a lower order.

    Invariants: ``by_start[p]`` lists the options starting at position p
    (1 <= p <= n), and ``by_start[end]`` holds only the ``</s>`` option.

    A problem made by :meth:`from_table` builds its Python form (``sentence``,
    ``vocab``, ``by_start``, ``grouped``) on first use: a native search builds
    the same options in the core instead (:mod:`fstdecode.search.native`), so
    the Python form is never made for it.
    """

    def __init__(
        self,
        sentence: Sentence | None,
        lm: ArpaLM,
        weights: Weights,
        d: int,
        id: int = 0,
        phrase_scores: PhraseScores | None = None,
        *,
        words: Sequence[str] = (),
        table: PhraseTable | None = None,
        reordering: ReorderingModel | None = None,
        semantics: str = "paper",
        early_distortion_cost: bool = False,
    ) -> None:
        if sentence is None and table is None:
            raise SearchError("a SearchProblem needs a sentence, or words and a phrase table")
        if semantics not in SEMANTICS:
            raise SearchError(f"unknown distortion semantics {semantics!r}; choose from {', '.join(SEMANTICS)}")
        #: The lexicalized reordering model (None without one); its weights are ``weights.lr``.
        self.reordering = reordering
        #: ``"paper"`` or ``"moses"`` (:mod:`fstdecode.model.distortion`).
        self.semantics = semantics
        self.early_distortion_cost = early_distortion_cost
        #: Whether the distortion includes the jump into ``</s>`` (:func:`charges_final_jump`).
        self.charge_final = charges_final_jump(semantics, early_distortion_cost)
        #: The search's LM order: the LM's, at least 2 (a unigram LM is searched as a bigram LM
        #: without bigrams: its one-word contexts are ignored by its scores).
        self.order = max(2, lm.order)
        #: The input line's number (0-based), for what a search writes per sentence (lattices).
        self.id = id
        if sentence is not None:
            self.sentence = sentence
        #: The input tokens.
        self.words: tuple[str, ...] = sentence.words if sentence is not None else tuple(words)
        #: The phrase table the options come from (None: the sentence was given).
        self.table = table if sentence is None else None
        self.lm = lm
        self.weights = weights
        self.d = d
        self.n = len(self.words)
        self.end = self.n + 1
        self.eta = weights.distortion
        self.bos, self.eos = 0, 1  # the first two words :meth:`word_id` assigns
        self._bigram: dict[tuple[int, int], float] = {}
        self._lam: dict[int, dict[int, float]] | None = None
        self._ngram: dict[tuple[tuple[int, ...], int], float] = {}
        #: The joins scored so far (:func:`fstdecode.statespace.ngram.joined`).
        self.joins = JoinCache()
        self.phrase_scores = phrase_scores
        #: The native core's form of this problem, made once by :mod:`fstdecode.search.native`.
        self.native: Any = None
        #: The native searches' n-best list stays in the core (a decoder whose lines the core
        #: writes: fstdecode.search.moses_nbest): the Python result holds its best hypothesis only.
        self.list_in_core = False
        self.bos_option = Option(0, 0, self.bos, self.bos, 0.0, None, (self.bos,))
        self.eos_option = Option(self.end, self.end, self.eos, self.eos, 0.0, None, (self.eos,))

    @classmethod
    def from_table(
        cls,
        words: Sequence[str],
        table: PhraseTable,
        lm: ArpaLM,
        weights: Weights,
        d: int,
        id: int = 0,
        phrase_scores: PhraseScores | None = None,
        *,
        reordering: ReorderingModel | None = None,
        semantics: str = "paper",
        early_distortion_cost: bool = False,
    ) -> SearchProblem:
        """The problem of the tokens ``words`` with the options ``table`` gives them (:func:`build_sentence`)."""
        return cls(
            None, lm, weights, d, id, phrase_scores, words=words, table=table,
            reordering=reordering, semantics=semantics, early_distortion_cost=early_distortion_cost,
        )

    def score(self, phrases: Sequence[Phrase]) -> tuple[Features, float]:
        """The scorer's features and total of a derivation of this problem's sentence (every feature of the model)."""
        return score_derivation(
            self.n, phrases, self.lm, self.weights, reordering=self.reordering,
            semantics=self.semantics, early_distortion_cost=self.early_distortion_cost,
        )

    @cached_property
    def sentence(self) -> Sentence:
        """The phrase options of the words, looked up in the table (on first use)."""
        return build_sentence(self.table, self.words)

    @cached_property
    def vocab(self) -> list[str]:
        """Word ids to words, in order of first sight: ``<s>``, ``</s>``, then the options' target words."""
        return self._python_form()["vocab"]

    @cached_property
    def by_start(self) -> list[list[Option]]:
        return self._python_form()["by_start"]

    @cached_property
    def grouped(self) -> list[list[tuple[int, list[Option]]]]:
        """``grouped[p]``: the options starting at p, grouped by end (see :meth:`groups`)."""
        return self._python_form()["grouped"]

    @property
    def options_built(self) -> bool:
        """True once the Python options exist; a native search then takes its options from them."""
        return "by_start" in self.__dict__

    def _python_form(self) -> dict[str, Any]:
        """Builds ``vocab``, ``by_start`` and ``grouped`` (once; they are kept in the instance)."""
        state = self.__dict__
        if "by_start" not in state:
            state["vocab"], state["_ids"] = [], {}
            self.word_id(BOS)
            self.word_id(EOS)
            by_start: list[list[Option]] = [[] for _ in range(self.end + 1)]
            for phrase in self.sentence.all_phrases():
                by_start[phrase.start + 1].append(self._option(phrase))
            by_start[self.end].append(self.eos_option)
            state["by_start"] = by_start
            state["grouped"] = [self.groups(p) for p in range(self.end + 1)]
        return state

    def word_id(self, word: str) -> int:
        """The id of ``word``, assigned on first sight."""
        if "_ids" not in self.__dict__:
            self._python_form()
        i = self._ids.get(word)
        if i is None:
            i = self._ids[word] = len(self.vocab)
            self.vocab.append(word)
        return i

    def bigram(self, a: int, b: int) -> float:
        """Weighted LM score λ(b | a) of the bigram ``a b`` (cached)."""
        key = (a, b)
        v = self._bigram.get(key)
        if v is None:
            v = self._bigram[key] = self.weights.lm * self.lm.logprob((self.vocab[a],), self.vocab[b])
        return v

    def junctions(self) -> dict[int, dict[int, float]]:
        """``lam[a][b]`` = :meth:`bigram` (a, b) for every junction the signature DP can form.

        A junction joins the last word of a tape or phrase (``<s>`` included)
        to the first word of a phrase or tape (``</s>`` included) within the
        distortion limit; there are no other entries (a row per last word, so memory grows with
        the junctions, not with the vocabulary squared: a |V| x |V| table took 1 GB for a
        10,000-vertex ``fstdecode tsp``). Built on first use.
        """
        if self._lam is None:
            lam: dict[int, dict[int, float]] = {}
            # A junction a -> b needs a jump |t(a) + 1 − s(b)| <= d, so only nearby pairs are filled:
            # O(n d h^2) LM lookups, not |V|^2.
            ends: dict[int, set[int]] = {0: {self.bos}}
            starts: dict[int, set[int]] = {self.end: {self.eos}}
            for opts in self.by_start:
                for o in opts:
                    ends.setdefault(o.t, set()).add(o.last)
                    starts.setdefault(o.s, set()).add(o.first)
            for t, lasts in ends.items():
                firsts = set()
                for s in range(max(1, t + 1 - self.d), min(self.end, t + 1 + self.d) + 1):
                    firsts |= starts.get(s, set())
                for a in lasts:
                    row = lam.setdefault(a, {})
                    for b in firsts:
                        row[b] = self.bigram(a, b)
            self._lam = lam
        return self._lam

    def ngram(self, context: tuple[int, ...], w: int) -> float:
        """Weighted LM score λ(w | context) (cached); the context is at most order − 1 words."""
        key = (context, w)
        v = self._ngram.get(key)
        if v is None:
            v = self._ngram[key] = self.weights.lm * self.lm.logprob([self.vocab[c] for c in context], self.vocab[w])
        return v

    def backoff(self, context: tuple[int, ...]) -> float:
        """Weighted ln backoff of ``context`` (charged when a context is shortened)."""
        return self.weights.lm * self.lm.backoff([self.vocab[c] for c in context])

    def extends(self, context: tuple[int, ...]) -> bool:
        return self.lm.extends([self.vocab[c] for c in context])

    def phrase_score(self, phrase: Phrase) -> float:
        """ŵ(p): every feature of p that p alone determines, weighted.

        It depends on the pair alone, so a table pair's value is taken from
        (and kept in) the ``phrase_scores`` the problem was given, if any.
        """
        pair = phrase.pair
        cache = self.phrase_scores
        if cache is None or pair.unknown:
            return self._pair_score(pair)
        got = cache.get(id(pair))
        if got is None:
            got = cache[id(pair)] = self._pair_score(pair)
        return got

    def _pair_score(self, pair: PhrasePair) -> float:
        w = self.weights
        score = sum(wk * v for wk, v in zip(w.tm, pair.scores))
        score += w.word * -len(pair.target) + w.phrase
        if pair.unknown:
            score += w.unknown * UNKNOWN_WORD_VALUE * len(pair.source)
        ids = tuple(self.word_id(x) for x in pair.target)
        k = self.order - 1
        for i in range(k, len(ids)):
            score += self.ngram(ids[i - k : i], ids[i]) if k > 1 else self.bigram(ids[i - 1], ids[i])
        return score

    def reordering_score(self, prev: Option | None, opt: Option) -> float:
        """The weighted lexicalized reordering score of placing ``opt`` right after ``prev`` in target order.

        ``prev`` None (or the ``<s>`` pseudo-option) means ``opt`` is the first
        phrase. The orientation o of ``opt`` relative to ``prev``
        (:func:`~fstdecode.model.lexical_reordering.orientation`) is charged on
        ``opt.lr_back[o]`` and ``prev.lr_next[o]``; nothing is charged at
        ``</s>``. 0 without a reordering model.
        """
        if self.reordering is None:
            return 0.0
        cfg = self.reordering.config
        if prev is None or prev.phrase is None:
            o = first_orientation(cfg, opt.s - 1)
            return opt.lr_back[o] if opt.lr_back else 0.0
        o = orientation(cfg, (prev.s, prev.t), (opt.s, opt.t))
        return (opt.lr_back[o] if opt.lr_back else 0.0) + (prev.lr_next[o] if prev.lr_next else 0.0)

    def reordering_state(self, opt: Option) -> tuple:
        """What the next phrase's reordering score reads of ``opt`` when ``opt`` is the last phrase
        of a state (its part of the key of :mod:`~fstdecode.search.coverage_dp` and
        :mod:`~fstdecode.search.exact` states, with the state's last end ``opt.t``): ``()``
        without a reordering model; else ``(start, forward row)``, the start 0 when the
        orientation classes never read it (``monotonicity`` and ``leftright`` compare only the
        last end with the next start), the row ``()`` without a forward direction. So states
        that differ only in what no continuation reads are one state.
        """
        if self.reordering is None:
            return ()
        reads_start = self.reordering.config.classes in ("msd", "mslr")
        return (opt.s if reads_start else 0, opt.lr_next)

    def reordering_after(self, last_t: int, state: tuple, opt: Option) -> float:
        """:meth:`reordering_score` of ``opt`` after a state whose last end is ``last_t`` and
        whose :meth:`reordering_state` is ``state`` (``()`` at the start: ``opt`` is the first
        phrase); the same operations, so the same value. 0 without a reordering model."""
        if self.reordering is None:
            return 0.0
        cfg = self.reordering.config
        if not state:
            o = first_orientation(cfg, opt.s - 1)
            return opt.lr_back[o] if opt.lr_back else 0.0
        prev_s, prev_next = state
        o = orientation(cfg, (prev_s, last_t), (opt.s, opt.t))
        return (opt.lr_back[o] if opt.lr_back else 0.0) + (prev_next[o] if prev_next else 0.0)

    def _option(self, phrase: Phrase) -> Option:
        words = tuple(map(self.word_id, phrase.pair.target))
        back: tuple[float, ...] = ()
        after: tuple[float, ...] = ()
        if self.reordering is not None:
            row = self.reordering.weighted(self.reordering.row(phrase.pair), self.weights.lr)
            back, after = row.backward, row.forward
        return Option(
            phrase.start + 1, phrase.end + 1, words[0], words[-1], self.phrase_score(phrase), phrase, words, back, after
        )

    def groups(self, start: int) -> list[tuple[int, list[Option]]]:
        """The options starting at ``start``, grouped by end position (ascending)."""
        by_end: dict[int, list[Option]] = {}
        for opt in self.by_start[start]:
            by_end.setdefault(opt.t, []).append(opt)
        return sorted(by_end.items())


@dataclass(frozen=True)
class SearchResult:
    """What a search returns: up to k hypotheses, best first.

    Each hypothesis is ``(score, phrases in target order)``; ``optimal`` is
    True only when the method proves that the first one is the best.
    ``upper_bound``, when the method has one, bounds the score of every
    derivation (the certificate: at a proven optimum it equals the best score;
    an exhaustive method's is its best score).

    The A* (``exact``, ``prove``) also reports ``root_bound``, its bound before it expanded
    anything (so ``root_bound`` minus the best score is the gap at the start of the proof), and
    ``phases``, the seconds of its phases (``lower``: the stack decoder's lower bound,
    ``bounds``: building the heuristic, ``search``: the A*'s expansion).

    ``winners`` (the stack decoder's n-best lists only, else None) holds, for each hypothesis,
    each phrase's recombination winner as Moses' n-best arithmetic needs it
    (:mod:`fstdecode.search.moses_nbest`, checked by :mod:`fstdecode.reference.moses_float`): None where the hypothesis made of the
    previous phrase's winner and this phrase is itself the best of its recombination key, else
    that best hypothesis' phrases.
    """

    hypotheses: tuple[tuple[float, tuple[Phrase, ...]], ...]
    optimal: bool
    states: int
    transitions: int
    upper_bound: float | None = None
    root_bound: float | None = None
    phases: tuple[tuple[str, float], ...] = ()
    winners: tuple[tuple[tuple[Phrase, ...] | None, ...], ...] | None = None
    #: Why a result that is no failure is not proven (``prove``'s budget or tables), else None.
    unproven: str | None = None
    #: The native searches: ``(form, result)``, the core form of the problem
    #: (:func:`~fstdecode.search.native.native_form`) and the core's result, for a writer that
    #: reads the hypotheses in the core (:mod:`fstdecode.search.moses_nbest`); else None.
    native: Any = None

    def certified(self) -> SearchResult:
        """This result with its certificate: a proven optimum bounds every derivation by its score."""
        if self.upper_bound is not None or not self.optimal or not self.hypotheses:
            return self
        return dataclasses.replace(self, upper_bound=self.hypotheses[0][0])
