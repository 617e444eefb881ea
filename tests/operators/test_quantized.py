"""Reduced-precision prefilter: codes, exact rescoring, recall, input checks, numpy twins."""

from __future__ import annotations

import numpy as np
import pytest

import fieldrank
import fieldrank.reference as ref
from fieldrank import _core

from tests.helpers import unit_rows

KINDS = ("bf16", "int8")


@pytest.mark.parametrize("kind", KINDS)
def test_native_and_reference_codes_are_identical(rng, kind):
    E = unit_rows(rng, 500, 77)
    # A unit row with one dominant value and tiny others: its int8 scale differs from the rest.
    E[3] = 1e-4
    E[3, 5] = 1.0
    E[3] /= np.linalg.norm(E[3])
    native, numpy_twin = fieldrank.quantize(E, kind), ref.quantize(E, kind)
    assert native.kind == numpy_twin.kind == kind
    np.testing.assert_array_equal(native.codes, numpy_twin.codes)
    if kind == "int8":
        assert native.codes.dtype == np.int8
        np.testing.assert_array_equal(native.scale, numpy_twin.scale)
        np.testing.assert_array_equal(native.sums, numpy_twin.sums)
        np.testing.assert_allclose(native.dequantize(), E, atol=float(native.scale.max()) / 2 + 1e-7)
    else:
        assert native.codes.dtype == np.uint16
        np.testing.assert_allclose(native.dequantize(), E, rtol=2.0**-8)
    assert native.nbytes < E.nbytes


@pytest.mark.parametrize("kind", KINDS)
def test_quantize_rejects_rows_that_are_not_unit(rng, kind):
    """The quantized scan ranks by dot product, like the prefilter: both modules refuse alike."""
    E = unit_rows(rng, 50, 16)
    E[7] *= 3.0
    messages = []
    for module in (fieldrank, ref):
        with pytest.raises(ValueError, match=r"E rows must have unit L2 norm .* row 7 has norm 3\b") as info:
            module.quantize(E, kind)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("kind", KINDS)
def test_result_is_the_exact_prefilter(variant, rng, kind):
    E = unit_rows(rng, 3000, 96)
    Q = unit_rows(rng, 6, 96)
    QC = fieldrank.quantize(E, kind)
    subset = np.arange(1, 3000, 3)
    for kwargs in ({}, {"subset": subset}):
        for q in Q:
            got = fieldrank.prefilter_quantized(QC, E, q, 50, **kwargs)
            exact = fieldrank.prefilter(E, q, 50, **kwargs)
            np.testing.assert_array_equal(got.ids, exact.ids)
            np.testing.assert_array_equal(got.scores, exact.scores)
            twin = ref.prefilter_quantized(ref.quantize(E, kind), E, q, 50, **kwargs)
            np.testing.assert_array_equal(got.ids, twin.ids)
        batch = fieldrank.prefilter_quantized_batch(QC, E, Q, 50, n_threads=2, **kwargs)
        np.testing.assert_array_equal(batch.ids, fieldrank.prefilter_batch(E, Q, 50, **kwargs).ids)
        twin = ref.prefilter_quantized_batch(ref.quantize(E, kind), E, Q, 50, **kwargs)
        np.testing.assert_array_equal(batch.ids, twin.ids)


@pytest.mark.parametrize("kind", KINDS)
def test_recall_at_the_default_factor(rng, kind):
    E = unit_rows(rng, 40000, 128)
    Q = unit_rows(rng, 10, 128)
    QC = fieldrank.quantize(E, kind)
    recalls = [np.intersect1d(fieldrank.prefilter_quantized(QC, E, q, 150).ids, fieldrank.prefilter(E, q, 150).ids).size
               / 150 for q in Q]
    assert np.mean(recalls) >= 0.999


def test_p_larger_than_n_and_factor_one(rng):
    E = unit_rows(rng, 20, 16)
    q = unit_rows(rng, 1, 16)[0]
    QC = fieldrank.quantize(E, "int8")
    assert fieldrank.prefilter_quantized(QC, E, q, 50).ids.size == 20
    assert fieldrank.prefilter_quantized(QC, E, q, 5, rescore_factor=1).ids.size == 5


def test_input_checks(rng):
    E = unit_rows(rng, 100, 16)
    q = unit_rows(rng, 1, 16)[0]
    QC = fieldrank.quantize(E, "bf16")
    for module in (fieldrank, ref):
        with pytest.raises(ValueError, match="kind must be one of"):
            module.quantize(E, "fp8")
        with pytest.raises(TypeError, match="QuantizedCorpus"):
            module.prefilter_quantized(E, E, q)
        with pytest.raises(ValueError, match="shape"):
            module.prefilter_quantized(QC, E[:50], q)
        with pytest.raises(ValueError, match="different E"):
            module.prefilter_quantized(QC, unit_rows(rng, 100, 16), q)
        with pytest.raises(ValueError, match="rescore_factor"):
            module.prefilter_quantized(QC, E, q, rescore_factor=0)
        with pytest.raises(TypeError, match="float32"):
            module.quantize(E.astype(np.float64))
        bad = E.copy()
        bad[7, 2] = np.nan
        with pytest.raises(ValueError, match="finite"):
            module.quantize(bad, "int8")


def test_int8_rejects_very_wide_rows():
    E = np.ones((2, fieldrank.DEFAULTS["int8_max_dim"] + 1), dtype=np.float32)
    with pytest.raises(ValueError, match="columns"):
        fieldrank.quantize(E, "int8")
