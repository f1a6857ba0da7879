"""``--show-weights`` and the n-best feature names (as Moses prints them for MERT/MIRA), logging
(-v/-q: stdout holds results only) and the progress bar."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from fstdecode.cli.main import main
from fstdecode.cli.progress import ProgressBar, ProgressError, progress_bar, wanted
from fstdecode.decoder import Decoder
from fstdecode.cli.output import nbest_lines
from fstdecode.model.model import load_model

from shared import EXAMPLE_DATA, data_path, run_cli

INPUT = (EXAMPLE_DATA / "input.txt").read_text(encoding="utf-8")


def test_show_weights_of_the_de_en_gold_ini():
    # Moses' -show-weights (moses-cmd ShowWeights): the stateful features first (KENLM,
    # Distortion), then the stateless ones, each group in moses.ini order; weights fixed with 6
    # decimals; UnknownWordPenalty is not tuneable. Written out by hand from the gold's moses.ini.
    ini = data_path("moses-early-distortion-de-en", "moses.ini")
    proc = run_cli(["decode", "-f", str(ini), "--show-weights"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "KENLM0= 0.500000",
        "Distortion0= 0.050000",
        "WordPenalty0= -1.000000",
        "UnknownWordPenalty0 UNTUNEABLE",
        "PhraseDictionaryMemory0= 0.200000 0.200000 0.200000 0.200000 0.200000",
    ]


def test_nbest_feature_names_are_the_gold_nbest_names():
    # The names (and their order) of every entry of Moses' own 50-best list for the same ini.
    folder = data_path("moses-early-distortion-de-en")
    gold = (folder / "truth" / "results.txt").read_text(encoding="utf-8")
    row = next(line for line in gold.splitlines() if "NBEST" in line)
    gold_names = [tok for tok in row.split(" ||| ")[1].split() if tok.endswith("=")]
    model = load_model(folder / "moses.ini")
    line = (folder / "to-translate.txt").read_text(encoding="utf-8").splitlines()[0]
    result = Decoder(model, "stack", nbest=2).decode(line)
    ours = [tok for tok in nbest_lines(result, model.features)[0].split(" ||| ")[2].split() if tok.endswith("=")]
    assert ours == gold_names == ["KENLM0=", "Distortion0=", "WordPenalty0=", "PhraseDictionaryMemory0="]


RENAMED = """
[distortion-limit]
4
[feature]
PhraseDictionaryMemory name=TranslationModel0 num-features=2 path={data}/phrase-table table-limit=0
PhrasePenalty
WordPenalty name=WP
UnknownWordPenalty
KENLM name=LM0 order=2 path={data}/lm.arpa
Distortion
[weight]
TranslationModel0= 0.5 0.25
PhrasePenalty0= 0.125
WP= -1
LM0= 1
Distortion0= 0.3
"""


def test_names_and_order_follow_the_ini(tmp_path: Path):
    # Feature names from name=, in Moses' order: stateful LM0 and Distortion0 first, then the
    # stateless features in file order; the n-best list prints the same names in the same order.
    ini = tmp_path / "moses.ini"
    ini.write_text(RENAMED.format(data=EXAMPLE_DATA), encoding="utf-8")
    shown = run_cli(["decode", "-f", str(ini), "--show-weights"])
    assert shown.stdout.splitlines() == [
        "LM0= 1.000000",
        "Distortion0= 0.300000",
        "TranslationModel0= 0.500000 0.250000",
        "PhrasePenalty0= 0.125000",
        "WP= -1.000000",
        "UnknownWordPenalty0 UNTUNEABLE",
    ]
    nbest = run_cli(["decode", "-f", str(ini), "--format", "nbest", "--nbest", "2"], INPUT.splitlines()[0] + "\n")
    names = [tok for tok in nbest.stdout.splitlines()[0].split(" ||| ")[2].split() if tok.endswith("=")]
    tuneable = [line.split("=")[0] + "=" for line in shown.stdout.splitlines() if "UNTUNEABLE" not in line]
    assert names == tuneable
    # Each name's values: one per feature, two for the table; PhrasePenalty0 counts the phrases.
    fields = nbest.stdout.splitlines()[0].split(" ||| ")
    values = fields[2].split()
    phrases = len(fields[4].removesuffix("|||").split())
    assert values[values.index("PhrasePenalty0=") + 1] == str(phrases)


def test_weight_flags_show_in_show_weights_and_add_a_feature():
    # --weight changes what is shown; a phrase penalty given without an ini line is added under
    # Moses' default name (the built-in example's ini has none).
    proc = run_cli(["decode", "--weight", "lm=0.25", "--weight", "phrase=2", "--show-weights"])
    assert proc.stdout.splitlines() == [
        "KENLM0= 0.250000",
        "Distortion0= 0.300000",
        "WordPenalty0= 0.000000",
        "UnknownWordPenalty0 UNTUNEABLE",
        "PhraseDictionaryMemory0= 0.500000 0.500000",
        "PhrasePenalty0= 2.000000",
    ]


@pytest.mark.parametrize("fmt", ["text", "json", "nbest"])
def test_verbose_logs_on_stderr_and_stdout_holds_only_results(fmt):
    plain = run_cli(["decode", "--format", fmt, "--method", "stack"], INPUT)
    loud = run_cli(["-v", "decode", "--format", fmt, "--method", "stack"], INPUT)
    assert plain.returncode == loud.returncode == 0
    if fmt == "json":  # the same records but for their timings
        import json

        def strip(text):
            return [{k: v for k, v in json.loads(line).items() if k != "stats"} for line in text.splitlines()]

        assert strip(loud.stdout) == strip(plain.stdout)
    else:
        assert loud.stdout == plain.stdout
    assert "fstdecode: info: model built-in example" in loud.stderr
    assert "fstdecode: info: line 2:" in loud.stderr
    assert "info" not in plain.stderr


def test_quiet_drops_warnings_but_not_errors():
    bad = "das <s> muss\n"
    assert "warning" in run_cli(["decode"], bad).stderr
    quiet = run_cli(["-q", "decode"], bad)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == bad
    failed = run_cli(["-q", "decode", "--lm", "/nonexistent.arpa"], bad)
    assert failed.returncode == 2 and "fstdecode: error:" in failed.stderr


def test_progress_bar_goes_to_stderr_and_leaves_stdout_alone():
    pytest.importorskip("tqdm")
    plain = run_cli(["decode", "--method", "stack"], INPUT)
    bar = run_cli(["decode", "--method", "stack", "--progress"], INPUT)
    assert bar.stdout == plain.stdout
    assert "2line" in bar.stderr.replace(" ", "")  # tqdm's count: "2line [..." (no total: streamed input)
    assert run_cli(["decode", "--method", "stack", "--no-progress"], INPUT).stderr == ""
    # Not a terminal (a pipe, as here) and no flag: no bar.
    assert plain.stderr == ""


def test_progress_helper_counts_flagged_lines_and_is_silent_when_off():
    pytest.importorskip("tqdm")
    stream = io.StringIO()
    with ProgressBar(True, total=5, stream=stream) as bar:
        bar.completed(3)  # a chunk of 3 lines decoded: the bar counts it before any is written
        assert bar.count == 3
        bar.written(type("R", (), {"error": "bad", "reason": None})())
        bar.written(type("R", (), {"error": None, "reason": None})())
        bar.completed(2)
    assert bar.flagged == 1 and "flagged=1" in stream.getvalue() and "5/5" in stream.getvalue()
    off = io.StringIO()
    with progress_bar(False, stream=off) as bar:
        bar.completed(2)
        bar.written(type("R", (), {"error": "bad", "reason": None})())
    assert off.getvalue() == "" and not bar.active
    assert wanted(None, io.StringIO()) is False  # not a terminal


def test_progress_without_tqdm_is_a_clear_error(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_tqdm(name, *args, **kwargs):
        if name == "tqdm":
            raise ImportError("no tqdm")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    with pytest.raises(ProgressError, match=r"pip install tqdm"):
        progress_bar(True, stream=io.StringIO())
    assert not progress_bar(None, stream=_Tty()).active  # automatic: skipped, not an error


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_main_returns_2_for_an_unwritable_alignment_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"das\n"), encoding="utf-8"))
    assert main(["decode", "--alignment-output-file", str(tmp_path / "no" / "such" / "dir")]) == 2
    assert "dir (--alignment-output-file): cannot write" in capsys.readouterr().err


def mert_features(line: str) -> list[tuple[str, int]]:
    """The dense features of an n-best line as Moses' MERT/MIRA extractor reads them
    (mert/Data.cpp): each ``NAME=`` token starts a feature, the number tokens after it are its values."""
    out: list[tuple[str, int]] = []
    for tok in line.split(" ||| ")[2].split():
        if tok.endswith("="):
            out.append((tok[:-1], 0))
        else:
            float(tok)  # the extractor converts every value
            out[-1] = (out[-1][0], out[-1][1] + 1)
    return out


def test_a_failed_line_gives_an_nbest_entry_that_tuning_tools_read():
    # Issue 22: a failed line's entry had the score -inf (which C++ stream reads refuse) and an
    # empty feature field. MERT's extractor takes the feature names from the list's first line and
    # reads every line's features, so a failed first line lost every name. Now: each name, as
    # many zeros as the feature has values, and score 0 (Moses' score for a sentence it cannot
    # translate). Line 1 fails (Moses' field separator), line 2 decodes.
    proc = run_cli(["decode", "--format", "nbest", "--method", "stack"], "das ||| muss\ndas muss\n")
    assert proc.returncode == 0, proc.stderr
    failed, decoded = proc.stdout.splitlines()
    assert failed.split(" ||| ")[:2] == ["0", "das &#124;&#124;&#124; muss"]
    assert failed.split(" ||| ")[3] == "0"
    assert mert_features(failed) == mert_features(decoded) == [
        ("KENLM0", 1), ("Distortion0", 1), ("WordPenalty0", 1), ("PhraseDictionaryMemory0", 2),
    ]
    assert set(failed.split(" ||| ")[2].split()) == {"KENLM0=", "Distortion0=", "WordPenalty0=", "PhraseDictionaryMemory0=", "0"}


def test_a_failed_nbest_entry_from_the_api_has_the_model_layout():
    model = load_model()
    failed = Decoder(model).decode(["das", "</s>"])  # a reserved token: the line fails
    assert failed.derivations == ()
    decoded = Decoder(model, "stack").decode("das muss")
    for given in ({"features": model.weights}, {"features": model.features, "weights": model.weights}):
        line = nbest_lines(failed, **given)[0]
        assert mert_features(line) == mert_features(nbest_lines(decoded, model.features)[0])
        assert float(line.split(" ||| ")[3]) == 0.0
