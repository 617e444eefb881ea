"""The test oracle of the lexical leg: BM25 built and scored by ``bm25s`` itself.

This is the code path the package used before it owned its tokenizer and build (bm25s.tokenize,
bm25s.BM25.index, neighbour-text expansion as a ``scipy.sparse`` sum of two bm25s matrices), kept
here so that every score of ``fieldrank.bm25`` and of the memory store is held to it bit for bit.
"""

from __future__ import annotations

from typing import Any, Optional

import bm25s
import numpy as np
import Stemmer

from fieldrank._lexical import context_token_ids as _context_token_ids
from fieldrank.bm25 import BM25Params


class Bm25sOracle:
    """bm25s over ``texts`` with ``params`` (expansion included, over ``sessions``: None = one session)."""

    def __init__(self, texts: list[str], params: BM25Params, sessions: Optional[Any] = None) -> None:
        self.params = params
        self.stemmer = Stemmer.Stemmer(params.stemmer_language) if params.stemmer_language else None
        tokenized = bm25s.tokenize(texts, **self._settings())
        self.vocab = dict(tokenized.vocab)
        self.ids = tokenized.ids
        self.retriever = self._build(tokenized.ids)
        if params.context_window > 0:
            keys = np.zeros(len(texts), dtype=np.int64) if sessions is None else np.asarray(sessions)
            context = self._build(_context_token_ids(tokenized.ids, keys, params.context_window))
            self._add_scaled(context, params.context_weight)

    def _settings(self) -> dict[str, Any]:
        p = self.params
        return {"lower": p.lowercase, "stopwords": p.stopwords, "stemmer": self.stemmer, "show_progress": False}

    def _build(self, ids: list[list[int]]) -> bm25s.BM25:
        p = self.params
        retriever = bm25s.BM25(k1=p.k1, b=p.b, delta=p.delta, method=p.method, backend="numpy")
        retriever.index((ids, dict(self.vocab)), show_progress=False)
        return retriever

    def _add_scaled(self, other: bm25s.BM25, weight: float) -> None:
        import scipy.sparse as sp

        a, b = self.retriever.scores, other.scores
        shape = (a["num_docs"], len(a["indptr"]) - 1)
        dtype = np.asarray(a["data"]).dtype
        combined = (sp.csc_matrix((a["data"], a["indices"], a["indptr"]), shape=shape)
                    + sp.csc_matrix((np.asarray(b["data"]) * dtype.type(weight), b["indices"], b["indptr"]),
                                    shape=shape)).tocsc()
        combined.sort_indices()
        self.retriever.scores = {"data": combined.data.astype(dtype), "indices": combined.indices,
                                 "indptr": combined.indptr, "num_docs": a["num_docs"]}
        if self.retriever.nonoccurrence_array is not None:
            self.retriever.nonoccurrence_array = (self.retriever.nonoccurrence_array
                                                  + dtype.type(weight) * other.nonoccurrence_array).astype(dtype)

    def tokens(self, queries: list[str]) -> list[list[str]]:
        return bm25s.tokenize(queries, return_ids=False, **self._settings())

    def scores(self, query: str) -> np.ndarray:
        known = [self.vocab[t] for t in self.tokens([query])[0] if t in self.vocab]
        if not known:
            return np.zeros(self.retriever.scores["num_docs"], dtype=np.float32)
        return np.asarray(self.retriever.get_scores_from_ids(known), dtype=np.float32)

    def entries(self) -> dict[tuple[str, int], float]:
        """(term, document) -> stored score: the matrix, independent of how terms are numbered."""
        m = self.retriever.scores
        return matrix_entries(m["data"], m["indices"], m["indptr"], self.vocab)


def matrix_entries(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
                   vocab: dict[str, int]) -> dict[tuple[str, int], float]:
    term_of = {i: t for t, i in vocab.items()}
    out = {}
    for column in range(len(indptr) - 1):
        for j in range(int(indptr[column]), int(indptr[column + 1])):
            out[(term_of[column], int(indices[j]))] = np.float32(data[j]).tobytes()
    return out
