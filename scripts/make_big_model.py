#!/usr/bin/env python3
"""Generate a big synthetic Moses model: phrase table, reordering table, n-gram LM, moses.ini, input.

Everything is made from two Zipfian Markov chains, one over a source vocabulary and one over
a target vocabulary, and is deterministic: the same arguments give the same bytes (the gzip
files too: no time stamp, no file name in their header).

The chains. Word ranks 0..V-1 (:data:`VOCABULARY` words each) are drawn from a Zipf
distribution p(r) ~ 1 / (r + 1) ** :data:`ZIPF_EXPONENT`. Each word w has its own list of
:data:`SUCCESSORS` successors, drawn from that same Zipf distribution by a generator seeded
with (seed, language, w), and the next word is the k-th of w's list with k Zipfian too
(exponent :data:`SUCCESSOR_EXPONENT`): a bigram chain whose next-word distribution is a
Zipf law over a per-word permutation of a Zipfian sample, so the text's unigram frequencies
stay Zipfian (in expectation) and its bigrams are strongly skewed. A sentence starts with a
word drawn from the Zipf distribution and has 15 to 35 words (:data:`SENTENCE_LENGTH`,
uniform). Words are spelled from their rank (frequent words are short): source words are
consonant-vowel syllables (``ka``, ``tomi``), target words vowel-consonant ones (``ak``,
``emil``), so no word is in both languages.

The files written to ``--out DIR``:

* ``phrase-table`` (``phrase-table.gz`` with ``--gzip``): ``--pairs`` lines
  ``src ||| tgt ||| p(f|e) lex(f|e) p(e|f) lex(e|f) ||| alignment``. The source phrases are the
  distinct n-grams (n = 1..:data:`MAX_PHRASE_LENGTH`) of a source text from the source chain,
  in their order of appearance, until their target counts add up to ``--pairs``. A source of
  n words gets 1..:data:`TARGETS_PER_SOURCE`\\[n] distinct targets (uniform): n-1 to n+1
  words (at least 1) from the target chain, the first one starting at the word of the same
  rank as the source's first word, the others at one of that word's successors. Scores, all
  in (0, 1] with 6 decimals: p(e|f) is a source's random weights (uniform(0.05, 1) ** 3)
  normalised to sum to 1; p(f|e) = 10 ** -uniform(0, 3); each lexical score is its phrase
  score times uniform(0.3, 1); every score is at least 1e-6. The alignment is the diagonal:
  each source word i to target word i * m // n, and each target word left out to its
  diagonal source word. Lines are sorted as Moses writes them (``LC_ALL=C sort``: by
  ``source |||``, then ``target |||``, byte order).
* ``reordering-table.wbe-msd-bidirectional-fe`` (``.gz`` with ``--gzip``): the same pairs in the
  same order, ``src ||| tgt ||| m s d m s d`` (backward, then forward; each triple sums to 1,
  drawn as uniform(0, 1) + (1.0, 0.1, 0.4), normalised).
* ``lm.arpa``: an order-``--order`` back-off LM of ``--lm-words`` words of target-chain
  sentences (the last one cut to make the count exact). With KenLM's ``lmplz`` on the PATH,
  ``lmplz -o ORDER --discount_fallback`` estimates it (``--lm-tool auto``, the default);
  otherwise (or with ``--lm-tool builtin``) this script does: interpolated Kneser-Ney with one
  discount per order, D = n1 / (n1 + 2 n2) of that order's counts of counts (0.5 if one of them
  is 0). The highest order uses raw counts, the lower orders continuation counts (raw counts
  for n-grams that start with ``<s>``); the unigrams interpolate with the uniform distribution
  over the vocabulary (``</s>`` and ``<unk>`` included, ``<s>`` excluded: log10 -99). Every
  n-gram of the text is kept, and each context's backoff weight is its interpolation weight
  D * N1+(h .) / c(h .), so that every context's distribution sums to 1 (to the 7 decimals of
  the log10 values written). Sections are sorted (word by word, byte order).
* ``moses.ini`` (the current format): PhraseDictionaryMemory (4 features, table-limit 20),
  LexicalReordering ``type=wbe-msd-bidirectional-fe-allff``, KENLM (``name=LM0``), Distortion,
  WordPenalty, PhrasePenalty, UnknownWordPenalty, their weights, distortion-limit 6. Its
  paths are relative to the ini's folder (fstdecode resolves them there; Moses resolves them
  against its working directory, so run Moses from DIR).
* ``input.txt``: ``--sentences`` sentences of the source chain (a generator of their own).

Presets (``--preset``; explicit flags override them):

* ``full`` (the default): the issue's size, ``--pairs 8000000 --lm-words 10000000
  --sentences 50`` (an LM of about 15M+ n-grams at order 5);
* ``small``, for tests: ``--pairs 20000 --lm-words 50000 --sentences 10``.

Defaults: ``--order 5 --seed 1``. Progress (phase, counts, seconds) goes to stderr. DIR must
be absent or empty unless ``--force`` (which overwrites the files named above, nothing else).

    python -m scripts.make_big_model --out DIR [--preset full|small] [--pairs N] [--lm-words N]
        [--order 5] [--sentences N] [--seed 1] [--gzip] [--lm-tool auto|lmplz|builtin] [--force]
"""

from __future__ import annotations

import gzip
import io
import itertools
import random
import shutil
import subprocess
import sys
import tempfile
import time
from array import array
from bisect import bisect
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from scripts.benchlib import log, script

#: Words of each language.
VOCABULARY = 40_000
#: The exponent s of the Zipf law p(r) ~ 1 / (r + 1) ** s of word ranks.
ZIPF_EXPONENT = 1.0
#: Length of each word's successor list, and the exponent of the Zipf law over its positions.
SUCCESSORS = 200
SUCCESSOR_EXPONENT = 1.1
#: Words per sentence, uniform between the two (input sentences and the LM text).
SENTENCE_LENGTH = (15, 35)
#: Longest source phrase of the phrase table.
MAX_PHRASE_LENGTH = 5
#: A source phrase of n words gets 1..TARGETS_PER_SOURCE[n] targets (uniform).
TARGETS_PER_SOURCE = {1: 30, 2: 12, 3: 7, 4: 5, 5: 4}
#: Smallest score written (the table's scores are all in (0, 1]).
MIN_SCORE = 1e-6
#: The backward and forward (monotone, swap, discontinuous) biases of the reordering rows.
REORDERING_BIAS = (1.0, 0.1, 0.4)
#: The reordering model's type, as in the moses.ini and the table's name.
REORDERING_TYPE = "wbe-msd-bidirectional-fe-allff"

PRESETS = {
    "full": dict(pairs=8_000_000, lm_words=10_000_000, sentences=50),
    "small": dict(pairs=20_000, lm_words=50_000, sentences=10),
}

BOS, EOS, UNK = "<s>", "</s>", "<unk>"

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
SOURCE_SYLLABLES = tuple(c + v for c in _CONSONANTS for v in _VOWELS)
TARGET_SYLLABLES = tuple(v + c for v in _VOWELS for c in _CONSONANTS)


def spell(rank: int, syllables: Sequence[str]) -> str:
    """The word of ``rank``: its bijective base-len(syllables) digits as syllables (rank 0 is the first syllable)."""
    base = len(syllables)
    parts = []
    n = rank + 1
    while n:
        n, digit = divmod(n - 1, base)
        parts.append(syllables[digit])
    return "".join(reversed(parts))


def _zipf_cumulative(size: int, exponent: float) -> list[float]:
    return list(itertools.accumulate(1.0 / (r + 1) ** exponent for r in range(size)))


class Chain:
    """The bigram Markov chain of one language (see the module docstring): ranks 0..VOCABULARY-1."""

    def __init__(self, seed: int, language: str) -> None:
        self.seed, self.language = seed, language
        self.cum = _zipf_cumulative(VOCABULARY, ZIPF_EXPONENT)
        self.succ_cum = _zipf_cumulative(SUCCESSORS, SUCCESSOR_EXPONENT)
        self.ranks = list(range(VOCABULARY))
        self.positions = list(range(SUCCESSORS))
        self.table: list[list[int] | None] = [None] * VOCABULARY

    def successors(self, w: int) -> list[int]:
        """w's successor list: a function of (seed, language, w) only."""
        s = self.table[w]
        if s is None:
            rng = random.Random(f"{self.seed}:{self.language}:successors:{w}")
            s = self.table[w] = rng.choices(self.ranks, cum_weights=self.cum, k=SUCCESSORS)
        return s

    def first(self, rng: random.Random) -> int:
        """A sentence's first word: a Zipfian rank."""
        return bisect(self.cum, rng.random() * self.cum[-1])

    def walk(self, rng: random.Random, start: int, length: int) -> list[int]:
        """``length`` words from ``start`` (included)."""
        out = [start]
        w = start
        table, successors = self.table, self.successors
        for k in rng.choices(self.positions, cum_weights=self.succ_cum, k=length - 1):
            s = table[w]
            if s is None:
                s = successors(w)
            w = s[k]
            out.append(w)
        return out

    def sentence(self, rng: random.Random, length: int | None = None) -> list[int]:
        if length is None:
            length = rng.randint(*SENTENCE_LENGTH)
        return self.walk(rng, self.first(rng), length)


class Progress:
    """Phase timings on stderr."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.t = self.t0

    def done(self, phase: str, what: str) -> None:
        now = time.perf_counter()
        log(f"[make_big_model] {phase}: {what} in {now - self.t:.1f} s (total {now - self.t0:.1f} s)")
        self.t = now


def _open_text(path: Path, compress: bool):
    """A text stream writing ``path``; gzip with no time stamp and no name, so the bytes are reproducible."""
    raw = open(path, "wb")
    if not compress:
        return io.TextIOWrapper(raw, encoding="utf-8", newline="\n", write_through=False)
    gz = gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0)

    class _Closing(io.TextIOWrapper):
        def close(self) -> None:  # close the gzip stream, then the file under it
            super().close()
            raw.close()

    return _Closing(gz, encoding="utf-8", newline="\n")


# --------------------------------------------------------------------------- phrase table


def collect_sources(chain: Chain, rng: random.Random, pairs: int) -> tuple[dict[tuple[int, ...], int], int]:
    """Distinct n-grams of source-chain sentences, each with its number of targets, until ``pairs`` targets."""
    sources: dict[tuple[int, ...], int] = {}
    planned = words = 0
    limits = TARGETS_PER_SOURCE
    while planned < pairs:
        sent = chain.sentence(rng)
        words += len(sent)
        n_words = len(sent)
        for i in range(n_words):
            for n in range(1, min(MAX_PHRASE_LENGTH, n_words - i) + 1):
                phrase = tuple(sent[i:i + n])
                if phrase in sources:
                    continue
                k = min(rng.randint(1, limits[n]), pairs - planned)
                sources[phrase] = k
                planned += k
                if planned >= pairs:
                    return sources, words
    return sources, words


_ALIGNMENTS: dict[tuple[int, int], str] = {}


def alignment(m: int, n: int) -> str:
    """The diagonal alignment of an m-word source and an n-word target (see the module docstring)."""
    got = _ALIGNMENTS.get((m, n))
    if got is None:
        points = {(i, i * n // m) for i in range(m)}
        covered = {j for _, j in points}
        points |= {(j * m // n, j) for j in range(n) if j not in covered}
        got = _ALIGNMENTS[(m, n)] = " ".join(f"{i}-{j}" for i, j in sorted(points))
    return got


def write_tables(
    out: Path, sources: dict[tuple[int, ...], int], source_chain: Chain, target_chain: Chain,
    rng: random.Random, compress: bool, progress: Progress,
) -> tuple[Path, Path, int]:
    """Write the phrase and reordering tables; their paths and the number of pairs."""
    suffix = ".gz" if compress else ""
    pt_path = out / f"phrase-table{suffix}"
    rt_path = out / f"reordering-table.{REORDERING_TYPE.rsplit('-', 1)[0]}{suffix}"
    s_spell = {}
    t_words: dict[int, str] = {}

    def tword(r: int) -> str:
        w = t_words.get(r)
        if w is None:
            w = t_words[r] = spell(r, TARGET_SYLLABLES)
        return w

    keyed = []
    for phrase, k in sources.items():
        words = []
        for r in phrase:
            w = s_spell.get(r)
            if w is None:
                w = s_spell[r] = spell(r, SOURCE_SYLLABLES)
            words.append(w)
        keyed.append((" ".join(words) + " |||", phrase, k))
    keyed.sort(key=lambda item: item[0])
    progress.done("sort", f"{len(keyed):,} source phrases sorted")

    rand, uniform, randint = rng.random, rng.uniform, rng.randint
    succ_positions, succ_cum = target_chain.positions, target_chain.succ_cum
    walk, successors = target_chain.walk, target_chain.successors
    bm, bs, bd = REORDERING_BIAS
    lowest = MIN_SCORE
    written = 0
    next_report = 1_000_000
    pt = _open_text(pt_path, compress)
    rt = _open_text(rt_path, compress)
    try:
        pt_lines: list[str] = []
        rt_lines: list[str] = []
        for head, phrase, k in keyed:
            m = len(phrase)
            lex_start = phrase[0]
            targets: dict[tuple[int, ...], None] = {}
            tries = 0
            while len(targets) < k:
                length = max(1, m + randint(-1, 1))
                if not targets and tries == 0:
                    start = lex_start
                else:
                    start = successors(lex_start)[rng.choices(succ_positions, cum_weights=succ_cum)[0]]
                tries += 1
                t = tuple(walk(rng, start, length + tries // 20))  # longer after many collisions: always ends
                if t not in targets:
                    targets[t] = None
            weights = [(0.05 + 0.95 * rand()) ** 3 for _ in range(k)]
            total = sum(weights)
            rows = []
            for t in targets:
                rows.append((" ".join(map(tword, t)) + " |||", len(t)))
            order = sorted(range(k), key=lambda j: rows[j][0])
            src = head[:-4]
            for j in order:
                text, n = rows[j]
                direct = max(weights[j] / total, lowest)
                inverse = max(10.0 ** (-3.0 * rand()), lowest)
                pt_lines.append(
                    f"{src} ||| {text} {inverse:.6f} {max(inverse * uniform(0.3, 1.0), lowest):.6f} "
                    f"{direct:.6f} {max(direct * uniform(0.3, 1.0), lowest):.6f} ||| {alignment(m, n)}\n"
                )
                a, b, c = rand() + bm, rand() + bs, rand() + bd
                d, e, f = rand() + bm, rand() + bs, rand() + bd
                s1, s2 = a + b + c, d + e + f
                rt_lines.append(
                    f"{src} ||| {text} {a / s1:.6f} {b / s1:.6f} {c / s1:.6f} {d / s2:.6f} {e / s2:.6f} {f / s2:.6f}\n"
                )
            written += k
            if len(pt_lines) >= 100_000:
                pt.write("".join(pt_lines))
                rt.write("".join(rt_lines))
                pt_lines.clear()
                rt_lines.clear()
                if written >= next_report:
                    next_report += 1_000_000
                    log(f"[make_big_model]   tables: {written:,} pairs ({time.perf_counter() - progress.t:.0f} s)")
        pt.write("".join(pt_lines))
        rt.write("".join(rt_lines))
    finally:
        pt.close()
        rt.close()
    return pt_path, rt_path, written


# --------------------------------------------------------------------------- language model


def lm_text(chain: Chain, rng: random.Random, words: int) -> Iterator[list[int]]:
    """Target-chain sentences of ``words`` words in all (the last one cut)."""
    left = words
    while left > 0:
        length = min(rng.randint(*SENTENCE_LENGTH), left)
        left -= length
        yield chain.sentence(rng, length)


def write_arpa_builtin(path: Path, sentences: Iterator[list[int]], order: int, progress: Progress) -> list[int]:
    """Estimate the interpolated Kneser-Ney LM of the module docstring and write it; the n-gram counts."""
    # Codes: 0 <s>, 1 </s>, 2 <unk>, rank + 3 for the words.
    codes = array("i")
    n_sent = 0
    for sent in sentences:
        codes.append(0)
        codes.extend([r + 3 for r in sent])
        codes.append(1)
        n_sent += 1
    raw = np.frombuffer(codes, dtype=np.int32).astype(np.int64)
    del codes
    progress.done("LM text", f"{len(raw) - 2 * n_sent:,} words in {n_sent:,} sentences")

    used = np.unique(np.concatenate([raw, np.array([2], dtype=np.int64)]))
    names = {0: BOS, 1: EOS, 2: UNK}
    spelled = [names[c] if c < 3 else spell(c - 3, TARGET_SYLLABLES) for c in used.tolist()]
    by_name = sorted(range(len(spelled)), key=spelled.__getitem__)
    words = [spelled[i] for i in by_name]
    lookup = np.full(int(used[-1]) + 1, -1, dtype=np.int64)
    lookup[used[by_name]] = np.arange(len(words), dtype=np.int64)
    tok = lookup[raw]
    del raw
    vn = len(words)
    bos, unk = words.index(BOS), words.index(UNK)
    total = len(tok)
    sid = np.cumsum(tok == bos)

    # Per order m (index m - 1): raw counts, and for m >= 2 each n-gram's context id (its (m-1)-gram
    # prefix), last word, suffix id (its (m-1)-gram suffix) and first word. Ids are ranks in the
    # sorted unique keys (context id * vn + last word), so that id order is lexicographic.
    raw_counts = [np.bincount(tok, minlength=vn)]
    ctxs: list[np.ndarray | None] = [None]
    lasts: list[np.ndarray | None] = [None]
    suffixes: list[np.ndarray | None] = [None]
    firsts: list[np.ndarray] = [np.arange(vn, dtype=np.int64)]
    pos = tok  # pos[i]: id of the (m-1)-gram starting at i (-1 if it crosses a sentence end)
    for m in range(2, order + 1):
        span = total - m + 1
        prev = pos[:span]
        idx = np.flatnonzero((prev >= 0) & (sid[:span] == sid[m - 1:]))
        keys = prev[idx] * vn + tok[idx + m - 1]
        uniq, first_index, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
        rep = idx[first_index]
        ctxs.append(uniq // vn)
        lasts.append(uniq % vn)
        suffixes.append(pos[rep + 1])
        firsts.append(tok[rep])
        raw_counts.append(counts)
        new_pos = np.full(span, -1, dtype=np.int64)
        new_pos[idx] = inverse.reshape(-1)
        pos = new_pos
        del keys, uniq, first_index, inverse, idx, prev
    del pos, sid
    sizes = [len(c) for c in raw_counts]
    progress.done("LM counts", ", ".join(f"{n}-grams {c:,}" for n, c in enumerate(sizes, 1)))

    # Adjusted counts: raw at the highest order and for n-grams starting with <s>, else continuation counts.
    adjusted = []
    for m in range(1, order + 1):
        if m == order:
            a = raw_counts[m - 1].astype(np.float64)
        else:
            a = np.bincount(suffixes[m], minlength=sizes[m - 1]).astype(np.float64)
            starts = firsts[m - 1] == bos
            a[starts] = raw_counts[m - 1][starts]
        adjusted.append(a)
    adjusted[0][bos] = 0.0

    def discount(a: np.ndarray) -> float:
        n1, n2 = int(np.count_nonzero(a == 1)), int(np.count_nonzero(a == 2))
        return n1 / (n1 + 2 * n2) if n1 and n2 else 0.5

    a1 = adjusted[0]
    d1 = discount(a1[a1 > 0])
    t1 = a1.sum()
    seen = a1 > 0
    gamma0 = d1 * np.count_nonzero(seen) / t1
    probs = [np.where(seen, (a1 - d1) / t1, 0.0) + gamma0 / (vn - 1)]
    probs[0][bos] = 0.0
    backoffs: list[np.ndarray | None] = []
    for m in range(2, order + 1):
        a, ctx = adjusted[m - 1], ctxs[m - 1]
        d = discount(a)
        c_h = np.bincount(ctx, weights=a, minlength=sizes[m - 2])
        n_plus = np.bincount(ctx, minlength=sizes[m - 2])
        has = c_h > 0
        gamma = np.zeros(sizes[m - 2])
        gamma[has] = d * n_plus[has] / c_h[has]
        backoffs.append(gamma)
        probs.append((a - d) / c_h[ctx] + gamma[ctx] * probs[m - 2][suffixes[m - 1]])
    backoffs.append(None)
    progress.done("LM estimate", f"order {order}, interpolated Kneser-Ney")

    with open(path, "w", encoding="utf-8", newline="\n") as out:
        out.write("\\data\\\n" + "".join(f"ngram {m}={c}\n" for m, c in enumerate(sizes, 1)))
        texts = words
        for m in range(1, order + 1):
            if m > 1:
                texts = [texts[c] + " " + words[w] for c, w in zip(ctxs[m - 1].tolist(), lasts[m - 1].tolist())]
            with np.errstate(divide="ignore"):
                logp = np.log10(probs[m - 1])
            if m == 1:
                logp[bos] = -99.0
            bow = backoffs[m - 1]
            out.write(f"\n\\{m}-grams:\n")
            step = 500_000
            for start in range(0, sizes[m - 1], step):
                end = min(start + step, sizes[m - 1])
                ps = logp[start:end].tolist()
                ts = texts[start:end]
                if bow is None:
                    out.write("".join([f"{p:.7f}\t{t}\n" for p, t in zip(ps, ts)]))
                else:
                    bs = bow[start:end]
                    with np.errstate(divide="ignore"):
                        lb = np.log10(bs).tolist()
                    out.write("".join([
                        f"{p:.7f}\t{t}\t{b:.7f}\n" if g > 0.0 else f"{p:.7f}\t{t}\n"
                        for p, t, b, g in zip(ps, ts, lb, bs.tolist())
                    ]))
        out.write("\n\\end\\\n")
    progress.done("LM write", f"{sum(sizes):,} n-grams, {path.stat().st_size / 2**20:,.0f} MiB")
    return sizes


def write_arpa_lmplz(path: Path, sentences: Iterator[list[int]], order: int, progress: Progress) -> None:
    """``lmplz -o ORDER --discount_fallback`` over the sentences (streamed to its stdin)."""
    spelled: dict[int, str] = {}
    # lmplz's progress goes to a temporary file: a pipe left unread while we feed stdin could fill and block it.
    with open(path, "wb") as arpa, tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(["lmplz", "-o", str(order), "--discount_fallback"],
                                stdin=subprocess.PIPE, stdout=arpa, stderr=errors)
        assert proc.stdin is not None
        chunk = []
        for sent in sentences:
            line = []
            for r in sent:
                w = spelled.get(r)
                if w is None:
                    w = spelled[r] = spell(r, TARGET_SYLLABLES)
                line.append(w)
            chunk.append(" ".join(line) + "\n")
            if len(chunk) >= 10_000:
                proc.stdin.write("".join(chunk).encode("utf-8"))
                chunk.clear()
        proc.stdin.write("".join(chunk).encode("utf-8"))
        proc.stdin.close()
        if proc.wait() != 0:
            errors.seek(0)
            err = errors.read().decode("utf-8", "replace")
            raise RuntimeError(f"lmplz failed (exit {proc.returncode}): {err[-2000:]}")
    progress.done("LM (lmplz)", f"order {order}, {path.stat().st_size / 2**20:,.0f} MiB")


# --------------------------------------------------------------------------- moses.ini and input


def moses_ini(pt: Path, rt: Path, lm: Path, order: int) -> str:
    return f"""\
#########################
### MOSES CONFIG FILE ###
#########################
# Generated by scripts/make_big_model.py (synthetic). Paths are absolute: Moses, and fstdecode
# moses, resolve a relative one from the working directory, so this runs from any folder.

# input factors
[input-factors]
0

# mapping steps
[mapping]
0 T 0

[distortion-limit]
6

# feature functions
[feature]
UnknownWordPenalty
WordPenalty
PhrasePenalty
PhraseDictionaryMemory name=TranslationModel0 num-features=4 path={pt.resolve()} input-factor=0 output-factor=0 table-limit=20
LexicalReordering name=LexicalReordering0 num-features=6 type={REORDERING_TYPE} input-factor=0 output-factor=0 path={rt.resolve()}
Distortion
KENLM name=LM0 factor=0 path={lm.resolve()} order={order}

# dense weights for feature functions
[weight]
UnknownWordPenalty0= 1
WordPenalty0= -1
PhrasePenalty0= 0.2
TranslationModel0= 0.2 0.2 0.2 0.2
LexicalReordering0= 0.3 0.3 0.3 0.3 0.3 0.3
Distortion0= 0.3
LM0= 0.5
"""


OUTPUTS = ("moses.ini", "input.txt", "lm.arpa", "phrase-table", "phrase-table.gz",
           "reordering-table.wbe-msd-bidirectional-fe", "reordering-table.wbe-msd-bidirectional-fe.gz")


def generate(out: Path, *, pairs: int, lm_words: int, order: int, sentences: int, seed: int,
             compress: bool, lm_tool: str = "auto") -> dict:
    """Write the model into ``out`` (which must exist); a summary of what was written."""
    progress = Progress()
    for name in OUTPUTS:  # --force: no stale table of the other compression
        (out / name).unlink(missing_ok=True)
    source_chain, target_chain = Chain(seed, "source"), Chain(seed, "target")

    sources, text_words = collect_sources(source_chain, random.Random(f"{seed}:source-text"), pairs)
    progress.done("sources", f"{len(sources):,} source phrases from {text_words:,} source words")
    pt, rt, written = write_tables(out, sources, source_chain, target_chain,
                                   random.Random(f"{seed}:tables"), compress, progress)
    del sources
    progress.done("tables", f"{written:,} pairs, {pt.stat().st_size / 2**20:,.0f} + {rt.stat().st_size / 2**20:,.0f} MiB")

    lm = out / "lm.arpa"
    text = lm_text(target_chain, random.Random(f"{seed}:lm-text"), lm_words)
    use_lmplz = lm_tool == "lmplz" or (lm_tool == "auto" and shutil.which("lmplz"))
    sizes = None
    if use_lmplz:
        write_arpa_lmplz(lm, text, order, progress)
    else:
        sizes = write_arpa_builtin(lm, text, order, progress)

    rng = random.Random(f"{seed}:input")
    with open(out / "input.txt", "w", encoding="utf-8", newline="\n") as f:
        for _ in range(sentences):
            f.write(" ".join(spell(r, SOURCE_SYLLABLES) for r in source_chain.sentence(rng)) + "\n")
    (out / "moses.ini").write_text(moses_ini(pt, rt, lm, order), encoding="utf-8", newline="\n")
    progress.done("input and moses.ini", f"{sentences} sentences")
    return {"pairs": written, "lm_ngrams": sizes, "seconds": time.perf_counter() - progress.t0}


def add_args(ap) -> None:
    ap.add_argument("--out", type=Path, required=True, help="the model's folder (absent or empty unless --force)")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="full",
                    help="sizes: full (8M pairs, LM of 10M words, 50 sentences; the default) or small (tests)")
    ap.add_argument("--pairs", type=int, help="phrase pairs (overrides the preset)")
    ap.add_argument("--lm-words", type=int, help="words of LM text (overrides the preset)")
    ap.add_argument("--order", type=int, default=5, help="LM order (default 5)")
    ap.add_argument("--sentences", type=int, help="input sentences (overrides the preset)")
    ap.add_argument("--seed", type=int, default=1, help="the seed (default 1)")
    ap.add_argument("--gzip", action="store_true", help="gzip the phrase and reordering tables")
    ap.add_argument("--lm-tool", choices=("auto", "lmplz", "builtin"), default="auto",
                    help="auto: lmplz when on the PATH, else the built-in estimator")
    ap.add_argument("--force", action="store_true", help="write into a non-empty folder")


def run(args, record) -> int:
    preset = PRESETS[args.preset]
    pairs = args.pairs if args.pairs is not None else preset["pairs"]
    lm_words = args.lm_words if args.lm_words is not None else preset["lm_words"]
    sentences = args.sentences if args.sentences is not None else preset["sentences"]
    if pairs < 1 or lm_words < 1 or args.order < 1 or sentences < 0:
        log("--pairs, --lm-words and --order must be at least 1, --sentences at least 0")
        return 2
    if args.lm_tool == "lmplz" and not shutil.which("lmplz"):
        log("--lm-tool lmplz: lmplz is not on the PATH (KenLM's estimator); use --lm-tool builtin")
        return 2
    out: Path = args.out
    if out.exists() and not out.is_dir():
        log(f"{out} is not a folder")
        return 2
    if out.exists() and any(out.iterdir()) and not args.force:
        log(f"{out} is not empty; give --force to write into it")
        return 2
    out.mkdir(parents=True, exist_ok=True)
    summary = generate(out, pairs=pairs, lm_words=lm_words, order=args.order, sentences=sentences,
                       seed=args.seed, compress=args.gzip, lm_tool=args.lm_tool)
    log(f"[make_big_model] wrote {out}: {summary['pairs']:,} pairs"
        + (f", {sum(summary['lm_ngrams']):,} n-grams" if summary["lm_ngrams"] else "")
        + f" in {summary['seconds']:.1f} s")
    return 0


main = script("make_big_model", __doc__, run, add_args=add_args)

if __name__ == "__main__":
    sys.exit(main())
