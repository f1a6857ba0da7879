"""The command line: a thin layer over :mod:`fstdecode.decoder` and friends.

    fstdecode decode [-f moses.ini] [--phrase-table F] [--lm F] ... < input > output
    fstdecode demo

Errors in files or flags print one ``fstdecode: error: ...`` line naming
the file and line, and exit with status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import sys
from typing import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from fstdecode.cli import output
from fstdecode.decoder import METHODS, DecodeResult, Decoder
from fstdecode.search import signature_beam
from fstdecode.errors import FstdecodeError
from fstdecode.model.model import empty_table, load_model
from fstdecode.io.phrase_table import SCORE_FORMATS

if TYPE_CHECKING:  # only for annotations: pynini loads when --source-grammar is used
    import pynini

    from fstdecode.fst.phrase_fst import PhraseFst
    from fstdecode.model.model import Model


def _model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model (flags override moses.ini; no model flags = built-in example)")
    g.add_argument("-f", "--config", metavar="moses.ini", help="Moses configuration file")
    g.add_argument("--phrase-table", metavar="FILE", help="Moses phrase table (plain or .gz)")
    g.add_argument("--lm", metavar="FILE", help="ARPA language model")
    g.add_argument("--lm-order", type=int, metavar="N", help="read the LM up to order N")
    g.add_argument("--distortion-limit", "-d", type=int, metavar="D", help="hard distortion limit d >= 0")
    g.add_argument(
        "--weight",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="feature weight, repeatable: lm, tm (comma list), distortion, word, phrase, unknown",
    )
    g.add_argument(
        "--tm-score-format",
        choices=SCORE_FORMATS,
        help="phrase-table scores are probabilities (default, as Moses), natural logs or log10",
    )
    g.add_argument("--table-limit", type=int, metavar="K", help="keep the K best translations per source phrase")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fstdecode", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    dec = sub.add_parser("decode", help="translate sentences from stdin, one per line")
    _model_args(dec)
    dec.add_argument("--method", choices=list(METHODS), default="dp", help="search method (default: dp)")
    dec.add_argument("--format", choices=output.FORMATS, default="text", help="output format (default: text)")
    dec.add_argument("--nbest", type=int, default=None, metavar="K", help="K best derivations per sentence")
    dec.add_argument("--max-states", type=int, metavar="N", help="give up on a sentence after N states")
    dec.add_argument("--threads", type=int, default=1, metavar="N", help="decode in N worker processes")
    beams = dec.add_argument_group("beam search (--method beam | stack)")
    beams.add_argument("--beam-size", type=int, metavar="K", help="histogram pruning: keep K states per step")
    beams.add_argument("--beam-threshold", type=float, metavar="W", help="threshold pruning: drop states W below the best")
    beams.add_argument(
        "--beam-heuristic", dest="heuristic", choices=signature_beam.HEURISTICS,
        help=f"beam: the estimate β that ranks states (default {signature_beam.DEFAULT_HEURISTIC})",
    )
    beams.add_argument("--distortion-estimate", action="store_true", help="stack: Moore & Quirk's distortion estimation")
    beams.add_argument("--early-pruning", action="store_true", help="stack: Moore & Quirk's early pruning")
    beams.add_argument(
        "--early-threshold", type=float, metavar="W",
        help="stack: early pruning's threshold (default: --beam-threshold, else ln 1e5)",
    )
    fsts = dec.add_argument_group("WFST cascade (--method fst)")
    fsts.add_argument("--phrase-fst", metavar="FILE", help="P compiled by `fstdecode compile` (instead of the text table)")
    fsts.add_argument("--lattice-dir", metavar="DIR", help="write each sentence's lattice I∘P∘R∘L as DIR/<id>.fst")
    fsts.add_argument("--lattice-prune", type=float, metavar="W", help="prune lattices to paths within cost W of the best")
    fsts.add_argument("--nbest-unique", action="store_true", help="n-best with distinct translations")
    fsts.add_argument(
        "--source-grammar",
        metavar="FILE.far[:NAME]",
        help="add the phrase pairs of a string transducer in a FAR (NAME: its first FST) to P",
    )
    comp = sub.add_parser("compile", help="compile the phrase-table transducer P to an OpenFst file")
    _model_args(comp)
    comp.add_argument("-o", "--output", required=True, metavar="P.fst", help="where to write P (symbol tables inside)")
    insp = sub.add_parser("inspect", help="summarise an FST; print a lattice's best derivations")
    insp.add_argument("file", metavar="FILE")
    insp.add_argument("--nbest", type=int, default=3, metavar="K", help="best paths to print for a lattice (default 3)")
    demo = sub.add_parser("demo", help="decode the example sentence and show the DP at work")
    _model_args(demo)
    demo.add_argument("sentence", nargs="?", default="das muss unsere sorge gleichermaßen sein")
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


def _check_min(flag: str, value: int | None, minimum: int) -> None:
    """Refuse an out-of-range numeric flag up front (rather than ignore or misread it)."""
    if value is not None and value < minimum:
        raise FstdecodeError(f"{flag} must be >= {minimum}, got {value}")


def _load(args: argparse.Namespace, phrase_fst=None):
    _check_min("--distortion-limit", args.distortion_limit, 0)
    _check_min("--lm-order", args.lm_order, 1)
    _check_min("--table-limit", args.table_limit, 0)
    return load_model(
        args.config,
        table=empty_table(args.phrase_fst, phrase_fst.num_scores) if phrase_fst else None,
        phrase_table=args.phrase_table,
        lm=args.lm,
        distortion_limit=args.distortion_limit,
        weights=args.weight,
        tm_score_format=args.tm_score_format,
        table_limit=args.table_limit,
        lm_order=args.lm_order,
    )


_WORKER: Decoder | None = None


def _init_worker(decoder: Decoder) -> None:
    global _WORKER
    _WORKER = decoder


def _decode_in_worker(item: tuple[int, str]) -> DecodeResult:
    assert _WORKER is not None  # set by _init_worker (internal invariant, not user input)
    return _WORKER.decode(item[1], id=item[0])


def decode_lines(decoder: Decoder, lines: Iterable[str], threads: int = 1) -> Iterator[DecodeResult]:
    """Decode ``lines`` in order, one result per line, in ``threads`` worker processes."""
    items = enumerate(line.rstrip("\n") for line in lines)
    if threads <= 1:
        for i, line in items:
            yield decoder.decode(line, id=i)
        return
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(threads, initializer=_init_worker, initargs=(decoder,)) as pool:
        yield from pool.imap(_decode_in_worker, items, chunksize=1)


def _utf8_lines(stream) -> Iterator[str]:
    """The lines of ``stream`` decoded as UTF-8 (as the model files are), whatever the locale.

    Raises FstdecodeError naming the line on invalid UTF-8 (instead of a traceback,
    or of silently misread words under a non-UTF-8 locale).
    """
    raw = getattr(stream, "buffer", None)
    if raw is None:  # an in-memory text stream (tests, embedding)
        yield from stream
        return
    for no, line in enumerate(raw, 1):
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError as e:
            raise FstdecodeError(
                f"<stdin>:{no}: invalid UTF-8 at byte {e.start + 1} of the line; the input must be UTF-8"
            ) from None


def _cmd_decode(args: argparse.Namespace) -> int:
    _check_min("--nbest", args.nbest, 1)
    _check_min("--max-states", args.max_states, 1)
    _check_min("--threads", args.threads, 1)
    _check_min("--beam-size", args.beam_size, 1)
    phrase_fst = None
    if args.phrase_fst:
        from fstdecode.fst.phrase_fst import read_phrase_fst

        phrase_fst = read_phrase_fst(args.phrase_fst)
    model = _load(args, phrase_fst)
    if args.source_grammar:
        phrase_fst = with_source_grammar(args.source_grammar, model, phrase_fst, args.method)
    nbest = args.nbest if args.nbest is not None else (model_nbest(args) if args.format == "nbest" else 1)
    decoder = Decoder(
        model,
        args.method,
        nbest=nbest,
        max_states=args.max_states,
        phrase_fst=phrase_fst,
        lattice_dir=args.lattice_dir,
        lattice_prune=args.lattice_prune,
        unique=args.nbest_unique,
        beam_size=args.beam_size,
        beam_threshold=args.beam_threshold,
        heuristic=args.heuristic,
        distortion_estimate=args.distortion_estimate,
        early_pruning=args.early_pruning,
        early_threshold=args.early_threshold,
    )
    out = sys.stdout
    for result in decode_lines(decoder, _utf8_lines(sys.stdin), args.threads):
        if args.format == "text":
            out.write(output.text(result) + "\n")
        elif args.format == "json":
            out.write(output.json_line(result) + "\n")
        else:
            out.write("".join(line + "\n" for line in output.nbest_lines(result, model.weights)))
        out.flush()
    return 0


def _split_grammar_spec(spec: str) -> tuple[str, str | None]:
    """``FILE.far[:NAME]`` -> (file, name or None); a path that exists is taken whole."""
    if ":" in spec and not os.path.exists(spec):
        path, name = spec.rsplit(":", 1)
        return path, name or None
    return spec, None


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 (OpenFst's C++ ``ERROR:`` log) so the user sees one error line."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def read_source_grammar(spec: str) -> tuple[str, str, pynini.Fst]:
    """(file, name, FST): the FST ``NAME`` (default: the first) of the FAR in ``FILE.far[:NAME]``.

    Raises FstdecodeError naming the file when it is missing, is not a FAR,
    is empty or has no FST of that name.
    """
    import pynini

    path, name = _split_grammar_spec(spec)
    if not os.path.isfile(path):
        raise FstdecodeError(f"{path}: no such file (--source-grammar FILE.far[:NAME])")
    try:
        with _quiet_stderr():
            far = pynini.Far(path, mode="r")
    except Exception:  # pywrapfst's FstIOError and friends say only "Read failed"
        raise FstdecodeError(f"{path}: not a FAR archive that OpenFst can read") from None
    with far:
        keys = [key for key, _ in far]
        if not keys:
            raise FstdecodeError(f"{path}: the archive holds no FSTs")
        if name is None:
            name = keys[0]
        if name not in keys:
            raise FstdecodeError(f"{path}: no FST named {name!r} in the archive (it holds {', '.join(keys)})")
        return path, name, far[name]


def with_source_grammar(spec: str, model: Model, phrase_fst: PhraseFst | None = None, method: str = "fst") -> PhraseFst:
    """P (``phrase_fst``, else built from ``model``) with the pairs of the grammar ``FILE.far[:NAME]``.

    The grammar is an acyclic string transducer, source phrase -> target
    phrase; each pair scores as probability 1 (see ``grammar_pairs``) and
    costs what ``model.weights`` give it. Only ``--method fst`` uses P.
    """
    from fstdecode.fst.phrase_fst import build_phrase_fst, grammar_pairs

    if method != "fst":
        raise FstdecodeError("--source-grammar needs --method fst")
    path, name, grammar = read_source_grammar(spec)
    p = phrase_fst or build_phrase_fst(model.table, model.weights)
    try:
        return p.with_pairs(grammar_pairs(grammar, p.num_scores), model.weights)
    except FstdecodeError as e:
        raise FstdecodeError(f"{path}:{name}: {e}") from None


def model_nbest(args: argparse.Namespace) -> int:
    """The n-best size of ``--format nbest`` without ``--nbest``: the ini's [n-best-list], else 1."""
    if args.config:
        from fstdecode.io.moses_ini import load_moses_ini

        size = load_moses_ini(args.config).nbest_size
        if size:
            return size
    return 1


def _cmd_demo(args: argparse.Namespace) -> int:
    from fstdecode.research.demo import run_demo

    run_demo(_load(args), args.sentence, sys.stdout)
    return 0


def _cmd_compile(args: argparse.Namespace) -> int:
    from fstdecode.fst.tools import compile_phrase_fst

    p = compile_phrase_fst(_load(args), args.output)
    print(f"wrote {args.output}: {p.num_states()} states, {sum(p.num_arcs(q) for q in p.states())} arcs", file=sys.stderr)
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    from fstdecode.fst.tools import inspect

    inspect(args.file, sys.stdout, args.nbest)
    return 0


def _cmd_tsp(args: argparse.Namespace) -> int:
    from fstdecode.research.tsp import read_graph, solve_tsp

    _check_min("--bandwidth", args.bandwidth, 0)
    _check_min("--vertices", args.vertices, 1)
    _check_min("--max-states", args.max_states, 1)
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


COMMANDS = {"decode": _cmd_decode, "demo": _cmd_demo, "compile": _cmd_compile, "inspect": _cmd_inspect, "tsp": _cmd_tsp}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):  # write UTF-8, as the input and model files are
        sys.stdout.reconfigure(encoding="utf-8")
    try:
        return COMMANDS[args.command](args)
    except FstdecodeError as e:
        print(f"fstdecode: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
