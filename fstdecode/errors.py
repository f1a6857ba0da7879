"""The root of fstdecode's exceptions.

Every module defines its own ``Error`` subclass of :class:`FstdecodeError`;
the CLI catches this base class, prints the message (which names the file
and line where there is one) and exits with status 2.
"""


class FstdecodeError(Exception):
    """Base class of every error fstdecode raises on bad input or limits."""


def read_bytes(path: str, error: type[FstdecodeError]) -> bytes:
    """The bytes of ``path``; a missing or unreadable file raises ``error`` naming it."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror or e}") from None
