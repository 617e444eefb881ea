"""What a store's constructor and writes take, checked once at the boundary: options, new rows
(``add``/``add_many``) and changes (``update``).

Every keyword of :meth:`MemoryStore.add_many` takes one value for all memories or one per
memory (:func:`new_rows`); :func:`checked_changes` checks the fields an ``update`` changes and
:func:`updated_batch` merges them into the memory's current values. Nothing here touches the
store: what comes out is validated columns, ready to be given ids and appended.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .. import _validation as _v
from ..embed import Embedder, check_embedder, embed_documents, embed_queries
from ._columns import NO_MEMORY, RowBatch
from ._params import MemoryParams
from ._persistence import SYNCHRONOUS_MODES
from ._schema import (
    IMPORTANCE_RANGE,
    MEMORY_ID_LIMIT,
    RECALL_COUNT_RANGE,
    VALENCE_RANGE,
    Memory,
    check_importance,
    check_labels,
    check_memory_id,
    check_positive_int,
    check_storage_strength,
    check_tenant,
    check_text,
    check_text_size,
    check_tier,
    check_valence,
    embedding_rows,
    embedding_vector,
)

__all__ = ["NewRows", "UnitRows", "checked_changes", "checked_options", "checked_text", "checked_texts", "embedded", "new_rows", "single_vector", "updated_batch"]


def checked_options(dim: Optional[int], params: object, synchronous: object, embedder: Optional[Embedder],
                    max_text_bytes: object) -> tuple[Optional[Embedder], Optional[int]]:
    """A store's constructor options: the embedder and the dimension (its embedder's by default)."""
    check_positive_int(max_text_bytes, "max_text_bytes")
    embedder = check_embedder(embedder)
    if dim is None and embedder is not None:
        dim = embedder.dim
    if embedder is not None and dim != embedder.dim:
        msg = f"dim {dim} differs from the embedder's dimension {embedder.dim}"
        raise ValueError(msg)
    if not isinstance(params, MemoryParams):
        msg = f"params must be a MemoryParams, got {type(params).__name__}"
        raise TypeError(msg)
    if synchronous not in SYNCHRONOUS_MODES:
        msg = f"synchronous must be one of {SYNCHRONOUS_MODES}, got {synchronous!r}"
        raise ValueError(msg)
    return embedder, None if dim is None else check_positive_int(dim, "dim")


@dataclass(frozen=True)
class UnitRows:
    """Embedding rows already checked and normalised (``embedding_rows``'s output): :meth:`MemoryStore.add`
    checks its one vector under its own argument name and passes it on as these very bits."""

    rows: np.ndarray


def _is_scalar(value: object) -> bool:
    return isinstance(value, (str, numbers.Number)) or (isinstance(value, np.ndarray) and value.ndim == 0)


def _numeric_column(value: object, n: int, name: str, low: float, high: float) -> np.ndarray:
    """A scalar (broadcast) or one value per item, as float64, each finite and in [low, high]."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        msg = f"{name} must be a real number or a sequence of real numbers, got {type(value).__name__}"
        raise TypeError(msg)
    if isinstance(value, numbers.Real) or (isinstance(value, np.ndarray) and value.ndim == 0):
        values = np.full(n, _v.float_value(value, name), dtype=np.float64)
    elif isinstance(value, (Sequence, np.ndarray)):
        values = np.asarray(value)
        if values.dtype == object and values.ndim == 1 and all(
                isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in values.tolist()):
            # Python ints beyond int64 (numpy keeps them as objects): each as a float, or a ValueError.
            values = np.asarray([_v.float_value(v, f"{name}[{i}]") for i, v in enumerate(values.tolist())])
        if values.dtype.kind not in "fiu":
            msg = f"{name} must hold real numbers, got dtype {values.dtype}"
            raise TypeError(msg)
        if values.ndim != 1 or values.shape[0] != n:
            msg = f"{name} must be a scalar or have one value per memory ({n}), got shape {values.shape}"
            raise ValueError(msg)
        values = values.astype(np.float64)
    else:
        msg = f"{name} must be a real number or a sequence of real numbers, got {type(value).__name__}"
        raise TypeError(msg)
    bad = ~np.isfinite(values) | (values < low) | (values > high)
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        msg = f"{name} must be finite and lie in [{low}, {high}], got {values[position]} at position {position}"
        raise ValueError(msg)
    return values


def _per_item(value: object, n: int, name: str, check) -> list:
    """A str/scalar (broadcast) or one value per item, each passed through ``check``."""
    if _is_scalar(value):
        return [check(value, name)] * n
    if not isinstance(value, (Sequence, np.ndarray)):
        msg = f"{name} must be a single value or one value per memory, got {type(value).__name__}"
        raise TypeError(msg)
    return [check(item, f"{name}[{i}]") for i, item in enumerate(_one_per_memory(value, n, name, "value"))]


def _labels_per_item(value: object, n: int, name: str) -> list[tuple[str, ...]]:
    if value is None:
        return [()] * n
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        msg = f"{name} must be a sequence with one collection of labels per memory, got {type(value).__name__}"
        raise TypeError(msg)
    labels = _one_per_memory(value, n, name, "entry")
    return [check_labels(item, f"{name}[{i}]") for i, item in enumerate(labels)]


def _one_per_memory(value: Sequence, n: int, name: str, what: str) -> Sequence:
    """``value`` itself once it has exactly ``n`` items (one ``what`` per memory)."""
    if len(value) != n:
        msg = f"{name} must have one {what} per memory ({n}), got {len(value)}"
        raise ValueError(msg)
    return value


def _sessions_per_item(value: object, n: int) -> Optional[list[Optional[str]]]:
    if value is None:
        return None
    if isinstance(value, str):
        return [check_text(value, "sessions")] * n
    if not isinstance(value, Sequence):
        msg = f"sessions must be a str, None or one str/None per memory, got {type(value).__name__}"
        raise TypeError(msg)
    sessions = _one_per_memory(value, n, "sessions", "entry")
    return [None if item is None else check_text(item, f"sessions[{i}]") for i, item in enumerate(sessions)]


def _supersedes_per_item(value: object, n: int) -> list[Optional[int]]:
    if value is None:
        return [None] * n
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        msg = f"supersedes must be a sequence with one id or None per memory, got {type(value).__name__}"
        raise TypeError(msg)
    ids = _one_per_memory(value, n, "supersedes", "entry")
    return [None if item is None else check_memory_id(item) for item in ids]


@dataclass(frozen=True)
class NewRows:
    """The checked columns of ``n`` new memories, without ids (:func:`new_rows`)."""

    texts: list[str]
    vectors: np.ndarray
    tenants: list[str]
    tiers: list[str]
    importance: np.ndarray
    valence: np.ndarray
    storage: np.ndarray
    created: np.ndarray
    accessed: np.ndarray
    counts: np.ndarray
    tags: list[tuple[str, ...]]
    entities: list[tuple[str, ...]]
    sessions: Optional[list[Optional[str]]]
    supersedes: list[Optional[int]]

    def __len__(self) -> int:
        return len(self.texts)

    def batch(self, first: int) -> RowBatch:
        """The rows with ids ``first, first + 1, ...`` (a ValueError past the id space)."""
        n = len(self)
        if first + n > MEMORY_ID_LIMIT:
            msg = f"the store has run out of memory ids (they lie below {MEMORY_ID_LIMIT})"
            raise ValueError(msg)
        return RowBatch(
            ids=np.arange(first, first + n, dtype=np.int64), tenants=self.tenants, texts=self.texts,
            embeddings=self.vectors, created_at=self.created, last_access=self.accessed,
            recall_count=self.counts.astype(np.int64), importance=self.importance, storage_strength=self.storage,
            valence=self.valence, tiers=self.tiers, tags=self.tags, entities=self.entities, sessions=self.sessions,
            supersedes=np.asarray([NO_MEMORY if r is None else r for r in self.supersedes], dtype=np.int64),
        )


def checked_text(text: object, max_bytes: int, name: str = "text") -> str:
    """One memory's text: a str UTF-8 can encode, of at most ``max_bytes`` bytes."""
    return check_text_size(check_text(text, name), max_bytes, name)


def checked_texts(texts: object, max_bytes: int) -> list[str]:
    """``add_many``'s texts: a sequence of str (not one str), each of at most ``max_bytes`` bytes."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        msg = f"texts must be a sequence of str, got {type(texts).__name__}"
        raise TypeError(msg)
    return [checked_text(t, max_bytes, f"texts[{i}]") for i, t in enumerate(texts)]


def _vectors(embeddings: object, n: int, dim: int) -> np.ndarray:
    if isinstance(embeddings, UnitRows):
        vectors = embeddings.rows  # from add: checked and normalised already (normalising twice moves bits)
    else:
        vectors = embedding_rows(embeddings, dim, "embeddings")
    if vectors.shape[0] != n:
        msg = f"embeddings must have one row per text ({n}), got {vectors.shape[0]}"
        raise ValueError(msg)
    return vectors


def _times(created_at: object, last_access: object, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Creation times (default now) and last accesses (default the creation, never before it)."""
    if created_at is None:
        created = np.full(n, time.time(), dtype=np.float64)
    else:
        created = _numeric_column(created_at, n, "created_at", -math.inf, math.inf)
    if last_access is None:
        return created, created.copy()
    return created, np.maximum(_numeric_column(last_access, n, "last_access", -math.inf, math.inf), created)


def new_rows(texts: list[str], embeddings: object, dim: int, *, tenants: object, importances: object,
             valences: object, tiers: object, tags: object, entities: object, storage_strengths: object,
             created_at: object, last_access: object, recall_counts: object, sessions: object,
             supersedes: object) -> NewRows:
    """The checked columns of an ``add_many`` (arguments as it documents them; ``texts`` checked)."""
    n = len(texts)
    vectors = _vectors(embeddings, n, dim)
    tenant_list = _per_item(tenants, n, "tenants", check_tenant)
    tier_list = _per_item(tiers, n, "tiers", check_tier)
    importance = _numeric_column(importances, n, "importances", *IMPORTANCE_RANGE)
    valence = _numeric_column(valences, n, "valences", *VALENCE_RANGE)
    storage = _numeric_column(storage_strengths, n, "storage_strengths", 1.0, math.inf)
    created, accessed = _times(created_at, last_access, n)
    counts = _numeric_column(recall_counts, n, "recall_counts", *RECALL_COUNT_RANGE)
    if not np.array_equal(counts, np.floor(counts)):
        msg = "recall_counts must be whole numbers"
        raise ValueError(msg)
    return NewRows(texts=texts, vectors=vectors, tenants=tenant_list, tiers=tier_list, importance=importance,
                   valence=valence, storage=storage, created=created, accessed=accessed, counts=counts,
                   tags=_labels_per_item(tags, n, "tags"), entities=_labels_per_item(entities, n, "entities"),
                   sessions=_sessions_per_item(sessions, n), supersedes=_supersedes_per_item(supersedes, n))


def single_vector(embedding: object, dim: int, *, array_only: bool = False) -> np.ndarray:
    """One memory's embedding (``add``, ``update``), checked and normalised under the name ``embedding``.

    ``array_only``: anything but an array, list or tuple is a TypeError (``add``'s rule).
    """
    if array_only and not isinstance(embedding, (np.ndarray, list, tuple)):
        msg = f"embedding must be a numpy array of shape ({dim},), got {type(embedding).__name__}"
        raise TypeError(msg)
    vector = np.asarray(embedding)
    if vector.ndim != 1:
        msg = f"embedding must be 1-D with shape ({dim},), got shape {vector.shape}"
        raise ValueError(msg)
    return embedding_vector(vector, dim, "embedding")


def checked_changes(dim: int, max_text_bytes: int, *, text: Optional[str], embedding: object, importance: object,
                    valence: object, tier: object, tags: object, entities: object,
                    storage_strength: object) -> dict[str, Any]:
    """The fields an ``update`` changes (None: unchanged), each checked, in the order of its arguments."""
    given = (
        ("text", text, lambda value: checked_text(value, max_text_bytes)),
        ("embedding", embedding, lambda value: single_vector(value, dim)),
        ("importance", importance, check_importance),
        ("valence", valence, check_valence),
        ("tier", tier, check_tier),
        ("tags", tags, lambda value: check_labels(value, "tags")),
        ("entities", entities, lambda value: check_labels(value, "entities")),
        ("storage_strength", storage_strength, check_storage_strength),
    )
    return {name: check(value) for name, value, check in given if value is not None}


def updated_batch(current: Memory, changes: dict[str, Any]) -> RowBatch:
    """The one-row batch of ``current`` with ``changes`` applied (S never decreases: a ValueError)."""
    if changes.get("storage_strength", current.storage_strength) < current.storage_strength:
        msg = (f"storage_strength may not decrease (S never decreases): memory {current.id} has "
               f"{current.storage_strength}, got {changes['storage_strength']}")
        raise ValueError(msg)
    merged = {**current.__dict__, **changes}
    return RowBatch(
        ids=np.array([current.id], dtype=np.int64), tenants=[merged["tenant"]], texts=[merged["text"]],
        embeddings=merged["embedding"][None, :].astype(np.float32),
        created_at=np.array([merged["created_at"]]), last_access=np.array([merged["last_access"]]),
        recall_count=np.array([merged["recall_count"]], dtype=np.int64),
        importance=np.array([merged["importance"]]), storage_strength=np.array([merged["storage_strength"]]),
        valence=np.array([merged["valence"]]), tiers=[merged["tier"]], tags=[merged["tags"]],
        entities=[merged["entities"]], sessions=[merged["session"]],
        supersedes=np.array([NO_MEMORY if merged["supersedes"] is None else merged["supersedes"]]),
        superseded_by=np.array([NO_MEMORY if merged["superseded_by"] is None else merged["superseded_by"]]),
    )


def embedded(embedder: Optional[Embedder], texts: list[str], what: str, *, queries: bool = False) -> np.ndarray:
    """The embedder's rows for ``texts`` (a ``ValueError`` naming ``what`` without an embedder)."""
    if embedder is None:
        msg = f"pass {what}, or build the store with an embedder= that embeds the text"
        raise ValueError(msg)
    return (embed_queries if queries else embed_documents)(embedder, texts)
