"""SIMD kernel variants: dispatch, parity of every variant with the portable one and the
reference, bit-identical scores for identical rows, batch/thread determinism per variant."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import fieldrank
import fieldrank.reference as ref
from fieldrank import _core

from tests.helpers import SUPPORTED_KERNEL_VARIANTS as SUPPORTED
from tests.helpers import ORDER_GAP, SCORE_RTOL, unit_rows



def assert_parity(got, want, *, rtol=SCORE_RTOL, gap=ORDER_GAP):
    """docs/spec.md §0: scores within rtol; identical order wherever consecutive scores differ by more than gap.

    Groups of reference scores closer than ``gap`` may come in any order; every group but the
    last (which may be cut by k) must hold the same ids.
    """
    got_ids, got_scores = np.asarray(got.ids), np.asarray(got.scores, dtype=np.float64)
    want_ids, want_scores = np.asarray(want.ids), np.asarray(want.scores, dtype=np.float64)
    assert got_ids.shape == want_ids.shape
    np.testing.assert_allclose(got_scores, want_scores, rtol=rtol, atol=1e-6)
    if want_ids.size == 0:
        return
    breaks = np.flatnonzero(np.abs(np.diff(want_scores)) > gap) + 1
    bounds = [0, *breaks.tolist(), want_ids.size]
    for start, stop in zip(bounds[:-2], bounds[1:-1]):
        assert set(got_ids[start:stop].tolist()) == set(want_ids[start:stop].tolist()), (start, stop)


def test_dispatch_reports_variants():
    compiled = list(_core.compiled_kernel_variants())
    assert compiled[0] == "portable"
    assert set(SUPPORTED) <= set(compiled)
    assert _core.kernel_variant() in SUPPORTED
    info = fieldrank.build_info()
    for key in ("compiler", "cxx_flags", "kernel_variant", "variant_flags", "cpu_features"):
        assert key in info, key
    assert info["kernel_variant"] == _core.kernel_variant()
    assert "-march=native" not in info["cxx_flags"]
    assert [line.split(":")[0] for line in info["variant_flags"]] == compiled


def test_default_variant_is_the_best_supported():
    if os.environ.get("FIELDRANK_KERNEL"):
        pytest.skip("FIELDRANK_KERNEL overrides the default")
    code = "import fieldrank._core as c; print(c.kernel_variant())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == SUPPORTED[-1]


def test_set_kernel_variant_rejects_unknown_names():
    with pytest.raises(ValueError, match="kernel variant must be one of"):
        _core.set_kernel_variant("sse9")
    assert _core.kernel_variant() in SUPPORTED


@pytest.mark.parametrize("name", ["portable", SUPPORTED[-1]])
def test_environment_variable_selects_the_variant(name):
    env = dict(os.environ, FIELDRANK_KERNEL=name)
    code = "import fieldrank; print(fieldrank.build_info()['kernel_variant'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == name


def test_environment_variable_with_a_bad_name_fails_the_import():
    env = dict(os.environ, FIELDRANK_KERNEL="no-such-variant")
    out = subprocess.run([sys.executable, "-c", "import fieldrank"], capture_output=True, text=True, env=env)
    assert out.returncode != 0
    assert "kernel variant must be one of" in out.stderr


SHAPES = [(1, 3), (3, 5), (97, 17), (300, 64), (257, 384), (1000, 100)]


@pytest.mark.parametrize(("n", "d"), SHAPES)
def test_every_variant_matches_portable_and_reference(variant, rng, n, d):
    E = unit_rows(rng, n, d)
    q = unit_rows(rng, 1, d)[0]
    p = min(n, 60)
    calls = {
        "prefilter": lambda m: m.prefilter(E, q, p),
        "cfsr": lambda m: m.cfsr(E, q, 10, p=p),
        "cfs": lambda m: m.cfs(E, q, 10, p=p),
        "mmr": lambda m: m.mmr(E, q, 10, p=p),
        "ring": lambda m: m.ring(E, q, 5),
        "prefilter_pool": lambda m: m.prefilter_pool(np.arange(n) * 3, E, q, p),
        "cfsr_pool": lambda m: m.cfsr_pool(np.arange(min(n, 160)), E[:160], q, 10),
    }
    native = {name: call(fieldrank) for name, call in calls.items()}
    _core.set_kernel_variant("portable")
    portable = {name: call(fieldrank) for name, call in calls.items()}
    _core.set_kernel_variant(variant)
    for name, call in calls.items():
        assert_parity(native[name], portable[name])
        assert_parity(native[name], call(ref))


def test_cfsr_parity_on_hard_spectra(variant, rng):
    """λ_max by Lanczos stays accurate where the top of the spectrum is clustered."""
    cases = {
        "uncorrelated pool": unit_rows(rng, 150, 384),
        "near duplicates": np.repeat(unit_rows(rng, 30, 64), 5, axis=0) + 1e-3 * rng.standard_normal((150, 64)),
        "two clusters": np.vstack([unit_rows(rng, 1, 32) + 0.05 * rng.standard_normal((75, 32)),
                                   unit_rows(rng, 1, 32) + 0.05 * rng.standard_normal((75, 32))]),
    }
    for name, C in cases.items():
        C = (C / np.linalg.norm(C, axis=1, keepdims=True)).astype(np.float32)
        q = unit_rows(rng, 1, C.shape[1])[0]
        ids = np.arange(C.shape[0])
        got = fieldrank.cfsr_pool(ids, C, q, 50)
        want = ref.cfsr_pool(ids, C, q, 50)
        assert_parity(got, want)
        np.testing.assert_allclose(got.coef, want.coef, rtol=1e-3, atol=1e-6, err_msg=name)


def test_identical_rows_score_bit_identically(variant, rng):
    d = 37  # a tail of d mod 16 elements
    E = unit_rows(rng, 203, d)
    for position in (1, 8, 9, 100, 130, 202):  # inside tiles, at tile edges, in the ragged end
        E[position] = E[0]
    q = unit_rows(rng, 1, d)[0]
    result = fieldrank.prefilter(E, q, 203)
    scores = dict(zip(result.ids.tolist(), result.scores.tolist()))
    assert len({scores[i] for i in (0, 1, 8, 9, 100, 130, 202)}) == 1
    ids = [0, 1, 8, 9, 100, 130, 202]
    order = [i for i in result.ids.tolist() if i in ids]
    assert order == sorted(ids)  # exact ties -> lower id first
    rec = fieldrank.cfsr(E, E[0].copy(), 203, p=203)
    coef = dict(zip(rec.ids.tolist(), rec.coef.tolist()))
    assert len({coef[i] for i in ids}) == 1


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_batches_are_identical_for_any_thread_count_and_equal_the_single_form(variant, rng, n_threads):
    E = unit_rows(rng, 20000, 48)
    Q = unit_rows(rng, 19, 48)
    subset = np.arange(3, 20000, 2)
    for kwargs in ({}, {"subset": subset}):
        batch = fieldrank.prefilter_batch(E, Q, 40, n_threads=n_threads, **kwargs)
        one = fieldrank.prefilter_batch(E, Q, 40, n_threads=1, **kwargs)
        np.testing.assert_array_equal(batch.ids, one.ids)
        np.testing.assert_array_equal(batch.scores, one.scores)
        for b in (0, 7, 18):
            single = fieldrank.prefilter(E, Q[b], 40, **kwargs)
            np.testing.assert_array_equal(batch.ids[b], single.ids)
            np.testing.assert_array_equal(batch.scores[b], single.scores)
        rec = fieldrank.cfsr_batch(E, Q, n_threads=n_threads, **kwargs)
        single = fieldrank.cfsr(E, Q[5], **kwargs)
        np.testing.assert_array_equal(rec.ids[5], single.ids)
        np.testing.assert_array_equal(rec.coef[5], single.coef)
        for name in ("cfs_batch", "mmr_batch", "ring_batch"):
            got = getattr(fieldrank, name)(E, Q, n_threads=n_threads, **kwargs)
            want = getattr(fieldrank, name)(E, Q, n_threads=1, **kwargs)
            np.testing.assert_array_equal(got.ids, want.ids)
            np.testing.assert_array_equal(got.scores, want.scores)


@pytest.mark.parametrize("bad", ["zero", "tiny", "nan", "inf"])
def test_scans_reject_bad_rows(variant, rng, bad):
    E = unit_rows(rng, 600, 40)
    value = {"zero": 0.0, "tiny": 1e-14, "nan": np.nan, "inf": np.inf}[bad]
    E[517] = 0.0
    E[517, 3 if bad in ("nan", "inf") else slice(None)] = value
    q = unit_rows(rng, 1, 40)[0]
    for call in (lambda: _core.prefilter(E, q, 10), lambda: _core.prefilter_batch(E, np.stack([q, q]), 10, None, 2),
                 lambda: _core.cfsr(E, q, 5, 10, 0.9, 0.005, 80, 0.0, False)):
        with pytest.raises(ValueError, match="row 517"):
            call()


def test_rows_orthogonal_to_the_query_are_fine(variant):
    E = np.eye(40, dtype=np.float32)
    q = np.zeros(40, dtype=np.float32)
    q[0] = 1.0
    result = fieldrank.prefilter(E, q, 3)
    assert result.ids.tolist() == [0, 1, 2]


def test_cfsr_when_lanczos_breaks_down(variant, rng):
    """{c, -c}: the start vector's Krylov space misses λ_max = 2; the step must still be 1/(2 + λ)."""
    x = unit_rows(rng, 1, 16)[0]
    C = np.stack([x, -x, x])
    ids = np.arange(3)
    got, want = fieldrank.cfsr_pool(ids, C, x, 3), ref.cfsr_pool(ids, C, x, 3)
    assert_parity(got, want)
    np.testing.assert_allclose(got.coef, want.coef, rtol=1e-4, atol=1e-7)


def test_cfs_duplicates_tie_by_id_wherever_they_sit(variant, rng):
    E = unit_rows(rng, 150, 40)
    for position in (1, 145, 149):  # inside a 16-lane block and in the last, partial one
        E[position] = E[0]
    result = fieldrank.cfs_pool(np.arange(150), E, E[0].copy(), 150, beta=0.0)
    scores = dict(zip(result.ids.tolist(), result.scores.tolist()))
    assert len({scores[i] for i in (0, 1, 145, 149)}) == 1
    assert result.ids[:4].tolist() == [0, 1, 145, 149]
