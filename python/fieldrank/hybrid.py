"""The hybrid retriever: the weighted RRF (docs/spec.md §6) of a configuration's legs.

A configuration is any tuple of legs (cosine, BM25, CFS-R, CFS, MMR, Ring, temporal; see
:mod:`fieldrank.config`); the ``default`` preset is the calibrated configuration shipped with the
package (at present a single temporal leg: BM25 + cosine blend with session and time priors),
and the ``rrf_*`` presets are the write-ups' stacks of cosine, BM25 (docs/spec.md §7) and a
reranking leg. :class:`HybridRetriever` holds a corpus (texts and an (N, d) float32 embedding matrix with
L2-normalised rows) and a :class:`~fieldrank.config.RetrieverConfig`, and answers a query
(its text and its embedding) with the fused top-k and, for every hit, where it came from:
its rank, raw score and RRF contribution in every leg and, for CFS-R, its coefficient.

How a query is computed
-----------------------
The configuration becomes a :class:`LegPlan`: one :class:`LegKind` of :data:`LEG_REGISTRY` per
leg, each declaring what it needs (depth of the shared cosine prefilter, of the shared BM25
ranking, every document's BM25 score, the timeline) and how it runs for a group of queries.
:meth:`HybridRetriever.search` runs the plan for a group of one, :meth:`~HybridRetriever.search_batch`
for each group of queries sharing a subset, and :func:`fieldrank.evaluation.calibrate.calibrate` runs the
same plan: the shared inputs are computed once per group (one prefilter pass at the largest depth
any leg takes — its order is total, so a prefix of the top-P is the top-p — one BM25 ranking at
the largest lexical depth), then every leg's ``run``. Dense-pool reranking legs rerank the
shared prefilter prefix for one query and run their native ``*_batch`` operator (rows read in
place, one query per thread) for a batch; the temporal leg is native (``_core.temporal_batch``).
Results of a batch are identical to one-by-one searches (tested). ``docs/design.md`` lists the
registry and the four places a new leg kind touches.

*Union pools* (``pool="union"`` on a CFS-R or CFS leg) rerank the sorted union of the dense
top-``p`` and the BM25 top-``union_p`` as a caller pool.

*Subsets* restrict a query to some document ids (one conversation, one tenant) without
rebuilding anything: every leg reads only the subset's rows, so nothing outside it can appear.

*Checked once.* The corpus is checked at construction, each query vector and subset once per
call; the layers below use trusted entry points that neither re-check nor copy ``E``.

Input conversion (done once, and only here)
-------------------------------------------
* ``embeddings`` of another real floating dtype are converted to float32 once at
  construction; with ``normalize=True`` the rows are L2-normalised (one copy), otherwise
  every row must already have unit norm (within :data:`UNIT_NORM_ATOL`).
* Query vectors of another floating dtype are converted to float32; with ``normalize=True``
  they are L2-normalised, otherwise they must have unit norm.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterator, NamedTuple, Optional, Union, overload

import numpy as np

from . import _confidence as _conf
from . import _core
from . import _validation as _v
from . import embed as _embed
from . import operators as ops
from . import temporal as _temporal
from ._api import public_dir
from ._results import Ranking, SearchHit
from ._validation import unit_or_normalised as _unit_or_normalised
from ._validation import unit_rows as _unit_rows
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

__all__ = ["LEG_REGISTRY", "UNIT_NORM_ATOL", "HybridRetriever", "LegHits", "LegKind", "LegPlan", "SearchHit",
           "SearchResult"]

__dir__ = public_dir(__all__)


#: Largest accepted deviation of a row or query norm from 1 when ``normalize=False``
#: (float32 rounding of unit vectors, and dequantised int8 embeddings, stay well inside it).
UNIT_NORM_ATOL = _v.UNIT_NORM_ATOL
_FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 2^-23
_FLOAT32 = np.dtype(np.float32)  # the native float32 dtype (an equal dtype that is another object takes the slow path)
_FLOAT32_STRIDE = (np.dtype(np.float32).itemsize,)  # a 1-D float32 array read in place
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


class _QueryEvidence(NamedTuple):
    """What a result's confidence reads of its query (see :mod:`fieldrank._confidence`)."""

    retriever: "HybridRetriever"
    text: Optional[str]
    vector: Optional[np.ndarray]   # (d,) unit float32
    subset: Optional[np.ndarray]   # sorted ids the query could see (None: every document)


def _result_confidence(ids: np.ndarray, scores: np.ndarray, config: RetrieverConfig,
                       query: Optional[_QueryEvidence]) -> np.ndarray:
    """Every hit's confidence (NaN without the query's vector and text)."""
    if query is None or query.vector is None or query.text is None:
        return np.full(ids.shape[0], np.nan)
    retriever = query.retriever
    terms = _conf.query_terms(retriever._bm25, query.text)
    f = _conf.features(retriever._E, query.vector, retriever._bm25, terms, ids, scores, query.subset)
    return _conf.confidence(f, config.confidence_model)


def _threshold(min_confidence: object) -> Optional[float]:
    """``min_confidence`` checked: None, or a float in [0, 1]."""
    return None if min_confidence is None else _v.real(min_confidence, "min_confidence", low=0.0, high=1.0)


def _cleared(results: list[SearchResult], threshold: Optional[float]) -> list[SearchResult]:
    """Each result cut to its hits whose confidence is at least ``threshold`` (checked already).

    Confidence need not fall with the rank: a result keeps its hits clearing the threshold, in
    rank order (so fewer than k, possibly none)."""
    if threshold is None:
        return results
    out = []
    for result in results:
        confidence = result.confidence
        if len(result) and np.isnan(confidence).any():
            msg = ("min_confidence needs the query text and vector (confidence reads both); pass them, or give "
                   "the retriever an embedder")
            raise ValueError(msg)
        keep = confidence >= threshold
        if keep.all():
            out.append(result)
            continue
        kept = SearchResult(result.ids[keep], result.scores[keep], result._outputs, result.config,
                            result._corpus_texts, result._query)
        kept._confidence = confidence[keep]
        out.append(kept)
    return out


def _json_float(value: float) -> Optional[float]:
    return None if np.isnan(value) else float(value)


class SearchResult:
    """The fused top-k of one query, with the provenance of every hit.

    Attributes
    ----------
    ids : np.ndarray
        int64 document ids (positions in the retriever's corpus), best first.
    scores : np.ndarray
        float64 fused scores in the ranking's order: the weighted RRF of the legs (non-increasing,
        ties: lower id first), or for a plan of one leg (the ``default`` preset) that leg's own
        scores, never a rank-only number.
    config : RetrieverConfig
        The configuration that produced the result.

    Notes
    -----
    The per-leg provenance (:attr:`legs`) and the :attr:`confidence` are computed on first
    access, so a search that only needs ids pays nothing for them.
    """

    __slots__ = ("_confidence", "_corpus_texts", "_legs", "_outputs", "_query", "config", "ids", "scores")

    def __init__(self, ids: np.ndarray, scores: np.ndarray, outputs: Sequence[_LegOutput],
                 config: RetrieverConfig, corpus_texts: Sequence[str], query: Optional[_QueryEvidence] = None
                 ) -> None:
        self.ids = ids
        self.scores = scores
        self.config = config
        self._outputs = tuple(outputs)
        self._corpus_texts = corpus_texts
        self._legs: Optional[tuple[LegHits, ...]] = None
        self._query = query
        self._confidence: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @property
    def confidence(self) -> np.ndarray:
        """float64 (k,): each hit's calibrated probability of being relevant (see
        :class:`SearchHit`), best hit first; NaN where the query had no vector or no text."""
        if self._confidence is None:
            self._confidence = _result_confidence(self.ids, self.scores, self.config, self._query)
        return self._confidence

    def _hit(self, position: int) -> SearchHit:
        doc = int(self.ids[position])
        return SearchHit(position + 1, doc, float(self.scores[position]), self._corpus_texts[doc],
                         float(self.confidence[position]))

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
            hit: dict[str, Any] = {"rank": j + 1, "id": doc_id, "score": float(self.scores[j]),
                                   "confidence": _json_float(self.confidence[j])}
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


class HybridRetriever:
    """Texts and their embeddings, answering queries with a weighted-RRF stack.

    Parameters
    ----------
    texts : Sequence[str]
        The documents; document id = position.
    embeddings : np.ndarray, optional
        (N, d) with ``N == len(texts)``; float32 (other float dtypes are converted once),
        rows L2-normalised unless ``normalize=True``. The retriever keeps a reference to a
        float32 C-ordered array instead of copying it: do not modify it afterwards (in
        place or not, it is the corpus: the BM25 index, the checks made at construction and the
        temporal leg's corpus moments, :meth:`prepare`, describe the rows as they were). None:
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

    A temporal leg over every document of a corpus of at least
    ``DEFAULTS["temporal_moments_min_rows_per_dim"]`` · d rows (the ``default`` preset) reads the
    corpus moments, computed once on the first such search (or by :meth:`prepare`) with every
    hardware thread (docs/design.md, "Temporal leg").
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
        E = _v.corpus(_v.floating_array(embeddings, "embeddings", 2), "embeddings")
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
        if timeline is None and any(LEG_REGISTRY[leg.kind].timeline for leg in config.legs):
            # Corpus order is the only chronology known: one session, time cues from the texts.
            self._timeline = _temporal.Timeline(session=np.zeros(len(texts), dtype=np.int64),
                                                cue=_temporal.time_cues(texts))
        self._given_timeline = timeline
        # The years the session dates span, for questions naming a month or day without a year.
        self._timeline_years = None
        if self._timeline is not None and self._timeline.time is not None:
            self._timeline_years = _temporal._years_spanned(self._timeline, None)
        # Leg plans by (clamped) k (a k above a leg's depth deepens it): built on first use, at most
        # _PLAN_CACHE_SIZE kept (least recently used dropped), so no sequence of k grows memory.
        self._plans: dict[object, LegPlan] = {}
        self._max_coverage = max((LEG_REGISTRY[leg.kind].coverage(leg) for leg in config.legs), default=0)
        self._default_plan: Optional[LegPlan] = None  # the plan for config.k, once built
        self._needs_vector = config.needs_vector
        self._needs_text = config.needs_text
        # The corpus moments of a temporal leg over every document: computed on its first search.
        self._moments = _CorpusMoments(E)
        # Per-query constants of the query check (_query_vector), computed once here.
        self._query_shape = (int(E.shape[1]),)
        self._float32_unit_check = not normalize and E.shape[1] * _FLOAT32_EPS < UNIT_NORM_ATOL / 4

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

    def prepare(self) -> "HybridRetriever":
        """Compute now what the first search would otherwise compute: the corpus moments of a
        temporal leg over every document (where the corpus has at least
        ``DEFAULTS["temporal_moments_min_rows_per_dim"]`` · d rows and the config has such a leg).

        Two passes over the embeddings on every hardware thread, O(N·d²): measured on two cores
        0.04 s for 20k rows and 0.21 s for 100k at d = 384, 0.16 s and 0.78 s at d = 768
        (docs/design.md).
        Idempotent and thread-safe; shared with :meth:`with_config` copies. Returns ``self``.
        """
        if self._uses_moments():
            self._moments.get()
        return self

    def _uses_moments(self) -> bool:
        """Whether a search over every document reads the corpus moments (a temporal leg, alpha < 1)."""
        if not moments_apply(*self._E.shape):
            return False
        return any(isinstance(leg, TemporalLeg) and _temporal_params(leg).alpha < 1.0 for leg in self._config.legs)

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
        other._moments = self._moments  # same rows, same moments (computed at most once)
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
    # Each query is checked once here (one float64 norm per vector serves the finite, non-zero,
    # float32-range and unit checks); the layers below trust it, as they trust the corpus.
    def _query_vector(self, vector: object, name: str = "vector") -> np.ndarray:
        """One query vector as a (1, d) float32 batch of one, unit norm (or normalised)."""
        if (type(vector) is np.ndarray and vector.dtype is _FLOAT32 and vector.shape == self._query_shape
                and vector.strides == _FLOAT32_STRIDE and vector.flags.aligned):
            q = vector  # the common case: what floating_array would return as is, without its steps
        else:
            q = _v.floating_array(vector, name, 1)
            if q.shape[0] != self.dim:
                _v.query(q, self.dim, name, "embeddings")  # raises the shared message
        if self._float32_unit_check:
            # The float32 dot is within d·2^-24·|q|² of |q|² (any summation order), far inside the
            # tolerance: a squared norm within 1 ± UNIT_NORM_ATOL is a norm within 1 ± UNIT_NORM_ATOL
            # whatever the rounding. NaN, inf and every other value take the float64 check below.
            if abs(float(q.dot(q)) - 1.0) <= UNIT_NORM_ATOL:
                return q[None, :]
        q64 = q.astype(np.float64)
        norm_sq = float(np.dot(q64, q64))  # float64: a tiny finite query must not get norm 0
        if not 0.0 < norm_sq <= _v.FLOAT32_MAX:
            _v.query(q, self.dim, name, "embeddings")  # raises: not finite, zero or too large
        norm = float(np.sqrt(norm_sq))
        if self._normalize:
            return (q64 / norm).astype(np.float32)[None, :]
        if abs(norm - 1.0) > UNIT_NORM_ATOL:
            msg = (f"{name} must be L2-normalised (norm {norm:.6g}); normalise it or build the retriever "
                   "with normalize=True")
            raise ValueError(msg)
        return q[None, :]

    def _query_matrix(self, vectors: object, name: str = "vectors") -> np.ndarray:
        Q = _v.floating_array(vectors, name, 2)
        if Q.shape[1] != self.dim:
            _v.queries(Q, self.dim, name, "embeddings")  # raises the shared message
        norms_sq = np.einsum("ij,ij->i", Q, Q, dtype=np.float64)
        if not bool(np.all((norms_sq > 0.0) & (norms_sq <= _v.FLOAT32_MAX))):
            _v.queries(Q, self.dim, name, "embeddings")  # raises: not finite, zero or too large
        return _unit_or_normalised(Q, self._normalize, name, "normalise them or build the retriever with normalize=True",
                                   norms=np.sqrt(norms_sq))

    def _subset_ids(self, subset: SubsetLike, name: str = "subset") -> Optional[np.ndarray]:
        """A subset (int ids or a boolean mask of length N) as sorted unique int64 ids, or None.

        Checked and sorted once per call: every leg then reads it as is (the operators' results do
        not depend on the order of a subset's ids).
        """
        ids = _v.subset(subset, len(self._texts), name, sort=True)
        # Every document (sorted unique ids 0 … N-1, an all-True mask) is no subset: the same path,
        # hence the same bits, as subset=None (the temporal leg's corpus moments included).
        if ids is not None and len(ids) == len(self._texts):
            return None
        return ids

    def _check_query_inputs(self, has_text: bool, has_vector: bool, what: str) -> None:
        cfg = self._config
        if self._needs_vector and not has_vector:
            dense = [leg.name for leg in cfg.legs if leg.needs_vector]
            msg = (f"config {cfg.name!r} has dense legs {dense}: pass the query {what}, or use a lexical "
                   "configuration such as the 'bm25' preset")
            raise ValueError(msg)
        if self._needs_text and not has_text:
            lexical = [leg.name for leg in cfg.legs if leg.needs_text]
            msg = f"config {cfg.name!r} has lexical legs or union pools {lexical}: pass the query text"
            raise ValueError(msg)

    def _final_k(self, k: object) -> int:
        return self._config.k if k is None else _v.positive_int(k, "k")

    # ---------------------------------------------------------------- single query
    def search(self, text: Optional[str] = None, vector: Optional[np.ndarray] = None, k: Optional[int] = None, *,
               subset: SubsetLike = None, min_confidence: Optional[float] = None) -> SearchResult:
        """Answer one query with the configured stack.

        Parameters
        ----------
        text : str, optional
            The query text (needed by BM25 legs and union pools).
        vector : np.ndarray, optional
            The query embedding, shape (d,) (needed by dense legs). None with an embedder:
            the embedder embeds ``text``.
        k : int, optional
            Hits to return (default: the config's ``k``). Exactly ``min(k, n)`` hits come back
            (n: the documents the query may see) whenever the config has a leg that can rank every
            document (cosine, temporal, the reranking legs): when ``k`` exceeds what every leg
            returns, the legs are deepened to ``k`` for this call (the first hits can then
            differ from a shallower search's, as with a larger RRF window elsewhere). BM25 only returns documents that share
            a term with the query, so a BM25-only configuration can return fewer. Time and memory are
            bounded by the corpus, whatever ``k`` (it is clamped to the corpus before anything is
            allocated; the ranking is the unclamped one).
        subset : array of int ids or boolean mask (N,), optional
            Only these documents can be returned, by any leg.
        min_confidence : float in [0, 1], optional
            Return only the hits whose ``confidence`` (the calibrated probability that the hit is
            relevant, :class:`SearchHit`) is at least this, in rank order: fewer than ``k`` hits,
            possibly none, when the memory holds nothing relevant enough. None: ``k`` hits, as
            without it. Needs the query text and vector (a ValueError otherwise). The ranking
            itself never depends on it.

        Returns
        -------
        SearchResult
            Fused ids and scores, per-leg provenance and each hit's confidence.

        Raises
        ------
        ValueError, TypeError
            On a missing text/vector the configuration needs, a vector of the wrong length,
            not unit-norm or not finite, or a bad ``k``/``subset``.
        """
        threshold = _threshold(min_confidence)
        checked_text = None  # the text is checked once, also when the embedder needs it first
        if vector is None and text is not None and self._embedder is not None and self._config.needs_vector:
            checked_text = _check_text(text, "text")
            vector = _embed.embed_query(self._embedder, checked_text)
        self._check_query_inputs(text is not None, vector is not None, "vector")
        cfg = self._config
        plan = self._default_plan if k is None else None  # any given k is checked (bool, 3.0: refused)
        if plan is None:
            plan = self._plan_for(self._final_k(k))
        Q = self._query_vector(vector) if self._needs_vector else None
        texts = [checked_text if checked_text is not None else _check_text(text, "text")] if self._needs_text else None
        sub = None if subset is None else self._subset_ids(subset)
        outputs = plan.run(self, texts, Q, 1, sub, 1)[0]
        ids, scores = plan.fuse_one(outputs, cfg.k0)
        result = SearchResult(ids, scores, outputs, cfg, self._texts, self._evidence(text, texts, Q, 0, sub))
        return result if threshold is None else _cleared([result], threshold)[0]

    def _evidence(self, text: Optional[str], texts: Optional[list[str]], Q: Optional[np.ndarray], row: int,
                  sub: Optional[np.ndarray]) -> _QueryEvidence:
        """What the confidence of query ``row`` reads (its text, vector and subset), checked once."""
        if texts is not None:
            text = texts[row]
        elif text is not None and not isinstance(text, str):
            text = None  # a configuration without lexical legs never reads the text; neither does confidence
        return _QueryEvidence(self, text, None if Q is None else Q[row], sub)

    # ---------------------------------------------------------------- batches
    def search_batch(self, texts: Optional[Sequence[str]] = None, vectors: Optional[np.ndarray] = None,
                     k: Optional[int] = None, *, subset: SubsetLike = None,
                     subsets: Optional[Sequence[SubsetLike]] = None, n_threads: int = 0,
                     min_confidence: Optional[float] = None) -> list[SearchResult]:
        """Answer many queries at once; equal to ``[search(t, v, k, subset=...) ...]``.

        The same leg plan as :meth:`search` runs once per group of queries sharing a subset:
        native legs through their ``*_batch`` operators (one query per thread, GIL released),
        BM25 through :meth:`BM25Index.top_batch`'s code. Queries with per-query subsets are
        grouped by subset, so each distinct subset costs one batched call per leg.

        Parameters
        ----------
        texts : Sequence[str], optional
            One query text per query.
        vectors : np.ndarray, optional
            (B, d) query embeddings, row b for query b. None with an embedder: the embedder
            embeds ``texts``.
        k : int, optional
            Hits per query (default: the config's ``k``; see :meth:`search`).
        subset : optional
            One subset (ids or boolean mask) applied to every query.
        subsets : Sequence, optional
            One subset per query (None: unrestricted); exclusive with ``subset``.
        n_threads : int, default 0
            Worker threads; ``<= 0`` means all cores. Results do not depend on it.
        min_confidence : float in [0, 1], optional
            Keep only the hits whose ``confidence`` is at least this (see :meth:`search`).

        Returns
        -------
        list of SearchResult
            One per query, in order.
        """
        cfg = self._config
        plan = self._plan_for(self._final_k(k))
        n_threads = _v.n_threads_value(n_threads)
        threshold = _threshold(min_confidence)
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
        query_subsets: list[Optional[np.ndarray]] = [None] * n_queries
        for rows, sub in groups:
            group_Q = None if Q is None else (Q if len(rows) == n_queries else np.ascontiguousarray(Q[rows]))
            group_texts = None if batch_texts is None else [batch_texts[i] for i in rows]
            for row, outputs in zip(rows, plan.run(self, group_texts, group_Q, len(rows), sub, n_threads)):
                per_query[row] = outputs
                query_subsets[row] = sub
        if not n_queries:
            return []
        fused = plan.fuse(per_query, cfg.k0, n_threads)
        evidence_texts = batch_texts
        if (evidence_texts is None and isinstance(texts, Sequence) and not isinstance(texts, str)
                and len(texts) == n_queries and all(isinstance(t, str) for t in texts)):
            evidence_texts = list(texts)  # read by confidence only, as search reads a dense-only plan's text
        results = [SearchResult(f.ids, f.scores, outputs, cfg, self._texts,
                                self._evidence(None, evidence_texts, Q, row, query_subsets[row]))
                   for row, (f, outputs) in enumerate(zip(fused, per_query))]
        return _cleared(results, threshold)

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
            # The same set of ids always gives the same results, whatever its order (ids are sorted).
            key = None if ids is None else ids.tobytes()
            if key not in groups:
                groups[key] = ([], ids)
            groups[key][0].append(row)
        return list(groups.values())

    def _plan_for(self, k: int) -> LegPlan:
        """The leg plan for ``k`` hits: the config's, deepened when no leg returns ``k`` ids.

        ``k`` is clamped to the corpus here, before anything is allocated (:class:`LegPlan`): a plan
        and a search cost what the corpus does, whatever ``k``; the rankings are those of the
        unclamped ``k`` (no search can return more than every document). Plans are cached by what
        they depend on (the clamped ``k``; past the corpus, which legs ``k`` deepens), at most
        :data:`_PLAN_CACHE_SIZE` of them, least recently used dropped first. Safe under concurrent
        searches: a race at worst builds an equal plan twice.
        """
        n_docs = len(self._texts)
        if k <= n_docs:
            key: object = k
        else:  # every k past the corpus with the same deepened legs gives the same plan
            key = ("past the corpus", k > self._max_coverage,
                   tuple(leg.depth >= k for leg in self._config.legs) if k > self._max_coverage else ())
        plans = self._plans
        plan = plans.pop(key, None)
        if plan is None:
            plan = LegPlan(self._config, k, n_docs)
        plans[key] = plan  # (re)inserted last: the most recently used
        while len(plans) > _PLAN_CACHE_SIZE:
            try:
                del plans[next(iter(plans))]
            except (KeyError, RuntimeError, StopIteration):  # another thread changed it meanwhile
                break
        if k == self._config.k:
            self._default_plan = plan
        return plan


# ------------------------------------------------------------------ the leg plan
#: Leg plans a retriever keeps (one per clamped k asked for; the default k's is kept apart).
_PLAN_CACHE_SIZE = 8

#: Rows per dimension from which the temporal leg over every document uses the corpus moments.
_MOMENTS_MIN_ROWS_PER_DIM = int(_core.DEFAULTS["temporal_moments_min_rows_per_dim"])


def moments_apply(n_rows: int, dim: int) -> bool:
    """Whether the temporal leg over every one of ``n_rows`` rows of dimension ``dim`` takes the
    corpus moments and the fp32 screen (below the threshold the double pass is as fast)."""
    return n_rows >= _MOMENTS_MIN_ROWS_PER_DIM * dim


class _CorpusMoments:
    """``_core.temporal_moments`` of a retriever's rows, computed on first use (thread-safe) and
    shared by :meth:`HybridRetriever.with_config` copies; a pickle carries the rows, not the moments."""

    __slots__ = ("_E", "_lock", "_value")

    def __init__(self, E: np.ndarray) -> None:
        self._E = E
        self._lock = threading.Lock()
        self._value: Optional[_core.NativeTemporalMoments] = None

    def get(self) -> _core.NativeTemporalMoments:
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:  # every hardware thread: the same bits for any count
                    self._value = _core.temporal_moments(self._E, 0)
                value = self._value
        return value

    def __getstate__(self) -> dict:
        return {"E": self._E}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["E"])


class _Group:
    """What the legs of one plan share for a group of queries (same subset): computed once each."""

    __slots__ = ("E", "Q", "lex_begin", "lex_depth", "lex_scores", "lex_top", "n", "n_threads", "pre", "pre_depth",
                 "rows", "sub", "texts", "timeline_features")

    def __init__(self, E: np.ndarray, texts: Optional[list[str]], Q: Optional[np.ndarray], n: int,
                 sub: Optional[np.ndarray], n_threads: int) -> None:
        self.E = E
        self.texts = texts
        self.Q = Q
        self.n = n
        self.sub = sub          # validated unique ids, sorted (None: every document)
        self.rows = sub
        self.n_threads = n_threads
        self.pre: Any = None    # shared cosine prefilter: one _LegOutput (1-D arrays) per query
        self.pre_depth = 0      # the depth it was computed at
        self.lex_depth = 0      # the depth of lex_top
        self.lex_top: Optional[list] = None      # shared BM25 top lists, one _LegOutput per query
        self.lex_scores: Optional[np.ndarray] = None  # (B, N) BM25 scores of every document
        self.lex_begin: Optional[int] = None  # lex_scores covers documents lex_begin.. only (None: all N)
        self.timeline_features: Any = None       # (intent, windows) of the query texts


class LegKind(NamedTuple):
    """One entry of the leg registry (:data:`LEG_REGISTRY`): what a kind needs and how it runs.

    dense_depth(leg, batched) : depth the kind takes from the shared cosine prefilter (0: none);
        a batch may prefilter inside the kind's own ``*_batch`` operator instead.
    lexical_depth(leg) : depth it takes from the shared BM25 top list (0: none).
    lexical_scores(leg) : whether it reads every document's BM25 score (the temporal blend).
    timeline : whether it reads the retriever's timeline.
    coverage(leg) : how many ids it returns at least (capped by the documents a query may see):
        what a ``k`` larger than every leg's coverage deepens.
    run(leg, retriever, group) : the kind's outputs, one :class:`_LegOutput` per query of the
        group; a single query is a group of one (``group.n == 1``).
    """

    dense_depth: Callable[[Any, bool], int]
    lexical_depth: Callable[[Any], int]
    lexical_scores: Callable[[Any], bool]
    timeline: bool
    coverage: Callable[[Any], int]
    run: Callable[[Any, "HybridRetriever", _Group], list]


def _union_depth(leg: Union[CFSRLeg, CFSLeg]) -> int:
    return leg.p if leg.union_p is None else leg.union_p


def _is_union(leg: Leg) -> bool:
    return getattr(leg, "pool", None) == POOL_UNION


def _run_cosine(leg: CosineLeg, retriever: HybridRetriever, g: _Group) -> list[_LegOutput]:
    depth = leg.depth
    if depth >= g.pre_depth:  # the whole shared prefilter (its rows are no longer than that)
        return g.pre
    return [_LegOutput(ids[:depth], scores[:depth], None) for ids, scores, _ in g.pre]


def _run_bm25(leg: BM25Leg, retriever: HybridRetriever, g: _Group) -> list[_LegOutput]:
    depth = leg.depth
    if depth >= g.lex_depth:  # the whole shared BM25 top list
        return g.lex_top
    return [_LegOutput(ids[:depth], scores[:depth], None) for ids, scores, _ in g.lex_top]


def _run_temporal(leg: TemporalLeg, retriever: HybridRetriever, g: _Group) -> list[_LegOutput]:
    timeline = retriever._timeline
    if g.timeline_features is None:
        rows = None if g.rows is None else g.rows
        span = retriever._timeline_years if rows is None else None
        g.timeline_features = _question_features(g.texts, timeline, rows, span)
    intent, windows = g.timeline_features
    params = _temporal_params(leg)
    blend = params.alpha > 0
    # Over every document of a large corpus the cosines' statistics come from the corpus moments
    # (the fp32 screen; over fewer rows than _MOMENTS_MIN_ROWS_PER_DIM·d the double pass is as fast).
    E = g.E
    moments = None
    if g.rows is None and params.alpha < 1.0 and moments_apply(*E.shape):
        moments = retriever._moments.get()
    r = _temporal._run_leg(g.E, g.Q, g.lex_scores if blend else None, leg.depth, timeline, intent, windows, params,
                           g.rows, False, g.n_threads, lexical_begin=g.lex_begin if blend else None, moments=moments)
    return [_LegOutput(r.ids[b], r.scores[b], None) for b in range(g.n)]


@functools.lru_cache(maxsize=256)
def _temporal_params(leg: TemporalLeg) -> _temporal.TemporalParams:
    """``leg.params()`` once per (frozen, hashable) leg, not once per query: it re-validates."""
    return leg.params()


@functools.lru_cache(maxsize=256)
def _operator_kwargs(leg: Leg) -> dict[str, Any]:
    """``leg.operator_kwargs()`` once per (frozen, hashable) leg; the dict is only ever unpacked."""
    return leg.operator_kwargs()


def _pool_output(leg: Leg, native) -> _LegOutput:
    return _LegOutput(native.ids, native.scores, native.coef if leg.kind == "cfsr" else None)


def _run_rerank(leg: Leg, retriever: HybridRetriever, g: _Group) -> list[_LegOutput]:
    """CFS-R, CFS, MMR, Ring: a union pool per query; a dense pool on the shared prefilter prefix
    (one query) or through the kind's native ``*_batch`` operator, which reads E in place (batches)."""
    E, params = g.E, _operator_kwargs(leg)
    if _is_union(leg):
        def one(b: int) -> _LegOutput:
            pool_ids = np.union1d(g.pre[b][0][: leg.p], g.lex_top[b][0][: _union_depth(leg)])
            return _pool_output(leg, ops._pool_trusted(leg.kind, pool_ids, E[pool_ids], g.Q[b], leg.depth, None,
                                                       params))

        workers = g.n_threads if g.n_threads > 0 else (os.cpu_count() or 1)
        if workers <= 1 or g.n <= 1:
            return [one(b) for b in range(g.n)]
        with ThreadPoolExecutor(max_workers=min(workers, g.n)) as pool:
            return list(pool.map(one, range(g.n)))
    if g.n == 1:
        depth = _RERANK_POOL_DEPTH[leg.kind](leg)
        pre_ids, pre_scores, _ = g.pre[0]
        ids = pre_ids[:depth]
        return [_pool_output(leg, ops._pool_trusted(leg.kind, ids, E[ids], g.Q[0], leg.depth, pre_scores[:depth],
                                                    params))]
    p = None if leg.kind == "ring" else leg.p
    r = ops._batch_trusted(leg.kind, E, g.Q, leg.depth, p, g.sub, g.n_threads, params)
    coef = r.coef if leg.kind == "cfsr" else [None] * g.n
    return [_LegOutput(ids, scores, c) for ids, scores, c in zip(r.ids, r.scores, coef)]


def _rerank_dense_depth(leg: Leg, batched: bool) -> int:
    if _is_union(leg):
        return leg.p
    return 0 if batched else _RERANK_POOL_DEPTH[leg.kind](leg)


def _no_depth(leg: Leg, batched: bool = False) -> int:
    return 0


def _never(leg: Leg) -> bool:
    return False


_RERANK_POOL_DEPTH: dict[str, Callable[[Any], int]] = {
    "cfsr": lambda leg: leg.p, "cfs": lambda leg: leg.p, "mmr": lambda leg: leg.p,
    "ring": lambda leg: leg.pool_depth,
}
_RERANK = LegKind(_rerank_dense_depth, lambda leg: _union_depth(leg) if _is_union(leg) else 0, _never, False,
                  lambda leg: leg.depth if leg.kind == "ring" else min(leg.depth, leg.p), _run_rerank)

#: The leg registry: kind name -> :class:`LegKind`. :class:`LegPlan` reads nothing else, so
#: :meth:`HybridRetriever.search`, :meth:`~HybridRetriever.search_batch` and
#: :func:`fieldrank.evaluation.calibrate.calibrate` run every kind through the same entry.
LEG_REGISTRY: dict[str, LegKind] = {
    "cosine": LegKind(lambda leg, batched: leg.depth, lambda leg: 0, _never, False, lambda leg: leg.depth,
                      _run_cosine),
    # BM25 returns only documents sharing a term with the query: it guarantees none.
    "bm25": LegKind(_no_depth, lambda leg: leg.depth, _never, False, lambda leg: 0, _run_bm25),
    "temporal": LegKind(_no_depth, lambda leg: 0, lambda leg: leg.alpha > 0, True, lambda leg: leg.depth,
                        _run_temporal),
    "cfsr": _RERANK,
    "cfs": _RERANK,
    "mmr": _RERANK,
    "ring": _RERANK,
}


def _deepened(leg: Leg, k: int, n_docs: Optional[int] = None) -> Leg:
    """``leg`` returning at least ``k`` ids where it can (its pool, if any, at least as deep).

    With ``n_docs``, depths past the corpus are capped at it (at least the leg's own): a leg, its
    pool or an operator cannot return more than every document, so the outputs are the same.
    """
    if leg.depth >= k:
        return leg
    depth = k if n_docs is None else max(leg.depth, min(k, n_docs))
    changes: dict[str, Any] = {"depth": depth}
    if hasattr(leg, "p"):
        changes["p"] = max(leg.p, depth)
    return dataclasses.replace(leg, **changes)


class LegPlan:
    """A configuration's legs with what they need, for ``k`` hits; run for a group of queries.

    One shared cosine prefilter at the largest depth any leg takes from it, one BM25 top list at
    the largest lexical depth, every document's BM25 scores once if a leg blends them, then each
    leg's :class:`LegKind` ``run``.
    """

    def __init__(self, config: RetrieverConfig, k: int, n_docs: Optional[int] = None) -> None:
        # With n_docs (the retriever's corpus), k is clamped to it: every array below is O(min(k, n)).
        self.k = k if n_docs is None else min(k, n_docs)
        legs = config.legs
        # min(k, n) hits need one leg that returns k ids; if none does, every leg is deepened to k.
        if k > max((LEG_REGISTRY[leg.kind].coverage(leg) for leg in legs), default=0):
            legs = tuple(_deepened(leg, k, n_docs) for leg in legs)
        self.legs = legs
        self.kinds = tuple(LEG_REGISTRY[leg.kind] for leg in self.legs)
        self.weights = list(config.weights)
        # One leg with a positive weight fuses to its own order (see fuse): its ranks 1..k, once.
        self._one_leg = len(self.weights) == 1 and self.weights[0] > 0
        pairs = self._legs_kinds = tuple(zip(self.legs, self.kinds))
        self.dense_depth_single = max((kind.dense_depth(leg, False) for leg, kind in pairs), default=0)
        self.dense_depth_batch = max((kind.dense_depth(leg, True) for leg, kind in pairs), default=0)
        self.lexical_depth = max((kind.lexical_depth(leg) for leg, kind in pairs), default=0)
        self.lexical_scores = any(kind.lexical_scores(leg) for leg, kind in pairs)
        self.timeline = any(kind.timeline for kind in self.kinds)

    def run(self, retriever: HybridRetriever, texts: Optional[list[str]], Q: Optional[np.ndarray], n: int,
            sub: Optional[np.ndarray], n_threads: int, *, lexical_scores: Optional[np.ndarray] = None
            ) -> list[list[_LegOutput]]:
        """Every leg's output for ``n`` queries sharing the subset ``sub`` (sorted unique ids or
        None), per query. ``lexical_scores`` (n, N) may pass BM25 scores computed already."""
        if not n:
            return []
        g = _Group(retriever._E, texts, Q, n, sub, n_threads)
        depth = self.dense_depth_single if n == 1 else self.dense_depth_batch
        if depth:
            if n == 1:  # the single-query scan; its 1-D arrays are the group's one row
                pre = _core.prefilter(g.E, Q[0], depth, sub)
                g.pre = [_LegOutput(pre.ids, pre.scores, None)]
            else:
                pre = ops._prefilter_batch_trusted(g.E, Q, depth, sub, n_threads)
                g.pre = [_LegOutput(ids, scores, None) for ids, scores in zip(pre.ids, pre.scores)]
            g.pre_depth = depth
        bm25 = retriever._bm25
        if self.lexical_depth or (self.lexical_scores and lexical_scores is None):
            token_ids = list(map(bm25._token_ids, bm25._tokenize(texts)))
            # Every document's scores of all queries in one native call when a leg blends them;
            # the BM25 top lists then rank those rows instead of scoring again.
            if self.lexical_scores and lexical_scores is None:
                # Without a BM25 top list, only the block of documents the subset spans is scored
                # (a conversation of a long log): the temporal leg reads no other column.
                docs = None if sub is None or self.lexical_depth or not sub.size else (int(sub[0]), int(sub[-1]) + 1)
                g.lex_scores = bm25._scores_matrix(token_ids, n_threads, docs)
                g.lex_begin = None if docs is None else docs[0]
            if self.lexical_depth:
                mask = None
                if sub is not None:
                    mask = np.zeros(len(bm25), dtype=bool)
                    mask[sub] = True
                g.lex_depth = self.lexical_depth
                if g.lex_scores is None:
                    g.lex_top = [_LegOutput(*bm25._rank(ids, self.lexical_depth, mask), None) for ids in token_ids]
                else:
                    g.lex_top = [_LegOutput(*bm25._rank(ids, self.lexical_depth, mask, row), None)
                                 for ids, row in zip(token_ids, g.lex_scores)]
        if lexical_scores is not None:
            g.lex_scores = lexical_scores
        # One column of outputs per leg, transposed to one row of legs per query (a single query's
        # row is each column's one entry: no transposition on the per-turn path).
        columns = [kind.run(leg, retriever, g) for leg, kind in self._legs_kinds]
        if n == 1:
            return [[column[0] for column in columns]]
        return [list(row) for row in zip(*columns)]

    def fuse(self, per_query: Sequence[Sequence[_LegOutput]], k0: float, n_threads: int) -> list:
        """The weighted RRF of each query's leg outputs (:func:`fieldrank.rrf`), one ``Ranking`` per query.

        A plan of one leg with a positive weight (the ``default`` preset) fuses to the leg's own
        order, since its contributions ``weight / (k0 + rank)`` fall strictly with the rank; its
        scores are the leg's own (float64), not those rank-only quotients (see :meth:`fuse_one`).
        """
        if self._one_leg or len(per_query) == 1:
            return [Ranking(*self.fuse_one(outputs, k0)) for outputs in per_query]
        return ops._rrf_batch_trusted([[out.ids for out in outputs] for outputs in per_query], self.weights, self.k,
                                      k0, n_threads)


    def fuse_one(self, outputs: Sequence[_LegOutput], k0: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`fuse` of one query: its ``(ids, scores)``.

        The legs' outputs are what ``rrf`` checks for (int64 ids, none twice) and the plan's weights,
        ``k`` and ``k0`` were checked with the config, so the native fusion runs unchecked
        (``_core.rrf_unchecked``: the same sums as ``rrf``, the id arrays read in place).

        A plan of one leg passes the leg's order and its own scores through (cosine, BM25, the
        temporal blend, a reranker's score): ``weight / (k0 + rank)`` would be the same numbers for
        every query."""
        if self._one_leg:
            out = outputs[0]
            return out.ids[: self.k].astype(_ID_DTYPE), out.scores[: self.k].astype(_SCORE_DTYPE)
        fused = _core.rrf_unchecked([out.ids for out in outputs], self.weights, self.k, k0)
        return fused.ids, fused.scores


def _question_features(texts: Optional[list[str]], timeline: _temporal.Timeline, rows: Optional[np.ndarray],
                       years: Optional[tuple[int, ...]]):
    """:func:`fieldrank.temporal.question_features`, with the corpus's year span precomputed."""
    if texts is None or years is None or timeline.time is None:
        return _temporal.question_features(texts, timeline, rows)
    return _temporal.time_intent(texts), [_temporal.date_windows(t, years) for t in texts]


def _check_bm25_index(index: object, n_docs: int, config: RetrieverConfig) -> None:
    _v.instance_of(index, "bm25_index", BM25Index)
    if len(index) != n_docs:
        msg = f"bm25_index must index the {n_docs} texts, got an index of {len(index)} documents"
        raise ValueError(msg)
    if index.params != config.bm25:
        msg = f"bm25_index was built with {index.params!r}, but the config asks for {config.bm25!r}"
        raise ValueError(msg)
