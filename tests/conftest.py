"""Shared fixtures (seeded generator, the two operator modules, the LoCoMo folder) and the
hypothesis profiles. Plain helpers live in ``tests/helpers.py``."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import fieldrank
import fieldrank.reference

from tests.helpers import LOCOMO_DIR, SEED

# Hypothesis profiles. "ci" (the default) is derandomized, keeps no example database and has no
# deadline (no timing asserts), so the fuzz files (tests/*/test_fuzz_*.py) stay under a minute
# on 2 cores. "long" (`pytest --hypothesis-profile=long`) runs 20,000 examples per test, or FIELDRANK_FUZZ_EXAMPLES;
# docs/reliability.md says how.
try:
    from hypothesis import HealthCheck, settings
except ImportError:  # hypothesis is a test extra; the files that need it importorskip it
    pass
else:
    _FUZZ_HEALTH_CHECKS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
    settings.register_profile("ci", max_examples=40, derandomize=True, database=None, deadline=None,
                              suppress_health_check=_FUZZ_HEALTH_CHECKS, print_blob=True)
    settings.register_profile("long", max_examples=int(os.environ.get("FIELDRANK_FUZZ_EXAMPLES", "20000")),
                              database=None, deadline=None,
                              suppress_health_check=_FUZZ_HEALTH_CHECKS, print_blob=True)
    settings.load_profile("ci")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


@pytest.fixture(params=["native", "reference"])
def fr(request):
    """Each operator test runs against the native module and the numpy reference."""
    return fieldrank if request.param == "native" else fieldrank.reference


@pytest.fixture
def locomo_dir() -> Path:
    if not (LOCOMO_DIR / "turns.jsonl").exists():
        pytest.skip(f"LoCoMo data not found at {LOCOMO_DIR} (expected ../shared/data/locomo beside the repository)")
    return LOCOMO_DIR
