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


#: How far from 1 a vector's norm may be for L2 / dot distances to be read as cosines.
_UNIT_TOLERANCE = 1e-3


class Candidates(NamedTuple):
    """A first stage's top-P: ``ids`` (P,) int64, ``vectors`` (P, d) float32 or None, ``sims`` (P,)
    float32, and ``keys``: None, or the database's own ids when they are not integers (then
    ``ids`` are positions in the result and ``keys[i]`` the database id of position i)."""

    ids: np.ndarray
    vectors: Optional[np.ndarray]
    sims: np.ndarray
    keys: Optional[tuple] = None


def qdrant_candidates(points: Any, *, vector_name: Optional[str] = None, require_vectors: bool = False) -> Candidates:
    """Candidates from Qdrant's ``query_points(...)`` (the response or its ``.points``).

    Integer point ids become ``ids`` as they are. String/UUID ids cannot be fieldrank ids: then
    ``ids`` are the points' positions in the result (0..P-1, what the pool operators return) and
    ``keys`` the Qdrant ids, so ``c.keys[i]`` maps a returned id back.

    ``vectors`` is None unless the query asked ``with_vectors=True`` (``require_vectors=True``
    makes that an error saying so: the pool operators need them). A collection with named
    vectors needs ``vector_name`` unless it has exactly one. ``sims`` are Qdrant's scores
    (cosine for a ``Distance.COSINE`` collection).
    """
    points = getattr(points, "points", points)
    if not isinstance(points, Sequence):
        msg = f"expected Qdrant's query_points result or its points, got {type(points).__name__}"
        raise TypeError(msg)
    n = len(points)
    keys = None
    if all(isinstance(p.id, (int, np.integer)) and not isinstance(p.id, bool) for p in points):
        ids = np.fromiter((p.id for p in points), dtype=np.int64, count=n)
    else:
        keys = tuple(p.id for p in points)
        ids = np.arange(n, dtype=np.int64)
    sims = np.fromiter((p.score for p in points), dtype=np.float32, count=n)
    vectors = None
    present = [p.vector is not None for p in points]
    if n and any(present):
        if not all(present):
            msg = (f"{present.count(False)} of {n} points carry no vector: query them all with_vectors=True "
                   "(or with_vectors=[name] for a named vector)")
            raise ValueError(msg)
        vectors = unit_rows(np.array([_point_vector(p.vector, vector_name) for p in points], dtype=np.float32))
    elif require_vectors and n:
        msg = ("the points carry no vectors: query with with_vectors=True (the pool operators need the "
               "candidates' vectors)")
        raise ValueError(msg)
    return Candidates(ids, vectors, sims, keys)


def _point_vector(vector: Any, name: Optional[str]) -> Any:
    """One point's vector: the plain list, or the named one of a named-vector collection."""
    if isinstance(vector, dict):
        if name is None:
            if len(vector) != 1:
                msg = f"the collection has named vectors {sorted(vector)}: pass vector_name= to pick one"
                raise ValueError(msg)
            name = next(iter(vector))
        if name not in vector:
            msg = f"vector_name {name!r} is not among the points' vectors {sorted(vector)}"
            raise KeyError(msg)
        vector = vector[name]
        if not isinstance(vector, (list, tuple, np.ndarray)):
            msg = f"vector {name!r} is {type(vector).__name__} (sparse or multi-vector): give a dense vector's name"
            raise TypeError(msg)
        return vector
    if name is not None:
        msg = f"vector_name={name!r} given but the collection's points have one unnamed vector"
        raise ValueError(msg)
    return vector


def lancedb_candidates(table: Any, *, id_column: str = "id", vector_column: str = "vector",
                       distance_column: str = "_distance", metric: Optional[str] = None) -> Candidates:
    """Candidates from a LanceDB search: the query builder itself (``table.search(q)....limit(P)``,
    whose distance type is read: LanceDB's default is ``l2``) or its Arrow result (``.to_arrow()``,
    then ``metric`` is required: the result does not say which distance it holds).

    ``metric`` (``cosine``, ``l2`` or ``dot``) turns the distances into cosine similarities; ``l2``
    and ``dot`` give cosines only for unit vectors, which is checked when the vectors are in the
    result. The id and vector columns are viewed without a copy when they are int64 / float32
    and in one chunk.
    """
    import pyarrow as pa

    if not isinstance(table, pa.Table) and hasattr(table, "to_arrow") and hasattr(table, "_distance_type"):
        searched = table._distance_type or "l2"  # LanceDB searches with L2 unless told otherwise
        if metric is not None and metric != searched:
            msg = f"metric={metric!r} but the query searches with {searched!r}"
            raise ValueError(msg)
        metric = searched
        table = table.to_arrow()
    if not isinstance(table, pa.Table):
        msg = f"expected a LanceDB query or a pyarrow Table (LanceDB's .to_arrow()), got {type(table).__name__}"
        raise TypeError(msg)
    if metric is None:
        msg = ("pass metric= (the distance_type the search used; LanceDB's default is 'l2'), or pass the "
               "query builder itself so that it is read")
        raise ValueError(msg)
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
        raw = np.asarray(values, dtype=np.float32).reshape(table.num_rows, chunk.type.list_size)
        if metric != "cosine":
            norms = np.linalg.norm(raw.astype(np.float64), axis=1)
            if np.abs(norms - 1.0).max() > _UNIT_TOLERANCE:
                msg = (f"{metric} distances of vectors that are not unit length are not cosines (norms up to "
                       f"{norms.max():.3g}): search with .distance_type('cosine') or store unit vectors")
                raise ValueError(msg)
        vectors = unit_rows(raw)
    return Candidates(ids, vectors, np.ascontiguousarray(sims, dtype=np.float32))


def _column_numpy(column: Any, dtype: type) -> np.ndarray:
    chunk = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return np.asarray(chunk.to_numpy(zero_copy_only=False), dtype=dtype)
