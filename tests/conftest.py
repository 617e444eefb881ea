"""Shared fixtures: seeded generators, unit-row corpora, the two operator modules, data paths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import fieldrank
import fieldrank.reference

SEED = 20261130
# SPEC §0 parity: scores within 1e-4 relative; order identical wherever consecutive scores
# differ by more than 1e-5.
SCORE_RTOL = 1e-4
ORDER_GAP = 1e-5

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"
LOCOMO_DIR = SHARED_DIR / "data" / "locomo"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def unit_rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    X = rng.standard_normal((n, d)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X


@pytest.fixture(params=["native", "reference"])
def fr(request):
    """Each operator test runs against the native module and the numpy reference."""
    return fieldrank if request.param == "native" else fieldrank.reference


@pytest.fixture
def locomo_dir() -> Path:
    if not (LOCOMO_DIR / "turns.jsonl").exists():
        pytest.skip(f"LoCoMo data not found at {LOCOMO_DIR} (expected ../shared/data/locomo beside the repository)")
    return LOCOMO_DIR
