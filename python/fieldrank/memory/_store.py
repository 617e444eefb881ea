"""``MemoryStore``: long-lived agent memory with multi-signal fused recall (SPEC §8).

Pipeline of one recall:

1. **gates pushed down**: the rows of the cue's tenant that are live and pass every hard gate
   (:mod:`._gates`);
2. **relevance core**: ``fieldrank.temporal.temporal_batch`` with the ``default`` preset's
   parameters scores every eligible row (:func:`.generators.relevance_core`);
3. **candidate generation**: each generator of the mode admits up to its own quota from those
   rows, independently; in the protecting modes the protected tier (every durable row) is
   admitted whole; the union is taken, plus the replacement of every superseded candidate
   (:mod:`._generators`);
4. **gates on the union** (re-checked per candidate);
5. **fused score** of every candidate: relevance plus bounded additive terms; with cue
   entities, memories about other entities capped below the best one about the cue's; superseded
   memories capped below their replacement (:mod:`._scoring`); in ``rerank`` mode the fused union
   is then reranked by CFS-R or CFS (``fieldrank.cfsr_pool`` / ``cfs_pool`` with the fused scores
   as the pool's query similarities);
6. the top ``k``, with a reserved share for the protected memories a cue-conditioned gate picks, with
   provenance (:mod:`._provenance`); with ``reinforce=True`` the returned memories are
   strengthened and linked (SPEC §8 recall dynamics), as SQL increments with a file.

Several processes or store objects may share a file: ids are allocated in the file, and every
public call (``len``, ``in`` and ``tenants`` included) first applies what others committed
(``PRAGMA data_version``, row revisions, the purge epoch; see :mod:`._persistence`): a memory
whose ``forget()`` returned in any process is never returned, got or revived by a call that
starts afterwards, in any process, whatever purges and compactions happened in between.

Thread-safety model. One re-entrant lock serialises writers (``add``, ``add_many``, ``update``,
``forget``, ``compact``, the bookkeeping at the end of a recall) and the SQLite connection. A
recall holds the lock only to take a snapshot (rows ``[0, n)`` of the current generation and
read-only copies of the live mask and ``superseded_by``, shared until a tombstone or supersede
changes them) and, if it reinforces, for the bookkeeping; candidate
generation and scoring run without it, and the native prefilter releases the GIL. Rows a
snapshot can see are never modified except the bookkeeping columns (element writes), and a
half-added memory is never visible: writers publish the row count last (:mod:`._columns`). The
BM25 leg has its own lock (:mod:`._lexical`). A memory forgotten before a recall takes its
snapshot is never returned by it.
"""

from __future__ import annotations

import math
import numbers
import os
import threading
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import Any, Mapping, Optional, Union

import numpy as np

from .. import _core
from .. import _validation as _v
from ..embed import Embedder, check_embedder, embed_documents, embed_queries
from ..operators import cfs_pool, cfsr_pool
from . import _confidence as _hit_confidence
from ._columns import Generation, RowBatch, Snapshot
from ._gates import Eligibility, GateSpec, eligible_rows, failed_gates, passes_union_gates
from ._columns import NO_MEMORY
from ._generators import (Admissions, Cue, LinkIndex, Relevance, by_cue_z, generate, generator_rank,
                          mentioned_entities, relevance_core)
from ._params import DEFAULT_PARAMS, MemoryParams
from ._persistence import SYNCHRONOUS_MODES, TOMBSTONE, StoreBackend, StoreIOError, batch_of_records, open_backend
from ._provenance import Hit, RecallResult, ScoreFactors, WhyNot, dominant_factor, weakest_factor
from ._schema import (
    DEFAULT_IMPORTANCE,
    DEFAULT_MODE,
    KEYWORD_MODE,
    DEFAULT_STORAGE_STRENGTH,
    DEFAULT_TENANT,
    DEFAULT_TIER,
    DEFAULT_VALENCE,
    GENERATORS,
    IMPORTANCE_RANGE,
    MEMORY_ID_LIMIT,
    MODE_GENERATORS,
    PROTECTING_MODES,
    RECALL_COUNT_RANGE,
    SECONDS_PER_DAY,
    TIERS,
    VALENCE_RANGE,
    Memory,
    check_importance,
    check_labels,
    check_memory_id,
    check_mode,
    check_positive_int,
    check_storage_strength,
    check_tenant,
    check_text,
    check_tier,
    check_tier_mask,
    check_timestamp,
    check_valence,
    check_valence_window,
    cue_vector,
    embedding_rows,
    embedding_vector,
)
from ._scoring import (
    MATRIX_COLUMNS,
    FactorArrays,
    fuse,
    hit_cosine,
    native_fusion_params,
    retrieval_strength,
    with_score,
)

__all__ = ["MemoryStore", "ReinforcementWarning"]


class ReinforcementWarning(RuntimeWarning):
    """A recall's bookkeeping (reinforcement) could not be written; its hits were returned unreinforced."""

DEFAULT_K = _v.DEFAULTS["k"]  # results per recall: the core's k, as for a hybrid query
DEFAULT_SYNCHRONOUS = "FULL"

PathLike = Union[str, "os.PathLike[str]"]


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
    if len(value) != n:
        msg = f"{name} must have one value per memory ({n}), got {len(value)}"
        raise ValueError(msg)
    return [check(item, f"{name}[{i}]") for i, item in enumerate(value)]


def _labels_per_item(value: object, n: int, name: str) -> list[tuple[str, ...]]:
    if value is None:
        return [()] * n
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        msg = f"{name} must be a sequence with one collection of labels per memory, got {type(value).__name__}"
        raise TypeError(msg)
    if len(value) != n:
        msg = f"{name} must have one entry per memory ({n}), got {len(value)}"
        raise ValueError(msg)
    return [check_labels(item, f"{name}[{i}]") for i, item in enumerate(value)]


def _with_replacements(snapshot: Snapshot, union: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """The union plus the eligible replacement of every superseded candidate (so it can outrank it)."""
    replaced_by = snapshot.superseded_by[union]
    stale = replaced_by != NO_MEMORY
    if not stale.any():
        return union
    extra = [row for row in (snapshot.row_of(int(i)) for i in replaced_by[stale].tolist())
             if row is not None and eligible[row]]
    return np.unique(np.concatenate([union, np.asarray(extra, dtype=np.int64)])) if extra else union


def _rank_other_entities_below_the_cues(snapshot: Snapshot, factors: FactorArrays, margin: float) -> FactorArrays:
    """Cap every candidate about other entities only at the best cue-entity candidate's score minus ``margin``.

    With cue entities, a memory about entities none of which is the cue's (the lexical twin "Sarah's
    favourite food" for "What is Sara's favourite food?") may still be returned, but never above
    the best candidate about one of the cue's entities: how much the relevance core likes the twin's
    words grows with the store (z units over more rows), a bounded additive penalty does not.
    No-op without cue entities or without a candidate about them.
    """
    about_cue = factors.entity_containment > 0
    other = snapshot.has_entities[factors.rows] & ~about_cue  # about entities, none of them the cue's
    if not about_cue.any() or not other.any():
        return factors
    ceiling = float(factors.score[about_cue].max()) - margin
    score = factors.score.copy()
    score[other] = np.minimum(score[other], ceiling)
    return with_score(factors, score)


def _rank_superseded_below_replacements(snapshot: Snapshot, factors: FactorArrays, margin: float) -> FactorArrays:
    """Cap a superseded candidate's score at its replacement's minus ``margin`` (when both are candidates).

    Chains (A superseded by B superseded by C) are resolved newest first, so A < B < C.
    """
    rows = factors.rows
    replaced_by = snapshot.superseded_by[rows]
    if not (replaced_by != NO_MEMORY).any():
        return factors
    score = factors.score.copy()
    stale_positions = np.flatnonzero(replaced_by != NO_MEMORY)
    # each stale candidate's replacement among the candidates (rows are sorted): position or -1
    replacement_rows = np.fromiter((-1 if (r := snapshot.row_of(int(i))) is None else r
                                    for i in replaced_by[stale_positions].tolist()),
                                   dtype=np.int64, count=stale_positions.size)
    at = np.minimum(np.searchsorted(rows, replacement_rows), rows.size - 1)
    found = (replacement_rows >= 0) & (rows[at] == replacement_rows)
    pairs = list(zip(stale_positions[found].tolist(), at[found].tolist()))
    for _ in range(len(pairs)):  # at most one pass per link of the longest chain
        changed = False
        for i, j in pairs:
            if score[i] > score[j] - margin:
                score[i] = score[j] - margin
                changed = True
        if not changed:
            break
    return with_score(factors, score)


#: The FactorArrays column of each ScoreFactors field (the same name, except two); the float64
#: columns in ScoreFactors' field order, and where its one bool field, ``durable``, goes among them.
_COLUMN_OF_FIELD = {"importance": "importance_term", "tag": "tag_term"}
_SCORE_FACTOR_FIELDS = tuple(f.name for f in fields(ScoreFactors))
_FACTOR_COLUMNS = tuple(_COLUMN_OF_FIELD.get(name, name) for name in _SCORE_FACTOR_FIELDS if name != "durable")
_DURABLE_FIELD = _SCORE_FACTOR_FIELDS.index("durable")
#: The rows of the native factor matrix (FactorArrays.matrix) in ScoreFactors' float field order.
_FACTOR_MATRIX_ROWS = np.asarray([MATRIX_COLUMNS.index(name) for name in _FACTOR_COLUMNS], dtype=np.int64)
_COSINE_COLUMN, _SIM_COLUMN = _FACTOR_COLUMNS.index("cosine"), _FACTOR_COLUMNS.index("sim")

def _reserve_protected_slots(order: np.ndarray, chosen: np.ndarray, k: int) -> tuple[np.ndarray, frozenset]:
    """numpy formulation of ``_core.memory_reserve_slots`` (its reference in the parity tests).

    Make sure every one of ``chosen`` (positions into the union) is in the top ``k`` of ``order``.

    ``chosen`` are the protected memories the cue-conditioned gate picked for the reserved share
    (at most ``protected_share · k`` of them, best first). Those already in the top ``k`` keep
    their place; each missing one takes the place of the lowest-ranked hit that is not chosen,
    and the displaced hits come next, in their order. Returns the new order and the positions that
    entered through a reserved slot. ``k`` >= 1 (the store reserves slots only then): ``k <= 0``
    is a ValueError here as in the native kernel.
    """
    if k <= 0:
        msg = f"k must be a positive integer, got {k}"
        raise ValueError(msg)
    if chosen.size == 0 or order.size <= k:
        return order, frozenset()
    top, rest = order[:k], order[k:]
    entering = chosen[~_position_table(top, order.size)[chosen]]
    if entering.size == 0:
        return order, frozenset()
    replaceable = np.flatnonzero(~_position_table(chosen, order.size)[top])
    leaving_at = replaceable[::-1][:entering.size]
    leaving = top[np.sort(leaving_at)]
    kept = np.delete(top, leaving_at)
    remaining = rest[~_position_table(entering, order.size)[rest]]
    return np.concatenate([kept, entering, leaving, remaining]), frozenset(entering.tolist())


def _position_table(positions: np.ndarray, size: int) -> np.ndarray:
    """bool ``(size,)``: True at ``positions``."""
    table = np.zeros(size, dtype=bool)
    table[positions] = True
    return table


def _held_in_sorted(sorted_rows: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """bool per one of ``rows``: held by ``sorted_rows`` (sorted, unique); ``np.isin`` without its sort."""
    if sorted_rows.size == 0:
        return np.zeros(rows.size, dtype=bool)
    position = np.minimum(np.searchsorted(sorted_rows, rows), sorted_rows.size - 1)
    return sorted_rows[position] == rows


def _positions_in_sorted(sorted_rows: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions in ``sorted_rows`` (sorted, unique) of those ``rows`` it holds, in the order of ``rows``."""
    if sorted_rows.size == 0:
        return np.empty(0, dtype=np.int64)
    position = np.searchsorted(sorted_rows, rows)
    held = position < sorted_rows.size
    held[held] = sorted_rows[position[held]] == rows[held]
    return position[held]


def _frozen(cls: type, values: dict) -> Any:
    """An instance of the frozen dataclass ``cls`` with every field given in ``values``.

    What the generated ``__init__`` does (no defaults to fill, no ``__post_init__``), without its
    ``object.__setattr__`` per field: a recall builds two such objects per hit, about 30 fields.
    """
    instance = object.__new__(cls)
    instance.__dict__.update(values)
    return instance


def _optional_id(value: object) -> Optional[int]:
    return None if int(value) == NO_MEMORY else int(value)


def _sessions_per_item(value: object, n: int) -> Optional[list[Optional[str]]]:
    if value is None:
        return None
    if isinstance(value, str):
        return [check_text(value, "sessions")] * n
    if not isinstance(value, Sequence):
        msg = f"sessions must be a str, None or one str/None per memory, got {type(value).__name__}"
        raise TypeError(msg)
    if len(value) != n:
        msg = f"sessions must have one entry per memory ({n}), got {len(value)}"
        raise ValueError(msg)
    return [None if item is None else check_text(item, f"sessions[{i}]") for i, item in enumerate(value)]


def _supersedes_per_item(value: object, n: int) -> list[Optional[int]]:
    if value is None:
        return [None] * n
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        msg = f"supersedes must be a sequence with one id or None per memory, got {type(value).__name__}"
        raise TypeError(msg)
    if len(value) != n:
        msg = f"supersedes must have one entry per memory ({n}), got {len(value)}"
        raise ValueError(msg)
    return [None if item is None else check_memory_id(item) for item in value]


@dataclass(frozen=True)
class _UnitRows:
    """Embedding rows :meth:`MemoryStore.add` has already checked and normalised (``embedding_rows``'s output)."""

    rows: np.ndarray


@dataclass(frozen=True)
class _Scored:
    """The scored, gated union of one recall (internal)."""

    snapshot: Snapshot
    cue: Cue
    eligible: Eligibility
    admissions: Admissions
    factors: FactorArrays
    order: np.ndarray  # positions into factors.rows, best first
    ranking_scores: np.ndarray  # score per position of `order`
    rerank: bool
    core: Relevance
    reserved: frozenset  # positions into factors.rows that hold a reserved protected slot


def recall_trace(snapshot: Snapshot, cue: Cue, gates: GateSpec, mode: str, k: int, params: MemoryParams,
                 links: LinkIndex, fusion_params) -> _Scored:
    """The one recall pipeline: a pure function of (snapshot, cue, gates, mode, k, params, links).

    Returns the trace (:class:`_Scored`): the eligibility, every generator's admissions, the gated
    union with its factors, the final order and the reserved slots. :meth:`MemoryStore.recall`
    turns it into hits; :meth:`MemoryStore.why_not` reads the same trace (and, for a memory no
    generator admitted, the generator orders the trace's own scores give), so the two never
    disagree, at near-ties included.
    """
    if cue.infer_entities and params.infer_cue_entities and cue.text:
        named = mentioned_entities(snapshot, cue.text)
        if named:
            cue = replace(cue, entities=named, derived={})
    eligible = eligible_rows(snapshot, gates)
    generators = MODE_GENERATORS[mode]
    core = relevance_core(snapshot, cue, eligible, params,
                          params.quota("relevance") if "relevance" in generators else 0)
    admissions = generate(snapshot, cue, eligible, generators, params, links, core)
    union = _with_replacements(snapshot, admissions.union(), eligible.mask)
    union = union[passes_union_gates(snapshot, union, gates)]
    factors = fuse(snapshot, union, cue, admissions.activation_of(union), core.by_row, params,
                   fusion_params)
    if cue.entities:
        factors = _rank_other_entities_below_the_cues(snapshot, factors, params.other_entity_margin)
    factors = _rank_superseded_below_replacements(snapshot, factors, params.superseded_margin)
    ids = snapshot.ids[union]
    rerank = mode == "rerank" and union.size > 0
    if rerank:
        pool_ids = np.arange(union.size, dtype=np.int64)
        vectors = np.ascontiguousarray(snapshot.embeddings[union])
        fused = factors.score.astype(np.float32)
        if params.rerank_operator == "cfsr":
            ranking = cfsr_pool(pool_ids, vectors, cue.vector, union.size, sims=fused)
        else:
            ranking = cfs_pool(pool_ids, vectors, cue.vector, union.size, sims=fused)
        order = np.asarray(ranking.ids, dtype=np.int64)
        position_scores = np.empty(union.size)
        position_scores[order] = np.asarray(ranking.scores, dtype=np.float64)
    else:
        order = np.lexsort((ids, -factors.score))
        position_scores = factors.score
    reserved: frozenset = frozenset()
    slots = int(params.protected_share * k)
    if mode in PROTECTING_MODES and slots > 0:
        tier = admissions.by_generator.get("importance", np.empty(0, np.int64))
        held = cue.derived.get("by_cue_z")  # the protected tier's order by z, kept by protected_tier
        if (held is not None and held[0] is snapshot and held[1].size == tier.size
                and _held_in_sorted(union, held[1]).all()):
            # the whole tier was admitted (tier is a permutation of its sorted rows) and every
            # row of it is a candidate: by_cue_z of those rows is the order already held
            tier_rows, z = held[2], held[3]
        else:
            tier_rows, z = by_cue_z(snapshot, cue, tier[_held_in_sorted(union, tier)])
        # the cue-conditioned gate: only a durable memory whose similarity to this cue is
        # unusual for it (memory-side z >= protected_min_z) may hold a reserved slot
        chosen = np.searchsorted(union, tier_rows[z >= params.protected_min_z][:slots])
        if chosen.size and order.size > k:
            order, entering = _core.memory_reserve_slots(order, chosen, k)  # = _reserve_protected_slots
            reserved = frozenset(entering.tolist())
    return _frozen(_Scored, {"snapshot": snapshot, "cue": cue, "eligible": eligible, "admissions": admissions,
                             "factors": factors, "order": order, "ranking_scores": position_scores[order],
                             "rerank": rerank, "core": core, "reserved": reserved})


class MemoryStore:
    """Agent memory with multi-signal fused recall, provenance, tenants and SQLite persistence.

    Parameters
    ----------
    path : str or os.PathLike, optional
        SQLite file (created if missing). None keeps everything in memory.
    dim : int, optional
        Embedding dimension; required for a new store, checked against an existing file.
    params : MemoryParams, default DEFAULT_PARAMS
        Quotas, fused-score weights and index policy.
    synchronous : str, default "FULL"
        SQLite ``PRAGMA synchronous`` for a file store ("FULL": a returned add survives a
        machine crash; "NORMAL": it survives a process crash).
    embedder : fieldrank.embed.Embedder, optional
        Embeds the text of ``add``/``add_many``/``update`` and the cue of ``recall``/``why_not``
        when no vector is passed (``dim`` defaults to its dimension).

    Notes
    -----
    Without an embedder the store never embeds text: ``add`` takes the memory's embedding and
    ``recall`` the cue's vector. Embeddings of any real dtype are converted once to float32 and
    L2-normalised on ingest. See the module docstring for the thread-safety model.

    When SQLite cannot read or write the file (locked past the 30 s busy timeout, read-only, disk
    full, I/O error), ``add``, ``add_many``, ``update``, ``forget`` and ``compact`` raise
    :class:`~fieldrank.memory.StoreIOError` (an ``OSError`` naming the file, the operation and
    SQLite's cause) and change nothing; a recall's bookkeeping never raises (see ``recall``).
    """

    def __init__(
        self,
        path: Optional[PathLike] = None,
        dim: Optional[int] = None,
        *,
        params: MemoryParams = DEFAULT_PARAMS,
        synchronous: str = DEFAULT_SYNCHRONOUS,
        embedder: Optional[Embedder] = None,
    ) -> None:
        self._embedder = check_embedder(embedder)
        if dim is None and self._embedder is not None:
            dim = self._embedder.dim
        if self._embedder is not None and dim != self._embedder.dim:
            msg = f"dim {dim} differs from the embedder's dimension {self._embedder.dim}"
            raise ValueError(msg)
        if not isinstance(params, MemoryParams):
            msg = f"params must be a MemoryParams, got {type(params).__name__}"
            raise TypeError(msg)
        if synchronous not in SYNCHRONOUS_MODES:
            msg = f"synchronous must be one of {SYNCHRONOUS_MODES}, got {synchronous!r}"
            raise ValueError(msg)
        if dim is not None:
            dim = check_positive_int(dim, "dim")
        self._params = params
        #: The fused score's constants for the native kernel, built once with the params.
        self._fusion_params = native_fusion_params(params)
        self._quotas_by_mode: dict[str, Mapping] = {}
        self._lock = threading.RLock()
        self._links: dict[int, dict[int, float]] = {}
        self._link_index = LinkIndex(self._links)
        self._forgotten: set[int] = set()
        self._next_id = 0
        self._closed = False
        #: File revision this store has applied (see :meth:`_refresh`), and revisions it wrote itself.
        self._revision = 0
        self._own_revisions: set[int] = set()
        self._data_version = -1
        #: The file's purge epoch this store has reconciled with (see :meth:`_reconcile`).
        self._purge_epoch = 0
        self._reinforce_failures = 0
        if path is None:
            if dim is None:
                msg = "dim is required for an in-memory store (path=None)"
                raise ValueError(msg)
            self._backend: Optional[StoreBackend] = None
            self._dim = dim
        else:
            self._backend = open_backend(path, dim, synchronous)
            self._dim = self._backend.dim
        self._generation = Generation(self._dim, params)
        if self._backend is not None:
            self._load()

    # ------------------------------------------------------------------ properties
    @property
    def dim(self) -> int:
        """Embedding dimension."""
        return self._dim

    @property
    def params(self) -> MemoryParams:
        return self._params

    @property
    def reinforce_failures(self) -> int:
        """How many recalls of this store object returned their hits unreinforced (bookkeeping not written)."""
        return self._reinforce_failures

    @property
    def path(self) -> Optional[str]:
        """The SQLite file, or None for an in-memory store."""
        return None if self._backend is None else self._backend.path

    def __len__(self) -> int:
        """Number of live (not forgotten) memories, with what other processes committed."""
        with self._lock:
            self._refresh()
            return self._generation.n_live

    def __contains__(self, memory_id: object) -> bool:
        if not isinstance(memory_id, numbers.Integral):
            return False
        with self._lock:
            self._refresh()
            return int(memory_id) in self._generation.row_of

    def __repr__(self) -> str:
        where = "in memory" if self._backend is None else repr(self._backend.path)
        return f"MemoryStore({where}, dim={self._dim}, memories={len(self)})"

    def tenants(self) -> tuple[str, ...]:
        """Every tenant that has held a memory in the current generation, sorted."""
        with self._lock:
            self._refresh()
            return tuple(sorted(self._generation.tenant_names))

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the SQLite file (a no-op for in-memory stores). Further calls raise."""
        with self._lock:
            if not self._closed and self._backend is not None:
                self._backend.close()
            self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            msg = "the memory store is closed"
            raise ValueError(msg)

    # ------------------------------------------------------------------ loading
    def _load(self) -> None:
        backend = self._backend
        self._data_version = backend.data_version()
        state = backend.changes(None, None)  # one snapshot: rows, links, revision and purge epoch agree
        self._revision, self._purge_epoch = state.revision, state.purge_epoch
        self._apply_rows(state.rows)
        self._next_id = max(self._next_id, backend.next_id())
        for a, b, weight in state.links:
            self._links.setdefault(a, {})[b] = weight
            self._links.setdefault(b, {})[a] = weight
        self._link_index.touched(list(self._links))

    def _apply_rows(self, records: list) -> None:
        """Bring the in-memory generation up to date with records read from the backend (caller holds the lock).

        A tombstoned record is forgotten; a record with a known id is a new version (update,
        supersede): its old row is tombstoned and the new one appended; an unknown id is appended.
        """
        generation = self._generation
        live = []
        for record in records:
            memory_id = record[0]
            self._next_id = max(self._next_id, memory_id + 1)
            current = generation.row_of.get(memory_id)
            if record[TOMBSTONE]:
                if current is not None:
                    self._forget_row(memory_id, current)
                self._forgotten.add(memory_id)
                continue
            if current is not None:
                generation.tombstone(current)
                del generation.row_of[memory_id]
            live.append(record)
        if live:
            generation.append(batch_of_records(live, self._dim, self._backend.path))

    def _refresh(self) -> None:
        """Apply what other processes (or store objects) committed to the file since the last look.

        Caller holds the lock; every public call that reads or writes calls it first, so a call
        that starts after another process's ``forget()`` returned never sees that memory.
        ``PRAGMA data_version`` says cheaply whether anything changed (no file read when nothing
        did); then, in one read snapshot (:meth:`SqliteBackend.changes`): if another store purged
        (the file's purge epoch moved), every memory the file no longer holds live is forgotten
        here; then the rows written after this store's last applied revision are applied, except
        the ones whose latest write was this store's own (already applied). A closed store does
        nothing (its calls raise, or answer from memory: ``len``, ``in``).
        """
        backend = self._backend
        if backend is None or self._closed:
            return
        version = backend.data_version()
        if version == self._data_version:
            return
        state = backend.changes(self._revision, self._purge_epoch)
        if state.live_ids is not None:
            self._reconcile(state.live_ids, state.tombstoned_ids)
        self._purge_epoch = state.purge_epoch
        self._data_version = version
        if state.revision <= self._revision:
            return
        own = self._own_revisions
        self._apply_rows([row for row in state.rows if row[-1] not in own])
        for a, b, weight in state.links:
            if self._links.get(a, {}).get(b) == weight:
                continue
            for x, y in ((a, b), (b, a)):
                neighbours = dict(self._links.get(x, {}))  # copy-on-write
                neighbours[y] = weight
                self._links[x] = neighbours
            self._link_index.touched((a, b))
        self._revision = state.revision
        self._own_revisions = {r for r in own if r > state.revision}

    def _reconcile(self, live_ids: frozenset, tombstoned_ids: frozenset) -> None:
        """After another store's purge: forget every memory the file no longer holds live (caller holds the lock).

        A purge deletes tombstoned rows, so a store that had not read a tombstone yet cannot learn
        of that forget from the rows; it compares its live ids with the file's instead. Purged ids
        are then unknown (``not_found``), as in the purging store.
        """
        for memory_id, row in list(self._generation.row_of.items()):
            if memory_id not in live_ids:
                self._forget_row(memory_id, row)
        self._forgotten = set(tombstoned_ids)

    def _wrote(self, revision: int) -> None:
        """Record a revision this store committed itself (caller holds the lock)."""
        if revision == self._revision + 1:
            self._revision = revision  # nobody else wrote in between
        else:
            self._own_revisions.add(revision)
        if self._backend is not None:
            self._data_version = -1  # look again at the next call (another writer may have committed)

    def _forget_row(self, memory_id: int, row: int) -> None:
        """Tombstone ``row`` in memory and drop its links (caller holds the lock)."""
        self._generation.tombstone(row)
        del self._generation.row_of[memory_id]
        self._forgotten.add(memory_id)
        for other in self._links.pop(memory_id, {}):
            neighbours = dict(self._links.get(other, {}))  # copy-on-write: readers may hold the old dict
            neighbours.pop(memory_id, None)
            self._links[other] = neighbours
            self._link_index.touched((other,))
        self._link_index.touched((memory_id,))

    # ------------------------------------------------------------------ writing
    def add(
        self,
        text: str,
        embedding: Optional[np.ndarray] = None,
        *,
        tenant: str = DEFAULT_TENANT,
        importance: float = DEFAULT_IMPORTANCE,
        valence: float = DEFAULT_VALENCE,
        tier: str = DEFAULT_TIER,
        tags: Iterable[str] = (),
        entities: Iterable[str] = (),
        storage_strength: float = DEFAULT_STORAGE_STRENGTH,
        created_at: Optional[float] = None,
        session: Optional[str] = None,
        supersedes: Optional[int] = None,
    ) -> int:
        """Store one memory and return its id.

        Parameters
        ----------
        text : str
        embedding : (dim,) array, optional
            Converted to float32 and L2-normalised once. None: the store's embedder embeds ``text``.
        tenant : str, default "default"
        importance : float in [0, 1], default 0.5
        valence : float in [-1, 1], default 0.0
        tier : str, default "episodic"
            One of :data:`fieldrank.memory.TIERS`.
        tags, entities : iterable of str
        storage_strength : float >= 1, default 1.0
            Initial S (a durable constraint may start higher: it decays more slowly).
        created_at : float, optional
            Unix seconds; default now. ``last_access`` starts equal to it.
        session : str, optional
            The conversation or session it was said in: memories of one session, added one after
            another, support each other in the relevance core (same-session neighbours).
        supersedes : int, optional
            Id of a memory of the same tenant that this one replaces ("Orion now uses Postgres 16"
            replacing "Orion uses MySQL 5.7"). The stale memory stays recallable but always ranks
            below its replacement (docs/memory.md, "Updates").

        Returns
        -------
        int
            The new memory's id. With a file store the memory is committed before this returns.
        """
        if embedding is None:
            embedding = self._embedded_texts([check_text(text)], "embedding")[0]
        if not isinstance(embedding, (np.ndarray, list, tuple)):
            msg = f"embedding must be a numpy array of shape ({self._dim},), got {type(embedding).__name__}"
            raise TypeError(msg)
        vector = np.asarray(embedding)
        if vector.ndim != 1:
            msg = f"embedding must be 1-D with shape ({self._dim},), got shape {vector.shape}"
            raise ValueError(msg)
        ids = self.add_many(
            [check_text(text)],
            # normalised once here (the messages name `embedding`); add_many stores these very bits
            _UnitRows(embedding_vector(vector, self._dim, "embedding")[None, :]),
            tenants=check_tenant(tenant),
            importances=importance,
            valences=valence,
            tiers=tier,
            tags=[check_labels(tags, "tags")],
            entities=[check_labels(entities, "entities")],
            storage_strengths=storage_strength,
            created_at=created_at,
            sessions=session,
            supersedes=None if supersedes is None else [supersedes],
        )
        return int(ids[0])

    def add_many(
        self,
        texts: Sequence[str],
        embeddings: Optional[np.ndarray] = None,
        *,
        tenants: Union[str, Sequence[str]] = DEFAULT_TENANT,
        importances: Union[float, Sequence[float]] = DEFAULT_IMPORTANCE,
        valences: Union[float, Sequence[float]] = DEFAULT_VALENCE,
        tiers: Union[str, Sequence[str]] = DEFAULT_TIER,
        tags: Optional[Sequence[Iterable[str]]] = None,
        entities: Optional[Sequence[Iterable[str]]] = None,
        storage_strengths: Union[float, Sequence[float]] = DEFAULT_STORAGE_STRENGTH,
        created_at: Union[float, Sequence[float], None] = None,
        last_access: Union[float, Sequence[float], None] = None,
        recall_counts: Union[int, Sequence[int]] = 0,
        sessions: Union[str, Sequence[Optional[str]], None] = None,
        supersedes: Optional[Sequence[Optional[int]]] = None,
    ) -> np.ndarray:
        """Store many memories in one step (one transaction for a file store); return their ids.

        Every keyword takes either one value for all memories or a sequence with one value per
        memory; ``tags``/``entities`` take one collection of labels per memory. Validation
        happens before anything is written: either every memory is stored or none.
        ``last_access`` (default: ``created_at``) and ``recall_counts`` (default 0) restore a
        recall history, e.g. when importing memories from another system. ``sessions`` (one str
        for all, or one str/None per memory) and ``supersedes`` (one id/None per memory) are as
        in :meth:`add`.

        Returns
        -------
        np.ndarray
            int64 ids, in the order of ``texts``.
        """
        if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
            msg = f"texts must be a sequence of str, got {type(texts).__name__}"
            raise TypeError(msg)
        n = len(texts)
        text_list = [check_text(t, f"texts[{i}]") for i, t in enumerate(texts)]
        if embeddings is None:
            embeddings = self._embedded_texts(text_list, "embeddings")
        if isinstance(embeddings, _UnitRows):
            vectors = embeddings.rows  # from add: checked and normalised already (normalising twice moves bits)
        else:
            vectors = embedding_rows(embeddings, self._dim, "embeddings")
        if vectors.shape[0] != n:
            msg = f"embeddings must have one row per text ({n}), got {vectors.shape[0]}"
            raise ValueError(msg)
        tenant_list = _per_item(tenants, n, "tenants", check_tenant)
        tier_list = _per_item(tiers, n, "tiers", check_tier)
        importance = _numeric_column(importances, n, "importances", *IMPORTANCE_RANGE)
        valence = _numeric_column(valences, n, "valences", *VALENCE_RANGE)
        storage = _numeric_column(storage_strengths, n, "storage_strengths", 1.0, math.inf)
        if created_at is None:
            created = np.full(n, time.time(), dtype=np.float64)
        else:
            created = _numeric_column(created_at, n, "created_at", -math.inf, math.inf)
        if last_access is None:
            accessed = created.copy()
        else:
            accessed = np.maximum(_numeric_column(last_access, n, "last_access", -math.inf, math.inf), created)
        counts = _numeric_column(recall_counts, n, "recall_counts", *RECALL_COUNT_RANGE)
        if not np.array_equal(counts, np.floor(counts)):
            msg = "recall_counts must be whole numbers"
            raise ValueError(msg)
        tag_list = _labels_per_item(tags, n, "tags")
        entity_list = _labels_per_item(entities, n, "entities")
        session_list = _sessions_per_item(sessions, n)
        replaced = _supersedes_per_item(supersedes, n)
        if n == 0:
            return np.empty(0, dtype=np.int64)
        with self._lock:
            self._check_open()
            self._refresh()
            stale_rows = self._check_supersedes(replaced, tenant_list)

            def batch_from(first: int) -> RowBatch:
                if first + n > MEMORY_ID_LIMIT:
                    msg = f"the store has run out of memory ids (they lie below {MEMORY_ID_LIMIT})"
                    raise ValueError(msg)
                return RowBatch(
                    ids=np.arange(first, first + n, dtype=np.int64), tenants=tenant_list, texts=text_list,
                    embeddings=vectors, created_at=created, last_access=accessed,
                    recall_count=counts.astype(np.int64), importance=importance, storage_strength=storage,
                    valence=valence, tiers=tier_list, tags=tag_list, entities=entity_list, sessions=session_list,
                    supersedes=np.asarray([NO_MEMORY if r is None else r for r in replaced], dtype=np.int64),
                )

            if self._backend is not None:
                built: list[RowBatch] = []

                def built_batch(first: int) -> RowBatch:
                    built.append(batch_from(first))
                    return built[0]

                pairs = [(r, offset) for offset, r in enumerate(replaced) if r is not None]
                first, revision = self._backend.insert(built_batch, n, pairs)
                batch = built[0]
                self._wrote(revision)
            else:
                first = self._next_id
                batch = batch_from(first)
            self._next_id = max(self._next_id, first + n)
            self._generation.append(batch)
            for offset, row in stale_rows:
                self._generation.mark_superseded(row, first + offset)
        return batch.ids

    def _check_supersedes(self, replaced: list[Optional[int]], tenants: list[str]) -> list[tuple[int, int]]:
        """(offset, row of the stale memory) per superseding item; each must be live and of the same tenant."""
        out = []
        for offset, memory_id in enumerate(replaced):
            if memory_id is None:
                continue
            row = self._generation.row_of.get(memory_id)
            if row is None:
                msg = f"supersedes[{offset}]: no live memory with id {memory_id}"
                raise KeyError(msg)
            tenant = self._generation.tenant_names[int(self._generation.tenant_codes.buffer[row])]
            if tenant != tenants[offset]:
                msg = (f"supersedes[{offset}]: memory {memory_id} belongs to tenant {tenant!r}, not "
                       f"{tenants[offset]!r}; a memory can only supersede one of its own tenant")
                raise ValueError(msg)
            out.append((offset, row))
        return out

    def _embedded_texts(self, texts: list[str], what: str, *, queries: bool = False) -> np.ndarray:
        """The embedder's rows for ``texts`` (a ``ValueError`` naming ``what`` without an embedder)."""
        if self._embedder is None:
            msg = f"pass {what}, or build the store with an embedder= that embeds the text"
            raise ValueError(msg)
        return (embed_queries if queries else embed_documents)(self._embedder, texts)

    @property
    def embedder(self) -> Optional[Embedder]:
        """The embedder of texts given without a vector, or None."""
        return self._embedder

    def _live_row(self, memory_id: int, tenant: Optional[str] = None) -> int:
        """Row of a live memory in the current generation (caller holds the lock).

        With ``tenant`` given, a memory of another tenant is reported exactly like a missing one.
        """
        generation = self._generation
        row = generation.row_of.get(memory_id)
        if (tenant is not None and row is not None
                and generation.tenant_names[int(generation.tenant_codes.buffer[row])] != tenant):
            row = None
        if row is None:
            if tenant is not None:
                msg = f"no memory with id {memory_id} for tenant {tenant!r}"
            elif memory_id in self._forgotten:
                msg = f"memory {memory_id} was forgotten"
            else:
                msg = f"no memory with id {memory_id}"
            raise KeyError(msg)
        return row

    def _memory_at(self, generation: Generation, row: int) -> Memory:
        return Memory(
            id=int(generation.ids.buffer[row]),
            tenant=generation.tenant_names[int(generation.tenant_codes.buffer[row])],
            text=generation.texts[row],
            embedding=generation.embeddings.buffer[row].copy(),
            created_at=float(generation.created_at.buffer[row]),
            last_access=float(generation.last_access.buffer[row]),
            recall_count=int(generation.recall_count.buffer[row]),
            importance=float(generation.importance.buffer[row]),
            storage_strength=float(generation.storage_strength.buffer[row]),
            valence=float(generation.valence.buffer[row]),
            tier=TIERS[int(generation.tier_codes.buffer[row])],
            tags=generation.tags[row],
            entities=generation.entities[row],
            session=generation.sessions[row],
            supersedes=_optional_id(generation.supersedes.buffer[row]),
            superseded_by=_optional_id(generation.superseded_by.buffer[row]),
        )

    def get(self, memory_id: int, *, tenant: Optional[str] = None) -> Memory:
        """The memory with this id.

        Parameters
        ----------
        memory_id : int
        tenant : str, optional
            Scope the lookup: a memory of another tenant raises ``KeyError`` like a missing one.

        Raises
        ------
        KeyError
            If there is no such (live) memory; the message says whether it was forgotten,
            unless ``tenant`` is given.
        """
        memory_id = check_memory_id(memory_id)
        tenant = None if tenant is None else check_tenant(tenant)
        with self._lock:
            self._check_open()
            self._refresh()
            return self._memory_at(self._generation, self._live_row(memory_id, tenant))

    def update(
        self,
        memory_id: int,
        *,
        text: Optional[str] = None,
        embedding: Optional[np.ndarray] = None,
        importance: Optional[float] = None,
        valence: Optional[float] = None,
        tier: Optional[str] = None,
        tags: Optional[Iterable[str]] = None,
        entities: Optional[Iterable[str]] = None,
        storage_strength: Optional[float] = None,
        tenant: Optional[str] = None,
    ) -> Memory:
        """Change fields of a memory (None: unchanged); returns the updated memory.

        ``tenant`` scopes the call as in :meth:`get` (it does not move the memory).

        The id, ``created_at``, ``last_access`` and ``recall_count`` are kept. Internally the old
        row is tombstoned and a new row appended in one step, so every index (BM25 included)
        sees the new text at once. ``storage_strength`` may not decrease (S never decreases).

        Raises
        ------
        KeyError
            If the memory does not exist or was forgotten (or purged), in any process: an
            update never revives a forgotten memory.
        """
        memory_id = check_memory_id(memory_id)
        tenant = None if tenant is None else check_tenant(tenant)
        changes: dict[str, Any] = {}
        if text is not None:
            changes["text"] = check_text(text)
            if embedding is None and self._embedder is not None:
                # New words, new vector: keeping the old embedding would rank the new text by the old one.
                embedding = self._embedded_texts([changes["text"]], "embedding")[0]
        if embedding is not None:
            vector = np.asarray(embedding)
            if vector.ndim != 1:
                msg = f"embedding must be 1-D with shape ({self._dim},), got shape {vector.shape}"
                raise ValueError(msg)
            changes["embedding"] = embedding_vector(vector, self._dim, "embedding")
        if importance is not None:
            changes["importance"] = check_importance(importance)
        if valence is not None:
            changes["valence"] = check_valence(valence)
        if tier is not None:
            changes["tier"] = check_tier(tier)
        if tags is not None:
            changes["tags"] = check_labels(tags, "tags")
        if entities is not None:
            changes["entities"] = check_labels(entities, "entities")
        if storage_strength is not None:
            changes["storage_strength"] = check_storage_strength(storage_strength)
        with self._lock:
            self._check_open()
            self._refresh()
            generation = self._generation
            row = self._live_row(memory_id, tenant)
            current = self._memory_at(generation, row)
            if changes.get("storage_strength", current.storage_strength) < current.storage_strength:
                msg = (f"storage_strength may not decrease (S never decreases): memory {memory_id} has "
                       f"{current.storage_strength}, got {changes['storage_strength']}")
                raise ValueError(msg)
            merged = {**current.__dict__, **changes}
            batch = RowBatch(
                ids=np.array([memory_id], dtype=np.int64), tenants=[merged["tenant"]], texts=[merged["text"]],
                embeddings=merged["embedding"][None, :].astype(np.float32),
                created_at=np.array([merged["created_at"]]), last_access=np.array([merged["last_access"]]),
                recall_count=np.array([merged["recall_count"]], dtype=np.int64),
                importance=np.array([merged["importance"]]), storage_strength=np.array([merged["storage_strength"]]),
                valence=np.array([merged["valence"]]), tiers=[merged["tier"]], tags=[merged["tags"]],
                entities=[merged["entities"]], sessions=[merged["session"]],
                supersedes=np.array([NO_MEMORY if merged["supersedes"] is None else merged["supersedes"]]),
                superseded_by=np.array([NO_MEMORY if merged["superseded_by"] is None else merged["superseded_by"]]),
            )
            if self._backend is not None:
                try:
                    revision = self._backend.replace(batch)
                except KeyError:  # forgotten (or purged) by another process since the refresh
                    self._data_version = -1
                    self._refresh()
                    raise
                self._wrote(revision)
            generation.tombstone(row)
            generation.append(batch)
            return self._memory_at(generation, generation.row_of[memory_id])

    def forget(self, memory_id: int, *, tenant: Optional[str] = None) -> bool:
        """Tombstone a memory: from now on no recall returns it, from any generator.

        Returns True if it was live, False if it had already been forgotten. The row leaves the
        in-memory indexes at the next :meth:`compact`; the text stays in the SQLite file (as a
        tombstone) until ``compact(purge=True)``. ``tenant`` scopes the call as in :meth:`get`; with it,
        an already forgotten id raises ``KeyError`` (its tenant can no longer be checked).

        Raises
        ------
        KeyError
            If there is no memory with this id (for this tenant).
        """
        memory_id = check_memory_id(memory_id)
        tenant = None if tenant is None else check_tenant(tenant)
        with self._lock:
            self._check_open()
            self._refresh()
            if memory_id in self._forgotten and tenant is None:
                return False
            if memory_id in self._forgotten:
                msg = f"no memory with id {memory_id} for tenant {tenant!r}"
                raise KeyError(msg)
            row = self._live_row(memory_id, tenant)
            was_live = True
            if self._backend is not None:
                revision = self._backend.tombstone(memory_id)
                if revision is None:  # another process forgot it after the refresh
                    was_live = False
                    self._data_version = -1
                else:
                    self._wrote(revision)
            self._forget_row(memory_id, row)
            return was_live

    def compact(self, *, purge: bool = False) -> int:
        """Rebuild the in-memory indexes (embedding matrix, BM25, postings) without tombstones.

        Ids do not change. Recalls running meanwhile keep using the old generation. It first
        applies what other stores committed (so it never keeps or purges on a stale view).

        Parameters
        ----------
        purge : bool, default False
            Also delete tombstoned rows from the SQLite file (their text and embedding); after
            that ``why_not`` reports them as ``not_found``. Other stores on the file learn of the
            purge from the file's purge epoch at their next call and forget, before answering,
            every memory the file no longer holds live (a forget stays final everywhere).

        Returns
        -------
        int
            Rows dropped from the in-memory indexes.
        """
        purge = _v.flag(purge, "purge")
        with self._lock:
            self._check_open()
            self._refresh()  # never drop (or purge) on a stale view of the file
            if purge and self._backend is not None:
                purged, epoch = self._backend.purge_tombstones()
                # Rows another process tombstoned after the refresh were purged too: forget them now
                # (no later revision scan can see a deleted row).
                for memory_id in purged:
                    row = self._generation.row_of.get(memory_id)
                    if row is not None:
                        self._forget_row(memory_id, row)
                self._forgotten.difference_update(purged)
                if epoch is not None and epoch == self._purge_epoch + 1:
                    self._purge_epoch = epoch  # else another store purged too: the next refresh reconciles
                self._data_version = -1
            elif purge:
                self._forgotten.clear()
            old = self._generation
            n = old.n
            rows = np.flatnonzero(old.live.buffer[:n])
            fresh = Generation(self._dim, self._params)
            if rows.size:
                fresh.append(RowBatch(
                    ids=old.ids.buffer[rows].copy(),
                    tenants=[old.tenant_names[c] for c in old.tenant_codes.buffer[rows].tolist()],
                    texts=[old.texts[r] for r in rows.tolist()],
                    embeddings=old.embeddings.buffer[rows].copy(),
                    created_at=old.created_at.buffer[rows].copy(),
                    last_access=old.last_access.buffer[rows].copy(),
                    recall_count=old.recall_count.buffer[rows].copy(),
                    importance=old.importance.buffer[rows].copy(),
                    storage_strength=old.storage_strength.buffer[rows].copy(),
                    valence=old.valence.buffer[rows].copy(),
                    tiers=[TIERS[c] for c in old.tier_codes.buffer[rows].tolist()],
                    tags=[old.tags[r] for r in rows.tolist()],
                    entities=[old.entities[r] for r in rows.tolist()],
                    sessions=[old.sessions[r] for r in rows.tolist()],
                    supersedes=old.supersedes.buffer[rows].copy(),
                    superseded_by=old.superseded_by.buffer[rows].copy(),
                ))
                fresh.lexical.build_now(fresh.texts, fresh.n)
            self._generation = fresh
            return int(n - rows.size)

    # ------------------------------------------------------------------ recall
    def _cue(
        self,
        cue_text: Optional[str],
        cue_vector_value: Optional[np.ndarray],
        *,
        mode: str,
        tenant: str,
        required_tags: Optional[Iterable[str]],
        tier_mask: Optional[Iterable[str]],
        valence_window: Optional[tuple[float, float]],
        min_importance: Optional[float],
        at_time: Optional[float],
        cue_tags: Optional[Iterable[str]],
        cue_entities: Optional[Iterable[str]],
        cue_valence: Optional[float],
        cue_time: Optional[float],
    ) -> tuple[Cue, GateSpec]:
        if cue_text is not None:
            check_text(cue_text, "cue_text")
        if cue_vector_value is None and cue_text is not None and self._embedder is not None:
            cue_vector_value = self._embedded_texts([cue_text], "cue_vector", queries=True)[0]
        if cue_vector_value is not None:
            vector: Optional[np.ndarray] = cue_vector(cue_vector_value, self._dim)
        elif mode != KEYWORD_MODE:
            msg = (f"cue_vector is required in mode {mode!r} (the dense generator and every candidate's "
                   f"cosine read it); pass it, build the store with an embedder, or use "
                   f"mode={KEYWORD_MODE!r} to recall on cue_text alone")
            raise ValueError(msg)
        elif not cue_text:
            msg = f"a mode={KEYWORD_MODE!r} recall without cue_vector needs a non-empty cue_text"
            raise ValueError(msg)
        else:
            vector = None
        at = time.time() if at_time is None else check_timestamp(at_time, "at_time")
        required = frozenset(check_labels(required_tags, "required_tags"))
        gates = GateSpec(
            tenant=check_tenant(tenant),
            tier_mask=check_tier_mask(tier_mask),
            required_tags=required,
            valence_window=check_valence_window(valence_window),
            min_importance=None if min_importance is None else check_importance(min_importance, "min_importance"),
        )
        cue = Cue(
            text=cue_text,
            vector=vector,
            tags=frozenset(check_labels(cue_tags, "cue_tags")) | required,
            entities=frozenset(check_labels(cue_entities, "cue_entities")),
            infer_entities=cue_entities is None,
            valence=None if cue_valence is None else check_valence(cue_valence, "cue_valence"),
            time=at if cue_time is None else check_timestamp(cue_time, "cue_time"),
            at_time=at,
        )
        return cue, gates

    def _score(self, snapshot: Snapshot, cue: Cue, gates: GateSpec, mode: str, k: int) -> _Scored:
        return recall_trace(snapshot, cue, gates, mode, k, self._params, self._link_index, self._fusion_params)

    def _hits(self, scored: _Scored, positions: Sequence[int], ranks: dict[int, dict[str, int]]) -> tuple[Hit, ...]:
        """Hits with full provenance for the given positions of ``scored.order`` (the returned k, or
        one memory for ``why_not``): the factor columns are gathered in one step for all of them."""
        snapshot, f = scored.snapshot, scored.factors
        where = np.asarray(positions, dtype=np.int64)
        at = scored.order[where]
        rows = f.rows[at]
        # float64 columns in ScoreFactors' field order (``durable`` is the one bool, read apart),
        # gathered for the hits before they are stacked
        if f.matrix is not None:
            values = f.matrix[_FACTOR_MATRIX_ROWS[:, None], at].T.tolist()
        else:
            values = np.stack([getattr(f, name)[at] for name in _FACTOR_COLUMNS], axis=1).tolist()
        if f.cosine_pending:  # the cosine is provenance only: taken for these hits alone
            cosine, sim = hit_cosine(snapshot, scored.cue, rows, self._params)
            for j, (cos, s) in enumerate(zip(cosine.tolist(), sim.tolist())):
                values[j][_COSINE_COLUMN] = cos
                values[j][_SIM_COLUMN] = s
        durable = f.durable[at].tolist()
        ranking_scores = scored.ranking_scores[where].tolist()
        ids, created = snapshot.ids[rows].tolist(), snapshot.created_at[rows].tolist()
        counts, replaced_by = snapshot.recall_count[rows].tolist(), snapshot.superseded_by[rows].tolist()
        tenant_codes = snapshot.tenant_codes[rows].tolist()
        texts, tenant_names, at_time, rerank = snapshot.generation.texts, snapshot.generation.tenant_names, \
            scored.cue.at_time, scored.rerank
        reserved = scored.reserved
        hits = []
        for j, (position, i, row) in enumerate(zip(positions, at.tolist(), rows.tolist())):
            factor_values = values[j]
            factor_values.insert(_DURABLE_FIELD, durable[j])
            by_field = dict(zip(_SCORE_FACTOR_FIELDS, factor_values))
            factors = _frozen(ScoreFactors, by_field)
            admitted = ranks.get(row, {})
            hits.append(_frozen(Hit, {
                "id": ids[j],
                "rank": position + 1,
                "score": ranking_scores[j],
                "fused_score": factors.score,
                "rerank_score": ranking_scores[j] if rerank else None,
                "text": texts[row],
                "tenant": tenant_names[tenant_codes[j]],
                "factors": factors,
                "dominant_factor": dominant_factor(by_field),
                "weakest_factor": weakest_factor(by_field),
                # ranks_for fills each row's dict in GENERATORS order, one dict per row
                "admitted_by": MappingProxyType(admitted),
                "age_days": max(at_time - created[j], 0.0) / SECONDS_PER_DAY,
                "recall_count": counts[j],
                "reserved_slot": i in reserved,
                "superseded_by": None if replaced_by[j] == NO_MEMORY else replaced_by[j],
            }))
        return tuple(hits)

    def recall(
        self,
        cue_text: Optional[str],
        cue_vector: Optional[np.ndarray] = None,
        k: int = DEFAULT_K,
        *,
        tenant: str = DEFAULT_TENANT,
        mode: str = DEFAULT_MODE,
        required_tags: Optional[Iterable[str]] = None,
        tier_mask: Optional[Iterable[str]] = None,
        valence_window: Optional[tuple[float, float]] = None,
        min_importance: Optional[float] = None,
        at_time: Optional[float] = None,
        cue_tags: Optional[Iterable[str]] = None,
        cue_entities: Optional[Iterable[str]] = None,
        cue_valence: Optional[float] = None,
        cue_time: Optional[float] = None,
        reinforce: bool = True,
        min_confidence: Optional[float] = None,
    ) -> RecallResult:
        """The ``k`` best memories of ``tenant`` for a cue, with provenance.

        Parameters
        ----------
        cue_text : str or None
            For the BM25 generator (None: BM25 admits nothing).
        cue_vector : (dim,) array, optional
            The cue's embedding (same model as the memories); also gives every candidate's sim.
            None: the store's embedder embeds ``cue_text``; without an embedder it is required
            except in ``keyword`` mode, where ``sim`` is then each candidate's BM25 score relative
            to the best candidate's (and ``factors.cosine`` holds that).
        k : int, default 10
        tenant : str, default "default"
            Only this tenant's memories are searched, scored or returned.
        mode : str, default "hybrid"
            ``hybrid`` (dense + BM25), ``vector`` (dense), ``keyword`` (BM25), ``full`` (all
            generators) or ``rerank`` (the ``full`` union reranked by CFS-R/CFS).
        required_tags : iterable of str, optional
            Gate: a memory must carry all of them. They also count as cue tags.
        tier_mask : iterable of str, optional
            Gate: allowed tiers (from :data:`fieldrank.memory.TIERS`).
        valence_window : (low, high), optional
            Gate: the memory's valence must lie in [low, high].
        min_importance : float, optional
            Gate: importance >= min_importance.
        at_time : float, optional
            Unix seconds the recall happens at (decay, ages, bookkeeping); default now.
        cue_tags, cue_entities : iterable of str, optional
            Soft signals: tag containment (factor and ``tag`` generator) and cue entities
            (graph activation).
        cue_valence : float in [-1, 1], optional
            Enables the valence alignment V.
        cue_time : float, optional
            Centre of the ``temporal`` generator; default ``at_time``.
        reinforce : bool, default True
            Apply the recall dynamics to the returned memories (and persist them). This
            bookkeeping never fails the read: with a file it waits at most 0.25 s for another
            writer's lock, and if it cannot be written (locked, read-only, disk full), the hits
            are returned, nothing changes in memory or in the file, ``reinforced`` is False on
            the result, a :class:`~fieldrank.memory.ReinforcementWarning` is issued and
            :attr:`reinforce_failures` counts it.
        min_confidence : float in [0, 1], optional
            Return only the hits whose ``confidence`` (calibrated probability of being relevant,
            :class:`Hit`) is at least this: fewer than k, possibly none. Needs the cue text and vector.

        Returns
        -------
        RecallResult
        """
        check_positive_int(k, "k")
        check_mode(mode)
        reinforce = _v.flag(reinforce, "reinforce")
        cue, gates = self._cue(
            cue_text, cue_vector, mode=mode, tenant=tenant, required_tags=required_tags, tier_mask=tier_mask,
            valence_window=valence_window, min_importance=min_importance, at_time=at_time, cue_tags=cue_tags,
            cue_entities=cue_entities, cue_valence=cue_valence, cue_time=cue_time,
        )
        with self._lock:
            self._check_open()
            self._refresh()
            snapshot = self._generation.snapshot()
        scored = self._score(snapshot, cue, gates, mode, k)
        top = min(k, scored.order.size)
        ranks = scored.admissions.ranks_for(scored.factors.rows[scored.order[:top]].tolist())
        hits = self._hits(scored, range(top), ranks)
        # Defence in depth: a memory appears at most once (an update mid-recall cannot duplicate it).
        seen: set[int] = set()
        unique_hits = []
        for hit in hits:
            if hit.id not in seen:
                seen.add(hit.id)
                unique_hits.append(hit)
        unique_hits = list(_hit_confidence.annotate(unique_hits, cue.text, cue.vector is not None, min_confidence))
        # The bookkeeping never fails the read: if it cannot be written, the hits come back unreinforced.
        reinforced = reinforce and (not unique_hits or self._reinforce([hit.id for hit in unique_hits], cue.at_time))
        generators = MODE_GENERATORS[mode]
        return RecallResult(
            hits=tuple(unique_hits),
            mode=mode,
            tenant=gates.tenant,
            k=k,
            admitted=MappingProxyType({g: snapshot.ids[scored.admissions.by_generator.get(g, np.empty(0, np.int64))]
                                       for g in generators}),
            candidate_ids=np.sort(snapshot.ids[scored.factors.rows]),
            quotas=self._mode_quotas(mode),
            reinforced=reinforced,
        )

    def _mode_quotas(self, mode: str) -> Mapping:
        """The quotas of ``mode``'s generators (read-only, shared by its recalls: the params never change)."""
        quotas = self._quotas_by_mode.get(mode)
        if quotas is None:
            quotas = self._quotas_by_mode[mode] = MappingProxyType(
                {g: self._params.quota(g) for g in MODE_GENERATORS[mode]})
        return quotas

    def _reinforce(self, memory_ids: list[int], at_time: float) -> bool:
        """Recall dynamics for the returned memories (see :mod:`._scoring`), persisted atomically.

        With a file, the file does the arithmetic (``recall_count = recall_count + 1``, S grows
        by the gain, ``last_access`` only moves forward, links ``w += rate · (1 − w)``) in one
        transaction, and the values after it are copied back: concurrent recalls of several
        processes never lose an update. Nothing in memory changes before that commit succeeded.

        Returns whether the bookkeeping is in effect. The write waits at most
        ``REINFORCE_BUSY_TIMEOUT_MS`` (0.25 s) for another writer's lock; if it cannot commit
        (locked, read-only, disk full, I/O error), nothing is written or changed, a
        :class:`ReinforcementWarning` names the file and the cause, and False is returned: the
        recall still returns its hits (``RecallResult.reinforced`` is False).
        """
        params = self._params
        with self._lock:
            if self._closed:
                return False
            generation = self._generation
            live_ids, rows = [], []
            for memory_id in memory_ids:
                row = generation.row_of.get(memory_id)
                if row is None or not generation.live.buffer[row]:
                    continue  # forgotten meanwhile
                live_ids.append(memory_id)
                rows.append(row)
            # The returned memories are distinct: their updates are independent, one vectorised step.
            at = np.asarray(rows, dtype=np.int64)
            last = generation.last_access.buffer[at]
            storage = generation.storage_strength.buffer[at]
            gains = params.storage_gain * (1.0 - retrieval_strength(last, storage, at_time, params))
            link_rows: list[tuple[int, int, float]] = []
            changed: dict[int, dict[int, float]] = {}
            if params.hebbian_rate > 0:
                rate = params.hebbian_rate
                # every returned memory's links as they were before this recall (the loop writes
                # to `changed` only), looked up once each rather than once per pair
                empty: dict[int, float] = {}
                before = {a: self._links.get(a, empty) for a in live_ids}
                for i, a in enumerate(live_ids):
                    for b in live_ids[i + 1:]:
                        low, high = (a, b) if a < b else (b, a)
                        weight = before[low].get(high, 0.0)
                        weight += rate * (1.0 - weight)
                        changed.setdefault(low, {})[high] = weight
                        changed.setdefault(high, {})[low] = weight
                        link_rows.append((low, high, rate))
            if self._backend is None:
                generation.storage_strength.buffer[at] = storage + gains
                generation.last_access.buffer[at] = np.maximum(last, at_time)
                generation.recall_count.buffer[at] = np.minimum(generation.recall_count.buffer[at] + 1,
                                                                RECALL_COUNT_RANGE[1])
                self._set_links(changed)
                return True
            if not live_ids:
                return True
            updates = [(float(at_time), gain, memory_id) for gain, memory_id in zip(gains.tolist(), live_ids)]
            try:
                after = self._backend.reinforce(updates, link_rows)
            except StoreIOError as error:
                self._reinforce_failures += 1
                warnings.warn(ReinforcementWarning(
                    f"recall returned its hits unreinforced: {error}"), stacklevel=3)
                return False
            for memory_id, (last_value, count, strength) in after.rows.items():
                row = generation.row_of.get(memory_id)
                if row is not None:
                    generation.last_access.buffer[row] = last_value
                    generation.recall_count.buffer[row] = count
                    generation.storage_strength.buffer[row] = strength
            written: dict[int, dict[int, float]] = {}
            for (low, high), weight in after.links.items():
                written.setdefault(low, {})[high] = weight
                written.setdefault(high, {})[low] = weight
            self._set_links(written)
            return True

    def _set_links(self, changed: dict[int, dict[int, float]]) -> None:
        """Apply new link weights, ``{memory: {neighbour: weight}}`` (both directions given; caller holds
        the lock). Copy-on-write: a recall iterating a neighbour dict never sees it change; one copy
        per memory, however many of its links changed."""
        for x, weights in changed.items():
            neighbours = dict(self._links.get(x, {}))
            neighbours.update(weights)
            self._links[x] = neighbours
        self._link_index.touched(changed)

    # ------------------------------------------------------------------ why not
    def why_not(
        self,
        memory_id: int,
        cue_text: Optional[str],
        cue_vector: Optional[np.ndarray] = None,
        k: int = DEFAULT_K,
        *,
        tenant: str = DEFAULT_TENANT,
        mode: str = DEFAULT_MODE,
        required_tags: Optional[Iterable[str]] = None,
        tier_mask: Optional[Iterable[str]] = None,
        valence_window: Optional[tuple[float, float]] = None,
        min_importance: Optional[float] = None,
        at_time: Optional[float] = None,
        cue_tags: Optional[Iterable[str]] = None,
        cue_entities: Optional[Iterable[str]] = None,
        cue_valence: Optional[float] = None,
        cue_time: Optional[float] = None,
    ) -> WhyNot:
        """Why ``memory_id`` is (not) among the hits of the same :meth:`recall` (no side effects).

        Checks, in order: not found; tombstoned; other tenant; gated (which gates); not admitted
        by any generator within its quota (with the rank it has in each generator); outranked
        (its rank, score, the k-th score and the margin); otherwise ``returned``.

        Notes
        -----
        A diagnostic for trusted callers: it says whether an id exists in another tenant.
        """
        memory_id = check_memory_id(memory_id)
        check_positive_int(k, "k")
        check_mode(mode)
        cue, gates = self._cue(
            cue_text, cue_vector, mode=mode, tenant=tenant, required_tags=required_tags, tier_mask=tier_mask,
            valence_window=valence_window, min_importance=min_importance, at_time=at_time, cue_tags=cue_tags,
            cue_entities=cue_entities, cue_valence=cue_valence, cue_time=cue_time,
        )
        with self._lock:
            self._check_open()
            self._refresh()
            snapshot = self._generation.snapshot()
            forgotten = memory_id in self._forgotten
        generators = MODE_GENERATORS[mode]
        quotas = MappingProxyType({g: self._params.quota(g) for g in generators})
        if forgotten:
            return WhyNot(memory_id, "tombstoned", f"memory {memory_id} was forgotten (tombstoned)", ("tombstone",),
                          quotas=quotas)
        row = snapshot.row_of(memory_id)
        if row is None:
            return WhyNot(memory_id, "not_found", f"no memory with id {memory_id}", quotas=quotas)
        failed = failed_gates(snapshot, row, gates)
        if "tombstone" in failed:
            return WhyNot(memory_id, "tombstoned", f"memory {memory_id} was forgotten (tombstoned)", failed,
                          quotas=quotas)
        if "tenant" in failed:
            detail = f"memory {memory_id} belongs to another tenant than {gates.tenant!r}"
            return WhyNot(memory_id, "other_tenant", detail, failed, quotas=quotas)
        if failed:
            detail = f"memory {memory_id} fails the gate(s) {', '.join(failed)}"
            return WhyNot(memory_id, "gated", detail, failed, quotas=quotas)
        scored = self._score(snapshot, cue, gates, mode, k)
        in_union = np.flatnonzero(scored.factors.rows == row)
        if in_union.size == 0:
            generator_ranks = MappingProxyType({
                g: generator_rank(g, snapshot, cue, scored.eligible, row, scored.admissions, scored.core, self._params)
                for g in generators
            })
            described = ", ".join(
                f"{g}: {'cannot admit it' if r is None else f'rank {r} > quota {quotas[g]}'}"
                for g, r in generator_ranks.items()
            )
            detail = f"memory {memory_id} was not admitted by any generator within its quota ({described})"
            return WhyNot(memory_id, "not_admitted", detail, generator_ranks=generator_ranks, quotas=quotas)
        position = int(np.flatnonzero(scored.order == in_union[0])[0])
        ranks = scored.admissions.ranks_for([row])
        hit = self._hits(scored, [position], ranks)[0]
        cutoff_position = min(k, scored.order.size) - 1
        cutoff = float(scored.ranking_scores[cutoff_position])
        generator_ranks = MappingProxyType({g: hit.admitted_by.get(g) for g in generators})
        if position < k:
            detail = f"memory {memory_id} is returned at rank {position + 1}"
            return WhyNot(memory_id, "returned", detail, generator_ranks=generator_ranks, quotas=quotas,
                          rank=position + 1, score=hit.score, cutoff_score=cutoff, hit=hit)
        if hit.score > cutoff:
            detail = (f"memory {memory_id} was admitted but displaced to rank {position + 1} > k={k} by a protected "
                      f"memory holding a reserved slot (score {hit.score:.4f} vs {cutoff:.4f} at rank {k})")
        else:
            detail = (f"memory {memory_id} was admitted but outranked: rank {position + 1} > k={k}, score "
                      f"{hit.score:.4f} vs {cutoff:.4f} at rank {k} (short by {cutoff - hit.score:.4f})")
        return WhyNot(memory_id, "outranked", detail, generator_ranks=generator_ranks, quotas=quotas,
                      rank=position + 1, score=hit.score, cutoff_score=cutoff, hit=hit)
