"""mert-moses.pl can tune with ``fstdecode-moses`` as its decoder.

Every decoder call of ``scripts/training/mert-moses.pl`` in moses-smt/mosesdecoder at commit
00b1d838412124f36b14be8eb47432dd7704ad64 (read through the search tool; the MERT, PRO and
batch-MIRA paths make the same two calls, docs/moses-reference/mert-moses.md), made here as the
script makes them (the same words, through a shell, from its working directory), on the shared
de-en model:

* ``get_featlist_from_moses``: ``$DECODER $FLAGS -config $ini  -inputtype 0 -show-weights >
  ./features.list``, parsed with the script's own patterns;
* ``run_decoder``: ``$DECODER $FLAGS  -config $ini -inputtype 0 -weight-overwrite '...'
  -n-best-list run1.best100.out 100  -input-file $dev > run1.out``, the weights L1-normalised
  and printed ``%.6f`` in Perl's hash order (shuffled here), with and without ``distinct``;
  ``-threads`` only through ``--decoder-flags``; the n-best list parsed as
  ``get_order_of_scores_from_nbestlist`` and ``sanity_check_order_of_lambdas`` parse it;
* the ini ``filter-model-given-input.pl`` writes (79f021e2: the phrase table filtered, gzipped
  and named by absolute path on a rewritten line that ends in a space), named relative to the
  working directory as mert names it;
* the tuned moses.ini ``create_config`` writes (``--decoder-flags`` as ``[threads]``/``[v]``
  sections, a blank line after ``[weight]``), decoded as the final model.

``-weight-file`` is added by mert only for sparse features, which fstdecode does not have: it
is refused by name (tests/unit/test_moses_command.py).
"""

from __future__ import annotations

import gzip
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shared import data_path

pytestmark = pytest.mark.slow  # about ten decoder processes

MERT_COMMIT = "00b1d838412124f36b14be8eb47432dd7704ad64"
FILTER_COMMIT = "79f021e29babd7257941c7e027ffd6b61901bee7"


def decoder() -> str:
    """The installed ``fstdecode-moses`` console script, as mert-moses.pl --decoder names it."""
    path = shutil.which("fstdecode-moses") or str(Path(sys.executable).parent / "fstdecode-moses")
    if not os.path.exists(path):
        pytest.fail("fstdecode-moses is not installed (pip install -e . installs it)")
    return path


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """One mert-moses.pl ``safesystem`` call: the command line through /bin/sh."""
    proc = subprocess.run(command, shell=True, cwd=cwd, capture_output=True, timeout=300,
                          env={**os.environ, "PYTHONUTF8": "1"})
    assert proc.returncode == 0, f"{command}\n{proc.stderr.decode()}"
    return proc


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> tuple[Path, Path, list[str]]:
    """The de-en model as a user's moses.ini has it (absolute paths), its dev input, and its lines."""
    folder = data_path("moses-early-distortion-de-en")
    root = tmp_path_factory.mktemp("model")
    text = (folder / "moses.ini").read_text(encoding="utf-8").replace("${TEST_PATH}", str(folder))
    text = text.replace("[n-best-list]\nnbest\n50\n", "")  # mert gives its own -n-best-list
    ini = root / "moses.ini"
    ini.write_text(text, encoding="utf-8")
    lines = (folder / "to-translate.txt").read_text(encoding="utf-8").splitlines()
    dev = root / "dev.de"
    dev.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return ini, dev, lines


def featlist(text: str) -> tuple[list[str], list[float], list[str]]:
    """``get_featlist_from_file``: names (one per value), values, untuneables; a bad value fails
    as mert fails ("Bad initial value")."""
    names, values, untuneables = [], [], []
    for line in text.split("\n"):
        dense = re.match(r"^(\S+)= (.+)$", line)
        if dense:
            for value in dense.group(2).split(" "):
                assert re.match(r"^[+-]?[0-9.\-e]+$", value), f"Bad initial value of {dense.group(1)}: {value}"
                names.append(dense.group(1))
                values.append(float(value))
            continue
        fixed = re.match(r"^(\S+) UNTUNEABLE$", line)
        if fixed:
            untuneables.append(fixed.group(1))
    return names, values, untuneables


def nbest_labels(first_line: str) -> list[str]:
    """``get_order_of_scores_from_nbestlist`` on the list's first line: one label per score."""
    sent, hypo, scores, total = first_line.split("|||")[:4]
    labels, label = [], None
    for token in scores.strip().split():
        if re.match(r".+_.+=", token):
            pytest.fail(f"sparse feature {token} in a dense-only model")
        elif re.match(r"^([a-z][0-9a-z]*)=", token, re.I):
            label = token[:-1]
        elif re.match(r"^-?[-0-9.\-e]+$", token):
            assert label is not None, "Found a score but no label before it!"
            labels.append(label)
        else:
            pytest.fail(f"Not a label, not a score '{token}'")
    return labels


def overwrite(names: list[str], values: list[float], seed: int) -> str:
    """The ``-weight-overwrite`` argument run_decoder builds: L1-normalised, ``%.6f``, features in a
    random (Perl hash) order, each feature's values in show-weights order."""
    norm = sum(abs(v) for v in values)
    by_name: dict[str, str] = {}
    for name, value in zip(names, values):
        by_name[name] = by_name.get(name, f"{name}=") + " %.6f" % (value / norm)
    order = list(by_name)
    random.Random(seed).shuffle(order)
    return "'" + " ".join(by_name[name] for name in order) + "'"


def entries(path: Path) -> list[list[str]]:
    return [line.split(" ||| ") for line in path.read_text(encoding="utf-8").splitlines()]


def test_mert_moses_tunes_with_fstdecode_moses(model, tmp_path):
    ini, dev, lines = model
    work = tmp_path / "mert-work"  # mert's working directory: every call runs there
    work.mkdir()
    flags = "-threads 2 -v 0"  # --decoder-flags: -threads reaches the decoder only this way
    dec = shlex.quote(decoder())

    # get_featlist_from_moses
    shell(f"{dec} {flags} -config {ini}  -inputtype 0 -show-weights > ./features.list", work)
    names, values, untuneables = featlist((work / "features.list").read_text(encoding="utf-8"))
    assert names == ["KENLM0", "Distortion0", "WordPenalty0"] + ["PhraseDictionaryMemory0"] * 5
    assert values == [0.5, 0.05, -1.0, 0.2, 0.2, 0.2, 0.2, 0.2] and untuneables == ["UnknownWordPenalty0"]

    # run_decoder, twice: features in two hash orders give the same output
    outputs = []
    for run, seed in ((1, 1), (2, 7)):
        weights = overwrite(names, values, seed)
        nbest = f"run{run}.best100.out"
        shell(f"{dec} {flags}  -config {ini} -inputtype 0 -weight-overwrite {weights}  -n-best-list {nbest} 100  "
              f"-input-file {dev} > run{run}.out", work)
        out = (work / f"run{run}.out").read_text(encoding="utf-8").split("\n")
        assert len(out) == len(lines) + 1 and out[-1] == ""
        listed = entries(work / nbest)
        assert [int(e[0]) for e in listed] == sorted(int(e[0]) for e in listed)
        assert {int(e[0]) for e in listed} == set(range(len(lines)))
        # sanity_check_order_of_lambdas: the labels are show-weights' names, in order
        assert nbest_labels((work / nbest).read_text(encoding="utf-8").splitlines()[0]) == names
        # the overwritten weights are the ones applied: total = w . features (+ -100 per unknown word)
        w = [value / sum(abs(v) for v in values) for value in values]
        for e in listed:
            feats = [float(t) for t in e[2].split() if not t.endswith("=")]
            rest = float(e[3]) - sum(a * b for a, b in zip(w, feats))
            assert rest == pytest.approx(-100 * round(rest / -100), abs=2e-3), e
        # the 1-best on stdout is the n-best's first entry
        first = {}
        for e in listed:
            first.setdefault(int(e[0]), e[1])
        assert [line.strip() for line in out[:-1]] == [first[i].strip() for i in range(len(lines))]
        outputs.append(((work / f"run{run}.out").read_bytes(), (work / nbest).read_bytes()))
    assert outputs[0] == outputs[1]

    # the same weights written in the ini give the same bytes (the overwrite is applied, not ignored)
    normalised = (work / "normalised.ini")
    text = ini.read_text(encoding="utf-8")
    ws = [value / sum(abs(v) for v in values) for value in values]
    text = re.sub(r"\[weight\].*", "[weight]\nKENLM0= %.6f\nDistortion0= %.6f\nWordPenalty0= %.6f\n"
                  "PhraseDictionaryMemory0= %s\n" % (ws[0], ws[1], ws[2], " ".join("%.6f" % v for v in ws[3:])),
                  text, flags=re.S)
    normalised.write_text(text, encoding="utf-8")
    shell(f"{dec} -config {normalised} -n-best-list same.out 100 -input-file {dev} > same.1best", work)
    assert (work / "same.out").read_bytes() == outputs[0][1]

    # distinct: each translation once per sentence
    shell(f"{dec} {flags}  -config {ini} -inputtype 0 -weight-overwrite {overwrite(names, values, 3)}  "
          f"-n-best-list run3.best100.out 100 distinct  -input-file {dev} > run3.out", work)
    listed = entries(work / "run3.best100.out")
    seen = [(e[0], e[1]) for e in listed]
    assert len(seen) == len(set(seen)) and len(listed) > len(lines)


def filter_model(ini: Path, dev: Path, target: Path) -> None:
    """What filter-model-given-input.pl (79f021e2) writes for this ini: the PhraseDictionaryMemory
    line's table filtered to the input's n-grams (up to 10 words), gzipped, named by absolute path on
    a line rewritten token by token, each followed by one space; every other line verbatim."""
    target.mkdir()
    words = [line.split() for line in dev.read_text(encoding="utf-8").splitlines()]
    grams = {" ".join(w[i:j]) for w in words for i in range(len(w)) for j in range(i + 1, min(len(w), i + 10) + 1)}
    out = []
    for line in ini.read_text(encoding="utf-8").split("\n"):
        if "PhraseDictionaryMemory " in line:
            tokens = line.split(" ")
            path = next(t.split("=", 1)[1] for t in tokens if t.startswith("path="))
            filtered = target / "phrase-table.0-0.1.1.gz"
            with gzip.open(path, "rt", encoding="utf-8") as src, gzip.open(filtered, "wt", encoding="utf-8") as dst:
                for entry in src:
                    if entry.split(" ||| ")[0].rstrip() in grams:
                        dst.write(entry)
            line = "".join((f"path={filtered}" if t.startswith("path=") else t) + " " for t in tokens)
        out.append(line)
    (target / "moses.ini").write_text("\n".join(out), encoding="utf-8")
    (target / "info").write_text(f"{ini}\n{dev}\n", encoding="utf-8")


def test_the_filtered_ini_and_the_tuned_ini_decode_as_the_original(model, tmp_path):
    ini, dev, lines = model
    work = tmp_path / "mert-work"
    work.mkdir()
    dec = shlex.quote(decoder())
    filter_model(ini, dev, work / "filtered")
    line = next(x for x in (work / "filtered" / "moses.ini").read_text(encoding="utf-8").split("\n") if "Phrase" in x)
    assert line.endswith(" ") and "path=" + str(work / "filtered") in line
    # mert names the filtered ini relative to its working directory
    shell(f"{dec}  -config filtered/moses.ini -inputtype 0 -n-best-list f.best 20  -input-file {dev} > f.out", work)
    shell(f"{dec}  -config {ini} -inputtype 0 -n-best-list o.best 20  -input-file {dev} > o.out", work)
    assert (work / "f.out").read_bytes() == (work / "o.out").read_bytes()
    assert (work / "f.best").read_bytes() == (work / "o.best").read_bytes()

    # create_config: the original ini, --decoder-flags as sections under the names typed, then
    # [weight] with an empty line first, the tuned values as mert printed them, the untuneable's line
    text = ini.read_text(encoding="utf-8")
    text = text[: text.index("[weight]")]
    tuned = (work / "moses.ini")
    tuned.write_text(
        "# MERT optimized configuration\n# decoder fstdecode-moses\n" + text
        + "\n[threads]\n2\n\n[v]\n0\n\n[weight]\n\nKENLM0= 0.0876543\nDistortion0= 0.0123\nWordPenalty0= -0.2\n"
        "PhraseDictionaryMemory0= 0.1 0.1 0.15 0.1 0.1\nUnknownWordPenalty0= 1\n",
        encoding="utf-8",
    )
    proc = shell(f"{dec} -f moses.ini < {dev}", work)
    out = proc.stdout.decode("utf-8").split("\n")
    assert len(out) == len(lines) + 1 and all(x.strip() for x in out[:-1])
    assert b"warning" not in proc.stderr  # [threads] and [v] are honoured, nothing ignored
