"""``fstdecode moses``: Moses' command line, and every moses.ini section either honoured as
Moses honours it or refused by name (issue 24's "silent divergences", each with its test here).

In-process (``main([...])`` with the standard streams replaced), on the built-in example and
the shared de-en and Europarl models (skipped with a reason when ../shared/data is absent).
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import pytest

from fstdecode.cli.main import main
from fstdecode.cli.moses import DEFAULT_STACK, MosesArgsError, moses_args, parse_switches
from fstdecode.io.moses_ini import MosesIniError, load_moses_ini
from fstdecode.io.moses_params import PARAMETERS, SHORT_NAMES
from fstdecode.model.model import load_model
from fstdecode.search.base import MAX_INT_OPTION

from shared import EXAMPLE_DATA, data_path

EUROPARL = "moses-lexreo-europarl-fr-en"
DE_EN = "moses-early-distortion-de-en"


#: The beginnings of the lines Moses writes on stderr at -v 1 (its default), which fstdecode moses writes too.
MOSES_V1_LINES = ("BEST TRANSLATION: ", "NO BEST TRANSLATION", "Loading ", "Created input-output object : ")


def run(args: list[str], stdin: bytes, capsys, monkeypatch, best_lines: bool = False) -> tuple[int, str, str]:
    """``fstdecode ARGS`` in this process: (status, stdout, stderr); stderr without Moses' -v 1 lines
    (``BEST TRANSLATION``, ``Loading``: tests/integration/test_moses_harness.py) unless ``best_lines``."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    status = main(args)
    out, err = capsys.readouterr()
    if not best_lines:
        err = "".join(line for line in err.splitlines(keepends=True)
                      if not line.startswith(MOSES_V1_LINES))
    return status, out, err


def example_ini(tmp_path: Path, extra: str = "", feature_extra: str = "") -> Path:
    """The built-in example's moses.ini with absolute paths, plus ``extra`` sections."""
    text = (EXAMPLE_DATA / "moses.ini").read_text(encoding="utf-8")
    text = text.replace("[feature]\n", "[feature]\n" + feature_extra)
    ini = tmp_path / "moses.ini"
    ini.write_text(text.replace("${MODEL_DIR}", str(EXAMPLE_DATA)) + extra, encoding="utf-8")
    return ini


# --------------------------------------------------------------------------
# Moses' switch grammar (Parameter::LoadParam)


def test_switches_take_their_values_up_to_the_next_switch():
    got = parse_switches(["-f", "m.ini", "-n-best-list", "-", "100", "distinct", "-b", "0.01", "-weight-overwrite",
                          "LM0= -0.5 TM0= 0.2"])
    assert got == {"config": ["m.ini"], "n-best-list": ["-", "100", "distinct"], "beam-threshold": ["0.01"],
                   "weight-overwrite": ["LM0= -0.5 TM0= 0.2"]}
    # '-' alone and a dash followed by a digit are values (isOption); short names are long ones.
    assert parse_switches(["-s", "-1", "-th", "all", "-dl", "6"]) == {"stack": ["-1"], "threads": ["all"],
                                                                    "distortion-limit": ["6"]}


@pytest.mark.parametrize(
    "words, message",
    [
        (["-f", "m.ini", "-no-such-switch"], "illegal switch -no-such-switch: not a Moses parameter"),
        (["m.ini"], "a value before any switch"),
        (["-f", "a.ini", "-config", "b.ini"], "-config is given twice"),
    ],
)
def test_bad_switches_are_named(words, message):
    with pytest.raises(MosesArgsError, match=message):
        parse_switches(words)


def test_every_short_name_reads_as_its_long_name():
    assert SHORT_NAMES["s"] == "stack" and SHORT_NAMES["b"] == "beam-threshold" and SHORT_NAMES["dl"] == "distortion-limit"
    assert SHORT_NAMES["th"] == "threads" and SHORT_NAMES["v"] == "verbose" and SHORT_NAMES["ttl"] == "ttable-limit"
    assert SHORT_NAMES["w"] == "weight-w"  # Moses' own table gives w to weight-w after weight-p
    assert all(long in PARAMETERS for long in SHORT_NAMES.values())


def test_moses_defaults_and_the_beam_threshold_as_a_probability_ratio(tmp_path):
    args, opts = moses_args(["-f", str(example_ini(tmp_path))])
    assert (args.method, args.beam_size, args.beam_threshold) == ("stack", DEFAULT_STACK, pytest.approx(math.log(1e5)))
    assert args.workers == 1 and args.ini_paths == "cwd" and opts.nbest_path is None
    args, _ = moses_args(["-f", str(example_ini(tmp_path)), "-b", "0.001", "-s", "0", "-threads", "3"])
    assert args.beam_threshold == pytest.approx(math.log(1000)) and args.beam_size == MAX_INT_OPTION and args.threads == 3 and args.workers == 1
    # mert-moses.pl writes --decoder-flags back into the tuned ini under the name as typed: [s], [b]
    args, _ = moses_args(["-f", str(example_ini(tmp_path, "\n[s]\n7\n[b]\n0.5\n"))])
    assert args.beam_size == 7 and args.beam_threshold == pytest.approx(math.log(2))


@pytest.mark.parametrize(
    "words, message",
    [
        (["-drop-unknown"], "-drop-unknown is not supported"),
        (["-output-search-graph", "g.txt"], "-output-search-graph is not supported: use decode --method fst"),
        (["-weight-file", "w.txt"], "sparse feature weights"),
        (["-inputtype", "2"], "-inputtype 2: only plain-text input"),
        (["-xml-input", "constraint"], "constraint is not supported"),
        (["-n-best-list", "out"], "wrong format"),
        (["-threads", "0"], "at least one thread"),
        (["-lattice-samples", "f", "10"], "not supported"),
        (["-ttable-file", "0 0 0 5 pt"], "reads it from the moses.ini only"),
        (["-n-best-factor", "5"], "supports only 20"),
        (["-weight-overwrite"], "-weight-overwrite needs its weights"),
    ],
)
def test_switches_fstdecode_cannot_honour_are_refused_by_name(tmp_path, words, message):
    with pytest.raises(MosesArgsError, match=message.replace("(", r"\(")):
        moses_args(["-f", str(example_ini(tmp_path)), *words])


def test_no_config_is_an_error_as_in_moses(capsys, monkeypatch):
    status, out, err = run(["moses", "-s", "10"], b"", capsys, monkeypatch)
    assert status == 2 and out == "" and "use -config or -f" in err and "Traceback" not in err


# --------------------------------------------------------------------------
# Moses' output bytes


def test_one_best_lines_are_moses_bytes(tmp_path, capsys, monkeypatch):
    ini = example_ini(tmp_path)
    status, out, err = run(["moses", "-f", str(ini)], b"das muss unsere sorge gleichermassen sein\nhaus\n", capsys, monkeypatch)
    assert status == 0, err
    lines = out.split("\n")
    assert len(lines) == 3 and lines[2] == ""
    assert all(line.endswith(" ") and "  " not in line for line in lines[:2])  # every word followed by one space
    assert lines[1] == "haus "  # an unknown word is copied through
    # -t: each phrase followed by |i-j|; -print-alignment-info: ||| and the points, each followed by a space
    status, out, _ = run(["moses", "-f", str(ini), "-t", "-print-alignment-info", "-mark-unknown", "-print-id"],
                         b"haus\n", capsys, monkeypatch)
    assert status == 0 and out == "0 UNKhaus |0-0| ||| 0-0 \n"
    # -output-hypo-score's score (6 significant digits) comes before -print-id's id
    status, out, _ = run(["moses", "-f", str(ini), "-print-id", "-output-hypo-score"], b"haus\n", capsys, monkeypatch)
    score, ident, word = out.split(" ")[:3]
    assert (ident, word) == ("0", "haus") and float(score) < 0 and score == f"{float(score):.6g}"


def test_decode_refuses_sections_that_change_moses_one_best_line(tmp_path, capsys, monkeypatch):
    for section in ("mark-unknown", "report-segmentation", "print-id", "output-hypo-score"):
        ini = example_ini(tmp_path, f"\n[{section}]\ntrue\n")
        status, out, err = run(["decode", "-f", str(ini)], b"haus\n", capsys, monkeypatch)
        assert status == 2 and f"[{section}] changes Moses' 1-best line" in err and "fstdecode moses" in err
        status, out, err = run(["moses", "-f", str(ini)], b"haus\n", capsys, monkeypatch)
        assert status == 0 and out.strip(), (section, err)


def test_unknown_words_and_alignment_files(tmp_path, capsys, monkeypatch):
    ini = example_ini(tmp_path)
    unknowns, align = tmp_path / "oov.txt", tmp_path / "align.txt"
    args = ["moses", "-f", str(ini), "-output-unknowns", str(unknowns), "-alignment-output-file", str(align)]
    status, out, err = run(args, b"haus xyz haus\n\nsein\n", capsys, monkeypatch)
    assert status == 0, err
    assert unknowns.read_text(encoding="utf-8") == "haus xyz haus \n\n\n"
    lines = align.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 4 and lines[-1] == "" and all(line == "" or line.endswith(" ") for line in lines)


def test_nbest_to_stdout_replaces_the_one_best(tmp_path, capsys, monkeypatch):
    ini = example_ini(tmp_path)
    status, out, err = run(["moses", "-f", str(ini), "-n-best-list", "-", "3", "-include-segmentation-in-n-best"],
                           b"das muss unsere sorge gleichermassen sein\n", capsys, monkeypatch)
    assert status == 0, err
    lines = out.splitlines()
    assert 1 <= len(lines) <= 3 and all(line.startswith("0 ||| ") for line in lines)
    fields = lines[0].split(" ||| ")
    assert fields[1].endswith(" ") and "=" in fields[2] and len(fields) == 5  # words, feats, total, segmentation
    totals = [float(line.split(" ||| ")[3]) for line in lines]
    assert totals == sorted(totals, reverse=True)


def test_decode_writes_the_ini_nbest_file_where_moses_would(tmp_path, capsys, monkeypatch):
    # [n-best-list] nbest.txt 4: Moses writes the file relative to the working directory; so does decode.
    ini = example_ini(tmp_path, "\n[n-best-list]\nnbest.txt\n4\n[include-segmentation-in-n-best]\ntrue\n")
    monkeypatch.chdir(tmp_path)
    status, out, err = run(["decode", "-f", str(ini), "--method", "stack"], b"das muss unsere sorge gleichermassen sein\n",
                           capsys, monkeypatch)
    assert status == 0, err
    assert len(out.splitlines()) == 1 and " ||| " not in out  # stdout keeps decode's text format
    nbest = (tmp_path / "nbest.txt").read_text(encoding="utf-8").splitlines()
    assert 1 <= len(nbest) <= 4 and all(len(line.split(" ||| ")) == 5 for line in nbest)
    assert nbest[0].split(" ||| ")[1].strip() == out.strip()


# --------------------------------------------------------------------------
# moses.ini sections: honoured, or refused by name (no silent divergence)


@pytest.mark.parametrize(
    "section, message",
    [
        ("[inputtype]\n1\n", "[inputtype] 1: only plain-text input"),
        ("[input-factors]\n0\n1\n", "[input-factors] 0 / 1: factored input is not supported"),
        ("[output-file]\nout.txt\n", "[output-file] is not a Moses parameter"),
        ("[constraint]\nref.txt\n", "[constraint] is not a Moses parameter"),
        ("[weight-file]\nsparse.txt\n", "[weight-file] is not supported: sparse feature weights"),
        ("[alternate-weight-setting]\nid=a\n", "[alternate-weight-setting] is not supported"),
        ("[drop-unknown]\n", "[drop-unknown] is not supported"),
        ("[placeholder-factor]\n1\n", "[placeholder-factor] is not supported: factored models"),
        ("[output-search-graph]\ngraph.txt\n", "[output-search-graph] is not supported"),
        ("[server-port]\n8080\n", "[server-port] is not a Moses parameter"),  # a later fork's section
    ],
)
def test_sections_fstdecode_cannot_honour_are_refused_by_name(tmp_path, section, message):
    ini = example_ini(tmp_path, "\n" + section)
    with pytest.raises(MosesIniError) as info:
        load_moses_ini(ini)
    assert message in str(info.value) and str(info.value).startswith(f"{ini}:")


@pytest.mark.parametrize(
    "mapping, message",
    [
        ("0 T 0\n1 T 1\n", "no phrase table with index 1 (the ini has 1"),
        ("0 G 0\n", "a generation step (factored models) is not supported"),
        ("0 T x\n", "write 'PATH T TABLE'"),
    ],
)
def test_a_mapping_that_is_not_one_path_per_table_is_refused(tmp_path, mapping, message):
    from fstdecode.model.decoding_paths import DecodingPathError

    with pytest.raises(DecodingPathError, match=re.escape(message)):
        load_model(example_ini(tmp_path, "\n[mapping]\n" + mapping))


def test_xml_input_section_is_honoured_in_decode(tmp_path, capsys, monkeypatch):
    markup = b'<np translation="house">haus</np>\n'
    plain_ini = example_ini(tmp_path)
    status, out, _ = run(["decode", "-f", str(plain_ini)], markup, capsys, monkeypatch)
    assert status == 0 and "<np" in out  # pass-through, Moses' default: the markup is words
    ini = example_ini(tmp_path, "\n[xml-input]\nexclusive\n")
    status, out, err = run(["decode", "-f", str(ini)], markup, capsys, monkeypatch)
    assert status == 0 and out == "house\n", err
    status, out, err = run(["decode", "-f", str(ini), "--xml-input", "pass-through"], markup, capsys, monkeypatch)
    assert "<np" in out  # the flag wins


def test_search_and_no_effect_sections_are_warned_about_in_decode(tmp_path, capsys, monkeypatch):
    ini = example_ini(tmp_path, "\n[s]\n100\n[description]\nmy model\n")
    status, out, err = run(["decode", "-f", str(ini)], b"haus\n", capsys, monkeypatch)
    assert status == 0
    assert "[stack] is a setting of Moses' own search; fstdecode decode ignores it" in err
    assert "[description] is a description of the model; nothing in the output depends on it" in err
    # fstdecode moses honours [stack] (no warning) and warns about what it does not have
    ini = example_ini(tmp_path, "\n[stack]\n100\n[stack-diversity]\n5\n")
    status, out, err = run(["moses", "-f", str(ini)], b"haus\n", capsys, monkeypatch)
    assert status == 0 and "[stack]" not in err and "[stack-diversity]" in err
    # and says that a pop limit without cube pruning is ignored, as Moses ignores it
    ini = example_ini(tmp_path, "\n[cube-pruning-pop-limit]\n500\n")
    status, out, err = run(["moses", "-f", str(ini)], b"haus\n", capsys, monkeypatch)
    assert status == 0 and "-cube-pruning-pop-limit applies to cube pruning (-search-algorithm 1) only" in err


def test_kenlm_order_is_the_files_order_as_in_moses(tmp_path, caplog):
    # Moses' KENLM ignores order=: a 5-gram binary with order=3 scores as a 5-gram (LM0 -18.54, not -18.18).
    folder = data_path(EUROPARL)
    ini = (folder / "moses.binlm.ini").read_text(encoding="utf-8").replace("order=5", "order=3")
    assert "order=3" in ini
    copy = tmp_path / "moses.ini"
    copy.write_text(ini.replace("${MODEL_PATH}", str(folder)), encoding="utf-8")
    model = load_model(copy)
    assert model.lm.order == 5
    assert "KENLM0 order=3, but the file holds a 5-gram model" in caplog.text
    kenlm = pytest.importorskip("kenlm")
    sentence = "mr president , what we devrons but also"
    oracle = kenlm.Model(str(folder / "europarl.probing.binlm")).score(sentence)
    assert model.lm.score_sentence(sentence.split()) == pytest.approx(oracle * math.log(10), abs=1e-4)
    assert load_model(copy, lm_order=3).lm.order == 3  # --lm-order still truncates, on purpose


def test_relative_paths_follow_moses_in_moses_and_warn_in_decode(tmp_path, monkeypatch, caplog):
    # The ini's folder and the working directory each hold a phrase table named pt: Moses reads the
    # working directory's; decode reads the ini's (its documented rule) and says Moses would not.
    model_dir, work = tmp_path / "model", tmp_path / "work"
    model_dir.mkdir()
    work.mkdir()
    for folder in (model_dir, work):
        (folder / "pt").write_text((EXAMPLE_DATA / "phrase-table").read_text(encoding="utf-8"), encoding="utf-8")
    text = (EXAMPLE_DATA / "moses.ini").read_text(encoding="utf-8").replace("${MODEL_DIR}", str(EXAMPLE_DATA))
    text = text.replace(f"path={EXAMPLE_DATA}/phrase-table", "path=pt")
    assert "path=pt" in text
    ini = model_dir / "moses.ini"
    ini.write_text(text, encoding="utf-8")
    monkeypatch.chdir(work)
    assert load_moses_ini(ini, "cwd").phrase_table().path == str(work / "pt")
    config = load_moses_ini(ini)
    assert config.phrase_table().path == str(model_dir / "pt")
    assert any("Moses, and fstdecode moses, would read" in message and str(work / "pt") in message
               for message in config.ignored)
    (work / "pt").unlink()  # only the ini's folder has it: decode reads it, and nothing is said
    assert not any("would read" in message for message in load_moses_ini(ini).ignored)
    # ... and Moses fails (InputFileStream: "Can't read pt"): so does Moses' rule, naming the file
    # beside the ini; it no longer falls back to it (issue 38).
    with pytest.raises(MosesIniError, match="beside the ini"):
        load_moses_ini(ini, "cwd")


def moses_relative_ini(tmp_path: Path, table: str) -> tuple[Path, Path]:
    """The built-in example's ini in tmp_path/model with ``path=pt`` for its phrase table, whose
    file is written beside it as ``table``; and an empty working folder, tmp_path/work."""
    model_dir, work = tmp_path / "model", tmp_path / "work"
    model_dir.mkdir()
    work.mkdir()
    (model_dir / table).write_bytes((EXAMPLE_DATA / "phrase-table").read_bytes())
    text = (EXAMPLE_DATA / "moses.ini").read_text(encoding="utf-8").replace("${MODEL_DIR}", str(EXAMPLE_DATA))
    ini = model_dir / "moses.ini"
    ini.write_text(text.replace(f"path={EXAMPLE_DATA}/phrase-table", "path=pt"), encoding="utf-8")
    return ini, work


# Each case: the phrase table's file beside the ini (path=pt), and the file the error names there.
@pytest.mark.parametrize("table, named", [
    ("pt", "pt"),  # the path as written
    ("pt.gz", "pt.gz"),  # the name Moses would also open (its .gz), named as it is
])
def test_moses_fails_on_a_path_not_found_from_the_working_directory(tmp_path, capsys, monkeypatch, table, named):
    # Moses opens a relative path from the working directory only; fstdecode moses used to fall
    # back to the ini's folder without a word. Now: one error line, exit 2, naming the ini's line,
    # the path, the working directory, and the file of that name beside the ini.
    ini, work = moses_relative_ini(tmp_path, table)
    line = next(n for n, text in enumerate(ini.read_text(encoding="utf-8").splitlines(), 1) if "path=pt" in text)
    monkeypatch.chdir(work)
    status, out, err = run(["moses", "-f", str(ini)], b"das muss\n", capsys, monkeypatch)
    assert status == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert f"{ini}:{line}: path=pt is not found from the working directory {work}" in err
    assert f"a file of that name is beside the ini: {ini.parent / named}" in err


def test_the_same_ini_decodes_from_its_folder_and_in_decode(tmp_path, capsys, monkeypatch):
    # Run from the ini's folder, Moses' rule finds the file; decode keeps its rule (the ini's folder).
    ini, work = moses_relative_ini(tmp_path, "pt")
    monkeypatch.chdir(ini.parent)
    status, out, err = run(["moses", "-f", str(ini)], b"das muss\n", capsys, monkeypatch)
    assert status == 0 and out == "this must \n", err
    monkeypatch.chdir(work)
    status, out, err = run(["decode", "-f", str(ini)], b"das muss\n", capsys, monkeypatch)
    assert status == 0 and out == "this must\n", err


def test_a_path_found_nowhere_names_no_file_beside_the_ini(tmp_path, capsys, monkeypatch):
    ini, work = moses_relative_ini(tmp_path, "other-name")
    monkeypatch.chdir(work)
    status, out, err = run(["moses", "-f", str(ini)], b"das muss\n", capsys, monkeypatch)
    assert status == 2 and "path=pt is not found from the working directory" in err
    assert "beside the ini" not in err and err.count("\n") == 1


def test_weights_by_moses_names_in_decode(tmp_path):
    ini = example_ini(tmp_path)
    names = {f.name for f in load_model(ini).features}
    lm_name = next(n for n in names if n.startswith("KENLM") or n.startswith("LM"))
    model = load_model(ini, weights=[f"{lm_name}=0.25", "lm=0.5"])  # generic names remain aliases; the last wins
    assert model.weights.lm == 0.5
    model = load_model(ini, weights=["lm=0.5", f"{lm_name}=0.25"])
    assert model.weights.lm == 0.25
    tm_name = next(f.name for f in load_model(ini).features if f.kind == "PhraseDictionaryMemory")
    width = len(load_model(ini).weights.tm)
    model = load_model(ini, weights=[f"{tm_name}=" + " ".join(["0.1"] * width)])
    assert model.weights.tm == (0.1,) * width
    from fstdecode.model.features import FeatureError

    with pytest.raises(FeatureError, match="Moses names of this model"):
        load_model(ini, weights=["KENLM7=1"])


# --------------------------------------------------------------------------
# The shared models: -show-weights byte for byte, the lattice model refused


@pytest.mark.parametrize("folder", [EUROPARL, DE_EN])
def test_show_weights_is_moses_byte_for_byte(folder, capsys, monkeypatch):
    model = data_path(folder)
    status, out, err = run(["moses", "-f", str(model / "moses.ini"), "-show-weights"], b"", capsys, monkeypatch)
    assert status == 0, err
    assert out == (model / "truth" / "moses-show-weights.txt").read_text(encoding="utf-8")


def test_the_lattice_model_is_refused_clearly(capsys, monkeypatch):
    ini = data_path("moses-toy-numbers") / "moses.ini"
    for command in ("moses", "decode"):
        status, out, err = run([command, "-f", str(ini)], b"1 2\n", capsys, monkeypatch)
        assert status == 2 and out == "" and err.count("\n") == 1
        assert "InputFeature" in err and "word-lattice input" in err


def test_threads_all_means_one_thread_per_core_in_both_commands(tmp_path):
    """-threads all (Moses) and --threads all (decode): one thread per core, threads of one process."""
    import argparse
    import os

    from fstdecode.cli.running import worker_count

    assert worker_count("all") == (os.cpu_count() or 1) and worker_count("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match="or all"):
        worker_count("many")
    args, _ = moses_args(["-f", str(example_ini(tmp_path)), "-threads", "all"])
    assert args.threads == (os.cpu_count() or 1) and args.workers == 1


def test_moses_binary_tables_are_read_and_a_damaged_one_is_one_error_line(tmp_path, capsys, monkeypatch):
    # A .minphr named as the table is read as Moses' compact format (not as text: "invalid UTF-8");
    # a compact reordering table named without its extension is found as Moses finds it
    # (path.minlexr). These are no tables: each gives one error line naming the file.
    (tmp_path / "pt.minphr").write_bytes(b"\x00\x01binary")
    (tmp_path / "rt.minlexr").write_bytes(b"\x00\x01binary")
    ini = example_ini(tmp_path)
    text = ini.read_text(encoding="utf-8")
    phrase = text.replace(f"PhraseDictionaryMemory name=PhraseDictionaryMemory0 num-features=2 path={EXAMPLE_DATA}/phrase-table",
                          f"PhraseDictionaryCompact name=PhraseDictionaryMemory0 num-features=2 path={tmp_path}/pt")
    assert phrase != text
    ini.write_text(phrase, encoding="utf-8")
    status, _, err = run(["decode", "-f", str(ini)], b"haus\n", capsys, monkeypatch)
    assert status == 2 and f"{tmp_path}/pt.minphr" in err and err.count("\n") == 1 and "Traceback" not in err, err
    reordering = text.replace("[feature]\n", f"[feature]\nLexicalReordering type=msd-bidirectional-fe num-features=6 "
                              f"path={tmp_path}/rt\n")
    ini.write_text(reordering, encoding="utf-8")
    status, _, err = run(["decode", "-f", str(ini)], b"haus\n", capsys, monkeypatch)
    assert status == 2 and f"{tmp_path}/rt.minlexr" in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_an_old_format_second_lm_is_a_second_lm_feature(tmp_path):
    # Moses converts each [lmodel-file] line into a KENLM feature of its own (KENLM0, KENLM1), each
    # weighed by its [weight-l] value; so does fstdecode (it said "weight for 'KENLM1', which is
    # not a [feature]" before).
    folder = data_path(DE_EN)
    ini = tmp_path / "old.ini"
    lm = folder / "mini.irstlm.en.3g.lm"
    ini.write_text(f"[ttable-file]\n0 0 0 5 {folder / 'phrase-table.gz'}\n[lmodel-file]\n8 0 3 {lm}\n8 0 3 {lm}\n"
                   "[weight-l]\n0.5\n0.3\n[weight-t]\n0.2\n0.2\n0.2\n0.2\n0.2\n[weight-d]\n0.05\n[weight-w]\n-1\n",
                   encoding="utf-8")
    model = load_model(ini)
    assert [f.name for f in model.features if f.kind == "KENLM"] == ["KENLM0", "KENLM1"]
    assert model.weights.lms == (0.5, 0.3) and model.weights.lm == 1.0
    assert model.show_weights()[:2] == ["KENLM0= 0.500000", "KENLM1= 0.300000"]


@pytest.mark.parametrize("switch", ["-v", "-verbose"])
def test_verbose_is_honoured_without_a_warning(tmp_path, capsys, monkeypatch, switch):
    # -v is Moses' logging level, which fstdecode moses honours (README's parameter table): no
    # warning that it is ignored; 0 logs errors only, 1 warnings, 2 progress.
    ini = str(example_ini(tmp_path))
    stdin = "das muss\n<s> x\n".encode()
    errs = {}
    for level in ("0", "1", "2"):
        status, out, errs[level] = run(["moses", "-f", ini, switch, level], stdin, capsys, monkeypatch)
        assert status == 0 and out.splitlines()[1:] == [""]  # the reserved-token line: empty, as in Moses
        assert "ignores it" not in errs[level]
    assert errs["0"] == ""
    assert errs["1"].startswith("fstdecode: warning: line 2:") and errs["1"].count("\n") == 1
    assert "fstdecode: info: " in errs["2"] and "fstdecode: warning: line 2:" in errs["2"]
    # and Moses' BEST TRANSLATION line per line from -v 1 on (NO BEST for the line it cannot translate)
    for level, count in (("0", 0), ("1", 2)):
        _, _, raw = run(["moses", "-f", ini, switch, level], stdin, capsys, monkeypatch, best_lines=True)
        best = [line for line in raw.splitlines() if "BEST TRANSLATION" in line]
        assert len(best) == count and (not best or best[1] == "NO BEST TRANSLATION")


@pytest.mark.parametrize("words", [["-s", "0"], ["-stack", "0"]])
def test_stack_zero_decodes_without_a_limit(tmp_path, capsys, monkeypatch, words):
    # README's table: stack 0 is honoured as no limit (the probe found it refused once the
    # integer options were capped at the core's int).
    status, out, err = run(["moses", "-f", str(example_ini(tmp_path)), *words], "das muss\n".encode(), capsys, monkeypatch)
    assert status == 0 and out == "this must \n", err


# --------------------------------------------------------------------------
# Issue 38: the empty line, huge distortion limits, and messages worded for fstdecode moses


def _ini_weights(ini: Path) -> dict[str, list[float]]:
    """The [weight] lines of ``ini``, read here by hand: name -> values."""
    text = ini.read_text(encoding="utf-8").split("[weight]\n", 1)[1]
    out = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("["):
            name, values = line.split("=", 1)
            out[name.strip()] = [float(v) for v in values.split()]
    return out


def test_every_nbest_total_is_its_weighted_features_and_an_empty_line_is_all_zero(tmp_path, capsys, monkeypatch):
    # Defect 7: the empty line's entry had KENLM0= -3.10627 and total 0. Moses decodes it to its
    # initial hypothesis, which no feature scores (Hypothesis' seed constructor; the LM's </s> is
    # scored only when a phrase completes the source), so it prints 0 for every feature and total.
    ini = example_ini(tmp_path)
    weights = _ini_weights(ini)
    status, out, err = run(["moses", "-f", str(ini), "-n-best-list", "-", "2"], b"das muss\n\nunsere sorge\n",
                           capsys, monkeypatch)
    assert status == 0, err
    entries = [line.split(" ||| ") for line in out.splitlines()]
    assert [e[0] for e in entries] == ["0", "0", "1", "2", "2"]
    for _, _, feats, total in entries:
        name, values = None, {}
        for token in feats.split():
            if token.endswith("="):
                name = token[:-1]
                values[name] = []
            else:
                values[name].append(float(token))
        weighted = sum(w * v for n, vs in values.items() for w, v in zip(weights[n], vs, strict=True))
        assert float(total) == pytest.approx(weighted, abs=2e-5), (feats, total)
    assert entries[2] == ["1", "", "KENLM0= 0 Distortion0= 0 WordPenalty0= 0 PhraseDictionaryMemory0= 0 0", "0"]
    status, out, _ = run(["moses", "-f", str(ini), "-output-hypo-score"], b"\n", capsys, monkeypatch)
    assert status == 0 and out == "0 \n"  # Moses: the score, a space, no words


@pytest.mark.parametrize("where", ["-dl", "ini"])
@pytest.mark.parametrize("value", [2**31, 2**40])
def test_a_distortion_limit_past_the_int_range_is_no_limit(tmp_path, capsys, monkeypatch, where, value):
    # Defect 6: a native TypeError. Moses reads the value with Scan<int> (stream extraction), which
    # stores 2^31 - 1 for anything larger: a limit no sentence reaches, i.e. no limit (as -1).
    line = (EXAMPLE_DATA / "input.txt").read_bytes()
    _, unlimited, _ = run(["moses", "-f", str(example_ini(tmp_path)), "-dl", "-1"], line, capsys, monkeypatch)
    if where == "-dl":
        args = ["moses", "-f", str(example_ini(tmp_path)), "-dl", str(value)]
    else:
        text = example_ini(tmp_path).read_text(encoding="utf-8")
        text = text.replace("[distortion-limit]\n4", f"[distortion-limit]\n{value}")
        assert f"[distortion-limit]\n{value}\n" in text
        (tmp_path / "big.ini").write_text(text, encoding="utf-8")
        args = ["moses", "-f", str(tmp_path / "big.ini")]
    status, out, err = run(args, line, capsys, monkeypatch)
    assert status == 0 and out == unlimited and err == "", err
    status, out, err = run(["decode", "-f", str(example_ini(tmp_path)), "-d", str(value)], line, capsys, monkeypatch)
    assert status == 0 and err == "", err
    from fstdecode.model.model import UNLIMITED

    assert load_model(distortion_limit=value).distortion_limit == UNLIMITED


def test_a_negative_lm_weight_is_run_with_one_warning(tmp_path, capsys, monkeypatch):
    # Questionable, decided: Moses runs a negative LM weight without a word, so fstdecode does too,
    # but says in one line what it does (the search prefers what the LM finds unlikely).
    ini = str(example_ini(tmp_path))
    status, out, err = run(["moses", "-f", ini, "-weight-overwrite", "KENLM0= -0.5"], b"das muss\n",
                           capsys, monkeypatch)
    assert status == 0 and out.count("\n") == 1
    assert err.count("\n") == 1 and "the LM weight (KENLM0) is -0.5, below 0" in err
    status, _, err = run(["moses", "-f", ini, "-weight-overwrite", "KENLM0= 0.5"], b"das muss\n", capsys, monkeypatch)
    assert status == 0 and err == ""


@pytest.mark.parametrize("overwrite, message", [
    ("Foo0= 1.0", "-weight-overwrite 'Foo0= 1.0': unknown weight name 'Foo0'"),
    ("KENLM0= 1 2", "-weight-overwrite 'KENLM0= 1.0 2.0': KENLM0 takes one number"),
])
def test_weight_overwrite_errors_name_the_moses_switch(tmp_path, capsys, monkeypatch, overwrite, message):
    # They were worded with decode's flag (--weight 'Foo0=1.0'), which fstdecode moses does not take.
    status, _, err = run(["moses", "-f", str(example_ini(tmp_path)), "-weight-overwrite", overwrite], b"das\n",
                         capsys, monkeypatch)
    assert status == 2 and err == f"fstdecode: error: {message}" + err.split(message, 1)[1]
    assert "--weight" not in err


def test_the_over_budget_reason_names_what_fstdecode_moses_takes():
    # "-s 0 -dl -1"'s warning named --max-states, which fstdecode moses does not take; it names the
    # stack size that bounds the search there, and the decode flag that raises the budget.
    from fstdecode.cli.moses_output import moses_reason
    from fstdecode.decoder import Decoder

    reason = Decoder(load_model(), "stack", max_states=5).decode("das muss unsere sorge").reason
    assert "(--max-states)" in reason  # decode's wording, for decode
    worded = moses_reason(reason)
    assert "(--max-states)" not in worded and "-s N with N > 0" in worded
    assert "fstdecode decode --method stack --max-states N" in worded
    assert moses_reason("no budget here") == "no budget here"


@pytest.mark.slow  # a 78-word line under no stack or distortion limit: about 4 s
def test_fstdecode_moses_over_budget_warning_names_its_own_switches(tmp_path, capsys, monkeypatch):
    line = " ".join((EXAMPLE_DATA / "input.txt").read_text(encoding="utf-8").split() * 6) + "\n"
    status, _, err = run(["moses", "-f", str(example_ini(tmp_path)), "-s", "0", "-dl", "-1"], line.encode(),
                         capsys, monkeypatch)
    assert status == 0 and "line 1: over budget" in err and "(--max-states)" not in err and "-s N" in err


def test_an_ini_search_setting_fstdecode_moses_lacks_names_no_command(tmp_path, capsys, monkeypatch):
    # The [stack-diversity] warning said "fstdecode decode ignores it ... fstdecode moses
    # honours it" under fstdecode moses, which honours it not.
    ini = str(example_ini(tmp_path, "\n[stack-diversity]\n5\n"))
    for command in ("moses", "decode"):
        status, _, err = run([command, "-f", ini], b"das\n", capsys, monkeypatch)
        assert status == 0 and err.endswith(
            "[stack-diversity] is a setting of Moses' search that fstdecode's stack search does not have; "
            "ignored\n"), err
    status, _, err = run(["moses", "-f", ini, "-stack-diversity", "4"], b"das\n", capsys, monkeypatch)
    assert "-stack-diversity is a setting of Moses' search that fstdecode's stack search does not have" in err


def test_decode_says_it_ignores_the_ini_pop_limit(tmp_path, capsys, monkeypatch):
    # fstdecode decode takes its search from its flags (--cube-pop-limit), not the ini's sections.
    ini = str(example_ini(tmp_path, "\n[cube-pruning-pop-limit]\n500\n"))
    status, _, err = run(["decode", "-f", ini], b"das\n", capsys, monkeypatch)
    assert status == 0 and "[cube-pruning-pop-limit] is a setting of Moses' own search; fstdecode decode ignores it" in err


def test_nbest_list_distinct_must_be_on_a_line_of_its_own(tmp_path, capsys, monkeypatch):
    # Moses reads each ini line as one value: "4 distinct" is the size 4, and the list is plain.
    monkeypatch.chdir(tmp_path)
    ini = str(example_ini(tmp_path, "\n[n-best-list]\nnbest\n4 distinct\n"))
    status, _, err = run(["moses", "-f", ini], b"das muss\n", capsys, monkeypatch)
    assert status == 0 and "[n-best-list] 'distinct' is ignored, as Moses ignores it" in err
    texts = [row.split(" ||| ")[1] for row in (tmp_path / "nbest").read_text(encoding="utf-8").splitlines()]
    assert len(texts) == 4 and len(set(texts)) < 4
    ini = str(example_ini(tmp_path, "\n[n-best-list]\nnbest\n4\ndistinct\n"))
    status, _, err = run(["moses", "-f", ini], b"das muss\n", capsys, monkeypatch)
    texts = [row.split(" ||| ")[1] for row in (tmp_path / "nbest").read_text(encoding="utf-8").splitlines()]
    assert status == 0 and err == "" and len(texts) == len(set(texts))
    # All on one line: one value for Moses ("wrong format", no list); an error naming the line here.
    ini = str(example_ini(tmp_path, "\n[n-best-list]\nnbest 4 distinct\n"))
    status, _, err = run(["moses", "-f", ini], b"das muss\n", capsys, monkeypatch)
    assert status == 2 and "each on a line of its own" in err and err.count("\n") == 1
