"""A model with two LMs and two phrase tables, built from the shared files (issue 24).

* tables: the Hansards table (log10 scores, converted to probabilities, since
  ``--tm-score-format`` is global) and the Europarl table, as Moses' alternative decoding paths
  (``[mapping] 0 T 0`` / ``1 T 1``);
* LMs: the UN trigram and the Europarl 5-gram, each a KENLM feature with its own weight;
* input: the 48 Hansards sentences.

Checks: stack and exact on the full sentences, exact proving every one (its upper bound is its
score) and stack never above it; dp, bounded, fst and the exhaustive oracle on 5-word prefixes
agree with exact; the n-best features equal the scorer's, each LM's feature equals the kenlm
package's score of the translation, and each phrase's scores come from one table, 0 in the
other's columns.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fstdecode.decoder import Decoder
from fstdecode.io.phrase_table import load_phrase_table
from fstdecode.model.model import load_model
from fstdecode.problem.scorer import features
from fstdecode.reference import exhaustive

from shared import data_path

pytestmark = pytest.mark.slow  # exact on 48 sentences with a 5-gram and a trigram LM: ~30 s


@pytest.fixture(scope="module")
def model_and_input(tmp_path_factory):
    hansards, europarl, un = data_path("hansards-fr-en-decoder"), data_path("moses-lexreo-europarl-fr-en"), \
        data_path("english-lm-un")
    root = tmp_path_factory.mktemp("twotwo")
    with open(hansards / "tm", encoding="utf-8") as src, open(root / "hansards.pt", "w", encoding="utf-8") as out:
        for line in src:
            source, target, score = line.rstrip("\n").split(" ||| ")
            out.write(f"{source} ||| {target} ||| {10 ** float(score)!r}\n")
    (root / "moses.ini").write_text(
        "[mapping]\n0 T 0\n1 T 1\n[distortion-limit]\n6\n[feature]\n"
        f"KENLM name=UN path={un / 'lm.en.arpa'}\nKENLM name=Europarl path={europarl / 'europarl.lm'}\n"
        "Distortion\nWordPenalty\nUnknownWordPenalty\n"
        f"PhraseDictionaryMemory name=Hansards path={root / 'hansards.pt'} num-features=1 table-limit=20\n"
        f"PhraseDictionaryMemory name=EuroparlTM path={europarl / 'phrase-table.0-0.gz'} num-features=5 table-limit=20\n"
        "[weight]\nUN= 0.5\nEuroparl= 0.3\nDistortion0= 0.3\nWordPenalty0= -0.5\nHansards= 1.0\n"
        "EuroparlTM= 0.2 0.2 0.2 0.2 0.2\n",
        encoding="utf-8",
    )
    lines = [line.strip() for line in (hansards / "input").read_text(encoding="utf-8").splitlines()]
    return load_model(root / "moses.ini"), lines, root


def test_the_model_has_two_lm_and_two_table_features(model_and_input):
    model, _, _ = model_and_input
    names = [f.name for f in model.features]
    assert names == ["UN", "Europarl", "Distortion0", "WordPenalty0", "UnknownWordPenalty0", "Hansards", "EuroparlTM"]
    assert model.show_weights()[-2:] == ["Hansards= 1.000000", "EuroparlTM= 0.200000 0.200000 0.200000 0.200000 0.200000"]
    assert model.table.num_scores == 6 and model.weights.lms == (0.5, 0.3)


def test_exact_proves_every_sentence_and_stack_never_beats_it(model_and_input):
    model, lines, _ = model_and_input
    exact, stack = Decoder(model, "exact"), Decoder(model, "stack")
    for i, line in enumerate(lines):
        proven = exact.decode(line, i)
        assert proven.optimal and proven.upper_bound == pytest.approx(proven.best.score, abs=1e-9), i
        assert stack.decode(line, i).best.score <= proven.best.score + 1e-9, i


#: The first 5 words, with 2 translations per source phrase in each table (-ttl 2): small enough
#: for the signature DP, the cascade and the exhaustive oracle to prove their optimum (with 20
#: they pass 20M states on 5 words, as with one LM: test_heldback_model.py).
PREFIX_TABLE_LIMIT = 2
#: The signature DP's states on these prefixes: up to ~340,000 with the 5-gram's contexts (2.4M at -ttl 3).
PREFIX_STATES = 2_000_000


@pytest.mark.parametrize("method", ["dp", "bounded", "fst"])
def test_every_exact_method_agrees_with_exact_and_the_exhaustive_oracle_on_prefixes(model_and_input, method):
    _, lines, root = model_and_input
    model = load_model(root / "moses.ini", table_limit=PREFIX_TABLE_LIMIT)
    exact, other = Decoder(model, "exact"), Decoder(model, method, max_states=PREFIX_STATES)
    for i, line in enumerate(lines[:16]):
        prefix = " ".join(line.split()[:5])
        want = exact.decode(prefix, i)
        got = other.decode(prefix, i)
        assert got.optimal and got.best.score == pytest.approx(want.best.score, abs=1e-7), (method, prefix)
        if method == "dp":  # the exhaustive oracle once per prefix
            oracle = exhaustive.search(exact.problem(prefix.split(), i))
            assert oracle.hypotheses[0][0] == pytest.approx(want.best.score, abs=1e-7), prefix


def test_nbest_features_are_the_scorers_and_the_oracles(model_and_input):
    kenlm = pytest.importorskip("kenlm")
    model, lines, root = model_and_input
    oracles = [kenlm.Model(str(part.path)) for part in model.lm.parts]
    single = [load_phrase_table(spec.path, num_features=spec.num_features) for spec in model.table_sources]
    starts = [0, 1]
    decoder = Decoder(model, "stack", nbest=5)
    for i, line in enumerate(lines[:12]):
        words = line.split()
        for d in decoder.decode(line, i).derivations:
            f = features(len(words), d.phrases, model.lm, model.table.num_scores, semantics=model.distortion_semantics)
            assert f.tm == pytest.approx(d.features.tm) and f.lms == pytest.approx(d.features.lms)
            assert model.weights.total(f) == pytest.approx(d.score, abs=1e-9)
            for k, oracle in enumerate(oracles):
                assert d.features.lms[k] == pytest.approx(oracle.score(d.translation) * math.log(10), abs=1e-4)
            for p in d.phrases:
                if p.pair.unknown:
                    assert p.pair.scores == (0.0,) * 6
                    continue
                own = [j for j, (start, t) in enumerate(zip(starts, single))
                       if any(v != 0.0 for v in p.pair.scores[start:start + t.num_scores])]
                assert len(own) <= 1, p.pair
                j = own[0] if own else 0
                start, width = starts[j], single[j].num_scores
                assert all(v == 0.0 for k, v in enumerate(p.pair.scores) if not start <= k < start + width)
                assert any(q.target == p.pair.target and q.scores == p.pair.scores[start:start + width]
                           for q in single[j].lookup(p.pair.source)), p.pair
