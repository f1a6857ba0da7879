"""Moses' parameters (moses/Parameter.cpp) and what fstdecode does with each.

Moses has one namespace for its moses.ini sections and its command-line switches: every
parameter declared in ``Parameter::Parameter()`` (moses-smt/mosesdecoder 547c3d2d, read
through the search tool; docs/moses-reference/parameters.md lists them with their line
numbers) may be a ``[section]`` or a ``-switch``, by its long name or its short one. This
module holds that list once, with what fstdecode does with each parameter:

* ``MODEL``: read by :mod:`fstdecode.io.moses_ini` and honoured as Moses honours it;
* ``OUTPUT``: an output setting, honoured by both commands (``decode`` and ``moses``);
* ``SEARCH``: a setting of Moses' stack search: ``fstdecode moses`` honours the ones its stack
  search has (``stack``, ``beam-threshold``, ...), ``decode`` warns that its own search flags
  apply instead (its methods are not Moses' search, and an exact one needs none of them);
* ``NO_EFFECT``: read with a warning: nothing in the output depends on it (caches,
  descriptions, logging);
* ``REFUSED``: refused by name, with the way out where there is one, because honouring it
  would need what fstdecode does not have (factors, lattices, syntax, MBR, ...).

A section that is not a Moses parameter at all (a fork's, or a typo) is refused by name, as
vanilla Moses refuses it ("Unknown parameter"). Short names (``[s]``, ``[b]``, ``[dl]``,
``[th]``, ``[v]`` ...) read as their long names: ``mert-moses.pl`` writes its
``--decoder-flags`` back into the tuned moses.ini as such sections.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["Param", "PARAMETERS", "SHORT_NAMES", "MODEL", "OUTPUT", "SEARCH", "NO_EFFECT", "REFUSED", "long_name",
           "HONOURED_SEARCH", "NOT_IN_STACK_SEARCH"]

MODEL = "model"
OUTPUT = "output"
SEARCH = "search"
NO_EFFECT = "no effect"
REFUSED = "refused"


@dataclass(frozen=True)
class Param:
    """One Moses parameter: its long name, its short one (or ""), what fstdecode does with it,
    and, for a refused or ignored one, why (and the way out)."""

    name: str
    short: str
    treatment: str
    why: str = ""


_FACTORS = "factored models are not supported: fstdecode reads surface words (factor 0) only"
_LATTICE = "lattice and confusion-network input is not supported; give plain text (inputtype 0)"
_SYNTAX = "hierarchical and syntax-based models are not supported (fstdecode decodes phrase-based models)"
_MBR = "minimum Bayes risk and consensus decoding are not supported; fstdecode returns the best derivation"
_GRAPH = "use decode --method fst --lattice-dir DIR and fstdecode inspect --search-graph (docs/moses-outputs.md)"
_DEPRECATED = "an old-format feature fstdecode does not implement; remove it and its weights"
_CACHE = "a cache setting of Moses' own tables; nothing in the output depends on it"


def _table() -> tuple[Param, ...]:
    p = Param
    return (
        # Model: moses_ini reads these.
        p("feature", "", MODEL), p("weight", "", MODEL), p("distortion-limit", "dl", MODEL),
        p("early-distortion-cost", "edc", MODEL), p("input-factors", "", MODEL), p("mapping", "", MODEL),
        p("inputtype", "", MODEL), p("config", "f", MODEL), p("input-file", "i", MODEL),
        p("weight-overwrite", "", MODEL), p("show-weights", "", MODEL),
        # the old format, converted as Moses converts it
        p("ttable-file", "", MODEL), p("lmodel-file", "", MODEL), p("distortion-file", "", MODEL),
        p("weight-d", "d", MODEL), p("weight-l", "lm", MODEL), p("weight-t", "tm", MODEL),
        p("weight-w", "w", MODEL), p("weight-u", "u", MODEL), p("weight-p", "", MODEL),
        p("ttable-limit", "ttl", MODEL),
        # Output.
        p("n-best-list", "", OUTPUT), p("print-alignment-info", "", OUTPUT),
        p("print-alignment-info-in-n-best", "", OUTPUT), p("include-segmentation-in-n-best", "", OUTPUT),
        p("alignment-output-file", "", OUTPUT), p("xml-input", "xi", OUTPUT), p("labeled-n-best-list", "", OUTPUT),
        p("n-best-factor", "", OUTPUT), p("report-segmentation", "t", OUTPUT), p("output-unknowns", "", OUTPUT),
        p("mark-unknown", "mu", OUTPUT), p("print-id", "", OUTPUT), p("output-hypo-score", "", OUTPUT),
        p("start-translation-id", "", OUTPUT), p("sort-word-alignment", "", OUTPUT),
        p("output-factors", "", OUTPUT), p("report-all-factors", "", OUTPUT),
        p("report-all-factors-in-n-best", "", OUTPUT),
        # Moses' own search.
        p("stack", "s", SEARCH), p("beam-threshold", "b", SEARCH), p("max-phrase-length", "", SEARCH),
        p("threads", "th", SEARCH), p("search-algorithm", "", SEARCH),
        p("stack-diversity", "sd", SEARCH), p("early-discarding-threshold", "edt", SEARCH),
        p("translation-option-threshold", "tot", SEARCH), p("max-trans-opt-per-coverage", "", SEARCH),
        p("max-partial-trans-opt", "", SEARCH), p("cube-pruning-pop-limit", "cbp", SEARCH),
        p("cube-pruning-diversity", "cbd", SEARCH), p("cube-pruning-lazy-scoring", "cbls", SEARCH),
        p("disable-discarding", "dd", SEARCH), p("time-out", "", SEARCH),
        # Nothing in the output depends on these.
        p("description", "", NO_EFFECT, "a description of the model"),
        p("verbose", "v", NO_EFFECT, "Moses' logging level (decode logs with -v; fstdecode moses reads it)"),
        p("cache-path", "", NO_EFFECT, _CACHE),
        p("clean-lm-cache", "", NO_EFFECT, "an LM cache setting"),
        p("no-cache", "", NO_EFFECT, _CACHE), p("minphr-memory", "", NO_EFFECT, _CACHE),
        p("minlexr-memory", "", NO_EFFECT, _CACHE), p("text-type", "", NO_EFFECT, "a deprecated label of the input"),
        p("lmodel-dub", "", NO_EFFECT, "an old-format LM dictionary bound"),
        # Refused: honouring them needs what fstdecode does not have.
        p("drop-unknown", "du", REFUSED, "dropping unknown words is not implemented; fstdecode copies them, "
          "as Moses does by default: remove it"),
        p("decoding-graph-backoff", "dpb", REFUSED, "several decoding paths with back-off are not supported"),
        p("factor-delimiter", "fd", REFUSED, _FACTORS),
        p("n-best-trees", "", REFUSED, _SYNTAX),
        p("lattice-samples", "", REFUSED, "lattice sampling is not supported; use -n-best-list"),
        p("print-all-derivations", "", REFUSED, "use -n-best-list FILE N"),
        p("phrase-drop-allowed", "da", REFUSED, "dropping source words is not supported"),
        p("translation-details", "T", REFUSED, "translation details are not written; use decode --format json"),
        p("tree-translation-details", "Ttree", REFUSED, _SYNTAX),
        p("translation-all-details", "Tall", REFUSED, "translation details are not written; use decode --format json"),
        p("references", "", REFUSED, "the BLEU feature (online tuning) is not supported"),
        p("monotone-at-punctuation", "mp", REFUSED, "the punctuation reordering constraint is not implemented"),
        p("distortion", "", REFUSED, "factored reordering models are not supported; use LexicalReordering lines"),
        p("xml-brackets", "xb", REFUSED, "XML markup uses < and > only"),
        p("minimum-bayes-risk", "mbr", REFUSED, _MBR), p("lminimum-bayes-risk", "lmbr", REFUSED, _MBR),
        p("consensus-decoding", "con", REFUSED, _MBR), p("mbr-size", "", REFUSED, _MBR),
        p("mbr-scale", "", REFUSED, _MBR), p("lmbr-thetas", "", REFUSED, _MBR),
        p("lmbr-pruning-factor", "", REFUSED, _MBR), p("lmbr-p", "", REFUSED, _MBR), p("lmbr-r", "", REFUSED, _MBR),
        p("lmbr-map-weight", "", REFUSED, _MBR), p("lattice-hypo-set", "", REFUSED, _MBR),
        p("mira", "", REFUSED, "online MIRA training inside the decoder is not supported; use mert-moses.pl"),
        p("lmodel-oov-feature", "", REFUSED, "the LM's out-of-vocabulary feature is not implemented"),
        p("recover-input-path", "r", REFUSED, _LATTICE),
        p("output-word-graph", "owg", REFUSED, _GRAPH),
        p("output-search-graph", "osg", REFUSED, _GRAPH),
        p("output-search-graph-extended", "osgx", REFUSED, _GRAPH),
        p("unpruned-search-graph", "usg", REFUSED, _SYNTAX),
        p("output-search-graph-slf", "slf", REFUSED, _GRAPH),
        p("output-search-graph-hypergraph", "", REFUSED, "hypergraphs (mert-moses.pl --hg-mira) are not written; "
          "tune with n-best lists (MERT, PRO or --batch-mira)"),
        p("include-lhs-in-search-graph", "lhssg", REFUSED, _SYNTAX),
        p("output-search-graph-pb", "pb", REFUSED, _GRAPH),
        p("max-chart-span", "", REFUSED, _SYNTAX), p("non-terminals", "", REFUSED, _SYNTAX),
        p("rule-limit", "", REFUSED, _SYNTAX), p("source-label-overlap", "", REFUSED, _SYNTAX),
        p("unknown-lhs", "", REFUSED, _SYNTAX), p("link-param-count", "", REFUSED, _LATTICE),
        p("default-non-term-for-empty-range-only", "", REFUSED, _SYNTAX),
        p("s2t-parsing-algorithm", "", REFUSED, _SYNTAX),
        p("weight-slm", "slm", REFUSED, _DEPRECATED), p("weight-bl", "bl", REFUSED, _DEPRECATED),
        p("weight-dlm", "dlm", REFUSED, _DEPRECATED), p("weight-lr", "lr", REFUSED, _DEPRECATED),
        p("weight-generation", "g", REFUSED, _DEPRECATED), p("weight-i", "I", REFUSED, _LATTICE),
        p("weight-lex", "lex", REFUSED, _DEPRECATED), p("weight-glm", "glm", REFUSED, _DEPRECATED),
        p("weight-wt", "wt", REFUSED, _DEPRECATED), p("weight-pp", "pp", REFUSED, _DEPRECATED),
        p("weight-pb", "", REFUSED, _DEPRECATED), p("weight-e", "e", REFUSED, _DEPRECATED),
        p("input-scores", "", REFUSED, _LATTICE), p("dlm-model", "", REFUSED, _DEPRECATED),
        p("generation-file", "", REFUSED, _FACTORS), p("global-lexical-file", "gl", REFUSED, _DEPRECATED),
        p("glm-feature", "", REFUSED, _DEPRECATED), p("slmodel-file", "", REFUSED, _DEPRECATED),
        p("slmodel-factor", "", REFUSED, _DEPRECATED), p("slmodel-beam", "", REFUSED, _DEPRECATED),
        p("phrase-pair-feature", "", REFUSED, _DEPRECATED), p("phrase-boundary-source-feature", "", REFUSED, _DEPRECATED),
        p("phrase-boundary-target-feature", "", REFUSED, _DEPRECATED), p("phrase-length-feature", "", REFUSED, _DEPRECATED),
        p("target-word-insertion-feature", "", REFUSED, _DEPRECATED),
        p("source-word-deletion-feature", "", REFUSED, _DEPRECATED),
        p("word-translation-feature", "", REFUSED, _DEPRECATED),
        p("weight-file", "wf", REFUSED, "sparse feature weights: fstdecode has no sparse features (tune dense "
          "weights only; mert-moses.pl adds -weight-file only for sparse features)"),
        p("feature-overwrite", "", REFUSED, "edit the [feature] line instead"),
        p("weight-add", "", REFUSED, "put the weights in [weight] (or -weight-overwrite) instead"),
        p("feature-add", "", REFUSED, "put the feature in the [feature] section instead"),
        p("feature-name-overwrite", "", REFUSED, "rename the feature kinds in the [feature] lines instead"),
        p("print-passthrough", "", REFUSED, "<passthrough> tags are not supported"),
        p("print-passthrough-in-n-best", "", REFUSED, "<passthrough> tags are not supported"),
        p("alternate-weight-setting", "aws", REFUSED, "alternate weight settings are not supported; "
          "run one fstdecode per weight setting"),
        p("placeholder-factor", "", REFUSED, _FACTORS),
        p("spe-src", "", REFUSED, "simulated post-editing is not supported"),
        p("spe-trg", "", REFUSED, "simulated post-editing is not supported"),
        p("spe-aln", "", REFUSED, "simulated post-editing is not supported"),
    )


#: The SEARCH parameters that ``fstdecode moses``' stack search honours as Moses does.
HONOURED_SEARCH = frozenset({"stack", "beam-threshold", "threads", "max-phrase-length", "search-algorithm",
                             "cube-pruning-pop-limit"})

#: What the warning about any other SEARCH parameter says of it (after its name), in either command.
NOT_IN_STACK_SEARCH = "is a setting of Moses' search that fstdecode's stack search does not have; ignored"

PARAMETERS: Mapping[str, Param] = MappingProxyType({param.name: param for param in _table()})
"""Every parameter of Moses' Parameter.cpp (547c3d2d; ``ttable-limit`` from its older
00e6e6f0, which mert-era inis still carry), by long name."""

SHORT_NAMES: Mapping[str, str] = MappingProxyType(
    {param.short: param.name for param in PARAMETERS.values() if param.short}
)
"""Short name -> long name (``s`` -> ``stack``). Moses' ``weight-p`` also declares ``w``, which
its next line gives to ``weight-w``; ``w`` is ``weight-w`` here as there."""


def long_name(name: str) -> str | None:
    """The long name of Moses parameter ``name`` (long or short), or None if Moses has none."""
    if name in PARAMETERS:
        return name
    return SHORT_NAMES.get(name)
