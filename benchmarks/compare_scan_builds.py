"""Scan speed of two builds of ``fieldrank._core``, side by side (before/after a kernel change).

Usage (copy the built extension aside before the change, rebuild, then)::

    python benchmarks/compare_scan_builds.py BEFORE.so AFTER.so [--alternations 6]
        [--sizes 10000x384,100000x384] [--variants avx512_bf16,avx2,portable]

Each build runs in its own process (two pybind11 modules of the same name cannot share one),
alternating before/after so that load drifting on the machine hits both; each process times 31
calls per case and kernel variant on seeded unit rows and reports the minimum. The table gives,
per case, the median over processes of those minima and the after/before ratio (< 1: faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r'''
import importlib.machinery, importlib.util, json, sys, time
import numpy as np
loader = importlib.machinery.ExtensionFileLoader("_core", sys.argv[1])
spec = importlib.util.spec_from_file_location("_core", sys.argv[1], loader=loader)
core = importlib.util.module_from_spec(spec); loader.exec_module(core)
out = {}
for size in sys.argv[2].split(","):
    n, d = map(int, size.split("x"))
    rng = np.random.default_rng(7)
    E = rng.standard_normal((n, d), dtype=np.float32); E /= np.linalg.norm(E, axis=1, keepdims=True)
    Q = rng.standard_normal((16, d), dtype=np.float32); Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    sub = np.arange(0, E.shape[0], 3, dtype=np.int64)
    for variant in sys.argv[3].split(","):
        core.set_kernel_variant(variant)
        cases = {"prefilter, 1 query": lambda: core.prefilter(E, Q[0], 150, None),
                 "prefilter, subset of N/3": lambda: core.prefilter(E, Q[0], 150, sub),
                 "prefilter_batch, 16 queries, 1 thread": lambda: core.prefilter_batch(E, Q, 150, None, 1)}
        for name, call in cases.items():
            call()
            times = []
            for _ in range(31 if n * d <= 10**8 else 7):
                start = time.perf_counter(); call(); times.append(time.perf_counter() - start)
            out[f"{n}x{d} {variant}: {name}"] = min(times)
    del E
print(json.dumps(out))
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--alternations", type=int, default=6)
    parser.add_argument("--sizes", default="100000x384", help="comma-separated NxD")
    parser.add_argument("--variants", default="avx512_bf16", help="comma-separated FIELDRANK_KERNEL names")
    args = parser.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    runs: dict[str, list] = {"before": [], "after": []}
    for _ in range(args.alternations):
        for label in ("before", "after"):
            path = getattr(args, label)
            out = subprocess.run([sys.executable, "-c", CHILD, path, args.sizes, args.variants], capture_output=True,
                                 text=True, env=env, check=True).stdout
            runs[label].append(json.loads(out))
    print("| case | before (ms) | after (ms) | after / before |")
    print("|---|---|---|---|")
    for case in runs["before"][0]:
        before = statistics.median(r[case] for r in runs["before"]) * 1e3
        after = statistics.median(r[case] for r in runs["after"]) * 1e3
        print(f"| {case} | {before:.3f} | {after:.3f} | {after / before:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
