"""``--method fst`` and ``--method bounded`` held to the exhaustive oracle under both distortion
semantics, with their default pruning (the pruned R's completion bound, bounded's upper bounds).

Both prune with a lower bound on the distortion still to come. Under Moses' semantics without
``[early-distortion-cost]`` the jump into ``</s>`` is free, and it may leave any open tape but
``<s>``'s (the one that ends last), not only the ``<s>`` tape at j = n: a bound that charged every
tape's leaving jump dropped the best derivation ("sorge gleichermaßen sein": ``fst`` copied the
source through, ``bounded`` lost its lower bound). The oracle enumerates every derivation and
scores it with the scorer, so it shares none of the searches' bounds.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model
from fstdecode.reference import exhaustive

from randmodels import NO_BUDGET, moses_case, random_case
from shared import SEARCH_SETTINGS as SETTINGS, examples

EXAMPLE_INI = "fstdecode/data/moses.ini"

#: (semantics, early distortion cost): the paper's; Moses' with the free jump into </s>; Moses'
#: with [early-distortion-cost] (the jump into </s> charged).
SEMANTICS = [("paper", False), ("moses", False), ("moses", True)]

#: The methods that claim the optimum with their default pruning.
METHODS = ["fst", "bounded"]


def under(model, semantics: str, early: bool):
    return dataclasses.replace(model, distortion_semantics=semantics, semantics_given=True, early_distortion_cost=early)


def oracle_best(model, sentence) -> float | None:
    """The exhaustive search's best score (None: no derivation within the limit)."""
    problem = Decoder(model).problem(tuple(sentence))
    result = exhaustive.search(problem, exhaustive.ExhaustiveOptions(max_states=NO_BUDGET))
    return result.hypotheses[0][0] if result.hypotheses else None


def assert_proves_the_oracle(model, sentence, method: str) -> None:
    best = oracle_best(model, sentence)
    got = Decoder(model, method).decode(list(sentence))
    if best is None:
        assert got.best is None or not got.optimal
        return
    assert got.optimal, (method, sentence, got.warning if hasattr(got, "warning") else None)
    assert got.best.search_score == pytest.approx(best, abs=1e-6), (method, sentence)
    assert got.upper_bound == pytest.approx(best, abs=1e-6)


def example_lines() -> list[tuple[str, ...]]:
    """The built-in input's lines and the probe's line, and every ordering of three of its words
    (reorderings are where the distortion bounds bite)."""
    with open("fstdecode/data/input.txt", encoding="utf-8") as f:
        lines = [tuple(line.split()) for line in f if line.strip()]
    words = "das muss unsere sorge gleichermaßen sein".split()
    lines.append(("sorge", "gleichermaßen", "sein"))
    lines += list(itertools.permutations(words[2:], 3))
    return lines


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("semantics,early", SEMANTICS)
@pytest.mark.slow
def test_built_in_model_every_line_proven_at_the_oracle(method, semantics, early):
    model = under(load_model(EXAMPLE_INI), semantics, early)
    for sentence in example_lines():
        assert_proves_the_oracle(model, sentence, method)


def test_probe_line_translated_under_moses_semantics():
    # The probe's case, as the issue gives it: exact, dp and exhaustive find "also be concern".
    model = load_model(EXAMPLE_INI, distortion_semantics="moses")
    for method in METHODS:
        got = Decoder(model, method).decode("sorge gleichermaßen sein")
        assert got.best.translation == "also be concern"
        assert got.best.score == pytest.approx(-12.068, abs=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("semantics,early", SEMANTICS)
@settings(max_examples=examples(25), **SETTINGS)
@given(data=st.data())
def test_random_models_proven_at_the_oracle(method, semantics, early, data):
    model, sentence = data.draw(random_case(max_n=5, max_d=4, any_sign=True))
    assert_proves_the_oracle(under(model, semantics, early), sentence, method)


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("semantics,early", SEMANTICS)
@settings(max_examples=examples(20), **SETTINGS)
@given(data=st.data())
def test_random_lexicalized_models_proven_at_the_oracle(method, semantics, early, data):
    model, sentence = data.draw(moses_case(max_n=4, max_d=3))
    assert_proves_the_oracle(under(model, semantics, early), sentence, method)


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=examples(20), **SETTINGS)
@given(data=st.data())
def test_random_trigram_models_proven_at_the_oracle(method, data):
    model, sentence = data.draw(random_case(max_n=4, max_d=3, order=3, any_sign=True))
    for semantics, early in SEMANTICS:
        assert_proves_the_oracle(under(model, semantics, early), sentence, method)


def test_a_compiled_p_decodes_the_probe_line(tmp_path):
    # README's `compile -o P.fst`, then `decode --method fst --phrase-fst P.fst`: the same cascade.
    from shared import run_cli

    p = tmp_path / "P.fst"
    assert run_cli(["compile", "-f", EXAMPLE_INI, "-o", str(p)], "").returncode == 0
    proc = run_cli(["decode", "-f", EXAMPLE_INI, "--method", "fst", "--phrase-fst", str(p)], "sorge gleichermaßen sein\n")
    assert proc.returncode == 0 and proc.stdout == "also be concern\n" and proc.stderr == ""
