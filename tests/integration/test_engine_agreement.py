"""The native and the Python engine agree on every real model in ../shared/data that loads.

For each model and each registered method with a native twin (``METHODS[name].has_native``),
``Decoder(model, method, engine="native")`` and ``engine="python"`` decode the same sentences,
and the two :class:`~fstdecode.decoder.DecodeResult` must be the same in all but wall time:
the derivations (translation, phrases, segmentation, features and score to 1e-6, the search's
own score to 1e-6), ``optimal``, ``reason``, ``error``, ``stats.states`` and
``stats.transitions``. Budgets are counted in states, so this holds on any machine, over
budget too: the budget must be hit alike and the line must end the same way (the method's best
derivation, the stack decoder's, or an error).

The models:

* Hansards fr-en (log10 table) with the UN English LM read at order 2 and at order 3, d = 4,
  table-limit 20, as ``tests/unit/test_native_*.py`` decode it;
* moses-early-distortion-de-en, its moses.ini (trigram, d = 6, early distortion cost);
* moses-toy-numbers, its moses.ini adapted as its refusal asks (a text table, no InputFeature;
  ``tests/unit/test_moses_ini.py``), on every path of its lattice inputs;
* moses-lexreo-europarl-fr-en (lexicalized reordering): every native engine takes it; only that
  is checked here (the native signature searches and R against the Python ones on random models
  of every reordering type: tests/unit/test_native_lexreo.py).

The Python engine is slow (tens of thousands of states a second), so the exact searches get
small budgets (:data:`EXACT_BUDGETS`) and most Hansards and de-en lines run over them. Such a
line keeps the stack decoder's derivation, from the decoder's own engine
(``Decoder._over_budget``): there, agreement means the same budget overrun and the same
fallback. The module takes about 40 s on 2 cores.
"""

from __future__ import annotations

import ast
from collections import Counter
from functools import cache

import pytest

from fstdecode.decoder import METHODS, DecodeResult, Decoder
from fstdecode.model.model import load_model

from shared import data_path, hansards_input, hansards_model

pytestmark = pytest.mark.slow

#: The exact searches' budgets, small enough for the Python engine (dp and bounded build about
#: 50k states/s there, coverage about 10k/s on these models). Where they fall (state counts at
#: d = 4, table-limit 20): dp finishes only Hansards line 46 (24,276 states at order 2, 33,278 at
#: order 3); bounded finishes six of the ten Hansards lines at order 2 and runs over after its
#: beam on line 4 (the beam's derivation kept); coverage finishes Hansards lines 30, 43, 45 and
#: 46, and de-en lines 2 and 3. Every other line runs over and keeps the stack decoder's
#: derivation. The toy model's inputs finish everywhere. fst builds R over the dp's states (R in
#: C++ or in Python, composed and searched by OpenFst either way).
EXACT_BUDGETS = {"dp": 40_000, "bounded": 40_000, "coverage": 5_000, "fst": 40_000}

#: A budget that beam exceeds on every Hansards and de-en line (it then keeps the stack decoder's
#: derivation) and stack on most (stack itself has no fallback: the line fails, an error result).
TIGHT_BUDGET = 300

#: Every method with a native twin, with the options both engines get.
NATIVE_METHODS = [name for name, method in METHODS.items() if method.has_native]


def _cases() -> list:
    cases = []
    for name in NATIVE_METHODS:
        method = METHODS[name]
        # nbest 3 compares k-best lists and their tie order; bounded keeps nbest 1, since with
        # nbest > 1 it runs the plain DP and its bounds would go unchecked.
        options = {} if name == "bounded" else {"nbest": 3}
        if method.exact:
            cases.append(pytest.param(name, {**options, "max_states": EXACT_BUDGETS.get(name, 5_000)}, id=name))
        else:
            # The default budget (2,000,000) is never reached here: the beams bound the work.
            cases.append(pytest.param(name, options, id=name))
            cases.append(pytest.param(name, {**options, "max_states": TIGHT_BUDGET}, id=f"{name}-budget{TIGHT_BUDGET}"))
    return cases


CASES = _cases()

# --- the models ---------------------------------------------------------------------------


def _hansards(order: int, _tmp: pytest.TempPathFactory):
    return hansards_model(lm_order=order, distortion_limit=4, table_limit=20)


def _de_en(_tmp: pytest.TempPathFactory):
    return load_model(data_path("moses-early-distortion-de-en", "moses.ini"))


def _toy_numbers(tmp: pytest.TempPathFactory):
    # The ini names a binary table and InputFeature (lattice arc weights), which load_model
    # refuses; its message says what to do, and this does it: the text table, no InputFeature.
    folder = data_path("moses-toy-numbers")
    text = (folder / "moses.ini").read_text(encoding="utf-8").replace("${TEST_PATH}", str(folder))
    kept = [
        line.replace("PhraseDictionaryBinary", "PhraseDictionaryMemory")
        for line in text.splitlines()
        if not line.startswith("InputFeature")
    ]
    ini = tmp.mktemp("toy-numbers") / "moses.ini"
    ini.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return load_model(ini)


MODELS = {
    "hansards-lm2": lambda tmp: _hansards(2, tmp),
    "hansards-lm3": lambda tmp: _hansards(3, tmp),
    "de-en": _de_en,
    "toy-numbers": _toy_numbers,
}


def lattice_paths(plf: str) -> list[str]:
    """Every path through a Moses PLF lattice, as a sentence.

    PLF is a Python literal: one tuple of arcs ``(word, score, skip)`` per node, an arc going
    from node i to node i + skip; the paths run from node 0 to the node after the last.
    """
    nodes = ast.literal_eval(plf)

    def walk(i: int) -> list[tuple[str, ...]]:
        if i == len(nodes):
            return [()]
        return [(word,) + rest for word, _, skip in nodes[i] for rest in walk(i + skip)]

    return [" ".join(path) for path in walk(0)]


def sentences(model: str, line: int) -> list[str]:
    """The sentences of input line ``line`` of ``model``'s test set (a lattice gives each path)."""
    if model.startswith("hansards"):
        return [hansards_input()[line]]
    if model == "de-en":
        text = data_path("moses-early-distortion-de-en", "to-translate.txt").read_text(encoding="utf-8")
        return [text.splitlines()[line]]
    text = data_path("moses-toy-numbers", "to-translate.txt").read_text(encoding="utf-8")
    return lattice_paths(text.splitlines()[line])


#: Input lines per model.
LINES = {
    # The first six (8-22 words) mostly run over the exact searches' budgets; 30, 43, 45 and 46
    # (5, 5, 4 and 3 words) are where they finish, dp included (line 46).
    "hansards-lm2": [*range(6), 30, 43, 45, 46],
    "hansards-lm3": [*range(6), 30, 43, 45, 46],
    # All five (5-10 words; line 2 has the unknown word XXXX).
    "de-en": list(range(5)),
    # All seven lattices: 13 paths (11 distinct sentences), two with a word that neither the
    # table nor the LM (which has no <unk>) knows.
    "toy-numbers": list(range(7)),
}

INPUTS = [pytest.param(model, line, id=f"{model}-line{line}") for model, lines in LINES.items() for line in lines]


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    """``decoder(model, method, options, engine)``: one Decoder per combination, built once."""
    models = {}

    @cache
    def get(model: str, method: str, options: tuple, engine: str) -> Decoder:
        if model not in models:
            models[model] = MODELS[model](tmp_path_factory)
        return Decoder(models[model], method, engine=engine, **dict(options))

    return get


# --- the comparison -----------------------------------------------------------------------


def assert_same_result(native: DecodeResult, python: DecodeResult, where: str) -> None:
    """Both engines' results are the same but for ``stats.seconds`` (floats to 1e-6)."""
    assert (native.id, native.source) == (python.id, python.source), where
    assert native.error == python.error, where
    assert native.reason == python.reason, where
    assert native.optimal is python.optimal, where
    assert (native.stats.states, native.stats.transitions) == (python.stats.states, python.stats.transitions), where
    assert len(native.derivations) == len(python.derivations), where
    for rank, (a, b) in enumerate(zip(native.derivations, python.derivations)):
        at = f"{where}, derivation {rank}"
        assert a.translation == b.translation, at
        assert a.phrases == b.phrases, at  # spans and phrase pairs, in target order
        assert a.segmentation() == b.segmentation(), at
        assert a.source == b.source, at
        fa, fb = a.features, b.features
        assert (fa.lm, fa.distortion, fa.word, fa.phrase, fa.unknown) == pytest.approx(
            (fb.lm, fb.distortion, fb.word, fb.phrase, fb.unknown), abs=1e-6
        ), at
        assert fa.tm == pytest.approx(fb.tm, abs=1e-6), at
        assert a.score == pytest.approx(b.score, abs=1e-6), at
        assert a.search_score == pytest.approx(b.search_score, abs=1e-6), at


def assert_well_formed(result: DecodeResult, where: str) -> None:
    """Agreement on a broken result would prove little: each derivation translates every source
    word exactly once, and its search score is the scorer's score; a failed line has none."""
    if result.error is not None:
        assert not result.derivations, where
        return
    assert result.derivations, where
    for d in result.derivations:
        covered = Counter(i for p in d.phrases for i in range(p.start, p.end + 1))
        assert covered == Counter(range(len(result.source))), where
        assert d.search_score == pytest.approx(d.score, abs=1e-6), where
    scores = [d.score for d in result.derivations]
    assert scores == sorted(scores, reverse=True), where
    assert len({d.phrases for d in result.derivations}) == len(result.derivations), where


# --- the tests ----------------------------------------------------------------------------


@pytest.mark.parametrize("method, options", CASES)
@pytest.mark.parametrize("model, line", INPUTS)
def test_native_equals_python(decoder, model, line, method, options):
    key = tuple(sorted(options.items()))
    native, python = (decoder(model, method, key, engine) for engine in ("native", "python"))
    assert native.engine == "native" and python.engine == "python"
    for sentence in sentences(model, line):
        where = f"{model} line {line} ({sentence!r}), --method {method} {options}"
        ours, reference = native.decode(sentence, line), python.decode(sentence, line)
        assert_well_formed(reference, where)
        assert_same_result(ours, reference, where)


@pytest.mark.parametrize("method", [name for name, m in METHODS.items() if m.has_native])
@pytest.mark.parametrize("semantics", ["paper", "moses"])
def test_reordering_features_are_native_everywhere(method, semantics):
    # Every native engine implements lexicalized reordering (the signature searches and R through
    # the tapes' LR ends of native/statespace.h), so the gold moses.ini keeps the native engine
    # under either semantics (tests/unit/test_native_lexreo.py checks the results).
    assert METHODS[method].moses_model and METHODS[method].native_reordering
    model = load_model(data_path("moses-lexreo-europarl-fr-en", "moses.ini"), distortion_semantics=semantics)
    for engine in ("auto", "native"):
        decoder = Decoder(model, method, engine=engine)
        assert (decoder.engine, decoder.semantics) == ("native", semantics)


@pytest.mark.parametrize("method", [name for name, m in METHODS.items() if m.has_native])
def test_moses_semantics_is_native_everywhere(method):
    # Moses' distortion semantics without lexicalized reordering: every native engine implements
    # it (the signature searches and R through native/statespace.h's gap rule), so a moses.ini
    # asked for it keeps the native engine (tests/integration/test_native_gaprule_models.py
    # checks the results).
    assert METHODS[method].native_moses
    plain = load_model(data_path("moses-early-distortion-de-en", "moses.ini"), distortion_semantics="moses")
    for engine in ("auto", "native"):
        decoder = Decoder(plain, method, engine=engine)
        assert (decoder.engine, decoder.semantics) == ("native", "moses")


def test_moses_models_take_the_engines_that_implement_them():
    # auto takes the native engine where the method has one (every method but exhaustive): every
    # method accepts the gold moses.ini as it is, under its default Moses semantics.
    model = load_model(data_path("moses-lexreo-europarl-fr-en", "moses.ini"))
    decoders = {name: Decoder(model, name) for name in METHODS}
    assert {name: d.engine for name, d in decoders.items()} == {
        "stack": "native", "coverage": "native", "exact": "native", "exhaustive": "python",
        "dp": "native", "beam": "native", "bounded": "native", "fst": "native",
    }
    assert {d.semantics for d in decoders.values()} == {"moses"}
