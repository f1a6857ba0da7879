"""The real models of ../shared/data the decoder reads, and their test sentences (shared by the
integration tests that hold every method to the exact search and the scorer on them)."""

from __future__ import annotations

import ast
import re

import pytest

from fstdecode.model.model import load_model

from shared import data_path, hansards_input, hansards_model

# --- the models ---------------------------------------------------------------------------


def _hansards(order: int, _tmp: pytest.TempPathFactory):
    return hansards_model(lm_order=order, distortion_limit=4, table_limit=20)


def _de_en(_tmp: pytest.TempPathFactory):
    return load_model(data_path("moses-early-distortion-de-en", "moses.ini"))


def _toy_numbers(tmp: pytest.TempPathFactory):
    # The ini names a binary table, InputFeature (lattice arc weights), [inputtype] 2 (word
    # lattices) and [recover-input-path], which load_model refuses; its messages say what to
    # do, and this does it: the text table, no InputFeature, plain-text input (the tests
    # decode each lattice path).
    folder = data_path("moses-toy-numbers")
    text = (folder / "moses.ini").read_text(encoding="utf-8").replace("${TEST_PATH}", str(folder))
    text = re.sub(r"^\[(inputtype|recover-input-path)\]\n[^\n]*\n", "", text, flags=re.M)
    kept = [
        line.replace("PhraseDictionaryBinary", "PhraseDictionaryMemory")
        for line in text.splitlines()
        if not line.startswith("InputFeature")
    ]
    ini = tmp.mktemp("toy-numbers") / "moses.ini"
    ini.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return load_model(ini)


MODELS = {
    "hansards-lm2": lambda tmp: _hansards(2, tmp),
    "hansards-lm3": lambda tmp: _hansards(3, tmp),
    "de-en": _de_en,
    "toy-numbers": _toy_numbers,
}


def lattice_paths(plf: str) -> list[str]:
    """Every path through a Moses PLF lattice, as a sentence.

    PLF is a Python literal: one tuple of arcs ``(word, score, skip)`` per node, an arc going
    from node i to node i + skip; the paths run from node 0 to the node after the last.
    """
    nodes = ast.literal_eval(plf)

    def walk(i: int) -> list[tuple[str, ...]]:
        if i == len(nodes):
            return [()]
        return [(word,) + rest for word, _, skip in nodes[i] for rest in walk(i + skip)]

    return [" ".join(path) for path in walk(0)]


def sentences(model: str, line: int) -> list[str]:
    """The sentences of input line ``line`` of ``model``'s test set (a lattice gives each path)."""
    if model.startswith("hansards"):
        return [hansards_input()[line]]
    if model == "de-en":
        text = data_path("moses-early-distortion-de-en", "to-translate.txt").read_text(encoding="utf-8")
        return [text.splitlines()[line]]
    text = data_path("moses-toy-numbers", "to-translate.txt").read_text(encoding="utf-8")
    return lattice_paths(text.splitlines()[line])


#: Input lines per model.
LINES = {
    # The first six (8-22 words) mostly run over the exact searches' budgets; 30, 43, 45 and 46
    # (5, 5, 4 and 3 words) are where they finish, dp included (line 46).
    "hansards-lm2": [*range(6), 30, 43, 45, 46],
    "hansards-lm3": [*range(6), 30, 43, 45, 46],
    # All five (5-10 words; line 2 has the unknown word XXXX).
    "de-en": list(range(5)),
    # All seven lattices: 13 paths (11 distinct sentences), two with a word that neither the
    # table nor the LM (which has no <unk>) knows.
    "toy-numbers": list(range(7)),
}

INPUTS = [pytest.param(model, line, id=f"{model}-line{line}") for model, lines in LINES.items() for line in lines]
