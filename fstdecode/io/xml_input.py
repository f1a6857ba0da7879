"""Moses' XML input markup: forced or added translations for spans of an input line.

    das ist <np translation="a small house||a little house" prob="0.8||0.2">ein kleines haus</np> .

Read as Moses' ``ProcessAndStripXMLTags`` reads it (moses/XmlOption.cpp in moses-smt/mosesdecoder):

* a tag is ``<`` followed by a letter or ``/``, up to the next ``>``; any other ``<`` is text;
* the words between an opening tag and its closing tag (same name; tags nest) form the span;
  a unary tag ``<x/>`` spans nothing;
* ``translation`` (or its legacy name ``english``) lists the translations, separated by ``||``;
  ``prob``, if given, one value per translation (default 1), read as a 32-bit float and scored
  as ln(prob) floored at -100, as Moses scores it: 0 is allowed, as in a phrase table, and so is
  a value above 1 (a bonus: Moses' regression test ``phrase.xml-markup`` gives ``prob="100.0"``);
* ``span="i-j"`` (or ``"i"``) overrides the span with word positions of the stripped line;
* attribute values are taken between double quotes as written: no entity is unescaped (Moses'
  own reader leaves that as a TODO), and a ``"`` after a backslash does not end a value.
  Attributes other than those are ignored, as in Moses.

Where Moses reads on silently, or reads nonsense, this reader refuses the line instead:

* an attribute not written ``name="value"`` (``translation=x``, ``translation='x'``,
  ``translation = "x"``: Moses would ignore it, so the tag would add nothing), or given twice;
* a value cut by the ``>`` that ends its tag (a tag ends at its first ``>``, in Moses too, so a
  value may not hold ``>``: ``translation="<s>"`` cannot be written);
* a ``prob`` that is not a number, is negative (Moses' log gives nan, which poisons the
  line's scores), or overflows a 32-bit float (``1e39``: Moses' log gives an infinite bonus);
* a tag with a translation that spans no word (``<np translation="x"></np>``; Moses warns and
  drops it).

Moses also reads special tags. ``<ne>`` marks one word for its placeholder factor (an input
factor, which fstdecode does not read); without that factor Moses leaves the word as it is, and
so does fstdecode: the tag is removed (it must span one word, as in Moses). The others constrain
Moses' search or change its model (``wall``, ``zone``: reordering constraints; ``update``,
``weight-overwrite``); Moses applies them under every policy but pass-through, ``ignore``
included, and fstdecode implements none of them, so a line that holds one is refused, whatever
the policy, rather than decoded without it. A tag with no translation adds nothing (Moses does
the same).

Malformed markup (the cases above; a tag never closed, or closed by another name; an unequal
number of probabilities; a span outside the line) raises :class:`XmlInputError`; the decoder
makes it that line's error and goes on.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from fstdecode.errors import FstdecodeError
from fstdecode.io.tokens import split_tokens

#: ``--xml-input``: Moses' ``-xml-input`` policies (Moses' default is pass-through too).
XML_INPUT_MODES = ("pass-through", "exclusive", "inclusive", "ignore")

#: Moses' special tags that constrain its search or change its model, which fstdecode does not
#: implement: each refuses the line, whatever the policy (Moses applies them under ``ignore`` too).
SPECIAL_TAGS: Mapping[str, str] = MappingProxyType(
    {
        "wall": "Moses' reordering wall",
        "zone": "Moses' reordering zone",
        "update": "an update of Moses' suffix-array phrase table",
        "weight-overwrite": "a change of Moses' feature weights",
    }
)

#: Moses' placeholder tag: it marks one word for the placeholder input factor, which fstdecode
#: does not read; it is removed.
PLACEHOLDER_TAG = "ne"

_TAG = re.compile(r"<([/A-Za-z][^>]*)>")
_TAG_NAME = re.compile(r"[A-Za-z][-\w.:]*")
_ATTRIBUTE = re.compile(r'\s*([A-Za-z_][-\w.:]*)="')


class XmlInputError(FstdecodeError):
    """An input line whose XML markup cannot be read."""


@dataclass(frozen=True)
class XmlOption:
    """Translations given for the source words ``start..end`` (0-based, inclusive).

    Invariant: ``translations`` are non-empty word tuples and ``probs`` holds one probability
    (0 <= p <= 1) for each.
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


def attributes(tag: str, content: str) -> dict[str, str]:
    """The attributes of a tag's ``content`` (the text after its name), each ``name="value"``.

    Values are read as Moses reads them: up to the next ``"`` that does not follow a backslash,
    as written. Anything else (an unquoted or single-quoted value, spaces around ``=``, stray
    text, an attribute given twice, a value cut by the tag's ``>``) raises XmlInputError naming
    ``tag``: Moses would skip such an attribute without a word.
    """
    found: dict[str, str] = {}
    pos = 0
    while content[pos:].strip():
        match = _ATTRIBUTE.match(content, pos)
        if match is None:
            raise _not_an_attribute(tag, content[pos:])
        name, start = match.group(1), match.end()
        end = _closing_quote(content, start)
        if end < 0:
            raise XmlInputError(
                f"tag <{tag}>: the value of {name} has no closing '\"' before the '>' that ends the tag; "
                "a tag ends at its first '>' (as in Moses), so a value may not hold '>'"
            )
        if name in found:
            raise XmlInputError(f"tag <{tag}>: the attribute {name} is given twice; keep one")
        found[name] = content[start:end]
        pos = end + 1
        if pos < len(content) and not content[pos].isspace():
            raise XmlInputError(
                f"tag <{tag}>: {split_tokens(content[pos:])[0]!r} follows the value of {name} with no space; "
                "separate attributes with spaces"
            )
    return found


def _not_an_attribute(tag: str, text: str) -> XmlInputError:
    """The error saying why the start of ``text`` is not ``name="value"``."""
    spaced = re.match(r'\s*([A-Za-z_][-\w.:]*)(\s+=|=\s+")', text)
    if spaced:
        return XmlInputError(
            f"tag <{tag}>: spaces around the '=' of {spaced.group(1)}; write {spaced.group(1)}=\"...\" "
            "(Moses would ignore the attribute)"
        )
    token = split_tokens(text)[0]
    key, equals, value = token.partition("=")
    if equals and key and not value.startswith('"'):
        return XmlInputError(
            f"tag <{tag}>: the value of {key} is not in double quotes ({token!r}); write "
            f'{key}="..." (Moses would ignore the attribute)'
        )
    return XmlInputError(f'tag <{tag}>: {token!r} is not an attribute; write name="value"')


def _closing_quote(content: str, start: int) -> int:
    """The index of the ``"`` that ends a value starting at ``start`` (-1: none): the first one
    not preceded by a backslash, as in Moses' ``ParseXmlTagAttribute``."""
    end = content.find('"', start)
    while end > start and content[end - 1] == "\\":
        later = content.find('"', end + 1)
        if later < 0:  # Moses then ends the value at the escaped one
            break
        end = later
    return end


def _alternatives(value: str) -> list[str]:
    return [] if value == "" else value.split("||")


def _option(name: str, content: str, start: int, end: int, n: int) -> XmlOption | None:
    """The option of a completed tag spanning words ``start..end - 1`` (None: it gives none)."""
    attrs = attributes(name, content)
    span = attrs.get("span", "")
    if span:
        parts = span.split("-")
        if len(parts) not in (1, 2) or not all(p.strip().isdigit() for p in parts):
            raise XmlInputError(f'tag <{name}>: span="{span}" must be "i-j" or "i"')
        start = int(parts[0])
        end = start + 1 if len(parts) == 1 else int(parts[1]) + 1
    if start > end or end > n:
        raise XmlInputError(f"tag <{name}> spans words {start}-{end - 1}, outside the line's {n} word(s)")
    if name == PLACEHOLDER_TAG:
        if end - start != 1:
            raise XmlInputError(f"tag <{name}> must span exactly one word (Moses' placeholder rule)")
        return None
    texts = _alternatives(attrs.get("translation", "")) + _alternatives(attrs.get("english", ""))
    probs = _alternatives(attrs.get("prob", ""))
    if probs and len(probs) != len(texts):
        raise XmlInputError(f"tag <{name}>: {len(texts)} translation(s) but {len(probs)} probabilities")
    if not texts:
        return None  # Moses: a tag with no translation adds nothing
    if start == end:
        raise XmlInputError(
            f"tag <{name}> has a translation but spans no word; put the words it translates between "
            f"<{name} ...> and </{name}>, or give span= (Moses warns and drops such a tag)"
        )
    values = [_probability(name, p) for p in probs or ["1"] * len(texts)]
    translations = tuple(tuple(split_tokens(t)) for t in texts)
    if any(not t for t in translations):
        raise XmlInputError(f"tag <{name}>: an empty translation; give words between the '||'")
    return XmlOption(start, end - 1, translations, tuple(values))


def _probability(name: str, text: str) -> float:
    """A ``prob`` value as Moses reads it (``Scan<float>``): a number >= 0, rounded to a 32-bit
    float, which must be finite; above 1 is a bonus, 0 scores as ln 0 floored."""
    try:
        value = float(text)
    except ValueError:
        raise XmlInputError(f"tag <{name}>: prob {text!r} is not a number") from None
    if not value >= 0.0:  # also true for nan
        raise XmlInputError(f"tag <{name}>: prob {text!r} is negative; Moses' log of it is nan")
    try:
        single: float = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        single = math.inf
    if math.isinf(single):
        raise XmlInputError(f"tag <{name}>: prob {text!r} overflows a 32-bit float (Moses' log of it is infinite)")
    return single


def parse_markup(line: str) -> MarkedLine:
    """The words of ``line`` without its markup, and the options of its tags (see the module doc).

    Raises XmlInputError for malformed markup or a special tag other than ``<ne>``.
    """
    words: list[str] = []
    stack: list[tuple[str, int, str]] = []
    found: list[tuple[str, str, int, int]] = []
    pos = 0
    for match in _TAG.finditer(line):
        words.extend(split_tokens(line[pos : match.start()]))
        pos = match.end()
        tag = match.group(1).strip()
        closing, unary = tag.startswith("/"), tag.endswith("/")
        if closing and unary:
            raise XmlInputError(f"tag <{tag}> is both closing and unary")
        tag = tag.strip("/").strip()
        name, _, content = tag.partition(" ")
        if not name:
            raise XmlInputError(f"empty tag name in {match.group(0)!r}")
        if not _TAG_NAME.fullmatch(name):
            raise XmlInputError(f"malformed tag {match.group(0)!r}: {name!r} is not a tag name")
        if name in SPECIAL_TAGS:
            raise XmlInputError(
                f"tag <{name}> is {SPECIAL_TAGS[name]}, which fstdecode does not implement; Moses applies it "
                "under --xml-input ignore too, so the line is not decoded without it: remove the tag to "
                "decode the line"
            )
        if not closing:
            stack.append((name, len(words), content))
        if closing or unary:
            if not stack:
                raise XmlInputError(f"tag </{name}> closes a tag that was not opened")
            opened, start, content = stack.pop()
            if opened != name:
                raise XmlInputError(f"tag <{opened}> is closed by </{name}>")
            found.append((name, content, start, len(words)))
    words.extend(split_tokens(line[pos:]))
    if stack:
        raise XmlInputError(f"tag <{stack[-1][0]}> is never closed")
    if "<" in line[pos:] and re.search(r"<[/A-Za-z]", line[pos:]):
        raise XmlInputError("a tag is not closed by '>'")
    options = [_option(name, content, start, end, len(words)) for name, content, start, end in found]
    return MarkedLine(tuple(words), tuple(o for o in options if o is not None))
