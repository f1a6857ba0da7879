"""Several language models as one: the LM a model with several KENLM features searches with.

Moses scores each ``KENLM`` line as a feature of its own, with its own weight. fstdecode's
searches take one LM and one LM weight, so a model with several LMs searches with
:class:`CombinedLM`, whose every score is the weighted sum of its parts' (``ln p = sum_k w_k ln
p_k``), at LM weight 1 (:mod:`fstdecode.model.model`); its native core is ``_core.CombinedLM``
(native/combined_lm.h states why right-state minimisation, the bounds and the L machine stay
exact). The features each LM contributes are read back per part
(:meth:`CombinedLM.part_scores`), for the n-best lists and ``-show-weights``.

Invariant: ``parts`` and ``weights`` have one entry per LM (at least two), weights finite and
>= 0; the word-level queries are the weighted sums of the parts' queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fstdecode._native import core as _core
from fstdecode.errors import FstdecodeError

__all__ = ["CombinedLM", "CombinedLMError"]


class CombinedLMError(FstdecodeError):
    """Language models that cannot be combined (a negative weight, a binary without its words)."""


def _core_of(name: str, lm: Any) -> Any:
    """The native LanguageModel of a loaded LM (NativeLM's ``core``, a KenLM binary's reader)."""
    core = getattr(lm, "core", None)
    if core is None and hasattr(lm, "native_core"):
        core = lm.native_core()
    if core is None:
        raise CombinedLMError(f"{name}: {lm!r} has no native reader to combine")
    return core


class CombinedLM:
    """``parts`` (LMs of any kind fstdecode reads) scored together with ``weights``."""

    __slots__ = ("parts", "weights", "names", "core", "order", "counts", "path", "_vocabulary")

    def __init__(self, parts: Sequence[Any], weights: Sequence[float], names: Sequence[str]) -> None:
        if len(parts) < 2 or len(parts) != len(weights) or len(parts) != len(names):
            raise CombinedLMError(f"{len(parts)} LMs, {len(weights)} weights, {len(names)} names: give one each, for 2+")
        for name, weight in zip(names, weights):
            if not weight >= 0:
                raise CombinedLMError(
                    f"{name}'s weight is {weight}: with several LMs each LM weight must be >= 0 (the searches' "
                    "bounds take the LM score for a log probability's kind)"
                )
        self.parts = tuple(parts)
        self.weights = tuple(float(w) for w in weights)
        self.names = tuple(names)
        self._vocabulary: frozenset[str] | None = None
        words = sorted(self.vocabulary)
        self.core = _core.CombinedLM([_core_of(name, lm) for name, lm in zip(self.names, self.parts)],
                                     list(self.weights), words)
        self.order = self.core.order
        self.counts = tuple(self.core.counts)
        self.path = " + ".join(str(getattr(lm, "path", "?")) for lm in self.parts)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return CombinedLM, (self.parts, self.weights, self.names)

    def __repr__(self) -> str:
        return f"CombinedLM({', '.join(f'{n}={w:g}' for n, w in zip(self.names, self.weights))}, order={self.order})"

    @property
    def vocabulary(self) -> frozenset[str]:
        """Every part's words (``<unk>`` included)."""
        if self._vocabulary is None:
            words: set[str] = set()
            for name, lm in zip(self.names, self.parts):
                try:
                    words |= lm.vocabulary
                except (ValueError, OSError) as err:  # a KenLM binary built without its words
                    raise CombinedLMError(f"{name}: {err}; several LMs need each LM's word list") from None
            self._vocabulary = frozenset(words)
        return self._vocabulary

    def part_scores(self, words: Sequence[str]) -> tuple[float, ...]:
        """Each part's ln p(``<s> words </s>``), unweighted: the LM features of a translation."""
        return tuple(lm.score_sentence(words) for lm in self.parts)

    # ---------------------------------------------------- the weighted queries (as one LM's)

    def __contains__(self, word: object) -> bool:
        return any(word in lm for lm in self.parts)

    def logprob(self, context: Sequence[str], word: str) -> float:
        return self.core.logprob_words(list(context), word)

    def score_sentence(self, words: Sequence[str], bos: bool = True, eos: bool = True) -> float:
        return sum(w * lm.score_sentence(words, bos, eos) for w, lm in zip(self.weights, self.parts))

    def phrase_estimate(self, words: Sequence[str]) -> float:
        return sum(w * lm.phrase_estimate(words) for w, lm in zip(self.weights, self.parts))

    def word(self, word: str) -> str:
        return word if word in self else "<unk>"

    def backoff(self, context: Sequence[str]) -> float:
        return self.core.backoff_words(list(context))

    def extends(self, context: Sequence[str]) -> bool:
        return self.core.extends_words(list(context))

    def unigram_logprob(self, word: str) -> float:
        return sum(w * lm.unigram_logprob(word) for w, lm in zip(self.weights, self.parts))

    def index(self, word: str) -> int:
        return self.core.index(word)
