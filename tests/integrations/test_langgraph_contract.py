"""LangGraph ships no packaged store suite: contract tests in our own words for what its own
store tests check (InMemoryStore's and the SQLite store's: batch order, get/put/delete, search
listings with filters and their operators, namespace listing with prefix/suffix/wildcards/depth/
limit/offset, query search with index fields, items put without an index, the index
configuration), each run side by side on ``InMemoryStore`` and :class:`FieldrankStore` with the
same operations. Where the two differ by design (the score: fused, not a cosine; the dotted
filter keys of the SQL stores), the expected result is written out."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph.store.base", reason="needs langgraph (in the integrations extra)")

from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from fieldrank import MemoryStore  # noqa: E402
from fieldrank.integrations.langgraph import FieldrankStore  # noqa: E402
from fieldrank.integrations.langchain import LangChainEmbedder  # noqa: E402

DIM = 16


def _embeddings():
    from langchain_core.embeddings import DeterministicFakeEmbedding

    return DeterministicFakeEmbedding(size=DIM)


def _stores(index=None):
    """The reference and ours, both with ``index`` ({"fields": [...]}) when given."""
    reference = InMemoryStore(index=None if index is None else {**index, "dims": DIM, "embed": _embeddings()})
    ours = FieldrankStore(MemoryStore(embedder=LangChainEmbedder(_embeddings())),
                          index=None if index is None else {**index, "dims": DIM})
    return reference, ours


def _view(items):
    return [(tuple(item.namespace), item.key, item.value) for item in items]


DOCS = [
    (("users", "alice", "prefs"), "theme", {"text": "dark mode please", "level": 3, "tags": ["ui"], "user": {"access-level": "admin"}}),
    (("users", "alice", "facts"), "pet", {"text": "has a dog named Rex", "level": 1, "user": {"access-level": "user"}}),
    (("users", "bob", "prefs"), "theme", {"text": "light mode", "level": 5, "user": {"access-level": "user"}}),
    (("users", "bob", "facts"), "job", {"text": "works as a vet", "level": 2}),
    (("docs", "public"), "faq", {"text": "how to reset a password", "level": 0}),
]


def _fill(*stores):
    for store in stores:
        for namespace, key, value in DOCS:
            store.put(namespace, key, value)


def test_batch_answers_each_op_in_its_place():
    answers = []
    for store in _stores():
        assert store.batch([PutOp(("a",), "k", {"x": 1}), PutOp(("a", "b"), "j", {"x": 2})]) == [None, None]
        results = store.batch([GetOp(("a",), "k"), GetOp(("a",), "missing"), SearchOp(("a",), limit=10),
                               ListNamespacesOp(match_conditions=None, max_depth=None)])
        answers.append((results[0].value, results[1], sorted(_view(results[2])), results[3]))
    assert answers[0] == answers[1]
    # Within one batch ours runs in order (a read sees the writes before it); InMemoryStore applies
    # a batch's puts after its reads, so only ours is checked here.
    _, ours = _stores()
    results = ours.batch([PutOp(("a",), "k", {"x": 1}), GetOp(("a",), "k"), PutOp(("a",), "k", None),
                          GetOp(("a",), "k")])
    assert results[1].value == {"x": 1} and results[3] is None


def test_get_put_update_delete_keep_the_same_values_and_dates():
    reference, ours = _stores()
    _fill(reference, ours)
    for namespace, key, value in DOCS:
        assert ours.get(namespace, key).value == reference.get(namespace, key).value == value
    for store in (reference, ours):
        first = store.get(*DOCS[0][:2])
        store.put(DOCS[0][0], DOCS[0][1], {"text": "changed"})
        again = store.get(*DOCS[0][:2])
        assert again.value == {"text": "changed"} and again.updated_at >= first.updated_at
        if store is ours:  # ours keeps created_at across updates, as the SQL stores' upserts do
            assert again.created_at == first.created_at
        store.delete(*DOCS[1][:2])
        assert store.get(*DOCS[1][:2]) is None
        store.delete(("nowhere",), "nothing")  # deleting what is not there is a no-op


FILTERS = [
    {"level": 3}, {"level": {"$gt": 1}}, {"level": {"$gte": 2, "$lt": 5}}, {"level": {"$ne": 3}},
    {"level": {"$lte": 1}}, {"tags": ["ui"]}, {"text": "light mode"}, {"user": {"access-level": "user"}},
    {"missing": None},
]


@pytest.mark.parametrize("filter_", FILTERS, ids=range(len(FILTERS)))
def test_search_listings_filter_as_in_memory_store(filter_):
    reference, ours = _stores()
    _fill(reference, ours)
    for prefix in [(), ("users",), ("users", "alice")]:
        want = _view(reference.search(prefix, filter=filter_, limit=20))
        assert sorted(_view(ours.search(prefix, filter=filter_, limit=20))) == sorted(want)


def test_dotted_filter_keys_read_nested_values_as_the_sql_stores():
    _, ours = _stores()
    _fill(ours)
    found = ours.search(("users",), filter={"user.access-level": "user"}, limit=20)
    assert sorted(item.key for item in found) == ["pet", "theme"]
    assert [item.key for item in ours.search(("users",), filter={"user.access-level": "admin"})] == ["theme"]
    assert ours.search(("users",), filter={"user.nothing": "x"}) == []


def test_search_limit_offset_page_through_every_item():
    reference, ours = _stores()
    _fill(reference, ours)
    for store in (reference, ours):
        pages = [_view(store.search((), limit=2, offset=offset)) for offset in (0, 2, 4)]
        assert [len(page) for page in pages] == [2, 2, 1]
        assert sorted(sum(pages, [])) == sorted(_view(store.search((), limit=10)))


CONDITIONS = [
    {"prefix": ("users",)}, {"suffix": ("prefs",)}, {"prefix": ("users", "*", "facts")}, {"max_depth": 2},
    {"prefix": ("users",), "max_depth": 2}, {"limit": 2}, {"limit": 2, "offset": 2}, {"prefix": ("nope",)},
]


@pytest.mark.parametrize("options", CONDITIONS, ids=range(len(CONDITIONS)))
def test_list_namespaces_as_in_memory_store(options):
    reference, ours = _stores()
    _fill(reference, ours)
    assert ours.list_namespaces(**options) == reference.list_namespaces(**options)


def test_query_search_finds_the_indexed_field_and_stays_in_its_prefix():
    reference, ours = _stores({"fields": ["text"]})
    _fill(reference, ours)
    for store in (reference, ours):
        hits = store.search(("users", "bob"), query="works as a vet", limit=1)
        assert [hit.key for hit in hits] == ["job"] and hits[0].score is not None
        assert {tuple(hit.namespace)[:2] for hit in store.search(("users", "bob"), query="mode", limit=10)} == \
            {("users", "bob")}


def test_items_without_index_follow_the_ranked_ones_unscored_in_both():
    reference, ours = _stores({"fields": ["text"]})
    for store in (reference, ours):
        store.put(("n",), "ranked", {"text": "kitchen budget"})
        store.put(("n",), "off", {"text": "kitchen budget"}, index=False)
        store.put(("n",), "nofield", {"title": "kitchen"})
        hits = store.search(("n",), query="kitchen budget", limit=10)
        assert [hit.key for hit in hits] == ["ranked", "off", "nofield"]
        assert hits[0].score is not None and [hit.score for hit in hits[1:]] == [None, None]
        assert [hit.key for hit in store.search(("n",), query="kitchen budget", limit=1)] == ["ranked"]


def test_index_config_is_kept_as_given():
    reference, ours = _stores({"fields": ["text", "title"]})
    assert ours.index_config == {"fields": ["text", "title"], "dims": DIM}
    assert reference.index_config["fields"] == ours.index_config["fields"]
    assert FieldrankStore(MemoryStore(dim=1)).index_config is None and InMemoryStore().index_config is None


def test_two_writers_on_one_file_agree_on_every_key(tmp_path):
    path = tmp_path / "lg.db"
    first = FieldrankStore(MemoryStore(path, 1))
    second = FieldrankStore(MemoryStore(path, 1))  # another process would open it the same way
    for i in range(5):
        first.put(("team",), f"k{i}", {"text": f"first {i}"})
        second.put(("team",), f"k{i}", {"text": f"second {i}"})
    second.delete(("team",), "k0")
    fresh = FieldrankStore(MemoryStore(path, 1))
    keys = [item.key for item in fresh.search(("team",), limit=50)]
    assert sorted(keys) == ["k1", "k2", "k3", "k4"]  # no duplicate, the delete stays deleted
    assert [first.get(("team",), f"k{i}") for i in range(5)] == [second.get(("team",), f"k{i}") for i in range(5)]


COLOURED = [("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
            ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
            ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
            ("doc4", {"text": "blue car", "color": "blue", "score": 3.5})]


@pytest.mark.parametrize(("query", "filter_", "keys"), [
    ("apple", {"color": "red"}, {"doc1", "doc2"}),
    ("car", {"score": {"$gt": 3.2}}, {"doc1", "doc3", "doc4"}),
    ("apple", {"score": {"$gte": 4.0}, "color": "green"}, {"doc3"}),
])
def test_query_search_with_filters_selects_what_in_memory_store_selects(query, filter_, keys):
    for store in _stores({"fields": ["text"]}):
        for key, value in COLOURED:
            store.put(("test",), key, value)
        assert {item.key for item in store.search(("test",), query=query, filter=filter_)} == keys


def test_query_search_ranks_the_matching_text_first_and_follows_updates():
    _, ours = _stores({"fields": ["text"]})  # the reference's fake embeddings rank at random
    for key, value in COLOURED:
        ours.put(("test",), key, value)
    assert ours.search(("test",), query="apple", filter={"color": "red"})[0].key == "doc1"
    assert ours.search(("test",), query="car", filter={"color": "red"})[0].key == "doc2"
    ours.put(("test",), "doc1", {"text": "zany zebra Xerxes", "color": "red"})
    assert ours.search(("test",), query="Zany Xerxes", limit=1)[0].key == "doc1"
    ours.put(("test",), "doc1", {"text": "new text about dogs", "color": "red"})
    assert ours.search(("test",), query="Zany Xerxes", limit=1)[0].key != "doc1"


def test_query_search_pages_and_edge_case_queries_as_in_memory_store():
    for store in _stores({"fields": ["text"]}):
        for i in range(5):
            store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
        first, second = (store.search(("test",), query="test", limit=2, offset=offset) for offset in (0, 2))
        assert len(first) == len(second) == 2 and not {i.key for i in first} & {i.key for i in second}
        assert len(store.search(("test",), query="test", limit=10)) == 5
        for query in ("", None, "test " * 100, "test!@#$%^&*()"):
            assert len(store.search(("test",), query=query, limit=10)) == 5, query


def test_namespace_labels_are_checked_as_langgraph_checks_them():
    from langgraph.store.base import InvalidNamespaceError

    for store in _stores():
        for namespace in [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]:
            with pytest.raises(InvalidNamespaceError):
                store.put(namespace, "k", {"x": 1})
        store.put(("foo", "langgraph", "foo"), "bar", {"x": 1})
        assert store.search(("foo", "langgraph", "foo"))[0].value == {"x": 1}


def test_a_list_prefix_searches_as_a_tuple_one():
    """LangGraph's SQLite store tests search with ``store.search(["test"])``; ours took only tuples."""
    _, ours = _stores()
    _fill(ours)
    assert sorted(_view(ours.search(["users", "bob"]))) == sorted(_view(ours.search(("users", "bob"))))



def test_items_written_before_keys_lived_in_the_store_are_rewritten_with_their_key(tmp_path):
    """A file whose LangGraph items hold no store key (written before issue #34): they are read from
    their tags, and a put or delete never leaves the old memory beside a keyed one."""
    import sqlite3

    path = tmp_path / "old.db"
    writer = FieldrankStore(MemoryStore(path, 1))
    for key in ("a", "b", "c"):
        writer.put(("team",), key, {"text": f"old {key}"})
    writer.store.close()
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE memories SET key = NULL")
    store = FieldrankStore(MemoryStore(path))
    assert store.get(("team",), "a").value == {"text": "old a"}
    store.put(("team",), "a", {"text": "new a"})
    store.delete(("team",), "b")
    reopened = FieldrankStore(MemoryStore(path))
    assert {item.key: item.value["text"] for item in reopened.search(("team",), limit=10)} == \
        {"a": "new a", "c": "old c"}
    assert len(reopened.store) == 2
