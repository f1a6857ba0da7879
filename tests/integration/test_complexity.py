"""Tests of fstdecode.research: the TSP and Knight mappings, Section 5.2's bit-strings, g(k).

References are independent of the decoder: Held–Karp (exact subset DP),
brute-force enumeration of permutations, of p-structures (Definition 4)
and of coverage vectors (BFS), and numbers worked out by hand from the
papers.
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode.research.bitstrings import (
    BitstringError,
    count_live_coverages,
    enumerate_coverages,
    paper_lower_bound,
    section52_problem,
    section52_spans,
)
from fstdecode.research.bounds import (
    BoundError,
    count_p_structures,
    g,
    g_as_printed,
    states_per_position_bound,
    transition_bound,
)
from fstdecode.research.knight import (
    held_karp_circuit,
    knight_problem,
    solve_circuit,
    unlimited_d,
    write_knight_model,
)
from fstdecode.research.problems import EdgeLM, ProblemError, word_for_word_problem
from fstdecode.research.scaling import ModelShape, random_problem
from fstdecode.research.tsp import (
    Graph,
    Tour,
    TspError,
    distortion_limit_for_bandwidth,
    held_karp_path,
    parse_graph,
    read_graph,
    solve_tsp,
    tour_of,
    tsp_problem,
)
from fstdecode.model.features import Weights
from fstdecode.search import signature_dp

from randmodels import NO_BUDGET
from shared import examples, run_cli


# ----------------------------------------------------------------------------- helpers


def hamiltonian_paths(graph: Graph) -> list[tuple[tuple[int, ...], float]]:
    """Every 1-n path visiting each vertex once, with its cost, by brute force over permutations."""
    n = graph.n
    out = []
    for middle in itertools.permutations(range(2, n)):
        tour = (1, *middle, n)
        cost = graph.path_cost(tour)
        if cost is not None:
            out.append((tour, cost))
    return out


@st.composite
def bandwidth_graphs(draw, max_n: int = 8, max_k: int = 4):
    """(graph, k): a random graph on 2..max_n vertices whose edges all span <= k, integer weights."""
    n = draw(st.integers(2, max_n))
    k = draw(st.integers(1, max_k))
    density = draw(st.sampled_from([0.5, 0.8, 1.0]))
    weights = {}
    for i in range(1, n + 1):
        for j in range(max(1, i - k), min(n, i + k) + 1):
            if i != j and draw(st.floats(0, 1)) < density:
                weights[(i, j)] = float(draw(st.integers(-5, 20)))
    return Graph(n, weights), k


@st.composite
def digraphs(draw, max_n: int = 6):
    """A random directed graph on 2..max_n vertices (any bandwidth), integer weights."""
    n = draw(st.integers(2, max_n))
    density = draw(st.sampled_from([0.4, 0.7, 1.0]))
    weights = {
        (i, j): float(draw(st.integers(0, 20)))
        for i in range(1, n + 1)
        for j in range(1, n + 1)
        if i != j and draw(st.floats(0, 1)) < density
    }
    return Graph(n, weights)


def same_cost(a, b) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, abs_tol=1e-9))


# ----------------------------------------------------------------------------- g(k), bounds


def test_g_values_and_brute_force():
    # The appendix recurrence with g(0) = 1 (the empty set has one p-structure, ∅).
    assert [g(k) for k in range(7)] == [1, 2, 6, 20, 76, 312, 1384]
    for k in range(5):
        assert count_p_structures(k) == g(k), k


def test_g_as_printed_undercounts():
    # Lemma 4's g(0) = 0 gives g(2) = 4, but {1, 2} has 6 p-structures (listed in bounds.py).
    assert g_as_printed(2) == 4 and count_p_structures(2) == 6


def test_bounds():
    assert states_per_position_bound(3, 2) == g(5) * 2**4
    assert transition_bound(3, 2, 4) == g(5) * 2**4 * 25 * 4
    with pytest.raises(BoundError):
        g(-1)


# ----------------------------------------------------------------------------- EdgeLM


def test_impossible_bigrams_give_minus_inf_not_nan():
    lm = EdgeLM({("<s>", "a"): -1.0})  # a -> </s> is missing: no derivation is possible
    result = signature_dp.search(word_for_word_problem(["x"], ["a"], lm, 2), signature_dp.DpOptions(max_states=NO_BUDGET))
    assert result.hypotheses[0][0] == -math.inf


def test_zero_lm_weight_refused():
    # 0 * -inf would be nan.
    with pytest.raises(ProblemError):
        word_for_word_problem(["x"], ["a"], EdgeLM(), 1, Weights(lm=0.0))


# ----------------------------------------------------------------------------- TSP mapping


def test_tsp_problem_layout():
    graph = Graph(5, {(1, 3): 2.0, (3, 2): 1.0, (2, 4): 4.0, (4, 5): 1.0, (5, 4): 7.0})
    problem = tsp_problem(graph, 2)
    assert problem.n == 3 and problem.end == 4  # vertices 2..4 are tokens; vertex 5 is </s>
    assert problem.d == distortion_limit_for_bandwidth(2) == 3
    assert all(len(problem.by_start[p]) == 1 for p in range(1, 4))  # one single-word phrase each
    ids = {w: problem.word_id(w) for w in ("<s>", "v2", "v3", "v4", "</s>")}
    assert problem.bigram(ids["<s>"], ids["v3"]) == -2.0
    assert problem.bigram(ids["v4"], ids["</s>"]) == -1.0
    assert problem.bigram(ids["v2"], ids["v3"]) == -math.inf  # no edge 2 -> 3


def test_tsp_junctions_grow_with_the_path_not_its_square():
    # The signature DP's junction table holds only the pairs within the distortion limit: about
    # (2d + 1) per word, where a |V| x |V| table took 1 GB at 10,000 vertices.
    n, k = 600, 2
    graph = Graph(n, {(i, j): float(j - i) for i in range(1, n) for j in range(i + 1, min(n, i + k) + 1)})
    problem = tsp_problem(graph, k)
    lam = problem.junctions()
    entries = sum(len(row) for row in lam.values())
    assert entries <= (2 * problem.d + 2) * (problem.n + 2)
    assert solve_tsp(graph, k).cost == n - 1  # the path 1, 2, ..., n


@settings(max_examples=examples(150), deadline=None)
@given(bandwidth_graphs())
def test_tsp_agrees_with_held_karp(case):
    graph, k = case
    dp, hk = solve_tsp(graph, k), held_karp_path(graph)
    assert same_cost(dp.cost, hk.cost)
    if dp.cost is not None:
        assert sorted(dp.tour) == list(range(1, graph.n + 1)) and dp.tour[0] == 1 and dp.tour[-1] == graph.n
        assert math.isclose(graph.path_cost(dp.tour), dp.cost)


@settings(max_examples=examples(40), deadline=None)
@given(bandwidth_graphs(max_n=7, max_k=3))
def test_finite_derivations_are_exactly_the_tours(case):
    # The mapping is a bijection: the distinct derivations with a finite score are the 1-n paths.
    graph, k = case
    problem = tsp_problem(graph, k)
    result = signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET, nbest=10_000))
    found = {tour_of(problem, ph): -score for score, ph in result.hypotheses if score > -math.inf}
    expected = dict(hamiltonian_paths(graph))
    assert found.keys() == expected.keys()
    assert all(math.isclose(found[t], expected[t]) for t in found)


def test_why_d_is_k_plus_one():
    # The only tour, 1 3 5 2 4 6, has bandwidth 3 and jumps |5 + 1 - 2| = 4 = k + 1.
    tour = (1, 3, 5, 2, 4, 6)
    graph = Graph(6, {(u, v): 1.0 for u, v in zip(tour, tour[1:])})
    assert graph.bandwidth == 3
    assert solve_tsp(graph).tour == tour
    problem = tsp_problem(graph)
    problem.d = 3  # one less than k + 1: the tour is no longer a derivation
    assert signature_dp.search(problem, signature_dp.DpOptions(max_states=NO_BUDGET)).hypotheses[0][0] == -math.inf


def test_tsp_trivial_sizes():
    assert solve_tsp(Graph(1)).tour == (1,)
    assert solve_tsp(Graph(2, {(1, 2): 3.5})).cost == 3.5
    assert solve_tsp(Graph(2, {(2, 1): 3.5})).cost is None


def test_held_karp_by_hand():
    # 1 -> 2 -> 3 -> 4 costs 3; 1 -> 3 -> 2 -> 4 costs 1 + 1 + 0.5.
    graph = Graph(4, {(1, 2): 1, (2, 3): 1, (3, 4): 1, (1, 3): 1, (3, 2): 1, (2, 4): 0.5})
    assert held_karp_path(graph) == Tour(2.5, (1, 3, 2, 4))


@pytest.mark.parametrize(
    "text, message",
    [
        ("1 2\n", "x.txt:1: expected 'i j weight'"),  # too few fields
        ("# c\n1 b 3\n", "x.txt:2: vertices must be integers"),  # the comment line still counts
        ("0 2 1\n", "x.txt:1: vertices are numbered from 1"),
        ("2 2 1\n", "x.txt:1: self-loop"),
        ("1 2 nan\n", "x.txt:1: weight 'nan' is not finite"),
        ("1 2 1\n\n1 2 4\n", "x.txt:3: edge 1 -> 2 already given on line 1"),
        ("1 2 1\n1 4 1\n", "x.txt:2: edge 1 -> 4 spans 3 > bandwidth 2"),  # with bandwidth=2
    ],
)
def test_parse_errors_name_file_and_line(text, message):
    with pytest.raises(TspError, match=message.replace(">", ".")):
        parse_graph(text, "x.txt", bandwidth=2)


def test_read_graph(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("# a path\n1 2 1.5  # first edge\n2 3 -1\n", encoding="utf-8")
    graph = read_graph(path, vertices=4)
    assert graph.n == 4 and graph.weights == {(1, 2): 1.5, (2, 3): -1.0}
    with pytest.raises(TspError, match="no such file"):
        read_graph(tmp_path / "missing.txt")


def test_cli_tsp(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("1 3 1\n3 2 1\n2 4 2\n3 4 5\n1 2 3\n4 5 1\n3 5 9\n", encoding="utf-8")
    out = run_cli(["tsp", str(path)])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["cost 5", "tour 1 3 2 4 5"]
    bad = run_cli(["tsp", str(path), "--bandwidth", "1"])
    assert bad.returncode == 2 and f"{path}:1: edge 1 -> 3 spans 2 > bandwidth 1" in bad.stderr
    path.write_text("1 2 1\n", encoding="utf-8")
    none = run_cli(["tsp", str(path), "--vertices", "3"])
    assert none.returncode == 1 and none.stdout.startswith("no tour")


# ----------------------------------------------------------------------------- Knight


@settings(max_examples=examples(100), deadline=None)
@given(digraphs())
def test_knight_agrees_with_held_karp(graph):
    dp, hk = solve_circuit(graph), held_karp_circuit(graph)
    assert same_cost(dp.cost, hk.cost)
    if dp.cost is not None:
        assert dp.tour[0] == dp.tour[-1] == 1 and sorted(dp.tour[:-1]) == list(range(1, graph.n + 1))


def test_knight_layout():
    graph = Graph(4, {(1, 2): 1.0, (2, 1): 2.0, (3, 4): 3.0})
    problem = knight_problem(graph)
    assert problem.sentence.words == ("f2", "f3", "f4") and problem.d == unlimited_d(graph) == 3
    assert [p.target for p in problem.sentence.all_phrases()] == [("e2",), ("e3",), ("e4",)]  # one-to-one
    bos, eos, e2 = problem.word_id("<s>"), problem.word_id("</s>"), problem.word_id("e2")
    assert problem.bigram(bos, e2) == -1.0 and problem.bigram(e2, eos) == -2.0


def test_knight_needs_unlimited_d():
    # The only circuit visits the words right to left: 1 5 4 3 2 1; the jump 5 -> 4 is 2, 2 -> </s> is 4.
    order = (1, 5, 4, 3, 2, 1)
    graph = Graph(5, {(u, v): 1.0 for u, v in zip(order, order[1:])})
    assert solve_circuit(graph).tour == order
    assert solve_circuit(graph, d=2).cost is None


@pytest.mark.parametrize("seed", [0, 1, 2])  # three graphs: feasible and infeasible ones
def test_knight_files_decode_like_held_karp(tmp_path, seed):
    import random

    from fstdecode.decoder import Decoder
    from fstdecode.model.model import load_model

    rng = random.Random(seed)
    n = 6
    graph = Graph(n, {(i, j): float(rng.randint(0, 9)) for i in range(1, n + 1) for j in range(1, n + 1)
                      if i != j and rng.random() < 0.5})
    table, arpa, sentence = write_knight_model(graph, tmp_path)
    model = load_model(phrase_table=table, lm=arpa, distortion_limit=n - 1, weights=["distortion=0"])
    score = Decoder(model, "dp").decode(sentence.read_text(encoding="utf-8").strip()).derivations[0].score
    best = held_karp_circuit(graph)
    if best.cost is None:
        assert score == -math.inf
    else:
        assert math.isclose(-score, best.cost, abs_tol=1e-9)


# ----------------------------------------------------------------------------- Section 5.2


def test_section52_spans_match_the_paper():
    # n = 10: paper phrases (2,2) (3,3) (4,4) (5,5) (4,5) and (6,6) .. (8,9); search positions are paper − 1.
    paper = [(2, 2), (3, 3), (4, 4), (5, 5), (4, 5), (6, 6), (7, 7), (8, 8), (9, 9), (8, 9)]
    assert section52_spans(10) == [(s - 1, t - 1) for s, t in paper]
    with pytest.raises(BitstringError):
        section52_spans(12)


def test_paper_example_derivation():
    # (1,1)(4,5)(9,9)(7,7)(3,3)(2,2)(6,6)(8,8)(10,10), paper positions, n = 10, d = 5:
    # every jump is within d, and its prefix (1,1)(4,5)(9,9) gives b4 = 1, b8 = 0.
    derivation = [(1, 1), (4, 5), (9, 9), (7, 7), (3, 3), (2, 2), (6, 6), (8, 8), (10, 10)]
    assert max(abs(a[1] + 1 - b[0]) for a, b in zip(derivation, derivation[1:])) <= 5
    prefix = {p - 2 for s, t in derivation[1:3] for p in range(s, t + 1)}  # token bits
    live = enumerate_coverages(section52_spans(10), 8, 5).live
    assert sum(1 << b for b in prefix) in live


# One, two and three blocks; the larger two take seconds.
@pytest.mark.parametrize("n", [6, pytest.param(10, marks=pytest.mark.slow), pytest.param(14, marks=pytest.mark.slow)])
def test_section52_count_matches_enumeration(n):
    N, d = n - 2, 5
    brute = enumerate_coverages(section52_spans(n), N, d)
    assert count_live_coverages(section52_spans(n), N, d) == len(brute.live)
    assert len(brute.live) >= paper_lower_bound(n)
    assert brute.live <= brute.reachable


@settings(max_examples=examples(120), deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda N: st.tuples(
            st.just(N),
            st.lists(st.tuples(st.integers(1, N), st.integers(0, 2)), max_size=2 * N).map(
                lambda xs: sorted({(s, min(N, s + k)) for s, k in xs})
            ),
            st.integers(0, 4),
        )
    )
)
def test_live_count_matches_enumeration_on_random_spans(case):
    N, spans, d = case
    assert count_live_coverages(spans, N, d) == len(enumerate_coverages(spans, N, d).live)


def test_section52_signature_dp_finds_a_derivation():
    result = signature_dp.search(section52_problem(10, 5), signature_dp.DpOptions(max_states=NO_BUDGET))
    assert result.hypotheses[0][0] > -math.inf


# ----------------------------------------------------------------------------- scaling models


def test_random_problem_has_exact_l_and_h():
    shape = ModelShape(h=2, max_len=3)
    problem = random_problem(12, 3, shape, seed=1)
    for p in range(1, 13):
        opts = problem.by_start[p]
        singles = [o for o in opts if o.t == p]
        ends_here = [o for q in range(1, p + 1) for o in problem.by_start[q] if o.t == p]
        assert len({o.first for o in opts}) == len({o.last for o in ends_here}) == len(singles) == shape.h
        assert len(opts) == shape.h * min(shape.max_len, 13 - p)
    assert random_problem(12, 5, shape, seed=1).sentence == problem.sentence  # same instance for every d
