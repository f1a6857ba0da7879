"""Tests of fstdecode.io.native_lm: the native core's LM equals ArpaLM, value for value.

NativeLM must be a drop-in for ArpaLM: the same files accepted, the same ArpaError messages
for the rest, and the same floats bit for bit (both compute ``log10 * LN10`` and the back-off
sums with the same double operations in the same order), so values are compared with
``repr`` equality (exact, and it tells -0.0 from 0.0), never approximately.
"""

from __future__ import annotations

import copy
import gzip
import math
import pickle
import random
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fstdecode._native import core as _core
from fstdecode.io.arpa import BOS, EOS, UNK, ArpaError, ArpaLM
from fstdecode.io.native_lm import NativeLM
from shared import data_path, examples

OOV = "zz-not-a-word"


def same(a: float, b: float) -> bool:
    """Bit-identical floats (NaN equals NaN)."""
    return repr(a) == repr(b)


def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def queries(py: ArpaLM, rnd: random.Random, extra: int = 60) -> list[list[str]]:
    """Word sequences to query: every stored n-gram, with and without a word in front,
    and random sequences over the vocabulary and out-of-vocabulary words."""
    words = sorted(py.vocabulary) + [OOV, "<UNK>", UNK, BOS, EOS]
    seqs = []
    for ngram in py._probs:  # noqa: SLF001 - the reference's own n-grams
        seqs.append(list(ngram))
        seqs.append([rnd.choice(words), *ngram])
    for _ in range(extra):
        seqs.append([rnd.choice(words) for _ in range(rnd.randint(0, py.order + 1))])
    return seqs


def assert_same_lm(nat: NativeLM, py: ArpaLM, rnd: random.Random, extra: int = 60) -> None:
    """Every query of ArpaLM's public surface gives the same answer on both."""
    assert (nat.path, nat.order, nat.counts) == (py.path, py.order, py.counts)
    assert nat.vocabulary == py.vocabulary
    for w in sorted(py.vocabulary) + [OOV, "<UNK>", UNK, "", "\udcff"]:
        assert (w in nat) == (w in py), w
        assert nat.word(w) == py.word(w), w
        assert same(nat.unigram_logprob(w), py.unigram_logprob(w)), w
    for seq in queries(py, rnd, extra):
        for i in range(len(seq) + 1):
            prefix = seq[:i]
            assert same(nat.backoff(prefix), py.backoff(prefix)), prefix
            assert nat.extends(prefix) == py.extends(prefix), prefix
            if i < len(seq):
                assert same(nat.logprob(prefix, seq[i]), py.logprob(prefix, seq[i])), (prefix, seq[i])
                assert same(nat.logprob(tuple(prefix), seq[i]), py.logprob(tuple(prefix), seq[i]))
        for bos in (True, False):
            for eos in (True, False):
                assert same(nat.score_sentence(seq, bos, eos), py.score_sentence(seq, bos, eos)), seq
        assert same(nat.phrase_estimate(seq), py.phrase_estimate(seq)), seq
        assert same(nat.phrase_estimate([BOS, *seq]), py.phrase_estimate([BOS, *seq])), seq


# --------------------------------------------------------------------------- random models

POOL = ["a", "b", "c", "d", "e", BOS, EOS, "Mäßigung", "one\u00a0two", "x\x0by", "日本", "a_b", "-1", "\\w", "1e5"]
PROBS = st.one_of(
    st.integers(min_value=-4000, max_value=0).map(lambda k: f"{k / 1000}"),
    st.sampled_from(
        ["-99", "-inf", "-Infinity", "-INF", "0", "-0", "-0.0", "-1e-3", "-1E+1", "-.5", "-5.", "-1e-400",
         "-4.9e-324", "-2.5000000000000000001", "-12345678901234567890e-19"]
    ),
)
BACKOFFS = st.one_of(
    st.none(),
    st.integers(min_value=-2000, max_value=2000).map(lambda k: f"{k / 1000}"),
    st.sampled_from(["0", "-0", "-0.0", "-99", "1e-3", "+0.5", "0.301", "-15", "1e-400"]),
)
SEPS = st.sampled_from([" ", "\t", "  ", " \t"])


@st.composite
def arpa_files(draw: st.DrawFn) -> tuple[str, int]:
    """(text of an ARPA file ArpaLM accepts, its order): orders 1-4, random vocabulary and
    n-grams (not prefix- or suffix-closed), every number spelling ArpaLM accepts, missing
    backoffs, -99, -inf, a missing <unk> or one spelled <UNK>, blank lines, CRLF, a BOM."""
    order = draw(st.integers(min_value=1, max_value=4))
    words = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=7, unique=True))
    unk = draw(st.sampled_from([None, UNK, "<UNK>"]))
    unigrams = [(w,) for w in words] + ([(unk,)] if unk else [])
    # Higher orders use canonical words; <unk> is spelled as the file allows when written.
    canon = words + [UNK]
    sections = [unigrams]
    for n in range(2, order + 1):
        grams = draw(st.lists(st.tuples(*[st.sampled_from(canon)] * n), max_size=10, unique=True))
        sections.append(grams)
    end = draw(st.sampled_from(["\n", "\r\n"]))
    blank = st.sampled_from(["", " ", "\t "])
    lines = ["\\data\\"]
    for n, grams in enumerate(sections, 1):
        lines.append(f"ngram{draw(st.sampled_from([' ', '  ', chr(9)]))}{n}"
                     f"{draw(st.sampled_from(['', ' ']))}={draw(st.sampled_from(['', ' ', '   ']))}{len(grams)}")
    for n, grams in enumerate(sections, 1):
        lines += ["", f"\\{n}-grams:"]
        for gram in grams:
            spelled = [("<UNK>" if w == UNK and unk == "<UNK>" and draw(st.booleans()) else w) for w in gram]
            fields = [draw(PROBS), *spelled]
            backoff = draw(BACKOFFS)
            if backoff is not None:
                fields.append(backoff)
            sep = draw(SEPS)
            lines.append(draw(st.sampled_from(["", " ", "\t"])) + sep.join(fields) + draw(st.sampled_from(["", " "])))
            if draw(st.integers(0, 9)) == 0:
                lines.append(draw(blank))
    lines += ["", "\\end\\", ""]
    bom = "\ufeff" if draw(st.booleans()) else ""
    return bom + end.join(lines), order


@pytest.mark.slow  # many hypothesis examples; the fast set keeps one agreement check per engine
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arpa=arpa_files(), data=st.data(), rnd=st.randoms(use_true_random=False))
def test_random_models_equal_arpalm(arpa: tuple[str, int], data: st.DataObject, rnd: random.Random) -> None:
    text, order = arpa
    max_order = data.draw(st.one_of(st.none(), st.integers(min_value=1, max_value=order + 1)), "max_order")
    with tempfile.TemporaryDirectory() as d:
        p = write(Path(d) / "lm.arpa", text)
        py = ArpaLM.from_file(p, max_order)
        nat = NativeLM.from_file(p, max_order)
    assert_same_lm(nat, py, rnd)
    for k in range(1, nat.order + 1):
        assert_same_lm(nat.restrict(k), py.restrict(k), rnd, extra=10)
    assert nat.restrict(nat.order) is nat


# --------------------------------------------------------------------------- numbers

NUMBER_ALPHABET = list("0123456789.eE+-_ \tinfatyINFATY\x0b\x0c\x1c\x00\x7f") + [
    "\u0661", "\u0665", "\uff11", "\U0001d7ce", "\xa0", "\u2003", "\u3000", "\x85", "\u00b2", "\u2028",
]


@pytest.mark.slow  # a fuzz of number spellings; the fast set keeps the file-level checks
@settings(max_examples=examples(400), deadline=None)
@given(
    token=st.one_of(
        st.text(alphabet=NUMBER_ALPHABET, min_size=1, max_size=8),
        st.from_regex(r"\A[+-]?(\d{0,3}(_\d)?)?\.?\d{0,3}([eE][+-]?\d{1,4})?\Z"),
        st.sampled_from(["-inf", "-Infinity", "+nan", "-iNfInItY", "-1e400", "-1e-400", "-1_", "-_1", "-1__0",
                         "- 1", "--1", "+-1", "-0x1", "-1e", "-.e1", "-nan(1)", "-infinit", "-١_٢"]),
    ),
    backoff=st.booleans(),
)
def test_numbers_follow_the_one_number_grammar(token: str, backoff: bool) -> None:
    """Any field without a space or tab: accepted as probability/backoff by both readers or
    neither, and a number exactly when it is a plain ASCII decimal or inf/infinity/nan
    (underscores, Unicode digits and padding, which Python's float() reads, are refused)."""
    token = token.replace(" ", "").replace("\t", "").replace("\n", "") or "0"
    line = f"-1\ta\t{token}" if backoff else f"{token}\ta"
    if token.startswith("\\") or (not backoff and token.lstrip(" \t") == ""):
        return
    text = f"\\data\\\nngram 1=1\n\n\\1-grams:\n{line}\n\n\\end\\\n"
    assert_same_outcome(text.encode("utf-8"))
    with tempfile.TemporaryDirectory() as d:
        try:
            NativeLM.from_file(write(Path(d) / "lm.arpa", text))
            accepted = True
        except ArpaError as err:
            accepted = False
            message = str(err)
    if re.fullmatch(r"[+-]?((inf|infinity|nan)|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)", token, re.I):
        value = float(token)
        assert accepted == (math.isfinite(value) if backoff else value <= 0.0), token  # NaN > 0 and <= 0 are False
    else:
        assert not accepted and "is not a number" in message, token


def assert_same_outcome(content: bytes, max_order: int | None = None) -> None:
    """Both readers accept the file and agree, or both raise the same ArpaError message."""
    with tempfile.TemporaryDirectory() as d:
        p = write(Path(d) / "lm.arpa", content)
        try:
            py = ArpaLM.from_file(p, max_order)
        except ArpaError as err:
            with pytest.raises(ArpaError) as info:
                NativeLM.from_file(p, max_order)
            assert str(info.value) == str(err)
            return
        nat = NativeLM.from_file(p, max_order)
    assert_same_lm(nat, py, random.Random(0), extra=20)


# --------------------------------------------------------------------------- hostile files

GOOD = """\
\\data\\
ngram 1=4
ngram 2=2
ngram 3=1

\\1-grams:
-1.0\t<s>\t-0.2
-0.5\t</s>
-0.6\ta\t-0.1
-0.7\tb\t-0.3

\\2-grams:
-0.3\t<s> a\t-0.05
-0.4\ta </s>

\\3-grams:
-0.2\t<s> a </s>

\\end\\
"""

HOSTILE: dict[str, bytes | str] = {
    "empty": "",
    "blank only": "\n \n\t\n",
    "no data header": GOOD.replace("\\data\\\n", "\n\nnot an arpa file\n", 1),
    "headerless": GOOD[GOOD.index("\\1-grams:"):],
    "malformed count": GOOD.replace("ngram 2=2", "ngram 2 two"),
    "counts not consecutive": GOOD.replace("ngram 2=2", "ngram 3=2"),
    "no counts": GOOD.replace("ngram 1=4\nngram 2=2\nngram 3=1\n", ""),
    "ended in header": "\\data\\\nngram 1=3\n",
    "section out of order": GOOD.replace("\\2-grams:", "\\3-grams:", 1),
    "undeclared section": GOOD.replace("\\end\\", "\\4-grams:\n-0.1\t<s> a </s> a\n\n\\end\\"),
    "end too early": GOOD.replace("\\3-grams:", "\\end\\"),
    "too many fields": GOOD.replace("-0.4\ta </s>", "-0.4\ta </s> a <s>"),
    "too few fields": GOOD.replace("-0.4\ta </s>", "-0.4\ta"),
    "prob not a number": GOOD.replace("-0.3\t<s> a", "minus\t<s> a"),
    "backoff not a number": GOOD.replace("-0.6\ta\t-0.1", "-0.6\ta\t-0.1x"),
    "infinite backoff": GOOD.replace("-0.6\ta\t-0.1", "-0.6\ta\t-inf"),
    "NaN prob": GOOD.replace("-0.6\ta\t-0.1", "nan\ta\t-0.1"),
    "positive prob": GOOD.replace("-0.4\ta </s>", "0.25\ta </s>"),
    "count mismatch": GOOD.replace("ngram 2=2", "ngram 2=3"),
    "count mismatch unigrams": GOOD.replace("-0.7\tb\t-0.3\n", ""),
    "missing end": GOOD.replace("\\end\\\n", ""),
    "wrong end": GOOD.replace("\\end\\", "\\fin\\"),
    "text after end": GOOD + "\nleftover\n",
    "word not in unigrams": GOOD.replace("-0.4\ta </s>", "-0.4\ta zebra"),
    "duplicate bigram": GOOD.replace("-0.4\ta </s>", "-0.4\t<s>  a"),
    "duplicate unigram": GOOD.replace("-0.7\tb", "-0.7\ta"),
    "<unk> and <UNK>": GOOD.replace("-0.7\tb", "-0.7\t<unk>").replace("-0.5\t</s>", "-0.5\t<UNK>"),
    "<UNK> in bigram, <unk> unigram": GOOD.replace("-0.7\tb", "-0.7\t<unk>").replace("a </s>", "a <UNK>"),
    "<UNK> in bigram, no unk": GOOD.replace("a </s>", "a <UNK>"),
    "BOM not at the start": "\n\ufeff" + GOOD,
    "vertical tab line in a section": GOOD.replace("\\2-grams:\n", "\\2-grams:\n\x0b\n"),
    "header line led by a form feed in a read section": GOOD.replace("\n\\3-grams:", "\n\x0c\\3-grams:"),
    "invalid UTF-8": GOOD.replace("-0.6\ta", "-0.6\t\xe4").encode("latin-1"),
    "surrogate in UTF-8": GOOD.encode().replace(b"\ta\t", b"\ta\xed\xa0\x80\t"),
    "overlong UTF-8": GOOD.encode().replace(b"\ta\t", b"\ta\xc0\xaf\t"),
    "bad gzip": b"\x1f\x8b\x08\x00garbage after a gzip header",
    "cut gzip": gzip.compress(GOOD.encode())[:40],
    "NUL in number": GOOD.replace("-0.6\ta", "-0.6\x00\ta"),
    "unicode count digits that do not match": GOOD.replace("ngram 1=4", "ngram 1=\u0665"),
    # Python's float(), int() and str.strip() read these; no ARPA writer writes them, and the
    # one grammar (fstdecode.io.values.NUMBER, ASCII headers) refuses them, in both readers.
    "unicode spaces around a header": GOOD.replace("\\data\\", "\u3000\\data\\\xa0"),
    "unicode space after end": GOOD.replace("\\end\\", " \\end\\\x85"),
    "unicode spaces and digits in counts": GOOD.replace("ngram 1=4", "ngram\u2003\u0661 \u2028= \uff14"),
    "underscore in a probability": GOOD.replace("-0.6\ta", "-0_6\ta"),
    "Unicode digits in a probability": GOOD.replace("-0.6\ta", "-\u0660.\u0666\ta"),
    "form feed before a probability": GOOD.replace("-0.6\ta", "\x0c-0.6\ta"),
    "underscore in a backoff": GOOD.replace("-0.7\tb\t-0.3", "-0.7\tb\t-0.3_0"),
    "stray CRs after a backoff": GOOD.replace("-0.6\ta\t-0.1", "-0.6\ta\t-0.1\r\r"),
    "no-break space after a backoff": GOOD.replace("-0.7\tb\t-0.3", "-0.7\tb\t-0.3\xa0"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_files_raise_arpalms_message(name: str, tmp_path: Path) -> None:
    p = write(tmp_path / "lm.arpa", HOSTILE[name])
    with pytest.raises(ArpaError) as expected:
        ArpaLM.from_file(p)
    with pytest.raises(ArpaError) as got:
        NativeLM.from_file(p)
    assert str(got.value) == str(expected.value)


def test_missing_file_and_bad_max_order(tmp_path: Path) -> None:
    for p, max_order in [(tmp_path / "nope.arpa", None), (write(tmp_path / "ok.arpa", GOOD), 0)]:
        with pytest.raises(ArpaError) as expected:
            ArpaLM.from_file(p, max_order)
        with pytest.raises(ArpaError) as got:
            NativeLM.from_file(p, max_order)
        assert str(got.value) == str(expected.value)


SKIPPED_SECTION_ONLY = {
    # Lines that are blank or a header to str.strip() but not to the space/tab field split:
    # fine in a section that max_order skips, an error in one that is read.
    "vertical tab line": GOOD.replace("\\3-grams:\n", "\\3-grams:\n\x0b\n"),
    "header after form feed": GOOD.replace("\n\\end\\", "\n\x0c\\end\\"),
}


@pytest.mark.parametrize("name", list(SKIPPED_SECTION_ONLY))
@pytest.mark.parametrize("max_order", [None, 2])
def test_skipped_sections_are_checked_as_arpalm_checks_them(name: str, max_order: int | None) -> None:
    assert_same_outcome(SKIPPED_SECTION_ONLY[name].encode(), max_order)


ODD_BUT_VALID = {
    "ASCII spaces around headers": GOOD.replace("\\data\\", " \x0b\\data\\\x1c").replace("\\end\\", "\t\\end\\\x0c"),
    "ASCII spaces in counts": GOOD.replace("ngram 1=4", "ngram\x0b1 \x1f= \t4"),
    "CRLF": GOOD.replace("\n", "\r\n"),
    "BOM": "\ufeff" + GOOD,
    "CR inside a word": GOOD.replace("\ta\t", "\ta\rb\t").replace(" a", " a\rb").replace("a </s>", "a\rb </s>"),
    "gzip": gzip.compress(GOOD.encode()),
    "no final newline": GOOD.rstrip("\n"),
    "<UNK> spelling": GOOD.replace("-0.7\tb", "-0.7\t<UNK>").replace("a </s>", "a <UNK>"),
    "backoff on the top order": GOOD.replace("-0.2\t<s> a </s>", "-0.2\t<s> a </s>\t-0.5"),
}


@pytest.mark.parametrize("name", list(ODD_BUT_VALID))
@pytest.mark.parametrize("max_order", [None, 1, 2])
def test_odd_but_valid_files(name: str, max_order: int | None) -> None:
    content = ODD_BUT_VALID[name]
    assert_same_outcome(content if isinstance(content, bytes) else content.encode(), max_order)
    with tempfile.TemporaryDirectory() as d:  # and they are accepted, not refused by both
        NativeLM.from_file(write(Path(d) / "lm", content), max_order)


MUTATIONS = ["", " ", "\t", "\r", "\n", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2003", "\u3000", "\ufeff",
             "\\", "_", "\u0663", "e", "+", "-", ".", "0", "9", "inf", "nan", "<UNK>", "<unk>", "=", "a", "-grams:"]


@pytest.mark.slow  # many hypothesis examples; the fast set keeps one agreement check per engine
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(
        st.tuples(st.integers(min_value=0, max_value=len(GOOD)), st.integers(min_value=0, max_value=3),
                  st.sampled_from(MUTATIONS)),
        min_size=1, max_size=4,
    ),
    max_order=st.sampled_from([None, 1, 2]),
)
def test_mutated_files_same_outcome(edits: list[tuple[int, int, str]], max_order: int | None) -> None:
    """Random edits of a valid file: both readers accept it (and agree) or raise one message."""
    text = GOOD
    for at, cut, insert in edits:
        at = min(at, len(text))
        text = text[:at] + insert + text[at + cut:]
    assert_same_outcome(text.encode("utf-8"), max_order)


# --------------------------------------------------------------------------- API


def test_core_api_over_ids(tmp_path: Path) -> None:
    nat = NativeLM.from_file(write(tmp_path / "lm.arpa", GOOD))
    core = nat.core
    assert isinstance(core, _core.NgramLM)
    assert core.order == 3 and core.counts == (4, 2, 1) and core.vocab_size == 5
    ids = {w: nat.index(w) for w in [BOS, EOS, "a", "b", UNK]}
    assert sorted(ids.values()) == list(range(5)) and nat.index(OOV) == core.unk == ids[UNK]
    assert [core.word(i) for i in range(5)] == core.words()
    assert core.indices([BOS, "a", OOV]) == [ids[BOS], ids["a"], ids[UNK]]
    assert core.logprob([ids[BOS], ids["a"]], ids[EOS]) == nat.logprob([BOS, "a"], EOS)
    assert core.backoff([ids[BOS], ids["a"]]) == nat.backoff([BOS, "a"])
    assert core.extends([ids[BOS], ids["a"]]) and not core.extends([ids["a"], ids[EOS]])
    for bad in (-1, 5):
        with pytest.raises(IndexError):
            core.logprob([bad], ids["a"])
        with pytest.raises(IndexError):
            core.word(bad)
    with pytest.raises(_core.ArpaFormatError):
        _core.NgramLM.parse_arpa(b"not arpa", 0)
    assert _core.NgramLM.parse_arpa(GOOD.encode(), 2).order == 2


def test_parses_in_threads_side_by_side(tmp_path: Path) -> None:
    """parse_arpa releases the GIL; models parsed concurrently are the same as one alone."""
    from concurrent.futures import ThreadPoolExecutor

    text = GOOD.encode()
    alone = _core.NgramLM.parse_arpa(text, 0)
    with ThreadPoolExecutor(4) as pool:
        cores = list(pool.map(lambda k: _core.NgramLM.parse_arpa(text, k % 4), range(16)))
    for k, core in enumerate(cores):
        assert core.order == (k % 4 or 3)
        if core.order == 3:
            assert core.words() == alone.words()
            assert core.score_sentence(["a", "b"], True, True) == alone.score_sentence(["a", "b"], True, True)


def test_type_errors_as_arpalm(tmp_path: Path) -> None:
    p = write(tmp_path / "lm.arpa", GOOD)
    for lm in (ArpaLM.from_file(p), NativeLM.from_file(p)):
        with pytest.raises(TypeError):
            lm.score_sentence("a b")
        with pytest.raises(TypeError):
            lm.logprob("a", "b")
        with pytest.raises(TypeError):
            lm.phrase_estimate("a b")
        with pytest.raises(TypeError):
            lm.logprob([["unhashable"]], "a")
        with pytest.raises(ArpaError):
            lm.restrict(4)
        with pytest.raises(ArpaError):
            lm.restrict(0)
        assert lm.logprob(["a"], None) == lm.logprob(["a"], UNK)  # type: ignore[arg-type]
        assert lm.backoff("a") == lm.backoff(["a"])  # a str context is its characters, as in ArpaLM
    assert repr(NativeLM.from_file(p)).startswith("NativeLM(path=")


# --------------------------------------------------------------------------- real data


def random_sentences(py: ArpaLM, rnd: random.Random, count: int) -> list[list[str]]:
    """Half random words (some out of vocabulary), half chained stored n-grams."""
    vocab = sorted(py.vocabulary)
    grams = [g for g in py._probs if len(g) > 1]  # noqa: SLF001
    out = []
    for i in range(count):
        if i % 2:
            out.append([rnd.choice(vocab) if rnd.random() > 0.05 else OOV for _ in range(rnd.randint(1, 12))])
        else:
            seq: list[str] = []
            while len(seq) < rnd.randint(2, 14):
                seq += list(rnd.choice(grams))
            out.append(seq)
    return out


def assert_same_on_sentences(nat: NativeLM, py: ArpaLM, sentences: list[list[str]]) -> None:
    """Every n-gram query (logprob with each context length, backoff, extends) of every
    window of every sentence, and the sentence and phrase scores."""
    for seq in sentences:
        for i in range(len(seq)):
            for k in range(0, min(i, py.order) + 1):
                ctx = seq[i - k:i]
                assert same(nat.logprob(ctx, seq[i]), py.logprob(ctx, seq[i])), (ctx, seq[i])
                assert same(nat.backoff(ctx), py.backoff(ctx)), ctx
                assert nat.extends(ctx) == py.extends(ctx), ctx
        assert same(nat.score_sentence(seq), py.score_sentence(seq))
        assert same(nat.phrase_estimate(seq), py.phrase_estimate(seq))


@pytest.mark.parametrize("max_order", [2, 3])
@pytest.mark.slow
def test_un_lm(max_order: int) -> None:
    p = data_path("english-lm-un", "lm.en.arpa")
    py = ArpaLM.from_file(p, max_order)
    nat = NativeLM.from_file(p, max_order)
    assert (nat.order, nat.counts) == (py.order, py.counts) == (max_order, (10605, 61672, 24317)[:max_order])
    assert nat.vocabulary == py.vocabulary
    assert_same_on_sentences(nat, py, random_sentences(py, random.Random(max_order), 400))
    if max_order == 3:
        assert_same_on_sentences(nat.restrict(2), py.restrict(2), random_sentences(py, random.Random(7), 200))


@pytest.mark.slow
def test_mini_irstlm() -> None:
    p = data_path("moses-early-distortion-de-en", "mini.irstlm.en.3g.lm")
    py = ArpaLM.from_file(p)
    nat = NativeLM.from_file(p)
    assert (nat.order, nat.counts) == (py.order, py.counts) == (3, (908, 2040, 2377))
    assert nat.vocabulary == py.vocabulary
    assert_same_on_sentences(nat, py, random_sentences(py, random.Random(3), 400))
    assert_same_lm(nat, py, random.Random(5), extra=200)


# --------------------------------------------------------------------------- pickling
# NativeLM pickles as "re-read the file" (its C++ core cannot be pickled), so a Model that holds
# one can be shipped to worker processes (Dask): the round trip must give the same LM, bit for
# bit, and a missing or changed file must raise ArpaError, never crash the process.


def ngram_scores(lm: ArpaLM | NativeLM) -> list[str]:
    """A few n-gram queries of GOOD's model (stored, backed-off, out of vocabulary), as reprs."""
    return [
        repr(v)
        for v in (
            lm.logprob([BOS, "a"], EOS), lm.logprob([BOS], "a"), lm.logprob(["b", "a"], EOS),
            lm.logprob([OOV], "b"), lm.backoff([BOS, "a"]), lm.score_sentence(["a", "b", OOV]),
            lm.phrase_estimate(["a", EOS]), lm.unigram_logprob("b"),
        )
    ]


# The file's own order; a max_order below it (the sections above are skipped while reading); an
# order cut after loading, one below and two below (restrict keeps the max_order it was read with).
@pytest.mark.parametrize("load", ["file order", "max_order 2", "restrict 2", "restrict 1"])
def test_pickle_round_trip_scores_identically(load: str, tmp_path: Path) -> None:
    p = write(tmp_path / "lm.arpa", GOOD)
    nat = NativeLM.from_file(p, 2 if load == "max_order 2" else None)
    py = ArpaLM.from_file(p, 2 if load == "max_order 2" else None)
    if load.startswith("restrict"):
        nat, py = nat.restrict(int(load[-1])), py.restrict(int(load[-1]))
    back = pickle.loads(pickle.dumps(nat))
    assert type(back) is NativeLM and back is not nat and back.core is not nat.core
    assert repr(back) == repr(nat) and (back.path, back.order, back.counts) == (nat.path, nat.order, nat.counts)
    assert ngram_scores(back) == ngram_scores(nat)
    assert_same_lm(back, py, random.Random(1), extra=20)
    assert pickle.loads(pickle.dumps(back)).counts == nat.counts  # and again


def test_pickle_keeps_relative_paths_working_after_chdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model loaded by a relative path re-reads the file it read, whatever the later cwd."""
    write(tmp_path / "lm.arpa", GOOD)
    monkeypatch.chdir(tmp_path)
    nat = NativeLM.from_file("lm.arpa")
    data = pickle.dumps(nat)
    monkeypatch.chdir(tmp_path.parent)
    back = pickle.loads(data)
    assert back.path == "lm.arpa" and ngram_scores(back) == ngram_scores(nat)


def test_arpalm_pickles(tmp_path: Path) -> None:
    """The Python reader's model pickles as plain data (its tables travel with it)."""
    py = ArpaLM.from_file(write(tmp_path / "lm.arpa", GOOD))
    data = pickle.dumps(py)
    (tmp_path / "lm.arpa").unlink()  # not needed to unpickle: the tables are in the pickle
    back = pickle.loads(data)
    assert (back.path, back.order, back.counts) == (py.path, py.order, py.counts)
    assert ngram_scores(back) == ngram_scores(py)


def test_unpickling_a_missing_or_changed_file_raises_arpa_error(tmp_path: Path) -> None:
    p = write(tmp_path / "lm.arpa", GOOD)
    data = pickle.dumps(NativeLM.from_file(p))
    p.unlink()
    with pytest.raises(ArpaError) as info:
        pickle.loads(data)
    message = str(info.value)
    assert message.startswith(f"{p}: no such file") and "unpickling the language model" in message, message
    write(p, GOOD.replace("ngram 3=1", "ngram 3=0").replace("-0.2\t<s> a </s>\n", ""))  # another model
    with pytest.raises(ArpaError, match="has changed since the model was pickled"):
        pickle.loads(data)
    write(p, "not an ARPA file\n")
    with pytest.raises(ArpaError, match="unpickling the language model"):
        pickle.loads(data)


def test_copies_are_the_model_itself(tmp_path: Path) -> None:
    """NativeLM is immutable: copying must not re-read the file as unpickling does."""
    nat = NativeLM.from_file(write(tmp_path / "lm.arpa", GOOD))
    assert copy.copy(nat) is nat and copy.deepcopy(nat) is nat


def example_model_in(folder: Path):
    """The built-in example model, its files copied into ``folder`` (so a test can remove them)."""
    from fstdecode.model.model import example_dir, load_model

    for name in ("phrase-table", "lm.arpa"):
        shutil.copy(example_dir() / name, folder / name)
    ini = (example_dir() / "moses.ini").read_text("utf-8").replace("${MODEL_DIR}", str(folder))
    return load_model(write(folder / "moses.ini", ini))


# The native methods that decode the example's sentences fast: stack (the default), the signature
# DP and beam, the coverage DP; each builds its own native structures from model.lm.core.
@pytest.mark.parametrize("method", ["stack", "dp", "beam", "coverage"])
def test_unpickled_model_decodes_identically(method: str, tmp_path: Path) -> None:
    from fstdecode.decoder import Decoder
    from fstdecode.model.model import example_dir

    model = example_model_in(tmp_path)
    assert isinstance(model.lm, NativeLM)
    back = pickle.loads(pickle.dumps(model))
    assert isinstance(back.lm, NativeLM) and back.lm.core is not model.lm.core
    assert (back.table.num_scores, back.weights, back.distortion_limit) == (
        model.table.num_scores, model.weights, model.distortion_limit)
    lines = (example_dir() / "input.txt").read_text("utf-8").splitlines()
    ours, theirs = Decoder(model, method, nbest=3), Decoder(back, method, nbest=3)
    for k, line in enumerate(lines):
        a, b = ours.decode(line, k), theirs.decode(line, k)
        assert a.best is not None and a.error is None
        assert (a.derivations, a.optimal, a.error, a.reason) == (b.derivations, b.optimal, b.error, b.reason)
        assert [repr(d.score) for d in a.derivations] == [repr(d.score) for d in b.derivations]


def test_model_with_python_lm_pickles(tmp_path: Path) -> None:
    # A model on the reference reader ArpaLM (as tests build them) pickles and decodes alike.
    import dataclasses

    from fstdecode.decoder import Decoder

    model = example_model_in(tmp_path)
    model = dataclasses.replace(model, lm=ArpaLM.from_file(model.lm.path))
    back = pickle.loads(pickle.dumps(model))
    assert isinstance(back.lm, ArpaLM)
    line = "das muss unsere sorge gleichermaßen sein"
    assert Decoder(back).decode(line).derivations == Decoder(model).decode(line).derivations
