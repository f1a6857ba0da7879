"""The command line: a thin layer over :mod:`fstdecode.decoder` and friends.

    fstdecode decode [-f moses.ini] [--phrase-table F] [--lm F] ... < input > output
    fstdecode demo

Errors in files or flags print one ``fstdecode: error: ...`` line naming
the file and line, and exit with status 2.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from typing import Iterable, Iterator, Sequence

from fstdecode import output
from fstdecode.decoder import METHODS, DecodeResult, Decoder
from fstdecode.errors import FstdecodeError
from fstdecode.model.model import load_model
from fstdecode.model.phrase_table import SCORE_FORMATS


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
    demo = sub.add_parser("demo", help="decode the example sentence and show the DP at work")
    _model_args(demo)
    demo.add_argument("sentence", nargs="?", default="das muss unsere sorge gleichermaßen sein")
    return p


def _load(args: argparse.Namespace):
    if args.distortion_limit is not None and args.distortion_limit < 0:
        raise FstdecodeError(f"--distortion-limit must be >= 0, got {args.distortion_limit}")
    return load_model(
        args.config,
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


def _cmd_decode(args: argparse.Namespace) -> int:
    model = _load(args)
    nbest = args.nbest or (model_nbest(args) if args.format == "nbest" else 1)
    decoder = Decoder(model, args.method, nbest=nbest, max_states=args.max_states)
    out = sys.stdout
    for result in decode_lines(decoder, sys.stdin, args.threads):
        if args.format == "text":
            out.write(output.text(result) + "\n")
        elif args.format == "json":
            out.write(output.json_line(result) + "\n")
        else:
            out.write("".join(line + "\n" for line in output.nbest_lines(result, model.weights)))
        out.flush()
    return 0


def model_nbest(args: argparse.Namespace) -> int:
    """The n-best size of ``--format nbest`` without ``--nbest``: the ini's [n-best-list], else 1."""
    if args.config:
        from fstdecode.model.moses_ini import load_moses_ini

        size = load_moses_ini(args.config).nbest_size
        if size:
            return size
    return 1


def _cmd_demo(args: argparse.Namespace) -> int:
    from fstdecode.demo import run_demo

    run_demo(_load(args), args.sentence, sys.stdout)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "decode":
            return _cmd_decode(args)
        return _cmd_demo(args)
    except FstdecodeError as e:
        print(f"fstdecode: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
