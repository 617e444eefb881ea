"""Neighbour-text expansion (``BM25Params.context_window``; the notes of :mod:`fieldrank.bm25`): each
document's context document is its own tokens and its same-session neighbours'. One function for the
index build and the memory store's re-expansion."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

import numpy as np

__all__ = ["check_sessions", "context_token_ids"]


def check_sessions(sessions: object, n_docs: int) -> np.ndarray:
    """Session key per document (int64, (N,)) from an array or a Timeline; None: one session."""
    if sessions is None:
        return np.zeros(n_docs, dtype=np.int64)
    keys = getattr(sessions, "session", sessions)  # a fieldrank.temporal.Timeline gives its keys
    keys = np.asarray(keys)
    if keys.shape != (n_docs,) or keys.dtype.kind not in "iu":
        msg = (
            f"sessions must be a Timeline or an integer array with one key per text ({n_docs},), "
            f"got dtype {keys.dtype} and shape {keys.shape}"
        )
        raise ValueError(msg)
    return keys.astype(np.int64, copy=False)


def context_token_ids(token_ids: Any, sessions: Any, window: int,
                       docs: Optional[Iterable[int]] = None) -> list[list[int]]:
    """Context document of each document: its own tokens, then those of its same-session
    neighbours ``i - 1, i + 1, …, i - window, i + window``.

    ``docs`` (positions into ``token_ids``) computes the context documents of those documents
    only, in that order (the memory store re-expands the few documents an addition or a
    forget changes); None: every document. ``token_ids`` and ``sessions`` only need ``len`` and
    indexing.
    """
    n = len(token_ids)
    out = []
    for i in (range(n) if docs is None else docs):
        tokens = list(token_ids[i])
        for distance in range(1, window + 1):
            for j in (i - distance, i + distance):
                if 0 <= j < n and sessions[j] == sessions[i]:
                    tokens.extend(token_ids[j])
        out.append(tokens)
    return out
