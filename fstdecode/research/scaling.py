"""Random decoding instances with a fixed ambiguity, for measuring how the signature DP scales.

Theorem 1 bounds the DP by n · g(d + 2) · h^(d+1) states and (d + 2)² · l
transitions per state, where (Section 4.5) l bounds the phrases starting
at a position and h bounds |first(j)|, |last(j)| and |singles(j)|.
:func:`random_problem` builds sentences in which both are *exactly*
fixed, so that only n and d vary:

* every token j gets a set W_j of h distinct target words, drawn from a
  vocabulary of ``vocab`` words;
* the single word j has the h phrases e = (w) for w in W_j;
* each span s..t of 2 to ``max_len`` tokens has the h phrases
  e = (W_s[i], W_t[i]), i < h (first word from W_s, last from W_t);
* hence first(j) = last(j) = W_j and singles(j) has h phrases: h is
  exact; start(j) has h phrases per span length: l = h · max_len (fewer
  only within max_len − 1 tokens of the end);
* phrase scores and all bigram scores are uniform random log-scores in
  [−5, −0.1] (every bigram is possible); the distortion weight is 0.5.

The scores do not change the search space (the DP builds every valid
state), only which derivation wins.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from fstdecode.research.problems import EdgeLM, PhraseSpec, build_problem
from fstdecode.errors import FstdecodeError
from fstdecode.io.arpa import BOS, EOS
from fstdecode.model.features import Weights
from fstdecode.problem.problem import SearchProblem

__all__ = ["ScalingError", "ModelShape", "random_problem", "SCALING_WEIGHTS"]

#: TM and LM weigh 1, each jump costs 0.5 per position; word and phrase penalties 0.
SCALING_WEIGHTS = Weights(lm=1.0, tm=(1.0,), distortion=0.5, word=0.0, phrase=0.0, unknown=0.0)


class ScalingError(FstdecodeError):
    """A model shape that cannot be built (e.g. more words per token than the vocabulary has)."""


@dataclass(frozen=True)
class ModelShape:
    """The fixed ambiguity of :func:`random_problem`: h words per token, spans up to ``max_len``.

    Invariant (checked by :meth:`check`): 1 <= h <= vocab and max_len >= 1.
    """

    h: int = 2
    max_len: int = 2
    vocab: int = 20

    @property
    def l(self) -> int:
        """Phrases starting at a position (away from the end of the sentence)."""
        return self.h * self.max_len

    def check(self) -> None:
        if not 1 <= self.h <= self.vocab:
            raise ScalingError(f"need 1 <= h <= vocab, got h={self.h}, vocab={self.vocab}")
        if self.max_len < 1:
            raise ScalingError(f"max_len must be >= 1, got {self.max_len}")


def _lm(shape: ModelShape, rng: random.Random) -> EdgeLM:
    """Every bigram over the vocabulary, <s> and </s>, with a random log-score."""
    words = [f"e{i}" for i in range(shape.vocab)]
    return EdgeLM(
        {(a, b): -rng.uniform(0.1, 5.0) for a in [BOS, *words] for b in [*words, EOS]},
        missing=-5.0,
    )


def random_problem(n: int, d: int, shape: ModelShape = ModelShape(), seed: int = 0) -> SearchProblem:
    """A random n-word instance of the given shape (module docstring), distortion limit d.

    The same (n, shape, seed) gives the same instance for every d.
    """
    shape.check()
    if n < 1:
        raise ScalingError(f"n must be >= 1, got {n}")
    rng = random.Random(f"{seed}:{n}:{shape}")
    lm = _lm(shape, rng)
    sets = [rng.sample(range(shape.vocab), shape.h) for _ in range(n)]
    phrases = []
    for s in range(n):
        for t in range(s, min(n, s + shape.max_len)):
            for i in range(shape.h):
                target = (f"e{sets[s][i]}",) if s == t else (f"e{sets[s][i]}", f"e{sets[t][i]}")
                phrases.append(PhraseSpec(s, t, target, -rng.uniform(0.1, 5.0)))
    words = [f"x{i}" for i in range(n)]
    return build_problem(words, phrases, lm, d, SCALING_WEIGHTS)
