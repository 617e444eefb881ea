"""What reranking a vector database's top-P costs beyond the database's own query (Qdrant local mode).

Corpus: the 5,882 LoCoMo turns (``embed_text``) with their ``minilm-l6-v2`` embeddings
(d = 384) in a Qdrant in-process collection (``QdrantClient(":memory:")``, cosine) and, for
the hybrid stack, in a local :class:`~fieldrank.HybridRetriever`; queries: the LoCoMo
questions with their embeddings. Without the LoCoMo data a seeded random corpus of the same
shape stands in (texts drawn from a small vocabulary).

Per query, interleaved in one loop (so machine load hits every column alike):

* ``qdrant``          -- ``query_points(limit=P)``: the database's own query (ids + scores);
* ``qdrant+vectors``  -- the same with ``with_vectors=True`` (what the pool operators need);
* ``default|subset``  -- ``qdrant_candidates`` + ``retriever.search(text, q, k, subset=ids)``
  with the ``default`` preset: the tuned hybrid stack on exactly the database's candidates;
* ``cfsr_pool``       -- ``qdrant_candidates`` (list -> float32 conversion included) +
  ``fieldrank.cfsr_pool`` on the returned vectors, with the database's cosines as ``sims``.

Prints medians and 90th percentiles in ms; the target is ``default|subset`` <= 2 ms.

Run from the repository root::

    python benchmarks/vectordb_rerank.py [--pool 200] [--queries 300] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

import fieldrank
from fieldrank.hybrid import HybridRetriever
from fieldrank.integrations.vectordb import qdrant_candidates

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo"
EMBEDDINGS = "minilm-l6-v2"
TARGET_MS = 2.0
SEED = 20261201
UPSERT_CHUNK = 1000


def load_corpus(data: Path, n_queries: int):
    """(texts, E, query texts, Q, source) from LoCoMo, or a seeded random stand-in."""
    emb = data / "emb" / EMBEDDINGS
    if (emb / "turns.npy").exists():
        with open(data / "turns.jsonl", encoding="utf-8") as f:
            texts = [json.loads(line)["embed_text"] for line in f]
        with open(data / "questions.jsonl", encoding="utf-8") as f:
            questions = [json.loads(line)["question"] for line in f][:n_queries]
        return texts, np.load(emb / "turns.npy"), questions, np.load(emb / "questions.npy")[:n_queries], "LoCoMo"
    rng = np.random.default_rng(SEED)
    vocabulary = [f"w{i}" for i in range(2000)]
    E = rng.standard_normal((5882, 384)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    Q = rng.standard_normal((n_queries, 384)).astype(np.float32)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    texts = [" ".join(rng.choice(vocabulary, 12)) for _ in range(len(E))]
    questions = [" ".join(rng.choice(vocabulary, 6)) for _ in range(n_queries)]
    return texts, E, questions, Q, "random (LoCoMo data not found)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--pool", type=int, default=200, help="candidates the database returns (P)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, PointStruct, VectorParams

    texts, E, questions, Q, source = load_corpus(args.data, args.queries)
    client = QdrantClient(":memory:")
    client.create_collection("turns", vectors_config=VectorParams(size=E.shape[1], distance=Distance.COSINE))
    for start in range(0, len(E), UPSERT_CHUNK):
        stop = min(start + UPSERT_CHUNK, len(E))
        client.upsert("turns", points=[PointStruct(id=i, vector=E[i].tolist()) for i in range(start, stop)])
    retriever = HybridRetriever(texts, E, "default")

    columns = {name: [] for name in ("qdrant", "qdrant+vectors", "default|subset", "cfsr_pool")}
    agree = 0
    for text, q in zip(questions, Q):
        vector = q.tolist()
        t0 = time.perf_counter()
        response = client.query_points("turns", query=vector, limit=args.pool)
        t1 = time.perf_counter()
        candidates = qdrant_candidates(response)
        hits = retriever.search(text, q, args.k, subset=candidates.ids)
        t2 = time.perf_counter()
        with_vectors = client.query_points("turns", query=vector, limit=args.pool, with_vectors=True)
        t3 = time.perf_counter()
        pool = qdrant_candidates(with_vectors)
        reranked = fieldrank.cfsr_pool(pool.ids, pool.vectors, q, args.k, sims=pool.sims)
        t4 = time.perf_counter()
        columns["qdrant"].append(t1 - t0)
        columns["default|subset"].append(t2 - t1)
        columns["qdrant+vectors"].append(t3 - t2)
        columns["cfsr_pool"].append(t4 - t3)
        agree += int(set(hits.ids.tolist()) <= set(candidates.ids.tolist()) and len(reranked.ids) == args.k)

    def summary(values):
        ms = sorted(v * 1e3 for v in values)
        return {"median_ms": statistics.median(ms), "p90_ms": ms[int(0.9 * (len(ms) - 1))]}

    report = {
        "corpus": source, "n_docs": len(E), "dim": int(E.shape[1]), "pool": args.pool, "k": args.k,
        "queries": len(Q), "cpu_count": os.cpu_count(), "machine": platform.processor() or platform.machine(),
        "fieldrank_kernel": fieldrank.build_info()["kernel_variant"], "target_ms": TARGET_MS,
        "columns": {name: summary(values) for name, values in columns.items()},
        "checks_passed": f"{agree}/{len(Q)}",
    }
    print(f"{source}: N = {len(E)}, d = {E.shape[1]}, P = {args.pool}, k = {args.k}, {len(Q)} queries, "
          f"{os.cpu_count()} cores, kernel {report['fieldrank_kernel']}")
    for name, stats in report["columns"].items():
        print(f"  {name:16s} median {stats['median_ms']:7.3f} ms   p90 {stats['p90_ms']:7.3f} ms")
    extra = report["columns"]["default|subset"]["median_ms"]
    print(f"  beyond the database's query: default|subset {extra:.3f} ms "
          f"({'meets' if extra <= TARGET_MS else 'misses'} the {TARGET_MS} ms target); "
          f"checks {report['checks_passed']}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
