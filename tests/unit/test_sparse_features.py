"""fstdecode.model.sparse: Moses' stateless sparse features, sparse weights and their n-best text.

Oracles: Moses' regression truth (phrase.sparse-features: 100 n-best entries whose sparse values
Moses printed; each entry's phrase pairs are recovered from the text phrase table, read here by
plain Python, as the only derivation whose words and 12 phrase-table values match the entry's);
the tuned weight file of phrase.TargetNGramFeature, whose every name Moses made from some pair
of that test's table; line counts of the weight files taken apart by hand; and hand-made pairs
whose values follow from reading Moses' feature functions (moses/FF/*.cpp, cited per test).
"""

from __future__ import annotations

import gzip
import itertools
import math
import re
from pathlib import Path
from types import MappingProxyType

import pytest

from fstdecode.io.moses_ini import FeatureLine
from fstdecode.model.sparse import (
    OTHER, PhraseLength, SentenceContext, SourceWordDeletion, SparseConfig, SparseFeatureError, TargetWordInsertion,
    WordTranslation, add_features, configure, format_sparse, producer_features, read_weight_file, read_word_list,
    sparse_feature, sparse_features, sparse_score, table_sparse,
)
from shared import SHARED_DATA

TESTS = SHARED_DATA / "moses-regression" / "tests"
SPARSE = TESTS / "phrase.sparse-features"
TNGF = TESTS / "phrase.TargetNGramFeature"
needs_regression = pytest.mark.skipif(not SPARSE.is_dir() or not TNGF.is_dir(),
                                      reason="../shared/data/moses-regression is absent")


# --------------------------------------------------------------------------
# The regression models, read by plain Python (independent of fstdecode's readers)


def ini_sections(path: Path) -> dict[str, list[str]]:
    """A moses.ini's sections: name -> value lines (comments and blanks dropped, repeats joined)."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("["):
            current = sections.setdefault(line[1:-1], [])
        elif line and current is not None:
            current.append(line.replace("${TEST_PATH}", str(path.parent)))
    return sections


def feature_lines(path: Path) -> list[FeatureLine]:
    """The [feature] lines as FeatureLines, unnamed ones named KIND + per-kind counter (Moses' rule)."""
    out, counters = [], {}
    for lineno, text in enumerate(ini_sections(path)["feature"], 1):
        kind, *tokens = text.split()
        args = dict(token.split("=", 1) for token in tokens)
        name = args.pop("name", None)
        if name is None:
            name = f"{kind}{counters.get(kind, 0)}"
            counters[kind] = counters.get(kind, 0) + 1
        out.append(FeatureLine(kind, name, MappingProxyType(args), lineno))
    return out


def truth_nbest(path: Path) -> list[tuple[int, list[str], dict[str, list[float]], str]]:
    """The truth's n-best entries: (rank, words, label -> values, the feature text). The harness's
    filter writes a negative number as ``- 4.6307``."""
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"TRANSLATION_0_NBEST_(\d+)=(.*?) \|\|\| (.*)$", line)
        if match is None:
            continue
        groups: dict[str, list[float]] = {}
        tokens = iter(match.group(3).split())
        label = None
        for token in tokens:
            if token.endswith("="):
                label = token[:-1]
                groups[label] = []
            else:
                groups[label].append(-float(next(tokens)) if token == "-" else float(token))
        entries.append((int(match.group(1)), match.group(2).split(), groups, match.group(3)))
    return entries


def table_options(path: Path, sources: set[tuple[str, ...]]):
    """source -> [(target surface words, 12 ln scores floored at -100, alignment points, sixth field)]."""
    options: dict[tuple[str, ...], list] = {}
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        for line in stream:
            fields = [f.strip() for f in line.rstrip("\n").split("|||")]
            source = tuple(fields[0].split())
            if source not in sources:
                continue
            target = tuple(w.split("|")[0] for w in fields[1].split())  # factor 0 of "Libyen|NE"
            scores = [math.log(float(x)) if float(x) > 0 else -100.0 for x in fields[2].split()]
            points = tuple(tuple(int(k) for k in p.split("-")) for p in fields[3].split())
            options.setdefault(source, []).append((target, [max(-100.0, s) for s in scores], points, fields[5]))
    return options


def derivations(source: list[str], words: list[str], options):
    """Every order of one-word phrases (the table has no longer source phrase that the sentence
    holds, checked by the caller) whose targets spell ``words``: lists of options."""
    for order in itertools.permutations(range(len(source))):
        def grow(k, at, chosen):
            if k == len(order):
                if at == len(words):
                    yield chosen
                return
            for option in options[(source[order[k]],)]:
                if tuple(words[at:at + len(option[0])]) == option[0]:
                    yield from grow(k + 1, at + len(option[0]), chosen + [((source[order[k]],), option)])
        yield from grow(0, 0, [])


@pytest.fixture(scope="module")
def sparse_case():
    """phrase.sparse-features: its feature config, weights, truth entries and each entry's derivation."""
    ini = SPARSE / "moses.ini"
    config = configure(feature_lines(ini), str(ini))
    source = (SPARSE / "to-translate.txt").read_text(encoding="utf-8").split()
    spans = {tuple(source[i:j]) for i in range(len(source)) for j in range(i + 1, len(source) + 1)}
    options = table_options(SPARSE / "phrase-table.0-0,1.1.1.gz", spans)
    assert set(options) == {(w,) for w in source}  # one-word phrases only: derivations() relies on it
    entries = []
    for rank, words, groups, text in truth_nbest(SPARSE / "truth" / "results.txt"):
        found = [d for d in derivations(source, words, options)
                 if all(math.isclose(sum(o[1][c] for _, o in d), groups["TranslationModel0"][c], rel_tol=2e-3,
                                     abs_tol=2e-3) for c in range(12))]
        entries.append((rank, words, groups, text, found))
    return config, read_weight_file(str(ini_sections(ini)["weight-file"][0])), ini_sections(ini), entries


def pair_features(config: SparseConfig, derivation) -> dict[str, float]:
    return add_features(sparse_features(src, o[0], o[2], table_sparse("TranslationModel0", o[3], "pt"), config)
                        for src, o in derivation)


@needs_regression
def test_truth_entries_have_one_derivation(sparse_case):
    # The oracle below is only as good as the segmentation: each of the 100 entries must match exactly one.
    _, _, _, entries = sparse_case
    assert len(entries) == 100
    assert [len(found) for *_, found in entries] == [1] * 100


@needs_regression
def test_features_equal_moses_truth(sparse_case):
    # Every sparse value Moses printed (pl_*, twi_*, TranslationModel0_dom_nc-5k; no wt_*, as simple=0
    # source-context=0 makes none), and no other, for each of the 100 entries.
    config, _, _, entries = sparse_case
    assert [type(f) for f in config.features] == [TargetWordInsertion, PhraseLength, WordTranslation]
    compared = 0
    for rank, _, groups, _, (derivation,) in entries:
        truth = {label: values[0] for label, values in groups.items() if "_" in label}
        assert pair_features(config, derivation) == truth, rank
        compared += len(truth)
    assert compared >= 500  # 100 entries, 4 to 7 sparse values each
    assert any("twi_OTHER" in groups for _, _, groups, _, _ in entries)  # the list's OTHER is exercised


@needs_regression
def test_format_matches_truth_text(sparse_case):
    # The n-best text of each feature's sparse values ("pl_1,1= 3 pl_s1= 3 pl_t1= 3") is in the truth's line.
    config, _, _, entries = sparse_case
    for rank, _, _, text, (derivation,) in entries:
        features = pair_features(config, derivation)
        for producer in ("TranslationModel0", "pl", "twi", "wt"):
            assert format_sparse(producer_features(features, producer)) in " " + text, (rank, producer)


@needs_regression
def test_best_total_is_moses_score(sparse_case):
    # SCORE_0 = dense values (the truth's, 5 digits) x [weight] + sparse values x weight file: -3.636.
    # The sparse part (about -0.2) is far larger than the tolerance, so a wrong weight or name fails.
    config, weights, sections, entries = sparse_case
    dense = {}
    for line in sections["weight"]:
        name, values = line.split("=", 1)
        dense[name.strip()] = [float(v) for v in values.split()]
    rank, _, groups, _, (derivation,) = entries[0]
    assert rank == 1
    sparse = sparse_score(pair_features(config, derivation), weights)
    total = sum(w * v for name, ws in dense.items() for w, v in zip(ws, groups.get(name, [0.0] * len(ws)))) + sparse
    assert abs(sparse) > 0.05
    assert total == pytest.approx(-3.636, abs=6e-4)


def count_weight_lines(path: Path) -> dict[str, str]:
    """name -> value text of each ``name value`` line (a weight file taken apart without fstdecode)."""
    out = {}
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line and not line.startswith("#"):
            name, value = line.split(" ")
            out[name] = value
    return out


@needs_regression
@pytest.mark.parametrize("path", [SPARSE / "run17.sparse-weights",
                                  TNGF / "moses.tuned.ini.81.target-n-gram.sparse-weights"], ids=["run17", "tngf"])
def test_weight_files_parse_fully(path):
    # Every line is a weight, with the value its text says (106 and 1193 lines: wc -l).
    expected = count_weight_lines(path)
    weights = read_weight_file(str(path))
    assert len(weights) == len(expected) == {"run17.sparse-weights": 106}.get(path.name, 1193)
    assert weights == {name: float(value) for name, value in expected.items()}


@needs_regression
def test_tngf_weight_names_are_features_of_its_table():
    # Moses tuned these weights on features its four stateless features made from this table's pairs:
    # each name (PhraseLengthFeature0_3,4, WordTranslationFeature0_ce~such, SourceWordDeletionFeature0_x,
    # TargetWordInsertionFeature0_the) must be one our features make from some pair of the text table.
    ini = TNGF / "moses.ini"
    lines = [f for f in feature_lines(ini) if f.kind != "TargetNgramFeature"]
    config = configure(lines, str(ini))
    assert [f.name for f in config.features] == ["TargetWordInsertionFeature0", "SourceWordDeletionFeature0",
                                                 "WordTranslationFeature0", "PhraseLengthFeature0"]
    names: set[str] = set()
    for line in (TNGF / "phrase-table.0-0.1.1").read_text(encoding="utf-8").splitlines():
        fields = [f.strip() for f in line.split("|||")]
        points = [tuple(int(k) for k in p.split("-")) for p in fields[3].split()]
        names.update(sparse_features(fields[0].split(), fields[1].split(), points, None, config))
    weights = read_weight_file(str(TNGF / "moses.tuned.ini.81.target-n-gram.sparse-weights"))
    assert set(weights) <= names
    kinds = {name.split("_", 1)[0] for name in weights}
    assert kinds == {f.name for f in config.features}  # all four kinds are checked


# --------------------------------------------------------------------------
# Hand-made pairs: the values Moses' feature functions give them


PL = PhraseLength("pl")


def test_phrase_length():
    # PhraseLengthFeature.cpp: s<source length>, t<target length>, <source>,<target>; once per pair.
    config = SparseConfig((PL,))
    assert sparse_features(("a", "b"), ("x", "y", "z"), (), None, config) == {"pl_s2": 1, "pl_t3": 1, "pl_2,3": 1}
    # a dropped unknown word (empty target) still counts
    assert sparse_features(("a",), (), (), None, config) == {"pl_s1": 1, "pl_t0": 1, "pl_1,0": 1}


def test_target_word_insertion():
    # TargetWordInsertionFeature.cpp: each unaligned target word once (twice if twice), OTHER outside the list,
    # never <s> / </s>, nothing for a 1-1 pair with no point.
    listed = SparseConfig((TargetWordInsertion("twi", frozenset({",", "der"})),))
    free = SparseConfig((TargetWordInsertion("twi"),))
    target = ("der", ",", "Sieg", ",", "</s>")
    assert sparse_features(("a", "b"), target, [(0, 2)], None, listed) == {"twi_der": 1, "twi_,": 2}
    assert sparse_features(("a", "b"), ("x", "Sieg"), [(0, 0)], None, listed) == {f"twi_{OTHER}": 1}
    assert sparse_features(("a", "b"), ("x", "Sieg"), [(0, 0)], None, free) == {"twi_Sieg": 1}
    assert sparse_features(("a",), ("x",), [], None, free) == {}  # 1-1, unaligned: Moses' special case
    assert sparse_features(("a",), ("x", "y"), [], None, free) == {"twi_x": 1, "twi_y": 1}
    assert sparse_features(("a",), ("a",), [(0, 0)], None, free) == {}  # an unknown word (Moses aligns it 0-0)


def test_source_word_deletion():
    # SourceWordDeletionFeature.cpp: the same for unaligned source words.
    config = SparseConfig((SourceWordDeletion("swd", frozenset({"the"})),))
    assert sparse_features(("the", "big", "dog"), ("Hund",), [(2, 0)], None, config) == {"swd_the": 1, "swd_OTHER": 1}
    assert sparse_features(("the",), ("x",), [], None, config) == {}


def test_word_translation_simple_and_lists():
    # WordTranslationFeature.cpp: NAME_s~t per point; a word outside its (source or target) list is OTHER.
    free = SparseConfig((WordTranslation("wt"),))
    listed = SparseConfig((WordTranslation("wt", source_vocabulary=frozenset({"le"}),
                                           target_vocabulary=frozenset({"the"})),))
    assert sparse_features(("le", "chat"), ("the", "cat"), [(0, 0), (1, 1)], None, free) == {
        "wt_le~the": 1, "wt_chat~cat": 1}
    assert sparse_features(("le", "chat"), ("the", "cat"), [(0, 0), (1, 1), (1, 0)], None, listed) == {
        "wt_le~the": 1, "wt_OTHER~OTHER": 1, "wt_OTHER~the": 1}
    # simple=0 source-context=0 target-context=0 (the regression ini's line): no feature at all
    off = SparseConfig((WordTranslation("wt", simple=False),))
    assert sparse_features(("le",), ("the",), [(0, 0)], None, off) == {}


def test_word_translation_source_context():
    # Source context: for the point's sentence word at position p, every other sentence word c gives
    # c,s~t (c before) or s,c~t (after), and <s>,s~t at p = 0; a restricted feature takes listed c only.
    config = SparseConfig((WordTranslation("wt", simple=False, source_context=True),))
    context = SentenceContext(("a", "b", "c"), start=1)
    assert sparse_features(("b",), ("B",), [(0, 0)], None, config, context) == {"wt_a,b~B": 1, "wt_b,c~B": 1}
    at_start = SentenceContext(("a", "b"), start=0)
    assert sparse_features(("a",), ("A",), [(0, 0)], None, config, at_start) == {"wt_<s>,a~A": 1, "wt_a,b~A": 1}
    listed = SparseConfig((WordTranslation("wt", simple=False, source_context=True,
                                           source_vocabulary=frozenset({"c"}), target_vocabulary=frozenset()),))
    assert sparse_features(("b",), ("B",), [(0, 0)], None, listed, context) == {"wt_OTHER,c~OTHER": 1}


def test_word_translation_punctuation_and_domains():
    # ignore-punctuation: a point whose word starts with a listed byte is skipped (« starts with 0xC2, as ¿
    # does, so it counts; 1990 starts with a digit). domain-trigger: NAME_d_s~t per trigger of the document.
    punct = SparseConfig((WordTranslation("wt", ignore_punctuation=True),))
    pairs = [(0, 0), (1, 1), (2, 2)]
    assert sparse_features(("«", "1990", "x"), ("«", "1990", "y"), pairs, None, punct) == {"wt_x~y": 1}
    domains = SparseConfig((WordTranslation("wt", simple=False, domain_trigger=True,
                                            domains=(frozenset({"sport"}), frozenset({"eu", "vote"}))),))
    got = sparse_features(("a",), ("b",), [(0, 0)], None, domains, SentenceContext(("a",), 0, document=1))
    assert got == {"wt_eu_a~b": 1, "wt_vote_a~b": 1}
    with pytest.raises(SparseFeatureError, match="document id"):
        sparse_features(("a",), ("b",), [(0, 0)], None, domains, SentenceContext(("a",), 0))


def test_table_field_and_sums():
    # The sixth field: TABLE_name, a repeated name keeps its last value (Moses' Assign); pairs add up.
    field = table_sparse("TranslationModel0", "dom_nc-5k 1 dom_x 0.5 dom_x 2", "pt:3")
    assert field == {"TranslationModel0_dom_nc-5k": 1.0, "TranslationModel0_dom_x": 2.0}
    both = add_features([field, {"TranslationModel0_dom_nc-5k": 1.0, "pl_s1": 1.0}])
    assert both == {"TranslationModel0_dom_nc-5k": 2.0, "TranslationModel0_dom_x": 2.0, "pl_s1": 1.0}
    with pytest.raises(SparseFeatureError, match=r"^pt:3: .*without a value"):
        table_sparse("TM", "dom 1 odd", "pt:3")
    with pytest.raises(SparseFeatureError, match=r"^pt:3: .*'x' is not a number"):
        table_sparse("TM", "dom x", "pt:3")


def test_score_and_format():
    # Σ value x weight (no weight: 0); the text as Moses' float ostream prints it (6 digits), sorted by name.
    features = {"pl_t1": 3.0, "TM0_dom": 1.0 / 3.0, "twi_é": 1.0, "twi_Z": 1e-7}
    assert sparse_score(features, {"pl_t1": 0.5, "TM0_dom": 3.0, "other": 9.0}) == pytest.approx(2.5)
    assert format_sparse(features) == " TM0_dom= 0.333333 pl_t1= 3 twi_Z= 1e-07 twi_é= 1"
    assert format_sparse({}) == ""
    assert producer_features({"pl_s1": 1, "plx_s1": 1, "pl": 1}, "pl") == {"pl_s1": 1}


# --------------------------------------------------------------------------
# Configuration and files: errors name the file and line


def test_configure_from_lines(tmp_path):
    words = tmp_path / "words"
    words.write_text("der\n\ndie\n", encoding="utf-8")
    lines = [FeatureLine("TargetWordInsertionFeature", "twi", {"factor": "0", "path": "words"}, 4),
             FeatureLine("KENLM", "LM0", {"path": "lm"}, 5),
             FeatureLine("WordTranslationFeature", "wt", {"simple": "0", "source-context": "TRUE"}, 6)]
    config = configure(lines, "m.ini", folder=str(tmp_path))
    assert config.features == (TargetWordInsertion("twi", frozenset({"der", "die"})),
                               WordTranslation("wt", simple=False, source_context=True))
    assert config.needs_context


@pytest.mark.parametrize("kind, args, message", [
    # why each: Moses refuses it too, or would stop on it later
    ("WordTranslationFeature", {"target-context": "1"}, "target-context=1 is not supported"),
    ("WordTranslationFeature", {"simple": "maybe"}, "simple='maybe' is not a boolean"),
    ("WordTranslationFeature", {"source-path": "w"}, "needs target-path"),
    ("WordTranslationFeature", {"domain-trigger": "1"}, "needs source-path"),
    ("PhraseLengthFeature", {"path": "w"}, "does not take 'path'"),
    ("TargetWordInsertionFeature", {"factor": "1"}, "only factor 0"),
    ("SourceWordDeletionFeature", {"num-features": "1"}, "sparse features only"),
    ("PhraseLengthFeature", {"tuneable-components": "1"}, "no dense feature"),
])
def test_bad_lines(kind, args, message):
    with pytest.raises(SparseFeatureError, match=rf"^m\.ini:7: .*{re.escape(message)}"):
        sparse_feature(kind, "f", args, "m.ini:7")


def test_word_list_errors(tmp_path):
    bad = tmp_path / "list"
    bad.write_text("der\ndie Sieg\n", encoding="utf-8")
    with pytest.raises(SparseFeatureError, match=rf"^{re.escape(str(bad))}:2: 'die Sieg' is not one word"):
        read_word_list(str(bad), "m.ini:3")
    with pytest.raises(SparseFeatureError, match="no such file"):
        sparse_feature("TargetWordInsertionFeature", "twi", {"path": str(tmp_path / "absent")}, "m.ini:3")


@pytest.mark.parametrize("text, line, message", [
    ("a 1\nb x\n", 2, "'x' is not a number"),
    ("a 1\n# note\nb\n", 3, "one sparse weight a line"),
    ("a 1 2\n", 1, "one sparse weight a line"),
    ("a 1\nb 2\na 3\n", 3, "on line 1"),
    ("a nan\n", 1, "not a finite number"),
])
def test_weight_file_errors(tmp_path, text, line, message):
    path = tmp_path / "w"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SparseFeatureError, match=rf"^{re.escape(str(path))}:{line}: .*{re.escape(message)}"):
        read_weight_file(str(path))


def test_weight_file_comments_and_blanks(tmp_path):
    path = tmp_path / "w"
    path.write_text("# tuned\npl_s1 -0.5\n\ntwi_, 1e-3\r\n", encoding="utf-8")
    assert read_weight_file(str(path)) == {"pl_s1": -0.5, "twi_,": 1e-3}
