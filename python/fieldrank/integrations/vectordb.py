"""A vector database as the first stage: its top-P as arrays for the ``*_pool`` operators.

The database finds candidates; fieldrank reranks them. Two ways, both documented in
``docs/ecosystem.md``:

* **Operators on the returned pool** -- :func:`qdrant_candidates` / :func:`lancedb_candidates`
  turn a query's result into :class:`Candidates` (int64 ids, (P, d) float32 vectors, the
  database's cosines), ready for ``fieldrank.cfsr_pool(c.ids, c.vectors, q, k, sims=c.sims)``
  and the other ``*_pool`` operators. LanceDB hands back Arrow columns, which are viewed
  without a copy when they are float32 and in one chunk; Qdrant returns Python lists, which
  are converted once.
* **The hybrid stack on the candidates** -- when the corpus is also open locally as a
  :class:`~fieldrank.HybridRetriever` (ids = positions, e.g. ``load(..., mmap=True)``),
  ``retriever.search(text, q, subset=c.ids)`` runs any configuration, ``default``
  included, on exactly the database's candidates (BM25 with the corpus statistics).

Only numpy is imported here; the database clients are the caller's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from ._common import unit_rows

__all__ = ["Candidates", "lancedb_candidates", "qdrant_candidates"]

#: Distances LanceDB reports, and how each becomes a cosine similarity of unit vectors.
_LANCEDB_SIMILARITY = {
    "cosine": lambda d: 1.0 - d,
    "l2": lambda d: 1.0 - d / 2.0,  # squared L2 of unit vectors = 2 - 2 cos
    "dot": lambda d: 1.0 - d,
}


class Candidates(NamedTuple):
    """A first stage's top-P: ``ids`` (P,) int64, ``vectors`` (P, d) float32 or None, ``sims`` (P,) float32."""

    ids: np.ndarray
    vectors: Optional[np.ndarray]
    sims: np.ndarray


def qdrant_candidates(points: Any, *, vector_name: Optional[str] = None) -> Candidates:
    """Candidates from Qdrant's ``query_points(...)`` (the response or its ``.points``).

    Point ids must be integers (use your corpus positions, or any unique int64). ``vectors``
    is None unless the query asked ``with_vectors=True``; ``vector_name`` picks a named
    vector. ``sims`` are Qdrant's scores (cosine for a ``Distance.COSINE`` collection).
    """
    points = getattr(points, "points", points)
    if not isinstance(points, Sequence):
        msg = f"expected Qdrant's query_points result or its points, got {type(points).__name__}"
        raise TypeError(msg)
    n = len(points)
    try:
        ids = np.fromiter((p.id for p in points), dtype=np.int64, count=n)
    except (TypeError, ValueError):
        msg = "Qdrant point ids must be integers to map to fieldrank ids (UUID ids: keep an id column instead)"
        raise ValueError(msg) from None
    sims = np.fromiter((p.score for p in points), dtype=np.float32, count=n)
    vectors = None
    if n and points[0].vector is not None:
        rows = [p.vector if vector_name is None else p.vector[vector_name] for p in points]
        vectors = unit_rows(np.array(rows, dtype=np.float32))
    return Candidates(ids, vectors, sims)


def lancedb_candidates(table: Any, *, id_column: str = "id", vector_column: str = "vector",
                       distance_column: str = "_distance", metric: str = "cosine") -> Candidates:
    """Candidates from a LanceDB search result as an Arrow table (``.to_arrow()``).

    The id and vector columns are viewed without a copy when they are int64 / float32 and in
    one chunk. ``metric`` is the one the search used (``cosine``, ``l2`` or ``dot``): the
    distances become cosine similarities of unit vectors.
    """
    import pyarrow as pa

    if not isinstance(table, pa.Table):
        msg = f"expected a pyarrow Table (LanceDB's .to_arrow()), got {type(table).__name__}"
        raise TypeError(msg)
    if metric not in _LANCEDB_SIMILARITY:
        msg = f"metric must be one of {sorted(_LANCEDB_SIMILARITY)}, got {metric!r}"
        raise ValueError(msg)
    for column in (id_column, distance_column):
        if column not in table.column_names:
            msg = f"the table has no column {column!r} (columns: {table.column_names})"
            raise KeyError(msg)
    ids = _column_numpy(table.column(id_column), np.int64)
    distances = _column_numpy(table.column(distance_column), np.float32)
    sims = _LANCEDB_SIMILARITY[metric](distances.astype(np.float32))
    vectors = None
    if vector_column in table.column_names and table.num_rows:
        column = table.column(vector_column)
        chunk = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
        if not pa.types.is_fixed_size_list(chunk.type):
            msg = f"column {vector_column!r} must be a fixed-size list of floats, got {chunk.type}"
            raise TypeError(msg)
        flat = chunk.flatten()  # respects slicing offsets; no copy for a plain chunk
        values = flat.to_numpy(zero_copy_only=flat.null_count == 0 and pa.types.is_float32(flat.type))
        vectors = unit_rows(np.asarray(values, dtype=np.float32).reshape(table.num_rows, chunk.type.list_size))
    return Candidates(ids, vectors, np.ascontiguousarray(sims, dtype=np.float32))


def _column_numpy(column: Any, dtype: type) -> np.ndarray:
    chunk = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return np.asarray(chunk.to_numpy(zero_copy_only=False), dtype=dtype)
