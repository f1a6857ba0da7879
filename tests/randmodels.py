"""Random small models for cross-solver tests (hypothesis strategies).

A random model is written as real files (a Moses phrase table and an ARPA
bigram LM) and read back through the public readers, so the tests exercise
the same path as users.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

from hypothesis import strategies as st

from fstdecode.decoder import Decoder
from fstdecode.io.arpa import ArpaLM
from fstdecode.model.features import Weights
from fstdecode.model.model import load_model

from shared import arpa_text

TARGET_VOCAB = ["a", "b", "c", "d", "e"]
SOURCE_VOCAB = ["u", "v", "w", "x", "y", "z"]


@st.composite
def arpa_bigram(draw, vocab=TARGET_VOCAB) -> str:
    """An ARPA bigram LM over ``vocab`` (not normalised; the decoders do not care)."""
    words = ["<s>", "</s>", "<unk>", *vocab]
    uni = []
    for w in words:
        p = -99.0 if w == "<s>" else draw(st.floats(-3, -0.1))
        bo = draw(st.floats(-1.5, 0.5))
        uni.append(f"{p:.4f}\t{w}\t{bo:.4f}")
    bigrams = []
    for a in ["<s>", *vocab]:
        for b in ["</s>", *vocab]:
            if draw(st.booleans()):
                bigrams.append(f"{draw(st.floats(-3, -0.05)):.4f}\t{a} {b}")
    return arpa_text(uni, bigrams)


@st.composite
def arpa_unigram(draw, vocab=TARGET_VOCAB) -> str:
    """An ARPA unigram LM over ``vocab`` (the search reads it as a bigram LM without bigrams)."""
    words = ["<s>", "</s>", "<unk>", *vocab]
    return arpa_text([f"{-99.0 if w == '<s>' else draw(st.floats(-3, -0.1)):.4f}\t{w}" for w in words])


@st.composite
def arpa_ngram(draw, order: int, vocab=TARGET_VOCAB) -> str:
    """An ARPA LM of ``order`` (4 or more) over ``vocab``: arpa_trigram's unigrams, bigrams and
    trigrams, each higher order a random subset of the extensions of the listed n-grams one
    order down (as ARPA requires), every order below the top with backoffs."""
    words = ["<s>", "</s>", "<unk>", *vocab]
    sections = [[f"{-99.0 if w == '<s>' else draw(st.floats(-3, -0.1)):.4f}\t{w}\t{draw(st.floats(-1.5, 0.5)):.4f}" for w in words]]
    listed = [("<s>",), *((w,) for w in vocab)]
    for k in range(2, order + 1):
        lines, grown = [], []
        for prefix in listed:
            for w in ["</s>", *vocab]:
                if draw(st.floats(0, 1)) < (0.4 if k == 2 else 0.3):
                    p = f"{draw(st.floats(-3, -0.05)):.4f}\t{' '.join((*prefix, w))}"
                    lines.append(p + (f"\t{draw(st.floats(-1.5, 0.5)):.4f}" if k < order else ""))
                    if w != "</s>":
                        grown.append((*prefix, w))
        sections.append(lines)
        listed = grown
    return arpa_text(*sections)


def without_dead_backoffs(text: str) -> str:
    """``text`` (an ARPA file) with the backoff of every n-gram that no longer n-gram extends
    dropped (a zero), as SRILM and KenLM write them: then the KenLM state of a context (its
    extending suffix) decides every later score, as Moses' recombination assumes."""
    lines = text.split("\n")
    grams = [tuple(f.split("\t")[1].split()) for f in lines if f.count("\t") >= 1]
    extends = {g[:k] for g in grams for k in range(1, len(g))}
    out = []
    for line in lines:
        fields = line.split("\t")
        if len(fields) == 3 and tuple(fields[1].split()) not in extends:
            line = "\t".join(fields[:2])
        out.append(line)
    return "\n".join(out)


def arpa_of_order(order: int):
    """The random ARPA strategy of an LM order (1 to 5)."""
    if order >= 4:
        return arpa_ngram(order)
    return {1: arpa_unigram, 2: arpa_bigram, 3: arpa_trigram}[order]()


def signed(low: float, high: float):
    """A weight in [low, high], zero drawn often (the searches must hold for any sign)."""
    return st.one_of(st.just(0.0), st.floats(low, high))


@st.composite
def arpa_trigram(draw, vocab=TARGET_VOCAB) -> str:
    """An ARPA trigram LM over ``vocab``: random unigrams, a random subset of bigrams
    (with backoffs) and of trigrams whose bigram prefix is listed (as ARPA requires)."""
    words = ["<s>", "</s>", "<unk>", *vocab]
    uni = [f"{-99.0 if w == '<s>' else draw(st.floats(-3, -0.1)):.4f}\t{w}\t{draw(st.floats(-1.5, 0.5)):.4f}" for w in words]
    bigrams, listed = [], []
    for a in ["<s>", *vocab]:
        for b in ["</s>", *vocab]:
            if draw(st.floats(0, 1)) < 0.4:
                bigrams.append(f"{draw(st.floats(-3, -0.05)):.4f}\t{a} {b}\t{draw(st.floats(-1.5, 0.5)):.4f}")
                listed.append((a, b))
    trigrams = []
    for a, b in listed:
        if b == "</s>":
            continue
        for c in ["</s>", *vocab]:
            if draw(st.floats(0, 1)) < 0.25:
                trigrams.append(f"{draw(st.floats(-3, -0.05)):.4f}\t{a} {b} {c}")
    return arpa_text(uni, bigrams, trigrams)


@st.composite
def phrase_table(draw, sentence: tuple[str, ...], max_len: int = 3, max_translations: int = 3) -> str:
    """A Moses phrase table (2 probability columns) with entries for spans of ``sentence``."""
    lines = set()
    n = len(sentence)
    for s in range(n):
        for t in range(s, min(n, s + max_len)):
            # Single words usually have entries (else they become unknown words).
            if draw(st.floats(0, 1)) < (0.85 if s == t else 0.35):
                for _ in range(draw(st.integers(1, max_translations))):
                    tgt = " ".join(draw(st.lists(st.sampled_from(TARGET_VOCAB), min_size=1, max_size=3)))
                    a, b = draw(st.floats(0.01, 1)), draw(st.floats(0.01, 1))
                    lines.add(f"{' '.join(sentence[s:t + 1])} ||| {tgt} ||| {a:.3f} {b:.3f}\n")
    if not lines:
        lines.add(f"{sentence[0]} ||| a ||| 0.5 0.5\n")
    return "".join(sorted(lines))


@st.composite
def random_case(draw, min_n: int = 1, max_n: int = 6, max_d: int = 5, order: int = 2, any_sign: bool = False):
    """(model, sentence): a random model with an LM of ``order`` (1 to 5) and an input of
    min_n..max_n tokens; ``any_sign`` draws negative and zero LM, TM and distortion weights too."""
    n = draw(st.integers(min_n, max_n))
    sentence = tuple(draw(st.lists(st.sampled_from(SOURCE_VOCAB), min_size=n, max_size=n)))
    d = draw(st.integers(1, max_d))
    if any_sign:
        lm_w, tm1, tm2, dist = draw(signed(-1, 2)), draw(signed(-1, 1)), draw(signed(-1, 1)), draw(signed(-1, 1.5))
    else:
        lm_w, tm1, tm2, dist = draw(st.floats(0.2, 2)), draw(st.floats(0, 1)), draw(st.floats(0, 1)), draw(st.floats(0, 1.5))
    weights = [
        f"lm={lm_w:.3f}",
        f"tm={tm1:.3f},{tm2:.3f}",
        f"distortion={dist:.3f}",
        f"word={draw(st.floats(-1, 1)):.3f}",
        f"phrase={draw(st.floats(-1, 1)):.3f}",
    ]
    pt, lm = draw(phrase_table(sentence)), draw(arpa_of_order(order))
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "pt").write_text(pt, encoding="utf-8")
        (Path(tmp) / "lm").write_text(lm, encoding="utf-8")
        model = load_model(phrase_table=Path(tmp) / "pt", lm=Path(tmp) / "lm", distortion_limit=d, weights=weights)
    return model, sentence


#: The state budget of cross-solver checks: the solvers must finish to be compared, and these
#: instances are small; the library's own default budget (200,000 states) is for users.
NO_BUDGET = 10**9


def problem_of(case):
    """The search problem of a ``random_case`` draw: its sentence under its model (a DP decoder's)."""
    model, sentence = case
    return Decoder(model).problem(sentence)


@st.composite
def python_lm_case(draw, order: int):
    """A random_case whose LM is a Python ArpaLM read from a file that is gone afterwards:
    the core then reads the ArpaLM's n-grams from memory (native._arpa_bytes)."""
    model, sentence = draw(random_case(max_n=6, order=order))
    text = draw(arpa_bigram() if order == 2 else arpa_trigram())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lm.arpa"
        path.write_text(text, encoding="utf-8")
        lm = ArpaLM.from_file(path)
    return dataclasses.replace(model, lm=lm), sentence


#: Reordering types the random Moses models draw from: every orientation class, direction and
#: conditioning, and collapsed features (why: each changes which column and feature a score takes).
REORDERING_TYPES = (
    "wbe-msd-bidirectional-fe-allff",
    "msd-backward-f",
    "mslr-bidirectional-fe",
    "monotonicity-forward-fe",
    "leftright-unidirectional-f",
    "phrase-msd-bidirectional-fe-collapseff",
)


@st.composite
def reordering_table(draw, pt_text: str, columns: int, conditioned_on_target: bool) -> str:
    """A reordering table for a random subset of the pairs of ``pt_text`` (the others are missing)."""
    lines = {}
    for line in pt_text.splitlines():
        source, target, _ = (f.strip() for f in line.split("|||"))
        if draw(st.floats(0, 1)) < 0.8:
            key = f"{source} ||| {target}" if conditioned_on_target else source
            probs = " ".join(f"{draw(st.floats(0.01, 1)):.3f}" for _ in range(columns))
            lines[key] = f"{key} ||| {probs}\n"
    return "".join(lines.values())


@st.composite
def moses_files(draw, max_n: int = 5, max_d: int = 4, order: int = 2, types=REORDERING_TYPES,
                srilm_lm: bool = False) -> tuple[dict[str, str], tuple[str, ...]]:
    """(the files of a random moses.ini model by name: moses.ini, pt, lm, rt; a sentence): a
    LexicalReordering feature of a random type (one of ``types``), with or without default-scores,
    and weights of any sign; with
    ``srilm_lm`` the LM's non-extending n-grams have no backoff (:func:`without_dead_backoffs`)."""
    from fstdecode.model.lexical_reordering import parse_reordering_type

    n = draw(st.integers(1, max_n))
    sentence = tuple(draw(st.lists(st.sampled_from(SOURCE_VOCAB), min_size=n, max_size=n)))
    config = parse_reordering_type(draw(st.sampled_from(types)))
    pt, lm = draw(phrase_table(sentence)), draw(arpa_of_order(order))
    if srilm_lm:
        lm = without_dead_backoffs(lm)
    rt = draw(reordering_table(pt, config.table_columns, config.condition == "fe"))
    lr = " ".join(f"{draw(signed(-1, 1)):.3f}" for _ in range(config.num_features))
    defaults = ""  # the pairs the table lacks pay these (collapseff refuses them, as Moses misreads them)
    if not config.collapse and draw(st.booleans()):
        defaults = " default-scores=" + ",".join(f"{draw(st.floats(0.01, 1)):.3f}" for _ in range(config.num_features))
    d = draw(st.integers(1, max_d))
    ini = f"""[feature]
KENLM path=lm order={order}
Distortion
WordPenalty
PhrasePenalty
UnknownWordPenalty
PhraseDictionaryMemory path=pt num-features=2 table-limit=0
LexicalReordering type={config.type_string} path=rt{defaults}
[weight]
KENLM0= {draw(st.floats(0.2, 2)):.3f}
Distortion0= {draw(signed(-0.5, 1.5)):.3f}
WordPenalty0= {draw(st.floats(-1, 1)):.3f}
PhrasePenalty0= {draw(st.floats(-1, 1)):.3f}
PhraseDictionaryMemory0= {draw(st.floats(0, 1)):.3f} {draw(st.floats(0, 1)):.3f}
LexicalReordering0= {lr}
[distortion-limit]
{d}
"""
    return {"moses.ini": ini, "pt": pt, "lm": lm, "rt": rt}, sentence


@st.composite
def moses_case(
    draw, max_n: int = 5, max_d: int = 4, order: int = 2, semantics: str = "moses", types=REORDERING_TYPES,
    srilm_lm: bool = False,
):
    """(model, sentence): :func:`moses_files`' model loaded under ``semantics``."""
    files, sentence = draw(moses_files(max_n, max_d, order, types, srilm_lm))
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in files.items():
            (Path(tmp) / name).write_text(text, encoding="utf-8")
        model = load_model(Path(tmp) / "moses.ini", distortion_semantics=semantics)
    return model, sentence


def draw_beam_options(data) -> "BeamOptions":
    """Signature-beam options drawn for a property test: small beams and thresholds, any
    heuristic, nbest 1-3, no state budget."""
    from hypothesis import strategies as st

    from fstdecode.search.signature_beam import HEURISTICS, BeamOptions

    return BeamOptions(
        nbest=data.draw(st.integers(1, 3)),
        beam_size=data.draw(st.integers(1, 6)),
        beam_threshold=data.draw(st.one_of(st.none(), st.floats(0, 3))),
        heuristic=data.draw(st.sampled_from(HEURISTICS)),
        max_states=NO_BUDGET,
    )
