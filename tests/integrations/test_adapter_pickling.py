"""Every adapter pickles (#37: FieldrankMemoryRetriever, the LlamaIndex memory block and the
Haystack memory components did not). An adapter's own state (locks, id maps, parameters) must
pickle by itself: the first test carries the MemoryStore by its path (a custom pickler), so it
checks only the adapters; the second pickles them as they are, which needs the MemoryStore itself
to pickle (a runtime fix of #37) and skips until it does."""

from __future__ import annotations

import copyreg
import io
import pickle

import pytest

from fieldrank import MemoryStore


def _store_pickles() -> bool:
    try:
        pickle.dumps(MemoryStore(dim=1))
    except (TypeError, pickle.PicklingError, AttributeError):
        return False
    return True


def _dumps_store_by_path(obj) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer)
    pickler.dispatch_table = {**copyreg.dispatch_table, MemoryStore: lambda store: (MemoryStore, (store.path,))}
    pickler.dump(obj)
    return buffer.getvalue()


def _adapters(store):
    """(name, adapter, a function of the adapter that shows it still works) for every adapter over ``store``."""
    out = []
    try:
        from fieldrank.integrations import langchain as lc
    except ImportError:
        lc = None
    if lc is not None:
        retriever = lc.FieldrankMemoryRetriever(store=store, tenant="t")
        retriever.add_texts(["the dog needs a rabies shot"])
        out.append(("langchain memory retriever", retriever, lambda a: [d.page_content for d in a.invoke("rabies")]))
        vectorstore = lc.FieldrankVectorStore(store, tenant="v")
        vectorstore.add_texts(["kitchen budget"], ids=["k"])
        out.append(("langchain vector store", vectorstore, lambda a: [d.id for d in a.similarity_search("kitchen")]))
    try:
        from fieldrank.integrations import langgraph as lg
    except ImportError:
        lg = None
    if lg is not None:
        graph_store = lg.FieldrankStore(store)
        graph_store.put(("g",), "k", {"text": "tea ceremony"})
        out.append(("langgraph store", graph_store, lambda a: [i.key for i in a.search(("g",), query="tea")]))
    try:
        from fieldrank.integrations import llama_index as li
    except ImportError:
        li = None
    if li is not None:
        from llama_index.core.schema import TextNode

        block = li.FieldrankMemoryBlock(store=store, tenant="b")
        out.append(("llama_index memory block", block, lambda a: (a.tenant, len(a.store))))
        vector_store = li.FieldrankVectorStore(store, tenant="l")
        vector_store.add([TextNode(text="hallway paint", id_="n")])
        out.append(("llama_index vector store", vector_store, lambda a: [n.node_id for n in a.get_nodes()]))
    try:
        from fieldrank.integrations import haystack as hs
    except ImportError:
        hs = None
    if hs is not None:
        document_store = hs.FieldrankDocumentStore(store, tenant="h")
        out.append(("haystack document store", document_store, lambda a: a.count_documents()))
    return out


def test_each_adapter_pickles_its_own_state(tmp_path):
    store = MemoryStore(tmp_path / "memory.db", 1)
    adapters = _adapters(store)
    if not adapters:
        pytest.skip("needs the integrations extra")
    for name, adapter, probe in adapters:
        copy = pickle.loads(_dumps_store_by_path(adapter))
        assert probe(copy) == probe(adapter), name


def test_haystack_memory_components_pickle(tmp_path):
    hs = pytest.importorskip("fieldrank.integrations.haystack", reason="needs the integrations extra")
    writer = hs.FieldrankMemoryWriter(str(tmp_path / "memory.db"))
    retriever = hs.FieldrankMemoryRetriever(str(tmp_path / "memory.db"))
    for component in (writer, retriever):
        copy = pickle.loads(_dumps_store_by_path(component))
        assert copy.store_path == component.store_path


@pytest.mark.skipif(not _store_pickles(), reason="MemoryStore does not pickle yet (the runtime fix of #37)")
def test_each_adapter_pickles_and_deep_copies_as_it_is(tmp_path):
    import copy

    for store in (MemoryStore(dim=1), MemoryStore(tmp_path / "memory.db", 1)):
        for name, adapter, probe in _adapters(store):
            assert probe(pickle.loads(pickle.dumps(adapter))) == probe(adapter), name
            assert probe(copy.deepcopy(adapter)) == probe(adapter), name
    hs = pytest.importorskip("fieldrank.integrations.haystack", reason="needs the integrations extra")
    writer = hs.FieldrankMemoryWriter(str(tmp_path / "memory.db"))
    assert len(pickle.loads(pickle.dumps(writer)).store) == len(writer.store)
