"""The root of fstdecode's exceptions.

Every module defines its own ``Error`` subclass of :class:`FstdecodeError`;
the CLI catches this base class, prints the message (which names the file
and line where there is one) and exits with status 2.
"""


class FstdecodeError(Exception):
    """Base class of every error fstdecode raises on bad input or limits."""
