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

from fstdecode.decoder import DecodeResult, Decoder, Derivation, decode
from fstdecode.errors import FstdecodeError
from fstdecode.model.features import Features, Weights
from fstdecode.model.model import Model, example_model, load_model
from fstdecode.run import decode_lines
from fstdecode.search.base import METHODS, SearchOptions

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
