"""What a ``HybridRetriever.search`` with a huge ``k`` costs (issue 25: bounded by the corpus, not by k).

Usage::

    python tools/search_k_cost.py [--docs 500] [--dim 64] [--preset rrf_cfsr]

Builds a retriever over random unit rows and word texts, then times ``search`` at k = 3·10^8 and
10^9 (Python allocations traced with tracemalloc), and runs 1,000 searches with distinct k from
10^5 (resident memory before and after, plans cached). Before the fix: k = 10^9 needed 7.45 GiB,
and 1,000 distinct k added 770 MiB of cached plans.
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np

from fieldrank.hybrid import HybridRetriever


def resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--preset", default="rrf_cfsr")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(300)]
    texts = [" ".join(rng.choice(words, 8)) for _ in range(args.docs)]
    E = rng.normal(size=(args.docs, args.dim)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    retriever = HybridRetriever(texts, E, args.preset)
    text, query = texts[3], E[3]
    retriever.search(text, query, 10)
    for k in (3 * 10**8, 10**9):
        tracemalloc.start()
        started = time.perf_counter()
        result = retriever.search(text, query, k)
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"k={k}: {len(result.ids)} hits, {elapsed * 1000:.1f} ms, Python allocation peak {peak / 2**20:.2f} MiB")
    before = resident_mib()
    started = time.perf_counter()
    for k in range(10**5, 10**5 + 1000):
        retriever.search(text, query, k)
    print(f"1,000 distinct k from 10^5: resident {before:.1f} -> {resident_mib():.1f} MiB, "
          f"{len(retriever._plans)} plans cached, {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
