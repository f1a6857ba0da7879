#!/usr/bin/env python3
"""Write the built-in example model to fstdecode/data/ (our own, tiny, hand-made).

The phrase table translates the two examples of Chang & Collins (2017): the
slides' "das muss unsere sorge gleichermaßen sein" and a German source for
Figure 1's "we must also take these criticisms seriously". The bigram LM is
estimated here from a handful of English sentences with interpolated
absolute discounting (D = 0.5) over an add-one unigram, so every
conditional distribution sums to one; it is written as a standard ARPA file
(log10, with backoff weights).

    python -m scripts.make_example_model [--out DIR]     (default DIR: fstdecode/data/)
"""

from __future__ import annotations

import math
import sys
from collections import Counter, defaultdict

from scripts.benchlib import ROOT, script

OUT = ROOT / "fstdecode" / "data"

# The English "corpus" of the LM: why these sentences? They make the two
# example translations of the paper the LM's favourites, with enough
# competitors (monotone word orders, other word choices) to make search matter.
CORPUS = """\
this must also be our concern
we must also take these criticisms seriously
we must take this seriously
our concern must be equally serious
that is our concern
these criticisms are serious
this must be done
we have to take it seriously
it must also be said
the concern is ours
"""

# (source, target, p(e|f), lex(e|f)): probabilities, as Moses writes them.
PHRASES = [
    ("das muss", "this must", 0.6, 0.5),
    ("das", "this", 0.4, 0.4),
    ("das", "that", 0.5, 0.5),
    ("das", "the", 0.3, 0.3),
    ("muss", "must", 0.9, 0.8),
    ("muss", "has to", 0.1, 0.2),
    ("unsere sorge", "our concern", 0.7, 0.6),
    ("unsere", "our", 0.9, 0.9),
    ("sorge", "concern", 0.6, 0.5),
    ("sorge", "worry", 0.4, 0.4),
    ("gleichermaßen", "also", 0.5, 0.4),
    ("gleichermaßen", "equally", 0.5, 0.5),
    ("sein", "be", 0.8, 0.7),
    ("sein", "his", 0.2, 0.3),
    ("wir müssen", "we must", 0.8, 0.7),
    ("wir", "we", 0.9, 0.9),
    ("müssen", "must", 0.8, 0.8),
    ("müssen", "have to", 0.2, 0.2),
    ("auch", "also", 0.8, 0.7),
    ("auch", "too", 0.2, 0.3),
    ("diese kritik", "these criticisms", 0.7, 0.6),
    ("diese", "these", 0.8, 0.8),
    ("diese", "this", 0.2, 0.2),
    ("kritik", "criticism", 0.6, 0.6),
    ("kritik", "criticisms", 0.4, 0.4),
    ("ernst", "seriously", 0.7, 0.6),
    ("ernst", "serious", 0.3, 0.4),
    ("nehmen", "take", 0.9, 0.8),
]

INI = """\
# fstdecode's built-in example: Chang & Collins (2017), slides and Figure 1.
[distortion-limit]
4

[feature]
KENLM name=KENLM0 order=2 path=${MODEL_DIR}/lm.arpa
Distortion
WordPenalty
UnknownWordPenalty
PhraseDictionaryMemory name=PhraseDictionaryMemory0 num-features=2 path=${MODEL_DIR}/phrase-table table-limit=0

[weight]
KENLM0= 1.0
Distortion0= 0.3
WordPenalty0= 0
UnknownWordPenalty0= 1
PhraseDictionaryMemory0= 0.5 0.5
"""

INPUT = """\
das muss unsere sorge gleichermaßen sein
wir müssen auch diese kritik ernst nehmen
"""

D = 0.5  # absolute discount


def arpa(corpus: str) -> str:
    sents = [["<s>", *line.split(), "</s>"] for line in corpus.splitlines() if line.strip()]
    vocab = sorted({w for s in sents for w in s[1:]} | {"<unk>"})
    uni = Counter(w for s in sents for w in s[1:])
    total = sum(uni.values())
    p_uni = {w: (uni[w] + 1) / (total + len(vocab)) for w in vocab}
    big = Counter((a, b) for s in sents for a, b in zip(s, s[1:]))
    ctx = Counter()
    follow = defaultdict(int)
    for (a, _), c in big.items():
        ctx[a] += c
        follow[a] += 1
    lines = ["", "\\data\\", f"ngram 1={len(vocab) + 1}", f"ngram 2={len(big)}", "", "\\1-grams:"]
    backoff = {a: D * follow[a] / ctx[a] for a in ctx}
    lines.append(f"-99\t<s>\t{math.log10(backoff['<s>']):.6f}")
    for w in vocab:
        bo = f"\t{math.log10(backoff[w]):.6f}" if w in backoff else ""
        lines.append(f"{math.log10(p_uni[w]):.6f}\t{w}{bo}")
    lines += ["", "\\2-grams:"]
    for (a, b), c in sorted(big.items()):
        p = (c - D) / ctx[a] + backoff[a] * p_uni[b]
        lines.append(f"{math.log10(p):.6f}\t{a} {b}")
    lines += ["", "\\end\\", ""]
    return "\n".join(lines)


def run(args, record) -> int:
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "lm.arpa").write_text(arpa(CORPUS), encoding="utf-8")
    (out / "phrase-table").write_text(
        "".join(f"{s} ||| {t} ||| {a} {b}\n" for s, t, a, b in PHRASES), encoding="utf-8"
    )
    (out / "moses.ini").write_text(INI, encoding="utf-8")
    (out / "input.txt").write_text(INPUT, encoding="utf-8")
    print(f"wrote {out}")
    return 0


main = script("make_example_model", __doc__, run, out=OUT,
                    out_help="output directory (default: fstdecode/data/, the built-in example)")


if __name__ == "__main__":
    sys.exit(main())
