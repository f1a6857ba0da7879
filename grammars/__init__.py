"""Pynini grammar modules that export named FSTs into FAR archives.

Each module follows pynini's export convention (``pynini/export/grm.py``):
it defines ``generator_main(exporter)``, which stores FSTs under their
names with ``exporter[NAME] = fst``, and can be run on its own with
pynini's runner (which needs ``absl-py``), from the repository root::

    python -m grammars.numbers_de_en --output=numbers.far
    python grammars/numbers_de_en.py --output=numbers.far

=================  ================  ==========================================
module             exports           what
=================  ================  ==========================================
``phrase_table``   ``PHRASE_TABLE``  P, the phrase-table transducer
``bigram_lm``      ``BIGRAM_LM``     a word-level bigram LM acceptor
``numbers_de_en``  ``NUMBERS``       German number words and digits -> English
=================  ================  ==========================================

(Not ``numbers.py``: run as a script, a module of that name would shadow
the standard library's ``numbers``, which pywrapfst imports.)

Every module reads the built-in example model
(:func:`fstdecode.model.model.example_dir`) unless its ``generator_main``
is given other inputs as keyword arguments; nothing comes from the
environment. :func:`export_far` is how ``scripts/compile_grammars.py`` and
the tests run a generator.
"""

from __future__ import annotations

import os
from typing import Callable

import pynini
from pynini.export import export

#: module name (under ``grammars``) -> the FST names its generator exports.
GRAMMARS: dict[str, tuple[str, ...]] = {
    "phrase_table": ("PHRASE_TABLE",),
    "bigram_lm": ("BIGRAM_LM",),
    "numbers_de_en": ("NUMBERS",),
}

Generator = Callable[[export.Exporter], None]


def export_far(generator_main: Generator, path: str | os.PathLike[str]) -> list[str]:
    """Run ``generator_main`` into the FAR at ``path`` (as ``grm.run`` does) and return its keys.

    The keys are read back from the written archive, so they are what a
    reader of the file will find.
    """
    exporter = export.Exporter(path)
    generator_main(exporter)
    exporter.close()
    return far_keys(path)


def far_keys(path: str | os.PathLike[str]) -> list[str]:
    """The names of the FSTs in a FAR archive, in archive order."""
    with pynini.Far(os.fspath(path), mode="r") as far:
        return [key for key, _ in far]


__all__ = ["GRAMMARS", "Generator", "export_far", "far_keys"]
