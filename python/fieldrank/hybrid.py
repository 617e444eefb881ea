"""The hybrid retriever: weighted RRF of cosine, BM25 and a reranking leg (SPEC §6–§7).

:class:`HybridRetriever` holds a corpus (texts and an (N, d) float32 embedding matrix with
L2-normalised rows) and a :class:`~fieldrank.config.RetrieverConfig`, and answers a query
(its text and its embedding) with the fused top-k and, for every hit, where it came from:
its rank, raw score and RRF contribution in every leg and, for CFS-R, its coefficient.

How a query is computed
-----------------------
*Single query* (:meth:`HybridRetriever.search`). One cosine prefilter pass over ``E`` serves
every dense leg: it is run once at the largest depth any leg needs, and each leg takes a
prefix of it (the prefilter's order is total — score, then lower id — so a prefix of the
top-P is the top-p). The cosine leg is that prefix; CFS-R, CFS, MMR and Ring run their
``*_pool`` operator on the prefix's ids, the rows gathered from ``E`` and the prefix's
cosines. This is exactly what their corpus forms compute (which prefilter internally), minus
the extra passes over ``E``. BM25 is scored once, at the largest lexical depth, and sliced
likewise.

*Batches* (:meth:`HybridRetriever.search_batch`) call the native ``*_batch`` operators (one
query per thread, GIL released) and :meth:`fieldrank.bm25.BM25Index.top_batch`; their
results are identical to one-by-one :meth:`~HybridRetriever.search` (tested).

*Union pools* (``pool="union"`` on a CFS-R or CFS leg) rerank the sorted union of the dense
top-``p`` and the BM25 top-``union_p`` as a caller pool (vectors gathered from ``E``,
cosines computed by the operator).

*Subsets* restrict a query to some document ids (one conversation, one tenant) without
rebuilding anything: the dense legs use the operators' masked prefilter (``subset=``) and
BM25 its subset mask, so nothing outside the subset can appear in any leg.

Input conversion (done once, and only here)
-------------------------------------------
* ``embeddings`` of another real floating dtype are converted to float32 once at
  construction; with ``normalize=True`` the rows are L2-normalised (one copy), otherwise
  every row must already have unit norm (within :data:`UNIT_NORM_ATOL`).
* Query vectors of another floating dtype are converted to float32; with ``normalize=True``
  they are L2-normalised, otherwise they must have unit norm.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterator, NamedTuple, Optional, Union, overload

import numpy as np

from . import _validation as _v
from . import embed as _embed
from . import operators as ops
from . import temporal as _temporal
from ._results import SearchHit
from .bm25 import BM25Index
from .config import (
    POOL_UNION,
    BM25Leg,
    CFSLeg,
    CFSRLeg,
    ConfigLike,
    CosineLeg,
    Leg,
    MMRLeg,
    RetrieverConfig,
    RingLeg,
    TemporalLeg,
    resolve_config,
)
from .embed import Embedder

__all__ = ["UNIT_NORM_ATOL", "HybridRetriever", "LegHits", "SearchHit", "SearchResult"]


def __dir__() -> list[str]:
    return list(__all__)


#: Largest accepted deviation of a row or query norm from 1 when ``normalize=False``
#: (float32 rounding of unit vectors, and dequantised int8 embeddings, stay well inside it).
UNIT_NORM_ATOL = _v.UNIT_NORM_ATOL
_ID_DTYPE = np.int64
_SCORE_DTYPE = np.float64

SubsetLike = Union[np.ndarray, Sequence[int], None]


class _LegOutput(NamedTuple):
    """One leg's ranking for one query: ids best first, raw scores, CFS-R coefficients."""

    ids: np.ndarray
    scores: np.ndarray
    coef: Optional[np.ndarray]


@dataclass(frozen=True)
class LegHits:
    """One leg of a search: its own ranking, and its part in each fused hit.

    Attributes
    ----------
    name, kind : str
        The leg's label and kind (see :data:`fieldrank.config.LEG_KINDS`).
    weight : float
        Its RRF weight.
    ids, scores : np.ndarray
        The leg's own ranking (int64 ids best first, up to its depth) and raw scores
        (cosine; BM25; CFS-R's blended score; CFS/MMR objective; Ring's last-lap score).
    coef : np.ndarray or None
        CFS-R's raw coefficient of each id in ``ids``; None for other kinds.
    hit_rank : np.ndarray
        int64, one per fused hit: its 1-based rank in this leg, 0 if the leg did not return it.
    hit_score : np.ndarray
        float64, one per fused hit: its raw score in this leg, NaN if absent.
    hit_contribution : np.ndarray
        float64, one per fused hit: ``weight / (k0 + rank)``, 0 if absent. Summed over the
        legs (in leg order) this is the fused score.
    hit_coef : np.ndarray or None
        float64, one per fused hit: the CFS-R coefficient, NaN if absent; None for other kinds.
    """

    name: str
    kind: str
    weight: float
    ids: np.ndarray
    scores: np.ndarray
    coef: Optional[np.ndarray]
    hit_rank: np.ndarray
    hit_score: np.ndarray
    hit_contribution: np.ndarray
    hit_coef: Optional[np.ndarray]


def _leg_hits(leg: Leg, output: _LegOutput, hits: np.ndarray, k0: float) -> LegHits:
    """Where each fused hit sits in one leg (vectorised: hits x leg-depth comparisons)."""
    n_hits = hits.shape[0]
    rank = np.zeros(n_hits, dtype=_ID_DTYPE)
    score = np.full(n_hits, np.nan, dtype=_SCORE_DTYPE)
    contribution = np.zeros(n_hits, dtype=_SCORE_DTYPE)
    coef = None if output.coef is None else np.full(n_hits, np.nan, dtype=_SCORE_DTYPE)
    if n_hits and output.ids.shape[0]:
        match = hits[:, None] == output.ids[None, :]
        found = match.any(axis=1)
        position = match.argmax(axis=1)[found]
        rank[found] = position + 1
        score[found] = output.scores[position]
        contribution[found] = leg.weight / (k0 + rank[found])
        if coef is not None:
            coef[found] = output.coef[position]
    return LegHits(leg.name, leg.kind, leg.weight, output.ids, output.scores, output.coef,
                   rank, score, contribution, coef)


def _json_float(value: float) -> Optional[float]:
    return None if np.isnan(value) else float(value)


class SearchResult:
    """The fused top-k of one query, with the provenance of every hit.

    Attributes
    ----------
    ids : np.ndarray
        int64 document ids (positions in the retriever's corpus), best first.
    scores : np.ndarray
        float64 fused RRF scores, non-increasing (ties: lower id first).
    config : RetrieverConfig
        The configuration that produced the result.

    Notes
    -----
    The per-leg provenance (:attr:`legs`) is computed on first access, so a search that only
    needs ids pays nothing for it.
    """

    __slots__ = ("_corpus_texts", "_legs", "_outputs", "config", "ids", "scores")

    def __init__(self, ids: np.ndarray, scores: np.ndarray, outputs: Sequence[_LegOutput],
                 config: RetrieverConfig, corpus_texts: Sequence[str]) -> None:
        self.ids = ids
        self.scores = scores
        self.config = config
        self._outputs = tuple(outputs)
        self._corpus_texts = corpus_texts
        self._legs: Optional[tuple[LegHits, ...]] = None

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def _hit(self, position: int) -> SearchHit:
        doc = int(self.ids[position])
        return SearchHit(position + 1, doc, float(self.scores[position]), self._corpus_texts[doc])

    def __iter__(self) -> Iterator[SearchHit]:
        """The hits best first, each a :class:`SearchHit` ``(rank, id, score, text)``."""
        return (self._hit(i) for i in range(len(self)))

    @overload
    def __getitem__(self, index: int) -> SearchHit: ...
    @overload
    def __getitem__(self, index: slice) -> list[SearchHit]: ...
    def __getitem__(self, index: Union[int, slice]) -> Union[SearchHit, list[SearchHit]]:
        """``result[0]`` is the best hit; ``result[:3]`` a list of the first three."""
        if isinstance(index, slice):
            return [self._hit(i) for i in range(*index.indices(len(self)))]
        if not isinstance(index, (int, np.integer)) or isinstance(index, (bool, np.bool_)):
            msg = f"SearchResult indices must be integers or slices, got {type(index).__name__}"
            raise TypeError(msg)
        position = int(index) + len(self) if index < 0 else int(index)
        if not 0 <= position < len(self):
            msg = f"hit index {int(index)} out of range for a result of {len(self)} hits"
            raise IndexError(msg)
        return self._hit(position)

    def __repr__(self) -> str:
        return f"SearchResult(config={self.config.name!r}, ids={self.ids.tolist()})"

    @property
    def texts(self) -> list[str]:
        """The text of each hit, best first."""
        return [self._corpus_texts[i] for i in self.ids.tolist()]

    @property
    def legs(self) -> tuple[LegHits, ...]:
        """One :class:`LegHits` per leg of the configuration, in leg order."""
        if self._legs is None:
            self._legs = tuple(
                _leg_hits(leg, output, self.ids, self.config.k0)
                for leg, output in zip(self.config.legs, self._outputs)
            )
        return self._legs

    def leg(self, name: str) -> LegHits:
        """The :class:`LegHits` of the leg called ``name``.

        Raises
        ------
        KeyError
            If no leg has that name (the message lists the names).
        """
        for hits in self.legs:
            if hits.name == name:
                return hits
        msg = f"no leg named {name!r}; legs: {list(self.config.leg_names)}"
        raise KeyError(msg)

    def to_dict(self, *, include_text: bool = True) -> dict[str, Any]:
        """A JSON-ready dict: the hits (with per-leg provenance) and each leg's own ranking.

        Missing values (a hit absent from a leg) are ``None``.
        """
        legs = self.legs
        hits = []
        for j, doc_id in enumerate(self.ids.tolist()):
            per_leg = {}
            for leg in legs:
                entry: dict[str, Any] = {
                    "rank": int(leg.hit_rank[j]) or None,
                    "score": _json_float(leg.hit_score[j]),
                    "contribution": float(leg.hit_contribution[j]),
                }
                if leg.hit_coef is not None:
                    entry["coef"] = _json_float(leg.hit_coef[j])
                per_leg[leg.name] = entry
            hit: dict[str, Any] = {"rank": j + 1, "id": doc_id, "score": float(self.scores[j])}
            if include_text:
                hit["text"] = self._corpus_texts[doc_id]
            hit["legs"] = per_leg
            hits.append(hit)
        return {
            "config": self.config.name,
            "k0": self.config.k0,
            "hits": hits,
            "legs": [
                {
                    "name": leg.name,
                    "kind": leg.kind,
                    "weight": leg.weight,
                    "ids": leg.ids.tolist(),
                    "scores": [float(s) for s in leg.scores],
                    **({"coef": [float(c) for c in leg.coef]} if leg.coef is not None else {}),
                }
                for leg in legs
            ],
        }


def _check_text(text: object, name: str) -> str:
    if not isinstance(text, str):
        msg = f"{name} must be a str, got {type(text).__name__}"
        raise TypeError(msg)
    return text


def _as_float32(x: object, name: str, ndim: int) -> np.ndarray:
    """``x`` as a C-ordered float32 array, converting other real floating dtypes once."""
    arr = np.asarray(x) if not isinstance(x, np.ndarray) else x
    if arr.dtype != np.float32 and arr.dtype.kind == "f":
        arr = arr.astype(np.float32)
    return _v.float32_array(arr, name, ndim)


class HybridRetriever:
    """Texts and their embeddings, answering queries with a weighted-RRF stack.

    Parameters
    ----------
    texts : Sequence[str]
        The documents; document id = position.
    embeddings : np.ndarray, optional
        (N, d) with ``N == len(texts)``; float32 (other float dtypes are converted once),
        rows L2-normalised unless ``normalize=True``. The retriever keeps a reference to a
        float32 C-ordered array instead of copying it: do not modify it afterwards. None:
        ``embedder`` embeds the texts.
    config : RetrieverConfig, str, path, dict or None
        A config, a preset name (:data:`fieldrank.config.PRESET_NAMES`), a TOML file, a dict,
        or None for the ``default`` preset. See :func:`fieldrank.config.resolve_config`.
    normalize : bool, default False
        L2-normalise the rows (one copy) and every query vector. When False, rows and query
        vectors whose norm differs from 1 by more than :data:`UNIT_NORM_ATOL` are rejected.
    bm25_index : BM25Index, optional
        A prebuilt BM25 index over ``texts`` with ``config.bm25`` parameters (else built here,
        with the timeline's sessions for neighbour-text expansion).
    timeline : fieldrank.temporal.Timeline, optional
        Session keys, session dates and time cues of the documents, used by ``temporal`` legs
        and by BM25's neighbour-text expansion (``config.bm25.context_window``).
        Without one, documents in corpus order count as one session (neighbours) with time cues
        from ``texts`` and no session dates. Saved and reloaded by :meth:`save` / :meth:`load`.
    embedder : fieldrank.embed.Embedder, optional
        Embeds the texts when ``embeddings`` is None, and every query given as text only
        (``search("text")``), with the same model. Not saved by :meth:`save` (pass it to
        :meth:`load`).

    Raises
    ------
    TypeError
        On wrong types (texts not str, integer embeddings, ...).
    ValueError
        On mismatched lengths, non-finite or non-unit rows, an invalid config, or texts
        without any indexable token.

    Notes
    -----
    Thread-safety: read-only after construction; :meth:`search` and :meth:`search_batch` may
    be called from several threads.
    """

    #: The embedder of text-only queries (None: callers pass vectors); see ``embedder=``.
    _embedder = None

    def __init__(self, texts: Sequence[str], embeddings: Optional[np.ndarray] = None, config: ConfigLike = None, *,
                 normalize: bool = False, bm25_index: Optional[BM25Index] = None,
                 timeline: Optional[_temporal.Timeline] = None, embedder: Optional[Embedder] = None) -> None:
        from .bm25 import _check_texts

        docs = tuple(_check_texts(texts, "texts"))
        self._embedder = _embed.check_embedder(embedder)
        if embeddings is None:
            if self._embedder is None:
                msg = "pass the documents' embeddings, or an embedder= that makes them from the texts"
                raise ValueError(msg)
            embeddings = _embed.embed_documents(self._embedder, docs)
        E = _v.corpus(_as_float32(embeddings, "embeddings", 2), "embeddings")
        if E.shape[0] != len(docs):
            msg = f"embeddings must have one row per text: expected {len(docs)} rows, got shape {E.shape}"
            raise ValueError(msg)
        normalize = _v.flag(normalize, "normalize")
        E = _unit_rows(E, normalize)
        cfg = resolve_config(config)
        if timeline is not None and (not isinstance(timeline, _temporal.Timeline) or len(timeline) != len(docs)):
            msg = f"timeline must be a fieldrank.temporal.Timeline with one entry per text ({len(docs)})"
            raise ValueError(msg)
        if bm25_index is None:
            # The timeline's sessions bound BM25's neighbour-text expansion (config.bm25.context_window).
            bm25_index = BM25Index(docs, cfg.bm25, sessions=timeline)
        else:
            _check_bm25_index(bm25_index, len(docs), cfg)
        self._assemble(docs, E, cfg, bm25_index, normalize, timeline)

    def _assemble(self, texts: tuple[str, ...], E: np.ndarray, config: RetrieverConfig, bm25: BM25Index,
                  normalize: bool, timeline: Optional[_temporal.Timeline] = None) -> None:
        """Set the (already validated) parts and precompute the leg plan of ``config``."""
        self._texts = texts
        self._E = E
        self._bm25 = bm25
        self._normalize = normalize
        self._config = config
        self._timeline = timeline
        if timeline is None and any(isinstance(leg, TemporalLeg) for leg in config.legs):
            # Corpus order is the only chronology known: one session, time cues from the texts.
            self._timeline = _temporal.Timeline(session=np.zeros(len(texts), dtype=np.int64),
                                                cue=_temporal.time_cues(texts))
        self._given_timeline = timeline
        # Largest depth any leg needs from the shared cosine prefilter / the shared BM25 ranking.
        self._dense_depth = max((_prefilter_depth(leg) for leg in config.legs), default=0)
        self._lexical_depth = max((_lexical_depth(leg) for leg in config.legs), default=0)

    @classmethod
    def _from_parts(cls, texts: tuple[str, ...], E: np.ndarray, config: RetrieverConfig, bm25: BM25Index,
                    normalize: bool, timeline: Optional[_temporal.Timeline] = None) -> HybridRetriever:
        obj = cls.__new__(cls)
        obj._assemble(texts, E, config, bm25, normalize, timeline)
        return obj

    # ---------------------------------------------------------------- properties
    def __len__(self) -> int:
        return len(self._texts)

    def __repr__(self) -> str:
        return (f"HybridRetriever(n_docs={len(self._texts)}, dim={self._E.shape[1]}, "
                f"config={self._config.name!r}, legs={list(self._config.leg_names)})")

    @property
    def config(self) -> RetrieverConfig:
        return self._config

    @property
    def texts(self) -> tuple[str, ...]:
        return self._texts

    @property
    def embeddings(self) -> np.ndarray:
        """The (N, d) float32 corpus matrix (a read-only view)."""
        view = self._E.view()
        view.flags.writeable = False
        return view

    @property
    def bm25(self) -> BM25Index:
        return self._bm25

    @property
    def timeline(self) -> Optional[_temporal.Timeline]:
        """The documents' timeline as given to the constructor (None: none given)."""
        return self._given_timeline

    @property
    def normalize(self) -> bool:
        return self._normalize

    @property
    def dim(self) -> int:
        return int(self._E.shape[1])

    def with_config(self, config: ConfigLike) -> HybridRetriever:
        """A retriever over the same corpus with another configuration.

        Shares the embeddings and, when the BM25 parameters are equal, the BM25 index (so
        this is cheap); otherwise the BM25 index is rebuilt with the new parameters.
        """
        cfg = resolve_config(config)
        bm25 = (self._bm25 if cfg.bm25 == self._bm25.params
                else BM25Index(self._texts, cfg.bm25, sessions=self._given_timeline))
        other = self._from_parts(self._texts, self._E, cfg, bm25, self._normalize, self._given_timeline)
        other._embedder = self._embedder
        return other

    @property
    def embedder(self) -> Optional[Embedder]:
        """The embedder of text-only queries, or None."""
        return self._embedder

    def with_embedder(self, embedder: Optional[Embedder]) -> HybridRetriever:
        """The same retriever (shared corpus) embedding text-only queries with ``embedder``."""
        embedder = _embed.check_embedder(embedder)
        if embedder is not None and embedder.dim != self.dim:
            msg = f"embedder makes {embedder.dim}-d vectors but the index holds {self.dim}-d embeddings"
            raise ValueError(msg)
        other = self.with_config(self._config)
        other._embedder = embedder
        return other

    # ---------------------------------------------------------------- persistence
    def save(self, directory: Union[str, os.PathLike[str]], *, overwrite: bool = False) -> None:
        """Write the index to ``directory``; see :mod:`fieldrank.persistence` for the format."""
        from .persistence import save_index

        save_index(self, directory, overwrite=overwrite)

    @classmethod
    def load(cls, directory: Union[str, os.PathLike[str]], *, mmap: bool = False,
             config: ConfigLike = None, verify: bool = True,
             embedder: Optional[Embedder] = None) -> HybridRetriever:
        """Read an index written by :meth:`save`.

        Parameters
        ----------
        directory : path
        mmap : bool, default False
            Memory-map the embeddings (read-only) instead of reading them into memory.
        config : optional
            Use this configuration instead of the saved one (the saved BM25 index is reused
            when its parameters match, else rebuilt).
        verify : bool, default True
            Check every file's sha256 against the manifest (sizes, shapes and dtypes are
            always checked).
        embedder : Embedder, optional
            Embeds text-only queries (same model as the saved embeddings).

        Raises
        ------
        fieldrank.persistence.IndexFormatError
            (a ValueError) for an unknown format version, a missing, truncated, corrupt or
            escaping (symlink) file, or inconsistent shapes. Nothing is half-loaded.
        FileNotFoundError
            If ``directory`` does not exist.
        """
        from .persistence import load_index

        parts = load_index(directory, mmap=mmap, verify=verify)
        retriever = cls._from_parts(parts.texts, parts.embeddings, parts.config, parts.bm25, parts.normalize,
                                    parts.timeline)
        retriever = retriever if config is None else retriever.with_config(config)
        return retriever if embedder is None else retriever.with_embedder(embedder)

    # ---------------------------------------------------------------- input checks
    def _query_vector(self, vector: object, name: str = "vector") -> np.ndarray:
        q = _as_float32(vector, name, 1)
        q = _v.query(q, self.dim, name, "embeddings")
        q64 = q.astype(np.float64)
        norm = float(np.sqrt(np.dot(q64, q64)))  # float64: a tiny finite query must not get norm 0
        if self._normalize:
            return (q64 / norm).astype(np.float32)
        if abs(norm - 1.0) > UNIT_NORM_ATOL:
            msg = (f"{name} must be L2-normalised (norm {norm:.6g}); normalise it or build the retriever "
                   "with normalize=True")
            raise ValueError(msg)
        return q

    def _query_matrix(self, vectors: object, name: str = "vectors") -> np.ndarray:
        Q = _as_float32(vectors, name, 2)
        Q = _v.queries(Q, self.dim, name, "embeddings")
        return _unit_or_normalised(Q, self._normalize, name,
                                   "normalise them or build the retriever with normalize=True")

    def _subset_ids(self, subset: SubsetLike, name: str = "subset") -> Optional[np.ndarray]:
        """A subset (int ids or a boolean mask of length N) as unique int64 ids, or None."""
        if subset is None:
            return None
        arr = np.asarray(subset)
        if arr.dtype == np.bool_:
            if arr.shape != (len(self._texts),):
                msg = f"{name} as a boolean mask must have shape ({len(self._texts)},), got {arr.shape}"
                raise ValueError(msg)
            arr = np.flatnonzero(arr)
        try:
            return _v.subset(arr, len(self._texts))
        except (ValueError, TypeError) as exc:
            msg = str(exc).replace("subset", name, 1)
            raise type(exc)(msg) from None

    def _check_query_inputs(self, has_text: bool, has_vector: bool, what: str) -> None:
        cfg = self._config
        if cfg.needs_vector and not has_vector:
            dense = [leg.name for leg in cfg.legs if leg.needs_vector]
            msg = (f"config {cfg.name!r} has dense legs {dense}: pass the query {what}, or use a lexical "
                   "configuration such as the 'bm25' preset")
            raise ValueError(msg)
        if cfg.needs_text and not has_text:
            lexical = [leg.name for leg in cfg.legs if leg.needs_text]
            msg = f"config {cfg.name!r} has lexical legs or union pools {lexical}: pass the query text"
            raise ValueError(msg)

    def _final_k(self, k: object) -> int:
        return self._config.k if k is None else _v.positive_int(k, "k")

    # ---------------------------------------------------------------- single query
    def search(self, text: Optional[str] = None, vector: Optional[np.ndarray] = None, k: Optional[int] = None, *,
               subset: SubsetLike = None) -> SearchResult:
        """Answer one query with the configured stack.

        Parameters
        ----------
        text : str, optional
            The query text (needed by BM25 legs and union pools).
        vector : np.ndarray, optional
            The query embedding, shape (d,) (needed by dense legs). None with an embedder:
            the embedder embeds ``text``.
        k : int, optional
            Hits to return (default: the config's ``k``). At most the number of distinct
            ids the legs return.
        subset : array of int ids or boolean mask (N,), optional
            Only these documents can be returned, by any leg.

        Returns
        -------
        SearchResult
            Fused ids and scores, and per-leg provenance.

        Raises
        ------
        ValueError, TypeError
            On a missing text/vector the configuration needs, a vector of the wrong length,
            not unit-norm or not finite, or a bad ``k``/``subset``.
        """
        if vector is None and text is not None and self._embedder is not None and self._config.needs_vector:
            vector = _embed.embed_query(self._embedder, _check_text(text, "text"))
        self._check_query_inputs(text is not None, vector is not None, "vector")
        cfg = self._config
        final_k = self._final_k(k)
        q = self._query_vector(vector) if cfg.needs_vector else None
        query_text = _check_text(text, "text") if cfg.needs_text else None
        sub = self._subset_ids(subset)
        outputs = self._legs_single(query_text, q, sub)
        fused = ops.rrf([out.ids for out in outputs], cfg.weights, final_k, k0=cfg.k0)
        return SearchResult(fused.ids, fused.scores, outputs, cfg, self._texts)

    def _legs_single(self, text: Optional[str], q: Optional[np.ndarray], sub: Optional[np.ndarray]) -> list[_LegOutput]:
        E = self._E
        pre = ops.prefilter(E, q, self._dense_depth, subset=sub) if self._dense_depth else None
        lex_ids = lex_scores = None
        if self._lexical_depth:
            lex_ids, lex_scores = self._bm25.top(text, self._lexical_depth, subset=sub)
        outputs = []
        for leg in self._config.legs:
            if isinstance(leg, CosineLeg):
                outputs.append(_LegOutput(pre.ids[: leg.depth], pre.scores[: leg.depth], None))
            elif isinstance(leg, BM25Leg):
                outputs.append(_LegOutput(lex_ids[: leg.depth], lex_scores[: leg.depth], None))
            elif isinstance(leg, TemporalLeg):
                outputs.append(self._temporal_leg(leg, [text], q[None, :], sub)[0])
            else:
                outputs.append(_rerank_on_pool(leg, E, q, pre, lex_ids))
        return outputs

    # ---------------------------------------------------------------- batches
    def search_batch(self, texts: Optional[Sequence[str]] = None, vectors: Optional[np.ndarray] = None,
                     k: Optional[int] = None, *, subset: SubsetLike = None,
                     subsets: Optional[Sequence[SubsetLike]] = None, n_threads: int = 0) -> list[SearchResult]:
        """Answer many queries at once; equal to ``[search(t, v, k, subset=...) ...]``.

        Native legs run through the ``*_batch`` operators (one query per thread, GIL
        released), BM25 through :meth:`BM25Index.top_batch`. Queries with per-query subsets
        are grouped by subset, so each distinct subset costs one batched call per leg.

        Parameters
        ----------
        texts : Sequence[str], optional
            One query text per query.
        vectors : np.ndarray, optional
            (B, d) query embeddings, row b for query b. None with an embedder: the embedder
            embeds ``texts``.
        k : int, optional
            Hits per query (default: the config's ``k``).
        subset : optional
            One subset (ids or boolean mask) applied to every query.
        subsets : Sequence, optional
            One subset per query (None: unrestricted); exclusive with ``subset``.
        n_threads : int, default 0
            Worker threads; ``<= 0`` means all cores. Results do not depend on it.

        Returns
        -------
        list of SearchResult
            One per query, in order.
        """
        cfg = self._config
        final_k = self._final_k(k)
        n_threads = _v.n_threads_value(n_threads)
        if vectors is None and texts is not None and self._embedder is not None and cfg.needs_vector:
            vectors = _embed.embed_queries(self._embedder, texts)
        self._check_query_inputs(texts is not None, vectors is not None, "vectors")
        Q = self._query_matrix(vectors) if cfg.needs_vector else None
        batch_texts = None
        if cfg.needs_text:
            from .bm25 import _check_texts

            batch_texts = _check_texts(texts, "texts")
        sizes = {len(x) for x in (batch_texts, Q) if x is not None}
        if len(sizes) > 1:
            msg = f"texts and vectors must describe the same queries, got {len(batch_texts)} texts and {len(Q)} vectors"
            raise ValueError(msg)
        n_queries = sizes.pop() if sizes else 0
        groups = self._subset_groups(n_queries, subset, subsets)

        per_query: list[Optional[list[_LegOutput]]] = [None] * n_queries
        for rows, sub in groups:
            group_Q = None if Q is None else (Q if len(rows) == n_queries else np.ascontiguousarray(Q[rows]))
            group_texts = None if batch_texts is None else [batch_texts[i] for i in rows]
            for row, outputs in zip(rows, self._legs_batch(group_texts, group_Q, len(rows), sub, n_threads)):
                per_query[row] = outputs
        if not n_queries:
            return []
        fused = ops.rrf_batch([[out.ids for out in outputs] for outputs in per_query], cfg.weights, final_k,
                              k0=cfg.k0)
        return [SearchResult(f.ids, f.scores, outputs, cfg, self._texts) for f, outputs in zip(fused, per_query)]

    def _subset_groups(self, n_queries: int, subset: SubsetLike,
                       subsets: Optional[Sequence[SubsetLike]]) -> list[tuple[list[int], Optional[np.ndarray]]]:
        """Query rows grouped by their (validated) subset: one group per distinct subset."""
        if subset is not None and subsets is not None:
            msg = "pass either subset (shared) or subsets (one per query), not both"
            raise ValueError(msg)
        if subsets is None:
            return [(list(range(n_queries)), self._subset_ids(subset))]
        if isinstance(subsets, np.ndarray) or not isinstance(subsets, Sequence):
            msg = f"subsets must be a sequence with one entry per query, got {type(subsets).__name__}"
            raise TypeError(msg)
        if len(subsets) != n_queries:
            msg = f"subsets must have one entry per query ({n_queries}), got {len(subsets)}"
            raise ValueError(msg)
        groups: dict[Optional[bytes], tuple[list[int], Optional[np.ndarray]]] = {}
        for row, raw in enumerate(subsets):
            ids = self._subset_ids(raw, f"subsets[{row}]")
            # The same set of ids always gives the same results, whatever its order.
            key = None if ids is None else np.sort(ids).tobytes()
            if key not in groups:
                groups[key] = ([], ids)
            groups[key][0].append(row)
        return list(groups.values())

    def _legs_batch(self, texts: Optional[list[str]], Q: Optional[np.ndarray], n_queries: int,
                    sub: Optional[np.ndarray], n_threads: int) -> list[list[_LegOutput]]:
        """Every leg's output for a group of queries sharing one subset, per query."""
        E = self._E
        legs = self._config.legs
        union_legs = [leg for leg in legs if getattr(leg, "pool", None) == POOL_UNION]
        # The shared prefilter is only needed by the cosine leg and by union pools; the other
        # dense legs prefilter inside their batch operator.
        pre_depth = max([leg.depth for leg in legs if isinstance(leg, CosineLeg)]
                        + [leg.p for leg in union_legs], default=0)
        pre = ops.prefilter_batch(E, Q, pre_depth, subset=sub, n_threads=n_threads) if pre_depth else None
        lexical = None
        if self._lexical_depth:
            lexical = self._bm25.top_batch(texts, self._lexical_depth, subset=sub, n_threads=n_threads)

        columns: list[list[_LegOutput]] = []
        for leg in legs:
            if isinstance(leg, CosineLeg):
                columns.append([_LegOutput(pre.ids[b, : leg.depth], pre.scores[b, : leg.depth], None)
                                for b in range(n_queries)])
            elif isinstance(leg, BM25Leg):
                columns.append([_LegOutput(ids[: leg.depth], scores[: leg.depth], None) for ids, scores in lexical])
            elif isinstance(leg, TemporalLeg):
                columns.append(self._temporal_leg(leg, texts, Q, sub))
            elif getattr(leg, "pool", None) == POOL_UNION:
                columns.append(self._union_batch(leg, Q, pre, lexical, n_queries, n_threads))
            else:
                columns.append(_dense_batch(leg, E, Q, sub, n_threads))
        return [[column[b] for column in columns] for b in range(n_queries)]

    def _temporal_leg(self, leg: TemporalLeg, texts: list[str], Q: np.ndarray,
                      sub: Optional[np.ndarray]) -> list[_LegOutput]:
        """The time-aware leg for a group of queries (single queries are a group of one)."""
        lexical = np.stack([self._bm25.scores(t) for t in texts]) if leg.alpha > 0 else None
        r = _temporal.temporal_batch(self._E, Q, lexical, leg.depth, timeline=self._timeline, questions=texts,
                                     params=leg.params(), subset=sub)
        return [_LegOutput(r.ids[b], r.scores[b], None) for b in range(len(texts))]

    def _union_batch(self, leg: Union[CFSRLeg, CFSLeg], Q: np.ndarray, pre, lexical, n_queries: int,
                     n_threads: int) -> list[_LegOutput]:
        """Union-pool legs have no batch operator: per-query pool calls on a thread pool."""
        E = self._E

        def one(b: int) -> _LegOutput:
            pool_ids = np.union1d(pre.ids[b, : leg.p], lexical[b][0][: _union_depth(leg)])
            return _pool_call(leg, pool_ids, E[pool_ids], Q[b], None)

        workers = n_threads if n_threads > 0 else (os.cpu_count() or 1)
        if workers <= 1 or n_queries <= 1:
            return [one(b) for b in range(n_queries)]
        with ThreadPoolExecutor(max_workers=min(workers, n_queries)) as pool:
            return list(pool.map(one, range(n_queries)))


# ------------------------------------------------------------------ leg execution helpers
def _union_depth(leg: Union[CFSRLeg, CFSLeg]) -> int:
    return leg.p if leg.union_p is None else leg.union_p


def _prefilter_depth(leg: Leg) -> int:
    """Depth this leg needs from the shared cosine prefilter of a single query (0: none)."""
    if isinstance(leg, CosineLeg):
        return leg.depth
    if isinstance(leg, RingLeg):
        return leg.pool_depth
    if isinstance(leg, (CFSRLeg, CFSLeg, MMRLeg)):
        return leg.p
    return 0


def _lexical_depth(leg: Leg) -> int:
    """Depth this leg needs from the shared BM25 ranking (0: none)."""
    if isinstance(leg, BM25Leg):
        return leg.depth
    if getattr(leg, "pool", None) == POOL_UNION:
        return _union_depth(leg)
    return 0


def _pool_call(leg: Leg, ids: np.ndarray, C: np.ndarray, q: np.ndarray, sims: Optional[np.ndarray]) -> _LegOutput:
    """Run ``leg``'s operator on a caller pool (ids, their rows C, optional cosines)."""
    if isinstance(leg, CFSRLeg):
        r = ops.cfsr_pool(ids, C, q, leg.depth, sims=sims, **leg.operator_kwargs())
        return _LegOutput(r.ids, r.scores, r.coef)
    if isinstance(leg, CFSLeg):
        r = ops.cfs_pool(ids, C, q, leg.depth, sims=sims, **leg.operator_kwargs())
    elif isinstance(leg, MMRLeg):
        r = ops.mmr_pool(ids, C, q, leg.depth, sims=sims, **leg.operator_kwargs())
    elif isinstance(leg, RingLeg):
        r = ops.ring_pool(ids, C, q, leg.depth, sims=sims, **leg.operator_kwargs())
    else:  # pragma: no cover - the config only admits the kinds above here
        msg = f"leg kind {leg.kind!r} has no pool operator"
        raise ValueError(msg)
    return _LegOutput(r.ids, r.scores, None)


def _rerank_on_pool(leg: Leg, E: np.ndarray, q: np.ndarray, pre, lex_ids: Optional[np.ndarray]) -> _LegOutput:
    """A reranking leg of a single query, on a prefix of the shared prefilter (or a union pool)."""
    if getattr(leg, "pool", None) == POOL_UNION:
        pool_ids = np.union1d(pre.ids[: leg.p], lex_ids[: _union_depth(leg)])
        return _pool_call(leg, pool_ids, E[pool_ids], q, None)
    depth = _prefilter_depth(leg)
    ids = pre.ids[:depth]
    return _pool_call(leg, ids, E[ids], q, pre.scores[:depth])


def _dense_batch(leg: Leg, E: np.ndarray, Q: np.ndarray, sub: Optional[np.ndarray], n_threads: int) -> list[_LegOutput]:
    """A dense-pool reranking leg for a batch, through its native ``*_batch`` operator."""
    common = {"subset": sub, "n_threads": n_threads, **leg.operator_kwargs()}
    if isinstance(leg, CFSRLeg):
        r = ops.cfsr_batch(E, Q, leg.depth, p=leg.p, **common)
        return [_LegOutput(ids, scores, coef) for ids, scores, coef in zip(r.ids, r.scores, r.coef)]
    if isinstance(leg, CFSLeg):
        r = ops.cfs_batch(E, Q, leg.depth, p=leg.p, **common)
    elif isinstance(leg, MMRLeg):
        r = ops.mmr_batch(E, Q, leg.depth, p=leg.p, **common)
    elif isinstance(leg, RingLeg):
        r = ops.ring_batch(E, Q, leg.depth, **common)
    else:  # pragma: no cover
        msg = f"leg kind {leg.kind!r} has no batch operator"
        raise ValueError(msg)
    return [_LegOutput(ids, scores, None) for ids, scores in zip(r.ids, r.scores)]


def _unit_or_normalised(X: np.ndarray, normalize: bool, name: str, remedy: str) -> np.ndarray:
    """``X``'s rows scaled to unit norm (a new array) with ``normalize``; else ``X`` itself once
    every row has unit norm within UNIT_NORM_ATOL. Norms in float64: tiny finite rows keep one."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))
    if normalize:
        return np.ascontiguousarray((X / norms[:, None]).astype(np.float32))
    bad = np.flatnonzero(np.abs(norms - 1.0) > UNIT_NORM_ATOL)
    if bad.size:
        msg = f"{name} rows must be L2-normalised; row {bad[0]} has norm {norms[bad[0]]:.6g} ({remedy})"
        raise ValueError(msg)
    return X


def _unit_rows(E: np.ndarray, normalize: bool) -> np.ndarray:
    """Check (or, with ``normalize``, make) unit-norm, finite rows."""
    _v.check_rows_finite_nonzero(E, "embeddings")
    return _unit_or_normalised(E, normalize, "embeddings", "pass normalize=True to normalise them once")


def _check_bm25_index(index: object, n_docs: int, config: RetrieverConfig) -> None:
    if not isinstance(index, BM25Index):
        msg = f"bm25_index must be a BM25Index, got {type(index).__name__}"
        raise TypeError(msg)
    if len(index) != n_docs:
        msg = f"bm25_index must index the {n_docs} texts, got an index of {len(index)} documents"
        raise ValueError(msg)
    if index.params != config.bm25:
        msg = f"bm25_index was built with {index.params!r}, but the config asks for {config.bm25!r}"
        raise ValueError(msg)
