"""``fstdecode demo``: one decode, with its derivation, its tapes and the DP's state counts."""

from __future__ import annotations

from typing import TextIO

from fstdecode.decoder import Decoder
from fstdecode.model.model import Model
from fstdecode.search import signature_dp
from fstdecode.problem.problem import Option, SearchLimitError
from fstdecode.search.base import DEFAULT_MAX_STATES
from fstdecode.statespace.ngram import state_space
from fstdecode.statespace.signature import replay


def _tape(opts: list[Option], vocab: list[str]) -> str:
    return " ".join(
        f"({o.s},{o.t},{' '.join(o.phrase.target) if o.phrase else vocab[o.first]})" for o in opts
    )


def run_demo(model: Model, sentence: str, out: TextIO, max_states: int = DEFAULT_MAX_STATES) -> None:
    """Write the best derivation of ``sentence`` and how the signature DP built it.

    Positions in the tapes are Chang & Collins' (``<s>`` = 0, token k = k+1). The DP (the Python
    reference, which the demo shows state by state) stops past ``max_states`` states with
    SearchLimitError: the demo is for short sentences.
    """
    decoder = Decoder(model, "dp", max_states=max_states)  # the DP whose chart the demo shows
    problem = decoder.problem(sentence.split())
    try:
        chart = signature_dp.run(problem, max_states=max_states)
    except SearchLimitError as e:
        raise SearchLimitError(f"demo: the signature DP needs {e} for this sentence; the demo is for short "
                               "sentences (decode translates long ones)") from None
    steps = signature_dp.backtrack(chart.layers, problem.end, state_space(problem)[1], 0)
    result = decoder.decode(sentence)
    best = result.best
    out.write(f"source:      {sentence}\n")
    out.write(f"model:       {model.name} (d = {model.distortion_limit})\n")
    if best is None:
        out.write(f"error:       {result.error}\n")
        return
    out.write(f"translation: {best.translation}\n")
    out.write(f"score:       {best.score:.4f}\n")
    out.write("derivation (target order, source spans 0-based):\n")
    for p in best.phrases:
        out.write(f"  [{p.start}-{p.end}] {' '.join(p.pair.source)} -> {' '.join(p.target)}\n")
    out.write("tapes after each phrase, in source order (Figure 3):\n")
    for (opt, _, _), tapes in zip(steps, replay(steps, problem.bos_option)):
        j = opt.t
        out.write(f"  j={j:<3}" + "  |  ".join(_tape(t, problem.vocab) for t in tapes.values()) + "\n")
    out.write("states per position j of the signature DP:\n  ")
    out.write(" ".join(f"{j}:{len(layer)}" for j, layer in enumerate(chart.layers)) + "\n")
    out.write(f"states: {chart.states}  transitions: {chart.transitions}\n")
