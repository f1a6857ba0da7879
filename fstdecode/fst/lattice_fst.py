"""A word lattice or confusion network (:class:`fstdecode.io.lattice.Lattice`) as an OpenFst acceptor.

The acceptor has one state per node (state ``i`` is node ``i``), start state 0 and one final
state, the last node (final weight One). Each arc ``i -> j`` reading ``w`` is an OpenFst arc
``i -> j`` with input and output label ``w`` (label 0, epsilon, for ``*EPS*``), weight

    cost = −Σ_k weights[k] · f_k

where ``f_k`` are the arc's InputFeature values as Moses computes them
(:meth:`~fstdecode.io.lattice.Lattice.input_features`: ``max(ln p, −100)``, and the real-word
count when asked). Tropical semiring, so the sign is the decoder's: a path's weight is minus its
weighted input score, and the shortest path is the best-scoring reading. Weights are 32-bit
floats, as in every fstdecode FST.

The words are in the acceptor's symbol table (input and output): ``<eps>`` is 0, then the words in
order of first appearance (by node, then file order), or the table given, extended.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pywrapfst as fst

from fstdecode.errors import FstdecodeError
from fstdecode.fst.fstio import write_fst_file
from fstdecode.io.lattice import Arc, Lattice

__all__ = ["EPS", "LatticeFstError", "arc_cost", "to_fst", "write_fst"]

#: The symbol of label 0.
EPS = "<eps>"


class LatticeFstError(FstdecodeError):
    """A lattice that cannot be written as an acceptor (a word spelt like the epsilon symbol), or
    weights that do not fit its scores."""


def arc_cost(lattice: Lattice, arc: Arc, weights: Sequence[float], real_word_count: bool = False) -> float:
    """−Σ weights[k] · f_k over ``arc``'s InputFeature values (``len(weights)`` must be their number)."""
    values = lattice.input_features(arc, real_word_count)
    if len(values) != len(weights):
        raise LatticeFstError(
            f"{len(weights)} InputFeature weight(s) for {len(values)} value(s) an arc "
            f"({lattice.num_scores} score(s){' and the real-word count' if real_word_count else ''})"
        )
    return 0.0 - sum(w * f for w, f in zip(weights, values))  # 0.0 - : no -0.0 on a zero cost


def to_fst(
    lattice: Lattice,
    weights: Sequence[float],
    real_word_count: bool = False,
    symbols: fst.SymbolTable | None = None,
) -> fst.VectorFst:
    """The acceptor of ``lattice`` (module docstring); ``symbols``, if given, is copied and
    extended with the lattice's words, else a new table is made."""
    table = symbols.copy() if symbols is not None else fst.SymbolTable()
    if table.num_symbols() == 0:
        table.add_symbol(EPS, 0)
    machine = fst.VectorFst()
    for _ in range(lattice.size + 1):
        machine.add_state()
    machine.set_start(0)
    machine.set_final(lattice.size)
    for arc in lattice.arcs:
        if arc.is_epsilon:
            label = 0
        elif arc.word == table.find(0):
            raise LatticeFstError(f"the word {arc.word!r} is spelt as the epsilon symbol; it cannot be a label")
        else:
            label = table.add_symbol(arc.word)
        cost = arc_cost(lattice, arc, weights, real_word_count)
        machine.add_arc(arc.start, fst.Arc(label, label, cost, arc.end))
    machine.set_input_symbols(table)
    machine.set_output_symbols(table)
    return machine


def write_fst(
    lattice: Lattice, weights: Sequence[float], path: str | Path, real_word_count: bool = False
) -> None:
    """Write :func:`to_fst` of ``lattice`` to ``path`` (an OpenFst file; the symbol table inside)."""
    write_fst_file(to_fst(lattice, weights, real_word_count), path)
