"""Moses' XML input markup: forced or added translations for spans of an input line.

    das ist <np translation="a small house||a little house" prob="0.8||0.2">ein kleines haus</np> .

Read as Moses' ``ProcessAndStripXMLTags`` reads it (moses/XmlOption.cpp in moses-smt/mosesdecoder):

* a tag is ``<`` followed by a letter or ``/``, up to the next ``>``; any other ``<`` is text;
* the words between an opening tag and its closing tag (same name; tags nest) form the span;
  a unary tag ``<x/>`` spans nothing;
* ``translation`` (or its legacy name ``english``) lists the translations, separated by ``||``;
  ``prob``, if given, one probability per translation (default 1);
* ``span="i-j"`` (or ``"i"``) overrides the span with word positions of the stripped line;
* attribute values are taken between double quotes as written: no entity is unescaped (Moses'
  own reader leaves that as a TODO), so a translation may not hold ``"``.

Moses also reads special tags (``wall``, ``zone``, ``ne``, ``update``, ``weight-overwrite``) that
constrain its search or change its model; fstdecode has no such constraints and refuses those
tags rather than ignore them. A tag with no translation adds nothing (Moses does the same).

Malformed markup (a tag never closed, closed by another name, an unequal number of
probabilities, a probability that is not a number >= 0, a span outside the line) raises
:class:`XmlInputError`; the decoder makes it that line's error and goes on.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from fstdecode.errors import FstdecodeError

#: ``--xml-input``: Moses' ``-xml-input`` policies (Moses' default is pass-through too).
XML_INPUT_MODES = ("pass-through", "exclusive", "inclusive", "ignore")

#: Moses' special tags: search constraints and model updates that fstdecode does not implement.
SPECIAL_TAGS = frozenset({"wall", "zone", "ne", "update", "weight-overwrite"})

_TAG = re.compile(r"<([/A-Za-z][^>]*)>")


class XmlInputError(FstdecodeError):
    """An input line whose XML markup cannot be read."""


@dataclass(frozen=True)
class XmlOption:
    """Translations given for the source words ``start..end`` (0-based, inclusive).

    Invariant: ``translations`` are non-empty word tuples and ``probs`` holds one probability
    (>= 0, finite) for each.
    """

    start: int
    end: int
    translations: tuple[tuple[str, ...], ...]
    probs: tuple[float, ...]


@dataclass(frozen=True)
class MarkedLine:
    """An input line with its markup stripped: its words, and the options its tags give."""

    words: tuple[str, ...]
    options: tuple[XmlOption, ...] = ()


def attribute(content: str, name: str) -> str:
    """The value of ``name="..."`` in a tag's content ("" when absent), as Moses reads it: from the
    first ``name="`` to the next ``"`` that is not preceded by a backslash."""
    opening = f'{name}="'
    start = content.find(opening)
    if start < 0:
        return ""
    start += len(opening)
    end = content.find('"', start)
    while end > 0 and content[end - 1] == "\\":
        nxt = content.find('"', end + 1)
        if nxt < 0:
            break
        end = nxt
    if end < 0:
        raise XmlInputError(f"the attribute {name} has no closing '\"'")
    return content[start:end]


def _alternatives(value: str) -> list[str]:
    return [] if value == "" else value.split("||")


def _option(name: str, content: str, start: int, end: int, n: int) -> XmlOption | None:
    """The option of a completed tag spanning words ``start..end - 1`` (None: it gives none)."""
    span = attribute(content, "span")
    if span:
        parts = span.split("-")
        if len(parts) not in (1, 2) or not all(p.strip().isdigit() for p in parts):
            raise XmlInputError(f'tag <{name}>: span="{span}" must be "i-j" or "i"')
        start = int(parts[0])
        end = start + 1 if len(parts) == 1 else int(parts[1]) + 1
    if start > end or end > n:
        raise XmlInputError(f"tag <{name}> spans words {start}-{end - 1}, outside the line's {n} word(s)")
    texts = _alternatives(attribute(content, "translation")) + _alternatives(attribute(content, "english"))
    probs = _alternatives(attribute(content, "prob"))
    if probs and len(probs) != len(texts):
        raise XmlInputError(f"tag <{name}>: {len(texts)} translation(s) but {len(probs)} probabilities")
    if start == end or not texts:
        return None  # Moses: a tag over no word, or with no translation, adds nothing
    values = []
    for p in probs or ["1"] * len(texts):
        try:
            v = float(p)
        except ValueError:
            raise XmlInputError(f"tag <{name}>: prob {p!r} is not a number") from None
        if not (v >= 0.0 and math.isfinite(v)):
            raise XmlInputError(f"tag <{name}>: prob {p!r} must be a probability (a finite number >= 0)")
        values.append(v)
    translations = tuple(tuple(t.split()) for t in texts)
    if any(not t for t in translations):
        raise XmlInputError(f"tag <{name}>: an empty translation; give words between the '||'")
    return XmlOption(start, end - 1, translations, tuple(values))


def parse_markup(line: str) -> MarkedLine:
    """The words of ``line`` without its markup, and the options of its tags (see the module doc).

    Raises XmlInputError for malformed markup or a special tag.
    """
    words: list[str] = []
    stack: list[tuple[str, int, str]] = []
    found: list[tuple[str, str, int, int]] = []
    pos = 0
    for match in _TAG.finditer(line):
        words.extend(line[pos : match.start()].split())
        pos = match.end()
        tag = match.group(1).strip()
        closing, unary = tag.startswith("/"), tag.endswith("/")
        if closing and unary:
            raise XmlInputError(f"tag <{tag}> is both closing and unary")
        tag = tag.strip("/").strip()
        name, _, content = tag.partition(" ")
        if not name:
            raise XmlInputError(f"empty tag name in {match.group(0)!r}")
        if name in SPECIAL_TAGS:
            raise XmlInputError(f"Moses' special tag <{name}> is not supported (only translation options are)")
        if not closing:
            stack.append((name, len(words), content))
        if closing or unary:
            if not stack:
                raise XmlInputError(f"tag </{name}> closes a tag that was not opened")
            opened, start, content = stack.pop()
            if opened != name:
                raise XmlInputError(f"tag <{opened}> is closed by </{name}>")
            found.append((name, content, start, len(words)))
    words.extend(line[pos:].split())
    if stack:
        raise XmlInputError(f"tag <{stack[-1][0]}> is never closed")
    if "<" in line[pos:] and re.search(r"<[/A-Za-z]", line[pos:]):
        raise XmlInputError("a tag is not closed by '>'")
    options = [_option(name, content, start, end, len(words)) for name, content, start, end in found]
    return MarkedLine(tuple(words), tuple(o for o in options if o is not None))
