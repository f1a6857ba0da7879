"""Phrase options for one input sentence: spans, translations, unknown words.

Positions are 0-based and inclusive over the input tokens, as in Moses'
segmentation output; the search modules shift them by one internally so
that ``<s>`` sits at position 0 (Chang & Collins' x_1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from fstdecode.io.phrase_table import LOWEST_SCORE, PhrasePair, PhraseTable
from fstdecode.io.xml_input import XmlOption


@dataclass(frozen=True)
class Phrase:
    """A phrase pair placed on the input: source tokens ``start..end`` (inclusive).

    Invariant: ``end - start + 1 == len(pair.source)``.
    """

    start: int
    end: int
    pair: PhrasePair

    @property
    def target(self) -> tuple[str, ...]:
        return self.pair.target


@dataclass(frozen=True)
class Sentence:
    """The input tokens and every phrase that can translate part of them.

    ``options[s]`` lists the phrases starting at token ``s``, in phrase-table
    order. ``unknown`` holds the positions of copied-through unknown words.
    """

    words: tuple[str, ...]
    options: tuple[tuple[Phrase, ...], ...]
    unknown: frozenset[int]

    def __len__(self) -> int:
        return len(self.words)

    def all_phrases(self) -> list[Phrase]:
        return [p for opts in self.options for p in opts]


def unknown_pair(word: str, num_scores: int) -> PhrasePair:
    """Moses' translation of an unknown word: copied through, every TM score 0, aligned to itself."""
    return PhrasePair(source=(word,), target=(word,), scores=(0.0,) * num_scores, unknown=True, alignment="0-0")


def build_sentence(table: PhraseTable, words: tuple[str, ...] | list[str]) -> Sentence:
    """Collect the phrase options of ``words`` from ``table``.

    As in Moses, a token is *unknown* when no phrase-table entry translates
    that single token; it then gets one option that copies it through (and
    carries the UnknownWordPenalty). Longer phrases covering it stay usable.
    """
    words = tuple(words)
    n = len(words)
    options: list[list[Phrase]] = [[] for _ in range(n)]
    for s in range(n):
        for t in range(s, min(n, s + table.max_source_len)):
            for pair in table.lookup(words[s : t + 1]):
                options[s].append(Phrase(s, t, pair))
    unknown = set()
    for s in range(n):
        if not any(p.end == s for p in options[s]):
            unknown.add(s)
            options[s].insert(0, Phrase(s, s, unknown_pair(words[s], table.num_scores)))
    return Sentence(words, tuple(tuple(o) for o in options), frozenset(unknown))


def xml_pair(source: tuple[str, ...], target: tuple[str, ...], prob: float, num_scores: int) -> PhrasePair:
    """The pair of a translation given by XML markup, scored as Moses scores it
    (``TargetPhrase::SetXMLScore``): every TM column ln(prob) / columns, ln floored at
    LOWEST_SCORE; no word alignment."""
    value = math.log(prob) if prob > 0.0 else LOWEST_SCORE
    value = max(value, LOWEST_SCORE) / max(num_scores, 1)
    return PhrasePair(source=source, target=target, scores=(value,) * num_scores)


def with_xml_options(sentence: Sentence, options: Sequence[XmlOption], exclusive: bool, num_scores: int) -> Sentence:
    """``sentence`` with the translations that XML markup gives (``-xml-input``).

    ``exclusive``: a span with markup is translated only as the markup says, and no other
    phrase may overlap it, even partly (Moses' ``XmlOverlap``), unknown-word copies included.
    Otherwise (inclusive) the markup's translations are added to the table's options.
    """
    words = sentence.words

    def overlaps(p: Phrase) -> bool:
        return any(p.start <= o.end and o.start <= p.end for o in options)

    kept = [[p for p in opts if not (exclusive and overlaps(p))] for opts in sentence.options]
    for o in options:
        source = words[o.start : o.end + 1]
        for target, prob in zip(o.translations, o.probs):
            kept[o.start].append(Phrase(o.start, o.end, xml_pair(source, target, prob, num_scores)))
    unknown = frozenset(s for s in sentence.unknown if any(p.pair.unknown for p in kept[s]))
    return Sentence(words, tuple(tuple(o) for o in kept), unknown)
