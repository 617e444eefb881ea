"""Native operators against the numpy reference (docs/spec.md §0 parity).

Parity, as docs/spec.md §0 defines it and as every check here applies it:

* scores agree within ``SCORE_RTOL`` relative. The error is measured against the scale of the
  ranking's scores (``atol = SCORE_RTOL · max|reference score|``) because several operators
  produce scores at or across zero (min-max normalised CFS-R scores end at 0, MMR objectives
  and CFS log-scores change sign), where a pointwise relative error of float32 is meaningless;
* ids are identical wherever consecutive reference scores differ by more than ``ORDER_GAP``;
  inside a block of reference scores that are closer than that, the native ids are the same
  multiset. A block cut by ``k`` (or ``p``) is read from a longer reference run: the native ids
  there must come from that block.
* When a near-tie at the prefilter boundary gives the native pool another member than the
  reference pool, the prefilter itself must pass the rule above, and the operator is then compared
  with the reference on the native pool (the same computation on the same candidates).
* The greedy pickers (CFS, MMR) carry each pick into every later step, so a near-tie pick that
  goes the other way changes the rest of the list. When the two lists part, every native pick is
  replayed against the reference objective (float64, docs/spec.md §3/§4) given the *same* earlier picks:
  it must be within ``ORDER_GAP`` of that step's best value, and its score within tolerance.

RRF is integer-rank arithmetic in float64 in both modules: it must be bit-identical.

The reference CFS-R costs an exact eigendecomposition per query, so reference results are
cached per input (``reference``) and the grid's data is built once per size (``grid_data``).
"""

from __future__ import annotations

import functools
import hashlib
import json

import numpy as np
import pytest

import fieldrank
import fieldrank.reference
from fieldrank import _core
from fieldrank._results import Ranking, Reconstruction

from tests.helpers import ORDER_GAP, SCORE_RTOL, SEED, unit_rows

NATIVE = fieldrank
REF = fieldrank.reference
D = fieldrank.DEFAULTS

CORPUS_OPS = ("prefilter", "cfsr", "cfs", "mmr", "ring")
GREEDY_OPS = ("cfs", "mmr")
ALL_K = 10**9  # "return everything": every operator returns min(k, pool size)
K_DEFAULT = {"prefilter": D["p"], "cfsr": D["cfsr_k"], "cfs": D["cfs_k"], "mmr": D["mmr_k"], "ring": D["ring_k"]}


# --------------------------------------------------------------------------- the parity rule


def tie_blocks(scores: np.ndarray):
    """(start, end) of runs of consecutive scores whose neighbours differ by at most ORDER_GAP."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        return []
    edges = [0, *(np.flatnonzero(np.abs(np.diff(scores)) > ORDER_GAP) + 1).tolist(), scores.size]
    return list(zip(edges[:-1], edges[1:]))


def assert_scores_close(native: np.ndarray, reference: np.ndarray, what: str = "scores") -> None:
    reference = np.asarray(reference, dtype=np.float64)
    scale = float(np.abs(reference).max()) if reference.size else 0.0
    np.testing.assert_allclose(np.asarray(native, dtype=np.float64), reference, rtol=SCORE_RTOL,
                               atol=SCORE_RTOL * scale, err_msg=what)


def _extended(ref, extend):
    """The reference ranking continued past its cut until the tie block at the cut is closed."""
    m = len(ref.ids)
    k = m + 1  # one more candidate usually shows the block is closed; grow while it is not
    while True:
        longer = extend(k)
        np.testing.assert_array_equal(longer.ids[:m], ref.ids, err_msg="reference is not prefix-stable")
        np.testing.assert_array_equal(longer.scores[:m], ref.scores, err_msg="reference is not prefix-stable")
        exhausted = len(longer.ids) < k
        last_start, _ = tie_blocks(longer.scores)[-1]
        if exhausted or last_start >= m:
            # All candidates seen, or the block holding position m - 1 ends inside `longer`.
            return longer
        k = 2 * k


def assert_order(native_ids: np.ndarray, ref, extend=None) -> None:
    """docs/spec.md §0 order rule; ``extend(k)`` gives the reference with a larger k/p (prefix-stable)."""
    native_ids = np.asarray(native_ids)
    m = len(ref.ids)
    assert native_ids.shape == (m,), f"native returned {native_ids.shape[0]} ids, reference {m}"
    assert np.unique(native_ids).size == m, f"native repeated an id: {native_ids}"
    full = _extended(ref, extend) if (extend is not None and m) else ref
    for start, end in tie_blocks(full.scores):
        if start >= m:
            break
        got = native_ids[start:min(end, m)].tolist()
        block = full.ids[start:end].tolist()
        if end <= m:
            assert sorted(got) == sorted(block), (
                f"positions {start}:{end}: native {got}, reference {block} (scores {full.scores[start:end]})")
        else:
            assert set(got) <= set(block), (
                f"positions {start}:{m} (tie block cut at {m}): native {got} not among reference {block}")


def assert_parity(native, ref, extend=None, full_ref=None) -> None:
    """Scores, order and (for CFS-R) coefficients of one native ranking against the reference."""
    assert native.ids.dtype == np.int64
    assert_scores_close(native.scores, ref.scores)
    assert_order(native.ids, ref, extend)
    if isinstance(ref, Reconstruction):
        # Coefficients are compared id by id (a tie block may permute ids); the full reference
        # run knows the coefficient of every pool member.
        full = full_ref if full_ref is not None else extend(ALL_K)
        coef_of = dict(zip(full.ids.tolist(), full.coef.tolist()))
        expected = np.array([coef_of[i] for i in native.ids.tolist()])
        scale = float(np.abs(full.coef).max())
        np.testing.assert_allclose(native.coef, expected, rtol=SCORE_RTOL, atol=SCORE_RTOL * scale,
                                   err_msg="coefficients")


def assert_greedy_replay(op: str, native, ids, C, sims, kwargs: dict, score_scale: float) -> None:
    """Each native pick is a best pick (within ORDER_GAP) of the docs/spec.md objective given its own earlier picks."""
    C = np.asarray(C, dtype=np.float64)
    sims = np.asarray(sims, dtype=np.float64)
    position = {int(i): j for j, i in enumerate(ids.tolist())}
    picked = np.zeros(len(ids), dtype=bool)
    if op == "cfs":
        sigma, beta, eps = (kwargs.get(name, D[name]) for name in ("sigma", "beta", "eps"))
        base = np.log(np.maximum(sims, eps))
        field = np.zeros(len(ids))
    else:
        mu = kwargs.get("mu", D["mu"])
        max_sim = None  # the max term is 0 while nothing is picked
    for t, pick in enumerate(native.ids.tolist()):
        if op == "cfs":
            value = base - beta * field
        else:
            value = mu * sims - (1.0 - mu) * (0.0 if max_sim is None else max_sim)
        j = position[pick]
        assert not picked[j], f"step {t}: native picked id {pick} twice"
        best = value[~picked].max()
        assert value[j] >= best - ORDER_GAP, (
            f"step {t}: native picked id {pick} with reference value {value[j]!r}; the best was {best!r}")
        assert abs(float(native.scores[t]) - value[j]) <= SCORE_RTOL * max(score_scale, abs(value[j])), (
            f"step {t}: native score {native.scores[t]!r}, reference value {value[j]!r}")
        picked[j] = True
        column = C @ C[j]
        if op == "cfs":
            field += np.exp(-np.maximum(0.0, 2.0 - 2.0 * column) / (2.0 * sigma * sigma))
        else:
            max_sim = column if max_sim is None else np.maximum(max_sim, column)


def assert_operator_parity(op: str, native, ref, extend, pool, kwargs: dict) -> None:
    """assert_parity; for the greedy pickers, a list that parts from the reference at a near tie is replayed.

    ``pool``: a callable giving (ids, C, sims) of the candidates the native run picked from.
    """
    full_ref = extend(ALL_K) if op == "cfsr" else None
    try:
        assert_parity(native, ref, extend, full_ref)
    except AssertionError:
        if op not in GREEDY_OPS:
            raise
        assert native.ids.shape == ref.ids.shape
        scale = float(np.abs(ref.scores).max()) if len(ref.scores) else 0.0
        assert_greedy_replay(op, native, *pool(), kwargs, scale)


# --------------------------------------------------------------------------- cached reference runs


_REFERENCE_CACHE: dict = {}
_KEEP_ALIVE: dict = {}  # arrays keyed by address stay alive, so their memory is never reused


def _key(value):
    """Cache key of an argument: read-only arrays by address, small writeable ones by content."""
    if isinstance(value, np.ndarray):
        if not value.flags.writeable:
            # Read-only memory (a view of it keeps its base alive): the view's address and layout say it all.
            _KEEP_ALIVE[id(value)] = value
            return ("view", value.__array_interface__["data"][0], value.dtype.str, value.shape, value.strides)
        if value.nbytes > 1 << 20:
            return None
        digest = hashlib.blake2b(np.ascontiguousarray(value).tobytes(), digest_size=16).hexdigest()
        return (value.dtype.str, value.shape, digest)
    return repr(value)


def reference(name: str, *args, **kwargs):
    """``fieldrank.reference.<name>(*args, **kwargs)``, computed once per distinct input.

    CFS-R's ranking does not depend on k (the pool is ranked, then cut), so it is computed once
    with every candidate and cut to k: one exact eigendecomposition serves every k.
    """
    size = "p" if name.startswith("prefilter") else "k"
    if name.startswith("cfsr") and not name.endswith("batch") and kwargs.get(size) != ALL_K:
        k = kwargs.get(size, D["cfsr_k"])
        full = reference(name, *args, **{**kwargs, size: ALL_K})
        return Reconstruction(full.ids[:k], full.scores[:k], full.coef[:k])
    key = (name, tuple(_key(a) for a in args), tuple(sorted((k, _key(v)) for k, v in kwargs.items())))
    if None in key[1] or any(v is None for _, v in key[2]):
        return getattr(REF, name)(*args, **kwargs)  # a large writeable array: not cached
    if key not in _REFERENCE_CACHE:
        _REFERENCE_CACHE[key] = getattr(REF, name)(*args, **kwargs)
    return _REFERENCE_CACHE[key]


# --------------------------------------------------------------------------- per-form checks


def _size_key(op: str) -> str:
    return "p" if op == "prefilter" else "k"


def _pool_depth(op: str, kwargs: dict) -> int:
    if op == "ring":
        return kwargs.get("k", D["ring_k"]) * D["ring_pool_factor"]
    return kwargs.get("p", D["p"])


def _pool_kwargs(op: str, kwargs: dict) -> dict:
    """Corpus-form keyword arguments that the pool form also takes."""
    dropped = ("subset",) if op == "prefilter" else ("subset", "p")
    return {key: value for key, value in kwargs.items() if key not in dropped}


def _row(result, b: int):
    if isinstance(result, Reconstruction):
        return Reconstruction(result.ids[b], result.scores[b], result.coef[b])
    return Ranking(result.ids[b], result.scores[b])


def compare_corpus(op: str, E, q, kwargs: dict, native) -> None:
    """Parity of one native corpus-form result for query ``q``."""
    size = _size_key(op)
    if op == "prefilter":
        assert_parity(native, reference("prefilter", E, q, **kwargs),
                      lambda k: reference("prefilter", E, q, **{**kwargs, "p": k}))
        return
    depth = _pool_depth(op, kwargs)
    subset = kwargs.get("subset")
    native_pool = NATIVE.prefilter(E, q, depth, subset=subset)
    ref_pool = reference("prefilter", E, q, depth, subset=subset)
    pool_ids_ = native_pool.ids

    def pool():
        C = E[pool_ids_]
        return pool_ids_, C, C.astype(np.float64) @ q.astype(np.float64)

    if set(pool_ids_.tolist()) == set(ref_pool.ids.tolist()):
        def extend(k):
            return reference(op, E, q, **{**kwargs, size: k})
    else:
        # A near-tie at the pool boundary: legitimate only if the prefilter passes the rule...
        assert_parity(native_pool, ref_pool, lambda k: reference("prefilter", E, q, k, subset=subset))
        # ...and then the operator must match the reference on the native pool.
        pool_kwargs = _pool_kwargs(op, kwargs)

        def extend(k):
            return reference(op + "_pool", pool_ids_, E[pool_ids_], q, **{**pool_kwargs, size: k})

    ref = extend(kwargs.get(size, K_DEFAULT[op]))
    # Ring's result depends on k (its pool is the top 2k), so it cannot be extended.
    assert_operator_parity(op, native, ref, None if op == "ring" else extend, pool, kwargs)


def result_width(op: str, kwargs: dict, n: int) -> int:
    """Ids per query: min(p, n) for the prefilter, min(k, n) for Ring, min(k, p, n) otherwise."""
    width = min(kwargs.get(_size_key(op), K_DEFAULT[op]), n)
    return width if op in ("prefilter", "ring") else min(width, kwargs.get("p", D["p"]))


def check_single(op: str, E, q, **kwargs) -> None:
    compare_corpus(op, E, q, kwargs, getattr(NATIVE, op)(E, q, **kwargs))


def check_batch(op: str, E, Q, **kwargs) -> None:
    """The native batch, row by row, against the reference single form.

    (The reference batch is its single form per row: test_reference_batch_is_single.) Pools
    deeper than the default P cost the reference an exact eigendecomposition each; there only row 0
    is compared with the reference and the other rows with the native single form, bit for bit.
    """
    native = getattr(NATIVE, op + "_batch")(E, Q, **kwargs)
    width = result_width(op, kwargs, E.shape[0] if kwargs.get("subset") is None else len(kwargs["subset"]))
    assert native.ids.shape == (Q.shape[0], width) and native.scores.shape == (Q.shape[0], width)
    assert native.ids.dtype == np.int64 and native.scores.dtype == np.float32
    deep = _pool_depth(op, kwargs) > D["p"] and E.shape[0] > D["p"]
    for b in range(Q.shape[0]):
        if deep and b > 0:
            single = getattr(NATIVE, op)(E, Q[b], **kwargs)
            for got, want in zip(_row(native, b), single):
                np.testing.assert_array_equal(got, want)
        else:
            compare_corpus(op, E, Q[b], kwargs, _row(native, b))


def check_pool(op: str, ids, C, q, **kwargs) -> None:
    size = _size_key(op)
    native = getattr(NATIVE, op + "_pool")(ids, C, q, **kwargs)

    def extend(k):
        return reference(op + "_pool", ids, C, q, **{**kwargs, size: k})

    def pool():
        sims = kwargs.get("sims")
        return ids, C, (C.astype(np.float64) @ q.astype(np.float64) if sims is None else sims)

    assert_operator_parity(op, native, extend(kwargs.get(size, K_DEFAULT[op])), None if op == "ring" else extend,
                           pool, kwargs)


# --------------------------------------------------------------------------- data


def queries_near(rng, E: np.ndarray, count: int, noise: float = 0.5) -> np.ndarray:
    """Unit queries that sit near rows of E (a realistic pool has a few strong candidates)."""
    n, d = E.shape
    Q = E[rng.integers(0, n, size=count)] + noise * unit_rows(rng, count, d)
    norms = np.linalg.norm(Q, axis=1, keepdims=True)
    Q = np.where(norms > 1e-3, Q / np.maximum(norms, 1e-3), unit_rows(rng, count, d))
    return np.ascontiguousarray(Q, dtype=np.float32)


def pool_ids(rng, n: int) -> np.ndarray:
    """Unique caller ids, unsorted and partly negative (pool ids are the caller's, not positions)."""
    return rng.choice(np.arange(-5 * n - 5, 5 * n + 5, dtype=np.int64), size=n, replace=False)


@functools.lru_cache(maxsize=None)
def grid_data(n: int, d: int):
    """Seeded corpus, two queries and caller ids per size, shared by every case of that size (read-only)."""
    rng = np.random.default_rng([SEED, n, d])
    E = unit_rows(rng, n, d)
    Q = queries_near(rng, E, 2)
    ids = pool_ids(rng, n)
    for array in (E, Q, ids):
        array.setflags(write=False)
    return E, Q, ids


SIZES = [(n, d) for n in (1, 3, 97, 1000) for d in (1, 3, 97, 384)]


def _cases(op: str, n: int):
    """Parameter sets per operator, including p >= N and k >= N."""
    if op == "prefilter":
        return {"default": {}, "p2": {"p": 2}, "p>=N": {"p": n + 3}}
    if op == "ring":
        return {"default": {}, "k2": {"k": 2}, "k>=N": {"k": n + 2}, "laps5": {"k": 3, "laps": 5, "alpha": 0.7}}
    extra = {"cfsr": {"w": 0.6, "lam": 0.05}, "cfs": {"sigma": 0.25, "beta": 0.5}, "mmr": {"mu": 0.3}}[op]
    return {"default": {}, "small": {"p": 8, "k": 3, **extra}, "p>=N": {"p": n + 3},
            "k>=N": {"k": n + 2}, "p,k>=N": {"p": n + 3, "k": n + 2}}


GRID = [(op, n, d, case) for op in CORPUS_OPS for n, d in SIZES for case in _cases(op, n)]


@pytest.mark.parametrize(("op", "n", "d", "case"), GRID, ids=[f"{o}-N{n}-d{d}-{c}" for o, n, d, c in GRID])
def test_parity_grid(op, n, d, case):
    kwargs = _cases(op, n)[case]
    E, Q, ids = grid_data(n, d)
    check_single(op, E, Q[0], **kwargs)
    check_batch(op, E, Q, **kwargs)  # row 0 repeats the single query: the batch must agree with it too
    # The pool form over the whole corpus as the caller's pool, with the caller's ids.
    check_pool(op, ids, E, Q[0], **_pool_kwargs(op, kwargs))


@pytest.mark.parametrize("op", CORPUS_OPS)
def test_reference_batch_is_single(rng, op):
    """The reference batch is its single form per row (the grid compares native batches with it)."""
    E = unit_rows(rng, 97, 16)
    Q = queries_near(rng, E, 3)
    for kwargs in ({}, {_size_key(op): 5}):
        batch = getattr(REF, op + "_batch")(E, Q, **kwargs)
        for b in range(3):
            single = getattr(REF, op)(E, Q[b], **kwargs)
            for got, want in zip(_row(batch, b), single):
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["cfsr", "cfs", "mmr", "ring"])
def test_pool_with_given_sims(rng, op):
    """Pool forms that take precomputed similarities use them instead of C q."""
    E = unit_rows(rng, 60, 32)
    q = queries_near(rng, E, 1)[0]
    ids = pool_ids(rng, 60)
    sims = (E @ q + 0.01 * rng.standard_normal(60)).astype(np.float32)
    check_pool(op, ids, E, q, sims=sims)
    # ...and give the same result as computing them when they are the cosines themselves.
    exact = getattr(NATIVE, op + "_pool")(ids, E, q, sims=(E @ q).astype(np.float32))
    computed = getattr(NATIVE, op + "_pool")(ids, E, q)
    assert_order(exact.ids, getattr(REF, op + "_pool")(ids, E, q))
    assert_scores_close(exact.scores, computed.scores)


# --------------------------------------------------------------------------- the rule can fail


def test_order_rule_rejects_a_swap_across_a_gap():
    ref = Ranking(np.array([4, 2, 9]), np.array([0.9, 0.8, 0.7]))
    with pytest.raises(AssertionError):
        assert_order(np.array([2, 4, 9]), ref)
    with pytest.raises(AssertionError):
        assert_order(np.array([4, 2, 7]), ref)
    assert_order(np.array([4, 2, 9]), ref)


def test_order_rule_accepts_a_swap_inside_a_tie_block():
    ref = Ranking(np.array([4, 2, 9]), np.array([0.9, 0.9 - ORDER_GAP / 2, 0.7]))
    assert_order(np.array([2, 4, 9]), ref)


def test_order_rule_at_the_cut_uses_the_longer_reference():
    full = Ranking(np.array([4, 2, 9, 5]), np.array([0.9, 0.5, 0.5, 0.1]))

    def extend(k):
        return Ranking(full.ids[:k], full.scores[:k])

    # Native kept 9 instead of 2: a tie at the cut (p = 2) may do that...
    assert_order(np.array([4, 9]), extend(2), extend)
    # ...but not 5, which is below the tie.
    with pytest.raises(AssertionError):
        assert_order(np.array([4, 5]), extend(2), extend)


def test_scores_rule_rejects_a_relative_error_above_tolerance():
    with pytest.raises(AssertionError):
        assert_scores_close(np.array([1.0, 0.5]), np.array([1.0, 0.5 * (1 + 5 * SCORE_RTOL)]))
    assert_scores_close(np.array([1.0, 0.5]), np.array([1.0, 0.5 * (1 + SCORE_RTOL / 5)]))


def _boundary_near_tie(rng, d: int = 64, tries: int = 4000):
    """E = [z, x, y, -q]: z clearly first; x and y (one ulp apart) tie at the p = 2 cut within float32
    noise, and float32 and float64 keep different ones."""
    q = unit_rows(rng, 1, d)[0]
    z = q + 0.3 * unit_rows(rng, 1, d)[0]
    z = (z / np.linalg.norm(z)).astype(np.float32)
    for _ in range(tries):
        x = unit_rows(rng, 1, d)[0]
        y = x.copy()
        j = int(rng.integers(d))
        y[j] = np.nextafter(y[j], np.float32(np.inf) if rng.random() < 0.5 else np.float32(-np.inf))
        E = np.stack([z, x, y, -q]).astype(np.float32)
        if set(NATIVE.prefilter(E, q, 2).ids.tolist()) != set(REF.prefilter(E, q, 2).ids.tolist()):
            return E, q
    pytest.fail("found no float32/float64 boundary near-tie")


def test_boundary_near_tie_changes_pool_membership_within_the_rule(rng):
    E, q = _boundary_near_tie(rng)
    native, ref = NATIVE.prefilter(E, q, 2), REF.prefilter(E, q, 2)
    assert native.ids[1] != ref.ids[1]
    # The rule admits it only because the cut falls inside a tie block of the longer reference.
    assert_parity(native, ref, lambda k: REF.prefilter(E, q, k))
    with pytest.raises(AssertionError):
        assert_order(native.ids, ref)
    # Every operator on that pool passes, compared with the reference on the native pool...
    for op, kwargs in (("cfsr", {"p": 2}), ("cfs", {"p": 2}), ("mmr", {"p": 2}), ("ring", {"k": 1})):
        check_single(op, E, q, **kwargs)
    # ...and a wrong result on it is still caught.
    wrong = Ranking(native.ids[::-1].copy(), native.scores)
    with pytest.raises(AssertionError):
        compare_corpus("prefilter", E, q, {"p": 2}, wrong)


# --------------------------------------------------------------------------- layouts, subset, sizes


def _strided(x: np.ndarray) -> np.ndarray:
    """A non-contiguous view with the same values (every other element along the last axis)."""
    wide = np.repeat(x, 2, axis=-1)
    return wide[..., ::2]


@pytest.mark.parametrize("op", CORPUS_OPS)
def test_f_order_and_strided_inputs_match_c_order(rng, fr, op):
    E = unit_rows(rng, 120, 24)
    Q = queries_near(rng, E, 3)
    q = Q[0]
    subset = rng.permutation(120)[:70]
    variants = [np.asfortranarray(E), _strided(E), np.repeat(E, 2, axis=0)[::2]]
    for E_layout in variants:
        assert not E_layout.flags.c_contiguous
        for got, want in (
            (getattr(fr, op)(E_layout, _strided(q)), getattr(fr, op)(E, q)),
            (getattr(fr, op)(E_layout, q, subset=np.repeat(subset, 2)[::2]), getattr(fr, op)(E, q, subset=subset)),
            (getattr(fr, op + "_batch")(E_layout, np.asfortranarray(Q)), getattr(fr, op + "_batch")(E, Q)),
        ):
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)
    ids = pool_ids(rng, 120)
    got = getattr(fr, op + "_pool")(np.repeat(ids, 2)[::2], np.asfortranarray(E), _strided(q))
    want = getattr(fr, op + "_pool")(ids, E, q)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    if op != "prefilter":
        sims = (E @ q).astype(np.float32)
        got = getattr(fr, op + "_pool")(ids, E, q, sims=_strided(sims))
        want = getattr(fr, op + "_pool")(ids, E, q, sims=sims)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("op", CORPUS_OPS)
def test_subset_restricts_to_its_rows(rng, fr, op):
    """A subset run equals the run on those rows alone (ids mapped back), and never leaves it."""
    E = unit_rows(rng, 300, 16)
    Q = queries_near(rng, E, 3)
    subset = rng.permutation(300)[:90]
    rows = np.sort(subset)  # ascending, so the id mapping keeps the tie rule's order
    for q in Q:
        got = getattr(fr, op)(E, q, subset=subset)
        alone = getattr(fr, op)(E[rows], q)
        assert np.isin(got.ids, subset).all()
        np.testing.assert_array_equal(got.ids, rows[alone.ids])
        np.testing.assert_array_equal(got.scores, alone.scores)
    batch = getattr(fr, op + "_batch")(E, Q, subset=subset)
    assert np.isin(batch.ids, subset).all()
    # A row slice is a zero-copy view: same result as the subset of the same rows.
    lo, hi = 100, 190
    for q in Q:
        sliced = getattr(fr, op)(E[lo:hi], q)
        ranged = getattr(fr, op)(E, q, subset=np.arange(lo, hi))
        np.testing.assert_array_equal(sliced.ids + lo, ranged.ids)
        np.testing.assert_array_equal(sliced.scores, ranged.scores)


@pytest.mark.parametrize("op", CORPUS_OPS)
@pytest.mark.parametrize("n", [1, 3, 7])
def test_k_above_n_returns_min_k_n(rng, fr, op, n):
    E = unit_rows(rng, n, 5)
    q = queries_near(rng, E, 1)[0]
    size = _size_key(op)
    big = {size: n + 4}
    assert len(getattr(fr, op)(E, q, **big).ids) == n
    assert getattr(fr, op + "_batch")(E, np.stack([q, q]), **big).ids.shape == (2, n)
    assert len(getattr(fr, op + "_pool")(np.arange(n), E, q, **big).ids) == n
    # The pool depth p caps the other operators too.
    if op in ("cfsr", "cfs", "mmr"):
        assert len(getattr(fr, op)(E, q, k=n + 4, p=max(1, n - 1)).ids) == max(1, n - 1)


@pytest.mark.parametrize("op", CORPUS_OPS)
def test_empty_batch(rng, fr, op):
    E = unit_rows(rng, 20, 6)
    Q = np.empty((0, 6), dtype=np.float32)
    result = getattr(fr, op + "_batch")(E, Q)
    width = {"prefilter": min(D["p"], 20), "cfsr": min(D["cfsr_k"], 20), "cfs": min(D["cfs_k"], 20),
             "mmr": min(D["mmr_k"], 20), "ring": min(D["ring_k"], 20)}[op]
    for array in result:
        assert array.shape == (0, width)
    assert result.ids.dtype == np.int64
    native = getattr(NATIVE, op + "_batch")(E, Q)
    for a, b in zip(native, result):
        assert a.shape == b.shape


# --------------------------------------------------------------------------- tie rule


def _with_duplicates(rng, n: int, d: int):
    """Unit rows where row `src` is copied to lower and higher ids; the query is that row."""
    E = unit_rows(rng, n, d)
    src = n // 2
    copies = np.array([3, src + 7, n - 2])
    E[copies] = E[src]
    group = np.sort(np.append(copies, src))
    return E, E[src].copy(), group


@pytest.mark.parametrize("d", [3, 97, 384])
def test_exact_ties_go_to_the_lower_id(rng, fr, d):
    E, q, group = _with_duplicates(rng, 400, d)
    top = fr.prefilter(E, q, 10)
    assert top.ids[:4].tolist() == group.tolist()
    assert np.unique(top.scores[:4]).size == 1  # identical rows score bit-identically
    # CFS-R: duplicates get identical coefficients and scores, and are listed by id.
    rec = fr.cfsr(E, q, 50)
    where = np.flatnonzero(np.isin(rec.ids, group))
    assert rec.ids[where].tolist() == group.tolist()
    assert np.unique(rec.scores[where]).size == 1 and np.unique(rec.coef[where]).size == 1
    assert np.array_equal(where, np.arange(where[0], where[0] + 4))
    # CFS with beta = 0 and MMR with mu = 1 rank by cosine alone: the tied copies stay adjacent, by id.
    assert fr.cfs(E, q, 4, beta=0.0).ids.tolist() == group.tolist()
    assert fr.mmr(E, q, 4, mu=1.0).ids.tolist() == group.tolist()
    # With their diversity terms on, the first pick among the tied copies is the lowest id.
    assert fr.cfs(E, q, 1).ids[0] == group[0]
    assert fr.mmr(E, q, 1).ids[0] == group[0]
    # Pool forms use the caller's ids for the tie rule.
    ids = np.arange(400, dtype=np.int64)[::-1].copy()  # reversed: row i has id 399 - i
    top = fr.prefilter_pool(ids, E, q, 4)
    assert top.ids.tolist() == sorted(ids[group].tolist())
    assert fr.cfsr_pool(ids[group], E[group], q, 4).ids.tolist() == sorted(ids[group].tolist())
    assert fr.cfs_pool(ids, E, q, 1).ids[0] == ids[group].min()
    assert fr.mmr_pool(ids, E, q, 1).ids[0] == ids[group].min()


DUPLICATE_OPS = [("prefilter", {}), ("cfsr", {}), ("cfsr", {"fista": True}), ("cfs", {}), ("cfs", {"beta": 0.0}),
                 ("mmr", {}), ("mmr", {"mu": 1.0}), ("ring", {})]


@pytest.mark.parametrize("P", [97, 150, 300])
@pytest.mark.parametrize("d", [16, 33, 97, 384])
def test_duplicate_rows_tie_exactly_wherever_they_sit(rng, fr, d, P):
    """A quarter of the pool copied onto another quarter: every copy scores bit-identically to its
    source (and gets the same CFS-R coefficient), and the tie goes to the lower id.

    Summation orders that depend on a row's position (BLAS/Eigen blocked products, vectorised
    log/exp with a scalar tail) break this for some positions, so many positions are tried.
    """
    C = unit_rows(rng, P, d)
    perm = rng.permutation(P)
    src, dst = perm[: P // 4], perm[P // 4: 2 * (P // 4)]
    C[dst] = C[src]
    q = 0.6 * C[src[0]] + 0.4 * C[rng.integers(P)]
    q = (q / np.linalg.norm(q)).astype(np.float32)
    ids = np.arange(P, dtype=np.int64)
    for op, params in DUPLICATE_OPS:
        size = {"prefilter": "p", "ring": "k"}.get(op, "k")
        result = getattr(fr, op + "_pool")(ids, C, q, **{size: P // 2 if op == "ring" else P}, **params)
        where = {i: j for j, i in enumerate(result.ids.tolist())}
        for a, b in zip(src.tolist(), dst.tolist()):
            low, high = min(a, b), max(a, b)
            if op == "ring":
                # Ring draws exact ties by tie_key: survivors that tie keep the last lap's draw order.
                if low in where and high in where:
                    assert result.scores[where[low]] == result.scores[where[high]], (op, params, a, b)
                    keys = REF.tie_key(D["seed"], D["laps"] - 1, np.array([low, high]))
                    assert (where[low] < where[high]) == (keys[0] < keys[1]), (op, a, b)
                continue
            assert low in where and high in where, (op, params, a, b)
            assert where[low] < where[high], (op, params, a, b)  # the lower id is picked/listed first
            if op in ("prefilter", "cfsr") or params in ({"beta": 0.0}, {"mu": 1.0}):
                assert result.scores[where[low]] == result.scores[where[high]], (op, params, a, b)
            if op == "cfsr":
                assert result.coef[where[low]] == result.coef[where[high]], (op, params, a, b)


def test_exact_ties_identical_in_both_modules(rng):
    """With planted ties both modules return identical ids for every operator and form."""
    E, q, _ = _with_duplicates(rng, 400, 97)
    Q = np.stack([q, E[10], E[200]])
    for op in CORPUS_OPS:
        for form, call in (("", lambda m: getattr(m, op)(E, q)),
                           ("_batch", lambda m: getattr(m, op + "_batch")(E, Q)),
                           ("_pool", lambda m: getattr(m, op + "_pool")(np.arange(400)[::-1].copy(), E, q))):
            np.testing.assert_array_equal(call(NATIVE).ids, call(REF).ids, err_msg=op + form)


# --------------------------------------------------------------------------- RRF


def _random_legs(rng, n_legs: int, universe: int, depth: int):
    return [rng.choice(universe, size=min(depth, universe), replace=False).astype(np.int64) for _ in range(n_legs)]


@pytest.mark.parametrize("k", [1, 3, 10, 1000])
@pytest.mark.parametrize("k0", [0.0, 1.5, 60.0])
def test_rrf_bit_identical(rng, k, k0):
    for n_legs, universe, depth in ((1, 5, 5), (3, 30, 10), (5, 200, 50), (2, 4, 4)):
        legs = _random_legs(rng, n_legs, universe, depth)
        for weights in (None, rng.random(n_legs) * 3, np.ones(n_legs), np.zeros(n_legs)):
            native = NATIVE.rrf(legs, weights, k, k0=k0)
            ref = REF.rrf(legs, weights, k, k0=k0)
            np.testing.assert_array_equal(native.ids, ref.ids)
            np.testing.assert_array_equal(native.scores, ref.scores)
            assert native.scores.dtype == np.float64 and native.ids.dtype == np.int64
            assert len(native.ids) == min(k, len(set(np.concatenate(legs).tolist())))


def test_rrf_unchecked_equals_rrf(rng):
    """``_core.rrf_unchecked`` (the retriever's single-query fusion: no checks, ids read in place)
    gives ``rrf``'s ids and scores bit for bit, whatever the layout or integer dtype of the legs."""
    for n_legs, universe, depth in ((1, 5, 5), (2, 600, 10), (3, 30, 10), (5, 200, 50)):
        legs = _random_legs(rng, n_legs, universe, depth)
        for weights in ([1.0] * n_legs, (rng.random(n_legs) * 3).tolist(), [0.0] * n_legs):
            for k, k0 in ((1, 0.0), (10, 60.0), (1000, 1.5)):
                ref = REF.rrf(legs, weights, k, k0=k0)
                for given in (legs, [leg.astype(np.int32) for leg in legs],
                              [np.repeat(leg, 2)[::2] for leg in legs]):  # int32 / strided: converted
                    fused = _core.rrf_unchecked(given, weights, k, k0)
                    np.testing.assert_array_equal(fused.ids, ref.ids)
                    np.testing.assert_array_equal(fused.scores, ref.scores)
                    assert fused.ids.dtype == np.int64 and fused.scores.dtype == np.float64
    empty = _core.rrf_unchecked([np.array([], dtype=np.int64)] * 2, [1.0, 1.0], 5, 60.0)
    assert empty.ids.shape == (0,) and empty.scores.shape == (0,)


def test_rrf_formula_and_tie_rule():
    legs = [np.array([7, 3, 5]), np.array([3, 7]), np.array([9])]
    for fr in (NATIVE, REF):
        fused = fr.rrf(legs, [1.0, 1.0, 2.0], 10, k0=60)
        expected = {7: 1 / 61 + 1 / 62, 3: 1 / 62 + 1 / 61, 5: 1 / 63, 9: 2 / 61}
        # 9 first (2/61), then the exact tie 3 / 7 (same sum, in another order of addition: lower id first).
        assert fused.ids.tolist() == [9, 3, 7, 5]
        np.testing.assert_allclose(fused.scores, [expected[i] for i in fused.ids], rtol=1e-15)
        assert fused.scores[1] == fused.scores[2]
        # A candidate absent from a leg gets nothing from it; a zero weight silences a leg.
        silenced = fr.rrf(legs, [1.0, 1.0, 0.0], 10)
        assert silenced.ids.tolist()[:2] == [3, 7] and silenced.scores[-1] == 0.0


def test_rrf_batch_bit_identical(rng):
    per_query = [_random_legs(rng, 3, 40, 12) for _ in range(6)] + [[np.array([], dtype=np.int64)] * 3]
    weights = [1.0, 1.0, 3.0]
    native = NATIVE.rrf_batch(per_query, weights, 10)
    ref = REF.rrf_batch(per_query, weights, 10)
    assert len(native) == len(ref) == len(per_query)
    for a, b, legs in zip(native, ref, per_query):
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)
        single = NATIVE.rrf(legs, weights, 10)
        np.testing.assert_array_equal(a.ids, single.ids)
    assert NATIVE.rrf_batch([], weights, 10) == REF.rrf_batch([], weights, 10) == []
    assert len(NATIVE.rrf([], None, 5).ids) == len(REF.rrf([], None, 5).ids) == 0


# --------------------------------------------------------------------------- CFS-R against a peer solver


def _nnls_ridge(C: np.ndarray, q: np.ndarray, lam: float) -> np.ndarray:
    """argmin_{a >= 0} ½‖q − Cᵀa‖² + ½λ‖a‖² as nnls on [Cᵀ; √λ I] a ≈ [q; 0]."""
    optimize = pytest.importorskip("scipy.optimize")
    P = C.shape[0]
    A = np.vstack([C.T.astype(np.float64), np.sqrt(lam) * np.eye(P)])
    b = np.concatenate([q.astype(np.float64), np.zeros(P)])
    solution, _ = optimize.nnls(A, b, maxiter=50 * P)
    return solution


def _coef_by_position(result, ids: np.ndarray) -> np.ndarray:
    position = {int(i): j for j, i in enumerate(ids)}
    coef = np.zeros(len(ids))
    coef[[position[int(i)] for i in result.ids]] = result.coef
    return coef


def _peer_problems(rng):
    """(C, q) pairs: a dense and a sparse solution, P < d so the problem is well conditioned."""
    C1 = unit_rows(rng, 40, 97)
    q1 = unit_rows(rng, 1, 97)[0]
    C2 = unit_rows(rng, 30, 384)
    q2 = C2[[2, 5, 11]].sum(axis=0) + 0.2 * unit_rows(rng, 1, 384)[0]
    q2 = (q2 / np.linalg.norm(q2)).astype(np.float32)
    return [(C1, q1), (C2, q2)]


@pytest.mark.parametrize("fista", [False, True], ids=["plain", "fista"])
def test_cfsr_coefficients_match_nnls(rng, fr, fista):
    lam = D["lam"]
    for C, q in _peer_problems(rng):
        ids = np.arange(C.shape[0], dtype=np.int64)
        expected = _nnls_ridge(C, q, lam)
        result = fr.cfsr_pool(ids, C, q, k=C.shape[0], lam=lam, iters=5000, tol=0.0, fista=fista)
        assert len(result.ids) == C.shape[0]
        np.testing.assert_allclose(_coef_by_position(result, ids), expected, rtol=0, atol=1e-4)
        assert (result.coef >= 0).all()


ITERATION_GRID = (10, 15, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840, 5000)


def _iterations_to_reach(fr, C, q, expected, fista):
    """The first T of ITERATION_GRID whose coefficients are within 1e-4 of the nnls solution."""
    ids = np.arange(C.shape[0], dtype=np.int64)
    for iters in ITERATION_GRID:
        result = fr.cfsr_pool(ids, C, q, k=C.shape[0], iters=iters, fista=fista)
        if np.abs(_coef_by_position(result, ids) - expected).max() <= 1e-4:
            return iters
    return None


def test_fista_reaches_the_nnls_solution_in_fewer_iterations(rng, fr):
    # P close to d and a query inside the cone of the rows: a dense solution on an ill-conditioned
    # Gram matrix, where the plain method needs about a thousand iterations.
    C = unit_rows(rng, 70, 97)
    q = rng.random(70) @ C
    q = (q / np.linalg.norm(q)).astype(np.float32)
    expected = _nnls_ridge(C, q, D["lam"])
    assert (expected > 0).mean() > 0.5
    plain = _iterations_to_reach(fr, C, q, expected, fista=False)
    fast = _iterations_to_reach(fr, C, q, expected, fista=True)
    assert plain is not None and fast is not None, (plain, fast)
    assert fast < plain, (fast, plain)


@pytest.mark.parametrize("variant", [{"fista": True}, {"tol": 1e-3, "iters": 2000}, {"tol": 1e-3, "fista": True},
                                     {"iters": 1}, {"lam": 0.0}, {"w": 0.0}, {"w": 1.0}],
                         ids=["fista", "tol", "tol-fista", "iters1", "lam0", "w0", "w1"])
@pytest.mark.parametrize(("n", "d"), [(97, 97), (1000, 384)])
def test_cfsr_variants_parity(rng, variant, n, d):
    E = unit_rows(rng, n, d)
    Q = queries_near(rng, E, 3)
    check_single("cfsr", E, Q[0], **variant)
    check_batch("cfsr", E, Q[1:], **variant)
    check_pool("cfsr", pool_ids(rng, 50), E[:50], Q[0], **variant)


def test_cfsr_tolerance_stops_early(fr, rng):
    """A tolerance the zero start already meets stops before the first step: a = 0, cosine order."""
    E = unit_rows(rng, 200, 32)
    q = queries_near(rng, E, 1)[0]
    stopped = fr.cfsr(E, q, 20, tol=1e9)
    assert (stopped.coef == 0).all()
    np.testing.assert_array_equal(stopped.ids, fr.prefilter(E, q, 20).ids)
    assert not (fr.cfsr(E, q, 20, tol=1e-12).coef == 0).all()


def test_cfsr_default_is_the_plain_method(fr, rng):
    E = unit_rows(rng, 200, 32)
    q = queries_near(rng, E, 1)[0]
    default = fr.cfsr(E, q)
    plain = fr.cfsr(E, q, D["cfsr_k"], p=D["p"], w=D["w"], lam=D["lam"], iters=D["iters"], tol=0.0, fista=False)
    for a, b in zip(default, plain):
        np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------- Ring


@pytest.mark.parametrize("seed", [0, 1, 7, 12345, 2**63 + 11])
def test_ring_ablation_returns_cosine_top_k(rng, fr, seed):
    E = unit_rows(rng, 500, 64)
    for q in queries_near(rng, E, 3):
        for k in (1, 5, 10, 37):
            for laps in (1, 3, 6):
                got = fr.ring(E, q, k, laps=laps, seed=seed, ablation=True)
                np.testing.assert_array_equal(got.ids, fr.prefilter(E, q, k).ids)


@pytest.mark.parametrize(("n", "k", "laps"), [(1, 1, 1), (1, 5, 3), (3, 1, 7), (10, 4, 1), (50, 10, 3), (50, 24, 9),
                                              (50, 25, 2), (50, 60, 3), (200, 7, 20)])
def test_ring_returns_exactly_min_k_n(rng, fr, n, k, laps):
    E = unit_rows(rng, n, 8)
    Q = queries_near(rng, E, 2)
    for q in Q:
        got = fr.ring(E, q, k, laps=laps)
        assert len(got.ids) == min(k, n) and np.unique(got.ids).size == min(k, n)
        assert np.isin(got.ids, fr.prefilter(E, q, 2 * k).ids).all()
    assert fr.ring_batch(E, Q, k, laps=laps).ids.shape == (2, min(k, n))
    assert len(fr.ring_pool(np.arange(n), E, Q[0], k, laps=laps).ids) == min(k, n)


def test_ring_same_seed_same_result(rng, fr):
    # d = 1: every row is +1 or -1, so every lap is decided by exact ties and the seeded draw.
    E = unit_rows(rng, 300, 1)
    q = np.ones(1, dtype=np.float32)
    results = {}
    for seed in (0, 1, 2, 3):
        first = fr.ring(E, q, 10, seed=seed)
        again = fr.ring(E, q, 10, seed=seed)
        np.testing.assert_array_equal(first.ids, again.ids)
        np.testing.assert_array_equal(first.scores, again.scores)
        results[seed] = tuple(first.ids.tolist())
    assert len(set(results.values())) > 1, "the seed does not change how exact ties are drawn"


@pytest.mark.parametrize("ablation", [False, True])
def test_ring_tie_draws_follow_tie_key(rng, ablation):
    """All-tied pools: survivors and their order are the tie_key order, identical in both modules."""
    ids = pool_ids(rng, 20)
    C = np.ones((20, 1), dtype=np.float32)
    q = np.ones(1, dtype=np.float32)
    for seed in (0, 5, 2**64 - 1):
        for laps in (1, 3):
            native = NATIVE.ring_pool(ids, C, q, 6, laps=laps, seed=seed, ablation=ablation)
            ref = REF.ring_pool(ids, C, q, 6, laps=laps, seed=seed, ablation=ablation)
            np.testing.assert_array_equal(native.ids, ref.ids)
            # The last lap orders the survivors by their draw.
            keys = REF.tie_key(seed, laps - 1, native.ids)
            assert np.all(keys[:-1] < keys[1:]), keys


def test_tie_key_native_equals_numpy():
    ids = np.array([0, 1, 2, 17, 10**6, 2**62, -1, -(2**63)], dtype=np.int64)
    for seed in (0, 1, 42, 2**32 + 3, 2**63, 2**64 - 1):
        for lap in (0, 1, 2, 9):
            expected = fieldrank.reference.tie_key(seed, lap, ids)
            assert expected.dtype == np.uint64
            native = np.array([_core.tie_key(seed, lap, int(i)) for i in ids], dtype=np.uint64)
            np.testing.assert_array_equal(native, expected)
            np.testing.assert_array_equal(fieldrank.tie_key(seed, lap, ids), expected)
    # splitmix64's published first output for state 0 (the finaliser of 0x9E3779B97F4A7C15).
    assert int(fieldrank.reference._splitmix64(np.array([0], dtype=np.uint64))[0]) == 0xE220A8397B1DCDAF


# --------------------------------------------------------------------------- real data (LoCoMo)


@functools.lru_cache(maxsize=None)
def _locomo(locomo_dir, model: str):
    """Read-only turn and question embeddings, each conversation's row range, each question's conversation."""
    emb = locomo_dir / "emb" / model
    E = np.load(emb / "turns.npy")
    Qs = np.load(emb / "questions.npy")
    with (locomo_dir / "turns.jsonl").open(encoding="utf-8") as turns:
        conv = np.array([json.loads(line)["conv_index"] for line in turns])
    with (locomo_dir / "questions.jsonl").open(encoding="utf-8") as questions:
        question_conv = np.array([json.loads(line)["conv_index"] for line in questions])
    assert E.shape[0] == conv.size and Qs.shape[0] == question_conv.size
    assert (np.diff(conv) >= 0).all(), "turns.jsonl is not in conversation order"
    bounds = {}
    for c in np.unique(conv):
        rows = np.flatnonzero(conv == c)
        bounds[int(c)] = (int(rows[0]), int(rows[-1]) + 1)
    for array in (E, Qs):
        array.setflags(write=False)
    return E, Qs, bounds, question_conv


@pytest.mark.parametrize("model", ["minilm-l6-v2", "mpnet-base-v2"])
@pytest.mark.parametrize("op", CORPUS_OPS)
def test_parity_on_locomo(locomo_dir, model, op):
    """100 questions (10 per conversation), each ranked against its own conversation's turns."""
    E, Qs, bounds, question_conv = _locomo(locomo_dir, model)
    checked = 0
    for conv, (lo, hi) in sorted(bounds.items()):
        chosen = np.flatnonzero(question_conv == conv)[:10]
        for j, qi in enumerate(chosen):
            if j % 2:
                check_single(op, E, Qs[qi], subset=np.arange(lo, hi))
            else:
                check_single(op, E[lo:hi], Qs[qi])  # a row slice: zero-copy, ids relative to lo
            checked += 1
        # The batch form over the conversation equals the single form row by row (so it has parity too).
        Q = Qs[chosen]
        batch = getattr(NATIVE, op + "_batch")(E[lo:hi], Q)
        for b in range(Q.shape[0]):
            single = getattr(NATIVE, op)(E[lo:hi], Q[b])
            np.testing.assert_array_equal(batch.ids[b], single.ids)
            np.testing.assert_array_equal(batch.scores[b], single.scores)
    assert checked == 100


def test_rrf_stack_on_locomo(locomo_dir):
    """The default rrf_cfsr legs (cosine 10, CFS-R 50 ×3) fused identically by both modules."""
    E, Qs, bounds, question_conv = _locomo(locomo_dir, "minilm-l6-v2")
    for conv, (lo, hi) in sorted(bounds.items()):
        for qi in np.flatnonzero(question_conv == conv)[:3]:
            subset = np.arange(lo, hi)
            legs = [NATIVE.prefilter(E, Qs[qi], 10, subset=subset).ids, NATIVE.cfsr(E, Qs[qi], 50, subset=subset).ids]
            native = NATIVE.rrf(legs, [1.0, 3.0], 10)
            ref = REF.rrf(legs, [1.0, 3.0], 10)
            np.testing.assert_array_equal(native.ids, ref.ids)
            np.testing.assert_array_equal(native.scores, ref.scores)
