"""Several phrase tables as Moses' alternative decoding paths (fstdecode/model/decoding_paths.py):
each table limited on its own, then one table whose pairs carry 0 in the other tables' columns."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from fstdecode.decoder import Decoder
from fstdecode.model.model import load_model, refiltered

from shared import EXAMPLE_DATA, oracle_outcome

SECOND = "das ||| this ||| 0.9 0.5 0.5\nhaus ||| house ||| 0.8 0.8 0.8\nhaus ||| home ||| 0.1 0.1 0.1\n" \
         "haus ||| building ||| 0.3 0.3 0.3\nklein ||| small ||| 0.7 0.7 0.7\n"


def two_tables(tmp_path: Path, limit: int = 2, mapping: str = "0 T 0\n1 T 1\n") -> Path:
    (tmp_path / "second").write_text(SECOND, encoding="utf-8")
    text = (EXAMPLE_DATA / "moses.ini").read_text(encoding="utf-8").replace("${MODEL_DIR}", str(EXAMPLE_DATA))
    text = text.replace("[feature]\n", f"[mapping]\n{mapping}\n[feature]\n")
    text = text.replace("\n\n[weight]\n", f"\nPhraseDictionaryMemory name=Second num-features=3 path={tmp_path / 'second'} "
                        f"table-limit={limit}\n\n[weight]\nSecond= 0.3 0.2 0.1\n")
    assert "name=Second" in text
    ini = tmp_path / "moses.ini"
    ini.write_text(text, encoding="utf-8")
    return ini


def test_each_table_keeps_its_columns_and_zeros_in_the_others(tmp_path):
    model = load_model(two_tables(tmp_path))
    first_width = 2
    assert model.table.num_scores == first_width + 3
    assert model.weights.tm == (0.5, 0.5, 0.3, 0.2, 0.1)
    by_target = {}
    for pair in model.table.lookup(("das",)):
        by_target.setdefault(pair.target, []).append(pair.scores)
    # "das -> this" is in both tables: two options, one with each table's scores (as in Moses)
    second, first = sorted(by_target[("this",)], key=lambda scores: scores[2])
    assert first[2:] == (0.0, 0.0, 0.0) and first[:2] == pytest.approx((math.log(0.4), math.log(0.4)))
    assert second[:2] == (0.0, 0.0) and second[2:] == pytest.approx((math.log(0.9), math.log(0.5), math.log(0.5)))


def test_table_limit_is_per_table_and_words_of_one_table_are_known(tmp_path):
    model = load_model(two_tables(tmp_path, limit=2))
    # "haus" has three translations in the second table: its own limit 2 keeps the best two
    # (ranked by its own weights), whatever the first table holds for "haus"
    second = [p for p in model.table.lookup(("haus",)) if any(p.scores[2:])]
    assert {p.target for p in second} == {("house",), ("building",)}
    # "klein" is only in the second table: it is translated, not copied as unknown
    result = Decoder(model, "exact").decode("klein")
    assert result.best.translation == "small" and not result.best.phrases[0].pair.unknown


def test_two_tables_decode_as_the_oracle_and_show_their_names(tmp_path):
    model = load_model(two_tables(tmp_path))
    assert model.show_weights()[-2:] == ["PhraseDictionaryMemory0= 0.500000 0.500000", "Second= 0.300000 0.200000 0.100000"]
    decoder = Decoder(model, "exact")
    for line in ("das muss unsere sorge gleichermaßen sein", "das haus", "klein haus"):
        result = decoder.decode(line)
        assert result.optimal
        assert result.best.score == pytest.approx(oracle_outcome(decoder.problem(line.split())).hypotheses[0][0])
    again = refiltered(model, lambda source: True)  # a filtered decode re-reads both tables
    assert len(again.table) == len(model.table)
    weights = load_model(two_tables(tmp_path), weights=["Second=1,1,1"]).weights
    assert weights.tm == (0.5, 0.5, 1.0, 1.0, 1.0)


def test_several_tables_on_one_path_are_refused_and_an_unnamed_table_adds_nothing(tmp_path, caplog):
    from fstdecode.model.decoding_paths import DecodingPathError

    with pytest.raises(DecodingPathError, match="several tables on one decoding path"):
        load_model(two_tables(tmp_path, mapping="0 T 0\n0 T 1\n"))
    with pytest.raises(DecodingPathError, match="number them 0, 1, 2"):
        load_model(two_tables(tmp_path, mapping="0 T 0\n2 T 1\n"))
    with pytest.raises(DecodingPathError, match="no phrase table with index 2"):
        load_model(two_tables(tmp_path, mapping="0 T 0\n1 T 2\n"))
    # no [mapping]: Moses' default 0 T 0 decodes with the first table only; the second's
    # features stay (as 0) in the n-best and -show-weights, with a warning here (Moses says nothing)
    model = load_model(two_tables(tmp_path, mapping=""))
    assert "phrase table Second is not in a decoding path" in caplog.text
    assert model.table.num_scores == 5 and not any(any(p.scores[2:]) for p in model.table.lookup(("das",)))
    result = Decoder(model, "exact").decode("klein")  # only the second table knows it: unknown now
    assert result.best.phrases[0].pair.unknown
    assert model.show_weights()[-1] == "Second= 0.300000 0.200000 0.100000"


def test_a_binarized_model_of_two_tables_and_two_lms_decodes_as_the_text_one(tmp_path):
    from fstdecode.model.binarize import BinarizeOptions, binarize

    ini = two_tables(tmp_path)
    (tmp_path / "second.arpa").write_text((EXAMPLE_DATA / "lm.arpa").read_text(encoding="utf-8"), encoding="utf-8")
    text = ini.read_text(encoding="utf-8").replace("[feature]\n", f"[feature]\nKENLM name=LM2 path={tmp_path / 'second.arpa'}\n")
    ini.write_text(text.replace("[weight]\n", "[weight]\nLM2= 0.5\n"), encoding="utf-8")
    done = binarize(BinarizeOptions(str(ini), str(tmp_path / "bin")))
    names = {name for name, _ in done.files}
    assert {"phrase-table.bin", "phrase-table1.bin", "lm.bin", "lm1.bin"} <= names
    text_model, binary_model = load_model(ini), load_model(tmp_path / "bin" / "moses.ini")
    for line in ("das muss unsere sorge gleichermaßen sein", "klein haus"):
        a, b = Decoder(text_model, "exact").decode(line), Decoder(binary_model, "exact").decode(line)
        assert (a.best.translation, a.best.score, a.best.features) == (b.best.translation, b.best.score, b.best.features)
