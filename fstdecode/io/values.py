"""Numbers in model files: one parser, one message, for every reader of :mod:`fstdecode.io`.

Each function takes the caller's ``Error`` class and ``where`` (``"path:line"``) and raises
only that class, with ``"{where}: {what} {token!r} is not a number"`` (then the caller's
``hint``, if any) or ``"{where}: {what} {token!r} is not a finite number"``.
"""

from __future__ import annotations

import math
import re

from fstdecode.errors import FstdecodeError

__all__ = ["MAX_WEIGHT", "NUMBER", "parse_finite", "parse_number", "parse_weight", "weight_too_large"]

#: The one number grammar of model files, weights and options (the core's parse_double,
#: native/text_lines.h, reads the same): a sign, then digits with an optional point and
#: fraction (or a point and digits), then an optional exponent; or inf, infinity, nan in any
#: case. ASCII only: Python's float() also reads underscores ("1_0"), Unicode digits and
#: surrounding spaces, which no model file holds, and they are refused here.
NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))")

#: The largest weight magnitude accepted. A feature's value is below about 1e10 in magnitude for
#: any sentence the decoder takes (an LM or phrase-table log score of at most ~745 a word, a
#: distortion of at most n² for n < 32,000, -100 an unknown word), and an arc of the fst method's
#: cascade carries at most ~1e5 of it, in OpenFst's single-precision weights (at most 3.4e38).
#: With weights up to 1e20, no weighted score, sum, search bound or arc weight can overflow;
#: tuned weights (MERT, MIRA, PRO) are normalised to magnitudes near 1.
MAX_WEIGHT = 1e20


def parse_number(
    token: str, what: str, where: str, error: type[FstdecodeError], hint: str = ""
) -> float:
    """``token`` as a float if it matches :data:`NUMBER` (``nan`` and ``inf`` included);
    anything else raises ``error``."""
    if NUMBER.fullmatch(token) is None:
        raise error(f"{where}: {what} {token!r} is not a number{hint}")
    return float(token)


def parse_finite(token: str, what: str, where: str, error: type[FstdecodeError]) -> float:
    """``token`` as a finite float; not a number, NaN or an infinity raises ``error``."""
    value = parse_number(token, what, where, error)
    if not math.isfinite(value):
        raise error(f"{where}: {what} {token!r} is not a finite number")
    return value


def weight_too_large(what: str, value: float) -> str | None:
    """Why ``value`` cannot be the weight ``what`` (its magnitude is over :data:`MAX_WEIGHT`), or None."""
    if abs(value) <= MAX_WEIGHT:
        return None
    return (
        f"{what} {value!r} is larger than {MAX_WEIGHT:g} in magnitude: the weighted scores would overflow; "
        "weights are relative, so scale them all down"
    )


def parse_weight(token: str, what: str, where: str, error: type[FstdecodeError]) -> float:
    """``token`` as a feature weight: a finite float of magnitude at most :data:`MAX_WEIGHT`."""
    value = parse_finite(token, what, where, error)
    why = weight_too_large(what, value)
    if why is not None:
        raise error(f"{where}: {why}")
    return value
