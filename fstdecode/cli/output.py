"""Output formats of ``fstdecode decode``: text, JSON lines and Moses n-best.

Every format writes something for every input line, in input order: a
failed line passes its source through (text), carries an ``error`` field
(JSON) or writes one pass-through entry with every feature 0 and score 0 (n-best;
:func:`nbest_lines` says why). A
line over its search budget is written like any other, from the best
derivation found; JSON marks it ``"optimal": false`` with a ``reason``.
"""

from __future__ import annotations

import json
import math
from typing import Callable

from fstdecode.decoder import DecodeResult, Derivation
from fstdecode.errors import FstdecodeError
from fstdecode.io.files import line_too_long, max_line_bytes
from fstdecode.model.features import MosesFeature, Weights, moses_layout

FORMATS = ("text", "json", "nbest")


class OutputError(FstdecodeError):
    """An output file that cannot be resumed (unreadable, or not in the format asked for)."""

#: What the output holds for a line that failed (said on stderr beside the error).
FAILED_LINE = "its source is passed through"


def text(result: DecodeResult, alignment: bool = False) -> str:
    """The best translation, or the source itself when decoding failed.

    With ``alignment``, Moses' ``-print-alignment-info``: ``translation ||| 0-0 1-1`` (the
    word alignment of :meth:`Derivation.alignment`; Moses' trailing spaces left out). A failed
    line gets an empty alignment.
    """
    best = result.best
    out = best.translation if best is not None else " ".join(result.source)
    if alignment:
        out = f"{out} ||| {best.alignment_text() if best is not None else ''}".strip()
    return out


def _derivation_json(d: Derivation, alignment: bool = False) -> dict:
    obj = {
        "translation": d.translation,
        "score": d.score,
        "features": d.features.as_dict(),
        "derivation": [[p.start, p.end, " ".join(p.target)] for p in d.phrases],
    }
    if alignment:
        obj["alignment"] = [list(point) for point in d.alignment()]
    return obj


def json_line(result: DecodeResult, alignment: bool = False) -> str:
    """One JSON object: id, source, translation, score, features, derivation, optimal, stats;
    ``upper_bound`` and ``gap`` when the search proved a bound (the certificate); ``unproven``, why
    ``prove`` left the line unproven; ``root_bound``
    and ``root_gap`` (the A*'s bound and gap before its first expansion) and ``stats.phases``
    (the seconds of ``lower``, ``bounds`` and ``search``) from the A* (``exact``, ``prove``); with
    ``alignment``, ``alignment`` as ``[source, target]`` position pairs (:meth:`Derivation.alignment`).

    With more than one derivation the others follow under ``nbest``; a
    failed line has ``error`` and the source as its translation.
    """
    obj: dict = {"id": result.id, "source": " ".join(result.source)}
    best = result.best
    if best is None:
        obj.update(translation=" ".join(result.source), error=result.error or result.reason)
    else:
        obj.update(_derivation_json(best, alignment))
        obj["optimal"] = result.optimal
        if result.upper_bound is not None:
            obj["upper_bound"] = result.upper_bound
            obj["gap"] = result.gap
        if result.root_bound is not None:
            obj["root_bound"] = result.root_bound
            obj["root_gap"] = result.root_gap
        if result.reason is not None:
            obj["reason"] = result.reason
        if result.unproven is not None:
            obj["unproven"] = result.unproven
        if len(result.derivations) > 1:
            obj["nbest"] = [_derivation_json(d, alignment) for d in result.derivations]
    obj["stats"] = {
        "states": result.stats.states,
        "transitions": result.stats.transitions,
        "seconds": round(result.stats.seconds, 6),
    }
    if result.stats.phases:
        obj["stats"]["phases"] = {name: round(t, 6) for name, t in result.stats.phases}
    return json.dumps(_finite(obj), ensure_ascii=False, allow_nan=False)


def _finite(value):
    """``value`` with every non-finite float (an impossible LM event's −inf) written as null: valid JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _g(x: float) -> str:
    """Moses prints scores with 6 significant digits."""
    return f"{x:.6g}"


def _layout(features: Weights | tuple[MosesFeature, ...]) -> tuple[MosesFeature, ...]:
    """The features to print: a model's ``features``, or (given weights) Moses' default names."""
    return moses_layout((), features) if isinstance(features, Weights) else tuple(features)


def moses_features(d: Derivation, features: Weights | tuple[MosesFeature, ...]) -> str:
    """The feature field of a Moses n-best line: ``NAME= v ...`` for each tuneable feature of
    ``features`` (a model's ``features``: moses.ini's names, in Moses' order), so that tuning tools
    (MERT, MIRA) find the names of ``--show-weights``. As in Moses, a feature that is not tuneable
    (UnknownWordPenalty, ``tuneable=false``) is not printed, nor a value that
    ``tuneable-components=`` keeps fixed (:attr:`MosesFeature.in_nbest`, :meth:`MosesFeature.tuned`).
    Given weights instead, Moses' default names are used."""
    return " ".join(
        f"{f.name}= " + " ".join(_g(v) for v in f.tuned(f.values(d.features))) for f in _layout(features) if f.in_nbest
    )


def nbest_lines(
    result: DecodeResult,
    features: Weights | tuple[MosesFeature, ...],
    alignment: bool = False,
    weights: Weights | None = None,
) -> list[str]:
    """Moses n-best entries: ``id ||| translation ||| features ||| score ||| segmentation ||| alignment``.

    The last field is Moses' word alignment (``print-alignment-info-in-n-best``), filled with
    ``alignment`` and left empty otherwise (Moses' trailing spaces left out).

    A failed line (no derivation) gets one entry: its source (``|`` escaped), every feature 0 and
    score 0. Moses writes no n-best entry for a sentence it cannot translate (and ``0`` as the
    score of its empty 1-best); one entry per line keeps N lines in, N groups out. MERT's and
    MIRA's extractor skips the score field but reads the features, and takes the feature names
    from the list's first line: so the entry carries every name, each with as many zeros as the
    feature has values (known from ``weights``, or from ``features`` when it is the weights;
    without either the field stays empty), and a finite score for the tools that read it.
    """
    if not result.derivations:
        return [_failed_entry(result, features, weights)]
    layout = _layout(features)
    return [
        f"{result.id} ||| {d.translation} ||| {moses_features(d, layout)} ||| {_g(d.score)} ||| {d.segmentation()} |||"
        + (f" {d.alignment_text()}".rstrip() if alignment else "")
        for d in result.derivations
    ]


def _failed_entry(result: DecodeResult, features: Weights | tuple[MosesFeature, ...], weights: Weights | None) -> str:
    """The one n-best entry of a failed line (see :func:`nbest_lines`)."""
    known = features if isinstance(features, Weights) else weights
    zeros = "" if known is None else " ".join(
        f"{f.name}= " + " ".join("0" for _ in f.tuned(f.values(known))) for f in _layout(features) if f.in_nbest
    )
    return f"{result.id} ||| {escape_bars(' '.join(result.source))} ||| {zeros} ||| 0 ||| |||"


def escape_bars(text: str) -> str:
    """``|`` as ``&#124;``, Moses' escape (escape-special-chars.perl), so no field separator appears."""
    return text.replace("|", "&#124;")


def writer(
    fmt: str, features: Weights | tuple[MosesFeature, ...], alignment: bool = False, weights: Weights | None = None
) -> Callable[[DecodeResult], str]:
    """The function that writes one result in format ``fmt``, end of line included; ``features``
    and ``weights`` as for :func:`nbest_lines`, ``alignment`` adds the word alignment
    (``--print-alignment-info``)."""
    if fmt == "text":
        return lambda result: text(result, alignment) + "\n"
    if fmt == "json":
        return lambda result: json_line(result, alignment) + "\n"
    known = features if isinstance(features, Weights) else weights
    layout = _layout(features)
    return lambda result: "".join(line + "\n" for line in nbest_lines(result, layout, alignment, known))


def resume_point(path: str, fmt: str, first_id: int = 0) -> tuple[int, int]:
    """How far the output file ``path`` (format ``fmt``) got: ``(results, offset)``.

    ``results`` whole results are in the file's first ``offset`` bytes; what follows is a cut
    write, to be truncated before the run appends the rest. A text or JSON result is one
    complete line (ending in a newline). An n-best result is a group of lines with one id; the
    last group may have been cut between its lines, so it is redone: ``offset`` is where it
    starts. A missing file is ``(0, 0)``.

    Kept results must be this run's: JSON lines are objects and n-best groups carry the ids
    ``first_id``, ``first_id + 1``, ... in order (the run's first input line's id: the shard's
    start under ``--shard``); else OutputError naming the file and line. Text lines carry no id,
    so only their number can be checked (by the caller, against the input's).
    """
    results, offset, group, group_start = 0, 0, None, 0
    try:
        limit = max_line_bytes()
        with open(path, "rb") as f:  # line by line: the output may be far larger than memory
            for no, line in enumerate(iter(lambda: f.readline(limit + 1), b""), 1):
                if len(line) > limit and not line.endswith(b"\n"):
                    raise OutputError(line_too_long(f"{path}:{no}", limit))
                if not line.endswith(b"\n"):  # a cut write
                    break
                if fmt == "nbest":
                    key = line.split(b" ||| ", 1)[0]
                    if not key.isdigit():
                        raise OutputError(
                            f"{path}:{no}: not an n-best line (expected 'id ||| ...'); is it the output of --format nbest?"
                        )
                    if key != group:
                        results += group is not None
                        _check_id(path, no, int(key), first_id + results)
                        group, group_start = key, offset
                elif fmt == "json":
                    _check_id(path, no, _json_id(path, no, line), first_id + results)
                    results += 1
                else:
                    results += 1
                offset += len(line)
    except FileNotFoundError:
        return 0, 0
    except OSError as e:
        raise OutputError(f"{path}: cannot read the output to resume: {e.strerror}") from None
    return (results, group_start) if fmt == "nbest" else (results, offset)


def _json_id(path: str, no: int, line: bytes) -> object:
    """The ``id`` of JSON output line ``no``; OutputError when the line is not a JSON object."""
    try:
        obj = json.loads(line)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        raise OutputError(f"{path}:{no}: not a JSON object; is it the output of --format json?")
    return obj.get("id")


def _check_id(path: str, no: int, found: object, expected: int) -> None:
    """OutputError unless line ``no`` holds the result of input line id ``expected``."""
    if found != expected or isinstance(found, bool):
        raise OutputError(
            f"{path}:{no}: holds the result of line id {found}, where this run's output has id {expected}; "
            "is it the output of this input (and --shard)?"
        )
