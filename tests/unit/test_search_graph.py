"""A lattice written as Moses' ``-output-search-graph`` (``fstdecode inspect FILE --search-graph``)."""

from __future__ import annotations

import re

import pytest

from fstdecode.decoder import Decoder
from fstdecode.fst.search_graph import SearchGraphError, search_graph
from fstdecode.fst.tools import read_fst
from fstdecode.model.model import load_model

from shared import EXAMPLE_DATA, run_cli

LINE = (EXAMPLE_DATA / "input.txt").read_text(encoding="utf-8").splitlines()[0]


@pytest.fixture(scope="module")
def lattice(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lat")
    decoder = Decoder(load_model(), "fst", lattice_dir=str(folder), lattice_prune=2.0)
    best = decoder.decode(LINE, id=7).best
    return read_fst(folder / "7.fst"), best, folder / "7.fst"


def test_the_forward_chain_is_the_best_derivation(lattice):
    graph, best, _ = lattice
    hyps = {h.id: h for h in search_graph(graph)}
    start = hyps[0]
    assert start.fscore == pytest.approx(best.score, rel=1e-5)
    chain, k = [], start.forward
    while k != -1:
        h = hyps[k]
        chain.append((h.start, h.end, h.out))
        assert h.fscore == pytest.approx(best.score, rel=1e-5)  # every step of the best path
        k = h.forward
    assert chain and sorted(chain) == sorted((p.start, p.end, " ".join(p.target)) for p in best.phrases)


def test_each_hypothesis_is_consistent(lattice):
    graph, best, _ = lattice
    hyps = {h.id: h for h in search_graph(graph)}
    assert len(hyps) > 3  # the pruned lattice keeps more than the best path
    for h in hyps.values():
        if h.id == 0:
            continue
        assert h.stack == h.end + 1  # source-ordered placement: words 0..end covered
        assert h.back == 0 or hyps[h.back].end < h.start  # its predecessor placed earlier source words
        assert h.fscore <= hyps[0].fscore + 1e-4  # none beats the best path
        if h.recombined is not None:  # recombined into a better hypothesis entering the same state
            assert hyps[h.recombined].score >= h.score - 1e-6
        if h.forward == -1:
            assert h.fscore == pytest.approx(h.score)


def test_cli_writes_moses_lines(lattice):
    _, _, path = lattice
    proc = run_cli(["inspect", str(path), "--search-graph"])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert re.fullmatch(r"7 hyp=0 stack=0 forward=\d+ fscore=\S+", lines[0])
    pattern = r"7 hyp=\d+ stack=\d+ back=\d+ score=\S+ transition=\S+( recombined=\d+)? forward=-?\d+ fscore=\S+ covered=\d+-\d+ out=.+"
    assert all(re.fullmatch(pattern, line) for line in lines[1:]), lines
    assert run_cli(["inspect", str(path), "--search-graph", "--id", "3"]).stdout.startswith("3 hyp=0")


def test_not_a_lattice_is_an_error(tmp_path):
    import pywrapfst as fst

    f = fst.VectorFst()
    f.add_state()
    f.set_start(0)
    with pytest.raises(SearchGraphError, match="not a lattice"):
        search_graph(f)
