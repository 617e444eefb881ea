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

from tests.helpers import SCORE_RTOL, SEED

FLOAT32_MAX = float(np.finfo(np.float32).max)


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


# ------------------------------------------------------------------- accept/refuse parity

import copy  # noqa: E402
import types  # noqa: E402

pytest.importorskip("hypothesis")
from hypothesis import event, given, note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests import fuzzing as fz  # noqa: E402  (the fuzz's strategies: whole calls, valid and not)

FAMILIES = fz.FAMILIES
#: The parity domain: inputs where float32 (native) and float64 (reference) arithmetic must agree
#: within SCORE_RTOL. Outside it (rows or queries of norm 1e19 or 1e-12, β = 3.4e38, σ = 1e-45,
#: ...) the problem itself is ill-conditioned in float32 — a cosine rounded by 1e-7 moves
#: exp(-d²/2σ²)·β by more than any tolerance — so only the accept/refuse verdict is compared.
_NORM_RANGE = (1e-3, 1e3)
_PARAM_RANGE = {"beta": (0.0, 1e3), "sigma": (1e-2, 1e3), "eps": (1e-12, 1e3), "lam": (1e-3, 1e3),
                "tol": (0.0, 1e-4), "k0": (0.0, 1e6)}
#: λ >= 1e-3: with λ = 0 (accepted) a rank-deficient pool has a whole set of minimisers, and
#: float32 and float64 iterations may stop at different ones (both valid; the scores differ).
#: CFS-R with FISTA accumulates float32 rounding over its iterations (accelerated methods do,
#: plain projected gradient does not): measured native-vs-reference gaps of 5.6e-5 at the default
#: 80 iterations, 1.2e-4 at 120, 4.7e-4 at 300 (docs/reliability.md). The parity tolerance grows
#: with (iters / 80)² there; everywhere else it is SCORE_RTOL.
_FISTA_REFERENCE_ITERS = int(fieldrank.DEFAULTS["iters"])


def _outcome(fn, args, kwargs):
    """("ok", result) or ("raised", exception type); any other exception type fails the test."""
    try:
        return "ok", fn(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        assert str(exc), f"{type(exc).__name__} without a message"
        return "raised", exc


def _same_verdict(native, reference):
    """Both accept, or both refuse with the same exception type."""
    (n_kind, n_value), (r_kind, r_value) = native, reference
    assert n_kind == r_kind, f"native {n_kind} ({n_value!r}), reference {r_kind} ({r_value!r})"
    if n_kind == "raised":
        assert type(n_value) is type(r_value), f"native raised {n_value!r}, reference {r_value!r}"
        event(f"both raised {type(n_value).__name__}")
    else:
        event("both returned")


def _fresh(arguments):
    """An independent copy of the call's arguments for each module (a generator is rebuilt)."""
    return copy.deepcopy(arguments)


def _accept_alike(family, fn_name, head, params, extra, arrays):
    """Call ``fn_name`` in both modules with ``head``, the drawn size argument (``p`` for the
    prefilter, ``k`` for the other families; passed positionally), the other drawn parameters and
    ``extra``; both must accept or refuse alike (``_both``), and accepted results must agree."""
    lead = params.pop("p") if family == "prefilter" else params.pop("k")
    (n_kind, n), (_, r) = _both(fn_name, (*head, lead), {**params, **extra})
    if n_kind == "ok":
        _check_parity(family, n, r, arrays, params)


def _both(fn_name, args, kwargs, module_of=lambda m: m):
    """Calls ``fn_name`` in both modules on independent copies of the same arguments."""
    results = []
    for module in (fieldrank, ref):
        a, kw = _fresh((args, kwargs))
        results.append(_outcome(getattr(module_of(module), fn_name), a, kw))
    _same_verdict(*results)
    return results


def _in_parity_domain(arrays, params) -> bool:
    for name, (low, high) in _PARAM_RANGE.items():
        value = params.get(name)
        if value is not None and not low <= float(value) <= high:
            return False
    for X in arrays:
        if X is None:
            continue
        X = np.asarray(X, dtype=np.float64)
        if X.size == 0:
            continue
        norms = np.linalg.norm(X.reshape(-1, X.shape[-1]), axis=1) if X.ndim else np.abs(X)
        if norms.size and not ((norms >= _NORM_RANGE[0]) & (norms <= _NORM_RANGE[1])).all():
            return False
    return True


def _agree(n_ids, n_scores, r_ids, r_scores, what="", rtol=SCORE_RTOL):
    """Same ids and scores within SCORE_RTOL (of the ranking's scale) until the first position where
    the picks differ; there both picks must score within the tolerance (a near-tie, after which a
    greedy operator's picks legitimately diverge)."""
    n_ids, r_ids = np.asarray(n_ids), np.asarray(r_ids)
    n_scores, r_scores = np.asarray(n_scores, np.float64), np.asarray(r_scores, np.float64)
    assert n_ids.shape == r_ids.shape, (what, n_ids.shape, r_ids.shape)
    if not r_ids.size:
        return
    tolerance = rtol * max(1.0, float(np.max(np.abs(r_scores))))
    for t in range(r_ids.size):
        assert abs(n_scores[t] - r_scores[t]) <= tolerance, (what, t, n_scores[t], r_scores[t], tolerance)
        if n_ids[t] != r_ids[t]:
            event("near-tie: picks diverge")
            return


def _check_parity(family, result_n, result_r, arrays, params):
    if not _in_parity_domain(arrays, params):
        event("parity not asserted (outside the parity domain)")
        return
    event("parity asserted")
    rtol = SCORE_RTOL
    if params.get("fista"):
        rtol *= max(1.0, int(params.get("iters", _FISTA_REFERENCE_ITERS)) / _FISTA_REFERENCE_ITERS) ** 2
    if result_n.ids.ndim == 2:
        for b in range(result_n.ids.shape[0]):
            _agree(result_n.ids[b], result_n.scores[b], result_r.ids[b], result_r.scores[b], f"{family} row {b}",
                   rtol)
    else:
        _agree(result_n.ids, result_n.scores, result_r.ids, result_r.scores, family, rtol)


@pytest.mark.parametrize("family", FAMILIES)
@given(call=fz.corpus_calls(), data=st.data())
def test_accept_parity_corpus_form(family, call, data):
    E, q, subset, bad = call
    params = data.draw(fz.operator_params(family, bad))
    _accept_alike(family, family, (E, q), params, {"subset": subset}, [E, q])


@pytest.mark.parametrize("family", FAMILIES)
@given(call=fz.batch_calls(), data=st.data())
def test_accept_parity_batch_form(family, call, data):
    E, Q, subset, n_threads, bad = call
    params = data.draw(fz.operator_params(family, bad))
    _accept_alike(family, f"{family}_batch", (E, Q), params, {"subset": subset, "n_threads": n_threads}, [E, Q])


@pytest.mark.parametrize("family", FAMILIES)
@given(call=fz.pool_calls(), data=st.data())
def test_accept_parity_pool_form(family, call, data):
    ids, C, q, sims, bad = call
    params = data.draw(fz.operator_params(family, bad, pool=True))
    extra = {} if family == "prefilter" else {"sims": sims}
    _accept_alike(family, f"{family}_pool", (ids, C, q), params, extra, [C, q, sims if extra else None])


@given(data=st.data())
def test_accept_parity_quantized(data):
    """quantize and the quantized prefilter, on one QuantizedCorpus (the codes are bit-identical)."""
    bad = data.draw(fz.plans(["E", "q", "subset", "p", "rescore_factor", "QC", "n_threads"]))
    E, d, rng = data.draw(fz.matrices("E", bad))
    kind = data.draw(st.sampled_from(["bf16", "int8", "fp8", None]) if "QC" in bad
                     else st.sampled_from(["bf16", "int8"]), label="kind")
    (q_kind, QC), _ = _both("quantize", (E, kind), {})
    if q_kind != "ok":
        QC = E  # not a QuantizedCorpus: both must refuse it
    elif "QC" in bad and data.draw(st.booleans(), label="tamper"):
        from fieldrank.quantized import QuantizedCorpus

        short = QC.scale[:-1].copy() if QC.kind == "int8" else None
        QC = QuantizedCorpus(QC.kind, QC.codes[::-1].copy(), short, QC.sums)
    q = data.draw(fz.vectors("q", bad, E, d, rng))
    n_rows = E.shape[0] if getattr(E, "ndim", 0) >= 1 else 0
    subset = data.draw(fz.subsets(bad, n_rows, rng))
    p = fz.pick(data.draw, bad, "p", *fz.COUNTS)
    factor = fz.pick(data.draw, bad, "rescore_factor", st.integers(1, 8), fz.COUNTS[1])
    (n_kind, n), (_, r) = _both("prefilter_quantized", (QC, E, q, p), {"rescore_factor": factor, "subset": subset})
    if n_kind == "ok" and int(factor) * int(p) >= (n_rows if subset is None else len(subset)):
        _check_parity("prefilter_quantized", n, r, [E, q], {})  # every candidate rescored exactly
    Q = data.draw(fz.queries(bad, E, d, rng))
    n_threads = fz.pick(data.draw, bad, "n_threads", *fz.THREADS)
    _both("prefilter_quantized_batch", (QC, E, Q, p), {"rescore_factor": factor, "subset": subset,
                                                        "n_threads": n_threads})


@given(call=fz.rrf_calls())
def test_accept_parity_rrf(call):
    rankings, weights, k, k0 = call
    if isinstance(rankings, types.GeneratorType):
        materialised = list(rankings)
        results = [_outcome(m.rrf, ((r for r in materialised), weights, k), {"k0": k0}) for m in (fieldrank, ref)]
        _same_verdict(*results)
        return
    (n_kind, n), (_, r) = _both("rrf", (rankings, weights, k), {"k0": k0})
    if n_kind == "ok":
        np.testing.assert_array_equal(n.ids, r.ids)
        np.testing.assert_allclose(n.scores, r.scores, rtol=1e-12)


@given(seed=st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([-1, 2**64, 1.5, "1", None, True])),
       lap=st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([-1, 2**63, 2**64 - 1, 2**64, 2.0, None])),
       ids=st.one_of(st.lists(st.integers(-(2**63), 2**64 - 1), max_size=5),
                     st.integers(-(2**63), 2**63 - 1),
                     st.sampled_from([[1.5], ["a"], [2**64], [[1, 2]], np.arange(4, dtype=np.uint8),
                                      np.array([2**63], dtype=np.uint64), np.zeros((2, 2), np.int64)])))
def test_accept_parity_tie_key(seed, lap, ids):
    """Issue 15 item 3: a lap >= 2**63 (inside the documented range) was a native TypeError."""
    note(f"tie_key({seed!r}, {lap!r}, {ids!r})")
    (n_kind, n), (_, r) = _both("tie_key", (seed, lap, ids), {})
    if n_kind == "ok":
        np.testing.assert_array_equal(n, r)
