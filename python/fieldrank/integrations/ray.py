"""Batch search on Ray Data: a stateful actor per worker opens a saved index and runs ``search_batch``.

Needs ``ray[data]`` (``pip install ".[ray]"`` in a fieldrank checkout). The same code runs on a laptop
(``ray.init(num_cpus=2)``) and on a cluster (``ray.init("auto")`` or ``RAY_ADDRESS``): the
index directory must be readable by every worker (a shared filesystem, or copied to each node
at the same path), since each actor opens it itself with ``mmap=True`` -- the embeddings are
paged in from the file and shared by the actors on one node through the page cache.

.. code-block:: text

    ds = ray.data.read_parquet("s3://bucket/queries/")           # columns: text, vector
    hits = search_dataset(ds, "/shared/memory-index", actors=64, k=10)
    hits.write_parquet("s3://bucket/hits/")                     # + ids, scores per query

Each output batch keeps its input columns -- except the query vectors, which are dropped unless
``keep_vector=True`` (they are the bulk of a batch and a hits table rarely wants them back) --
and adds ``ids`` (int64) and ``scores`` (float64), (B, k) each, padded with -1 / NaN when a
query has fewer than k hits, and ``provenance`` (one JSON string per query: per hit its id,
rank, fused score and legs; ``provenance=False`` leaves it out). Results equal one process's
``search_batch`` (tested). Queries that are text only (no vector column) are embedded by the
actors when ``embed_model`` names a sentence-transformers model; otherwise a configuration
with dense legs refuses them before anything runs.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

import numpy as np

from .. import _validation as _v
from ..hybrid import HybridRetriever
from ._common import hit_provenance

__all__ = ["MISSING_ID", "SearchActor", "search_dataset"]

#: Fills ``ids`` where a query has fewer than k hits (``scores`` holds NaN there).
MISSING_ID = -1


class SearchActor:
    """A callable class for ``Dataset.map_batches``: one per worker, holding one opened index.

    Parameters
    ----------
    index_dir : path
        A directory written by :meth:`HybridRetriever.save`; opened with ``mmap=True``.
    k : int, optional
        Hits per query (default: the saved configuration's k).
    config : optional
        Search with this configuration instead of the saved one.
    text_column, vector_column : str
        Input columns (either may be absent when the configuration does not need it).
    n_threads : int, default 1
        Threads per ``search_batch`` call: 1 lets Ray's parallelism (one actor per CPU) do
        the work; raise it together with ``num_cpus`` per actor.
    verify : bool, default True
        Check the index files' sha256 when the actor opens it.
    keep_vector : bool, default False
        Pass the vector column through to the output. Off by default: the (B, d) query vectors
        are most of a batch's bytes, and returning them would send them back through the
        object store for nothing; the other input columns (ids, texts, ...) are always kept.
    embed_model : str, optional
        A sentence-transformers model (hub name in the local cache, or a path) that embeds the
        text column when a batch has no vector column (each actor loads it once).
    provenance : bool, default True
        Add the ``provenance`` column (a JSON string per query).
    """

    def __init__(self, index_dir: str | os.PathLike[str], *, k: Optional[int] = None, config: Any = None,
                 text_column: str = "text", vector_column: str = "vector", n_threads: int = 1,
                 verify: bool = True, keep_vector: bool = False, embed_model: Optional[str] = None,
                 provenance: bool = True) -> None:
        embedder = None
        if embed_model is not None:
            from ..embed import SentenceTransformerEmbedder

            embedder = SentenceTransformerEmbedder(embed_model)
        self.retriever = HybridRetriever.load(index_dir, mmap=True, config=config, verify=verify, embedder=embedder)
        self.provenance = provenance
        self.k = self.retriever.config.k if k is None else _v.positive_int(k, "k")
        self.text_column = text_column
        self.vector_column = vector_column
        self.n_threads = n_threads
        self.keep_vector = keep_vector

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        config = self.retriever.config
        texts = None
        if config.needs_text:
            texts = [str(t) for t in batch[self.text_column]]
        vectors = None
        if config.needs_vector and self.vector_column not in batch:
            if self.retriever.embedder is None:
                msg = (f"the batch has no {self.vector_column!r} column (columns: {sorted(batch)}) and configuration "
                       f"{config.name!r} has dense legs: pass embed_model= to embed the text column, or a lexical "
                       "config (e.g. config='bm25')")
                raise ValueError(msg)
            from ..embed import embed_documents

            vectors = embed_documents(self.retriever.embedder, texts if texts is not None else
                                      [str(t) for t in batch[self.text_column]])
        elif config.needs_vector:
            column = batch[self.vector_column]
            # A tensor column arrives as one (B, d) array; ragged storage as an object array of rows.
            matrix = np.stack(list(column)) if column.dtype == object else column
            vectors = np.ascontiguousarray(matrix, dtype=np.float32)
        results = self.retriever.search_batch(texts, vectors, self.k, n_threads=self.n_threads)
        ids = np.full((len(results), self.k), MISSING_ID, dtype=np.int64)
        scores = np.full((len(results), self.k), np.nan, dtype=np.float64)
        for row, result in enumerate(results):
            ids[row, : len(result)] = result.ids
            scores[row, : len(result)] = result.scores
        out = {name: column for name, column in batch.items()
               if self.keep_vector or name != self.vector_column}
        out["ids"] = ids
        out["scores"] = scores
        if self.provenance:
            out["provenance"] = np.array([json.dumps(hit_provenance(result)) for result in results], dtype=object)
        return out


def search_dataset(dataset: Any, index_dir: str | os.PathLike[str], *, actors: int = 1, compute: Any = None,
                   batch_size: int = 256, k: Optional[int] = None, config: Any = None, text_column: str = "text",
                   vector_column: str = "vector", n_threads: int = 1, verify: bool = True,
                   keep_vector: bool = False, embed_model: Optional[str] = None, provenance: bool = True,
                   concurrency: Any = None) -> Any:
    """``dataset.map_batches(SearchActor, ...)``: a lazy Ray Dataset of the queries with their hits.

    ``actors`` is the number of actors (``compute=ray.data.ActorPoolStrategy(size=actors)``; one
    CPU each, times ``n_threads``), or pass your own ``compute`` strategy; ``batch_size`` the
    queries per ``search_batch`` call. ``concurrency=`` (deprecated by Ray Data since 2.51) is
    refused with a pointer to ``actors=``.
    """
    import ray.data

    if concurrency is not None:
        msg = ("concurrency= is deprecated by Ray Data (2.51+): pass actors=N (fieldrank makes "
               "compute=ray.data.ActorPoolStrategy(size=N)) or your own compute=")
        raise TypeError(msg)
    if compute is None:
        compute = ray.data.ActorPoolStrategy(size=_v.positive_int(actors, "actors"))
    retriever_config = HybridRetriever.load(index_dir, mmap=True, config=config, verify=False).config
    columns = _known_columns(dataset)
    if columns is not None and retriever_config.needs_vector and vector_column not in columns and embed_model is None:
        msg = (f"the dataset has no {vector_column!r} column (columns: {columns}) and configuration "
               f"{retriever_config.name!r} has dense legs: pass embed_model= (the actors embed the "
               f"{text_column!r} column) or a lexical config (e.g. config='bm25')")
        raise ValueError(msg)
    return dataset.map_batches(
        SearchActor,
        fn_constructor_args=(os.fspath(index_dir),),
        fn_constructor_kwargs={"k": k, "config": config, "text_column": text_column,
                               "vector_column": vector_column, "n_threads": n_threads, "verify": verify,
                               "keep_vector": keep_vector, "embed_model": embed_model, "provenance": provenance},
        batch_size=batch_size,
        batch_format="numpy",
        compute=compute,
        num_cpus=n_threads,
    )


def _known_columns(dataset: Any) -> Optional[list[str]]:
    """The dataset's columns when Ray knows them without running anything, else None."""
    try:
        columns = dataset.columns(fetch_if_missing=False)
    except Exception:  # noqa: BLE001 - an unknown schema is simply not checked here
        return None
    return None if columns is None else list(columns)
