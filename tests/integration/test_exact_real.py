"""On every real model the code reads, ``--method exact`` proves its result and no beam or stack
setting beats it (a search error of the exact search would show as a beam scoring higher); the
cascade (``--method fst``, its pruned R) proves the same optimum on every sentence.

Every sentence of every test set is checked (Hansards at order 3 takes about a minute and a half:
its longest sentences need up to 16 s each).
"""

from __future__ import annotations

import pytest

from fstdecode.decoder import Decoder

from realmodels import LINES as SAMPLED, MODELS, sentences

#: (method, options) of the heuristic searches compared with the exact one.
SETTINGS = [
    ("stack", dict(beam_size=1)),
    ("stack", dict(beam_size=10)),
    ("stack", dict(beam_size=100)),
    ("stack", dict(beam_size=10, distortion_estimate=False, early_pruning=False)),
    ("beam", dict(beam_size=1)),
    ("beam", dict(beam_size=10)),
]

LINES = {"hansards-lm2": 48, "hansards-lm3": 48, "de-en": 5, "toy-numbers": 3}


@pytest.fixture(scope="module", params=list(MODELS))
def model(request, tmp_path_factory):
    return request.param, MODELS[request.param](tmp_path_factory)


@pytest.mark.slow
def test_exact_is_proven_and_never_beaten(model):
    name, loaded = model
    exact = Decoder(loaded, "exact")
    cascade = Decoder(loaded, "fst")
    others = [Decoder(loaded, method, **options) for method, options in SETTINGS]
    checked = 0
    for line in range(LINES[name]):
        for sentence in sentences(name, line):
            proven = exact.decode(sentence)
            assert proven.optimal, (name, line, proven.reason)
            best = proven.best.search_score
            assert proven.upper_bound == pytest.approx(best, abs=1e-6)
            via_fst = cascade.decode(sentence)
            assert via_fst.optimal, (name, line, via_fst.reason)
            assert via_fst.best.search_score == pytest.approx(best, abs=1e-6)
            assert via_fst.upper_bound == pytest.approx(best, abs=1e-6)
            for decoder in others:
                got = decoder.decode(sentence)
                if got.best is not None:
                    assert got.best.search_score <= best + 1e-6, (name, line, decoder.method, decoder.options)
            checked += 1
    assert checked == {"hansards-lm2": 48, "hansards-lm3": 48, "de-en": 5}.get(name, checked)


#: Every method with small budgets: a line over budget keeps its best derivation (or the stack
#: decoder's), which must still be scored right and never beat exact's proof.
EVERY_METHOD = [
    ("dp", dict(nbest=3, max_states=40_000)),
    ("bounded", dict(max_states=40_000)),
    ("coverage", dict(nbest=3, max_states=5_000)),
    ("fst", dict(nbest=3, max_states=40_000)),
    ("exact", dict(nbest=3)),
    ("stack", dict(nbest=3)),
    ("stack", dict(max_states=300)),
    ("beam", dict(nbest=3)),
    ("beam", dict(max_states=300)),
]


@pytest.mark.slow
def test_every_method_reports_the_scorers_scores_and_never_beats_exact(model):
    # What replaced the native-vs-Python agreement on these models: every reported derivation's
    # running score is the scorer's value, k-best lists come best first, a proven result is
    # proven by exact too, and nothing scores above exact's certificate.
    name, loaded = model
    exact = Decoder(loaded, "exact")
    decoders = [Decoder(loaded, method, **options) for method, options in EVERY_METHOD]
    for line in SAMPLED[name]:
        for sentence in sentences(name, line):
            proven = exact.decode(sentence)
            for decoder in decoders:
                got = decoder.decode(sentence)
                if got.best is None:
                    assert got.error is not None, (name, line, decoder.method)
                    continue
                scores = [d.score for d in got.derivations]
                assert scores == sorted(scores, reverse=True)
                for d in got.derivations:
                    assert d.search_score == pytest.approx(d.score, abs=1e-6), (name, line, decoder.method)
                if proven.optimal:
                    assert got.best.score <= proven.upper_bound + 1e-6, (name, line, decoder.method)
                    if got.optimal:
                        assert got.best.score == pytest.approx(proven.best.score, abs=1e-6)
