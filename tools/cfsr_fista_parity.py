"""How far native CFS-R (float32) and fieldrank.reference (float64) drift apart, with and without FISTA.

Usage::

    python tools/cfsr_fista_parity.py [--cases 300] [--iters 80 120 200 300] [--seed 3]

Each case is a random pool of 5-119 unit rows in 2-63 dimensions, a unit query, k in [1, n] and
λ drawn from {0, 1e-4, 0.005}; the figure per case is max_t |s_native − s_ref| / max(1, |s_ref|)
over the returned scores. Printed per iteration count and mode: how many cases pass the parity
tolerance 1e-4, and the largest gap. A second block perturbs every value of the pool by one
float32 ulp and reruns the reference alone: the gap that input rounding alone causes.
(docs/reliability.md, issue 15 item 3.)
"""

from __future__ import annotations

import argparse

import numpy as np

import fieldrank
import fieldrank.reference as ref

PARITY_RTOL = 1e-4


def _gap(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a.scores, np.float64) - b.scores) / np.maximum(1.0, np.abs(b.scores))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--iters", type=int, nargs="+", default=[80, 120, 200, 300])
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    print(f"{'iters':>5} {'fista':>5} {'past 1e-4':>10} {'max gap':>9} {'ulp-perturbed ref max':>22}")
    for iters in args.iters:
        for fista in (True, False):
            rng = np.random.default_rng(args.seed)
            gaps, ulp_gaps = [], []
            for _ in range(args.cases):
                n, d = int(rng.integers(5, 120)), int(rng.integers(2, 64))
                C = rng.standard_normal((n, d)).astype(np.float32)
                C /= np.linalg.norm(C, axis=1, keepdims=True)
                q = rng.standard_normal(d).astype(np.float32)
                q /= np.linalg.norm(q)
                k, lam = int(rng.integers(1, n + 1)), float(rng.choice([0.0, 1e-4, 0.005]))
                ids = np.arange(n)
                kwargs = {"lam": lam, "iters": iters, "fista": fista}
                want = ref.cfsr_pool(ids, C, q, k, **kwargs)
                gaps.append(_gap(fieldrank.cfsr_pool(ids, C, q, k, **kwargs), want))
                toward = np.where(rng.random(C.shape) < 0.5, np.inf, -np.inf).astype(np.float32)
                perturbed = ref.cfsr_pool(ids, np.nextafter(C, toward), q, k, **kwargs)
                if np.array_equal(perturbed.ids, want.ids):
                    ulp_gaps.append(_gap(perturbed, want))
            gaps_array = np.array(gaps)
            print(f"{iters:>5} {str(fista):>5} {int((gaps_array > PARITY_RTOL).sum()):>6}/{args.cases:<3} "
                  f"{gaps_array.max():>9.2e} {max(ulp_gaps, default=0.0):>22.2e}")


if __name__ == "__main__":
    main()
