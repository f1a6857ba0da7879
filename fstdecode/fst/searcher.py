"""``--method fst``: the WFST cascade as a registered search method.

The options name files, not objects, so that the CLI and the API build the
same searcher; pywrapfst is imported only when the method is used, so
registering it costs nothing at start-up.
"""

from __future__ import annotations

import functools
import os
import tempfile
from dataclasses import dataclass, field

from fstdecode.io.writing import WriteError, cannot_write
from fstdecode.io.phrase_table import PhraseTable
from fstdecode.model.model import Model
from fstdecode.problem.problem import SearchProblem, SearchResult
from fstdecode.search.base import SearchOptions, option, register
from fstdecode.search.exact import DEFAULT_EXACT_MAX_STATES


@dataclass(frozen=True)
class FstOptions(SearchOptions):
    """``--method fst``: a compiled P, a source grammar, and what to do with each lattice.

    The state budget is the exact method's: the pruned R starts with the same A* (its states
    count, and so do the signature states visited after it)."""

    max_states: int = field(
        default=DEFAULT_EXACT_MAX_STATES,
        metadata=option("state budget per sentence; beyond it the line is marked not optimal, with its gap", minimum=1),
    )

    phrase_fst: str | None = field(
        default=None, metadata=option("P compiled by `fstdecode compile` (instead of the text table)", metavar="P.fst")
    )
    source_grammar: str | None = field(
        default=None,
        metadata=option(
            "add the phrase pairs of a string transducer in a FAR (NAME: its first FST) to P", metavar="FILE.far[:NAME]"
        ),
    )
    lattice_dir: str | None = field(
        default=None, metadata=option("write each sentence's lattice I∘P∘R∘L as DIR/<id>.fst (ids from 0)", metavar="DIR")
    )
    lattice_prune: float | None = field(
        default=None, metadata=option("prune lattices to paths within cost W of the best", minimum=0, infinite=True)
    )


@functools.lru_cache(maxsize=4)
def read_compiled(path: str):
    """The compiled P at ``path`` (read once per process; see :func:`fstdecode.fst.phrase_fst.read_phrase_fst`)."""
    from fstdecode.fst.phrase_fst import read_phrase_fst

    return read_phrase_fst(path)


def compiled_table(path: str) -> PhraseTable:
    """The model's phrase table when P comes compiled: no pairs, P's number of score columns."""
    return PhraseTable(str(path), read_compiled(path).num_scores, {})


def lattice_folder(path: str) -> None:
    """Make ``--lattice-dir`` (and its parents) if it is missing, and check that files can be made in it.

    Checked once, before the first line, so that a path that is a file or a read-only folder stops
    the run at once with WriteError, rather than fail line by line.
    """
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        if os.path.exists(path) and not os.path.isdir(path):
            raise WriteError(f"{path}: cannot write lattices there: it is a file, not a folder (--lattice-dir)") from None
        raise cannot_write(f"{path} (--lattice-dir)", e) from None


class FstSearcher:
    """Searches with ``ShortestPath(I ∘ P ∘ R ∘ L)``; P is built (or read) once per searcher, R and
    L per sentence by the native core."""

    def __init__(self, model: Model, options: FstOptions) -> None:
        from fstdecode.fst.cascade import Cascade
        from fstdecode.fst.grammar import with_source_grammar

        p = read_compiled(options.phrase_fst) if options.phrase_fst else None
        if options.source_grammar:
            p = with_source_grammar(options.source_grammar, model, p)
        self.options = options
        self.cascade = Cascade(model, p)
        if options.lattice_dir is not None:
            lattice_folder(options.lattice_dir)

    def search(self, problem: SearchProblem) -> SearchResult:
        o = self.options
        out = self.cascade.search(
            problem.sentence.words, nbest=o.nbest, unique=o.unique, max_states=o.max_states, prune=o.lattice_prune,
            semantics=problem.semantics,
        )
        if o.lattice_dir is not None:
            from fstdecode.fst.fstio import write_fst_file  # (pywrapfst, loaded with the method)

            lattice = out.lattice if problem.sentence.words else _unweighted(out.lattice)
            write_fst_file(lattice, os.path.join(o.lattice_dir, f"{problem.id}.fst"))
        return out.result


def _unweighted(lattice):  # (a pywrapfst MutableFst)
    """``lattice`` with every weight One: an empty line's lattice, whose one derivation (the empty
    one) scores 0 as every output of the line says (Decoder._derivation: Moses scores nothing for
    an empty line, not even the LM's ``</s>``)."""
    from pywrapfst import Arc, Weight

    lattice = lattice.copy()
    one = Weight.one(lattice.weight_type())
    for state in lattice.states():
        arcs = [Arc(a.ilabel, a.olabel, one, a.nextstate) for a in lattice.arcs(state)]
        lattice.delete_arcs(state)
        for a in arcs:
            lattice.add_arc(state, a)
        if lattice.final(state) != Weight.zero(lattice.weight_type()):
            lattice.set_final(state, one)
    return lattice


register(
    "fst",
    FstOptions,
    factory=FstSearcher,
    exact=True,
    distinct=True,  # the cascade prunes R for the k-th distinct translation (fstdecode.fst.cascade)
    # R's states carry the tapes' LR ends and Moses' gap rule (native/statespace.h).
    summary="the same search as a WFST cascade in OpenFst (exact); R and L built by the native core",
)
