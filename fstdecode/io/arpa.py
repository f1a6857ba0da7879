"""Read ARPA back-off n-gram language models (any order) and score with KenLM's semantics.

The ARPA file holds log10 values; everything this module returns is in natural-log units
(log10 value x ``LN10``), the units Moses reports (``KENLM0``).

Scoring is the standard back-off recursion that KenLM implements::

    ln p(w | c1..ck) = prob(c1..ck w)                       if that n-gram is in the model
                     = backoff(c1..ck) + ln p(w | c2..ck)    otherwise

where ``backoff(c1..ck)`` is 0 when the n-gram ``c1..ck`` is absent or has no backoff field.
Backoff weights are used exactly as given, including positive ones. Words not in the unigram
vocabulary are mapped to ``<unk>``, both as predicted word and inside the context.

Parsing follows KenLM's reader, with a few deliberate relaxations (listed in
:meth:`ArpaLM.from_file`). Every problem with the file raises :class:`ArpaError`, with a
message of the form ``"{path}:{lineno}: {what is wrong}"`` (line numbers 1-based).
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass, field
from itertools import repeat
from typing import Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.io.files import read_lines
from fstdecode.io.tokens import ASCII_WHITESPACE
from fstdecode.io.values import parse_finite, parse_number

__all__ = [
    "ArpaError",
    "ArpaLM",
    "UNK",
    "BOS",
    "EOS",
    "MISSING_UNK_LOG10",
    "LN10",
]

UNK = "<unk>"
BOS = "<s>"
EOS = "</s>"
#: KenLM's default log10 probability for ``<unk>`` when the ARPA file has no ``<unk>`` line
#: (``Config::unknown_missing_logprob``); its backoff is then 0.
MISSING_UNK_LOG10 = -100.0
LN10 = math.log(10)

# KenLM also accepts the capitalised spelling as the unknown word ("Sadly some LMs have <UNK>").
_UNK_ALIASES = ("<UNK>",)

# Header lines are stripped of ASCII whitespace only, and counts are ASCII (the core reads the same).
_SPACE = f"[{re.escape(ASCII_WHITESPACE)}]"
_COUNT_RE = re.compile(rf"ngram{_SPACE}+([0-9]+){_SPACE}*={_SPACE}*([0-9]+)")
_SECTION_RE = re.compile(r"\\([0-9]+)-grams:")
#: Digits at most in a header's count or order: 10^20 n-grams is more than any disk holds (KenLM's counts are 64-bit).
_MAX_DIGITS = 20

Ngram = tuple[str, ...]


class ArpaError(FstdecodeError):
    """A malformed, unreadable or missing ARPA file (message names the file and line)."""


def _fields(line: str) -> list[str]:
    """Split an n-gram line on spaces and tabs only (KenLM's separators).

    Other whitespace, such as U+00A0, stays part of a word, as in KenLM.
    """
    parts = line.replace("\t", " ").split(" ")
    if "" in parts:
        parts = [p for p in parts if p]
    return parts


def _is_blank(line: str) -> bool:
    return not line.strip(ASCII_WHITESPACE)


def _parse_prob(path: str, lineno: int, s: str) -> float:
    """Parse a log10 probability and return it in ln units (``-inf`` allowed, > 0 refused)."""
    v = parse_number(s, "log10 probability", f"{path}:{lineno}", ArpaError)
    if v > 0.0:
        raise ArpaError(
            f"{path}:{lineno}: positive log10 probability {s} (KenLM refuses it; "
            "a probability cannot exceed 1)"
        )
    if v != v:
        raise ArpaError(f"{path}:{lineno}: log10 probability is NaN")
    return v * LN10


def _parse_backoff(path: str, lineno: int, s: str) -> float:
    """Parse a log10 backoff and return it in ln units (finite, as KenLM requires; may be positive)."""
    return parse_finite(s, "log10 backoff", f"{path}:{lineno}", ArpaError) * LN10


@dataclass(frozen=True, eq=False)
class ArpaLM:
    """A back-off n-gram LM read from an ARPA file; scores are natural logs.

    Build it with :meth:`from_file`. Invariants:

    * ``1 <= order``; every stored n-gram has length ``<= order``.
    * ``<unk>`` is always in the unigram table (added with ``MISSING_UNK_LOG10`` if the file
      has none), so every word has a unigram probability.
    * Backoff weights are stored only for n-grams of length ``< order`` (and only when
      non-zero); the highest order's backoffs are never used by the recursion.
    * ``counts[n-1]`` is the number of n-grams of order ``n`` read from the file (the
      ``\\data\\`` count; a synthetic ``<unk>`` is not included).
    """

    path: str
    order: int
    counts: tuple[int, ...]
    _probs: dict[Ngram, float] = field(repr=False)
    _backoffs: dict[Ngram, float] = field(repr=False)
    # Word -> canonical (interned) word; "<UNK>" maps to "<unk>".
    _vocab: dict[str, str] = field(repr=False)

    # ------------------------------------------------------------------ loading

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], max_order: int | None = None) -> ArpaLM:
        """Read an ARPA file (plain or gzip, UTF-8), keeping n-grams up to ``max_order``.

        With ``max_order=k`` smaller than the file's order, only the ``\\1-grams:`` ..
        ``\\k-grams:`` sections are stored; the later sections are still checked (headers in
        order, entry counts equal to the ``\\data\\`` counts) but their lines are not parsed,
        and the backoff weights of order ``k`` are dropped. ``max_order`` larger than the file
        order is clamped; ``max_order < 1`` is an error.

        Like KenLM: fields are separated by spaces/tabs; values are log10 and may be ``-99``,
        ``-inf``/``-Infinity`` (probability zero, stored as ``-inf``); a positive log10
        probability, a NaN, or an infinite backoff is an error; an n-gram may lack its backoff
        field (backoff 0); a word of a higher-order n-gram that is not a unigram is an error;
        ``<UNK>`` is read as ``<unk>``; if there is no ``<unk>`` it is added with log10 prob
        ``MISSING_UNK_LOG10`` (-100) and backoff 0, KenLM's default. Only blank lines may
        follow ``\\end\\``.

        Relaxations compared with KenLM: blank lines may appear anywhere; a UTF-8 BOM and
        CRLF line ends are accepted; a backoff on a highest-order n-gram is ignored rather
        than refused; duplicate n-grams are refused; missing ``<s>``/``</s>`` are allowed
        (they are then out-of-vocabulary words).
        """
        spath = os.fspath(path)
        if not isinstance(spath, str):
            spath = os.fsdecode(spath)
        if max_order is not None and max_order < 1:
            raise ArpaError(f"{spath}: max_order must be >= 1, got {max_order}")
        return cls.from_lines(spath, read_lines(spath, ArpaError), max_order)

    @classmethod
    def from_lines(cls, path: str, lines: list[str], max_order: int | None = None) -> ArpaLM:
        """:meth:`from_file` of the lines read from ``path`` already (``lines[i]`` is line ``i + 1``,
        as :func:`~fstdecode.io.files.read_lines` gives them): the file is not read again."""
        if max_order is not None and max_order < 1:
            raise ArpaError(f"{path}: max_order must be >= 1, got {max_order}")
        return _Parser(path, lines, max_order).parse()

    def restrict(self, order: int) -> ArpaLM:
        """Return a model using only n-grams up to ``order`` (1 <= order <= self.order).

        Backoffs of n-grams of length ``order`` are dropped, exactly as
        ``from_file(path, max_order=order)`` does. ``restrict(self.order)`` returns ``self``.
        """
        if not 1 <= order <= self.order:
            raise ArpaError(f"{self.path}: cannot restrict an order-{self.order} model to order {order}")
        if order == self.order:
            return self
        probs = {k: v for k, v in self._probs.items() if len(k) <= order}
        backoffs = {k: v for k, v in self._backoffs.items() if len(k) < order}
        return ArpaLM(self.path, order, self.counts[:order], probs, backoffs, self._vocab)

    # ------------------------------------------------------------------ queries

    def __contains__(self, word: object) -> bool:
        """True iff ``word`` is in the unigram vocabulary (``<unk>`` always is)."""
        return word in self._vocab

    def _score(self, ctx: Ngram, w: str) -> float:
        """ln p(w | ctx) for already-mapped words; ``len(ctx) <= order - 1``."""
        probs = self._probs
        backoffs = self._backoffs
        total = 0.0
        for s in range(len(ctx)):
            sub = ctx[s:]
            p = probs.get(sub + (w,))
            if p is not None:
                return total + p
            b = backoffs.get(sub)
            if b is not None:
                total += b
        return total + probs[(w,)]

    def logprob(self, context: Sequence[str], word: str) -> float:
        """Natural-log p(word | context) with back-off.

        ``context`` is the preceding words (any length, only the last ``order - 1`` are
        used). Out-of-vocabulary words, here and in the context, are scored as ``<unk>``.
        """
        if isinstance(context, str):
            raise TypeError("context must be a sequence of words, not a str")
        vocab = self._vocab
        n = self.order - 1
        if n and context:
            ctx = tuple(map(vocab.get, context[-n:], repeat(UNK)))
        else:
            ctx = ()
        return self._score(ctx, vocab.get(word, UNK))

    def score_sentence(self, words: Sequence[str], bos: bool = True, eos: bool = True) -> float:
        """ln p(``<s> w1 .. wn </s>``).

        ``<s>`` (when ``bos``) is context only: its own unigram probability (often -99) is
        never counted. ``</s>`` (when ``eos``) is predicted and counted.
        """
        if isinstance(words, str):
            raise TypeError("words must be a sequence of words, not a str")
        vocab = self._vocab
        seq = list(map(vocab.get, words, repeat(UNK)))
        start = 0
        if bos:
            seq.insert(0, vocab.get(BOS, UNK))
            start = 1
        if eos:
            seq.append(vocab.get(EOS, UNK))
        return self._score_span(seq, start)

    def _score_span(self, seq: list[str], start: int) -> float:
        """Sum of ln p(seq[i] | seq[:i]) for i >= start (context truncated to order - 1)."""
        n = self.order - 1
        score = self._score
        total = 0.0
        for i in range(start, len(seq)):
            total += score(tuple(seq[max(0, i - n):i]) if n else (), seq[i])
        return total

    def phrase_estimate(self, words: Sequence[str]) -> float:
        """Moses/KenLM's context-free estimate of a target phrase, in ln units.

        Each word is scored with only the preceding words of the phrase as context (first
        word as a unigram, second as a bigram, ...). As in Moses, a phrase that starts with
        ``<s>`` uses it as context only and does not score it. Empty phrase: 0.
        """
        if isinstance(words, str):
            raise TypeError("words must be a sequence of words, not a str")
        vocab = self._vocab
        seq = list(map(vocab.get, words, repeat(UNK)))
        start = 1 if words and words[0] == BOS else 0
        return self._score_span(seq, start)

    def word(self, word: str) -> str:
        """The LM's spelling of ``word``: itself if in the vocabulary, else ``<unk>``."""
        return self._vocab.get(word, UNK)

    @property
    def vocabulary(self) -> frozenset[str]:
        """The unigram vocabulary (``<unk>`` included)."""
        return frozenset(self._vocab.values())

    def backoff(self, context: Sequence[str]) -> float:
        """ln backoff weight of the n-gram ``context`` (0 if it is not in the model)."""
        return self._backoffs.get(tuple(self.word(w) for w in context), 0.0)

    def extends(self, context: Sequence[str]) -> bool:
        """True iff some stored n-gram longer than ``context`` starts with it.

        KenLM's right-state minimisation: a context that does not extend can
        be shortened to its suffix after charging its backoff, since every
        next word then backs off through it.
        """
        prefixes = self.__dict__.get("_prefixes")
        if prefixes is None:
            prefixes = {ng[:k] for ng in self._probs for k in range(1, len(ng))}
            object.__setattr__(self, "_prefixes", prefixes)
        return tuple(self.word(w) for w in context) in prefixes

    def unigram_logprob(self, word: str) -> float:
        """Natural-log unigram probability of ``word`` (``<unk>``'s if out of vocabulary)."""
        return self._probs[(self._vocab.get(word, UNK),)]


class _Parser:
    """One pass over the lines of an ARPA file."""

    def __init__(self, path: str, lines: list[str], max_order: int | None) -> None:
        """``lines[i]`` is line ``i + 1`` of the file, without its line end."""
        self.path = path
        self.lines = lines
        self.max_order = max_order
        self.i = 0  # index of the next line to read; its line number is i + 1

    def error(self, lineno: int, what: str) -> ArpaError:
        return ArpaError(f"{self.path}:{lineno}: {what}")

    def number(self, lineno: int, digits: str) -> int:
        """A header's count or order (ASCII digits); ArpaError past :data:`_MAX_DIGITS` digits, which
        no real model needs and which Python's ``int()`` may refuse with a ValueError."""
        if len(digits) > _MAX_DIGITS:
            raise self.error(lineno, f"a number of {len(digits):,} digits ({digits[:12]}...): no ARPA file is that large")
        return int(digits)

    def next_nonblank(self) -> tuple[int, str] | None:
        """Advance past blank lines; return (lineno, stripped line) or None at EOF."""
        lines = self.lines
        while self.i < len(lines):
            line = lines[self.i]
            self.i += 1
            if not _is_blank(line):
                return self.i, line.strip(ASCII_WHITESPACE)
        return None

    def eof_lineno(self) -> int:
        return max(len(self.lines), 1)

    def parse(self) -> ArpaLM:
        path = self.path
        first = self.next_nonblank()
        if first is None:
            raise self.error(self.eof_lineno(), "missing \\data\\ header (file is empty)")
        lineno, line = first
        if line != "\\data\\":
            raise self.error(lineno, f"missing \\data\\ header: expected \\data\\, found {line[:60]!r}")
        data_lineno = lineno

        # \data\ counts, up to the first section header.
        declared: list[int] = []
        while True:
            got = self.next_nonblank()
            if got is None:
                raise self.error(self.eof_lineno(), "file ended inside the \\data\\ header")
            lineno, line = got
            if line.startswith("\\"):
                self.i -= 1  # leave the header for the section loop
                break
            m = _COUNT_RE.fullmatch(line)
            if m is None:
                raise self.error(lineno, f"malformed count line in \\data\\: {line[:60]!r}")
            n, count = self.number(lineno, m.group(1)), self.number(lineno, m.group(2))
            if n != len(declared) + 1:
                raise self.error(
                    lineno,
                    f"n-gram counts must be consecutive from 1: expected 'ngram {len(declared) + 1}=', "
                    f"found 'ngram {n}='",
                )
            declared.append(count)
        if not declared:
            raise self.error(data_lineno, "\\data\\ declares no n-gram counts")

        file_order = len(declared)
        keep = file_order if self.max_order is None else min(self.max_order, file_order)

        probs: dict[Ngram, float] = {}
        backoffs: dict[Ngram, float] = {}
        vocab: dict[str, str] = {}

        for n in range(1, file_order + 1):
            header_lineno = self.expect_section(n, file_order)
            if n <= keep:
                entries = self.read_section(n, n < keep, probs, backoffs, vocab)
            else:
                entries = self.skip_section()
            if entries != declared[n - 1]:
                raise self.error(
                    header_lineno,
                    f"section \\{n}-grams: has {entries} entries but \\data\\ declares "
                    f"ngram {n}={declared[n - 1]}",
                )
            if n == 1 and UNK not in vocab:
                probs[(UNK,)] = MISSING_UNK_LOG10 * LN10
                vocab[UNK] = UNK

        self.expect_end(file_order)
        return ArpaLM(path, keep, tuple(declared[:keep]), probs, backoffs, vocab)

    def expect_section(self, n: int, file_order: int) -> int:
        """Read the ``\\n-grams:`` header; return its line number."""
        got = self.next_nonblank()
        if got is None:
            raise self.error(
                self.eof_lineno(), f"file ended before section \\{n}-grams: (missing \\end\\)"
            )
        lineno, line = got
        if line == f"\\{n}-grams:":
            return lineno
        m = _SECTION_RE.fullmatch(line)
        if m is not None:
            k = self.number(lineno, m.group(1))
            if not 1 <= k <= file_order:
                raise self.error(
                    lineno, f"section \\{k}-grams: has an order not declared in \\data\\ "
                    f"(declared orders 1..{file_order})"
                )
            raise self.error(lineno, f"section \\{k}-grams: out of order: expected \\{n}-grams:")
        if line == "\\end\\":
            raise self.error(lineno, f"\\end\\ before section \\{n}-grams: declared in \\data\\")
        raise self.error(lineno, f"expected section header \\{n}-grams:, found {line[:60]!r}")

    def read_section(
        self,
        n: int,
        keep_backoff: bool,
        probs: dict[Ngram, float],
        backoffs: dict[Ngram, float],
        vocab: dict[str, str],
    ) -> int:
        """Parse n-gram lines up to the next ``\\`` line; return how many there were."""
        path = self.path
        lines = self.lines
        nlines = len(lines)
        intern = sys.intern
        i = self.i
        entries = 0
        while i < nlines:
            f = _fields(lines[i])
            nf = len(f)
            if nf == 0:
                i += 1
                continue
            if f[0][0] == "\\":  # next section header or \end\ (a probability never starts so)
                break
            i += 1
            entries += 1
            if nf != n + 1 and nf != n + 2:
                raise ArpaError(
                    f"{path}:{i}: expected a log10 probability, {n} word(s) and an optional "
                    f"backoff in \\{n}-grams:, found {nf} field(s)"
                )
            prob = _parse_prob(path, i, f[0])
            if n == 1:
                w = f[1]
                canon = UNK if (w == UNK or w in _UNK_ALIASES) else intern(w)
                key: Ngram = (canon,)
                if key in probs:
                    raise ArpaError(f"{path}:{i}: duplicate unigram {w!r}")
                vocab[canon] = canon
                vocab[w] = canon  # "<UNK>" -> "<unk>"; otherwise a no-op
            else:
                try:
                    key = tuple([vocab[w] for w in f[1 : n + 1]])
                except KeyError as e:
                    raise ArpaError(
                        f"{path}:{i}: word {e.args[0]!r} is not in \\1-grams: "
                        "(the unigrams must list the whole vocabulary)"
                    ) from None
                if key in probs:
                    raise ArpaError(f"{path}:{i}: duplicate n-gram {' '.join(f[1:n + 1])!r}")
            probs[key] = prob
            if nf == n + 2:
                b = _parse_backoff(path, i, f[n + 1])
                if keep_backoff and b != 0.0:
                    backoffs[key] = b
        self.i = i
        return entries

    def skip_section(self) -> int:
        """Count the non-blank lines up to the next ``\\`` line without parsing them."""
        lines = self.lines
        nlines = len(lines)
        i = self.i
        entries = 0
        while i < nlines:
            line = lines[i]
            s = line.strip(ASCII_WHITESPACE)
            if s.startswith("\\"):
                break
            if s:
                entries += 1
            i += 1
        self.i = i
        return entries

    def expect_end(self, file_order: int) -> None:
        got = self.next_nonblank()
        if got is None:
            raise self.error(self.eof_lineno(), "missing \\end\\ (file ended after the last section)")
        lineno, line = got
        if line != "\\end\\":
            m = _SECTION_RE.fullmatch(line)
            if m is not None and self.number(lineno, m.group(1)) > file_order:
                raise self.error(
                    lineno, f"section \\{m.group(1)}-grams: has an order not declared in \\data\\ "
                    f"(declared orders 1..{file_order})"
                )
            raise self.error(lineno, f"expected \\end\\, found {line[:60]!r}")
        trailing = self.next_nonblank()
        if trailing is not None:
            raise self.error(trailing[0], f"text after \\end\\: {trailing[1][:60]!r}")
