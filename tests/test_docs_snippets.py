"""Every fenced ```python block of README.md and docs/*.md runs as written.

Each block is executed on its own (a fresh namespace, a fresh temporary directory as the working
directory), so a snippet must create every input it uses. Blocks that are not runnable Python
use other fences (```text, ```console, ```toml). A doc without the repository (an installed
package) skips, saying so. A block that imports an optional extra (docs/ecosystem.md) skips,
naming the missing module, where that extra is not installed; CI installs the extras and
runs these blocks again, offline (no model hub).
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(line number, code) of every ```python block of a markdown file."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        if match.group(1).strip().lower() in ("python", "py"):
            blocks.append((text.count("\n", 0, match.start()) + 1, match.group(2)))
    return blocks


def all_blocks() -> list:
    params = []
    for path in DOCS:
        if path.is_file():
            for line, code in python_blocks(path):
                params.append(pytest.param(path, line, code, id=f"{path.relative_to(REPO)}:{line}"))
    return params


BLOCKS = all_blocks()


def imported_modules(source: str) -> list[str]:
    """Top-level modules a snippet imports (absolute imports only)."""
    modules = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.append(node.module)
    return modules


def test_the_docs_have_python_blocks():
    """The extractor finds the snippets (a broken fence regex would silently test nothing)."""
    if not (REPO / "README.md").is_file():
        pytest.skip("README.md is not beside the tests (installed package)")
    assert any(path.name == "README.md" for path, *_ in (p.values for p in BLOCKS))
    assert len(BLOCKS) >= 3


def test_fences_are_closed_and_labelled():
    """Every fence names its language, so nothing runnable hides in an unlabelled block."""
    for path in DOCS:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        fences = re.findall(r"^```(.*)$", text, re.MULTILINE)
        assert len(fences) % 2 == 0, f"{path.name}: unbalanced ``` fences"
        openings = fences[0::2]
        unlabelled = [i for i, label in enumerate(openings) if not label.strip()]
        assert not unlabelled, f"{path.name}: {len(unlabelled)} fence(s) without a language (use text/console)"


@pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*")
@pytest.mark.parametrize(("path", "line", "code"), BLOCKS)
def test_python_block_runs(path: Path, line: int, code: str, tmp_path: Path, monkeypatch) -> None:
    for module in imported_modules(code):
        pytest.importorskip(module, reason=f"{path.name}:{line} needs {module} (an optional extra)")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    namespace = {"__name__": "__docs_snippet__"}
    compiled = compile(code, f"{path.name}:{line}", "exec")
    exec(compiled, namespace)  # noqa: S102 - the documentation's own snippets
    assert os.getcwd() == str(tmp_path)
