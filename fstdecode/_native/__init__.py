"""The native core: C++ (``native/``) behind a narrow seam, compiled by ``pip install``.

``core`` is the compiled module (``_core``); the two languages meet only in the
``native/bind_*.cpp`` files, one per bound type (``native/bindings.h``). Python adapters live in their layers:
:mod:`fstdecode.io.native_lm` (the LM) and :mod:`fstdecode.search.native`
(one whole search per sentence).
"""

from fstdecode._native import _core as core

__all__ = ["core"]
