#!/usr/bin/env python3
"""Search evaluation: beam decoders against the exact search on the Hansards fr-en model.

Model: ../shared/data/hansards-fr-en-decoder/tm (log10 scores, table-limit
20) with the UN English LM (../shared/data/english-lm-un, a trigram file) read
at order ``--lm-order`` (default 2, a bigram; 3 is its real order), distortion
limit d = 4, default weights (lm = tm = distortion = unknown = 1, word =
phrase = 0). The 48 French sentences of ``input`` are decoded by:

* the signature beam (``--method beam``) with each beam heuristic
  (every heuristic of ``signature_beam.HEURISTICS``: ``bound``, ``unigram`` =
  the paper's β, ``unigram+distortion``, ``none``);
* the stack decoder (``--method stack``): plain, with Moore & Quirk's
  distortion estimate, and with distortion estimate + early pruning;
* NLTK's ``nltk.translate.StackDecoder`` on the same phrase pairs and LM
  (adapters below; its settings are documented in docs/search.md);

each over a grid of beam (stack) sizes. The exact best score of each
sentence comes from ``--method exact`` (by default) under a time budget and a state
cap; it is cached in ``--exact-cache`` (JSON) so that reruns are cheap.
For each decoder and size the report gives the mean model score over all
sentences, the search errors (best score < exact − 1e-6) on the sentences
with an exact result, BLEU against ``ref`` (sacrebleu), ms/word and
hypotheses/word, and plots score and search errors against ms/word.
The raw measurements are saved to ``--runs`` (JSON); ``--render-only``
rewrites the doc and plots from that file without decoding. The doc and
plots come from scripts/search_report.py, its prose from
scripts/templates/search.md.in. Each LM order has its own doc, raw runs
file and exact-cache keys: order 2 docs/search.md and
/tmp/fstdecode_eval_search_runs.json, order 3 docs/search-trigram.md and
/tmp/fstdecode_eval_search_runs_order3.json; the plots are named after the
doc (docs/search_score.png, docs/search-trigram_score.png, ...).

    python -m scripts.eval_search [--lm-order 2|3] [--quick] [--limit N] [--sizes 1,3,...] [--config-cap SEC]
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

import contextlib
import json
import math
import shutil
import sys
import time
from pathlib import Path

from scripts.benchlib import DOCS, HANSARDS, hansards_args, load_avg, log, script, timed
from scripts.search_report import (
    DEFAULT_LM_ORDER, EPS, HEURISTIC_LABELS, LM_NAMES, NLTK_LABEL, doc_name, order_of, write_report,
)

from fstdecode.decoder import Decoder
from fstdecode.io.arpa import BOS, EOS
from fstdecode.model.model import load_model
from fstdecode.problem.scorer import jumps, score as score_derivation
from fstdecode.search import signature_beam
from fstdecode.problem.sentence import build_sentence


def model_args(lm_order: int = DEFAULT_LM_ORDER) -> dict:
    """``load_model`` arguments of the evaluated model, with the UN LM read at order ``lm_order``."""
    return hansards_args(distortion_limit=4, table_limit=20, lm_order=lm_order)


def model_key(lm_order: int = DEFAULT_LM_ORDER) -> str:
    """Identifies the model in the exact cache (a change of any of these, the LM order included,
    invalidates it); order 2 keeps the key of the runs made before ``--lm-order`` existed."""
    return f"hansards tm log10, table-limit 20 | lm.en.arpa as {LM_NAMES[lm_order]} | d=4 | default weights"


def exact_key(key: str, method: str, i: int, sentence: str) -> str:
    """The exact cache's key of sentence ``i`` under the model ``key`` (:func:`model_key`) and ``method``."""
    return f"{key} | {method} | {i} | {sentence}"


GRID = (1, 3, 10, 30, 100, 300, 1000)
QUICK_GRID = (1, 10, 100)
QUICK_SENTENCES = 5

#: (label, kind, method, fixed options). kind "fst" = an fstdecode method, "nltk" = NLTK's StackDecoder.
DECODERS = tuple((label, "fst", "beam", {"heuristic": h}) for label, h in zip(HEURISTIC_LABELS, signature_beam.HEURISTICS)) + (
    ("stack", "fst", "stack", {"distortion_estimate": False, "early_pruning": False}),
    ("stack +DE", "fst", "stack", {"distortion_estimate": True, "early_pruning": False}),
    ("stack +DE +EP", "fst", "stack", {"distortion_estimate": True, "early_pruning": True}),
    (NLTK_LABEL, "nltk", None, {}),
)


# ---------------------------------------------------------------------------
# Data


def hansards(lm_order: int = DEFAULT_LM_ORDER):
    """(model, sentences, references); the input lines end with a space, stripped here."""
    model = load_model(**model_args(lm_order))
    src = [line.strip() for line in (HANSARDS / "input").read_text(encoding="utf-8").splitlines()]
    ref = [line.strip() for line in (HANSARDS / "ref").read_text(encoding="utf-8").splitlines()]
    if len(src) != len(ref):
        raise SystemExit(f"{HANSARDS}: {len(src)} input lines but {len(ref)} references")
    return model, src, ref


# ---------------------------------------------------------------------------
# Exact results (cached)


def exact_results(
    model, sentences, ids, cache_path: Path, budget: float, max_states: int, method: str, key: str
) -> dict[int, dict]:
    """The exact best score of each sentence in ``ids`` (``status`` "ok"), else why not.

    ``key`` identifies the model in the cache (:func:`model_key`). A cached
    failure is retried only when this run allows more time or states than the
    run that failed; the cache is saved after every sentence.
    """
    cache = {}
    if cache_path.exists():
        cache = json.loads(cache_path.read_text(encoding="utf-8"))
    decoder = Decoder(model, method, max_states=max_states)
    out = {}
    for i in ids:
        k = exact_key(key, method, i, sentences[i])
        got = cache.get(k)
        if got is not None and (
            got["status"] == "ok" or (got["budget"] >= budget and got["max_states"] >= max_states)
        ):
            out[i] = got
            continue
        result, secs = timed(lambda: decoder.decode(sentences[i], id=i), budget)
        if result is None:
            got = {"status": "timeout", "seconds": budget}
        elif result.error is not None or result.reason is not None:
            # Over budget, a line keeps a derivation that is not proven optimal: not an exact result.
            why = result.error or result.reason
            status = "max_states" if "max-states" in why else "error"
            got = {"status": status, "error": why, "seconds": secs}
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
        cache[k] = out[i] = got
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        cache_path.write_text(json.dumps(cache, indent=1, ensure_ascii=False), encoding="utf-8")
        log(f"exact {i:2d} n={len(sentences[i].split()):2d} {got['status']:10s} {got['seconds']:7.1f} s "
            + (f"score {got['score']:.4f} states {got['states']}" if got["status"] == "ok" else got.get("error", "")))
    return out


# ---------------------------------------------------------------------------
# NLTK's StackDecoder on the same model


class NltkLM:
    """fstdecode's n-gram :class:`~fstdecode.io.arpa.ArpaLM` (of the model's order) behind the
    interface of ``nltk.translate.StackDecoder`` (NLTK 3.10, nltk/translate/stack_decoder.py):

    * ``probability_change(context, phrase)``: ``context`` is the NLTK
      ``_Hypothesis`` being extended (not a word list); the change is the
      weighted ln probability of the phrase's words after the hypothesis's
      last ``order − 1`` target words (:func:`_history`; ``<s>`` before the
      first word). NLTK never asks for ``</s>``. Each call is one hypothesis
      scored (counted in ``calls``).
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
        self._ngrams: dict[tuple[str, ...], float] = {}

    def reset(self) -> None:
        self.calls = 0
        self._ngrams = {}  # per sentence, like the per-problem caches of fstdecode

    def _ngram(self, history: tuple[str, ...], w: str) -> float:
        """The weighted ln p(w | history), cached; ``history`` holds at most ``order − 1`` words."""
        key = history + (w,)
        v = self._ngrams.get(key)
        if v is None:
            v = self._ngrams[key] = self.weight * self.lm.logprob(history, w)
        return v

    def probability_change(self, context, phrase) -> float:
        self.calls += 1
        n = self.lm.order - 1
        history = _history(context, n)
        total = 0.0
        for w in phrase:
            total += self._ngram(history, w)
            history = (history + (w,))[-n:] if n else ()
        return total

    def probability(self, phrase) -> float:
        phrase = tuple(phrase)
        words = self.table.translations_for(phrase)[0].trg_phrase if phrase in self.table else phrase
        return self.weight * self.lm.phrase_estimate(words)


def _history(hypothesis, n: int) -> tuple[str, ...]:
    """The last ``n`` target words of an NLTK hypothesis's translation so far, preceded by
    ``<s>`` when it has fewer (walking back through ``previous`` only as far as needed)."""
    if n <= 0:
        return ()
    words: list[str] = []
    h = hypothesis
    while h is not None and len(words) < n:
        words[:0] = h.trg_phrase
        h = h.previous
    if len(words) < n:
        words.insert(0, BOS)
    return tuple(words[-n:])


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
        target = [BOS] + [word for p in phrases for word in p.target]
        expected = best.raw_score - w.distortion * (js[0] + js[-1]) + w.lm * self.model.lm.logprob(target, EOS)
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


def add_args(ap) -> None:
    ap.add_argument("--lm-order", type=int, default=DEFAULT_LM_ORDER, choices=sorted(LM_NAMES),
                    help=f"order at which the UN LM is read (default {DEFAULT_LM_ORDER}; 3 is its real order)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N sentences")
    ap.add_argument("--sizes", default=None, help=f"beam/stack sizes (default {','.join(map(str, GRID))})")
    ap.add_argument("--exact-cache", type=Path, default=Path("/tmp/fstdecode_eval_search_exact.json"))
    ap.add_argument("--exact-method", default="exact", choices=("exact", "bounded", "dp"))
    ap.add_argument("--exact-budget", type=float, default=120.0, help="seconds per sentence for the exact search")
    ap.add_argument("--exact-max-states", type=int, default=10_000_000)
    ap.add_argument("--exact-only", action="store_true", help="fill the exact cache and stop")
    ap.add_argument("--config-cap", type=float, default=100.0,
                    help="skip a decoder's larger sizes once one pass over the sentences is predicted to take longer")
    ap.add_argument("--decoders", default=None, help="comma-separated labels to run (default: all)")
    ap.add_argument("--runs", type=Path, default=None,
                    help="raw measurements (JSON; default /tmp/fstdecode_eval_search_runs[_quick][_orderN].json, "
                         "_orderN for an LM order other than 2)")
    ap.add_argument("--render-only", action="store_true", help="rewrite the doc and plots from --runs without decoding")
    ap.add_argument("--previous-runs", type=Path, default=None,
                    help="an earlier --runs file: the doc compares this run's times with it (repeatability)")
    ap.add_argument("--out", type=Path, default=None,
                    help="default docs/search.md, docs/search-trigram.md with --lm-order 3 "
                         "(--quick: /tmp/fstdecode_search_quick[_orderN].md); the plots are named after it")


def default_paths(lm_order: int, quick: bool) -> tuple[Path, Path]:
    """(doc, raw runs file) of a run at ``lm_order``: each order has its own, order 2 the historical ones."""
    suffix = ("_quick" if quick else "") + ("" if lm_order == DEFAULT_LM_ORDER else f"_order{lm_order}")
    doc = Path(f"/tmp/fstdecode_search{suffix}.md") if quick else DOCS / doc_name(lm_order)
    return doc, Path(f"/tmp/fstdecode_eval_search_runs{suffix}.json")


def render_only(args) -> int:
    """Rewrite the doc and plots from the saved ``--runs`` file (its LM order must be ``--lm-order``)."""
    saved = json.loads(args.runs.read_text(encoding="utf-8"))
    order = order_of(saved["meta"])
    if order != args.lm_order:
        raise SystemExit(f"{args.runs} holds a run at LM order {order}, not --lm-order {args.lm_order}")
    return write_report(saved, args.out, args.previous_runs)


def run(args, record) -> int:
    doc, runs = default_paths(args.lm_order, args.quick)
    if args.out is None:
        args.out = doc
    if args.runs is None:
        args.runs = runs
    if args.render_only:
        return render_only(args)

    model, sentences, refs = hansards(args.lm_order)
    ids = list(range(len(sentences)))
    if args.quick:
        ids = ids[:QUICK_SENTENCES]
    if args.limit is not None:
        ids = ids[: args.limit]
    sizes = tuple(int(x) for x in args.sizes.split(",")) if args.sizes else (QUICK_GRID if args.quick else GRID)
    words = {i: len(sentences[i].split()) for i in ids}

    t = time.perf_counter()
    cached_before = set(json.loads(args.exact_cache.read_text(encoding="utf-8"))) if args.exact_cache.exists() else set()
    key = model_key(args.lm_order)
    exact = exact_results(
        model, sentences, ids, args.exact_cache, args.exact_budget, args.exact_max_states, args.exact_method, key
    )
    exact_seconds = time.perf_counter() - t
    exact_cached = sum(exact_key(key, args.exact_method, i, sentences[i]) in cached_before for i in ids)
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
            "command": record.command,
            "machine": record.machine,
            "code": record.code,
            "date": record.date(),
            "load_start": record.load_start,
            "load_end": load_avg(),
            "total": time.time() - record.started,
            "exact_seconds": exact_seconds,
            "exact_cached": exact_cached,
            "exact_cache": str(args.exact_cache),
            "exact_method": args.exact_method,
            "lm_order": args.lm_order,
            "moses": (
                f"a `moses` binary is on PATH ({shutil.which('moses')}), but this script does not run it yet."
                if shutil.which("moses")
                else "no `moses` binary is on PATH on this machine, so Moses has no row (its search errors are not counted)."
            ),
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
    return write_report(saved, args.out, args.previous_runs)


main = script("eval_search", __doc__, run, add_args=add_args, needs_data=True,
                    quick=f"smoke test: {QUICK_SENTENCES} sentences, sizes {QUICK_GRID}")


if __name__ == "__main__":
    sys.exit(main())
