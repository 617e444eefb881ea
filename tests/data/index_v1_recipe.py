"""The pinned recipe of ``tests/data/index_v1/``: an index saved by fieldrank before the retriever's
redesign (issue #33, main at bfb3ce6), and what it answered then (``expected.json``).

Regenerating it with the code of that commit (never with a later one, which would only test itself)::

    PYTHONPATH=<checkout of bfb3ce6>/python python tests/data/index_v1_recipe.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
INDEX_DIR = HERE / "index_v1"
EXPECTED_FILE = HERE / "index_v1_expected.json"
SEED = 20261204
N_DOCS, DIM, N_QUERIES = 40, 8, 5
WORDS = ("lake", "dog", "piano", "garden", "flight", "budget", "quartz", "camp", "oil", "book", "july", "yesterday")
QUERY_TEXTS = ("when did they go to the lake", "the dog and the piano", "budget for the flight in July 2023",
               "what about the garden", "quartz camp oil")
CONFIG = {
    "name": "old_stack", "k": 8, "k0": 60.0,
    "bm25": {"k1": 1.2, "b": 0.75, "context_window": 1, "context_weight": 0.5},
    "legs": [
        {"kind": "cosine", "depth": 10},
        {"kind": "bm25", "depth": 10, "weight": 0.5},
        {"kind": "cfsr", "depth": 12, "p": 20, "pool": "union", "union_p": 8, "weight": 2.0, "name": "cfsr_union"},
        {"kind": "temporal", "depth": 10, "alpha": 0.5, "gamma": 0.3, "weight": 1.5},
        {"kind": "mmr", "depth": 6, "p": 15, "mu": 0.7},
    ],
}


def corpus():
    """(texts, embeddings, timeline arrays (session, time), queries) of the recipe."""
    rng = np.random.default_rng(SEED)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 8)))) for _ in range(N_DOCS)]
    E = rng.standard_normal((N_DOCS, DIM)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    session = np.repeat(np.arange(N_DOCS // 8), 8).astype(np.int64)
    time = np.datetime64("2023-06-01") + 10 * session.astype("timedelta64[D]")
    Q = rng.standard_normal((N_QUERIES, DIM)).astype(np.float32)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    return texts, E, session, time, Q


def answers(retriever, Q) -> list[dict]:
    """What the retriever answers the recipe's queries: ids and float64 scores (hex bytes), every
    document and then a subset."""
    out = []
    subset = np.arange(3, N_DOCS, 2)
    for sub in (None, subset):
        for result in retriever.search_batch(list(QUERY_TEXTS), Q, subset=sub):
            out.append({"ids": result.ids.tolist(), "scores": result.scores.astype(np.float64).tobytes().hex()})
    return out


def main() -> None:
    from fieldrank.config import RetrieverConfig
    from fieldrank.hybrid import HybridRetriever
    from fieldrank.temporal import Timeline

    texts, E, session, time, Q = corpus()
    timeline = Timeline.from_turns(session, time, texts)
    retriever = HybridRetriever(texts, E, RetrieverConfig.from_dict(CONFIG), timeline=timeline)
    retriever.save(INDEX_DIR, overwrite=True)
    EXPECTED_FILE.write_text(json.dumps(answers(retriever, Q), indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
