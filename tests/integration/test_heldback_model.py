"""Issue 13's held-back Moses model, rebuilt: an old-format moses.ini over text tables and the UN LM.

Issue 13 requires the gold to hold "on a held-back Moses model that you do not have. It is built
the same way: a wbe-msd-bidirectional-fe-allff table, the UN LM, text tables, and an
old-format moses.ini." This module builds that model's twin at run time, in a temporary folder:

* the Europarl phrase table and msd-bidirectional-fe reordering table of
  ``moses-lexreo-europarl-fr-en``, gunzipped (text tables, as the held-back model has);
* the UN English trigram LM, ``english-lm-un/lm.en.arpa``, read where it is;
* a moses.ini in the OLD format, as Moses' training scripts wrote it: ``[ttable-file]``,
  ``[lmodel-file]`` (type code 8, KenLM), ``[distortion-file]`` with type
  ``wbe-msd-bidirectional-fe-allff``, ``[weight-d]`` with 7 values (the distance weight first,
  then the 6 lexicalized ones), ``[weight-l]``, ``[weight-t]``, ``[weight-w]``,
  ``[distortion-limit]`` 6 and ``[ttable-limit]`` 20, plus the settings of Moses' own search
  (``[search-algorithm]``, ``[stack]``, ``[cube-pruning-pop-limit]``, ``[threads]``), which
  must be reported as ignored. The weights are the gold model's.

What Moses makes of each section is read in its source, moses-smt/mosesdecoder
``moses/Parameter.cpp``: ``ConvertWeightArgs`` calls ``ConvertWeightArgsLM`` (one feature per
``[lmodel-file]`` line, named by its type code: 0 SRILM, 1 IRSTLM, 8 and 9 KENLM),
``ConvertWeightArgsDistortion`` (``Distortion`` takes the first ``[weight-d]`` value; each
``[distortion-file]`` line becomes ``LexicalReordering type=... input-factor=0
output-factor=0 num-features=N path=...`` with the next N values), ``ConvertPhrasePenalty``,
then adds ``WordPenalty`` and ``UnknownWordPenalty``, and ``ConvertWeightArgsPhraseModel``
turns each ``[ttable-file]`` line into ``PhraseDictionaryMemory ... table-limit=L``.
``NEW_INI`` below is that conversion of ``OLD_INI``, written out by hand.

Checks (none of the expected values comes from fstdecode's output):

* the file loads; ``--show-weights`` prints Moses' names in Moses' order, the tuneable ones
  being the gold model's n-best feature names (the two models are built alike), and the four
  search settings are warned about, each with its line;
* stack, exact and coverage decode the 5 sentences of ``to-translate.txt``; exact proves every
  line optimal (or says why not), the coverage DP agrees with it where both prove, exact's score is at least the
  stack's; every derivation is re-scored by the independent scorer
  (:mod:`fstdecode.problem.scorer`) from a second model read from ``NEW_INI`` with the Python
  ARPA reader, and equals the search's own running score;
* ``NEW_INI`` gives byte-identical output to ``OLD_INI`` (the conversion rule); a type-0
  (SRILM) LM line is refused, as Moses' SRILM wrapper scores unlike KenLM (issue 38);
* the signature-state methods (dp, beam, bounded, fst) and the exhaustive oracle run on it
  under both semantics (Moses' the default): on the full sentences within their budgets (each
  line gets a derivation, a proof or a reason), and on short prefixes with a smaller table
  limit, where they all prove the same optimum as the exact search.
"""

from __future__ import annotations

import gzip
import re
import shutil
from pathlib import Path

import pytest

from fstdecode.decoder import Decoder
from fstdecode.io.moses_ini import load_moses_ini
from fstdecode.model.model import load_model
from fstdecode.problem.scorer import check_distortion_limit, score
from fstdecode.problem.sentence import Phrase, unknown_pair

from golden import parse_nbest
from shared import data_path, run_cli

pytestmark = pytest.mark.slow  # the UN LM and the tables load in seconds; the Python searches take minutes

GOLD = "moses-lexreo-europarl-fr-en"

# The old-format moses.ini of the held-back model's twin, as Moses' train-model.perl wrote
# them (comments included). {LM_TYPE} is the [lmodel-file] type code; {DIR} the folder of the
# text tables; {LM} the UN LM. The weights are the gold model's (its SOURCE.md).
OLD_INI = """\
#########################
### MOSES CONFIG FILE ###
#########################

# input factors
[input-factors]
0

# mapping steps
[mapping]
0 T 0

# translation tables: table type (hierarchical(0), textual (0), binary (1)), source-factors, target-factors, number of scores, file
[ttable-file]
0 0 0 5 {DIR}/phrase-table

# no generation models, no generation-file section

# language models: type(srilm/irstlm), factors, order, file
[lmodel-file]
{LM_TYPE} 0 3 {LM}

# limit on how many phrase translations e for each phrase f are loaded
# 0 = all elements loaded
[ttable-limit]
20

# distortion (reordering) files
[distortion-file]
0-0 wbe-msd-bidirectional-fe-allff 6 {DIR}/reordering-table.wbe-msd-bidirectional-fe

# distortion (reordering) weight
[weight-d]
0.5
0.3
0.3
0.3
0.3
0.3
0.3

# language model weights
[weight-l]
0.5

# translation model weights
[weight-t]
0.2
0.2
0.2
0.2
0.2

# no generation models, no weight-generation section

# word penalty
[weight-w]
-1

[distortion-limit]
6

# settings of Moses' own search
[search-algorithm]
0

[stack]
200

[cube-pruning-pop-limit]
1000

[threads]
2
"""

#: The lines of OLD_INI's search settings: ([section], its header's line number), counted by hand.
IGNORED = [("search-algorithm", 64), ("stack", 67), ("cube-pruning-pop-limit", 70), ("threads", 73)]

# OLD_INI with LM type 8 as Moses converts it (Parameter::ConvertWeightArgs, see the module
# docstring): the features in the order the conversion adds them, named as it names them.
NEW_INI = """\
[input-factors]
0

[mapping]
0 T 0

[distortion-limit]
6

[feature]
KENLM factor=0 order=3 num-features=1 lazyken=0 path={LM}
Distortion
LexicalReordering type=wbe-msd-bidirectional-fe-allff input-factor=0 output-factor=0 num-features=6 path={DIR}/reordering-table.wbe-msd-bidirectional-fe
WordPenalty
UnknownWordPenalty
PhraseDictionaryMemory input-factor=0 output-factor=0 path={DIR}/phrase-table num-features=5 table-limit=20

[weight]
WordPenalty0= -1
KENLM0= 0.5
Distortion0= 0.5
LexicalReordering0= 0.3 0.3 0.3 0.3 0.3 0.3
PhraseDictionaryMemory0= 0.2 0.2 0.2 0.2 0.2
"""

#: Moses' -show-weights of OLD_INI (type 8), written out from its conversion: the stateful
#: features first (the LM, Distortion, LexicalReordering), then the stateless ones, each group in
#: the order of the converted [feature] lines; UnknownWordPenalty is not tuneable.
SHOW_WEIGHTS = [
    "KENLM0= 0.500000",
    "Distortion0= 0.500000",
    "LexicalReordering0= 0.300000 0.300000 0.300000 0.300000 0.300000 0.300000",
    "WordPenalty0= -1.000000",
    "UnknownWordPenalty0 UNTUNEABLE",
    "PhraseDictionaryMemory0= 0.200000 0.200000 0.200000 0.200000 0.200000",
]

#: Tolerance of score comparisons: the engines and the scorer sum the same float64 terms in
#: different orders.
EPS = 1e-6


class Twin:
    """The twin's files in one folder: text tables, old-format inis (LM types 8 and 0), NEW_INI.
    (Type 0, SRILM, is refused: ``srilm`` is there to show it.)"""

    def __init__(self, folder: Path) -> None:
        gold = data_path(GOLD)
        lm = data_path("english-lm-un", "lm.en.arpa")
        for gz, name in (
            ("phrase-table.0-0.gz", "phrase-table"),
            ("reordering-table.msd-bidirectional-fe.0.5.0-0.gz", "reordering-table.wbe-msd-bidirectional-fe"),
        ):
            with gzip.open(gold / gz, "rb") as src, open(folder / name, "wb") as dst:
                shutil.copyfileobj(src, dst)
        values = {"DIR": str(folder), "LM": str(lm)}
        self.old = folder / "moses.ini"
        self.old.write_text(OLD_INI.format(LM_TYPE=8, **values), encoding="utf-8")
        self.srilm = folder / "moses.srilm.ini"
        self.srilm.write_text(OLD_INI.format(LM_TYPE=0, **values), encoding="utf-8")
        self.new = folder / "moses.new.ini"
        self.new.write_text(NEW_INI.format(**values), encoding="utf-8")
        self.lm = lm
        self.input_text = (gold / "to-translate.txt").read_text(encoding="utf-8")
        self.sentences = [line.split() for line in self.input_text.splitlines()]


@pytest.fixture(scope="module")
def twin(tmp_path_factory) -> Twin:
    return Twin(tmp_path_factory.mktemp("heldback"))


@pytest.fixture(scope="module")
def models(twin):
    """The twin loaded from OLD_INI (keyed "native", the one engine)."""
    return {"native": load_model(twin.old)}


@pytest.fixture(scope="module")
def rescorer(twin):
    """A second model, from NEW_INI, every pair kept, the LM read by the Python ARPA reader."""
    import dataclasses

    from fstdecode.io.arpa import ArpaLM

    model = load_model(twin.new, table_limit=0)
    return dataclasses.replace(model, lm=ArpaLM.from_file(model.lm.path, max_order=model.lm.order))


@pytest.fixture(scope="module")
def decoded(twin, models):
    """``decoded(method, engine)``: the results on the 5 sentences, each decoded once per module."""
    cache: dict[tuple[str, str], list] = {}

    def run(method: str, engine: str) -> list:
        if (method, engine) not in cache:
            decoder = Decoder(models[engine], method)
            assert decoder.semantics == "moses"
            cache[method, engine] = [decoder.decode(words) for words in twin.sentences]
        return cache[method, engine]

    return run


def rebuilt(rescorer, phrases) -> list[Phrase]:
    """The derivation ``phrases`` with each pair looked up again in the rescorer's own table."""
    out = []
    for p in phrases:
        if p.pair.unknown:
            pair = unknown_pair(p.pair.source[0], rescorer.table.num_scores)
        else:
            [pair] = [q for q in rescorer.table.lookup(p.pair.source) if q.target == p.pair.target]
        out.append(Phrase(p.start, p.end, pair))
    return out


def assert_rescored(rescorer, words, derivation, semantics: str) -> None:
    """The independent scorer gives the derivation the score that its search computed."""
    phrases = rebuilt(rescorer, derivation.phrases)
    check_distortion_limit(len(words), phrases, rescorer.distortion_limit, semantics)
    features, total = score(
        len(words), phrases, rescorer.lm, rescorer.weights,
        reordering=rescorer.reordering, semantics=semantics, early_distortion_cost=False,
    )
    assert total == pytest.approx(derivation.search_score, abs=EPS), " ".join(words)
    assert total == pytest.approx(derivation.score, abs=EPS)
    assert len(features.lr) == 6


# ------------------------------------------------------------------------------- loading


def test_the_old_ini_reads_as_moses_converts_it(twin, models):
    config = load_moses_ini(twin.old)
    assert config.old_format
    assert [(f.kind, f.name) for f in config.features] == [
        ("KENLM", "KENLM0"), ("Distortion", "Distortion0"), ("LexicalReordering", "LexicalReordering0"),
        ("WordPenalty", "WordPenalty0"), ("UnknownWordPenalty", "UnknownWordPenalty0"),
        ("PhraseDictionaryMemory", "PhraseDictionaryMemory0"),
    ]
    assert config.lexical_reordering().args["type"] == "wbe-msd-bidirectional-fe-allff"
    assert config.phrase_table().int_arg("table-limit", -1) == 20
    # Each search setting, with its own line; nothing else is ignored.
    assert len(config.ignored) == len(IGNORED)
    for warning, (section, line) in zip(config.ignored, IGNORED):
        assert warning.startswith(f"{twin.old}:{line}: [{section}] ")
    model = models["native"]
    assert model.lm.order == 3 and Path(model.lm.path) == twin.lm
    assert model.distortion_limit == 6 and model.distortion_semantics == "moses" and not model.early_distortion_cost
    assert model.weights.distortion == 0.5 and model.weights.lr == (0.3,) * 6  # weight-d: distance first
    assert model.weights.lm == 0.5 and model.weights.tm == (0.2,) * 5 and model.weights.word == -1
    config_lr = model.reordering.config
    assert config_lr.classes == "msd" and config_lr.directions == ("backward", "forward")
    assert model.reordering.num_features == 6
    # table-limit 20: no source phrase keeps more than 20 of its translations.
    assert max(len(model.table.lookup(s)) for s in model.table.sources()) == 20


def test_show_weights_prints_moses_names_and_warns_about_search_settings(twin):
    ini = twin.old
    proc = run_cli(["decode", "-f", str(ini), "--show-weights"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == SHOW_WEIGHTS
    for section, line in IGNORED:
        assert f"fstdecode: warning: {ini}:{line}: [{section}] " in proc.stderr
    assert "Traceback" not in proc.stderr


def test_show_weights_names_are_the_gold_nbest_names(models):
    # The gold model has the same features (in the new format); Moses' own n-best lists name its
    # tuneable ones: the twin's must be the same names in the same order.
    gold = parse_nbest((data_path(GOLD) / "truth" / "moses-nbest-100.txt").read_text(encoding="utf-8"))
    tuneable = [line.split("=")[0] for line in models["native"].show_weights() if "UNTUNEABLE" not in line]
    assert list(gold[0].feats) == tuneable


# --------------------------------------------------------------- the coverage-state searches


def test_exact_proves_each_line_or_reports_it(decoded):
    for result in decoded("exact", "native"):
        assert result.best is not None
        if result.optimal:
            assert result.reason is None and result.gap == pytest.approx(0.0, abs=EPS)
        else:  # the budget per line, as issue 8 defines it
            assert result.reason and "over budget" in result.reason
            assert result.upper_bound is None or result.upper_bound >= result.best.score - EPS
    # Measured: 5/5 proven (about a second each, native). A regression to fewer shows here.
    assert sum(r.optimal for r in decoded("exact", "native")) == 5


def test_exact_is_at_least_stack_and_equals_the_coverage_dp(decoded):
    rows = zip(decoded("exact", "native"), decoded("stack", "native"), decoded("coverage", "native"), strict=True)
    for exact, stack, coverage in rows:
        assert exact.best.score >= stack.best.score - EPS
        if exact.optimal and coverage.optimal:  # two exact solvers over the same space
            assert exact.best.score == pytest.approx(coverage.best.score, abs=EPS)
        if exact.optimal:
            assert exact.upper_bound >= stack.best.score - EPS


@pytest.mark.parametrize("method", ["stack", "exact", "coverage"])
def test_every_output_is_the_scorers_score_of_its_derivation(twin, decoded, rescorer, method):
    for words, result in zip(twin.sentences, decoded(method, "native"), strict=True):
        for derivation in result.derivations:
            assert_rescored(rescorer, words, derivation, "moses")


# ----------------------------------------------------------------- the conversion rule


@pytest.mark.parametrize(
    "args",
    [
        ["--method", "stack", "--format", "nbest", "--nbest", "5", "--print-alignment-info"],
        ["--method", "exact", "--format", "nbest"],
        ["--method", "coverage", "--format", "text"],
    ],
)
def test_the_new_format_gives_byte_identical_output(twin, args):
    outputs = {}
    for ini in (twin.old, twin.new):
        proc = run_cli(["decode", "-f", str(ini), *args], twin.input_text, timeout=600)
        assert proc.returncode == 0, proc.stderr
        outputs[ini] = proc.stdout
    assert outputs[twin.old] == outputs[twin.new]
    lines = outputs[twin.old].splitlines()
    if "nbest" in args:  # each sentence has its entries, ids 0-4
        assert sorted({int(line.split(" ||| ")[0]) for line in lines}) == list(range(5))
    else:
        assert len(lines) == 5 and all(lines)


def test_a_type_0_lm_is_refused_with_the_way_to_kenlm(twin):
    # Type 0 is Moses' SRILM wrapper, which floors at -100 and scores unknown words by SRILM's rule:
    # read as KenLM, its LM feature would differ from Moses' without a word (issue 38).
    for command in ("decode", "moses"):
        proc = run_cli([command, "-f", str(twin.srilm)], twin.input_text)
        assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
        assert "feature 'SRILM' is not supported" in proc.stderr and "make the [lmodel-file] type 8" in proc.stderr


# ---------------------------------------------- the signature-state methods and the oracle

# Every method takes the model under either semantics: under the default (moses) the
# signature-state methods carry Moses' gap rule (fstdecode/statespace/gaprule.py).

#: Budgets that keep each full-sentence run to seconds: the signature DP with a trigram LM, d = 6
#: and 20 translations per phrase goes over any budget on 22-43 words (measured: dp and bounded
#: pass 200,000 states even on 5-word prefixes), and then reports it.
FULL_BUDGETS = {"dp": 20_000, "bounded": 20_000, "fst": 20_000, "beam": None}


@pytest.fixture(scope="module")
def paper_model(twin):
    return load_model(twin.old, distortion_semantics="paper")


@pytest.fixture(scope="module")
def semantics_model(twin, paper_model):
    """The model under each semantics: ``moses`` is the old-format ini's default."""
    return {"paper": paper_model, "moses": load_model(twin.old)}


#: The exact search's budget under paper semantics. Its heuristic is much weaker there than under
#: Moses' (measured at the default 10,000,000 states: sentences 0, 2, 3 proven with 1.6M, 2.1M
#: and 63k states, against 30k, 30k and 16k under Moses' semantics; 1 and 4 over budget, gaps
#: 36.5 and 15.2); this budget proves 0 and 3 and certifies a bound on the others in a minute.
PAPER_EXACT_STATES = 2_000_000


@pytest.fixture(scope="module")
def exact_by_semantics(twin, semantics_model):
    """The exact search's results on the 5 sentences under each semantics (native engine): each
    a derivation and a certified upper bound on every derivation's score, proven or not."""
    out = {}
    for semantics, model in semantics_model.items():
        decoder = Decoder(model, "exact", max_states=PAPER_EXACT_STATES)
        out[semantics] = [decoder.decode(words) for words in twin.sentences]
    return out


@pytest.mark.parametrize("semantics", ["paper", "moses"])
@pytest.mark.parametrize("method", ["dp", "beam", "bounded", "fst"])
def test_signature_methods_run_on_the_full_sentences(
    twin, semantics_model, exact_by_semantics, rescorer, method, semantics
):
    budget = {} if FULL_BUDGETS[method] is None else {"max_states": FULL_BUDGETS[method]}
    decoder = Decoder(semantics_model[semantics], method, **budget)
    assert decoder.semantics == semantics
    for words, best in zip(twin.sentences, exact_by_semantics[semantics], strict=True):
        result = decoder.decode(words)
        assert result.error is None and result.best is not None, result.error
        assert best.upper_bound is not None  # the exact search certifies a bound, proven or not
        assert result.best.score <= best.upper_bound + EPS
        if result.optimal:  # a proven optimum is at least anything the exact search found
            assert result.best.score >= best.best.score - EPS
            if best.optimal:
                assert result.best.score == pytest.approx(best.best.score, abs=EPS)
        elif method != "beam":  # beam never claims a proof; the others say why they did not
            assert result.reason and "over budget" in result.reason
        assert_rescored(rescorer, words, result.best, semantics)


#: The first 5 words of each sentence, with 3 translations per source phrase: small enough for
#: the signature DP, the cascade and the exhaustive oracle to finish and prove their optimum.
PREFIX_WORDS = 5
PREFIX_TABLE_LIMIT = 3


@pytest.mark.parametrize("semantics", ["paper", "moses"])
def test_every_method_proves_the_same_optimum_on_short_prefixes(twin, semantics):
    model = load_model(twin.old, table_limit=PREFIX_TABLE_LIMIT, distortion_semantics=semantics)
    methods = ["exact", "coverage", "exhaustive", "dp", "bounded", "fst"]
    decoders = {m: Decoder(model, m) for m in methods}
    for words in twin.sentences:
        prefix = words[:PREFIX_WORDS]
        results = {m: d.decode(prefix) for m, d in decoders.items()}
        for m, r in results.items():
            assert r.optimal, (m, prefix, r.reason)
            assert r.best.score == pytest.approx(results["exact"].best.score, abs=EPS), (m, prefix)
        beam = Decoder(model, "beam").decode(prefix)
        assert beam.best.score <= results["exact"].best.score + EPS
