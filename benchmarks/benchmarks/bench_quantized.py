"""Reduced-precision prefilter: throughput by precision, and pool recall@150 against exact fp32."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import fieldrank
import fieldrank.reference as ref

from .common import D_GRID, N_GRID, P, corpus_and_query, queries, reference_fits, require, unit_rows

PRECISIONS = ["fp32", "bf16", "int8"]
LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "emb"


class QuantizedPrefilter:
    params = [N_GRID, D_GRID, PRECISIONS]
    param_names = ["N", "d", "precision"]

    def setup(self, N, d, precision):
        self.E, self.q = corpus_and_query(N, d)
        self.QC = None if precision == "fp32" else fieldrank.quantize(self.E, precision)

    def _prefilter(self, module):
        """The fp32 scan, or the quantized scan with its exact rescoring, in ``module``."""
        if self.QC is None:
            module.prefilter(self.E, self.q, P)
        else:
            module.prefilter_quantized(self.QC, self.E, self.q, P)

    def time_prefilter(self, N, d, precision):
        self._prefilter(fieldrank)

    def time_prefilter_reference(self, N, d, precision):
        reference_fits(N, d)
        self._prefilter(ref)

    def peakmem_prefilter(self, N, d, precision):
        self._prefilter(fieldrank)


def pool_recall(QC, E, Q, factor):
    hits = [np.intersect1d(fieldrank.prefilter_quantized(QC, E, q, P, rescore_factor=factor).ids,
                           fieldrank.prefilter(E, q, P).ids).size / min(P, E.shape[0]) for q in Q]
    return float(np.mean(hits))


class QuantizedRecall:
    """Pool recall@150 of the quantized prefilter against exact fp32 (mean over queries)."""

    params = [["random-100k-384", "locomo-mpnet", "locomo-minilm"], ["bf16", "int8"], [1, 2, 4]]
    param_names = ["data", "precision", "rescore_factor"]

    def setup(self, data, precision, factor):
        if data.startswith("random"):
            require(100_000, 384)
            self.E = unit_rows(100_000, 384)
            self.Q = queries(self.E, 32)
        else:
            folder = LOCOMO / {"locomo-mpnet": "mpnet-base-v2", "locomo-minilm": "minilm-l6-v2"}[data]
            if not (folder / "turns.npy").exists():
                raise NotImplementedError(f"LoCoMo embeddings not found in {folder}")
            self.E = np.ascontiguousarray(np.load(folder / "turns.npy"), dtype=np.float32)
            self.Q = np.ascontiguousarray(np.load(folder / "questions.npy")[::8], dtype=np.float32)
        self.QC = fieldrank.quantize(self.E, precision)

    def track_pool_recall(self, data, precision, factor):
        return pool_recall(self.QC, self.E, self.Q, factor)

    track_pool_recall.unit = "recall@150"
