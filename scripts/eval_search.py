#!/usr/bin/env python3
"""Search evaluation: beam decoders against the exact search on the Hansards fr-en model.

Model: ../shared/data/hansards-fr-en-decoder/tm (log10 scores, table-limit
20) with the UN English LM read as a bigram (../shared/data/english-lm-un),
distortion limit d = 4, default weights (lm = tm = distortion = unknown = 1,
word = phrase = 0). The 48 French sentences of ``input`` are decoded by:

* the signature beam (``--method beam``) with each beam heuristic
  (every heuristic of ``signature_beam.HEURISTICS``: ``bound``, ``unigram`` =
  the paper's β, ``unigram+distortion``, ``none``);
* the stack decoder (``--method stack``): plain, with Moore & Quirk's
  distortion estimate, and with distortion estimate + early pruning;
* NLTK's ``nltk.translate.StackDecoder`` on the same phrase pairs and LM
  (adapters below; its settings are documented in docs/search.md);

each over a grid of beam (stack) sizes. The exact best score of each
sentence comes from ``--method bounded`` under a time budget and a state
cap; it is cached in ``--exact-cache`` (JSON) so that reruns are cheap.
For each decoder and size the report gives the mean model score over all
sentences, the search errors (best score < exact − 1e-6) on the sentences
with an exact result, BLEU against ``ref`` (sacrebleu), ms/word and
hypotheses/word, and plots score and search errors against ms/word.
The raw measurements are saved to ``--runs`` (JSON); ``--render-only``
rewrites the doc and plots from that file without decoding.

    python scripts/eval_search.py [--quick] [--limit N] [--sizes 1,3,...] [--config-cap SEC]
        [--exact-cache FILE] [--exact-budget SEC] [--exact-max-states N] [--exact-only]
        [--decoders LABEL,...] [--runs FILE] [--render-only] [--previous-runs FILE] [--out FILE]

``--quick`` (5 sentences, sizes 1, 10, 100; written to /tmp) is a smoke
test. A decoder's larger sizes are skipped once one pass over the
sentences is predicted to exceed ``--config-cap`` seconds (the doc lists
what was skipped). The first run computes the exact results (about 20
minutes here); later runs read them from the cache.

Needs ``pip install -e .[bench]`` (matplotlib, nltk, sacrebleu).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_fst import timed  # noqa: E402
from benchlib import code_version, machine  # noqa: E402

from fstdecode.decoder import Decoder  # noqa: E402
from fstdecode.io.arpa import BOS, EOS  # noqa: E402
from fstdecode.model.model import load_model  # noqa: E402
from fstdecode.problem.scorer import jumps, score as score_derivation  # noqa: E402
from fstdecode.search import signature_beam  # noqa: E402
from fstdecode.problem.sentence import build_sentence  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
HANSARDS = DATA / "hansards-fr-en-decoder"
MODEL_ARGS = dict(
    phrase_table=HANSARDS / "tm",
    tm_score_format="log10",
    lm=DATA / "english-lm-un" / "lm.en.arpa",
    lm_order=2,
    distortion_limit=4,
    table_limit=20,
)
#: Identifies the model in the exact cache (a change of any of these invalidates it).
MODEL_KEY = "hansards tm log10, table-limit 20 | lm.en.arpa as bigram | d=4 | default weights"

GRID = (1, 3, 10, 30, 100, 300, 1000)
QUICK_GRID = (1, 10, 100)
QUICK_SENTENCES = 5
EPS = 1e-6

#: (label, kind, method, fixed options). kind "fst" = an fstdecode method, "nltk" = NLTK's StackDecoder.
DECODERS = tuple(("beam (%s)" % h, "fst", "beam", {"heuristic": h}) for h in signature_beam.HEURISTICS) + (
    ("stack", "fst", "stack", {}),
    ("stack +DE", "fst", "stack", {"distortion_estimate": True}),
    ("stack +DE +EP", "fst", "stack", {"distortion_estimate": True, "early_pruning": True}),
    ("NLTK StackDecoder", "nltk", None, {}),
)
STACK_LABELS = ("stack", "stack +DE", "stack +DE +EP")
HEURISTIC_LABELS = tuple("beam (%s)" % h for h in signature_beam.HEURISTICS)
DEFAULT_LABEL = "beam (%s)" % signature_beam.DEFAULT_HEURISTIC


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_avg() -> str:
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


# ---------------------------------------------------------------------------
# Data


def hansards():
    """(model, sentences, references); the input lines end with a space, stripped here."""
    model = load_model(**MODEL_ARGS)
    src = [line.strip() for line in (HANSARDS / "input").read_text(encoding="utf-8").splitlines()]
    ref = [line.strip() for line in (HANSARDS / "ref").read_text(encoding="utf-8").splitlines()]
    if len(src) != len(ref):
        raise SystemExit(f"{HANSARDS}: {len(src)} input lines but {len(ref)} references")
    return model, src, ref


# ---------------------------------------------------------------------------
# Exact results (cached)


def exact_results(model, sentences, ids, cache_path: Path, budget: float, max_states: int, method: str) -> dict[int, dict]:
    """The exact best score of each sentence in ``ids`` (``status`` "ok"), else why not.

    A cached failure is retried only when this run allows more time or states
    than the run that failed; the cache is saved after every sentence.
    """
    cache = {}
    if cache_path.exists():
        cache = json.loads(cache_path.read_text(encoding="utf-8"))
    decoder = Decoder(model, method, max_states=max_states)
    out = {}
    for i in ids:
        key = f"{MODEL_KEY} | {method} | {i} | {sentences[i]}"
        got = cache.get(key)
        if got is not None and (
            got["status"] == "ok" or (got["budget"] >= budget and got["max_states"] >= max_states)
        ):
            out[i] = got
            continue
        result, secs = timed(lambda: decoder.decode(sentences[i], id=i), budget)
        if result is None:
            got = {"status": "timeout", "seconds": budget}
        elif result.error is not None:
            status = "max_states" if "max-states" in result.error else "error"
            got = {"status": status, "error": result.error, "seconds": secs}
        else:
            assert result.optimal, f"{method} returned a non-optimal result"
            got = {
                "status": "ok",
                "score": result.best.score,
                "translation": result.best.translation,
                "states": result.stats.states,
                "seconds": secs,
            }
        got.update(budget=budget, max_states=max_states, method=method)
        cache[key] = out[i] = got
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        cache_path.write_text(json.dumps(cache, indent=1, ensure_ascii=False), encoding="utf-8")
        log(f"exact {i:2d} n={len(sentences[i].split()):2d} {got['status']:10s} {got['seconds']:7.1f} s "
            + (f"score {got['score']:.4f} states {got['states']}" if got["status"] == "ok" else got.get("error", "")))
    return out


# ---------------------------------------------------------------------------
# NLTK's StackDecoder on the same model


class NltkLM:
    """fstdecode's bigram :class:`~fstdecode.io.arpa.ArpaLM` behind the interface of
    ``nltk.translate.StackDecoder`` (NLTK 3.10, nltk/translate/stack_decoder.py):

    * ``probability_change(context, phrase)``: ``context`` is the NLTK
      ``_Hypothesis`` being extended (not a word list); the change is the
      weighted ln probability of the phrase's words after the hypothesis's
      last target word (``<s>`` for the empty hypothesis). NLTK never asks
      for ``</s>``. Each call is one hypothesis scored (counted in ``calls``).
    * ``probability(phrase)``: NLTK's ``compute_future_scores`` passes the
      SOURCE phrase here (a quirk of NLTK). This adapter answers with the LM
      estimate (:meth:`ArpaLM.phrase_estimate`, words scored with the context
      inside the phrase only) of the translation whose TM score NLTK adds
      there: the first, i.e. best by TM, of that source phrase. So NLTK's
      future score of a span is TM + LM of its TM-best translation.
    """

    def __init__(self, lm, weight: float, table) -> None:
        self.lm = lm
        self.weight = weight
        self.table = table
        self.calls = 0
        self._bigrams: dict[tuple[str, str], float] = {}

    def reset(self) -> None:
        self.calls = 0
        self._bigrams = {}  # per sentence, like the per-problem caches of fstdecode

    def _bigram(self, a: str, b: str) -> float:
        v = self._bigrams.get((a, b))
        if v is None:
            v = self._bigrams[(a, b)] = self.weight * self.lm.logprob((a,), b)
        return v

    def probability_change(self, context, phrase) -> float:
        self.calls += 1
        prev = context.trg_phrase[-1] if context.trg_phrase else BOS
        total = 0.0
        for w in phrase:
            total += self._bigram(prev, w)
            prev = w
        return total

    def probability(self, phrase) -> float:
        phrase = tuple(phrase)
        words = self.table.translations_for(phrase)[0].trg_phrase if phrase in self.table else phrase
        return self.weight * self.lm.phrase_estimate(words)


class NltkPeer:
    """NLTK's StackDecoder built from the model's phrase pairs (after the table limit)."""

    def __init__(self, model, sentences) -> None:
        from nltk.translate import PhraseTable, StackDecoder

        w = model.weights
        if w.word or w.phrase:
            raise SystemExit("the NLTK mapping assumes word and phrase weights 0")
        table = PhraseTable()
        for src in model.table.sources():
            for pair in model.table.lookup(src):
                table.add(src, pair.target, sum(a * b for a, b in zip(w.tm, pair.scores)))
        # Unknown words, as build_sentence makes them: copied through, TM 0, unknown feature -100.
        self.unknown = 0
        for line in sentences:
            for word in line.split():
                if not model.table.lookup((word,)) and (word,) not in table:
                    table.add((word,), (word,), w.unknown * -100.0)
                    self.unknown += 1
        self.table = table
        self.lm = NltkLM(model.lm, w.lm, table)
        self.decoder = StackDecoder(table, self.lm)
        self.decoder.distortion_factor = math.exp(-w.distortion)  # log factor = −eta per word of jump
        self.decoder.beam_threshold = 0.0  # NLTK's "off"
        self.decoder.word_penalty = 0.0
        self.model = model

    def decode(self, line: str, stack_size: int) -> dict:
        """Translate; recover the derivation of NLTK's best hypothesis and score it with ours."""
        from nltk.translate import stack_decoder

        self.decoder.stack_size = stack_size
        self.lm.reset()
        words = tuple(line.split())
        with _recording_best(stack_decoder) as seen:
            t = time.perf_counter()
            out = self.decoder.translate(list(words))
            secs = time.perf_counter() - t
        row = {"seconds": secs, "transitions": self.lm.calls, "translation": " ".join(out)}
        best = seen[-1] if seen else None
        if best is None or not out:
            row["error"] = "NLTK found no complete translation"
            return row
        steps = []
        h = best
        while h.previous is not None:
            steps.append((h.src_phrase_span, h.trg_phrase))
            h = h.previous
        steps.reverse()
        sentence = build_sentence(self.model.table, words)
        wt = self.model.weights.tm
        phrases = []
        for (s, e), trg in steps:
            cands = [p for p in sentence.options[s] if p.end == e - 1 and p.target == tuple(trg)]
            phrases.append(max(cands, key=lambda p: sum(a * b for a, b in zip(wt, p.pair.scores))))
        feats, total = score_derivation(len(words), phrases, self.model.lm, self.model.weights)
        js = jumps(len(words), phrases)
        w = self.model.weights
        # What NLTK leaves out of its raw score: the first and the final jump, and </s>.
        expected = best.raw_score - w.distortion * (js[0] + js[-1]) + w.lm * self.model.lm.logprob((phrases[-1].target[-1],), EOS)
        row.update(
            score=total,
            nltk_raw=best.raw_score,
            mapping_ok=abs(expected - total) < EPS,
            max_jump=max(js),
            over_limit=any(j > self.model.distortion_limit for j in js),
        )
        return row


@contextlib.contextmanager
def _recording_best(module):
    """Record the hypotheses ``_Stack.best()`` returns (translate() calls it once, on the last
    stack) so the derivation behind NLTK's output can be read back; the search is unchanged."""
    original = module._Stack
    seen = []

    class RecordingStack(original):
        def best(self):
            h = super().best()
            seen.append(h)
            return h

    module._Stack = RecordingStack
    try:
        yield seen
    finally:
        module._Stack = original


# ---------------------------------------------------------------------------
# Runs


def run_config(label, kind, method, options, size, model, sentences, ids, peer, abort_after: float) -> dict:
    """One decoder at one size over ``ids``; aborted (``complete`` False) past ``abort_after`` s."""
    rows = {}
    t0 = time.perf_counter()
    if kind == "fst":
        decoder = Decoder(model, method, beam_size=size, **options)
    for i in ids:
        if kind == "fst":
            r = decoder.decode(sentences[i], id=i)
            row = {"seconds": r.stats.seconds, "transitions": r.stats.transitions, "states": r.stats.states}
            if r.error is not None:
                row["error"] = r.error
            else:
                row.update(score=r.best.score, translation=r.best.translation)
        else:
            row = peer.decode(sentences[i], size)
        rows[i] = row
        if time.perf_counter() - t0 > abort_after and i != ids[-1]:
            return {"label": label, "size": size, "rows": rows, "complete": False, "wall": time.perf_counter() - t0}
    return {"label": label, "size": size, "rows": rows, "complete": True, "wall": time.perf_counter() - t0}


def predicted(prev: list[tuple[int, float]], size: int) -> float:
    """Time of the next size extrapolated from the last two (power law, exponent in [1, 2])."""
    if not prev:
        return 0.0
    (k1, t1) = prev[-1]
    exponent = 1.0
    if len(prev) >= 2:
        (k0, t0) = prev[-2]
        if t0 > 0 and t1 > 0 and k1 > k0:
            exponent = min(2.0, max(1.0, math.log(t1 / t0) / math.log(k1 / k0)))
    return t1 * (size / k1) ** exponent


def run_all(model, sentences, ids, sizes, cap: float, decoders) -> tuple[list[dict], list[str]]:
    peer = NltkPeer(model, sentences) if any(d[1] == "nltk" for d in decoders) else None
    configs, notes = [], []
    for label, kind, method, options in decoders:
        prev: list[tuple[int, float]] = []
        for size in sizes:
            guess = predicted(prev, size)
            if guess > cap:
                notes.append(f"{label}: sizes from {size} on skipped (predicted {guess:.0f} s > cap {cap:.0f} s for one pass)")
                log(notes[-1])
                break
            c = run_config(label, kind, method, options, size, model, sentences, ids, peer, abort_after=2 * cap)
            configs.append(c)
            if not c["complete"]:
                notes.append(f"{label} size {size}: aborted after {len(c['rows'])} sentences ({c['wall']:.0f} s > 2 × cap)")
                log(notes[-1])
                break
            prev.append((size, c["wall"]))
            log(f"{label:18s} size {size:5d}: {c['wall']:7.1f} s")
    return configs, notes


# ---------------------------------------------------------------------------
# Metrics


def normalize(text: str) -> str:
    """The same normalisation for system outputs and references before sacrebleu's 13a:
    lowercase, and every apostrophe a token of its own (the outputs split them already:
    "committee ' s"; the references do not: "committee's")."""
    return " ".join(re.sub(r"'", " ' ", text.lower()).split())


def bleu(hyps: list[str], refs: list[str]) -> float:
    import sacrebleu

    return sacrebleu.corpus_bleu([normalize(h) for h in hyps], [[normalize(r) for r in refs]], tokenize="13a").score


def summarize(c: dict, ids, words: dict[int, int], exact: dict[int, dict], refs, best: dict[int, float]) -> dict:
    rows = c["rows"]
    ok = [i for i in ids if "score" in rows.get(i, {})]
    avail = [i for i in ids if exact.get(i, {}).get("status") == "ok" and i in ok]
    errors = [i for i in avail if rows[i]["score"] < exact[i]["score"] - EPS]
    better = [i for i in avail if rows[i]["score"] > exact[i]["score"] + EPS]
    nwords = sum(words[i] for i in ids)
    secs = sum(rows[i]["seconds"] for i in ids)
    s = {
        "label": c["label"],
        "size": c["size"],
        "failed": len(ids) - len(ok),
        "mean_score": sum(rows[i]["score"] for i in ok) / len(ok) if len(ok) == len(ids) else None,
        "errors": len(errors),
        "error_ids": errors,
        "better_than_exact": len(better),
        "exact_n": len(avail),
        "bleu": bleu([rows[i].get("translation", "") for i in ids], [refs[i] for i in ids]),
        "ms_word": 1000 * secs / nwords,
        "hyps_word": sum(rows[i]["transitions"] for i in ids) / nwords,
        "transitions": sum(rows[i]["transitions"] for i in ids),
        "below_best": sum(1 for i in ok if i not in avail and i in best and rows[i]["score"] < best[i] - EPS),
        "seconds": secs,
    }
    if c["label"].startswith("NLTK"):
        s["over_limit"] = sum(bool(rows[i].get("over_limit")) for i in ids)
        s["mapping_ok"] = sum(bool(rows[i].get("mapping_ok")) for i in ids)
        s["max_jump"] = max((rows[i].get("max_jump", 0) for i in ids), default=0)
    return s


# ---------------------------------------------------------------------------
# Rendering


def fmt_err(s: dict) -> str:
    pct = 100 * s["errors"] / s["exact_n"] if s["exact_n"] else float("nan")
    return f"{s['errors']} ({pct:.0f}%)"


def plot(summaries: list[dict], best_known: float | None, out_dir: Path, n_sent: int, n_exact: int) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [d[0] for d in DECODERS if any(s["label"] == d[0] for s in summaries)]
    styles = {
        "beam (bound)": ("tab:blue", "o", "-"),
        "beam (unigram)": ("tab:cyan", "s", "--"),
        "beam (unigram+distortion)": ("tab:brown", "P", "-"),
        "beam (none)": ("tab:gray", "^", ":"),
        "stack": ("tab:red", "o", "-"),
        "stack +DE": ("tab:orange", "s", "--"),
        "stack +DE +EP": ("tab:green", "D", "-"),
        "NLTK StackDecoder": ("tab:purple", "v", "-."),
    }
    files = []

    def draw(ax, key, zoom=False):
        for label in labels:
            pts = [s for s in summaries if s["label"] == label and s[key] is not None]
            if not pts:
                continue
            color, marker, ls = styles.get(label, ("black", "o", "-"))
            ax.plot([s["ms_word"] for s in pts], [s[key] for s in pts], marker=marker, ls=ls, color=color, label=label)
            for s in pts:
                ax.annotate(str(s["size"]), (s["ms_word"], s[key]), textcoords="offset points", xytext=(3, 3),
                            fontsize=7, color=color, annotation_clip=True)
        if key == "mean_score" and best_known is not None:
            ax.axhline(best_known, color="black", lw=0.8, ls=":", label="best known (exact where available)")
        ax.set_xscale("log")
        ax.set_xlabel("ms per source word (log scale)")
        ax.grid(True, which="both", alpha=0.3)

    # Model score: the whole range, and zoomed to within 2 points of the best known mean.
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5))
    draw(left, "mean_score")
    left.set_ylabel(f"mean model score ({n_sent} sentences, higher is better)")
    left.set_title("model score vs. time (labels: beam/stack size)", fontsize=9)
    left.legend(fontsize=8, loc="lower right")
    draw(right, "mean_score", zoom=True)
    if best_known is not None:
        right.set_ylim(best_known - 2.0, best_known + 0.25)
    right.set_title("zoom: within 2 of the best known mean score", fontsize=9)
    fig.suptitle("Hansards fr-en, bigram UN LM, d = 4, table-limit 20", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_dir / "search_score.png", dpi=100)
    plt.close(fig)
    files.append("search_score.png")

    fig, ax = plt.subplots(figsize=(8, 5.5))
    draw(ax, "errors")
    ax.set_ylabel(f"search errors (of {n_exact} sentences with an exact result)")
    ax.set_title("Hansards fr-en, d = 4: search errors vs. time (labels: beam/stack size)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "search_errors.png", dpi=100)
    plt.close(fig)
    files.append("search_errors.png")
    return files


def fastest(summaries, labels, max_errors: int):
    pts = [s for s in summaries if s["label"] in labels and s["errors"] <= max_errors and s["failed"] == 0]
    return min(pts, key=lambda s: s["ms_word"]) if pts else None


def render(meta: dict, summaries: list[dict], exact: dict[int, dict], ids, words, configs, notes, plots) -> str:
    n = len(ids)
    avail = [i for i in ids if exact.get(i, {}).get("status") == "ok"]
    by = {(s["label"], s["size"]): s for s in summaries}
    out = [
        "# Search evaluation: beam decoders against the exact search",
        "",
        "<!-- Generated by scripts/eval_search.py; rerun it rather than editing the numbers by hand. -->",
        "",
        f"- command: `{meta['command']}`",
        f"- machine: {meta['machine']}",
        f"- code: {meta['code']}",
        f"- date: {meta['date']}; load average (1/5/15 min) at start {meta['load_start']}, at end {meta['load_end']}. "
        "The machine is shared: other processes may have run concurrently (the load average counts this run's "
        "own process too), so times are indicative; every decoder runs in this one process (one core).",
        f"- run time: {meta['total']:.0f} s in all: exact phase {meta['exact_seconds']:.0f} s "
        f"({meta['exact_cached']} of {n} exact results read from the cache `{meta['exact_cache']}`), "
        f"decoding grid {meta['grid_seconds']:.0f} s.",
        f"- sentences: {n} of the 48 in `hansards-fr-en-decoder/input`, {sum(words[i] for i in ids)} source words.",
        "",
        "## Setup",
        "",
        "Model: `load_model(phrase_table=tm, tm_score_format=\"log10\", lm=english-lm-un/lm.en.arpa, lm_order=2, "
        "distortion_limit=4, table_limit=20)`, default weights (lm = tm = distortion = unknown = 1, word = phrase = 0). "
        "The LM is the UN-domain bigram (the Hansards LM is unavailable), so BLEU is low for every system; it is "
        "reported to compare systems, not as a translation quality result.",
        "",
        f"Exact reference: `Decoder(model, \"{meta['exact_method']}\", max_states={meta['exact_max_states']:,})` "
        f"with {meta['exact_budget']:.0f} s per sentence (SIGALRM, `timed` of scripts/bench_fst.py). "
        f"**{len(avail)} of {n} sentences have an exact result**; search errors are counted on those only "
        "(a search error: the decoder's best model score < exact − 1e-6).",
    ]
    missing = [i for i in ids if i not in avail]
    if missing:
        out.append(
            "Without an exact result: "
            + ", ".join(f"#{i} (n={words[i]}, {exact.get(i, {}).get('status', '?')})" for i in missing)
            + "."
        )
    ex_secs = [exact[i]["seconds"] for i in avail]
    if ex_secs:
        out.append(
            f"Time of the exact search on those: median {sorted(ex_secs)[len(ex_secs) // 2]:.1f} s, max {max(ex_secs):.1f} s per sentence "
            f"({1000 * sum(ex_secs) / sum(words[i] for i in avail):.0f} ms/word). Computing all {n} exact results "
            f"without the cache took {sum(exact[i]['seconds'] for i in ids if i in exact):.0f} s (the sum of the "
            "per-sentence times stored in the cache, failures included: a run of its own before this one, on the "
            "same shared machine)."
        )
    out += [
        "",
        "Decoders (every option not named is the method's default; no beam threshold anywhere):",
        "",
        f"- `beam (h)` for h in {', '.join('`%s`' % h for h in meta.get('heuristics', signature_beam.HEURISTICS))}: "
        "`Decoder(model, \"beam\", beam_size=k, heuristic=h)`, the signature beam "
        "(beam(T_j) keeps the k best signature states of each position j by α + β; "
        f"the default heuristic is `{meta.get('default_heuristic', signature_beam.DEFAULT_HEURISTIC)}`).",
        "- `stack`: `Decoder(model, \"stack\", beam_size=k)`, Pharaoh/Moses stacks of k hypotheses (recombination keys).",
        "- `stack +DE`: also `distortion_estimate=True` (Moore & Quirk 2007, Section 4).",
        "- `stack +DE +EP`: also `early_pruning=True` (M&Q Section 5; early threshold ln(1e5) = 11.5, the stack "
        "decoder's default when no beam threshold is set).",
        "- `NLTK StackDecoder`: `nltk.translate.StackDecoder` "
        f"(NLTK {meta['nltk_version']}) with `stack_size=k`; mapping below.",
        "",
        "Columns: *mean score* = mean model score of the best derivation over all sentences (our scorer, "
        "`fstdecode.problem.scorer`); *errors* = search errors (share of the sentences with an exact result); "
        f"*BLEU* = sacrebleu {meta['sacrebleu_version']} corpus BLEU against `ref`; *ms/word* = total decoding "
        "time / source words (for fstdecode `DecodeResult.stats.seconds`: building the sentence's options and "
        "problem, the search, scoring the result; for NLTK the `translate` call); *hyps/word* = hypotheses "
        "evaluated / source words: `stats.transitions` (beam: signature transitions scored; stack: extensions scored, "
        "M&Q's \"partial hypotheses evaluated\"; NLTK: calls of `probability_change`, one per expansion). The units "
        "differ between the signature beam and the stack decoders (a signature transition joins tapes, a stack "
        "extension appends a phrase), so compare hyps/word within a family and time across families.",
        "",
        "BLEU: both the system outputs and the references are lowercased, every apostrophe is made a token of its "
        "own (`re.sub(\"'\", \" ' \")`, then whitespace collapsed: the outputs already read `committee ' s`, the "
        "references `committee's`), and then scored by `sacrebleu.corpus_bleu(..., tokenize=\"13a\")`, which "
        "splits the references' remaining punctuation as the outputs have it. Spelling differences (`honourable` "
        "in the phrase table, `Honorable` in the references) are left alone; they cost every system alike.",
        "",
        "## Results",
        "",
        "| decoder | size | mean score | errors | below best known | better than exact | BLEU | ms/word | hyps/word |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        ms = f"{s['mean_score']:.4f}" if s["mean_score"] is not None else f"n/a ({s['failed']} failed)"
        out.append(
            f"| {s['label']} | {s['size']} | {ms} | {fmt_err(s)} | {s['below_best']} | {s['better_than_exact']} | {s['bleu']:.2f} | "
            f"{s['ms_word']:.2f} | {s['hyps_word']:.0f} |"
        )
    best_known = meta.get("best_known")
    if best_known is not None:
        out.append("")
        out.append(
            f"Best known mean score: {best_known:.4f} (per sentence the exact score where available, else the best "
            "score any fstdecode decoder found). *better than exact* counts sentences whose score beats the exact "
            "result: 0 for every fstdecode decoder is a consistency check; NLTK can beat it only with a derivation "
            "outside the distortion limit."
        )
    if notes:
        out += ["", "Grid trimmed (the per-pass cap keeps the run near 20 minutes):", ""] + [f"- {x}" for x in notes]
    out += ["", "![model score vs. ms/word](" + plots[0] + ")", "", "![search errors vs. ms/word](" + plots[1] + ")", ""]
    out += discussion(meta, summaries, by, avail, n, words)
    out += nltk_section(meta, summaries)
    return "\n".join(out) + "\n"


def _cfg(s: dict | None) -> str:
    if not s:
        return "none"
    return f"{s['label']} {s['size']} ({s['ms_word']:.2f} ms/word, {s['errors']} error{'' if s['errors'] == 1 else 's'})"


def discussion(meta, summaries, by, avail, n, words) -> list[str]:
    out = ["## Targets (benchmarks, not tests)", ""]
    ok = [s for s in summaries if s["failed"] == 0]
    beams = [s for s in ok if s["label"] in HEURISTIC_LABELS]
    default = [s for s in ok if s["label"] == DEFAULT_LABEL]
    # (a) equal search errors: the fastest beam (any heuristic) vs the fastest plain stack and any stack variant.
    levels = sorted({s["errors"] for s in ok if s["label"] in STACK_LABELS + HEURISTIC_LABELS})
    out += [
        "**(a) At equal search errors the signature beam is at least as fast as the stack decoder.** For each "
        "error count E reached on the grid: the fastest signature beam configuration (any heuristic) with at "
        "most E errors, against the fastest plain stack configuration and the fastest stack configuration of "
        "any variant with at most E errors (ratio = stack time ÷ beam time; below 1: the stack is faster).",
        "",
        "| errors ≤ E | fastest beam, any heuristic | fastest plain stack | plain ÷ beam | fastest stack, any variant | any ÷ beam |",
        "|---:|---|---|---:|---|---:|",
    ]
    wins = losses = 0
    worst = None
    beam_ok = {"plain": [], "any": []}  # levels where the beam is at least as fast
    beam_slow = {"plain": [], "any": []}
    for e in levels:
        b = fastest(ok, HEURISTIC_LABELS, e)
        p = fastest(ok, ("stack",), e)
        v = fastest(ok, STACK_LABELS, e)
        cells = [f"| {e} | {_cfg(b)} | {_cfg(p)} | "]
        for st in (p, v):
            kind = "plain" if st is p else "any"
            if b is not None and st is not None:
                r = st["ms_word"] / b["ms_word"]
                wins += r >= 1.0
                losses += r < 1.0
                (beam_ok if r >= 1.0 else beam_slow)[kind].append(e)
                worst = r if worst is None else min(worst, r)
                cells.append(f"{r:.2f}")
            elif st is not None:  # the stack reaches E, the beam does not
                losses += 1
                beam_slow[kind].append(e)
                cells.append("beam never")
            else:
                cells.append("")
            if st is p:
                cells.append(f" | {_cfg(v)} | ")
        out.append("".join(cells) + " |")
    verdict = "holds" if losses == 0 else "does not hold"
    out += [
        "",
        f"(a) {verdict} on this run: in {losses} of {wins + losses} comparisons the stack decoder was faster at "
        f"equal or fewer errors" + (f" (the beam took up to {1 / worst:.1f}x the stack's time)" if worst is not None and worst < 1 else "") + ". "
        + " ".join(
            f"Against {name}, the beam was at least as fast at E = {', '.join(map(str, beam_ok[k])) or 'none'} "
            f"and slower at E = {', '.join(map(str, beam_slow[k])) or 'none'}."
            for k, name in (("plain", "the plain stack decoder"), ("any", "the best stack variant"))
        )
        + " How much of a ratio near 1 is noise: see the timing repeatability paragraphs after the heuristic comparison.",
    ]
    if default:
        b1 = min(default, key=lambda s: s["size"])
        stack1 = by.get(("stack", b1["size"]))
        b0 = [s for s in beams if s["errors"] == 0]
        extra = (
            f" At the smallest size ({b1['size']}) the beam with the default heuristic costs {b1['ms_word']:.2f} ms/word for "
            f"{b1['hyps_word']:.0f} transitions/word"
            + (f", the plain stack {stack1['ms_word']:.2f} ms/word for {stack1['hyps_word']:.0f} extensions/word" if stack1 else "")
            + "."
        )
        st10, b10 = by.get(("stack", 10)), by.get((DEFAULT_LABEL, 10))
        if st10 is not None and b10 is not None:
            extra += (
                f" At size 10 the default beam makes {b10['errors']} error{'' if b10['errors'] == 1 else 's'} where the plain "
                f"stack makes {st10['errors']}: "
                "the beam ranks the states of a position j by α + β, where β only estimates what joining the open "
                "tapes will cost (all states of j translate the same prefix; fstdecode/search/signature_beam.py), "
                "while the stack ranks hypotheses by score + a future-cost estimate of the uncovered words."
            )
        if b0:
            f0 = min(b0, key=lambda s: s["ms_word"])
            extra += f" The fastest beam with no error on the {len(avail)} sentences: {_cfg(f0)}."
        else:
            extra += " No beam configuration on the grid made no error."
        out[-1] += extra
    out.append("")
    # (b) M&Q.
    plain = [s for s in ok if s["label"] == "stack"]
    ep = [s for s in ok if s["label"] == "stack +DE +EP"]
    de = [s for s in ok if s["label"] == "stack +DE"]
    if plain and ep:
        top = max(s["mean_score"] for s in plain)
        p = min((s for s in plain if s["mean_score"] >= top - EPS), key=lambda s: s["ms_word"])
        reach = [s for s in ep if s["mean_score"] >= top - EPS]
        out.append(
            f"**(b) Moore & Quirk reproduce qualitatively: with both improvements the stack decoder reaches the plain "
            f"decoder's best model score in at least 5x less time.** The plain stack decoder's best mean score on "
            f"the grid is {top:.4f}, first reached at size {p['size']} ({p['ms_word']:.2f} ms/word, "
            f"{p['hyps_word']:.0f} hypotheses/word, {p['errors']} errors)."
        )
        if reach:
            q = min(reach, key=lambda s: s["ms_word"])
            ratio = p["ms_word"] / q["ms_word"]
            out.append(
                f"With distortion estimate and early pruning it is reached at size {q['size']} "
                f"({q['ms_word']:.2f} ms/word, {q['hyps_word']:.0f} hypotheses/word, {q['errors']} errors): "
                f"**{ratio:.1f}x less time** and {p['hyps_word'] / q['hyps_word']:.1f}x fewer hypotheses evaluated; "
                f"the 5x target {'holds' if ratio >= 5 else 'does NOT hold'}."
            )
        else:
            q = max(ep, key=lambda s: s["mean_score"])
            out.append(
                f"With both improvements the stack decoder does not reach it on the grid (its best: {q['mean_score']:.4f} "
                f"at size {q['size']}, {q['ms_word']:.2f} ms/word): the target does NOT hold."
            )
        out += ["", "At equal stack size, against the plain decoder (time ratio plain ÷ variant; errors plain → variant):", ""]
        out += ["| size | +DE time ratio | +DE errors | +DE +EP time ratio | +DE +EP hyps ratio | +DE +EP errors |", "|---:|---:|---:|---:|---:|---:|"]
        for s in plain:
            d_, e_ = by.get(("stack +DE", s["size"])), by.get(("stack +DE +EP", s["size"]))
            row = f"| {s['size']} | "
            row += f"{s['ms_word'] / d_['ms_word']:.2f} | {s['errors']} → {d_['errors']} | " if d_ else " | | "
            row += (f"{s['ms_word'] / e_['ms_word']:.1f} | {s['hyps_word'] / e_['hyps_word']:.1f} | {s['errors']} → {e_['errors']} |"
                    if e_ else " | | |")
            out.append(row)
        if de:
            pairs = [(s, by[("stack", s["size"])]) for s in de if ("stack", s["size"]) in by]
            slower = [s["size"] for s, p_ in pairs if s["ms_word"] > p_["ms_word"]]
            fewer = [s["size"] for s, p_ in pairs if s["errors"] < p_["errors"]]
            out += [
                "",
                "On this run the distortion estimate alone was slower than plain "
                + ("at every size" if len(slower) == len(pairs) else f"at sizes {', '.join(map(str, slower)) or 'none'} of {', '.join(str(s['size']) for s, _ in pairs)}")
                + f" and made fewer errors at sizes {', '.join(map(str, fewer)) or 'none'}; "
                "with early pruning on top, the hypotheses scored fall the more the larger the stack, and the time with them.",
            ]
    out.append("")
    # (c)
    fst = [s for s in ok if not s["label"].startswith("NLTK") and s["exact_n"]]
    limit = math.floor(0.05 * len(avail))
    good = [s for s in fst if s["ms_word"] <= 5 and s["errors"] <= 0.05 * s["exact_n"]]
    out.append(
        "**(c) The best setting runs at ≤ 5 ms/word with search errors on ≤ 5% of the sentences** "
        f"(≤ {limit} of the {len(avail)} with an exact result)."
    )
    if good:
        g = min(good, key=lambda s: (s["errors"], s["ms_word"]))
        out.append(
            f"Holds: {len(good)} configuration(s) meet it, all listed: "
            + ", ".join(_cfg(s) for s in sorted(good, key=lambda s: s["ms_word"]))
            + f". The fastest with the fewest errors is **{g['label']} {g['size']}: {g['ms_word']:.2f} ms/word, "
            f"{g['errors']} search errors**, mean score {g['mean_score']:.4f}"
            + (f", {g['below_best']} of the {n - len(avail)} sentences without an exact result below the best known score" if n > len(avail) else "")
            + "."
        )
    else:
        near = sorted(fst, key=lambda s: (s["errors"], s["ms_word"]))[:3]
        fast = [s for s in fst if s["ms_word"] <= 5]
        out.append(
            "Does NOT hold: no configuration meets both. Fewest errors: " + ", ".join(_cfg(s) for s in near)
            + (". Fewest errors within 5 ms/word: " + ", ".join(_cfg(s) for s in sorted(fast, key=lambda s: (s["errors"], s["ms_word"]))[:2]) if fast else "")
            + "."
        )
    out.append(
        f"The {n - len(avail)} sentences without an exact result are the longest ones (n ≥ "
        f"{min((w for i, w in words.items() if i not in avail), default=0)}), so the error rates are those of "
        "the shorter sentences; the column *below best known* counts, for the others, a score below the best any "
        "fstdecode decoder found (a lower bound on the errors there)."
        if n > len(avail) else ""
    )
    out.append("")
    # Heuristics.
    out += [
        "## Beam heuristics: " + " vs. ".join(
            f"`{h}`" + (" (the paper's β)" if h == "unigram" else "") for h in signature_beam.HEURISTICS),
        "",
        "The fastest configuration of each heuristic with at most E search errors:",
        "",
        "| errors ≤ E | " + " | ".join(HEURISTIC_LABELS) + " |",
        "|---:|" + "---|" * len(HEURISTIC_LABELS),
    ]
    levels = sorted({s["errors"] for s in ok if s["label"] in HEURISTIC_LABELS})
    fastest_at = {}
    for e in levels:
        cells = []
        row = {}
        for h in HEURISTIC_LABELS:
            f = fastest(ok, (h,), e)
            row[h] = f
            cells.append(f"size {f['size']}: {f['ms_word']:.2f} ms/word" if f else "not reached")
        reached = {h: f for h, f in row.items() if f}
        fastest_at[e] = min(reached, key=lambda h: reached[h]["ms_word"]) if reached else None
        out.append(f"| {e} | " + " | ".join(cells) + " |")
    strict = levels[0] if levels else None
    wins = {h: [e for e in levels if fastest_at[e] == h] for h in HEURISTIC_LABELS}
    out.append("")
    if strict is not None:
        short = {h: h[len("beam ("):-1] for h in HEURISTIC_LABELS}
        best_strict = fastest_at[strict]
        reach_strict = [h for h in HEURISTIC_LABELS if fastest(ok, (h,), strict)]
        low = [e for e in levels if e <= 0.05 * len(avail)]
        out.append(
            f"Fewest errors reached on the grid: {strict}, by `{'`, `'.join(short[h] for h in reach_strict)}`. "
            "Fastest heuristic per error level: "
            + "; ".join(f"`{short[h]}` at E = {', '.join(map(str, v))}" for h, v in wins.items() if v)
            + ". Errors per size:"
        )
        per_size = {}
        for h in HEURISTIC_LABELS:
            pts = [s for s in ok if s["label"] == h]
            per_size[h] = {s["size"]: s["errors"] for s in pts}
            if pts:
                out[-1] += f" `{short[h]}` " + ", ".join(f"{s['errors']} (size {s['size']})" for s in pts) + ";"
        out[-1] = out[-1].rstrip(";") + "."
        # Recommendation: the heuristic fastest at the most error levels within 5% of the sentences;
        # ties go to the one reaching the fewest errors, then the fewest errors at the smallest size.
        def merit(h):
            pts = [s for s in ok if s["label"] == h]
            return (
                sum(1 for e in low if fastest_at[e] == h),
                -min((s["errors"] for s in pts), default=10**9),
                -min(pts, key=lambda s: s["size"])["errors"] if pts else -(10**9),
            )

        rec = max(HEURISTIC_LABELS, key=merit)
        out += [
            "",
            f"**Recommendation: `{short[rec]}` as the default heuristic** "
            + (f"(it is the current default, `signature_beam.DEFAULT_HEURISTIC`)." if rec == DEFAULT_LABEL
               else f"(the current default is `{short[DEFAULT_LABEL]}`).")
            + f" Rule: the heuristic that is fastest at the most error levels E ≤ 5% of the sentences "
            f"(E = {', '.join(map(str, low)) or 'none reached'}); `{short[rec]}` is fastest at "
            f"{sum(1 for e in low if fastest_at[e] == rec)} of them"
            + (f" and the only heuristic to reach {strict} errors" if reach_strict == [rec] else "")
            + ".",
        ]
        others = [h for h in HEURISTIC_LABELS if h != rec]
        for h in others:
            common = sorted(set(per_size[rec]) & set(per_size[h]))
            fewer = sum(per_size[rec][k] < per_size[h][k] for k in common)
            more = sum(per_size[rec][k] > per_size[h][k] for k in common)
            faster_levels = [e for e in levels if fastest_at[e] == h]
            out[-1] += (
                f" Against `{short[h]}`: fewer errors at {fewer}, more at {more} of {len(common)} sizes"
                + (f"; `{short[h]}` is the fastest at E = {', '.join(map(str, faster_levels))}" if faster_levels else "")
                + "."
            )
    out += ["", PROFILE_NOTE, ""]
    # Timing noise: configurations of one decoder that did identical work.
    groups: dict[tuple, list] = {}
    for s in ok:
        groups.setdefault((s["label"], s["transitions"], s["mean_score"]), []).append(s)
    same = [g for g in groups.values() if len(g) > 1]
    if same:
        out.append(
            "Timing repeatability within this run: "
            + "; ".join(
                f"{g[0]['label']} at sizes {', '.join(str(s['size']) for s in g)} evaluated exactly the same hypotheses "
                f"and found the same derivations, in {', '.join('%.2f' % s['ms_word'] for s in g)} ms/word "
                f"(spread {100 * (max(s['ms_word'] for s in g) / min(s['ms_word'] for s in g) - 1):.0f}%)"
                for g in same
            )
            + "."
        )
        out.append("")
    prev = meta.get("previous")
    if prev:
        out.append(prev)
        out.append("")
    return out


#: A measurement made by hand (cProfile), kept in the doc as such.
PROFILE_NOTE = (
    "Note on the beam's fixed cost (measured by hand, not by this script: cProfile of `beam`, size 1, heuristic "
    "`bound`, on the first 10 sentences, 2026-11-22, at commit 2118b07; the `bound` code path is unchanged in "
    "the measured commit): of 2.0 s under the profiler, 1.13 s went to `Heuristic.start_word` (for each tape-start word, the max over "
    "every word that can precede it, 170k LM look-ups) and 0.73 s to `SearchProblem.junctions` (the junction "
    "table); the beam search proper was a small remainder. Both are per-sentence set-up that does not shrink with "
    "the beam, hence `bound`'s floor at size 1 in the table. `unigram` and `unigram+distortion` score start "
    "words by their unigram probability and skip the max."
)


def nltk_section(meta, summaries) -> list[str]:
    nl = [s for s in summaries if s["label"].startswith("NLTK")]
    out = [
        "## NLTK's StackDecoder as an outside peer",
        "",
        "Settings (`scripts/eval_search.py`, `NltkPeer` and `NltkLM`):",
        "",
        "- `PhraseTable`: every pair of the model's table after the table limit (20 per source phrase, Moses' "
        "ranking), `log_prob` = the fstdecode TM feature in ln (the log10 scores × ln 10, times the TM weight 1); "
        f"plus, for each of the {meta.get('nltk_unknown', '?')} input words with no one-word entry, the pair word → word "
        "with `log_prob` = −100 (fstdecode's unknown-word copy: TM 0, unknown feature −100, weight 1). NLTK itself "
        "gives up on a sentence with an untranslatable word.",
        "- `language_model`: an adapter around the same `ArpaLM` read as a bigram (`NltkLM`). "
        "`probability_change(context, phrase)` gets the NLTK hypothesis being extended as `context` and returns "
        "Σ ln p(w | previous word) over the phrase, the previous word being the hypothesis's last target word "
        "(`<s>` at the start). `probability(phrase)` is used only by NLTK's future-score table, which (in NLTK "
        "3.10) passes it the **source** phrase; the adapter returns the context-free LM estimate of that source "
        "phrase's TM-best translation, the one whose TM score NLTK adds next to it.",
        "- `distortion_factor` = e^−1 ≈ 0.3679: NLTK adds |jump| × ln(distortion_factor) = −|jump| for each jump "
        "between consecutive phrases, with jump = start of the next phrase − end (exclusive) of the previous one, "
        "which is exactly our −η·|t(p_{i−1}) + 1 − s(p_i)| with η = 1.",
        "- `stack_size` = k (the grid), `beam_threshold` = 0 (off; NLTK's threshold is a probability factor), "
        "`word_penalty` = 0 (our word weight is 0; there is no phrase penalty in NLTK, ours is 0).",
        "",
        "Where NLTK's model and search differ from ours (not adjustable through its API):",
        "",
        "- no distortion limit: any untranslated span may be taken next;",
        "- no distortion for the first phrase (ours charges a jump from `<s>`: its start position) and no final "
        "jump into `</s>` (ours charges n − end of the last phrase);",
        "- no `</s>` LM event;",
        "- no hypothesis recombination; the stack is re-sorted on every push (quadratic in the stack size);",
        "- future score: per span, the TM-best translation's TM + LM estimate (ours: the best over translations of "
        "TM + LM estimate); no distortion in it.",
        "",
        "So NLTK's raw search score of a derivation = our model score + the first and final jumps − ln p(`</s>` | "
        "last word). The output string alone does not say which phrases produced it, so the script records the "
        "hypothesis NLTK returns (it wraps NLTK's internal `_Stack` class so that `best()` also hands the "
        "hypothesis to the script; the search is untouched), reads its phrase spans and targets back, and scores "
        "that derivation with our scorer (among duplicate pairs with the same span and target, the one with the "
        "best TM score). That identity was checked on every sentence:",
        "",
        "| size | mapping identity holds | derivations with a jump > d = 4 | largest jump |",
        "|---:|---:|---:|---:|",
    ]
    for s in nl:
        out.append(f"| {s['size']} | {s['mapping_ok']} of {meta['n']} | {s['over_limit']} | {s['max_jump']} |")
    out += [
        "",
        "The mean scores and search errors of NLTK in the results table are thus of our model, for the derivation "
        "NLTK chose under its own model; a derivation with a jump beyond d = 4 lies outside our search space "
        "(our scorer scores it anyway).",
        "",
    ]
    plain = {s["size"]: s for s in summaries if s["label"] == "stack"}
    if nl:
        top = max(nl, key=lambda s: s["mean_score"] if s["mean_score"] is not None else -math.inf)
        out.append(
            f"On this run NLTK's best mean score under our model is {top['mean_score']:.4f} (stack size {top['size']}, "
            f"{top['errors']} search errors of {top['exact_n']}, BLEU {top['bleu']:.2f}, {top['ms_word']:.1f} ms/word), "
            f"against {meta['best_known']:.4f} for the best known derivations. "
            + " ".join(
                f"At size {s['size']} it took {s['ms_word'] / plain[s['size']]['ms_word']:.1f}x the plain stack "
                f"decoder's time and scored {s['hyps_word'] / plain[s['size']]['hyps_word']:.1f}x its hypotheses."
                for s in nl if s["size"] in plain and s["size"] == top["size"]
            )
            + f" {top['over_limit']} of its {meta['n']} derivations at that size have a jump beyond d = 4 (its first "
            "jump is free and there is no final jump, so starting far from the sentence start costs it nothing), "
            "and our model charges those jumps. For BLEU: "
            f"NLTK {top['bleu']:.2f} at size {top['size']}; {meta.get('bleu_note', '')}." + meta.get("bleu_tail", "")
        )
    return out


# ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"smoke test: {QUICK_SENTENCES} sentences, sizes {QUICK_GRID}")
    ap.add_argument("--limit", type=int, default=None, help="only the first N sentences")
    ap.add_argument("--sizes", default=None, help=f"beam/stack sizes (default {','.join(map(str, GRID))})")
    ap.add_argument("--exact-cache", type=Path, default=Path("/tmp/fstdecode_eval_search_exact.json"))
    ap.add_argument("--exact-method", default="bounded", choices=("bounded", "dp"))
    ap.add_argument("--exact-budget", type=float, default=120.0, help="seconds per sentence for the exact search")
    ap.add_argument("--exact-max-states", type=int, default=3_000_000)
    ap.add_argument("--exact-only", action="store_true", help="fill the exact cache and stop")
    ap.add_argument("--config-cap", type=float, default=100.0,
                    help="skip a decoder's larger sizes once one pass over the sentences is predicted to take longer")
    ap.add_argument("--decoders", default=None, help="comma-separated labels to run (default: all)")
    ap.add_argument("--runs", type=Path, default=None,
                    help="raw measurements (JSON; default /tmp/fstdecode_eval_search_runs[_quick].json)")
    ap.add_argument("--render-only", action="store_true", help="rewrite the doc and plots from --runs without decoding")
    ap.add_argument("--previous-runs", type=Path, default=None,
                    help="an earlier --runs file: the doc compares this run's times with it (repeatability)")
    ap.add_argument("--out", type=Path, default=None, help="default docs/search.md (--quick: /tmp/fstdecode_search_quick.md)")
    args = ap.parse_args(argv)
    if args.out is None:
        args.out = Path("/tmp/fstdecode_search_quick.md") if args.quick else ROOT / "docs" / "search.md"
    if args.runs is None:
        args.runs = Path(f"/tmp/fstdecode_eval_search_runs{'_quick' if args.quick else ''}.json")
    if not DATA.exists():
        log(f"{DATA} is absent: this evaluation needs ../shared/data")
        return 2
    command = "python scripts/eval_search.py" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    if args.render_only:
        saved = json.loads(args.runs.read_text(encoding="utf-8"))
        return finish(args, saved)

    started = time.time()
    load_start = load_avg()
    model, sentences, refs = hansards()
    ids = list(range(len(sentences)))
    if args.quick:
        ids = ids[:QUICK_SENTENCES]
    if args.limit is not None:
        ids = ids[: args.limit]
    sizes = tuple(int(x) for x in args.sizes.split(",")) if args.sizes else (QUICK_GRID if args.quick else GRID)
    words = {i: len(sentences[i].split()) for i in ids}

    t = time.perf_counter()
    cached_before = set(json.loads(args.exact_cache.read_text(encoding="utf-8"))) if args.exact_cache.exists() else set()
    exact = exact_results(model, sentences, ids, args.exact_cache, args.exact_budget, args.exact_max_states, args.exact_method)
    exact_seconds = time.perf_counter() - t
    exact_cached = sum(f"{MODEL_KEY} | {args.exact_method} | {i} | {sentences[i]}" in cached_before for i in ids)
    if args.exact_only:
        ok = sum(e["status"] == "ok" for e in exact.values())
        log(f"exact: {ok} of {len(ids)} in {exact_seconds:.0f} s; cache {args.exact_cache}")
        return 0

    decoders = DECODERS
    if args.decoders:
        wanted = [x.strip() for x in args.decoders.split(",")]
        decoders = tuple(d for d in DECODERS if d[0] in wanted)
    t = time.perf_counter()
    configs, notes = run_all(model, sentences, ids, sizes, args.config_cap, decoders)
    grid_seconds = time.perf_counter() - t

    import nltk
    import sacrebleu

    saved = {
        "meta": {
            "command": command,
            "machine": machine(),
            "code": code_version(),
            "date": datetime.datetime.fromtimestamp(started, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "load_start": load_start,
            "load_end": load_avg(),
            "total": time.time() - started,
            "exact_seconds": exact_seconds,
            "exact_cached": exact_cached,
            "exact_cache": str(args.exact_cache),
            "exact_method": args.exact_method,
            "exact_budget": args.exact_budget,
            "exact_max_states": args.exact_max_states,
            "grid_seconds": grid_seconds,
            "nltk_version": nltk.__version__,
            "sacrebleu_version": sacrebleu.__version__,
            "nltk_unknown": sum(1 for line in sentences for w in set(line.split()) if not model.table.lookup((w,))),
            "n": len(ids),
            "heuristics": list(signature_beam.HEURISTICS),
            "default_heuristic": signature_beam.DEFAULT_HEURISTIC,
        },
        "ids": ids,
        "words": {str(i): w for i, w in words.items()},
        "refs": refs,
        "exact": {str(i): e for i, e in exact.items()},
        "configs": [{**c, "rows": {str(i): r for i, r in c["rows"].items()}} for c in configs],
        "notes": notes,
    }
    args.runs.parent.mkdir(parents=True, exist_ok=True)
    args.runs.write_text(json.dumps(saved, ensure_ascii=False), encoding="utf-8")
    log(f"raw measurements: {args.runs}")
    return finish(args, saved)


def compare_previous(path: Path, summaries, ids, words, exact, refs, best) -> str:
    """A sentence on how this run's ms/word compare with an earlier run of the same configurations."""
    old = json.loads(path.read_text(encoding="utf-8"))
    before = {}
    for c in old["configs"]:
        if c["complete"]:
            rows = {int(i): r for i, r in c["rows"].items()}
            before[(c["label"], c["size"])] = (
                1000 * sum(rows[i]["seconds"] for i in ids) / sum(words[i] for i in ids),
                sum(rows[i]["transitions"] for i in ids),
            )
    ratios = []
    for s in summaries:
        got = before.get((s["label"], s["size"]))
        if got and got[1] == s["transitions"]:
            ratios.append((s["ms_word"] / got[0], s))
    if not ratios:
        return ""
    ratios.sort(key=lambda x: x[0])
    med = ratios[len(ratios) // 2][0]
    lo, hi = ratios[0], ratios[-1]
    m = old["meta"]
    return (
        f"Timing repeatability across runs: the same {len(ratios)} configurations (identical hypotheses evaluated) "
        f"were also timed in an earlier run ({m['date']}, {m['code']}, load average at start {m['load_start']}, "
        f"at end {m['load_end']}). This run's ms/word ÷ that run's: median {med:.2f}, from {lo[0]:.2f} "
        f"({lo[1]['label']} {lo[1]['size']}) to {hi[0]:.2f} ({hi[1]['label']} {hi[1]['size']}). Time differences "
        "of that order between configurations are within the noise of this shared machine."
    )


def finish(args, saved: dict) -> int:
    meta = saved["meta"]
    ids = saved["ids"]
    words = {int(i): w for i, w in saved["words"].items()}
    exact = {int(i): e for i, e in saved["exact"].items()}
    configs = [{**c, "rows": {int(i): r for i, r in c["rows"].items()}} for c in saved["configs"]]
    complete = [c for c in configs if c["complete"]]
    best = {}
    for i in ids:
        cands = [c["rows"][i]["score"] for c in complete if not c["label"].startswith("NLTK") and "score" in c["rows"][i]]
        if exact.get(i, {}).get("status") == "ok":
            cands.append(exact[i]["score"])
        if cands:
            best[i] = max(cands)
    summaries = [summarize(c, ids, words, exact, saved["refs"], best) for c in complete]
    if args.previous_runs is not None and args.previous_runs.exists():
        meta["previous"] = compare_previous(args.previous_runs, summaries, ids, words, exact, saved["refs"], best)
    meta["best_known"] = sum(best.values()) / len(ids) if len(best) == len(ids) else None
    ours = [x for x in summaries if not x["label"].startswith("NLTK") and x["mean_score"] is not None]
    if ours:
        top = max(x["mean_score"] for x in ours)
        b = min((x for x in ours if x["mean_score"] >= top - EPS), key=lambda x: x["ms_word"])
        m = max(ours, key=lambda x: x["bleu"])
        meta["bleu_note"] = (
            f"{b['label']} {b['size']} (the fastest to the best mean score) has BLEU {b['bleu']:.2f}; the highest "
            f"BLEU of any fstdecode configuration is {m['bleu']:.2f} ({m['label']} {m['size']}, mean score "
            f"{m['mean_score']:.4f}, {m['errors']} search errors)"
        )
        if m["errors"] > 0:
            meta["bleu_tail"] = " So on this data BLEU does not follow the model score closely: the highest BLEU came with search errors."
    args.out.parent.mkdir(parents=True, exist_ok=True)
    n_exact = sum(exact.get(i, {}).get("status") == "ok" for i in ids)
    plots = plot(summaries, meta["best_known"], args.out.parent, len(ids), n_exact)
    args.out.write_text(render(meta, summaries, exact, ids, words, configs, saved["notes"], plots), encoding="utf-8")
    log(f"wrote {args.out} and {', '.join(plots)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
