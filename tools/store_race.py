"""Two processes on one memory store file: forgets, purges, compactions and reopens against reads (issue 25).

Usage::

    python tools/store_race.py [--seconds 30] [--memories 300] [--seed 25]

The writer process forgets random live memories and, at random between forgets, purges
(``compact(purge=True)``), compacts, reopens its store, adds and updates memories. After each
``forget()`` returns it reports the id to the reader process, which adds it to its set of
forgotten ids before its next call. The reader recalls (modes hybrid, vector, full; the cue is a
forgotten memory's own vector, so it would rank first if it were still there), gets, updates and
asks ``why_not`` about forgotten ids, checks ``len``/``in``, and reopens its store now and then.
Any call that returns or revives a forgotten memory is a violation. Prints the counts; exits 1 on
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


def reader(path: str, seed: int, pipe, stop) -> None:
    warnings.simplefilter("ignore", ReinforcementWarning)
    rng = np.random.default_rng(seed + 1)
    store = MemoryStore(path)
    vectors: dict[int, np.ndarray] = {}
    forgotten: list[int] = []
    forgotten_set: set[int] = set()
    counts = {"recall": 0, "get": 0, "update": 0, "why_not": 0, "contains": 0, "reopen": 0}
    violations: list[str] = []
    pipe.send("ready")
    while not stop.is_set():
        while pipe.poll():
            memory_id, vector = pipe.recv()
            forgotten.append(memory_id)
            forgotten_set.add(memory_id)
            vectors[memory_id] = vector
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
    pipe.send((counts, violations))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--seed", type=int, default=25)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    directory = tempfile.mkdtemp()
    path = os.path.join(directory, "race.sqlite")
    writer = MemoryStore(path, dim=DIM, synchronous="NORMAL")
    writer.add_many([f"note {i}" for i in range(args.memories)], unit_rows(rng, args.memories))
    context = multiprocessing.get_context("spawn")
    parent_end, child_end = context.Pipe()
    stop = context.Event()
    child = context.Process(target=reader, args=(path, args.seed, child_end, stop))
    child.start()
    assert parent_end.recv() == "ready"
    counts = {"forget": 0, "purge": 0, "compact": 0, "reopen": 0, "add": 0, "update": 0}
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        live = [i for i in range(writer._next_id) if i in writer]
        if len(live) < args.memories // 4:
            writer.add_many([f"note new {i}" for i in range(50)], unit_rows(rng, 50))
            counts["add"] += 50
            continue
        target = int(rng.choice(live))
        vector = writer.get(target).embedding
        assert writer.forget(target)
        counts["forget"] += 1
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
            writer.add(f"note added {counts['add']}", unit_rows(rng, 1)[0])
            counts["add"] += 1
        elif draw < 0.85:
            other = int(rng.choice(live))
            if other != target:
                writer.update(other, text=f"note {other} updated")
                counts["update"] += 1
    stop.set()
    reader_counts, violations = parent_end.recv()
    child.join()
    writer.close()
    print(f"writer: {counts}")
    print(f"reader: {reader_counts}")
    print(f"violations: {len(violations)}" + (f" (first: {violations[:5]})" if violations else ""))
    sys.exit(1 if violations else 0)


if __name__ == "__main__":
    main()
