"""``FieldrankStore``: a MemoryStore as LangGraph's ``BaseStore``, against the real langgraph package
(issue #28). Skipped without langgraph (CI installs the integrations extra)."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, TypedDict

import numpy as np
import pytest

pytest.importorskip("langgraph.store.base", reason="needs langgraph (in the integrations extra)")

from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.store.base import BaseStore, PutOp, SearchItem  # noqa: E402

from fieldrank import MemoryStore  # noqa: E402
from fieldrank.integrations.langgraph import FieldrankStore  # noqa: E402
from tests.retriever.test_embed import HashEmbedder  # noqa: E402

ALICE = ("alice", "memories")
BOB = ("bob", "memories")


@pytest.fixture
def lexical(tmp_path):
    with MemoryStore(tmp_path / "memory.db", 1) as store:
        yield store


@pytest.fixture
def store(lexical):
    return FieldrankStore(lexical, index={"fields": ["text"]})


def _keys(items) -> list[str]:
    return [item.key for item in items]


def test_put_get_search_delete_and_list_namespaces(store):
    assert isinstance(store, BaseStore)
    store.put(ALICE, "db", {"text": "Orion uses Postgres 16 in production.", "kind": "fact"})
    store.put(ALICE, "rule", {"text": "Never deploy to production on Fridays.", "kind": "rule"})
    store.put(("alice", "prefs", "ui"), "theme", {"text": "Prefers the dark theme.", "kind": "pref"})
    store.put(BOB, "dog", {"text": "The dog needs a rabies booster in March.", "kind": "fact"})

    item = store.get(ALICE, "db")
    assert item.value == {"text": "Orion uses Postgres 16 in production.", "kind": "fact"}
    assert list(item.value) == ["text", "kind"]  # the value as put, key order included
    assert (item.namespace, item.key) == (ALICE, "db")
    assert item.created_at.tzinfo is not None and item.updated_at >= item.created_at
    assert store.get(ALICE, "missing") is None

    hits = store.search(ALICE, query="which database does Orion use?")
    assert hits and hits[0].key == "db" and isinstance(hits[0], SearchItem)
    assert hits[0].score is not None and hits[0].score > 0
    assert _keys(store.search(("alice",), query="production", limit=10)) and \
        set(_keys(store.search(("alice",), query="production"))) == {"db", "rule"}
    assert set(_keys(store.search(("alice",)))) == {"db", "rule", "theme"}  # no query: a listing
    assert _keys(store.search(("alice",), filter={"kind": "rule"})) == ["rule"]
    assert _keys(store.search(("alice",), query="production", filter={"kind": "rule"})) == ["rule"]
    assert len(store.search(("alice",), limit=2)) == 2
    assert len(store.search(("alice",), limit=2, offset=2)) == 1

    assert store.list_namespaces() == [ALICE, ("alice", "prefs", "ui"), BOB]
    assert store.list_namespaces(prefix=("alice",)) == [ALICE, ("alice", "prefs", "ui")]
    assert store.list_namespaces(suffix=("memories",)) == [ALICE, BOB]
    assert store.list_namespaces(prefix=("*", "memories")) == [ALICE, BOB]
    assert store.list_namespaces(max_depth=2) == [ALICE, ("alice", "prefs"), BOB]
    assert store.list_namespaces(limit=1, offset=1) == [("alice", "prefs", "ui")]

    store.delete(ALICE, "db")
    assert store.get(ALICE, "db") is None
    assert "db" not in _keys(store.search(ALICE, query="Orion Postgres database"))
    assert len(store.store) == 3


def test_a_search_never_leaves_its_namespace_prefix(lexical):
    store = FieldrankStore(lexical)  # no fields: every string of the value is recalled
    store.put(ALICE, "a", {"note": "The launch code is tango, said the captain at the briefing."})
    store.put(("alice", "work"), "w", {"note": "tango launch code"})
    store.put(BOB, "b", {"note": "The launch code is tango for bob too."})
    store.put(("bobby",), "c", {"note": "tango launch code"})
    lexical.add("tango launch code", [1.0], tenant="alice")  # not a LangGraph item

    for prefix, allowed in [(ALICE, {(ALICE, "a")}), (("alice",), {(ALICE, "a"), (("alice", "work"), "w")}),
                            (BOB, {(BOB, "b")}), (("bob",), {(BOB, "b")}), (("bobby",), {(("bobby",), "c")})]:
        hits = store.search(prefix, query="launch code tango", limit=10)
        assert {(hit.namespace, hit.key) for hit in hits} == allowed, prefix
        assert {(hit.namespace, hit.key) for hit in store.search(prefix, limit=10)} == allowed, prefix
        # one slot: the best item of the prefix, though a sibling namespace's (or another
        # adapter's) memory of the same tenant matches the query better
        top = store.search(prefix, query="tango launch code", limit=1)
        assert len(top) == 1 and (top[0].namespace, top[0].key) in allowed, prefix
    everything = store.search((), query="launch code tango", limit=10)
    assert len(everything) == 4 and len({(hit.namespace, hit.key) for hit in everything}) == 4
    assert store.search(("carol",), query="tango") == []


def test_put_on_an_existing_key_replaces_the_memory_and_the_old_value_is_never_recalled(store):
    store.put(ALICE, "db", {"text": "Orion uses MySQL 5.7."})
    first = store.get(ALICE, "db")
    store.put(ALICE, "db", {"text": "Orion now runs on Postgres 16."})
    second = store.get(ALICE, "db")
    assert second.value == {"text": "Orion now runs on Postgres 16."}
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    assert store.search(ALICE, query="MySQL 5.7") == []
    assert _keys(store.search(ALICE, query="Postgres")) == ["db"]
    assert len(store.store) == 1  # the same memory, updated in place


def test_filters_follow_langgraph_semantics(store):
    store.put(ALICE, "a", {"text": "tea with milk", "n": 1, "meta": {"lang": "en", "src": "chat"}, "tags": ["x"]})
    store.put(ALICE, "b", {"text": "tea without sugar", "n": 5, "meta": {"lang": "fr"}, "tags": ["x", "y"]})
    store.put(ALICE, "c", {"text": "coffee, black", "n": 9})
    assert _keys(store.search(ALICE, filter={"n": {"$gt": 2}})) == ["b", "c"]
    assert _keys(store.search(ALICE, query="tea", filter={"n": {"$lte": 5, "$ne": 1}})) == ["b"]
    assert _keys(store.search(ALICE, filter={"meta": {"lang": "en"}})) == ["a"]  # nested: a subset match
    assert _keys(store.search(ALICE, filter={"tags": ["x", "y"]})) == ["b"]
    assert _keys(store.search(ALICE, query="tea", filter={"n": 1.0})) == ["a"]
    store.put(ALICE, "d", {"text": "tea for two", "a=b": "c", "a": "b=c"})
    store.put(ALICE, "e", {"text": "tea for three", "a": "b=c"})
    # both carry the tag lg:f:a=b=c; "e" ranks first (shorter text), and must not take the one slot
    assert _keys(store.search(ALICE, query="tea three", filter={"a=b": "c"}, limit=1)) == ["d"]
    assert set(_keys(store.search(ALICE, query="tea", filter={"a": "b=c"}))) == {"d", "e"}
    with pytest.raises(ValueError, match=r"\$regex"):
        store.search(ALICE, filter={"text": {"$regex": "tea"}})


def test_unindexed_items_are_kept_and_listed_after_every_ranked_one_unscored(store):
    store.put(ALICE, "secret", {"text": "tea ceremony notes"}, index=False)
    store.put(ALICE, "tea", {"text": "tea ceremony on sunday", "title": "weekend"}, index=["title", "text"])
    store.put(ALICE, "nofield", {"title": "tea ceremony"})  # no "text": nothing to index (#37)
    assert store.get(ALICE, "secret").value == {"text": "tea ceremony notes"}
    hits = store.search(ALICE, query="tea ceremony")
    assert _keys(hits) == ["tea", "secret", "nofield"]  # as InMemoryStore: ranked, then unscored as put
    assert hits[0].score is not None and [hit.score for hit in hits[1:]] == [None, None]
    assert _keys(store.search(ALICE, query="weekend")) == ["tea", "secret", "nofield"]  # the put's own fields
    assert _keys(store.search(ALICE, query="tea ceremony", limit=1)) == ["tea"]
    assert _keys(store.search(ALICE, query="tea", filter={"title": "tea ceremony"})) == ["nofield"]


class _Float64Embedder:
    """A float64 embedder whose row for an empty text is zeros (as many are): #37 found that an
    item with nothing to index was embedded from "" and crashed the store's row check."""

    dim = 8

    def _rows(self, texts):
        rows = np.array([[float(len(t) % 7 + 1), 1.0, 0, 0, 0, 0, 0, float(t.count("e"))]
                         if t.strip() and t != "zero" else [0.0] * 8 for t in texts], dtype=np.float64)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return np.divide(rows, norms, out=rows, where=norms > 0)

    def embed_documents(self, texts, *, batch_size=None, progress=None):
        return self._rows(texts)

    def embed_queries(self, texts, *, batch_size=None, progress=None):
        return self._rows(texts)


def test_items_without_index_text_are_never_embedded():
    store = FieldrankStore(MemoryStore(embedder=_Float64Embedder()), index={"fields": ["text"]})
    store.put(ALICE, "off", {"text": "kept aside"}, index=False)
    store.put(ALICE, "empty", {"other": 3})
    store.put(ALICE, "on", {"text": "the kitchen"})
    store.put(ALICE, "on", {"other": 4})  # an update that leaves nothing to index
    assert {item.key for item in store.search(ALICE)} == {"off", "empty", "on"}
    assert [hit.score for hit in store.search(ALICE, query="kitchen")] == [None, None, None]
    # an indexed text the embedder maps to a zero row: the store's ValueError (#37: numpy's TypeError)
    with pytest.raises(ValueError, match="norm"):
        store.put(ALICE, "z", {"text": "zero"})
    assert store.get(ALICE, "z") is None


def test_the_store_reopens_with_its_items(tmp_path):
    path = tmp_path / "memory.db"
    with MemoryStore(path, 1) as memory:
        store = FieldrankStore(memory)
        store.put(ALICE, "db", {"text": "Orion uses Postgres 16.", "kind": "fact"})
        store.put(ALICE, "gone", {"text": "forget me"})
        store.put(("alice", "deep", "er"), "x", {"text": "deep item"}, index=False)
        store.delete(ALICE, "gone")
        before = store.get(ALICE, "db")
    with MemoryStore(path, 1) as memory:
        store = FieldrankStore(memory)
        assert store.get(ALICE, "db") == before
        assert store.get(ALICE, "gone") is None
        assert store.list_namespaces() == [("alice", "deep", "er"), ALICE]
        assert _keys(store.search(("alice",), query="Postgres Orion")) == ["db", "x"]  # x: unindexed, last


def test_an_embedded_store_recalls_hybrid_with_scores_and_confidence():
    store = FieldrankStore(MemoryStore(embedder=HashEmbedder(dim=48)), index={"fields": ["text"], "dims": 48})
    for i, text in enumerate(["The dog needs a rabies booster in March.", "Cabinets eat half the budget.",
                              "The kitchen budget is $40k."]):
        store.put(ALICE, f"m{i}", {"text": text})
    store.put(ALICE, "hidden", {"text": "kitchen budget"}, index=False)
    store.put(BOB, "other", {"text": "kitchen budget"})
    assert _keys(store.search(ALICE, query="kitchen budget", limit=10))[-1] == "hidden"  # last, unscored
    lone = FieldrankStore(MemoryStore(embedder=HashEmbedder(dim=48)))
    lone.put(ALICE, "hidden", {"text": "kitchen budget"}, index=False)  # its memory's text is empty, and
    lone.put(ALICE, "dog", {"text": "The dog needs a rabies booster."})  # the dense leg ranks it first:
    assert _keys(lone.search(ALICE, query="kitchen budget", limit=1)) == ["dog"]  # it must not take the slot
    hits = store.search(ALICE, query="kitchen budget", limit=2)
    assert len(hits) == 2 and {hit.key for hit in hits} <= {"m1", "m2"}
    assert all(hit.score is not None for hit in hits) and hits[0].score >= hits[1].score
    assert all(0.0 <= hit.confidence <= 1.0 for hit in hits) and hits[0].dict()["confidence"] == hits[0].confidence


def test_async_api(store):
    async def main() -> list[str]:
        await store.aput(ALICE, "a", {"text": "async tea"})
        assert (await store.aget(ALICE, "a")).value == {"text": "async tea"}
        hits = await store.asearch(ALICE, query="tea")
        await store.adelete(ALICE, "a")
        assert await store.aget(ALICE, "a") is None
        return _keys(hits)

    assert asyncio.run(main()) == ["a"]


def test_bad_arguments_name_what_is_wrong(store, lexical):
    with pytest.raises(ValueError, match="embed"):
        FieldrankStore(lexical, index={"embed": object()})
    with pytest.raises(ValueError, match="dims"):
        FieldrankStore(lexical, index={"dims": 384})
    with pytest.raises(ValueError, match="mode='keyword'"):
        FieldrankStore(lexical, mode="hybrid")
    with pytest.raises(TypeError, match="JSON"):
        store.put(ALICE, "k", {"text": object()})
    with pytest.raises(ValueError, match="(?i)namespace labels cannot be empty"):
        store.put(("alice", ""), "k", {"text": "x"})  # LangGraph's own check
    with pytest.raises(ValueError, match="namespace must be a tuple of non-empty str"):
        store.batch([PutOp(("alice", ""), "k", {"text": "x"})])  # batch is public too: checked again
    with pytest.raises(NotImplementedError, match="ttl"):
        store.batch([PutOp(ALICE, "k", {"text": "x"}, ttl=5.0)])
    with pytest.raises(ValueError, match="limit"):
        store.search(ALICE, limit=-1)
    assert len(lexical) == 0


def test_an_item_forgotten_through_the_memory_store_is_put_and_deleted_cleanly(store, lexical):
    store.put(ALICE, "k", {"text": "tea"})
    lexical.forget(0)  # the item's memory (the store's first), forgotten behind the adapter's back
    store.put(ALICE, "k", {"text": "coffee"})  # a new memory: the forgotten one is not revived
    assert store.get(ALICE, "k").value == {"text": "coffee"} and len(lexical) == 1
    assert store.search(ALICE, query="tea") == [] and _keys(store.search(ALICE, query="coffee")) == ["k"]
    lexical.forget(1)  # the new one, likewise
    store.delete(ALICE, "k")
    assert store.get(ALICE, "k") is None


def test_a_langgraph_agent_reads_and_writes_memories_through_store_injection(store):
    class State(TypedDict):
        user: str
        message: str
        recalled: Annotated[list[str], operator.add]

    def remember(state: State, *, store: BaseStore) -> dict:
        if state["message"].startswith("remember:"):
            text = state["message"].removeprefix("remember:").strip()
            store.put((state["user"], "memories"), f"m{len(store.search((state['user'], 'memories')))}",
                      {"text": text})
        return {}

    def recall(state: State, *, store: BaseStore) -> dict:
        hits = store.search((state["user"], "memories"), query=state["message"], limit=1)
        return {"recalled": [hit.value["text"] for hit in hits]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=store)

    graph.invoke({"user": "alice", "message": "remember: Orion uses Postgres 16", "recalled": []})
    graph.invoke({"user": "alice", "message": "remember: the dog needs a rabies booster", "recalled": []})
    graph.invoke({"user": "bob", "message": "remember: bob's database is SQLite", "recalled": []})
    out = graph.invoke({"user": "alice", "message": "which database does Orion use?", "recalled": []})
    assert out["recalled"] == ["Orion uses Postgres 16"]
    out = graph.invoke({"user": "bob", "message": "which database does Orion use?", "recalled": []})
    assert out["recalled"] == ["bob's database is SQLite"]
    assert store.list_namespaces() == [("alice", "memories"), ("bob", "memories")]
