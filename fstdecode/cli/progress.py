"""The progress bar of batch runs: one small helper that any runner's loop can feed.

``--progress`` / ``--no-progress`` (default: on when stderr is a terminal). The bar is
tqdm's (a dependency, imported only when a bar is wanted), on stderr, never on stdout (which
holds results only); while it shows, the log's warnings are written above it. Should tqdm be
missing all the same, an asked-for bar is a clear error and an automatic one is skipped with an
info line.

The bar counts lines whose decoding finished, as the runner reports them: every runner's
``map`` takes a ``progress(n)`` callback, called as each chunk of ``n`` lines completes (a
Dask future, a pool worker's answer, a line in this process), in whatever order they finish.
The lines written wait for the chunks before them, so they would lag the work done. Each result
written is then shown to :meth:`ProgressBar.written`, which counts the failed or over-budget
ones beside the bar::

    with progress_bar(flag) as bar:
        for result in decode_lines(decoder, lines, runner, bar.completed if bar.active else None):
            bar.written(result)

``fstdecode decode`` does exactly this over whatever runner ``--workers`` (or a Dask runner)
picks, so a runner needs no bar of its own: the runners in :mod:`fstdecode.run` sit below the
CLI (layers run io → … → run → cli) and must not import this module.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

from fstdecode.errors import FstdecodeError

_LOG = logging.getLogger("fstdecode")


class ProgressError(FstdecodeError):
    """A progress bar asked for that cannot be shown (tqdm missing)."""


def wanted(flag: bool | None, stream: TextIO | None = None) -> bool:
    """Whether to show a bar: the ``--progress/--no-progress`` flag if given, else whether
    ``stream`` (default stderr) is a terminal."""
    if flag is not None:
        return flag
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class ProgressBar:
    """Counts lines decoded (and, of those written, the failed or over-budget ones) on a tqdm bar;
    a no-op when off.

    Invariant: nothing is written anywhere when the bar is off; when on, only to ``stream``.
    """

    def __init__(
        self,
        enabled: bool,
        total: int | None = None,
        stream: TextIO | None = None,
        explicit: bool = False,
        initial: int = 0,
    ) -> None:
        self._bar: Any = None
        self._redirect: Any = None
        self.flagged = 0
        if not enabled:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            if explicit:
                raise ProgressError(
                    "--progress needs tqdm: pip install tqdm"
                ) from None
            _LOG.info("no progress bar: tqdm is not installed (pip install tqdm)")
            return
        from tqdm.contrib.logging import logging_redirect_tqdm

        self._bar = tqdm(
            total=total, initial=initial, unit="line", file=sys.stderr if stream is None else stream, dynamic_ncols=True
        )
        self._redirect = logging_redirect_tqdm([_LOG])  # warnings above the bar, not through it
        self._redirect.__enter__()

    @property
    def active(self) -> bool:
        return self._bar is not None

    @property
    def count(self) -> int:
        """The lines counted so far (with ``initial``); 0 when the bar is off."""
        return int(self._bar.n) if self._bar is not None else 0

    def completed(self, lines: int) -> None:
        """``lines`` more lines decoded (a runner's ``progress`` callback)."""
        if self._bar is not None:
            self._bar.update(lines)

    def written(self, result: Any) -> None:
        """``result`` (a DecodeResult) was written: it counts toward ``flagged`` when it failed or
        ran over budget (shown beside the bar). The bar's count is :meth:`completed`'s."""
        if getattr(result, "error", None) or getattr(result, "reason", None):
            self.flagged += 1
            if self._bar is not None:
                self._bar.set_postfix(flagged=self.flagged, refresh=False)

    def close(self) -> None:
        if self._redirect is not None:
            self._redirect.__exit__(None, None, None)
            self._redirect = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def progress_bar(
    flag: bool | None, total: int | None = None, stream: TextIO | None = None, initial: int = 0
) -> ProgressBar:
    """The bar for ``--progress/--no-progress`` (``flag``; None: on when stderr is a terminal),
    of ``total`` lines (None: unknown) of which ``initial`` are already done (``--resume``)."""
    return ProgressBar(wanted(flag, stream), total, stream, explicit=flag is True, initial=initial)
