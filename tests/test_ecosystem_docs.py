"""Every ```python block of docs/ecosystem.md runs as written, with its optional packages installed.

Each block is a test of its own; it skips, naming the package, when a module it imports is
missing (the core suite), and runs in CI where the extras are installed. The blocks run
offline (HF_HUB_OFFLINE=1) in a temporary directory.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "ecosystem.md"
FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
HEADING = re.compile(r"^#+ (.+)$", re.MULTILINE)


def python_blocks() -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    blocks = []
    for number, match in enumerate(FENCE.finditer(text), start=1):
        headings = HEADING.findall(text, 0, match.start())
        title = headings[-1] if headings else "top"
        blocks.append((f"{number}-{re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')}", match.group(1)))
    return blocks


BLOCKS = python_blocks()


def imported_modules(source: str) -> list[str]:
    modules = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.append(node.module)
    return modules


def test_the_doc_has_blocks():
    assert len(BLOCKS) >= 6


@pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*")
@pytest.mark.parametrize("source", [source for _, source in BLOCKS], ids=[name for name, _ in BLOCKS])
def test_block_runs(source, tmp_path, monkeypatch):
    for module in imported_modules(source):
        pytest.importorskip(module, reason=f"docs/ecosystem.md block needs {module} (an optional extra)")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    exec(compile(source, str(DOC), "exec"), {"__name__": "__docs__"})
