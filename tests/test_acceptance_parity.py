"""Native and reference agree (issue 15): on the CFS kernel's exp at every accepted β and σ for
every SIMD variant this CPU runs, and, in a property test, on which arguments each accepts or
refuses (same exception type) and on the results wherever both accept."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fieldrank
import fieldrank.reference as ref
from fieldrank import _core

from .conftest import SCORE_RTOL, SEED

FLOAT32_MAX = float(np.finfo(np.float32).max)
SUPPORTED = list(_core.supported_kernel_variants())


@pytest.fixture(params=SUPPORTED)
def variant(request):
    """Runs a test once per kernel variant this CPU supports, restoring the default after."""
    before = _core.kernel_variant()
    _core.set_kernel_variant(request.param)
    yield request.param
    _core.set_kernel_variant(before)


def _two_rows(cosine: float) -> np.ndarray:
    """Two unit rows in 2-D at the given cosine."""
    angle = math.acos(cosine)
    return np.array([[1.0, 0.0], [math.cos(angle), math.sin(angle)]], dtype=np.float32)


def test_cfs_far_neighbours_add_nothing_at_huge_beta(variant):
    """Issue 15 item 0: the AVX2 exp clamped at -87.3, so a Gaussian that is 0 in float32 became
    1.2e-38 and, times β = 1e36, moved the scores (-0.2353 against -0.2231)."""
    rng = np.random.default_rng(SEED)
    C = np.eye(3, 8, dtype=np.float32)  # orthogonal rows: distance² 2, Gaussian exp(-400) = 0
    q = (C.sum(axis=0) + 0.1 * rng.random(8)).astype(np.float32)
    for beta in (1.0, 1e33, 1e36, FLOAT32_MAX):
        got = fieldrank.cfs_pool(np.arange(3), C, q, 3, sigma=0.05, beta=beta)
        want = ref.cfs_pool(np.arange(3), C, q, 3, sigma=0.05, beta=beta)
        np.testing.assert_array_equal(got.ids, want.ids)
        np.testing.assert_allclose(got.scores, want.scores, rtol=1e-6, err_msg=f"beta={beta}")


def test_cfs_exp_matches_reference_over_the_whole_float32_range(variant):
    """The second pick's score is log(s₂) − β·exp(x) with x = −d²/(2σ²): sweeping x from 0 to
    −120 (normal results, subnormals, 0) with β scaled so β·exp(x) stays near 1 (or at FLT_MAX)
    checks the exp approximation of every variant against float64 within the parity tolerance."""
    C = _two_rows(0.5)  # distance² = 1
    q = np.array([1.0, 0.1], dtype=np.float32)
    sims = C @ q
    worst = 0.0
    for x in np.linspace(-120.0, -0.01, 1201):
        sigma = math.sqrt(1.0 / (-2.0 * x))
        beta = min(FLOAT32_MAX, 0.5 / math.exp(x)) if x > -88.0 else FLOAT32_MAX
        got = fieldrank.cfs_pool(np.arange(2), C, q, 2, sigma=sigma, beta=beta, sims=sims)
        want = ref.cfs_pool(np.arange(2), C, q, 2, sigma=sigma, beta=beta, sims=sims)
        np.testing.assert_array_equal(got.ids, want.ids)
        err = abs(float(got.scores[1]) - float(want.scores[1])) / max(1.0, abs(float(want.scores[1])))
        worst = max(worst, err)
        assert err <= SCORE_RTOL, (variant, x, sigma, beta, got.scores, want.scores)
    # Float32 inputs limit the agreement (x is computed from a float32 dot product), not the exp.
    assert worst <= SCORE_RTOL


@pytest.mark.parametrize("beta", [1e30, 1e36, FLOAT32_MAX])
@pytest.mark.parametrize("sigma", [0.05, 0.3, 1.0])
def test_cfs_variants_agree_with_portable_at_extreme_beta(variant, beta, sigma):
    """Every variant equals the portable kernel (std::exp) within the parity tolerance."""
    rng = np.random.default_rng(SEED)
    E = rng.standard_normal((60, 12)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    Q = E[:8] + 0.05 * rng.standard_normal((8, 12)).astype(np.float32)
    got = fieldrank.cfs_batch(E, Q, 10, p=30, sigma=sigma, beta=beta)
    _core.set_kernel_variant("portable")
    want = fieldrank.cfs_batch(E, Q, 10, p=30, sigma=sigma, beta=beta)
    np.testing.assert_array_equal(got.ids, want.ids)
    scale = np.maximum(1.0, np.abs(want.scores.astype(np.float64)))
    assert np.all(np.abs(got.scores - want.scores.astype(np.float64)) <= SCORE_RTOL * scale)
