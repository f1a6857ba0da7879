"""Moses' lattice inputs (fstdecode.io.lattice): PLF word lattices and confusion networks, their
checks, Moses' node distances, and the OpenFst acceptor (fstdecode.fst.lattice_fst).

Oracles: Python's own ``ast.literal_eval`` (PLF is Python tuple syntax, and its quoting agrees with
Moses' for ``\\'`` and ``\\\\``); the files' own structure (blank-line blocks, one column a line);
a Floyd-Warshall written here as Moses' FloydWarshall.cpp runs it; Moses' own n-best lists
(``Distortion0`` in all 36 n-best entries of phrase.lattice-distortion's truth); and paths enumerated here.
"""

from __future__ import annotations

import ast
import itertools
import math
import pickle
import re

import pytest
import pywrapfst as fst
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fstdecode.fst.lattice_fst import LatticeFstError, arc_cost, to_fst, write_fst
from fstdecode.io.lattice import (
    EPSILON,
    Arc,
    Lattice,
    LatticeInputError,
    read_confusion_networks,
    read_lattices,
    read_plf,
    write_confusion_network,
    write_plf,
)

from shared import data_path, examples


def where_of(line: str, marker: str | int | None) -> int:
    """The 1-based column of ``marker``'s first occurrence in ``line``; None: just past its end;
    a negative number: counted from the end (-1: the last character)."""
    if marker is None:
        return len(line) + 1
    if isinstance(marker, int):
        return len(line) + 1 + marker
    return line.index(marker) + 1


# ----------------------------------------------------------------------------- PLF errors

PLF_ERRORS = [
    # unbalanced: the last ')' missing, then two missing; one ')' too many
    ("((('A',1.0,1),),", None, "a ')' is missing"),
    ("((('A',1.0,1),)", None, "a ')' is missing"),
    ("((('A',1.0,1", None, "the line ends inside the arc"),
    ("((('A',1.0,1),),))", -1, "text after the ')'"),
    ("((('A',1.0,1),),) x", "x", "text after the ')'"),
    # a missing comma between arcs, and between the word and the score
    ("((('A',1.0,1)('B',1.0,1),),)", "('B'", "expected ',' or ')'"),
    ("((('A' 1.0,1),),)", "1.0", "expected ',' after the word"),
    # a missing comma between two fields reads as one field, then finds the next one
    ("((('A',1.0 1),),)", "1),", "expected ',' or ')'"),
    # a missing quote: none, no closing one, double quotes
    ("(((A,1.0,1),),)", "A", "expected a word in single quotes"),
    ("((('A,1.0,1),),)", "'A", "no closing quote"),
    ('((("A",1.0,1),),)', '"A"', "not \""),
    # an escaped closing quote leaves the word open
    ("((('A\\',1.0,1),),)", "'A", "no closing quote"),
    # distances: 0, past the last node (node 2 of a 2-column lattice is the last), not whole
    ("((('A',1.0,0),),)", "0),", "distance 0"),
    ("((('A',1.0,3),),(('B',1.0,1),),)", "3),", "points past the last node, 2"),
    ("((('A',1.0,1.0),),)", "1.0),", "not a whole number"),
    ("((('A',1.0,-1),),)", "-1", "not a whole number"),
    # scores: not a number, NaN, infinite, negative (Moses: NaN), over a 32-bit float
    ("((('A',x,1),),)", "x", "is not a number"),
    ("((('A',nan,1),),)", "nan", "not a finite number"),
    ("((('A',-inf,1),),)", "-inf", "not a finite number"),
    ("((('A',-0.5,1),),)", "-0.5", "is negative"),
    ("((('A',1e39,1),),)", "1e39", "overflows a 32-bit float"),
    # the wrong number of scores (num-input-features 1), reported at the arc's '('
    ("((('A',0.5,0.5,1),),)", "('A'", "has 2 score(s); num-input-features is 1"),
    ("((('A',1),),)", "('A'", "has 0 score(s)"),
    # a trailing comma inside an arc: Moses would read an empty distance
    ("((('A',1.0,1,),),)", "),)", "a ',' before the arc's ')'"),
    # an empty word, a word with a space
    ("((('',1.0,1),),)", "''", "an empty word"),
    ("((('a b',1.0,1),),)", "'a b'", "holds whitespace"),
    # named scores: malformed, or followed by a plain one
    ("((('A',1.0,x=y,1),),)", "x=y", "not name=number"),
    ("((('A',x=1,1.0,1),),)", "1.0", "follows named scores"),
    # no path from node 0 to node 2: node 1 has no arc (its column is empty)
    ("((('A',1.0,1),),(),)", "()", "column 1 has no arc"),
    # no column at all; an empty line; something else than a lattice
    ("()", "()", "no column"),
    ("   ", None, "an empty line"),
    ('<seg id="1">((("A",1,1),),)</seg>', "<seg", "expected '('"),
    # every path reads only *EPS* (an empty sentence), at the first arc
    ("((('*EPS*',1.0,1),),(('*EPS*',1.0,1),('*EPS*',1.0,1),),)", "('*EPS*'", "reads only *EPS*"),
    ("((('*EPS*',1.0,2),('*EPS*',1.0,1),),(('*EPS*',1.0,1),),)", "('*EPS*'", "reads only *EPS*"),
]


@pytest.mark.parametrize("line, marker, message", PLF_ERRORS)
def test_plf_errors_name_the_line_and_column(line, marker, message):
    with pytest.raises(LatticeInputError) as err:
        read_plf(line, "in.plf:7", 1)
    column = where_of(line, marker)
    assert str(err.value).startswith(f"in.plf:7:{column}: "), str(err.value)
    assert message in str(err.value)
    assert err.value.column == column and err.value.where == "in.plf:7"
    assert str(pickle.loads(pickle.dumps(err.value))) == str(err.value)  # as a process pool returns it


def test_read_lattices_numbers_lines_and_refuses_an_inner_blank_line():
    good = "((('A',1.0,1),),)"
    assert [n for n, _ in read_lattices([good, good, "", ""], "x.plf", 1)] == [1, 2]  # trailing blanks: fine
    with pytest.raises(LatticeInputError, match=r"^x\.plf:2:1: a blank line .* from line 4 on"):
        list(read_lattices([good, "", " ", good], "x.plf", 1))
    with pytest.raises(LatticeInputError, match=r"^x\.plf:2:3: "):  # an error names its own line
        list(read_lattices([good, "(('A',1.0,1),)"], "x.plf", 1))


# ----------------------------------------------------------------------------- confusion-network errors

CN_ERRORS = [
    # a word without its score at the end of the line (an odd number of fields, k = 1)
    (1, ["a 0.5 b"], 1, "b", "has 0 of its 1 score(s)"),
    # a word where a score should be
    (1, ["a b 0.5"], 1, "b", "'b' is not a number"),
    # k = 2: the second score missing, then a word in the second score's place
    (2, ["a 0.5"], 1, "a", "has 1 of its 2 score(s)"),
    (2, ["a 0.5 0.5 b 0.5 c"], 1, "c", "'c' is not a number"),
    # NaN and infinite scores (Moses' >> cannot read them either)
    (1, ["a nan"], 1, "nan", "not a finite number"),
    (1, ["x 1", "a inf"], 2, "inf", "not a finite number"),
    # a second blank line between networks, and a blank first line: Moses ends its input there
    (1, ["a 1", "", "", "b 1"], 3, None, "a blank line where a confusion network should start"),
    (1, ["", "a 1"], 1, None, "a blank line"),
    # every column only *EPS*: no word; reported at the network's first word
    (1, ["b 1", "", "\t*EPS* 1", "*EPS* 0.5"], 3, "*EPS*", "reads only *EPS*"),
]


@pytest.mark.parametrize("k, lines, line_number, marker, message", CN_ERRORS)
def test_confusion_network_errors_name_the_line_and_column(k, lines, line_number, marker, message):
    with pytest.raises(LatticeInputError) as err:
        list(read_confusion_networks(lines, "in.cn", k))
    column = 1 if marker is None else where_of(lines[line_number - 1], marker)
    assert str(err.value).startswith(f"in.cn:{line_number}:{column}: "), str(err.value)
    assert message in str(err.value)


def test_a_confusion_network_with_eps_in_every_column_but_words_is_read():
    """An ASR network: the empty reading exists, but so do words; accepted, and the flag says so."""
    ((_, cn),) = read_confusion_networks(["a 0.6 *EPS* 0.4", "*EPS* 0.3 b 0.7", ""], "x", 1)
    assert cn.has_empty_path() and cn.has_word_path()
    assert not read_plf("((('a',1,1),('*EPS*',1,1),),(('b',1,1),),)", "x:1", 1).has_empty_path()


# ----------------------------------------------------------------------------- hand-written round trips


def test_plf_with_escapes_several_scores_and_long_arcs():
    line = r"((('it\'s', 0.5, 0.25, 2), ('\\', 1, 1e-3, 1),), (('(x,y)',0.125,1,1)), (('*EPS*',1.0,0.0,1),),)"
    expected = Lattice(
        3,
        (
            Arc(0, 2, "it's", (0.5, 0.25)),
            Arc(0, 1, "\\", (1.0, 0.001)),
            Arc(1, 2, "(x,y)", (0.125, 1.0)),  # a column of one arc without its trailing comma: Moses reads it
            Arc(2, 3, EPSILON, (1.0, 0.0)),
        ),
    )
    lattice = read_plf(line, "x:1", 2)
    assert lattice == expected
    assert read_plf(write_plf(lattice), "x:1", 2) == expected
    assert _literal_arcs(write_plf(lattice)) == _literal_arcs(line) == _arcs(expected)
    # A named score is read and dropped, as Moses' WordLattice drops it.
    assert read_plf("((('a',0.5,lm=2.5,1),),)", "x:1", 1) == Lattice(1, (Arc(0, 1, "a", (0.5,)),))


def test_plf_whitespace_and_tabs_between_the_parts():
    assert read_plf(" ( ( ( 'a' ,\t0.5 , 1 ) , ) , )\r", "x:1", 1) == Lattice(1, (Arc(0, 1, "a", (0.5,)),))


def test_confusion_network_with_eps_round_trip():
    lines = ["le 0.75 la 0.25", "*EPS* 0.5 chat 0.5", "", "noir 1"]
    read = list(read_confusion_networks(lines, "x.cn", 1))
    assert [n for n, _ in read] == [1, 4]
    first = read[0][1]
    assert first == Lattice(
        2,
        (Arc(0, 1, "le", (0.75,)), Arc(0, 1, "la", (0.25,)), Arc(1, 2, EPSILON, (0.5,)), Arc(1, 2, "chat", (0.5,))),
        from_confusion_network=True,
    )
    written = write_confusion_network(first) + write_confusion_network(read[1][1])
    assert [lat for _, lat in read_confusion_networks(written, "x.cn", 1)] == [lat for _, lat in read]
    # No scores at all (num-input-features 0): every field is a word.
    ((_, bare),) = read_confusion_networks(["a b", "c"], "x.cn", 0)
    assert [(a.start, a.word, a.scores) for a in bare.arcs] == [(0, "a", ()), (0, "b", ()), (1, "c", ())]


def test_input_features_as_moses_computes_them():
    cn = Lattice(1, (Arc(0, 1, "a", (1.5, -0.5, 0.5)), Arc(0, 1, EPSILON, (0.0, 1.0, 1e-60))), True)
    # A confusion network's probabilities are clamped into [0, 1] (ConfusionNet.cpp:149-155).
    assert cn.input_features(cn.arcs[0]) == (0.0, -100.0, pytest.approx(math.log(0.5)))
    assert cn.input_features(cn.arcs[1], real_word_count=True) == (-100.0, 0.0, -100.0, 0.0)
    plf = Lattice(1, (Arc(0, 1, "a", (2.0, 0.0, 1e-50)),))
    # A lattice's are not (above 1 is a bonus); 1e-50 is 0 as a 32-bit float: -100.
    assert plf.input_features(plf.arcs[0], real_word_count=True) == (pytest.approx(math.log(2)), -100.0, -100.0, -1.0)


def test_direct_construction_checks_the_invariants():
    with pytest.raises(ValueError, match="node 1 has no arc"):
        Lattice(2, (Arc(0, 2, "a"),))
    with pytest.raises(ValueError, match="not a forward arc"):
        Lattice(1, (Arc(0, 0, "a"),))
    with pytest.raises(ValueError, match="confusion network"):
        Lattice(2, (Arc(0, 2, "a"), Arc(1, 2, "b")), True)


# ----------------------------------------------------------------------------- Moses' regression inputs


def _ini_num_input_features(ini: str) -> int:
    return int(re.search(r"^InputFeature .*num-input-features=(\d+)", ini, re.M).group(1))


def test_the_lattice_distortion_inputs_parse_as_python_reads_them():
    folder = data_path("moses-regression", "tests", "phrase.lattice-distortion")
    k = _ini_num_input_features((folder / "moses.ini").read_text())
    lines = (folder / "to-translate.txt").read_text(encoding="utf-8").splitlines()
    read = list(read_lattices(lines, "to-translate.txt", k))
    assert len(read) == len(lines) == 7
    for (number, lattice), line in zip(read, lines):
        literal = ast.literal_eval(line)
        assert lattice.size == len(literal), number
        assert _arcs(lattice) == _literal_arcs(line), number
    assert [(lat.size, len(lat.arcs)) for _, lat in read] == [(2, 2), (3, 4), (3, 4), (3, 4), (6, 9), (1, 1), (1, 1)]
    assert read[6][1].arcs[0].word == "'"


def test_the_lexicalized_reordering_cn_input_parses_block_by_block():
    folder = data_path("moses-regression", "tests", "phrase.lexicalized-reordering-cn")
    k = _ini_num_input_features((folder / "moses.ini").read_text())
    text = (folder / "to-translate.txt").read_text(encoding="utf-8")
    lines = text.split("\n")
    blocks = []  # the file's own structure: (first line number, rows) of each run of non-blank lines
    for number, line in enumerate(lines, 1):
        if line.strip():
            if number == 1 or not lines[number - 2].strip():
                blocks.append((number, []))
            blocks[-1][1].append(line.split())
    read = list(read_confusion_networks(lines, "to-translate.txt", k))
    assert len(read) == len(blocks) == 3
    for (first, cn), (block_first, rows) in zip(read, blocks):
        assert first == block_first and cn.from_confusion_network
        assert [[(a.word, a.scores) for a in column] for column in cn.columns()] == [
            [(row[i], tuple(float(v) for v in row[i + 1 : i + 1 + k])) for i in range(0, len(row), k + 1)] for row in rows
        ]
    assert sum(cn.size for _, cn in read) == sum(len(rows) for _, rows in blocks) == 86


def test_lattice_distances_reproduce_moses_distortion_in_its_nbest():
    """Every n-best entry of phrase.lattice-distortion's truth: its phrases (one arc each, the table
    being one word to one word) taken in target order, scored with distortion_distance, give
    Moses' Distortion0, over every way of placing them on a path of the lattice."""
    folder = data_path("moses-regression", "tests", "phrase.lattice-distortion")
    source_of = {}
    for row in (folder / "phrase-table").read_text().splitlines():
        src, tgt = (part.strip() for part in row.split("|||")[:2])
        source_of[tgt] = src
    lines = (folder / "to-translate.txt").read_text(encoding="utf-8").splitlines()
    lattices = [lat for _, lat in read_lattices(lines, "to-translate.txt", 1)]
    compared = 0
    truth = (folder / "truth" / "results.txt").read_text(encoding="utf-8")
    for sentence, output, distortion in re.findall(r"^TRANSLATION_(\d+)_NBEST_\d+=(.*?) \|\|\| .*Distortion0= (-?\d+)", truth, re.M):
        lattice = lattices[int(sentence)]
        words = [source_of.get(t, t) for t in output.split()]  # an unknown word is copied
        found = set()
        for choice in itertools.product(*([a for a in lattice.arcs if a.word == w] for w in words)):
            spans = sorted((a.start, a.end) for a in choice)
            if [s for s, _ in spans] != [0] + [e for _, e in spans[:-1]] or spans[-1][1] != lattice.size:
                continue  # not one path from node 0 to the last node
            total, prev = 0, None
            for arc in choice:
                total += lattice.distortion_distance(prev, arc.start)
                prev = arc.end
            found.add(total)
        assert found == {-int(distortion)}, (sentence, output)
        compared += 1
    assert compared == 36


# ----------------------------------------------------------------------------- properties

WORDS = ["a", "b", "it's", "back\\slash", "'", "\\", "(x,y)", "ü", EPSILON, "12"]


@st.composite
def lattices(draw, confusion: bool = False, min_scores: int = 0):
    """A random lattice (a confusion network when ``confusion``) with a word on some path."""
    size = draw(st.integers(1, 6))
    k = draw(st.integers(min_scores, 3))
    # 1e-300 is 0 as a 32-bit float; below 1e-30 no float32 subnormal, whose log the tests' oracle
    # (in doubles) would not match to 1e-3
    score = st.one_of(st.sampled_from([0.0, 1.0, 1e-300, 0.1, 2.5]), st.floats(1e-30, 10))
    arcs = []
    for i in range(size):
        for _ in range(draw(st.integers(1, 3))):
            end = i + 1 if confusion else draw(st.integers(i + 1, size))
            scores = tuple(draw(st.lists(score, min_size=k, max_size=k)))
            arcs.append(Arc(i, end, draw(st.sampled_from(WORDS)), scores))
    lattice = Lattice(size, tuple(arcs), confusion)
    assume(lattice.has_word_path())
    return lattice


def _arcs(lattice: Lattice) -> list[tuple]:
    return [(a.start, a.end, a.word, a.scores) for a in lattice.arcs]


def _literal_arcs(line: str) -> list[tuple]:
    """The arcs of a PLF line as Python reads it (each ``(word, *scores, distance)``)."""
    return [
        (i, i + alt[-1], alt[0], tuple(float(s) for s in alt[1:-1]))
        for i, column in enumerate(ast.literal_eval(line))
        for alt in (column if isinstance(column[0], tuple) else (column,))
    ]


@settings(max_examples=examples(200), deadline=None)
@given(lattices())
def test_plf_round_trip(lattice):
    line = write_plf(lattice)
    assert read_plf(line, "x:1", lattice.num_scores) == lattice
    assert _literal_arcs(line) == _arcs(lattice)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(lattices(confusion=True), min_size=1, max_size=3))
def test_confusion_network_round_trip(networks):
    k = networks[0].num_scores
    networks = [n for n in networks if n.num_scores == k]
    lines = [line for n in networks for line in write_confusion_network(n)]
    assert [n for _, n in read_confusion_networks(lines, "x.cn", k)] == networks


MAX_DIST = 2**31 // 2  # Moses' INT_MAX / 2, its "no path"


def floyd_warshall(lattice: Lattice) -> list[list[int | None]]:
    """Moses' FloydWarshall.cpp as it runs: unit edges, the diagonal starting at MAX_DIST."""
    n = lattice.size + 1
    dist = [[MAX_DIST] * n for _ in range(n)]
    for a in lattice.arcs:
        dist[a.start][a.end] = 1
    for k in range(n):
        for i in range(n):
            for j in range(n):
                dist[i][j] = min(dist[i][j], dist[i][k] + dist[k][j])
    return [[None if d >= MAX_DIST else d for d in row] for row in dist]


@settings(max_examples=examples(200), deadline=None)
@given(lattices())
def test_distances_are_moses_floyd_warshall(lattice):
    assert [list(row) for row in lattice.distances()] == floyd_warshall(lattice)


@settings(max_examples=examples(100), deadline=None)
@given(lattices(confusion=True), st.data())
def test_on_a_confusion_network_the_distortion_is_the_plain_distance(network, data):
    """InputType::ComputeDistortionDistance (InputType.cpp:52-61), Moses' rule for a sentence or a
    confusion network: |prev_end - start|, and start itself at the beginning."""
    start = data.draw(st.integers(0, network.size - 1))
    prev_end = data.draw(st.one_of(st.none(), st.integers(1, network.size)))
    assume(prev_end != start + 1)  # the previous phrase would cover column ``start``: never asked
    assert network.distortion_distance(prev_end, start) == abs((prev_end or 0) - start)


# ----------------------------------------------------------------------------- the OpenFst acceptor


def test_fst_arcs_are_the_lattice_arcs():
    lattice = read_plf("((('A',0.5,1),('Z',0.25,2),('*EPS*',1.0,1),),(('B',1.0,1),),(('C',0.125,1),),)", "x:1", 1)
    machine = to_fst(lattice, [2.0])
    symbols = machine.input_symbols()
    got = sorted(
        (state, symbols.find(arc.ilabel), symbols.find(arc.olabel), round(float(arc.weight), 5), arc.nextstate)
        for state in machine.states()
        for arc in machine.arcs(state)
    )
    ln = math.log
    assert got == sorted([
        (0, "A", "A", round(-2 * ln(0.5), 5), 1),
        (0, "Z", "Z", round(-2 * ln(0.25), 5), 2),
        (0, "<eps>", "<eps>", 0.0, 1),
        (1, "B", "B", 0.0, 2),
        (2, "C", "C", round(-2 * ln(0.125), 5), 3),
    ])
    assert machine.start() == 0 and machine.num_states() == 4
    assert [s for s in machine.states() if float(machine.final(s)) != math.inf] == [3]
    printed = machine.print().splitlines()
    assert "2\t3\tC\tC\t4.15888" in printed and printed[-1] == "3"  # fstprint's text, the final state last
    with pytest.raises(LatticeFstError, match="1 InputFeature weight"):
        to_fst(lattice, [1.0], real_word_count=True)


def test_write_fst_reads_back(tmp_path):
    lattice = read_plf("((('a',0.5,1),),)", "x:1", 1)
    write_fst(lattice, [1.0], tmp_path / "l.fst")
    back = fst.Fst.read(str(tmp_path / "l.fst"))
    assert back.num_states() == 2 and back.input_symbols().find("a") == 1


def _paths(lattice: Lattice, node: int = 0):
    """Every path from ``node`` to the final node, as lists of arcs."""
    if node == lattice.size:
        yield []
        return
    for arc in lattice.columns()[node]:
        for rest in _paths(lattice, arc.end):
            yield [arc, *rest]


@settings(max_examples=examples(150), deadline=None)
@given(lattices(min_scores=1), st.data())
def test_fst_shortest_path_is_the_best_scoring_path(lattice, data):
    weights = data.draw(st.lists(st.floats(-2, 2), min_size=lattice.num_scores + 1, max_size=lattice.num_scores + 1))

    def score(arc: Arc) -> float:  # Moses' value of each score: ln p floored at -100; then the word count
        values = [max(math.log(p), -100.0) if p > 0 else -100.0 for p in arc.scores]
        return sum(w * v for w, v in zip(weights, values + [0.0 if arc.word == EPSILON else -1.0]))

    best = max(sum(score(a) for a in path) for path in _paths(lattice))
    machine = to_fst(lattice, weights, real_word_count=True)
    shortest = fst.shortestpath(machine)
    total = sum(float(a.weight) for s in shortest.states() for a in shortest.arcs(s))
    assert total == pytest.approx(-best, rel=1e-4, abs=1e-3)
    assert float(fst.shortestdistance(machine, reverse=True)[0]) == pytest.approx(-best, rel=1e-4, abs=1e-3)
    assert arc_cost(lattice, lattice.arcs[0], weights, True) == pytest.approx(-score(lattice.arcs[0]), rel=1e-4, abs=1e-3)
