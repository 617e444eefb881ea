"""Names, the :class:`Memory` record and the checks applied to everything a caller passes in.

The tuples here are the single source of the valid names (modes, generators, tiers, gates,
why-not reasons); error messages are generated from them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Optional

import numpy as np

from .. import _validation as _v

__all__ = [
    "DEFAULT_IMPORTANCE",
    "DEFAULT_MAX_TEXT_BYTES",
    "KEYWORD_MODE",
    "DEFAULT_MODE",
    "DEFAULT_STORAGE_STRENGTH",
    "DEFAULT_TENANT",
    "DEFAULT_TIER",
    "DEFAULT_VALENCE",
    "GATES",
    "GENERATORS",
    "MODES",
    "MODE_GENERATORS",
    "PROTECTING_MODES",
    "SECONDS_PER_DAY",
    "TIERS",
    "WHY_NOT_REASONS",
    "Memory",
]

#: Retrieval modes (SPEC §8).
MODES: tuple[str, ...] = ("hybrid", "vector", "keyword", "full", "rerank")
#: The one mode that runs on cue text alone (cue_vector optional).
KEYWORD_MODE = "keyword"
#: The default mode protects durable memories (its union holds the cue-conditioned protected tier).
DEFAULT_MODE = "hybrid"

#: Candidate generators, in the order they run. ``graph`` runs last: it expands the others.
#: ``relevance`` is the top of the ``default`` preset's scorer; ``importance`` is the protected
#: tier (durable memories) ranked by that scorer for the cue.
GENERATORS: tuple[str, ...] = ("relevance", "dense", "bm25", "tag", "temporal", "importance", "graph")
#: Modes whose union holds the protected tier, and which reserve a share of k for it.
PROTECTING_MODES: tuple[str, ...] = ("hybrid", "full", "rerank")
#: Which generators each mode runs. ``rerank`` builds the ``full`` union, then reranks it.
MODE_GENERATORS: dict[str, tuple[str, ...]] = {
    # The seed's HYBRID: the relevance core (the ``default`` scorer) plus the independent signals it
    # blends, dense and BM25, each with its own quota, and the protected tier: a memory that plain
    # cosine top-k or BM25 top-k would return is never lost before fusion (issue 24).
    "hybrid": ("relevance", "dense", "bm25", "importance"),
    "vector": ("dense",),
    "keyword": ("bm25",),
    "full": GENERATORS,
    "rerank": GENERATORS,
}

#: Memory tiers; ``tier_mask`` in a recall is a collection of these names.
TIERS: tuple[str, ...] = ("working", "episodic", "semantic", "core")
DEFAULT_TIER = "episodic"

#: Hard gates, in the order ``why_not`` checks them.
GATES: tuple[str, ...] = ("tombstone", "tenant", "tier", "required_tags", "valence_window", "min_importance")

#: What :meth:`MemoryStore.why_not` can answer.
WHY_NOT_REASONS: tuple[str, ...] = (
    "returned", "not_found", "tombstoned", "other_tenant", "gated", "not_admitted", "outranked",
)

DEFAULT_TENANT = "default"
DEFAULT_IMPORTANCE = 0.5
_REPR_TEXT_CHARS = 60  # longer texts are cut in Memory's repr
DEFAULT_VALENCE = 0.0
DEFAULT_STORAGE_STRENGTH = 1.0
SECONDS_PER_DAY = 86400.0
#: Largest memory text a store takes by default, in UTF-8 bytes (``MemoryStore(max_text_bytes=...)``):
#: every text is tokenised on open and by BM25, so one huge text slows every open and first recall.
DEFAULT_MAX_TEXT_BYTES = 256 * 1024

IMPORTANCE_RANGE = (0.0, 1.0)
VALENCE_RANGE = (-1.0, 1.0)
#: Recall counts are whole numbers in this range. The columns are float64 while checked, and
#: every integer above 2**53 − 1 converts to a float of at least 2**53, so the check is exact. A
#: recall saturates the count at the top. The API and the file check (``_file_check``) both use it.
RECALL_COUNT_RANGE = (0, 2**53 - 1)
#: Memory ids (and the next id) lie in [0, MEMORY_ID_LIMIT): far below int64's end, so that id
#: arithmetic never overflows, and exact in float64.
MEMORY_ID_LIMIT = 2**53


@dataclass(frozen=True, eq=False)
class Memory:
    """One stored memory, as :meth:`MemoryStore.get` returns it.

    Attributes
    ----------
    id : int
        Stable id (unchanged by :meth:`~MemoryStore.update` and :meth:`~MemoryStore.compact`).
    tenant : str
    text : str
    embedding : np.ndarray
        float32 (dim,), unit norm (a copy).
    created_at, last_access : float
        Unix seconds.
    recall_count : int
        How many recalls returned it.
    importance : float
        In [0, 1].
    storage_strength : float
        S >= 1; grows with recall, never decreases.
    valence : float
        In [-1, 1].
    tier : str
        One of :data:`TIERS`.
    tags, entities : tuple of str
        Sorted, without repeats.
    session : str or None
        Conversation/session the memory was said in (its same-session neighbours support it).
    supersedes : int or None
        Id of the memory this one replaced (``add(..., supersedes=id)``).
    superseded_by : int or None
        Id of the memory that replaced this one; a superseded memory always ranks below it.
    """

    id: int
    tenant: str
    text: str
    embedding: np.ndarray
    created_at: float
    last_access: float
    recall_count: int
    importance: float
    storage_strength: float
    valence: float
    tier: str
    tags: tuple[str, ...]
    entities: tuple[str, ...]
    session: Optional[str] = None
    supersedes: Optional[int] = None
    superseded_by: Optional[int] = None

    def __repr__(self) -> str:
        # The embedding is shown by its shape: 384 floats would bury the fields that matter.
        text = self.text if len(self.text) <= _REPR_TEXT_CHARS else self.text[: _REPR_TEXT_CHARS - 1] + "…"
        return (f"Memory(id={self.id}, tenant={self.tenant!r}, text={text!r}, tier={self.tier!r}, "
                f"importance={self.importance:g}, tags={self.tags!r}, "
                f"embedding=<float32 {self.embedding.shape}>)")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Memory):
            return NotImplemented
        return all(
            np.array_equal(getattr(self, f.name), getattr(other, f.name)) if f.name == "embedding"
            else getattr(self, f.name) == getattr(other, f.name)
            for f in fields(self)
        )

    __hash__ = None  # type: ignore[assignment]  # holds an array: compared by value, not hashable


# ---------------------------------------------------------------------------- input checks


def check_unicode(value: str, name: str) -> str:
    """A str that UTF-8 can encode: lone surrogates (``"\\ud800"``) cannot be stored in a file."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        msg = f"{name} must be valid Unicode text, got a lone surrogate at position {error.start}"
        raise ValueError(msg) from None
    return value


def check_text(value: object, name: str = "text") -> str:
    if not isinstance(value, str):
        msg = f"{name} must be a str, got {type(value).__name__}"
        raise TypeError(msg)
    return check_unicode(value, name)


def check_text_size(value: str, max_bytes: int, name: str = "text") -> str:
    """A memory's text of at most ``max_bytes`` bytes in UTF-8 (:data:`DEFAULT_MAX_TEXT_BYTES`)."""
    if len(value) * 4 > max_bytes:  # at most 4 bytes per character: only a long text is encoded
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            msg = (f"{name} is {size} bytes in UTF-8, more than the store's max_text_bytes={max_bytes} "
                   "(store a summary, or split it into several memories)")
            raise ValueError(msg)
    return value


def check_tenant(value: object, name: str = "tenant") -> str:
    if not isinstance(value, str):
        msg = f"{name} must be a str, got {type(value).__name__}"
        raise TypeError(msg)
    check_unicode(value, name)
    if not value:
        msg = f"{name} must be a non-empty str"
        raise ValueError(msg)
    return value


def check_real(value: object, name: str) -> float:
    return _v.real(value, name)


def check_in_range(value: object, name: str, low: float, high: float) -> float:
    return _v.real(value, name, low=low, high=high)


def check_importance(value: object, name: str = "importance") -> float:
    return check_in_range(value, name, *IMPORTANCE_RANGE)


def check_valence(value: object, name: str = "valence") -> float:
    return check_in_range(value, name, *VALENCE_RANGE)


def check_storage_strength(value: object, name: str = "storage_strength") -> float:
    return _v.real(value, name, low=1.0, note=" (S >= 1, SPEC §8)")


def check_tier(value: object, name: str = "tier") -> str:
    return str(_v.one_of(value, name, TIERS))


def check_labels(value: object, name: str) -> tuple[str, ...]:
    """Tags or entities: an iterable of non-empty str (not a bare str); returned sorted, unique."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        msg = f"{name} must be an iterable of str (a list, tuple or set), got {type(value).__name__}"
        raise TypeError(msg)
    labels = set()
    for item in value:
        if not isinstance(item, str):
            msg = f"{name} must contain only str, got {type(item).__name__}"
            raise TypeError(msg)
        if not item:
            msg = f"{name} must not contain the empty string"
            raise ValueError(msg)
        labels.add(check_unicode(item, name))
    return tuple(sorted(labels))


def check_timestamp(value: object, name: str) -> float:
    return check_real(value, name)


def check_memory_id(value: object, name: str = "memory_id") -> int:
    return _v.integer(value, name)


def check_positive_int(value: object, name: str) -> int:
    return _v.integer(value, name, low=0, low_open=True)


def check_mode(value: object) -> str:
    return str(_v.one_of(value, "mode", MODES))


def check_tier_mask(value: object) -> Optional[frozenset[str]]:
    if value is None:
        return None
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, Iterable):
        msg = f"tier_mask must be a collection of tier names from {TIERS}, got {type(value).__name__}"
        raise TypeError(msg)
    tiers = frozenset(value)
    unknown = sorted(str(t) for t in tiers - set(TIERS))
    if unknown:
        msg = f"tier_mask must contain only tiers from {TIERS}, got {unknown}"
        raise ValueError(msg)
    return tiers


def check_valence_window(value: object) -> Optional[tuple[float, float]]:
    if value is None:
        return None
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2:
        msg = f"valence_window must be a (low, high) pair, got {value!r}"
        raise TypeError(msg)
    low = check_valence(value[0], "valence_window[0]")
    high = check_valence(value[1], "valence_window[1]")
    if low > high:
        msg = f"valence_window must have low <= high, got ({low}, {high})"
        raise ValueError(msg)
    return low, high


def embedding_rows(value: object, dim: int, name: str = "embeddings") -> np.ndarray:
    """Convert embeddings to float32 C-order unit rows, once, on ingest.

    The owning layers' dtype policy (``fieldrank._validation``): any floating array (float16,
    float32, float64) or list of numbers is accepted and converted to float32; integer, bool,
    complex and object arrays raise ``TypeError``. Rows are L2-normalised. Rows with NaN/inf or
    zero norm raise ``ValueError`` naming the row.
    """
    array = np.asarray(value) if isinstance(value, (list, tuple)) else value
    if not isinstance(array, np.ndarray):
        msg = f"{name} must be a numpy array, got {type(value).__name__}"
        raise TypeError(msg)
    if isinstance(value, (list, tuple)) and array.dtype.kind in "iu":
        array = array.astype(np.float64)
    _v.check_floating_dtype(array, name)
    if array.ndim != 2 or array.shape[1] != dim:
        msg = f"{name} must have shape (n, {dim}), got {array.shape}"
        raise ValueError(msg)
    if array.dtype != np.float32:
        # Wider input is scaled by each row's largest magnitude (a power of two: exact) before the
        # cast, so that a finite float64 row of 1e300 — or of 1e-300 — becomes its unit vector
        # instead of inf or zeros (with a RuntimeWarning); the direction is what is stored.
        wide = array.astype(np.float64)
        finite = np.isfinite(wide).all(axis=1)
        with np.errstate(invalid="ignore"):
            peak = np.max(np.abs(np.where(finite[:, None], wide, 0.0)), axis=1, initial=0.0)
        exponent = np.frexp(np.where(peak > 0, peak, 1.0))[1]
        rows = np.ldexp(np.where(finite[:, None], wide, 0.0), -exponent[:, None]).astype(np.float32)
    else:
        rows = array
        finite = np.isfinite(rows).all(axis=1)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        msg = f"{name} must be finite, row {bad} is not"
        raise ValueError(msg)
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64))
    if rows.shape[0] and not (norms > 0).all():
        bad = int(np.flatnonzero(~(norms > 0))[0])
        msg = f"{name} rows must have a non-zero norm, row {bad} is the zero vector"
        raise ValueError(msg)
    # Divide in float64: a finite row whose norm passes the float32 range must not become zeros.
    return np.ascontiguousarray(rows / norms[:, None], dtype=np.float32)


def embedding_vector(vector: np.ndarray, dim: int, name: str) -> np.ndarray:
    """One 1-D embedding as a float32 unit vector; errors name ``name`` and its 1-D shape."""
    if vector.shape != (dim,):
        msg = f"{name} must have shape ({dim},) (the store's dim), got {vector.shape}"
        raise ValueError(msg)
    try:
        return embedding_rows(vector[None, :], dim, name)[0]
    except ValueError as error:  # the row-wise messages speak of "row 0": say it of the vector
        msg = str(error).replace(", row 0 is not", "").replace("rows must have a non-zero norm, row 0 is",
                                                                  "must have a non-zero norm, got")
        raise ValueError(msg) from None


def cue_vector(value: object, dim: int) -> np.ndarray:
    """The cue embedding as a float32 unit vector (converted once, like stored embeddings)."""
    if type(value) is np.ndarray and value.dtype == np.float32 and value.shape == (dim,):
        # The common cue (an embedder's float32 row): embedding_rows' arithmetic on it, its checks
        # read off the squared norm (finite and > 0 exactly when every entry is finite and one is
        # not zero); anything else takes the full path below, which names the problem.
        row = value[None, :]
        norm_sq = np.einsum("ij,ij->i", row, row, dtype=np.float64)
        if math.isfinite(norm_sq[0]) and norm_sq[0] > 0.0:
            return np.ascontiguousarray(row / np.sqrt(norm_sq)[:, None], dtype=np.float32)[0]
    array = np.asarray(value) if isinstance(value, (list, tuple)) else value
    if not isinstance(array, np.ndarray):
        msg = f"cue_vector must be a numpy array of shape ({dim},), got {type(value).__name__}"
        raise TypeError(msg)
    if array.ndim != 1:
        msg = f"cue_vector must be 1-D with shape ({dim},), got shape {array.shape}"
        raise ValueError(msg)
    if array.dtype.kind in "fiu" and array.shape == (dim,) and not np.any(array):
        msg = "cue_vector must have a non-zero norm, got the zero vector"
        raise ValueError(msg)
    return embedding_vector(array, dim, "cue_vector")
