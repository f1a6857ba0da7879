"""``fstdecode``: the command line, a thin layer over the Python API.

    fstdecode decode [-f moses.ini] [--phrase-table F] [--lm F] ... < input > output
    fstdecode demo

Errors in files or flags print one ``fstdecode: error: ...`` line naming
the file and line, and exit with status 2; warnings print as
``fstdecode: warning: ...``. Ctrl-C exits with status 130, quietly, after
writing the lines already decoded; SIGTERM and SIGHUP to a run of several
workers stop the workers and exit 143 and 129 (:mod:`fstdecode.cli.stopping`).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from typing import Callable, Sequence

from fstdecode import __version__
from fstdecode.cli import moses_output, output, running, stopping, streams
from fstdecode.cli import serve as serve_cli
from fstdecode.cli.moses_output import MosesOutput
from fstdecode.cli.options import add_search_flags, check_min, search_options
from fstdecode.cli.progress import progress_bar
from fstdecode.decoder import DEFAULT_METHOD, XML_INPUT_MODES, DecodeResult, Decoder
from fstdecode.errors import FstdecodeError
from fstdecode.io.phrase_table import SCORE_FORMATS
from fstdecode.io.binarized import is_mapped_table
from fstdecode.io.table_filter import DEFAULT_CHUNK_LINES, FILTER_THRESHOLD_BYTES, SourceFilter
from fstdecode.io.moses_ini import load_moses_ini, moses_boolean
from fstdecode.model.model import (
    DEFAULT_DISTORTION_LIMIT, Model, binarized_tables, check_refilterable, distortion_limit_text, load_model, refiltered, table_path,
)
from fstdecode.run import SerialRunner, decode_filtered, decode_lines
from fstdecode.model.distortion import SEMANTICS
from fstdecode.search.base import DEFAULT_MAX_STATES, METHODS

DESCRIPTION = (
    "Exact phrase-based machine translation decoding under a hard distortion limit "
    "(Chang & Collins 2017), with Moses models and OpenFst cascades."
)


def _model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model (flags override moses.ini; no model flags = the built-in example)")
    g.add_argument("-f", "--config", metavar="moses.ini", help="Moses configuration file")
    g.add_argument("--phrase-table", metavar="FILE", help="Moses phrase table (plain or .gz)")
    g.add_argument("--lm", metavar="FILE", help="language model: ARPA (plain or .gz), or a KenLM binary (probing or trie)")
    g.add_argument("--lm-order", type=int, metavar="N", help="read the LM up to order N, a truncation for experiments (default: the file's order, as in Moses, whose KENLM order= is not a truncation)")
    g.add_argument(
        "--distortion-limit", "-d", type=int, metavar="D",
        help=f"hard distortion limit; -1: no limit, as in Moses (default: moses.ini's, else {DEFAULT_DISTORTION_LIMIT})",
    )
    weight = g.add_argument(
        "--weight", action="append", default=[], metavar="NAME=VALUE",
        help="feature weight, repeatable: lm, tm (comma list, one per table column), distortion, word, phrase, "
        "unknown, lr (comma list, one per LexicalReordering feature) "
        "(default: moses.ini's, else lm=1 tm=1 distortion=1 word=0 phrase=0 unknown=1)",
    )
    p.set_defaults(weight_flag=weight.option_strings[0])  # named in the weights' errors
    g.add_argument(
        "--distortion-semantics", choices=SEMANTICS,
        help="moses: Moses' distortion limit rule, no jump into </s>; paper: Chang & Collins' (every jump, "
        "</s> included, at most d). Default: moses for a moses.ini, else paper. Every method searches both",
    )
    g.add_argument(
        "--tm-score-format", choices=SCORE_FORMATS,
        help="phrase-table scores are probabilities, natural logs or log10 (default: prob, as in Moses)",
    )
    g.add_argument(
        "--table-limit", type=int, metavar="K",
        help="keep the K best translations per source phrase (default: moses.ini's, else 0 = all)",
    )


def _output_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("output and input (as Moses' flags of the same names)")
    g.add_argument(
        "--print-alignment-info", "-print-alignment-info", action="store_true",
        help="add the word alignment (source-target positions, from the phrase table's alignment field; "
        "an unknown word is aligned to itself): text 'translation ||| 0-0 1-1', json field 'alignment', "
        "nbest in its last field (default: on if moses.ini has [print-alignment-info] or "
        "[print-alignment-info-in-n-best])",
    )
    g.add_argument(
        "--alignment-output-file", "-alignment-output-file", metavar="FILE",
        help="write the best derivation's word alignment to FILE, one line per input line",
    )
    g.add_argument(
        "--show-weights", "-show-weights", action="store_true",
        help="print each feature's name and weights as Moses does ('KENLM0= 0.500000', in Moses' order, "
        "the names of the n-best lists), then exit",
    )
    g.add_argument(
        "--xml-input", "-xml-input", choices=XML_INPUT_MODES, default=None,
        help="XML markup in the input, <np translation=\"a||b\" prob=\"0.8\">src</np>: exclusive (only the "
        "given translations for the span), inclusive (added to the table's), ignore (markup removed), "
        "pass-through (no markup, the line is read as it is). Default: moses.ini's [xml-input], else pass-through",
    )


def _filter_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("big tables")
    g.add_argument(
        "--filter", action=argparse.BooleanOptionalAction, default=None,
        help="keep only the phrase-table entries whose source phrase occurs in the input, reading the table "
        "once per batch of --filter-chunk input lines, so memory is bounded by what the input needs "
        f"(default: on for a table file of {FILTER_THRESHOLD_BYTES // 2**20} MiB or more on disk, and for a "
        "binarized table: fstdecode binarize)",
    )
    g.add_argument(
        "--filter-chunk", type=int, default=DEFAULT_CHUNK_LINES, metavar="N",
        help=f"input lines per filtered batch (default: {DEFAULT_CHUNK_LINES:,})",
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fstdecode", description=DESCRIPTION)
    p.add_argument("--version", action="version", version=f"fstdecode {__version__}")
    loud = p.add_mutually_exclusive_group()
    loud.add_argument(
        "-v", "--verbose", action="count", default=0,
        help="log on stderr what is loaded and each line's outcome (-vv: debug); stdout holds results only",
    )
    loud.add_argument("-q", "--quiet", action="store_true", help="log errors only (no warnings) on stderr")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    dec = sub.add_parser(
        "decode",
        help="translate sentences from stdin, one per line",
        description="Translate the sentences on standard input, one whitespace-tokenized sentence per line, "
        "to standard output: exactly one output line (text, json) or entry group (nbest) per input line, "
        "in input order. A line over its search budget gets the best derivation found, marked not optimal "
        "(json: \"optimal\": false and a \"reason\"), with a warning on stderr.",
    )
    _model_args(dec)
    _filter_args(dec)
    dec.add_argument(
        "--method", choices=list(METHODS), default=DEFAULT_METHOD,
        help=f"search method (default: {DEFAULT_METHOD}); " + "; ".join(f"{m.name}: {m.summary}" for m in METHODS.values()),
    )
    dec.add_argument("--format", choices=output.FORMATS, default="text", help="output format (default: text)")
    _output_args(dec)
    running.add_run_flags(dec)
    add_search_flags(dec)
    comp = sub.add_parser(
        "compile",
        help="compile the phrase-table transducer P to an OpenFst file (for OpenFst tools and --phrase-fst; "
        "not a binarized model: see binarize)",
    )
    _model_args(comp)
    comp.add_argument("-o", "--output", required=True, metavar="P.fst", help="where to write P (symbol tables inside)")
    bina = sub.add_parser(
        "binarize",
        help="write a moses.ini's phrase table, reordering table and LM as memory-mapped files and a new "
        "moses.ini, so that a decode loads in seconds (not OpenFst machines: see compile)",
        description="Write DIR/moses.ini and the binarized files of the model that -f names: every phrase pair "
        "and reordering row (no table limit: it is applied at lookup, with the weights of the day) and the "
        "ARPA LM as an image (a KenLM binary LM is used as it is). Decoding DIR/moses.ini gives the text "
        "model's output. DIR is written atomically; an existing DIR is refused without --force.",
    )
    bina.add_argument("-f", "--config", required=True, metavar="moses.ini", help="the model to binarize")
    bina.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to write")
    bina.add_argument("--force", action="store_true",
                      help="replace DIR if it exists: an empty folder or a model binarize wrote, and none that holds a "
                      "file the model reads")
    bina.add_argument(
        "--tm-score-format", choices=SCORE_FORMATS, default="prob",
        help="how the phrase table's scores are written (as for decode; default prob)",
    )
    veri = sub.add_parser(
        "verify",
        help="check a binarized model's files against the checksums binarize wrote (each process that opens "
        "them checks them once too)",
    )
    veri.add_argument("folder", metavar="DIR", help="a folder fstdecode binarize wrote")
    insp = sub.add_parser("inspect", help="summarise an FST; print a lattice's best derivations")
    insp.add_argument("file", metavar="FILE")
    insp.add_argument("--nbest", type=int, default=3, metavar="K", help="best paths to print for a lattice (default 3)")
    insp.add_argument(
        "--search-graph", action="store_true",
        help="write a lattice (decode --method fst --lattice-dir) as Moses' -output-search-graph lines instead "
        "(one per hypothesis; docs/moses-outputs.md)",
    )
    insp.add_argument(
        "--id", type=int, metavar="N", help="the input line number in those lines (default: the file name's, e.g. 3.fst, else 0)"
    )
    srv = sub.add_parser(
        "serve",
        help="serve translations: Moses' XML-RPC (/RPC2) and an HTTP/JSON API (/translate), the model loaded once",
        description="Load the model once and serve it over HTTP: Moses' XML-RPC translate at /RPC2 (as "
        "mosesserver), JSON at /translate, /health and /metrics. Binds 127.0.0.1 unless --host says otherwise; "
        "SIGTERM drains the requests in flight, SIGHUP reloads the model (README.md, 'Translation server').",
    )
    _model_args(srv)
    serve_cli.add_flags(srv)
    from fstdecode.cli import tune as tune_cli  # (here, not at import: fstdecode moses builds no parser)

    tune_cli.add_flags(sub)
    demo = sub.add_parser("demo", help="decode the example sentence and show the DP at work")
    _model_args(demo)
    demo.add_argument("sentence", nargs="?", default="das muss unsere sorge gleichermaßen sein")
    demo.add_argument("--max-states", type=int, default=DEFAULT_MAX_STATES, metavar="N",
                      help=f"the signature DP's state budget (default {DEFAULT_MAX_STATES:,}); past it, an error")
    sub.add_parser(
        "moses", add_help=False,
        help="Moses' command line (also the fstdecode-moses command): fstdecode moses -f moses.ini "
        "[-n-best-list FILE N] [-threads N] ...; fstdecode moses -h lists its switches",
    )
    tsp = sub.add_parser(
        "tsp",
        help="solve a bandwidth-limited travelling-salesman path problem by decoding",
        description="Cheapest path from vertex 1 to vertex n visiting every vertex once, on a graph of "
        "bandwidth K, solved by the signature DP on a decoding instance (docs/complexity.md). "
        "Prints 'cost C' and 'tour 1 ... n'; exit status 1 when no such path exists.",
    )
    tsp.add_argument("file", metavar="FILE", help="edge list: one 'i j weight' per line, vertices 1..n, '#' comments")
    tsp.add_argument("--bandwidth", "-k", type=int, metavar="K", help="bandwidth k (default: the graph's, max |i - j|)")
    tsp.add_argument("--vertices", type=int, metavar="N", help="n, if larger than the largest vertex named in FILE")
    tsp.add_argument("--max-states", type=int, metavar="N", help="give up after N DP states")
    return p


def _load(args: argparse.Namespace, table=None, source_vocabulary=None):
    """The model the flags name (load_model checks their values)."""
    return load_model(
        args.config,
        table=table,
        source_vocabulary=source_vocabulary,
        phrase_table=args.phrase_table,
        lm=args.lm,
        distortion_limit=args.distortion_limit,
        weights=args.weight,
        tm_score_format=args.tm_score_format,
        table_limit=args.table_limit,
        lm_order=args.lm_order,
        distortion_semantics=args.distortion_semantics,
        ini_paths=getattr(args, "ini_paths", "ini"),
        honoured=getattr(args, "honoured", ()),
        weight_flag=args.weight_flag,
    )


def _decoder(args: argparse.Namespace, model: Model) -> Decoder:
    """The decoder the flags ask for, on ``model`` (logged with -v)."""
    logging.getLogger("fstdecode").info(
        "model %s: %d phrase pairs, LM order %d, %s", model.name, len(model.table),
        model.lm.order, distortion_limit_text(model.distortion_limit),
    )
    listed = args.format == "nbest" or getattr(args, "nbest_file", False)
    nbest = (model.nbest_size or 1) if listed else 1
    unique = model.nbest_distinct and listed
    options = search_options(args.method, args, nbest=nbest, unique=unique)
    _check_phrase_length(args, model)
    moses = getattr(args, "moses_output", None)
    lines = moses.nbest_setting() if moses is not None else None
    return Decoder(model, args.method, options, xml_input=args.xml_input, moses_nbest=lines)


def _check_phrase_length(args: argparse.Namespace, model: Model) -> None:
    """``-max-phrase-length N`` (fstdecode moses): honoured when no source phrase is longer;
    fstdecode does not drop a table's longer phrases, so it refuses the run otherwise."""
    limit = getattr(args, "max_phrase_length", None)
    if limit is not None and model.table.max_source_len > limit:
        raise FstdecodeError(
            f"-max-phrase-length {limit}: the phrase table holds source phrases of {model.table.max_source_len} "
            "words, which fstdecode would not drop as Moses does; filter the table, or give a larger limit"
        )


def _filtering(args: argparse.Namespace) -> bool:
    """Whether to filter the table to the input: the flag, else whether the table file is big or
    binarized (whose lookups of the input's n-grams cost far less than reading it whole)."""
    check_min("--filter-chunk", args.filter_chunk, 1)
    if args.filter_chunk is None:
        args.filter_chunk = DEFAULT_CHUNK_LINES
    if getattr(args, "phrase_fst", None):
        if args.filter:
            raise FstdecodeError("--filter reads a text phrase table; --phrase-fst gives a compiled one")
        return False
    if args.filter is not None:
        return args.filter
    path = table_path(args.config, args.phrase_table, getattr(args, "ini_paths", "ini"))
    try:
        return path is not None and (is_mapped_table(path) or os.path.getsize(path) >= FILTER_THRESHOLD_BYTES)
    except OSError:
        return False  # the loader says what is wrong with the file


class _FilteredDecoders:
    """The decoder of each input batch: the model read with the first batch's filter, then re-filtered."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.model: Model | None = None

    def __call__(self, keep: SourceFilter) -> Decoder:
        if self.model is None:
            self.model = _load(self.args, source_vocabulary=keep)
            check_refilterable(self.model)  # before the first batch is written
        else:
            self.model = refiltered(self.model, keep)
        return _decoder(self.args, self.model)


#: moses.ini output sections that change Moses' 1-best line: ``decode`` writes its own formats,
#: so it refuses them and points to ``fstdecode moses``, which writes Moses' line.
_MOSES_LINE_SECTIONS = ("mark-unknown", "report-segmentation", "print-id", "output-hypo-score", "start-translation-id")


def _ini_outputs(args: argparse.Namespace) -> MosesOutput | None:
    """What a moses.ini's output sections ask of ``decode``: the [n-best-list] file (written in
    Moses' format, with [include-segmentation-in-n-best], [print-alignment-info-in-n-best] and
    [labeled-n-best-list]), [alignment-output-file] and [output-unknowns] (the flags win), its
    [xml-input] mode when --xml-input is not given; None when there is nothing to write beside
    the output. Sections that change Moses' 1-best line are refused (use fstdecode moses)."""
    xml_given = args.xml_input is not None
    if not xml_given:
        args.xml_input = "pass-through"
    if args.config is None:
        return None
    cfg = load_moses_ini(args.config)
    other = cfg.other
    for name in _MOSES_LINE_SECTIONS:
        if name in other and _ini_flag(other, name, default=name == "start-translation-id"):
            raise FstdecodeError(f"{args.config}: [{name}] changes Moses' 1-best line, which fstdecode decode does not "
                                 "write; decode with fstdecode moses -f (Moses' output), or remove the section")
    if "input-file" in other:
        raise FstdecodeError(f"{args.config}: [input-file]: fstdecode decode reads standard input; fstdecode moses "
                             "reads [input-file], or remove the section")
    if "xml-input" in other and not xml_given:
        mode = " ".join(other["xml-input"]).strip()
        if mode not in XML_INPUT_MODES:
            raise FstdecodeError(f"{args.config}: [xml-input] {mode}: choose {', '.join(XML_INPUT_MODES)}")
        args.xml_input = mode
    if "show-weights" in other and _ini_flag(other, "show-weights"):
        args.show_weights = True
    alignment = args.alignment_output_file or _ini_value(other, "alignment-output-file")
    unknowns = _ini_value(other, "output-unknowns")
    if cfg.nbest_path is None and alignment is None and unknowns is None:
        return None
    args.alignment_output_file = None  # written by the MosesOutput now
    return MosesOutput(
        nbest_path=cfg.nbest_path, nbest_size=cfg.nbest_size or 0, distinct=cfg.nbest_distinct,
        include_segmentation=_ini_flag(other, "include-segmentation-in-n-best"),
        nbest_alignment=_ini_flag(other, "print-alignment-info-in-n-best"),
        labeled=_ini_flag(other, "labeled-n-best-list", default=True),
        alignment_file=alignment, unknowns_file=unknowns, side_only=True,
    )


def _ini_flag(other, name: str, default: bool = False) -> bool:
    """A moses.ini boolean section: absent ``default``; bare true; else its word."""
    if name not in other:
        return default
    return moses_boolean(" ".join(other[name]).split(), name)


def _ini_value(other, name: str) -> str | None:
    """A moses.ini section of one value (a path), or None."""
    if name not in other:
        return None
    words = " ".join(other[name]).split()
    if len(words) != 1:
        raise FstdecodeError(f"[{name}] takes one value (a file), found {len(words)}")
    return words[0]


def _cmd_decode(args: argparse.Namespace, moses: MosesOutput | None = None) -> int:
    """``decode`` (and ``moses``, with Moses' output settings ``moses``): decode the input lines
    and write one result per line, in order, with the side files the flags and the moses.ini
    ask for."""
    if moses is None:
        moses = _ini_outputs(args)
        args.nbest_file = moses is not None and moses.nbest_path is not None
    args.moses_output = moses  # (the decoder writes Moses' n-best lines: _decoder)
    streams.check_standard_input()
    runner = running.runner(args)
    lines, total, done = running.input_range(args, runner)  # before the model loads: a bad --shard or --resume fails at once
    in_moses = moses is not None and not moses.side_only
    if in_moses and not args.show_weights:
        sys.stderr.write(moses_output.loading_lines(moses))
    if args.show_weights and _filtering(args):  # the names and weights need no table entries
        model = _load(args, source_vocabulary=SourceFilter(()))  # (a mapped table too keeps nothing)
        sys.stdout.write("".join(line + "\n" for line in model.show_weights()))
        return 0
    if _filtering(args):
        decoders = _FilteredDecoders(args)
        results = lambda progress: decode_filtered(decoders, lines, runner, args.filter_chunk, progress)  # noqa: E731
        current = lambda: decoders.model  # noqa: E731 (the model of the batch being written)
    else:
        table = None
        if getattr(args, "phrase_fst", None):
            from fstdecode.fst.searcher import compiled_table

            table = compiled_table(args.phrase_fst)
        model = _load(args, table)
        if args.show_weights:
            sys.stdout.write("".join(line + "\n" for line in model.show_weights()))
            return 0
        decoder = _decoder(args, model)
        results = lambda progress: decode_lines(decoder, lines, runner, progress)  # noqa: E731
        current = lambda: model  # noqa: E731
    if in_moses:
        sys.stderr.write(moses_output.loaded_line(moses, os.times().user))
    out = running.output_stream(args)
    if out is not sys.stdout:
        out = streams.Guarded(out, args.resume)
    sides = _side_outputs(args, moses)
    writers = None
    written = done
    # SIGTERM and SIGHUP stop the workers (not the process alone), after the result being written.
    stop = stopping.StopOnSignals(active=not isinstance(runner, SerialRunner))
    with stop:
        try:
            flag = False if args.quiet and args.progress is None else args.progress
            with progress_bar(flag, total=total, initial=done) as bar:
                # The bar counts the lines of chunks as they finish decoding (told by the runner), not
                # the lines written, which wait for the chunks before them.
                for result in results(bar.completed if bar.active else None):
                    with stop.held():  # written whole, to the output and every side file
                        if writers is None:  # the weights and features are the same for every batch
                            writers = _writers(args, moses, current(), out, sides)
                        _report(result, moses_output.FAILED_LINE if in_moses else output.FAILED_LINE,
                                moses_output.moses_reason if in_moses else str)
                        for stream, write in writers:
                            stream.write(write(result))
                            stream.flush()
                        written += 1
                        bar.written(result)
        except stopping.Terminated as e:
            e.written = written
            raise
        finally:
            with stop.held():  # a signal now waits for the workers to be stopped
                runner.close()
            try:
                if out is not sys.stdout:
                    out.close()
            finally:
                for stream in sides.values():
                    stream.close()
    return 0


def _side_outputs(args: argparse.Namespace, moses: MosesOutput | None) -> dict[str, streams.Guarded]:
    """The files written beside the output, opened before decoding (a bad path fails at once):
    the alignment file, and ``moses``' n-best list and unknown words."""
    paths = {"alignments": args.alignment_output_file}
    if moses is not None:  # (decode's side files from the moses.ini are a side-only MosesOutput)
        paths = {
            "alignments": moses.alignment_file,
            "nbest": None if moses.nbest_on_stdout else moses.nbest_path,
            "unknowns": moses.unknowns_file,
        }
    flags = {"alignments": "alignment-output-file", "nbest": "n-best-list", "unknowns": "output-unknowns"}
    sides: dict[str, streams.Guarded] = {}
    try:
        for key, path in paths.items():
            if path:
                sides[key] = streams.open_output(path, ("-" if moses and not moses.side_only else "--") + flags[key])
    except BaseException:
        for stream in sides.values():
            stream.close()
        raise
    return sides


def _alignment_line(result: DecodeResult) -> str:
    """decode's ``--alignment-output-file`` line: the best derivation's points, space-separated."""
    return (result.best.alignment_text() if result.best else "") + "\n"


def _writers(args: argparse.Namespace, moses: MosesOutput | None, model: Model, out, sides) -> list:
    """(stream, function from a result to its text) for the output and each side file."""
    layout = tuple(model.features)
    if moses is None or moses.side_only:
        write = output.writer(args.format, model.features, args.print_alignment_info or model.print_alignment, model.weights)
        main_writer = [(out, write)]
    elif moses.nbest_on_stdout:
        main_writer = [(out, lambda result: moses_output.nbest(result, layout, moses))]
    else:
        main_writer = [(out, lambda result: moses_output.one_best(result, moses))]
    if moses is not None and not moses.side_only and moses.best_line:  # Moses' -v 1 and above, on stderr
        main_writer.append((sys.stderr, lambda result: moses_output.best_translation(result, layout, moses)))
    side = {
        "alignments": moses_output.alignment_line if moses is not None and not moses.side_only else _alignment_line,
        "nbest": lambda result: moses_output.nbest(result, layout, moses),
        "unknowns": moses_output.unknowns_line,
    }
    return main_writer + [(stream, side[key]) for key, stream in sides.items()]


def _report(result: DecodeResult, failed: str = output.FAILED_LINE, words: Callable[[str], str] = str) -> None:
    """Say on stderr what the output line alone does not: a failed line (``failed`` says what
    its output holds), or one over budget, each as ``words`` puts it (the command's flags); with
    -v, every line's outcome."""
    log = logging.getLogger("fstdecode")
    if result.error is not None:
        log.warning("line %d: %s; %s", result.id + 1, words(result.error), failed)
    elif result.reason is not None:
        log.warning("line %d: %s", result.id + 1, words(result.reason))
    else:
        log.info(
            "line %d: %d derivation(s), %s, %d states, %.3f s", result.id + 1, len(result.derivations),
            "optimal" if result.optimal else "not proven optimal", result.stats.states, result.stats.seconds,
        )


def _cmd_serve(args: argparse.Namespace) -> int:
    """``serve``: a model whose tables are all binarized is loaded with none of their pairs and
    filtered to each sentence (start-up is instant whatever their size); any other is loaded whole."""
    if binarized_tables(args.config, args.phrase_table, getattr(args, "ini_paths", "ini")):
        return serve_cli.run(args, lambda: _load(args, source_vocabulary=SourceFilter(())), per_sentence=True)
    return serve_cli.run(args, lambda: _load(args))


def _cmd_tune(args: argparse.Namespace) -> int:
    """``tune``: the dev set decoded as ``fstdecode moses`` decodes it (its flags, its model loading)."""
    from fstdecode.cli import tune as tune_cli
    from fstdecode.cli.moses import moses_args

    def decode_args(words: list[str]) -> argparse.Namespace:
        found, moses = moses_args(words)
        found.moses_output = moses  # (the decoder writes Moses' n-best lines: _decoder)
        return found

    return tune_cli.run(args, decode_args, lambda a, keep: _load(a, source_vocabulary=keep), _decoder)


def _cmd_demo(args: argparse.Namespace) -> int:
    from fstdecode.research.demo import run_demo

    try:
        args.sentence.encode("utf-8")
    except UnicodeEncodeError as e:  # argv's undecodable bytes arrive as lone surrogates
        raise FstdecodeError(f"demo: the sentence is not valid UTF-8 (at character {e.start + 1})") from None
    check_min("--max-states", args.max_states, 1)
    run_demo(_load(args), args.sentence, sys.stdout, args.max_states)
    return 0


def _cmd_compile(args: argparse.Namespace) -> int:
    from fstdecode.fst.tools import compile_phrase_fst

    p = compile_phrase_fst(_load(args), args.output)
    print(f"wrote {args.output}: {p.num_states()} states, {sum(p.num_arcs(q) for q in p.states())} arcs", file=sys.stderr)
    return 0


def _cmd_binarize(args: argparse.Namespace) -> int:
    from fstdecode.model.binarize import BinarizeOptions, binarize

    done = binarize(BinarizeOptions(args.config, args.output, force=args.force, tm_score_format=args.tm_score_format))
    sizes = ", ".join(f"{name} {size / 2**20:,.1f} MiB" for name, size in done.files)
    print(f"wrote {done.out}: {sizes} in {done.seconds:.1f} s", file=sys.stderr)
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from fstdecode.io.binarized import BinarizedFileError, verify_folder

    for name, checksum in verify_folder(args.folder, BinarizedFileError):
        print(f"{os.path.join(args.folder, name)}: OK (CRC-32C {checksum.crc:08x}, {checksum.size:,} bytes)")
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    from fstdecode.fst.tools import inspect

    check_min("--nbest", args.nbest, 1)
    if args.search_graph:
        from fstdecode.fst.search_graph import SearchGraphError, search_graph_lines
        from fstdecode.fst.tools import read_fst

        stem = os.path.splitext(os.path.basename(args.file))[0]
        sentence = args.id if args.id is not None else int(stem) if stem.isdigit() else 0
        try:
            lines = search_graph_lines(read_fst(args.file), sentence)
        except SearchGraphError as e:
            raise SearchGraphError(f"{args.file}: {e}") from None
        sys.stdout.write("".join(line + "\n" for line in lines))
        return 0
    inspect(args.file, sys.stdout, args.nbest)
    return 0


def _cmd_tsp(args: argparse.Namespace) -> int:
    from fstdecode.research.tsp import read_graph, solve_tsp

    check_min("--bandwidth", args.bandwidth, 0)
    check_min("--vertices", args.vertices, 1)
    check_min("--max-states", args.max_states, 1)
    graph = read_graph(args.file, vertices=args.vertices, bandwidth=args.bandwidth)
    k = graph.bandwidth if args.bandwidth is None else args.bandwidth
    best = solve_tsp(graph, k, max_states=args.max_states)
    print(f"n={graph.n} bandwidth={k} d={best.d}: {best.states} states, {best.transitions} transitions", file=sys.stderr)
    if best.cost is None:
        print(f"no tour: no path from 1 to {graph.n} visits every vertex once")
        return 1
    print(f"cost {best.cost:.12g}")
    print("tour " + " ".join(map(str, best.tour)))
    return 0


COMMANDS = {
    "decode": _cmd_decode, "demo": _cmd_demo, "compile": _cmd_compile, "binarize": _cmd_binarize,
    "inspect": _cmd_inspect, "tsp": _cmd_tsp, "serve": _cmd_serve, "verify": _cmd_verify, "tune": _cmd_tune,
}


def _setup_logging(verbose: int, quiet: bool = False) -> None:
    """The ``fstdecode`` logger on stderr: warnings by default, errors only with -q, info with -v,
    debug with -vv. Nothing is ever logged on stdout."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("fstdecode: %(levelname)s: %(message)s"))
    log = logging.getLogger("fstdecode")
    log.handlers[:] = [handler]
    level = logging.ERROR if quiet else logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING
    log.setLevel(level)
    log.propagate = False
    logging.addLevelName(logging.WARNING, "warning")
    logging.addLevelName(logging.INFO, "info")
    logging.addLevelName(logging.DEBUG, "debug")


#: What an old script that still passes ``--engine`` is told (exit 2).
ENGINE_REMOVED = (
    "--engine was removed: every method runs in the native core "
    "(the Python searches are reference oracles for the tests)"
)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: ``fstdecode COMMAND ...``; its exit status. A Ctrl-C at any point, the
    parsing of the flags included, ends it with 130 and no traceback."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return 130


def _main(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    options = words[: words.index("--")] if "--" in words else words
    if any(w == "--engine" or w.startswith("--engine=") for w in options):
        print(f"fstdecode: error: {ENGINE_REMOVED}", file=sys.stderr)
        return 2
    if words[:1] == ["moses"]:
        return _run(lambda: _cmd_moses(words[1:]))
    args = _parser().parse_args(argv)
    _setup_logging(args.verbose, args.quiet)
    return _run(lambda: COMMANDS[args.command](args))


def _cmd_moses(words: list[str]) -> int:
    """``fstdecode moses``: Moses' switches (:mod:`fstdecode.cli.moses`) over ``decode``."""
    from fstdecode.cli.moses import USAGE, moses_args

    if any(w in ("-h", "-help", "--help") for w in words):
        sys.stdout.write(USAGE)
        return 0
    _setup_logging(0)
    args, opts = moses_args(words)
    _setup_logging(args.verbose, args.quiet)
    if args.input_file is None:
        return _cmd_decode(args, opts)
    saved = sys.stdin
    try:
        sys.stdin = open(args.input_file, "rb")
    except OSError as e:
        raise FstdecodeError(f"input file {args.input_file} cannot be read: {e.strerror}") from None
    args.input_name = args.input_file
    try:
        return _cmd_decode(args, opts)
    finally:
        sys.stdin.close()
        sys.stdin = saved


def _run(command) -> int:
    """Run ``command()`` with fstdecode's error handling: one ``fstdecode: error:`` line and exit 2
    for a bad file or flag, 130 on Ctrl-C, quiet on a closed pipe."""
    saved = sys.stdout
    try:
        if hasattr(sys.stdout, "reconfigure"):  # write UTF-8, as the input and model files are
            sys.stdout.reconfigure(encoding="utf-8")
        sys.stdout = streams.standard_output()  # a failed write names it (print() included)
        status = command()
        _poll_interrupt()
        return status
    except FstdecodeError as e:
        print(f"fstdecode: error: {e}", file=sys.stderr)
        streams.drop_unwritten_output()
        return 2
    except BrokenPipeError:  # `| head`: stop quietly, and keep Python from complaining at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno())
        return 0
    except OSError as e:  # out of file descriptors (ulimit -n, --workers N): a limit to raise, not a bug
        if not running.out_of_files(e):
            raise
        print(f"fstdecode: error: {running.out_of_files(e)}", file=sys.stderr)
        streams.drop_unwritten_output()
        return 2
    except KeyboardInterrupt:
        return 130
    except stopping.Terminated as e:  # SIGTERM, SIGHUP: the workers are stopped, the lines before them written
        done = "" if e.written is None else f", with the results of the first {e.written} input line(s) written"
        logging.getLogger("fstdecode").warning("stopped by %s%s; the workers are stopped", e, done)
        return e.status
    finally:
        sys.stdout = saved
        # A Ctrl-C after this point finds the run over: keep it from printing a traceback at exit.
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _poll_interrupt() -> None:
    """Give a pending Ctrl-C its KeyboardInterrupt now (Python raises it on a call).

    A Ctrl-C that arrives with the end of the input wakes the read with end-of-file rather
    than an interruption; without a call before ``main`` returns, it would surface only in the
    interpreter's shutdown, as an ignored exception with status 0.
    """


if __name__ == "__main__":
    sys.exit(main())
