"""NUMBERS: an example external source grammar, German numbers and digits -> English.

An acyclic string transducer (pynini byte strings holding UTF-8) from a
source phrase to its translation. ``fstdecode decode --method fst
--source-grammar numbers.far`` turns each of its paths into a phrase pair
and unions it into P (:func:`fstdecode.fst.phrase_fst.grammar_pairs`).

    "zwei"             -> "two"
    "dreißig"          -> "thirty"
    "tausend"          -> "thousand"
    "einundzwanzig"    -> "twenty-one"      (compound, built from the lists)
    "siebenundachtzig" -> "eighty-seven"
    "1984"             -> "1984"            (digit tokens 0..2100 copy through)

The words come from ``grammars/data/numbers_de_en.tsv`` (German, English,
value, and for the units 1-9 the form they take in a compound: "ein" of
"einundzwanzig"). The compounds 21..99 are generated from its units and
tens: ``<unit>und<tens>`` -> ``<tens>-<unit>``.

Weights: none (every path weighs One). ``grammar_pairs`` ignores a
grammar's weights anyway: a grammar pair scores as probability 1 in every
TM column, so that the scorer, which sees only the pair, and the path
weight in P agree.

Run::

    python -m grammars.numbers_de_en --output=numbers.far
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pynini
from pynini.export import export

from fstdecode.errors import FstdecodeError

#: The number words of the default grammar.
DEFAULT_TSV = Path(__file__).resolve().parent / "data" / "numbers_de_en.tsv"

#: Digit tokens 0..DIGIT_LIMIT (no leading zeros) copy through: years and small counts.
DIGIT_LIMIT = 2100


class Error(FstdecodeError):
    """A number-word TSV that this grammar cannot read (message names file and line)."""


@dataclass(frozen=True)
class NumberWord:
    """One TSV row: ``german`` means ``english`` = ``value``; ``combining`` is a unit's compound form."""

    german: str
    english: str
    value: int
    combining: str | None = None


def read_number_words(path: str | os.PathLike[str] = DEFAULT_TSV) -> list[NumberWord]:
    """The rows of a number-word TSV; ``#`` lines and blank lines are skipped.

    Each row is ``german<TAB>english<TAB>value[<TAB>combining form]``; a
    unit (value 1-9) must have its combining form.
    """
    out = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) not in (3, 4) or not all(cols):
                raise Error(f"{path}:{no}: expected german<TAB>english<TAB>value[<TAB>combining form]")
            try:
                value = int(cols[2])
            except ValueError:
                raise Error(f"{path}:{no}: value {cols[2]!r} is not an integer") from None
            if 1 <= value <= 9 and len(cols) != 4:
                raise Error(f"{path}:{no}: the unit {cols[0]!r} needs its combining form in column 4")
            out.append(NumberWord(cols[0], cols[1], value, cols[3] if len(cols) == 4 else None))
    return out


def number_words(entries: list[NumberWord]) -> pynini.Fst:
    """The words themselves: "zwölf" -> "twelve", "hundert" -> "hundred"."""
    return pynini.string_map((e.german, e.english) for e in entries)


def compounds(entries: list[NumberWord]) -> pynini.Fst:
    """21..99 from the units and tens: "einundzwanzig" -> "twenty-one"."""
    units = [e for e in entries if 1 <= e.value <= 9]
    tens = [e for e in entries if e.value in range(20, 100, 10)]
    return pynini.string_map((f"{u.combining}und{t.german}", f"{t.english}-{u.english}") for t in tens for u in units)


def digit_tokens(limit: int = DIGIT_LIMIT) -> pynini.Fst:
    """The tokens "0".."{limit}" copied through: "1984" -> "1984"."""
    return pynini.string_map(str(n) for n in range(limit + 1))


def numbers_fst(path: str | os.PathLike[str] = DEFAULT_TSV, limit: int = DIGIT_LIMIT) -> pynini.Fst:
    """The whole grammar: words, compounds and digit tokens (acyclic, weights One)."""
    entries = read_number_words(path)
    return pynini.union(number_words(entries), compounds(entries), digit_tokens(limit)).optimize()


def generator_main(
    exporter: export.Exporter, path: str | os.PathLike[str] = DEFAULT_TSV, limit: int = DIGIT_LIMIT
) -> None:
    """Export ``NUMBERS`` from the TSV at ``path`` (default: ``grammars/data/numbers_de_en.tsv``)."""
    exporter["NUMBERS"] = numbers_fst(path, limit)


if __name__ == "__main__":
    from pynini.export import grm

    grm.run(generator_main)
