"""Numbers in model files: one parser, one message, for every reader of :mod:`fstdecode.io`.

Each function takes the caller's ``Error`` class and ``where`` (``"path:line"``) and raises
only that class, with ``"{where}: {what} {token!r} is not a number"`` (then the caller's
``hint``, if any) or ``"{where}: {what} {token!r} is not a finite number"``.
"""

from __future__ import annotations

import math

from fstdecode.errors import FstdecodeError

__all__ = ["parse_finite", "parse_number"]


def parse_number(
    token: str, what: str, where: str, error: type[FstdecodeError], hint: str = ""
) -> float:
    """``token`` as a float (``nan`` and ``inf`` included); anything else raises ``error``."""
    try:
        return float(token)
    except ValueError:
        raise error(f"{where}: {what} {token!r} is not a number{hint}") from None


def parse_finite(token: str, what: str, where: str, error: type[FstdecodeError]) -> float:
    """``token`` as a finite float; not a number, NaN or an infinity raises ``error``."""
    value = parse_number(token, what, where, error)
    if not math.isfinite(value):
        raise error(f"{where}: {what} {token!r} is not a finite number")
    return value
