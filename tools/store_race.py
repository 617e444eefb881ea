"""Processes on one memory store: forgets, purges, compactions and reopens against reads (issues 25, 39).

Usage::

    python tools/store_race.py [--seconds 30] [--memories 300] [--seed 25] [--processes 2]
                               [--store LOCATION | --postgres]

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
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
import warnings

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--processes", type=int, default=2, help="one writer and N - 1 readers (N >= 2)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--store", help="an SQLite path or a postgresql:// URL (default: a new SQLite file)")
    where.add_argument("--postgres", action="store_true", help="start a PostgreSQL server and race on it")
    args = parser.parse_args()
    if args.processes < 2:
        parser.error("--processes must be at least 2 (one writer, one reader)")
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
