"""Bad input to the ``fstdecode`` command line: one clear message, exit status 2.

Every case runs ``python -m fstdecode decode`` with one bad file or flag and
checks the contract of :mod:`fstdecode.cli.main`: exit code 2, nothing on
stdout, a single stderr line starting ``fstdecode: error:`` that names the
file and line (or the flag), and no traceback. The good half of each model
is either a tiny model written here or the built-in example's files.
"""

from __future__ import annotations

import json

from pathlib import Path

import pytest

from shared import EXAMPLE_DATA, ROOT, arpa_text, example_ini_text, run_cli

EXAMPLE_PT = EXAMPLE_DATA / "phrase-table"
EXAMPLE_LM = EXAMPLE_DATA / "lm.arpa"

TINY_PT = "a ||| x ||| 0.5 0.5\nb ||| y ||| 0.5 0.5\na b ||| x y ||| 0.4 0.4\n"
TINY_LM = arpa_text(["-99\t<s>\t-0.5", "-0.5\t</s>", "-0.6\tx\t-0.2", "-0.7\ty\t-0.2"], ["-0.1\t<s> x", "-0.2\tx y"])


def decode_args(pt: Path, lm: Path, *more: str) -> list[str]:
    """``decode --phrase-table PT --lm LM ...``"""
    return ["decode", "--phrase-table", str(pt), "--lm", str(lm), *more]


def expect_error(args: list[str], *needles: str, stdin: str = "a b\n") -> str:
    """Run the CLI, check the error contract and that the message contains every needle."""
    proc = run_cli(args, stdin, timeout=60)
    err = proc.stderr
    assert proc.returncode == 2, (proc.returncode, err, proc.stdout)
    assert "Traceback" not in err, err
    assert err.startswith("fstdecode: error:"), err
    assert err.endswith("\n") and err.count("\n") == 1, f"expected one line, got {err!r}"
    assert proc.stdout == "", proc.stdout
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def tiny(tmp_path):
    """A valid tiny model (phrase table + bigram ARPA) in tmp_path."""
    pt = write(tmp_path / "tiny.pt", TINY_PT)
    lm = write(tmp_path / "tiny.arpa", TINY_LM)
    return pt, lm


def test_tiny_model_is_valid(tiny):
    """The good half really is good, so that each failure below is the bad half's."""
    pt, lm = tiny
    proc = run_cli(decode_args(pt, lm), "a b\nb\n", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "x y\ny\n"


# --------------------------------------------------------------------------------------
# Phrase tables


def test_phrase_table_line_with_two_fields(tmp_path, tiny):
    """The message names the file and line, the path as the user gave it ("pt:3")."""
    _, lm = tiny
    pt = write(tmp_path / "pt", "a ||| x ||| 0.5 0.5\nb ||| y ||| 0.5 0.5\na b ||| x y\n")
    expect_error(decode_args(pt, lm), f"{pt}:3")
    relative = run_cli(decode_args("pt", lm), "a\n", cwd=tmp_path, PYTHONPATH=str(ROOT))
    assert relative.returncode == 2 and "Traceback" not in relative.stderr
    assert relative.stderr.startswith("fstdecode: error: pt:3"), relative.stderr


@pytest.mark.parametrize(
    "text, line",
    [
        ("a ||| x ||| 0.5 0.5\nb ||| y ||| abc 0.5\n", 2),  # not a number
        ("a ||| x ||| 0.5 0.5\nb ||| y ||| 0.5\n", 2),  # column count changes
        ("a ||| x ||| 0.5 0.5\n\nb ||| y ||| -0.5 0.5\n", 3),  # negative probability
        (" ||| x ||| 0.5 0.5\n", 1),  # empty source
        ("a |||  ||| 0.5 0.5\n", 1),  # empty target
        ("a ||| x |||\n", 1),  # no scores
    ],
)
def test_phrase_table_bad_lines(tmp_path, tiny, text, line):
    _, lm = tiny
    pt = write(tmp_path / "bad.pt", text)
    expect_error(decode_args(pt, lm), f"{pt}:{line}")


def test_phrase_table_invalid_utf8(tmp_path, tiny):
    _, lm = tiny
    pt = tmp_path / "latin1.pt"
    pt.write_bytes("a ||| x ||| 0.5 0.5\nb ||| gr\u00fc\u00dfe ||| 0.5 0.5\n".encode("latin-1"))
    expect_error(decode_args(pt, lm), f"{pt}:2")


def test_phrase_table_tm_weights_wrong_count(tiny):
    pt, lm = tiny
    expect_error(decode_args(pt, lm, "--weight", "tm=1,1,1"), "tm", "3")


# --------------------------------------------------------------------------------------
# ARPA language models


def lineno(text: str, prefix: str) -> int:
    """1-based number of the first line of ``text`` that starts with ``prefix``."""
    for i, line in enumerate(text.splitlines(), 1):
        if line.startswith(prefix):
            return i
    raise AssertionError(prefix)


def test_arpa_section_order_not_declared(tmp_path, tiny):
    pt, _ = tiny
    text = TINY_LM.replace("\\2-grams:", "\\3-grams:")
    lm = write(tmp_path / "bad.arpa", text)
    err = expect_error(decode_args(pt, lm), f"{lm}:{lineno(text, chr(92) + '3-grams:')}")
    assert "3" in err.split(f"{lm}:", 1)[1]


def test_arpa_section_order_example_lm(tmp_path):
    """Same, on the built-in example's LM (header declares order 2)."""
    text = EXAMPLE_LM.read_text(encoding="utf-8").replace("\\2-grams:", "\\3-grams:")
    lm = write(tmp_path / "lm3.arpa", text)
    expect_error(
        decode_args(EXAMPLE_PT, lm),
        f"{lm}:{lineno(text, chr(92) + '3-grams:')}",
    )


def _line_named(err: str, path: Path) -> int:
    rest = err.split(f"{path}:", 1)[1]
    digits = rest[: len(rest) - len(rest.lstrip("0123456789"))]
    assert digits, err
    return int(digits)


def test_arpa_fewer_entries_than_declared(tmp_path, tiny):
    pt, _ = tiny
    text = TINY_LM.replace("ngram 1=4", "ngram 1=5")
    lm = write(tmp_path / "count.arpa", text)
    err = expect_error(decode_args(pt, lm), f"{lm}:", "5", "4")
    # the line named is the header's count or the section it contradicts
    assert _line_named(err, lm) in {lineno(text, "ngram 1="), lineno(text, "\\1-grams:"), lineno(text, "\\2-grams:")}


def test_arpa_more_entries_than_declared(tmp_path, tiny):
    pt, _ = tiny
    text = TINY_LM.replace("ngram 2=2", "ngram 2=1")
    lm = write(tmp_path / "count2.arpa", text)
    err = expect_error(decode_args(pt, lm), f"{lm}:", "2", "1")
    assert _line_named(err, lm) in {
        lineno(text, "ngram 2="),
        lineno(text, "\\2-grams:"),
        lineno(text, "-0.2\tx y"),  # the extra entry
        lineno(text, "\\end\\"),
    }


@pytest.mark.parametrize(
    "old, new, where",
    [
        ("-0.6\tx\t-0.2", "abc\tx\t-0.2", "abc\tx"),  # bad probability
        ("-0.2\tx y", "-0.2\tx", "-0.2\tx"),  # a bigram with one word
        ("\\end\\\n", "", None),  # missing \end\
    ],
)
def test_arpa_bad_lines(tmp_path, tiny, old, new, where):
    pt, _ = tiny
    text = TINY_LM.replace(old, new)
    assert text != TINY_LM
    lm = write(tmp_path / "bad.arpa", text)
    err = expect_error(decode_args(pt, lm), f"{lm}:")
    if where is not None:
        assert _line_named(err, lm) == lineno(text, where)


def test_arpa_empty_file(tmp_path, tiny):
    pt, _ = tiny
    lm = write(tmp_path / "empty.arpa", "")
    expect_error(decode_args(pt, lm), f"{lm}")


# --------------------------------------------------------------------------------------
# Missing files


def test_missing_phrase_table(tmp_path, tiny):
    _, lm = tiny
    missing = tmp_path / "no-such.pt"
    expect_error(decode_args(missing, lm), str(missing))


def test_missing_lm(tmp_path, tiny):
    pt, _ = tiny
    missing = tmp_path / "no-such.arpa"
    expect_error(decode_args(pt, missing), str(missing))


def test_missing_config(tmp_path):
    missing = tmp_path / "no-such.ini"
    expect_error(["decode", "-f", str(missing)], str(missing))
    expect_error(["demo", "-f", str(missing)], str(missing))


def test_missing_file_named_in_ini(tmp_path):
    missing = tmp_path / "gone.arpa"
    ini = write(
        tmp_path / "moses.ini",
        f"[feature]\nKENLM name=KENLM0 order=2 path={missing}\n"
        f"PhraseDictionaryMemory name=PhraseDictionaryMemory0 num-features=2 path={EXAMPLE_PT}\n",
    )
    expect_error(["decode", "-f", str(ini)], str(missing))


def test_phrase_table_is_a_directory(tmp_path, tiny):
    _, lm = tiny
    expect_error(decode_args(tmp_path, lm), str(tmp_path))


# --------------------------------------------------------------------------------------
# moses.ini


def test_example_ini_copy_is_valid(tmp_path):
    ini = write(tmp_path / "moses.ini", example_ini_text())
    proc = run_cli(["decode", "-f", str(ini)], "das muss\n", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "this must\n"


@pytest.mark.parametrize(
    "old, new",
    [
        ("PhraseDictionaryMemory0= 0.5 0.5", "PhraseDictionaryMemory0 0.5 0.5"),  # no '='
        ("Distortion0= 0.3", "Distortion0= abc"),  # not a number
        ("PhraseDictionaryMemory0= 0.5 0.5", "PhraseDictionaryMemory0= 0.5 0.5 0.5"),  # 3 weights for 2
        ("Distortion0= 0.3", "Distortion1= 0.3"),  # weight of no feature
        ("order=2 path=", "order=2 path "),  # key without value
        ("\n4\n", "\nfour\n"),  # distortion limit not an integer
        ("WordPenalty\n", "InputFeature name=IF0\n"),  # unsupported feature
        ("WordPenalty\n", "WordPenalty\nLexicalReordering type=hier-msd-backward-fe path=x\n"),  # unsupported reordering type
    ],
)
def test_moses_ini_bad_line(tmp_path, old, new):
    good = example_ini_text()
    text = good.replace(old, new, 1)
    assert text != good
    ini = write(tmp_path / "bad.ini", text)
    bad_line = next(i for i, (a, b) in enumerate(zip(good.splitlines(), text.splitlines()), 1) if a != b)
    err = expect_error(["decode", "-f", str(ini)], f"{ini}:")
    assert _line_named(err, ini) in {bad_line, bad_line - 1}, err


def test_moses_ini_text_before_section(tmp_path):
    ini = write(tmp_path / "bad.ini", "garbage\n" + example_ini_text())
    expect_error(["decode", "-f", str(ini)], f"{ini}:1")


# --------------------------------------------------------------------------------------
# Flags


def test_unknown_weight_name():
    expect_error(["decode", "--weight", "foo=1"], "foo")


@pytest.mark.parametrize(
    "value, needle",
    [("lm=abc", "abc"), ("lm", "lm"), ("=1", "--weight"), ("lm=nan", "nan"), ("lm=inf", "inf"), ("tm=1,nan", "nan")],
)
def test_bad_weight_values(value, needle):
    expect_error(["decode", "--weight", value], needle)


@pytest.mark.parametrize("flag", ["--distortion-limit", "-d"])
def test_negative_distortion_limit(flag):
    """-1 means no limit, as in Moses; any other negative limit is an error."""
    err = expect_error(["decode", flag, "-2"], "-2")
    assert "distortion" in err


def test_demo_sentence_not_utf8():
    # An argument's bytes that are not UTF-8 reach Python as lone surrogates (os.fsdecode).
    expect_error(["demo", "das \udcff muss"], "the sentence is not valid UTF-8")


def test_demo_has_a_budget():
    # The demo's DP is the Python reference: past its budget, one line rather than minutes and GBs.
    expect_error(["demo", "--max-states", "10"], "the signature DP needs more than 10 states", "short sentences")
    expect_error(["demo", "--max-states", "0"], "--max-states must be >= 1")


def test_negative_distortion_limit_demo():
    expect_error(["demo", "-d", "-2"], "distortion")


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--nbest", "0"),
        ("--nbest", "-1"),
        ("--max-states", "0"),
        ("--max-states", "-5"),
        ("--threads", "0"),
        ("--lm-order", "0"),
        ("--lm-order", "-1"),
        ("--table-limit", "-1"),
    ],
)
def test_out_of_range_numeric_flags(flag, value):
    """A flag value outside its range is refused up front, naming the flag, not ignored."""
    expect_error(["decode", flag, value], flag)


def test_argparse_errors_exit_2_without_traceback():
    """Type errors caught by argparse: status 2, usage message, no traceback."""
    for args in (["decode", "-d", "abc"], ["decode", "--method", "nosuch"], ["decode", "--format", "xml"], []):
        proc = run_cli(args, "a b\n", timeout=60)
        assert proc.returncode == 2, args
        assert "Traceback" not in proc.stderr
        assert "error:" in proc.stderr
        assert proc.stdout == ""


# --------------------------------------------------------------------------------------
# Standard input


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.slow
def test_invalid_utf8_on_stdin(threads):
    """Under a strict UTF-8 locale (e.g. en_US.UTF-8), bad input bytes: a message, not a traceback."""
    proc = run_cli(
        ["decode", "--threads", threads],
        "das muss\n".encode() + b"das\xff muss\n" + "wir\n".encode(),
        timeout=60,
        PYTHONIOENCODING="utf-8:strict",
        PYTHONUTF8="0",
    )
    err = proc.stderr
    # The bad line fails alone: reported on stderr, its source in its place (U+FFFD for the bad
    # byte, as README's "Lines that fail alone" says), the batch goes on.
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert err.startswith("fstdecode: warning: line 2: <stdin>:2: invalid UTF-8"), err
    assert err.count("\n") == 1
    # one output line per input line: the bad one its source, the others translated
    assert proc.stdout == "this must\ndas\ufffd muss\nwe\n"


@pytest.mark.parametrize("form", ["json", "nbest"])
def test_an_invalid_utf8_line_keeps_its_source_in_every_format(form):
    proc = run_cli(["decode", "--format", form], "das muss\n".encode() + b"das\xff|muss\n", timeout=60)
    assert proc.returncode == 0, proc.stderr
    first, bad = proc.stdout.splitlines()
    if form == "json":
        record = json.loads(bad)
        assert record["id"] == 1 and record["source"] == record["translation"] == "das\ufffd|muss"
        assert "invalid UTF-8" in record["error"]
    else:  # one entry: its source as the translation, | escaped as in every n-best source
        assert bad.startswith("1 ||| das\ufffd&#124;muss ||| "), bad


@pytest.mark.parametrize(
    "args",
    [
        ["--max-states", str(2**62)],  # prove's table cap (2 x max_states) overflowed the core's int64
        ["--method", "exact", "--max-states", str(2**63)],
        ["--nbest", str(2**31)],
        ["--method", "stack", "--beam-size", str(2**31)],
    ],
)
def test_integer_options_beyond_the_cores_int_are_refused_in_one_line(args):
    proc = run_cli(["decode", *args], "das muss\n", timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("fstdecode: error: ") and "must be <= 2147483647" in proc.stderr
    assert proc.stderr.count("\n") == 1


@pytest.mark.parametrize("which, lineno", [("lm.arpa", 6), ("phrase-table", 10)])
def test_a_missing_file_names_the_ini_line_that_names_it(tmp_path, which, lineno):
    text = example_ini_text()
    missing = tmp_path / "gone" / which
    ini = tmp_path / "moses.ini"
    ini.write_text(text.replace(str(EXAMPLE_DATA / which), str(missing)), encoding="utf-8")
    expect_error(["decode", "-f", str(ini)], f"{ini}:{lineno}: ", f"path {missing}: no such file")
    # A path given on the command line replaces the ini's: then nothing is missing.
    flag = "--lm" if which == "lm.arpa" else "--phrase-table"
    proc = run_cli(["decode", "-f", str(ini), flag, str(EXAMPLE_DATA / which)], "das muss\n", timeout=60)
    assert proc.returncode == 0 and proc.stdout == "this must\n", proc.stderr
