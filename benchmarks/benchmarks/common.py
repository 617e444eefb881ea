"""Shared data and size guards for the asv suite.

Every class uses the full parameter grids of the issue (N ∈ {10k, 100k, 1M}, d ∈ {384, 768,
1536}, ...). A combination whose data would exceed FIELDRANK_ASV_MAX_MB (default 400 MB) is
skipped in ``setup`` with NotImplementedError before anything is allocated, so a default or
``--quick`` run stays small; raise the budget for the big sizes.
"""

from __future__ import annotations

import os

import numpy as np
from fieldrank.evaluation.bench import DATA_SEED as SEED
from fieldrank.evaluation.bench import queries_near, unit_rows

try:  # asv >= 0.6 ships asv_runner; a benchmark raising this is reported as skipped
    from asv_runner.benchmarks.mark import SkipNotImplemented
except ImportError:  # pragma: no cover
    SkipNotImplemented = NotImplementedError

N_GRID = [10_000, 100_000, 1_000_000]
D_GRID = [384, 768, 1536]
P = 150
MAX_MB = float(os.environ.get("FIELDRANK_ASV_MAX_MB", "400"))
REFERENCE_MAX_MB = float(os.environ.get("FIELDRANK_ASV_REFERENCE_MAX_MB", "160"))


def megabytes(*shape: int, itemsize: int = 4) -> float:
    return float(np.prod(shape)) * itemsize / 2**20


def require(*shape: int, itemsize: int = 4) -> None:
    """Skip (in setup) a combination whose array would exceed the budget."""
    size = megabytes(*shape, itemsize=itemsize)
    if size > MAX_MB:
        msg = f"{shape} needs {size:.0f} MB > FIELDRANK_ASV_MAX_MB={MAX_MB:.0f}"
        raise NotImplementedError(msg)


def reference_fits(*shape: int) -> None:
    """Skip a reference benchmark (inside the benchmark) where its float64 copies get too large."""
    size = megabytes(*shape)
    if size > REFERENCE_MAX_MB:
        msg = f"reference on {shape} ({size:.0f} MB) > FIELDRANK_ASV_REFERENCE_MAX_MB={REFERENCE_MAX_MB:.0f}"
        raise SkipNotImplemented(msg)


def queries(E: np.ndarray, count: int, seed: int = SEED + 1) -> np.ndarray:
    """Queries near corpus rows (a real query has close neighbours), unit length."""
    return queries_near(E, count, seed)


def corpus_and_query(N: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """A unit corpus of N rows (skipped past the budget) and one query near it."""
    require(N, d)
    E = unit_rows(N, d)
    return E, queries(E, 1)[0]


def corpus_and_queries(N: int, d: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """A unit corpus of N rows (skipped past the budget) and ``batch`` queries near it."""
    require(N, d)
    E = unit_rows(N, d)
    return E, queries(E, batch)


def prefilter_pool(size: int, d: int):
    """(query, prefilter ranking, pool vectors) of a pool of ``size`` from a corpus 20x larger."""
    import fieldrank

    E = unit_rows(20 * size, d)
    q = queries(E, 1)[0]
    top = fieldrank.prefilter(E, q, size)
    return q, top, E[top.ids]
