"""A standalone memory in a store of dialogue turns (issue 17, case (e) at 10k/50k filler).

The relevance core is the ``default`` scorer, whose neighbour support lifts a dialogue turn by the
base relevance of its same-session neighbours. A memory stored on its own (``session=None``, a
fact or rule) has no neighbours, so without ``isolated_self_support`` a chatter turn whose
*neighbours* are about the cue outranks the standalone memory that answers it, although the
memory is closer to the cue in both cosine and BM25. With it, an isolated memory is its own
neighbour; rows that have a neighbour score exactly as before.
"""

from __future__ import annotations

import numpy as np
import pytest

from fieldrank.memory import DEFAULT_PARAMS, MemoryStore

from tests.helpers import DAY, FILLER_WORDS, normalized

SEED = 2417
DIM = 48
NOW = 1_768_557_600.0
CUE = "what is the recipe for the pasta sauce"
ANSWER = "the pasta sauce recipe uses tomatoes garlic and basil"
#: A session of chatter about the cue's topic: each turn shares a cue word or two, its neighbours too.
RECIPE_SESSION = ("nah it is just my homemade sauce want the recipe",
                  "is the sauce recipe a family secret i love new recipes",
                  "sure this recipe with the sauce is my favourite one",
                  "thanks for sharing the sauce recipe")
OFF = DEFAULT_PARAMS.replace(isolated_self_support=False)


def build(params, rng_seed: int = SEED, n_filler: int = 400):
    """Filler dialogue sessions, one recipe session close to the cue, one standalone answer closer still."""
    rng = np.random.default_rng(rng_seed)
    cue = normalized(rng.normal(size=DIM))
    store = MemoryStore(dim=DIM, params=params)
    sessions = [f"chat {i // 8}" for i in range(n_filler)]
    store.add_many([" ".join(rng.choice(FILLER_WORDS, size=6)) for _ in range(n_filler)],
                   normalized(rng.normal(size=(n_filler, DIM))), importances=0.3, sessions=sessions,
                   created_at=NOW - 30 * DAY)
    session_vectors = normalized(0.55 * cue + 0.45 * normalized(rng.normal(size=(len(RECIPE_SESSION), DIM))))
    turns = store.add_many(list(RECIPE_SESSION), session_vectors, importances=0.3, sessions="recipes",
                           created_at=NOW - 30 * DAY)
    answer_vector = normalized(0.75 * cue + 0.25 * normalized(rng.normal(size=DIM)))
    answer = store.add(ANSWER, answer_vector, importance=0.3, created_at=NOW - 30 * DAY)
    return store, cue, turns, answer, answer_vector, session_vectors


@pytest.mark.parametrize("seed", [SEED, SEED + 1, SEED + 2])
def test_standalone_answer_outranks_chatter_lifted_by_its_neighbours(seed):
    on, cue, turns, answer, answer_vector, session_vectors = build(DEFAULT_PARAMS, seed)
    off, *_ = build(OFF, seed)
    # The answer is the clearly relevant one on both of the core's signals, not a close call.
    assert float(answer_vector @ cue) > float((session_vectors @ cue).max()) + 0.1
    assert on.recall(CUE, cue, k=10, mode="vector", reinforce=False).ids[0] == answer
    # The trap: without self-support a recipe turn wins on its neighbours' support.
    trapped = off.recall(CUE, cue, k=10, reinforce=False, at_time=NOW)
    assert trapped.ids[0] in set(turns.tolist())
    fixed = on.recall(CUE, cue, k=10, reinforce=False, at_time=NOW)
    assert fixed.ids[0] == answer
    assert fixed.hits[0].factors.relevance > max(h.factors.relevance for h in fixed if h.id != answer)


def test_rows_with_neighbours_score_exactly_as_default():
    on, cue, turns, answer, *_ = build(DEFAULT_PARAMS)
    off, *_ = build(OFF)
    a = on.recall(CUE, cue, k=50, reinforce=False, at_time=NOW)
    b = off.recall(CUE, cue, k=50, reinforce=False, at_time=NOW)
    relevance_on = {h.id: h.factors.relevance for h in a}
    relevance_off = {h.id: h.factors.relevance for h in b}
    shared = (set(relevance_on) & set(relevance_off)) - {answer}
    assert shared
    for memory_id in shared:  # every other memory of the store has same-session neighbours
        assert relevance_on[memory_id] == relevance_off[memory_id]
    gamma = DEFAULT_PARAMS.relevance_params.gamma
    assert relevance_off[answer] > 0
    assert relevance_on[answer] == pytest.approx((1.0 + gamma) * relevance_off[answer], rel=1e-12)


def test_order_among_standalone_memories_is_unchanged():
    rng = np.random.default_rng(SEED)
    cue = normalized(rng.normal(size=DIM))
    vectors = normalized(cue * rng.uniform(0.0, 1.0, size=(60, 1)) + normalized(rng.normal(size=(60, DIM))))
    texts = [" ".join(rng.choice(FILLER_WORDS + ("pasta", "sauce", "recipe"), size=5)) for _ in range(60)]
    orders = []
    for params in (DEFAULT_PARAMS, OFF):
        store = MemoryStore(dim=DIM, params=params)
        store.add_many(texts, vectors, importances=0.3, created_at=NOW - DAY)
        orders.append(store.recall(CUE, cue, k=60, reinforce=False, at_time=NOW).ids.tolist())
    assert orders[0] == orders[1]


def test_a_row_whose_neighbours_are_gated_out_is_isolated():
    """Neighbours count only among the eligible rows, as in the leg: tags can make a turn isolated."""
    from fieldrank.memory._gates import GateSpec, eligible_rows
    from fieldrank.memory._generators import isolated_positions

    rng = np.random.default_rng(SEED)
    store = MemoryStore(dim=DIM)
    store.add_many(["a b", "c d", "e f", "g h"], normalized(rng.normal(size=(4, DIM))), sessions="s",
                   tags=[["x"], [], [], ["x"]])
    store.add("standalone", normalized(rng.normal(size=DIM)), tags=["x"])
    snapshot = store._generation.snapshot()
    radius = DEFAULT_PARAMS.relevance_params.radius
    everything = eligible_rows(snapshot, GateSpec(tenant="default"))
    assert isolated_positions(snapshot, everything, radius).tolist() == [4]
    tagged = eligible_rows(snapshot, GateSpec(tenant="default", required_tags=frozenset({"x"})))
    # rows 0 and 3 are 3 apart (radius 2): isolated once rows 1 and 2 are gated out
    assert tagged.rows[isolated_positions(snapshot, tagged, radius)].tolist() == [0, 3, 4]
