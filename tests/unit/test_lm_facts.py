"""KenLM-style right states ("facts", native/language_model.h) and the searches that score with them.

A context's facts are the backoffs of its suffixes, by length. Checks:

* every LM implementation (NgramLM, its restriction, ImageLM and its restriction, KenLMBinary
  probing and trie and their RestrictedLM, CombinedLM) answers ``logprob_facts(ctx, w,
  facts(ctx))`` bit for bit as ``logprob(ctx, w)``, ``facts`` as ``backoff`` of each suffix, and
  the next context's facts and right-state tests as ``backoff`` and ``extends`` of each suffix of
  ``ctx + w``, on every n-gram of the model (and its suffixes) and on random id sequences;
* facts passed along a sentence from one word to the next, as a search keeps them, score the
  sentence as ``logprob`` does, and as the ``kenlm`` package (an independent reader) does;
* the stack decoder and the coverage DP, whose ``<s>``-tape joins score with facts by default
  (``Problem.lm_facts``), return exactly what they return with ``ngram`` and ``trim``: the same
  hypotheses (scores equal bit for bit), states and transitions; the scorer
  (fstdecode.problem.scorer, from the derivation's strings alone) agrees with the scores.
"""

from __future__ import annotations

import importlib.util
import math
import random
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fstdecode._native import core as _core
from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model
from fstdecode.search import native_coverage, native_stack
from fstdecode.search.coverage_dp import CoverageOptions
from fstdecode.search.native import native_form
from fstdecode.search.stack import StackOptions
from randmodels import random_case
from scripts import make_big_model
from shared import assert_scored, data_path, examples
from test_lm_image import TRICKY, arpa_ngrams, write_image

LN10 = math.log(10)


def same(a: float, b: float) -> bool:
    """The same double, bit for bit (so -0.0 is not 0.0)."""
    return struct.pack("<d", a) == struct.pack("<d", b)


# ---- every LM: facts, logprob_facts and the next context's facts ------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """A small model of scripts.make_big_model (order-5 LM with Kneser-Ney-like backoffs)."""
    folder = tmp_path_factory.mktemp("facts") / "model"
    argv = ["--out", str(folder), "--preset", "small", "--sentences", "6", "--lm-tool", "builtin"]
    assert make_big_model.main(argv) == 0
    return folder


def _tricky() -> _core.NgramLM:
    return _core.NgramLM.parse_arpa(TRICKY.encode(), 0)


#: Each LM implementation, and why it is here.
LM_KINDS = [
    "arpa",  # NgramLM's hash tables: prefix-only entries, n-grams whose suffixes are absent, -0 and -inf
    "arpa-3",  # NgramLM read up to order 3 (its last order's backoffs dropped)
    "image",  # ImageLM's slots, with value codes and escapes
    "image-3",  # ImageLM restricted (extends from the ext section)
    "generated",  # a realistic order-5 model: long matches, most backoffs nonzero
    "generated-image",  # the same as an image
    "combined",  # CombinedLM (the defaults built from logprob, backoff and extends)
    "kenlm-probing",  # KenLMBinary (the defaults), as KenLM's probing model
    "kenlm-trie",  # KenLMBinary, as KenLM's trie
    "kenlm-restricted",  # RestrictedLM over a KenLMBinary
]


@pytest.fixture(scope="module")
def lms(request, tmp_path_factory):
    """kind -> that LM, made on first use (the generated model only when a kind needs it)."""
    folder = tmp_path_factory.mktemp("facts-lms")
    made: dict = {}

    def get(kind: str):
        if kind in made:
            return made[kind]
        if kind == "arpa":
            lm = _tricky()
        elif kind == "arpa-3":
            lm = _core.NgramLM.parse_arpa(TRICKY.encode(), 3)
        elif kind == "image":
            lm = write_image(get("arpa"), folder / "tricky.bin")
        elif kind == "image-3":
            lm = get("image").restrict(3)
        elif kind == "generated":
            lm = _core.NgramLM.parse_arpa((request.getfixturevalue("generated") / "lm.arpa").read_bytes(), 0)
        elif kind == "generated-image":
            lm = write_image(get("generated"), folder / "generated.bin")
        elif kind == "combined":
            tricky, big = get("arpa"), get("generated")
            words = sorted(set(tricky.words()) | set(big.words()[:200]))
            lm = _core.CombinedLM([tricky, big], [0.75, 1.5], words)
        elif kind.startswith("kenlm"):
            name = "europarl.trie.binlm" if kind == "kenlm-trie" else "europarl.probing.binlm"
            lm = _core.KenLMBinary(str(data_path("moses-lexreo-europarl-fr-en", name)))
            if kind == "kenlm-restricted":
                lm = lm.restrict(3)
        else:
            raise AssertionError(kind)
        made[kind] = lm
        return lm

    return get


def queries(lm, kind: str, generated: Path, count: int = 400, seed: int = 7) -> list[list[int]]:
    """Id sequences to score: every n-gram of the model's ARPA file (and its suffixes) when there
    is one at hand, then random sequences of up to 7 words (longer than the order: only the last
    order - 1 count), half of them over the first 50 ids (so that stored n-grams recur)."""
    text = None
    if kind in ("arpa", "arpa-3", "image", "image-3", "combined"):
        text = TRICKY
    elif kind.startswith("generated"):
        text = (generated / "lm.arpa").read_text(encoding="utf-8")
    out: list[list[int]] = []
    if text is not None:
        grams = arpa_ngrams(text)
        rng = random.Random(seed)
        if len(grams) > 3000:
            grams = rng.sample(grams, 3000)
        for g in grams:
            ids = [lm.index(w) for w in g]
            out += [ids[i:] for i in range(len(ids))]
            # The n-gram after a random word: a context one word longer than the n-gram's.
            out.append([rng.randrange(lm.vocab_size)] + ids)
    rng = random.Random(seed)
    for i in range(count):
        top = lm.vocab_size if i % 2 else min(50, lm.vocab_size)
        out.append([rng.randrange(top) for _ in range(rng.randint(1, 7))])
    return out


@pytest.mark.parametrize("kind", LM_KINDS)
@pytest.mark.slow
def test_facts_answer_as_logprob_backoff_and_extends(lms, generated, kind):
    lm = lms(kind)
    for ids in queries(lm, kind, generated):
        ctx, w = ids[:-1], ids[-1]
        facts = lm.facts(ctx)
        assert len(facts) == len(ctx)
        for length in range(1, len(ctx) + 1):
            assert same(facts[length - 1], lm.backoff(ctx[len(ctx) - length :])), (ids, length)
        value, backoffs, extends = lm.logprob_facts(ctx, w, facts)
        assert same(value, lm.logprob(ctx, w)), (ids, value, lm.logprob(ctx, w))
        assert len(backoffs) == len(extends) == len(ids)
        for length in range(1, len(ids) + 1):
            suffix = ids[len(ids) - length :]
            assert same(backoffs[length - 1], lm.backoff(suffix)), (ids, length)
            assert extends[length - 1] == lm.extends(suffix), (ids, length)


def test_facts_of_a_context_longer_than_the_order_are_by_suffix_length():
    """Only the last order - 1 words count: the longer suffixes' facts are 0 and unread (any
    value there changes nothing), and the next context's longer suffixes have 0 and False."""
    lm = _tricky()
    ids = [lm.index(w) for w in "h a c d f".split()]
    facts = lm.facts(ids[:-1])
    assert facts[3] == 0.0  # a 4-word context of an order-4 model: no backoff of its own
    value, backoffs, extends = lm.logprob_facts(ids[:-1], ids[-1], facts[:3] + [-5.0])
    assert same(value, lm.logprob(ids[:-1], ids[-1]))
    assert backoffs[3:] == [0.0, 0.0] and extends[3:] == [False, False]
    with pytest.raises(ValueError, match="facts"):
        lm.logprob_facts(ids[:-1], ids[-1], facts[:2])


def test_a_missing_suffix_does_not_hide_a_longer_match():
    """"a c d f" is stored, "c d f" and "d f" are not: KenLM's walk up the orders would stop at
    the first absent one; the facts path still finds the longest stored n-gram, as logprob."""
    lm = _tricky()
    a, c, d, f = (lm.index(w) for w in "a c d f".split())
    assert not lm.extends([d, f]) and not lm.extends([c, d, f])  # neither is stored
    value, _, _ = lm.logprob_facts([a, c, d], f, lm.facts([a, c, d]))
    assert same(value, -0.45 * LN10)
    assert same(value, lm.logprob([a, c, d], f))


def test_suffix_closure_is_read_with_the_model(lms):
    """A model whose every stored n-gram's suffix is stored (the generated one, as KenLM's tools
    write them) is suffix-closed, and so is its LM image and their restrictions: their queries
    walk the orders up, shortest first, and stop at the first absent one (its answers held to
    logprob's by the tests above). The tricky model ("a c d f" without "c d f") is not: its
    queries walk down from the longest, and still find "a c d f"."""
    assert lms("generated").suffix_closed and lms("generated-image").suffix_closed
    assert lms("generated").restrict(3).suffix_closed and lms("generated-image").restrict(3).suffix_closed
    assert not lms("arpa").suffix_closed and not lms("image").suffix_closed and not lms("arpa-3").suffix_closed


def test_a_closed_model_scores_as_the_same_model_unclosed():
    """The two walks agree: a closed model, and the same model with one n-gram added whose suffix
    is missing (so not closed), answer every query of the closed one's n-grams alike but there."""
    closed = "\\data\\\nngram 1=4\nngram 2=3\nngram 3=1\n\n\\1-grams:\n-1.0\t<s>\t-0.3\n-0.5\ta\t-0.2\n-0.7\tb\t-0.1\n-0.9\t</s>\n\n" \
             "\\2-grams:\n-0.4\t<s> a\t-0.25\n-0.3\ta b\t-0.15\n-0.6\tb </s>\n\n\\3-grams:\n-0.2\t<s> a b\n\n\\end\\\n"
    lm = _core.NgramLM.parse_arpa(closed.encode(), 0)
    assert lm.suffix_closed
    opened = _core.NgramLM.parse_arpa(closed.replace("ngram 3=1", "ngram 3=2").replace(
        "-0.2\t<s> a b\n", "-0.2\t<s> a b\n-0.05\tb a </s>\n").encode(), 0)
    assert not opened.suffix_closed  # "a </s>" is no bigram
    words = ["<s>", "a", "b", "</s>"]
    for ctx in ([], *([lm.index(w)] for w in words), *([lm.index(v), lm.index(w)] for v in words for w in words)):
        for w in words:
            i = lm.index(w)
            got, _, _ = lm.logprob_facts(ctx, i, lm.facts(ctx))
            assert same(got, lm.logprob(ctx, i))
            if ctx != [lm.index("b"), lm.index("a")] or w != "</s>":
                assert same(got, opened.logprob_facts(ctx, i, opened.facts(ctx))[0])


def chained(lm, words: list[str], *, bos: bool = True, eos: bool = True) -> tuple[list[float], list[float]]:
    """Each word's score with facts passed from word to word (the context cut to its last order
    - 1 words, its facts the next facts of the word before), and with logprob."""
    ids = ([lm.index("<s>")] if bos else []) + [lm.index(w) for w in words] + ([lm.index("</s>")] if eos else [])
    keep = max(lm.order - 1, 1)
    ctx, facts = ids[:1], lm.facts(ids[:1])
    by_facts, by_logprob = [], []
    for i in range(1, len(ids)):
        value, backoffs, _ = lm.logprob_facts(ctx, ids[i], facts)
        by_facts.append(value)
        by_logprob.append(lm.logprob(ids[:i], ids[i]))
        ctx = (ctx + [ids[i]])[-keep:]
        facts = backoffs[: len(ctx)]
    return by_facts, by_logprob


@pytest.mark.parametrize("kind", [
    # (the generated model takes seconds to make: the full suite keeps its cases)
    pytest.param("generated", marks=pytest.mark.slow),
    pytest.param("generated-image", marks=pytest.mark.slow),
    "kenlm-probing",
    "kenlm-trie",
])
def test_facts_passed_along_a_sentence_score_it_as_logprob_and_kenlm(lms, request, kind):
    lm = lms(kind)
    if kind.startswith("kenlm"):
        path = data_path("moses-lexreo-europarl-fr-en", "europarl.trie.binlm" if kind == "kenlm-trie" else "europarl.probing.binlm")
        # Moses' English translations (the binaries' own language), their "TRANSLATION_k=" cut.
        results = data_path("moses-lexreo-europarl-fr-en", "truth", "results.txt").read_text(encoding="utf-8")
        lines = [line.split("=", 1)[1].strip() for line in results.splitlines()[:20] if "=" in line]
    else:
        generated = request.getfixturevalue("generated")
        path = generated / "lm.arpa"
        lines = (generated / "input.txt").read_text(encoding="utf-8").splitlines()
    reference = None
    if importlib.util.find_spec("kenlm") is not None:
        import kenlm

        reference = kenlm.Model(str(path))
    for line in lines:
        by_facts, by_logprob = chained(lm, line.split())
        assert all(same(a, b) for a, b in zip(by_facts, by_logprob)), line
        if reference is not None:  # KenLM keeps floats: equal to float precision
            want = reference.score(line, bos=True, eos=True) * LN10
            assert math.isclose(sum(by_facts), want, rel_tol=1e-5, abs_tol=1e-4), (line, sum(by_facts), want)


# ---- the searches: facts against ngram and trim -------------------------------------------------


def both_paths(search, problem, options):
    """``search`` (a native searcher of fstdecode.search) on ``problem`` with the <s>-tape joins
    scored with facts, then with ngram and trim (the form's core Problem switched)."""
    core = native_form(problem).core
    assert core.lm_facts  # the default
    with_facts = search(problem, options)
    core.lm_facts = False
    try:
        without = search(problem, options)
    finally:
        core.lm_facts = True
    return with_facts, without


def assert_identical(a, b) -> None:
    assert (a.states, a.transitions, a.optimal) == (b.states, b.transitions, b.optimal)
    assert len(a.hypotheses) == len(b.hypotheses)
    for (sa, pa), (sb, pb) in zip(a.hypotheses, b.hypotheses):
        assert same(sa, sb), (sa, sb)
        assert pa == pb


@pytest.fixture(scope="module")
def generated_decoder(generated) -> Decoder:
    return Decoder(load_model(generated / "moses.ini"))


#: The default settings, and a k-best list with a narrow beam (more recombination, more
#: hypotheses per key), and the modified distortion cost off.
STACK_SETTINGS = [
    StackOptions(),
    StackOptions(nbest=5, beam_size=20),
    StackOptions(distortion_estimate=False, early_pruning=False),
]


@pytest.mark.parametrize("options", STACK_SETTINGS)
@pytest.mark.slow
def test_stack_on_a_generated_model_is_the_same_with_facts(generated, generated_decoder, options):
    lines = (generated / "input.txt").read_text(encoding="utf-8").splitlines()
    assert lines
    for line in lines:
        problem = generated_decoder.problem(line.split())
        with_facts, without = both_paths(native_stack.stack_search, problem, options)
        assert_identical(with_facts, without)
        assert with_facts.hypotheses and with_facts.transitions > 0
        assert_scored(problem, with_facts)


@pytest.mark.slow  # the generated model takes seconds to make: the full suite keeps it
def test_coverage_dp_on_a_generated_prefix_is_the_same_with_facts(generated, generated_decoder):
    """The exact coverage DP (BosJoins too) on the first 7 words of each sentence."""
    for line in (generated / "input.txt").read_text(encoding="utf-8").splitlines():
        problem = generated_decoder.problem(line.split()[:7])
        with_facts, without = both_paths(native_coverage.coverage_search, problem, CoverageOptions(nbest=3))
        assert_identical(with_facts, without)
        assert_scored(problem, with_facts)


@pytest.mark.parametrize("order", [2, 3])  # a bigram LM (one-word contexts) and a trigram
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(data=st.data())
@pytest.mark.slow
def test_random_instances_are_the_same_with_facts(order, data):
    model, sentence = data.draw(random_case(order=order))
    problem = Decoder(model).problem(sentence)
    for options in (StackOptions(nbest=3), StackOptions(beam_size=2, nbest=2)):
        with_facts, without = both_paths(native_stack.stack_search, problem, options)
        assert_identical(with_facts, without)
        assert_scored(problem, with_facts)
    with_facts, without = both_paths(native_coverage.coverage_search, problem, CoverageOptions(nbest=2))
    assert_identical(with_facts, without)
