"""The native weighted-postings scorer against scipy's sparse product of the same CSR, one thread.

Documents: ``--n`` rows, either synthetic (Zipf-like term frequencies, 80 terms a row: LoCoMo's
mean under splade-tiny) or LoCoMo's SPLADE turns resampled with replacement (``--cache``, from
``benchmarks/splade_throughput.py``); queries: LoCoMo's SPLADE questions or synthetic ones. Each
query is timed natively (``sparse_scores_batch``, n_threads=1) and with scipy's CSR × dense
vector (``D @ q``) and CSR × CSR (``D @ q.T``), alternating, and the median per-query ratio is
reported (OMP/BLAS threads pinned to 1 by the environment this script sets before numpy loads).

    PYTHONPATH=python python benchmarks/sparse_scoring.py --n 100000 --cache /tmp/splade_cache
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.sparse import csr_matrix  # noqa: E402

from fieldrank.sparse import sparse_index, sparse_scores_batch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmarks.bench_sparse import N_TERMS, zipf_csr  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--cache", default="", help="LoCoMo SPLADE encodings (turns.npz, questions.npz)")
    parser.add_argument("--seed", type=int, default=20261204)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.cache:
        t = np.load(Path(args.cache) / "turns.npz")
        T = csr_matrix((t["data"], t["indices"], t["indptr"]), shape=(len(t["indptr"]) - 1, N_TERMS))
        D = T[rng.integers(0, T.shape[0], args.n)]
        q = np.load(Path(args.cache) / "questions.npz")
        Qm = csr_matrix((q["data"], q["indices"], q["indptr"]), shape=(len(q["indptr"]) - 1, N_TERMS))
        Qm = Qm[rng.choice(Qm.shape[0], args.queries, replace=False)]
        source = f"LoCoMo SPLADE turns resampled to {args.n}"
    else:
        ip, ix, dt = zipf_csr(rng, args.n, 80)
        D = csr_matrix((dt, ix, ip), shape=(args.n, N_TERMS))
        qp, qi, qd = zipf_csr(rng, args.queries, 22)
        Qm = csr_matrix((qd, qi, qp), shape=(args.queries, N_TERMS))
        source = f"synthetic Zipf rows, {args.n}"
    D.sort_indices()
    start = time.perf_counter()
    index = sparse_index(D.indptr.astype(np.int64), D.indices.astype(np.int32), D.data.astype(np.float32), N_TERMS)
    build = time.perf_counter() - start
    print(f"{source}: nnz {D.nnz} ({D.nnz / D.shape[0]:.1f}/doc), queries {Qm.shape[0]} "
          f"({Qm.nnz / Qm.shape[0]:.1f} terms), index build {build:.2f} s, load {os.getloadavg()[0]:.1f}")
    times = {"native": [], "scipy D@q (dense q)": [], "scipy D@q.T (sparse q)": []}
    for i in range(Qm.shape[0]):
        row = Qm[i]
        ptr = np.array([0, row.nnz], np.int64)
        terms, weights = row.indices.astype(np.int32), row.data.astype(np.float32)
        dense_q = np.zeros(N_TERMS, np.float32)
        dense_q[terms] = weights
        rowT = row.T.tocsc()
        fns = [("native", lambda: sparse_scores_batch(index, ptr, terms, weights, n_threads=1)),
               ("scipy D@q (dense q)", lambda: D @ dense_q),
               ("scipy D@q.T (sparse q)", lambda: D @ rowT)]
        if i % 2:
            fns.reverse()
        outs = {}
        for name, fn in fns:
            s = time.perf_counter()
            outs[name] = fn()
            times[name].append(time.perf_counter() - s)
        np.testing.assert_allclose(outs["native"][0], outs["scipy D@q (dense q)"], rtol=1e-4, atol=1e-4)
    nat = np.array(times["native"])
    for name, ts in times.items():
        ts = np.array(ts)
        print(f"  {name}: median {np.median(ts) * 1e3:.3f} ms; median ratio to native {np.median(ts / nat):.1f}x")


if __name__ == "__main__":
    main()
