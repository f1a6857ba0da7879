"""The ARPA n-gram LM of the native core, behind :class:`~fstdecode.io.arpa.ArpaLM`'s interface.

:class:`NativeLM` is a drop-in for :class:`ArpaLM`: it accepts and refuses the same files,
with the same :class:`ArpaError` messages, and returns the same floats, bit for bit (the core
computes every value with the same double operations, in the same order). It reads the file
once through :mod:`fstdecode.io.files` as ArpaLM does, then hands the bytes to the C++ reader
(``fstdecode._native.core.NgramLM.parse_arpa``), about 15x faster than the Python
parser. When the C++ reader refuses a file, the Python parser parses the same bytes to raise its
own message, so every error a user sees is ArpaLM's (and a pipe is not read twice).

Words are interned to integer ids in the core; :meth:`NativeLM.index` gives a word's id and
:attr:`NativeLM.core` the core model, for native code that scores over ids.

A NativeLM pickles (to ship a model to worker processes) by what it was loaded from, not by
its tables: unpickling reads the ARPA file again (see :meth:`NativeLM.__reduce__`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from fstdecode._native import core as _core
from fstdecode.io.arpa import ArpaError, ArpaLM
from fstdecode.io.binarized import check_stamp, is_lm_image, verify_checksum
from fstdecode.io.files import is_regular, read_text_bytes, split_lines

__all__ = ["NativeLM"]

# The core takes max_order as a C int; larger values mean "the file's order" anyway.
_INT_MAX = 2**31 - 1


class NativeLM:
    """A back-off n-gram LM read from an ARPA file, scored by the native core; natural logs.

    Built with :meth:`from_file`. Same public surface and invariants as :class:`ArpaLM`:
    ``path``, ``order`` (``>= 1``), ``counts`` (the ``\\data\\`` counts of the kept orders),
    :meth:`restrict`, ``in``, :meth:`logprob`, :meth:`score_sentence`,
    :meth:`phrase_estimate`, :meth:`word`, :attr:`vocabulary`, :meth:`backoff`,
    :meth:`extends`, :meth:`unigram_logprob`; plus :attr:`core` and :meth:`index` for code
    that works over word ids.

    Pickling: the core (a C++ object) is not pickled. A pickle holds the file's absolute path
    as it was when the model was loaded, the ``max_order`` given to :meth:`from_file`, the
    order of any :meth:`restrict`, and the counts; unpickling reads the file again with those
    arguments. So the file must be readable at that same absolute path wherever the pickle is
    loaded (a shared file system for remote workers) and must not have changed: unpickling
    raises :class:`ArpaError` if the file is missing or unreadable, or if its counts differ
    from the pickled model's. The result scores bit for bit as the original. Copies
    (:func:`copy.copy`, :func:`copy.deepcopy`) return the model itself: it is immutable.
    """

    __slots__ = ("path", "order", "counts", "core", "_vocabulary", "_source", "_max_order")

    def __init__(
        self, path: str, core: _core.NgramLM | _core.ImageLM, *, source: str | None = None, max_order: int | None = None
    ) -> None:
        """Wrap ``core``, read from ``path`` (as the user gave it) with ``from_file``'s ``max_order``.

        ``source`` is the absolute path that unpickling re-reads (default: ``path`` made
        absolute now).
        """
        self.path = path
        self.core = core
        self.order: int = core.order
        self.counts: tuple[int, ...] = core.counts
        self._vocabulary: frozenset[str] | None = None
        self._source = source if source is not None else os.path.abspath(path)
        self._max_order = max_order

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        """Pickle as "re-read the file": ``_reload(path, source, max_order, order, counts)``; ArpaError
        for a file that cannot be read again (a pipe or FIFO: its data are gone)."""
        if os.path.exists(self._source) and not is_regular(self._source):
            raise ArpaError(
                f"{self.path}: another process (a --cluster worker) reads the language model's file again, and a pipe "
                "or FIFO can be read only once; give a regular file"
            )
        return _reload, (self.path, self._source, self._max_order, self.order, self.counts)

    def __copy__(self) -> NativeLM:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> NativeLM:
        return self

    def __repr__(self) -> str:
        return f"NativeLM(path={self.path!r}, order={self.order!r}, counts={self.counts!r})"

    # ------------------------------------------------------------------ loading

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], max_order: int | None = None) -> NativeLM:
        """Read an ARPA file (plain or gzip, UTF-8) up to ``max_order``: :meth:`ArpaLM.from_file`.

        The same files are accepted, with the same relaxations, and the same ArpaError
        messages are raised for the rest.
        """
        spath = os.fspath(path)
        if not isinstance(spath, str):
            spath = os.fsdecode(spath)
        if max_order is not None and max_order < 1:
            ArpaLM.from_file(spath, max_order)  # raises its ArpaError
        if is_lm_image(spath):
            return cls._from_image(spath, max_order)
        data = read_text_bytes(spath, ArpaError)  # read once: a pipe works
        limit = 0 if max_order is None or max_order > _INT_MAX else max_order
        try:
            core = _core.NgramLM.parse_arpa(data, limit)
        except _core.ArpaFormatError as err:
            ArpaLM.from_lines(spath, split_lines(data, spath, ArpaError), max_order)  # raises the canonical ArpaError
            raise ArpaError(f"{spath}: {err} (the Python reader accepts this file: please report)") from None
        return cls(spath, core, max_order=max_order)

    @classmethod
    def _from_image(cls, path: str, max_order: int | None) -> NativeLM:
        """An LM image (``fstdecode binarize``), mapped (``_core.ImageLM``); read up to ``max_order``
        by a view of the same tables at that order (ImageLM.restrict, no copy)."""
        verify_checksum(path, ArpaError)
        try:
            core, stamp = _core.ImageLM.map_image(path)
        except _core.LmImageError as err:
            raise ArpaError(str(err)) from None
        check_stamp(path, stamp, ArpaError)
        if max_order is not None and max_order < core.order:
            core = core.restrict(max_order)
        return cls(path, core, max_order=max_order)

    def restrict(self, order: int) -> NativeLM:
        """The model using only n-grams up to ``order``: :meth:`ArpaLM.restrict`."""
        if not 1 <= order <= self.order:
            raise ArpaError(f"{self.path}: cannot restrict an order-{self.order} model to order {order}")
        if order == self.order:
            return self
        return NativeLM(self.path, self.core.restrict(order), source=self._source, max_order=self._max_order)

    # ------------------------------------------------------------------ queries

    def __contains__(self, word: object) -> bool:
        """True iff ``word`` is in the unigram vocabulary (``<unk>`` always is)."""
        return self.core.contains(word)

    def logprob(self, context: Sequence[str], word: str) -> float:
        """Natural-log p(word | context) with back-off: :meth:`ArpaLM.logprob`."""
        return self.core.logprob_words(context, word)

    def score_sentence(self, words: Sequence[str], bos: bool = True, eos: bool = True) -> float:
        """ln p(``<s> w1 .. wn </s>``): :meth:`ArpaLM.score_sentence`."""
        return self.core.score_sentence(words, bool(bos), bool(eos))

    def phrase_estimate(self, words: Sequence[str]) -> float:
        """Moses/KenLM's context-free estimate of a target phrase: :meth:`ArpaLM.phrase_estimate`."""
        return self.core.phrase_estimate(words)

    def word(self, word: str) -> str:
        """The LM's spelling of ``word``: itself if in the vocabulary, else ``<unk>``."""
        return self.core.spelling(word)

    @property
    def vocabulary(self) -> frozenset[str]:
        """The unigram vocabulary (``<unk>`` included)."""
        if self._vocabulary is None:
            self._vocabulary = frozenset(self.core.words())
        return self._vocabulary

    def backoff(self, context: Sequence[str]) -> float:
        """ln backoff weight of the n-gram ``context`` (0 if it is not in the model)."""
        return self.core.backoff_words(context)

    def extends(self, context: Sequence[str]) -> bool:
        """True iff some stored n-gram longer than ``context`` starts with it: :meth:`ArpaLM.extends`."""
        return self.core.extends_words(context)

    def unigram_logprob(self, word: str) -> float:
        """Natural-log unigram probability of ``word`` (``<unk>``'s if out of vocabulary)."""
        return self.core.unigram_logprob(word)

    def index(self, word: str) -> int:
        """The core's id of ``word`` (``<unk>``'s if out of vocabulary)."""
        return self.core.index(word)


def _reload(path: str, source: str, max_order: int | None, order: int, counts: tuple[int, ...]) -> NativeLM:
    """Unpickle a :class:`NativeLM`: read ``source`` again up to ``max_order``, restrict to ``order``.

    Raises ArpaError, naming the file and saying that it was an unpickling, if the file cannot
    be read or is no longer the file the model was loaded from (other orders or counts).
    """
    why = f"unpickling the language model {path!r} re-reads its file"
    try:
        lm = NativeLM.from_file(source, max_order)
    except ArpaError as err:
        raise ArpaError(f"{err} ({why})") from None
    if lm.order < order or lm.counts[:order] != counts:
        raise ArpaError(
            f"{source}: the file has changed since the model was pickled: counts {lm.counts[:order]}, "
            f"pickled {counts} ({why})"
        )
    core = lm.core if lm.order == order else lm.core.restrict(order)
    return NativeLM(path, core, source=source, max_order=max_order)
