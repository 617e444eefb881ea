"""The memory store on SQLite and on PostgreSQL, side by side in one run (issue 39).

Usage::

    python benchmarks/store_backends.py [--dim 384] [--tenants 20] [--per-tenant 500] [--seconds 5]
                                        [--recalls 200] [--served 5]

Starts a PostgreSQL server in a temporary folder (tests/postgres_server.py) and makes an SQLite
file beside it, then measures on each backend:

- add throughput: 1 and 4 writer processes, each calling ``add`` (one memory, one transaction)
  in a tenant of its own for ``--seconds``; memories per second, all writers together;
- open: a new store object on ``--tenants × --per-tenant`` memories (every tenant is loaded at
  open: there is no per-tenant loading yet), and its first recall (a cold tenant);
- warm recall p50/p95 over ``--recalls`` recalls (hybrid, k=10, reinforcing: each one writes its
  bookkeeping to the backend) on random tenants;
- catch-up: another store object adds a memory; the latency of this store's next call (a recall
  that must first apply the write; it always sees it: the lag is that one call);
- resident memory: how much a fresh process's resident set grows when it opens the store and
  recalls in ``--served`` tenants, at two sizes of the store (half and all of the tenants), to
  show what it grows with.

Prints one markdown table. Figures depend on the machine and its load; the report gives both.
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

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fieldrank.memory import MemoryStore, ReinforcementWarning  # noqa: E402

from tests.postgres_server import fresh_schema, start_postgres  # noqa: E402

WORDS = ("river", "budget", "meeting", "garden", "flight", "lunch", "deploy", "allergy", "violin", "camping")


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    X = rng.standard_normal((n, dim)).astype(np.float32)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def texts(rng: np.random.Generator, n: int) -> list[str]:
    return [" ".join(rng.choice(WORDS, 6)) + f" note {i}" for i in range(n)]


def fill(location: str, dim: int, tenants: int, per_tenant: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    with MemoryStore(location, dim=dim, synchronous="NORMAL") as store:
        for t in range(tenants):
            store.add_many(texts(rng, per_tenant), unit_rows(rng, per_tenant, dim), tenants=f"tenant{t}")


def writer(location: str, number: int, seconds: float, dim: int, start, out) -> None:
    rng = np.random.default_rng(1000 + number)
    vectors = unit_rows(rng, 256, dim)
    with MemoryStore(location) as store:
        start.wait()
        end = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < end:
            store.add(f"writer {number} note {n}", vectors[n % 256], tenant=f"writer{number}")
            n += 1
    out.put(n)


def add_throughput(location: str, writers: int, seconds: float, dim: int) -> float:
    context = multiprocessing.get_context("spawn")
    start, out = context.Event(), context.Queue()
    processes = [context.Process(target=writer, args=(location, i, seconds, dim, start, out)) for i in range(writers)]
    for p in processes:
        p.start()
    time.sleep(2.0 + writers)  # let every writer open its store
    start.set()
    total = sum(out.get(timeout=seconds + 120) for _ in processes)
    for p in processes:
        p.join()
    return total / seconds


def recalls(location: str, args) -> dict:
    rng = np.random.default_rng(7)
    t0 = time.perf_counter()
    store = MemoryStore(location)
    opened = time.perf_counter() - t0
    cue = unit_rows(rng, 1, args.dim)[0]
    t0 = time.perf_counter()
    store.recall("river budget", cue, 10, tenant="tenant0")
    first = time.perf_counter() - t0
    times = []
    for _ in range(args.recalls):
        tenant = f"tenant{int(rng.integers(0, args.tenants))}"
        cue = unit_rows(rng, 1, args.dim)[0]
        t0 = time.perf_counter()
        store.recall(" ".join(rng.choice(WORDS, 3)), cue, 10, tenant=tenant)
        times.append(time.perf_counter() - t0)
    other = MemoryStore(location)
    lags = []
    for i in range(50):
        new = other.add(f"remote note {i}", unit_rows(rng, 1, args.dim)[0], tenant="tenant0")
        t0 = time.perf_counter()
        hits = store.recall(None, other.get(new).embedding, 1, tenant="tenant0", mode="vector", reinforce=False)
        lags.append(time.perf_counter() - t0)
        assert hits.ids[0] == new, "the remote write was not visible to the next call"
    other.close()
    store.close()
    return {"open": opened, "first": first, "p50": np.percentile(times, 50), "p95": np.percentile(times, 95),
            "lag50": np.percentile(lags, 50), "lag95": np.percentile(lags, 95)}


def rss_mb() -> float:
    """This process's resident set now (not its peak: the import's transient peak would hide the store)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def resident(location: str, served: int, dim: int, out) -> None:
    warnings.simplefilter("ignore", ReinforcementWarning)
    rng = np.random.default_rng(3)
    cue = unit_rows(rng, 1, dim)[0]
    before = rss_mb()
    with MemoryStore(location) as store:
        for t in range(served):
            store.recall("river", cue, 10, tenant=f"tenant{t}")
        out.put(rss_mb() - before)


def peak_rss(location: str, served: int, dim: int) -> float:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    p = context.Process(target=resident, args=(location, served, dim, out))
    p.start()
    value = out.get(timeout=600)
    p.join()
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--tenants", type=int, default=20)
    parser.add_argument("--per-tenant", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--recalls", type=int, default=200)
    parser.add_argument("--served", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ReinforcementWarning)
    folder = tempfile.mkdtemp(prefix="fieldrank-store-backends-")
    server = start_postgres(folder)
    rows = {}
    for name in ("sqlite", "postgres"):
        def location(label: str) -> str:
            return os.path.join(folder, f"{label}.sqlite") if name == "sqlite" else fresh_schema(server, label)

        row = {}
        for writers in (1, 4):
            where = location(f"adds{writers}")
            MemoryStore(where, dim=args.dim).close()
            row[f"adds{writers}"] = add_throughput(where, writers, args.seconds, args.dim)
        half = location("half")
        fill(half, args.dim, args.tenants // 2, args.per_tenant, 11)
        full = location("full")
        fill(full, args.dim, args.tenants, args.per_tenant, 11)
        row.update(recalls(full, args))
        row["rss_half"] = peak_rss(half, args.served, args.dim)
        row["rss_full"] = peak_rss(full, args.served, args.dim)
        rows[name] = row
        print(f"{name}: {row}", flush=True)
    n = args.tenants * args.per_tenant
    print(f"\n{args.tenants} tenants x {args.per_tenant} memories (d = {args.dim}), load {os.getloadavg()[0]:.1f}\n")
    print("| | SQLite | PostgreSQL |\n| --- | ---: | ---: |")
    lines = [
        ("adds/s, 1 writer process", "adds1", "{:.0f}"),
        ("adds/s, 4 writer processes", "adds4", "{:.0f}"),
        (f"open ({n:,} memories, every tenant loaded), s", "open", "{:.2f}"),
        ("first recall after open (cold tenant), ms", "first", "{:.1f}"),
        ("warm recall p50, ms", "p50", "{:.2f}"),
        ("warm recall p95, ms", "p95", "{:.2f}"),
        ("catch-up: next call after a remote add, p50 ms", "lag50", "{:.2f}"),
        ("catch-up: next call after a remote add, p95 ms", "lag95", "{:.2f}"),
        (f"RSS added by the store, {args.tenants // 2} tenants stored, {args.served} served, MB", "rss_half",
         "{:.0f}"),
        (f"RSS added by the store, {args.tenants} tenants stored, {args.served} served, MB", "rss_full", "{:.0f}"),
    ]
    scale = {"first": 1000, "p50": 1000, "p95": 1000, "lag50": 1000, "lag95": 1000}
    for label, key, fmt in lines:
        values = [fmt.format(rows[b][key] * scale.get(key, 1)) for b in ("sqlite", "postgres")]
        print(f"| {label} | {values[0]} | {values[1]} |")


if __name__ == "__main__":
    main()
