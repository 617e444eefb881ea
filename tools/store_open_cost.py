"""What validating a memory store file on open costs (docs/reliability.md §7, issue 15 item 2).

Usage::

    python tools/store_open_cost.py [--memories 20000] [--dim 384] [--repeats 5]

Builds a file store in a temporary directory (random unit embeddings, two tags per memory), then
opens and closes it ``--repeats`` times with the file check and without it (the check replaced by
a no-op), alternating, and prints the median of each and the check's own time.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time

import numpy as np

import fieldrank.memory._persistence._sqlite as backend
from fieldrank.memory import MemoryStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=20000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "memory.sqlite")
        rng = np.random.default_rng(0)
        n = args.memories
        with MemoryStore(path, dim=args.dim) as store:
            store.add_many([f"memory {i} about topic {i % 97}" for i in range(n)],
                           rng.standard_normal((n, args.dim)).astype(np.float32),
                           tags=[[f"t{i % 13}", f"u{i % 7}"] for i in range(n)])
        check = backend.check_store_file
        times: dict[str, list[float]] = {"with the file check": [], "without it": []}
        for _ in range(args.repeats):
            for name, times_of in times.items():
                backend.check_store_file = check if name == "with the file check" else (lambda connection, p: None)
                start = time.perf_counter()
                MemoryStore(path).close()
                times_of.append(time.perf_counter() - start)
        backend.check_store_file = check
        connection = sqlite3.connect(path)
        start = time.perf_counter()
        check(connection, path)
        alone = time.perf_counter() - start
        connection.close()
    for name, values in times.items():
        print(f"open {name}: median {statistics.median(values):.3f} s over {len(values)}")
    print(f"the check alone: {alone:.3f} s ({n} memories, dim {args.dim})")


if __name__ == "__main__":
    main()
