"""issue 17: the store ranks a LoCoMo conversation exactly like HybridRetriever ``default``.

With every boost of the fused layer off, the store's ranking is its relevance core, the
``default`` preset's scorer, and its BM25 leg carries the preset's neighbour-text expansion; so
the store must equal ``HybridRetriever(texts, E, "default")`` over the same live turns: loaded in
one go, loaded one turn at a time (with rebuilds of the BM25 delta in between), after forgets
(compacted and reopened), and reopened from its file. Needs ``../shared/data/locomo`` (skipped
without it); nothing here is fitted.
"""

from __future__ import annotations


import numpy as np
import pytest

from fieldrank import HybridRetriever
from fieldrank.bm25 import BM25Index
from fieldrank.config import resolve_config
from fieldrank.evaluation import locomo
from fieldrank.memory import DEFAULT_PARAMS, MemoryStore
from fieldrank.temporal import Timeline, session_keys

from tests.helpers import LOCOMO_DIR as DATA_DIR

CONVERSATION = 0
QUESTIONS = 60
K = 10


@pytest.fixture(scope="module")
def conversation():
    if not (DATA_DIR / "turns.jsonl").exists():  # conftest's rule (its fixture is function-scoped)
        pytest.skip(f"LoCoMo data not found at {DATA_DIR} (expected ../shared/data/locomo beside the repository)")
    data = locomo.load_locomo(DATA_DIR, checksums=False)
    start, stop = data.conv_ranges[CONVERSATION]
    turns = data.turns
    texts = [str(t) for t in turns.embed_text[start:stop]]
    questions = np.flatnonzero(data.questions.conv_index == CONVERSATION)[:QUESTIONS]
    return {
        "texts": texts,
        "E": np.ascontiguousarray(data.turn_embeddings[start:stop]),
        "session": np.asarray(turns.session[start:stop], dtype=np.int64),
        "when": turns.session_datetime[start:stop],
        "created": turns.session_datetime[start:stop].astype("datetime64[s]").astype(np.int64).astype(np.float64),
        "questions": [str(q) for q in data.questions.question[questions]],
        "Q": np.ascontiguousarray(data.question_embeddings[questions]),
    }


def plain_params(**changes):
    """The store with its fused layer off: the relevance core (the preset's scorer) ranks every row."""
    return DEFAULT_PARAMS.replace(importance_boost=0.0, graph_boost=0.0, relevance_quota=100_000, **changes)


def add_turns(store: MemoryStore, conv: dict, rows) -> list[int]:
    rows = list(rows)
    return store.add_many([conv["texts"][i] for i in rows], conv["E"][rows], created_at=conv["created"][rows],
                          sessions=[f"session {conv['session'][i]}" for i in rows]).tolist()


def reference(conv: dict, rows) -> HybridRetriever:
    """HybridRetriever ``default`` over the turns ``rows`` (in order)."""
    rows = np.asarray(list(rows))
    texts = [conv["texts"][i] for i in rows]
    timeline = Timeline.from_turns(session_keys(np.zeros(rows.size, np.int64), conv["session"][rows]),
                                   conv["when"][rows], texts)
    config = resolve_config("default")
    assert config.bm25.context_window > 0  # the expansion is part of what is compared
    return HybridRetriever(texts, np.ascontiguousarray(conv["E"][rows]), config, timeline=timeline)


def assert_same_rankings(store: MemoryStore, conv: dict, rows, ids: list[int], questions=None) -> None:
    """The store's top-k equals the reference's over the same turns, for every question."""
    rows = list(rows)
    retriever = reference(conv, rows)
    at = float(conv["created"][rows].max())
    id_of = np.asarray(ids)
    for j in range(len(conv["questions"]) if questions is None else questions):
        question, q = conv["questions"][j], conv["Q"][j]
        expected = id_of[retriever.search(question, q, K).ids].tolist()
        got = store.recall(question, q, K, at_time=at, reinforce=False).ids.tolist()
        assert got == expected, question


def bm25_reference(conv: dict, rows) -> BM25Index:
    rows = np.asarray(list(rows))
    return BM25Index([conv["texts"][i] for i in rows], DEFAULT_PARAMS.bm25_params,
                     sessions=session_keys(np.zeros(rows.size, np.int64), conv["session"][rows]))


def leg_scores(store: MemoryStore, question: str) -> np.ndarray:
    generation = store._generation
    live = generation.live.buffer[: generation.n].copy()
    return generation.lexical.scores_of_rows(generation.texts, question, live)


@pytest.mark.parametrize("delta_min_docs", [10_000, 1], ids=["delta", "main"])
def test_loaded_in_one_go(conversation, delta_min_docs):
    """Every turn in one add_many: scored by the delta alone, or by a main index built at once."""
    store = MemoryStore(dim=conversation["E"].shape[1], params=plain_params(bm25_delta_min_docs=delta_min_docs))
    rows = range(len(conversation["texts"]))
    ids = add_turns(store, conversation, rows)
    assert_same_rankings(store, conversation, rows, ids)
    leg = store._generation.lexical
    assert (leg.main_rows, leg.delta_rows) == ((0, len(ids)) if delta_min_docs > len(ids) else (len(ids), 0))


def test_loaded_turn_by_turn_with_rebuilds(conversation):
    """One add per turn, a recall after each: the delta re-expands the turns before each new one and is
    folded into rebuilds. Right after each rebuild (and while the delta holds everything) the scores
    are exact, so the rankings equal the reference's; in between, delta rows score exactly against the
    current turns and the main index's rows exactly against the turns of its build."""
    n = len(conversation["texts"])
    store = MemoryStore(dim=conversation["E"].shape[1],
                        params=plain_params(bm25_delta_min_docs=48, bm25_delta_fraction=0.25))
    leg = store._generation.lexical
    ids: list[int] = []
    rebuilds, compared = 0, 0
    for i in range(n):
        ids += add_turns(store, conversation, [i])
        store.recall(conversation["questions"][i % QUESTIONS], conversation["Q"][i % QUESTIONS], K,
                     at_time=float(conversation["created"][i]), reinforce=False)
        if leg.rebuilds > rebuilds or (leg.main_rows == 0 and i % 16 == 0):
            rebuilds = leg.rebuilds
            assert_same_rankings(store, conversation, range(i + 1), ids, questions=8)
            compared += 1
        if i % 29 == 0 or i == n - 1:
            question = conversation["questions"][i % QUESTIONS]
            got = leg_scores(store, question)
            by_main = np.zeros(i + 1, dtype=bool)
            by_main[leg._main_rows[leg._main_fresh]] = True
            np.testing.assert_array_equal(got[~by_main], bm25_reference(conversation, range(i + 1)).scores(question)[~by_main])
            if leg.main_rows:
                then = bm25_reference(conversation, range(leg.main_rows)).scores(question)
                np.testing.assert_array_equal(got[by_main], then[by_main[: leg.main_rows]])
    assert leg.rebuilds >= 3 and compared >= 6


@pytest.mark.parametrize("delta_min_docs", [10_000, 1], ids=["delta", "main"])
def test_after_forgets(conversation, delta_min_docs, tmp_path):
    """A forgotten turn leaves BM25 at once (statistics and its neighbours' documents); compacted or
    reopened, the store ranks like the reference without it."""
    n = len(conversation["texts"])
    path = str(tmp_path / "forget.sqlite")
    params = plain_params(bm25_delta_min_docs=delta_min_docs)
    store = MemoryStore(path, dim=conversation["E"].shape[1], params=params)
    ids = add_turns(store, conversation, range(n))
    store.recall(conversation["questions"][0], conversation["Q"][0], K, reinforce=False)  # index everything
    session_start = int(np.flatnonzero(np.diff(conversation["session"]))[2]) + 1
    gone = [5, 6, session_start, n // 2, n - 1]
    for row in gone:
        store.forget(ids[row])
    kept = [i for i in range(n) if i not in gone]
    now, then = bm25_reference(conversation, kept), bm25_reference(conversation, range(n))
    leg = store._generation.lexical
    for question in conversation["questions"][:20]:
        got = leg_scores(store, question)
        assert not got[gone].any()
        # Rows the main index still scores keep its build's statistics; the forgotten turns'
        # neighbours were re-expanded into the delta and score exactly against the turns kept.
        by_main = np.zeros(n, dtype=bool)
        by_main[leg._main_rows[leg._main_fresh]] = True
        expected = np.zeros(n, dtype=np.float32)
        expected[kept] = now.scores(question)
        expected[by_main] = then.scores(question)[by_main]
        np.testing.assert_array_equal(got[kept], expected[kept])
        assert not (by_main[gone].any() or (leg.main_rows and by_main[[4, 7, session_start + 1]].any()))
    kept_ids = [ids[i] for i in kept]
    store.close()
    reopened = MemoryStore(path, params=params)
    assert_same_rankings(reopened, conversation, kept, kept_ids)
    reopened.compact()
    assert_same_rankings(reopened, conversation, kept, kept_ids, questions=20)


def test_reopened_ranks_like_the_store_that_wrote_it(conversation, tmp_path):
    """Persistence: a store loaded turn by turn (rebuilds in between) and the same file reopened agree."""
    n = len(conversation["texts"]) // 2
    path = str(tmp_path / "reopen.sqlite")
    params = plain_params(bm25_delta_min_docs=32, bm25_delta_fraction=0.2)
    store = MemoryStore(path, dim=conversation["E"].shape[1], params=params)
    for i in range(0, n, 7):
        add_turns(store, conversation, range(i, min(i + 7, n)))
        store.recall(conversation["questions"][0], conversation["Q"][0], K, reinforce=False)
    assert store._generation.lexical.rebuilds >= 2
    reopened = MemoryStore(path, params=params)
    at = float(conversation["created"][:n].max())
    leg = store._generation.lexical
    by_delta = np.ones(n, dtype=bool)
    by_delta[leg._main_rows[leg._main_fresh]] = False
    assert by_delta.any() and not by_delta.all()
    for question in conversation["questions"][:20]:
        # the reopened store scores every row exactly, the writer its delta rows (its main index
        # keeps the statistics of its last build until the next one)
        np.testing.assert_array_equal(leg_scores(store, question)[by_delta], leg_scores(reopened, question)[by_delta])
    store.compact()  # a fresh main index over everything: the two are now identical
    for question, q in zip(conversation["questions"][:20], conversation["Q"][:20]):
        np.testing.assert_array_equal(leg_scores(store, question), leg_scores(reopened, question))
        a = store.recall(question, q, K, at_time=at, reinforce=False).ids.tolist()
        assert a == reopened.recall(question, q, K, at_time=at, reinforce=False).ids.tolist(), question
