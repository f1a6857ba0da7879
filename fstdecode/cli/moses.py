"""``fstdecode moses`` (also the console script ``fstdecode-moses``): Moses' command line.

    fstdecode-moses -f moses.ini [-i input] [-n-best-list FILE N [distinct]] [-threads N|all] ...

It reads Moses' switches with Moses' meaning (moses/Parameter.cpp: one dash, a switch's values
up to the next switch, long or short names), over the moses.ini's sections of the same names,
and decodes with fstdecode's stack search under Moses' defaults (stack 200, beam threshold
1e-5 as a probability ratio, table limit 20). What it writes is Moses' bytes
(:mod:`fstdecode.cli.moses_output`). A switch that is not a Moses parameter, or one fstdecode
cannot honour, is an error naming it (exit 2); nothing is ignored silently (README.md, "Moses
compatibility", lists every section and switch).
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.io.moses_ini import MosesConfig, load_moses_ini, moses_boolean, parse_weight_overwrite
from fstdecode.io.moses_params import (
    HONOURED_SEARCH, MODEL, NO_EFFECT, NOT_IN_STACK_SEARCH, PARAMETERS, REFUSED, SEARCH, long_name,
)
from fstdecode.cli.moses_output import MosesOutput
from fstdecode.cli.running import worker_count
from fstdecode.run.base import DEFAULT_RETRIES
from fstdecode.search.base import MAX_INT_OPTION

__all__ = ["USAGE", "MosesArgsError", "parse_switches", "moses_args", "DEFAULT_STACK", "DEFAULT_BEAM_THRESHOLD"]

#: Moses' defaults (moses/TypeDef.h, StaticData): stack 200 hypotheses, beam threshold 1e-5.
DEFAULT_STACK = 200
DEFAULT_BEAM_THRESHOLD = 1e-5

#: Switches of the command line only (Moses reads them from a moses.ini too; these are honoured).
_SWITCHES = frozenset({"config", "input-file", "show-weights", "weight-overwrite", "inputtype", "distortion-limit",
                       "ttable-limit"})

#: Output parameters fstdecode writes one way only: the value it takes (Moses' default).
_ONLY = {"output-factors": "0", "n-best-factor": "20", "sort-word-alignment": "0"}


USAGE = """\
usage: fstdecode moses -f moses.ini [switches]     (also: fstdecode-moses -f moses.ini ...)

Moses' command line: switches with one dash, Moses' long or short names and meaning, over the
moses.ini's sections of the same names. Reads plain text (stdin, or -input-file), decodes with
fstdecode's stack search under Moses' defaults, and writes what Moses writes.

  -f, -config FILE              the moses.ini (relative paths: from the working directory
                                only, as Moses; not found there is an error)
  -i, -input-file FILE          read the sentences from FILE (default: stdin)
  -show-weights                 print the features' weights as Moses does, then exit
  -weight-overwrite 'N= v ...'  replace the named features' weights (one argument)
  -n-best-list FILE N [distinct]  write the N best derivations to FILE ('-': stdout, no 1-best)
  -include-segmentation-in-n-best, -print-alignment-info-in-n-best, -labeled-n-best-list B
  -threads N|all                decode N sentences at once (worker processes; all: every core)
  -s, -stack N                  hypotheses per stack (default 200; 0: no limit)
  -b, -beam-threshold P         drop hypotheses below P times the best (default 1e-5)
  -dl, -distortion-limit D      hard distortion limit (-1: none)
  -ttl, -ttable-limit K         translations per source phrase (0: all)
  -max-phrase-length N          refused if the table has longer source phrases
  -xi, -xml-input MODE          pass-through (default), exclusive, inclusive, ignore
  -print-alignment-info         append ||| and the word alignment to each 1-best line
  -alignment-output-file FILE   the 1-best word alignments, a line per sentence
  -t, -report-segmentation      mark each phrase |i-j| in the 1-best
  -mu, -mark-unknown            prefix unknown words with UNK
  -output-unknowns FILE         each sentence's unknown words, a line per sentence
  -print-id, -output-hypo-score, -start-translation-id N
  -inputtype 0                  plain text (the only input type supported)
  -v N                          0 errors only, 1 warnings and Moses' BEST TRANSLATION lines (default),
                                2 progress, 3 debug

Every other Moses switch is refused by name, or warned about when nothing in the output
depends on it; a switch that is not a Moses parameter is an error. README.md, "Moses
compatibility", lists each section and switch with what fstdecode does.
"""


class MosesArgsError(FstdecodeError):
    """A Moses switch that is malformed, unknown, or not honoured by fstdecode."""


def _is_switch(token: str) -> bool:
    """Moses' rule (Parameter::isOption): ``-x...`` whose second character is not a digit
    (so ``-`` and ``-0.5`` are values)."""
    return token.startswith("-") and len(token) > 1 and not token[1].isdigit()


def parse_switches(words: Sequence[str]) -> dict[str, list[str]]:
    """``-name v1 v2 -other ...`` -> long name -> values, in Moses' grammar.

    A switch is given by its long or short name (``-s`` is ``-stack``), with one dash (two are
    taken too). A token that is not a Moses parameter, a value before any switch, and a switch
    given twice are MosesArgsErrors naming it.
    """
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for token in words:
        if _is_switch(token):
            name = token[2:] if token.startswith("--") else token[1:]
            full = long_name(name)
            if full is None:
                raise MosesArgsError(f"illegal switch {token}: not a Moses parameter (moses/Parameter.cpp)")
            if full in out:
                raise MosesArgsError(f"{token}: -{full} is given twice; give it once")
            current = out[full] = []
        elif current is None:
            raise MosesArgsError(f"{token!r}: a value before any switch; write -switch value")
        else:
            current.append(token)
    return out


@dataclass(frozen=True)
class MosesSettings:
    """The switches and the moses.ini's sections merged: a switch's values replace the section's."""

    values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    from_command_line: frozenset[str] = frozenset()

    def get(self, name: str) -> tuple[str, ...] | None:
        return self.values.get(name)

    def flag(self, name: str) -> bool:
        """A boolean parameter (Moses' Scan<bool>): absent false, bare true, else yes/no/true/false/1/0."""
        values = self.values.get(name)
        return False if values is None else moses_boolean(values, name)

    def one(self, name: str, kind: type, low: float | None = None) -> object | None:
        """A single-valued parameter as ``kind`` (>= ``low``), or None when absent."""
        values = self.values.get(name)
        if values is None:
            return None
        try:
            if len(values) != 1:
                raise ValueError
            value = kind(values[0])
        except ValueError:
            raise MosesArgsError(f"-{name} {' '.join(values)}: takes one {kind.__name__} value") from None
        if low is not None and value < low:
            raise MosesArgsError(f"-{name} {values[0]}: must be >= {low}")
        if kind is float and not math.isfinite(value):
            raise MosesArgsError(f"-{name} {values[0]}: must be a finite number")
        return value


#: Moses' -cube-pruning-pop-limit by default (moses/TypeDef.h, DEFAULT_CUBE_PRUNING_POP_LIMIT).
MOSES_CUBE_POP_LIMIT = 1000

#: Settings that change no output, which fstdecode moses honours all the same (-v: its logging).
_HONOURED_HERE = frozenset({"verbose"})


def _check_switches(switches: Mapping[str, list[str]]) -> None:
    """Refuse switches fstdecode cannot honour; warn about those nothing depends on."""
    log = logging.getLogger("fstdecode")
    for name in switches:
        param = PARAMETERS[name]
        if param.treatment == REFUSED:
            raise MosesArgsError(f"-{name} is not supported: {param.why}")
        if param.treatment == MODEL and name not in _SWITCHES and name not in ("feature", "weight", "mapping",
                                                                               "input-factors"):
            raise MosesArgsError(f"-{name}: fstdecode moses reads it from the moses.ini only; put it there")
        if name in ("feature", "weight", "mapping", "input-factors"):
            raise MosesArgsError(f"-{name}: give the model's [{name}] in the moses.ini")
        if name in _ONLY and switches[name] != [_ONLY[name]]:
            raise MosesArgsError(f"-{name} {' '.join(switches[name])}: fstdecode supports only {_ONLY[name]} "
                                 "(Moses' default)")
        if param.treatment == NO_EFFECT and name not in _HONOURED_HERE:
            log.warning("-%s is %s; nothing in the output depends on it, so fstdecode ignores it", name, param.why)
        if param.treatment == SEARCH and name not in HONOURED_SEARCH:
            log.warning("-%s %s", name, NOT_IN_STACK_SEARCH)


def _merged(switches: Mapping[str, list[str]], cfg: MosesConfig) -> MosesSettings:
    """The ini's sections (by long name) with the switches over them."""
    values = {name: tuple(v for line in lines for v in line.split()) for name, lines in cfg.other.items()}
    for name, given in switches.items():
        values[name] = tuple(given)
    return MosesSettings(values, frozenset(switches))


def _nbest(settings: MosesSettings, cfg_nbest: tuple[str | None, int | None, bool]) -> tuple[str | None, int, bool]:
    """``-n-best-list FILE N [distinct]`` over the ini's ``[n-best-list]``."""
    given = settings.get("n-best-list") if "n-best-list" in settings.from_command_line else None
    if given is None:
        path, size, distinct = cfg_nbest
        return path, size or 0, distinct
    if len(given) < 2 or len(given) > 3 or (len(given) == 3 and given[2] != "distinct"):
        raise MosesArgsError(f"-n-best-list {' '.join(given)}: wrong format; write -n-best-list FILE SIZE [distinct]")
    try:
        size = int(given[1])
    except ValueError:
        size = 0
    if size < 1:
        raise MosesArgsError(f"-n-best-list {' '.join(given)}: the size {given[1]!r} must be a positive integer")
    return given[0], size, len(given) == 3


def _threads(settings: MosesSettings) -> int:
    """``-threads N|all``: N sentences decoded at once on N threads sharing one model, as decode's --threads."""
    values = settings.get("threads")
    if values is None:
        return 1
    if len(values) != 1:
        raise MosesArgsError(f"-threads {' '.join(values)}: give one number, or all")
    try:
        threads = worker_count(values[0])
    except argparse.ArgumentTypeError as err:
        raise MosesArgsError(f"-threads {err}") from None
    if threads < 1:
        raise MosesArgsError(f"-threads {values[0]}: specify at least one thread")
    return threads


#: Moses' weight switch, named in the errors and warnings of the weights it gives.
WEIGHT_FLAG = "-" + PARAMETERS["weight-overwrite"].name


def _weights(settings: MosesSettings) -> list[str]:
    """``-weight-overwrite 'Name= v ...'`` as ``Name= v v`` assignments (Moses' names and form), one per feature."""
    values = settings.get("weight-overwrite") if "weight-overwrite" in settings.from_command_line else None
    if values is None:
        return []
    if not values:
        raise MosesArgsError(f"{WEIGHT_FLAG} needs its weights, e.g. {WEIGHT_FLAG} 'LM0= 0.5 TM0= 0.2 0.2'")
    parsed = parse_weight_overwrite(" ".join(values), WEIGHT_FLAG)
    return [f"{name}= " + " ".join(repr(v) for v in vs) for name, vs in parsed.items()]  # as Moses writes them


def _verbosity(settings: MosesSettings) -> tuple[int, bool]:
    """``-v N`` (or the ini's [verbose]) as (fstdecode's -v count, quiet): 0 errors only, 1 (Moses'
    default) warnings, 2 progress (info), 3 and more debug."""
    level = settings.one("verbose", int, 0)
    level = 1 if level is None else int(level)
    return max(level - 1, 0), level == 0


def moses_args(words: Sequence[str]) -> tuple[argparse.Namespace, MosesOutput]:
    """The ``decode`` arguments and Moses' output settings of a Moses command line."""
    switches = parse_switches(words)
    _check_switches(switches)
    config = switches.get("config")
    if config is None:
        raise MosesArgsError("no configuration file was specified; use -config or -f moses.ini")
    if len(config) != 1:
        raise MosesArgsError(f"-config {' '.join(config)}: give one moses.ini")
    paths = "cwd"
    cfg = load_moses_ini(config[0], paths)
    settings = _merged(switches, cfg)
    inputtype = settings.one("inputtype", int, 0)
    if inputtype not in (None, 0):
        raise MosesArgsError(f"-inputtype {inputtype}: only plain-text input (0) is supported; 1 (confusion network), "
                             "2 (word lattice) and 3 (tree) are not")
    algorithm = settings.one("search-algorithm", int, 0)
    if algorithm not in (None, 0, 1):
        raise MosesArgsError(f"-search-algorithm {algorithm}: not phrase-based decoding (0 normal, 1 cube pruning)")
    pop_limit = settings.one("cube-pruning-pop-limit", int, 1)
    if algorithm == 1:
        pop_limit = MOSES_CUBE_POP_LIMIT if pop_limit is None else int(pop_limit)
    elif pop_limit is not None:
        logging.getLogger("fstdecode").warning(
            "-cube-pruning-pop-limit applies to cube pruning (-search-algorithm 1) only; the normal search ignores it"
        )
        pop_limit = None
    xml = settings.get("xml-input")
    xml_mode = "pass-through" if not xml else xml[0]
    if xml_mode == "constraint" or xml_mode not in ("pass-through", "exclusive", "inclusive", "ignore") or (xml and len(xml) > 1):
        raise MosesArgsError(f"-xml-input {' '.join(xml or ())}: choose pass-through, exclusive, inclusive or ignore "
                             "(constraint is not supported)")
    nbest_path, nbest_size, distinct = _nbest(settings, (cfg.nbest_path, cfg.nbest_size, cfg.nbest_distinct))
    beam = settings.one("beam-threshold", float, 0)
    beam = DEFAULT_BEAM_THRESHOLD if beam is None else float(beam)
    if beam > 1:
        raise MosesArgsError(f"-beam-threshold {beam}: a probability ratio, at most 1 (Moses' default 1e-5)")
    stack = settings.one("stack", int, 0)
    stack = DEFAULT_STACK if stack is None else int(stack)
    verbose, quiet = _verbosity(settings)
    if verbose >= 2:  # Moses' -v 3 and above
        logging.getLogger("fstdecode").warning(
            "-v %s: Moses' dump of each sentence's translation options and search is not written; fstdecode "
            "writes its own debug lines instead", settings.one("verbose", int, 0))
    dl = settings.one("distortion-limit", int, -1) if "distortion-limit" in switches else None
    ttl = settings.one("ttable-limit", int, 0) if "ttable-limit" in switches else None
    input_file = settings.one("input-file", str)
    args = argparse.Namespace(
        command="moses", config=config[0], phrase_table=None, lm=None, lm_order=None, distortion_limit=dl,
        weight=_weights(settings), weight_flag=WEIGHT_FLAG, distortion_semantics=None, tm_score_format=None,
        table_limit=ttl,
        filter=None, filter_chunk=None, method="stack", format="text", print_alignment_info=False,
        alignment_output_file=None, show_weights="show-weights" in switches or settings.flag("show-weights"),
        xml_input=xml_mode, workers=1, threads=_threads(settings), cluster=None, scheduler=None, worker_memory=None,
        tls_ca_file=None, tls_cert=None, tls_key=None, chunk_size=None, retries=DEFAULT_RETRIES, shard=None, resume=None,
        progress=None, verbose=verbose, quiet=quiet, ini_paths=paths, input_file=input_file,
        beam_size=stack if stack > 0 else MAX_INT_OPTION,  # 0: no limit, as in Moses
        beam_threshold=-math.log(beam) if beam > 0 else math.inf,
        cube_pop_limit=pop_limit,
        nbest=max(nbest_size, 1), unique=distinct, moses_nbest_pruning=True,  # Moses' n-best: see StackOptions
        max_phrase_length=settings.one("max-phrase-length", int, 1),
        honoured=HONOURED_SEARCH | _HONOURED_HERE,
    )
    opts = MosesOutput(
        nbest_path=nbest_path, nbest_size=nbest_size, distinct=distinct,
        include_segmentation=settings.flag("include-segmentation-in-n-best"),
        nbest_alignment=settings.flag("print-alignment-info-in-n-best"),
        labeled=settings.flag("labeled-n-best-list") if settings.get("labeled-n-best-list") is not None else True,
        alignment=settings.flag("print-alignment-info"), report_segmentation=settings.flag("report-segmentation"),
        mark_unknown=settings.flag("mark-unknown"), print_id=settings.flag("print-id"),
        hypo_score=settings.flag("output-hypo-score"), best_line=not quiet,
        loading=tuple(f.name for f in cfg.features),
        start_id=int(settings.one("start-translation-id", int, 0) or 0),
        alignment_file=settings.one("alignment-output-file", str), unknowns_file=settings.one("output-unknowns", str),
    )
    return args, opts
