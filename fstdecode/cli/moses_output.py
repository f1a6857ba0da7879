"""What ``fstdecode moses`` writes, byte for byte as Moses writes it.

The grammar of each output, with the Moses source it follows, is in docs/moses-outputs.md
("fstdecode moses"). In short (``w`` a target word, ``s-t`` an alignment point):

* 1-best (stdout): ``[score ][id ]w w ... w `` (every word followed by one space; with
  ``-report-segmentation`` each phrase is followed by ``|i-j| ``; with ``-print-alignment-info``
  then ``||| s-t s-t ``), then a newline. A line with no derivation is empty, as Moses
  prints it (fstdecode says why on stderr).
* n-best (the ``-n-best-list`` file, or stdout for ``-``):
  ``id ||| w ... w  ||| Name= v ... ||| total[ ||| i-j=k-l ...][ ||| s-t ... ]``;
* ``-alignment-output-file``: ``s-t s-t `` per line (each point followed by a space);
  ``-output-unknowns``: the line's unknown words, each followed by a space.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from fstdecode._native import core as _core
from fstdecode.decoder import DecodeResult, Derivation
from fstdecode.io.moses_params import PARAMETERS
from fstdecode.model.features import MosesFeature
from fstdecode.search.base import SearchOptions, flag_of
from fstdecode.search.moses_nbest import MosesNbest


#: What the output holds for a line that failed (said on stderr beside the error).
FAILED_LINE = "its 1-best line is empty and it has no n-best entry, as in Moses"


def moses_reason(reason: str) -> str:
    """A line's warning (``reason`` or ``error``) as ``fstdecode moses`` words it: the state budget's
    flag of ``decode`` (``--max-states``), which this command does not take, becomes what does
    bound the search here (a stack size) and where the budget can be raised."""
    budget = flag_of(next(f for f in fields(SearchOptions) if f.name == "max_states"))
    stack = "-" + PARAMETERS["stack"].short
    return reason.replace(
        f"({budget})",
        f"(fstdecode moses' budget per line: a stack size, {stack} N with N > 0, keeps the search within it; "
        f"fstdecode decode --method stack {budget} N raises it)",
    )


@dataclass(frozen=True)
class MosesOutput:
    """Moses' output settings (from the moses.ini's sections and the command line's switches).

    Invariant: ``nbest_size`` >= 1 when ``nbest_path`` is set; ``start_id`` >= 0.
    """

    nbest_path: str | None = None
    nbest_size: int = 0
    distinct: bool = False
    include_segmentation: bool = False
    nbest_alignment: bool = False
    labeled: bool = True
    alignment: bool = False
    report_segmentation: bool = False
    mark_unknown: bool = False
    print_id: bool = False
    hypo_score: bool = False
    start_id: int = 0
    alignment_file: str | None = None
    unknowns_file: str | None = None
    #: The phrase table's scores are probabilities: print its features in Moses' float arithmetic.
    float_tm: bool = True
    #: Only the side files (``decode`` with a moses.ini's [n-best-list] ...): stdout keeps decode's format.
    side_only: bool = False
    #: Moses' -v 1 and above (its default): each line's ``BEST TRANSLATION:`` line on stderr.
    best_line: bool = False
    #: The [feature] names, in the ini's order: with ``best_line``, Moses' ``Loading NAME`` line for
    #: each before the model loads, and its ``Created input-output object`` line after.
    loading: tuple[str, ...] = ()

    def nbest_setting(self) -> MosesNbest | None:
        """The decoder's setting for its n-best lines: the core writes them in Moses' float
        arithmetic (:mod:`fstdecode.search.moses_nbest`) for a table of probabilities; None
        without an n-best list. ``decode``'s side file keeps every derivation (its own output
        prints them)."""
        if self.nbest_path is None or not self.float_tm:
            return None
        return MosesNbest(
            labeled=self.labeled, segmentation=self.include_segmentation, alignment=self.nbest_alignment,
            mark_unknown=self.mark_unknown, start_id=self.start_id, derivations=self.side_only,
        )

    @property
    def nbest_on_stdout(self) -> bool:
        """``-n-best-list -`` (or /dev/stdout): the n-best list replaces the 1-best on stdout."""
        return self.nbest_path in ("-", "/dev/stdout")


def _g(x: float) -> str:
    """A score as Moses' ostream prints it: 6 significant digits, ``0`` for a zero of either sign."""
    return "0" if x == 0 else f"{x:.6g}"


def _words(d: Derivation, opts: MosesOutput, segmentation: bool) -> str:
    """The target words, each followed by a space; unknown words marked ``UNK`` with
    ``-mark-unknown``; with ``segmentation``, each phrase followed by ``|i-j| ``."""
    out = []
    for p in d.phrases:
        for word in p.target:
            out.append(("UNK" + word if opts.mark_unknown and p.pair.unknown else word) + " ")
        if segmentation:
            out.append(f"|{p.start}-{p.end}| ")
    return "".join(out)


def _points(d: Derivation) -> str:
    """The word alignment, each point followed by a space (Moses' form)."""
    return "".join(f"{i}-{j} " for i, j in d.alignment())


def loading_lines(opts: MosesOutput) -> str:
    """Moses' -v 1 lines before its model loads (StaticData::LoadData: ``Loading NAME`` for each
    feature, in the ini's order)."""
    return "".join(f"Loading {name}\n" for name in opts.loading) if opts.best_line else ""


def loaded_line(opts: MosesOutput, user_seconds: float) -> str:
    """Moses' -v 1 line once the model is loaded (ExportInterface: ``PrintUserTime``, the process'
    user CPU seconds so far)."""
    return f"Created input-output object : [{user_seconds:.3f}] seconds\n" if opts.best_line else ""


def one_best(result: DecodeResult, opts: MosesOutput) -> str:
    """The 1-best line of ``result``, newline included (module docstring): ``-output-hypo-score``'s
    score (6 significant digits), then ``-print-id``'s id, then the words; a line with no
    derivation is empty, with no id or score (Manager::OutputBest; docs/moses-reference/outputs.md)."""
    best = result.best
    if best is None:
        return "\n"
    head = f"{_g(best.score)} " if opts.hypo_score else ""
    if opts.print_id:
        head += f"{result.id + opts.start_id} "
    line = head + _words(best, opts, opts.report_segmentation)
    if opts.alignment:
        line += "||| " + _points(best)
    return line + "\n"


def best_translation(result: DecodeResult, layout: tuple[MosesFeature, ...], opts: MosesOutput) -> str:
    """Moses' ``BEST TRANSLATION:`` line of ``result`` (Manager::OutputBest at -v 1, Hypothesis's
    operator<<): the words, each followed by a space, the coverage bitmap, ``[total=X]`` (the value
    Moses' regression harness reads as ``SCORE_n``) and ``core=(...)``, every dense feature value in
    Moses' order (untuneable ones too), all fixed with 3 decimals (Moses' FixPrecision(cerr)); ``NO BEST
    TRANSLATION`` for a line with no derivation. The line ends as Moses' does: ``) `` and the last
    phrase's non-terminal alignment after a space (empty for a phrase-based model). Checked beside
    Moses on the Hansards model: the same bytes, up to the ties Moses breaks otherwise."""
    best = result.best
    if best is None:
        return "NO BEST TRANSLATION\n"
    values = replace(best.features, tm=moses_tm(best)) if opts.float_tm else best.features
    core = ",".join(f"{v:.3f}" for f in layout for v in f.values(values))
    words = "".join(w + " " for p in best.phrases for w in p.target)
    return f"BEST TRANSLATION: {words}[{'1' * len(result.source)}]  [total={best.score:.3f}] core=({core})  \n"


def moses_tm(d: Derivation) -> tuple[float, ...]:
    """The phrase-table features as Moses computes them from probabilities: each score read as a
    C ``float``, its log a float floored at -100 (``moses_table_value`` in native/moses_float.h),
    summed phrase by phrase in target order in ``float`` (Moses' ScoreComponentCollection holds
    floats). Printed with 6 digits, these are Moses' bytes where the exact (double) sums can round
    the other way."""
    columns = zip(*(p.pair.scores for p in d.phrases)) if d.phrases else [()] * len(d.features.tm)
    return tuple(_float_sum(_core.moses_table_value(v) for v in column) for column in columns)


def _float_sum(values) -> float:
    """``values`` added one by one in C ``float`` (each sum rounded to float, as Moses' are)."""
    acc = 0.0
    for v in values:
        acc = _core.moses_float_add(acc, v)
    return acc


def features_field(d: Derivation, layout: tuple[MosesFeature, ...], labeled: bool = True, float_tm: bool = False) -> str:
    """The n-best feature field: `` Name= v v`` for each tuneable feature, in Moses' order, with its
    tuned values only (Moses' OutputAllFeatureScores: a feature with ``tuneable=false``, or whose
    ``tuneable-components=`` tunes none, is left out, and so is each value it keeps fixed;
    :attr:`~fstdecode.model.features.MosesFeature.in_nbest`); with ``float_tm`` the phrase
    table's values in Moses' float arithmetic (:func:`moses_tm`). The core writes the whole
    field in Moses' arithmetic for the models it knows (:mod:`fstdecode.search.moses_nbest`)."""
    out = []
    values = replace(d.features, tm=moses_tm(d)) if float_tm else d.features
    for f in layout:
        if f.in_nbest:
            if labeled:
                out.append(f" {f.name}=")
            out.extend(f" {_g(v)}" for v in f.tuned(f.values(values)))
    return "".join(out)


def nbest(result: DecodeResult, layout: tuple[MosesFeature, ...], opts: MosesOutput) -> str:
    """The n-best entries of ``result`` (Moses writes none for a line it cannot translate): the
    lines the core wrote (``result.nbest_text``: Moses' float arithmetic and order), else, for a
    model the core's arithmetic does not know (several LMs or tables) or a line without a search
    (an empty line), each derivation's own values (the phrase table's in float with
    ``float_tm``) and the scorer's total, in the search's order."""
    if result.nbest_text is not None:
        return result.nbest_text
    ident = result.id + opts.start_id
    lines = []
    for d in result.derivations:
        feats = features_field(d, layout, opts.labeled, opts.float_tm)
        line = f"{ident} ||| {_words(d, opts, False)} |||{feats} ||| {_g(d.score)}"
        if opts.include_segmentation:
            line += " |||" + "".join(" " + span for span in d.segmentation().split())
        if opts.nbest_alignment:
            line += " ||| " + _points(d)
        lines.append(line + "\n")
    return "".join(lines)


def alignment_line(result: DecodeResult) -> str:
    """The ``-alignment-output-file`` line of ``result``: each point followed by a space (an empty
    line without a derivation or points; Manager::OutputAlignment)."""
    best = result.best
    return (_points(best) if best is not None else "") + "\n"


def unknowns_line(result: DecodeResult) -> str:
    """The ``-output-unknowns`` line: the best derivation's unknown words, each followed by a space."""
    best = result.best
    words = [] if best is None else [w for p in best.phrases if p.pair.unknown for w in p.pair.source]
    return "".join(w + " " for w in words) + "\n"
