"""Quick CFS-R per-query timing: native (fieldrank) against the numpy reference, side by side.

N = 10,000 random unit rows, P = 150, d in {384, 768}, the locked defaults otherwise
(k = 50, w = 0.9, lam = 0.005, T = 80). Each query runs once in each module, interleaved, so
both see the same machine state; the median over the queries is reported. Single-query calls
through the public API (validation included); the native core call alone is reported too.

    python benchmarks/quick_cfsr.py [--queries 200] [--n 10000] [--p 150]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

import fieldrank
import fieldrank.reference
from fieldrank import _core


def unit_rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    X = rng.standard_normal((n, d)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X


def median_ms(samples) -> float:
    return float(np.median(samples) * 1e3)


def run(n: int, d: int, p: int, queries: int, seed: int) -> dict:
    rng = np.random.default_rng([seed, d])
    E = unit_rows(rng, n, d)
    Q = unit_rows(rng, queries, d)
    D = fieldrank.DEFAULTS
    core_args = (D["cfsr_k"], p, D["w"], D["lam"], D["iters"], D["tol"], False, None)
    # Warm up both (first-call allocations, BLAS thread start-up).
    for q in Q[:3]:
        fieldrank.cfsr(E, q, p=p)
        fieldrank.reference.cfsr(E, q, p=p)
    native, core, reference = [], [], []
    agree = 0
    for q in Q:
        t0 = time.perf_counter()
        a = fieldrank.cfsr(E, q, p=p)
        t1 = time.perf_counter()
        _core.cfsr(E, q, *core_args)
        t2 = time.perf_counter()
        b = fieldrank.reference.cfsr(E, q, p=p)
        t3 = time.perf_counter()
        native.append(t1 - t0)
        core.append(t2 - t1)
        reference.append(t3 - t2)
        agree += int(np.array_equal(a.ids[:10], b.ids[:10]))
    return {"d": d, "native": median_ms(native), "core": median_ms(core), "reference": median_ms(reference),
            "agree_top10": agree / len(Q)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--p", type=int, default=150)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dims", type=int, nargs="+", default=[384, 768])
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()

    info = fieldrank.build_info()
    print(f"fieldrank {fieldrank.__version__}  build {info.get('build_type')}  flags '{info.get('cxx_flags')}'  "
          f"Eigen {info.get('eigen_version')}")
    print(f"{platform.processor() or platform.machine()}  {os.cpu_count()} CPUs  numpy {np.__version__}  "
          f"OMP/OPENBLAS threads {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
    print(f"CFS-R single query: N={args.n:,} random unit rows, P={args.p}, k=50, T=80, "
          f"median over {args.queries} queries (ms per query)")
    print(f"{'d':>5} {'native':>10} {'_core only':>11} {'reference':>11} {'speed-up':>9} {'top-10 agree':>13}")
    for d in args.dims:
        r = run(args.n, d, args.p, args.queries, args.seed)
        print(f"{r['d']:>5} {r['native']:>10.3f} {r['core']:>11.3f} {r['reference']:>11.3f} "
              f"{r['reference'] / r['native']:>8.1f}x {r['agree_top10']:>13.0%}")


if __name__ == "__main__":
    main()
