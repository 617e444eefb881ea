"""Weighted term postings (fieldrank.sparse): the native scores equal the numpy reference bit for
bit (odd sizes, empty documents, empty queries, blocks of documents), match the dense dot product
to float32 rounding, do not depend on the thread count, and bad input is refused at the boundary.
"""

from __future__ import annotations

import numpy as np
import pytest

import fieldrank.reference as ref
from fieldrank.sparse import SparseTermIndex, check_csr, sparse_index, sparse_scores_batch

from tests.helpers import SEED


def random_csr(rng: np.random.Generator, n_rows: int, n_cols: int, density: float, empty_every: int = 0):
    """CSR arrays (int64 indptr, int32 increasing columns, float32 > 0); every empty_every-th row empty."""
    indptr, indices, data = [0], [], []
    for i in range(n_rows):
        if empty_every and i % empty_every == 0:
            cols = np.zeros(0, np.int64)
        else:
            cols = np.flatnonzero(rng.random(n_cols) < density)
        indices.append(cols.astype(np.int32))
        data.append(rng.uniform(0.01, 3.0, cols.size).astype(np.float32))
        indptr.append(indptr[-1] + cols.size)
    return (np.asarray(indptr, np.int64), np.concatenate(indices) if indices else np.zeros(0, np.int32),
            np.concatenate(data) if data else np.zeros(0, np.float32))


def dense(indptr, indices, data, n_cols):
    out = np.zeros((len(indptr) - 1, n_cols), np.float64)
    for i in range(len(indptr) - 1):
        out[i, indices[indptr[i]:indptr[i + 1]]] += data[indptr[i]:indptr[i + 1]]
    return out


@pytest.mark.parametrize(("n_docs", "n_terms", "n_queries"), [(1, 1, 1), (7, 3, 5), (131, 29, 17), (257, 61, 33)])
def test_native_equals_reference_bit_for_bit(n_docs, n_terms, n_queries):
    rng = np.random.default_rng(SEED + n_docs)
    docs = random_csr(rng, n_docs, n_terms, 0.2, empty_every=5)
    queries = random_csr(rng, n_queries, n_terms, 0.3, empty_every=4)
    index = sparse_index(*docs, n_terms)
    native = sparse_scores_batch(index, *queries, n_threads=1)
    assert native.dtype == np.float32 and native.shape == (n_queries, n_docs)
    np.testing.assert_array_equal(native, ref.sparse_scores_batch(index, *queries))
    # The dot product of the dense rows, up to float32 rounding.
    expected = dense(*queries, n_terms) @ dense(*docs, n_terms).T
    np.testing.assert_allclose(native, expected, rtol=1e-5, atol=1e-5)
    for threads in (2, 3, 0):
        np.testing.assert_array_equal(sparse_scores_batch(index, *queries, n_threads=threads), native)
    for begin, end in ((0, 0), (n_docs // 3, n_docs // 3 + 1), (n_docs // 2, n_docs), (0, n_docs)):
        block = sparse_scores_batch(index, *queries, doc_begin=begin, doc_end=end)
        np.testing.assert_array_equal(block, native[:, begin:end])
        np.testing.assert_array_equal(ref.sparse_scores_batch(index, *queries, doc_begin=begin, doc_end=end), block)


def test_empty_corpus_and_empty_batch():
    index = sparse_index(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32), 4)
    assert index.n_docs == 0 and index.n_terms == 4
    q = (np.array([0, 1], np.int64), np.array([2], np.int32), np.array([1.5], np.float32))
    assert sparse_scores_batch(index, *q).shape == (1, 0)
    assert ref.sparse_scores_batch(index, *q).shape == (1, 0)
    docs = (np.array([0, 2], np.int64), np.array([0, 3], np.int32), np.array([1.0, 2.0], np.float32))
    none = (np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    assert sparse_scores_batch(sparse_index(*docs, 4), *none).shape == (0, 1)


def test_index_is_term_major_with_documents_increasing():
    # Document 0: terms 3, 1; document 1: none; document 2: terms 1 (weight 0: dropped), 0.
    docs = (np.array([0, 2, 2, 4], np.int64), np.array([3, 1, 1, 0], np.int32),
            np.array([0.5, 2.0, 0.0, 4.0], np.float32))
    index = sparse_index(*docs, 5)
    np.testing.assert_array_equal(index.indptr, [0, 1, 2, 2, 3, 3])
    np.testing.assert_array_equal(index.indices, [2, 0, 0])
    np.testing.assert_array_equal(index.data, np.array([4.0, 2.0, 0.5], np.float32))
    assert index.indices.dtype == np.int32 and index.data.dtype == np.float32 and index.indptr.dtype == np.int64


def test_a_repeated_term_counts_each_time():
    docs = (np.array([0, 2], np.int64), np.array([1, 1], np.int32), np.array([1.0, 2.0], np.float32))
    index = sparse_index(*docs, 2)
    q = (np.array([0, 2], np.int64), np.array([1, 1], np.int32), np.array([0.5, 0.25], np.float32))
    native = sparse_scores_batch(index, *q)
    np.testing.assert_array_equal(native, ref.sparse_scores_batch(index, *q))
    assert native[0, 0] == np.float32(3.0 * 0.75)


def test_native_dtypes_are_read_in_place():
    rng = np.random.default_rng(SEED)
    arrays = random_csr(rng, 9, 11, 0.4)
    checked = check_csr(*arrays, 11)
    assert all(a is b for a, b in zip(checked, arrays))
    # Other integer and float widths are converted once (float64 weights are refused, as by the operators).
    wide = check_csr(arrays[0].astype(np.int32), arrays[1].astype(np.int64), arrays[2], 11)
    assert wide[0].dtype == np.int64 and wide[1].dtype == np.int32


@pytest.mark.parametrize(("queries", "error", "match"), [
    ((np.array([1, 1]), np.array([0], np.int32), np.array([1.0], np.float32)), ValueError, "start at 0"),
    ((np.array([0, 2, 1]), np.array([0, 1], np.int32), np.array([1.0, 1.0], np.float32)), ValueError,
     "non-decreasing"),
    ((np.array([0, 2]), np.array([0], np.int32), np.array([1.0], np.float32)), ValueError, "end at the number"),
    ((np.array([0, 1]), np.array([0, 1], np.int32), np.array([1.0], np.float32)), ValueError, "same length"),
    ((np.array([0, 1]), np.array([4], np.int32), np.array([1.0], np.float32)), ValueError, r"lie in \[0, 4\)"),
    ((np.array([0, 1]), np.array([-1], np.int32), np.array([1.0], np.float32)), ValueError, r"lie in \[0, 4\)"),
    ((np.array([0, 1]), np.array([0], np.int32), np.array([np.nan], np.float32)), ValueError, "finite"),
    ((np.array([0, 1]), np.array([0], np.int32), np.array([1.0])), TypeError, "float32"),
    ((np.array([0, 1]), np.array([0.0]), np.array([1.0], np.float32)), TypeError, "integer dtype"),
    ((np.zeros(0, np.int64), np.array([], np.int32), np.array([], np.float32)), ValueError, "n_rows \\+ 1"),
])
def test_bad_queries_are_refused_by_both(queries, error, match):
    index = sparse_index(np.array([0, 1]), np.array([2], np.int32), np.array([1.0], np.float32), 4)
    for fn in (sparse_scores_batch, ref.sparse_scores_batch):
        with pytest.raises(error, match=match):
            fn(index, *queries)


def test_bad_calls_are_refused():
    index = sparse_index(np.array([0, 1, 1]), np.array([2], np.int32), np.array([1.0], np.float32), 4)
    q = (np.array([0, 1]), np.array([2], np.int32), np.array([1.0], np.float32))
    for fn in (sparse_scores_batch, ref.sparse_scores_batch):
        with pytest.raises(ValueError, match=r"doc_begin, doc_end"):
            fn(index, *q, doc_begin=2, doc_end=1)
        with pytest.raises(ValueError, match=r"doc_begin, doc_end"):
            fn(index, *q, doc_end=3)
        with pytest.raises(TypeError, match="SparseTermIndex"):
            fn((index.data, index.indices, index.indptr), *q)
        with pytest.raises(TypeError, match="n_threads"):
            fn(index, *q, n_threads=1.5)
    # A hand-made index naming a document outside the corpus: the kernel refuses the posting.
    bad = SparseTermIndex(np.array([1.0], np.float32), np.array([5], np.int32), np.array([0, 0, 0, 1, 1]), 2)
    with pytest.raises(IndexError, match="names document 5"):
        sparse_scores_batch(bad, *q)
    with pytest.raises(ValueError, match="n_cols"):
        sparse_index(np.array([0]), np.array([], np.int32), np.array([], np.float32), -1)


def test_wide_vocabulary_index():
    # More than 2**16 terms: the index sorts int32 keys instead of 16-bit ones; the same layout.
    rng = np.random.default_rng(SEED + 2)
    n_terms = 70_001
    docs = random_csr(rng, 23, n_terms, 0.0004, empty_every=6)
    # A last document holding the terms on both sides of 2**16 and the last one.
    edge = np.array([65_535, 65_536, n_terms - 1], np.int32)
    docs = (np.append(docs[0], docs[0][-1] + edge.size), np.concatenate([docs[1], edge]),
            np.concatenate([docs[2], np.ones(edge.size, np.float32)]))
    index = sparse_index(*docs, n_terms)
    assert index.n_terms == n_terms
    dense_docs = dense(*docs, n_terms)
    for t in (0, 65_535, 65_536, n_terms - 1):
        np.testing.assert_array_equal(index.indices[index.indptr[t]:index.indptr[t + 1]],
                                      np.flatnonzero(dense_docs[:, t]))
    queries = random_csr(rng, 5, n_terms, 0.01)
    np.testing.assert_array_equal(sparse_scores_batch(index, *queries), ref.sparse_scores_batch(index, *queries))
