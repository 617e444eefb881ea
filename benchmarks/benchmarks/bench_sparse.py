"""Weighted term postings (SPLADE-like documents): the native inverted-index scorer against the
numpy reference and scipy's sparse product of the same CSR, one query, one thread."""

from __future__ import annotations

import numpy as np

import fieldrank.reference as ref
from fieldrank.sparse import sparse_index, sparse_scores_batch

from .common import SEED, require

N_TERMS = 30522  # BERT's vocabulary, SPLADE's columns
DOC_TERMS = 80  # LoCoMo turns under splade-tiny: 80 terms on average
QUERY_TERMS = 22  # LoCoMo questions: 22.5 on average


def zipf_csr(rng: np.random.Generator, n_rows: int, terms_per_row: int):
    """CSR rows of ~terms_per_row distinct terms each, term frequencies Zipf-like (as in text)."""
    ranks = np.arange(1, N_TERMS + 1, dtype=np.float64)
    p = 1.0 / ranks
    p /= p.sum()
    draws = rng.choice(N_TERMS, size=(n_rows, terms_per_row), p=p)
    indptr, indices = [0], []
    for row in draws:
        cols = np.unique(row).astype(np.int32)
        indices.append(cols)
        indptr.append(indptr[-1] + cols.size)
    indices = np.concatenate(indices)
    data = rng.uniform(0.01, 2.5, indices.size).astype(np.float32)
    return np.asarray(indptr, np.int64), indices, data


class SparseScores:
    params = [[10_000, 100_000]]
    param_names = ["N"]

    def setup(self, N):
        require(N, DOC_TERMS * 2)  # ~ N × terms × (4 + 4) bytes, twice (CSR and index)
        rng = np.random.default_rng(SEED)
        self.docs = zipf_csr(rng, N, DOC_TERMS)
        self.index = sparse_index(*self.docs, N_TERMS)
        self.query = zipf_csr(rng, 1, QUERY_TERMS)
        from scipy.sparse import csr_matrix

        self.D = csr_matrix((self.docs[2], self.docs[1], self.docs[0]), shape=(N, N_TERMS))
        self.q_dense = np.zeros(N_TERMS, np.float32)
        self.q_dense[self.query[1]] = self.query[2]

    def time_native(self, N):
        sparse_scores_batch(self.index, *self.query, n_threads=1)

    def time_reference(self, N):
        ref.sparse_scores_batch(self.index, *self.query)

    def time_scipy_matvec(self, N):
        self.D @ self.q_dense

    def time_build_index(self, N):
        sparse_index(*self.docs, N_TERMS)
