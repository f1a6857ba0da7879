"""Decoding instances built in memory, with exact edge scores.

The complexity experiments need decoding problems whose bigram scores are
exactly given numbers (TSP edge weights, Knight's source model), including
*impossible* bigrams. :class:`EdgeLM` is the smallest object that
:class:`~fstdecode.problem.problem.SearchProblem` accepts as a language
model: it answers ``logprob((a,), b)`` from a table and gives ``-inf`` to
every bigram not in it.

Why ``-inf`` is safe in the exact DPs: a transition's score is a sum of
``Option.score``, ``bigram`` and ``-eta * jump``, all finite except the
bigram; ``-inf + finite`` is ``-inf`` and no ``+inf`` ever occurs, so no
``nan`` can arise as long as the LM weight is positive (``0 * -inf`` is
``nan``: :func:`build_problem` therefore refuses ``weights.lm <= 0``).
A state reached only through impossible bigrams keeps the score ``-inf``;
it is still built and counted, so state counts measure the search space,
not the feasible part of it. A final score of ``-inf`` means that no
derivation uses possible bigrams only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.model.features import Weights
from fstdecode.io.phrase_table import PhrasePair
from fstdecode.problem.problem import SearchProblem
from fstdecode.problem.sentence import Phrase, Sentence

__all__ = ["ProblemError", "EdgeLM", "PhraseSpec", "LM_ONLY", "build_problem", "word_for_word_problem"]

#: Weights under which a derivation's score is its LM score alone: the TM,
#: word, phrase and distortion features all weigh 0 (TSP and Knight instances).
LM_ONLY = Weights(lm=1.0, tm=(0.0,), distortion=0.0, word=0.0, phrase=0.0, unknown=0.0)


class ProblemError(FstdecodeError):
    """An in-memory decoding instance that cannot be built."""


@dataclass(frozen=True)
class EdgeLM:
    """A bigram LM given by its edges, in natural-log units.

    Invariant: ``logprob((a,), b) == scores[(a, b)]`` when the pair is in
    ``scores``, else ``missing`` (``-inf`` by default: the bigram is
    impossible). Only the last word of the context is read, as a bigram
    LM does; an empty context is an error (the searches never ask).
    """

    scores: Mapping[tuple[str, str], float] = field(default_factory=dict)
    missing: float = -math.inf
    #: The LM interface :class:`SearchProblem` reads besides ``logprob``: a bigram model
    #: named ``path`` in messages, without backoff weights.
    order: int = 2
    path: str = "<edge LM>"

    def logprob(self, context: Sequence[str], word: str) -> float:
        """ln p(word | context[-1]) as given by the table."""
        if not context:
            raise ProblemError("EdgeLM is a bigram LM: it needs a one-word context")
        return self.scores.get((context[-1], word), self.missing)

    def backoff(self, context: Sequence[str]) -> float:
        """0: there is no backoff; every bigram is given (or impossible)."""
        return 0.0

    def extends(self, context: Sequence[str]) -> bool:
        """True: every one-word context matters, so state minimisation never drops it."""
        return True


@dataclass(frozen=True)
class PhraseSpec:
    """One phrase of an in-memory instance: source tokens ``start..end`` (0-based, inclusive).

    ``score`` is the phrase's TM log-score (weighted by ``weights.tm[0]``).
    """

    start: int
    end: int
    target: tuple[str, ...]
    score: float = 0.0


def build_problem(
    words: Sequence[str],
    phrases: Iterable[PhraseSpec],
    lm: EdgeLM,
    d: int,
    weights: Weights = LM_ONLY,
) -> SearchProblem:
    """A :class:`SearchProblem` over ``words`` whose only options are ``phrases``.

    Raises ProblemError on a phrase outside the sentence, an empty target, a
    position without any phrase starting there (as real sentences get an
    unknown-word copy there, an in-memory instance must say what it wants)
    or a non-positive LM weight (see the module docstring).
    """
    if weights.lm <= 0:
        raise ProblemError(f"the LM weight must be > 0 (0 * -inf is nan), got {weights.lm}")
    words = tuple(words)
    n = len(words)
    options: list[list[Phrase]] = [[] for _ in range(n)]
    for spec in phrases:
        if not 0 <= spec.start <= spec.end < n:
            raise ProblemError(f"phrase {spec} lies outside the {n}-word sentence")
        if not spec.target:
            raise ProblemError(f"phrase {spec} has an empty target")
        pair = PhrasePair(source=words[spec.start : spec.end + 1], target=tuple(spec.target), scores=(spec.score,))
        options[spec.start].append(Phrase(spec.start, spec.end, pair))
    for i, opts in enumerate(options):
        if not opts:
            raise ProblemError(f"no phrase starts at token {i} ({words[i]!r})")
    sentence = Sentence(words, tuple(tuple(o) for o in options), frozenset())
    return SearchProblem(sentence, lm, weights.with_tm_columns(1), d)  # type: ignore[arg-type]


def word_for_word_problem(
    words: Sequence[str], targets: Sequence[str], lm: EdgeLM, d: int, weights: Weights = LM_ONLY
) -> SearchProblem:
    """One single-word phrase per token: token i translates as ``targets[i]`` only (score 0)."""
    if len(targets) != len(words):
        raise ProblemError(f"{len(words)} words but {len(targets)} targets")
    return build_problem(words, [PhraseSpec(i, i, (t,)) for i, t in enumerate(targets)], lm, d, weights)
