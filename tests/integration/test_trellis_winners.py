"""Moses' recombination winners on the stack decoder's n-best lists (``Hypothesis.winners``).

Moses scores an n-best entry that is not its winning chain of hypotheses through ``TrellisPath``:
the path's hypothesis i extends the winner of step i - 1's recombination key by phrase i, and
where that hypothesis lost its own key's recombination the path's numbers are the last winner's
chain minus the winner's plus its own, in float (fstdecode/reference/moses_float.py). The stack decoder
reports, per phrase, the winner of its key where it is not that hypothesis.

Oracle: with a beam that keeps everything, a key's winner is the best of every prefix that reaches
it, and (the future from a key depending on the key alone) that is the prefix of the best complete
derivation through the key. The exhaustive search lists the complete derivations and the
independent scorer scores them; the keys are Moses' (coverage, the KenLM state of the target so far,
the last phrase's end, with lexicalized reordering its start and weighted forward scores; a complete
hypothesis' key holds no coverage or LM state: every one's is the same). Then, in exact arithmetic,
a path's trellis numbers equal its own: the emulation's must agree to float precision.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from randmodels import moses_case, problem_of, random_case
from shared import SEARCH_SETTINGS as SETTINGS, examples

from fstdecode.reference.moses_float import MosesFloat
from fstdecode.decoder import Decoder
from fstdecode.io.arpa import BOS
from fstdecode.search.native_stack import stack_search
from fstdecode.search.stack import StackOptions

#: A beam that keeps every hypothesis (the oracle's keys hold every prefix).
EVERYTHING = dict(beam_size=10**6, beam_threshold=None, early_pruning=False)


def _keys(problem, phrases):
    """Moses' recombination key after each phrase of a complete derivation."""
    lm, order = problem.lm, problem.lm.order
    option = {o.phrase: o for opts in problem.by_start for o in opts}
    out, covered, words = [], set(), [BOS]
    for i, p in enumerate(phrases):
        covered.update(range(p.start, p.end + 1))
        words.extend(p.target)
        lr = (p.start, option[p].lr_next) if problem.reordering is not None else None
        if i == len(phrases) - 1:
            out.append(("complete", p.end, lr))
            continue
        context = tuple(words[-(order - 1):]) if order > 1 else ()
        while context and not lm.extends(context):  # KenLM's right state
            context = context[1:]
        out.append((frozenset(covered), context, p.end, lr))
    return out


def _oracle(problem, derivations):
    """Each key's winner: the prefix of the best complete derivation through it; None where two
    different prefixes tie (too close to call)."""
    best: dict = {}
    for score, phrases in derivations:
        for i, key in enumerate(_keys(problem, phrases)):
            got = best.get(key)
            prefix = phrases[: i + 1]
            if got is None or score > got[0] + 1e-9:
                best[key] = (score, prefix, got is not None and abs(score - got[0]) <= 1e-9 and got[1] != prefix)
            elif abs(score - got[0]) <= 1e-9 and got[1] != prefix:
                best[key] = (got[0], got[1], True)
    return best


def _check(problem):
    from fstdecode.problem.problem import SearchLimitError
    from fstdecode.reference import exhaustive

    try:  # every derivation is listed: small problems only (k-best lists of that size)
        derivations = [(problem.score(ph)[1], ph) for ph in exhaustive.derivations(problem, limit=20000)]
    except SearchLimitError:
        derivations = []
    assume(0 < len(derivations) <= 3000)
    best = _oracle(problem, derivations)
    found = stack_search(problem, StackOptions(nbest=len(derivations) + 1, **EVERYTHING))
    assert len(found.hypotheses) == len(derivations)  # nothing pruned
    assert found.winners is not None and len(found.winners) == len(found.hypotheses)
    for (_, phrases), winners in zip(found.hypotheses, found.winners):
        keys = _keys(problem, phrases)
        assert len(winners) == len(phrases)
        won = ()
        for i, (p, w) in enumerate(zip(phrases, winners)):
            _, prefix, tied = best[keys[i]]
            if tied:
                return
            assert (w or won + (p,)) == prefix  # what the decoder names is the key's winner
            assert (w is None) == (won + (p,) == prefix)  # and only where the path's hypothesis lost
            won = prefix
    return found


@pytest.mark.parametrize("order", [1, 2, 3])
@settings(max_examples=examples(25), **SETTINGS)
@given(data=st.data())
@pytest.mark.slow
def test_winners_are_the_best_prefix_of_each_key(order, data):
    _check(problem_of(data.draw(random_case(max_n=5, order=order, any_sign=True))))


@pytest.mark.parametrize("order", [2, 3])
@settings(max_examples=examples(20), **SETTINGS)
@given(data=st.data())
@pytest.mark.slow
def test_winners_with_lexicalized_reordering(order, data):
    _check(problem_of(data.draw(moses_case(max_n=5, order=order))))


def test_no_winners_without_an_nbest_list():
    from fstdecode.model.model import load_model
    from pathlib import Path

    model = load_model(Path(__file__).parents[2] / "fstdecode" / "data" / "moses.ini")
    problem = Decoder(model).problem(tuple("das ist ein kleines haus".split()))
    assert stack_search(problem, StackOptions()).winners is None


@settings(max_examples=examples(20), **SETTINGS)
@given(data=st.data())
def test_trellis_numbers_equal_the_path_own_to_float_precision(data):
    """In exact arithmetic a path's trellis breakdown and total are its own chain's (each lost
    winner's chain is subtracted, the hypothesis' own added): the float emulation agrees with the
    independent scorer to float precision, on random models with lexicalized reordering."""
    # (An LM as SRILM and KenLM write them: a context's KenLM state then decides the later scores
    # as Moses' recombination assumes; a backoff on a context that extends to nothing would be
    # charged by fstdecode's state when the context is dropped, by Moses' chain later.)
    model, sentence = data.draw(moses_case(max_n=6, order=3, srilm_lm=True))
    # A reordering weight of 0 makes rows that differ only there one recombination key (the
    # search keys on weighted rows; Moses on the table's): docs/moses-outputs.md says so.
    weights = dataclasses.replace(model.weights, lr=tuple(w or 0.25 for w in model.weights.lr))
    model = dataclasses.replace(model, weights=weights)
    decoder = Decoder(model, "stack", nbest=50, **EVERYTHING)
    result = decoder.decode(" ".join(sentence))
    assume(result.derivations)
    emulator = MosesFloat(model, tuple(model.features))
    trellised = [d for d in result.derivations if any(w is not None for w in d.winners)]
    event("a path through a lost recombination" if trellised else "winning chains only")
    for d in trellised:  # (the de-en gold, tests/unit/test_moses_float.py, always has some)
        got = emulator.emulate(d)
        assert got.total == pytest.approx(d.score, rel=1e-5, abs=1e-3)
        own = emulator.chain(tuple(d.source), d.phrases, len(d.features.tm))[0]
        assert got.values["lm"][0] == pytest.approx(d.features.lm, rel=1e-5, abs=1e-3)
        for name in ("lm", "tm", "lr", "distortion", "word", "phrase"):
            for a, b in zip(got.values[name], own[name]):
                assert a == pytest.approx(float(b), rel=1e-5, abs=1e-3), name
