"""Property-based fuzzing of the text layers: ``BM25Index`` and ``HybridRetriever`` (the
property and the strategies: ``tests/fuzzing.py``)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.fuzzing import (  # noqa: E402
    COUNTS,
    TEXTS,
    THREADS,
    WORDS,
    _call,
    _check_bm25_hits,
    _hybrid_module,
    _id_set,
    matrices,
    pick,
    plans,
    queries,
    subsets,
    vectors,
)


@given(texts=st.lists(TEXTS, min_size=0, max_size=30), queries=st.lists(TEXTS, max_size=4), data=st.data())
def test_fuzz_bm25_index(texts, queries, data):
    from fieldrank.bm25 import BM25Index

    index = _call(BM25Index, texts)
    if index is None:
        return
    n = len(texts)
    bad = data.draw(plans(["k", "subset"]))
    k = pick(data.draw, bad, "k", *COUNTS)
    subset = data.draw(subsets(bad, n, np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))))
    allowed = None if subset is None or isinstance(subset, np.ndarray) and subset.dtype == bool else _id_set(subset)
    for query in queries:
        scores = index.scores(query)
        assert scores.shape == (n,) and scores.dtype == np.float32 and np.isfinite(scores).all()
        hits = _call(index.top, query, k, subset=subset)
        if hits is not None:
            _check_bm25_hits(*hits, int(k), n, allowed)
    batch = _call(index.top_batch, queries, k, subset=subset, n_threads=data.draw(THREADS[0]))
    if batch is not None:
        assert len(batch) == len(queries)
        for query, (ids, scores) in zip(queries, batch):
            single_ids, single_scores = index.top(query, k, subset=subset)
            assert np.array_equal(ids, single_ids) and np.array_equal(scores, single_scores)


@given(data=st.data())
def test_fuzz_hybrid_retriever(data):
    """Construction, search and search_batch of HybridRetriever on fuzzed corpora and queries."""
    HybridRetriever, presets = _hybrid_module()
    bad = data.draw(plans(["E", "q", "subset", "k", "texts"]))
    E, d, rng = data.draw(matrices("E", bad, max_rows=60))
    n = E.shape[0] if getattr(E, "ndim", 0) >= 1 else 0
    texts = data.draw(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join),
                               min_size=n, max_size=n) if "texts" not in bad else
                      st.sampled_from([[1] * n, "one string", [""] * n, [None]]), label="texts")
    preset = data.draw(st.sampled_from(presets), label="preset")
    normalize = data.draw(st.booleans(), label="normalize")
    retriever = _call(HybridRetriever, texts, E, preset, normalize=normalize)
    if retriever is None:
        return
    q = data.draw(vectors("q", bad, E, d, rng))
    query_text = data.draw(TEXTS, label="query text")
    k = pick(data.draw, bad, "k", *COUNTS)
    subset = data.draw(subsets(bad, n, rng))
    result = _call(retriever.search, query_text, q, k, subset=subset)
    if result is None:
        return
    ids, scores = np.asarray(result.ids), np.asarray(result.scores)
    if subset is None:
        allowed = set(range(n))
    elif isinstance(subset, np.ndarray) and subset.dtype == bool:  # the retriever also takes masks
        allowed = set(np.flatnonzero(subset).tolist())
    else:
        allowed = _id_set(subset)
    limit = retriever.config.k if k is None else int(k)  # None: the config's k
    assert ids.dtype == np.int64 and ids.shape == scores.shape and ids.shape[0] <= limit
    assert len(set(ids.tolist())) == ids.shape[0] and set(ids.tolist()) <= allowed
    assert np.isfinite(scores).all()
    if ids.shape[0] > 1:
        assert (scores[:-1] >= scores[1:]).all()
        tied = scores[:-1] == scores[1:]
        assert (ids[:-1][tied] < ids[1:][tied]).all()
    _ = result.legs  # provenance is computed lazily: it must not fail either
    batch = retriever.search_batch([query_text, query_text], np.stack([q, q]), k, subset=subset)
    for other in batch:
        assert np.array_equal(other.ids, result.ids) and np.array_equal(other.scores, result.scores)
