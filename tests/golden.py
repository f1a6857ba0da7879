"""Moses' gold n-best entries, parsed and rebuilt as derivations (shared by the golden tests).

Two layouts hold the same fields: the regression tests' ``results.txt``
(``TRANSLATION_i_NBEST_j=translation ||| features ||| total ||| segmentation``)
and plain n-best files (``id ||| translation ||| features ||| total |||
segmentation [||| alignment]``). Segmentations read ``srcStart-srcEnd=tgtStart-tgtEnd``,
0-based and inclusive.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from fstdecode.problem.sentence import Phrase, unknown_pair

_RESULTS_ENTRY = re.compile(r"^TRANSLATION_(\d+)_NBEST_(\d+)=(.*)$")


@dataclass(frozen=True)
class Entry:
    """One n-best entry: sentence index (0-based), rank, target words, features by name, total, segmentation."""

    sent: int
    rank: int
    translation: tuple[str, ...]
    feats: dict[str, list[float]]
    total: float
    segmentation: list[tuple[int, int, int, int]]


def _span(text: str) -> tuple[int, int]:
    a, _, b = text.partition("-")
    return int(a), int(b or a)


def _features(text: str) -> dict[str, list[float]]:
    feats: dict[str, list[float]] = {}
    name = None
    for tok in text.split():
        if tok.endswith("="):
            name = tok[:-1]
            feats[name] = []
        else:
            feats[name].append(float(tok))
    return feats


def _entry(sent: int, rank: int, fields: list[str]) -> Entry:
    """``fields`` = translation, features, total, segmentation (stripped)."""
    seg = []
    for item in fields[3].split():
        src, tgt = item.split("=")
        seg.append((*_span(src), *_span(tgt)))
    return Entry(sent, rank, tuple(fields[0].split()), _features(fields[1]), float(fields[2]), seg)


def parse_results(text: str) -> list[Entry]:
    """The entries of a regression test's results.txt (``TRANSLATION_i_NBEST_j=``); i is 0-based there."""
    out = []
    for line in text.splitlines():
        m = _RESULTS_ENTRY.match(line)
        if m:
            fields = [f.strip() for f in m.group(3).split("|||")]
            out.append(_entry(int(m.group(1)), int(m.group(2)), fields))
    return out


def parse_nbest(text: str) -> list[Entry]:
    """The entries of a Moses n-best file, ranked within each sentence in file order."""
    out = []
    ranks: dict[int, int] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split("|||")]
        sent = int(fields[0])
        ranks[sent] = ranks.get(sent, -1) + 1
        out.append(_entry(sent, ranks[sent], fields[1:5]))
    return out


def candidate_derivations(table, words, entry: Entry) -> list[tuple[Phrase, ...]]:
    """Every phrase sequence (target order) that matches the entry's segmentation and strings.

    A one-word segment that is its own translation and has no table pair is an unknown word.
    """
    choices = []
    for s0, s1, t0, t1 in sorted(entry.segmentation, key=lambda x: x[2]):
        src, tgt = tuple(words[s0 : s1 + 1]), entry.translation[t0 : t1 + 1]
        pairs = [p for p in table.lookup(src) if p.target == tgt]
        if not pairs and len(src) == 1 and src == tgt:
            pairs = [unknown_pair(src[0], table.num_scores)]
        assert pairs, f"no phrase pair {src} -> {tgt}"
        choices.append([Phrase(s0, s1, p) for p in pairs])
    return [tuple(c) for c in itertools.product(*choices)]


def closest_tm(entries_tm: list[float], candidates, feats_of):
    """The candidate whose TM features are closest to ``entries_tm``: ``(error, features, phrases)``."""
    best = None
    for phrases in candidates:
        f = feats_of(phrases)
        err = max(abs(a - b) for a, b in zip(f.tm, entries_tm))
        if best is None or err < best[0]:
            best = (err, f, phrases)
    return best
