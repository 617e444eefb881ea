"""``k`` means k: a search returns exactly min(k, n) hits for every preset with a leg that can
rank every document, deepening the legs when none returns k ids (issue 14, item 1)."""

from __future__ import annotations

import numpy as np
import pytest

from fieldrank.config import PRESET_NAMES
from fieldrank.hybrid import HybridRetriever

WORDS = ["kitchen", "garden", "quartz", "piano", "camp", "oil", "rush", "cabinets", "plants", "fees"]
N_DOCS = 120
DENSE_PRESETS = [name for name in PRESET_NAMES if name != "bm25"]


@pytest.fixture(scope="module")
def retriever():
    rng = np.random.default_rng(14)
    texts = [" ".join(rng.choice(WORDS, 4)) for _ in range(N_DOCS)]
    E = rng.standard_normal((N_DOCS, 16)).astype(np.float32)
    return HybridRetriever(texts, E, "default", normalize=True)


@pytest.mark.parametrize("preset", DENSE_PRESETS)
@pytest.mark.parametrize("k", [1, 10, 50, N_DOCS, 500])
def test_exactly_min_k_n_hits(retriever, preset, k):
    r = retriever.with_config(preset)
    rng = np.random.default_rng(k)
    q = rng.standard_normal(16).astype(np.float32)
    result = r.search("kitchen garden", q, k)
    assert len(result) == min(k, N_DOCS)
    assert len(set(result.ids.tolist())) == len(result)
    assert np.all(np.diff(result.scores) <= 0)
    subset = np.arange(0, N_DOCS, 3)
    restricted = r.search("kitchen garden", q, k, subset=subset)
    assert len(restricted) == min(k, subset.size)
    assert set(restricted.ids.tolist()) <= set(subset.tolist())
    batch = r.search_batch(["kitchen garden", "piano"], np.stack([q, -q]), k, n_threads=2)
    assert [len(b) for b in batch] == [min(k, N_DOCS)] * 2
    np.testing.assert_array_equal(batch[0].ids, result.ids)
    np.testing.assert_array_equal(batch[0].scores, result.scores)


def test_configured_k_is_unchanged_and_default_prefix_is_stable(retriever):
    q = np.random.default_rng(3).standard_normal(16).astype(np.float32)
    shallow = retriever.search("camp oil", q)  # default preset, k = 10
    deep = retriever.search("camp oil", q, 50)
    assert len(shallow) == retriever.config.k
    # One leg: deepening it does not reorder its first hits.
    np.testing.assert_array_equal(deep.ids[: len(shallow)], shallow.ids)


def test_bm25_only_returns_the_matching_documents(retriever):
    r = retriever.with_config("bm25")
    result = r.search("quartz", k=500)
    matching = sum("quartz" in t.split() for t in retriever.texts)
    assert len(result) == matching  # documented: BM25 returns only documents sharing a term
