"""Reliability of the model readers and of model assembly.

* one shared opener (:mod:`fstdecode.io.files`): plain or gzip by magic bytes, UTF-8,
  numbered lines, the same messages for every reader;
* hostile files: every reader raises its own Error, one line, naming file and line;
* weights: non-finite values refused, TM weight counts checked evenly, warnings for
  what is silently assumed (a repeated tm weight, a missing ini weight, an empty table);
* distortion limit -1 means no limit (Moses); Moses' default table-limit; the ini's
  n-best size on the model.
"""

from __future__ import annotations

import gzip
import logging
import math
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import fstdecode.errors
from fstdecode.errors import FstdecodeError
from fstdecode.io.arpa import ArpaError, ArpaLM
from fstdecode.io.files import numbered_lines, open_binary, read_bytes, read_lines
from fstdecode.io.moses_ini import DEFAULT_TABLE_LIMIT, MosesIniError, load_moses_ini
from fstdecode.io.phrase_table import PhraseTableError, load_phrase_table
from fstdecode.model.features import FeatureError, Weights
from fstdecode.model.model import UNLIMITED, ModelError, load_model, with_distortion_limit

ROOT = Path(__file__).resolve().parents[2]

ARPA = """\\data\\
ngram 1=3
ngram 2=2

\\1-grams:
-1\t<s>\t-0.2
-0.5\t</s>
-0.6\ta\t-0.1

\\2-grams:
-0.3\t<s> a
-0.4\ta </s>

\\end\\
"""
ARPA_UNIGRAM_A = 8  # the line "-0.6\ta\t-0.1"
ARPA_BIGRAM_A_EOS = 12  # the line "-0.4\ta </s>"

PT = "a ||| x ||| 0.5 0.5\nb ||| y ||| 0.5 0.5\n"

INI = """[feature]
KENLM path=lm.arpa order=2
PhraseDictionaryMemory path=pt num-features=2 table-limit=0
Distortion
WordPenalty
UnknownWordPenalty

[weight]
KENLM0= 1
PhraseDictionaryMemory0= 0.5 0.5
Distortion0= 0.3
WordPenalty0= 0
UnknownWordPenalty0= 1
"""


class SomeError(FstdecodeError):
    """Stands for a reader's Error class."""


@pytest.fixture
def warnings() -> Iterator[list[str]]:
    """Messages logged on the ``fstdecode`` logger at WARNING while the test runs.

    A handler on that logger itself: the CLI's main() turns off propagation to the root.
    """
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    log = logging.getLogger("fstdecode")
    handler, level = Collect(logging.WARNING), log.level
    log.addHandler(handler)
    log.setLevel(logging.WARNING)
    try:
        yield records
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    """A valid tiny model: moses.ini, pt (2 columns), lm.arpa."""
    write(tmp_path / "lm.arpa", ARPA)
    write(tmp_path / "pt", PT)
    write(tmp_path / "moses.ini", INI)
    return tmp_path


# --------------------------------------------------------------------------
# The shared opener


def test_errors_module_holds_only_the_root_class() -> None:
    public = {n for n in vars(fstdecode.errors) if not n.startswith("_") and n != "annotations"}
    assert public == {"FstdecodeError"}


def test_numbered_lines_plain_and_gzip_by_magic(tmp_path: Path) -> None:
    text = "\ufefffirst\r\n\nthird\nlast without newline"
    expected = [(1, "first"), (2, ""), (3, "third"), (4, "last without newline")]
    plain = write(tmp_path / "plain.gz", text)  # the name does not make it gzip
    packed = write(tmp_path / "packed.txt", gzip.compress(text.encode("utf-8")))
    assert list(numbered_lines(plain, SomeError)) == expected
    assert list(numbered_lines(packed, SomeError)) == expected
    assert read_lines(plain, SomeError) == read_lines(packed, SomeError) == [t for _, t in expected]
    assert list(numbered_lines(write(tmp_path / "empty", b""), SomeError)) == []


@pytest.mark.parametrize(
    "data", [b"", b"\n", b"a", b"a\n", b"a\r\n\r\nb\r", b"\xef\xbb\xbfa\n\xef\xbb\xbfb\n", b"x\r\r\ny\rz\n"]
)
def test_read_lines_is_numbered_lines_as_a_list(tmp_path: Path, data: bytes) -> None:
    path = write(tmp_path / "f", data)
    assert read_lines(path, SomeError) == [text for _, text in numbered_lines(path, SomeError)]


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    for read in (lambda p: list(numbered_lines(p, SomeError)), lambda p: read_bytes(p, SomeError),
                 lambda p: open_binary(p, SomeError), lambda p: read_lines(p, SomeError)):
        with pytest.raises(SomeError) as info:
            read(missing)
        assert str(info.value) == f"{missing}: no such file"
        with pytest.raises(SomeError) as info:
            read(tmp_path)
        assert str(info.value).startswith(f"{tmp_path}: cannot read: ")
    assert read_bytes(write(tmp_path / "b", b"\x1f\x8b raw"), SomeError) == b"\x1f\x8b raw"


def test_bad_gzip_and_bad_utf8_name_the_line(tmp_path: Path) -> None:
    junk = write(tmp_path / "junk", b"\x1f\x8bthis is not deflate data")
    with pytest.raises(SomeError, match=rf"^{junk}:1: corrupt or truncated gzip data .*; re-compress"):
        list(numbered_lines(junk, SomeError))
    with pytest.raises(SomeError, match=rf"^{junk}:1: corrupt or truncated gzip data"):
        read_lines(junk, SomeError)
    whole = gzip.compress("".join(f"line {i}\n" for i in range(50000)).encode())
    cut = write(tmp_path / "cut", whole[: len(whole) // 2])
    with pytest.raises(SomeError) as info:
        list(numbered_lines(cut, SomeError))
    lineno = int(str(info.value).split(":")[1])
    assert 1 < lineno < 50000 and "truncated gzip" in str(info.value)
    latin = write(tmp_path / "latin", "one\ntwo\ndrei \u00fc\n".encode("latin-1"))
    for read in (lambda p: list(numbered_lines(p, SomeError)), lambda p: read_lines(p, SomeError)):
        with pytest.raises(SomeError) as info:
            read(latin)
        assert str(info.value) == (
            f"{latin}:3: invalid UTF-8 (byte 0xfc at column 6); re-encode the file as UTF-8"
        )


def test_every_reader_detects_gzip_by_magic_bytes(tmp_path: Path) -> None:
    """The ARPA reader used to gunzip by the .gz suffix, moses.ini not at all."""
    lm = ArpaLM.from_file(write(tmp_path / "plain-lm.arpa.gz", ARPA))
    assert lm.counts == (3, 2)
    config = load_moses_ini(write(tmp_path / "moses.ini", gzip.compress(INI.encode())))
    assert config.weights["Distortion0"] == (0.3,)
    table = load_phrase_table(write(tmp_path / "pt", gzip.compress(PT.encode())))
    assert len(table) == 2


# --------------------------------------------------------------------------
# Hostile files: one-line error naming the file and the line


def _gzip_cut(text: str) -> bytes:
    whole = gzip.compress(text.encode("utf-8"))
    return whole[: len(whole) // 2]


def _big_arpa(n: int) -> str:
    words = "".join(f"-1.5\tw{i}\n" for i in range(n))
    return f"\\data\\\nngram 1={n + 2}\n\n\\1-grams:\n-1\t<s>\n-1\t</s>\n{words}\n\\end\\\n"


def _replace_line(text: str, lineno: int, new: str) -> str:
    lines = text.split("\n")
    lines[lineno - 1] = new
    return "\n".join(lines)


GARBAGE = bytes(b for b in range(256) if b != 0x0A) * 4  # one line, invalid UTF-8 at byte 0x80
NUL_GARBAGE = b"\x00\x01\x02\x03\x04 \x05\n\x06\x07\n"  # valid UTF-8, not a model file
BAD_GZIP = b"\x1f\x8b\x08\x00garbage after a gzip header"
BAD_UTF8_LINE_3 = b"first\nsecond\nthi\xffrd\n"

READERS: dict[str, tuple[Callable[[Path], object], type[FstdecodeError]]] = {
    "arpa": (ArpaLM.from_file, ArpaError),
    "pt": (load_phrase_table, PhraseTableError),
    "ini": (load_moses_ini, MosesIniError),
}

HOSTILE = [
    # (reader, case, file content, line named; None: no line applies)
    ("arpa", "binary garbage", GARBAGE, 1),
    ("pt", "binary garbage", GARBAGE, 1),
    ("ini", "binary garbage", GARBAGE, 1),
    ("arpa", "NUL garbage", NUL_GARBAGE, 1),
    ("pt", "NUL garbage", NUL_GARBAGE, 1),
    ("ini", "NUL garbage", NUL_GARBAGE, 1),
    ("arpa", "bad gzip", BAD_GZIP, 1),
    ("pt", "bad gzip", BAD_GZIP, 1),
    ("ini", "bad gzip", BAD_GZIP, 1),
    ("arpa", "truncated gzip", _gzip_cut(_big_arpa(20000)), "some"),
    ("pt", "truncated gzip", _gzip_cut("".join(f"a{i} ||| x ||| 0.5\n" for i in range(20000))), "some"),
    ("ini", "truncated gzip", _gzip_cut("[feature]\n" + "".join(f"# {i}\n" for i in range(20000))), "some"),
    ("arpa", "invalid UTF-8 at line 3", ARPA.replace("ngram 2=2", "ngram 2=2 \u00e9").encode("latin-1"), 3),
    ("pt", "invalid UTF-8 at line 3", (PT + "c ||| z\xe9 ||| 1 1\n").encode("latin-1"), 3),
    ("ini", "invalid UTF-8 at line 3", b"[feature]\nDistortion\nKENLM path=\xff\n", 3),
    ("arpa", "too few fields", _replace_line(ARPA, ARPA_BIGRAM_A_EOS, "-0.4\ta").encode(), ARPA_BIGRAM_A_EOS),
    ("pt", "too few fields", (PT + "c ||| z\n").encode(), 3),
    ("ini", "too few fields", b"[feature]\nDistortion\n[weight]\nDistortion0=\n", 4),
    ("ini", "too few fields in [n-best-list]", b"[n-best-list]\nnbest.txt\n", 2),
    ("pt", "NaN probability", (PT + "c ||| z ||| nan 0.5\n").encode(), 3),
    ("pt", "infinite probability", (PT + "c ||| z ||| 0.5 inf\n").encode(), 3),
    ("arpa", "NaN probability", _replace_line(ARPA, ARPA_UNIGRAM_A, "nan\ta\t-0.1").encode(), ARPA_UNIGRAM_A),
    ("arpa", "NaN backoff", _replace_line(ARPA, ARPA_UNIGRAM_A, "-0.6\ta\tnan").encode(), ARPA_UNIGRAM_A),
    ("arpa", "-inf backoff", _replace_line(ARPA, ARPA_UNIGRAM_A, "-0.6\ta\t-inf").encode(), ARPA_UNIGRAM_A),
    ("arpa", "+inf probability", _replace_line(ARPA, ARPA_UNIGRAM_A, "inf\ta\t-0.1").encode(), ARPA_UNIGRAM_A),
    ("ini", "NaN weight", INI.replace("Distortion0= 0.3", "Distortion0= nan").encode(), 11),
    ("ini", "infinite weight", INI.replace("0.5 0.5", "0.5 -inf").encode(), 10),
    ("arpa", "empty file", b"", 1),
    ("ini", "empty file", b"", None),
    ("ini", "only comments", b"# nothing here\n\n", None),
]


@pytest.mark.parametrize(
    ("reader", "content", "lineno"),
    [pytest.param(r, c, n, id=f"{r}: {case}") for r, case, c, n in HOSTILE],
)
def test_hostile_file_gives_one_line_error_naming_file_and_line(
    tmp_path: Path, reader: str, content: bytes, lineno: int | str | None
) -> None:
    load, error = READERS[reader]
    path = write(tmp_path / "hostile", content)
    with pytest.raises(error) as info:
        load(path)
    message = str(info.value)
    assert "\n" not in message, message
    if lineno is None:
        assert message.startswith(f"{path}: "), message
    elif lineno == "some":
        rest = message.removeprefix(f"{path}:")
        assert rest != message and rest.split(":")[0].isdigit(), message
    else:
        assert message.startswith(f"{path}:{lineno}: "), message


def test_minus_inf_probability_is_valid_arpa(tmp_path: Path) -> None:
    """-inf is a log10 probability KenLM accepts (probability 0): not hostile."""
    lm = ArpaLM.from_file(write(tmp_path / "lm", _replace_line(ARPA, ARPA_UNIGRAM_A, "-inf\ta\t-0.1")))
    assert lm.unigram_logprob("a") == -math.inf


# --------------------------------------------------------------------------
# Empty phrase table: a warning naming the file


def test_empty_phrase_table_warns(tmp_path: Path, warnings: list[str]) -> None:
    empty = write(tmp_path / "empty.pt", "\n")
    assert len(load_phrase_table(empty)) == 0
    assert warnings == [
        f"{empty}: the phrase table is empty (the file has no entries); "
        "every source word will be copied through as an unknown word"
    ]


def test_phrase_table_filtered_to_nothing_warns(tmp_path: Path, warnings: list[str]) -> None:
    pt = write(tmp_path / "pt", PT)
    assert len(load_phrase_table(pt, vocabulary=lambda source: False)) == 0
    assert len(warnings) == 1 and warnings[0].startswith(f"{pt}: the phrase table is empty (none of its 2 ")
    warnings.clear()
    load_phrase_table(pt, vocabulary=lambda source: source == ("a",))
    assert warnings == []


# --------------------------------------------------------------------------
# Non-finite weights


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_weights_refuse_non_finite_values(bad: float) -> None:
    with pytest.raises(FeatureError, match="lm weight .* is not a finite number"):
        Weights(lm=bad)
    with pytest.raises(FeatureError, match="tm weight .* is not a finite number"):
        Weights(tm=(1.0, bad))
    with pytest.raises(FeatureError, match="not a finite number"):
        Weights(distortion=bad)


@pytest.mark.parametrize("item", ["lm=nan", "lm=inf", "tm=1,nan", "word=-inf", "distortion=NaN"])
def test_weight_flag_refuses_non_finite_values(model_dir: Path, item: str) -> None:
    with pytest.raises(FeatureError) as info:
        Weights().override([item])
    assert str(info.value).startswith(f"--weight {item!r}: ") and "not a finite number" in str(info.value)
    with pytest.raises(FeatureError):
        load_model(model_dir / "moses.ini", weights=[item])


def test_weight_flag_takes_one_number_but_for_tm() -> None:
    with pytest.raises(FeatureError, match="lm takes one number"):
        Weights().override(["lm=1,2"])
    assert Weights().override(["tm=1,2", "lm=0.5"]) == Weights(lm=0.5, tm=(1.0, 2.0))


def test_ini_non_finite_weight_names_file_and_line(model_dir: Path) -> None:
    ini = write(model_dir / "moses.ini", INI.replace("KENLM0= 1", "KENLM0= inf"))
    with pytest.raises(MosesIniError) as info:
        load_model(ini)
    assert str(info.value) == f"{ini}:9: KENLM0 weight 'inf' is not a finite number"


def test_cli_refuses_nan_weight(model_dir: Path) -> None:
    proc = _run_cli(["decode", "-f", str(model_dir / "moses.ini"), "--weight", "tm=1,nan"])
    assert proc.returncode == 2 and proc.stderr.startswith("fstdecode: error: --weight 'tm=1,nan'")


# --------------------------------------------------------------------------
# TM weight counts


def test_single_tm_weight_is_repeated_with_a_warning(model_dir: Path, warnings: list[str]) -> None:
    model = load_model(phrase_table=model_dir / "pt", lm=model_dir / "lm.arpa", weights=["tm=0.7"])
    assert model.weights.tm == (0.7, 0.7)
    assert warnings == [
        "--weight tm=0.7: one tm weight for a phrase table with 2 score columns; using it for every column"
    ]


def test_default_tm_weight_is_repeated_silently(model_dir: Path, warnings: list[str]) -> None:
    model = load_model(phrase_table=model_dir / "pt", lm=model_dir / "lm.arpa")
    assert model.weights.tm == (1.0, 1.0)
    assert warnings == []


@pytest.mark.parametrize("item", ["tm=1,2,3", "tm=1,2,3,4"])
def test_other_tm_weight_counts_are_errors(model_dir: Path, item: str) -> None:
    with pytest.raises(FeatureError, match=r"tm weights \(--weight tm=.*\) for a phrase table with 2 score"):
        load_model(phrase_table=model_dir / "pt", lm=model_dir / "lm.arpa", weights=[item])


def test_with_tm_columns_contract(warnings: list[str]) -> None:
    assert Weights().with_tm_columns(3).tm == (1.0, 1.0, 1.0)
    assert Weights(tm=(2.0,)).with_tm_columns(1, "here") == Weights(tm=(2.0,))
    assert warnings == []
    assert Weights(tm=(2.0,)).with_tm_columns(2, "here").tm == (2.0, 2.0)
    assert warnings == ["here: one tm weight for a phrase table with 2 score columns; using it for every column"]
    with pytest.raises(FeatureError):
        Weights(tm=(1.0, 2.0)).with_tm_columns(3)


def test_ini_without_weight_for_a_feature_warns(model_dir: Path, warnings: list[str]) -> None:
    ini = write(model_dir / "moses.ini", INI.replace("KENLM0= 1\n", "").replace("Distortion0= 0.3\n", ""))
    model = load_model(ini)
    assert (model.weights.lm, model.weights.distortion) == (1.0, 1.0)
    assert warnings == [
        f"{ini}:2: feature KENLM0 has no weight in [weight]; using 1.0 "
        "(Moses refuses such a file; fstdecode warns and uses 1.0)",
        f"{ini}:4: feature Distortion0 has no weight in [weight]; using 1.0 "
        "(Moses refuses such a file; fstdecode warns and uses 1.0)",
    ]


def test_complete_ini_loads_without_warnings(model_dir: Path, warnings: list[str]) -> None:
    load_model(model_dir / "moses.ini")
    load_model()  # the built-in example
    assert warnings == []


def test_cli_prints_the_warnings(model_dir: Path) -> None:
    proc = _run_cli(["decode", "--phrase-table", str(model_dir / "pt"), "--lm", str(model_dir / "lm.arpa"),
                     "--weight", "tm=1"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == (
        "fstdecode: warning: --weight tm=1: one tm weight for a phrase table with 2 score columns; "
        "using it for every column\n"
    )


# --------------------------------------------------------------------------
# Distortion limit, table limit, n-best size


def test_distortion_limit_minus_one_is_no_limit(model_dir: Path) -> None:
    assert load_model(model_dir / "moses.ini", distortion_limit=-1).distortion_limit == UNLIMITED
    ini = write(model_dir / "moses.ini", INI + "[distortion-limit]\n-1\n")
    assert load_model(ini).distortion_limit == UNLIMITED
    assert load_model(ini, distortion_limit=3).distortion_limit == 3
    assert with_distortion_limit(load_model(ini), -1).distortion_limit == UNLIMITED
    assert with_distortion_limit(load_model(ini), 0).distortion_limit == 0


@pytest.mark.parametrize("bad", [-2, -7])
def test_other_negative_distortion_limits_are_errors(model_dir: Path, bad: int) -> None:
    with pytest.raises(ModelError, match=rf"distortion limit must be .* -1 for no limit; got {bad}"):
        load_model(model_dir / "moses.ini", distortion_limit=bad)
    with pytest.raises(ModelError, match="distortion limit"):
        with_distortion_limit(load_model(), bad)


def test_ini_table_limit_defaults_to_moses_20(model_dir: Path) -> None:
    write(model_dir / "pt", "".join(f"a ||| x{i} ||| 0.{i + 10} 0.5\n" for i in range(30)))
    ini = write(model_dir / "moses.ini", INI.replace(" table-limit=0", ""))
    assert DEFAULT_TABLE_LIMIT == 20
    assert len(load_model(ini).table.lookup(("a",))) == 20
    assert len(load_model(ini, table_limit=0).table.lookup(("a",))) == 30
    assert len(load_model(phrase_table=model_dir / "pt", lm=model_dir / "lm.arpa").table) == 30


def test_model_carries_the_ini_nbest_size(model_dir: Path) -> None:
    ini = write(model_dir / "nbest.ini", INI + "[n-best-list]\nnbest.txt\n25\n")
    assert load_model(ini).nbest_size == 25
    assert load_model(model_dir / "moses.ini").nbest_size is None
    assert load_model(phrase_table=model_dir / "pt", lm=model_dir / "lm.arpa").nbest_size is None


def test_missing_lm_names_the_ini(model_dir: Path) -> None:
    ini = write(model_dir / "moses.ini", INI.replace("KENLM path=lm.arpa order=2\n", "").replace("KENLM0= 1\n", ""))
    with pytest.raises(ModelError, match=rf"^{ini}: no language model"):
        load_model(ini)


# --------------------------------------------------------------------------


def _run_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fstdecode", *args],
        input="a b\n",
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=dict(os.environ, PYTHONUTF8="1"),
        cwd=ROOT,
        timeout=60,
    )
