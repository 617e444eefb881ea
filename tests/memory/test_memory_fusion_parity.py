"""The memory store's native candidate kernels (cpp/include/fieldrank/memory_fusion.hpp) against the
numpy formulations they replaced, bit for bit: the relevance tail, the fused score with every
factor, the protected tier's order, the union, the reserved slots and the hits' generator ranks;
and a store's recalls equal a recall assembled from the references alone."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from fieldrank import _core
from fieldrank.memory import MemoryStore
from fieldrank.memory import _generators as generators
from fieldrank.memory import _scoring as scoring
from fieldrank.memory import _pipeline as pipeline
from fieldrank.memory._gates import eligible_rows
from fieldrank.memory._generators import Admissions, relevance_core, relevance_leg_scores, relevance_tail_reference

from tests.helpers import DAY, unit_rows

SEED = 20261202
DIM = 16
NOW = 1_800_000_000.0
WORDS = ("deploy", "friday", "garden", "budget", "server", "dinner", "travel", "doctor", "launch", "review")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def bits(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array).tobytes()


def texts(rng: np.random.Generator, n: int) -> list[str]:
    return [" ".join(WORDS[i] for i in rng.integers(0, len(WORDS), 5)) for _ in range(n)]


def labelled_store(rng: np.random.Generator, n: int = 400) -> MemoryStore:
    """Two tenants, tags, entities, valences, tiers, sessions, recall histories, a supersede."""
    store = MemoryStore(dim=DIM)
    created = NOW - rng.uniform(0, 400, n) * DAY
    store.add_many(
        texts(rng, n), unit_rows(rng, n, DIM), tenants=["a"] * (n - 50) + ["b"] * 50,
        importances=np.where(rng.random(n) < 0.2, 0.9, rng.uniform(0, 0.7, n)),
        valences=rng.uniform(-1, 1, n), tiers=[("episodic", "semantic", "core")[i] for i in rng.integers(0, 3, n)],
        tags=[[f"t{j}" for j in range(3) if rng.random() < 0.3] for _ in range(n)],
        entities=[[f"e{int(j)}" for j in rng.integers(0, 6, int(rng.integers(0, 3)))] for _ in range(n)],
        sessions=[f"s{i // 4}" if i % 3 else None for i in range(n)],
        storage_strengths=rng.uniform(1, 4, n), created_at=created,
        last_access=created + rng.uniform(0, 30, n) * DAY, recall_counts=rng.integers(0, 5, n))
    store.add("deploy friday server updated", unit_rows(rng, 1, DIM)[0], tenant="a", supersedes=3,
              entities=["e1"], created_at=NOW - DAY)
    return store


#: The rows' layouts (one block: by_row written in place; rows with gaps: a scratch vector
#: scattered) and the isolated positions (all: all_isolated; some, possibly none; None).
LAYOUTS = ("block", "gaps")
ISOLATION = ("all", "some", "none")


def test_relevance_tail_equals_its_numpy_reference(rng):
    n = 700
    pairs = list(itertools.product(LAYOUTS, ISOLATION))
    for trial in range(60):
        layout, kind = pairs[trial % len(pairs)]  # every pair 10 times
        count = int(rng.integers(1, 400))
        if layout == "block":  # one block of rows (a tenant's), anywhere
            start = int(rng.integers(0, n - count + 1))
            rows = np.arange(start, start + count, dtype=np.int64)
        else:
            rows = np.sort(rng.choice(n, count, replace=False)).astype(np.int64)
        scores = rng.normal(size=count)
        if rng.random() < 0.3:  # ties, zeros and negatives around the support's max(s, 0)
            scores = np.round(scores, 1)
        depth = int(rng.integers(0, 2 * count + 2))
        gamma = float(rng.uniform(0, 1))
        isolated = (np.arange(count, dtype=np.int64) if kind == "all" else
                    np.sort(rng.choice(count, int(rng.integers(0, count + 1)), replace=False)).astype(np.int64)
                    if kind == "some" else None)
        all_isolated = isolated is not None and isolated.size == count
        native = _core.memory_relevance_tail(scores, rows, None if all_isolated else isolated, all_isolated, gamma,
                                             n, depth)
        reference = relevance_tail_reference(scores, rows, isolated, gamma, n, depth)
        for got, want in zip(native, reference):
            assert got.dtype == want.dtype and bits(got) == bits(want), trial


def test_relevance_tail_of_no_rows_equals_its_reference():
    for depth in (0, 5):
        native = _core.memory_relevance_tail(np.empty(0), np.empty(0, np.int64), None, False, 0.5, 4, depth)
        reference = relevance_tail_reference(np.empty(0), np.empty(0, np.int64), None, 0.5, 4, depth)
        for got, want in zip(native, reference):
            assert got.dtype == want.dtype and bits(got) == bits(want)
    by_row, top, top_scores = _core.memory_relevance_tail(np.empty(0), np.empty(0, np.int64), None, True, 0.5, 0, 3)
    assert by_row.size == top.size == top_scores.size == 0


def test_relevance_tail_refuses_bad_arguments():
    rows = np.array([0, 1], dtype=np.int64)
    with pytest.raises(ValueError, match="rows"):
        _core.memory_relevance_tail(np.zeros(2), np.array([0, 5], dtype=np.int64), None, False, 0.5, 3, 1)
    with pytest.raises(ValueError, match="isolated"):
        _core.memory_relevance_tail(np.zeros(2), rows, np.array([2], dtype=np.int64), False, 0.5, 3, 1)
    with pytest.raises(ValueError, match="scores must have length 2, got 3"):
        _core.memory_relevance_tail(np.zeros(3), rows, None, False, 0.5, 3, 1)
    with pytest.raises(ValueError, match="n must be a non-negative integer"):
        _core.memory_relevance_tail(np.zeros(0), np.empty(0, np.int64), None, False, 0.5, -1, 1)


def test_kernels_refuse_arrays_they_would_have_to_convert():
    """The bindings take their arrays without conversion (noconvert): another dtype or a strided
    view is a TypeError, not a silent copy."""
    rows = np.array([0, 1, 2], dtype=np.int64)
    with pytest.raises(TypeError):
        _core.memory_relevance_tail(np.zeros(3, dtype=np.float32), rows, None, False, 0.5, 3, 1)
    with pytest.raises(TypeError):
        _core.memory_relevance_tail(np.zeros(3), rows.astype(np.int32), None, False, 0.5, 3, 1)
    with pytest.raises(TypeError):
        _core.memory_relevance_tail(np.zeros(6)[::2], rows, None, False, 0.5, 3, 1)
    with pytest.raises(TypeError):
        _core.memory_protected_order(rows, np.zeros(3, dtype=np.float32), rows, np.zeros(3))
    with pytest.raises(TypeError):
        _core.memory_reserve_slots(np.arange(6, dtype=np.int64)[::2], np.empty(0, np.int64), 1)
    with pytest.raises(TypeError):
        _core.memory_sorted_unique(rows.astype(np.float64))
    n = 3
    columns = [np.zeros(n), np.zeros(n), np.ones(n), np.zeros(n, dtype=np.int8), np.zeros(n)]
    per_candidate = [np.ones(3), np.zeros(3)]
    params = scoring.native_fusion_params(MemoryStore(dim=DIM).params)
    _core.memory_fuse(rows, *columns, *per_candidate, params)  # accepted as given
    for i, wrong in enumerate((np.zeros(n, dtype=np.float32), np.zeros(n, dtype=np.float32),
                               np.ones(n, dtype=np.float32), np.zeros(n, dtype=np.int64), np.zeros(2 * n)[::2])):
        bad = list(columns)
        bad[i] = wrong
        with pytest.raises(TypeError):
            _core.memory_fuse(rows, *bad, *per_candidate, params)
    with pytest.raises(TypeError):
        _core.memory_fuse(rows, *columns, *per_candidate, params, other_entity=np.zeros(3, dtype=np.int8))


CUE_VARIANTS = [
    {},
    {"cue_tags": ["t0", "t2"]},
    {"cue_entities": ["e1", "e4"], "cue_valence": -0.4},
    {"cue_valence": 0.9, "cue_tags": ["t1"]},
]


@pytest.mark.parametrize("variant", range(len(CUE_VARIANTS)))
def test_fused_factors_equal_the_numpy_reference(rng, variant):
    assert len(scoring.MATRIX_COLUMNS) == _core.FUSED_FACTORS
    floats = [f.name for f in dataclasses.fields(scoring.FactorArrays)
              if f.name not in ("rows", "durable", "matrix", "cosine_pending")]
    assert sorted(scoring.MATRIX_COLUMNS) == sorted(floats)  # the C++ names are FactorArrays' columns
    store = labelled_store(rng)
    snapshot = store._generation.snapshot()
    vector = unit_rows(rng, 1, DIM)[0]
    for text, vec in (("deploy the server friday", vector), ("garden budget", None)):
        extra = CUE_VARIANTS[variant]
        cue, gates = store._cue(text, vec, mode="full" if vec is not None else "keyword", tenant="a",
                                required_tags=None, tier_mask=None, valence_window=None, min_importance=None,
                                at_time=NOW, cue_tags=extra.get("cue_tags"), cue_entities=extra.get("cue_entities"),
                                cue_valence=extra.get("cue_valence"), cue_time=None)
        eligible = eligible_rows(snapshot, gates)
        core = relevance_core(snapshot, cue, eligible, store.params, 50)
        rows = np.sort(rng.choice(eligible.rows, 120, replace=False)).astype(np.int64)
        activation = np.where(rng.random(rows.size) < 0.3, rng.uniform(0, 3, rows.size), 0.0)
        native = scoring.fuse(snapshot, rows, cue, activation, core.by_row, store.params)
        reference = scoring.fuse_reference(snapshot, rows, cue, activation, core.by_row, store.params)
        pending = native.cosine_pending
        assert pending == (vec is not None)
        for name in scoring.MATRIX_COLUMNS + ("rows", "durable"):
            if pending and name in ("cosine", "sim"):
                continue
            got, want = getattr(native, name), np.asarray(getattr(reference, name))
            assert got.dtype == want.dtype and bits(got) == bits(want), name
        if pending:  # the hits' cosine, taken for a few of the candidates, equals the reference's
            few = np.array([0, 7, 33, 119])
            cosine, sim = scoring.hit_cosine(snapshot, cue, rows[few], store.params)
            assert bits(cosine) == bits(reference.cosine[few]) and bits(sim) == bits(reference.sim[few])
        capped = scoring.with_score(native, native.score - 1.0)
        assert bits(capped.score) == bits(native.score - 1.0)
        assert bits(capped.matrix[scoring.MATRIX_COLUMNS.index("score")]) == bits(native.score - 1.0)


def test_fuse_of_no_candidates_equals_the_reference(rng):
    store = labelled_store(rng, 60)
    snapshot = store._generation.snapshot()
    none = np.empty(0, dtype=np.int64)
    for vector in (unit_rows(rng, 1, DIM)[0], None):
        cue, _ = store._cue("deploy garden", vector, mode="full" if vector is not None else "keyword", tenant="a",
                            required_tags=None, tier_mask=None, valence_window=None, min_importance=None,
                            at_time=NOW, cue_tags=["t0"], cue_entities=["e1"], cue_valence=0.2, cue_time=None)
        by_row = np.zeros(snapshot.n)
        native = scoring.fuse(snapshot, none, cue, np.empty(0), by_row, store.params)
        reference = scoring.fuse_reference(snapshot, none, cue, np.empty(0), by_row, store.params)
        assert native.matrix.shape == (_core.FUSED_FACTORS, 0)
        for name in scoring.MATRIX_COLUMNS + ("rows", "durable"):
            got, want = getattr(native, name), np.asarray(getattr(reference, name))
            assert got.shape == want.shape == (0,) and got.dtype == want.dtype, name


def test_fuse_refuses_columns_of_other_sizes():
    n, rows = 4, np.array([0, 3], dtype=np.int64)
    columns = {"relevance_by_row": np.zeros(n), "importance": np.zeros(n), "storage_strength": np.ones(n),
               "tier_codes": np.zeros(n, dtype=np.int8), "valence": np.zeros(n), "decay": np.ones(2),
               "activation": np.zeros(2)}
    params = scoring.native_fusion_params(MemoryStore(dim=DIM).params)
    matrix, durable = _core.memory_fuse(rows, **columns, params=params)
    assert matrix.shape == (_core.FUSED_FACTORS, 2) and durable.shape == (2,)
    for name, column in columns.items():
        wrong = dict(columns, **{name: np.concatenate([column, column[:1]])})
        if name == "relevance_by_row":  # the store's row count: the other columns are held to it
            message = f"importance must have length {n + 1}, got {n}"
        else:
            expected = 2 if name in ("decay", "activation") else n
            message = f"{name} must have length {expected}, got {expected + 1}"
        with pytest.raises(ValueError, match=message):
            _core.memory_fuse(rows, **wrong, params=params)
    for name in ("cosine", "tag_containment", "entity_containment"):
        with pytest.raises(ValueError, match=f"{name} must have length 2, got 3"):
            _core.memory_fuse(rows, **columns, params=params, **{name: np.zeros(3)})
    with pytest.raises(ValueError, match="other_entity must have length 2, got 1"):
        _core.memory_fuse(rows, **columns, params=params, other_entity=np.zeros(1, dtype=bool))
    with pytest.raises(ValueError, match="rows"):
        _core.memory_fuse(np.array([0, 4], dtype=np.int64), **columns, params=params)
    with pytest.raises(ValueError, match="rows"):
        _core.memory_decay_exponents(np.array([4], dtype=np.int64), np.zeros(n), np.ones(n), NOW, 86400.0, 7.0, 1.0)
    with pytest.raises(ValueError, match="storage_strength must have length 4, got 3"):
        _core.memory_decay_exponents(rows, np.zeros(n), np.ones(3), NOW, 86400.0, 7.0, 1.0)


def test_protected_order_union_and_ranks_equal_their_references(rng):
    store = labelled_store(rng)
    snapshot = store._generation.snapshot()
    for trial in range(8):
        vector = unit_rows(rng, 1, DIM)[0]
        cue, gates = store._cue("deploy the launch review", vector, mode="full", tenant="a", required_tags=None,
                                tier_mask=None, valence_window=None, min_importance=None, at_time=NOW,
                                cue_tags=None, cue_entities=None, cue_valence=None, cue_time=None)
        eligible = eligible_rows(snapshot, gates)
        core = relevance_core(snapshot, cue, eligible, store.params, 50)
        native = generators.protected_tier(snapshot, cue, eligible, core, store.params)
        cue.derived.clear()
        reference = generators.protected_tier_reference(snapshot, cue, eligible, core, store.params)
        assert native.size and bits(native) == bits(reference)
        admissions = generators.generate(snapshot, cue, eligible, ("relevance", "bm25", "importance", "graph"),
                                         store.params, store._links.index, core)
        parts = [rows for rows in admissions.by_generator.values() if rows.size]
        assert bits(admissions.union()) == bits(np.unique(np.concatenate(parts)))
        wanted = rng.choice(admissions.union(), 12, replace=False).tolist()
        assert admissions.ranks_for(wanted) == admissions.ranks_for_reference(wanted)
    # ties in z and in relevance, candidates outside the tier (+inf), an empty tier
    candidates = np.sort(rng.choice(60, 30, replace=False)).astype(np.int64)
    by_row = np.round(rng.normal(size=60), 1)
    tier_rows = candidates[rng.random(30) < 0.7]
    tier_z = np.round(rng.normal(size=tier_rows.size), 1)
    merged, by_z, z = _core.memory_protected_order(candidates, by_row, tier_rows, tier_z)
    z_of = dict(zip(tier_rows.tolist(), tier_z.tolist()))
    want_z = np.array([z_of.get(r, np.inf) for r in candidates.tolist()])
    z_order = np.lexsort((candidates, -want_z))
    assert bits(by_z) == bits(candidates[z_order]) and bits(z) == bits(want_z[z_order])
    by_relevance = candidates[np.lexsort((candidates, -by_row[candidates]))]
    interleaved = np.empty(60, dtype=np.int64)
    interleaved[0::2], interleaved[1::2] = candidates[z_order], by_relevance
    _, first = np.unique(interleaved, return_index=True)
    assert bits(merged) == bits(interleaved[np.sort(first)])
    merged, by_z, _ = _core.memory_protected_order(candidates, by_row, np.empty(0, np.int64), np.empty(0))
    assert bits(by_z) == bits(candidates)


def test_protected_order_of_no_candidates_and_its_refusals():
    by_row = np.array([0.5, -0.1, 0.2, 0.9])
    for tier_rows in (np.empty(0, np.int64), np.array([1, 3], dtype=np.int64)):
        merged, by_z, z = _core.memory_protected_order(np.empty(0, np.int64), by_row, tier_rows,
                                                       np.zeros(tier_rows.size))
        assert merged.size == by_z.size == z.size == 0 and z.dtype == np.float64
    candidates = np.array([0, 2, 3], dtype=np.int64)
    with pytest.raises(ValueError, match="candidates must be sorted and unique"):
        _core.memory_protected_order(np.array([0, 3, 2], dtype=np.int64), by_row, candidates, np.zeros(3))
    with pytest.raises(ValueError, match="candidates must be sorted and unique"):
        _core.memory_protected_order(np.array([0, 2, 2], dtype=np.int64), by_row, candidates, np.zeros(3))
    with pytest.raises(ValueError, match="tier_rows must be sorted and unique"):
        _core.memory_protected_order(candidates, by_row, np.array([3, 0], dtype=np.int64), np.zeros(2))
    with pytest.raises(ValueError, match="tier_z must have length 2, got 3"):
        _core.memory_protected_order(candidates, by_row, np.array([0, 3], dtype=np.int64), np.zeros(3))
    with pytest.raises(ValueError, match="candidates"):
        _core.memory_protected_order(np.array([0, 4], dtype=np.int64), by_row, candidates, np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        _core.memory_protected_order(candidates, by_row, candidates, np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match="NaN"):
        _core.memory_protected_order(candidates, np.array([0.5, 0.0, np.nan, 0.1]), candidates, np.zeros(3))


def test_reserve_slots_equal_the_numpy_reference(rng):
    for _ in range(300):
        size = int(rng.integers(0, 40))
        order = rng.permutation(size).astype(np.int64)
        chosen = rng.choice(size, int(rng.integers(0, min(size, 6) + 1)), replace=False).astype(np.int64)
        k = int(rng.integers(1, 25))
        want_order, want_reserved = pipeline.reserve_slots_reference(order, chosen, k)
        got_order, entering = _core.memory_reserve_slots(order, chosen, k)
        assert got_order.tolist() == want_order.tolist() and frozenset(entering.tolist()) == want_reserved


@pytest.mark.parametrize(("order", "chosen", "k", "message"), [
    ([0, 1, 2, 3], [3, 3], 2, "chosen must not repeat a position; 3 repeats at chosen"),
    ([0, 0, 1, 2], [3], 1, "order must hold each position of 0 .. 3 once; 0 repeats at order"),
    ([0, 1, 1, 3], [2], 1, "order must hold each position"),
    ([0, 1, 2, 5], [1], 1, r"order\[3\] = 5 is not a position in \[0, 4\)"),
    ([0, 1, -1, 3], [1], 1, "is not a position"),
    ([0, 1, 2, 3], [4], 1, r"chosen\[0\] = 4 is not a position in \[0, 4\)"),
    ([0, 1, 2, 3], [-1], 1, "is not a position"),
    ([], [0], 1, r"chosen\[0\] = 0 is not a position in \[0, 0\)"),
    ([0, 1, 2, 3], [3], 0, "k must be a positive integer, got 0"),
    ([0, 1, 2, 3], [3], -2, "k must be a positive integer, got -2"),
])
def test_reserve_slots_refuse_what_is_not_a_permutation_and_its_choice(order, chosen, k, message):
    with pytest.raises(ValueError, match=message):
        _core.memory_reserve_slots(np.asarray(order, dtype=np.int64), np.asarray(chosen, dtype=np.int64), k)


@pytest.mark.parametrize("k", [0, -1])
def test_reserve_slots_refuse_no_slots_as_the_reference(k):
    order, chosen = np.arange(5, dtype=np.int64), np.array([4], dtype=np.int64)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        _core.memory_reserve_slots(order, chosen, k)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        pipeline.reserve_slots_reference(order, chosen, k)


def test_reserve_slots_of_nothing():
    none = np.empty(0, dtype=np.int64)
    for order in (none, np.array([2, 0, 1], dtype=np.int64)):
        got, entering = _core.memory_reserve_slots(order, none, 1)
        assert got.tolist() == order.tolist() and entering.size == 0


def test_sorted_unique_and_ranks_of_match_numpy(rng):
    for _ in range(50):
        values = rng.integers(0, 50, int(rng.integers(0, 80))).astype(np.int64)
        assert bits(_core.memory_sorted_unique(values)) == bits(np.unique(values))
        wanted = rng.integers(0, 50, 6).astype(np.int64)
        admitted = rng.permutation(50)[:20].astype(np.int64)
        position = {int(r): i + 1 for i, r in enumerate(admitted.tolist())}
        assert _core.memory_ranks_of(wanted, admitted).tolist() == [position.get(int(r), 0) for r in wanted]


def _reference_kernels(monkeypatch) -> None:
    """Route the store through the numpy references instead of the native kernels."""
    monkeypatch.setattr(pipeline, "fuse", lambda snapshot, rows, cue, activation, by_row, params, _native:
                        scoring.fuse_reference(snapshot, rows, cue, activation, by_row, params))
    monkeypatch.setattr(generators, "protected_tier", generators.protected_tier_reference)
    monkeypatch.setattr(Admissions, "ranks_for", Admissions.ranks_for_reference)
    monkeypatch.setattr(Admissions, "union", lambda self: self.final_union if self.final_union is not None else (
        np.unique(np.concatenate([r for r in self.by_generator.values() if r.size]))
        if any(r.size for r in self.by_generator.values()) else np.empty(0, np.int64)))

    def reserve(order, chosen, k):
        result, entering = pipeline.reserve_slots_reference(order, chosen, k)
        return result, np.asarray(sorted(entering), dtype=np.int64)

    class Core:  # _core with the reference tail and slots
        def __getattr__(self, name):
            return getattr(_core, name)

        @staticmethod
        def memory_relevance_tail(scores, rows, isolated, all_isolated, gamma, n, depth):
            positions = np.arange(rows.size, dtype=np.int64) if all_isolated else isolated
            return relevance_tail_reference(scores, rows, positions, gamma, n, depth)

        memory_reserve_slots = staticmethod(reserve)

    monkeypatch.setattr(generators, "kernels", Core())
    monkeypatch.setattr(pipeline, "kernels", Core())


def _recorded(result) -> list:
    return [(h.id, h.rank, h.score.hex(), h.fused_score.hex(),
             tuple((k, v.hex() if isinstance(v, float) else v) for k, v in dataclasses.asdict(h.factors).items()),
             dict(h.admitted_by), h.reserved_slot, h.dominant_factor, h.weakest_factor) for h in result] + [
        result.candidate_ids.tolist(), {g: ids.tolist() for g, ids in result.admitted.items()}]


def test_recalls_equal_recalls_through_the_numpy_references(rng, monkeypatch):
    store = labelled_store(rng, 600)
    cues = unit_rows(rng, 4, DIM)
    calls = []
    for q in cues:
        for mode in ("hybrid", "full", "rerank", "vector", "keyword"):
            for extra in ({}, {"cue_entities": ["e2"], "cue_tags": ["t1"], "cue_valence": 0.3},
                          {"required_tags": ["t0"]}, {"tier_mask": ["core"]}):
                calls.append((q, mode, extra))
    native = [_recorded(store.recall("deploy friday review", q, 12, tenant="a", mode=mode, at_time=NOW,
                                     reinforce=False, **extra)) for q, mode, extra in calls]
    why = [store.why_not(m, "deploy friday review", cues[0], 5, tenant="a", at_time=NOW) for m in (1, 3, 250, 580)]
    _reference_kernels(monkeypatch)
    reference = [_recorded(store.recall("deploy friday review", q, 12, tenant="a", mode=mode, at_time=NOW,
                                        reinforce=False, **extra)) for q, mode, extra in calls]
    assert native == reference
    assert why == [store.why_not(m, "deploy friday review", cues[0], 5, tenant="a", at_time=NOW)
                   for m in (1, 3, 250, 580)]


@pytest.mark.parametrize("tenant", ["a", "b"])
def test_relevance_core_block_path_equals_its_rows_path(rng, tenant):
    """A store whose eligible rows are one block (tenant a: rows 0 .. 299; tenant b: rows 300 ..
    399): the leg over views of the block (rows=None, lexical_begin) gives every row's score the
    rows path gives, bit for bit, for vector, text and time cues."""
    n = 400
    store = MemoryStore(dim=DIM)
    store.add_many(texts(rng, n), unit_rows(rng, n, DIM), tenants=["a"] * 300 + ["b"] * 100,
                   sessions=[f"s{i // 4}" if i % 3 else None for i in range(n)],
                   created_at=NOW - rng.uniform(0, 400, n) * DAY)
    snapshot = store._generation.snapshot()
    for text, vector in (("deploy friday server", unit_rows(rng, 1, DIM)[0]), ("garden budget last week", None),
                         (None, unit_rows(rng, 1, DIM)[0])):
        cue, gates = store._cue(text, vector, mode="full" if vector is not None else "keyword", tenant=tenant,
                                required_tags=None, tier_mask=None, valence_window=None, min_importance=None,
                                at_time=NOW, cue_tags=None, cue_entities=None, cue_valence=None, cue_time=None)
        eligible = eligible_rows(snapshot, gates)
        rows = eligible.rows
        assert rows[0] == (0 if tenant == "a" else 300) and rows[-1] - rows[0] + 1 == rows.size
        block = relevance_leg_scores(snapshot, cue, eligible, store.params)
        assert bits(block) == bits(relevance_leg_scores(snapshot, cue, eligible, store.params, block=True))
        by_rows = relevance_leg_scores(snapshot, cue, eligible, store.params, block=False)
        assert block.dtype == by_rows.dtype and bits(block) == bits(by_rows)


@pytest.mark.parametrize("forget", [False, True])
def test_dense_generator_reads_the_legs_cosines(rng, forget):
    """The dense generator ranks by the cosines the relevance core's leg computed (one pass over the
    rows): they are the float64 dot products of the eligible rows with the cue, in the order of the
    eligible rows (a block or, after forgets, scattered rows), and the admissions are their top-n
    (ties to the lower row), the same set as the fp32 ``prefilter`` gives on this data."""
    n = 600
    store = MemoryStore(dim=DIM)
    ids = store.add_many(texts(rng, n), unit_rows(rng, n, DIM), tenants=["a"] * n,
                         sessions=[f"s{i // 4}" if i % 3 else None for i in range(n)],
                         created_at=NOW - rng.uniform(0, 400, n) * DAY)
    if forget:
        for memory_id in ids[::7]:
            store.forget(int(memory_id), tenant="a")
    snapshot = store._generation.snapshot()
    q = unit_rows(rng, 1, DIM)[0]
    cue, gates = store._cue("deploy friday server", q, mode="hybrid", tenant="a", required_tags=None, tier_mask=None,
                            valence_window=None, min_importance=None, at_time=NOW, cue_tags=None, cue_entities=None,
                            cue_valence=None, cue_time=None)
    eligible = eligible_rows(snapshot, gates)
    assert (eligible.rows[-1] - eligible.rows[0] + 1 == eligible.rows.size) is not forget
    core = relevance_core(snapshot, cue, eligible, store.params, 50)
    expected = snapshot.embeddings[eligible.rows].astype(np.float64) @ q.astype(np.float64)
    assert core.cosines.shape == eligible.rows.shape
    np.testing.assert_allclose(core.cosines, expected, rtol=0, atol=1e-12)
    admitted = generators.dense(snapshot, cue, eligible, core, store.params).top(50)
    assert admitted.tolist() == eligible.rows[np.lexsort((eligible.rows, -core.cosines))[:50]].tolist()
    scan = _core.prefilter(snapshot.embeddings, q, 50, eligible.rows).ids
    assert sorted(admitted.tolist()) == sorted(np.asarray(scan).tolist())
