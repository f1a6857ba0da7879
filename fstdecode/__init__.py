"""fstdecode: exact phrase-based decoding under a hard distortion limit.

The Python API mirrors the CLI (``fstdecode decode``):

* :func:`load_model` reads a model (``-f moses.ini``, ``--phrase-table``,
  ``--lm``, ...; no arguments: the built-in example);
* :class:`Decoder` (``Decoder(model, method, **options)``) and :func:`decode`
  translate; each returns a :class:`DecodeResult` per line, whose
  :class:`Derivation` s carry their :class:`Features`;
* :func:`decode_lines` decodes a batch, in order, with a runner
  (:mod:`fstdecode.run`);
* :data:`METHODS` lists the search methods; each has a frozen options
  dataclass (``METHODS["stack"].options``) that validates its values.

Every error on bad input is a :class:`FstdecodeError`.
"""

import importlib
from typing import Any

#: The public API, by the module that defines each name. The modules are imported on first use
#: (PEP 562), so that ``fstdecode``'s command line starts, and answers Ctrl-C, before the searches load.
_EXPORTS = {
    "DecodeResult": "fstdecode.decoder",
    "Decoder": "fstdecode.decoder",
    "Derivation": "fstdecode.decoder",
    "decode": "fstdecode.decoder",
    "FstdecodeError": "fstdecode.errors",
    "Features": "fstdecode.model.features",
    "Weights": "fstdecode.model.features",
    "Model": "fstdecode.model.model",
    "example_model": "fstdecode.model.model",
    "load_model": "fstdecode.model.model",
    "decode_lines": "fstdecode.run",
    "METHODS": "fstdecode.search.base",
    "SearchOptions": "fstdecode.search.base",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fstdecode' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__version__ = "0.1.0"

__all__ = [
    "METHODS",
    "DecodeResult",
    "Decoder",
    "Derivation",
    "Features",
    "FstdecodeError",
    "Model",
    "SearchOptions",
    "Weights",
    "decode",
    "decode_lines",
    "example_model",
    "load_model",
]
