"""Failed writes: one error class for every output fstdecode writes (standard output, the
alignment file, lattices, compiled FSTs)."""

from __future__ import annotations

from fstdecode.errors import FstdecodeError


class WriteError(FstdecodeError):
    """An output that cannot be written: a full disk, a closed stream, a path that is not writable.

    Unlike an error in one input line, it stops the run (what follows would be lost as well); the
    CLI reports it as ``fstdecode: error: WHERE: cannot write: REASON``, status 2. Raise it with
    :func:`cannot_write`, so that every output names its destination the same way.
    """


def cannot_write(where: str, err: OSError) -> WriteError:
    """The :class:`WriteError` for a failed open or write of ``where`` (a path, or "standard output")."""
    return WriteError(f"{where}: cannot write: {err.strerror or err}")
