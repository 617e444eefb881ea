"""The fuzz's strategies and property, shared by the layer fuzz files
(``tests/operators/test_fuzz_operators.py``, ``tests/retriever/test_fuzz_retriever.py``,
``tests/memory/test_fuzz_memory.py``), the regressions it found (``tests/test_fixed_regressions.py``)
and the accept/refuse parity test (``tests/operators/test_acceptance_parity.py``).

Property-based fuzzing of every public operator entry point, native and reference.

Each test draws a whole call (shapes 0-300 x 1-97, dtypes, memory layouts, values with NaN,
±inf, denormals, 1e30, all-equal and duplicate rows, parameters at and past their bounds and
of the wrong type) and checks the one property every entry point promises:

* the call returns a *valid* result: the right length (batch: the right shape), ids int64,
  unique and drawn from the candidates (rows of ``E``, the ``subset``, the caller's pool ids,
  the ids of the RRF legs), scores finite and ordered as the operator promises (tie rule for
  prefilter, CFS-R, CFS and RRF; non-increasing for Ring; MMR's pick-time scores are not
  promised monotone, see ``mmr.hpp``), CFS-R coefficients finite and >= 0; a batch row equals
  the single call on that query; the caller's arrays are not modified;
* or it raises ``ValueError``/``TypeError`` with a message;
* never anything else: no crash, no hang, no other exception, no warning (pytest turns
  warnings into errors here).

Profiles (registered in ``conftest.py``): ``ci`` (default, derandomized, bounded so this file
stays under a minute) and ``long`` (``--hypothesis-profile=long``, 20,000 examples per test);
see ``docs/reliability.md``.

``_PARAM_LIMITS`` says which accepted inputs are drawn; the ``test_fixed_*`` cases in
``tests/test_fixed_regressions.py`` pin the bugs the fuzz found.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("hypothesis")
from hypothesis import event, given, note  # noqa: E402
from hypothesis.control import currently_in_test_context  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import fieldrank  # noqa: E402
import fieldrank.reference  # noqa: E402

MODULES = {"native": fieldrank, "reference": fieldrank.reference}
DEFAULT_LAM = fieldrank.DEFAULTS["lam"]
ALLOWED_ERRORS = (ValueError, TypeError)

# ----------------------------------------------------------------------------- value builders

NAN, INF = float("nan"), float("inf")
# Injected into rows: every large value here makes the row's float32 squared norm overflow, so
# the row must be rejected. Queries are rejected the same way (|q|^2 past float32); caller sims
# may be any finite float32.
SPECIAL_VALUES = (NAN, INF, -INF, 0.0, -0.0, 1e30, -1e30, 1e-40, 1e-45, 3.4e38, -3.4e38, 1e-20)
SPECIAL_QUERY_VALUES = (NAN, INF, -INF, 0.0, -0.0, 1e-40, 1e-45, 1e-20, 1e18, -1e18, 1.9e19, 1e30, -1e30, 3.4e38)
MATRIX_LAYOUTS = ("C", "C", "C", "F", "strided_rows", "strided_columns", "reversed", "readonly")
VECTOR_LAYOUTS = ("C", "C", "C", "strided", "reversed", "readonly")


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    X = rng.standard_normal((n, d))
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (X / norms).astype(np.float32)


def _rows(kind: str, rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    if kind == "duplicates":
        distinct = _unit(rng, int(rng.integers(1, 4)), d)
        return distinct[rng.integers(0, distinct.shape[0], n)]
    if kind == "all_equal":
        return np.repeat(_unit(rng, 1, d), n, axis=0)
    if kind == "onehot":
        X = np.zeros((n, d), np.float32)
        X[np.arange(n), np.arange(n) % d] = 1.0
        return X
    X = _unit(rng, n, d)
    if kind == "scaled":  # non-unit but moderate norms
        X *= (10.0 ** rng.uniform(-3, 3, (n, 1))).astype(np.float32)
    elif kind == "tiny":  # squared norm 4e-24: just above the zero-norm floor (1e-24)
        X *= np.float32(2e-12)
    elif kind == "denormal":  # squared norm underflows: a zero-norm row
        X *= np.float32(1e-39)
    elif kind == "huge":  # squared norm 1e38: just inside float32
        X *= np.float32(1e19)
    elif kind == "zero_row" and n:
        X[int(rng.integers(0, n))] = 0.0
    return X


def _query(kind: str, rng: np.random.Generator, E: np.ndarray, d: int) -> np.ndarray:
    if kind in ("row", "negated_row") and E.ndim == 2 and E.shape[0] and E.shape[1] == d:
        q = np.array(E[int(rng.integers(0, E.shape[0]))], dtype=np.float32)
        return -q if kind == "negated_row" else q
    if kind == "onehot":
        q = np.zeros(d, np.float32)
        q[: min(d, 1)] = 1.0
        return np.roll(q, int(rng.integers(0, max(d, 1))))
    if kind == "zero":
        return np.zeros(d, np.float32)
    q = _unit(rng, 1, d)[0]
    if kind == "scaled":
        q *= np.float32(10.0 ** rng.uniform(-30, 19))
    elif kind == "denormal":
        q *= np.float32(1e-42)
    elif kind == "huge":  # |q| = 1e19: its squared norm just inside float32, as for rows
        q *= np.float32(1e19)
    return q


def _inject(X: np.ndarray, rng: np.random.Generator, count: int, values=SPECIAL_VALUES) -> np.ndarray:
    if count and X.size:
        flat = X.reshape(-1)
        for _ in range(count):
            flat[int(rng.integers(0, flat.size))] = values[int(rng.integers(0, len(values)))]
    return X


def _as_dtype(X: np.ndarray, dtype) -> np.ndarray:
    if dtype is np.float32:
        return X
    with np.errstate(all="ignore"):
        if dtype is object:
            return X.astype(object)
        if dtype is np.int32:
            return np.nan_to_num(X, nan=0.0, posinf=0.0, neginf=0.0).clip(-1e9, 1e9).astype(np.int32)
        return X.astype(dtype)


def _drawn_layout(draw, X: np.ndarray, layouts, label: str) -> np.ndarray:
    """``X`` in a memory layout drawn from ``layouts``, noted with ``label`` for the failure report."""
    layout = draw(st.sampled_from(layouts))
    note(f"{label} shape {X.shape} dtype {X.dtype} layout {layout}")
    return _layout(X, layout)


def _layout(X: np.ndarray, layout: str) -> np.ndarray:
    """The same values in another memory layout (no layout changes the logical array)."""
    if layout == "C" or X.dtype == object:
        return X
    if layout == "readonly":
        X = X.copy()
        X.setflags(write=False)
        return X
    if X.ndim == 2:
        n, d = X.shape
        if layout == "F":
            return np.asfortranarray(X)
        if layout == "strided_rows":
            big = np.zeros((2 * n, d), X.dtype)
            big[::2] = X
            return big[::2]
        if layout == "strided_columns":
            big = np.zeros((n, 2 * d), X.dtype)
            big[:, ::2] = X
            return big[:, ::2]
        if layout == "reversed":
            return X[::-1].copy()[::-1]
        return X
    if layout == "strided":
        big = np.zeros(2 * X.shape[0], X.dtype)
        big[::2] = X
        return big[::2]
    if layout == "reversed":
        return X[::-1].copy()[::-1]
    return X


def _mostly(common, rare, weight: int = 4):
    """``common`` about ``weight`` times as often as ``rare`` (one_of picks branches evenly)."""
    return st.one_of(*([common] * weight), rare)


# ----------------------------------------------------------------------------- plans
#
# Independent rare choices multiply: with a dozen inputs per call almost every draw would be
# rejected by the first check. So each example first draws a plan: "valid" (every input is
# one the operator accepts, edges included), "one_bad" (exactly one named input is drawn from
# its invalid values) or "chaos" (each input independently valid or not).


@st.composite
def plans(draw, components):
    mode = draw(st.sampled_from(["valid"] * 11 + ["one_bad"] * 7 + ["chaos"] * 2))
    if mode == "valid":
        bad = set()
    elif mode == "one_bad":
        bad = {draw(st.sampled_from(components))}
    else:
        bad = {c for c in components if draw(st.booleans())}
    note(f"plan: {mode}, invalid inputs: {sorted(bad)}")
    return bad


def pick(draw, bad: set, name: str, valid, invalid):
    return draw(invalid if name in bad else valid, label=name)


# ----------------------------------------------------------------------------- parameters

BAD_SCALARS = st.sampled_from(["3", None, b"1", [2], complex(1, 0), object()])
# Counts: k, p. 2**63 and 2**64 do not fit int64: refused with ValueError in both modules.
COUNTS = (
    _mostly(st.integers(1, 400), st.sampled_from([1, 2, 2**31, 2**62, 2**63 - 1, np.int64(5), np.uint8(3)])),
    st.one_of(st.sampled_from([0, -1, -(2**63), 2**63, 2**64, True, False, 1.0, 2.5, np.int32(-2)]), BAD_SCALARS),
)
# Iterations and laps: no upper bound is enforced and the cost is linear in them, so valid draws
# stay small (a caller asking for 10**12 iterations gets what they asked for).
ITERS = (st.integers(1, 120), st.sampled_from([0, -1, 2**63, 1.0, True, None, "80"]))
LAPS = (st.integers(1, 12), st.sampled_from([0, -5, 2**63, 3.0, False, None]))
SEEDS = (_mostly(st.integers(0, 2**64 - 1), st.sampled_from([0, 2**64 - 1, np.uint64(7)])),
         st.sampled_from([-1, 2**64, 1.5, None, "0"]))
THREADS = (st.sampled_from([0, 1, 2, 8, -1, -(2**40), 10**6, 2**63 - 1, np.int64(3)]),
           st.sampled_from([2**63, True, 1.5, None, "2"]))
FLAGS = (st.one_of(st.booleans(), st.just(np.bool_(True))), st.sampled_from([0, 1, "yes", None]))

# _PARAM_LIMITS: the kernels compute in float32. Rows and queries are drawn over the whole
# accepted range (squared norms from the 1e-24 floor to float32's max), caller sims over every
# finite float32; real parameters over everything the checks accept, up to float32's max (sigma
# and eps down to float32's smallest subnormal). Values that must be rejected (NaN, ±inf, norms and parameters past
# float32) are drawn without limit.
_TINY_SIGMA = float(np.finfo(np.float32).smallest_subnormal)  # smallest sigma, eps accepted
_BIG_REAL = float(np.finfo(np.float32).max)  # the largest real parameter the checks accept
_BIG_REAL_EDGES = (1e30, 1e38, _BIG_REAL)


def _reals(low, high, valid_edges, invalid_edges):
    valid = _mostly(st.floats(low, high, allow_nan=False),
                    st.sampled_from([*valid_edges, np.float32(low), np.float64(high)]))
    return valid, st.one_of(st.sampled_from(invalid_edges), BAD_SCALARS)


UNIT_REALS = _reals(0.0, 1.0, [0.0, -0.0, 1.0, 5e-324, 0.5],
                    [math.nextafter(1.0, 2.0), -1e-300, NAN, INF, -INF, 2.0, 1e300])
NONNEG_REALS = _reals(0.0, 10.0, [0.0, -0.0, 5e-324, 1e-30, 1.0, *_BIG_REAL_EDGES],
                      [-1e-300, NAN, INF, -INF, -1.0, 3.5e38])
POSITIVE_REALS = _reals(_TINY_SIGMA, 10.0, [_TINY_SIGMA, 1e-30, 1e-6, 1.0, *_BIG_REAL_EDGES],
                        [0.0, -0.0, -1.0, -5e-324, 5e-324, 1e-300, NAN, INF, -INF, 3.5e38])


# ----------------------------------------------------------------------------- arrays

VALID_ROW_KINDS = ("unit",) * 5 + ("duplicates", "all_equal", "onehot", "scaled", "tiny", "huge")
INVALID_ROW_KINDS = ("special", "special", "denormal", "zero_row", "no_rows", "no_columns", "1d", "3d", "dtype")
VALID_QUERY_KINDS = ("row", "row", "unit", "unit", "onehot", "scaled", "negated_row", "denormal", "huge")
INVALID_QUERY_KINDS = ("zero", "special", "short", "long", "2d", "dtype")
BAD_DTYPES = (np.float64, np.float16, np.int32, np.bool_, np.complex64, object)


@st.composite
def matrices(draw, name: str, bad: set, allow_empty: bool = False, dim=None, max_rows: int = 300):
    """A (n, d) float32 matrix in any layout, or (when ``name`` is in ``bad``) one that is wrong."""
    wrong = name in bad
    n = draw(st.one_of(st.integers(0 if allow_empty else 1, 4), st.integers(0 if allow_empty else 1, max_rows)))
    d = dim if dim is not None else draw(st.one_of(st.integers(1, 4), st.integers(1, 97)))
    kind = draw(st.sampled_from(INVALID_ROW_KINDS if wrong else VALID_ROW_KINDS))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    X = _rows(kind, rng, n, d)
    if kind == "special":
        X = _inject(X, rng, draw(st.integers(1, 3)))
    elif kind == "no_rows":
        X = np.zeros((0, d), np.float32)
    elif kind == "no_columns":
        X = np.zeros((n, 0), np.float32)
    elif kind == "1d":
        X = X.reshape(-1)
    elif kind == "3d":
        X = X.reshape(1, *X.shape)
    elif kind == "dtype":
        X = _as_dtype(X, draw(st.sampled_from(BAD_DTYPES)))
    return _drawn_layout(draw, X, MATRIX_LAYOUTS, f"{name}: kind {kind} seed {seed}"), d, rng


def _base_query(kind: str, rng, E, d: int) -> np.ndarray:
    usable = isinstance(E, np.ndarray) and E.dtype == np.float32 and E.ndim == 2 and E.shape[1] == d
    return _query(kind, rng, E if usable else np.zeros((0, d), np.float32), d)


@st.composite
def vectors(draw, name: str, bad: set, E, d: int, rng):
    """A (d,) float32 query in any layout, or a wrong one."""
    wrong = name in bad
    kind = draw(st.sampled_from(INVALID_QUERY_KINDS if wrong else VALID_QUERY_KINDS))
    if kind in ("short", "long"):
        q = _query("unit", rng, np.zeros((0, 0)), max(d + (1 if kind == "long" else -1), 0))
    else:
        q = _base_query("unit" if kind in ("special", "2d", "dtype") else kind, rng, E, d)
    if kind == "special":
        q = _inject(q, rng, 1, SPECIAL_QUERY_VALUES)
    elif kind == "2d":
        q = q.reshape(1, -1)
    elif kind == "dtype":
        q = _as_dtype(q, draw(st.sampled_from(BAD_DTYPES)))
    return _drawn_layout(draw, q, VECTOR_LAYOUTS, f"{name}: kind {kind}")


@st.composite
def queries(draw, bad: set, E, d: int, rng):
    """A (B, d) batch of queries, B in 0..6 (0 is valid), or a wrong one."""
    wrong = "Q" in bad
    B = draw(st.integers(0, 6))
    Q = np.zeros((B, d), np.float32)
    for b in range(B):
        Q[b] = _base_query(draw(st.sampled_from(VALID_QUERY_KINDS)), rng, E, d)
    kind = draw(st.sampled_from(["special", "zero_row", "columns", "1d", "dtype"])) if wrong else "valid"
    if kind == "special":
        Q = _inject(np.vstack([Q, _unit(rng, 1, d)]), rng, 1, SPECIAL_QUERY_VALUES)
    elif kind == "zero_row":
        Q = np.vstack([Q, np.zeros((1, d), np.float32)])
    elif kind == "columns":
        Q = np.zeros((B, d + 1), np.float32)
    elif kind == "1d":
        Q = Q.reshape(-1)
    elif kind == "dtype":
        Q = _as_dtype(Q, draw(st.sampled_from(BAD_DTYPES)))
    return _drawn_layout(draw, Q, MATRIX_LAYOUTS, f"Q: kind {kind}")


@st.composite
def subsets(draw, bad: set, n_rows: int, rng):
    """None, unique in-range ids (any integer dtype, or a list) or a boolean mask of length N; or a
    way to get them wrong (a mask of another length or with no True entry is wrong too)."""
    if "subset" in bad:
        kind = draw(st.sampled_from(["duplicate", "out_of_range", "negative", "empty", "float", "2d",
                                     "mask_length", "mask_none"]))
    else:
        kind = draw(st.sampled_from(["none"] * 4 + ["int64"] * 3 + ["all", "list", "int32", "uint64", "mask"]))
    note(f"subset: {kind}")
    if kind == "none":
        return None
    n = max(n_rows, 1)
    ids = rng.permutation(n)[: int(rng.integers(1, n + 1))].astype(np.int64)
    if kind == "all":
        return np.arange(n_rows, dtype=np.int64)
    if kind == "duplicate":
        return np.concatenate([ids, ids[:1]])
    if kind == "out_of_range":
        return np.concatenate([ids, [n_rows + int(rng.integers(0, 3))]])
    if kind == "negative":
        return np.concatenate([ids, [-1]])
    if kind == "empty":
        return np.zeros(0, np.int64)
    if kind == "float":
        return ids.astype(np.float64)
    if kind == "2d":
        return ids.reshape(1, -1)
    if kind == "list":
        return ids.tolist()
    if kind == "int32":
        return ids.astype(np.int32)
    if kind == "uint64":
        return ids.astype(np.uint64)
    if kind == "mask":
        mask = np.zeros(n_rows, bool)
        mask[ids[ids < n_rows]] = True
        return mask
    if kind == "mask_length":
        return np.ones(n_rows + 1, bool)
    if kind == "mask_none":
        return np.zeros(n_rows, bool)
    return ids


@st.composite
def pool_ids(draw, bad: set, P: int, rng):
    """Caller ids for a pool of P rows: unique, anywhere in the int64 range; or wrong."""
    if "ids" in bad:
        kind = draw(st.sampled_from(["duplicate", "short", "long", "float", "2d", "none"]))
    else:
        kind = draw(st.sampled_from(["range", "range", "wide", "wide", "list", "int32", "uint64"]))
    note(f"ids: {kind}")
    if kind == "none":
        return None
    if kind in ("range", "list", "int32", "uint64", "short", "long", "float", "2d") or P == 0:
        ids = rng.permutation(P).astype(np.int64) * 3
    else:
        wide = np.unique(rng.integers(-(2**63), 2**63 - 1, P + 8, dtype=np.int64))
        ids = rng.permutation(wide)[:P] if wide.shape[0] >= P else np.arange(P, dtype=np.int64)
    if kind == "duplicate":
        return np.concatenate([ids, ids[:1]])[1:] if P > 1 else np.zeros(2, np.int64)
    if kind == "short":
        return ids[:-1]
    if kind == "long":
        return np.concatenate([ids, [np.int64(2**62 + 11)]])
    if kind == "float":
        return ids.astype(np.float64)
    if kind == "list":
        return ids.tolist()
    if kind == "int32":
        return ids.astype(np.int32)
    if kind == "uint64":  # values inside the int64 range (see test_fixed_uint64_ids_wrap)
        return ids.astype(np.uint64)
    if kind == "2d":
        return ids.reshape(1, -1)
    return ids


@st.composite
def pool_sims(draw, bad: set, C, q, P: int, rng):
    """None, the true cosines, or a foreign first stage's scores of any size; or wrong."""
    if "sims" in bad:
        kind = draw(st.sampled_from(["special", "short", "float64", "2d"]))
    else:
        kind = draw(st.sampled_from(["none", "none", "cosine", "any_finite"]))
    note(f"sims: {kind}")
    if kind == "none":
        return None
    sims = rng.uniform(-1.0, 1.0, P).astype(np.float32)
    if kind == "cosine" and isinstance(C, np.ndarray) and C.dtype == np.float32 and C.ndim == 2 \
            and isinstance(q, np.ndarray) and q.dtype == np.float32 and q.shape == (C.shape[1],):
        with np.errstate(all="ignore"):
            sims = (np.asarray(C, np.float64) @ np.asarray(q, np.float64)).astype(np.float32)
    elif kind == "any_finite":  # a foreign first stage's scores: any finite float32 (up to 3.2e38)
        sims = (sims * 10.0 ** rng.uniform(-40, 38.5)).astype(np.float32)
    elif kind == "special":
        sims = _inject(np.concatenate([sims, [np.float32(0.5)]]), rng, 1, SPECIAL_QUERY_VALUES)[: max(P, 1)]
    elif kind == "short":
        sims = sims[:-1] if P else np.zeros(1, np.float32)
    elif kind == "float64":
        sims = sims.astype(np.float64)
    elif kind == "2d":
        sims = sims.reshape(1, -1)
    return sims


CORPUS_INPUTS = ["E", "q", "subset", "params"]


@st.composite
def corpus_calls(draw):
    bad = draw(plans(CORPUS_INPUTS))
    E, d, rng = draw(matrices("E", bad))
    q = draw(vectors("q", bad, E, d, rng))
    n_rows = E.shape[0] if getattr(E, "ndim", 0) >= 1 else 0
    return E, q, draw(subsets(bad, n_rows, rng)), bad


@st.composite
def batch_calls(draw):
    bad = draw(plans(["E", "Q", "subset", "params", "n_threads"]))
    E, d, rng = draw(matrices("E", bad))
    Q = draw(queries(bad, E, d, rng))
    n_rows = E.shape[0] if getattr(E, "ndim", 0) >= 1 else 0
    return E, Q, draw(subsets(bad, n_rows, rng)), pick(draw, bad, "n_threads", *THREADS), bad


@st.composite
def pool_calls(draw):
    bad = draw(plans(["C", "q", "ids", "sims", "params"]))
    C, d, rng = draw(matrices("C", bad))
    q = draw(vectors("q", bad, C, d, rng))
    P = C.shape[0] if getattr(C, "ndim", 0) >= 1 else 0
    return draw(pool_ids(bad, P, rng)), C, q, draw(pool_sims(bad, C, q, P, rng)), bad


# ----------------------------------------------------------------------------- the property

def _snapshot(*arrays):
    return [(a.shape, a.strides, a.tobytes()) if isinstance(a, np.ndarray) and a.dtype != object else None
            for a in arrays]


def _call(fn, *args, **kwargs):
    """The result, or None when the call raised an allowed error (which must have a message)."""
    in_hypothesis = currently_in_test_context()
    try:
        result = fn(*args, **kwargs)
    except ALLOWED_ERRORS as exc:
        assert str(exc), f"{type(exc).__name__} without a message"
        if in_hypothesis:
            note(f"raised {type(exc).__name__}: {exc}")
            event(f"raised {type(exc).__name__}")
        return None
    if in_hypothesis:
        event("returned a result")
    return result


def _id_set(ids) -> set:
    return {int(i) for i in np.asarray(ids).reshape(-1).tolist()}


def check_ranking(ids, scores, m: int, domain: set, order: str, coef=None) -> None:
    """One ranked list: length m, unique ids from ``domain``, finite scores in promised order."""
    assert isinstance(ids, np.ndarray) and ids.dtype == np.int64 and ids.ndim == 1, ids
    assert isinstance(scores, np.ndarray) and scores.ndim == 1 and scores.dtype.kind == "f", scores
    assert ids.shape == (m,) and scores.shape == (m,), (ids.shape, scores.shape, m)
    values = ids.tolist()
    assert len(set(values)) == m, f"repeated ids {values}"
    assert set(values) <= domain, f"ids {sorted(set(values) - domain)[:5]} are not candidates"
    assert np.isfinite(scores).all(), f"non-finite scores {scores}"
    if order in ("tie_rule", "sorted") and m > 1:
        s = scores.astype(np.float64)
        assert (s[:-1] >= s[1:]).all(), f"scores not non-increasing: {scores}"
        if order == "tie_rule":
            tied = s[:-1] == s[1:]
            assert (ids[:-1][tied] < ids[1:][tied]).all(), f"ties not in id order: {ids} {scores}"
    if coef is not None:
        assert coef.shape == (m,) and np.isfinite(coef).all() and (coef >= 0).all(), coef


def _unchanged(before, *arrays) -> None:
    assert before == _snapshot(*arrays), "the operator modified a caller's array"


def _subset_ids(subset):
    ids = np.asarray(subset)
    return np.flatnonzero(ids) if ids.dtype == np.bool_ else ids.reshape(-1)


def _n_candidates(E, subset) -> int:
    return E.shape[0] if subset is None else len(_subset_ids(subset))


def _domain(E, subset) -> set:
    return set(range(E.shape[0])) if subset is None else _id_set(_subset_ids(subset))


# Which order each operator promises for its scores (docs/design.md, docs/spec.md).
ORDER = {"prefilter": "tie_rule", "cfsr": "tie_rule", "cfs": "tie_rule", "mmr": None, "ring": "sorted"}
FAMILIES = list(ORDER)
MODULE_IDS = list(MODULES)
# (valid, invalid) strategies of each operator's parameters; corpus and batch forms take them all,
# pool forms all but p (prefilter_pool takes p).
PARAMS = {
    "prefilter": {"p": COUNTS},
    "cfsr": {"k": COUNTS, "p": COUNTS, "w": UNIT_REALS, "lam": NONNEG_REALS, "iters": ITERS, "tol": NONNEG_REALS,
             "fista": FLAGS},
    "cfs": {"k": COUNTS, "p": COUNTS, "sigma": POSITIVE_REALS, "beta": NONNEG_REALS, "eps": POSITIVE_REALS},
    "mmr": {"k": COUNTS, "p": COUNTS, "mu": UNIT_REALS},
    "ring": {"k": COUNTS, "alpha": UNIT_REALS, "laps": LAPS, "seed": SEEDS, "ablation": FLAGS},
}


@st.composite
def operator_params(draw, family: str, bad: set, pool: bool = False):
    """Keyword arguments of one operator; with "params" in ``bad`` exactly one is invalid."""
    drop_p = pool and family != "prefilter"
    space = {name: pair for name, pair in PARAMS[family].items() if not (drop_p and name == "p")}
    wrong = draw(st.sampled_from(sorted(space))) if "params" in bad else None
    params = {name: draw(pair[1] if name == wrong else pair[0], label=name) for name, pair in space.items()}
    note(f"params: {params}")
    return params


def _width(family: str, params: dict, n_candidates: int) -> int:
    """Result length: min(k, p, n) (prefilter min(p, n); Ring and pool forms min(k, n))."""
    limit = int(params["p"]) if family == "prefilter" else int(params["k"])
    if family != "prefilter" and "p" in params:
        limit = min(limit, int(params["p"]))
    return min(limit, n_candidates)


def _run(fn, first, params: dict, **extra):
    args = dict(params)
    lead = args.pop("p") if fn.__name__.startswith("prefilter") else args.pop("k")
    return fn(*first, lead, **args, **extra)


# ----------------------------------------------------------------------------- quantized prefilter

@st.composite
def quantized_corpora(draw, module, E, bad: set):
    """quantize(E, kind), or (with "QC" in ``bad``) a wrong kind, a non-corpus or a tampered copy."""
    kind = draw(st.sampled_from(["bf16", "int8"]), label="kind")
    if "QC" in bad:
        wrong = draw(st.sampled_from(["kind", "object", "other_E", "short_scale", "codes_dtype"]), label="bad QC")
        note(f"QC: {wrong}")
        if wrong == "kind":
            return _call(module.quantize, E, draw(st.sampled_from(["fp8", "", None, 8])))
        if wrong == "object":
            return E
        QC = _call(module.quantize, E, kind)
        if QC is None:
            return None
        from fieldrank.quantized import QuantizedCorpus

        if wrong == "other_E":
            return QuantizedCorpus(QC.kind, QC.codes[::-1].copy(), QC.scale, QC.sums)
        if wrong == "short_scale" and QC.kind == "int8":
            return QuantizedCorpus("int8", QC.codes, QC.scale[:-1].copy(), QC.sums)
        return QuantizedCorpus(QC.kind, QC.codes.astype(np.float32), QC.scale, QC.sums)
    return _call(module.quantize, E, kind)


# ----------------------------------------------------------------------------- RRF

@st.composite
def legs(draw, rng, wrong: bool):
    """One RRF leg: unique ids (any int64, any integer dtype, list or tuple); or a wrong one."""
    size = draw(st.one_of(st.integers(0, 3), st.integers(0, 60)))
    if wrong:
        kind = draw(st.sampled_from(["repeat", "float", "2d", "string", "none"]))
    else:
        kind = draw(st.sampled_from(["small"] * 3 + ["wide"] * 2 + ["list", "tuple", "int8", "uint64"]))
    if kind == "wide":
        ids = rng.permutation(np.unique(rng.integers(-(2**63), 2**63 - 1, size, dtype=np.int64)))
    else:
        ids = rng.permutation(80)[:size].astype(np.int64)
    if kind == "repeat":
        return np.concatenate([ids, [7, 7]])
    if kind == "list":
        return ids.tolist()
    if kind == "tuple":
        return tuple(ids.tolist())
    if kind == "int8":
        return ids.astype(np.int8)
    if kind == "uint64":  # inside the int64 range (see test_fixed_uint64_ids_wrap)
        return ids.astype(np.uint64)
    if kind == "float":
        return ids.astype(np.float64)
    if kind == "2d":
        return ids.reshape(1, -1)
    if kind == "string":
        return "1 2 3"
    if kind == "none":
        return None
    return ids


WEIGHTS = (_mostly(st.floats(0.0, 10.0), st.sampled_from([0.0, -0.0, 5e-324, 1.0, *_BIG_REAL_EDGES])),
           st.one_of(st.sampled_from([-1.0, -1e-300, NAN, INF, -INF]), BAD_SCALARS))


@st.composite
def rrf_calls(draw, bad_choices=("rankings", "container", "weights", "k", "k0")):
    bad = draw(plans(list(bad_choices)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_legs = draw(st.integers(0, 6))
    wrong_leg = draw(st.integers(0, max(n_legs - 1, 0))) if "rankings" in bad and n_legs else -1
    rankings = [draw(legs(rng, leg == wrong_leg)) for leg in range(n_legs)]
    container = draw(st.sampled_from(["array", "generator", "dict", "string"] if "container" in bad
                                     else ["list", "list", "tuple"]))
    if container == "tuple":
        rankings = tuple(rankings)
    elif container == "array":
        rankings = np.zeros((n_legs, 3), np.int64)
    elif container == "generator":
        rankings = (r for r in rankings)
    elif container == "dict":
        rankings = {i: r for i, r in enumerate(rankings)}
    elif container == "string":
        rankings = "0 1 2"
    if "weights" in bad:
        weight_kind = draw(st.sampled_from(["bad_value", "short", "long", "strings", "scalar", "2d"]))
    else:
        weight_kind = draw(st.sampled_from(["none", "list", "list", "array", "tuple"]))
    values = [draw(WEIGHTS[0]) for _ in range(n_legs)]
    weights = {
        "none": None, "list": values, "array": np.array(values, dtype=np.float64), "tuple": tuple(values),
        "short": [1.0] * max(n_legs - 1, 0) if n_legs else [1.0], "long": [1.0] * (n_legs + 1),
        "strings": ["1"] * max(n_legs, 1), "scalar": 1.0, "2d": np.ones((1, max(n_legs, 1)), np.float64),
    }.get(weight_kind)
    if weight_kind == "bad_value":
        weights = values + [draw(WEIGHTS[1])] if n_legs else [draw(WEIGHTS[1])]
        weights = weights[-max(n_legs, 1):]
    note(f"rrf: {n_legs} legs in a {container}, weights {weight_kind}, invalid {sorted(bad)}")
    return rankings, weights, pick(draw, bad, "k", *COUNTS), pick(draw, bad, "k0", *NONNEG_REALS)


def _check_fused(result, rankings, k) -> None:
    union = set()
    for leg in rankings:
        union |= _id_set(leg)
    check_ranking(result.ids, result.scores, min(int(k), len(union)), union, "tie_rule")
    assert (result.scores >= 0).all()


@st.composite
def rrf_batch_calls(draw):
    bad = draw(plans(["rankings", "container", "weights", "k", "k0"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_legs, B = draw(st.integers(0, 5)), draw(st.integers(0, 5))
    wrong = (draw(st.integers(0, B - 1)), draw(st.integers(0, n_legs - 1))) if "rankings" in bad and B and n_legs \
        else (-1, -1)
    per_query = [[draw(legs(rng, (b, leg) == wrong)) for leg in range(n_legs)] for b in range(B)]
    if "container" in bad:
        per_query = draw(st.sampled_from([np.zeros((2, 2, 2), np.int64), "0 1", None, {0: [np.arange(3)]}]))
    elif draw(st.booleans()):
        per_query = tuple(per_query)
    if "weights" in bad:
        weights = draw(st.sampled_from([[1.0] * (n_legs + 1), [-1.0] * max(n_legs, 1), [NAN] * max(n_legs, 1),
                                        "1", [[1.0]]]))
    else:
        weights = draw(st.one_of(st.none(), st.lists(WEIGHTS[0], min_size=n_legs, max_size=n_legs)))
    note(f"rrf_batch: {B} queries of {n_legs} legs, invalid {sorted(bad)}")
    return per_query, weights, pick(draw, bad, "k", *COUNTS), pick(draw, bad, "k0", *NONNEG_REALS)


# ----------------------------------------------------------------------------- tie_key


# ----------------------------------------------------------------------------- text layers
#
# BM25Index, HybridRetriever and MemoryStore take text as well as vectors. Texts mix a small
# vocabulary (so queries share terms with documents) with arbitrary unicode.

WORDS = ("caroline", "melanie", "paris", "dog", "moved", "job", "marathon", "allergy", "wedding", "the", "a",
         "and", "painting", "sister", "birthday", "running", "ran", "runs")
TEXTS = st.one_of(
    st.lists(st.sampled_from(WORDS), min_size=0, max_size=10).map(" ".join),
    st.text(max_size=40),
    st.sampled_from(["", " ", "the and a", "\x00", "🙂 dog", "DOG!!!", "x" * 500]),
)


def _check_bm25_hits(ids, scores, k: int, n_docs: int, allowed=None) -> None:
    assert ids.dtype == np.int64 and scores.dtype == np.float32 and ids.shape == scores.shape
    assert ids.shape[0] <= k and len(set(ids.tolist())) == ids.shape[0]
    assert ((ids >= 0) & (ids < n_docs)).all() and np.isfinite(scores).all() and (scores > 0).all()
    if allowed is not None:
        assert set(ids.tolist()) <= allowed
    if ids.shape[0] > 1:
        assert (scores[:-1] >= scores[1:]).all()
        tied = scores[:-1] == scores[1:]
        assert (ids[:-1][tied] < ids[1:][tied]).all()


def _hybrid_module():
    hybrid = pytest.importorskip("fieldrank.hybrid")
    config = pytest.importorskip("fieldrank.config")
    if not hasattr(hybrid, "HybridRetriever"):
        pytest.skip("fieldrank.hybrid.HybridRetriever is not there yet")
    return hybrid.HybridRetriever, config.PRESET_NAMES


def _memory_module():
    memory = pytest.importorskip("fieldrank.memory")
    if not hasattr(memory, "MemoryStore"):
        pytest.skip("fieldrank.memory.MemoryStore is not there yet")
    return memory


# ----------------------------------------------------------------------------- found by fuzzing
# The inputs of the regression tests in tests/test_fixed_regressions.py.


# Accepted extremes: rows of norm 1e-12 and 1e19, queries up to |q|^2 = FLT_MAX, caller sims up to
# ±FLT_MAX. Before the power-of-two rescaling in cfsr_on_pool these overflowed (coefficients,
# the span of r) or underflowed (the step) in float32.
EXTREME_CFSR_CASES = {
    "tiny_row_huge_query": (np.array([[1.01e-12]], np.float32), np.array([1.8e19], np.float32), None, 0.0),
    "huge_rows_unit_query": (np.float32(1e19) * np.eye(3, dtype=np.float32), np.array([0.6, 0.8, 0.0], np.float32),
                             None, 0.005),
    "span_past_float32": (np.eye(4, dtype=np.float32), np.array([1.0, 0.0, 0.0, 0.0], np.float32),
                          np.array([-3e38, -1e38, 1e38, 3e38], np.float32), 0.005),
    "sims_past_float32_sum": (np.array([[1.0], [-1.0]], np.float32), np.array([1.0], np.float32),
                              np.array([3e38, -3e38], np.float32), 0.005),
}


