"""How text is split into tokens, in input lines and in every model file: one rule.

Moses splits on spaces and tabs only (its ``Tokenize``, delimiters ``" \\t"``), so a no-break
space (U+00A0), a line separator (U+2028) or an ideographic space (U+3000) is part of a token,
as are the other Unicode spaces. fstdecode does the same, and also splits on the other ASCII
whitespace characters that Python's ``str.split`` splits on (``\\n \\v \\f \\r`` and
``\\x1c``-``\\x1f``), which Moses would keep inside a token; no real tokenized text holds them.
"""

from __future__ import annotations

import re

__all__ = ["ASCII_WHITESPACE", "is_token", "split_tokens"]

#: The characters tokens are separated by: ASCII whitespace, as Python's str.split() counts it.
ASCII_WHITESPACE = " \t\n\v\f\r\x1c\x1d\x1e\x1f"

_SEPARATORS = re.compile(f"[{re.escape(ASCII_WHITESPACE)}]+")


def split_tokens(text: str) -> list[str]:
    """The tokens of ``text``, separated by runs of :data:`ASCII_WHITESPACE` (never empty tokens).

    Pure-ASCII text takes ``str.split()``'s fast path, which splits on exactly those characters.
    """
    if text.isascii():
        return text.split()
    return [t for t in _SEPARATORS.split(text) if t]


def is_token(word: str) -> bool:
    """``word`` is one token: not empty, and holding no :data:`ASCII_WHITESPACE`."""
    return bool(word) and not any(c in ASCII_WHITESPACE for c in word)
