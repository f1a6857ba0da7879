"""``fstdecode tune``: tune a moses.ini's weights on a dev set, the model loaded once
(:mod:`fstdecode.tune`). The dev set decodes as ``fstdecode moses`` decodes it (Moses' search
settings from the ini and ``--decoder-flags``), to n-best lists kept in memory.

Every bad input is refused before any decoding, in one line: dev and reference line counts that
differ, an empty dev set, a reference that is not UTF-8, a working folder of another run, a model
with no tuneable weight, a moses.ini in Moses' old format.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import shlex
import sys
import time
from typing import Callable

import numpy as np

from fstdecode.cli import running
from fstdecode.cli.options import check_min
from fstdecode.cli.progress import progress_bar
from fstdecode.decoder import DecodeResult, Decoder
from fstdecode.errors import FstdecodeError
from fstdecode.io.files import read_lines
from fstdecode.io.moses_ini import DEFAULT_TABLE_LIMIT, load_moses_ini
from fstdecode.io.table_filter import SourceFilter
from fstdecode.model.model import Model, moses_ranker
from fstdecode.run import Line
from fstdecode.search.moses_nbest import supports
from fstdecode.tune.ini import check_writable, tuned_ini
from fstdecode.tune.loop import OPTIMIZERS, TuneError, TuneSettings, Tuner, fingerprint, read_references
from fstdecode.tune.mert import MertSettings
from fstdecode.tune.metric import METRICS, MetricSettings
from fstdecode.tune.mira import MiraSettings
from fstdecode.tune.space import WeightSpace

_LOG = logging.getLogger("fstdecode")

DEFAULTS = TuneSettings()


def add_flags(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``tune`` subcommand and its flags."""
    p = sub.add_parser(
        "tune", help="tune a moses.ini's weights on a dev set (MERT or k-best MIRA, sacrebleu's BLEU)",
        description="Tune the weights of a moses.ini on a dev set with its reference translations: each "
        "iteration decodes the dev set to n-best lists as fstdecode moses does (the model loaded once), merges "
        "them with the earlier ones and optimizes the weights on them (MERT, Och 2003, as Moses' mert; or batch "
        "k-best MIRA, Cherry & Foster 2012, as Moses' kbmira), until the maximum of iterations, no new n-best "
        "entry, or no weight moving (mert-moses.pl's rules). Writes a moses.ini with the tuned weights, which "
        "Moses, fstdecode moses and fstdecode decode load (README.md, 'Tuning').",
    )
    p.add_argument("-f", "--config", required=True, metavar="moses.ini", help="the model to tune")
    p.add_argument("--input", required=True, metavar="DEV.src", help="the dev set's source, one tokenized sentence per line")
    p.add_argument("--reference", required=True, action="append", metavar="DEV.ref",
                   help="its reference translations, one per line (repeat for several references)")
    p.add_argument("-o", "--output", required=True, metavar="tuned.ini", help="the moses.ini to write")
    p.add_argument("--optimizer", choices=OPTIMIZERS, default=DEFAULTS.optimizer,
                   help=f"mert (Moses' mert: line searches along the axes, random restarts) or mira (Moses' kbmira); "
                   f"default {DEFAULTS.optimizer}. PRO is not built")
    g = p.add_argument_group("metric (sacrebleu)")
    g.add_argument("--metric", choices=METRICS, default=DEFAULTS.metric.name, help="bleu (default) or chrf")
    g.add_argument("--tokenize", default=None,
                   help=f"sacrebleu's BLEU tokenizer (default: {DEFAULTS.metric.tokenize}, for text tokenized already as "
                   "Moses' is; BLEU only)")
    g.add_argument("--lowercase", action="store_true", help="compare lowercased (sacrebleu -lc)")
    g = p.add_argument_group("iterations")
    g.add_argument("--nbest", type=int, default=DEFAULTS.nbest, metavar="N",
                   help=f"n-best list size per line and iteration (default {DEFAULTS.nbest})")
    g.add_argument("--nbest-distinct", action=argparse.BooleanOptionalAction, default=DEFAULTS.distinct,
                   help="distinct translations only in the n-best lists (default: on)")
    g.add_argument("--max-iterations", type=int, default=DEFAULTS.max_iterations, metavar="N",
                   help=f"stop after N iterations (default {DEFAULTS.max_iterations}, as mert-moses.pl)")
    g.add_argument("--min-weight-change", type=float, default=DEFAULTS.min_change, metavar="X",
                   help=f"stop when no weight moves by X or more (default {DEFAULTS.min_change:g}, as mert-moses.pl)")
    g.add_argument("--seed", type=int, default=DEFAULTS.seed,
                   help=f"seed of every random draw (default {DEFAULTS.seed}); one seed gives one result")
    g.add_argument("--random-restarts", type=int, default=None, metavar="N",
                   help=f"mert: random starting points besides the current weights (default {DEFAULTS.mert.restarts})")
    g.add_argument("--random-directions", type=int, default=None, metavar="N",
                   help="mert: random directions per line-search round besides the axes (default "
                   f"{DEFAULTS.mert.random_directions})")
    g.add_argument("--mira-epochs", type=int, default=None, metavar="N",
                   help=f"mira: epochs per iteration (default {DEFAULTS.mira.epochs})")
    g.add_argument("--mira-c", type=float, default=None, metavar="C",
                   help=f"mira: the step cap C (default {DEFAULTS.mira.c:g})")
    g = p.add_argument_group("output and working folder")
    g.add_argument("--working-dir", metavar="DIR",
                   help="keep each iteration's n-best lists and weights here (default: OUTPUT's name + .work)")
    g.add_argument("--resume", action="store_true", help="go on from the iterations the working folder holds")
    g.add_argument("--plot", metavar="FILE.png", help="plot the metric and each weight by iteration (needs matplotlib)")
    g.add_argument("--decoder-flags", default="", metavar="'FLAGS'",
                   help="Moses flags for the decoder, as mert-moses.pl's --decoder-flags (e.g. '-s 100')")
    running.add_run_flags(p, input_flags=False)
    return p


#: Flags that apply to one optimizer or metric only: given with another, they are refused, not ignored.
_ONLY_WITH = {
    "random_restarts": ("optimizer", "mert"), "random_directions": ("optimizer", "mert"),
    "mira_epochs": ("optimizer", "mira"), "mira_c": ("optimizer", "mira"), "tokenize": ("metric", "bleu"),
}


def _settings(args: argparse.Namespace) -> TuneSettings:
    for name, (key, value) in _ONLY_WITH.items():
        if getattr(args, name) is not None and getattr(args, key) != value:
            flag = "--" + name.replace("_", "-")
            raise FstdecodeError(f"{flag} applies to --{key} {value} only, not --{key} {getattr(args, key)}")
    mert_settings = MertSettings(
        DEFAULTS.mert.restarts if args.random_restarts is None else args.random_restarts,
        DEFAULTS.mert.random_directions if args.random_directions is None else args.random_directions,
    )
    mira_settings = dataclasses.replace(
        DEFAULTS.mira, epochs=DEFAULTS.mira.epochs if args.mira_epochs is None else args.mira_epochs,
        c=DEFAULTS.mira.c if args.mira_c is None else args.mira_c,
    )
    for flag, value, low in (("--nbest", args.nbest, 1), ("--max-iterations", args.max_iterations, 1),
                             ("--random-restarts", mert_settings.restarts, 0),
                             ("--random-directions", mert_settings.random_directions, 0),
                             ("--mira-epochs", mira_settings.epochs, 1)):
        check_min(flag, value, low)
    if not args.min_weight_change >= 0:
        raise FstdecodeError(f"--min-weight-change must be >= 0, got {args.min_weight_change}")
    if not mira_settings.c > 0:
        raise FstdecodeError(f"--mira-c must be > 0, got {mira_settings.c}")
    tokenize = DEFAULTS.metric.tokenize if args.tokenize is None else args.tokenize
    return TuneSettings(
        optimizer=args.optimizer, metric=MetricSettings(args.metric, tokenize, args.lowercase), nbest=args.nbest,
        distinct=args.nbest_distinct, max_iterations=args.max_iterations, min_change=args.min_weight_change,
        seed=args.seed, mert=mert_settings, mira=mira_settings,
    )


def _dev_lines(path: str) -> list[str]:
    """The dev set's lines (read as the references are: read_lines), at least one."""
    out = read_lines(path, TuneError)
    if not out:
        raise TuneError(f"{path}: the dev set is empty: tuning needs at least one line")
    return out


def _table_limit(cfg, decode_args: argparse.Namespace) -> int:
    """The table limit the decoder applies (-ttable-limit, else the ini's table-limit=, Moses' 20
    by default); the model must have one phrase table, whose pairs tune ranks for each weight vector."""
    tables = cfg.phrase_tables()
    if len(tables) != 1:
        raise TuneError(f"{cfg.path}: {len(tables)} phrase tables; fstdecode tune tunes a model of one phrase table")
    if decode_args.table_limit is not None:
        return int(decode_args.table_limit)
    return tables[0].int_arg("table-limit", DEFAULT_TABLE_LIMIT)


def _stamps(cfg) -> dict[str, list[int]]:
    """Each model file the ini names, with its size and mtime: a working folder made with other
    files is another run."""
    out = {}
    for f in cfg.features:
        path = f.args.get("path")
        if path and os.path.exists(path):
            st = os.stat(path)
            out[path] = [st.st_size, st.st_mtime_ns]
    return out


def _check_plot(path: str | None) -> None:
    if path is None:
        return
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise FstdecodeError("--plot needs matplotlib: pip install 'matplotlib>=3.5'") from None


def run(args: argparse.Namespace, moses_args: Callable[[list[str]], argparse.Namespace],
        load: Callable[[argparse.Namespace, SourceFilter], Model],
        make_decoder: Callable[[argparse.Namespace, Model], Decoder]) -> int:
    """Tune (the CLI's model loading and decoder making passed in: ``fstdecode moses``'s)."""
    settings = _settings(args)
    _check_plot(args.plot)
    cfg = load_moses_ini(args.config, "cwd")
    check_writable(cfg)
    dev = _dev_lines(args.input)
    references = read_references(args.reference, len(dev))
    work = args.working_dir or args.output + ".work"
    with open(args.config, encoding="utf-8") as f:
        identity = fingerprint(f.read(), dev, references, settings)
    identity["decoder_flags"] = args.decoder_flags
    identity["model_files"] = _stamps(cfg)
    words = ["-f", args.config, "-n-best-list", os.devnull, str(settings.nbest)]
    words += ["distinct"] if settings.distinct else []
    decode_args = moses_args(words + shlex.split(args.decoder_flags))
    decode_args.verbose, decode_args.quiet = args.verbose, args.quiet
    runner = running.runner(args)
    started = time.perf_counter()
    # Moses ranks each source's pairs for its table limit with the weights it loads with, and
    # mert-moses.pl restarts it with new weights: so the dev's pairs are kept whole here and
    # ranked again for each iteration's weights.
    limit = _table_limit(cfg, decode_args)
    decode_args.table_limit = 0
    model = load(decode_args, SourceFilter(d.split() for d in dev))
    space = WeightSpace.of(model.features, model.weights)
    if decode_args.moses_output.nbest_setting() is None or not supports(model):
        raise TuneError(f"{args.config}: fstdecode tune reads the core's Moses n-best lines, which need one LM, one "
                        "phrase table of probabilities and Moses' distortion semantics; this model has more")
    _LOG.warning("tune: %d lines, %d weights (%s), %s on %s; loaded in %.1f s", len(dev), len(space),
                 " ".join(dict.fromkeys(space.names)), settings.optimizer, settings.metric.name,
                 time.perf_counter() - started)

    def decoder_for(weights) -> Decoder:
        table = model.table.limited(limit, moses_ranker(model.lm, weights)) if limit else model.table
        return make_decoder(decode_args, dataclasses.replace(model, weights=weights, table=table))

    def decode(decoder: Decoder) -> list[DecodeResult]:
        lines = [Line(i, text) for i, text in enumerate(dev)]
        with progress_bar(False if args.quiet else None, total=len(dev)) as bar:  # (on a terminal)
            return list(runner.map(decoder, lines, bar.completed) if bar.active else runner.map(decoder, lines))

    tuner = Tuner(model.weights, space, decoder_for, decode, dev, references, settings, work, identity,
                  report=lambda msg: print(f"fstdecode tune: {msg}", file=sys.stderr, flush=True))
    try:
        tuner.prepare(args.resume)
        state = tuner.run()
    finally:
        runner.close()
    best = tuner.final()
    weights = space.weights(np.array(best.weights), model.weights)
    header = (f"Tuned by fstdecode tune from {os.path.abspath(args.config)}: {settings.optimizer}, "
              f"{settings.metric.name} {best.decoded:.2f} on {os.path.abspath(args.input)} (the weights of "
              f"{best.source}, of {len(state.iterations)} iterations; stopped: {state.stopped}); sacrebleu "
              f"{tuner.metric.signature()}")
    text = tuned_ini(cfg, model.features, weights, header)
    with open(args.output + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(args.output + ".tmp", args.output)
    print(f"fstdecode tune: wrote {args.output}: {best.decoded_text} on the dev set (the weights of {best.source}), "
          f"{len(state.iterations)} iteration{'s' if len(state.iterations) != 1 else ''} in "
          f"{time.perf_counter() - started:.1f} s; stopped: {state.stopped}; "
          f"{tuner.metric.signature()}", file=sys.stderr)
    if args.plot:
        plot(state, space.names, settings.metric.name, args.plot)
    return 0


def plot(state, names, metric: str, path: str) -> None:
    """The metric (decoded and optimized) and each weight, by iteration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = [it.k for it in state.iterations]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    top.plot(ks, [it.decoded for it in state.iterations], marker="o", label="decoded (1-best)")
    top.plot(ks, [it.optimized for it in state.iterations], marker="x", label="optimized (on the pool)")
    top.set_ylabel(metric)
    top.legend(fontsize=8)
    top.grid(True, alpha=0.3)
    weights = np.array([it.weights for it in state.iterations])
    for j, name in enumerate(names):
        bottom.plot(ks, weights[:, j], marker=".", label=f"{name}[{j}]")
    bottom.set_xlabel("iteration")
    bottom.set_ylabel("weight (after the iteration)")
    bottom.legend(fontsize=7, ncol=2)
    bottom.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
