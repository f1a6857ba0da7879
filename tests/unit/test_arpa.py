"""Tests of fstdecode.io.arpa: ARPA parsing and KenLM back-off scoring.

Expected values are worked out by hand from the ARPA text in each test (log10 sums times
ln 10), never copied from the module's output.
"""

from __future__ import annotations

import gzip
import math
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fstdecode.errors import FstdecodeError
from fstdecode.io.arpa import (
    BOS,
    EOS,
    LN10,
    MISSING_UNK_LOG10,
    UNK,
    ArpaError,
    ArpaLM,
)

from shared import arpa_text, data_path, examples

# A hand-made trigram model. It mixes tabs and spaces, has a padded IRSTLM-style header,
# <s> at -99, a positive backoff (b, c a), n-grams without a backoff field, -inf and
# -Infinity probabilities, and no <unk>.
HAND = """\
\\data\\
ngram  1=       7
ngram 2=5
ngram   3 =  2

\\1-grams:
-99\t<s>\t-0.5
-0.8\t</s>
-1.0\ta\t-0.3
-1.2\tb\t0.2
-1.5\tc\t-0.4
-inf\tz
-Infinity\ty

\\2-grams:
-0.2 <s> a -0.1
-0.4\ta b\t-0.25
-0.6  b   c
-0.3\tb </s>
-0.7\tc a\t0.15

\\3-grams:
-0.05\t<s> a b
-0.1 a b c

\\end\\
"""


def ln(log10: float) -> float:
    return log10 * LN10


def write(tmp_path: Path, text: str, name: str = "lm.arpa") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture
def hand(tmp_path: Path) -> ArpaLM:
    return ArpaLM.from_file(write(tmp_path, HAND))


# --------------------------------------------------------------------------- scoring


def test_header_and_counts(hand: ArpaLM, tmp_path: Path) -> None:
    assert hand.order == 3
    assert hand.counts == (7, 5, 2)
    assert hand.path == str(tmp_path / "lm.arpa")


def test_full_ngram_hits(hand: ArpaLM) -> None:
    assert hand.logprob([BOS, "a"], "b") == pytest.approx(ln(-0.05))
    assert hand.logprob(["a"], "b") == pytest.approx(ln(-0.4))
    assert hand.logprob([], "c") == pytest.approx(ln(-1.5))
    # Only the last order-1 = 2 words of a longer context are used (OOV "q" is ignored).
    assert hand.logprob(["q", "c", BOS, "a"], "b") == pytest.approx(ln(-0.05))


def test_one_backoff(hand: ArpaLM) -> None:
    # "a b </s>" absent: backoff(a b) = -0.25, then bigram "b </s>" = -0.3
    assert hand.logprob(["a", "b"], EOS) == pytest.approx(ln(-0.25 + -0.3))


def test_two_level_backoff_with_positive_weight(hand: ArpaLM) -> None:
    # "a b a" absent: bo(a b) = -0.25; "b a" absent: bo(b) = +0.2; p(a) = -1.0
    assert hand.logprob(["a", "b"], "a") == pytest.approx(ln(-0.25 + 0.2 + -1.0))
    # "c a c" absent: bo(c a) = +0.15; "a c" absent: bo(a) = -0.3; p(c) = -1.5
    assert hand.logprob(["c", "a"], "c") == pytest.approx(ln(0.15 + -0.3 + -1.5))


def test_positive_backoff(hand: ArpaLM) -> None:
    # "b a" absent: bo(b) = +0.2 (used as given, not clipped), p(a) = -1.0
    assert hand.logprob(["b"], "a") == pytest.approx(ln(0.2 + -1.0))
    assert hand.logprob(["b"], "a") > hand.unigram_logprob("a")


def test_absent_context_charges_no_backoff(hand: ArpaLM) -> None:
    # "c c b" absent and "c c" absent (charge 0); "c b" absent: bo(c) = -0.4; p(b) = -1.2
    assert hand.logprob(["c", "c"], "b") == pytest.approx(ln(-0.4 + -1.2))
    # "b c" is present but has no backoff field: charge 0 as well
    assert hand.logprob(["b", "c"], "b") == pytest.approx(ln(-0.4 + -1.2))
    # </s> has no backoff field; "</s> a" absent
    assert hand.logprob([EOS], "a") == pytest.approx(ln(-1.0))


def test_bos_minus_99_is_context_only(hand: ArpaLM) -> None:
    assert hand.unigram_logprob(BOS) == pytest.approx(ln(-99))
    # <s> </s>: "<s> </s>" absent, bo(<s>) = -0.5, p(</s>) = -0.8; -99 never counted
    assert hand.score_sentence([]) == pytest.approx(ln(-0.5 + -0.8))


def test_score_sentence_scores_eos_not_bos(hand: ArpaLM) -> None:
    # <s> a: -0.2; <s> a b: -0.05; a b c: -0.1;
    # b c </s> absent, bo(b c) = 0 (no field); c </s> absent, bo(c) = -0.4; p(</s>) = -0.8
    expected = -0.2 + -0.05 + -0.1 + (-0.4 + -0.8)
    assert hand.score_sentence(["a", "b", "c"]) == pytest.approx(ln(expected))
    assert hand.score_sentence(["a", "b", "c"], eos=False) == pytest.approx(ln(-0.2 - 0.05 - 0.1))
    # No <s>: first word is a unigram; "a b" bigram
    assert hand.score_sentence(["a", "b"], bos=False, eos=False) == pytest.approx(ln(-1.0 + -0.4))
    # Tuples and lists both work
    assert hand.score_sentence(("a", "b", "c")) == hand.score_sentence(["a", "b", "c"])


def test_score_sentence_equals_sum_of_logprobs(hand: ArpaLM) -> None:
    words = ["c", "a", "b", "q", "a", "c"]
    seq = [BOS, *words, EOS]
    total = sum(hand.logprob(seq[:i], seq[i]) for i in range(1, len(seq)))
    assert hand.score_sentence(words) == pytest.approx(total)


def test_minus_inf_probability(hand: ArpaLM) -> None:
    assert hand.unigram_logprob("z") == -math.inf
    assert hand.unigram_logprob("y") == -math.inf  # "-Infinity" spelling
    assert hand.logprob(["a"], "z") == -math.inf
    assert hand.score_sentence(["a", "z"]) == -math.inf
    # As context, z is an ordinary word (no backoff field: 0)
    assert hand.logprob(["z"], "a") == pytest.approx(ln(-1.0))


def test_oov_maps_to_unk_and_missing_unk_floor(hand: ArpaLM) -> None:
    assert MISSING_UNK_LOG10 == -100.0
    assert "a" in hand and BOS in hand and "z" in hand
    assert "qqq" not in hand
    assert UNK in hand  # added, as KenLM does
    assert hand.unigram_logprob("qqq") == pytest.approx(ln(-100.0))
    assert hand.unigram_logprob(UNK) == pytest.approx(ln(-100.0))
    # predicted OOV: "a <unk>" absent, bo(a) = -0.3, p(<unk>) = -100
    assert hand.logprob(["a"], "qqq") == pytest.approx(ln(-0.3 + -100.0))
    # OOV in the context: "<unk> a" absent, bo(<unk>) = 0, p(a) = -1.0
    assert hand.logprob(["qqq"], "a") == pytest.approx(ln(-1.0))
    # "<s> q a" -> "<unk> a" absent, bo(<s> <unk>) absent, bo(<unk>) = 0
    assert hand.score_sentence(["q", "a"], eos=False) == pytest.approx(ln(-0.5 + -100.0 + -1.0))


def test_unk_present_in_file(tmp_path: Path) -> None:
    text = (
        "\\data\\\nngram 1=4\nngram 2=1\n\n\\1-grams:\n-1\t<s>\t-0.5\n-0.5\t</s>\n"
        "-0.7\t<unk>\t-0.2\n-0.6\ta\n\n\\2-grams:\n-0.1\t<unk> a\n\n\\end\\\n"
    )
    lm = ArpaLM.from_file(write(tmp_path, text))
    assert lm.unigram_logprob("never-seen") == pytest.approx(ln(-0.7))
    # "<unk> a" is a real bigram, reached through an OOV context word
    assert lm.logprob(["never-seen"], "a") == pytest.approx(ln(-0.1))
    # "a <unk>" absent; bo(a) = 0 (no field)
    assert lm.logprob(["a"], "xyz") == pytest.approx(ln(-0.7))
    # <s> x: "<s> <unk>" absent, bo(<s>) = -0.5
    assert lm.score_sentence(["x"], eos=False) == pytest.approx(ln(-0.5 + -0.7))


def test_capitalised_unk_is_the_unknown_word(tmp_path: Path) -> None:
    text = "\\data\\\nngram 1=3\n\n\\1-grams:\n-1\t<s>\n-0.5\t</s>\n-0.3\t<UNK>\n\n\\end\\\n"
    lm = ArpaLM.from_file(write(tmp_path, text))
    assert lm.unigram_logprob("anything") == pytest.approx(ln(-0.3))
    assert lm.unigram_logprob(UNK) == pytest.approx(ln(-0.3))


def test_phrase_estimate(hand: ArpaLM) -> None:
    assert hand.phrase_estimate([]) == 0.0
    # p(a) + p(b | a) + p(c | a b) = -1.0 - 0.4 - 0.1
    assert hand.phrase_estimate(["a", "b", "c"]) == pytest.approx(ln(-1.0 + -0.4 + -0.1))
    # p(c) + p(a | c) + p(b | c a): "c a b" absent, bo(c a) = +0.15, "a b" = -0.4
    assert hand.phrase_estimate(["c", "a", "b"]) == pytest.approx(ln(-1.5 + -0.7 + 0.15 + -0.4))
    # A leading <s> is context only (Moses): p(a | <s>) + p(b | <s> a)
    assert hand.phrase_estimate([BOS, "a", "b"]) == pytest.approx(ln(-0.2 + -0.05))
    # Context never reaches outside the phrase: 4th word sees only the 2 before it
    assert hand.phrase_estimate(["c", "a", "b", "c"]) == pytest.approx(
        ln(-1.5 + -0.7 + 0.15 + -0.4 + -0.1)
    )


def test_restrict_and_max_order(hand: ArpaLM, tmp_path: Path) -> None:
    bigram = hand.restrict(2)
    from_file = ArpaLM.from_file(tmp_path / "lm.arpa", max_order=2)
    # <s> a: -0.2; a b: -0.4 (trigram ignored); b c: -0.6; c </s> absent: bo(c) -0.4, p(</s>) -0.8
    expected = ln(-0.2 + -0.4 + -0.6 + -0.4 + -0.8)
    for lm in (bigram, from_file):
        assert lm.order == 2
        assert lm.counts == (7, 5)
        assert lm.logprob([BOS, "a"], "b") == pytest.approx(ln(-0.4))
        assert lm.score_sentence(["a", "b", "c"]) == pytest.approx(expected)
        # bigram backoffs are gone, unigram ones stay: "b a" absent, bo(b) = +0.2
        assert lm.logprob(["a", "b"], "a") == pytest.approx(ln(0.2 + -1.0))
    unigram = hand.restrict(1)
    assert unigram.order == 1
    assert unigram.score_sentence(["a", "b"]) == pytest.approx(ln(-1.0 + -1.2 + -0.8))
    assert ArpaLM.from_file(tmp_path / "lm.arpa", max_order=1).logprob(["a"], "b") == pytest.approx(
        ln(-1.2)
    )
    # The original is untouched; restrict to its own order is itself; larger max_order is clamped
    assert hand.logprob([BOS, "a"], "b") == pytest.approx(ln(-0.05))
    assert hand.restrict(3) is hand
    assert ArpaLM.from_file(tmp_path / "lm.arpa", max_order=9).order == 3
    for bad in (0, 4):
        with pytest.raises(ArpaError):
            hand.restrict(bad)
    with pytest.raises(ArpaError):
        ArpaLM.from_file(tmp_path / "lm.arpa", max_order=0)


QUERIES = [
    ([], "a"),
    ([BOS], "a"),
    ([BOS, "a"], "b"),
    (["a", "b"], EOS),
    (["a", "b"], "a"),
    (["c", "c"], "b"),
    (["c", "a"], "c"),
    (["b"], "qq"),
    (["qq", "c"], "a"),
]


def test_tabs_and_spaces_are_equivalent(hand: ArpaLM, tmp_path: Path) -> None:
    # SRILM/KenLM layout: prob TAB words-joined-by-one-space [TAB backoff]
    tabs_lines, n = [], 0
    for line in HAND.split("\n"):
        m = re.fullmatch(r"\\(\d)-grams:", line)
        if m:
            n = int(m.group(1))
        elif n and line and not line.startswith("\\"):
            f = line.split()
            line = "\t".join([f[0], " ".join(f[1 : n + 1])] + f[n + 1 :])
        tabs_lines.append(line)
    tabs = "\n".join(tabs_lines)
    assert "-0.6\tb c\n" in tabs and "-0.2\t<s> a\t-0.1\n" in tabs
    spaces = HAND.replace("\t", " ")
    assert "\t" not in spaces
    lm_tabs = ArpaLM.from_file(write(tmp_path, tabs, "tabs.arpa"))
    lm_spaces = ArpaLM.from_file(write(tmp_path, spaces, "spaces.arpa"))
    for ctx, w in QUERIES:
        assert lm_tabs.logprob(ctx, w) == hand.logprob(ctx, w)
        assert lm_spaces.logprob(ctx, w) == hand.logprob(ctx, w)


def test_crlf_and_bom(hand: ArpaLM, tmp_path: Path) -> None:
    p = tmp_path / "dos.arpa"
    p.write_bytes(b"\xef\xbb\xbf" + HAND.replace("\n", "\r\n").encode())
    lm = ArpaLM.from_file(p)
    for ctx, w in QUERIES:
        assert lm.logprob(ctx, w) == hand.logprob(ctx, w)


def test_gzip_by_suffix_and_by_magic(hand: ArpaLM, tmp_path: Path) -> None:
    gz = tmp_path / "lm.arpa.gz"
    gz.write_bytes(gzip.compress(HAND.encode()))
    magic_only = tmp_path / "lm.bin"
    magic_only.write_bytes(gzip.compress(HAND.encode()))
    for p in (gz, magic_only):
        lm = ArpaLM.from_file(p)
        assert lm.counts == (7, 5, 2)
        for ctx, w in QUERIES:
            assert lm.logprob(ctx, w) == hand.logprob(ctx, w)
    bad = tmp_path / "broken.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(ArpaError, match=re.escape(str(bad))):
        ArpaLM.from_file(bad)


def test_utf8_words_and_nbsp_inside_a_word(tmp_path: Path) -> None:
    text = (
        "\\data\\\nngram 1=4\n\n\\1-grams:\n-1\t<s>\n-0.5\t</s>\n-0.3\tMäßigung\n"
        "-0.4\tone\u00a0two\n\n\\end\\\n"
    )
    lm = ArpaLM.from_file(write(tmp_path, text))
    assert "Mäßigung" in lm
    assert "one\u00a0two" in lm  # KenLM splits on space/tab only
    assert lm.unigram_logprob("one\u00a0two") == pytest.approx(ln(-0.4))


def test_str_instead_of_words_is_a_type_error(hand: ArpaLM) -> None:
    with pytest.raises(TypeError):
        hand.score_sentence("a b")
    with pytest.raises(TypeError):
        hand.logprob("a", "b")
    with pytest.raises(TypeError):
        hand.phrase_estimate("a b")


# --------------------------------------------------------------------------- errors

# \data\, ngram 1=3, ngram 2=2, then the two sections, each after a blank line, and \end\.
GOOD_BIGRAM = arpa_text(["-1.0\t<s>\t-0.2", "-0.5\t</s>", "-0.6\ta\t-0.1"], ["-0.3\t<s> a", "-0.4\ta </s>"])


def lineno_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based number of the nth line of text that contains needle."""
    hits = [i for i, line in enumerate(text.split("\n"), 1) if needle in line]
    return hits[nth - 1]


def assert_error(path: Path, lineno: int | None, *fragments: str, **kw: object) -> ArpaError:
    with pytest.raises(ArpaError) as info:
        ArpaLM.from_file(path, **kw)  # type: ignore[arg-type]
    msg = str(info.value)
    prefix = f"{path}:{lineno}: " if lineno is not None else f"{path}: "
    assert msg.startswith(prefix), msg
    for frag in fragments:
        assert frag in msg, msg
    assert isinstance(info.value, FstdecodeError)
    return info.value


def test_good_bigram_parses(tmp_path: Path) -> None:
    lm = ArpaLM.from_file(write(tmp_path, GOOD_BIGRAM))
    assert lm.counts == (3, 2)
    assert lm.score_sentence(["a"]) == pytest.approx(ln(-0.3 + -0.4))


def test_error_file_not_found(tmp_path: Path) -> None:
    p = tmp_path / "nope.arpa"
    with pytest.raises(ArpaError) as info:
        ArpaLM.from_file(p)
    assert str(info.value) == f"{p}: no such file"


def test_error_missing_data_header(tmp_path: Path) -> None:
    text = GOOD_BIGRAM.replace("\\data\\\n", "\n\nnot an arpa file\n", 1)
    assert_error(write(tmp_path, text), 3, "\\data\\")
    assert_error(write(tmp_path, "", "empty.arpa"), 1, "\\data\\")
    headerless = GOOD_BIGRAM[GOOD_BIGRAM.index("\\1-grams:") :]
    assert_error(write(tmp_path, headerless, "h.arpa"), 1, "\\data\\")


def test_error_malformed_count_line(tmp_path: Path) -> None:
    text = GOOD_BIGRAM.replace("ngram 2=2", "ngram 2 two")
    assert_error(write(tmp_path, text), 3, "count line")
    text = GOOD_BIGRAM.replace("ngram 2=2", "ngram 3=2")
    assert_error(write(tmp_path, text), 3, "consecutive")


def test_error_section_out_of_order(tmp_path: Path) -> None:
    text = GOOD_BIGRAM.replace("\\1-grams:", "\\X-grams:").replace("\\2-grams:", "\\1-grams:")
    text = text.replace("\\X-grams:", "\\2-grams:")
    assert_error(write(tmp_path, text), lineno_of(text, "\\2-grams:"), "out of order", "\\1-grams:")


def test_error_section_of_undeclared_order(tmp_path: Path) -> None:
    text = GOOD_BIGRAM.replace("\\end\\", "\\3-grams:\n-0.1\t<s> a </s>\n\n\\end\\")
    assert_error(write(tmp_path, text), lineno_of(text, "\\3-grams:"), "not declared", "\\3-grams:")
    # ... also when it comes where a declared section is expected
    text = GOOD_BIGRAM.replace("\\2-grams:", "\\5-grams:")
    assert_error(write(tmp_path, text), lineno_of(text, "\\5-grams:"), "not declared")


def test_error_wrong_number_of_words(tmp_path: Path) -> None:
    text = GOOD_BIGRAM.replace("-0.4\ta </s>", "-0.4\ta </s> a <s>")
    assert_error(write(tmp_path, text), lineno_of(text, "a </s> a <s>"), "2 word(s)", "5 field(s)")
    text = GOOD_BIGRAM.replace("-0.4\ta </s>", "-0.4\ta")
    assert_error(write(tmp_path, text, "b.arpa"), lineno_of(text, "-0.4\ta"), "2 field(s)")


def test_error_unparseable_numbers(tmp_path: Path) -> None:
    text = GOOD_BIGRAM.replace("-0.3\t<s> a", "minus\t<s> a")
    assert_error(write(tmp_path, text), lineno_of(text, "minus"), "'minus'")
    text = GOOD_BIGRAM.replace("-0.6\ta\t-0.1", "-0.6\ta\t-0.1x")
    assert_error(write(tmp_path, text, "b.arpa"), lineno_of(text, "-0.1x"), "backoff", "'-0.1x'")
    text = GOOD_BIGRAM.replace("-0.6\ta\t-0.1", "-0.6\ta\tinf")
    assert_error(write(tmp_path, text, "c.arpa"), lineno_of(text, "\tinf"), "finite")
    text = GOOD_BIGRAM.replace("-0.6\ta\t-0.1", "nan\ta\t-0.1")
    assert_error(write(tmp_path, text, "d.arpa"), lineno_of(text, "nan"), "NaN")


def test_error_positive_probability(tmp_path: Path) -> None:
    text = GOOD_BIGRAM.replace("-0.4\ta </s>", "0.25\ta </s>")
    assert_error(write(tmp_path, text), lineno_of(text, "0.25"), "positive")


def test_error_count_mismatch_names_section_header(tmp_path: Path) -> None:
    text = GOOD_BIGRAM.replace("ngram 2=2", "ngram 2=3")
    err = assert_error(write(tmp_path, text), lineno_of(text, "\\2-grams:"), "\\2-grams:")
    assert re.search(r"\b2\b.*\b3\b", str(err).split(": ", 1)[1]), str(err)
    text = GOOD_BIGRAM.replace("-0.6\ta\t-0.1\n", "")
    err = assert_error(write(tmp_path, text, "b.arpa"), lineno_of(text, "\\1-grams:"), "\\1-grams:")
    assert "2 entries" in str(err) and "1=3" in str(err)


def test_error_count_mismatch_in_skipped_section(tmp_path: Path) -> None:
    text = GOOD_BIGRAM.replace("ngram 2=2", "ngram 2=2\nngram 3=2").replace(
        "\\end\\", "\\3-grams:\n-0.1\t<s> a </s>\n\n\\end\\"
    )
    p = write(tmp_path, text)
    assert_error(p, lineno_of(text, "\\3-grams:"), "1 entries", "3=2", max_order=2)
    ok = text.replace("ngram 3=2", "ngram 3=1")
    lm = ArpaLM.from_file(write(tmp_path, ok, "ok.arpa"), max_order=2)
    assert lm.order == 2 and lm.counts == (3, 2)


def test_error_missing_end(tmp_path: Path) -> None:
    text = GOOD_BIGRAM.replace("\\end\\\n", "")
    assert_error(write(tmp_path, text), len(text.split("\n")) - 1, "\\end\\")
    text = GOOD_BIGRAM.replace("\\end\\", "\\fin\\")
    assert_error(write(tmp_path, text, "b.arpa"), lineno_of(text, "\\fin\\"), "\\end\\")
    text = GOOD_BIGRAM.replace("\\2-grams:", "\\end\\")
    assert_error(write(tmp_path, text, "c.arpa"), lineno_of(text, "\\end\\"), "\\2-grams:")


def test_error_text_after_end(tmp_path: Path) -> None:
    text = GOOD_BIGRAM + "\nleftover\n"
    assert_error(write(tmp_path, text), lineno_of(text, "leftover"), "after \\end\\")


def test_error_word_not_in_unigrams(tmp_path: Path) -> None:
    text = GOOD_BIGRAM.replace("-0.4\ta </s>", "-0.4\ta zebra")
    assert_error(write(tmp_path, text), lineno_of(text, "zebra"), "'zebra'")


def test_error_duplicate_ngram(tmp_path: Path) -> None:
    text = GOOD_BIGRAM.replace("-0.4\ta </s>", "-0.4\t<s>  a").replace("ngram 2=2", "ngram 2=2")
    assert_error(write(tmp_path, text), lineno_of(text, "<s>  a"), "duplicate")
    text = GOOD_BIGRAM.replace("-0.5\t</s>", "-0.5\ta")
    assert_error(write(tmp_path, text, "b.arpa"), lineno_of(text, "-0.6\ta"), "duplicate")


def test_error_not_utf8(tmp_path: Path) -> None:
    p = tmp_path / "latin1.arpa"
    p.write_bytes(GOOD_BIGRAM.replace("-0.6\ta", "-0.6\t\xe4").encode("latin-1"))
    assert_error(p, lineno_of(GOOD_BIGRAM, "-0.6\ta"), "UTF-8")


# --------------------------------------------------------------------------- property

WORDS = ["a", "b", "c", "d", BOS, EOS]
log10s = st.integers(min_value=-4000, max_value=0).map(lambda k: f"{k / 1000:.3f}")
backoffs = st.one_of(st.none(), st.integers(min_value=-2000, max_value=2000).map(lambda k: f"{k / 1000:.3f}"))


@st.composite
def bigram_models(draw: st.DrawFn) -> tuple[dict[str, tuple[str, str | None]], dict[tuple[str, str], str]]:
    vocab = draw(st.lists(st.sampled_from(WORDS + [UNK]), min_size=1, unique=True))
    uni = {w: (draw(log10s), draw(backoffs)) for w in vocab}
    pairs = [(x, y) for x in vocab for y in vocab]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=12)) if pairs else []
    bi = {pair: draw(log10s) for pair in chosen}
    return uni, bi


def reference_logprob(
    uni: dict[str, tuple[str, str | None]], bi: dict[tuple[str, str], str], ctx: list[str], w: str
) -> float:
    """Textbook bigram back-off, straight from the ARPA strings."""
    def known(x: str) -> str:
        return x if x in uni else UNK

    def p_uni(x: str) -> float:
        return float(uni[x][0]) * LN10 if x in uni else MISSING_UNK_LOG10 * LN10

    w = known(w)
    if not ctx:
        return p_uni(w)
    c = known(ctx[-1])
    if (c, w) in bi:
        return float(bi[(c, w)]) * LN10
    bo = uni[c][1] if c in uni else None
    return (float(bo) * LN10 if bo is not None else 0.0) + p_uni(w)


def to_arpa(uni: dict[str, tuple[str, str | None]], bi: dict[tuple[str, str], str], sep: str) -> str:
    lines = ["\\data\\", f"ngram 1={len(uni)}", f"ngram 2={len(bi)}", "", "\\1-grams:"]
    for w, (p, bo) in uni.items():
        lines.append(sep.join([p, w] + ([bo] if bo is not None else [])))
    lines += ["", "\\2-grams:"]
    for (x, y), p in bi.items():
        lines.append(f"{p}{sep}{x} {y}")
    lines += ["", "\\end\\", ""]
    return "\n".join(lines)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=bigram_models(),
    sep=st.sampled_from(["\t", " ", "  \t "]),
    queries=st.lists(
        st.tuples(st.lists(st.sampled_from(WORDS + ["oov"]), max_size=3), st.sampled_from(WORDS + ["oov", UNK])),
        min_size=1,
        max_size=8,
    ),
)
def test_bigram_logprob_matches_reference(model, sep, queries) -> None:  # type: ignore[no-untyped-def]
    uni, bi = model
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "lm.arpa"
        p.write_text(to_arpa(uni, bi, sep), encoding="utf-8")
        lm = ArpaLM.from_file(p)
    assert lm.order == 2
    assert lm.counts == (len(uni), len(bi))
    for ctx, w in queries:
        assert lm.logprob(ctx, w) == pytest.approx(reference_logprob(uni, bi, ctx, w), rel=1e-12, abs=1e-12)
        sentence = [x for x in ctx if x not in (BOS,)] + [w]
        seq = [BOS, *sentence, EOS]
        expected = sum(reference_logprob(uni, bi, seq[:i], seq[i]) for i in range(1, len(seq)))
        assert lm.score_sentence(sentence) == pytest.approx(expected, rel=1e-9, abs=1e-9)


# --------------------------------------------------------------------------- real data


MOSES_KENLM0 = [
    ("despite progress human rights is unknown . the end of", -52.0398),
    ("the end of right is unknown despite progress people", -56.4222),
    ("democracy and leadership , both XXXX .", -37.1692),
    ("hundreds of thousands of within the realm", -32.7886),
    ("especially the between China and options .", -42.1864),
]


@pytest.mark.parametrize("sentence,kenlm0", MOSES_KENLM0)
def test_golden_moses_kenlm0(sentence: str, kenlm0: float) -> None:
    lm = _mini_lm()
    assert lm.score_sentence(sentence.split(" ")) == pytest.approx(kenlm0, abs=1e-3)


_CACHE: dict[str, ArpaLM] = {}


def _mini_lm() -> ArpaLM:
    p = data_path("moses-early-distortion-de-en", "mini.irstlm.en.3g.lm")
    if "mini" not in _CACHE:
        _CACHE["mini"] = ArpaLM.from_file(p)
    return _CACHE["mini"]


def test_mini_lm_header() -> None:
    lm = _mini_lm()
    assert lm.order == 3 and lm.counts == (908, 2040, 2377)
    assert "XXXX" not in lm
    # <unk> line in the file: -0.511625
    assert lm.unigram_logprob("XXXX") == pytest.approx(ln(-0.511625))


@pytest.mark.slow
def test_english_un_lm_full_and_bigram() -> None:
    p = data_path("english-lm-un", "lm.en.arpa")
    full = ArpaLM.from_file(p)
    assert full.order == 3 and full.counts == (10605, 61672, 24317)
    # Lines read off the file:
    #   -1.30132 the committee on          -0.868639 committee on  -0.773493
    #   -1.64467 the committee -0.187898   -2.25875  committee     -1.00312
    #   -1.12261 the -0.876477             -1.08426  committee </s> 2.01804 (positive backoff)
    #   -1.37399 </s> -4.16852             (no "committee the", "the committee the",
    #                                        "</s> the" or "committee </s> the" n-grams)
    assert full.logprob(["the", "committee"], "on") == pytest.approx(ln(-1.30132))
    assert full.logprob(["committee"], "on") == pytest.approx(ln(-0.868639))
    assert full.logprob(["the", "committee"], "the") == pytest.approx(ln(-0.187898 + -1.00312 + -1.12261))
    assert full.logprob(["committee", EOS], "the") == pytest.approx(ln(2.01804 + -4.16852 + -1.12261))
    assert full.unigram_logprob(BOS) == pytest.approx(ln(-5.073))

    bigram = ArpaLM.from_file(p, max_order=2)
    assert bigram.order == 2 and bigram.counts == (10605, 61672)
    assert bigram.logprob(["the", "committee"], "on") == pytest.approx(ln(-0.868639))
    assert bigram.logprob(["the", "committee"], "the") == pytest.approx(ln(-1.00312 + -1.12261))
    # the positive bigram backoff is dropped in the bigram model
    assert bigram.logprob(["committee", EOS], "the") == pytest.approx(ln(-4.16852 + -1.12261))
    restricted = full.restrict(2)
    for ctx, w in [(["the", "committee"], "on"), (["committee", EOS], "the"), (["x", "y"], "of")]:
        assert restricted.logprob(ctx, w) == bigram.logprob(ctx, w)


def test_moses_toy_numbers_lm() -> None:
    lm = ArpaLM.from_file(data_path("moses-toy-numbers", "small.lm"))
    assert lm.order == 3 and lm.counts == (21, 42, 10)
    # -99 <s> -0.3836367 ; no <unk> in the file
    assert lm.unigram_logprob(BOS) == pytest.approx(ln(-99))
    assert lm.unigram_logprob("eleven") == pytest.approx(ln(MISSING_UNK_LOG10))
    # -1.08123 3 0.08509711 (positive backoff); no "3 5" bigram; -0.8138084 5
    assert lm.logprob(["3"], "5") == pytest.approx(ln(0.08509711 + -0.8138084))
    # -0.6729417 </s> has no backoff field; no "</s> 5" bigram
    assert lm.logprob([EOS], "5") == pytest.approx(ln(-0.8138084))
    # <s> 5 4 </s>: "<s> 5" -0.5563025; "<s> 5 4" -0.2218488;
    # "5 4 </s>" absent -> bo(5 4) -0.3899711 + "4 </s>" -0.7403627
    assert lm.score_sentence(["5", "4"]) == pytest.approx(
        ln(-0.5563025 + -0.2218488 + -0.3899711 + -0.7403627)
    )
