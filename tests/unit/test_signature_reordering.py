"""fstdecode/statespace/reordering.py: the LR ends of tape signatures and a transition's charges.

The agreement with the exhaustive oracle is in tests/integration/test_lexreo_signature.py;
here: hand-computed charges of each role, the signatures without a model, and README's
example of two prefixes that share a signature state but not Moses' legality.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fstdecode.decoder import Decoder
from fstdecode.model.distortion import derivation_violation
from fstdecode.model.model import load_model
from fstdecode.statespace import reordering
from fstdecode.statespace.ngram import state_space
from fstdecode.statespace.signature import PHI, replay

LM = "\\data\\\nngram 1=4\n\n\\1-grams:\n-1\t<s>\n-1\t</s>\n-1\t<unk>\n-1\ta\n\n\\end\\\n"
WORDS = "u v w x y z"


def model_of(tmp_path: Path, lr_line: str | None, d: int = 2):
    """Every word translates to ``a``; with ``lr_line``, u's row is 0.1..0.6 and v's 0.7..0.2."""
    (tmp_path / "pt").write_text("".join(f"{w} ||| a ||| 0.5\n" for w in WORDS.split()), encoding="utf-8")
    (tmp_path / "lm").write_text(LM, encoding="utf-8")
    (tmp_path / "rt").write_text("u ||| a ||| 0.1 0.2 0.3 0.4 0.5 0.6\nv ||| a ||| 0.7 0.6 0.5 0.4 0.3 0.2\n", encoding="utf-8")
    lr = f"{lr_line} path={tmp_path / 'rt'}\n" if lr_line else ""
    weights = "LexicalReordering0= 1 1 1 1 1 1\n" if lr_line else ""
    (tmp_path / "moses.ini").write_text(
        f"[feature]\nKENLM path={tmp_path / 'lm'} order=2\nDistortion\nWordPenalty\nPhrasePenalty\n"
        f"PhraseDictionaryMemory path={tmp_path / 'pt'} num-features=1 table-limit=0\n{lr}"
        f"[weight]\nKENLM0= 1\nDistortion0= 1\nWordPenalty0= 0\nPhrasePenalty0= 0\nPhraseDictionaryMemory0= 1\n{weights}"
        f"[distortion-limit]\n{d}\n",
        encoding="utf-8",
    )
    return load_model(tmp_path / "moses.ini", distortion_semantics="paper")


def option(problem, start: int):
    """The option of the 0-based word ``start``."""
    (opt,) = problem.by_start[start + 1]
    return opt


def test_charges_of_each_role(tmp_path):
    problem = Decoder(model_of(tmp_path, "LexicalReordering type=msd-bidirectional-fe"), "dp").problem(tuple(WORDS.split()))
    u, v, w = option(problem, 0), option(problem, 1), option(problem, 2)
    ln = math.log
    # Placed after the <s> tape alone: u starts at word 0, monotone against the sentence start; no forward.
    start = ((0, problem.bos, 0, problem.bos, None, None),)
    assert reordering.charge(problem, start[0], u, None) == (0, PHI, pytest.approx(ln(0.1)))
    # v right after a tape ending with u: monotone; v's backward M and u's forward M.
    tape_u = (1, u.first, 1, u.last, reordering.head_of(problem, u), reordering.tail_of(problem, u))
    assert reordering.charge(problem, tape_u, v, None)[2] == pytest.approx(ln(0.7) + ln(0.4))
    # v prepended to the tape [w]: w's orientation after v is monotone; w has no row (no cost), v's forward M.
    tape_w = (3, w.first, 3, w.last, reordering.head_of(problem, w), reordering.tail_of(problem, w))
    assert reordering.charge(problem, None, v, tape_w) == (PHI, 0, pytest.approx(ln(0.4)))
    # u prepended to the tape [v]... as a swap: v before u is charged when u follows v.
    tape_v = (2, v.first, 2, v.last, reordering.head_of(problem, v), reordering.tail_of(problem, v))
    assert reordering.charge(problem, tape_v, u, None) == (1, PHI, pytest.approx(ln(0.2) + ln(0.3)))
    # Both roles at once: after u's tape (v's backward M, u's forward M), then w follows v (v's forward M).
    assert reordering.charge(problem, tape_u, v, tape_w)[2] == pytest.approx(ln(0.7) + ln(0.4) + ln(0.4))
    # </s> charges nothing.
    assert reordering.charge(problem, tape_u, problem.eos_option, None)[2] == 0.0


def test_without_a_model_signatures_keep_four_entries(tmp_path):
    plain = Decoder(model_of(tmp_path, None), "dp").problem(tuple(WORDS.split()))
    assert all(len(sig) == 4 for sig in state_space(plain)[0])
    with_lr = Decoder(model_of(tmp_path, "LexicalReordering type=msd-bidirectional-fe"), "dp").problem(tuple(WORDS.split()))
    assert all(len(sig) == 6 for sig in state_space(with_lr)[0] + state_space(with_lr)[1])


def state_after(problem, order: list[tuple[int, int]], j: int):
    """The signature state at ``j`` (0-based words < j covered) on the path of a derivation given
    in target order: at each position the transition whose tapes are the derivation's runs."""
    start, _, expand = state_space(problem)
    sigs, pos, steps = start, 0, []
    while pos < j:
        for t, new, _, opt, s1, s2 in expand(problem, pos, sigs):
            *_, tapes = replay(steps + [(opt, s1, s2)], problem.bos_option)
            got = sorted(tuple((o.s - 1, o.t - 1) for o in tape) for tape in tapes.values())
            if got == runs_of(order, t):
                sigs, pos, steps = new, t, steps + [(opt, s1, s2)]
                break
        else:
            raise AssertionError(f"no transition follows {order} at {pos}")
    return sigs


def runs_of(order: list[tuple[int, int]], t: int) -> list[tuple[tuple[int, int], ...]]:
    """The tapes once words 0..t−1 are placed: the maximal runs of placed phrases that are
    adjacent in the target order ``order``, after ``<s>`` (spelt (−1, −1))."""
    runs, cur = [], []
    for span in [(-1, -1)] + order:
        if span[1] < t:
            cur.append(span)
        elif cur:
            runs.append(tuple(cur))
            cur = []
    if cur:
        runs.append(tuple(cur))
    return sorted(runs)


def test_readme_example_same_state_different_moses_legality(tmp_path):
    # README, "Why not Moses' semantics there": n = 6, d = 2.
    bad = [(0, 0), (3, 3), (2, 2), (1, 1), (4, 4), (5, 5)]
    good = [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]
    for spans in (bad, good):
        assert derivation_violation("paper", 2, 6, spans) is None
    assert "Moses' rule" in derivation_violation("moses", 2, 6, bad)
    assert derivation_violation("moses", 2, 6, good) is None
    # Both reach, at j = 5, one tape from <s> ending at word 4: the same state.
    problem = Decoder(model_of(tmp_path, None), "dp").problem(tuple(WORDS.split()))
    assert state_after(problem, bad, 5) == state_after(problem, good, 5)
