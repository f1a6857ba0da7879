"""``fstdecode tune`` end to end, on the built-in example and (where ../shared/data is there) the
Hansards set-up of the tuning benchmark.

What is checked against what:
- the tuned moses.ini loads in ``fstdecode moses`` (its ``-show-weights`` lists the tuned
  weights) and ``fstdecode decode``, and decoding the dev set with it gives the BLEU the run
  reports, computed here by sacrebleu's public API on that output;
- one seed gives one file; a run interrupted after its first iteration and resumed writes the
  file an uninterrupted run writes;
- each bad input is one error line (exit 2) before any decoding: no iteration is written;
- a dev line that fails to decode is left out of the pool and of the metric (the metric then is
  sacrebleu's on the other lines).
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

sacrebleu = pytest.importorskip("sacrebleu")

from fstdecode.cli.main import main  # noqa: E402
from fstdecode.tune import loop  # noqa: E402

from shared import SHARED_DATA, run_cli  # noqa: E402

EXAMPLE = Path(str(importlib.resources.files("fstdecode") / "data"))
#: References of the example's two lines (the first reorders what the model puts first).
REFS = ["this must be our concern also", "we also must take these criticisms seriously"]


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """The built-in example copied to tmp_path, with a dev set (its input) and references."""
    for name in ("moses.ini", "lm.arpa", "phrase-table", "input.txt"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    (tmp_path / "dev.ref").write_text("\n".join(REFS) + "\n", encoding="utf-8")
    return tmp_path


def tune(folder: Path, *extra: str, out: str = "tuned.ini", ok: bool = True):
    proc = run_cli(["tune", "-f", "moses.ini", "--input", "input.txt", "--reference", "dev.ref", "-o", out,
                    *extra], cwd=folder)
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def bleu_of(output: str, refs: list[str]) -> float:
    hyps = [line.strip() for line in output.splitlines()]
    return sacrebleu.corpus_bleu(hyps, [refs], tokenize="none").score


@pytest.mark.parametrize("optimizer", ["mert", "mira"])
def test_the_tuned_ini_loads_and_decodes_to_the_reported_bleu(example, optimizer):
    plotting = optimizer == "mert" and importlib.util.find_spec("matplotlib") is not None  # (not in the test extra)
    proc = tune(example, "--optimizer", optimizer, *(["--plot", "plot.png"] if plotting else []))
    reported = float(re.search(r"wrote \S+: BLEU = ([\d.]+)", proc.stderr).group(1))
    log = json.loads((example / "tuned.ini.work" / loop.LOG_FILE).read_text())
    assert log["iterations"] and all(it["k"] == k for k, it in enumerate(log["iterations"], 1))
    shown = run_cli(["moses", "-f", "tuned.ini", "-show-weights"], cwd=example)
    assert shown.returncode == 0, shown.stderr
    decodes = [(it["decoded"], it["decoded_with"]) for it in log["iterations"]]
    if log["last"] is not None:
        decodes.append((log["last"]["decoded"], log["last"]["weights"]))
    best = max(reversed(decodes), key=lambda d: d[0])
    tuned = [float(v) for line in shown.stdout.splitlines() if "UNTUNEABLE" not in line for v in line.split()[1:]]
    assert tuned == pytest.approx(best[1], abs=1e-6)
    out = run_cli(["moses", "-f", "tuned.ini"], (example / "input.txt").read_text(), cwd=example)
    assert out.returncode == 0, out.stderr
    assert bleu_of(out.stdout, REFS) == pytest.approx(reported, abs=0.006)  # printed with 2 decimals
    assert bleu_of(out.stdout, REFS) == pytest.approx(best[0], abs=1e-9)
    decoded = run_cli(["decode", "-f", "tuned.ini"], (example / "input.txt").read_text(), cwd=example)
    assert decoded.returncode == 0, decoded.stderr
    if plotting:
        assert (example / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_is_one_line_before_decoding(example, monkeypatch, capsys):
    """--plot with no matplotlib: one error line saying what to install, before any decoding."""
    import builtins

    real = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.chdir(example)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    code = main(["tune", "-f", "moses.ini", "--input", "input.txt", "--reference", "dev.ref", "-o", "p.ini",
                 "--plot", "p.png"])
    err = capsys.readouterr().err
    assert code == 2 and err == "fstdecode: error: --plot needs matplotlib: pip install 'matplotlib>=3.5'\n"
    assert not list(example.glob("**/iter*.nbest"))


def test_one_seed_gives_one_file_and_resume_ends_where_a_whole_run_ends(example, monkeypatch):
    tune(example, "--seed", "5", "--max-iterations", "3", out="a.ini")
    tune(example, "--seed", "5", "--max-iterations", "3", out="b.ini")
    text = (example / "a.ini").read_text()
    assert text == (example / "b.ini").read_text().replace("b.ini", "a.ini")
    # interrupted after iteration 1 (in this process, so that the interruption can be planted)
    steps = []
    real = loop.Tuner.step

    def interrupted(self):
        if len(self.state.iterations) == 1:
            raise KeyboardInterrupt
        steps.append(1)
        return real(self)

    monkeypatch.chdir(example)
    monkeypatch.setattr(loop.Tuner, "step", interrupted)
    args = ["tune", "-f", "moses.ini", "--input", "input.txt", "--reference", "dev.ref", "--seed", "5",
            "--max-iterations", "3", "-o", "c.ini", "--working-dir", "a.ini.work.copy"]
    assert main(args) == 130
    assert not (example / "c.ini").exists() and steps == [1]
    monkeypatch.setattr(loop.Tuner, "step", real)
    assert main([*args, "--resume"]) == 0
    assert (example / "c.ini").read_text() == text.replace("a.ini", "c.ini")


def _one_line_error(proc, fragment: str, folder: Path) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fstdecode: error: ") and fragment in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(folder.glob("**/iter*.nbest")), "decoded before refusing"


def test_bad_inputs_are_one_line_errors_before_any_decoding(example):
    (example / "short.ref").write_text(REFS[0] + "\n", encoding="utf-8")
    _one_line_error(tune(example, "--reference", "short.ref", ok=False), "short.ref: 1 reference line(s) for 2", example)
    (example / "bad.ref").write_bytes(b"fine\n\xff broken\n")
    _one_line_error(tune(example, "--reference", "bad.ref", ok=False),
                    "bad.ref:2: invalid UTF-8 (byte 0xff at column 1)", example)  # (io.files' wording)
    (example / "empty.src").write_text("", encoding="utf-8")
    proc = run_cli(["tune", "-f", "moses.ini", "--input", "empty.src", "--reference", "dev.ref", "-o", "x.ini"],
                   cwd=example)
    _one_line_error(proc, "empty.src: the dev set is empty", example)
    frozen = (example / "moses.ini").read_text()
    for kind in ("KENLM", "Distortion", "WordPenalty", "PhraseDictionaryMemory"):
        frozen = re.sub(rf"^({kind}\b.*)$", r"\1 tuneable=false", frozen, flags=re.M)
    (example / "frozen.ini").write_text(frozen, encoding="utf-8")
    proc = run_cli(["tune", "-f", "frozen.ini", "--input", "input.txt", "--reference", "dev.ref", "-o", "x.ini"],
                   cwd=example)
    _one_line_error(proc, "no tuneable weight", example)
    # a flag of the other optimizer or metric is refused, not ignored
    for extra, fragment in ((["--optimizer", "mira", "--random-restarts", "3"], "--random-restarts applies to --optimizer mert"),
                            (["--mira-c", "0.1"], "--mira-c applies to --optimizer mira only, not --optimizer mert"),
                            (["--metric", "chrf", "--tokenize", "13a"], "--tokenize applies to --metric bleu")):
        _one_line_error(tune(example, *extra, ok=False), fragment, example)
    # a working folder that holds another run (other settings)
    tune(example, "--max-iterations", "1", out="one.ini")
    proc = tune(example, "--max-iterations", "1", "--seed", "9", "--working-dir", "one.ini.work", out="two.ini",
                ok=False)
    assert proc.returncode == 2 and "holds another run" in proc.stderr and "Traceback" not in proc.stderr
    proc = tune(example, "--max-iterations", "1", out="one.ini", ok=False)
    assert proc.returncode == 2 and "add --resume" in proc.stderr


def test_a_line_that_fails_is_left_out(example, monkeypatch):
    """Line 2 made to fail: the pool holds none of its entries and the metric is sacrebleu's on
    line 1 alone."""
    from fstdecode.cli import tune as tune_cli

    real = tune_cli.Tuner.__init__

    def failing(self, *args, **kwargs):
        real(self, *args, **kwargs)
        decode = self.decode

        def one_fails(decoder):
            results = decode(decoder)
            return [dataclasses.replace(r, error="planted failure", nbest_text=None) if r.id == 1 else r
                    for r in results]

        self.decode = one_fails

    monkeypatch.chdir(example)
    monkeypatch.setattr(tune_cli.Tuner, "__init__", failing)
    code = main(["tune", "-f", "moses.ini", "--input", "input.txt", "--reference", "dev.ref", "-o", "f.ini",
                 "--max-iterations", "2"])
    assert code == 0
    log = json.loads((example / "f.ini.work" / loop.LOG_FILE).read_text())["iterations"]
    assert all(it["failed"] == 1 for it in log)
    nbest = (example / "f.ini.work" / "iter01.nbest").read_text().splitlines()
    assert nbest and all(line.startswith("0 ||| ") for line in nbest)
    first = nbest[0].split(" ||| ")[1].strip()
    assert log[0]["decoded"] == pytest.approx(sacrebleu.corpus_bleu([first], [[REFS[0]]], tokenize="none").score)


@pytest.mark.slow
def test_hansards_tunes_above_its_start(tmp_path):
    """The tuning benchmark's set-up: MERT raises the dev BLEU well above the start weights'."""
    tool = SHARED_DATA.parent / "tools" / "moses-hansards"
    if not tool.exists():
        pytest.skip("../shared/tools/moses-hansards is absent")
    import subprocess

    subprocess.run([str(tool), str(tmp_path), "3"], check=True, capture_output=True)
    proc = run_cli(["tune", "-f", "moses.ini", "--input", "dev.src", "--reference", "dev.ref", "-o", "t.ini",
                    "--lowercase"], cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    log = json.loads((tmp_path / "t.ini.work" / loop.LOG_FILE).read_text())["iterations"]
    assert max(it["decoded"] for it in log) > log[0]["decoded"] + 5


def test_an_old_format_ini_is_refused_before_decoding(example):
    old = (f"[ttable-file]\n0 0 0 2 {example}/phrase-table\n[ttable-limit]\n0\n[lmodel-file]\n8 0 2 {example}/lm.arpa\n"
           "[distortion-limit]\n4\n[weight-d]\n0.3\n[weight-l]\n1.0\n[weight-t]\n0.5\n0.5\n[weight-w]\n0\n"
           "[weight-u]\n1\n")  # the built-in example in Moses' old format
    (example / "old.ini").write_text(old, encoding="utf-8")
    proc = run_cli(["tune", "-f", "old.ini", "--input", "input.txt", "--reference", "dev.ref", "-o", "x.ini"],
                   cwd=example)
    _one_line_error(proc, "Moses' old format", example)


def test_untuneable_weights_stay_fixed_and_runners_agree(example):
    """Distortion0 tuneable=false keeps its 0.3 (and is in no n-best field); the same run on two
    worker processes writes the same file as in this process."""
    ini = (example / "moses.ini").read_text()
    (example / "fixed.ini").write_text(ini.replace("\nDistortion\n", "\nDistortion tuneable=false\n"), encoding="utf-8")
    args = ["tune", "-f", "fixed.ini", "--input", "input.txt", "--reference", "dev.ref", "--max-iterations", "3"]
    for out, extra in (("serial.ini", []), ("workers.ini", ["--workers", "2"])):
        proc = run_cli([*args, "-o", out, *extra], cwd=example)
        assert proc.returncode == 0, proc.stderr
    serial = (example / "serial.ini").read_text()
    assert serial.replace("serial.ini", "workers.ini") == (example / "workers.ini").read_text()
    assert "\nDistortion0= 0.3\n" in serial
    nbest = (example / "serial.ini.work" / "iter01.nbest").read_text()
    assert "Distortion0=" not in nbest and "KENLM0=" in nbest


def test_chrf_with_mira(example):
    proc = tune(example, "--metric", "chrf", "--optimizer", "mira", "--max-iterations", "2")
    assert re.search(r"wrote \S+: chrF2 = [\d.]+ on the dev set", proc.stderr), proc.stderr
    assert "nc:6|nw:0" in proc.stderr  # sacrebleu's chrF signature


def test_a_changed_model_file_makes_another_run(example):
    """The working folder records each model file's size and mtime: resuming after the phrase
    table changed is refused (its n-best lists were scored by another model)."""
    import os

    tune(example, "--max-iterations", "1")
    table = example / "phrase-table"
    st = table.stat()
    os.utime(table, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    proc = tune(example, "--max-iterations", "1", "--resume", ok=False)
    assert proc.returncode == 2 and "holds another run" in proc.stderr
