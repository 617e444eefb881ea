"""The protection mechanism's invariants (issue 17): exact tier statistics, the cue-conditioned
gate of the reserved share, and what the reserve and the entity cap may never do.

The synthetic stores have *hubs*: durable filler close to the direction every conversational
vector shares (generic chatter rated important), so raw cosine ranks them above a specific rule
the cue is about, and only the memory-side z-score (:mod:`fieldrank.memory._tier`) finds the rule.
"""

from __future__ import annotations

import numpy as np
import pytest

from fieldrank.memory import DEFAULT_PARAMS, MemoryStore

from tests.helpers import DAY, FILLER_WORDS, normalized

SEED = 4217
DIM = 64
NOW = 1_768_557_600.0
K = 10
CUE_TEXT = "ship the latest build to the live servers now"
RULE_TEXT = "never deploy to production on fridays"


class World:
    """A common 'chatter' direction, filler around it, durable hubs close to it, one rule away from it."""

    def __init__(self, seed: int = SEED) -> None:
        self.rng = np.random.default_rng(seed)
        self.style = normalized(self.rng.normal(size=DIM))

    def noise(self, n: int) -> np.ndarray:
        return normalized(self.rng.normal(size=(n, DIM)))

    def filler(self, n: int) -> np.ndarray:
        return normalized(0.5 * self.style + self.noise(n))

    def hubs(self, n: int) -> np.ndarray:
        return normalized(1.5 * self.style + self.noise(n))

    def cue_for(self, rule: np.ndarray) -> np.ndarray:
        return normalized(0.5 * self.style + 0.35 * rule + 0.75 * self.noise(1)[0])


def hub_store(n_filler: int, world: World, path=None):
    """``n_filler`` chatter memories (2 % of them durable hubs), one old core rule, two recent distractors."""
    store = MemoryStore(path, dim=DIM)
    rng = world.rng
    n_hubs = n_filler // 50
    vectors = np.vstack([world.filler(n_filler - n_hubs), world.hubs(n_hubs)])
    store.add_many([" ".join(rng.choice(FILLER_WORDS, size=6)) for _ in range(n_filler)], vectors,
                   importances=np.r_[rng.uniform(0.05, 0.6, n_filler - n_hubs), np.full(n_hubs, 0.9)],
                   created_at=NOW - rng.uniform(1, 700, n_filler) * DAY)
    rule_vector = world.noise(1)[0]
    rule = store.add(RULE_TEXT, rule_vector, importance=0.9, tier="core", created_at=NOW - 400 * DAY)
    cue = world.cue_for(rule_vector)
    distractors = [store.add(text, normalized(cue + 0.3 * world.noise(1)[0]), importance=0.3, created_at=NOW - DAY)
                   for text in ("the live servers restarted after the build", "latest build is green, ship it")]
    return store, rule, cue, distractors


def brute_force_z(store: MemoryStore, memory_id: int, cue: np.ndarray, tenant: str = "default") -> float:
    """The cue's cosine to ``memory_id`` standardised by its cosines to the tenant's other live memories."""
    snapshot = store._generation.snapshot()
    row = snapshot.row_of(memory_id)
    code = snapshot.tenant_code(tenant)
    others = np.flatnonzero(snapshot.live & (snapshot.tenant_codes == code))
    others = others[others != row]
    cos = snapshot.embeddings[others].astype(np.float64) @ snapshot.embeddings[row].astype(np.float64)
    return float((snapshot.embeddings[row] @ cue - cos.mean()) / cos.std())


def tier_statistics_match_brute_force(store: MemoryStore) -> None:
    snapshot = store._generation.snapshot()
    E = snapshot.embeddings.astype(np.float64)
    for tenant in store.tenants():
        code = snapshot.tenant_code(tenant)
        live = np.flatnonzero(snapshot.live & (snapshot.tenant_codes == code))
        durable = live[(snapshot.importance[live] >= DEFAULT_PARAMS.durable_importance)
                       | (np.array([snapshot.tier_of(r) for r in live.tolist()]) == "core")]
        stats = snapshot.tier_stats[code]
        np.testing.assert_array_equal(stats.rows, durable)
        assert stats.count == live.size
        for i, row in enumerate(durable.tolist()):
            cos = E[live[live != row]] @ E[row]
            assert stats.total[i] == pytest.approx(cos.sum(), abs=1e-4)
            assert stats.total_sq[i] == pytest.approx((cos * cos).sum(), abs=1e-4)


# ---------------------------------------------------------------------------- statistics


def test_tier_statistics_stay_exact_through_adds_forgets_updates_and_compaction(tmp_path):
    world = World()
    rng = world.rng
    path = tmp_path / "store.sqlite"
    store = MemoryStore(path, dim=DIM)
    ids = list(store.add_many([f"m{i}" for i in range(300)], world.filler(300),
                              tenants=[("a", "b")[i % 2] for i in range(300)],
                              importances=rng.uniform(0, 1, 300)))
    for i in range(20):  # single adds, durable or not, in both tenants
        ids.append(store.add(f"single {i}", world.filler(1)[0], tenant=("a", "b")[i % 2],
                             importance=float(rng.uniform(0, 1)), tier="core" if i % 5 == 0 else "episodic"))
    tier_statistics_match_brute_force(store)
    for memory_id in rng.choice(ids, size=40, replace=False).tolist():
        store.forget(int(memory_id))
    live = [i for i in ids if i in store]
    store.update(live[0], importance=0.95)
    store.update(live[1], embedding=world.filler(1)[0])
    store.add("replacement", world.filler(1)[0], tenant=store.get(live[2]).tenant, importance=0.8,
              supersedes=live[2])
    tier_statistics_match_brute_force(store)
    store.compact()
    tier_statistics_match_brute_force(store)
    store.close()
    reopened = MemoryStore(path)  # rebuilt from the file: the same statistics
    tier_statistics_match_brute_force(reopened)
    reopened.close()


def test_the_memory_side_z_of_a_recall_is_the_brute_force_one():
    world = World()
    store, rule, cue, _ = hub_store(2_000, world)
    snapshot = store._generation.snapshot()
    row = snapshot.row_of(rule)
    stats = snapshot.tier_stats[snapshot.tenant_code("default")]
    z = stats.cue_z(np.array([row]), np.array([float(snapshot.embeddings[row] @ cue)]))[0]
    assert z == pytest.approx(brute_force_z(store, rule, cue), rel=1e-5)


# ---------------------------------------------------------------------------- the reserved share


@pytest.mark.parametrize("n_filler", [10_000, 20_000])
def test_a_durable_rule_among_durable_hubs_reaches_the_top_k(n_filler):
    world = World(SEED + n_filler)
    store, rule, cue, distractors = hub_store(n_filler, world)
    snapshot = store._generation.snapshot()
    durable = snapshot.tier_stats[snapshot.tenant_code("default")].rows
    cosine_rank = int(np.sum(snapshot.embeddings[durable] @ cue > snapshot.embeddings[snapshot.row_of(rule)] @ cue))
    slots = int(DEFAULT_PARAMS.protected_share * K)
    assert cosine_rank >= slots  # by raw cosine the hubs would take every reserved slot
    result = store.recall(CUE_TEXT, cue, K, at_time=NOW, reinforce=False)  # default mode
    assert rule in result.candidate_ids
    hit = next(h for h in result if h.id == rule)
    assert hit.reserved_slot and hit.factors.durable
    assert set(distractors) <= set(result.ids.tolist())  # the reserve took the bottom places only
    assert store.why_not(rule, CUE_TEXT, cue, K, at_time=NOW).reason == "returned"


def test_reserved_slots_follow_the_gate_exactly():
    """Over many cues: a reserved slot only ever holds a durable memory whose memory-side z passes
    ``protected_min_z``, at most ``protected_share · k`` of them; with no durable memory passing
    the gate, the result is the unreserved fused ranking."""
    world = World(SEED + 1)
    store, _, _, _ = hub_store(3_000, world)
    unreserved = MemoryStore(dim=DIM, params=DEFAULT_PARAMS.replace(protected_share=0.0))
    snapshot = store._generation.snapshot()
    rows = np.arange(snapshot.n)
    unreserved.add_many(list(store._generation.texts), snapshot.embeddings[rows],
                        importances=snapshot.importance[rows], tiers=[snapshot.tier_of(r) for r in rows.tolist()],
                        created_at=snapshot.created_at[rows])
    durable_ids = snapshot.ids[snapshot.tier_stats[snapshot.tenant_code("default")].rows]
    cues = np.vstack([world.noise(20), normalized(world.noise(20) + 0.8 * snapshot.embeddings[
        world.rng.choice(snapshot.tier_stats[snapshot.tenant_code("default")].rows, 20)])])
    gate_said_no = 0
    for cue in cues:
        result = store.recall("", cue, K, at_time=NOW, reinforce=False)
        reserved = [h for h in result if h.reserved_slot]
        assert len(reserved) <= int(DEFAULT_PARAMS.protected_share * K)
        for hit in reserved:
            assert hit.factors.durable
            assert brute_force_z(store, hit.id, cue) >= DEFAULT_PARAMS.protected_min_z - 1e-6
        passing = [i for i in durable_ids.tolist() if brute_force_z(store, i, cue) >= DEFAULT_PARAMS.protected_min_z]
        if not passing:
            gate_said_no += 1
            assert not reserved
            plain = unreserved.recall("", cue, K, at_time=NOW, reinforce=False)
            assert result.ids.tolist() == plain.ids.tolist()
    assert gate_said_no >= 5  # the random cues exercise the "no" branch


@pytest.mark.parametrize("k", [1, 2, 5, 10, 20])
def test_the_reserve_never_displaces_the_top_hit_of_a_clearly_relevant_plain_memory(k):
    world = World(SEED + 2)
    store, rule, cue, _ = hub_store(2_000, world)
    for i in range(6):  # more durable memories close to the cue than there are reserved slots
        store.add(f"rule {i} about quartz", normalized(cue + 0.6 * world.noise(1)[0]), importance=0.95, tier="core")
    plain = store.add(CUE_TEXT, cue, importance=0.2, created_at=NOW - 30 * DAY)
    result = store.recall(CUE_TEXT, cue, k, at_time=NOW, reinforce=False)
    assert result.ids[0] == plain and not result.hits[0].reserved_slot
    assert sum(h.reserved_slot for h in result) <= int(DEFAULT_PARAMS.protected_share * k)


def test_durability_does_not_decay_with_age_or_disuse():
    world = World(SEED + 3)
    store, rule, cue, _ = hub_store(10_000, world)
    hits = []
    for years in (1, 5, 20):
        result = store.recall(CUE_TEXT, cue, K, at_time=NOW + years * 365 * DAY, reinforce=False)
        hits.append(next(h for h in result if h.id == rule))
    assert all(h.reserved_slot for h in hits)
    assert len({h.factors.importance for h in hits}) == 1  # B · In · 1: no retrieval-strength decay


# ---------------------------------------------------------------------------- entities


def test_a_memory_about_another_entity_never_outranks_the_best_one_about_the_cues():
    world = World(SEED + 4)
    store = MemoryStore(dim=DIM)
    store.add_many([" ".join(world.rng.choice(FILLER_WORDS, size=6)) for _ in range(500)], world.filler(500))
    cue = world.noise(1)[0]
    twin = store.add("Sarah's favourite food is lasagna", cue, entities=["Sarah"])  # the cue's words and vector
    right = store.add("Sara loves ramen more than anything", normalized(cue + 0.9 * world.noise(1)[0]),
                      entities=["Sara"])
    text = "What is Sarah's favourite food"
    assert store.recall(text, cue, 5, reinforce=False).ids[0] == twin  # without cue entities: the twin
    result = store.recall(text, cue, 5, cue_entities=["Sara"], reinforce=False)
    assert result.ids[0] == right
    scores = {h.id: h.score for h in result}
    assert scores[twin] <= scores[right] - DEFAULT_PARAMS.other_entity_margin + 1e-12
    why = store.why_not(twin, text, cue, 1, cue_entities=["Sara"])
    assert why.reason == "outranked" and why.rank == 2
