"""The report of ``scripts/eval_search.py``: the metrics of a run, its doc and the doc's two plots.

:func:`write_report` reads the raw measurements (the ``--runs`` JSON of
eval_search), summarises every configuration (:func:`summarize`), draws
the plots (:func:`plot`) and renders the doc (:func:`render`). The doc is
docs/search.md for the LM read as a bigram, docs/search-trigram.md at its
real order 3 (:func:`doc_name`); the plots beside it are named after its
stem (search_score.png, search-trigram_score.png, ...). The prose
is in ``scripts/templates/search.md.in``: this module computes the numbers,
decides which of the template's sentences apply, and fills them in
(:func:`fill`).
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path

from scripts.benchlib import log, plt, save_figure

from fstdecode.search import signature_beam

TEMPLATE = Path(__file__).resolve().parent / "templates" / "search.md.in"
EPS = 1e-6

#: The configurations' labels, in the order of the plots' legends.
HEURISTIC_LABELS = tuple("beam (%s)" % h for h in signature_beam.HEURISTICS)
DEFAULT_LABEL = "beam (%s)" % signature_beam.DEFAULT_HEURISTIC
STACK_LABELS = ("stack", "stack +DE", "stack +DE +EP")
NLTK_LABEL = "NLTK StackDecoder"
LABELS = HEURISTIC_LABELS + STACK_LABELS + (NLTK_LABEL,)

#: The LM orders eval_search runs at, by name; a runs file without ``meta["lm_order"]`` is of order 2.
LM_NAMES = {2: "bigram", 3: "trigram"}
DEFAULT_LM_ORDER = 2


def doc_name(lm_order: int) -> str:
    """The file name, under docs/, of the evaluation at ``lm_order``."""
    return "search.md" if lm_order == DEFAULT_LM_ORDER else f"search-{LM_NAMES[lm_order]}.md"


def order_of(meta: dict) -> int:
    """The LM order of a run (runs saved before the order was recorded are bigram runs)."""
    return meta.get("lm_order", DEFAULT_LM_ORDER)


# ---------------------------------------------------------------------------
# The template


@functools.cache
def templates(path: Path = TEMPLATE) -> dict[str, str]:
    """The named templates of ``path`` (see the head of templates/search.md.in for the format)."""
    found: dict[str, list[str]] = {}
    name = None
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith("%% "):
            name = line[3:].strip()
            found[name] = []
        elif name is not None:
            found[name].append(line)
    return {k: "\n".join(v).rstrip("\n") for k, v in found.items()}


_BLOCK = re.compile(r"\{(\w+)\}")


def fill(template: str, /, **values) -> str:
    """The template named ``template`` filled with ``values``; a line that is only ``{key}``, with a list
    for key, becomes the lines of that list."""
    lines: list[str] = []
    for line in templates()[template].split("\n"):
        m = _BLOCK.fullmatch(line)
        if m and isinstance(values.get(m[1]), list):
            lines.extend(values[m[1]])
        else:
            lines.append(line.format_map(values))
    return "\n".join(lines)


def block(template: str, /, **values) -> list[str]:
    """:func:`fill`, as a list of lines."""
    return fill(template, **values).split("\n")


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


def fastest(summaries, labels, max_errors: int):
    pts = [s for s in summaries if s["label"] in labels and s["errors"] <= max_errors and s["failed"] == 0]
    return min(pts, key=lambda s: s["ms_word"]) if pts else None


def _ms_word(s: dict) -> float:
    return s["ms_word"]


# ---------------------------------------------------------------------------
# Plots


def plot_names(out: Path) -> tuple[str, str]:
    """The file names of the score and the search-error plots of the doc ``out``, beside it."""
    return f"{out.stem}_score.png", f"{out.stem}_errors.png"


def plot(summaries: list[dict], best_known: float | None, out: Path, n_sent: int, n_exact: int, order: int) -> list[str]:
    """Draw the score and the search-error plots of the doc ``out`` (:func:`plot_names`); their file names."""
    pyplot = plt()
    score_png, errors_png = plot_names(out)
    labels = [label for label in LABELS if any(s["label"] == label for s in summaries)]
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
    fig, (left, right) = pyplot.subplots(1, 2, figsize=(13, 5.5))
    draw(left, "mean_score")
    left.set_ylabel(f"mean model score ({n_sent} sentences, higher is better)")
    left.set_title("model score vs. time (labels: beam/stack size)", fontsize=9)
    left.legend(fontsize=8, loc="lower right")
    draw(right, "mean_score", zoom=True)
    if best_known is not None:
        right.set_ylim(best_known - 2.0, best_known + 0.25)
    right.set_title("zoom: within 2 of the best known mean score", fontsize=9)
    fig.suptitle(f"Hansards fr-en, {LM_NAMES[order]} UN LM, d = 4, table-limit 20", fontsize=10)
    save_figure(fig, out.parent / score_png, 100)
    files.append(score_png)

    fig, ax = pyplot.subplots(figsize=(8, 5.5))
    draw(ax, "errors")
    ax.set_ylabel(f"search errors (of {n_exact} sentences with an exact result)")
    ax.set_title(f"Hansards fr-en, {LM_NAMES[order]} UN LM, d = 4: search errors vs. time (labels: beam/stack size)",
                 fontsize=9)
    ax.legend(fontsize=8)
    save_figure(fig, out.parent / errors_png, 100)
    files.append(errors_png)
    return files


# ---------------------------------------------------------------------------
# The doc


def fmt_err(s: dict) -> str:
    pct = 100 * s["errors"] / s["exact_n"] if s["exact_n"] else float("nan")
    return f"{s['errors']} ({pct:.0f}%)"


def _errors_word(k: int) -> str:
    return "error" if k == 1 else "errors"


def _config(s: dict | None) -> str:
    if not s:
        return "none"
    return fill("config", s=s, errors_word=_errors_word(s["errors"]))


def _levels(xs) -> str:
    return ", ".join(map(str, xs))


def render(meta: dict, summaries: list[dict], exact: dict[int, dict], ids, words, notes, plots) -> str:
    """docs/search.md: ``templates/search.md.in`` filled with this run's numbers."""
    n = len(ids)
    avail = [i for i in ids if exact.get(i, {}).get("status") == "ok"]
    by = {(s["label"], s["size"]): s for s in summaries}
    missing = [i for i in ids if i not in avail]
    ex_secs = [exact[i]["seconds"] for i in avail]
    best_known = meta.get("best_known")
    values = dict(
        meta=meta,
        **lm_values(order_of(meta)),
        n=n,
        n_exact=len(avail),
        source_words=sum(words[i] for i in ids),
        exact_missing=block("exact_missing", missing=", ".join(
            fill("exact_missing_item", i=i, n=words[i], status=exact.get(i, {}).get("status", "?")) for i in missing
        )) if missing else [],
        exact_time=block(
            "exact_time",
            median=sorted(ex_secs)[len(ex_secs) // 2],
            max=max(ex_secs),
            ms_word=1000 * sum(ex_secs) / sum(words[i] for i in avail),
            n=n,
            total=sum(exact[i]["seconds"] for i in ids if i in exact),
        ) if ex_secs else [],
        heuristics=", ".join("`%s`" % h for h in meta.get("heuristics", signature_beam.HEURISTICS)),
        default_heuristic=meta.get("default_heuristic", signature_beam.DEFAULT_HEURISTIC),
        results=[
            fill("results_row", s=s, errors=fmt_err(s), mean_score=(
                f"{s['mean_score']:.4f}" if s["mean_score"] is not None else fill("mean_score_failed", s=s)))
            for s in summaries
        ],
        best_known=block("best_known", best_known=best_known) if best_known is not None else [],
        grid_trimmed=block("grid_trimmed", notes=[f"- {x}" for x in notes]) if notes else [],
        plots=plots,
        nltk_unknown=meta.get("nltk_unknown", "?"),
    )
    ok = [s for s in summaries if s["failed"] == 0]
    values.update(targets(ok, by, avail, n, words))
    values.update(heuristics_section(ok, avail))
    values.update(repeatability(ok, meta.get("previous")))
    values.update(nltk_section(meta, summaries))
    return fill("document", **values) + "\n"


def lm_values(order: int) -> dict:
    """The template's values that depend on the LM order: the order and its name, the NLTK
    adapter's LM context, and the link to the evaluation at the other order (if there is one)."""
    other = fill(f"other_order_{order}") if f"other_order_{order}" in templates() else ""
    return {
        "lm_order": order,
        "lm_name": LM_NAMES[order],
        "lm_history": _context_words("lm_history", order),
        "lm_context": _context_words("lm_context", order),
        "lm_last": _context_words("lm_last", order),
        "other_order": [other, ""] if other else [],
    }


def _context_words(template: str, order: int) -> str:
    """``template``_1 for a one-word LM context (a bigram), else ``template``_n with n = order − 1."""
    return fill(f"{template}_1") if order == 2 else fill(f"{template}_n", n=order - 1)


def targets(ok: list[dict], by: dict, avail: list[int], n: int, words: dict[int, int]) -> dict:
    """The values of targets (a), (b) and (c)."""
    return {**target_a(ok, by, avail), **target_b(ok, by), **target_c(ok, avail, n, words)}


def target_a(ok: list[dict], by: dict, avail: list[int]) -> dict:
    """(a): the fastest beam against the fastest stack decoders at each error level."""
    beams = [s for s in ok if s["label"] in HEURISTIC_LABELS]
    default = [s for s in ok if s["label"] == DEFAULT_LABEL]
    levels = sorted({s["errors"] for s in ok if s["label"] in STACK_LABELS + HEURISTIC_LABELS})
    rows = []
    wins = losses = 0
    worst = None
    beam_ok = {"plain": [], "any": []}  # levels where the beam is at least as fast
    beam_slow = {"plain": [], "any": []}
    for e in levels:
        b = fastest(ok, HEURISTIC_LABELS, e)
        p = fastest(ok, ("stack",), e)
        v = fastest(ok, STACK_LABELS, e)
        cells = [f"| {e} | {_config(b)} | {_config(p)} | "]
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
                cells.append(f" | {_config(v)} | ")
        rows.append("".join(cells) + " |")
    sentences = [
        fill(
            "a_verdict",
            verdict="holds" if losses == 0 else "does not hold",
            losses=losses,
            comparisons=wins + losses,
            slowest=fill("a_slowest", factor=1 / worst) if worst is not None and worst < 1 else "",
        )
    ]
    for k, name in (("plain", "the plain stack decoder"), ("any", "the best stack variant")):
        sentences.append(fill("a_against", name=name, fast=_levels(beam_ok[k]) or "none", slow=_levels(beam_slow[k]) or "none"))
    sentences.append(fill("a_noise"))
    if default:
        b1 = min(default, key=lambda s: s["size"])
        stack1 = by.get(("stack", b1["size"]))
        sentences.append(fill("a_smallest", b=b1, stack=fill("a_smallest_stack", s=stack1) if stack1 else ""))
        st10, b10 = by.get(("stack", 10)), by.get((DEFAULT_LABEL, 10))
        if st10 is not None and b10 is not None:
            sentences.append(fill("a_size10", b=b10, s=st10, errors_word=_errors_word(b10["errors"])))
        b0 = [s for s in beams if s["errors"] == 0]
        if b0:
            sentences.append(fill("a_error_free", n_exact=len(avail), config=_config(min(b0, key=_ms_word))))
        else:
            sentences.append(fill("a_no_error_free"))
    return {"a_rows": rows, "a_verdict": " ".join(sentences)}


def target_b(ok: list[dict], by: dict) -> dict:
    """(b): Moore & Quirk's improvements of the stack decoder, if the grid has both the plain and the +DE +EP one."""
    plain = [s for s in ok if s["label"] == "stack"]
    ep = [s for s in ok if s["label"] == "stack +DE +EP"]
    de = [s for s in ok if s["label"] == "stack +DE"]
    if not (plain and ep):
        return {"moore_quirk": []}
    top = max(s["mean_score"] for s in plain)
    p = min((s for s in plain if s["mean_score"] >= top - EPS), key=_ms_word)
    reach = [s for s in ep if s["mean_score"] >= top - EPS]
    if reach:
        q = min(reach, key=_ms_word)
        ratio = p["ms_word"] / q["ms_word"]
        reached = fill("mq_reached", q=q, ratio=ratio, hyps_ratio=p["hyps_word"] / q["hyps_word"],
                       target="holds" if ratio >= 5 else "does NOT hold")
    else:
        reached = fill("mq_not_reached", q=max(ep, key=lambda s: s["mean_score"]))
    rows = []
    for s in plain:
        d_, e_ = by.get(("stack +DE", s["size"])), by.get(("stack +DE +EP", s["size"]))
        row = f"| {s['size']} | "
        row += f"{s['ms_word'] / d_['ms_word']:.2f} | {s['errors']} → {d_['errors']} | " if d_ else " | | "
        row += (f"{s['ms_word'] / e_['ms_word']:.1f} | {s['hyps_word'] / e_['hyps_word']:.1f} | {s['errors']} → {e_['errors']} |"
                if e_ else " | | |")
        rows.append(row)
    de_alone = []
    if de:
        pairs = [(s, by[("stack", s["size"])]) for s in de if ("stack", s["size"]) in by]
        slower = [s["size"] for s, p_ in pairs if s["ms_word"] > p_["ms_word"]]
        fewer = [s["size"] for s, p_ in pairs if s["errors"] < p_["errors"]]
        de_alone = block(
            "mq_de_alone",
            slower=fill("mq_de_slower_every") if len(slower) == len(pairs)
            else fill("mq_de_slower_sizes", slower=_levels(slower) or "none", sizes=", ".join(str(s["size"]) for s, _ in pairs)),
            fewer=_levels(fewer) or "none",
        )
    return {"moore_quirk": block("moore_quirk", top=top, p=p, reached=reached, rows=rows, de_alone=de_alone)}


def target_c(ok: list[dict], avail: list[int], n: int, words: dict[int, int]) -> dict:
    """(c): a setting at ≤ 5 ms/word with search errors on ≤ 5% of the sentences."""
    fst = [s for s in ok if not s["label"].startswith("NLTK") and s["exact_n"]]
    good = [s for s in fst if s["ms_word"] <= 5 and s["errors"] <= 0.05 * s["exact_n"]]
    untested = n - len(avail)
    if good:
        g = min(good, key=lambda s: (s["errors"], s["ms_word"]))
        verdict = fill(
            "c_holds", count=len(good), configs=", ".join(_config(s) for s in sorted(good, key=_ms_word)), g=g,
            untested=fill("c_holds_untested", g=g, count=untested) if n > len(avail) else "",
        )
    else:
        near = sorted(fst, key=lambda s: (s["errors"], s["ms_word"]))[:3]
        fast = [s for s in fst if s["ms_word"] <= 5]
        verdict = fill(
            "c_fails", nearest=", ".join(_config(s) for s in near),
            fast=fill("c_fails_fast", configs=", ".join(
                _config(s) for s in sorted(fast, key=lambda s: (s["errors"], s["ms_word"]))[:2])) if fast else "",
        )
    return {
        "c_limit": math.floor(0.05 * len(avail)),
        "c_verdict": verdict,
        "c_untested": fill("c_untested", count=untested, shortest=min(
            (w for i, w in words.items() if i not in avail), default=0)) if n > len(avail) else "",
    }


def heuristics_section(ok: list[dict], avail: list[int]) -> dict:
    """The beam heuristics against each other, and the recommended default."""
    names = " vs. ".join(
        fill("paper_beta", name=f"`{h}`") if h == "unigram" else f"`{h}`" for h in signature_beam.HEURISTICS)
    table = ["| errors ≤ E | " + " | ".join(HEURISTIC_LABELS) + " |", "|---:|" + "---|" * len(HEURISTIC_LABELS)]
    levels = sorted({s["errors"] for s in ok if s["label"] in HEURISTIC_LABELS})
    fastest_at = {}
    for e in levels:
        cells = []
        row = {}
        for h in HEURISTIC_LABELS:
            f = fastest(ok, (h,), e)
            row[h] = f
            cells.append(fill("heuristic_cell", f=f) if f else fill("heuristic_cell_missing"))
        reached = {h: f for h, f in row.items() if f}
        fastest_at[e] = min(reached, key=lambda h: reached[h]["ms_word"]) if reached else None
        table.append(f"| {e} | " + " | ".join(cells) + " |")
    values = {"heuristic_names": names, "heuristic_table": table, "recommendation": []}
    if not levels:
        return values
    strict = levels[0]
    wins = {h: [e for e in levels if fastest_at[e] == h] for h in HEURISTIC_LABELS}
    short = {h: h[len("beam ("):-1] for h in HEURISTIC_LABELS}
    reach_strict = [h for h in HEURISTIC_LABELS if fastest(ok, (h,), strict)]
    low = [e for e in levels if e <= 0.05 * len(avail)]
    per_size = {}
    listed = ""
    for h in HEURISTIC_LABELS:
        pts = [s for s in ok if s["label"] == h]
        per_size[h] = {s["size"]: s["errors"] for s in pts}
        if pts:
            listed += f" `{short[h]}` " + ", ".join(f"{s['errors']} (size {s['size']})" for s in pts) + ";"
    fewest = fill(
        "h_fewest",
        strict=strict,
        reached="`" + "`, `".join(short[h] for h in reach_strict) + "`",
        fastest="; ".join(fill("h_fastest_at", name=short[h], levels=_levels(v)) for h, v in wins.items() if v),
        per_size=listed,
    ).rstrip(";") + "."

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
    sentences = [fill(
        "h_recommend",
        rec=short[rec],
        default=fill("h_is_default") if rec == DEFAULT_LABEL else fill("h_not_default", default=short[DEFAULT_LABEL]),
        low=_levels(low) or "none reached",
        count=sum(1 for e in low if fastest_at[e] == rec),
        only=fill("h_only", strict=strict) if reach_strict == [rec] else "",
    )]
    for h in HEURISTIC_LABELS:
        if h == rec:
            continue
        common = sorted(set(per_size[rec]) & set(per_size[h]))
        faster_levels = [e for e in levels if fastest_at[e] == h]
        sentences.append(fill(
            "h_against",
            name=short[h],
            fewer=sum(per_size[rec][k] < per_size[h][k] for k in common),
            more=sum(per_size[rec][k] > per_size[h][k] for k in common),
            common=len(common),
            fastest=fill("h_against_fastest", name=short[h], levels=_levels(faster_levels)) if faster_levels else "",
        ))
    values["recommendation"] = [fewest, "", " ".join(sentences)]
    return values


def repeatability(ok: list[dict], previous: str | None) -> dict:
    """Timing noise: configurations of one decoder that did identical work; and the comparison with an earlier run."""
    groups: dict[tuple, list] = {}
    for s in ok:
        groups.setdefault((s["label"], s["transitions"], s["mean_score"]), []).append(s)
    same = [g for g in groups.values() if len(g) > 1]
    within = []
    if same:
        within = [fill("repeatability", groups="; ".join(
            fill(
                "repeatability_group",
                label=g[0]["label"],
                sizes=", ".join(str(s["size"]) for s in g),
                times=", ".join("%.2f" % s["ms_word"] for s in g),
                spread=100 * (max(s["ms_word"] for s in g) / min(s["ms_word"] for s in g) - 1),
            )
            for g in same
        )), ""]
    return {"repeatability": within, "previous": [previous, ""] if previous else []}


def nltk_section(meta: dict, summaries: list[dict]) -> dict:
    nl = [s for s in summaries if s["label"].startswith("NLTK")]
    plain = {s["size"]: s for s in summaries if s["label"] == "stack"}
    values = {"nltk_rows": [fill("nltk_row", s=s, n=meta["n"]) for s in nl], "nltk_summary": []}
    if nl:
        top = max(nl, key=lambda s: s["mean_score"] if s["mean_score"] is not None else -math.inf)
        against = " ".join(
            fill("nltk_against_stack", s=s, time_ratio=s["ms_word"] / plain[s["size"]]["ms_word"],
                 hyps_ratio=s["hyps_word"] / plain[s["size"]]["hyps_word"])
            for s in nl if s["size"] in plain and s["size"] == top["size"]
        )
        values["nltk_summary"] = [fill(
            "nltk_summary", top=top, best_known=meta["best_known"], against_stack=against, n=meta["n"],
            bleu_note=meta.get("bleu_note", ""), bleu_tail=meta.get("bleu_tail", ""),
        )]
    return values


def compare_previous(path: Path, summaries, ids, words) -> str:
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
    lo, hi = ratios[0], ratios[-1]
    return fill(
        "previous", count=len(ratios), m=old["meta"], median=ratios[len(ratios) // 2][0],
        lo=lo[0], lo_label=lo[1]["label"], lo_size=lo[1]["size"], hi=hi[0], hi_label=hi[1]["label"], hi_size=hi[1]["size"],
    )


def write_report(saved: dict, out: Path, previous_runs: Path | None = None) -> int:
    """Summarise the raw measurements ``saved``; write the doc ``out`` and its plots beside it."""
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
    if previous_runs is not None and previous_runs.exists():
        meta["previous"] = compare_previous(previous_runs, summaries, ids, words)
    meta["best_known"] = sum(best.values()) / len(ids) if len(best) == len(ids) else None
    ours = [x for x in summaries if not x["label"].startswith("NLTK") and x["mean_score"] is not None]
    if ours:
        top = max(x["mean_score"] for x in ours)
        b = min((x for x in ours if x["mean_score"] >= top - EPS), key=_ms_word)
        m = max(ours, key=lambda x: x["bleu"])
        meta["bleu_note"] = fill("bleu_note", b=b, m=m)
        if m["errors"] > 0:
            meta["bleu_tail"] = fill("bleu_tail")
    out.parent.mkdir(parents=True, exist_ok=True)
    n_exact = sum(exact.get(i, {}).get("status") == "ok" for i in ids)
    plots = plot(summaries, meta["best_known"], out, len(ids), n_exact, order_of(meta))
    out.write_text(render(meta, summaries, exact, ids, words, saved["notes"], plots), encoding="utf-8")
    log(f"wrote {out} and {', '.join(plots)}")
    return 0
