"""XML input markup (Moses' ``-xml-input``): reading the tags, and what each policy does to a line."""

from __future__ import annotations

import math
import re

import pytest

from fstdecode.decoder import DecodeError, Decoder
from fstdecode.io.xml_input import MarkedLine, XmlInputError, XmlOption, parse_markup
from fstdecode.model.model import load_model
from fstdecode.search.base import METHODS

from shared import run_cli

LINE = "das muss unsere sorge gleichermaßen sein"
#: A translation the table does not have, of words the LM does not know, at a low probability:
#: only a forced translation can put it in the output.
FORCED = 'das muss <np translation="qqq rrr" prob="0.01">unsere sorge</np> gleichermaßen sein'


@pytest.fixture(scope="module")
def model():
    return load_model()


# Reading the markup, case by case.
@pytest.mark.parametrize(
    "line, expected",
    [
        ("a b c", MarkedLine(("a", "b", "c"))),  # no markup
        (
            'a <np translation="x y||z" prob="0.75||0.25">b c</np> d',  # alternatives and their probabilities
            MarkedLine(("a", "b", "c", "d"), (XmlOption(1, 2, (("x", "y"), ("z",)), (0.75, 0.25)),)),
        ),
        ('<x english="e">a</x>', MarkedLine(("a",), (XmlOption(0, 0, (("e",),), (1.0,)),))),  # legacy name, prob 1
        ('a<n translation="t">b</n>c', MarkedLine(("a", "b", "c"), (XmlOption(1, 1, (("t",),), (1.0,)),))),  # no spaces
        ('a b <n translation="t" span="0-1"/>', MarkedLine(("a", "b"), (XmlOption(0, 1, (("t",),), (1.0,)),))),  # span=
        ('<a translation="t">x <b translation="u">y</b></a>',  # nested: inner closes first
         MarkedLine(("x", "y"), (XmlOption(1, 1, (("u",),), (1.0,)), XmlOption(0, 1, (("t",),), (1.0,))))),
        ('a <n>b</n>', MarkedLine(("a", "b"))),  # no translation: nothing to add, as in Moses
        ("a < b > c", MarkedLine(("a", "<", "b", ">", "c"))),  # '<' not followed by a letter is text
        # Moses' placeholder: without a placeholder factor it leaves its word as is; removed.
        ('a <ne entity="NUM">7</ne> b', MarkedLine(("a", "7", "b"))),
        ('<np translation="x" prob="0">a</np>', MarkedLine(("a",), (XmlOption(0, 0, (("x",),), (0.0,)),))),  # ln 0, floored
        ('<np translation="a\\"b">c</np>', MarkedLine(("c",), (XmlOption(0, 0, (('a\\"b',),), (1.0,)),))),  # \" kept
        ('<np class="x" translation="t">a</np>', MarkedLine(("a",), (XmlOption(0, 0, (("t",),), (1.0,)),))),  # other attributes
        ("<br/> a", MarkedLine(("a",))),  # a unary tag with no translation adds nothing
    ],
)
def test_parse_markup(line, expected):
    assert parse_markup(line) == expected


@pytest.mark.parametrize(
    "line, message",
    [
        ('a <np translation="x">b', "never closed"),
        ('a <np translation="x">b</nq>', "closed by </nq>"),
        ("a </np> b", "not opened"),
        ('<np translation="x||y" prob="0.5">a</np>', "2 translation(s) but 1 probabilities"),
        ('<np translation="x" prob="high">a</np>', "prob 'high' is not a number"),
        ('<np translation="x" prob="-1">a</np>', "prob '-1' is negative; Moses' log of it is nan"),
        ('<np translation="x||">a</np>', "empty translation"),
        ('<np translation="x" span="7">a</np>', "outside the line"),
        ('<np translation="x>a</np>', "no closing"),
        # Issue 22: cases Moses reads on silently, or reads as nonsense; each now names its problem.
        ('<np translation="x" prob="1e308">a</np>', "prob '1e308' overflows a 32-bit float"),
        ('<np translation="x" prob="1e39">a</np>', "prob '1e39' overflows a 32-bit float"),
        ('<np translation="x" prob="nan">a</np>', "prob 'nan' is negative"),
        ('<np translation="x" prob="inf">a</np>', "prob 'inf' overflows a 32-bit float"),
        ("<np translation=x>a</np>", "the value of translation is not in double quotes ('translation=x')"),
        ("<np translation='x'>a</np>", "the value of translation is not in double quotes"),
        ('<np translation = "x">a</np>', "spaces around the '=' of translation"),
        ('<np translation="x"prob="1">a</np>', "follows the value of translation with no space"),
        ('<np translation="x" translation="y">a</np>', "the attribute translation is given twice"),
        ("<np foo>a</np>", "'foo' is not an attribute"),
        ('a <np translation="x"></np> b', "tag <np> has a translation but spans no word"),  # Moses drops it
        ('a <np translation="x"/> b', "tag <np> has a translation but spans no word"),
        # A tag ends at its first '>', so '<s>' in a value cuts it: the message says so.
        ('das <np translation="<s>">muss</np>', "has no closing '\"' before the '>' that ends the tag"),
        ('a <ne entity="x">b c</ne>', "tag <ne> must span exactly one word"),
        ('a <np/ translation="x">b</np>', "malformed tag '<np/ translation=\"x\">': 'np/' is not a tag name"),
    ],
)
def test_malformed_markup_is_an_error(line, message):
    with pytest.raises(XmlInputError, match=re.escape(message)):
        parse_markup(line)


# Moses applies these under every policy but pass-through, ignore included (walls and zones
# constrain its search; the others change its model); fstdecode has none, so the line fails.
@pytest.mark.parametrize("policy", ["ignore", "exclusive", "inclusive"])
@pytest.mark.parametrize(
    "line, tag",
    [
        ("das <wall/> muss", "<wall> is Moses' reordering wall"),
        ("<zone>das muss</zone>", "<zone> is Moses' reordering zone"),
        ('<weight-overwrite weights="WordPenalty0= 1"/> das', "<weight-overwrite> is a change of Moses' feature weights"),
        ('<update name="PT0" source="a" target="b" alignment="0-0"/> das', "<update> is an update of Moses'"),
    ],
)
def test_special_tags_fail_the_line_in_every_policy(model, policy, line, tag):
    result = Decoder(model, "stack", xml_input=policy).decode(line)
    assert result.derivations == ()
    assert result.error.startswith(f"XML markup: tag {tag}")
    assert "Moses applies it under --xml-input ignore too" in result.error


# The native searches run on the options built in Python (native_form's route).
@pytest.mark.parametrize("method", [m for m in METHODS if m != "fst"])
def test_exclusive_forces_the_translation_in_every_method(model, method):
    result = Decoder(model, method, xml_input="exclusive").decode(FORCED)
    assert result.error is None
    phrases = [(p.start, p.end, p.target) for p in result.best.phrases]
    assert (2, 3, ("qqq", "rrr")) in phrases
    # No other phrase touches the span.
    assert all(e < 2 or s > 3 for s, e, t in phrases if t != ("qqq", "rrr"))
    assert abs(result.best.score - result.best.search_score) < 1e-6  # the scorer agrees with the search


def test_fst_refuses_markup_up_front(model):
    with pytest.raises(DecodeError, match="not supported by --method fst"):
        Decoder(model, "fst", xml_input="exclusive")
    Decoder(model, "fst", xml_input="ignore")  # stripping markup is fine


def test_xml_translation_scores_as_moses(model):
    # Moses' SetXMLScore: every TM column gets ln(prob) / columns (here 2 columns).
    line = f'<np translation="t1 t2" prob="0.5">{LINE}</np>'
    best = Decoder(model, "dp", xml_input="exclusive").decode(line).best
    assert [p.target for p in best.phrases] == [("t1", "t2")]
    assert best.features.tm == pytest.approx((math.log(0.5) / 2, math.log(0.5) / 2))
    assert best.alignment() == ()  # markup gives no word alignment


@pytest.mark.parametrize("method", [m for m in METHODS if m != "fst"])
def test_prob_above_one_is_a_bonus_as_in_moses(model, method):
    # Moses' XmlOption reads prob with Scan<float> and scores ln(prob), with no upper bound: its
    # regression test phrase.xml-markup gives prob="100.0" and translates the line. Forced
    # (exclusive), the bonus is ln 100 over the 2 TM columns, and the line's score is the prob=1
    # line's plus the TM weights times it, in every method; none beats the exhaustive optimum.
    def forced(prob: str) -> str:
        return f'das muss <np translation="our concern" prob="{prob}">unsere sorge</np> gleichermaßen sein'

    (option,) = parse_markup(forced("100.0")).options
    assert option.probs == (100.0,)
    best = Decoder(model, method, xml_input="exclusive").decode(forced("100.0")).best
    plain = Decoder(model, method, xml_input="exclusive").decode(forced("1")).best
    assert [p.target for p in best.phrases] == [p.target for p in plain.phrases]  # the same derivation
    gained = tuple(b - p for b, p in zip(best.features.tm, plain.features.tm))
    assert gained == pytest.approx((math.log(100) / 2, math.log(100) / 2))
    bonus = sum(w * math.log(100) / 2 for w in model.weights.tm)
    assert best.score == pytest.approx(plain.score + bonus, abs=1e-6)
    assert abs(best.score - best.search_score) < 1e-6
    oracle = Decoder(model, "exhaustive", xml_input="exclusive").decode(forced("100.0")).best
    assert best.score <= oracle.score + 1e-6


def test_prob_is_read_as_a_32_bit_float():
    (option,) = parse_markup('<np translation="x" prob="0.1">a</np>').options
    assert option.probs == (0.10000000149011612,)  # float(numpy.float32(0.1)), Moses' Scan<float>


def test_inclusive_adds_an_option_beside_the_tables(model):
    decoder = Decoder(model, "dp", xml_input="inclusive")
    marked = parse_markup(FORCED)
    problem = decoder.problem(marked.words, 0, marked.options)
    at = [p.target for p in problem.sentence.options[2] if p.end == 3]
    assert ("qqq", "rrr") in at and len(at) > 1  # the markup's, and the table's own
    # The inclusive space is the plain one plus the forced one: its best is the better of the two.
    for method in ("dp", "coverage", "exact"):
        plain = Decoder(model, method).decode(LINE).best.score
        forced = Decoder(model, method, xml_input="exclusive").decode(FORCED).best.score
        both = Decoder(model, method, xml_input="inclusive").decode(FORCED).best.score
        assert both == pytest.approx(max(plain, forced), abs=1e-9)
    # A cheap enough option wins: probability 1 for the best translation's own words of the span.
    good = 'das muss <np translation="our concern">unsere sorge</np> gleichermaßen sein'
    best = Decoder(model, "dp", xml_input="inclusive").decode(good).best
    assert best.score >= Decoder(model, "dp").decode(LINE).best.score - 1e-9


def test_ignore_strips_markup_and_pass_through_reads_it_as_words(model):
    ignored = Decoder(model, "dp", xml_input="ignore").decode(FORCED)
    assert ignored.best.translation == Decoder(model, "dp").decode(LINE).best.translation
    passed = Decoder(model, "dp").decode(FORCED)  # pass-through, the default: tags are words
    assert "<np" in passed.source


def test_malformed_line_fails_alone_and_the_batch_goes_on():
    lines = f"{LINE}\n" + 'das <np translation="x">muss\n' + f"{FORCED}\n"
    proc = run_cli(["decode", "--xml-input", "exclusive", "--method", "stack"], lines)
    assert proc.returncode == 0
    out = proc.stdout.splitlines()
    assert len(out) == 3
    assert out[1] == 'das <np translation="x">muss'  # the failed line, passed through as written
    assert "qqq rrr" in out[2]
    assert "line 2: XML markup: tag <np> is never closed" in proc.stderr


def test_markup_problems_fail_their_line_alone_naming_it():
    # Issue 22: an unquoted attribute and an empty span were dropped without a word, and a wall
    # failed the line under ignore with a message that did not say why.
    lines = "das <np translation=that>muss</np>\n" + f"{LINE}\n" + "das <wall/> muss\n" + '<np translation="x"></np> das\n'
    proc = run_cli(["decode", "--xml-input", "ignore", "--method", "stack"], lines)
    assert proc.returncode == 0
    out = proc.stdout.splitlines()
    assert len(out) == 4
    assert out[0] == "das <np translation=that>muss</np>"  # failed lines: the source, as written
    assert out[2] == "das <wall/> muss"
    assert "line 1: XML markup: tag <np>: the value of translation is not in double quotes" in proc.stderr
    assert "line 3: XML markup: tag <wall> is Moses' reordering wall" in proc.stderr
    assert "line 4: XML markup: tag <np> has a translation but spans no word" in proc.stderr
    assert "line 2:" not in proc.stderr
