"""Layout: no module uses another module's underscore names, except the listed ones.

A name that starts with ``_`` is private to its module (a private *module* such as
``_validation`` is the package's own, and may be imported anywhere inside it). The test reads
every module of ``python/fieldrank`` (no import) and finds ``from .mod import _name`` and
``alias._name`` where ``alias`` is a package module. Each current exception is listed with its
reason; a new use fails, and so does an exception that is gone (remove it from the list).
Issue #33 (the redesign) empties this list: each owner deletes its lines as its module switches.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "fieldrank"
SOURCE_ROOT = PACKAGE.parent

#: (module, the other module's private name it uses) -> why, for now.
EXCEPTIONS = {
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _absolute(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, *([name] if name else [])])


def _is_module(dotted: str) -> bool:
    path = SOURCE_ROOT / dotted.replace(".", "/")
    return path.is_dir() or path.with_suffix(".py").is_file() or dotted == "fieldrank._core"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def uses_in(module: str, is_package: bool, text: str) -> set[tuple[str, str]]:
    """(module, other module's private name) for every use in one module's source ``text``."""
    found = set()
    tree = ast.parse(text)
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(module, is_package, node.level, node.module)
            if not source.startswith("fieldrank"):
                continue
            for alias in node.names:
                if _is_module(f"{source}.{alias.name}"):
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
                elif _private(alias.name) and source != module:
                    found.add((module, f"{source}.{alias.name}"))
        elif isinstance(node, ast.Import):
            aliases.update({a.asname or a.name: a.name for a in node.names if a.name.startswith("fieldrank")})
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and _private(node.attr) and aliases[node.value.id] != module):
            found.add((module, f"{aliases[node.value.id]}.{node.attr}"))
    return found


def private_uses() -> set[tuple[str, str]]:
    """(module, other module's private name) for every use in the package's sources."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        found |= uses_in(_module_name(path), path.name == "__init__.py", path.read_text(encoding="utf-8"))
    return found


def test_no_module_uses_another_modules_private_names():
    found = private_uses()
    new = sorted(found - set(EXCEPTIONS))
    assert not new, f"modules using another module's private names (make it public, or list it with a reason): {new}"
    gone = sorted(set(EXCEPTIONS) - found)
    assert not gone, f"listed exceptions no longer used (remove them from EXCEPTIONS): {gone}"


def test_the_scan_sees_a_private_import():
    """The scanner itself: a private name imported by ``from``, one read through a module alias, and
    neither a private module (``_kernels``) nor a public name of one counts."""
    text = ("from .bm25 import _check_texts\nfrom . import operators as ops\nops._ranking\n"
            "from . import _kernels\n_kernels.pool_trusted\nfrom ._lexical import rank\n")
    assert _absolute("fieldrank.example", False, 1, "bm25") == "fieldrank.bm25"
    assert _is_module("fieldrank.operators") and not _is_module("fieldrank.operators._ranking")
    assert uses_in("fieldrank.example", False, text) == {
        ("fieldrank.example", "fieldrank.bm25._check_texts"), ("fieldrank.example", "fieldrank.operators._ranking")}
