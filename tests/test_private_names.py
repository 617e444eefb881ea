"""Layout: no module uses another module's underscore names, except the listed ones.

A name that starts with ``_`` is private to its module (a private *module* such as
``_validation`` is the package's own, and may be imported anywhere inside it). The test reads
every module of ``python/fieldrank`` (no import) and finds ``from .mod import _name`` and
``alias._name`` where ``alias`` is a package module. Each current exception is listed with its
reason; a new use fails, and so does an exception that is gone (remove it from the list).
Issue #26 (one door into the native core, one implementation per rule) removes these.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "fieldrank"
SOURCE_ROOT = PACKAGE.parent

#: (module, the other module's private name it uses) -> why, for now.
EXCEPTIONS = {
    ("fieldrank.evaluation._confidence", "fieldrank._confidence._product_logit"):
        "the harness fits the runtime's confidence model and needs its logit feature, one formula",
    ("fieldrank.memory._confidence", "fieldrank._confidence._best_other"):
        "the store's hit confidence uses the retriever's margin feature, one formula",
    ("fieldrank._retriever.corpus", "fieldrank.bm25._check_texts"):
        "the retriever checks its texts by BM25's own rule (until the lexical package names it publicly)",
    ("fieldrank._retriever.legs.rerank", "fieldrank.operators._batch_trusted"):
        "trusted side door into _core for checked corpora (issue #33: one door, _kernels)",
    ("fieldrank._retriever.legs.rerank", "fieldrank.operators._pool_trusted"): "trusted side door (issue #33)",
    ("fieldrank._retriever.context", "fieldrank.operators._prefilter_batch_trusted"):
        "trusted side door (issue #33)",
    ("fieldrank._retriever.fusion", "fieldrank.operators._rrf_batch_trusted"): "trusted side door (issue #33)",
    ("fieldrank.memory._generators", "fieldrank.temporal._run_leg"): "the store runs the temporal leg (issue #26)",
    ("fieldrank.memory._generators", "fieldrank.temporal._years_spanned"): "question feature (issue #26)",
    ("fieldrank.memory._lexical", "fieldrank.bm25._Statistics"):
        "the store's lexical index reuses BM25's build and scoring (issue #26: four private BM25 functions)",
    ("fieldrank.memory._lexical", "fieldrank.bm25._context_token_ids"): "BM25's build, reused (issue #26)",
    ("fieldrank.memory._lexical", "fieldrank.bm25._index_matrix"): "BM25's build, reused (issue #26)",
    ("fieldrank.memory._lexical", "fieldrank.bm25._matrix_scores"): "BM25's scoring, reused (issue #26)",
    ("fieldrank.reference", "fieldrank.quantized._corpus"):
        "the numpy twin of the quantized prefilter checks its corpus with the operator's own check",
    ("fieldrank.reference", "fieldrank.quantized._factor"): "the twin's rescoring depth, the operator's own",
    ("fieldrank.reference", "fieldrank.quantized._kind"): "the twin checks the kind with the operator's own check",
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


def private_uses() -> set[tuple[str, str]]:
    """(module, other module's private name) for every use in the package's sources."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _absolute(module, path.name == "__init__.py", node.level, node.module)
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


def test_no_module_uses_another_modules_private_names():
    found = private_uses()
    new = sorted(found - set(EXCEPTIONS))
    assert not new, f"modules using another module's private names (make it public, or list it with a reason): {new}"
    gone = sorted(set(EXCEPTIONS) - found)
    assert not gone, f"listed exceptions no longer used (remove them from EXCEPTIONS): {gone}"


def test_the_scan_sees_a_private_import():
    """The scanner itself: a private name imported by ``from`` and one read through an alias."""
    tree_text = "from .bm25 import _check_texts\nfrom . import operators as ops\nops._pool_trusted\n"
    module = "fieldrank.example"
    tree = ast.parse(tree_text)
    names = [(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names]
    assert ("bm25", "_check_texts") in names
    assert _absolute(module, False, 1, "bm25") == "fieldrank.bm25"
    assert _is_module("fieldrank.operators") and not _is_module("fieldrank.operators._pool_trusted")
    assert ("fieldrank._retriever.legs.rerank", "fieldrank.operators._pool_trusted") in private_uses()
