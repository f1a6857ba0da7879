"""``python -m fstdecode``: the console script (:func:`fstdecode.cli.run`)."""

from fstdecode.cli import run

run()
