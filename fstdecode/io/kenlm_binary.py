"""KenLM binary language models (probing or trie), read through the ``kenlm`` package.

A KenLM binary file (made by KenLM's ``build_binary``) starts with the magic text
``mmap lm http://kheafield.com/code`` (:data:`KENLM_MAGIC`); :func:`is_kenlm_binary` tests
for it. :class:`KenLMBinaryLM` scores such a file with KenLM itself and offers the interface
of :class:`~fstdecode.io.arpa.ArpaLM` that the Python engine's searches use, in the same
natural-log units, so that a binary and the ARPA file it was built from give the same
scores (KenLM stores floats, ArpaLM doubles: they agree to about 1e-6 per n-gram unless the
binary was quantized with ``build_binary -q``).

``kenlm`` is an optional extra (``pip install 'fstdecode[kenlm]'``, which compiles KenLM
from source, a few minutes); it is imported when a binary is opened, and its absence is a
:class:`KenLMError` that says what to install.

How the ArpaLM queries are answered with KenLM's API (scores, states, n-gram lengths):

* ``logprob(context, w)``: the state after ``context`` (fed from KenLM's null context), then
  ``w``. KenLM's states are exact for the back-off recursion.
* ``extends(c)``: KenLM's own answer: it keeps ``c`` in its state (so the state of ``c``
  differs from that of ``c[1:]``) when a stored n-gram extends ``c``, and also when ``c``
  does not extend but the ARPA file wrote a backoff for it, even 0 (``, does 0``). ArpaLM
  says False for the latter, and shortens such a context where KenLM keeps it. Both are
  exact (a dropped context's backoff is charged: :func:`fstdecode.statespace.ngram.minimise`),
  so every score and every exact search's optimum are the same; only the number of
  distinct LM states, and so what a beam or stack search prunes, can differ. The kenlm API
  cannot tell these contexts apart from extending ones without trying every word
  (KenLM reports match lengths past the stored n-gram when the backoffs on the way are 0).
* ``backoff(c)``: 0 unless ``c`` is a stored n-gram (its last word is then matched at length
  ``len(c)``); else the score after ``c`` of a word ``w`` that ends no stored n-gram but its
  unigram (matched as a unigram; ``<s>`` always qualifies), minus its score after ``c[1:]``.
  KenLM's sums are in float, so the difference is exact to about 1e-6.
* ``restrict(k)``: contexts are cut to ``k - 1`` words, which is what a model read up to
  order ``k`` does (its ``k``-grams' backoffs are never reached).

Two backends, chosen when the file is opened (:meth:`KenLMBinaryLM.from_file`'s ``engine``):

* native (``auto``, ``native``): the core's own reader (``_core.KenLMBinary``, an mmap of the
  file; :attr:`KenLMBinaryLM.core`) answers every query, and the native searches score with
  it directly (it is a ``_core.LanguageModel``, as the ARPA reader's ``NgramLM``): no Python
  and no ``kenlm`` package in the query path. :meth:`~KenLMBinaryLM.restrict` is the core's
  ``restrict`` (a ``_core.RestrictedLM``). Quantized (``build_binary -q``) and
  array-compressed (``-a``) binaries are refused with the reader's one-line message, as a
  :class:`KenLMError`.
* ``python`` (the reference engine): the ``kenlm`` package, as described above; ``core`` is
  None. A native search given such a model opens the file with the core reader once
  (:meth:`KenLMBinaryLM.native_core`).

Both answer ``extends`` as KenLM's states do, so both decode alike.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from fstdecode.errors import FstdecodeError
from fstdecode.io.arpa import BOS, LN10, UNK

__all__ = ["KENLM_MAGIC", "KenLMBinaryLM", "KenLMError", "is_kenlm_binary", "require_kenlm"]

#: The first bytes of every KenLM binary file (lm/binary_format.cc: ``kMagicBeforeVersion``).
KENLM_MAGIC = b"mmap lm http://kheafield.com/code"

#: How to get the optional ``kenlm`` package.
INSTALL_HINT = "pip install 'fstdecode[kenlm]' (or pip install kenlm; it compiles KenLM, a few minutes)"

# States kept per model: the searches ask for the same contexts again and again.
_STATE_CACHE = 1 << 18


class KenLMError(FstdecodeError):
    """A KenLM binary that cannot be used: ``kenlm`` missing (Python engine), an unreadable or unsupported file."""


def is_kenlm_binary(path: str | os.PathLike[str]) -> bool:
    """True iff ``path`` is a readable file that starts with :data:`KENLM_MAGIC`."""
    try:
        with open(path, "rb") as stream:
            return stream.read(len(KENLM_MAGIC)) == KENLM_MAGIC
    except OSError:
        return False


def require_kenlm(path: str) -> Any:
    """The ``kenlm`` module; KenLMError naming ``path`` and the install command when it is absent."""
    try:
        import kenlm
    except ImportError:
        raise KenLMError(
            f"{path}: this is a KenLM binary language model, which needs the kenlm package: "
            f"{INSTALL_HINT}; or give the ARPA file it was built from"
        ) from None
    return kenlm


def _vocabulary(path: str) -> frozenset[str]:
    """The words that build_binary appends after the model: NUL-separated, ``<unk>`` first.

    An empty set when the file has none (a binary built without its vocabulary).
    """
    with open(path, "rb") as stream, mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
        start = data.rfind(UNK.encode() + b"\0")
        if start < 0:
            return frozenset()
        words = data[start:].split(b"\0")
    return frozenset(w.decode("utf-8", "replace") for w in words if w)


class KenLMBinaryLM:
    """A KenLM binary LM behind :class:`~fstdecode.io.arpa.ArpaLM`'s interface; natural logs.

    Built with :meth:`from_file`. ``path``, ``order`` (the order searches use: the file's,
    or lower after :meth:`restrict`) and the queries ``in``, :meth:`logprob`,
    :meth:`score_sentence`, :meth:`phrase_estimate`, :meth:`word`, :attr:`vocabulary`,
    :meth:`backoff`, :meth:`extends`, :meth:`unigram_logprob`, as ArpaLM's.

    Invariant: exactly one backend answers the queries: ``core`` (a ``_core.LanguageModel``
    of order ``order``) when it is not None, else the ``kenlm`` package's model. ``counts``
    are the core's (the header's, cut to ``order``), empty with the ``kenlm`` package, which
    does not report them. Pickles by path and backend (workers reopen the file).
    """

    def __init__(
        self, path: str, model: Any, kenlm: Any, order: int, *, core: Any = None, base: Any = None
    ) -> None:
        self.path = path
        self.order = order
        #: The native model the queries and the native searches use (None: the kenlm package's).
        self.core = core
        self.counts: tuple[int, ...] = tuple(core.counts) if core is not None else ()
        self._base = base if base is not None else core  # the file's order, for restrict()
        self._model = model
        self._kenlm = kenlm
        self._vocabulary: frozenset[str] | None = None
        self._state = lru_cache(maxsize=_STATE_CACHE)(self._compute_state)
        self._fallbacks: tuple[str, ...] | None = None
        self._native: Any = None  # native_core()'s, for a kenlm-package model

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], max_order: int | None = None, engine: str = "auto"
    ) -> KenLMBinaryLM:
        """Open a KenLM binary; ``max_order`` below the file's order restricts it (:meth:`restrict`).

        ``engine`` ``python`` reads it with the ``kenlm`` package; any other value with the
        native core's reader (no ``kenlm`` needed).
        """
        spath = os.fsdecode(os.fspath(path))
        if max_order is not None and max_order < 1:
            raise KenLMError(f"{spath}: max_order must be >= 1, got {max_order}")
        if engine != "python":
            base = _open_native(spath)
            order = base.order if max_order is None else min(max_order, base.order)
            return cls(spath, None, None, order, core=base.restrict(order), base=base)
        kenlm = require_kenlm(spath)
        try:
            model = kenlm.Model(spath)
        except (OSError, RuntimeError, IOError) as err:
            raise KenLMError(f"{spath}: KenLM cannot read this binary: {err}") from None
        order = model.order if max_order is None else min(max_order, model.order)
        return cls(spath, model, kenlm, order)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _reopen, (self.path, self.order, "python" if self.core is None else "native")

    def __repr__(self) -> str:
        backend = "kenlm" if self.core is None else "native"
        return f"KenLMBinaryLM(path={self.path!r}, order={self.order!r}, backend={backend!r})"

    def restrict(self, order: int) -> KenLMBinaryLM:
        """The model read up to ``order`` (1 <= order <= self.order)."""
        if not 1 <= order <= self.order:
            raise KenLMError(f"{self.path}: cannot restrict an order-{self.order} model to order {order}")
        if order == self.order:
            return self
        if self.core is not None:
            return KenLMBinaryLM(self.path, None, None, order, core=self._base.restrict(order), base=self._base)
        return KenLMBinaryLM(self.path, self._model, self._kenlm, order)

    def native_core(self) -> Any:
        """The ``_core.LanguageModel`` the native searches score with: ``core``, or (a model
        read with the kenlm package) the file opened once by the core's reader at ``order``.

        Raises KenLMError with the reader's message for a binary it cannot read (quantized,
        array-compressed).
        """
        if self.core is not None:
            return self.core
        if self._native is None:
            self._native = _open_native(self.path).restrict(self.order)
        return self._native

    # ------------------------------------------------------------------ states

    def _compute_state(self, context: tuple[str, ...]) -> Any:
        """KenLM's state after ``context`` (at most order - 1 words) from its null context."""
        state = self._kenlm.State()
        if not context:
            self._model.NullContextWrite(state)
            return state
        before = self._state(context[:-1])
        self._model.BaseScore(before, context[-1], state)
        return state

    def _context(self, context: Sequence[str]) -> tuple[str, ...]:
        if isinstance(context, str):
            raise TypeError("context must be a sequence of words, not a str")
        n = self.order - 1
        return tuple(context[max(0, len(context) - n):]) if n and context else ()

    def _full(self, context: tuple[str, ...], word: str) -> Any:
        out = self._kenlm.State()
        return self._model.BaseFullScore(self._state(context), word, out)

    # ------------------------------------------------------------------ queries

    def __contains__(self, word: object) -> bool:
        """True iff ``word`` is in the vocabulary (``<unk>`` always is)."""
        if word == UNK:
            return True
        if not isinstance(word, str):
            return False
        if self.core is not None:
            return self.core.index(word) != self.core.unk
        return word in self._model

    def logprob(self, context: Sequence[str], word: str) -> float:
        """Natural-log p(word | context) with back-off (last ``order - 1`` context words)."""
        if self.core is not None:
            if isinstance(context, str):
                raise TypeError("context must be a sequence of words, not a str")
            return self.core.logprob_words(context, word)
        return self._full(self._context(context), word).log_prob * LN10

    def score_sentence(self, words: Sequence[str], bos: bool = True, eos: bool = True) -> float:
        """ln p(``<s> w1 .. wn </s>``); ``<s>`` is context only, ``</s>`` is predicted."""
        if isinstance(words, str):
            raise TypeError("words must be a sequence of words, not a str")
        seq = list(words) + (["</s>"] if eos else [])
        history: list[str] = [BOS] if bos else []
        return self._score_span(history, seq)

    def _score_span(self, history: list[str], words: Sequence[str]) -> float:
        if self.core is not None:  # history is [] or [<s>]
            return sum(self.core.score_words(list(words), bool(history), False))
        total = 0.0
        n = self.order - 1
        for w in words:
            context = tuple(history[max(0, len(history) - n):]) if n else ()
            total += self._full(context, w).log_prob
            history.append(w)
        return total * LN10

    def phrase_estimate(self, words: Sequence[str]) -> float:
        """Moses/KenLM's context-free estimate of a target phrase (``<s>`` first: context only)."""
        if isinstance(words, str):
            raise TypeError("words must be a sequence of words, not a str")
        if words and words[0] == BOS:
            return self._score_span([BOS], words[1:])
        return self._score_span([], words)

    def word(self, word: str) -> str:
        """The LM's spelling of ``word``: itself if in the vocabulary, else ``<unk>``."""
        return word if word in self else UNK

    @property
    def vocabulary(self) -> frozenset[str]:
        """The unigram vocabulary (``<unk>`` included), read from the file's word list."""
        if self._vocabulary is None:
            self._vocabulary = _vocabulary(self.path) | {UNK}
        return self._vocabulary

    def unigram_logprob(self, word: str) -> float:
        """Natural-log unigram probability of ``word`` (``<unk>``'s if out of vocabulary)."""
        if self.core is not None:
            return self.core.logprob_words((), word)
        return self._full((), word).log_prob * LN10

    def extends(self, context: Sequence[str]) -> bool:
        """True iff KenLM keeps ``context`` in its state: a stored n-gram extends it, or the
        ARPA file wrote a backoff for it (even 0). See the module docstring."""
        if self.core is not None:
            return self.core.extends_words(list(context))
        c = tuple(self.word(w) for w in context)
        if not c or len(c) >= self.order:
            return False
        return self._state(c) != self._state(c[1:])

    def backoff(self, context: Sequence[str]) -> float:
        """ln backoff weight of the n-gram ``context`` (0 if it is not in the model)."""
        if self.core is not None:
            return self.core.backoff_words(list(context))
        c = tuple(self.word(w) for w in context)
        if not c or len(c) >= self.order:
            return 0.0
        if self._full(c[:-1], c[-1]).ngram_length != len(c):
            return 0.0  # not a stored n-gram
        for w in self._probes():
            after = self._full(c, w)
            # Matched as a unigram: no stored n-gram ends in a suffix of c + w, so every backoff
            # of c's state was charged. <s> ends no stored n-gram at all: it always qualifies.
            if after.ngram_length == 1 or w == BOS:
                return (after.log_prob - self._full(c[1:], w).log_prob) * LN10
        raise KenLMError(f"{self.path}: cannot read the backoff of {' '.join(c)!r}")

    def _probes(self) -> tuple[str, ...]:
        """Words to measure backoffs with: the likeliest unigrams (small sums, so little rounding), then ``<s>``.

        ``<s>`` ends no stored n-gram but its unigram, so it always fits; its -99 unigram
        costs precision, hence the others first.
        """
        if self._fallbacks is None:
            words = sorted(self.vocabulary - {BOS, UNK}, key=lambda w: (-self._full((), w).log_prob, w))
            self._fallbacks = tuple(words[:16]) + (BOS,)
        return self._fallbacks


def _open_native(path: str) -> Any:
    """The core's reader of the binary ``path`` (``_core.KenLMBinary``); its refusal as a KenLMError."""
    from fstdecode._native import core as _core

    try:
        return _core.KenLMBinary(path)
    except _core.KenLMFormatError as err:
        raise KenLMError(str(err)) from None


def _reopen(path: str, order: int, engine: str = "python") -> KenLMBinaryLM:
    """Unpickle a :class:`KenLMBinaryLM`: open ``path`` again, at ``order``, with the same backend."""
    return KenLMBinaryLM.from_file(path, max_order=order, engine=engine)
