"""The docs' parameter tables come from, or are checked against, ``fieldrank._param_tables``.

``docs/parameters.md`` is generated (``python tools/gen_param_docs.py``); the defaults quoted in
README.md's operator table and in docs/design.md's signature table are parsed and compared with
the tables' defaults, so a default changed in ``defaults.hpp`` fails here until the prose follows.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fieldrank import _param_tables as tables

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DESIGN = REPO / "docs" / "design.md"


def _by_label(family: str) -> dict[str, tables.Param]:
    """A family's parameters by name and by symbol, plus the prefilter's ``p`` / ``P``."""
    specs = [*tables.TABLES[family], *(tables.TABLES["prefilter"] if family != "prefilter" else ())]
    out = {}
    for spec in specs:
        out[spec.name] = spec
        if spec.symbol:
            out.setdefault(spec.symbol, spec)
    return out


def _operator_rows(text: str) -> dict[str, str]:
    """Markdown table rows whose first cell is `` `family(...` ``: family -> the whole row."""
    rows = {}
    for line in text.splitlines():
        match = re.match(r"^\| `(\w+)\(", line)
        if match and match.group(1) in tables.TABLES:
            rows.setdefault(match.group(1), line)
    return rows


def test_the_generated_parameter_page_is_current():
    result = subprocess.run([sys.executable, str(REPO / "tools" / "gen_param_docs.py"), "--check"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"docs/parameters.md is stale: run python tools/gen_param_docs.py\n{result.stdout}"


def test_the_generated_page_lists_every_parameter_with_its_interval_and_default():
    page = (REPO / "docs" / "parameters.md").read_text(encoding="utf-8")
    for table in tables.TABLES.values():
        for spec in table:
            assert f"| `{spec.name}` |" in page and spec.interval.text() in page, spec.name


@pytest.mark.parametrize("family", [f for f in tables.TABLES if f != "prefilter"] + ["prefilter"])
def test_readme_operator_table_quotes_the_tables_defaults(family):
    row = _operator_rows(README.read_text(encoding="utf-8"))[family]
    defaults = row.rstrip("|").rsplit("|", 1)[1].strip()
    labels = _by_label(family)
    pairs = re.findall(r"(\S+) ([-+0-9.e]+)", defaults)
    assert pairs, row
    for label, value in pairs:
        assert label in labels, f"README's {family} row names {label!r}, which is not in the {family} table"
        assert float(value) == labels[label].default, (family, label, value, labels[label].default)


def test_readme_summary_of_locked_values_matches_the_tables():
    text = README.read_text(encoding="utf-8")
    summary = re.search(r"the write-ups' locked values:\s*(.*?)\)\.", text, re.S).group(1)
    labels = {}
    for family in ("cfsr", "cfs", "rrf"):
        labels.update({k: v for k, v in _by_label(family).items() if k not in ("k",)})
    for label, value in re.findall(r"(\S+) ([-+0-9.e]+)", summary):
        assert float(value) == labels[label].default, (label, value)


@pytest.mark.parametrize("family", list(tables.TABLES))
def test_design_signature_table_quotes_the_tables_defaults(family):
    row = _operator_rows(DESIGN.read_text(encoding="utf-8"))[family]
    signature = row.split("`")[1]
    labels = _by_label(family)
    checked = 0
    for name, value in re.findall(r"\b(\w+)=([^,)\s]+)", signature):
        if name not in labels:
            continue
        assert ast.literal_eval(value) == labels[name].default, (family, name, value)
        checked += 1
    assert checked, f"docs/design.md's {family} row quotes no default"
