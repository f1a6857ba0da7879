"""Golden check: the scorer reproduces Moses' lexicalized-reordering n-best lists feature by feature.

``moses-lexreo-europarl-fr-en/truth/moses-nbest-100.txt`` holds Moses' 100-best
lists (plain lists: its moses.ini's ``100 distinct`` on one line is no distinct list to Moses)
of the 5 sentences, with every feature value and
the segmentation. Each entry is rebuilt as a derivation from the phrase table
and scored with that folder's moses.ini (5-gram LM, msd-bidirectional-fe
reordering, d = 6, Moses' distortion semantics): every LexicalReordering, LM,
TM, Distortion and WordPenalty value and the total must match to the 6
significant digits Moses printed (relative 1e-5, or 1e-4 absolute near 0).
The 1-best totals must also match ``SCORE_i`` of truth/results.txt.
"""

from __future__ import annotations

import re

import pytest

from fstdecode.model.model import load_model
from fstdecode.problem.scorer import check_distortion_limit, features

from golden import candidate_derivations, closest_tm, parse_nbest
from shared import data_path, run_cli

pytestmark = pytest.mark.slow  # the 5-gram LM and the tables load in seconds, twice (both ARPA readers)

#: Moses prints 6 significant digits.
REL = 1e-5
#: Values printed as 0, or within rounding of it.
ABS = 1e-4


def close(a: float, b: float) -> bool:
    return a == pytest.approx(b, rel=REL, abs=ABS)


# Both ARPA readers at order 5, and the native reader of the probing binary (moses.binlm.ini).
@pytest.fixture(scope="module", params=["native", "python", "binlm"])
def golden(request):
    folder = data_path("moses-lexreo-europarl-fr-en")
    # The scorer needs every pair, not the top 20.
    if request.param == "binlm":
        model = load_model(folder / "moses.binlm.ini", table_limit=0)
        assert model.lm.core is not None  # the core's KenLMBinary, not the kenlm package
    else:
        model = load_model(folder / "moses.ini", table_limit=0)
    inputs = [line.split() for line in (folder / "to-translate.txt").read_text(encoding="utf-8").splitlines()]
    entries = parse_nbest((folder / "truth" / "moses-nbest-100.txt").read_text(encoding="utf-8"))
    results = (folder / "truth" / "results.txt").read_text(encoding="utf-8")
    scores = {int(i) - 1: float(v) for i, v in re.findall(r"^SCORE_(\d+) = (\S+)$", results, re.M)}
    return model, inputs, entries, scores


def rescored(model, words, entry):
    """The entry's derivation (the candidate closest on TM features), its features and total."""
    err, f, phrases = closest_tm(
        entry.feats["PhraseDictionaryMemory0"],
        candidate_derivations(model.table, words, entry),
        lambda phrases: features(
            len(words), phrases, model.lm, model.table.num_scores, reordering=model.reordering,
            semantics=model.distortion_semantics, early_distortion_cost=model.early_distortion_cost,
        ),
    )
    return err, f, phrases


def test_every_nbest_entry_is_reproduced(golden):
    model, inputs, entries, _ = golden
    assert len(entries) == 500 and {e.sent for e in entries} == set(range(5))
    w = model.weights
    for e in entries:
        words = inputs[e.sent]
        err, f, phrases = rescored(model, words, e)
        where = f"sentence {e.sent} entry {e.rank}"
        assert all(close(a, b) for a, b in zip(f.tm, e.feats["PhraseDictionaryMemory0"])), where
        check_distortion_limit(len(words), phrases, model.distortion_limit, "moses")  # Moses' own derivations
        assert len(f.lr) == len(e.feats["LexicalReordering0"]) == 6, where
        for k, (mine, gold) in enumerate(zip(f.lr, e.feats["LexicalReordering0"])):
            assert close(mine, gold), f"{where}: LexicalReordering0[{k}] {mine} != {gold}"
        assert close(f.lm, e.feats["KENLM0"][0]), where
        assert close(f.distortion, e.feats["Distortion0"][0]), where
        assert close(f.word, e.feats["WordPenalty0"][0]), where
        assert close(w.total(f), e.total), where


def test_one_best_totals_match_results(golden):
    model, inputs, entries, scores = golden
    assert sorted(scores) == list(range(5))
    for e in entries:
        if e.rank == 0:
            _, f, _ = rescored(model, inputs[e.sent], e)
            assert model.weights.total(f) == pytest.approx(scores[e.sent], rel=REL), f"sentence {e.sent}"


def test_the_model_comes_from_the_ini(golden):
    model = golden[0]
    assert model.weights.lr == (0.3,) * 6 and model.weights.distortion == 0.5
    assert model.reordering.config.classes == "msd" and model.reordering.config.directions == ("backward", "forward")
    assert model.distortion_semantics == "moses" and not model.early_distortion_cost
    assert model.distortion_limit == 6 and model.lm.order == 5


# Unfiltered, and filtered two lines at a time (each batch re-reads the phrase table and the
# reordering table filtered to its own sentences: a row lost there would change the scores).
@pytest.mark.parametrize("ini", ["moses.ini", "moses.binlm.ini"])  # the ARPA LM, the probing binary
@pytest.mark.parametrize("filtering", [["--no-filter"], ["--filter", "--filter-chunk", "2"]])
def test_cli_stack_nbest_lines_are_moses_one_best_lines(filtering, ini):
    # End to end: `fstdecode decode -f moses.ini --method stack --format nbest` prints, for each
    # sentence, Moses' own 1-best: the same translation and segmentation, and the same features
    # (LexicalReordering0 included) and total to the 6 digits printed (Moses sums in float).
    folder = data_path("moses-lexreo-europarl-fr-en")
    proc = run_cli(
        ["decode", "-f", str(folder / ini), "--method", "stack", "--format", "nbest", *filtering],
        (folder / "to-translate.txt").read_text(encoding="utf-8"),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    ours = parse_nbest(proc.stdout)
    gold = [e for e in parse_nbest((folder / "truth" / "moses-nbest-100.txt").read_text(encoding="utf-8")) if e.rank == 0]
    assert len(ours) == len(gold) == 5
    for mine, moses in zip(ours, gold):
        assert (mine.sent, mine.translation, mine.segmentation) == (moses.sent, moses.translation, moses.segmentation)
        assert mine.feats.keys() == moses.feats.keys()
        for name, values in moses.feats.items():
            assert all(close(a, b) for a, b in zip(mine.feats[name], values)), (mine.sent, name)
        assert close(mine.total, moses.total)
