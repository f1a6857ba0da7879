"""The tuned moses.ini: the original file with its ``[weight]`` lines set to the tuned weights.

Everything else is kept line for line, but for relative ``path=`` values and ``${MODEL_DIR}``,
which are made absolute (against the original's folder) so that the new file loads from
wherever it is written, in Moses (which resolves from the working directory), ``fstdecode
moses`` and ``fstdecode decode`` alike. A feature with no ``[weight]`` line gets one. A
moses.ini in Moses' old format (``[weight-l]``, ``[weight-t]``, ...) has no ``[weight]`` section
to set: :func:`check_writable` refuses it before any decoding.
"""

from __future__ import annotations

import os
import re
from typing import Sequence

from fstdecode.errors import FstdecodeError
from fstdecode.io.moses_ini import MosesConfig
from fstdecode.model.features import MosesFeature, Weights

_SECTION = re.compile(r"^\s*\[([^\]]*)\]\s*(#.*)?$")
_PATH = re.compile(r"(?<![^\s])path=(\S+)")
_VARIABLE = re.compile(r"\$\{[^}]*\}")


class TunedIniError(FstdecodeError):
    """A moses.ini whose weights tune cannot write back."""


def _sections(lines: Sequence[str]) -> list[tuple[str | None, int]]:
    """Each line's section name (None before the first header) and index."""
    out: list[tuple[str | None, int]] = []
    current: str | None = None
    for i, line in enumerate(lines):
        m = _SECTION.match(line)
        if m:
            current = m.group(1).strip()
        out.append((current, i))
    return out


def check_writable(cfg: MosesConfig) -> None:
    """Refuse a moses.ini whose weights are not in a ``[weight]`` section (Moses' old format)."""
    if cfg.old_format:
        raise TunedIniError(f"{cfg.path}: a moses.ini in Moses' old format ([weight-l], [ttable-file], ...); fstdecode "
                            "tune writes a [weight] section: give the model as [feature] lines and its weights as "
                            "'Name= values' lines under [weight]")


def _absolute(line: str, folder: str) -> str:
    line = _VARIABLE.sub(lambda _m: folder, line)

    def fix(m: re.Match) -> str:
        value = m.group(1)
        return m.group(0) if os.path.isabs(value) else f"path={os.path.normpath(os.path.join(folder, value))}"

    return _PATH.sub(fix, line)


def weight_line(feature: MosesFeature, weights: Weights) -> str:
    """``Name= v1 v2 ...`` (each value as Python's shortest round-trip form)."""
    return f"{feature.name}= " + " ".join(repr(float(v)) for v in feature.values(weights))


def tuned_ini(cfg: MosesConfig, layout: Sequence[MosesFeature], weights: Weights, header: str) -> str:
    """The text of the moses.ini ``cfg`` with ``weights`` in its [weight] section (a comment
    ``header`` first); a feature the file declares without a weight line gets one (the defaults'
    ``KIND0`` features it does not declare keep Moses' defaults)."""
    path = cfg.path
    declared = {f.name for f in cfg.features}
    folder = os.path.dirname(os.path.abspath(path))
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    by_name = {f.name: f for f in layout}
    written: set[str] = set()
    out = [f"# {line}" for line in header.splitlines()]
    weight_end: int | None = None
    for (section, _), line in zip(_sections(lines), lines):
        if section == "weight" and not _SECTION.match(line):
            name = line.split("=", 1)[0].strip()
            if "=" in line and name in by_name:
                out.append(weight_line(by_name[name], weights))
                written.add(name)
                weight_end = len(out)
                continue
        out.append(_absolute(line, folder) if section == "feature" else line)
        if section == "weight":
            weight_end = len(out)
    missing = [weight_line(f, weights) for f in layout if f.name not in written and f.name in declared]
    if missing:
        if weight_end is None:
            out += ["", "[weight]"]
            weight_end = len(out)
        out[weight_end:weight_end] = missing
    return "\n".join(out) + "\n"
