"""scripts/make_big_model.py: a small generated model is reproducible, valid and decodable.

Checks: the same seed gives the same bytes (gzip too) and another seed other bytes; fstdecode loads
the moses.ini without a warning and ``decode --method stack`` translates every input line; the
reordering table holds exactly the phrase table's pairs, in the same order, and the tables are
sorted as Moses writes them; the ARPA file reads in KenLM with the same sentence scores as
fstdecode's reader, and every sampled context's distribution sums to 1 over the vocabulary.
"""

from __future__ import annotations

import gzip
import logging
import math
import random
import warnings
from pathlib import Path

import pytest

from fstdecode.io.moses_ini import load_moses_ini
from scripts import make_big_model
from shared import run_cli

SMALL = ["--pairs", "6000", "--lm-words", "20000", "--sentences", "6", "--lm-tool", "builtin"]


def _make(folder: Path, *extra: str) -> Path:
    assert make_big_model.main(["--out", str(folder), *SMALL, *extra]) == 0
    return folder


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return _make(tmp_path_factory.mktemp("big") / "model")


def _files(folder: Path) -> dict[str, bytes]:
    """Each file's bytes; the moses.ini's absolute paths (its own folder) read as DIR."""
    files = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
    files["moses.ini"] = files["moses.ini"].replace(bytes(folder.resolve()) + b"/", b"DIR/")
    return files


@pytest.mark.slow  # over half a second; the fast set keeps its siblings
def test_same_seed_same_bytes_other_seed_other_bytes(model, tmp_path):
    again = _files(_make(tmp_path / "again"))
    assert again == _files(model)
    other = _files(_make(tmp_path / "other", "--seed", "2"))
    assert other.keys() == again.keys()
    for name in ("phrase-table", "reordering-table.wbe-msd-bidirectional-fe", "lm.arpa", "input.txt"):
        assert other[name] != again[name], name
    gz1, gz2 = _files(_make(tmp_path / "gz1", "--gzip")), _files(_make(tmp_path / "gz2", "--gzip"))
    assert gz1 == gz2
    assert gzip.decompress(gz1["phrase-table.gz"]) == again["phrase-table"]
    assert gzip.decompress(gz1["reordering-table.wbe-msd-bidirectional-fe.gz"]) == again[
        "reordering-table.wbe-msd-bidirectional-fe"]


@pytest.mark.slow
def test_refuses_a_non_empty_folder_without_force(model):
    assert make_big_model.main(["--out", str(model), *SMALL]) == 2


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_the_moses_ini_names_absolute_paths_so_it_runs_from_any_folder(model, tmp_path, monkeypatch):
    # Moses (and fstdecode moses) resolve a relative path= from the working directory: a benchmark
    # run from elsewhere would not find the tables (issue 38).
    paths = [f[5:] for f in (model / "moses.ini").read_text(encoding="utf-8").split() if f.startswith("path=")]
    assert len(paths) == 3 and all(Path(p).is_absolute() and Path(p).is_file() for p in paths), paths
    monkeypatch.chdir(tmp_path)
    assert sorted(f.path for f in load_moses_ini(model / "moses.ini", "cwd").model_files()) == sorted(paths)


def test_tables_hold_the_same_pairs_in_the_same_order(model):
    pt = (model / "phrase-table").read_text(encoding="utf-8").splitlines()
    rt = (model / "reordering-table.wbe-msd-bidirectional-fe").read_text(encoding="utf-8").splitlines()
    assert len(pt) == len(rt) == 6000
    keys = []
    for a, b in zip(pt, rt):
        pf, rf = a.split(" ||| "), b.split(" ||| ")
        assert len(pf) == 4 and len(rf) == 3
        assert pf[:2] == rf[:2]
        scores, probs = [float(x) for x in pf[2].split()], [float(x) for x in rf[2].split()]
        assert len(scores) == 4 and all(0.0 < s <= 1.0 for s in scores)
        assert len(probs) == 6 and all(p > 0 for p in probs)
        assert abs(sum(probs[:3]) - 1) < 1e-5 and abs(sum(probs[3:]) - 1) < 1e-5
        keys.append((pf[0] + " |||", pf[1] + " |||"))
    assert len(set(keys)) == len(keys)
    assert [k[0] for k in keys] == sorted(k[0] for k in keys)  # LC_ALL=C sort, by source
    assert keys == sorted(keys)


def test_fstdecode_loads_and_decodes_every_line(model, caplog):
    import fstdecode

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with caplog.at_level(logging.WARNING, logger="fstdecode"):
            loaded = fstdecode.load_model(model / "moses.ini")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert loaded is not None
    lines = (model / "input.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6 and all(15 <= len(line.split()) <= 35 for line in lines)
    proc = run_cli(["decode", "-f", str(model / "moses.ini"), "--method", "stack"], "".join(l + "\n" for l in lines))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert len(out) == len(lines) and all(line.strip() for line in out)


def _arpa_vocabulary(path: Path) -> list[str]:
    words, inside = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line == "\\1-grams:":
            inside = True
        elif inside and line.startswith("\\"):
            break
        elif inside and line:
            words.append(line.split("\t")[1])
    return words


def _target_sentences(model: Path, count: int) -> list[list[str]]:
    """Target sides of the phrase table glued into sentences, and a few with unknown words."""
    rng = random.Random(5)
    targets = [line.split(" ||| ")[1].split() for line in (model / "phrase-table").read_text(encoding="utf-8").splitlines()]
    out = []
    for _ in range(count):
        words: list[str] = []
        while len(words) < 20:
            words += rng.choice(targets)
        out.append(words)
    out.append(["zzz", *out[0][:5], "qqq"])
    return out


@pytest.mark.slow  # over half a second (measured): the full suite keeps it
def test_arpa_reads_in_kenlm_with_fstdecode_scores(model):
    kenlm = pytest.importorskip("kenlm", reason="the kenlm package is absent (pip install '.[kenlm]')")
    from fstdecode.io.arpa import LN10, ArpaLM

    ours = ArpaLM.from_file(model / "lm.arpa")
    assert ours.order == 5
    theirs = kenlm.Model(str(model / "lm.arpa"))
    assert theirs.order == 5
    for words in _target_sentences(model, 30):
        per_word = [p for p, _, _ in theirs.full_scores(" ".join(words), bos=True, eos=True)]
        assert math.isclose(math.fsum(per_word), ours.score_sentence(words) / LN10, abs_tol=1e-5)
        context = ["<s>"]
        for word, p in zip([*words, "</s>"], per_word):
            assert math.isclose(p, ours.logprob(context, word) / LN10, abs_tol=1e-5)
            context.append(word)


@pytest.mark.slow
def test_every_sampled_context_sums_to_one(model):
    from fstdecode.io.arpa import ArpaLM

    lm = ArpaLM.from_file(model / "lm.arpa")
    vocabulary = [w for w in _arpa_vocabulary(model / "lm.arpa") if w != "<s>"]
    rng = random.Random(3)
    ngrams = [line.split("\t")[1].split() for line in (model / "lm.arpa").read_text(encoding="utf-8").splitlines()
              if line.count("\t") >= 1 and not line.startswith("\\")]
    contexts = [[], ["<s>"], ["zzz"], ["<s>", "zzz"]]
    for n in range(1, 5):
        of_n = [g for g in ngrams if len(g) == n and g[-1] != "</s>"]
        contexts += rng.sample(of_n, 6)
    contexts += [g[:-1] for g in rng.sample([g for g in ngrams if len(g) == 5], 4)]
    for context in contexts:
        total = math.fsum(math.exp(lm.logprob(context, w)) for w in vocabulary)
        assert total <= 1 + 1e-6, (context, total)
        assert total >= 1 - 1e-5, (context, total)
