"""Default-mode MemoryStore recall next to one native fp32 prefilter scan of the tenant's rows.

The same data and calls as the asv class ``benchmarks/benchmarks/bench_memory.py:MemoryRecall``,
timed side by side in one process (calls interleaved, medians), for a quick reading without an
asv environment::

    python benchmarks/memory_latency.py            # N = 10k and 50k, d = 384
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchmarks.bench_memory import MemoryRecall  # noqa: E402

ROUNDS = 3
CALLS_PER_ROUND = 7


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 50_000])
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args(argv)
    bench = MemoryRecall()
    print("| memories of the tenant | default-mode recall p50 | one prefilter scan p50 | ratio (target <= 2x) |")
    print("|---|---|---|---|")
    for n in args.sizes:
        bench.setup(n, args.dim)
        times: dict[str, list[float]] = {"recall": [], "scan": []}
        for _ in range(ROUNDS):
            for name, call in (("recall", bench.time_recall_default), ("scan", bench.time_prefilter_tenant_rows)):
                for _ in range(CALLS_PER_ROUND):
                    started = time.perf_counter()
                    call(n, args.dim)
                    times[name].append(time.perf_counter() - started)
        recall, scan = (1000 * float(np.median(times[k])) for k in ("recall", "scan"))
        print(f"| {n:,} | {recall:.2f} ms | {scan:.3f} ms | {recall / scan:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
