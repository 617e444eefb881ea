"""CFS-R: pool form (P × d), corpus form, batch with threads; native vs reference."""

from __future__ import annotations

import numpy as np

import fieldrank
import fieldrank.reference as ref

from .common import D_GRID, N_GRID, P, corpus_and_queries, corpus_and_query, prefilter_pool, reference_fits


class CfsrPool:
    params = [[P, 500], D_GRID, [10, 50]]
    param_names = ["P", "d", "k"]

    def setup(self, pool, d, k):
        self.q, top, self.C = prefilter_pool(pool, d)
        self.ids = top.ids

    def time_cfsr_pool(self, pool, d, k):
        fieldrank.cfsr_pool(self.ids, self.C, self.q, k)

    def time_cfsr_pool_reference(self, pool, d, k):
        ref.cfsr_pool(self.ids, self.C, self.q, k)

    def peakmem_cfsr_pool(self, pool, d, k):
        fieldrank.cfsr_pool(self.ids, self.C, self.q, k)

    def track_max_rel_score_error(self, pool, d, k):
        """Largest relative score difference native vs reference (docs/spec.md §0 allows 1e-4)."""
        a = fieldrank.cfsr_pool(self.ids, self.C, self.q, k)
        b = ref.cfsr_pool(self.ids, self.C, self.q, k)
        return float(np.max(np.abs(a.scores - b.scores) / np.maximum(np.abs(b.scores), 1e-6)))


class Cfsr:
    params = [N_GRID, D_GRID, [10, 50]]
    param_names = ["N", "d", "k"]

    def setup(self, N, d, k):
        self.E, self.q = corpus_and_query(N, d)

    def time_cfsr(self, N, d, k):
        fieldrank.cfsr(self.E, self.q, k)

    def time_cfsr_reference(self, N, d, k):
        reference_fits(N, d)
        ref.cfsr(self.E, self.q, k)

    def peakmem_setup_only(self, N, d, k):
        """Baseline: E allocated, nothing run."""

    def peakmem_cfsr(self, N, d, k):
        fieldrank.cfsr(self.E, self.q, k)


class CfsrBatch:
    params = [[10_000, 100_000], [384, 768], [1, 2]]
    param_names = ["N", "d", "threads"]
    batch = 32

    def setup(self, N, d, threads):
        self.E, self.Q = corpus_and_queries(N, d, self.batch)

    def time_cfsr_batch(self, N, d, threads):
        fieldrank.cfsr_batch(self.E, self.Q, n_threads=threads)

    def time_cfsr_batch_reference(self, N, d, threads):
        reference_fits(N, d, self.batch)
        ref.cfsr_batch(self.E, self.Q)
