"""Moses' lattice inputs: word lattices in PLF (``[inputtype] 2``) and confusion networks (``[inputtype] 1``).

Both are read into one data model, :class:`Lattice`: nodes ``0..N`` and arcs ``i -> i + d`` that
read a word (or :data:`EPSILON`, ``*EPS*``, no word) and carry the input scores Moses' InputFeature
scores. A confusion network of N columns is the lattice whose column ``i`` holds the arcs
``i -> i + 1`` (its flag :attr:`Lattice.from_confusion_network` says so: Moses scores it a little
differently, :meth:`Lattice.input_features`).

The Moses source cited is moses-smt/mosesdecoder, ``moses/``; "Moses" below means that code.

**PLF** (one lattice a line; Moses' ``WordLattice::Read``, WordLattice.cpp:148-162, and
``PCN::parsePCN``, PCNTools.cpp:88-203)::

    ((('A', 0.5, 1), ('Z', 0.5, 2),), (('B', 1.0, 1),), (('C', 1.0, 1),),)

* The line is a tuple of N columns; column ``i`` is a tuple of the arcs leaving node ``i``; an arc
  is ``('word', score_1, ..., score_k, distance)``: it goes from node ``i`` to node
  ``i + distance`` (the last field is the distance, PCNTools.cpp:137; the fields before it are the
  scores, PCNTools.cpp:112-124). Node ``N`` (one past the last column) is the final node.
* A word is in single quotes; inside them a backslash takes the next character as it is (``\\'``
  is ``'``, ``\\\\`` is ``\\``, ``\\n`` is ``n``: PCNTools.cpp:44-61, no other escape).
* A trailing comma after the last column or the last arc is allowed, as in Python (and Moses).
* ``k`` must be ``num-input-features``, the InputFeature's option (WordLattice.cpp:78-85; Moses'
  default is the feature's ``num-features``, FF/InputFeature.cpp:19, 37-38).
* A score is a probability as Moses reads it (``Scan<float>``, a 32-bit float); its feature value is
  ``ln p`` floored at -100 (``LOWEST_SCORE``, TypeDef.h:67; WordLattice.cpp:104): above 1 is a bonus
  (Moses warns), 0 gives -100. With InputFeature's ``real-word-count=1`` one more value follows:
  -1 for a word, 0 for ``*EPS*`` (WordLattice.cpp:109-113).
* Named scores ``name=value`` after the dense ones are read by Moses (PCNTools.cpp:127-134) and then
  never used (WordLattice.cpp reads only the dense ones): they are checked (one ``=``, a number)
  and dropped here too.

**Confusion networks** (Moses' ``ConfusionNet::ReadFormat0``, ConfusionNet.cpp:118-174): one column
a line, ``word score_1 .. score_k word score_1 .. score_k ...`` (``k`` = num-input-features,
whitespace-separated), a blank line after each network. A score is a probability read as a double;
Moses clamps it into [0, 1] (with a warning) before taking ``ln`` floored at -100
(ConfusionNet.cpp:149-156), and so does :meth:`Lattice.input_features`.

**What Moses does with *EPS*.** With the phrase tables Moses uses today, a lattice arc ``*EPS*``
stops the sentence (``"Epsilon not supported"``, TranslationOptionCollectionLattice.cpp:48, 102);
in a confusion network ``*EPS*`` is looked up as a word, and when its column has no translation
at all every alternative becomes an unknown word, ``*EPS*`` translated as nothing with the
unknown-word penalty (TranslationOptionCollection.cpp:155, 195-229). Only the legacy binary
phrase table treats it as an epsilon: skipped inside a source phrase, never the first word of a
phrase but at position 0 (PDTAimp.cpp:249-282), so no phrase of that table is all epsilon.
fstdecode's model is the epsilon one: ``*EPS*`` reads no word (label 0 in the FST). A network
whose every path from node 0 to node N reads only ``*EPS*`` holds no word (an empty sentence,
which Moses would fail on or translate as an empty line built from unknown-word options): it is
refused. A lattice with *some* all-``*EPS*`` path (an ASR network with ``*EPS*`` in every column) is
accepted; :meth:`Lattice.has_empty_path` says so, for the decoder to decide.

**Distances** (for the distortion limit and cost): :meth:`Lattice.distances` is Moses' matrix, the
fewest arcs on a path between two nodes (Floyd-Warshall over unit-length arcs,
WordLattice.cpp:126-129, 164-172; FloydWarshall.cpp), None where there is no path (Moses'
``MAX_DIST``), the diagonal included. :meth:`Lattice.distortion_distance` is Moses'
``ComputeDistortionDistance`` (WordLattice.cpp:174-213). On a confusion network, or a plain
sentence, it is ``|prev_end - start|``, the distance of ``InputType::ComputeDistortionDistance``
(InputType.cpp:52-61) that Moses uses there.

**Where fstdecode refuses what Moses reads.** Moses' readers report bad input at most in a message
on stderr: they read a default value and go on, or their ``Read`` returns false and Moses ends its
input there, translating nothing after it (IOWrapper.h:230-236). Here every such case raises ONE
:class:`LatticeInputError`, ``"{path}:{line}:{column}: {what}"`` (column: 1-based character offset
in the line):

* structure: a line that does not start with ``(``, a missing ``(``, ``,`` or ``)``, text after the
  closing ``)`` (Moses ignores it), a word not in single quotes, an unclosed quote (Moses reads to
  the line's end), an empty word ``''`` (Moses reads on past its closing quote), a word holding
  whitespace, a ``,`` before an arc's ``)`` (Moses reads an empty distance as 0);
* a column with no arc, or a lattice with no column (Moses ends its input there,
  WordLattice.cpp:71, 145). Every node but N then has an arc and every arc moves forward to a node
  ``<= N``, so every node reaches N: "no path from node 0 to node N" has no other cause, and such
  a lattice is refused at its empty column;
* a distance that is not a whole number (Moses reads ``1.5`` as 1), is 0 (an arc to its own node)
  or points past node N (Moses indexes outside its edge matrix);
* a score that is not a number, NaN or infinite, overflows a 32-bit float (PLF), or is negative
  in a lattice (Moses' ``ln`` gives NaN there; a confusion network's negative score is clamped to 0
  as in Moses); the wrong number of scores (Moses refuses it too, WordLattice.cpp:78-85,
  ConfusionNet.cpp:144-147, and ends its input);
* a confusion-network line whose fields are not ``word`` followed by ``k`` numbers;
* a blank line where a confusion network (or, in :func:`read_lattices`, a lattice) should start,
  with more input after it: Moses ends its input at that empty network (ConfusionNet.cpp:168-173),
  silently dropping the rest. Blank lines at the end of the input are harmless.
* a network with no word on any path (above).

Between the parts of a PLF line Moses skips spaces only (PCNTools.cpp:25-30: a tab breaks its
parse); here any ASCII whitespace may stand there (:mod:`fstdecode.io.tokens`' rule, which the
fields of a confusion-network line are split by too, as Moses' ``>>`` splits them).
Moses also strips an SGML ``<seg id=..>`` wrapper from a PLF line (WordLattice.cpp:155)
and refuses an arc longer than ``max-phrase-length`` (WordLattice.cpp:119-123): both are the
decoder's business, not this reader's (a ``<seg>`` line is refused, as not starting with ``(``).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

from fstdecode.errors import FstdecodeError
from fstdecode.io.tokens import ASCII_WHITESPACE, is_token
from fstdecode.io.values import NUMBER

__all__ = [
    "EPSILON",
    "LOWEST_SCORE",
    "Arc",
    "Lattice",
    "LatticeInputError",
    "read_confusion_networks",
    "read_lattices",
    "read_plf",
    "write_confusion_network",
    "write_plf",
]

#: The word of an arc that reads no word (Moses' ``EPSILON``, TypeDef.h:48).
EPSILON = "*EPS*"
#: The floor of a score's log (Moses' ``LOWEST_SCORE``, TypeDef.h:67): ``ln 0`` scores this.
LOWEST_SCORE = -100.0

_TOKEN = re.compile(f"[^{re.escape(ASCII_WHITESPACE)}]+")
#: The characters that end a bare PLF field (a score, a named score or a distance).
_FIELD = re.compile(f"[^{re.escape(ASCII_WHITESPACE)},()']+")
_DISTANCE = re.compile(r"[0-9]+")
_T = TypeVar("_T")


class LatticeInputError(FstdecodeError):
    """Lattice or confusion-network input that cannot be read: ``"{where}:{column}: {what}"``,
    ``where`` being ``path:line`` and ``column`` a 1-based character offset in that line."""

    def __init__(self, where: str, column: int, what: str) -> None:
        super().__init__(f"{where}:{column}: {what}")
        self.where = where
        self.column = column
        self.what = what

    def __reduce__(self):  # pickled with its three parts (a process pool sends it back whole)
        return type(self), (self.where, self.column, self.what)


@dataclass(frozen=True)
class Arc:
    """An arc from node ``start`` to node ``end`` (``start < end``) reading ``word``
    (:data:`EPSILON`: none), with the input scores as written in the file (probabilities)."""

    start: int
    end: int
    word: str
    scores: tuple[float, ...] = ()

    @property
    def distance(self) -> int:
        """PLF's last field: how many nodes the arc moves forward."""
        return self.end - self.start

    @property
    def is_epsilon(self) -> bool:
        return self.word == EPSILON


@dataclass(frozen=True)
class Lattice:
    """A word lattice with nodes ``0..size``: node 0 is the start, node ``size`` the final node.

    Invariants (checked on construction; ValueError, since only code builds one directly, the
    readers raise :class:`LatticeInputError` first): ``size >= 1``; every arc has
    ``0 <= start < end <= size``, so the node numbering is a topological order (PLF's, and Moses'
    requirement: "topologically sorted", WordLattice.h); ``arcs`` are sorted by ``start``, in file
    order within a node; every node below ``size`` has an arc (Moses' non-empty columns), so every
    node reaches node ``size``; every arc has the same number of scores; every word is one token.
    A network from a confusion network (``from_confusion_network``) has only arcs ``i -> i + 1``.
    """

    size: int
    arcs: tuple[Arc, ...]
    from_confusion_network: bool = False

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError(f"a lattice has at least one column, not {self.size}")
        counts = {len(a.scores) for a in self.arcs}
        if len(counts) > 1:
            raise ValueError(f"the arcs have different numbers of scores: {sorted(counts)}")
        previous = 0
        for a in self.arcs:
            if not 0 <= a.start < a.end <= self.size:
                raise ValueError(f"arc {a} is not a forward arc between nodes 0 and {self.size}")
            if a.start < previous:
                raise ValueError(f"arc {a} is out of order: the arcs are sorted by start node")
            if self.from_confusion_network and a.distance != 1:
                raise ValueError(f"arc {a} spans {a.distance} columns in a confusion network")
            if not is_token(a.word):
                raise ValueError(f"arc {a}: the word {a.word!r} is not one token")
            previous = a.start
        empty = sorted(set(range(self.size)) - {a.start for a in self.arcs})
        if empty:
            raise ValueError(f"node {empty[0]} has no arc")

    @property
    def num_scores(self) -> int:
        """The number of scores on each arc (Moses' num-input-features)."""
        return len(self.arcs[0].scores)

    def columns(self) -> tuple[tuple[Arc, ...], ...]:
        """``columns()[i]``: the arcs leaving node ``i``, in file order (PLF's column ``i``)."""
        return self._columns

    @cached_property
    def _columns(self) -> tuple[tuple[Arc, ...], ...]:
        columns: list[list[Arc]] = [[] for _ in range(self.size)]
        for a in self.arcs:
            columns[a.start].append(a)
        return tuple(tuple(c) for c in columns)

    def distances(self) -> tuple[tuple[int | None, ...], ...]:
        """Moses' distance matrix (WordLattice.cpp:126-129): ``distances()[i][j]`` is the fewest
        arcs on a path from node ``i`` to node ``j``, whatever their lengths, or None where there
        is none (Moses' ``MAX_DIST``). As in Moses' Floyd-Warshall the diagonal is None: a node
        does not reach itself. (Moses' ``CanIGetFromAToB(i, j)`` is ``distances()[i][j] is not None``.)
        """
        return self._distances

    @cached_property
    def _distances(self) -> tuple[tuple[int | None, ...], ...]:
        # Arcs go forward, so one pass over the nodes in order settles each row (O(N * arcs)).
        incoming: list[list[int]] = [[] for _ in range(self.size + 1)]
        for a in self.arcs:
            incoming[a.end].append(a.start)
        rows = []
        for i in range(self.size + 1):
            row: list[int | None] = [None] * (self.size + 1)
            for j in range(i + 1, self.size + 1):
                steps = [0 if k == i else row[k] for k in incoming[j] if k >= i]
                known = [s for s in steps if s is not None]
                row[j] = min(known) + 1 if known else None
            rows.append(tuple(row))
        return tuple(rows)

    def distance(self, i: int, j: int) -> int | None:
        """``distances()[i][j]``."""
        return self._distances[i][j]

    def distortion_distance(self, prev_end: int | None, start: int) -> int | None:
        """Moses' distortion distance (``WordLattice::ComputeDistortionDistance``,
        WordLattice.cpp:174-213) of a phrase starting at node ``start`` after a phrase that ended
        at node ``prev_end`` (its last column is ``prev_end - 1``), or after none (None):

        * none before and ``start == 0``, or ``prev_end == start`` (monotone): 0;
        * none before: ``distance(0, start)``;
        * backward, ``prev_end - 1 > start``: ``distance(start, prev_end)``;
        * forward otherwise: ``distance(prev_end, start)``.

        None: no path (Moses' ``MAX_DIST``, beyond any distortion limit, so Moses never makes the
        step). Distances count arcs, not columns: a long arc is one step. Moses charges no
        distortion for the step to the end of the sentence.
        """
        if (prev_end is None and start == 0) or prev_end == start:
            return 0
        if prev_end is None:
            return self._distances[0][start]
        if prev_end - 1 > start:
            return self._distances[start][prev_end]
        return self._distances[prev_end][start]

    def input_features(self, arc: Arc, real_word_count: bool = False) -> tuple[float, ...]:
        """The InputFeature values of ``arc`` as Moses computes them: each score ``p`` gives
        ``max(ln p, -100)`` in 32-bit floats (a lattice's ``p`` read as a 32-bit float,
        WordLattice.cpp:104; a confusion network's first clamped into [0, 1],
        ConfusionNet.cpp:149-156); with ``real_word_count`` (InputFeature's ``real-word-count=1``),
        then -1 for a word and 0 for :data:`EPSILON` (WordLattice.cpp:109-113,
        ConfusionNet.cpp:161-162)."""
        values = []
        for p in arc.scores:
            p = min(max(p, 0.0), 1.0) if self.from_confusion_network else _single(p)
            values.append(max(_single(math.log(p)) if p > 0 else -math.inf, LOWEST_SCORE))
        if real_word_count:
            values.append(0.0 if arc.is_epsilon else -1.0)
        return tuple(values)

    def has_empty_path(self) -> bool:
        """Some path from node 0 to the final node reads only :data:`EPSILON` (the readers refuse a
        lattice in which every path does)."""
        return self._paths_reached[0][self.size]

    def has_word_path(self) -> bool:
        """Some path from node 0 to the final node reads at least one word."""
        return self._paths_reached[1][self.size]

    @cached_property
    def _paths_reached(self) -> tuple[tuple[bool, ...], tuple[bool, ...]]:
        """For each node: reached from node 0 by an all-*EPS* path; by a path with a word."""
        empty = [False] * (self.size + 1)
        word = [False] * (self.size + 1)
        empty[0] = True
        for a in self.arcs:  # sorted by start: a node is settled before its arcs are followed
            if a.is_epsilon:
                empty[a.end] |= empty[a.start]
                word[a.end] |= word[a.start]
            else:
                word[a.end] |= empty[a.start] or word[a.start]
        return tuple(empty), tuple(word)


def _single(value: float) -> float:
    """``value`` rounded to a 32-bit float (as Moses stores scores): an infinity if it is too large."""
    try:
        return struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:  # older Pythons refuse to pack what rounds to an infinity
        return math.copysign(math.inf, value)


# ----------------------------------------------------------------------------- PLF


@dataclass(frozen=True)
class _ParsedArc:
    """An arc as read, with where it was written (for the checks that follow the parse)."""

    where: str
    at: int  # the 1-based offset of the arc's '(' (of its word, in a confusion network)
    word: str
    scores: tuple[float, ...]
    distance: int
    distance_at: int  # the 1-based offset of its distance (of its word, in a confusion network)


class _PlfLine:
    """A cursor over one PLF line; ``pos`` is a 0-based offset, reported 1-based."""

    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.where = where
        self.pos = 0

    def error(self, pos: int, what: str) -> LatticeInputError:
        return LatticeInputError(self.where, pos + 1, what)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in ASCII_WHITESPACE:
            self.pos += 1

    def found(self) -> str:
        """What is at the cursor, for a message."""
        return f"{self.peek()!r}" if self.peek() else "the end of the line"

    def expect_open(self, what: str) -> int:
        self.skip_space()
        if self.peek() != "(":
            raise self.error(self.pos, f"expected '(' to open {what}, found {self.found()}")
        self.pos += 1
        return self.pos - 1

    def sequence(self, opened: int, what: str, item: Callable[[int], _T]) -> list[_T]:
        """The items of a tuple whose ``(`` is at ``opened``, up to its ``)``: items separated by
        commas, one more comma allowed before the ``)``."""
        items: list[_T] = []
        while True:
            self.skip_space()
            c = self.peek()
            if c == ")":
                self.pos += 1
                return items
            if not c:
                raise self.error(self.pos, f"the line ends inside the {what} opened at character {opened + 1}: a ')' is missing")
            if items:
                if c != ",":
                    raise self.error(self.pos, f"expected ',' or ')' in the {what} opened at character {opened + 1}, found {c!r}")
                self.pos += 1
                self.skip_space()
                if self.peek() in (")", ""):
                    continue
            items.append(item(len(items)))

    def lattice(self) -> list[list[_ParsedArc]]:
        self.skip_space()
        if not self.peek():
            raise self.error(self.pos, "an empty line is not a lattice (Moses would end its input here)")
        opened = self.expect_open("the lattice (a PLF line is ((('word', score, distance), ...), ...))")
        columns = self.sequence(opened, "lattice", self.column)
        self.skip_space()
        if self.peek():
            raise self.error(self.pos, f"text after the ')' that closes the lattice opened at character {opened + 1}")
        if not columns:
            raise self.error(opened, "a lattice with no column: it holds no word (Moses would end its input here)")
        return columns

    def column(self, index: int) -> list[_ParsedArc]:
        opened = self.expect_open(f"column {index} (the arcs leaving node {index})")
        arcs = self.sequence(opened, f"column {index}", self.arc)
        if not arcs:
            raise self.error(
                opened,
                f"column {index} has no arc, so node {index} has no way on (Moses would end its input "
                "at this lattice); give each node at least one arc",
            )
        return arcs

    def arc(self, _index: int) -> _ParsedArc:
        """``('word', score, ..., distance)``: the word, then the fields, the last the distance."""
        opened = self.expect_open("an arc ('word', score, ..., distance)")
        word = self.word()
        self.skip_space()
        if self.peek() != ",":
            raise self.error(self.pos, f"expected ',' after the word {word!r}, found {self.found()}")
        self.pos += 1
        *score_fields, (distance_pos, distance) = self.fields(opened)
        if not _DISTANCE.fullmatch(distance):
            raise self.error(distance_pos, f"the distance {distance!r} (an arc's last field) is not a whole number of nodes")
        return _ParsedArc(self.where, opened + 1, word, self.scores(score_fields), int(distance), distance_pos + 1)

    def fields(self, opened: int) -> list[tuple[int, str]]:
        """The comma-separated fields after an arc's word, through the arc's ``)``, with their offsets."""
        fields: list[tuple[int, str]] = []
        while True:
            self.skip_space()
            match = _FIELD.match(self.text, self.pos)
            if match is None:
                if self.peek() == ")" and fields:
                    raise self.error(self.pos, "a ',' before the arc's ')': an arc ends with its distance (Moses would read an empty distance as 0)")
                raise self.error(self.pos, f"expected a number in the arc opened at character {opened + 1}, found {self.found()}")
            fields.append((match.start(), match.group()))
            self.pos = match.end()
            self.skip_space()
            c = self.peek()
            self.pos += 1
            if c == ")":
                return fields
            if not c:
                raise self.error(self.pos - 1, f"the line ends inside the arc opened at character {opened + 1}: a ')' is missing")
            if c != ",":
                raise self.error(self.pos - 1, f"expected ',' or ')' in the arc opened at character {opened + 1}, found {c!r}")

    def word(self) -> str:
        """A word in single quotes, a backslash taking the next character as it is."""
        self.skip_space()
        opened = self.pos
        if self.peek() != "'":
            hint = " (PLF quotes words with ', not \")" if self.peek() == '"' else ""
            raise self.error(self.pos, f"expected a word in single quotes, found {self.found()}{hint}")
        chars: list[str] = []
        self.pos += 1
        while True:
            c = self.peek()
            if not c or (c == "\\" and self.pos + 1 >= len(self.text)):
                raise self.error(opened, "the word opened here has no closing quote")
            self.pos += 1
            if c == "'":
                break
            if c == "\\":
                c = self.text[self.pos]
                self.pos += 1
            chars.append(c)
        word = "".join(chars)
        if not word:
            raise self.error(opened, f"an empty word ''; write '{EPSILON}' for an arc that reads no word")
        if not is_token(word):
            raise self.error(opened, f"the word {word!r} holds whitespace; a word is one token")
        return word

    def scores(self, fields: list[tuple[int, str]]) -> tuple[float, ...]:
        """The dense scores of ``fields``; the named ones after them are checked and dropped."""
        dense: list[float] = []
        named = False
        for pos, token in fields:
            if "=" in token:
                name, _, value = token.partition("=")
                if not name or "=" in value or NUMBER.fullmatch(value) is None or not math.isfinite(float(value)):
                    raise self.error(pos, f"the named score {token!r} is not name=number")
                named = True
            elif named:
                raise self.error(pos, f"the score {token!r} follows named scores; the plain scores come first")
            else:
                dense.append(_lattice_score(token, lambda what, p=pos: self.error(p, what)))
        return tuple(dense)


def _score(token: str, error) -> float:
    """A score token as a finite float; ``error(what)`` makes the exception to raise."""
    if NUMBER.fullmatch(token) is None:
        raise error(f"the score {token!r} is not a number")
    value = float(token)
    if not math.isfinite(value):
        raise error(f"the score {token!r} is not a finite number")
    return value


def _lattice_score(token: str, error) -> float:
    """A PLF score: finite, >= 0 (Moses' ln of a negative one is NaN), finite as a 32-bit float."""
    value = _score(token, error)
    if value < 0:
        raise error(f"the score {token!r} is negative; a lattice score is a probability (Moses' log of it would be NaN)")
    if math.isinf(_single(value)):
        raise error(f"the score {token!r} overflows a 32-bit float (Moses' log of it would be infinite)")
    return value


def read_plf(line: str, where: str, num_input_features: int) -> Lattice:
    """The lattice of one PLF line (the module docstring gives the format and the checks).

    ``where`` is ``path:line``, the prefix of every message; ``num_input_features`` the number of
    scores each arc must have (the InputFeature's ``num-input-features``).
    """
    return _lattice(_PlfLine(line, where).lattice(), num_input_features, False)


def read_lattices(lines: Iterable[str], path: str, num_input_features: int) -> Iterator[tuple[int, Lattice]]:
    """``(line_number, lattice)`` for each PLF line of ``lines`` (1-based numbers, ``path`` for the
    messages). Blank lines at the end are skipped; one with more input after it is refused, since
    Moses ends its input at it."""
    blank = None
    for number, line in enumerate(lines, 1):
        if not line.strip(ASCII_WHITESPACE):
            blank = blank or number
            continue
        if blank is not None:
            raise _blank_line_error(f"{path}:{blank}", "lattice", number)
        yield number, read_plf(line, f"{path}:{number}", num_input_features)


def _blank_line_error(where: str, what: str, next_line: int) -> LatticeInputError:
    return LatticeInputError(
        where,
        1,
        f"a blank line where a {what} should start; Moses ends its input at it, so nothing from line "
        f"{next_line} on would be translated; remove it",
    )


# ----------------------------------------------------------------------------- confusion networks


def read_confusion_networks(lines: Iterable[str], path: str, num_input_features: int) -> Iterator[tuple[int, Lattice]]:
    """``(first_line_number, network)`` for each confusion network of ``lines``, as a lattice with
    ``from_confusion_network`` set (the module docstring gives the format and the checks).

    One column a line, a blank line (or the end of the input) after each network; line numbers
    are 1-based, ``path`` names the input in messages. Networks are yielded as they are read.
    """
    k = num_input_features
    columns: list[list[_ParsedArc]] = []
    first = 0
    blank = None
    for number, text in enumerate(lines, 1):
        where = f"{path}:{number}"
        tokens = [(m.start() + 1, m.group()) for m in _TOKEN.finditer(text)]
        if not tokens:
            if columns:
                yield first, _lattice(columns, k, True)
                columns = []
            else:
                blank = blank or number
            continue
        if blank is not None:
            raise _blank_line_error(f"{path}:{blank}", "confusion network", number)
        first = first if columns else number
        column: list[_ParsedArc] = []
        for i in range(0, len(tokens), k + 1):
            at, word = tokens[i]
            fields = tokens[i + 1 : i + 1 + k]
            if len(fields) < k:
                raise LatticeInputError(
                    where, at, f"the word {word!r} has {len(fields)} of its {k} score(s) (num-input-features {k}): "
                    f"a line is 'word {' '.join(['score'] * k)}' for each alternative"
                )
            scores = tuple(
                _score(token, lambda what, p=pos, w=word, a=at: LatticeInputError(
                    where, p, f"{what}; the word {w!r} (at character {a}) takes {k} score(s) (num-input-features {k})"
                ))
                for pos, token in fields
            )
            column.append(_ParsedArc(where, at, word, scores, 1, at))
        columns.append(column)
    if columns:
        yield first, _lattice(columns, k, True)


# ----------------------------------------------------------------------------- the checks


def _lattice(columns: list[list[_ParsedArc]], k: int, from_cn: bool) -> Lattice:
    """The lattice of ``columns`` (the arcs read for nodes ``0..N-1``, none empty), after the
    checks that need the whole lattice: each distance within it, the score count, a word on some
    path."""
    size = len(columns)
    arcs: list[Arc] = []
    for start, column in enumerate(columns):
        for p in column:
            if p.distance == 0:
                raise LatticeInputError(p.where, p.distance_at, "distance 0: an arc must move at least one node forward")
            if start + p.distance > size:
                raise LatticeInputError(
                    p.where, p.distance_at,
                    f"distance {p.distance} from node {start} points past the last node, {size} (the lattice has {size} column(s))",
                )
            if len(p.scores) != k:
                raise LatticeInputError(
                    p.where, p.at, f"the arc {p.word!r} has {len(p.scores)} score(s); num-input-features is {k}"
                )
            arcs.append(Arc(start, start + p.distance, p.word, p.scores))
    lattice = Lattice(size, tuple(arcs), from_cn)
    if not lattice.has_word_path():
        p = columns[0][0]
        raise LatticeInputError(
            p.where, p.at,
            f"every path from node 0 to node {size} reads only {EPSILON}: the input holds no word (an empty "
            "sentence, which Moses cannot translate as such); give it a word or leave it out",
        )
    return lattice


# ----------------------------------------------------------------------------- writers


def write_plf(lattice: Lattice) -> str:
    """The PLF line of ``lattice`` (no line end), which :func:`read_plf` reads back equal: words
    quoted with ``'`` and ``\\`` escaped, scores as ``repr`` writes them (exact)."""
    return "(" + "".join(
        "(" + "".join(f"({_quoted(a.word)},{''.join(f'{s!r},' for s in a.scores)}{a.distance})," for a in column) + "),"
        for column in lattice.columns()
    ) + ")"


def _quoted(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "\\'") + "'"


def write_confusion_network(lattice: Lattice) -> list[str]:
    """The lines of ``lattice`` as a confusion network, then the blank line that ends it, which
    :func:`read_confusion_networks` reads back equal. ValueError if an arc spans more than one column."""
    if any(a.distance != 1 for a in lattice.arcs):
        raise ValueError("a lattice with an arc over several columns is not a confusion network")
    lines = [" ".join(f"{a.word} {' '.join(repr(s) for s in a.scores)}".rstrip() for a in c) for c in lattice.columns()]
    return [*lines, ""]
