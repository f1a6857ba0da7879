"""fstdecode: exact phrase-based decoding under a hard distortion limit.

The Python API mirrors the CLI: :func:`load_model` (``-f``, ``--lm``, ...),
:class:`Decoder` / :func:`decode` (``fstdecode decode``), and the frozen
:class:`Derivation` with its :class:`Features`.
"""

from fstdecode.decoder import METHODS, DecodeResult, Decoder, Derivation, decode
from fstdecode.errors import FstdecodeError
from fstdecode.model.features import Features, Weights
from fstdecode.model.model import Model, example_model, load_model

__version__ = "0.1.0"

__all__ = [
    "METHODS",
    "DecodeResult",
    "Decoder",
    "Derivation",
    "Features",
    "FstdecodeError",
    "Model",
    "Weights",
    "decode",
    "example_model",
    "load_model",
]
