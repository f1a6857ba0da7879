"""P: the phrase-table transducer, source words -> phrase-pair labels.

P has one loop state (0, initial and final). Each phrase pair is a path
0 -w1:ε-> … -wk:pair/cost-> 0 that reads its source words and writes its
pair label on the last arc, so ``I ∘ P`` segments the input into phrases
in source order. The cost is −(weighted TM + word + phrase penalties) of
the pair (tropical: lower is better). One more arc, ``<unk>:<unk>``,
translates an unknown word by copying it through, with the
UnknownWordPenalty.

The symbol tables travel inside the FST file. An output symbol spells the
pair as ``src ||| tgt ||| f1 f2 …`` (the TM feature values, natural log,
exactly as ``repr`` prints them), so the pairs and their features can be
read back from the compiled file alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pywrapfst as fst

from fstdecode.errors import FstdecodeError
from fstdecode.fst.fstio import read_fst_file, write_fst_file
from fstdecode.model.features import UNKNOWN_WORD_VALUE, Weights
from fstdecode.io.phrase_table import PhrasePair, PhraseTable

EPS = "<eps>"
UNK = "<unk>"
#: The label of the unknown-word pair on P's output (and of ``<unk>`` on its input).
UNK_LABEL = 1


class PhraseFstError(FstdecodeError):
    """A compiled phrase-table FST that fstdecode cannot read."""


def pair_symbol(pair: PhrasePair) -> str:
    """The output symbol of a pair: ``src ||| tgt ||| f1 f2 …`` (exact floats), then ``||| 0-0 …``
    when the pair has a word alignment."""
    text = f"{' '.join(pair.source)} ||| {' '.join(pair.target)} ||| {' '.join(repr(v) for v in pair.scores)}"
    return f"{text} ||| {pair.alignment}" if pair.alignment else text


def parse_pair_symbol(symbol: str, where: str) -> PhrasePair:
    """The inverse of :func:`pair_symbol`; raises PhraseFstError naming ``where``."""
    parts = [p.strip() for p in symbol.split("|||")]
    try:
        src, tgt, scores = parts[0].split(), parts[1].split(), tuple(float(v) for v in parts[2].split())
    except (IndexError, ValueError):
        raise PhraseFstError(f"{where}: output symbol {symbol!r} is not 'src ||| tgt ||| scores'") from None
    alignment = " ".join(parts[3].split()) if len(parts) > 3 else ""
    return PhrasePair(tuple(src), tuple(tgt), scores, alignment=alignment)


def pair_cost(pair: PhrasePair, w: Weights) -> float:
    """−(Σ w_tm·f_tm − w_word·|e| + w_phrase), and the unknown penalty for copied words."""
    score = sum(a * b for a, b in zip(w.tm, pair.scores)) - w.word * len(pair.target) + w.phrase
    if pair.unknown:
        score += w.unknown * UNKNOWN_WORD_VALUE * len(pair.source)
    return -score


@dataclass(frozen=True)
class PhraseFst:
    """P with what decoding needs to read it back.

    Invariant: ``pairs[k]`` is the pair of output label k (``pairs[0]`` and
    ``pairs[UNK_LABEL]`` are None); ``single`` holds the source words that
    have a one-word pair (the others are unknown words, as in Moses).
    """

    fst: fst.VectorFst
    pairs: tuple[PhrasePair | None, ...]
    single: frozenset[str]
    unknown_cost: float

    @property
    def num_scores(self) -> int:
        return len(self.pairs[2].scores) if len(self.pairs) > 2 else 0

    def write(self, path: str | Path) -> None:
        """Write P to ``path`` (atomically; a failure raises WriteError naming the path)."""
        write_fst_file(self.fst, path)

    def with_pairs(self, extra: list[PhrasePair], weights: Weights) -> "PhraseFst":
        """P with more phrase pairs: their paths join P's loop, as a union inside the closure.

        Pairs already in P are skipped. Each new pair costs ``pair_cost`` with
        ``weights`` (those P was compiled with); its scores must have
        ``num_scores`` values.
        """
        p = self.fst.copy()
        isyms, osyms = p.input_symbols().copy(), p.output_symbols().copy()
        pairs = list(self.pairs)
        for pair in extra:
            if len(pair.scores) != self.num_scores:
                raise PhraseFstError(f"pair {pair_symbol(pair)!r} has {len(pair.scores)} scores; P has {self.num_scores}")
            label = osyms.add_symbol(pair_symbol(pair))
            if label != len(pairs):
                continue
            pairs.append(pair)
            _add_pair_path(p, p.start(), isyms, pair, label, pair_cost(pair, weights))
        p.set_input_symbols(isyms)
        p.set_output_symbols(osyms)
        p.arcsort("ilabel")
        single = self.single | {pr.source[0] for pr in extra if len(pr.source) == 1}
        return PhraseFst(p, tuple(pairs), single, self.unknown_cost)


def _add_pair_path(p: fst.VectorFst, loop: int, isyms: fst.SymbolTable, pair: PhrasePair, label: int, cost: float) -> None:
    """The path loop -w1:ε-> … -wk:label/cost-> loop that reads the pair's source words."""
    state = loop
    for k, word in enumerate(pair.source):
        last = k == len(pair.source) - 1
        nxt = loop if last else p.add_state()
        p.add_arc(state, fst.Arc(isyms.add_symbol(word), label if last else 0, cost if last else 0.0, nxt))
        state = nxt


def grammar_pairs(grammar: fst.Fst, num_scores: int) -> list[PhrasePair]:
    """The phrase pairs of a string grammar (pynini's byte or UTF-8 strings), every TM score 0.

    ``grammar`` maps a source phrase ("zwei und zwanzig") to a target
    phrase ("twenty-two"); it must be acyclic (a finite set of pairs). A
    grammar pair scores as probability 1 in every TM column; its own
    weights are ignored so that the scorer and the path weights agree.
    """
    if grammar.properties(fst.ACYCLIC, True) != fst.ACYCLIC:
        raise PhraseFstError("a source grammar must be acyclic (a finite set of phrase pairs)")
    out = []
    for src, tgt, _ in grammar.paths().items():
        if src.split() and tgt.split():
            out.append(PhrasePair(tuple(src.split()), tuple(tgt.split()), (0.0,) * num_scores))
    return out


def build_phrase_fst(table: PhraseTable, weights: Weights) -> PhraseFst:
    """Compile P from a phrase table with the model's weights baked into its costs."""
    isyms = fst.SymbolTable("source")
    osyms = fst.SymbolTable("pairs")
    for syms in (isyms, osyms):
        syms.add_symbol(EPS, 0)
        syms.add_symbol(UNK, UNK_LABEL)
    p = fst.VectorFst()
    loop = p.add_state()
    p.set_start(loop)
    p.set_final(loop)
    unknown_cost = pair_cost(PhrasePair((UNK,), (UNK,), (0.0,) * table.num_scores, unknown=True), weights)
    p.add_arc(loop, fst.Arc(UNK_LABEL, UNK_LABEL, unknown_cost, loop))
    pairs: list[PhrasePair | None] = [None, None]
    for source in table.sources():
        for pair in table.lookup(source):
            label = osyms.add_symbol(pair_symbol(pair))
            if label != len(pairs):  # two identical lines: one label serves both
                continue
            pairs.append(pair)
            _add_pair_path(p, loop, isyms, pair, label, pair_cost(pair, weights))
    p.set_input_symbols(isyms)
    p.set_output_symbols(osyms)
    p.arcsort("ilabel")
    return PhraseFst(p, tuple(pairs), frozenset(s[0] for s in table.sources() if len(s) == 1), unknown_cost)


def read_phrase_fst(path: str | Path) -> PhraseFst:
    """Load a P written by ``fstdecode compile``; pairs come back from its output symbols."""
    p = read_fst_file(path, PhraseFstError, fst.VectorFst)
    osyms = p.output_symbols()
    if osyms is None or p.input_symbols() is None:
        raise PhraseFstError(f"{path}: no symbol tables inside; compile it with `fstdecode compile`")
    pairs: list[PhrasePair | None] = [None, None]
    for label in range(2, osyms.num_symbols()):
        pairs.append(parse_pair_symbol(osyms.find(label), f"{path}: output symbol {label}"))
    single = frozenset(pr.source[0] for pr in pairs[2:] if pr is not None and len(pr.source) == 1)
    unknown = next((a.weight for a in p.arcs(p.start()) if a.ilabel == UNK_LABEL), None)
    if unknown is None:
        raise PhraseFstError(f"{path}: no <unk> arc at the start state; not an fstdecode phrase FST")
    return PhraseFst(p, tuple(pairs), single, float(str(unknown)))
