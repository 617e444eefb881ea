"""A search's result: the fused top-k, each hit's provenance in every leg, and its confidence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, NamedTuple, Optional, Sequence, Union, overload

import numpy as np

from .. import _confidence as _conf
from .. import _validation as _v
from .._results import SearchHit
from .corpus import Corpus
from .context import LegOutput
from .legs.base import Leg

if TYPE_CHECKING:  # pragma: no cover
    from ..config import RetrieverConfig

__all__ = ["LegHits", "QueryEvidence", "SearchResult", "cleared", "threshold_value"]

_ID_DTYPE = np.int64
_SCORE_DTYPE = np.float64


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


def leg_hits(leg: Leg, output: LegOutput, hits: np.ndarray, k0: float) -> LegHits:
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


class QueryEvidence(NamedTuple):
    """What a result's confidence reads of its query (see :mod:`fieldrank._confidence`)."""

    corpus: Corpus
    text: Optional[str]
    vector: Optional[np.ndarray]   # (d,) unit float32
    subset: Optional[np.ndarray]   # sorted ids the query could see (None: every document)


def result_confidence(ids: np.ndarray, scores: np.ndarray, config: RetrieverConfig,
                       query: Optional[QueryEvidence]) -> np.ndarray:
    """Every hit's confidence (NaN without the query's vector and text)."""
    if query is None or query.vector is None or query.text is None:
        return np.full(ids.shape[0], np.nan)
    corpus = query.corpus
    terms = _conf.query_terms(corpus.bm25, query.text)
    f = _conf.features(corpus.E, query.vector, corpus.bm25, terms, ids, scores, query.subset)
    return _conf.confidence(f, config.confidence_model)


def threshold_value(min_confidence: object) -> Optional[float]:
    """``min_confidence`` checked: None, or a float in [0, 1]."""
    return None if min_confidence is None else _v.real(min_confidence, "min_confidence", low=0.0, high=1.0)


def cleared(results: list[SearchResult], threshold: Optional[float]) -> list[SearchResult]:
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

    def __init__(self, ids: np.ndarray, scores: np.ndarray, outputs: Sequence[LegOutput],
                 config: RetrieverConfig, corpus_texts: Sequence[str], query: Optional[QueryEvidence] = None
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
            self._confidence = result_confidence(self.ids, self.scores, self.config, self._query)
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
                leg_hits(leg, output, self.ids, self.config.k0)
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
