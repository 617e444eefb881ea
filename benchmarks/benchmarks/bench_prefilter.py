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


def _median_ratio(slow, fast, rounds=7):
    """Median over interleaved rounds of time(slow) / time(fast): the form the report's targets take."""
    from fieldrank.evaluation.bench import interleaved

    res = interleaved({"slow": slow, "fast": fast}, rounds=rounds, min_seconds=0.01)
    return float(np.median(res["slow"] / res["fast"]))


def _supported_variants():
    return list(fieldrank.build_info()["supported_kernel_variants"])


class ScanTargets:
    """One benchmark per fp32 scan target of docs/results/performance.md (issue 27): one thread,
    top-150, on every kernel variant this machine supports. ``track_speedup_vs_numpy`` (target
    ≥ 1.2) and ``track_share_of_read_probe`` (target ≥ 0.9 from N = 100k) make ``asv compare``
    show a drift of the ratio itself, not only of the time."""

    params = [N_GRID, D_GRID, _supported_variants()]
    param_names = ["N", "d", "variant"]
    timeout = 600

    def setup(self, N, d, variant):
        import fieldrank._core as core

        require(N, d)
        self.core = core
        core.set_kernel_variant(variant)  # asv runs each benchmark in a process of its own
        self.E, self.q = corpus_and_query(N, d)

    def time_prefilter(self, N, d, variant):
        fieldrank.prefilter(self.E, self.q, P)

    def time_numpy_argpartition(self, N, d, variant):
        numpy_top(self.E, self.q, P)

    def track_speedup_vs_numpy(self, N, d, variant):
        return _median_ratio(lambda: numpy_top(self.E, self.q, P), lambda: fieldrank.prefilter(self.E, self.q, P))

    track_speedup_vs_numpy.unit = "ratio"

    def track_share_of_read_probe(self, N, d, variant):
        from fieldrank.evaluation.bench import interleaved

        probe = np.ones(max(self.E.size, 2**27 // 4), dtype=np.float32)  # at least 128 MiB: beyond L2
        res = interleaved({"scan": lambda: fieldrank.prefilter(self.E, self.q, P),
                           "probe": lambda: self.core.read_probe(probe, 1)}, rounds=5, min_seconds=0.01)
        return float(np.median((self.E.nbytes / res["scan"]) / (probe.nbytes / res["probe"])))

    track_share_of_read_probe.unit = "ratio"


class ScanForms:
    """The subset form (every third row; target ≥ 1.2× numpy on the subset's rows) and the batch
    form (16 and 64 queries, one thread; target ≥ numpy GEMM + argpartition)."""

    params = [[10_000, 100_000], [384, 768], ["subset", 16, 64]]
    param_names = ["N", "d", "form"]

    def setup(self, N, d, form):
        from fieldrank.evaluation.bench import numpy_top_batch, numpy_top_subset

        require(N, d)
        self.E, Q = corpus_and_queries(N, d, 64)
        if form == "subset":
            subset = np.arange(0, N, 3, dtype=np.int64)
            q = Q[0]
            self.native = lambda: fieldrank.prefilter(self.E, q, P, subset=subset)
            self.numpy = lambda: numpy_top_subset(self.E, q, P, subset)
        else:
            QB = np.ascontiguousarray(Q[:form])
            self.native = lambda: fieldrank.prefilter_batch(self.E, QB, P, n_threads=1)
            self.numpy = lambda: numpy_top_batch(self.E, QB, P)

    def time_native(self, N, d, form):
        self.native()

    def time_numpy(self, N, d, form):
        self.numpy()

    def track_speedup_vs_numpy(self, N, d, form):
        return _median_ratio(self.numpy, self.native)

    track_speedup_vs_numpy.unit = "ratio"
