"""README.md's table of Moses' parameters is the one the code's list gives (scripts/moses_params_table.py)."""

from __future__ import annotations

from scripts.moses_params_table import table

from shared import ROOT


def test_readme_holds_the_table_of_every_moses_parameter():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert table() in readme


def test_every_parameter_has_a_row_that_says_what_each_command_does():
    rows = table().splitlines()[2:]
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 4 and cells[0] and cells[2] and cells[3], row
