"""Regression tests for the bugs the fuzz found (``tests/fuzzing.py`` holds the strategies), all
fixed; C++ tests pin the same cases under the sanitizers. A bug found and not yet fixed goes here
as a strict xfail, which fails the day its fix lands; then the mark is dropped and the strategies
widened (docs/reliability.md)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("hypothesis")

import fieldrank  # noqa: E402
import fieldrank.reference  # noqa: E402

from tests.fuzzing import (  # noqa: E402
    EXTREME_CFSR_CASES,
    MODULES,
    MODULE_IDS,
    _call,
    _hybrid_module,
    _memory_module,
)


def test_fixed_cfsr_lambda_max_breakdown():
    """Pool {c, −c}: G·1 = 0 broke Lanczos down with Ritz value 0; the step 1/λ was huge: NaN."""
    C = np.array([[1.0], [-1.0]], np.float32)
    native = fieldrank.cfsr_pool(np.arange(2), C, np.array([1.0], np.float32), 2)
    reference = fieldrank.reference.cfsr_pool(np.arange(2), C, np.array([1.0], np.float32), 2)
    assert np.isfinite(native.coef).all()
    np.testing.assert_allclose(native.coef, reference.coef, rtol=1e-5, atol=1e-7)


def test_fixed_cfsr_lambda_max_when_the_dense_solver_fails():
    """218 rows alternating between two orthogonal vectors: the ones vector is an eigenvector, so
    Lanczos breaks down at once, and the dense fallback (Eigen's SelfAdjointEigenSolver) did not
    converge and returned 1.5e-33 as λ_max: a step of 7e32 and NaN or zero coefficients. The
    restart from a hashed vector finds λ_max = 109."""
    for n in (217, 218, 219):
        C = np.zeros((n, 2), np.float32)
        C[np.arange(n), np.arange(n) % 2] = 1.0
        for iters, fista in ((1, False), (6, False), (6, True)):
            native = fieldrank.cfsr_pool(np.arange(n), C, C[0], 1, w=0.0, lam=0.0, iters=iters, fista=fista)
            reference = fieldrank.reference.cfsr_pool(np.arange(n), C, C[0], 1, w=0.0, lam=0.0, iters=iters,
                                                      fista=fista)
            np.testing.assert_allclose(native.coef, reference.coef, rtol=1e-5)


def test_fixed_ring_ablation_keeps_one_ulp_cosine_order():
    """Ablation scores were float: x + 0.02 and nextafter(x) + 0.02 could round together."""
    x = np.float32(0.48002753)
    y = np.nextafter(x, np.float32(1))
    assert np.float32(x + np.float32(0.02)) == np.float32(y + np.float32(0.02))  # the trap exists
    C = np.array([[1.0, 0.0], [1.0, 0.0]], np.float32)
    for seed in range(8):
        result = fieldrank.ring_pool(np.arange(2), C, np.array([1.0, 0.0], np.float32), 2,
                                     sims=np.array([y, x]), ablation=True, laps=1, seed=seed)
        assert result.ids.tolist() == [0, 1]


def test_fixed_ring_huge_k_is_not_an_overflow():
    """k·2 overflowed int64 for k >= 2**62 (UB; surfaced as 'vector::reserve')."""
    rng = np.random.default_rng(1)
    E = rng.standard_normal((20, 8)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    for k in (2**62, 2**63 - 1):
        assert fieldrank.ring(E, E[0], k).ids.shape == (20,)
        assert fieldrank.ring_batch(E, E[:3], k).ids.shape == (3, 20)


@pytest.mark.parametrize("kind", ["bf16", "int8"])
def test_fixed_quantized_candidate_count_overflow(kind):
    """rescore_factor · p overflowed int64 (p = 2**31, factor = 2**40): ids came back as -1, repeated."""
    rng = np.random.default_rng(3)
    E = rng.standard_normal((5, 4)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    QC = fieldrank.quantize(E, kind)
    exact = fieldrank.prefilter(E, E[1], 5)
    for p, factor in ((2**31, 2**40), (2**63 - 1, 2**63 - 1)):
        result = fieldrank.prefilter_quantized(QC, E, E[1], p, rescore_factor=factor)
        assert np.array_equal(result.ids, exact.ids)
        batch = fieldrank.prefilter_quantized_batch(QC, E, E[:2], p, rescore_factor=factor)
        assert np.array_equal(batch.ids[1], exact.ids)


def test_fixed_huge_n_threads_is_not_an_overflow():
    """chunks_per_thread · n_threads overflowed int64 in the scans for n_threads >= 2**61."""
    rng = np.random.default_rng(4)
    E = rng.standard_normal((30, 6)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    expected = fieldrank.prefilter_batch(E, E[:3], 4, n_threads=1)
    for n_threads in (2**61, 2**63 - 1):
        assert np.array_equal(fieldrank.prefilter_batch(E, E[:3], 4, n_threads=n_threads).ids, expected.ids)
        assert fieldrank.cfs_batch(E, E[:3], 4, n_threads=n_threads).ids.shape == (3, 4)


def test_fixed_hybrid_normalize_tiny_query():
    """hybrid.py _query_vector computes the norm in float32: with normalize=True a finite,
    non-zero query of 1e-30 has norm 0, the division warns and the query is rejected as
    'q must be finite, got inf' although the caller passed a finite vector."""
    HybridRetriever, _ = _hybrid_module()
    retriever = HybridRetriever(["caroline", "dog"], np.eye(2, dtype=np.float32), "cosine", normalize=True)
    result = retriever.search("", np.array([1e-30, 1e-30], np.float32))
    assert result.ids.shape == (2,)


def test_fixed_memory_store_embedding_norm_overflow():
    """memory/_schema.py embedding_rows casts the float64 norm to float32 before dividing: a finite
    row whose norm passes FLT_MAX becomes a zero row (with a RuntimeWarning), and from then on
    every recall of the store raises 'E rows must have a non-zero, finite norm'."""
    memory = _memory_module()
    store = memory.MemoryStore(dim=4)
    row = np.array([[3.4e38, 0.1, 0.0, 3.4e38]], np.float32)
    added = _call(store.add_many, ["huge"], row)
    if added is not None:
        assert store.recall("huge", np.ones(4, np.float32)).ids.tolist() == [int(added[0])]


@pytest.mark.parametrize("module_name", MODULE_IDS)
def test_fixed_uint64_ids_wrap(module_name):
    """uint64 ids >= 2**63 are cast to int64 unchecked (_validation.id_array): RRF returns -1."""
    fr = MODULES[module_name]
    with pytest.raises(ValueError):
        fr.rrf([np.array([2**64 - 1, 5], dtype=np.uint64)], None, 5)


@pytest.mark.parametrize("module_name", MODULE_IDS)
def test_fixed_cfs_extreme_sigma_and_beta(module_name):
    """sigma = 5e-324 gave 1/(2 sigma^2) = inf and 0·inf = NaN at distance 0; beta near float32's max
    gave -inf values. sigma below float32 is refused; tiny sigma is the sigma -> 0 limit; values
    saturate at -FLT_MAX, where the tie rule orders the picks by id."""
    fr = MODULES[module_name]
    C = np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], np.float32)
    q = np.array([1.0, 0.0], np.float32)
    with pytest.raises(ValueError, match=r"sigma must stay positive as a float32 \(at least 1.4013e-45\)"):
        fr.cfs_pool(np.arange(4), C, q, 4, sigma=5e-324)
    with pytest.raises(ValueError, match=r"eps must stay positive as a float32"):
        fr.cfs_pool(np.arange(4), C, q, 4, eps=1e-300)
    limit = fr.cfs_pool(np.arange(4), C, q, 4, sigma=1e-30, beta=1.0)  # only the duplicate is covered
    assert limit.ids.tolist() == [0, 2, 1, 3]
    assert np.isfinite(limit.scores).all()
    # sigma = 10 covers every row about equally: the least covered (row 3) goes second, then the
    # fields pass 1, beta·field passes float32, and rows 1 and 2 tie at -FLT_MAX, in id order.
    saturated = fr.cfs_pool(np.arange(4), C, q, 4, sigma=10.0, beta=3.4e38)
    assert np.isfinite(saturated.scores).all()
    assert saturated.ids.tolist() == [0, 3, 1, 2]
    assert saturated.scores[2:].tolist() == [-np.finfo(np.float32).max] * 2


@pytest.mark.parametrize("module_name", MODULE_IDS)
def test_fixed_counts_past_int64(module_name):
    """laps = 2**63 made the reference loop for 2**63 laps (the native binding refused it with a
    TypeError): counts past int64 are now refused with the same ValueError in both modules."""
    fr = MODULES[module_name]
    C = np.eye(3, dtype=np.float32)
    with pytest.raises(ValueError, match=r"laps must be a positive integer that fits int64"):
        fr.ring_pool(np.arange(3), C, C[0], 2, laps=2**63)
    with pytest.raises(ValueError, match=r"k must be a positive integer that fits int64"):
        fr.cfsr(C, C[0], 2**64)
    with pytest.raises(ValueError, match=r"n_threads must fit int64"):
        fr.prefilter_batch(C, C[:1], 2, n_threads=2**63)


@pytest.mark.parametrize("module_name", MODULE_IDS)
def test_fixed_cfsr_query_past_float32(module_name):
    """A query of norm 1e30 against a row of norm 1e-10 gave a = 1e40: NaN in float32. A query whose
    squared norm leaves float32 is now rejected, as rows are, in both modules alike."""
    fr = MODULES[module_name]
    E = np.array([[1e-10]], np.float32)
    with pytest.raises(ValueError, match=r"q must have a squared norm within the float32 range .* got 1e\+60"):
        fr.cfsr(E, np.array([1e30], np.float32), 1, lam=0.0)
    with pytest.raises(ValueError, match=r"Q must have a squared norm within the float32 range .*\(row 1\)"):
        fr.cfsr_batch(E, np.array([[1.0], [1e20]], np.float32), 1)


@pytest.mark.parametrize("case", sorted(EXTREME_CFSR_CASES))
def test_fixed_cfsr_extreme_norms_match_reference(case):
    E, q, sims, lam = EXTREME_CFSR_CASES[case]
    ids = np.arange(E.shape[0])
    native = fieldrank.cfsr_pool(ids, E, q, E.shape[0], lam=lam, sims=sims)
    reference = fieldrank.reference.cfsr_pool(ids, E, q, E.shape[0], lam=lam, sims=sims)
    assert np.isfinite(native.scores).all() and np.isfinite(native.coef).all()
    assert native.ids.tolist() == reference.ids.tolist()
    np.testing.assert_allclose(native.scores, reference.scores, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(native.coef, reference.coef, rtol=1e-4, atol=0)
    assert (native.coef > 0).any()  # neither underflowed to zero nor overflowed


@pytest.mark.parametrize("call", [
    pytest.param(lambda fr, E, q: fr.cfs(E, q, 10, beta=1e39), id="cfs-beta"),
    pytest.param(lambda fr, E, q: fr.cfs(E, q, 10, eps=1e39), id="cfs-eps"),
    pytest.param(lambda fr, E, q: fr.cfsr(E, q, 10, lam=1e39), id="cfsr-lam"),
])
def test_fixed_real_parameters_past_float32(call):
    """Finite doubles past FLT_MAX pass validation, become inf in the float32 kernels: -inf/inf/NaN."""
    rng = np.random.default_rng(2)
    E = rng.standard_normal((50, 8)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    result = _call(call, fieldrank, E, E[0])
    assert result is None or np.isfinite(np.asarray(result.scores)).all() and np.isfinite(
        np.asarray(getattr(result, "coef", result.scores))).all()


@pytest.mark.parametrize("module_name", MODULE_IDS)
def test_fixed_tie_key_negative_arguments(module_name):
    """tie_key(-1, ...) raises OverflowError (reference) or TypeError (native); lap -1 is accepted natively."""
    fr = MODULES[module_name]
    for seed, lap in ((-1, 0), (0, -1)):
        with pytest.raises(ValueError):
            fr.tie_key(seed, lap, np.array([1], dtype=np.int64))
