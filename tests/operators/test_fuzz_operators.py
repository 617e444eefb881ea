"""Property-based fuzzing of every public operator entry point, native and reference (the
property and the strategies: ``tests/fuzzing.py``)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import fieldrank  # noqa: E402
import fieldrank.reference  # noqa: E402

from tests.fuzzing import (  # noqa: E402
    COUNTS,
    DEFAULT_LAM,
    FAMILIES,
    MODULES,
    MODULE_IDS,
    ORDER,
    THREADS,
    _call,
    _check_fused,
    _domain,
    _id_set,
    _mostly,
    _n_candidates,
    _run,
    _snapshot,
    _unchanged,
    _unit,
    _width,
    batch_calls,
    check_ranking,
    corpus_calls,
    matrices,
    operator_params,
    pick,
    plans,
    pool_calls,
    quantized_corpora,
    queries,
    rrf_batch_calls,
    rrf_calls,
    subsets,
    vectors,
)


@pytest.mark.parametrize("module_name", MODULE_IDS)
@pytest.mark.parametrize("family", FAMILIES)
@given(call=corpus_calls(), data=st.data())
def test_fuzz_corpus_form(module_name, family, call, data):
    """prefilter, cfsr, cfs, mmr, ring on (E, q) with an optional subset."""
    E, q, subset, bad = call
    params = data.draw(operator_params(family, bad))
    before = _snapshot(E, q, subset)
    result = _call(_run, getattr(MODULES[module_name], family), (E, q), params, subset=subset)
    _unchanged(before, E, q, subset)
    if result is not None:
        check_ranking(result.ids, result.scores, _width(family, params, _n_candidates(E, subset)),
                      _domain(E, subset), ORDER[family], coef=getattr(result, "coef", None))


@pytest.mark.parametrize("module_name", MODULE_IDS)
@pytest.mark.parametrize("family", FAMILIES)
@given(call=batch_calls(), data=st.data())
def test_fuzz_batch_form(module_name, family, call, data):
    """The *_batch forms: (B, m) results whose rows equal the single call, for any n_threads."""
    module = MODULES[module_name]
    E, Q, subset, n_threads, bad = call
    params = data.draw(operator_params(family, bad))
    before = _snapshot(E, Q, subset)
    result = _call(_run, getattr(module, f"{family}_batch"), (E, Q), params, subset=subset, n_threads=n_threads)
    _unchanged(before, E, Q, subset)
    if result is None:
        return
    B, m = Q.shape[0], _width(family, params, _n_candidates(E, subset))
    assert result.ids.shape == (B, m) and result.scores.shape == (B, m), (result.ids.shape, B, m)
    for b in range(B):
        coef = result.coef[b] if hasattr(result, "coef") else None
        check_ranking(result.ids[b], result.scores[b], m, _domain(E, subset), ORDER[family], coef=coef)
        single = _run(getattr(module, family), (E, Q[b]), params, subset=subset)  # must not raise either
        assert np.array_equal(single.ids, result.ids[b]), (b, single.ids, result.ids[b])
        assert np.array_equal(single.scores, result.scores[b]), (b, single.scores, result.scores[b])


@pytest.mark.parametrize("module_name", MODULE_IDS)
@pytest.mark.parametrize("family", FAMILIES)
@given(call=pool_calls(), data=st.data())
def test_fuzz_pool_form(module_name, family, call, data):
    """The *_pool forms on a caller's (ids, C, q[, sims]): ids returned are the caller's ids."""
    ids, C, q, sims, bad = call
    params = data.draw(operator_params(family, bad, pool=True))
    before = _snapshot(ids, C, q, sims)
    extra = {} if family == "prefilter" else {"sims": sims}
    result = _call(_run, getattr(MODULES[module_name], f"{family}_pool"), (ids, C, q), params, **extra)
    _unchanged(before, ids, C, q, sims)
    if result is not None:
        check_ranking(result.ids, result.scores, _width(family, params, len(ids)), _id_set(ids), ORDER[family],
                      coef=getattr(result, "coef", None))


@pytest.mark.parametrize("module_name", MODULE_IDS)
@given(data=st.data())
def test_fuzz_quantized_prefilter(module_name, data):
    """quantize, prefilter_quantized and prefilter_quantized_batch: valid rankings, and exactly the
    fp32 prefilter whenever every candidate is rescored (rescore_factor * p >= n)."""
    module = MODULES[module_name]
    bad = data.draw(plans(["E", "q", "subset", "p", "rescore_factor", "QC", "n_threads"]))
    E, d, rng = data.draw(matrices("E", bad))
    QC = data.draw(quantized_corpora(module, E, bad))
    q = data.draw(vectors("q", bad, E, d, rng))
    n_rows = E.shape[0] if getattr(E, "ndim", 0) >= 1 else 0
    subset = data.draw(subsets(bad, n_rows, rng))
    p = pick(data.draw, bad, "p", *COUNTS)
    factor = pick(data.draw, bad, "rescore_factor", _mostly(st.integers(1, 8), st.sampled_from([2**40, 2**62])),
                  COUNTS[1])
    before = _snapshot(E, q, subset)
    result = _call(module.prefilter_quantized, QC, E, q, p, rescore_factor=factor, subset=subset)
    _unchanged(before, E, q, subset)
    if result is not None:
        n = _n_candidates(E, subset)
        check_ranking(result.ids, result.scores, min(int(p), n), _domain(E, subset), "tie_rule")
        if int(factor) * int(p) >= n:
            exact = module.prefilter(E, q, p, subset=subset)
            if module_name == "native":  # the same fp32 kernel rescored: bit for bit
                assert np.array_equal(result.ids, exact.ids) and np.array_equal(result.scores, exact.scores)
            else:  # float64 sums in another order: equal to the last bits, same order beyond ties
                np.testing.assert_allclose(result.scores, exact.scores, rtol=1e-12, atol=0)
                assert np.array_equal(np.sort(result.ids), np.sort(exact.ids)) or \
                    np.allclose(np.diff(exact.scores), 0, atol=1e-12)
    Q = data.draw(queries(bad, E, d, rng))
    n_threads = pick(data.draw, bad, "n_threads", *THREADS)
    batch = _call(module.prefilter_quantized_batch, QC, E, Q, p, rescore_factor=factor, subset=subset,
                  n_threads=n_threads)
    if batch is not None:
        m = min(int(p), _n_candidates(E, subset))
        assert batch.ids.shape == (Q.shape[0], m)
        for b in range(Q.shape[0]):
            single = module.prefilter_quantized(QC, E, Q[b], p, rescore_factor=factor, subset=subset)
            assert np.array_equal(single.ids, batch.ids[b]) and np.array_equal(single.scores, batch.scores[b])


@pytest.mark.parametrize("module_name", MODULE_IDS)
@given(call=rrf_calls())
def test_fuzz_rrf(module_name, call):
    module = MODULES[module_name]
    rankings, weights, k, k0 = call
    listed = list(rankings) if isinstance(rankings, (list, tuple)) else None
    before = _snapshot(*(listed or []), weights)
    result = _call(module.rrf, rankings, weights, k, k0=k0)
    if listed is not None:
        _unchanged(before, *listed, weights)
    if result is not None:
        _check_fused(result, listed, k)


@pytest.mark.parametrize("module_name", MODULE_IDS)
@given(call=rrf_batch_calls())
def test_fuzz_rrf_batch(module_name, call):
    module = MODULES[module_name]
    per_query, weights, k, k0 = call
    result = _call(module.rrf_batch, per_query, weights, k, k0=k0)
    if result is None:
        return
    assert isinstance(result, list) and len(result) == len(per_query)
    for rankings, fused in zip(per_query, result):
        _check_fused(fused, list(rankings), k)
        single = module.rrf(rankings, weights, k, k0=k0)  # a query of a valid batch is valid alone
        assert np.array_equal(single.ids, fused.ids) and np.array_equal(single.scores, fused.scores)


@pytest.mark.parametrize("module_name", MODULE_IDS)
@given(seed=st.integers(0, 2**64 - 1), lap=st.integers(0, 2**40),
       ids=st.lists(st.integers(0, 2**63 - 1), max_size=8))
def test_fuzz_tie_key(module_name, seed, lap, ids):
    keys = MODULES[module_name].tie_key(seed, lap, np.array(ids, dtype=np.int64))
    assert keys.dtype == np.uint64 and keys.shape == (len(ids),)
    other = fieldrank.tie_key(seed, lap, np.array(ids, dtype=np.int64))
    assert np.array_equal(keys, other)


@given(seed=st.integers(0, 2**32 - 1), q_shift=st.integers(-40, 60), e_shift=st.integers(-30, 30))
def test_cfsr_is_exactly_equivariant_under_power_of_two_scaling(seed, q_shift, e_shift):
    """CFS-R runs on power-of-two rescaled inputs, so scaling q by 2^s and the pool rows C by 2^t
    (with λ by 4^t) returns bit-identical ids and scores and coefficients times exactly 2^(s-t).
    (The pool form: corpus forms accept unit rows only; a caller's pool is taken as given.)"""
    rng = np.random.default_rng(seed)
    E = _unit(rng, 60, 24)
    q = (E[0] + np.float32(0.4) * rng.standard_normal(24).astype(np.float32)).astype(np.float32)
    lam = DEFAULT_LAM
    ids = fieldrank.prefilter(E, q, 40).ids
    C = np.ascontiguousarray(E[ids])
    base = fieldrank.cfsr_pool(ids, C, q, 12)
    assert np.array_equal(base.ids, fieldrank.cfsr(E, q, 12, p=40).ids)
    scaled = fieldrank.cfsr_pool(ids, C * np.float32(2.0**e_shift), q * np.float32(2.0**q_shift), 12,
                                 lam=lam * 4.0**e_shift)
    assert np.array_equal(scaled.ids, base.ids)
    assert np.array_equal(scaled.scores, base.scores)
    expected = base.coef.astype(np.float64) * 2.0 ** (q_shift - e_shift)
    tiny = np.abs(expected) < np.finfo(np.float32).tiny  # a subnormal coefficient keeps fewer bits
    assert np.array_equal(scaled.coef[~tiny], expected[~tiny].astype(np.float32))
