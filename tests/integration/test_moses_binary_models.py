"""Moses' binary tables in a whole model, decoded as their text twins decode.

The readers are held to the text twins entry for entry in tests/unit/test_moses_binary_table.py,
test_compact_table.py and test_probing_table.py; here the moses.ini lines that name them
(``PhraseDictionaryBinary``, ``PhraseDictionaryCompact``, a LexicalReordering whose ``path.binlexr.*``
or ``path.minlexr`` is beside its text table) are loaded as Moses loads them, and give the same
translations and scores as the text tables, in ``fstdecode moses`` and after ``fstdecode binarize``
(which converts a binary table and names a compact one as it is). Data: ../shared/data/moses-regression.
"""

from __future__ import annotations

import shutil

import pytest

from shared import SHARED_DATA, run_cli

REGRESSION = SHARED_DATA / "moses-regression"
TNGF = REGRESSION / "tests" / "phrase.TargetNGramFeature"
pytestmark = pytest.mark.skipif(not TNGF.is_dir(), reason="../shared/data/moses-regression is absent")

#: The phrase.TargetNGramFeature model without its sparse features (its dense part only).
_INI = """[feature]
UnknownWordPenalty
WordPenalty
{table} name=TranslationModel0 num-features=12 path={pt} input-factor=0 output-factor=0 table-limit=20
LexicalReordering name=LexicalReordering0 num-features=6 type=wbe-msd-bidirectional-fe-allff input-factor=0 output-factor=0 path={rt}
Distortion
KENLM lazyken=0 name=LM0 factor=0 path={lm} order=5
[weight]
LexicalReordering0= 0.0567 0.0100 0.0440 0.0713 -0.0022 0.0698
Distortion0= 0.1047
LM0= 0.0883
WordPenalty0= -0.0391
TranslationModel0= 0.0361 0.0490 0.0021 0.0549 0.0494 -0.0281 -0.1070 -0.0014 0.0355 0.0068 0.1110 0.0325
[distortion-limit]
6
"""


def _ini(tmp_path, name: str, table: str, pt, rt) -> str:
    ini = tmp_path / f"{name}.ini"
    ini.write_text(_INI.format(table=table, pt=pt, rt=rt, lm=TNGF / "toy.binlm.41"), encoding="utf-8")
    return str(ini)


def _text_twins(tmp_path):
    """The text twins alone in a folder (beside the originals Moses would read the binary ones)."""
    folder = tmp_path / "text"
    folder.mkdir()
    for name in ("phrase-table.0-0.1.1", "reordering-table.81.wbe-msd-bidirectional-fe"):
        shutil.copy(TNGF / name, folder / name)
    return folder / "phrase-table.0-0.1.1", folder / "reordering-table.81.wbe-msd-bidirectional-fe"


def _decode(tmp_path, ini: str, lines: int = 4) -> list[str]:
    text = "".join((TNGF / "to-translate.txt").read_text(encoding="utf-8").splitlines(keepends=True)[:lines])
    proc = run_cli(["moses", "-f", ini, "-output-hypo-score", "-v", "0"], text, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert len(out) == lines
    return out


def test_binary_phrase_and_reordering_tables_decode_as_their_text_twins(tmp_path):
    pt, rt = _text_twins(tmp_path)
    text = _decode(tmp_path, _ini(tmp_path, "text", "PhraseDictionaryMemory", pt, rt))
    # PhraseDictionaryBinary's path= is the prefix; the reordering table's path.binlexr.idx is read
    # before the text table beside it, as Moses' LoadAvailable does.
    binary = _decode(tmp_path, _ini(tmp_path, "binary", "PhraseDictionaryBinary", TNGF / "phrase-table.0-0.1.1",
                                    TNGF / "reordering-table.81.wbe-msd-bidirectional-fe"))
    for a, b in zip(text, binary):
        (sa, wa), (sb, wb) = a.split(" ", 1), b.split(" ", 1)
        assert wa == wb
        assert float(sa) == pytest.approx(float(sb), abs=1e-3)  # float32 scores in the binary files


def test_binarize_converts_a_binary_model(tmp_path):
    ini = _ini(tmp_path, "binary", "PhraseDictionaryBinary", TNGF / "phrase-table.0-0.1.1",
               TNGF / "reordering-table.81.wbe-msd-bidirectional-fe")
    proc = run_cli(["binarize", "-f", ini, "-o", str(tmp_path / "bin")], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "bin" / "phrase-table.bin").is_file() and (tmp_path / "bin" / "reordering-table.bin").is_file()
    assert _decode(tmp_path, str(tmp_path / "bin" / "moses.ini")) == _decode(tmp_path, ini)


def test_a_compact_phrase_table_is_named_without_its_extension_as_in_moses(tmp_path):
    compact = REGRESSION / "models" / "basic-surface-compact" / "phrase-table"
    ini = tmp_path / "compact.ini"
    ini.write_text(_INI.replace("num-features=12", "num-features=5").format(
        table="PhraseDictionaryCompact", pt=compact, rt=TNGF / "reordering-table.81.wbe-msd-bidirectional-fe",
        lm=TNGF / "toy.binlm.41").replace("TranslationModel0= 0.0361 0.0490 0.0021 0.0549 0.0494 -0.0281 -0.1070 -0.0014 "
                                          "0.0355 0.0068 0.1110 0.0325", "TranslationModel0= 0.2 0.2 0.2 0.2 0.2"),
                   encoding="utf-8")
    decoded = run_cli(["moses", "-f", str(ini), "-v", "0"], "das ist ein haus\n", cwd=tmp_path)
    assert decoded.returncode == 0, decoded.stderr
    assert decoded.stdout.split()[:1] == ["the"]  # das ||| the, from phrase-table.minphr
    # binarize cannot list a compact table's sources (it keeps hashes): it names it as it is
    proc = run_cli(["binarize", "-f", str(ini), "-o", str(tmp_path / "bin")], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"path={compact} " in (tmp_path / "bin" / "moses.ini").read_text(encoding="utf-8")
    assert not (tmp_path / "bin" / "phrase-table.bin").exists()
    again = run_cli(["moses", "-f", str(tmp_path / "bin" / "moses.ini"), "-v", "0"], "das ist ein haus\n", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout == decoded.stdout


def test_a_damaged_binary_table_is_one_error_line(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    for f in TNGF.glob("phrase-table.0-0.1.1.binphr.*"):
        data = f.read_bytes()
        (folder / f.name).write_bytes(data[: len(data) // 2] if f.name.endswith(".idx") else data)
    pt, rt = _text_twins(tmp_path)
    ini = _ini(tmp_path, "bad", "PhraseDictionaryBinary", folder / "phrase-table.0-0.1.1", rt)
    proc = run_cli(["moses", "-f", ini, "-v", "0"], "Illhaeusern\n", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "phrase-table.0-0.1.1.binphr" in proc.stderr
