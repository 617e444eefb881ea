"""Batch forms and threads (basic): every query is computed by one thread with the single-query code.

So a batch is bit-identical for any ``n_threads`` and equal, row by row, to the single form; a C++
exception thrown in a worker reaches Python as the same ``ValueError`` as on the calling thread.
(Stress and GIL tests live with the reliability suite.)
"""

from __future__ import annotations

import numpy as np
import pytest

import fieldrank
import fieldrank.reference
from fieldrank import _core

from tests.helpers import unit_rows

OPS = ("prefilter", "cfsr", "cfs", "mmr", "ring")
THREADS = (1, 2, 8)
B = 17  # more queries than threads, and not a multiple of any of them

PARAMS = {
    "prefilter": [{}, {"p": 7}],
    "cfsr": [{}, {"k": 5, "p": 40, "fista": True}, {"tol": 1e-3, "iters": 300}],
    "cfs": [{}, {"k": 5, "p": 40, "beta": 0.5}],
    "mmr": [{}, {"k": 5, "p": 40, "mu": 0.3}],
    "ring": [{}, {"k": 4, "laps": 5, "seed": 3}, {"k": 6, "ablation": True}],
}
CASES = [(op, i) for op in OPS for i in range(len(PARAMS[op]))]


@pytest.fixture
def data(rng):
    E = unit_rows(rng, 500, 48)
    E[[40, 41, 300]] = E[7]  # exact ties, so the tie rule is exercised under threads too
    Q = E[rng.integers(0, 500, size=B)] + 0.4 * unit_rows(rng, B, 48)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    Q[0] = E[7]
    return E, Q.astype(np.float32), np.sort(rng.permutation(500)[:230])


def _assert_same(a, b, what):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape, what
        np.testing.assert_array_equal(x, y, err_msg=what)


@pytest.mark.parametrize("subset", [False, True], ids=["corpus", "subset"])
@pytest.mark.parametrize(("op", "case"), CASES, ids=[f"{op}-{i}" for op, i in CASES])
def test_batch_is_identical_for_any_thread_count(data, op, case, subset):
    E, Q, rows = data
    params = dict(PARAMS[op][case], subset=rows if subset else None)
    batch = getattr(fieldrank, op + "_batch")
    first = batch(E, Q, n_threads=THREADS[0], **params)
    for n_threads in THREADS[1:] + (0, -1):
        _assert_same(batch(E, Q, n_threads=n_threads, **params), first, f"n_threads={n_threads}")
    # ...and equal to the single form, row by row, bit for bit.
    single = getattr(fieldrank, op)
    for b in range(B):
        _assert_same([array[b] for array in first], single(E, Q[b], **params), f"row {b}")


@pytest.mark.parametrize("op", OPS)
def test_reference_batch_ignores_n_threads(data, op):
    """The reference accepts n_threads (same signature) and computes the same rows whatever it is."""
    E, Q, _ = data
    batch = getattr(fieldrank.reference, op + "_batch")
    _assert_same(batch(E, Q[:4], n_threads=1), batch(E, Q[:4], n_threads=8), op)


def test_rrf_batch_is_identical_for_any_thread_count(rng):
    per_query = [[rng.choice(60, size=15, replace=False).astype(np.int64) for _ in range(3)] for _ in range(B)]
    weights = [1.0, 1.0, 3.0]
    first = _core.rrf_batch(per_query, weights, 10, 60.0, n_threads=1)
    for n_threads in THREADS[1:] + (0,):
        again = _core.rrf_batch(per_query, weights, 10, 60.0, n_threads=n_threads)
        for a, b in zip(again, first):
            np.testing.assert_array_equal(a.ids, b.ids)
            np.testing.assert_array_equal(a.scores, b.scores)
    for legs, fused in zip(per_query, first):
        single = _core.rrf(legs, weights, 10, 60.0)
        np.testing.assert_array_equal(fused.ids, single.ids)
        np.testing.assert_array_equal(fused.scores, single.scores)
    wrapped = fieldrank.rrf_batch(per_query, weights, 10)
    for a, b in zip(wrapped, first):
        np.testing.assert_array_equal(a.ids, b.ids)


@pytest.mark.parametrize("fault", ["nan", "zero"])
@pytest.mark.parametrize("op", OPS)
def test_worker_exception_reaches_python_as_value_error(data, op, fault):
    """The wrappers leave E's rows to the kernels, so a bad row is met inside a worker thread."""
    E, Q, _ = data
    E = E.copy()
    if fault == "nan":
        E[123, 5] = np.nan
        match = r"^E must be finite, got nan at row 123, column 5$"
    else:
        E[123] = 0.0
        match = r"^E rows must have a non-zero, finite norm .* row 123 has squared norm 0$"
    messages = set()
    for n_threads in THREADS:
        with pytest.raises(ValueError, match=match) as error:
            getattr(fieldrank, op + "_batch")(E, Q, n_threads=n_threads)
        messages.add(str(error.value))
    with pytest.raises(ValueError, match=match) as error:
        getattr(fieldrank, op)(E, Q[3])
    messages.add(str(error.value))
    with pytest.raises(ValueError, match=match) as error:
        getattr(fieldrank.reference, op + "_batch")(E, Q)
    messages.add(str(error.value))
    assert len(messages) == 1, messages
    # A failed batch leaves nothing behind: the same call on good rows works on every thread count.
    good, _, _ = data
    _assert_same(getattr(fieldrank, op + "_batch")(good, Q, n_threads=8),
                 getattr(fieldrank, op + "_batch")(good, Q, n_threads=1), "after a failure")


def test_hardware_threads():
    assert _core.hardware_threads(3) == 3
    assert _core.hardware_threads(0) >= 1
    assert _core.hardware_threads(-2) == _core.hardware_threads(0) == _core.hardware_threads()
