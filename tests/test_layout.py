"""The package's layout: no import cycles, and the runtime library never imports the tooling.

Every module under ``python/fieldrank`` is parsed (not imported) and every intra-package import
is an edge, wherever it stands: module level, inside a function (a "lazy" import is still a
dependency), or a constant string handed to ``importlib.import_module``. Only imports under
``if TYPE_CHECKING:`` are left out (they never run).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "python" / "fieldrank"
#: Compiled modules: leaves of the graph (they import nothing of the package).
EXTENSION_MODULES = frozenset({"fieldrank._core"})
#: The harness and the command line: they may import the library, never the other way round.
TOOLING_PACKAGES = ("fieldrank.evaluation", "fieldrank.cli", "fieldrank.demo")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def _is_type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _nodes(tree: ast.AST, type_only: bool = False):
    """Every node; those under ``if TYPE_CHECKING:`` only when ``type_only``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node)
                     if type_only or not _is_type_checking_block(child))


def _known(name: str) -> bool:
    return name in MODULES or name in EXTENSION_MODULES


def _imports(module: str, path: Path, type_only: bool = False) -> set[str]:
    """The package modules ``module`` imports (at run time; ``type_only``: under ``TYPE_CHECKING`` too)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _nodes(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), type_only):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            # `from . import name` imports the submodule `name` when there is one, else `base`.
            targets = [f"{base}.{alias.name}" if _known(f"{base}.{alias.name}") else base for alias in node.names]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"):
            targets = [node.args[0].value]
        found.update(t for t in targets if _known(t) and t != module)
    return found


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}
#: The graph with the imports under ``if TYPE_CHECKING:`` too (a type-only circle is still a circle:
#: the two modules cannot be read, typed or moved apart).
TYPED_GRAPH = {module: _imports(module, path, type_only=True) for module, path in MODULES.items()}
#: The one door into the native core (docs/design.md): no other module of the package imports ``_core``.
KERNELS_DOOR = "fieldrank._kernels"
#: Modules that still import ``_core`` themselves, until their owners switch them to ``_kernels``
#: (issue #33; remove a line when its module switches: a stale line fails).
CORE_IMPORTERS_SWITCHING = frozenset({
})
#: Import circles through type-only imports that remain until their owners cut them (issue #33).
TYPE_ONLY_CYCLES_REMAINING: list[list[str]] = []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def _is_tooling(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in TOOLING_PACKAGES)


def test_the_graph_sees_the_package() -> None:
    # The parser must find the edges it claims to check: a few that certainly exist.
    assert "fieldrank.hybrid" in GRAPH["fieldrank"] or "fieldrank.operators" in GRAPH["fieldrank"]
    assert "fieldrank._validation" in GRAPH["fieldrank.operators"]
    assert "fieldrank.evaluation.locomo" in GRAPH["fieldrank.evaluation._command"]
    assert "fieldrank.memory._store" in GRAPH["fieldrank.memory"]
    assert len(MODULES) > 40


def test_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    cycles = _cycles(GRAPH)
    detail = "; ".join(
        " <-> ".join(component) + " (" + ", ".join(
            f"{m} -> {sorted(GRAPH[m] & set(component))}" for m in component) + ")"
        for component in cycles)
    assert not cycles, f"import cycles: {detail}"


def test_no_import_cycles_type_only_ones_included() -> None:
    cycles = _cycles(TYPED_GRAPH)
    new = [c for c in cycles if c not in TYPE_ONLY_CYCLES_REMAINING]
    assert not new, f"import cycles (type-only imports included): {new}"
    gone = [c for c in TYPE_ONLY_CYCLES_REMAINING if c not in cycles]
    assert not gone, f"listed type-only cycles are gone (remove them from TYPE_ONLY_CYCLES_REMAINING): {gone}"


def test_one_door_into_the_native_core() -> None:
    importers = {m for m, deps in TYPED_GRAPH.items() if "fieldrank._core" in deps}
    assert KERNELS_DOOR in importers
    others = sorted(importers - {KERNELS_DOOR} - CORE_IMPORTERS_SWITCHING)
    assert not others, f"modules importing fieldrank._core (go through fieldrank._kernels): {others}"
    switched = sorted(CORE_IMPORTERS_SWITCHING - importers)
    assert not switched, f"no longer import _core (remove them from CORE_IMPORTERS_SWITCHING): {switched}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not _is_tooling(m)))
def test_runtime_never_imports_tooling(module: str) -> None:
    tooling = sorted(m for m in GRAPH[module] if _is_tooling(m))
    assert not tooling, f"{module} (runtime) imports the tooling {tooling}"


DESIGN = PACKAGE_DIR.parents[1] / "docs" / "design.md"


def _layout_section() -> str:
    text = DESIGN.read_text(encoding="utf-8")
    return text[text.index("## Package layout"):text.index("## Operator API")]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.endswith("__main__")))
def test_every_module_is_in_the_documented_layout(module: str) -> None:
    # Listed by its own name (`fieldrank.hybrid`) or, inside a package's row, by its last part.
    section = _layout_section()
    last = module.rpartition(".")[2]
    assert f"`{module}`" in section or f"`{last}`" in section, f"{module} is missing from docs/design.md"


def _is_private(module: str) -> bool:
    """A module is private when its name, or the name of a package above it, starts with ``_``
    (``__main__`` included: it is an entry point, not an API)."""
    return any(part.startswith("_") for part in module.split("."))


PUBLIC_ROW = re.compile(r"^\| `(fieldrank(?:\.[a-z0-9_]+)*)` \|", re.MULTILINE)


def _documented_public_modules() -> set[str]:
    """The first cells of the layout table's rows that name a module: the one public list."""
    return set(PUBLIC_ROW.findall(_layout_section()))


def test_privacy_is_told_by_the_name() -> None:
    # The rule of the layout: a module is either in the documented public list or has an
    # underscore name; the list names no module that is gone or private.
    public = {m for m in MODULES if not _is_private(m)}
    documented = _documented_public_modules()
    assert "fieldrank.memory" in documented and "fieldrank.evaluation.locomo" in documented
    undocumented = sorted(public - documented)
    assert not undocumented, f"public modules missing from docs/design.md's table (or give them an _ name): {undocumented}"
    stale = sorted(documented - public)
    assert not stale, f"docs/design.md lists modules that are private or do not exist: {stale}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not _is_private(m)))
def test_every_public_module_declares_its_api(module: str) -> None:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    assigned = {target.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if isinstance(target, ast.Name)}
    assert "__all__" in assigned, f"{module} has no __all__ (its public API)"
