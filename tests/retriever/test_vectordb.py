"""A vector database as the first stage: Qdrant local mode and embedded LanceDB, reranked by fieldrank."""

from __future__ import annotations

import numpy as np
import pytest

import fieldrank as fr
from fieldrank import HybridRetriever
from fieldrank.integrations.vectordb import Candidates, lancedb_candidates, qdrant_candidates

from tests.helpers import unit_rows

N_DOCS, DIM, POOL, K = 300, 24, 60, 10
WORDS = ("kitchen budget cabinets dog vet rabies insurance car sister june walnut floor contractor shelter "
         "countertops booster march renew visit kids").split()


@pytest.fixture
def corpus(rng):
    E = unit_rows(rng, N_DOCS, DIM)
    texts = [" ".join(rng.choice(WORDS, size=6)) for _ in range(N_DOCS)]
    queries = unit_rows(rng, 4, DIM)
    return E, texts, queries


def check_pool_reranking(candidates: Candidates, E: np.ndarray, texts, q: np.ndarray, query_text: str):
    """The database's top-P is the exact cosine top-P, and fieldrank reranks exactly it."""
    np.testing.assert_array_equal(candidates.ids, fr.prefilter(E, q, POOL).ids)
    np.testing.assert_allclose(candidates.sims, E[candidates.ids] @ q, atol=1e-5)
    np.testing.assert_allclose(candidates.vectors, E[candidates.ids], atol=1e-6)
    got = fr.cfsr_pool(candidates.ids, candidates.vectors, q, K, sims=candidates.sims)
    want = fr.cfsr_pool(candidates.ids, np.ascontiguousarray(E[candidates.ids]), q, K)
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_allclose(got.coef, want.coef, rtol=1e-4, atol=1e-6)
    assert set(fr.mmr_pool(candidates.ids, candidates.vectors, q, K, sims=candidates.sims).ids) <= set(candidates.ids)
    # The hybrid stack (default preset) restricted to the database's candidates.
    retriever = HybridRetriever(texts, E, "default")
    hits = retriever.search(query_text, q, K, subset=candidates.ids)
    assert len(hits) == K and set(hits.ids.tolist()) <= set(candidates.ids.tolist())
    # Outside the pool nothing is seen: the stack over a corpus of just the candidates agrees
    # on the dense evidence (the cosine leg of rrf2 on the pool = the pool's own cosine order).
    rrf2 = retriever.with_config("rrf2").search(query_text, q, K, subset=candidates.ids)
    np.testing.assert_array_equal(rrf2.leg("cosine").ids, candidates.ids[:rrf2.leg("cosine").ids.shape[0]])


def test_qdrant_local_mode_first_stage(corpus):
    qdrant_client = pytest.importorskip("qdrant_client", reason="needs the integrations extra (qdrant-client)")
    from qdrant_client.models import Distance, PointStruct, VectorParams

    E, texts, queries = corpus
    client = qdrant_client.QdrantClient(":memory:")
    client.create_collection("memories", vectors_config=VectorParams(size=DIM, distance=Distance.COSINE))
    client.upsert("memories", points=[PointStruct(id=i, vector=E[i].tolist(), payload={"text": texts[i]})
                                      for i in range(N_DOCS)])
    for q in queries:
        response = client.query_points("memories", query=q.tolist(), limit=POOL, with_vectors=True)
        candidates = qdrant_candidates(response)
        assert candidates.vectors.dtype == np.float32 and candidates.vectors.flags.c_contiguous
        check_pool_reranking(candidates, E, texts, q, "kitchen budget")
    bare = qdrant_candidates(client.query_points("memories", query=queries[0].tolist(), limit=5).points)
    assert bare.vectors is None and bare.ids.shape == (5,)
    client.close()


def test_lancedb_embedded_first_stage(corpus, tmp_path):
    lancedb = pytest.importorskip("lancedb", reason="needs the integrations extra (lancedb)")
    import pyarrow as pa

    E, texts, queries = corpus
    db = lancedb.connect(tmp_path / "lance")
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(E.ravel(), type=pa.float32()), DIM)
    table = db.create_table("memories", data=pa.table({"id": pa.array(np.arange(N_DOCS), type=pa.int64()),
                                                       "vector": vectors, "text": texts}))
    for q in queries:
        result = table.search(q).distance_type("cosine").limit(POOL).to_arrow()
        candidates = lancedb_candidates(result, metric="cosine")
        # The Arrow vector column is viewed, not copied.
        assert not candidates.vectors.flags.owndata
        check_pool_reranking(candidates, E, texts, q, "dog vet")
    with pytest.raises(ValueError, match="metric"):
        lancedb_candidates(result, metric="hamming")
    with pytest.raises(KeyError, match="no column"):
        lancedb_candidates(result, id_column="doc", metric="cosine")


def test_lancedb_metric_is_read_or_required(corpus, tmp_path):
    """LanceDB searches with L2 by default: the metric is read from the query builder, required
    with an Arrow result, and L2 of unit vectors becomes the true cosine (issue #28)."""
    lancedb = pytest.importorskip("lancedb", reason="needs the integrations extra (lancedb)")
    import pyarrow as pa

    E, texts, queries = corpus
    db = lancedb.connect(tmp_path / "lance")
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(E.ravel(), type=pa.float32()), DIM)
    table = db.create_table("memories", data=pa.table({"id": pa.array(np.arange(N_DOCS), type=pa.int64()),
                                                       "vector": vectors}))
    q = queries[0]
    default = lancedb_candidates(table.search(q).limit(20))  # builder: L2, read from it
    np.testing.assert_allclose(default.sims, E[default.ids] @ q, atol=1e-5)
    with pytest.raises(ValueError, match="metric="):
        lancedb_candidates(table.search(q).limit(20).to_arrow())
    with pytest.raises(ValueError, match="searches with 'l2'"):
        lancedb_candidates(table.search(q).limit(20), metric="cosine")
    scaled = db.create_table("scaled", data=pa.table({"id": pa.array(np.arange(N_DOCS), type=pa.int64()),
                                                      "vector": pa.FixedSizeListArray.from_arrays(
                                                          pa.array((E * 3).ravel(), type=pa.float32()), DIM)}))
    with pytest.raises(ValueError, match="not unit length"):
        lancedb_candidates(scaled.search(q).limit(20))


def test_qdrant_named_vectors_missing_vectors_and_uuid_ids(corpus):
    pytest.importorskip("qdrant_client", reason="needs the integrations extra (qdrant-client)")
    import uuid

    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, PointStruct, VectorParams

    E, texts, queries = corpus
    client = QdrantClient(":memory:")
    client.create_collection("named", vectors_config={"dense": VectorParams(size=DIM, distance=Distance.COSINE),
                                                      "other": VectorParams(size=DIM, distance=Distance.COSINE)})
    keys = [str(uuid.UUID(int=i)) for i in range(N_DOCS)]
    client.upsert("named", points=[PointStruct(id=keys[i], vector={"dense": E[i].tolist(), "other": E[i].tolist()})
                                   for i in range(N_DOCS)])
    q = queries[0]
    response = client.query_points("named", query=q.tolist(), using="dense", limit=10, with_vectors=True)
    with pytest.raises(ValueError, match="vector_name="):
        qdrant_candidates(response)
    c = qdrant_candidates(response, vector_name="dense")
    assert c.ids.tolist() == list(range(10)) and c.keys == tuple(p.id for p in response.points)
    np.testing.assert_allclose(c.vectors, E[[keys.index(k) for k in c.keys]], atol=1e-6)
    bare = client.query_points("named", query=q.tolist(), using="dense", limit=10)
    with pytest.raises(ValueError, match="with_vectors=True"):
        qdrant_candidates(bare, require_vectors=True)
    assert qdrant_candidates(bare).vectors is None
    client.close()
