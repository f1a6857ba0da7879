"""The lexicalized reordering model: type grammar, orientations, table reading and the features.

Expected values come from Moses' definitions (moses/FF/LexicalReordering/LRModel.cpp, LRState.cpp,
PhraseBasedReorderingState.cpp), worked by hand; the gold n-best lists check the whole feature in
tests/integration/test_golden_lexreo.py.
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import pytest

from fstdecode.decoder import Decoder
from fstdecode.search.base import METHODS
from fstdecode.io.phrase_table import PhrasePair
from fstdecode.io.reordering_table import ReorderingTableError, load_reordering_table
from fstdecode.model.features import FeatureError, Weights
from fstdecode.model.lexical_reordering import (
    LexicalReorderingError,
    ReorderingModel,
    first_orientation,
    orientation,
    parse_reordering_type,
)
from fstdecode.model.model import ModelError, load_model
from fstdecode.problem.scorer import features
from fstdecode.problem.sentence import Phrase
from fstdecode.search.base import OptionsError

from shared import EXAMPLE_DATA, example_ini_text, expect_reader_error


@pytest.mark.parametrize(
    "text, classes, directions, condition, collapse, num_features",
    [
        # the configuration of nearly every published model: 2 directions x 3 orientations
        ("wbe-msd-bidirectional-fe-allff", "msd", ("backward", "forward"), "fe", False, 6),
        # the gold model's type: no prefix, allff by default
        ("msd-bidirectional-fe", "msd", ("backward", "forward"), "fe", False, 6),
        # no direction named: backward, as in Moses
        ("msd-fe", "msd", ("backward",), "fe", False, 3),
        # unidirectional is Moses' old name of backward
        ("phrase-monotonicity-unidirectional-f", "monotonicity", ("backward",), "f", False, 2),
        ("mslr-forward-fe", "mslr", ("forward",), "fe", False, 4),
        # collapseff: one feature per direction
        ("leftright-bidirectional-fe-collapseff", "leftright", ("backward", "forward"), "fe", True, 2),
        # the words may come in any order
        ("fe-bidirectional-msd", "msd", ("backward", "forward"), "fe", False, 6),
    ],
)
def test_type_grammar(text, classes, directions, condition, collapse, num_features):
    cfg = parse_reordering_type(text)
    assert (cfg.classes, cfg.directions, cfg.condition, cfg.collapse) == (classes, directions, condition, collapse)
    assert cfg.num_features == num_features == len(cfg.feature_names())


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("hier-msd-bidirectional-fe", "hierarchical reordering (hier) is not supported"),
        ("msd-bidirectional-fe-sideways", "unknown part 'sideways'"),
        ("bidirectional-fe", "name the orientation classes"),
        ("msd-bidirectional", "name the conditioning (f or fe)"),
    ],
)
def test_type_errors_name_the_problem(text, fragment):
    with pytest.raises(LexicalReorderingError) as info:
        parse_reordering_type(text, "moses.ini:7: ")
    assert str(info.value).startswith("moses.ini:7: ") and fragment in str(info.value)


MSD = parse_reordering_type("msd-bidirectional-fe")
MSLR = parse_reordering_type("mslr-bidirectional-fe")
MONO = parse_reordering_type("monotonicity-bidirectional-fe")
LR = parse_reordering_type("leftright-bidirectional-fe")


@pytest.mark.parametrize(
    "prev, cur, msd, mslr, mono, lr",
    [
        ((0, 1), (2, 3), 0, 0, 0, 0),  # adjacent, to the right: monotone (and right)
        ((2, 3), (0, 1), 1, 1, 1, 1),  # adjacent, to the left: swap (left)
        ((0, 0), (3, 4), 2, 3, 1, 0),  # a gap to the right: discontinuous(-right)
        ((4, 5), (0, 1), 2, 2, 1, 1),  # a gap to the left: discontinuous(-left)
        ((3, 3), (5, 6), 2, 3, 1, 0),
    ],
)
def test_orientations(prev, cur, msd, mslr, mono, lr):
    assert orientation(MSD, prev, cur) == msd
    assert orientation(MSLR, prev, cur) == mslr
    assert orientation(MONO, prev, cur) == mono
    assert orientation(LR, prev, cur) == lr


def test_first_phrase_orientation_against_the_sentence_start():
    # M when the first phrase starts at word 0; else D (msd), DR (mslr), NM (monotonicity); always R (leftright).
    assert [first_orientation(c, 0) for c in (MSD, MSLR, MONO, LR)] == [0, 0, 0, 0]
    assert [first_orientation(c, 2) for c in (MSD, MSLR, MONO, LR)] == [2, 3, 1, 0]


# ---------------------------------------------------------------------------
# The table


def write(path: Path, text: str, gz: bool = False) -> Path:
    if gz:
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_table_takes_ln_and_floors_like_moses(tmp_path):
    for gz in (False, True):
        path = write(tmp_path / f"rt{gz}", "a b ||| x ||| 0.5 1 0 0.25 0.125 1e-50\n", gz)
        table = load_reordering_table(path)
        got = table.lookup(("a", "b"), ("x",))
        assert got == pytest.approx((math.log(0.5), 0.0, -100.0, math.log(0.25), math.log(0.125), -100.0))
        assert table.lookup(("a", "b"), ("y",)) is None


def test_f_table_is_keyed_by_source_alone(tmp_path):
    table = load_reordering_table(write(tmp_path / "rt", "a ||| 0.5 0.5 0.5\n"), conditioned_on_target=False)
    assert table.lookup(("a",), ("anything",)) == pytest.approx((math.log(0.5),) * 3)


@pytest.mark.parametrize(
    "text, lineno, fragment",
    [
        ("a ||| x ||| 0.5 0.5\nb ||| 0.5 0.5\n", 2, "found 2 field(s)"),
        ("a ||| x ||| 0.5 0.5\nb ||| y ||| 0.5\n", 2, "found 1 probabilities but line 1 has 2"),
        ("a ||| x ||| 0.5 -0.5\n", 1, "must be a finite number >= 0"),
        ("a ||| x ||| 0.5 zero\n", 1, "'zero' is not a number"),
        ("\n ||| x ||| 0.5\n", 2, "empty source phrase"),
        ("a ||| x ||| \n", 1, "no probabilities"),
    ],
)
def test_table_errors_name_file_and_line(tmp_path, text, lineno, fragment):
    path = write(tmp_path / "rt", text)
    expect_reader_error(ReorderingTableError, load_reordering_table, path, lineno, fragment)


# ---------------------------------------------------------------------------
# Rows and features


def pair(src: str, tgt: str) -> PhrasePair:
    return PhrasePair(tuple(src.split()), tuple(tgt.split()), (0.0,))


def test_rows_read_backward_then_forward_columns(tmp_path):
    table = load_reordering_table(write(tmp_path / "rt", "a ||| x ||| 0.1 0.2 0.3 0.4 0.5 0.6\n"))
    model = ReorderingModel(MSD, table)
    row = model.row(pair("a", "x"))
    assert row.backward == pytest.approx(tuple(math.log(p) for p in (0.1, 0.2, 0.3)))
    assert row.forward == pytest.approx(tuple(math.log(p) for p in (0.4, 0.5, 0.6)))
    assert model.row(pair("a", "y")).backward == (0.0, 0.0, 0.0)  # missing: no cost


def test_collapsed_forward_row_starts_at_column_one_as_in_moses(tmp_path):
    # LRModel::CreateLRState advances the offset by 1 per collapsed direction, and LRState::CopyScores
    # reads column offset + orientation: the forward row of a collapsed bidirectional model is 1..3.
    cfg = parse_reordering_type("msd-bidirectional-fe-collapseff")
    table = load_reordering_table(write(tmp_path / "rt", "a ||| x ||| 0.1 0.2 0.3 0.4 0.5 0.6\n"))
    row = ReorderingModel(cfg, table).row(pair("a", "x"))
    assert row.forward == pytest.approx(tuple(math.log(p) for p in (0.2, 0.3, 0.4)))
    assert (cfg.feature_index("backward", 2), cfg.feature_index("forward", 2)) == (0, 1)


def test_default_scores_apply_to_missing_pairs(tmp_path):
    table = load_reordering_table(write(tmp_path / "rt", "a ||| x ||| 0.1 0.2 0.3\n"))
    model = ReorderingModel(parse_reordering_type("msd-backward-fe"), table, (math.log(0.5), math.log(0.25), 0.0))
    assert model.row(pair("b", "x")).backward == pytest.approx((math.log(0.5), math.log(0.25), 0.0))


def test_features_of_a_derivation_by_hand(tmp_path):
    # Source 0 1 2, derivation [1] [0] [2]: orientations D (the first phrase does not start at 0),
    # S ([0] ends right before [1] starts), D ([2] after [0]: neither adjacent on the right nor on the left).
    text = "b ||| y ||| 0.1 0.2 0.3 0.4 0.5 0.6\na ||| x ||| 0.7 0.8 0.9 0.15 0.25 0.35\nc ||| z ||| 0.11 0.22 0.33 0.44 0.55 0.66\n"
    model = ReorderingModel(MSD, load_reordering_table(write(tmp_path / "rt", text)))
    phrases = [Phrase(1, 1, pair("b", "y")), Phrase(0, 0, pair("a", "x")), Phrase(2, 2, pair("c", "z"))]
    rows = [model.row(p.pair) for p in phrases]
    got = model.features([(p.start, p.end) for p in phrases], rows)
    ln = math.log
    # backward: b pays its D (0.3); a pays its S (0.8); c pays its D (0.33).
    # forward: b's row for a's orientation S (0.5); a's row for c's orientation D (0.35); c's row unused.
    assert got == pytest.approx((0.0, ln(0.8), ln(0.3) + ln(0.33), 0.0, ln(0.5), ln(0.35)))


# ---------------------------------------------------------------------------
# moses.ini and weights


def lr_ini(tmp_path: Path, line: str, weight: str | None = "LexicalReordering0= 0.1 0.2 0.3 0.4 0.5 0.6") -> Path:
    write(tmp_path / "rt", "das ||| this ||| 0.5 0.25 0.25 0.5 0.25 0.25\n")
    text = example_ini_text().replace("[weight]\n", "[weight]\n" + (weight + "\n" if weight else ""))
    text = text.replace("[feature]\n", f"[feature]\n{line}\n")
    return write(tmp_path / "moses.ini", text)


def test_ini_line_loads_the_model_and_its_weights(tmp_path):
    model = load_model(lr_ini(tmp_path, f"LexicalReordering type=msd-bidirectional-fe num-features=6 path={tmp_path / 'rt'}"))
    assert model.weights.lr == (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
    assert model.reordering.config.num_features == 6 and model.distortion_semantics == "moses"
    overridden = load_model(
        lr_ini(tmp_path, f"LexicalReordering type=msd-bidirectional-fe path={tmp_path / 'rt'}"),
        weights=["lr=1,1,1,1,1,2"],
    )
    assert overridden.weights.lr == (1, 1, 1, 1, 1, 2)


def line_of(ini: Path, prefix: str) -> int:
    return next(i for i, text in enumerate(ini.read_text(encoding="utf-8").splitlines(), 1) if text.startswith(prefix))


def test_ini_errors_name_the_line(tmp_path):
    ini = lr_ini(tmp_path, f"LexicalReordering type=hier-msd-bidirectional-fe path={tmp_path / 'rt'}")
    lineno = line_of(ini, "LexicalReordering")
    expect_reader_error(LexicalReorderingError, load_model, ini, lineno, "hierarchical reordering (hier) is not supported")
    ini = lr_ini(tmp_path, f"LexicalReordering type=msd-backward-fe num-features=6 path={tmp_path / 'rt'}")
    expect_reader_error(LexicalReorderingError, load_model, ini, lineno, "num-features=6 but type 'msd-backward-fe' has 3")


def test_weight_counts_must_match(tmp_path):
    ini = lr_ini(tmp_path, f"LexicalReordering type=msd-backward-fe path={tmp_path / 'rt'}")
    with pytest.raises(ModelError, match="6 weight\\(s\\) for 3 lexicalized reordering feature"):
        load_model(ini)
    with pytest.raises(ModelError, match="no lexicalized reordering"):
        load_model(EXAMPLE_DATA / "moses.ini", weights=["lr=1"])
    with pytest.raises(FeatureError, match="not a number"):
        Weights().override(["lr=1,x"])


def test_missing_weight_line_means_one_each(tmp_path, caplog):
    ini = lr_ini(tmp_path, f"LexicalReordering type=msd-backward-fe path={tmp_path / 'rt'}", weight=None)
    assert load_model(ini).weights.lr == (1.0, 1.0, 1.0)
    assert "LexicalReordering0 has no weight" in caplog.text


def test_scorer_total_includes_the_weighted_lr_features(tmp_path):
    model = load_model(lr_ini(tmp_path, f"LexicalReordering type=msd-bidirectional-fe path={tmp_path / 'rt'}"))
    das = next(p for p in model.table.lookup(("das",)) if p.target == ("this",))
    muss = model.table.lookup(("muss",))[0]
    phrases = [Phrase(0, 0, das), Phrase(1, 1, muss)]
    f = features(2, phrases, model.lm, model.table.num_scores, reordering=model.reordering, semantics="moses")
    # das is first and starts at 0: backward M (ln 0.5); muss follows monotonically: das's forward M (ln 0.5);
    # muss is not in the table: no cost.
    assert f.lr == pytest.approx((math.log(0.5), 0.0, 0.0, math.log(0.5), 0.0, 0.0))
    without = Weights(**{**model.weights.__dict__, "lr": (0.0,) * 6})
    assert model.weights.total(f) - without.total(f) == pytest.approx(0.1 * math.log(0.5) + 0.4 * math.log(0.5))


# ---------------------------------------------------------------------------
# Every method serves such a model (the native core; exhaustive, the oracle, in Python)


def test_every_method_serves_lexicalized_reordering(tmp_path):
    model = load_model(lr_ini(tmp_path, f"LexicalReordering type=msd-bidirectional-fe path={tmp_path / 'rt'}"))
    paper = load_model(lr_ini(tmp_path, f"LexicalReordering type=msd-bidirectional-fe path={tmp_path / 'rt'}"),
                       distortion_semantics="paper")
    for method in METHODS:
        for m, semantics in ((model, "moses"), (paper, "paper")):
            decoder = Decoder(m, method)
            assert decoder.semantics == semantics, method
            best = decoder.decode("das muss").best
            assert len(best.features.lr) == 6 and best.search_score == pytest.approx(best.score), method


def test_a_moses_ini_defaults_to_moses_semantics(tmp_path):
    ini = write(tmp_path / "moses.ini", example_ini_text())
    model = load_model(ini)
    assert model.distortion_semantics == "moses" and not model.semantics_given
    # Without lexicalized reordering too: every method searches Moses' space.
    for method in METHODS:
        assert Decoder(model, method).semantics == "moses"
    paper = load_model(ini, distortion_semantics="paper")
    assert {Decoder(paper, m).semantics for m in METHODS} == {"paper"}
    assert load_model().distortion_semantics == "paper"  # the built-in example is the paper's
    with pytest.raises(ModelError, match="unknown distortion semantics"):
        load_model(ini, distortion_semantics="pharaoh")


def test_a_model_with_reordering_pickles(tmp_path):
    # Process pools (and Dask) ship the model to workers.
    import pickle

    model = load_model(lr_ini(tmp_path, f"LexicalReordering type=msd-bidirectional-fe path={tmp_path / 'rt'}"))
    copy = pickle.loads(pickle.dumps(model))
    das = next(p for p in model.table.lookup(("das",)) if p.target == ("this",))
    assert copy.reordering.row(das) == model.reordering.row(das) != copy.reordering.row(model.table.lookup(("muss",))[0])
    assert Decoder(copy, "stack").decode("das muss").best.score == Decoder(model, "stack").decode("das muss").best.score


def test_ini_default_scores_cost_the_missing_pairs(tmp_path):
    # muss is not in the table: with default-scores it pays ln of the defaults, as Moses' LRState::CopyScores.
    ini = lr_ini(
        tmp_path,
        f"LexicalReordering type=msd-bidirectional-fe default-scores=0.5,0.25,0.25,0.125,0.5,0.5 path={tmp_path / 'rt'}",
    )
    model = load_model(ini)
    das = next(p for p in model.table.lookup(("das",)) if p.target == ("this",))
    muss = model.table.lookup(("muss",))[0]
    f = features(2, [Phrase(0, 0, das), Phrase(1, 1, muss)], model.lm, model.table.num_scores, reordering=model.reordering)
    # backward M: das ln 0.5 (its row) + muss ln 0.5 (default); forward M: das's row ln 0.5.
    assert f.lr == pytest.approx((2 * math.log(0.5), 0.0, 0.0, math.log(0.5), 0.0, 0.0))
    bad = lr_ini(tmp_path, f"LexicalReordering type=msd-bidirectional-fe default-scores=0.5,0.5 path={tmp_path / 'rt'}")
    expect_reader_error(LexicalReorderingError, load_model, bad, line_of(bad, "LexicalReordering"), "default-scores has 2 value(s)")
