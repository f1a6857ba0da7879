"""Identical output whatever runs the searches: this process, the local pool, a Dask LocalCluster.

For each search method, the text, JSON and n-best outputs (3-best) of the three runners must be
the same bytes, except JSON's ``stats.seconds`` and ``stats.phases`` (wall times). On the built-in example (with an
empty line, an unknown word and a failing line) and on Hansards lines when ../shared/data is there.
"""

from __future__ import annotations

import json

import pytest

from shared import EXAMPLE_DATA, hansards_input, hansards_model

from fstdecode.cli.output import json_line, nbest_lines, text
from fstdecode.decoder import Decoder
from fstdecode.run import ProcessRunner, SerialRunner, decode_lines

pytestmark = pytest.mark.slow

EXAMPLE_LINES = (EXAMPLE_DATA / "input.txt").read_text(encoding="utf-8").splitlines()
EXAMPLE_INPUT = (EXAMPLE_LINES + ["", "xyzzy plugh", "das <s>"]) * 2

# Every method but exhaustive (which enumerates all derivations: minutes on a 6-word line).
EXAMPLE_METHODS = {"dp": {}, "beam": {}, "bounded": {}, "stack": {}, "coverage": {}, "exact": {}, "fst": {}}
# Hansards (bigram LM, d=4, 20 translations): the fast methods, and exact with a small budget so
# that lines go over it (the fallback path must be identical too).
HANSARDS_METHODS = {"stack": {}, "beam": {"beam_size": 20}, "exact": {"max_states": 2000}}


def outputs(decoder: Decoder, lines: list[str], runner) -> list[tuple[str, str, str]]:
    """(text, JSON without stats.seconds and stats.phases (wall times), n-best lines) per input line."""
    weights = decoder.model.weights
    rows = []
    for result in decode_lines(decoder, lines, runner):
        obj = json.loads(json_line(result))
        obj.get("stats", {}).pop("seconds", None)
        obj.get("stats", {}).pop("phases", None)
        rows.append((text(result), json.dumps(obj), "\n".join(nbest_lines(result, weights))))
    return rows


@pytest.fixture(scope="module")
def runners():
    """The pool, and a LocalCluster when the cluster extra is installed (CI installs it)."""
    pool = ProcessRunner(2, chunk_size=2)
    try:
        from fstdecode.run.dask import ClusterSpec, DaskRunner
    except ImportError:
        yield {"pool": pool}
        return
    with DaskRunner(ClusterSpec(local_workers=2), chunk_size=3) as dask:
        yield {"pool": pool, "dask": dask}


def check_identical(decoder: Decoder, lines: list[str], runners: dict) -> None:
    single = outputs(decoder, lines, SerialRunner())
    assert len(single) == len(lines)
    for name, runner in runners.items():
        assert outputs(decoder, lines, runner) == single, name


@pytest.mark.parametrize("method", list(EXAMPLE_METHODS))
def test_identical_on_the_example(example_model, runners, method):
    check_identical(Decoder(example_model, method, nbest=3, **EXAMPLE_METHODS[method]), EXAMPLE_INPUT, runners)


@pytest.mark.parametrize("method", list(HANSARDS_METHODS))
def test_identical_on_hansards(runners, method):
    model = hansards_model(lm_order=2, distortion_limit=4, table_limit=20)
    lines = hansards_input()[:8]
    check_identical(Decoder(model, method, nbest=3, **HANSARDS_METHODS[method]), lines, runners)
