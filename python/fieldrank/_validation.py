"""The one validation module: every layer's input checks, all ``(value, name)``, one policy.

The operators (:mod:`fieldrank`, :mod:`fieldrank.reference`), the legs and the retriever
(``bm25``, ``temporal``, ``config``, ``hybrid``), the memory store (``memory._params``,
``memory._schema``) and the harness call these functions, so that they accept and refuse the
same input with the same messages. Every check takes the value first and the name to print
second; the name is what the caller calls the field (``"k"``, ``"BM25Params.k1"``,
``"CFSLeg.sigma"``). The policy:

* **dtypes, one rule per layer.** The operators take real float32 arrays only: float64,
  integer, bool, object or complex arrays raise ``TypeError`` (no silent down-cast of a caller's
  array; :func:`float32_array`). The layers that keep their own copy of the vectors
  (``HybridRetriever``, the memory store) convert any floating dtype (float16/float64) to
  float32 once, at ingest, and refuse integer, bool, complex and object arrays with
  ``TypeError`` (:func:`floating_array`). Python lists and tuples of numbers are converted in
  both. F-order or strided float32 arrays are copied once into C order (the native ``_core``
  rejects them, so this is the only copy the wrappers make).
* **scalars.** An int parameter must be an integer (Python or numpy): bool and
  integer-valued floats (``3.0``) are ``TypeError``. A real parameter is any real number
  (Python or numpy, ints included, bool excluded), converted to float; NaN and infinities are
  ``ValueError``. The operators' real parameters must also fit float32 and their counts int64,
  because the kernels compute in those types (:func:`positive_int`, :func:`positive_real`, …);
  every other layer uses :func:`integer` and :func:`real` with the bounds of its field.
* **subsets.** Integer ids (array, list, tuple, range) or a boolean mask of shape (N,), in
  every operator, the retriever and the BM25 leg (:func:`subset`, :func:`subset_mask`). Ids must
  be in range and unique. An empty subset (no ids, or a mask with no True entry) is a
  ``ValueError`` everywhere: it is a caller's bug, never answered with an empty result.
* **errors.** Wrong types raise ``TypeError``; shapes, values and parameters out of range raise
  ``ValueError`` naming the argument, what was expected and what was given.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from . import _kernels
from . import _param_tables as _tables

DEFAULTS = _kernels.DEFAULTS
native_layout = _kernels.native_layout  # the zero-copy check
_MIN_ROW_NORM_SQ = DEFAULTS["min_row_norm_sq"]
#: A corpus row's L2 norm may differ from 1 by at most this (the operators rank by dot product,
#: which is the cosine only for unit rows). One constant, from the C++ table.
UNIT_NORM_ATOL = DEFAULTS["unit_norm_atol"]
# The bounds on the squared norm, rounded to float32 exactly as the native scans round them.
_UNIT_NORM_SQ_LO = np.float32((1.0 - UNIT_NORM_ATOL) * (1.0 - UNIT_NORM_ATOL))
_UNIT_NORM_SQ_HI = np.float32((1.0 + UNIT_NORM_ATOL) * (1.0 + UNIT_NORM_ATOL))
# The float32 and int64 limits of the kernels are stated once, in the parameter tables.
FLOAT32_MAX = _tables.FLOAT32_MAX
FLOAT32_TRUE_MIN = _tables.FLOAT32_TRUE_MIN


def _describe(x: object) -> str:
    if isinstance(x, np.ndarray):
        return f"array of dtype {x.dtype} and shape {x.shape}"
    return f"{type(x).__name__}"


def float32_array(x: object, name: str, ndim: int) -> np.ndarray:
    """Return ``x`` as a C-ordered float32 array of rank ``ndim`` (copying only F-order/strided input)."""
    if not isinstance(x, np.ndarray):
        if isinstance(x, (list, tuple)):
            x = np.asarray(x)
            if x.dtype.kind in "iuf" and x.dtype != np.float32:
                x = x.astype(np.float32)
        else:
            msg = f"{name} must be a float32 numpy array, got {_describe(x)}"
            raise TypeError(msg)
    if x.dtype != np.float32:
        msg = f"{name} must have dtype float32, got {x.dtype} (convert once with {name}.astype(np.float32))"
        raise TypeError(msg)
    if x.ndim != ndim:
        msg = f"{name} must be a {ndim}-D array, got {x.ndim}-D with shape {x.shape}"
        raise ValueError(msg)
    return native_layout(x)


def check_floating_dtype(x: np.ndarray, name: str) -> None:
    """``TypeError`` unless ``x`` has a floating dtype (the owning layers' rule, :func:`floating_array`)."""
    if x.dtype.kind != "f":
        msg = f"{name} must have a floating dtype (float32, or float16/float64 converted once), got {x.dtype}"
        raise TypeError(msg)


def floating_array(x: object, name: str, ndim: int) -> np.ndarray:
    """The owning layers' conversion: ``x`` as C-ordered float32, converted once from any floating dtype.

    For the layers that keep their own copy of the vectors (``HybridRetriever``, the memory
    store): float16 and float64 arrays are converted to float32 here; Python lists and tuples of
    numbers are taken as numbers. Integer, bool, complex and object arrays are refused
    (``TypeError``): an embedding is never an integer array, and one is most likely ids passed by
    mistake. The operators do not convert (:func:`float32_array`).
    """
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
        if x.dtype.kind in "iu":
            x = x.astype(np.float32)
    if isinstance(x, np.ndarray):
        check_floating_dtype(x, name)
    if isinstance(x, np.ndarray) and x.dtype != np.float32:
        x = x.astype(np.float32)
    return float32_array(x, name, ndim)


def corpus(E: object, name: str = "E") -> np.ndarray:
    """A (N, d) corpus or pool matrix with N >= 1 and d >= 1."""
    E = float32_array(E, name, 2)
    if E.shape[0] == 0:
        msg = f"{name} must have at least one row, got shape {E.shape}"
        raise ValueError(msg)
    if E.shape[1] == 0:
        msg = f"{name} must have at least one column, got shape {E.shape}"
        raise ValueError(msg)
    return E


def check_rows_finite_nonzero(E: np.ndarray, name: str = "E", rows: Optional[np.ndarray] = None) -> None:
    """Reject NaN/inf and zero-norm rows (the native kernels do this inside their scoring pass).

    Only the rows ``rows`` (a subset, in its order) are checked when given. Like the native
    kernels, the first bad row is reported by its row number in ``E``, non-finite values before
    norms, and the squared norm is printed as C++ streams print a double (``%g``), so both
    modules give the same message.
    """
    X = E if rows is None else E[rows]
    # Fast path, one float32 pass: a NaN/inf element makes its row's float32 norm NaN/inf, and a
    # finite float32 norm at least twice the threshold means the row passes every check below.
    # Anything else takes the exact path, so the outcome and the messages are unchanged.
    with np.errstate(over="ignore", invalid="ignore"):
        norms32 = np.einsum("ij,ij->i", X, X)
    if bool(np.all(norms32 >= 2.0 * _MIN_ROW_NORM_SQ)) and bool(np.all(norms32 <= np.finfo(np.float32).max)):
        return
    finite_rows = np.isfinite(X).all(axis=1)
    norms_sq = np.einsum("ij,ij->i", X, X, dtype=np.float64)
    # The kernels accumulate in float32: a row whose float32 squared norm overflows is bad there too
    # (a wider row is cast first: einsum will not narrow it itself).
    with np.errstate(over="ignore"):
        X32 = X.astype(np.float32, copy=False)
        overflow = ~np.isfinite(np.einsum("ij,ij->i", X32, X32, dtype=np.float32))
    bad = np.flatnonzero(~finite_rows | overflow | ~np.isfinite(norms_sq) | (norms_sq < _MIN_ROW_NORM_SQ))
    if not bad.size:
        return
    position = int(bad[0])
    row = position if rows is None else int(rows[position])
    if not finite_rows[position]:
        column = int(np.flatnonzero(~np.isfinite(X[position]))[0])
        msg = f"{name} must be finite, got {X[position, column]} at row {row}, column {column}"
        raise ValueError(msg)
    msg = (
        f"{name} rows must have a non-zero, finite norm (L2-normalised rows expected); "
        f"row {row} has squared norm {norms_sq[position]:g}"
    )
    raise ValueError(msg)


def check_unit_rows(E: np.ndarray, name: str = "E", rows: Optional[np.ndarray] = None) -> None:
    """Reject corpus rows that are not finite with unit L2 norm (within :data:`UNIT_NORM_ATOL`).

    The native operators check this in the pass that scores each row; this is their numpy twin:
    the first bad row (in ``rows`` order) is reported by its row number in ``E``, non-finite
    values first, then a zero or overflowing norm, then a norm other than 1, with the native
    messages.
    """
    X = E if rows is None else E[rows]
    with np.errstate(over="ignore", invalid="ignore"):
        norms32 = np.einsum("ij,ij->i", X, X)
    unit = (norms32 >= _UNIT_NORM_SQ_LO) & (norms32 <= _UNIT_NORM_SQ_HI)
    if bool(np.all(unit)):
        return
    position = int(np.flatnonzero(~unit)[0])
    row = position if rows is None else int(rows[position])
    # The finite, non-zero checks and their messages, on the one offending row.
    check_rows_finite_nonzero(E, name, np.array([row], dtype=np.int64))
    norm = float(np.sqrt(np.einsum("i,i->", X[position], X[position], dtype=np.float64)))
    msg = (
        f"{name} rows must have unit L2 norm (|norm - 1| <= {UNIT_NORM_ATOL:g}: the operators rank by dot "
        f"product, which is the cosine only for unit rows); row {row} has norm {norm:g}. "
        "Normalise the rows once: E / np.linalg.norm(E, axis=1, keepdims=True)"
    )
    raise ValueError(msg)


def query(q: object, dim: int, name: str = "q", corpus_name: str = "E") -> np.ndarray:
    """A (d,) query: finite and of non-zero norm."""
    q = float32_array(q, name, 1)
    if q.shape[0] != dim:
        msg = f"{name} must have length {dim} to match {corpus_name}.shape[1], got length {q.shape[0]}"
        raise ValueError(msg)
    _check_vectors_finite_nonzero(q[None, :], name)
    return q


def queries(Q: object, dim: int, name: str = "Q", corpus_name: str = "E") -> np.ndarray:
    """A (B, d) batch of queries; B may be 0."""
    Q = float32_array(Q, name, 2)
    if Q.shape[1] != dim:
        msg = f"{name} must have {dim} columns to match {corpus_name}.shape[1], got shape {Q.shape}"
        raise ValueError(msg)
    _check_vectors_finite_nonzero(Q, name)
    return Q


def _check_vectors_finite_nonzero(X: np.ndarray, name: str) -> None:
    # One float64 pass decides the common case: a NaN/inf makes the norm non-finite, the zero
    # vector gives 0 (the square of a float32 subnormal is still > 0 in float64).
    norms_sq = np.einsum("ij,ij->i", X, X, dtype=np.float64)
    if bool(np.all((norms_sq > 0.0) & (norms_sq <= FLOAT32_MAX))):
        return
    finite = np.isfinite(X)
    if not finite.all():
        row, column = np.argwhere(~finite)[0]
        where = f"position {column}" if X.shape[0] == 1 else f"row {row}, column {column}"
        msg = f"{name} must be finite, got {X[row, column]} at {where}"
        raise ValueError(msg)
    zero = np.flatnonzero(~np.any(X != 0, axis=1))
    if zero.size:
        where = "" if X.shape[0] == 1 else f" (row {zero[0]})"
        msg = f"{name} must have a non-zero norm, got the zero vector{where}"
        raise ValueError(msg)
    # As for rows: the kernels compute in float32, and a query whose squared norm fits there keeps
    # every dot product with an accepted row inside float32 (|q·e| <= |q| |e|).
    huge = np.flatnonzero(norms_sq > FLOAT32_MAX)
    if huge.size:
        where = "" if X.shape[0] == 1 else f" (row {huge[0]})"
        msg = (f"{name} must have a squared norm within the float32 range (at most {FLOAT32_MAX:g}), "
               f"got {norms_sq[huge[0]]:g}{where}")
        raise ValueError(msg)


#: Counts are int64 in the kernels; the reference refuses the same values (a Python int is unbounded).
INT64_MAX = _tables.INT64_MAX


def _integer(value: object, name: str) -> int:
    # Integral: Python and numpy integers; never bool, and never an integer-valued float (3.0).
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        msg = f"{name} must be an int, got {type(value).__name__}"
        raise TypeError(msg)
    return int(value)


def integer(value: object, name: str, *, low: Optional[int] = None, low_open: bool = False, note: str = "") -> int:
    """``value`` as a Python int, ``>= low`` (``> low`` with ``low_open``); ``note`` explains the bound.

    The scalar check of every layer above the operators (configurations, BM25 and memory
    parameters, the store, the harness): ``TypeError`` for a non-integer (bool and 3.0 included),
    ``ValueError`` below the bound, both naming ``name``.
    """
    v = _integer(value, name)
    if low is not None and (v <= low if low_open else v < low):
        msg = f"{name} must be {'>' if low_open else '>='} {low}{note}, got {value}"
        raise ValueError(msg)
    return v


def _bounds_text(low: float, high: float, low_open: bool, high_open: bool) -> str:
    if math.isfinite(low) and math.isfinite(high):
        return f" and in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if math.isfinite(low):
        return f" and {'>' if low_open else '>='} {low:g}"
    if math.isfinite(high):
        return f" and {'<' if high_open else '<='} {high:g}"
    return ""


def real(value: object, name: str, *, low: float = -math.inf, high: float = math.inf, low_open: bool = False,
         high_open: bool = False, note: str = "") -> float:
    """``value`` as a finite Python float within the bounds (open with ``low_open`` / ``high_open``).

    ``TypeError`` unless a real number (Python or numpy; bool excluded), ``ValueError`` if NaN,
    infinite or out of bounds; the message names ``name`` and the bounds.
    """
    v = _real(value, name)
    too_low = v <= low if low_open else v < low
    too_high = v >= high if high_open else v > high
    if not math.isfinite(v) or too_low or too_high:
        msg = f"{name} must be finite{_bounds_text(low, high, low_open, high_open)}{note}, got {value!r}"
        raise ValueError(msg)
    return v


def _check_int64(v: int, name: str, what: str) -> None:
    if v > INT64_MAX:
        msg = f"{name} must be {what} that fits int64 (at most {INT64_MAX}), got {v}"
        raise ValueError(msg)


def positive_int(value: object, name: str) -> int:
    v = _integer(value, name)
    if v <= 0:
        msg = f"{name} must be a positive integer, got {value}"
        raise ValueError(msg)
    _check_int64(v, name, "a positive integer")
    return v


def _non_negative_integer(value: object, name: str) -> int:
    v = _integer(value, name)
    if v < 0:
        msg = f"{name} must be an integer >= 0, got {value}"
        raise ValueError(msg)
    return v


def non_negative_int(value: object, name: str) -> int:
    v = _non_negative_integer(value, name)
    _check_int64(v, name, "an integer >= 0")
    return v


def float_value(value: object, name: str) -> float:
    """``value`` as a Python float, without a range check: ``TypeError`` unless a real number (bool
    excluded), ``ValueError`` for one too large for a float (``10**400``), never ``OverflowError``."""
    return _real(value, name)


def _real(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        msg = f"{name} must be a real number, got {type(value).__name__}"
        raise TypeError(msg)
    try:
        return float(value)
    except OverflowError:  # an int (or Fraction) beyond float64: not finite as a float
        msg = f"{name} must be finite, got a number too large for a float ({str(value)[:20]}...)"
        raise ValueError(msg) from None




def _check_float32(v: float, value: object, name: str) -> None:
    if abs(v) > FLOAT32_MAX:
        msg = f"{name} must be finite as a float32 (at most {FLOAT32_MAX:g} in magnitude), got {value}"
        raise ValueError(msg)


def unit_interval(value: object, name: str) -> float:
    v = _real(value, name)
    if not 0.0 <= v <= 1.0:
        msg = f"{name} must lie in [0, 1], got {value}"
        raise ValueError(msg)
    return v


def positive_real(value: object, name: str) -> float:
    v = _real(value, name)
    if not (v > 0.0 and np.isfinite(v)):
        msg = f"{name} must be a finite number > 0, got {value}"
        raise ValueError(msg)
    _check_float32(v, value, name)
    if v < FLOAT32_TRUE_MIN:
        msg = f"{name} must stay positive as a float32 (at least {FLOAT32_TRUE_MIN:g}), got {value}"
        raise ValueError(msg)
    return v


def non_negative_real(value: object, name: str) -> float:
    v = _real(value, name)
    if not (v >= 0.0 and np.isfinite(v)):
        msg = f"{name} must be a finite number >= 0, got {value}"
        raise ValueError(msg)
    _check_float32(v, value, name)
    return v


def str_sequence(value: object, name: str = "texts") -> list[str]:
    """A list of the str of ``value``: a sequence of str, not one str (nor bytes)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        msg = f"{name} must be a sequence of str, got {type(value).__name__}"
        raise TypeError(msg)
    out = list(value)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            msg = f"{name}[{i}] must be a str, got {type(text).__name__}"
            raise TypeError(msg)
    return out


def one_of(value: object, name: str, options: Sequence[Any]) -> Any:
    """``value`` if it is one of ``options`` (the one tuple that lists them), else ``ValueError``."""
    if value not in options:
        msg = f"{name} must be one of {tuple(options)}, got {value!r}"
        raise ValueError(msg)
    return value


def instance_of(value: object, name: str, cls: type) -> Any:
    """``value`` if it is a ``cls``, else ``TypeError`` naming both types."""
    if not isinstance(value, cls):
        msg = f"{name} must be a {cls.__name__}, got {type(value).__name__}"
        raise TypeError(msg)
    return value


def flag(value: object, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        msg = f"{name} must be a bool, got {type(value).__name__}"
        raise TypeError(msg)
    return bool(value)


def id_array(x: object, name: str) -> np.ndarray:
    """A 1-D C-ordered int64 array (any integer dtype is converted once)."""
    if isinstance(x, (list, tuple, range)):
        x = np.asarray(x, dtype=np.int64) if len(x) else np.empty(0, dtype=np.int64)
    if not isinstance(x, np.ndarray):
        msg = f"{name} must be a 1-D integer numpy array, got {_describe(x)}"
        raise TypeError(msg)
    if x.dtype.kind not in "iu":
        msg = f"{name} must have an integer dtype, got {x.dtype}"
        raise TypeError(msg)
    if x.ndim != 1:
        msg = f"{name} must be a 1-D array, got {x.ndim}-D with shape {x.shape}"
        raise ValueError(msg)
    if x.dtype.kind == "u" and x.dtype.itemsize >= 8 and x.size:
        # uint64 values >= 2**63 would wrap to negative int64 ids: refuse them, never cast.
        high = int(x.max())
        if high > np.iinfo(np.int64).max:
            msg = f"{name} must hold ids that fit in int64 (at most {np.iinfo(np.int64).max}), got {high}"
            raise ValueError(msg)
    return native_layout(np.ascontiguousarray(x, dtype=np.int64))


def _first_repeat(ids: np.ndarray, ordered: bool = False) -> Optional[int]:
    ordered = ids if ordered else np.sort(ids)
    repeats = ordered[1:][ordered[1:] == ordered[:-1]]
    return int(repeats[0]) if repeats.size else None


def subset(x: object, n_rows: int, name: str = "subset", *, sort: bool = False) -> Optional[np.ndarray]:
    """Optional row restriction, as unique int64 ids in [0, n_rows) (ascending with ``sort``).

    Accepted: integer ids (array, list, tuple, range) or a boolean mask of shape (n_rows,).
    One policy for every operator and the retriever: an empty subset (no ids, or a mask with no
    True entry) selects no rows and is refused with ``ValueError``, never answered with nothing.
    """
    if x is None:
        return None
    if isinstance(x, (list, tuple, range)):
        x = np.asarray(x) if len(x) else np.empty(0, dtype=np.int64)
    if isinstance(x, np.ndarray) and x.dtype == np.bool_:
        if x.shape != (n_rows,):
            msg = f"{name} as a boolean mask must have shape ({n_rows},), got {x.shape}"
            raise ValueError(msg)
        x = np.flatnonzero(x)
        if x.size == 0:
            msg = f"{name} as a boolean mask selects no rows (every entry is False); it must select at least one"
            raise ValueError(msg)
    if isinstance(x, np.ndarray) and x.size == 0:
        # Any dtype: np.asarray([]) is float64, and the message should be about emptiness.
        msg = f"{name} must hold at least one id, got an empty array"
        raise ValueError(msg)
    ids = id_array(x, name)
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= n_rows:
        msg = f"{name} ids must lie in [0, {n_rows}), got ids from {low} to {high}"
        raise ValueError(msg)
    if sort:
        ids = np.sort(ids)
    repeat = _first_repeat(ids, ordered=sort)
    if repeat is not None:
        msg = f"{name} ids must be unique, got {repeat} more than once"
        raise ValueError(msg)
    return ids


def subset_mask(x: object, n_rows: int, name: str = "subset") -> Optional[np.ndarray]:
    """:func:`subset` (same rules, same messages) as a boolean mask of shape (n_rows,), for the
    legs that filter by mask (BM25). A valid mask is returned as it is, not copied."""
    if x is None:
        return None
    if isinstance(x, np.ndarray) and x.dtype == np.bool_ and x.shape == (n_rows,) and bool(x.any()):
        return x
    mask = np.zeros(n_rows, dtype=bool)
    mask[subset(x, n_rows, name)] = True
    return mask


def pool(ids: object, C: object, q: object, sims: object = None):
    """A caller's pool: unique ids, their vectors C (P, d), the query, optional cosines."""
    C = corpus(C, "C")
    ids = id_array(ids, "ids")
    if ids.shape[0] != C.shape[0]:
        msg = f"ids must have one id per row of C: expected length {C.shape[0]}, got {ids.shape[0]}"
        raise ValueError(msg)
    repeat = _first_repeat(ids)
    if repeat is not None:
        msg = f"ids must be unique within a pool, got {repeat} more than once"
        raise ValueError(msg)
    q = query(q, C.shape[1], "q", "C")
    check_rows_finite_nonzero(C, "C")
    if sims is not None:
        sims = float32_array(sims, "sims", 1)
        if sims.shape[0] != C.shape[0]:
            msg = f"sims must have one value per row of C: expected length {C.shape[0]}, got {sims.shape[0]}"
            raise ValueError(msg)
        if not np.isfinite(sims).all():
            position = int(np.flatnonzero(~np.isfinite(sims))[0])
            msg = f"sims must be finite, got {sims[position]} at position {position}"
            raise ValueError(msg)
    return ids, C, q, sims


def rankings(x: object, name: str = "rankings") -> list:
    """A sequence of 1-D integer id arrays, each without repeats."""
    if isinstance(x, np.ndarray) or not isinstance(x, Sequence):
        msg = f"{name} must be a list of 1-D integer id arrays, got {_describe(x)}"
        raise TypeError(msg)
    out = []
    for leg, ranking in enumerate(x):
        ids = id_array(ranking, f"{name}[{leg}]")
        repeat = _first_repeat(ids)
        if repeat is not None:
            msg = f"{name}[{leg}] must not repeat an id, got {repeat} twice"
            raise ValueError(msg)
        out.append(ids)
    return out


def weights(x: object, n_rankings: int) -> list:
    """Per-ranking RRF weights (None: all 1.0): finite, >= 0, at most float32's max, one per ranking.

    The float32 bound keeps every weight in the range the other real parameters are held to and
    rules out the sums near 1.8e308 that overflow double: a fused score is at most
    ``sum(weights) / (k0 + 1)``, and a few float32-sized weights cannot sum past double's range.
    """
    if x is None:
        return [1.0] * n_rankings
    values = np.asarray(x)  # no dtype: strings or objects must reach the check below, not numpy's ValueError
    if values.dtype.kind not in "iuf":
        msg = f"weights must be real numbers, got dtype {values.dtype}"
        raise TypeError(msg)
    values = values.astype(np.float64).ravel()
    if values.shape[0] != n_rankings:
        msg = f"weights must have one weight per ranking: expected length {n_rankings}, got {values.shape[0]}"
        raise ValueError(msg)
    bad = np.flatnonzero(~np.isfinite(values) | (values < 0))
    if bad.size:
        msg = f"weights must be finite and >= 0, got {values[bad[0]]} at position {bad[0]}"
        raise ValueError(msg)
    large = np.flatnonzero(values > FLOAT32_MAX)
    if large.size:
        msg = (
            f"weights must be finite as float32 (at most {FLOAT32_MAX:g}), "
            f"got {values[large[0]]} at position {large[0]}"
        )
        raise ValueError(msg)
    return values.tolist()


def uint64(value: object, name: str) -> int:
    """An integer in [0, 2**64) (a native ``std::uint64_t``, e.g. Ring's seed)."""
    v = _non_negative_integer(value, name)
    if v > _tables.UINT64_MAX:
        msg = f"{name} must be an integer below 2**64 (a uint64), got {value}"
        raise ValueError(msg)
    return v


def seed(value: object) -> int:
    """Ring's seed: an integer in [0, 2**64) (the native seed is a uint64)."""
    return uint64(value, "seed")


def tie_key_args(seed_value: object, lap: object) -> tuple:
    """``tie_key``'s seed (like Ring's seed) and lap: integers in [0, 2**64)."""
    v = seed(seed_value)
    lap_value = _non_negative_integer(lap, "lap")
    if lap_value >= 2**64:
        msg = f"lap must be an integer below 2**64 (a uint64), got {lap}"
        raise ValueError(msg)
    return v, lap_value


def tie_key_ids(ids: object) -> np.ndarray:
    """``tie_key``'s ids as uint64 bit patterns: any integers in [-2**63, 2**64), a scalar or 1-D.

    Negative ids are taken modulo 2**64, as the native core's cast does.
    """
    # Lists and scalars go through Python ints: numpy would turn [3, 2**63] into float64.
    values = np.atleast_1d(ids if isinstance(ids, np.ndarray) else np.array(ids, dtype=object))
    if values.ndim != 1:
        msg = f"ids must be a scalar or a 1-D array, got shape {values.shape}"
        raise ValueError(msg)
    if values.dtype == object:
        try:
            values = np.array([int(v) % 2**64 if isinstance(v, numbers.Integral) and not isinstance(v, bool)
                               and -(2**63) <= v < 2**64 else _bad_tie_id(v) for v in values.ravel()],
                              dtype=np.uint64)
        except OverflowError:
            msg = "ids must be integers in [-2**63, 2**64)"
            raise ValueError(msg) from None
    if values.dtype.kind not in "iu":
        msg = f"ids must be integers, got dtype {values.dtype}"
        raise TypeError(msg)
    return values.astype(np.uint64)  # int64 → uint64 wraps negatives modulo 2**64


def _bad_tie_id(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        msg = f"ids must be integers, got {type(value).__name__}"
        raise TypeError(msg)
    msg = f"ids must be integers in [-2**63, 2**64), got {value}"
    raise ValueError(msg)


def as_int64_bits(value: int) -> int:
    """The int64 with the same 64 bits as ``value`` in [0, 2**64) (the native core takes int64)."""
    return value - 2**64 if value >= 2**63 else value


# Parameter groups, shared by the native wrappers and the reference so both check alike.


def corpus_call(E: object, q: object, subset_ids: object):
    E = corpus(E)
    q = query(q, E.shape[1])
    return E, q, subset(subset_ids, E.shape[0])


def batch_call(E: object, Q: object, subset_ids: object, n_threads: object):
    E = corpus(E)
    Q = queries(Q, E.shape[1])
    threads = n_threads_value(n_threads)
    return E, Q, subset(subset_ids, E.shape[0]), threads


def n_threads_value(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        msg = f"n_threads must be an int (0 or less: all cores), got {type(value).__name__}"
        raise TypeError(msg)
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        msg = f"n_threads must fit int64 (0 or less: all cores), got {value}"
        raise ValueError(msg)
    return int(value)


#: The check of each interval of :mod:`fieldrank._param_tables` (the kernel's rules).
_INTERVAL_CHECKS = {
    _tables.POSITIVE_INT: positive_int,
    _tables.UINT64: uint64,
    _tables.UNIT: unit_interval,
    _tables.POSITIVE_REAL: positive_real,
    _tables.NON_NEGATIVE_REAL: non_negative_real,
    _tables.FLAG: flag,
    _tables.NON_NEGATIVE_INT: non_negative_int,
}


def param(spec: _tables.Param, value: object, name: Optional[str] = None) -> Any:
    """``value`` checked against the table row ``spec`` (its interval: the kernel's rule); the
    message calls it ``name`` (default ``spec.name``)."""
    return _INTERVAL_CHECKS[spec.interval](value, spec.name if name is None else name)


def family(name: str, *values: object) -> tuple:
    """``values`` checked against the rows of ``_param_tables.TABLES[name]``, in the table's order
    (the operators pass their parameters positionally in that order)."""
    return tuple(param(spec, value) for spec, value in zip(_tables.TABLES[name], values))


def prefilter_params(p):
    return family("prefilter", p)[0]


def rrf_args(ranking_lists, weight_values, k, k0):
    legs = rankings(ranking_lists)
    return (legs, weights(weight_values, len(legs)), *family("rrf", k, k0))


def unit_or_normalised(X: np.ndarray, normalize: bool, name: str, remedy: str,
                       norms: Optional[np.ndarray] = None) -> np.ndarray:
    """``X``'s rows scaled to unit norm (a new array) with ``normalize``; else ``X`` itself once
    every row has unit norm within UNIT_NORM_ATOL. Norms in float64 (computed here unless given):
    tiny finite rows keep one."""
    if norms is None:
        norms = np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))
    if normalize:
        return np.ascontiguousarray((X / norms[:, None]).astype(np.float32))
    bad = np.flatnonzero(np.abs(norms - 1.0) > UNIT_NORM_ATOL)
    if bad.size:
        msg = f"{name} rows must be L2-normalised; row {bad[0]} has norm {norms[bad[0]]:.6g} ({remedy})"
        raise ValueError(msg)
    return X


def unit_rows(E: np.ndarray, normalize: bool) -> np.ndarray:
    """Check (or, with ``normalize``, make) unit-norm, finite embedding rows (the retriever's and
    the saved index's corpus check)."""
    check_rows_finite_nonzero(E, "embeddings")
    return unit_or_normalised(E, normalize, "embeddings", "pass normalize=True to normalise them once")


def from_fields(cls: type, data: Mapping[str, Any]) -> Any:
    """``cls(**data)`` for a dataclass, refusing unknown keys by name (the ``from_dict`` of the
    parameter dataclasses: ``ValueError`` listing the unknown and the known fields)."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        msg = f"unknown {cls.__name__} field(s) {unknown}; expected a subset of {sorted(known)}"
        raise ValueError(msg)
    return cls(**data)
