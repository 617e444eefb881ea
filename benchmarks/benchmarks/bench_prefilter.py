"""Prefilter (cosine top-P): native vs reference vs numpy E@q + argpartition, single and batch."""

from __future__ import annotations

import numpy as np

import fieldrank
import fieldrank.reference as ref

from .common import D_GRID, N_GRID, P, corpus_and_queries, corpus_and_query, queries, reference_fits, require, unit_rows


def numpy_top(E, q, p):
    s = E @ q
    top = np.argpartition(-s, p - 1)[:p] if p < s.size else np.arange(s.size)
    return top[np.lexsort((top, -s[top]))]


class Prefilter:
    params = [N_GRID, D_GRID, [10, P]]
    param_names = ["N", "d", "p"]

    def setup(self, N, d, p):
        self.E, self.q = corpus_and_query(N, d)

    def time_prefilter(self, N, d, p):
        fieldrank.prefilter(self.E, self.q, p)

    def time_prefilter_reference(self, N, d, p):
        reference_fits(N, d)
        ref.prefilter(self.E, self.q, p)

    def time_numpy_argpartition(self, N, d, p):
        numpy_top(self.E, self.q, p)

    def peakmem_setup_only(self, N, d, p):
        """Baseline for the peakmem_ figures: the process with E (and nothing else) allocated."""

    def peakmem_prefilter(self, N, d, p):
        fieldrank.prefilter(self.E, self.q, p)

    def peakmem_numpy_argpartition(self, N, d, p):
        numpy_top(self.E, self.q, p)

    def track_bytes_per_row(self, N, d, p):
        """Bytes the fused scan reads per row (d·4): the GB/s figures divide by this."""
        return d * 4

    track_bytes_per_row.unit = "bytes"


class PrefilterBatch:
    params = [N_GRID, [384], [1, 2]]
    param_names = ["N", "d", "threads"]
    batch = 16

    def setup(self, N, d, threads):
        self.E, self.Q = corpus_and_queries(N, d, self.batch)

    def time_prefilter_batch(self, N, d, threads):
        fieldrank.prefilter_batch(self.E, self.Q, P, n_threads=threads)

    def time_prefilter_batch_reference(self, N, d, threads):
        reference_fits(N, d, self.batch)
        ref.prefilter_batch(self.E, self.Q, P, n_threads=threads)

    def peakmem_prefilter_batch(self, N, d, threads):
        fieldrank.prefilter_batch(self.E, self.Q, P, n_threads=threads)


class PrefilterFaiss:
    """faiss IndexFlatIP, one thread, as the exact-search peer (skipped without faiss-cpu)."""

    params = [N_GRID, D_GRID]
    param_names = ["N", "d"]

    def setup(self, N, d):
        require(N, d, 2)  # E plus faiss's own copy
        try:
            import faiss
        except ImportError as exc:
            raise NotImplementedError("faiss-cpu is not installed") from exc
        faiss.omp_set_num_threads(1)
        self.E = unit_rows(N, d)
        self.q = queries(self.E, 1)
        self.index = faiss.IndexFlatIP(d)
        self.index.add(self.E)

    def time_faiss_flat_ip(self, N, d):
        self.index.search(self.q, P)

    def time_prefilter(self, N, d):
        fieldrank.prefilter(self.E, self.q[0], P)
