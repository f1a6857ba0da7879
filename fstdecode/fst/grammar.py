"""``--source-grammar FILE.far[:NAME]``: phrase pairs from a string transducer in a FAR, added to P."""

from __future__ import annotations

import os

import pynini

from fstdecode.errors import FstdecodeError
from fstdecode.fst.fstio import quiet_openfst
from fstdecode.fst.phrase_fst import PhraseFst, build_phrase_fst, grammar_pairs
from fstdecode.model.model import Model


class GrammarError(FstdecodeError):
    """A source grammar that is missing, not a FAR, or has no FST of the given name."""


def _split_grammar_spec(spec: str) -> tuple[str, str | None]:
    """``FILE.far[:NAME]`` -> (file, name or None); a path that exists is taken whole."""
    if ":" in spec and not os.path.exists(spec):
        path, name = spec.rsplit(":", 1)
        return path, name or None
    return spec, None


def read_source_grammar(spec: str) -> tuple[str, str, pynini.Fst]:
    """(file, name, FST): the FST ``NAME`` (default: the first) of the FAR in ``FILE.far[:NAME]``.

    Raises FstdecodeError naming the file when it is missing, is not a FAR,
    is empty or has no FST of that name.
    """
    path, name = _split_grammar_spec(spec)
    if not os.path.isfile(path):
        raise GrammarError(f"{path}: no such file (--source-grammar FILE.far[:NAME])")
    try:
        with quiet_openfst():
            far = pynini.Far(path, mode="r")
    except Exception:  # pywrapfst's FstIOError and friends say only "Read failed"
        raise GrammarError(f"{path}: not a FAR archive that OpenFst can read") from None
    with far:
        keys = [key for key, _ in far]
        if not keys:
            raise GrammarError(f"{path}: the archive holds no FSTs")
        if name is None:
            name = keys[0]
        if name not in keys:
            raise GrammarError(f"{path}: no FST named {name!r} in the archive (it holds {', '.join(keys)})")
        return path, name, far[name]


def with_source_grammar(spec: str, model: Model, phrase_fst: PhraseFst | None = None) -> PhraseFst:
    """P (``phrase_fst``, else built from ``model``) with the pairs of the grammar ``FILE.far[:NAME]``.

    The grammar is an acyclic string transducer, source phrase -> target
    phrase; each pair scores as probability 1 (see ``grammar_pairs``) and
    costs what ``model.weights`` give it.
    """
    path, name, grammar = read_source_grammar(spec)
    p = phrase_fst or build_phrase_fst(model.table, model.weights)
    try:
        return p.with_pairs(grammar_pairs(grammar, p.num_scores), model.weights)
    except FstdecodeError as e:
        raise GrammarError(f"{path}:{name}: {e}") from None
