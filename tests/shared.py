"""Where the shared real-model data lives, and a skip marker for when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def data_path(*parts: str) -> Path:
    """A path under ../shared/data; skips the calling test when it is missing (a fresh machine)."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: the real-model data in ../shared/data is only on CI and dev machines")
    return path
