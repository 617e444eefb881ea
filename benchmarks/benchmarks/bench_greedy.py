"""CFS and MMR (greedy pickers) and Ring: pool and corpus forms; MMR against langchain_core."""

from __future__ import annotations

import numpy as np

import fieldrank
import fieldrank.reference as ref

from .common import D_GRID, N_GRID, P, corpus_and_queries, corpus_and_query, prefilter_pool, reference_fits


class GreedyPool:
    params = [[P], D_GRID, [10, 50]]
    param_names = ["P", "d", "k"]

    def setup(self, pool, d, k):
        self.q, top, self.C = prefilter_pool(pool, d)
        self.ids, self.sims = top.ids, top.scores

    def time_cfs_pool(self, pool, d, k):
        fieldrank.cfs_pool(self.ids, self.C, self.q, k)

    def time_cfs_pool_reference(self, pool, d, k):
        ref.cfs_pool(self.ids, self.C, self.q, k)

    def time_mmr_pool(self, pool, d, k):
        fieldrank.mmr_pool(self.ids, self.C, self.q, k)

    def time_mmr_pool_reference(self, pool, d, k):
        ref.mmr_pool(self.ids, self.C, self.q, k)

    def time_mmr_langchain_core(self, pool, d, k):
        try:
            from langchain_core.vectorstores.utils import maximal_marginal_relevance
        except ImportError as exc:
            raise NotImplementedError("langchain-core is not installed") from exc
        maximal_marginal_relevance(self.q, self.C, lambda_mult=fieldrank.DEFAULTS["mu"], k=k)

    def time_ring_pool(self, pool, d, k):
        fieldrank.ring_pool(self.ids[: 2 * k], self.C[: 2 * k], self.q, k)

    def time_ring_pool_reference(self, pool, d, k):
        ref.ring_pool(self.ids[: 2 * k], self.C[: 2 * k], self.q, k)

    def peakmem_cfs_pool(self, pool, d, k):
        fieldrank.cfs_pool(self.ids, self.C, self.q, k)

    def peakmem_mmr_pool(self, pool, d, k):
        fieldrank.mmr_pool(self.ids, self.C, self.q, k)


class GreedyCorpus:
    params = [N_GRID, D_GRID]
    param_names = ["N", "d"]

    def setup(self, N, d):
        self.E, self.q = corpus_and_query(N, d)

    def time_cfs(self, N, d):
        fieldrank.cfs(self.E, self.q)

    def time_cfs_reference(self, N, d):
        reference_fits(N, d)
        ref.cfs(self.E, self.q)

    def time_mmr(self, N, d):
        fieldrank.mmr(self.E, self.q)

    def time_mmr_reference(self, N, d):
        reference_fits(N, d)
        ref.mmr(self.E, self.q)

    def time_ring(self, N, d):
        fieldrank.ring(self.E, self.q)

    def time_ring_reference(self, N, d):
        reference_fits(N, d)
        ref.ring(self.E, self.q)

    def peakmem_setup_only(self, N, d):
        """Baseline: E allocated, nothing run."""

    def peakmem_cfs(self, N, d):
        fieldrank.cfs(self.E, self.q)

    def peakmem_mmr(self, N, d):
        fieldrank.mmr(self.E, self.q)

    def peakmem_ring(self, N, d):
        fieldrank.ring(self.E, self.q)


class GreedyBatch:
    params = [[10_000, 100_000], [1, 2]]
    param_names = ["N", "threads"]
    batch = 32

    def setup(self, N, threads):
        self.E, self.Q = corpus_and_queries(N, 384, self.batch)

    def time_cfs_batch(self, N, threads):
        fieldrank.cfs_batch(self.E, self.Q, n_threads=threads)

    def time_mmr_batch(self, N, threads):
        fieldrank.mmr_batch(self.E, self.Q, n_threads=threads)

    def time_ring_batch(self, N, threads):
        fieldrank.ring_batch(self.E, self.Q, n_threads=threads)


class Rrf:
    params = [[3, 5], [10, 50]]
    param_names = ["legs", "depth"]

    def setup(self, legs, depth):
        rng = np.random.default_rng(0)
        self.rankings = [rng.choice(10_000, size=depth, replace=False) for _ in range(legs)]
        self.batch = [self.rankings] * 256

    def time_rrf(self, legs, depth):
        fieldrank.rrf(self.rankings)

    def time_rrf_reference(self, legs, depth):
        ref.rrf(self.rankings)

    def time_rrf_batch(self, legs, depth):
        fieldrank.rrf_batch(self.batch)
