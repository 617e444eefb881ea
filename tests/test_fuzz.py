"""Property-based fuzzing of every public operator entry point, native and reference.

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

``_PARAM_LIMITS`` says which accepted inputs are drawn; the ``test_fixed_*`` cases at the end
pin the bugs the fuzz found.
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
    layout = draw(st.sampled_from(MATRIX_LAYOUTS))
    note(f"{name}: shape {X.shape} kind {kind} dtype {X.dtype} layout {layout} seed {seed}")
    return _layout(X, layout), d, rng


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
    layout = draw(st.sampled_from(VECTOR_LAYOUTS))
    note(f"{name}: kind {kind} shape {q.shape} dtype {q.dtype} layout {layout}")
    return _layout(q, layout)


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
    layout = draw(st.sampled_from(MATRIX_LAYOUTS))
    note(f"Q: kind {kind} shape {Q.shape} dtype {Q.dtype} layout {layout}")
    return _layout(Q, layout)


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


# Which order each operator promises for its scores (docs/design.md, SPEC).
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


# ----------------------------------------------------------------------------- tie_key

@pytest.mark.parametrize("module_name", MODULE_IDS)
@given(seed=st.integers(0, 2**64 - 1), lap=st.integers(0, 2**40),
       ids=st.lists(st.integers(0, 2**63 - 1), max_size=8))
def test_fuzz_tie_key(module_name, seed, lap, ids):
    keys = MODULES[module_name].tie_key(seed, lap, np.array(ids, dtype=np.int64))
    assert keys.dtype == np.uint64 and keys.shape == (len(ids),)
    other = fieldrank.tie_key(seed, lap, np.array(ids, dtype=np.int64))
    assert np.array_equal(keys, other)


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


@given(texts=st.lists(TEXTS, min_size=0, max_size=30), queries=st.lists(TEXTS, max_size=4), data=st.data())
def test_fuzz_bm25_index(texts, queries, data):
    from fieldrank.bm25 import BM25Index

    index = _call(BM25Index, texts)
    if index is None:
        return
    n = len(texts)
    bad = data.draw(plans(["k", "subset"]))
    k = pick(data.draw, bad, "k", *COUNTS)
    subset = data.draw(subsets(bad, n, np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))))
    allowed = None if subset is None or isinstance(subset, np.ndarray) and subset.dtype == bool else _id_set(subset)
    for query in queries:
        scores = index.scores(query)
        assert scores.shape == (n,) and scores.dtype == np.float32 and np.isfinite(scores).all()
        hits = _call(index.top, query, k, subset=subset)
        if hits is not None:
            _check_bm25_hits(*hits, int(k), n, allowed)
    batch = _call(index.top_batch, queries, k, subset=subset, n_threads=data.draw(THREADS[0]))
    if batch is not None:
        assert len(batch) == len(queries)
        for query, (ids, scores) in zip(queries, batch):
            single_ids, single_scores = index.top(query, k, subset=subset)
            assert np.array_equal(ids, single_ids) and np.array_equal(scores, single_scores)


def _hybrid_module():
    hybrid = pytest.importorskip("fieldrank.hybrid")
    config = pytest.importorskip("fieldrank.config")
    if not hasattr(hybrid, "HybridRetriever"):
        pytest.skip("fieldrank.hybrid.HybridRetriever is not there yet")
    return hybrid.HybridRetriever, config.PRESET_NAMES


@given(data=st.data())
def test_fuzz_hybrid_retriever(data):
    """Construction, search and search_batch of HybridRetriever on fuzzed corpora and queries."""
    HybridRetriever, presets = _hybrid_module()
    bad = data.draw(plans(["E", "q", "subset", "k", "texts"]))
    E, d, rng = data.draw(matrices("E", bad, max_rows=60))
    n = E.shape[0] if getattr(E, "ndim", 0) >= 1 else 0
    texts = data.draw(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join),
                               min_size=n, max_size=n) if "texts" not in bad else
                      st.sampled_from([[1] * n, "one string", [""] * n, [None]]), label="texts")
    preset = data.draw(st.sampled_from(presets), label="preset")
    normalize = data.draw(st.booleans(), label="normalize")
    retriever = _call(HybridRetriever, texts, E, preset, normalize=normalize)
    if retriever is None:
        return
    q = data.draw(vectors("q", bad, E, d, rng))
    query_text = data.draw(TEXTS, label="query text")
    k = pick(data.draw, bad, "k", *COUNTS)
    subset = data.draw(subsets(bad, n, rng))
    result = _call(retriever.search, query_text, q, k, subset=subset)
    if result is None:
        return
    ids, scores = np.asarray(result.ids), np.asarray(result.scores)
    if subset is None:
        allowed = set(range(n))
    elif isinstance(subset, np.ndarray) and subset.dtype == bool:  # the retriever also takes masks
        allowed = set(np.flatnonzero(subset).tolist())
    else:
        allowed = _id_set(subset)
    limit = retriever.config.k if k is None else int(k)  # None: the config's k
    assert ids.dtype == np.int64 and ids.shape == scores.shape and ids.shape[0] <= limit
    assert len(set(ids.tolist())) == ids.shape[0] and set(ids.tolist()) <= allowed
    assert np.isfinite(scores).all()
    if ids.shape[0] > 1:
        assert (scores[:-1] >= scores[1:]).all()
        tied = scores[:-1] == scores[1:]
        assert (ids[:-1][tied] < ids[1:][tied]).all()
    _ = result.legs  # provenance is computed lazily: it must not fail either
    batch = retriever.search_batch([query_text, query_text], np.stack([q, q]), k, subset=subset)
    for other in batch:
        assert np.array_equal(other.ids, result.ids) and np.array_equal(other.scores, result.scores)


def _memory_module():
    memory = pytest.importorskip("fieldrank.memory")
    if not hasattr(memory, "MemoryStore"):
        pytest.skip("fieldrank.memory.MemoryStore is not there yet")
    return memory


@given(data=st.data())
def test_fuzz_memory_store(data):
    """add_many / recall / forget / update of an in-memory MemoryStore with fuzzed fields and cues."""
    memory = _memory_module()
    bad = data.draw(plans(["E", "fields", "q", "k", "mode"]))
    E, d, rng = data.draw(matrices("E", bad, max_rows=40, allow_empty=True))
    n = E.shape[0] if getattr(E, "ndim", 0) >= 1 else 0
    store = memory.MemoryStore(dim=d)
    texts = data.draw(st.lists(TEXTS, min_size=n, max_size=n), label="texts")
    fields = {}
    if "fields" in bad:
        name, value = data.draw(st.sampled_from([
            ("importances", 1.5), ("importances", NAN), ("valences", -2.0), ("tiers", "root"),
            ("storage_strengths", 0.5), ("tenants", ""), ("tags", [["x"]] * (n + 1)), ("recall_counts", -1),
            ("created_at", INF), ("importances", "high")]), label="bad field")
        fields[name] = value
    else:
        fields["importances"] = data.draw(st.floats(0.0, 1.0), label="importance")
        fields["tiers"] = data.draw(st.sampled_from(memory.TIERS), label="tier")
        fields["tags"] = [list(data.draw(st.lists(st.sampled_from(WORDS[:4]), max_size=2), label="tags"))
                          for _ in range(n)]
        fields["tenants"] = data.draw(st.sampled_from(["default", "other"]), label="tenant")
    added = _call(store.add_many, texts, E, **fields)
    live = set() if added is None else set(np.asarray(added).tolist())
    if added is not None and live and data.draw(st.booleans(), label="forget one"):
        forgotten = int(data.draw(st.sampled_from(sorted(live)), label="forgotten"))
        assert store.forget(forgotten)
        live.discard(forgotten)
    q = data.draw(vectors("q", bad, E, d, rng))
    k = pick(data.draw, bad, "k", *COUNTS)
    mode = data.draw(st.sampled_from(["nope", 3, None]) if "mode" in bad else st.sampled_from(memory.MODES),
                     label="mode")
    cue = data.draw(TEXTS, label="cue")
    tenant = fields.get("tenants", "default") if isinstance(fields.get("tenants"), str) else "default"
    result = _call(store.recall, cue, q, k, tenant=tenant, mode=mode)
    if result is None:
        return
    ids = result.ids
    assert ids.dtype == np.int64 and ids.shape[0] <= int(k)
    assert len(set(ids.tolist())) == ids.shape[0] and set(ids.tolist()) <= live
    for hit in result.hits:
        assert math.isfinite(hit.score) and math.isfinite(hit.fused_score), hit


# ----------------------------------------------------------------------------- found by fuzzing
#
# Regression tests for the bugs the fuzz found, all fixed (C++ tests pin the same cases under the
# sanitizers). A bug found and not yet fixed goes here as a strict xfail, which fails the day its
# fix lands; then the mark is dropped and the strategies above widened (docs/reliability.md).


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
    """memory/schema.py embedding_rows casts the float64 norm to float32 before dividing: a finite
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
