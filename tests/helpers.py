"""Shared test helpers: seeds, parity tolerances, data paths, corpus builders.

Import them from here (``from tests.helpers import unit_rows``); ``conftest.py`` holds only
fixtures and the hypothesis profiles.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
from pathlib import Path
from types import ModuleType

import numpy as np

from fieldrank import _core

SEED = 20261130
# docs/spec.md §0 parity: scores within 1e-4 relative; order identical wherever consecutive scores
# differ by more than 1e-5.
SCORE_RTOL = 1e-4
ORDER_GAP = 1e-5

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"
#: The LoCoMo folder: ``$FIELDRANK_LOCOMO_DIR`` (as :func:`fieldrank.evaluation.locomo.resolve_data_dir`
#: reads it: a worktree elsewhere can point at the data), else ``../shared/data/locomo``.
LOCOMO_DIR = Path(os.environ.get("FIELDRANK_LOCOMO_DIR") or SHARED_DIR / "data" / "locomo")
#: The SIMD kernel variants this CPU runs, portable first.
SUPPORTED_KERNEL_VARIANTS = list(_core.supported_kernel_variants())


#: Seconds in a day, the unit of the memory tests' timestamps.
DAY = 86400.0
#: Words the memory tests' filler texts are drawn from (none of them in a cue or an answer).
FILLER_WORDS = ("amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper")


def load_tool(name: str) -> ModuleType:
    """The script ``tools/<name>.py`` imported as a module (the tools are no package)."""
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def normalized(v: np.ndarray) -> np.ndarray:
    """``v`` scaled to unit L2 norm along its last axis (a vector or rows), in its own dtype."""
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def unit_rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """``n`` random float32 rows of dimension ``d`` with unit L2 norm."""
    X = rng.standard_normal((n, d)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X


def run_sql(path: Path, statement: str, *params) -> None:
    """Apply one SQL statement to a store file and commit (tests that tamper with saved stores)."""
    connection = sqlite3.connect(path)
    try:
        connection.execute(statement, params)
        connection.commit()
    finally:
        connection.close()
