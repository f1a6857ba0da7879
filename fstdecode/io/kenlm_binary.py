"""KenLM binary language models (probing or trie), read by the native core.

A KenLM binary file (made by KenLM's ``build_binary``) starts with the magic text
``mmap lm http://kheafield.com/code`` (:data:`KENLM_MAGIC`); :func:`is_kenlm_binary` tests
for it. :class:`KenLMBinaryLM` scores such a file with the core's own reader
(``_core.KenLMBinary``, an mmap of the file; :attr:`KenLMBinaryLM.core`) and offers the
interface of :class:`~fstdecode.io.arpa.ArpaLM` in the same natural-log units, so that a binary
and the ARPA file it was built from give the same scores (KenLM stores floats, ArpaLM doubles:
they agree to about 1e-6 per n-gram). The native searches score with the reader directly (it is
a ``_core.LanguageModel``, as the ARPA reader's ``NgramLM``): no Python and no ``kenlm``
package in the query path. :meth:`~KenLMBinaryLM.restrict` is the core's ``restrict`` (a
``_core.RestrictedLM``).

``extends(c)`` is KenLM's own answer: it keeps ``c`` in its state when a stored n-gram extends
``c``, and also when ``c`` does not extend but the ARPA file wrote a backoff for it, even 0.
ArpaLM says False for the latter. Both are exact (a dropped context's backoff is charged:
:func:`fstdecode.statespace.ngram.minimise`), so every score and every exact search's optimum
are the same; only the number of distinct LM states, and so what a beam or stack search
prunes, can differ.

Quantized (``build_binary -q``) and array-compressed (``-a``) binaries are refused with the
reader's one-line message, as a :class:`KenLMError` (give the ARPA file they were built from).
The ``kenlm`` package is not used here: the tests keep it as an oracle (the ``test`` extra).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Sequence
from typing import Any

from fstdecode.errors import FstdecodeError
from fstdecode.io.arpa import BOS, UNK
from fstdecode.io.files import is_regular

__all__ = ["KENLM_MAGIC", "KenLMBinaryLM", "KenLMError", "is_kenlm_binary"]

#: The first bytes of every KenLM binary file (lm/binary_format.cc: ``kMagicBeforeVersion``).
KENLM_MAGIC = b"mmap lm http://kheafield.com/code"


class KenLMError(FstdecodeError):
    """A KenLM binary that cannot be used: an unreadable or unsupported file."""


def is_kenlm_binary(path: str | os.PathLike[str]) -> bool:
    """True iff ``path`` is a readable regular file that starts with :data:`KENLM_MAGIC` (a pipe or
    FIFO is not opened: a KenLM binary is mapped, so it is a regular file)."""
    if not is_regular(path):
        return False
    try:
        with open(path, "rb") as stream:
            return stream.read(len(KENLM_MAGIC)) == KENLM_MAGIC
    except OSError:
        return False


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

    Invariant: ``core`` (a ``_core.LanguageModel`` of order ``order``) answers every query;
    ``counts`` are the core's (the header's, cut to ``order``). Pickles by path and order
    (workers reopen the file).
    """

    def __init__(self, path: str, order: int, core: Any, base: Any = None) -> None:
        self.path = path
        self.order = order
        #: The native model the queries and the native searches use.
        self.core = core
        self.counts: tuple[int, ...] = tuple(core.counts)
        self._base = base if base is not None else core  # the file's order, for restrict()
        self._vocabulary: frozenset[str] | None = None

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], max_order: int | None = None) -> KenLMBinaryLM:
        """Open a KenLM binary; ``max_order`` below the file's order restricts it (:meth:`restrict`)."""
        spath = os.fsdecode(os.fspath(path))
        if max_order is not None and max_order < 1:
            raise KenLMError(f"{spath}: max_order must be >= 1, got {max_order}")
        base = _open_native(spath)
        order = base.order if max_order is None else min(max_order, base.order)
        return cls(spath, order, base.restrict(order), base)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _reopen, (self.path, self.order)

    def __repr__(self) -> str:
        return f"KenLMBinaryLM(path={self.path!r}, order={self.order!r})"

    def restrict(self, order: int) -> KenLMBinaryLM:
        """The model read up to ``order`` (1 <= order <= self.order)."""
        if not 1 <= order <= self.order:
            raise KenLMError(f"{self.path}: cannot restrict an order-{self.order} model to order {order}")
        if order == self.order:
            return self
        return KenLMBinaryLM(self.path, order, self._base.restrict(order), self._base)

    def native_core(self) -> Any:
        """The ``_core.LanguageModel`` the native searches score with (``core``)."""
        return self.core

    # ------------------------------------------------------------------ queries

    def __contains__(self, word: object) -> bool:
        """True iff ``word`` is in the vocabulary (``<unk>`` always is)."""
        if word == UNK:
            return True
        if not isinstance(word, str):
            return False
        return self.core.index(word) != self.core.unk

    def logprob(self, context: Sequence[str], word: str) -> float:
        """Natural-log p(word | context) with back-off (last ``order - 1`` context words)."""
        if isinstance(context, str):
            raise TypeError("context must be a sequence of words, not a str")
        return self.core.logprob_words(context, word)

    def score_sentence(self, words: Sequence[str], bos: bool = True, eos: bool = True) -> float:
        """ln p(``<s> w1 .. wn </s>``); ``<s>`` is context only, ``</s>`` is predicted."""
        if isinstance(words, str):
            raise TypeError("words must be a sequence of words, not a str")
        seq = list(words) + (["</s>"] if eos else [])
        return self._score_span(bos, seq)

    def _score_span(self, bos: bool, words: Sequence[str]) -> float:
        return sum(self.core.score_words(list(words), bos, False))

    def phrase_estimate(self, words: Sequence[str]) -> float:
        """Moses/KenLM's context-free estimate of a target phrase (``<s>`` first: context only)."""
        if isinstance(words, str):
            raise TypeError("words must be a sequence of words, not a str")
        if words and words[0] == BOS:
            return self._score_span(True, words[1:])
        return self._score_span(False, words)

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
        return self.core.logprob_words((), word)

    def extends(self, context: Sequence[str]) -> bool:
        """True iff KenLM keeps ``context`` in its state: a stored n-gram extends it, or the
        ARPA file wrote a backoff for it (even 0). See the module docstring."""
        return self.core.extends_words(list(context))

    def backoff(self, context: Sequence[str]) -> float:
        """ln backoff weight of the n-gram ``context`` (0 if it is not in the model)."""
        return self.core.backoff_words(list(context))


def _open_native(path: str) -> Any:
    """The core's reader of the binary ``path`` (``_core.KenLMBinary``); its refusal as a KenLMError."""
    from fstdecode._native import core as _core

    try:
        return _core.KenLMBinary(path)
    except _core.KenLMFormatError as err:
        raise KenLMError(f"{err}; give the ARPA file it was built from") from None


def _reopen(path: str, order: int, *_: Any) -> KenLMBinaryLM:
    """Unpickle a :class:`KenLMBinaryLM`: open ``path`` again, at ``order``."""
    return KenLMBinaryLM.from_file(path, max_order=order)
