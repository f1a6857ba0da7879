"""The native core: C++ (``native/``) behind a narrow seam, compiled by ``pip install``.

``core`` is the compiled module (``_core``); the two languages meet only in the
``native/bind_*.cpp`` files, one per bound type (``native/bindings.h``). Python adapters live in their layers:
:mod:`fstdecode.io.native_lm` (the LM) and :mod:`fstdecode.search.native`
(one whole search per sentence).

A ``fstdecode`` without its compiled module (the source tree, found first on ``sys.path`` when
Python runs in the repository's folder after a ``pip install .``, which built the module into
site-packages only) raises :class:`NativeCoreError` saying so and what to do; the command line
prints it as its one error line (exit 2).
"""

import importlib.util
import os

from fstdecode.errors import FstdecodeError


class NativeCoreError(FstdecodeError, ImportError):
    """The compiled core cannot be imported: not built beside this copy of fstdecode, or broken."""


def _missing(error: ImportError) -> NativeCoreError:
    """Why ``fstdecode._native._core`` did not import, and what to do, in one line."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if importlib.util.find_spec(f"{__name__}._core") is not None:  # there, but it does not load
        return NativeCoreError(f"the native core of {package} does not load ({error}); build it again: pip install -e .")
    here = os.path.dirname(package) == os.path.abspath(os.getcwd())
    return NativeCoreError(
        f"{package} is fstdecode's source tree, without its native core (the compiled _core module): "
        + ("Python found it first because it is in the working directory, which hides an installed fstdecode; "
           "run from another folder, or build the tree in place with pip install -e ."
           if here else "build it in place with pip install -e . (or run a fstdecode that pip installed)")
    )


try:
    from fstdecode._native import _core as core
except ImportError as e:
    raise _missing(e) from None

__all__ = ["NativeCoreError", "core"]
