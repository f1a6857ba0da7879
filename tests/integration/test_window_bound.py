"""The exact search's heuristic against every completion, found exhaustively (issue 25).

``--method exact`` bounds each phrase of a completion by the LM contexts that the phrases which
can still precede it may leave: those ending at an uncovered position within the distortion
limit, or the state's last phrase (``ExactBounds::before_end``, ``AStar::window_bound`` in
native/exact.cpp). ``exact_bound_check`` walks every state reachable from the start with the
search's own transitions and no floor, scores each state's best completion exhaustively, and
reports by how much a completion ever exceeds the state's bound (it must not), and by how much
the bound ever exceeds the plain one, open_bound (it must not: it is tighter). Random models
with LM orders 1 to 5, with and without lexicalized reordering, weights of any sign; the
transitions' scores themselves are checked against the independent scorer elsewhere
(tests/integration/test_exact.py and the oracles).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from randmodels import moses_case, problem_of, random_case
from shared import SEARCH_SETTINGS as SETTINGS, examples

from fstdecode._native import core
from fstdecode.reference import exhaustive
from fstdecode.search.native import native_form


#: LM orders 1 to 5; order 5's walks (about 1 s an example) run in the full suite only.
ORDERS = [1, 2, 3, 4, pytest.param(5, marks=pytest.mark.slow)]


def check(problem):
    found = core.exact_bound_check(native_form(problem).core)
    assert found.windows  # d <= 31 on these models: the window bounds are in use
    assert found.worst <= 1e-9, f"a completion exceeds its state's bound by {found.worst}"
    assert found.looser <= 1e-9, f"the window bound exceeds open_bound by {found.looser}"
    return found


@pytest.mark.parametrize("order", ORDERS)
@settings(max_examples=examples(25), **SETTINGS)
@given(data=st.data())
@pytest.mark.slow
def test_no_completion_exceeds_the_bound(order, data):
    problem = problem_of(data.draw(random_case(max_n=5, order=order, any_sign=True)))
    found = check(problem)
    # the walk's best derivation is the best of the exhaustive oracle's (the independent scorer's)
    scores = [problem.score(phrases)[1] for phrases in exhaustive.derivations(problem)]
    assert found.best == pytest.approx(max(scores, default=-math.inf), abs=1e-9)


@pytest.mark.parametrize("order", ORDERS)
@settings(max_examples=examples(20), **SETTINGS)
@given(data=st.data())
@pytest.mark.slow
def test_no_completion_exceeds_the_bound_with_lexicalized_reordering(order, data):
    model, sentence = data.draw(moses_case(max_n=5, order=order))
    check(problem_of((model, sentence)))
