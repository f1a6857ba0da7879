"""Decoders that misbehave on purpose, for the runner fault tests (importable by worker processes).

Each wraps a real :class:`~fstdecode.decoder.Decoder` and pickles as its parts, so the Dask
runner can ship it like a real one.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


class KillOnce:
    """Decodes as ``decoder``, except that the first process to reach line ``victim`` SIGKILLs
    itself there (mid-chunk), leaving ``marker`` behind so that the retry goes through."""

    def __init__(self, decoder, victim: int, marker: Path) -> None:
        self.decoder, self.victim, self.marker = decoder, victim, str(marker)

    def decode(self, text: str, id: int = 0):
        if id == self.victim:
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                os.kill(os.getpid(), signal.SIGKILL)
        return self.decoder.decode(text, id=id)


class KillAlways:
    """Decodes as ``decoder``, except that every process reaching line ``victim`` SIGKILLs itself
    (as a sentence that always runs out of memory would)."""

    def __init__(self, decoder, victim: int) -> None:
        self.decoder, self.victim = decoder, victim

    def decode(self, text: str, id: int = 0):
        if id == self.victim:
            os.kill(os.getpid(), signal.SIGKILL)
        return self.decoder.decode(text, id=id)


class Slow:
    """Decodes as ``decoder``, ``seconds`` slower per line: room to kill a worker from outside mid-run."""

    def __init__(self, decoder, seconds: float) -> None:
        self.decoder, self.seconds = decoder, seconds

    def decode(self, text: str, id: int = 0):
        time.sleep(self.seconds)
        return self.decoder.decode(text, id=id)


class SlowAt:
    """Decodes as ``decoder``, ``seconds`` slower on line ``id`` only: its chunk finishes after later ones."""

    def __init__(self, decoder, line: int, seconds: float) -> None:
        self.decoder, self.line, self.seconds = decoder, line, seconds

    def decode(self, text: str, id: int = 0):
        if id == self.line:
            time.sleep(self.seconds)
        return self.decoder.decode(text, id=id)


#: Unpickled :class:`Counted` decoders in this process.
_LOADS = [0]


def loads() -> int:
    """How many :class:`Counted` decoders this process unpickled (run on each worker by ``client.run``)."""
    return _LOADS[0]


class Counted:
    """Decodes as ``decoder``; counts its unpickling in the process that unpickles it, to show
    that a worker loads the decoder (and its model) once, not once per task."""

    def __init__(self, decoder) -> None:
        self.decoder = decoder

    def __setstate__(self, state: dict) -> None:
        _LOADS[0] += 1
        self.__dict__.update(state)

    def decode(self, text: str, id: int = 0):
        return self.decoder.decode(text, id=id)


class RssProbe:
    """Decodes as ``decoder``; at the lines whose ids are in ``at``, appends ``id rss`` (bytes,
    after a garbage collection and glibc's malloc_trim, as tests/integration/test_memory.py
    reads it) to the file ``path``, from whichever worker process decodes them."""

    def __init__(self, decoder, path: Path, at: tuple[int, ...]) -> None:
        self.decoder, self.path, self.at = decoder, str(path), at

    def decode(self, text: str, id: int = 0):
        result = self.decoder.decode(text, id=id)
        if id in self.at:
            import ctypes
            import gc

            gc.collect()
            try:
                ctypes.CDLL(None).malloc_trim(0)
            except AttributeError:
                pass
            with open("/proc/self/statm") as f:
                rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            with open(self.path, "a") as f:
                f.write(f"{id} {os.getpid()} {rss}\n")
        return result
