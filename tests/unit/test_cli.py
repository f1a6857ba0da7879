"""End-to-end tests of the ``fstdecode`` command line (``python -m fstdecode``).

Expected values are never copied from fstdecode's output. They come from
the paper (the two example translations), from structural invariants
(one output line per input line, derivations that tile the source, ...),
or from the small independent reference model below: a few lines of
parsing of the example's moses.ini, phrase table and bigram ARPA file, an
independent scorer (Moses' features: LM with KenLM back-off, ln TM
probabilities, distortion, word/phrase counts, unknown-word penalty) and a
brute-force enumeration of every derivation of a short sentence.
"""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from shared import EXAMPLE_DATA as DATA
from shared import example_ini_text
from shared import run_cli as run_fstdecode

LN10 = math.log(10.0)

SLIDES_SRC = "das muss unsere sorge gleichermaßen sein"
SLIDES_TGT = "this must also be our concern"  # Chang & Collins' slides
FIG1_SRC = "wir müssen auch diese kritik ernst nehmen"
FIG1_TGT = "we must also take these criticisms seriously"  # Figure 1 of the paper

#: The keys of a proven-optimal line (the certificate: upper_bound and gap).
JSON_KEYS = {"id", "source", "translation", "score", "features", "derivation", "optimal", "upper_bound", "gap", "stats"}
FEATURE_KEYS = {"lm", "tm", "distortion", "word", "phrase", "unknown"}


# --------------------------------------------------------------------------------------
# Running the CLI


def run_cli(args: list[str], stdin: str = "", *, ok: bool = True) -> subprocess.CompletedProcess:
    """Run the CLI; ``decode`` uses the exact ``dp`` unless a method is named, since the checks
    here hold results to the brute-force reference (the default method is the stack decoder)."""
    if args[:1] == ["decode"] and "--method" not in args:
        args = [*args, "--method", "dp"]
    proc = run_fstdecode(args, stdin)
    if ok:
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def out_lines(proc: subprocess.CompletedProcess) -> list[str]:
    """stdout split into lines; every line (the last one too) must end in a newline."""
    text = proc.stdout
    assert text == "" or text.endswith("\n"), repr(text[-50:])
    return text.split("\n")[:-1] if text else []


def decode_json(lines: list[str], *extra: str) -> list[dict]:
    proc = run_cli(["decode", "--format", "json", *extra], "".join(l + "\n" for l in lines))
    objs = [json.loads(l) for l in out_lines(proc)]
    assert len(objs) == len(lines)
    return objs


# --------------------------------------------------------------------------------------
# An independent reference model of the built-in example


def ini_weights(path: Path = DATA / "moses.ini") -> dict:
    """The [weight] section of a moses.ini, mapped to fstdecode's feature names."""
    raw: dict[str, list[float]] = {}
    section = None
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            section = line.strip("[]")
        elif section == "weight":
            name, _, values = line.partition("=")
            raw[name.strip()] = [float(v) for v in values.split()]
    names = {
        "KENLM0": "lm",
        "Distortion0": "distortion",
        "WordPenalty0": "word",
        "PhrasePenalty0": "phrase",
        "UnknownWordPenalty0": "unknown",
    }
    w = {"lm": 0.0, "distortion": 0.0, "word": 0.0, "phrase": 0.0, "unknown": 0.0, "tm": []}
    for name, values in raw.items():
        if name == "PhraseDictionaryMemory0":
            w["tm"] = values
        else:
            w[names[name]] = values[0]
    return w


def ini_distortion_limit(path: Path = DATA / "moses.ini") -> int:
    lines = [l.strip() for l in path.read_text(encoding="utf-8").splitlines()]
    return int(lines[lines.index("[distortion-limit]") + 1])


def read_phrase_table(path: Path = DATA / "phrase-table") -> dict[str, list[tuple[str, list[float]]]]:
    table: dict[str, list[tuple[str, list[float]]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            src, tgt, scores = (f.strip() for f in line.split("|||")[:3])
            table.setdefault(src, []).append((tgt, [float(s) for s in scores.split()]))
    return table


def read_bigram_arpa(path: Path = DATA / "lm.arpa"):
    uni: dict[str, tuple[float, float]] = {}
    bi: dict[tuple[str, str], float] = {}
    section = None
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("\\"):
            section = line
            continue
        f = line.split()
        if section == "\\1-grams:":
            uni[f[1]] = (float(f[0]), float(f[2]) if len(f) > 2 else 0.0)
        elif section == "\\2-grams:":
            bi[(f[1], f[2])] = float(f[0])
    return uni, bi


class Reference:
    """The example model, re-implemented from the file formats and the paper's definitions."""

    def __init__(self, weights: dict | None = None, d: int | None = None):
        self.w = weights or ini_weights()
        self.d = ini_distortion_limit() if d is None else d
        self.table = read_phrase_table()
        self.uni, self.bi = read_bigram_arpa()

    # ln p(<s> e </s>), bigram with back-off; OOV words are <unk> (KenLM).
    def lm(self, words: list[str]) -> float:
        seq = ["<s>"] + [w if w in self.uni else "<unk>" for w in words] + ["</s>"]
        total = 0.0
        for v, w in zip(seq, seq[1:]):
            if (v, w) in self.bi:
                total += self.bi[(v, w)]
            else:
                total += self.uni[v][1] + self.uni[w][0]
        return total * LN10

    def is_unknown(self, word: str) -> bool:
        return word not in self.table

    def features(self, words: list[str], derivation: list) -> dict:
        """Features of a JSON-style derivation [[start, end, target], ...] in target order."""
        n = len(words)
        tm = [0.0] * len(self.w["tm"])
        unknown = 0
        dist = 0
        prev_end = -1
        target: list[str] = []
        for s, e, tgt in derivation:
            src = " ".join(words[s : e + 1])
            if s == e and self.is_unknown(src):
                assert tgt == src  # copied through
                unknown += 1
            else:
                (scores,) = [sc for t, sc in self.table[src] if t == tgt]
                tm = [a + math.log(p) for a, p in zip(tm, scores)]
            dist += abs(prev_end + 1 - s)
            prev_end = e
            target += tgt.split()
        dist += abs(prev_end + 1 - n)
        return {
            # An empty line's derivation is Moses' initial hypothesis, which no feature scores.
            "lm": self.lm(target) if derivation else 0.0,
            "tm": tm,
            "distortion": -float(dist),
            "word": -float(len(target)),
            "phrase": float(len(derivation)),
            "unknown": -100.0 * unknown,
        }

    def total(self, f: dict) -> float:
        w = self.w
        return (
            w["lm"] * f["lm"]
            + sum(a * b for a, b in zip(w["tm"], f["tm"]))
            + w["distortion"] * f["distortion"]
            + w["word"] * f["word"]
            + w["phrase"] * f["phrase"]
            + w["unknown"] * f["unknown"]
        )

    def options(self, words: list[str]) -> list[tuple[int, int, str]]:
        n = len(words)
        opts = []
        for s in range(n):
            for e in range(s, n):
                for tgt, _ in self.table.get(" ".join(words[s : e + 1]), []):
                    opts.append((s, e, tgt))
            if self.is_unknown(words[s]):
                opts.append((s, s, words[s]))
        return opts

    def all_derivations(self, words: list[str]):
        """Every derivation under the distortion limit (Definition 2): brute force."""
        n = len(words)
        opts = self.options(words)
        covered = [False] * n
        seq: list[tuple[int, int, str]] = []

        def rec(prev_end: int, left: int):
            if left == 0:
                if abs(prev_end + 1 - n) <= self.d:
                    yield list(seq)
                return
            for s, e, tgt in opts:
                if abs(prev_end + 1 - s) > self.d or any(covered[s : e + 1]):
                    continue
                covered[s : e + 1] = [True] * (e - s + 1)
                seq.append((s, e, tgt))
                yield from rec(e, left - (e - s + 1))
                seq.pop()
                covered[s : e + 1] = [False] * (e - s + 1)

        yield from rec(-1, n)

    def ranked(self, words: list[str]) -> list[tuple[float, list]]:
        scored = [(self.total(self.features(words, der)), der) for der in self.all_derivations(words)]
        scored.sort(key=lambda x: -x[0])
        return scored


@lru_cache(maxsize=None)
def reference() -> Reference:
    return Reference()


# --------------------------------------------------------------------------------------
# Checks shared by several tests


def check_tiles(derivation: list, n: int) -> None:
    """The spans are 0-based, inclusive, and cover every source token exactly once."""
    covered = [0] * n
    for s, e, _ in derivation:
        assert 0 <= s <= e < n, (s, e, n)
        for i in range(s, e + 1):
            covered[i] += 1
    assert covered == [1] * n, derivation


def check_json_result(obj: dict, line_no: int, source_line: str, ref: Reference | None = None) -> None:
    ref = ref or reference()
    words = source_line.split()
    assert set(obj) == JSON_KEYS, set(obj) ^ JSON_KEYS
    assert obj["id"] == line_no
    assert obj["source"] == " ".join(words)
    assert obj["optimal"] is True
    assert obj["gap"] == 0.0 and obj["upper_bound"] == pytest.approx(obj["score"], abs=1e-6)
    assert set(obj["features"]) == FEATURE_KEYS
    assert len(obj["features"]["tm"]) == len(ref.w["tm"])
    der = obj["derivation"]
    assert all(isinstance(s, int) and isinstance(e, int) and isinstance(t, str) for s, e, t in der)
    check_tiles(der, len(words))
    assert " ".join(t for _, _, t in der) == obj["translation"]
    # features recomputed from the derivation's strings by the reference model
    expected = ref.features(words, der)
    for k in ("lm", "distortion", "word", "phrase", "unknown"):
        assert obj["features"][k] == pytest.approx(expected[k], abs=1e-9), k
    assert obj["features"]["tm"] == pytest.approx(expected["tm"], abs=1e-9)
    # score = Σ weight · feature, with the weights read from moses.ini
    assert obj["score"] == pytest.approx(ref.total(obj["features"]), abs=1e-9)
    stats = obj["stats"]
    assert set(stats) == {"states", "transitions", "seconds"}
    assert isinstance(stats["states"], int) and isinstance(stats["transitions"], int)
    assert stats["seconds"] >= 0
    if words:
        assert stats["states"] > 0 and stats["transitions"] > 0


def is_monotone(derivation: list) -> bool:
    """Target order equals source order with no gaps: starts at 0, each start = previous end + 1."""
    prev_end = -1
    for s, e, _ in derivation:
        if s != prev_end + 1:
            return False
        prev_end = e
    return True


# --------------------------------------------------------------------------------------
# The reference model itself (so that a bug in it cannot hide one in fstdecode)


def test_reference_lm_by_hand():
    ref = reference()
    # "<s> this must </s>": bigrams <s> this, this must; "must </s>" backs off: b(must) + p(</s>)
    expected = (-0.779162 + -0.278081 + (-0.602060 + -0.893106)) * LN10
    assert ref.lm(["this", "must"]) == pytest.approx(expected, abs=1e-12)
    # an OOV word is <unk>; <unk> has no backoff weight in the file (0)
    expected = ((-0.455932 + -1.934498) + (0.0 + -0.893106)) * LN10
    assert ref.lm(["XYZ"]) == pytest.approx(expected, abs=1e-12)


def test_reference_weights_parse():
    w = ini_weights()
    assert w == {"lm": 1.0, "distortion": 0.3, "word": 0.0, "phrase": 0.0, "unknown": 1.0, "tm": [0.5, 0.5]}
    assert ini_distortion_limit() == 4


# --------------------------------------------------------------------------------------
# Text format: one line per input line, in order


def test_example_translations_text():
    """The paper's translations of the two example sentences (input.txt)."""
    proc = run_cli(["decode"], (DATA / "input.txt").read_text(encoding="utf-8"))
    assert out_lines(proc) == [SLIDES_TGT, FIG1_TGT]
    assert proc.stderr == ""


def test_console_script_entry_point():
    """The installed ``fstdecode`` script behaves like ``python -m fstdecode``."""
    exe = Path(sys.executable).with_name("fstdecode")
    if not exe.exists():
        pytest.skip("console script not installed next to this interpreter")
    proc = subprocess.run([str(exe), "decode"], input=(SLIDES_SRC + "\n").encode(), capture_output=True)
    assert proc.returncode == 0
    assert proc.stdout.decode("utf-8") == SLIDES_TGT + "\n"


def test_empty_and_whitespace_lines_text():
    lines = [
        SLIDES_SRC,
        "",
        "   \t  ",
        "  das \t muss   sein  ",
        "\tder\t",  # unknown word: copied through
        FIG1_SRC.replace(" ", " \t "),
    ]
    proc = run_cli(["decode"], "".join(l + "\n" for l in lines))
    out = out_lines(proc)
    assert len(out) == len(lines)
    assert out[0] == SLIDES_TGT
    assert out[1] == "" and out[2] == ""
    assert out[3] == _best_reference("das muss sein")[1]
    assert out[4] == "der"
    assert out[5] == FIG1_TGT


def test_last_line_without_newline_and_crlf():
    proc = run_cli(["decode"], SLIDES_SRC + "\r\n" + FIG1_SRC)
    assert out_lines(proc) == [SLIDES_TGT, FIG1_TGT]


def test_no_input_no_output():
    proc = run_cli(["decode"], "")
    assert proc.stdout == ""


def _many_lines(count: int = 24) -> list[str]:
    """Short random sentences over the example's words (plus OOVs), empty and messy lines."""
    rng = random.Random(1234)
    vocab = sorted({w for src in reference().table for w in src.split()}) + ["XYZ", "der"]
    lines = []
    for i in range(count):
        if i % 7 == 3:
            lines.append("")
            continue
        words = [rng.choice(vocab) for _ in range(rng.randint(1, 4))]
        seps = [rng.choice([" ", "  ", "\t", " \t "]) for _ in words]
        lines.append(rng.choice(["", " ", "\t"]) + "".join(w + s for w, s in zip(words, seps)).rstrip(" "))
    lines[5] = SLIDES_SRC
    lines[11] = FIG1_SRC
    return lines


def _best_reference(line: str) -> tuple[float, str]:
    words = line.split()
    if not words:
        return 0.0, ""  # Moses' initial hypothesis: no feature scores it
    score, der = reference().ranked(words)[0]
    return score, " ".join(t for _, _, t in der)


def test_many_lines_in_order_json():
    """24 lines in, 24 JSON lines out, in order, each the reference model's optimum."""
    lines = _many_lines()
    objs = decode_json(lines)
    for i, (line, obj) in enumerate(zip(lines, objs)):
        check_json_result(obj, i, line)
        if line == SLIDES_SRC:
            assert obj["translation"] == SLIDES_TGT
        elif line == FIG1_SRC:
            assert obj["translation"] == FIG1_TGT
        else:  # short enough for the brute-force oracle
            best, _ = _best_reference(line)
            assert obj["score"] == pytest.approx(best, abs=1e-9), line


def test_threads_same_output_same_order():
    lines = _many_lines(30)
    stdin = "".join(l + "\n" for l in lines)
    one = out_lines(run_cli(["decode", "--threads", "1"], stdin))
    two = out_lines(run_cli(["decode", "--threads", "2"], stdin))
    assert len(one) == len(lines) == len(two)
    assert one == two
    assert one[5] == SLIDES_TGT and one[11] == FIG1_TGT

    def strip_time(text_lines):
        objs = [json.loads(l) for l in text_lines]
        for o in objs:
            o["stats"].pop("seconds")
        return objs

    j1 = strip_time(out_lines(run_cli(["decode", "--format", "json", "--threads", "1"], stdin)))
    j2 = strip_time(out_lines(run_cli(["decode", "--format", "json", "--threads", "2"], stdin)))
    assert j1 == j2
    assert [o["id"] for o in j2] == list(range(len(lines)))
    assert [o["translation"] for o in j2] == one


def test_python_api_matches_cli():
    from fstdecode import Decoder, load_model

    decoder = Decoder(load_model())
    assert decoder.decode(SLIDES_SRC).best.translation == SLIDES_TGT
    assert decoder.decode(FIG1_SRC.split()).best.translation == FIG1_TGT
    empty = decoder.decode("   ")
    assert empty.best.translation == "" and empty.error is None


# --------------------------------------------------------------------------------------
# JSON format


def test_json_example_sentences():
    objs = decode_json([SLIDES_SRC, FIG1_SRC])
    for i, (line, obj) in enumerate(zip([SLIDES_SRC, FIG1_SRC], objs)):
        check_json_result(obj, i, line)
    assert objs[0]["translation"] == SLIDES_TGT
    assert objs[1]["translation"] == FIG1_TGT
    # Figure 1: "we must also take these criticisms seriously" reorders "nehmen" before
    # "diese kritik ernst": phrases in target order start at 0, 2, 6, 3, 5.
    assert [s for s, _, _ in objs[1]["derivation"]][:3] == [0, 2, 6]


def test_json_empty_line():
    (obj,) = decode_json([""])
    assert set(obj) == JSON_KEYS and obj["id"] == 0 and obj["source"] == "" and obj["optimal"] is True
    assert set(obj["features"]) == FEATURE_KEYS and obj["features"]["tm"] == [0] * len(reference().w["tm"])
    assert obj["translation"] == "" and obj["derivation"] == []
    # Moses' empty line: its one hypothesis is the initial one, which no feature scores (not even
    # the LM's "<s> </s>", -3.10627 here): every feature 0 and the score 0, their weighted sum.
    assert reference().lm([]) < -1
    assert obj["features"]["lm"] == 0 and obj["score"] == 0 and obj["upper_bound"] == 0
    assert obj["features"]["word"] == 0 and obj["features"]["phrase"] == 0
    assert math.copysign(1.0, obj["features"]["word"]) == 1.0  # 0.0, not -0.0


def test_json_score_is_optimal_on_short_sentence():
    """The DP's best equals the brute-force optimum over all derivations (d = 4)."""
    lines = ["das muss sein", "unsere sorge sein", "wir müssen auch", "diese kritik ernst nehmen"]
    objs = decode_json(lines)
    for i, (line, obj) in enumerate(zip(lines, objs)):
        check_json_result(obj, i, line)
        best, _ = _best_reference(line)
        assert obj["score"] == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("method", ["coverage", pytest.param("exhaustive", marks=pytest.mark.slow)])  # the oracle: slow set
def test_methods_agree_with_dp(method):
    lines = (DATA / "input.txt").read_text(encoding="utf-8").splitlines() + ["das muss XYZ sein", ""]
    dp = decode_json(lines, "--method", "dp")
    other = decode_json(lines, "--method", method)
    for i, (a, b) in enumerate(zip(dp, other)):
        check_json_result(b, i, lines[i])
        assert b["score"] == pytest.approx(a["score"], abs=1e-9)
        assert b["optimal"] is True


# --------------------------------------------------------------------------------------
# Unknown words


def test_unknown_word_copied_through():
    lines = ["das muss XYZ sein", "XYZ", "das QQ muss RR"]
    objs = decode_json(lines)
    for i, (line, obj) in enumerate(zip(lines, objs)):
        check_json_result(obj, i, line)
        best, _ = _best_reference(line)
        assert obj["score"] == pytest.approx(best, abs=1e-9)
    assert "XYZ" in objs[0]["translation"].split()
    assert [2, 2, "XYZ"] in objs[0]["derivation"]
    assert objs[0]["features"]["unknown"] == -100
    assert objs[1]["translation"] == "XYZ" and objs[1]["features"]["unknown"] == -100
    assert objs[1]["features"]["tm"] == [0.0, 0.0]
    assert objs[2]["features"]["unknown"] == -200
    assert {"QQ", "RR"} <= set(objs[2]["translation"].split())
    text = out_lines(run_cli(["decode"], "das muss XYZ sein\n"))
    assert text == [objs[0]["translation"]]


# --------------------------------------------------------------------------------------
# N-best


NBEST_NAMES = {
    "KENLM0": "lm",
    "Distortion0": "distortion",
    "WordPenalty0": "word",
    "PhrasePenalty0": "phrase",
    "PhraseDictionaryMemory0": "tm",
}


def parse_nbest_line(line: str):
    fields = [f.strip() for f in line.split("|||")]
    assert len(fields) == 6 and fields[5] == "" and line.endswith(" |||"), line
    sid, translation, feats, score, seg = fields[:5]
    values: dict[str, list[float]] = {}
    name = None
    for tok in feats.split():
        if tok.endswith("="):
            name = NBEST_NAMES[tok[:-1]]
            values[name] = []
        else:
            values[name].append(float(tok))
    return int(sid), translation, values, float(score), seg


def parse_span(text: str) -> tuple[int, int]:
    a, _, b = text.partition("-")
    return int(a), int(b or a)


def check_segmentation(seg: str, n_src: int, translation: str) -> list:
    """Moses' ``src=tgt`` segmentation tiles the source once and the target in order."""
    n_tgt = len(translation.split())
    der, next_tgt = [], 0
    tgt_words = translation.split()
    for item in seg.split():
        src, _, tgt = item.partition("=")
        s, e = parse_span(src)
        ts, te = parse_span(tgt)
        assert ts == next_tgt and te >= ts, seg
        next_tgt = te + 1
        der.append([s, e, " ".join(tgt_words[ts : te + 1])])
    assert next_tgt == n_tgt, seg
    check_tiles(der, n_src)
    return der


def test_nbest_format():
    lines = [SLIDES_SRC, FIG1_SRC, "das muss sein"]
    proc = run_cli(["decode", "--format", "nbest", "--nbest", "5"], "".join(l + "\n" for l in lines))
    entries = [parse_nbest_line(l) for l in out_lines(proc)]
    assert [e[0] for e in entries] == [0] * 5 + [1] * 5 + [2] * 5
    ref = reference()
    w = ref.w
    for sid, line in enumerate(lines):
        words = line.split()
        group = [e for e in entries if e[0] == sid]
        scores = [e[3] for e in group]
        assert all(a >= b for a, b in zip(scores, scores[1:])), scores
        ders = []
        for _, translation, feats, score, seg in group:
            der = check_segmentation(seg, len(words), translation)
            ders.append(tuple(map(tuple, der)))
            # the printed features recomputed from the segmentation (6 significant digits)
            expected = ref.features(words, der)
            assert feats["lm"][0] == pytest.approx(expected["lm"], rel=1e-5)
            assert feats["distortion"][0] == pytest.approx(expected["distortion"], rel=1e-5)
            assert feats["word"][0] == pytest.approx(expected["word"], rel=1e-5)
            assert feats["tm"] == pytest.approx(expected["tm"], rel=1e-5)
            # score = Σ w·f over the printed features (UnknownWordPenalty is 0 here)
            printed = (
                w["lm"] * feats["lm"][0]
                + sum(a * b for a, b in zip(w["tm"], feats["tm"]))
                + w["distortion"] * feats["distortion"][0]
                + w["word"] * feats["word"][0]
            )
            assert score == pytest.approx(printed, rel=1e-4)
            assert score == pytest.approx(ref.total(expected), rel=1e-5)
        assert len(set(ders)) == 5, "n-best derivations must be distinct"
    assert entries[0][1] == SLIDES_TGT and entries[5][1] == FIG1_TGT
    # the 5-best of a short sentence are the brute-force top 5
    top5 = [s for s, _ in ref.ranked(lines[2].split())[:5]]
    assert [e[3] for e in entries[10:]] == pytest.approx(top5, rel=1e-5)


@pytest.mark.slow
def test_nbest_matches_brute_force_top5():
    """The default method's 5-best (prove: its A* proves the 5 best) on both example sentences
    equal the brute-force reference's top 5, and say so."""
    objs = decode_json([SLIDES_SRC, FIG1_SRC], "--nbest", "5")
    for i, (line, obj) in enumerate(zip([SLIDES_SRC, FIG1_SRC], objs)):
        assert obj["optimal"] is True and obj["gap"] == pytest.approx(0.0, abs=1e-9)
        words = line.split()
        ranked = reference().ranked(words)
        top5 = [s for s, _ in ranked[:5]]
        check_json_result({k: v for k, v in obj.items() if k != "nbest"}, i, line)
        assert len(obj["nbest"]) == 5
        assert [d["score"] for d in obj["nbest"]] == pytest.approx(top5, abs=1e-9)
        assert obj["nbest"][0]["translation"] == obj["translation"]
        assert obj["translation"] == " ".join(t for _, _, t in ranked[0][1])
        for d in obj["nbest"]:
            check_tiles(d["derivation"], len(words))


def test_nbest_failed_line_and_empty_line():
    # A line holding Moses' field separator fails alone; its source comes back escaped as Moses does.
    proc = run_cli(["decode", "--format", "nbest", "--nbest", "3"], "das ||| muss\n\n")
    entries = [parse_nbest_line(l) for l in out_lines(proc)]
    assert entries[0][0] == 0 and entries[0][1] == "das &#124;&#124;&#124; muss" and entries[0][3] == 0.0
    assert len([e for e in entries if e[0] == 0]) == 1
    assert [e for e in entries if e[0] == 1][0][1] == ""
    # The empty line's word penalty is 0, not -0 (Moses prints 0).
    empty = [line for line in out_lines(proc) if line.startswith("1 ||| ")][0]
    assert "WordPenalty0= 0 " in empty and "-0 " not in empty


# --------------------------------------------------------------------------------------
# --max-states


def test_max_states_keeps_the_best_derivation_found():
    """Over budget, a line keeps a real derivation (here the stack decoder's), marked not optimal."""
    lines = [SLIDES_SRC, "wir", "", "nehmen", FIG1_SRC]
    stdin = "".join(l + "\n" for l in lines)
    proc = run_cli(["decode", "--max-states", "5"], stdin)
    out = out_lines(proc)
    assert out == [SLIDES_TGT, "we", "", "take", FIG1_TGT]
    assert proc.stderr.count("over budget") == 2

    proc = run_cli(["decode", "--format", "json", "--max-states", "5"], stdin)
    objs = [json.loads(l) for l in out_lines(proc)]
    assert len(objs) == len(lines)
    for i in (0, 4):
        assert objs[i]["optimal"] is False and "--max-states" in objs[i]["reason"]
        assert "error" not in objs[i] and objs[i]["id"] == i
        check_tiles(objs[i]["derivation"], len(lines[i].split()))
    for i in (1, 2, 3):
        assert "error" not in objs[i]
        check_json_result(objs[i], i, lines[i])


# --------------------------------------------------------------------------------------
# Weights and distortion limit


def test_weight_flag_overrides_ini():
    """--weight distortion=100 makes any jump cost more than anything it can gain: monotone."""
    lines = [SLIDES_SRC, FIG1_SRC]
    objs = decode_json(lines, "--weight", "distortion=100")
    ref = Reference(weights=dict(ini_weights(), distortion=100.0))
    for i, obj in enumerate(objs):
        check_json_result(obj, i, lines[i], ref)  # score uses distortion weight 100
        assert is_monotone(obj["derivation"])
        assert obj["features"]["distortion"] == 0
    # without the override, the paper's reordered translations
    assert [o["translation"] for o in decode_json(lines)] == [SLIDES_TGT, FIG1_TGT]


def test_weight_flag_tm_list_and_lm():
    w = dict(ini_weights(), tm=[1.0, 0.25], lm=0.5, word=-0.5)
    lines = ["das muss sein", "das muss XYZ sein"]
    objs = decode_json(lines, "--weight", "tm=1,0.25", "--weight", "lm=0.5", "--weight", "word=-0.5")
    ref = Reference(weights=w)
    for i, obj in enumerate(objs):
        check_json_result(obj, i, lines[i], ref)
        assert obj["score"] == pytest.approx(ref.ranked(lines[i].split())[0][0], abs=1e-9)


@pytest.mark.parametrize("flag", ["-d", "--distortion-limit"])
def test_distortion_limit_zero_is_monotone(flag):
    lines = [SLIDES_SRC, FIG1_SRC, "das muss XYZ sein"]
    objs = decode_json(lines, flag, "0")
    ref = Reference(d=0)
    for i, obj in enumerate(objs):
        check_json_result(obj, i, lines[i], ref)
        starts = [s for s, _, _ in obj["derivation"]]
        assert starts == sorted(starts) and len(set(starts)) == len(starts)
        assert is_monotone(obj["derivation"])
    # short sentence: the best monotone derivation
    assert objs[2]["score"] == pytest.approx(ref.ranked(lines[2].split())[0][0], abs=1e-9)


def test_distortion_limit_one_respected():
    lines = [SLIDES_SRC]
    (obj,) = decode_json(lines, "-d", "1")
    n = len(SLIDES_SRC.split())
    prev_end = -1
    for s, e, _ in obj["derivation"]:
        assert abs(prev_end + 1 - s) <= 1
        prev_end = e
    assert abs(prev_end + 1 - n) <= 1


# --------------------------------------------------------------------------------------
# An explicit model given by flags and by a moses.ini


def test_explicit_files_and_ini_equal_builtin(tmp_path):
    ini = tmp_path / "moses.ini"
    ini.write_text(example_ini_text(), encoding="utf-8")
    lines = [SLIDES_SRC, FIG1_SRC]
    builtin = decode_json(lines)
    via_ini = decode_json(lines, "-f", str(ini), "--distortion-semantics", "paper")
    assert [o["score"] for o in via_ini] == pytest.approx([o["score"] for o in builtin], abs=1e-12)
    # A moses.ini defaults to Moses' semantics, which charges no jump into </s>: each best score
    # gains the distortion weight (0.3) times a final jump of 1..d (here 2 and 1).
    moses = decode_json(lines, "-f", str(ini))
    gains = [(m["score"] - b["score"]) / 0.3 for m, b in zip(moses, builtin)]
    assert gains == pytest.approx([2, 1], abs=1e-9)
    flags = decode_json(
        lines,
        "--phrase-table", str(DATA / "phrase-table"),
        "--lm", str(DATA / "lm.arpa"),
        "-d", "4",
        "--weight", "distortion=0.3", "--weight", "tm=0.5,0.5", "--weight", "lm=1", "--weight", "word=0",
    )
    assert [o["translation"] for o in flags] == [SLIDES_TGT, FIG1_TGT]
    assert [o["score"] for o in flags] == pytest.approx([o["score"] for o in builtin], abs=1e-12)


# --------------------------------------------------------------------------------------
# demo


def test_demo():
    proc = run_cli(["demo"])
    assert SLIDES_TGT in proc.stdout
    assert "states" in proc.stdout
    assert "tapes" in proc.stdout
    m = re.search(r"states: (\d+)", proc.stdout)
    assert m
    # the demo's state count is the one the decoder reports for the same sentence
    (obj,) = decode_json([SLIDES_SRC])
    assert int(m.group(1)) == obj["stats"]["states"]


def test_demo_other_sentence():
    proc = run_cli(["demo", FIG1_SRC])
    assert FIG1_TGT in proc.stdout
    assert "states" in proc.stdout


@pytest.mark.parametrize("io_encoding", ["ascii", "latin-1"])
@pytest.mark.slow
def test_utf8_input_and_output_whatever_the_locale(io_encoding):
    """stdin and stdout are UTF-8, like the model files, even under a non-UTF-8 locale."""
    proc = run_fstdecode(
        ["decode", "--format", "json"], SLIDES_SRC + "\n", timeout=60, PYTHONIOENCODING=io_encoding, PYTHONUTF8="0"
    )
    assert proc.returncode == 0, proc.stderr
    obj = json.loads(proc.stdout)
    assert obj["source"] == SLIDES_SRC  # "gleichermaßen" read as one known word
    assert obj["translation"] == SLIDES_TGT
    assert obj["features"]["unknown"] == 0


def test_ini_distortion_limit_minus_one_means_unlimited(tmp_path):
    # Moses' "-1 = no limit": the model gets a limit larger than any sentence, not the default 6.
    from fstdecode.model.model import UNLIMITED, example_dir, load_model

    ini = (example_dir() / "moses.ini").read_text(encoding="utf-8").replace("[distortion-limit]\n4", "[distortion-limit]\n-1")
    ini = ini.replace("${MODEL_DIR}", str(example_dir()))
    (tmp_path / "moses.ini").write_text(ini, encoding="utf-8")
    assert load_model(tmp_path / "moses.ini").distortion_limit == UNLIMITED
    (tmp_path / "moses.ini").write_text(ini.replace("[distortion-limit]\n-1\n", ""), encoding="utf-8")
    assert load_model(tmp_path / "moses.ini").distortion_limit == 6


def test_verbose_reports_each_model_file_as_it_loads():
    # A long load is never silent: -v names each file with its size as it starts, then what was
    # kept and the seconds it took (issue 23: five silent minutes on a real-size model).
    proc = run_cli(["-v", "decode", "--method", "stack"], "das\n")
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.splitlines()
    for what in ("language model", "phrase table"):
        start = next(i for i, line in enumerate(err) if line.startswith(f"fstdecode: info: reading the {what} "))
        done = next(i for i, line in enumerate(err) if line.startswith(f"fstdecode: info: {what} "))
        assert start < done and " MiB" in err[start] and err[done].endswith(" s")
    assert any("phrase pairs kept" in line for line in err)


@pytest.mark.parametrize("limit, shown", [("-1", "no distortion limit (-1)"), ("3", "distortion limit 3")])
def test_verbose_names_no_distortion_limit_as_minus_one(limit, shown):
    # Issue 38: -d -1 was logged as "distortion limit 2147483647", the core's stand-in for no limit.
    proc = run_cli(["-v", "decode", "--method", "stack", "-d", limit], "das\n")
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "phrase pairs, LM order" in x]
    assert line.endswith(shown) and "2147483647" not in line
