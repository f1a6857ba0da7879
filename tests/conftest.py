"""Fixtures shared by tests/unit and tests/integration.

* ``example_model`` / ``example_decoder``: the built-in example (fstdecode/data), loaded once.
* ``shared_data`` / ``moses_de_en``: the real models in ../shared/data; a test that asks for
  them is skipped, with the reason, on a machine without that folder.

Random models are hypothesis strategies (``randmodels.random_case``): hypothesis draws a new
model per example, which a fixture cannot do. The plain helpers (paths, the CLI runner, ARPA
text, the hypothesis settings of the search tests) are in ``shared.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from shared import data_path

# Hypothesis draws the same examples on every run (derandomize): the suite's time and outcome do
# not depend on luck, so CI stays within its limits (one unlucky draw of a 6-word trigram case
# once made the exhaustive oracle take 5 minutes). `--hypothesis-profile=explore` draws fresh
# examples, and keeps failing ones in .hypothesis/, for a search for new counterexamples.
settings.register_profile("default", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("default")


def pytest_configure(config: pytest.Config) -> None:
    """The fast subset (``-m "not slow"``) draws fewer hypothesis examples (:func:`shared.examples`)."""
    import shared

    shared.FAST_SUBSET = "not slow" in (config.getoption("markexpr") or "")


@pytest.fixture(scope="session")
def example_model():
    """The built-in example model (frozen; tests must not change it)."""
    from fstdecode.model.model import load_model

    return load_model()


@pytest.fixture(scope="session")
def example_decoder(example_model):
    """A DP decoder of the built-in example model."""
    from fstdecode.decoder import Decoder

    return Decoder(example_model)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (skips the test when the folder is absent)."""
    return data_path()


@pytest.fixture(scope="session")
def moses_de_en(shared_data) -> Path:
    """Moses' regression-test model (de-en, trigram LM, early distortion cost) with its truth files."""
    return data_path("moses-early-distortion-de-en")


@pytest.fixture(autouse=True)
def _fstdecode_logger_restored():
    """Each test starts with the ``fstdecode`` logger as a library leaves it: a CLI run in the
    same process (``main()``) gives it a stderr handler and stops propagation, which would hide
    later tests' warnings from ``caplog``."""
    import logging

    log = logging.getLogger("fstdecode")
    saved = (log.handlers[:], log.level, log.propagate)
    yield
    log.handlers[:], log.level, log.propagate = saved[0], saved[1], saved[2]
