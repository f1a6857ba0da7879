"""The HTTP/JSON API: ``POST /translate``.

Request, an object with exactly one of ``text`` (a sentence) and ``lines`` (a list of sentences),
and optionally ``nbest`` (an integer >= 1), ``align`` (a boolean) and ``method`` (a string).
Types are checked strictly (``"nbest": "2"`` or ``true`` is refused, so is a key given twice or
unknown). The reply is what ``fstdecode decode --format json`` writes for the same lines, made by
the same function: for ``text`` one object, for ``lines`` ``{"results": [...]}`` with ids 0, 1, ...
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from fstdecode.decoder import DecodeResult
from fstdecode.server.limits import RequestError, RequestLimits, check_method, check_nbest, check_size, check_text

KEYS = ("text", "lines", "nbest", "align", "method")
#: The most digits of an integer in a request (far more than any field's value may have).
MAX_INT_DIGITS = 18
CONTENT_TYPE = "application/json"


@dataclass(frozen=True)
class JsonCall:
    """A checked request. Invariant: every line passed :func:`check_text` (a reserved token left to the
    decoder, which fails that line alone); ``nbest >= 1``; the lines
    keep the server's size limits; ``single`` means the request gave ``text``."""

    lines: tuple[str, ...]
    single: bool
    method: str
    nbest: int = 1
    align: bool = False


def parse_call(body: bytes, limits: RequestLimits, default_method: str) -> JsonCall:
    """The request in ``body`` (UTF-8 JSON), checked; RequestError (400, 413) naming the problem."""
    obj = _load(body)
    if not isinstance(obj, dict):
        raise RequestError("the request must be a JSON object, e.g. {\"text\": \"...\"}")
    unknown = [k for k in obj if k not in KEYS]
    if unknown:
        raise RequestError(f"unknown key(s) {', '.join(map(repr, unknown))}; /translate takes {', '.join(KEYS)}")
    if ("text" in obj) == ("lines" in obj):
        raise RequestError("give exactly one of 'text' (a sentence) and 'lines' (a list of sentences)")
    if "text" in obj:
        lines = (check_text(obj["text"], "text", allow_reserved=True),)
    else:
        given = obj["lines"]
        if not isinstance(given, list):
            raise RequestError("'lines' must be a list of strings")
        lines = tuple(check_text(x, f"lines[{i}]", allow_reserved=True) for i, x in enumerate(given))
    check_size(lines, limits)
    nbest = check_nbest(obj.get("nbest", 1), "nbest", limits, minimum=1)
    align = obj.get("align", False)
    if not isinstance(align, bool):
        raise RequestError(f"align must be true or false, got {json.dumps(align)[:40]}")
    method = check_method(obj.get("method", default_method), limits)
    return JsonCall(lines, "text" in obj, method, nbest, align)


def _load(body: bytes) -> Any:
    """The JSON value of ``body``: strict UTF-8, no repeated key, no NaN or Infinity."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RequestError(f"the body is not valid UTF-8 (byte {e.start})") from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_int=_bounded_int)
    except RequestError:
        raise
    except json.JSONDecodeError as e:
        raise RequestError(f"malformed JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise RequestError("malformed JSON: nested too deeply") from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise RequestError(f"the key {key!r} is given twice")
        out[key] = value
    return out


def _bounded_int(digits: str) -> int:
    """A JSON integer of at most :data:`MAX_INT_DIGITS` digits (Python refuses to read one of over
    4,300 with a ValueError, and no field of a request holds more than a few)."""
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise RequestError(f"the request holds an integer of {len(digits.lstrip('-')):,} digits; "
                           f"this server reads integers of at most {MAX_INT_DIGITS} digits")
    return int(digits)


def _no_constant(name: str) -> Any:
    raise RequestError(f"malformed JSON: {name} is not a JSON number")


def reply_body(results: list[DecodeResult], call: JsonCall, json_line: Callable[[DecodeResult, bool], str]) -> bytes:
    """The reply: ``decode --format json``'s line of each result (with ``alignment`` when asked)."""
    lines = [json_line(r, call.align) for r in results]
    text = lines[0] if call.single else '{"results": [' + ", ".join(lines) + "]}"
    return text.encode("utf-8")


def error_body(message: str) -> bytes:
    return json.dumps({"error": message}, ensure_ascii=False).encode("utf-8")
