"""What a ``recall`` over MCP adds beyond the store's own recall, measured against an echo tool.

A BM25-only store file (no model is loaded) with ``--memories`` synthetic memories of one tenant is
served by ``fieldrank mcp``'s server (``build_server``) in a subprocess over stdio, with one more
tool beside it on the same SDK, transport and process: ``echo``, which returns its argument. The
SDK's client calls, query by query and alternating:

* ``echo`` with the query: the cost of any tool call on this SDK and transport (JSON-RPC framing,
  the pipe both ways, argument validation, JSON back);
* ``recall`` with the query; inside the server the store's own ``MemoryStore.recall`` is timed.

Per query: **added = recall call - echo call - the store's recall** (what the recall tool itself
costs: the per-hit dates, provenance and opaque ids, and its larger answer). Reported: the median
and p90 of the added time (target: median <= 1 ms), beside the medians of the three parts. The
recalls reinforce (each writes its bookkeeping to the file), inside the store's own time.

Run from the repository root (needs the mcp extra)::

    python benchmarks/mcp_latency.py [--memories 2000] [--queries 300] [--k 5] [--transport stdio|memory]

``--transport memory`` runs the same server in this process over the SDK's in-memory connection
(no pipe, no second process): the tool's own cost with less of the machine's scheduling noise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

WORDS = ("kitchen budget dog vet rabies booster march deploy friday production orion postgres mysql "
         "cabinet tile contractor invoice flight hotel passport birthday dinner gym knee doctor").split()


def build(path: str, n: int, seed: int) -> list[str]:
    from fieldrank import MemoryStore

    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, 8)) + f" item{i}" for i in range(n)]
    with MemoryStore(path, 1) as store:  # lexical: one constant component per memory
        store.add_many(texts, np.ones((n, 1), dtype=np.float32))
    return [" ".join(rng.choice(WORDS, 3)) for _ in range(n)]


def benchmark_server(path: str):
    """fieldrank's MCP server over ``path`` plus ``echo`` and ``store_times``."""
    from fieldrank.integrations.mcp_server import MemoryService, build_server, open_store

    store = open_store(path)
    times: list[float] = []
    recall = store.recall

    def timed_recall(*args, **kwargs):
        start = time.perf_counter()
        try:
            return recall(*args, **kwargs)
        finally:
            times.append(time.perf_counter() - start)

    store.recall = timed_recall  # the store's own recall, timed where it runs
    server = build_server(MemoryService(store), tenant="default")

    @server.tool(description="Return the text (the trivial tool the recall is measured against).")
    def echo(text: str) -> dict:
        return {"text": text}

    @server.tool(description="The store's recall times so far (seconds), then forget them.")
    def store_times() -> dict:
        out = list(times)
        times.clear()
        return {"seconds": out}

    return server


async def measure(path: str, queries: list[str], k: int, transport: str) -> dict[str, list[float]]:
    from mcp import Client, StdioServerParameters

    if transport == "stdio":
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        target = StdioServerParameters(command=sys.executable, args=[os.path.abspath(__file__), "--serve", path],
                                       env=env)
    else:  # the SDK's in-memory connection: the same server in this process, no pipe
        target = benchmark_server(path)
    echo, over_mcp = [], []
    async with Client(target) as client:
        for query in queries[:20]:  # warm both paths
            await client.call_tool("echo", {"text": query})
            await client.call_tool("recall", {"query": query, "k": k})
        await client.call_tool("store_times", {})
        for query in queries:
            start = time.perf_counter()
            await client.call_tool("echo", {"text": query})
            echo.append(time.perf_counter() - start)
            start = time.perf_counter()
            result = await client.call_tool("recall", {"query": query, "k": k})
            over_mcp.append(time.perf_counter() - start)
            if result.is_error:
                raise RuntimeError(result.content[0].text)
        store = json.loads((await client.call_tool("store_times", {})).content[0].text)["seconds"]
    if len(store) != len(queries):
        raise RuntimeError(f"expected one store recall per query, got {len(store)}")
    return {"echo": echo, "recall": over_mcp, "store": store}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--transport", choices=("stdio", "memory"), default="stdio",
                        help="stdio: the server as a subprocess (default); memory: in process, no pipe")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--serve", metavar="FILE", help=argparse.SUPPRESS)  # the subprocess's side
    args = parser.parse_args()
    if args.serve:
        benchmark_server(args.serve).run("stdio")
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "memory.db")
        queries = build(path, args.memories, args.seed)[: args.queries]
        parts = asyncio.run(measure(path, queries, args.k, args.transport))
    ms = 1e3
    added = [(r - e - s) * ms for e, r, s in zip(parts["echo"], parts["recall"], parts["store"])]
    figures = {
        "transport": args.transport, "memories": args.memories, "queries": len(queries), "k": args.k,
        "load_average": os.getloadavg()[0],
        "echo_ms": statistics.median(parts["echo"]) * ms, "recall_ms": statistics.median(parts["recall"]) * ms,
        "store_recall_ms": statistics.median(parts["store"]) * ms,
        "added_median_ms": statistics.median(added), "added_p90_ms": float(np.percentile(added, 90)),
    }
    if args.json:
        print(json.dumps(figures))
        return
    print(f"{args.transport}: memories {args.memories}, queries {len(queries)}, k {args.k}, "
          f"load average {figures['load_average']:.2f}")
    print(f"echo tool call        median {figures['echo_ms']:.3f} ms")
    print(f"recall tool call      median {figures['recall_ms']:.3f} ms")
    print(f"store's own recall    median {figures['store_recall_ms']:.3f} ms (inside the server)")
    print(f"added by recall       median {figures['added_median_ms']:.3f} ms, p90 {figures['added_p90_ms']:.3f} ms "
          "(recall - echo - store; target: median <= 1 ms)")


if __name__ == "__main__":
    main()
