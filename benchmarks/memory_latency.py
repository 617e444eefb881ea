"""Default-mode MemoryStore recall next to one native fp32 prefilter scan of the tenant's rows.

The same data and calls as the asv classes ``benchmarks/benchmarks/bench_memory.py:MemoryRecall``
and ``MemoryRecallLivedIn``, timed side by side in one process (calls interleaved, medians), for a
quick reading without an asv environment::

    python benchmarks/memory_latency.py            # N = 10k and 50k, d = 384

Columns: default-mode ``recall(..., reinforce=False)`` on the fresh store (the issue-17 target),
the same after :data:`~benchmarks.bench_memory.LIVED_IN_RECALLS` reinforcing recalls (co-recall
links to spread), ``recall()`` with every default (``reinforce=True``: bookkeeping and links
written per call) on that store, and one native fp32 prefilter scan of the tenant's rows.
``--statistic min`` prints the fastest of the calls instead of the median (on a machine shared
with other jobs the minimum is the better estimate of the uncontended cost; the target is on p50).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchmarks.bench_memory import MemoryRecall, MemoryRecallLivedIn  # noqa: E402

ROUNDS = 3
CALLS_PER_ROUND = 7


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 50_000])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--statistic", choices=("p50", "min"), default="p50")
    args = parser.parse_args(argv)
    statistic = np.median if args.statistic == "p50" else np.min
    stat = args.statistic
    print(f"| memories of the tenant | recall {stat} (reinforce=False) | ratio (target <= 2x) | lived-in store, "
          f"reinforce=False | ratio | lived-in, every default (reinforce=True) | ratio | one prefilter scan {stat} |")
    print("|---|---|---|---|---|---|---|---|")
    for n in args.sizes:
        fresh, lived_in = MemoryRecall(), MemoryRecallLivedIn()
        fresh.setup(n, args.dim)
        lived_in.setup(n, args.dim)
        calls = {"fresh": fresh.time_recall_default, "lived_in": lived_in.time_recall_no_reinforce,
                 "defaults": lived_in.time_recall_defaults_reinforcing, "scan": fresh.time_prefilter_tenant_rows}
        times: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(ROUNDS):
            for name, call in calls.items():
                for _ in range(CALLS_PER_ROUND):
                    started = time.perf_counter()
                    call(n, args.dim)
                    times[name].append(time.perf_counter() - started)
        ms = {name: 1000 * float(statistic(values)) for name, values in times.items()}
        scan = ms["scan"]
        cells = " | ".join(f"{ms[name]:.2f} ms | {ms[name] / scan:.1f}x" for name in ("fresh", "lived_in", "defaults"))
        print(f"| {n:,} | {cells} | {scan:.3f} ms |")
        del fresh, lived_in
    return 0


if __name__ == "__main__":
    sys.exit(main())
