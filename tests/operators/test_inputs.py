"""Bad input: one test per case, for both modules, with the argument named in every message.

Every check runs through the ``fr`` fixture (native and reference) and then asserts that the
other module raises the same exception type with the same message for the same input
(``raises_same``), so the two can never drift apart. The native corpus forms check the rows
of ``E`` in C++ (inside the scoring pass); everything else is ``_validation.py`` in both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np
import pytest

import fieldrank
import fieldrank.reference
from fieldrank import _core, _kernels
from fieldrank import _validation as v

from tests.helpers import unit_rows

OPS = ("prefilter", "cfsr", "cfs", "mmr", "ring")
FORMS = ("single", "batch", "pool")
N, DIM = 12, 8


def other_module(fr):
    return fieldrank.reference if fr is fieldrank else fieldrank


def raises_same(fr, exc, match: str, call):
    """``call(fr)`` raises ``exc`` matching ``match``; ``call`` on the other module raises the same."""
    with pytest.raises(exc, match=match) as first:
        call(fr)
    with pytest.raises(Exception) as second:  # noqa: PT011 - compared exactly below
        call(other_module(fr))
    assert type(second.value) is type(first.value), (first.value, second.value)
    assert str(second.value) == str(first.value)
    return first.value


@dataclass(frozen=True)
class Inputs:
    E: np.ndarray
    q: np.ndarray
    Q: np.ndarray
    ids: np.ndarray
    C: np.ndarray
    sims: Optional[np.ndarray] = None
    subset: Optional[np.ndarray] = None


@pytest.fixture
def good(rng) -> Inputs:
    E = unit_rows(rng, N, DIM)
    return Inputs(E=E, q=unit_rows(rng, 1, DIM)[0], Q=unit_rows(rng, 3, DIM), ids=np.arange(100, 100 + N),
                  C=E.copy())


def run(fr, op: str, form: str, a: Inputs, **params):
    """Call ``op`` in ``form`` with the inputs ``a`` (sims/subset only where the form takes them)."""
    if form == "single":
        if a.subset is not None:
            params["subset"] = a.subset
        return getattr(fr, op)(a.E, a.q, **params)
    if form == "batch":
        if a.subset is not None:
            params["subset"] = a.subset
        return getattr(fr, op + "_batch")(a.E, a.Q, **params)
    if a.sims is not None:
        params["sims"] = a.sims
    return getattr(fr, op + "_pool")(a.ids, a.C, a.q, **params)


def names(form: str):
    """(corpus, query) argument names of a form."""
    return {"single": ("E", "q"), "batch": ("E", "Q"), "pool": ("C", "q")}[form]


OP_FORMS = [(op, form) for op in OPS for form in FORMS]
OP_FORM_IDS = [f"{op}-{form}" for op, form in OP_FORMS]


def _with(a: Inputs, name: str, value) -> Inputs:
    return replace(a, **{name: value})


def _array_args(op: str, form: str):
    corpus, query = names(form)
    args = [corpus, query]
    if form == "pool" and op != "prefilter":
        args.append("sims")
    return args


def _valid_for(a: Inputs, name: str) -> np.ndarray:
    """A valid value of the array argument ``name`` (sims: the cosines)."""
    return (a.C @ a.q).astype(np.float32) if name == "sims" else getattr(a, name)


# --------------------------------------------------------------------------- dtypes and types

BAD_DTYPES = [np.float64, np.float16, np.int32, np.int64, np.bool_, np.complex64, object]


@pytest.mark.parametrize("dtype", BAD_DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize(("op", "form"), OP_FORMS, ids=OP_FORM_IDS)
def test_non_float32_array_is_a_type_error(fr, good, op, form, dtype):
    for name in _array_args(op, form):
        bad = _valid_for(good, name).astype(dtype)
        message = raises_same(fr, TypeError, rf"^{name} must have dtype float32, got {np.dtype(dtype).name}",
                              lambda m: run(m, op, form, _with(good, name, bad)))
        assert f"{name}.astype(np.float32)" in str(message)  # says how to fix it


@pytest.mark.parametrize(("op", "form"), OP_FORMS, ids=OP_FORM_IDS)
def test_non_array_is_a_type_error(fr, good, op, form):
    corpus, _ = names(form)
    raises_same(fr, TypeError, rf"^{corpus} must be a float32 numpy array, got str",
                lambda m: run(m, op, form, _with(good, corpus, "not an array")))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, object], ids=["float32", "float64", "object"])
@pytest.mark.parametrize(("op", "form"), [(op, f) for op in OPS for f in ("single", "batch")])
def test_non_integer_subset_is_a_type_error(fr, good, op, form, dtype):
    bad = np.arange(5).astype(dtype)
    raises_same(fr, TypeError, rf"^subset must have an integer dtype, got {np.dtype(dtype).name}",
                lambda m: run(m, op, form, _with(good, "subset", bad)))


@pytest.mark.parametrize("op", OPS)
def test_non_integer_pool_ids_is_a_type_error(fr, good, op):
    raises_same(fr, TypeError, r"^ids must have an integer dtype, got float64",
                lambda m: run(m, op, "pool", _with(good, "ids", good.ids.astype(np.float64))))
    raises_same(fr, TypeError, r"^ids must be a 1-D integer numpy array, got str",
                lambda m: run(m, op, "pool", _with(good, "ids", "abc")))


# --------------------------------------------------------------------------- layouts and copies


def _f_order(x: np.ndarray) -> np.ndarray:
    return np.asfortranarray(x) if x.ndim == 2 else x


def _strided(x: np.ndarray) -> np.ndarray:
    """The same values as a non-contiguous view (every other element of the last axis)."""
    return np.repeat(x, 2, axis=-1)[..., ::2]


def _row_strided(x: np.ndarray) -> np.ndarray:
    return np.repeat(x, 2, axis=0)[::2]


@pytest.mark.parametrize("layout", [_f_order, _strided, _row_strided], ids=["F-order", "strided", "row-strided"])
@pytest.mark.parametrize(("op", "form"), OP_FORMS, ids=OP_FORM_IDS)
def test_f_order_and_strided_arrays_are_accepted(fr, good, op, form, layout):
    """The wrappers copy such arrays once to C order: same result as C order, bit for bit."""
    base = _with(good, "sims", _valid_for(good, "sims")) if form == "pool" and op != "prefilter" else good
    if form != "pool":
        base = _with(base, "subset", np.arange(N - 1, 1, -1))
    want = run(fr, op, form, base)
    args = _array_args(op, form) + (["ids"] if form == "pool" else ["subset"])
    for name in args:
        value = getattr(base, name)
        changed = layout(value)
        if changed.flags.c_contiguous:
            continue  # (a 1-D array has no F order of its own)
        got = run(fr, op, form, _with(base, name, changed))
        for x, y in zip(got, want):
            np.testing.assert_array_equal(x, y, err_msg=name)


def _core_calls(a: Inputs):
    """Every ``_core`` entry point with valid positional arguments, and which positions are arrays."""
    sims = (a.C @ a.q).astype(np.float32)
    subset = np.arange(N, dtype=np.int64)
    return {
        "prefilter": ((a.E, a.q, 3, subset), (0, 1, 3)),
        "prefilter_batch": ((a.E, a.Q, 3, subset), (0, 1, 3)),
        "prefilter_pool": ((a.ids, a.C, a.q, 3), (0, 1, 2)),
        "cfsr": ((a.E, a.q, 3, 6, 0.9, 0.005, 10, 0.0, False, subset), (0, 1, 9)),
        "cfsr_batch": ((a.E, a.Q, 3, 6, 0.9, 0.005, 10, 0.0, False, subset), (0, 1, 9)),
        "cfsr_pool": ((a.ids, a.C, a.q, 3, 0.9, 0.005, 10, 0.0, False, sims), (0, 1, 2, 9)),
        "cfs": ((a.E, a.q, 3, 6, 0.4, 0.2, 1e-6, subset), (0, 1, 7)),
        "cfs_batch": ((a.E, a.Q, 3, 6, 0.4, 0.2, 1e-6, subset), (0, 1, 7)),
        "cfs_pool": ((a.ids, a.C, a.q, 3, 0.4, 0.2, 1e-6, sims), (0, 1, 2, 7)),
        "mmr": ((a.E, a.q, 3, 6, 0.5, subset), (0, 1, 5)),
        "mmr_batch": ((a.E, a.Q, 3, 6, 0.5, subset), (0, 1, 5)),
        "mmr_pool": ((a.ids, a.C, a.q, 3, 0.5, sims), (0, 1, 2, 5)),
        "ring": ((a.E, a.q, 3, 0.3, 2, 0, False, subset), (0, 1, 7)),
        "ring_batch": ((a.E, a.Q, 3, 0.3, 2, 0, False, subset), (0, 1, 7)),
        "ring_pool": ((a.ids, a.C, a.q, 3, 0.3, 2, 0, False, sims), (0, 1, 2, 8)),
    }


CORE_NAMES = [f"{op}{suffix}" for op in OPS for suffix in ("", "_batch", "_pool")]


@pytest.mark.parametrize("name", CORE_NAMES)
def test_core_rejects_what_the_wrappers_convert(good, name):
    """``_core`` takes only C-ordered float32/int64 arrays (``.noconvert()``): no silent copy there."""
    args, array_positions = _core_calls(good)[name]
    function = getattr(_core, name)
    function(*args)  # valid as given
    for position in array_positions:
        value = args[position]
        wrong_dtype = value.astype(np.float64) if value.dtype == np.float32 else value.astype(np.int32)
        for bad in (_strided(value), _row_strided(value) if value.ndim == 2 else value[::-1], wrong_dtype,
                    _f_order(value) if value.ndim == 2 else value[::-1]):
            if bad.flags.c_contiguous and bad.dtype == value.dtype:
                continue  # a reversed 1-D view of a length-1 array, say
            changed = list(args)
            changed[position] = bad
            with pytest.raises(TypeError, match="incompatible function arguments"):
                function(*changed)


def test_validation_does_not_copy_valid_input(good):
    E, q, Q = good.E, good.q, good.Q
    assert v.corpus(E) is E
    assert v.query(q, DIM) is q
    assert v.queries(Q, DIM) is Q
    rows = E[2:9]  # a row slice is C-contiguous: a view, passed as is
    assert np.shares_memory(v.corpus(rows), E)
    ids = np.arange(5, dtype=np.int64)
    assert v.id_array(ids, "ids") is ids
    pool_ids, C, pool_q, sims = v.pool(good.ids, good.C, q, (good.C @ q).astype(np.float32))
    assert pool_ids is good.ids and C is good.C and pool_q is q
    # ...and copies, once, what _core would reject.
    F = np.asfortranarray(E)
    converted = v.corpus(F)
    assert converted.flags.c_contiguous and not np.shares_memory(converted, F)
    np.testing.assert_array_equal(converted, E)


@pytest.mark.parametrize(("op", "form"), OP_FORMS, ids=OP_FORM_IDS)
def test_native_wrappers_hand_the_callers_arrays_to_core(monkeypatch, good, op, form):
    """What reaches ``_core`` (through its one door, ``_kernels``) is the caller's own memory for valid
    input, a C-ordered copy otherwise."""
    name = op + {"single": "", "batch": "_batch", "pool": "_pool"}[form]
    original = getattr(_kernels, name)
    received = []

    def spy(*args):
        received.append(args)
        return original(*args)

    monkeypatch.setattr(_kernels, name, spy)
    corpus, query = names(form)
    run(fieldrank, op, form, good)
    sent = dict(zip((corpus, query), received[-1][1:3] if form == "pool" else received[-1][:2]))
    assert sent[corpus] is getattr(good, corpus) and sent[query] is getattr(good, query)
    run(fieldrank, op, form, _with(good, corpus, np.asfortranarray(getattr(good, corpus))))
    copied = received[-1][1] if form == "pool" else received[-1][0]
    assert copied.flags.c_contiguous and not np.shares_memory(copied, getattr(good, corpus))


# --------------------------------------------------------------------------- shapes


@pytest.mark.parametrize(("op", "form"), OP_FORMS, ids=OP_FORM_IDS)
def test_wrong_rank(fr, good, op, form):
    corpus, query = names(form)
    for bad in (good.E[0], good.E[None, :, :]):
        raises_same(fr, ValueError, rf"^{corpus} must be a 2-D array, got {bad.ndim}-D",
                    lambda m: run(m, op, form, _with(good, corpus, bad)))
    wrong = {"q": (np.ones((), np.float32), np.ones((2, DIM), np.float32)),
             "Q": (np.ones(DIM, np.float32), np.ones((1, 2, DIM), np.float32))}[query]
    rank = 1 if query == "q" else 2
    for bad in wrong:
        raises_same(fr, ValueError, rf"^{query} must be a {rank}-D array, got {bad.ndim}-D",
                    lambda m: run(m, op, form, _with(good, query, bad)))
    if form == "pool":
        raises_same(fr, ValueError, r"^ids must be a 1-D array, got 2-D",
                    lambda m: run(m, op, form, _with(good, "ids", good.ids[None, :])))
        if op != "prefilter":
            raises_same(fr, ValueError, r"^sims must be a 1-D array, got 2-D",
                        lambda m: run(m, op, form, _with(good, "sims", _valid_for(good, "sims")[None, :])))
    else:
        raises_same(fr, ValueError, r"^subset must be a 1-D array, got 2-D",
                    lambda m: run(m, op, form, _with(good, "subset", np.arange(4).reshape(2, 2))))


@pytest.mark.parametrize(("op", "form"), OP_FORMS, ids=OP_FORM_IDS)
def test_query_dim_must_match_corpus_dim(fr, good, op, form):
    corpus, query = names(form)
    if query == "q":
        bad = np.ones(DIM + 1, dtype=np.float32)
        match = rf"^q must have length {DIM} to match {corpus}\.shape\[1\], got length {DIM + 1}"
    else:
        bad = np.ones((2, DIM - 1), dtype=np.float32)
        match = rf"^Q must have {DIM} columns to match E\.shape\[1\], got shape \(2, {DIM - 1}\)"
    raises_same(fr, ValueError, match, lambda m: run(m, op, form, _with(good, query, bad)))


@pytest.mark.parametrize("op", OPS)
def test_pool_lengths_must_match(fr, good, op):
    raises_same(fr, ValueError, rf"^ids must have one id per row of C: expected length {N}, got {N - 1}",
                lambda m: run(m, op, "pool", _with(good, "ids", good.ids[:-1])))
    if op != "prefilter":
        raises_same(fr, ValueError, rf"^sims must have one value per row of C: expected length {N}, got {N + 1}",
                    lambda m: run(m, op, "pool", _with(good, "sims", np.ones(N + 1, dtype=np.float32))))


@pytest.mark.parametrize(("op", "form"), OP_FORMS, ids=OP_FORM_IDS)
def test_empty_corpus(fr, good, op, form):
    corpus, _ = names(form)
    empty = np.empty((0, DIM), dtype=np.float32)
    a = _with(_with(good, corpus, empty), "ids", np.empty(0, dtype=np.int64))
    raises_same(fr, ValueError, rf"^{corpus} must have at least one row, got shape \(0, {DIM}\)",
                lambda m: run(m, op, form, a))
    no_columns = np.empty((N, 0), dtype=np.float32)
    raises_same(fr, ValueError, rf"^{corpus} must have at least one column, got shape \({N}, 0\)",
                lambda m: run(m, op, form, _with(good, corpus, no_columns)))


# --------------------------------------------------------------------------- values

NON_FINITE = [np.nan, np.inf, -np.inf]


@pytest.mark.parametrize("value", NON_FINITE, ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize(("op", "form"), OP_FORMS, ids=OP_FORM_IDS)
def test_non_finite_corpus(fr, good, op, form, value):
    """NaN/inf in a row of E (checked in C++ by the native corpus forms) or of C."""
    corpus, _ = names(form)
    bad = getattr(good, corpus).copy()
    bad[5, 2] = value
    raises_same(fr, ValueError, rf"^{corpus} must be finite, got {value} at row 5, column 2",
                lambda m: run(m, op, form, _with(good, corpus, bad)))


@pytest.mark.parametrize("value", NON_FINITE, ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize(("op", "form"), OP_FORMS, ids=OP_FORM_IDS)
def test_non_finite_query(fr, good, op, form, value):
    _, query = names(form)
    bad = getattr(good, query).copy()
    if query == "q":
        bad[3] = value
        match = rf"^q must be finite, got {value} at position 3"
    else:
        bad[1, 3] = value
        match = rf"^Q must be finite, got {value} at row 1, column 3"
    raises_same(fr, ValueError, match, lambda m: run(m, op, form, _with(good, query, bad)))


@pytest.mark.parametrize("value", NON_FINITE, ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("op", ["cfsr", "cfs", "mmr", "ring"])
def test_non_finite_sims(fr, good, op, value):
    sims = _valid_for(good, "sims").copy()
    sims[4] = value
    raises_same(fr, ValueError, rf"^sims must be finite, got {value} at position 4",
                lambda m: run(m, op, "pool", _with(good, "sims", sims)))


@pytest.mark.parametrize("row_value", [0.0, 1e-13, 1e20], ids=["zero", "tiny", "overflowing"])
@pytest.mark.parametrize(("op", "form"), OP_FORMS, ids=OP_FORM_IDS)
def test_zero_norm_corpus_row(fr, good, op, form, row_value):
    """A zero (or below min_row_norm_sq, or float32-overflowing) row; the squared norm is printed alike."""
    corpus, _ = names(form)
    bad = getattr(good, corpus).copy()
    bad[4] = row_value
    error = raises_same(fr, ValueError, rf"^{corpus} rows must have a non-zero, finite norm .* row 4 has squared norm",
                        lambda m: run(m, op, form, _with(good, corpus, bad)))
    assert str(error).endswith(f"{float(np.float32(row_value)) ** 2 * DIM:g}")


@pytest.mark.parametrize(("op", "form"), OP_FORMS, ids=OP_FORM_IDS)
def test_zero_query(fr, good, op, form):
    _, query = names(form)
    bad = np.zeros_like(getattr(good, query))
    if query == "Q":
        bad = good.Q.copy()
        bad[2] = 0.0
    where = "" if query == "q" else r" \(row 2\)"
    raises_same(fr, ValueError, rf"^{query} must have a non-zero norm, got the zero vector{where}$",
                lambda m: run(m, op, form, _with(good, query, bad)))


@pytest.mark.parametrize(("op", "form"), [(op, f) for op in OPS for f in ("single", "batch")])
def test_first_bad_row_is_reported(fr, good, op, form):
    """Several bad rows: both modules name the first one met, whatever its fault (here a zero row before a NaN)."""
    E = good.E.copy()
    E[3] = 0.0
    E[7, 1] = np.nan
    raises_same(fr, ValueError, r"^E rows must have a non-zero, finite norm .* row 3 has squared norm 0$",
                lambda m: run(m, op, form, _with(good, "E", E)))
    # With a subset, rows are met in the subset's order and named by their row in E.
    raises_same(fr, ValueError, r"^E must be finite, got nan at row 7, column 1$",
                lambda m: run(m, op, form, _with(_with(good, "E", E), "subset", np.array([9, 7, 3]))))


@pytest.mark.parametrize(("op", "form"), [(op, f) for op in OPS for f in ("single", "batch")])
def test_rows_outside_the_subset_are_not_read(fr, good, op, form):
    """The subset restricts what is read: a bad row outside it raises in neither module."""
    E = good.E.copy()
    E[0] = np.nan
    subset = np.arange(1, N)
    got = run(fr, op, form, _with(_with(good, "E", E), "subset", subset))
    other = run(other_module(fr), op, form, _with(_with(good, "E", E), "subset", subset))
    assert not np.isin(0, got.ids) and np.array_equal(got.ids, other.ids)


@pytest.mark.parametrize("op", OPS)
def test_empty_batch_reads_no_row(fr, good, op):
    E = good.E.copy()
    E[2] = np.nan
    empty = np.empty((0, DIM), dtype=np.float32)
    got = run(fr, op, "batch", _with(_with(good, "E", E), "Q", empty))
    assert got.ids.shape[0] == 0 and got.ids.dtype == np.int64
    assert run(other_module(fr), op, "batch", _with(_with(good, "E", E), "Q", empty)).ids.shape == got.ids.shape


# --------------------------------------------------------------------------- parameters

INT_PARAMS = {
    "prefilter": ["p"],
    "cfsr": ["k", "p", "iters"],
    "cfs": ["k", "p"],
    "mmr": ["k", "p"],
    "ring": ["k", "laps"],
}
INT_CASES = [(op, form, name) for op in OPS for form in FORMS for name in INT_PARAMS[op]
             if not (form == "pool" and name == "p" and op != "prefilter")]


@pytest.mark.parametrize("value", [0, -1, -(2**40)])
@pytest.mark.parametrize(("op", "form", "name"), INT_CASES, ids=[f"{o}-{f}-{n}" for o, f, n in INT_CASES])
def test_counts_must_be_positive(fr, good, op, form, name, value):
    raises_same(fr, ValueError, rf"^{name} must be a positive integer, got {value}$",
                lambda m: run(m, op, form, good, **{name: value}))


@pytest.mark.parametrize("value", [2.0, 2.5, "3", None, True], ids=["float", "fraction", "str", "None", "bool"])
@pytest.mark.parametrize(("op", "form", "name"), INT_CASES, ids=[f"{o}-{f}-{n}" for o, f, n in INT_CASES])
def test_counts_must_be_ints(fr, good, op, form, name, value):
    raises_same(fr, TypeError, rf"^{name} must be an int, got {type(value).__name__}$",
                lambda m: run(m, op, form, good, **{name: value}))


@pytest.mark.parametrize(("op", "form", "name"), INT_CASES, ids=[f"{o}-{f}-{n}" for o, f, n in INT_CASES])
def test_numpy_integers_are_ints(fr, good, op, form, name):
    run(fr, op, form, good, **{name: np.int64(3)})
    run(fr, op, form, good, **{name: np.uint8(3)})


REAL_CASES = [
    # (op, parameter, bad values, message after "<name> must ")
    ("cfsr", "w", [-0.1, 1.1, np.nan, np.inf], r"lie in \[0, 1\]"),
    ("cfsr", "lam", [-1e-3, -np.inf, np.inf, np.nan], r"be a finite number >= 0"),
    ("cfsr", "tol", [-1e-9, np.inf, np.nan], r"be a finite number >= 0"),
    ("cfs", "sigma", [0.0, -0.4, np.inf, np.nan], r"be a finite number > 0"),
    ("cfs", "beta", [-0.2, np.inf, np.nan], r"be a finite number >= 0"),
    ("cfs", "eps", [0.0, -1e-6, np.nan], r"be a finite number > 0"),
    ("mmr", "mu", [-0.5, 1.5, np.nan], r"lie in \[0, 1\]"),
    ("ring", "alpha", [-1e-9, 1.0 + 1e-9, np.nan], r"lie in \[0, 1\]"),
]
REAL_GRID = [(op, form, name, bad, msg) for op, name, bads, msg in REAL_CASES for form in FORMS for bad in bads]


@pytest.mark.parametrize(("op", "form", "name", "bad", "msg"), REAL_GRID,
                         ids=[f"{o}-{f}-{n}={b}" for o, f, n, b, _ in REAL_GRID])
def test_real_parameters_out_of_range(fr, good, op, form, name, bad, msg):
    raises_same(fr, ValueError, rf"^{name} must {msg}, got {re.escape(str(bad))}$",
                lambda m: run(m, op, form, good, **{name: bad}))


@pytest.mark.parametrize(("op", "name"), [(op, name) for op, name, _, _ in REAL_CASES])
@pytest.mark.parametrize("form", FORMS)
def test_real_parameters_must_be_real(fr, good, op, name, form):
    for bad in ("0.5", None, 1j, True):
        raises_same(fr, TypeError, rf"^{name} must be a real number, got {type(bad).__name__}$",
                    lambda m: run(m, op, form, good, **{name: bad}))


@pytest.mark.parametrize("form", FORMS)
def test_flags_must_be_bools(fr, good, form):
    for op, name in (("cfsr", "fista"), ("ring", "ablation")):
        for bad in (1, "yes", None):
            raises_same(fr, TypeError, rf"^{name} must be a bool, got {type(bad).__name__}$",
                        lambda m: run(m, op, form, good, **{name: bad}))
        run(fr, op, form, good, **{name: np.bool_(True)})


@pytest.mark.parametrize("form", FORMS)
def test_ring_seed(fr, good, form):
    raises_same(fr, ValueError, r"^seed must be an integer >= 0, got -1$",
                lambda m: run(m, "ring", form, good, seed=-1))
    raises_same(fr, TypeError, r"^seed must be an int, got float$", lambda m: run(m, "ring", form, good, seed=1.0))
    raises_same(fr, ValueError, r"^seed must be an integer below 2\*\*64 \(a uint64\), got 18446744073709551616$",
                lambda m: run(m, "ring", form, good, seed=2**64))
    run(fr, "ring", form, good, seed=2**64 - 1)


@pytest.mark.parametrize("op", OPS)
def test_n_threads_must_be_an_int(fr, good, op):
    raises_same(fr, TypeError, r"^n_threads must be an int \(0 or less: all cores\), got float$",
                lambda m: run(m, op, "batch", good, n_threads=2.0))
    run(fr, op, "batch", good, n_threads=-3)  # 0 or less: all cores


# --------------------------------------------------------------------------- pools and subsets


@pytest.mark.parametrize("op", OPS)
def test_duplicate_pool_ids(fr, good, op):
    ids = good.ids.copy()
    ids[7] = ids[2]
    raises_same(fr, ValueError, rf"^ids must be unique within a pool, got {ids[2]} more than once$",
                lambda m: run(m, op, "pool", _with(good, "ids", ids)))


SUBSET_CASES = [
    (np.array([0, 3, N]), rf"^subset ids must lie in \[0, {N}\), got ids from 0 to {N}$"),
    (np.array([-1, 3]), rf"^subset ids must lie in \[0, {N}\), got ids from -1 to 3$"),
    (np.array([4, 2, 4]), r"^subset ids must be unique, got 4 more than once$"),
    (np.array([], dtype=np.int64), r"^subset must hold at least one id, got an empty array$"),
]


@pytest.mark.parametrize(("subset", "match"), SUBSET_CASES, ids=["too-high", "negative", "repeated", "empty"])
@pytest.mark.parametrize(("op", "form"), [(op, f) for op in OPS for f in ("single", "batch")])
def test_bad_subset(fr, good, op, form, subset, match):
    raises_same(fr, ValueError, match, lambda m: run(m, op, form, _with(good, "subset", subset)))


@pytest.mark.parametrize(("op", "form"), OP_FORMS, ids=OP_FORM_IDS)
def test_k_above_n_is_not_an_error(fr, good, op, form):
    size = "p" if op == "prefilter" else "k"
    result = run(fr, op, form, good, **{size: 10 * N})
    m = result.ids.shape[-1]
    assert m == N
    if form == "batch":
        assert result.ids.shape == (good.Q.shape[0], N)


# --------------------------------------------------------------------------- RRF

LEGS = [np.array([3, 1, 2]), np.array([2, 5])]


@pytest.mark.parametrize("batch", [False, True], ids=["rrf", "rrf_batch"])
def test_rrf_bad_weights(fr, batch):
    def call(m, weights):
        return m.rrf_batch([LEGS, LEGS], weights, 5) if batch else m.rrf(LEGS, weights, 5)

    raises_same(fr, ValueError, r"^weights must be finite and >= 0, got -1\.0 at position 1$",
                lambda m: call(m, [1.0, -1.0]))
    raises_same(fr, ValueError, r"^weights must be finite and >= 0, got nan at position 0$",
                lambda m: call(m, [np.nan, 1.0]))
    raises_same(fr, ValueError, r"^weights must have one weight per ranking: expected length 2, got 3$",
                lambda m: call(m, [1.0, 1.0, 1.0]))
    raises_same(fr, ValueError, r"^weights must have one weight per ranking: expected length 2, got 1$",
                lambda m: call(m, np.ones(1)))
    raises_same(fr, TypeError, r"^weights must be real numbers, got dtype <U1$", lambda m: call(m, ["a", "b"]))


@pytest.mark.parametrize("batch", [False, True], ids=["rrf", "rrf_batch"])
def test_rrf_bad_rankings(fr, batch):
    def call(m, legs, **kwargs):
        return m.rrf_batch([LEGS, legs], None, **kwargs) if batch else m.rrf(legs, None, **kwargs)

    raises_same(fr, ValueError, r"^rankings\[1\] must not repeat an id, got 5 twice$",
                lambda m: call(m, [LEGS[0], np.array([5, 4, 5])]))
    raises_same(fr, TypeError, r"^rankings\[0\] must have an integer dtype, got float64$",
                lambda m: call(m, [np.array([1.0, 2.0])]))
    raises_same(fr, ValueError, r"^rankings\[0\] must be a 1-D array, got 2-D",
                lambda m: call(m, [np.array([[1, 2]])]))
    raises_same(fr, ValueError, r"^k must be a positive integer, got 0$", lambda m: call(m, LEGS, k=0))
    raises_same(fr, TypeError, r"^k must be an int, got float$", lambda m: call(m, LEGS, k=3.0))
    raises_same(fr, ValueError, r"^k0 must be a finite number >= 0, got -1$", lambda m: call(m, LEGS, k0=-1))
    raises_same(fr, TypeError, r"^rankings must be a list", lambda m: m.rrf(np.array([[1, 2]]), None))
    raises_same(fr, TypeError, r"^rankings must be a list", lambda m: m.rrf_batch(np.array([[[1, 2]]]), None))


def test_rrf_k_above_candidates_is_not_an_error(fr):
    fused = fr.rrf(LEGS, None, 100)
    assert sorted(fused.ids.tolist()) == [1, 2, 3, 5]


# --------------------------------------------------------------------------- unit-norm rows and subset forms

CORPUS_FORMS = [(op, f) for op in OPS for f in ("single", "batch")]
CORPUS_FORM_IDS = [f"{op}-{form}" for op, form in CORPUS_FORMS]


@pytest.mark.parametrize("scale", [0.2, 0.99, 1.01, 5.0])
@pytest.mark.parametrize(("op", "form"), CORPUS_FORMS, ids=CORPUS_FORM_IDS)
def test_unnormalised_corpus_row_is_refused(fr, good, op, form, scale):
    """Dot product is the cosine only for unit rows: a scaled row raises, naming the row and its norm."""
    E = good.E.copy()
    E[5] *= scale
    error = raises_same(fr, ValueError, r"^E rows must have unit L2 norm \(\|norm - 1\| <= 0\.001.* row 5 has norm ",
                        lambda m: run(m, op, form, _with(good, "E", E)))
    assert f"row 5 has norm {scale:g}." in str(error)
    assert "np.linalg.norm(E, axis=1, keepdims=True)" in str(error)  # says how to fix it
    # Read through a subset too, named by its row in E; outside the subset it is never read.
    raises_same(fr, ValueError, r"row 5 has norm", lambda m: run(m, op, form, _with(_with(good, "E", E), "subset",
                                                                                       np.array([2, 5, 9]))))
    run(fr, op, form, _with(_with(good, "E", E), "subset", np.array([2, 6, 9])))


@pytest.mark.parametrize(("op", "form"), CORPUS_FORMS, ids=CORPUS_FORM_IDS)
def test_rows_within_the_unit_norm_tolerance_are_accepted(fr, good, op, form):
    atol = fieldrank.DEFAULTS["unit_norm_atol"]
    E = good.E.copy()
    E[5] *= 1.0 + atol / 2
    E[6] *= 1.0 - atol / 2
    run(fr, op, form, _with(good, "E", E))


def test_quantized_forms_refuse_unnormalised_rows(fr, good):
    """quantize refuses such rows (test_quantized.py); an int8 copy of the unit rows also matches a
    rescaled E (per-row scales), so the exact rescoring is what must catch the scaled row."""
    QC = fieldrank.quantize(good.E, "int8")
    E = good.E.copy()
    E[np.argmax(good.E @ good.q)] *= 2.0  # a candidate row: the exact rescoring reads it
    for call in (lambda m: m.prefilter_quantized(QC, E, good.q, 3),
                 lambda m: m.prefilter_quantized_batch(QC, E, good.Q[:1] * 0 + good.q, 3)):
        raises_same(fr, ValueError, r"^E rows must have unit L2 norm", call)


def test_pool_forms_take_rows_as_given(fr, good):
    """A caller's pool is scored as given (finite, non-zero rows), so scaled rows are accepted."""
    C = good.C * 3.0
    got = fr.prefilter_pool(good.ids, C, good.q, 3)
    np.testing.assert_allclose(got.scores, np.sort(C @ good.q)[::-1][:3], rtol=1e-5)


@pytest.mark.parametrize(("op", "form"), CORPUS_FORMS, ids=CORPUS_FORM_IDS)
def test_boolean_mask_equals_its_ids(fr, good, op, form):
    """One subset policy for operators and retriever: a boolean mask of shape (N,) means its True rows."""
    mask = np.zeros(N, dtype=bool)
    mask[[1, 4, 7, 8, 10]] = True
    by_mask = run(fr, op, form, _with(good, "subset", mask))
    by_ids = run(fr, op, form, _with(good, "subset", np.flatnonzero(mask)))
    np.testing.assert_array_equal(by_mask.ids, by_ids.ids)
    np.testing.assert_array_equal(by_mask.scores, by_ids.scores)
    raises_same(fr, ValueError, rf"^subset as a boolean mask must have shape \({N},\), got \(3,\)$",
                lambda m: run(m, op, form, _with(good, "subset", np.ones(3, dtype=bool))))


@pytest.mark.parametrize("empty", [[], (), np.array([]), np.array([], dtype=np.int64)],
                         ids=["list", "tuple", "float-array", "int-array"])
@pytest.mark.parametrize(("op", "form"), CORPUS_FORMS, ids=CORPUS_FORM_IDS)
def test_empty_subset_is_refused_clearly(fr, good, op, form, empty):
    raises_same(fr, ValueError, r"^subset must hold at least one id, got an empty array$",
                lambda m: run(m, op, form, _with(good, "subset", empty)))
    raises_same(fr, ValueError, r"^subset as a boolean mask selects no rows",
                lambda m: run(m, op, form, _with(good, "subset", np.zeros(N, dtype=bool))))
