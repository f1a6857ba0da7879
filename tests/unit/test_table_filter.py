"""Tests of fstdecode.io.table_filter and filtered decoding (fstdecode.run.filtered, --filter).

The reference for a filter is brute force (does the phrase occur in a sentence?); the
reference for a filtered decode is the unfiltered decode of the same lines.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fstdecode import Decoder, load_model
import importlib
from fstdecode.io.phrase_table import PhraseTableError, load_phrase_table
from fstdecode.io.table_filter import SourceFilter
from fstdecode.model.model import refiltered
from fstdecode.run import Line, decode_filtered, decode_lines

from shared import EXAMPLE_DATA, SEARCH_SETTINGS, data_path, examples, run_cli
from randmodels import SOURCE_VOCAB, TARGET_VOCAB, arpa_bigram

cli = importlib.import_module("fstdecode.cli.main")

words = st.sampled_from(SOURCE_VOCAB[:4])


def occurs(phrase: tuple[str, ...], sentences: list[tuple[str, ...]]) -> bool:
    n = len(phrase)
    return any(s[i:i + n] == phrase for s in sentences for i in range(len(s) - n + 1))


@settings(max_examples=examples(200))
@given(st.lists(st.lists(words, max_size=12), max_size=5), st.lists(st.lists(words, min_size=1, max_size=10), max_size=30))
def test_source_filter_is_contiguous_occurrence(sentences, phrases) -> None:
    # Phrases up to 10 words: longer than the 7 indexed up front, so the index grows on demand.
    sentences = [tuple(s) for s in sentences]
    keep = SourceFilter(sentences)
    for phrase in map(tuple, phrases):
        assert keep(phrase) == occurs(phrase, sentences), phrase
    assert not keep(())


def test_a_predicate_is_asked_once_per_run_and_every_line_is_still_checked(tmp_path: Path) -> None:
    table = tmp_path / "phrase-table"
    table.write_text("a ||| x ||| 0.1\na ||| y ||| 0.2\n\nb c ||| z ||| 0.3\nd ||| w ||| 0.4\n")
    calls: list[tuple[str, ...]] = []

    def keep(source: tuple[str, ...]) -> bool:
        calls.append(source)
        return source in {("a",), ("d",)}

    got = load_phrase_table(table, vocabulary=keep)
    assert calls == [("a",), ("b", "c"), ("d",)]  # once per run of one source
    assert [p.target for p in got.lookup(("a",))] == [("x",), ("y",)] and got.lookup(("b", "c")) == ()
    assert len(got) == 3 and ("d",) in got and ("b", "c") not in got
    # A line of a filtered-out source is still checked: the same file gives the same errors.
    table.write_text("a ||| x ||| 0.1\nb ||| y ||| zero\n")
    with pytest.raises(PhraseTableError, match=r"phrase-table:2: score 'zero' is not a number"):
        load_phrase_table(table, vocabulary=SourceFilter([("a",)]))


def random_table(rng_draw, sentences: list[tuple[str, ...]]) -> str:
    """Entries for spans of the sentences, and as many for phrases that occur in none."""
    lines = set()
    for s in sentences:
        for i in range(len(s)):
            for j in range(i, min(len(s), i + 3)):
                for _ in range(rng_draw(st.integers(0, 3))):
                    tgt = " ".join(rng_draw(st.lists(st.sampled_from(TARGET_VOCAB), min_size=1, max_size=2)))
                    lines.add(f"{' '.join(s[i:j + 1])} ||| {tgt} ||| {rng_draw(st.floats(0.01, 1)):.3f} 0.5\n")
    for _ in range(rng_draw(st.integers(1, 20))):  # junk the filter must drop (source words "z")
        src = " ".join(rng_draw(st.lists(st.just("z"), min_size=1, max_size=2)))
        lines.add(f"{src} ||| a ||| 0.5 0.5\n")
    return "".join(sorted(lines))


@pytest.mark.slow  # over half a second; the fast set keeps its siblings
@settings(max_examples=examples(40), **SEARCH_SETTINGS)
@given(st.data())
def test_filtered_decoding_equals_unfiltered_on_random_models(data) -> None:
    sentences = [tuple(data.draw(st.lists(words, min_size=0, max_size=6))) for _ in range(data.draw(st.integers(1, 7)))]
    chunk = data.draw(st.integers(1, 4))
    limit = data.draw(st.integers(0, 2))
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "pt").write_text(random_table(data.draw, sentences))
        (Path(tmp) / "lm").write_text(data.draw(arpa_bigram()))
        common = dict(phrase_table=Path(tmp) / "pt", lm=Path(tmp) / "lm", distortion_limit=3, table_limit=limit)
        full = load_model(**common)
        lines = [" ".join(s) for s in sentences]
        want = list(decode_lines(Decoder(full, "stack"), lines))

        def decoder_for(keep: SourceFilter) -> Decoder:
            model = load_model(source_vocabulary=keep, **common)
            assert all(keep(source) for source in model.table.sources())
            assert not any(source[0] == "z" for source in model.table.sources())
            return Decoder(model, "stack")

        numbered = [Line(i, text) for i, text in enumerate(lines)]
        got = list(decode_filtered(decoder_for, numbered, chunk_lines=chunk))
    assert [r.id for r in got] == list(range(len(lines)))
    for g, w in zip(got, want):
        assert (g.best.phrases, g.best.score) == (w.best.phrases, w.best.score)


def test_refiltered_model_looks_up_as_the_whole_table() -> None:
    model = load_model(data_path("moses-early-distortion-de-en", "moses.ini"))
    sentences = [tuple(line.split()) for line in data_path("moses-early-distortion-de-en", "to-translate.txt")
                 .read_text(encoding="utf-8").splitlines()]
    small = refiltered(model, SourceFilter(sentences[:2]))
    assert 0 < len(small.table) < len(model.table)
    for s in sentences[:2]:
        for i in range(len(s)):
            for j in range(i + 1, len(s) + 1):
                assert small.table.lookup(s[i:j]) == model.table.lookup(s[i:j])
    assert small.lm is model.lm and small.weights == model.weights


@pytest.mark.slow
@pytest.mark.parametrize("chunk", ["1", "3"])
def test_cli_filtered_equals_unfiltered_on_de_en(chunk: str, tmp_path) -> None:
    ini = data_path("moses-early-distortion-de-en", "moses.ini")
    text = data_path("moses-early-distortion-de-en", "to-translate.txt").read_text(encoding="utf-8")
    text = "\n" + text + "\xe9t\xe9\n"  # an empty first line and a last line to copy through
    base = ["decode", "-f", str(ini), "--method", "stack", "--format", "nbest"]
    # In tmp_path: the ini's [n-best-list] writes ./nbest, as in Moses.
    plain = run_cli(base + ["--no-filter"], text, cwd=tmp_path)
    filtered = run_cli(base + ["--filter", "--filter-chunk", chunk], text, cwd=tmp_path)
    assert plain.returncode == filtered.returncode == 0, filtered.stderr
    assert filtered.stdout == plain.stdout
    assert {line.split(" ||| ")[0] for line in plain.stdout.splitlines()} == {str(i) for i in range(7)}


def test_cli_filter_flag_errors() -> None:
    proc = run_cli(["decode", "--filter", "--filter-chunk", "0"], "das muss\n")
    assert proc.returncode == 2 and proc.stderr == "fstdecode: error: --filter-chunk must be >= 1, got 0\n"
    empty = run_cli(["decode", "--filter", "--phrase-table", "no-such-table", "--lm", str(EXAMPLE_DATA / "lm.arpa")], "")
    assert empty.returncode == 2 and "no-such-table: no such file" in empty.stderr  # checked with no input too


def test_filter_is_on_by_default_for_big_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    size = (EXAMPLE_DATA / "phrase-table").stat().st_size
    args = argparse.Namespace(filter=None, filter_chunk=10, config=None, phrase_table=str(EXAMPLE_DATA / "phrase-table"))
    monkeypatch.setattr(cli, "FILTER_THRESHOLD_BYTES", size)
    assert cli._filtering(args)
    monkeypatch.setattr(cli, "FILTER_THRESHOLD_BYTES", size + 1)
    assert not cli._filtering(args)
    assert cli._filtering(argparse.Namespace(**{**vars(args), "filter": True}))
    monkeypatch.setattr(cli, "FILTER_THRESHOLD_BYTES", 0)
    assert not cli._filtering(argparse.Namespace(**{**vars(args), "filter": False}))
