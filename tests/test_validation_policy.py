"""One validation policy across the layers (``fieldrank._validation``'s docstring, docs/design.md).

Each test states one rule and checks it in every layer it applies to, so that a layer that
drifts from the shared helpers fails here. The rules that changed when the layers moved onto
the shared helpers are marked "changed".
"""

from __future__ import annotations

import numpy as np
import pytest

import fieldrank
import fieldrank.reference as reference
from fieldrank import _validation as _v
from fieldrank.bm25 import BM25Index, BM25Params
from fieldrank.config import CFSLeg, CFSRLeg, CosineLeg, RingLeg
from fieldrank.hybrid import HybridRetriever
from fieldrank.memory import MemoryParams, MemoryStore

DIM = 8
TEXTS = ["the cat sat", "a dog ran", "cats and dogs", "paint the garden", "violin music"]


def unit_rows(rng, n: int) -> np.ndarray:
    E = rng.standard_normal((n, DIM)).astype(np.float32)
    return E / np.linalg.norm(E, axis=1, keepdims=True)


# ------------------------------------------------------------------------- scalars


@pytest.mark.parametrize("value", [3.0, True, "3", None])
@pytest.mark.parametrize(
    "make",
    [
        lambda v: fieldrank.mmr(np.eye(2, dtype=np.float32), np.ones(2, np.float32), k=v),
        lambda v: reference.mmr(np.eye(2, dtype=np.float32), np.ones(2, np.float32), k=v),
        lambda v: CosineLeg(depth=v),
        lambda v: BM25Params(context_window=v),
        lambda v: MemoryParams(dense_quota=v),
        lambda v: _v.integer(v, "x", low=0),
    ],
    ids=["native", "reference", "config", "bm25", "memory", "helper"],
)
def test_an_int_parameter_refuses_floats_bools_and_strings(make, value):
    with pytest.raises(TypeError, match="must be an int"):
        make(value)


@pytest.mark.parametrize(
    "make",
    [
        lambda v: CFSLeg(sigma=v),
        lambda v: BM25Params(k1=v),
        lambda v: MemoryParams(tag_boost=v),
        lambda v: _v.real(v, "x"),
    ],
    ids=["config", "bm25", "memory", "helper"],
)
def test_a_real_parameter_takes_numbers_and_refuses_nan_and_bool(make):
    make(np.float64(0.5))
    make(1)  # an int is a real number
    with pytest.raises(TypeError, match="must be a real number"):
        make(True)
    with pytest.raises(ValueError, match="must be (finite|a finite number)"):  # operator legs: the kernel's words
        make(float("nan"))


def test_numpy_integers_and_bools_are_taken_and_stored_as_python_values():
    """changed: config legs and BM25Params used to refuse numpy bools (only `bool` passed)."""
    leg = CFSRLeg(iters=np.int64(5), fista=np.bool_(True))
    assert type(leg.iters) is int and leg.fista is True
    ring = RingLeg(seed=np.uint8(3), ablation=np.bool_(False))
    assert type(ring.seed) is int and ring.ablation is False
    params = BM25Params(lowercase=np.bool_(False), context_window=np.int32(1))
    assert params.lowercase is False and type(params.context_window) is int
    quota = MemoryParams(dense_quota=np.int64(7))
    assert type(quota.dense_quota) is int and quota.dense_quota == 7


def test_bound_messages_name_the_field_and_the_bound():
    with pytest.raises(ValueError, match=r"CosineLeg.depth must be >= 1, got 0"):
        CosineLeg(depth=0)
    with pytest.raises(ValueError, match=r"BM25Params.b must be finite and in \[0, 1\], got 2"):
        BM25Params(b=2)
    with pytest.raises(ValueError, match=r"MemoryParams.sim_floor must be finite and in \(0, 1\], got 0"):
        MemoryParams(sim_floor=0)
    with pytest.raises(ValueError, match=r"MemoryParams.dense_quota must be >= 0 \(0 switches the generator off\)"):
        MemoryParams(dense_quota=-1)


# ------------------------------------------------------------------------- dtypes


def test_operators_refuse_float64_while_owning_layers_convert_it(rng):
    E = unit_rows(rng, len(TEXTS))
    with pytest.raises(TypeError, match="E must have dtype float32, got float64"):
        fieldrank.prefilter(E.astype(np.float64), E[0])
    retriever = HybridRetriever(TEXTS, E.astype(np.float64), "rrf2")
    assert retriever.search(TEXTS[0], E[0], k=2).ids.size == 2
    store = MemoryStore(dim=DIM)
    store.add_many(TEXTS, E.astype(np.float16))  # changed: the store used to refuse float16
    assert store.get(0).embedding.dtype == np.float32


def test_owning_layers_refuse_integer_arrays(rng):
    """changed: the memory store used to accept (and normalise) integer embedding arrays."""
    ints = np.eye(len(TEXTS), DIM, dtype=np.int64)
    with pytest.raises(TypeError, match="must have a floating dtype"):
        HybridRetriever(TEXTS, ints, "rrf2")
    with pytest.raises(TypeError, match="must have a floating dtype"):
        MemoryStore(dim=DIM).add_many(TEXTS, ints)
    # Lists of numbers have no dtype to respect: converted in every layer.
    store = MemoryStore(dim=DIM)
    store.add_many(TEXTS[:1], [[1] + [0] * (DIM - 1)])
    np.testing.assert_array_equal(store.get(0).embedding, np.eye(1, DIM, dtype=np.float32)[0])


# ------------------------------------------------------------------------- subsets


@pytest.mark.parametrize("empty", [np.empty(0, dtype=np.int64), [], "mask"], ids=["ids", "list", "mask"])
def test_an_empty_subset_is_refused_in_every_layer(rng, empty):
    """changed: BM25Index.top used to answer an empty subset with an empty ranking."""
    E = unit_rows(rng, len(TEXTS))
    subset = np.zeros(len(TEXTS), dtype=bool) if isinstance(empty, str) else empty
    calls = [
        lambda: fieldrank.prefilter(E, E[0], subset=subset),
        lambda: reference.cfs(E, E[0], subset=subset),
        lambda: HybridRetriever(TEXTS, E, "rrf2").search(TEXTS[0], E[0], subset=subset),
        lambda: BM25Index(TEXTS).top("cat", 3, subset=subset),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="subset"):
            call()


def test_a_boolean_mask_selects_the_same_rows_as_its_ids(rng):
    E = unit_rows(rng, len(TEXTS))
    mask = np.array([True, False, True, True, False])
    ids = np.flatnonzero(mask)
    np.testing.assert_array_equal(fieldrank.prefilter(E, E[1], subset=mask).ids,
                                  fieldrank.prefilter(E, E[1], subset=ids).ids)
    index = BM25Index(TEXTS)
    for got, want in zip(index.top("cat dogs", 5, subset=mask), index.top("cat dogs", 5, subset=ids)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(_v.subset_mask(ids, len(TEXTS)), mask)
    assert _v.subset_mask(mask, len(TEXTS)) is mask  # a valid mask is not copied
