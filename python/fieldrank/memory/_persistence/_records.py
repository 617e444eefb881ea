"""Memory records as they cross the backend interface, to and from column batches (:class:`RowBatch`).

One place for the record layout (:data:`~._backend.COLUMNS`) on both sides: what a backend
writes (:func:`records_of`) and what the store loads (:func:`batch_of_records`, which checks every
value as the API checks it: a backend is untrusted input).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Optional

import numpy as np

from .._columns import NO_MEMORY, RowBatch
from .._schema import IMPORTANCE_RANGE, RECALL_COUNT_RANGE, VALENCE_RANGE, check_tier
from ._backend import COLUMNS, EMBEDDING_DTYPE
from ._file_check import check_embedding_values

__all__ = ["KEY", "TENANT", "TOMBSTONE", "batch_of_records", "encode_embedding", "encode_labels", "records_of"]

#: Position of ``tombstone`` in a record.
TOMBSTONE = COLUMNS.index("tombstone")
#: Positions of ``tenant`` and ``key`` in a record.
TENANT, KEY = COLUMNS.index("tenant"), COLUMNS.index("key")


def encode_embedding(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=EMBEDDING_DTYPE).tobytes()


def encode_labels(labels: tuple[str, ...]) -> str:
    return json.dumps(list(labels), ensure_ascii=False)


def _optional(values, i: int):
    """An optional id column's value as a record holds it (None for NO_MEMORY or no column)."""
    return None if values is None or values[i] == NO_MEMORY else int(values[i])


def records_of(batch: RowBatch, keys: Optional[Sequence[Optional[str]]] = None) -> list[tuple]:
    """The records of ``batch`` in :data:`COLUMNS` order (embedding bytes, labels as JSON text, live),
    with ``keys[i]`` (None: no key) as row i's ``key``."""
    return [
        (int(batch.ids[i]), batch.tenants[i], batch.texts[i], encode_embedding(batch.embeddings[i]),
         float(batch.created_at[i]), float(batch.last_access[i]), int(batch.recall_count[i]),
         float(batch.importance[i]), float(batch.storage_strength[i]), float(batch.valence[i]),
         batch.tiers[i], encode_labels(batch.tags[i]), encode_labels(batch.entities[i]), 0,
         None if batch.sessions is None else batch.sessions[i],
         _optional(batch.supersedes, i), _optional(batch.superseded_by, i), None if keys is None else keys[i])
        for i in range(len(batch))
    ]


def _loaded_column(values: list, name: str, ids: np.ndarray, path: str, low: float, high: float,
                   *, whole: bool = False) -> np.ndarray:
    """A numeric column read from storage, as float64: real numbers, finite, in [low, high]."""
    if not set(map(type, values)) <= {int, float}:
        position = next(i for i, v in enumerate(values) if type(v) not in (int, float))
        msg = f"{name} of memory {int(ids[position])} in {path!r} must be a number, got {values[position]!r}"
        raise ValueError(msg)
    column = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(column) | (column < low) | (column > high)
    if whole:
        bad |= column != np.floor(column)
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        kind = "a whole number" if whole else "finite"
        msg = (
            f"{name} of memory {int(ids[position])} in {path!r} must be {kind} and lie in [{low}, {high}], "
            f"got {values[position]!r}"
        )
        raise ValueError(msg)
    return column


def batch_of_records(records: list, dim: int, path: str) -> RowBatch:
    """The live ``records`` (none tombstoned) as a :class:`RowBatch`, every value checked."""
    (ids, tenants, texts, blobs, created, last, counts, importance, strength, valence, tiers, tags, entities,
     _tombstones, sessions, supersedes, superseded_by, _keys, _revisions) = (list(column) for column in zip(*records))
    id_array = np.asarray(ids, dtype=np.int64)
    tier_names = [check_tier(tier, f"tier of memory {memory_id}") for memory_id, tier in zip(ids, tiers)]
    embeddings = np.frombuffer(b"".join(blobs), dtype=EMBEDDING_DTYPE).reshape(len(ids), dim)
    check_embedding_values(embeddings, id_array, path)

    def column(values: list, name: str, low: float, high: float, whole: bool = False) -> np.ndarray:
        return _loaded_column(values, name, id_array, path, low, high, whole=whole)

    return RowBatch(
        ids=id_array,
        tenants=tenants,
        texts=texts,
        embeddings=embeddings.astype(np.float32),
        created_at=column(created, "created_at", -math.inf, math.inf),
        last_access=column(last, "last_access", -math.inf, math.inf),
        recall_count=column(counts, "recall_count", *RECALL_COUNT_RANGE, whole=True).astype(np.int64),
        importance=column(importance, "importance", *IMPORTANCE_RANGE),
        storage_strength=column(strength, "storage_strength", 1.0, math.inf),
        valence=column(valence, "valence", *VALENCE_RANGE),
        tiers=tier_names,
        tags=tags,
        entities=entities,
        sessions=sessions,
        supersedes=np.asarray([NO_MEMORY if r is None else int(r) for r in supersedes], dtype=np.int64),
        superseded_by=np.asarray([NO_MEMORY if r is None else int(r) for r in superseded_by], dtype=np.int64),
    )
