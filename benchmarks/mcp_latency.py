"""What a recall over MCP (stdio) adds to the store's own recall.

A BM25-only store file (``fieldrank mcp`` without ``--embed``, so no model is loaded) with
``--memories`` synthetic memories of one tenant; ``fieldrank mcp --store FILE`` runs as a
subprocess and the MCP SDK's client calls its ``recall`` tool. Side by side, alternating query
by query, each query answered twice:

* ``store.recall`` -- :meth:`MemoryStore.recall` on a copy of the file in this process (keyword mode,
  k as the tool's), the store's own cost;
* ``mcp recall`` -- ``client.call_tool("recall", ...)``: JSON-RPC framing, the pipe both ways,
  argument validation, the tool's store recall and the per-hit dates/provenance, JSON back.

Reported: the median of each and the median of the per-query differences (the target: <= 2 ms).
Both sides reinforce the returned memories (a recall writes their bookkeeping to the file).

Run from the repository root (needs ``fieldrank[mcp]``)::

    python benchmarks/mcp_latency.py [--memories 2000] [--queries 200] [--k 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
from mcp import Client, StdioServerParameters

from fieldrank import MemoryStore
from fieldrank.integrations._common import LEXICAL_DIM

WORDS = ("kitchen budget dog vet rabies booster march deploy friday production orion postgres mysql "
         "cabinet tile contractor invoice flight hotel passport birthday dinner gym knee doctor").split()


def build(path: str, n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, 8)) + f" item{i}" for i in range(n)]
    with MemoryStore(path, LEXICAL_DIM) as store:
        store.add_many(texts, np.ones((n, LEXICAL_DIM), dtype=np.float32))
    return [" ".join(rng.choice(WORDS, 3)) for _ in range(n)]


async def measure(path: str, queries: list[str], k: int) -> tuple[list[float], list[float]]:
    # Two copies of the file: a recall reinforces (writes), and a process that sees another's
    # write reloads it, which would charge each side for the other's recalls.
    served = path + ".served.db"
    shutil.copyfile(path, served)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "fieldrank.cli", "mcp", "--store", served],
                                   env=env)
    direct, over_mcp = [], []
    with MemoryStore(path) as store:
        async with Client(params) as client:
            for query in queries[:10]:  # warm both paths
                store.recall(query, None, k, mode="keyword")
                await client.call_tool("recall", {"query": query, "k": k})
            for query in queries:
                start = time.perf_counter()
                store.recall(query, None, k, mode="keyword")
                direct.append(time.perf_counter() - start)
                start = time.perf_counter()
                result = await client.call_tool("recall", {"query": query, "k": k})
                over_mcp.append(time.perf_counter() - start)
                if result.is_error:
                    raise RuntimeError(result.content[0].text)
    return direct, over_mcp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "memory.db")
        queries = build(path, args.memories, args.seed)[: args.queries]
        direct, over_mcp = asyncio.run(measure(path, queries, args.k))
    ms = 1e3
    added = [m - d for d, m in zip(direct, over_mcp)]
    print(f"memories {args.memories}, queries {len(queries)}, k {args.k}, load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"store.recall median {statistics.median(direct) * ms:.3f} ms")
    print(f"mcp recall   median {statistics.median(over_mcp) * ms:.3f} ms")
    print(f"added by MCP median {statistics.median(added) * ms:.3f} ms "
          f"(p90 {np.percentile(added, 90) * ms:.3f} ms; target <= 2 ms)")


if __name__ == "__main__":
    main()
