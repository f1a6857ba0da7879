"""``fstdecode compile`` and ``fstdecode inspect``: P to a file, and a look inside any FST.

``inspect`` prints an FST's size and properties; for a lattice written by
``decode --lattice-dir`` it also prints the best paths as derivations,
read from the operation symbols alone (:mod:`.reorder`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

import pywrapfst as fst

from fstdecode.errors import FstdecodeError
from fstdecode.fst.cascade import read_paths
from fstdecode.fst.fstio import read_fst_file, write_fst_file
from fstdecode.fst.phrase_fst import build_phrase_fst
from fstdecode.fst.reorder import parse_op_symbol
from fstdecode.model.model import Model
from fstdecode.io.phrase_table import PhrasePair
from fstdecode.problem.problem import Option
from fstdecode.statespace.signature import replay
from fstdecode.problem.sentence import Phrase


class ToolError(FstdecodeError):
    """A file that ``inspect`` cannot read."""


#: The properties ``inspect`` reports, with OpenFst's names.
PROPERTIES = [
    ("acceptor", fst.ACCEPTOR),
    ("acyclic", fst.ACYCLIC),
    ("input label sorted", fst.I_LABEL_SORTED),
    ("output label sorted", fst.O_LABEL_SORTED),
    ("no epsilons", fst.NO_EPSILONS),
    ("no input epsilons", fst.NO_I_EPSILONS),
    ("input deterministic", fst.I_DETERMINISTIC),
    ("top sorted", fst.TOP_SORTED),
]


def compile_phrase_fst(model: Model, out: str | Path) -> fst.VectorFst:
    """Write P for ``model`` to ``out`` (symbol tables inside) and return it."""
    p = build_phrase_fst(model.table, model.weights)
    write_fst_file(p.fst, out)
    return p.fst


def read_fst(path: str | Path) -> fst.Fst:
    return read_fst_file(path, ToolError)


def lattice_derivation(labels: list[int], osyms: fst.SymbolTable) -> list[tuple[int, int, str]]:
    """``[src_start, src_end, target]`` (0-based tokens, target order) from operation labels."""
    steps = []
    for lab in labels:
        s, t, s1, _, s2, _, target, _ = parse_op_symbol(osyms.find(lab))
        phrase = None if target == "</s>" else Phrase(s - 1, t - 1, PhrasePair((), tuple(target.split()), ()))
        steps.append((Option(s, t, 0, 0, 0.0, phrase), s1, s2))
    bos = Option(0, 0, 0, 0, 0.0, None)
    tapes: dict[int, list[Option]] = {}
    for tapes in replay(steps, bos):
        pass
    return [(o.phrase.start, o.phrase.end, " ".join(o.phrase.target)) for tape in tapes.values() for o in tape if o.phrase]


def inspect(path: str | Path, out: TextIO, nbest: int = 3) -> None:
    """Write a summary of the FST at ``path``; for a lattice, its ``nbest`` best derivations."""
    f = read_fst(path)
    states = f.num_states()
    arcs = sum(f.num_arcs(q) for q in f.states())
    out.write(f"file:      {path}\n")
    out.write(f"fst type:  {f.fst_type()}  arc type: {f.arc_type()}\n")
    out.write(f"states:    {states}\narcs:      {arcs}\n")
    for name, prop in PROPERTIES:
        out.write(f"{name + ':':<21}{'y' if f.properties(prop, True) == prop else 'n'}\n")
    isyms, osyms = f.input_symbols(), f.output_symbols()
    out.write(f"input symbols:  {isyms.num_symbols() if isyms else 'none'}\n")
    out.write(f"output symbols: {osyms.num_symbols() if osyms else 'none'}\n")
    if osyms is None or osyms.num_symbols() < 2 or not osyms.find(1).startswith("op:"):
        return
    paths = read_paths(fst.shortestpath(f, nshortest=nbest))
    out.write(f"lattice: {len(paths)} best derivation(s), [src_start-src_end] target (0-based):\n")
    for rank, (labels, cost) in enumerate(paths, 1):
        ops = [lab for lab in labels if osyms.find(lab).startswith("op:")]
        deriv = lattice_derivation(ops, osyms)
        text = " ".join(t for _, _, t in deriv)
        spans = " ".join(f"[{a}-{b}] {t}" for a, b, t in deriv)
        out.write(f"  {rank}. score {0.0 - cost:.4f}  {text}\n     {spans}\n")
