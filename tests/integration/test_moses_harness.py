"""Moses' regression harness, as ../shared/data/moses-regression/SOURCE.md says it judges a test:
stdout's n-th line is ``TRANSLATION_n``, the ``[total=X]`` of stderr's n-th ``BEST TRANSLATION:``
line (Moses' -v 1, its default) is ``SCORE_n``, compared as text; every key of the truth must
be there with its value. Run here on ``phrase.lexicalized-reordering``
(../shared/data/moses-lexreo-europarl-fr-en), whose truth is Moses' own output, and on Moses'
``phrase.lexicalized-reordering-probing`` (../shared/data/moses-regression), the same model with
its phrase table as a ProbingPT.
"""

from __future__ import annotations

import re

import pytest

from shared import SHARED_DATA, run_cli

LEXREO = SHARED_DATA / "moses-lexreo-europarl-fr-en"
REGRESSION = SHARED_DATA / "moses-regression"
PROBING_TEST = REGRESSION / "tests" / "phrase.lexicalized-reordering-probing"


def harness_keys(stdout: str, stderr: str) -> dict[str, str]:
    keys = {f"TRANSLATION_{n}": line for n, line in enumerate(stdout.split("\n")[:-1], 1)}
    totals = re.findall(r"^BEST TRANSLATION: .*\[total=([^\]]*)\]", stderr, flags=re.M)
    keys.update({f"SCORE_{n}": total for n, total in enumerate(totals, 1)})
    return keys


def truth_keys(path) -> dict[str, str]:
    keys = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if "~" in line.split("=", 1)[0]:  # measured (times), never compared
            continue
        key, _, value = line.partition("=")
        keys[key.strip()] = value.strip() if key.endswith(" ") else value
    return keys


@pytest.mark.skipif(not LEXREO.is_dir(), reason="../shared/data/moses-lexreo-europarl-fr-en is absent")
def test_phrase_lexicalized_reordering_passes_as_the_harness_judges_it(tmp_path):
    proc = run_cli(["moses", "-f", str(LEXREO / "moses.ini"), "-input-file", str(LEXREO / "to-translate.txt")],
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = harness_keys(proc.stdout, proc.stderr)
    want = truth_keys(LEXREO / "truth" / "results.txt")
    assert any(k.startswith("SCORE_") for k in want)
    assert {k: got.get(k) for k in want} == want


def test_no_best_translation_lines_at_v_0(tmp_path):
    """mert-moses.pl's -v 0: nothing on stderr but errors."""
    import importlib.resources

    ini = str(importlib.resources.files("fstdecode") / "data" / "moses.ini")
    proc = run_cli(["moses", "-f", ini, "-v", "0"], "das muss unsere sorge gleichermaßen sein\n", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    proc = run_cli(["moses", "-f", ini], "das muss unsere sorge gleichermaßen sein\n\n", cwd=tmp_path)
    # the bytes Moses writes (its Manager::OutputBest at -v 1), the empty line's included
    lines = [line for line in proc.stderr.splitlines() if line.startswith("BEST TRANSLATION")]
    assert re.fullmatch(r"BEST TRANSLATION: this must also be our concern \[111111\]  \[total=-\d+\.\d{3}\] "
                        r"core=\((-?\d+\.\d{3},){5}-?\d+\.\d{3}\)  ", lines[0]), lines[0]
    assert lines[1] == "BEST TRANSLATION: []  [total=0.000] core=(0.000,0.000,0.000,0.000,0.000,0.000)  "


def test_loading_lines_at_v_1_name_the_features_in_the_inis_order(tmp_path):
    """Moses' -v 1 lines before and after its model loads (StaticData: ``Loading NAME`` per feature,
    in the ini's [feature] order; ExportInterface: ``Created input-output object : [T] seconds``), before
    any line is translated; none at -v 0."""
    import importlib.resources

    ini = importlib.resources.files("fstdecode") / "data" / "moses.ini"
    names = [line.split()[0] for line in ini.read_text(encoding="utf-8").split("[feature]")[1].split("[")[0].splitlines()
             if line.strip()]
    names = [f"{kind}{sum(1 for k in names[:i] if k == kind)}" for i, kind in enumerate(names)]  # Moses' default names
    proc = run_cli(["moses", "-f", str(ini)], "das muss unsere sorge gleichermaßen sein\n", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[:len(names)] == [f"Loading {name}" for name in names]
    assert re.fullmatch(r"Created input-output object : \[\d+\.\d{3}\] seconds", lines[len(names)])
    assert lines[len(names) + 1].startswith("BEST TRANSLATION: ")
    quiet = run_cli(["moses", "-f", str(ini), "-v", "0"], "das\n", cwd=tmp_path)
    assert quiet.stderr == ""


def test_v_3_says_the_options_dump_is_not_written(tmp_path):
    import importlib.resources

    ini = str(importlib.resources.files("fstdecode") / "data" / "moses.ini")
    proc = run_cli(["moses", "-f", ini, "-v", "3"], "das\n", cwd=tmp_path)
    assert proc.returncode == 0
    assert "-v 3: Moses' dump of each sentence's translation options and search is not written" in proc.stderr


def _regression_ini(tmp_path, *replace: tuple[str, str]):
    """The test's moses.ini with each (old, new) of ``replace`` applied, then ${MODEL_PATH} as Moses'
    harness sets it (SOURCE.md: models/; fstdecode reads ${...} as the ini's folder), in tmp_path."""
    text = (PROBING_TEST / "moses.ini").read_text(encoding="utf-8")
    for old, new in replace:
        assert old in text
        text = text.replace(old, new)
    text = text.replace("${MODEL_PATH}", str(REGRESSION / "models"))
    ini = tmp_path / "moses.ini"
    ini.write_text(text, encoding="utf-8")
    return ini


# The regression test itself (Moses' ProbingPT with the text reordering table), and the same model
# in Moses2's form: the ProbingPT that keeps the reordering scores in its pairs (CreateProbingPT
# --num-lex-scores 6 --log-prob), read by LexicalReordering property-index=0. Both reach the truth.
_MOSES2_FORM = (
    ("probing.v15", "probing-withLexRO.v15"),
    ("path=${MODEL_PATH}/lexicalized-reordering/reordering-table.msd-bidirectional-fe.0.5.0-0.gz", "property-index=0"),
)


# And with the reordering table as Moses' compact table (models/lexicalized-reordering/ro.minlexr, the
# twin of the text table): named without its extension, as Moses finds it (path.minlexr first).
_COMPACT_REORDERING = (
    ("path=${MODEL_PATH}/lexicalized-reordering/reordering-table.msd-bidirectional-fe.0.5.0-0.gz",
     "path=${MODEL_PATH}/lexicalized-reordering/ro"),
)


@pytest.mark.skipif(not PROBING_TEST.is_dir(), reason="../shared/data/moses-regression is absent")
@pytest.mark.parametrize("replace", [(), _MOSES2_FORM, _COMPACT_REORDERING],
                         ids=["probing", "probing-withLexRO", "probing-and-minlexr"])
def test_phrase_lexicalized_reordering_probing_passes_as_the_harness_judges_it(tmp_path, replace):
    ini = _regression_ini(tmp_path, *replace)
    assert "ProbingPT " in ini.read_text(encoding="utf-8")
    proc = run_cli(["moses", "-f", str(ini), "-input-file", str(PROBING_TEST / "to-translate.txt")], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = harness_keys(proc.stdout, proc.stderr)
    want = truth_keys(PROBING_TEST / "truth" / "results.txt")
    assert any(k.startswith("SCORE_") for k in want)
    assert {k: got.get(k) for k in want} == want
