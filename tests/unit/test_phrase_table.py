"""Tests of fstdecode.io.phrase_table (expected values computed by hand here)."""

from __future__ import annotations

import gzip
import math
import time
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode.io.phrase_table import (
    LOWEST_SCORE,
    PhrasePair,
    PhraseTable,
    PhraseTableError,
    load_phrase_table,
)

from shared import data_path, examples, expect_reader_error

LN10 = math.log(10.0)


def write(tmp_path: Path, text: str, name: str = "pt.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


def write_gz(tmp_path: Path, text: str, name: str = "pt.gz") -> Path:
    path = tmp_path / name
    with gzip.open(path, "wb") as stream:
        stream.write(text.encode("utf-8"))
    return path


def targets(table: PhraseTable, *source: str) -> list[str]:
    return [" ".join(p.target) for p in table.lookup(tuple(source))]


# --------------------------------------------------------------------------
# Score formats


def test_prob_format_is_natural_log(tmp_path: Path) -> None:
    path = write(tmp_path, "das Haus ||| the house ||| 0.5 0.25 1 2.718\n")
    table = load_phrase_table(path)
    (pair,) = table.lookup(("das", "Haus"))
    assert pair == PhrasePair(
        ("das", "Haus"),
        ("the", "house"),
        (math.log(0.5), math.log(0.25), 0.0, math.log(2.718)),
    )
    assert pair.unknown is False
    assert table.num_scores == 4


def test_prob_zero_and_tiny_are_floored(tmp_path: Path) -> None:
    path = write(tmp_path, "a ||| b ||| 0 1e-50 0.0\n")
    (pair,) = load_phrase_table(path).lookup(("a",))
    assert math.log(1e-50) < LOWEST_SCORE == -100.0
    assert pair.scores == (-100.0, -100.0, -100.0)


def test_ln_format_kept_as_is_and_floored(tmp_path: Path) -> None:
    path = write(tmp_path, "a ||| b ||| -0.5 0 1.25 -250 -inf\n")
    (pair,) = load_phrase_table(path, score_format="ln").lookup(("a",))
    assert pair.scores == (-0.5, 0.0, 1.25, -100.0, -100.0)


def test_log10_format_times_ln10_and_floored(tmp_path: Path) -> None:
    path = write(tmp_path, "a ||| b ||| -1 -0.65036469698 0 -50\n")
    (pair,) = load_phrase_table(path, score_format="log10").lookup(("a",))
    assert pair.scores[0] == pytest.approx(-LN10)
    assert pair.scores[1] == pytest.approx(-0.65036469698 * LN10)
    assert pair.scores[2] == 0.0
    assert -50 * LN10 < -100.0
    assert pair.scores[3] == -100.0


def test_unknown_score_format(tmp_path: Path) -> None:
    path = write(tmp_path, "a ||| b ||| 1\n")
    with pytest.raises(PhraseTableError, match=r"unknown score format 'log2'.*prob, ln, log10"):
        load_phrase_table(path, score_format="log2")


@settings(max_examples=examples(50))
@given(st.lists(st.floats(min_value=0.0, max_value=10.0), min_size=1, max_size=6))
def test_prob_scores_property(tmp_path_factory: pytest.TempPathFactory, probs: list[float]) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    path = write(tmp, "x ||| y ||| " + " ".join(repr(p) for p in probs) + "\n")
    (pair,) = load_phrase_table(path).lookup(("x",))
    expected = tuple(max(math.log(p), -100.0) if p > 0 else -100.0 for p in probs)
    assert pair.scores == expected
    assert all(s >= LOWEST_SCORE for s in pair.scores)


# --------------------------------------------------------------------------
# File handling and field splitting


def test_gzip_detected_by_magic_not_name(tmp_path: Path) -> None:
    text = "a ||| b ||| 0.5\nc d ||| e ||| 0.25\n"
    gz_without_suffix = write_gz(tmp_path, text, name="table")
    plain_with_gz_suffix = write(tmp_path, text, name="plain.gz")
    for path in (gz_without_suffix, plain_with_gz_suffix):
        table = load_phrase_table(path)
        assert len(table) == 2
        assert table.lookup(("c", "d"))[0].scores == (math.log(0.25),)


def test_alignment_counts_and_extra_fields_ignored(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "a b ||| x y ||| 0.5 1 ||| 0-0 1-1 ||| 4 3 2\n"
        "c ||| z ||| 0.5 1 ||| 0-0\n"
        "d ||| w ||| 0.5 1 ||| ||| 1 1 ||| {{extra}}\n",
    )
    table = load_phrase_table(path)
    assert len(table) == 3
    for source in (("a", "b"), ("c",), ("d",)):
        assert table.lookup(source)[0].scores == (math.log(0.5), 0.0)


def test_separator_whitespace_is_robust(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "a|||b|||0.5\n"
        "c  d\t|||   e  f |||\t0.5  \r\n"
        "  g ||| h|||0.5 ||| 0-0\n",
    )
    table = load_phrase_table(path)
    assert targets(table, "a") == ["b"]
    assert targets(table, "c", "d") == ["e f"]
    assert targets(table, "g") == ["h"]


def test_blank_lines_skipped_and_utf8(tmp_path: Path) -> None:
    path = write(tmp_path, "\n   \nMäßigung ||| moderation ||| 1\n\n")
    table = load_phrase_table(path)
    assert targets(table, "Mäßigung") == ["moderation"]
    assert len(table) == 1


def test_duplicates_kept_and_file_order(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "a ||| x ||| 0.1\n"
        "b ||| y ||| 0.9\n"
        "a ||| z ||| 0.9\n"
        "a ||| x ||| 0.5\n",
    )
    table = load_phrase_table(path)
    assert targets(table, "a") == ["x", "z", "x"]
    assert [p.scores[0] for p in table.lookup(("a",))] == [
        math.log(0.1), math.log(0.9), math.log(0.5)]
    assert len(table) == 4
    assert list(table.sources()) == [("a",), ("b",)]
    assert table.lookup(("nope",)) == ()
    assert ("a",) in table and ("nope",) not in table


def repeat_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "repeat" in r.getMessage()]


def test_repeated_pairs_are_kept_and_reported_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Moses' loader adds every line to its source's collection, so a pair listed twice is two
    # options; with other scores it is most likely a mistake, which used to pass without a word.
    path = write(
        tmp_path,
        "das ||| that ||| 0.5 0.5\n"
        "das ||| the ||| 0.4 0.4\n"
        "das ||| that ||| 0.1 0.1\n"  # line 3 repeats line 1, other scores
        "das ||| the ||| 0.4 0.4\n"  # line 4 repeats line 2, same scores
        "muss ||| must ||| 1 1\n",
    )
    with caplog.at_level("WARNING", logger="fstdecode"):
        table = load_phrase_table(path)
        load_phrase_table(path, vocabulary=lambda source: source == ("muss",))  # a filtered batch: read again
    assert targets(table, "das") == ["that", "the", "that", "the"]  # all kept, in file order
    assert repeat_warnings(caplog) == [
        f"{path}:3: 'das ||| that' repeats line 1 with other scores; 2 line(s) of this table repeat an "
        "earlier (source, target) pair, 1 of them with other scores; each is kept as a translation "
        "option of its own, as Moses keeps them"
    ]


def test_repeats_in_separate_blocks_of_an_unsorted_table_are_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The source 'a' comes back after 'b': its lines are compared again once the file is read.
    path = write(tmp_path, "a ||| x ||| 0.1\nb ||| y ||| 0.9\na ||| z ||| 0.9\na ||| x ||| 0.5\n")
    with caplog.at_level("WARNING", logger="fstdecode"):
        load_phrase_table(path)
    assert repeat_warnings(caplog) == [
        f"{path}: 'a ||| x' is repeated with other scores, in another block of its source phrase's lines; "
        "1 line(s) of this table repeat an earlier (source, target) pair, 1 of them with other scores; "
        "each is kept as a translation option of its own, as Moses keeps them"
    ]


def test_no_repeat_no_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The same target under two sources, and two targets under one source, are no repeat.
    path = write(tmp_path, "a ||| x ||| 0.1\na ||| y ||| 0.1\nb ||| x ||| 0.1\n")
    with caplog.at_level("WARNING", logger="fstdecode"):
        load_phrase_table(path)
    assert repeat_warnings(caplog) == []


def test_max_source_len_and_empty_table(tmp_path: Path) -> None:
    path = write(tmp_path, "a ||| x ||| 1\na b c ||| y ||| 1\na b ||| z ||| 1\n")
    assert load_phrase_table(path).max_source_len == 3
    empty = load_phrase_table(write(tmp_path, "\n\n", name="empty"))
    assert (len(empty), empty.max_source_len, empty.num_scores) == (0, 0, 0)
    assert load_phrase_table(write(tmp_path, "", name="e2"), num_features=5).num_scores == 5


def test_path_attribute_is_str(tmp_path: Path) -> None:
    path = write(tmp_path, "a ||| b ||| 1\n")
    assert load_phrase_table(path).path == str(path)


# --------------------------------------------------------------------------
# Table limit and vocabulary filter


LIMIT_TABLE = (
    "a ||| t1 ||| 0.1 0.9\n"  # ranker = first score: ln 0.1
    "a ||| t2 ||| 0.5 0.1\n"  # ln 0.5 (tie with t4)
    "b ||| u1 ||| 0.2 0.2\n"
    "a ||| t3 ||| 0.9 0.1\n"  # best
    "a ||| t4 ||| 0.5 0.9\n"  # ln 0.5 (tie with t2, later in file)
)


def test_table_limit_with_ranker_best_first_ties_in_file_order(tmp_path: Path) -> None:
    path = write(tmp_path, LIMIT_TABLE)
    table = load_phrase_table(path, table_limit=3, ranker=lambda p: p.scores[0])
    assert targets(table, "a") == ["t3", "t2", "t4"]
    assert targets(table, "b") == ["u1"]
    assert len(table) == 4
    two = load_phrase_table(path, table_limit=2, ranker=lambda p: p.scores[0])
    assert targets(two, "a") == ["t3", "t2"]  # t2 beats its tie t4 by file order


def test_table_limit_all_tied_keeps_file_order(tmp_path: Path) -> None:
    path = write(tmp_path, LIMIT_TABLE)
    table = load_phrase_table(path, table_limit=3, ranker=lambda p: 0.0)
    assert targets(table, "a") == ["t1", "t2", "t3"]


def test_table_limit_default_ranker_is_sum_of_scores(tmp_path: Path) -> None:
    path = write(tmp_path, LIMIT_TABLE)
    # sums: t1 ln(.09), t2 ln(.05), t3 ln(.09), t4 ln(.45)
    table = load_phrase_table(path, table_limit=2)
    assert targets(table, "a") == ["t4", "t1"]  # t1 and t3 tie; t1 first in file


def test_table_limit_zero_keeps_all_in_file_order(tmp_path: Path) -> None:
    path = write(tmp_path, LIMIT_TABLE)
    table = load_phrase_table(path, table_limit=0, ranker=lambda p: p.scores[0])
    assert targets(table, "a") == ["t1", "t2", "t3", "t4"]


def test_table_limit_negative_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, LIMIT_TABLE)
    with pytest.raises(PhraseTableError, match="table_limit"):
        load_phrase_table(path, table_limit=-1)


def test_vocabulary_filter(tmp_path: Path) -> None:
    path = write(tmp_path, "a ||| x ||| 1\na b c ||| y ||| 1\nb ||| z ||| 1\na ||| w ||| 1\n")
    calls: list[tuple[str, ...]] = []

    def wanted(source: tuple[str, ...]) -> bool:
        calls.append(source)
        return source in {("a",), ("b",)}

    table = load_phrase_table(path, vocabulary=wanted)
    assert targets(table, "a") == ["x", "w"]
    assert targets(table, "b") == ["z"]
    assert table.lookup(("a", "b", "c")) == ()
    assert len(table) == 3
    assert table.max_source_len == 1
    # Once per run of lines with one source (memory stays bounded by what is kept): the
    # unsorted file has four runs; a sorted one has one run per source.
    assert calls == [("a",), ("a", "b", "c"), ("b",), ("a",)]


def test_vocabulary_filter_then_limit(tmp_path: Path) -> None:
    path = write(tmp_path, LIMIT_TABLE)
    table = load_phrase_table(
        path, vocabulary=lambda s: s == ("a",), table_limit=1, ranker=lambda p: p.scores[1]
    )
    assert targets(table, "a") == ["t1"]
    assert list(table.sources()) == [("a",)]


def test_vocabulary_filter_still_validates_every_line(tmp_path: Path) -> None:
    path = write(tmp_path, "a ||| x ||| 1\nb ||| y ||| oops\n")
    with pytest.raises(PhraseTableError, match=r"pt\.txt:2: "):
        load_phrase_table(path, vocabulary=lambda s: s == ("a",))


# --------------------------------------------------------------------------
# Errors: every message names the file and the line


def expect_error(path: Path, lineno: int | None, fragment: str, **kwargs: object) -> str:
    return expect_reader_error(PhraseTableError, partial(load_phrase_table, **kwargs), path, lineno, fragment)


def test_error_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent"
    message = expect_error(path, None, "no such file")
    assert message == f"{path}: no such file"


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("a ||| b", "found 2 field(s)"),
        ("a b c", "found 1 field(s)"),
        ("   ||| b ||| 1", "empty source"),
        ("a |||  ||| 1", "empty target"),
        ("a ||| b ||| x", "'x' is not a number"),
        ("a ||| b ||| nan", "not a finite number"),
        ("a ||| b ||| inf", "not a finite number"),
        ("a ||| b ||| -0.5", "negative probability"),
        ("a ||| b ||| 0.5 0.5", "found 2 score(s) but line 1 has 1"),
        ("a ||| b ||| ", "found 0 score(s) but line 1 has 1"),
    ],
)
def test_error_bad_line_names_file_and_line(tmp_path: Path, line: str, fragment: str) -> None:
    path = write(tmp_path, "first ||| line ||| 0.5\n\n" + line + "\n")
    expect_error(path, 3, fragment)


def test_error_no_scores_on_first_line(tmp_path: Path) -> None:
    path = write(tmp_path, "\na ||| b ||| ||| 0-0\n")
    expect_error(path, 2, "no scores")


def test_error_score_count_against_num_features(tmp_path: Path) -> None:
    path = write(tmp_path, "a ||| b ||| 0.5 0.5\n")
    expect_error(path, 1, "found 2 score(s) but num-features is 3", num_features=3)


def test_num_features_matching(tmp_path: Path) -> None:
    path = write(tmp_path, "a ||| b ||| 0.5 0.5\n")
    assert load_phrase_table(path, num_features=2).num_scores == 2


def test_negative_scores_fine_in_log_formats(tmp_path: Path) -> None:
    path = write(tmp_path, "a ||| b ||| -0.5\n")
    assert load_phrase_table(path, score_format="ln").lookup(("a",))[0].scores == (-0.5,)
    assert load_phrase_table(path, score_format="log10").lookup(("a",))[0].scores == (
        pytest.approx(-0.5 * LN10),
    )


def test_error_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"a ||| b ||| 1\nc ||| d ||| 1\n\xff\xfe ||| e ||| 1\n")
    expect_error(path, 3, "invalid UTF-8")


def test_error_invalid_utf8_in_gzip(tmp_path: Path) -> None:
    path = tmp_path / "bad.gz"
    with gzip.open(path, "wb") as stream:
        stream.write(b"a ||| b ||| 1\n\xc3 ||| e ||| 1\n")
    expect_error(path, 2, "invalid UTF-8")


def test_error_in_gzip_names_line(tmp_path: Path) -> None:
    path = write_gz(tmp_path, "a ||| b ||| 1\nc ||| d ||| 1 1\n")
    expect_error(path, 2, "found 2 score(s)")


def test_error_truncated_gzip(tmp_path: Path) -> None:
    whole = gzip.compress(("a ||| b ||| 1\n" * 2000).encode())
    path = tmp_path / "cut.gz"
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(PhraseTableError, match=r"cut\.gz:\d+: corrupt or truncated gzip"):
        load_phrase_table(path)


# --------------------------------------------------------------------------
# Real data


def test_hansards_tm_log10() -> None:
    path = data_path("hansards-fr-en-decoder", "tm")
    start = time.perf_counter()
    table = load_phrase_table(path, score_format="log10")
    elapsed = time.perf_counter() - start
    assert elapsed < 3.0  # typically well under 0.2 s; generous to avoid flakiness
    assert len(table) == 12_832
    assert len(list(table.sources())) == 1_074
    assert table.max_source_len == 9
    assert table.num_scores == 1
    scores = [p.scores[0] for s in table.sources() for p in table.lookup(s)]
    assert min(scores) == pytest.approx(-3.94821739197 * LN10)
    assert min(scores) >= -3.948218 * LN10 and max(scores) <= 0.0
    assert max(scores) == 0.0
    assert targets(table, "honorables") == ["honourable"]
    senate, senators = table.lookup(("sénateurs",))[:2]
    assert senate.target == ("Senate",)
    assert senate.scores[0] == pytest.approx(-0.65036469698 * LN10)
    assert senators.scores[0] == pytest.approx(-0.124938733876 * LN10)


def test_moses_de_en_phrase_table_gz() -> None:
    path = data_path("moses-early-distortion-de-en", "phrase-table.gz")
    table = load_phrase_table(path)
    assert len(table) == 4_813
    assert table.num_scores == 5
    (both,) = table.lookup(("sowohl",))
    assert both.target == ("both",)
    assert both.scores == (0.0, 0.0, 0.0, 0.0, math.log(2.718))
    first = table.lookup(('"', "."))[0]
    assert first.target == (".", '"')
    assert first.scores == tuple(math.log(v) for v in (0.75, 0.95, 1, 0.714286, 2.718))


def test_moses_de_en_table_limit() -> None:
    path = data_path("moses-early-distortion-de-en", "phrase-table.gz")
    table = load_phrase_table(path, num_features=5, table_limit=20)
    assert all(len(table.lookup(s)) <= 20 for s in table.sources())
    for source in table.sources():
        ranks = [math.fsum(p.scores) for p in table.lookup(source)]
        assert ranks == sorted(ranks, reverse=True)


def test_a_log10_score_that_overflows_as_a_natural_log_is_refused(tmp_path: Path) -> None:
    # 1e308 * ln 10 is inf: every feature value must stay a finite float.
    table = tmp_path / "pt"
    table.write_text("a ||| x ||| 1e307\na ||| y ||| 1e308\n")
    with pytest.raises(PhraseTableError, match=r"pt:2: score '1e308' overflows when converted to a natural log"):
        load_phrase_table(table, score_format="log10")
