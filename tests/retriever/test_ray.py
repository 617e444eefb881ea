"""Ray Data scale-out: map_batches with SearchActor on a local Ray runtime equals one process's search_batch."""

from __future__ import annotations

import numpy as np
import pytest

from fieldrank import HybridRetriever
from fieldrank.integrations.ray import MISSING_ID, SearchActor

from tests.helpers import unit_rows

# Ray Data warns about its own deprecated settings when it builds its context.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*")

N_DOCS, DIM, N_QUERIES, K = 400, 16, 96, 7
WORDS = "kitchen budget cabinets dog vet rabies insurance car sister june walnut floor contractor".split()


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray", reason="needs the ray extra: pip install \"fieldrank[ray]\"")
    pytest.importorskip("ray.data", reason="needs ray[data]")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def saved_index(rng, tmp_path):
    texts = [" ".join(rng.choice(WORDS, size=5)) for _ in range(N_DOCS)]
    retriever = HybridRetriever(texts, unit_rows(rng, N_DOCS, DIM), "rrf_cfsr")
    retriever.save(tmp_path / "idx")
    queries = [" ".join(rng.choice(WORDS, size=3)) for _ in range(N_QUERIES)]
    return tmp_path / "idx", retriever, queries, unit_rows(rng, N_QUERIES, DIM)


def test_search_actor_in_process_pads_and_matches(saved_index):
    index_dir, retriever, queries, Q = saved_index
    actor = SearchActor(index_dir, k=K)
    out = actor({"text": np.array(queries[:5]), "vector": Q[:5], "qid": np.arange(5)})
    want = retriever.search_batch(queries[:5], Q[:5], K)
    for row, result in enumerate(want):
        np.testing.assert_array_equal(out["ids"][row, : len(result)], result.ids)
        assert (out["ids"][row, len(result):] == MISSING_ID).all()
    np.testing.assert_array_equal(out["qid"], np.arange(5))
    np.testing.assert_array_equal(out["text"], np.array(queries[:5]))
    # The query vectors are dropped from the output unless asked for.
    assert "vector" not in out
    kept = SearchActor(index_dir, k=K, keep_vector=True)({"text": np.array(queries[:5]), "vector": Q[:5]})
    np.testing.assert_array_equal(kept["vector"], Q[:5])
    np.testing.assert_array_equal(kept["ids"], out["ids"])
    # A lexical configuration reads only the text column.
    lexical = SearchActor(index_dir, k=3, config="bm25")({"text": np.array(queries[:2])})
    assert lexical["ids"].shape == (2, 3)


@pytest.mark.parametrize("actors", [1, 2])
def test_map_batches_equals_search_batch(local_ray, saved_index, actors):
    import ray.data

    from fieldrank.integrations.ray import search_dataset

    index_dir, retriever, queries, Q = saved_index
    dataset = ray.data.from_items([{"qid": i, "text": queries[i], "vector": Q[i]} for i in range(N_QUERIES)])
    rows = search_dataset(dataset, index_dir, actors=actors, batch_size=16, k=K).take_all()
    rows.sort(key=lambda row: int(row["qid"]))
    assert [int(row["qid"]) for row in rows] == list(range(N_QUERIES))
    want = retriever.search_batch(queries, Q, K)
    for row, result in zip(rows, want):
        np.testing.assert_array_equal(np.asarray(row["ids"])[: len(result)], result.ids)
        np.testing.assert_array_equal(np.asarray(row["scores"])[: len(result)], result.scores)


def test_rows_carry_provenance_and_text_only_queries_are_refused_clearly(local_ray, saved_index):
    import json

    import ray.data

    from fieldrank.integrations.ray import search_dataset

    index_dir, retriever, queries, Q = saved_index
    out = SearchActor(index_dir, k=K)({"text": np.array(queries[:2]), "vector": Q[:2]})
    provenance = [json.loads(p) for p in out["provenance"]]
    assert [p["id"] for p in provenance[0]] == retriever.search(queries[0], Q[0], K).ids.tolist()
    assert "provenance" not in SearchActor(index_dir, k=K, provenance=False)({"text": np.array(queries[:1]),
                                                                              "vector": Q[:1]})
    with pytest.raises(ValueError, match="no 'vector' column.*embed_model="):
        SearchActor(index_dir, k=K)({"text": np.array(queries[:2])})
    text_only = ray.data.from_items([{"qid": i, "text": queries[i]} for i in range(4)])
    with pytest.raises(ValueError, match="no 'vector' column.*embed_model="):
        search_dataset(text_only, index_dir, k=K)
    rows = search_dataset(text_only, index_dir, k=3, config="bm25").take_all()
    assert len(rows) == 4 and all(len(row["ids"]) == 3 for row in rows)
    with pytest.raises(TypeError, match="actors="):
        search_dataset(text_only, index_dir, concurrency=2)
