"""Processes on one memory store: forgets, purges, compactions and reopens against reads (issues 25, 39).

Usage::

    python tools/store_race.py [--seconds 30] [--memories 300] [--seed 25] [--processes 2]
                               [--store LOCATION | --postgres] [--adapter NAME]

``--store`` takes an SQLite path or a ``postgresql://`` URL (default: a new SQLite file in a temporary
folder); ``--postgres`` starts a PostgreSQL server in a temporary folder (tests/postgres_server.py)
and races on it. ``--processes N`` runs one writer and N - 1 readers.

The writer process forgets random live memories and, at random between forgets, purges
(``compact(purge=True)``), compacts, reopens its store, adds and updates memories. After each
``forget()`` returns it reports the id to the reader process, which adds it to its set of
forgotten ids before its next call. The reader recalls (modes hybrid, vector, full; the cue is a
forgotten memory's own vector, so it would rank first if it were still there), gets, updates and
asks ``why_not`` about forgotten ids, checks ``len``/``in``, and reopens its store now and then.
Any call that returns or revives a forgotten memory is a violation. Each reader also adds memories
in a tenant of its own and recalls there: a hit of another tenant's memory is a violation, and at
the end every memory a reader's ``add`` returned must be in the store with its text and tenant
(else a lost write), as must exactly the writer's own live memories. Prints the counts; exits 1 on
a violation. (Before issue 25's fix, 60 s of this gave 2,439 recall hits of forgotten memories.)

``--adapter NAME`` (issue #34) races two processes through an adapter that writes, on one file,
instead: ``langgraph`` (``FieldrankStore``), ``langchain`` (``FieldrankVectorStore``),
``llama_index`` (``FieldrankVectorStore``) or ``haystack`` (``FieldrankDocumentStore``), each by
its own public API. Each process puts, deletes, gets and lists 20 keys at random, logging every operation
with its start and end (``time.monotonic_ns``, one clock for both processes). Afterwards it counts
duplicates (a key held by two live items, in any listing during the run or in the file at the
end), returned deletes (a read that returns a value whose put ended before a delete of the key
that ended before the read began: the delete was undone) and, once both have stopped writing,
keys on which the two processes' views differ. Exits 1 if any count is not 0. (Before issue 34's
fix, 30 s gave 10 duplicated keys, 3 returned deletes and 18 of 20 keys seen differently.)
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
import warnings
from typing import Optional

import numpy as np

from fieldrank.memory import MemoryStore, ReinforcementWarning

DIM = 32


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    X = rng.normal(size=(n, DIM))
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)


def reader(path: str, seed: int, pipe, stop, number: int = 0) -> None:
    warnings.simplefilter("ignore", ReinforcementWarning)
    rng = np.random.default_rng(seed + 1 + number)
    store = MemoryStore(path)
    tenant = f"reader{number}"
    added: dict[int, str] = {}
    own_vectors: list[np.ndarray] = []
    vectors: dict[int, np.ndarray] = {}
    forgotten: list[int] = []
    forgotten_set: set[int] = set()
    counts = {"recall": 0, "get": 0, "update": 0, "why_not": 0, "contains": 0, "reopen": 0, "add": 0,
              "own_recall": 0}
    violations: list[str] = []
    pipe.send("ready")
    while not stop.is_set():
        while pipe.poll():
            memory_id, vector = pipe.recv()
            forgotten.append(memory_id)
            forgotten_set.add(memory_id)
            vectors[memory_id] = vector
        if rng.random() < 0.2:  # a write of this reader's own, later checked as not lost
            vector = unit_rows(rng, 1)[0]
            text = f"{tenant} memory {counts['add']}"
            added[store.add(text, vector, tenant=tenant)] = text
            own_vectors.append(vector)
            counts["add"] += 1
        if own_vectors and rng.random() < 0.3:  # no hit of another tenant's memory
            cue = own_vectors[int(rng.integers(0, len(own_vectors)))]
            foreign = set(store.recall(None, cue, 10, tenant=tenant, mode="vector").ids.tolist()) - set(added)
            if foreign:
                violations.append(f"recall in {tenant} returned other tenants' {sorted(foreign)}")
            counts["own_recall"] += 1
        if not forgotten:
            time.sleep(0.001)
            continue
        target = forgotten[-1 - int(rng.integers(0, min(5, len(forgotten))))]
        mode = ("hybrid", "vector", "full")[int(rng.integers(0, 3))]
        hits = store.recall(f"note {target}", vectors[target], 10, mode=mode).ids.tolist()
        counts["recall"] += 1
        if forgotten_set.intersection(hits):
            violations.append(f"recall ({mode}) returned {sorted(forgotten_set.intersection(hits))}")
        try:
            store.get(target)
            violations.append(f"get returned {target}")
        except KeyError:
            pass
        counts["get"] += 1
        try:
            store.update(target, importance=0.3)
            violations.append(f"update of {target} succeeded")
        except KeyError:
            pass
        counts["update"] += 1
        reason = store.why_not(target, None, vectors[target], 10, mode="vector").reason
        if reason not in ("tombstoned", "not_found"):
            violations.append(f"why_not({target}) = {reason}")
        counts["why_not"] += 1
        if target in store:
            violations.append(f"{target} in store")
        counts["contains"] += 1
        if rng.random() < 0.01:
            store.close()
            store = MemoryStore(path)
            counts["reopen"] += 1
    store.close()
    pipe.send((counts, violations, tenant, added))


NAMESPACE = ("race", "items")
KEYS = [f"k{i}" for i in range(20)]


#: The tag that names an item's key in each adapter (a key held by two live memories is a duplicate).
KEY_TAGS = {"langgraph": "lg:key=", "langchain": "lc:id=", "llama_index": "li:id=", "haystack": "hs:id="}


class Items:
    """One adapter's put / delete / get / listing of the race's items (value: a stamp) on ``store``."""

    def __init__(self, adapter: str, store: MemoryStore) -> None:
        self.store = store
        if adapter == "langgraph":
            from fieldrank.integrations.langgraph import FieldrankStore
            self._graph = FieldrankStore(store)
        elif adapter == "langchain":
            from fieldrank.integrations.langchain import FieldrankVectorStore
            self._chain = FieldrankVectorStore(store)
        elif adapter == "llama_index":
            from fieldrank.integrations.llama_index import FieldrankVectorStore as LlamaStore
            self._llama = LlamaStore(store)
        else:
            from fieldrank.integrations.haystack import FieldrankDocumentStore
            self._haystack = FieldrankDocumentStore(store)
        self.adapter = adapter

    def put(self, key: str, stamp: str) -> None:
        text = f"note {key} {stamp}"
        if self.adapter == "langgraph":
            self._graph.put(NAMESPACE, key, {"text": text, "stamp": stamp})
        elif self.adapter == "langchain":
            self._chain.add_texts([text], [{"stamp": stamp}], ids=[key])
        elif self.adapter == "llama_index":
            from llama_index.core.schema import TextNode
            self._llama.add([TextNode(id_=key, text=text, metadata={"stamp": stamp})])
        else:
            from haystack import Document
            from haystack.document_stores.types import DuplicatePolicy
            self._haystack.write_documents([Document(id=key, content=text, meta={"stamp": stamp})],
                                           policy=DuplicatePolicy.OVERWRITE)

    def delete(self, key: str) -> None:
        if self.adapter == "langgraph":
            self._graph.delete(NAMESPACE, key)
        elif self.adapter == "langchain":
            self._chain.delete([key])
        elif self.adapter == "llama_index":
            self._llama.delete_nodes([key])
        else:
            self._haystack.delete_documents([key])

    def listing(self, keys: Optional[list[str]] = None) -> list[tuple[str, str]]:
        """(key, stamp) of the items held (of ``keys`` only, when given), as the adapter lists them."""
        if self.adapter == "langgraph":
            if keys is not None:
                items = [self._graph.get(NAMESPACE, key) for key in keys]
                return [(item.key, item.value["stamp"]) for item in items if item is not None]
            return [(item.key, item.value["stamp"]) for item in self._graph.search(NAMESPACE, limit=1000)]
        if self.adapter == "langchain":
            return [(d.id, d.metadata["stamp"]) for d in self._chain.get_by_ids(keys or KEYS)]
        if self.adapter == "llama_index":
            return [(n.node_id, n.metadata["stamp"]) for n in self._llama.get_nodes(keys)]
        wanted = None if keys is None else set(keys)
        return [(d.id, d.meta["stamp"]) for d in self._haystack.filter_documents()
                if wanted is None or d.id in wanted]


def adapter_worker(adapter: str, path: str, seed: int, seconds: float, pipe, stopped, release) -> None:
    """One process of an adapter race: random puts, deletes, gets and listings, each logged."""
    warnings.simplefilter("ignore", ReinforcementWarning)
    rng = np.random.default_rng(seed)
    store = Items(adapter, MemoryStore(path))
    log: list[tuple] = []  # (op, key, stamp or None, start_ns, end_ns)
    listed_duplicates: list[str] = []
    counts = {"put": 0, "delete": 0, "get": 0, "search": 0}
    pipe.send("ready")
    end, sequence = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        key, draw = KEYS[int(rng.integers(0, len(KEYS)))], rng.random()
        start = time.monotonic_ns()
        if draw < 0.45:
            sequence += 1
            stamp = f"{seed}:{sequence}"
            store.put(key, stamp)
            log.append(("put", key, stamp, start, time.monotonic_ns()))
        elif draw < 0.65:
            store.delete(key)
            log.append(("delete", key, None, start, time.monotonic_ns()))
        elif draw < 0.9:
            found = store.listing([key])
            log.append(("read", key, found[0][1] if found else None, start, time.monotonic_ns()))
            if len(found) > 1:
                listed_duplicates.append(key)
        else:
            items = store.listing()
            finish = time.monotonic_ns()
            keys = [k for k, _ in items]
            listed_duplicates += sorted({k for k in keys if keys.count(k) > 1})
            log += [("read", k, stamp, start, finish) for k, stamp in items]
        counts[("put", "delete", "get", "search")[(draw >= 0.45) + (draw >= 0.65) + (draw >= 0.9)]] += 1
    stopped.set()
    release.wait()  # both processes stopped writing: their views must now agree
    view = dict(store.listing())
    view_by_get = {key: found[0][1] for key in KEYS if (found := store.listing([key]))}
    store.store.close()
    pipe.send((counts, log, listed_duplicates, view, view_by_get))


def returned_deletes(log: list[tuple]) -> list[str]:
    """Reads that return a put's value although a delete of the key ran wholly between them."""
    put_end = {stamp: end for op, _, stamp, _, end in log if op == "put"}
    deletes: dict[str, list[tuple[int, int]]] = {}
    for op, key, _, start, end in log:
        if op == "delete":
            deletes.setdefault(key, []).append((start, end))
    found = []
    for op, key, stamp, start, _ in log:
        if op != "read" or stamp is None:
            continue
        written = put_end[stamp]
        if any(written < d_start and d_end < start for d_start, d_end in deletes.get(key, ())):
            found.append(f"{key} returned {stamp} after a delete")
    return found


def file_duplicates(path: str, key_tag: str) -> list[str]:
    """Keys held by more than one live item of the adapter (its key tag) in the file."""
    with MemoryStore(path) as store:
        held: dict[str, int] = {}
        for memory_id in store.ids():
                tags = store.get(int(memory_id)).tags
                key = next((t for t in tags if t.startswith(key_tag)), None)
                if key is not None:
                    held[key] = held.get(key, 0) + 1
    return sorted(key for key, n in held.items() if n > 1)


def race_adapter(adapter: str, seconds: float, seed: int, path: Optional[str] = None) -> dict:
    """Two processes through ``adapter`` on one file; returns the counts."""
    if path is None:
        path = os.path.join(tempfile.mkdtemp(), "race.sqlite")
    MemoryStore(path, dim=1).close()  # a lexical store (BM25 only): no embedder needed
    context = multiprocessing.get_context("spawn")
    release = context.Event()
    workers = []
    for offset in (0, 1):
        parent_end, child_end = context.Pipe()
        stopped = context.Event()
        process = context.Process(target=adapter_worker,
                                  args=(adapter, path, seed + offset, seconds, child_end, stopped, release))
        process.start()
        workers.append((process, parent_end, stopped))
    for _, parent_end, _ in workers:
        assert parent_end.recv() == "ready"
    for process, _, stopped in workers:
        while not stopped.wait(timeout=1.0):  # a worker that died never sets its event
            if not process.is_alive():
                release.set()
                msg = f"a race worker exited with code {process.exitcode} before it stopped (its traceback is above)"
                raise RuntimeError(msg)
    release.set()
    results = [parent_end.recv() for _, parent_end, _ in workers]
    for process, _, _ in workers:
        process.join()
    log = [entry for result in results for entry in result[1]]
    views = [result[3] for result in results]
    differing = sorted(k for k in KEYS if len({view.get(k) for view in views}) > 1
                       or results[0][4].get(k) != views[0].get(k) or results[1][4].get(k) != views[1].get(k))
    return {
        "operations": [result[0] for result in results],
        "duplicates": len(set(results[0][2]) | set(results[1][2]) | set(file_duplicates(path, KEY_TAGS[adapter]))),
        "returned_deletes": len(returned_deletes(log)),
        "keys_seen_differently": len(differing),
        "keys_live_at_end": len(views[0]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--processes", type=int, default=2, help="one writer and N - 1 readers (N >= 2)")
    parser.add_argument("--adapter", choices=tuple(KEY_TAGS), default=None,
                        help="race two processes through this adapter instead of the store itself")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--store", help="an SQLite path or a postgresql:// URL (default: a new SQLite file)")
    where.add_argument("--postgres", action="store_true", help="start a PostgreSQL server and race on it")
    args = parser.parse_args()
    if args.processes < 2:
        parser.error("--processes must be at least 2 (one writer, one reader)")
    if args.adapter is not None:
        if args.postgres:
            parser.error("--adapter races on an SQLite file or --store LOCATION")
        figures = race_adapter(args.adapter, args.seconds, args.seed, args.store)
        print(figures)
        sys.exit(1 if figures["duplicates"] or figures["returned_deletes"] or figures["keys_seen_differently"]
                 else 0)
    rng = np.random.default_rng(args.seed)
    directory = tempfile.mkdtemp()
    path = args.store or os.path.join(directory, "race.sqlite")
    if args.postgres:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from tests.postgres_server import fresh_schema, start_postgres

        path = fresh_schema(start_postgres(directory), "store_race")
    writer = MemoryStore(path, dim=DIM, synchronous="NORMAL")
    mine = set(writer.add_many([f"note {i}" for i in range(args.memories)], unit_rows(rng, args.memories)).tolist())
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    ends, children = [], []
    for number in range(args.processes - 1):
        parent_end, child_end = context.Pipe()
        child = context.Process(target=reader, args=(path, args.seed, child_end, stop, number))
        child.start()
        ends.append(parent_end)
        children.append(child)
    for parent_end in ends:
        assert parent_end.recv() == "ready"
    counts = {"forget": 0, "purge": 0, "compact": 0, "reopen": 0, "add": 0, "update": 0}
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        live = sorted(mine)
        if len(live) < args.memories // 4:
            mine.update(writer.add_many([f"note new {i}" for i in range(50)], unit_rows(rng, 50)).tolist())
            counts["add"] += 50
            continue
        target = int(rng.choice(live))
        vector = writer.get(target).embedding
        assert writer.forget(target)
        mine.discard(target)
        counts["forget"] += 1
        for parent_end in ends:
            parent_end.send((target, vector))
        draw = rng.random()
        if draw < 0.3:
            writer.compact(purge=True)
            counts["purge"] += 1
        elif draw < 0.4:
            writer.compact()
            counts["compact"] += 1
        elif draw < 0.45:
            writer.close()
            writer = MemoryStore(path, synchronous="NORMAL")
            counts["reopen"] += 1
        elif draw < 0.65:
            mine.add(writer.add(f"note added {counts['add']}", unit_rows(rng, 1)[0]))
            counts["add"] += 1
        elif draw < 0.85:
            other = int(rng.choice(live))
            if other != target:
                writer.update(other, text=f"note {other} updated")
                counts["update"] += 1
    stop.set()
    violations: list[str] = []
    added: dict[int, tuple[str, str]] = {}
    for number, (parent_end, child) in enumerate(zip(ends, children)):
        while True:  # forgets sent after the reader stopped reading are still in the pipe
            message = parent_end.recv()
            if isinstance(message, tuple) and len(message) == 4:
                break
        reader_counts, reader_violations, tenant, reader_added = message
        child.join()
        violations += reader_violations
        added.update({i: (text, tenant) for i, text in reader_added.items()})
        print(f"reader {number}: {reader_counts}")
    writer.close()
    with MemoryStore(path) as final:  # no lost write: every returned add is there, as written
        for memory_id, (text, tenant) in added.items():
            try:
                memory = final.get(memory_id)
            except KeyError:
                violations.append(f"lost write: {tenant}'s memory {memory_id}")
                continue
            if (memory.text, memory.tenant) != (text, tenant):
                violations.append(f"memory {memory_id} is {(memory.text, memory.tenant)}, written {(text, tenant)}")
        held = {i for i in range(final._next_id) if i in final and i not in added}
        if held != mine:
            violations.append(f"the writer's live memories differ: lost {sorted(mine - held)[:5]}, "
                              f"revived {sorted(held - mine)[:5]}")
    print(f"store: {path}")
    print(f"writer: {counts}")
    print(f"reader adds checked: {len(added)}")
    print(f"violations: {len(violations)}" + (f" (first: {violations[:5]})" if violations else ""))
    sys.exit(1 if violations else 0)


if __name__ == "__main__":
    main()
