"""What a recall returns: hits with full score provenance, and why-not answers.

Dominant and weakest factor. The fused score is the product of five factors
(:data:`FACTOR_NAMES`): ``sim``, ``importance`` (1 + B·In·D·Sb), ``valence`` (V), ``tag``
(1 + τ·tag) and ``graph`` (G). ``sim`` and V are <= 1 and pull the score down; the other three are
>= 1 and push it up.

* ``dominant_factor``: the factor that raised the score most, i.e. the largest of the
  multipliers importance, tag, graph; ``"sim"`` when none of them exceeds 1 (the score is then
  similarity alone, possibly lowered by V). Importance competes only for a memory stored
  *above* the default importance (:data:`fieldrank.memory.DEFAULT_IMPORTANCE`): every
  memory at the default gets the same importance multiplier, which explains none of them.
* ``weakest_factor``: the factor with the smallest value among all five (the one that held the
  score down most; usually ``sim``, or V when the valences disagree strongly).

Ties go to the earlier name in :data:`FACTOR_NAMES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterator, Mapping, Optional

import numpy as np

from ._schema import DEFAULT_IMPORTANCE

__all__ = ["FACTOR_NAMES", "Hit", "RecallResult", "ScoreFactors", "WhyNot"]

#: The five factors of the fused score, in the order of the formula.
FACTOR_NAMES: tuple[str, ...] = ("sim", "importance", "valence", "tag", "graph", "entity")
_BOOSTING = ("importance", "tag", "graph", "entity")


@dataclass(frozen=True)
class ScoreFactors:
    """Every factor of one candidate's fused score, and the parts they are made of.

    Attributes
    ----------
    sim : float
        max(cosine, sim_floor).
    importance : float
        1 + B · In · D' (D' = 1 for a durable memory, else D).
    valence : float
        V in [0.01, 1].
    tag : float
        1 + τ · tag_containment.
    graph : float
        G = 1 + γ · a / (1 + a) >= 1.
    cosine, importance_norm (In), retrieval_strength (D), storage_strength (S),
    storage_bounded (Sb), tag_containment, graph_activation (a) : float
        The parts.
    score : float
        relevance + (importance − 1) + (tag − 1) + (graph − 1) + (valence − 1), capped below the
        replacement's score for a superseded memory.
    relevance : float
        The relevance core's score (the ``default`` preset's scorer; z units over the eligible rows).
    durable : bool
        Importance >= ``durable_importance`` or tier ``core``: its importance term does not decay.
    entity : float
        1 + ε · entity_containment, the share of the cue's entities the memory carries.
    """

    sim: float
    importance: float
    valence: float
    tag: float
    graph: float
    cosine: float
    importance_norm: float
    retrieval_strength: float
    storage_strength: float
    storage_bounded: float
    tag_containment: float
    graph_activation: float
    score: float
    relevance: float = 0.0
    durable: bool = False
    entity: float = 1.0
    entity_containment: float = 0.0

    def as_dict(self) -> dict[str, float]:
        """The factors by name (:data:`FACTOR_NAMES`)."""
        return {name: getattr(self, name) for name in FACTOR_NAMES}

    @property
    def dominant(self) -> str:
        return dominant_factor(self.__dict__)

    @property
    def weakest(self) -> str:
        return weakest_factor(self.__dict__)


def dominant_factor(values: Mapping[str, Any]) -> str:
    """The boosting factor with the largest value (``sim`` when none boosts), from ScoreFactors' values by
    field name; importance counts only above the default importance."""
    boosting = _BOOSTING if values["importance_norm"] > DEFAULT_IMPORTANCE else _BOOSTING[1:]
    best, best_value = boosting[0], values[boosting[0]]
    for name in boosting[1:]:  # ties: the earlier name
        value = values[name]
        if value > best_value:
            best, best_value = name, value
    return best if best_value > 1.0 else "sim"


def weakest_factor(values: Mapping[str, Any]) -> str:
    """The factor (:data:`FACTOR_NAMES`) with the smallest value, from ScoreFactors' values by field name."""
    weakest, weakest_value = FACTOR_NAMES[0], values[FACTOR_NAMES[0]]
    for name in FACTOR_NAMES[1:]:  # ties: the earlier name
        value = values[name]
        if value < weakest_value:
            weakest, weakest_value = name, value
    return weakest


@dataclass(frozen=True)
class Hit:
    """One returned memory and why it is here.

    Attributes
    ----------
    id, rank, text, tenant :
        ``rank`` is 1-based.
    score : float
        The score that ordered the hits: the fused score, or in ``rerank`` mode the reranker's.
    fused_score : float
        The fused score (equal to ``score`` outside ``rerank`` mode).
    rerank_score : float or None
        The CFS-R/CFS score in ``rerank`` mode.
    factors : ScoreFactors
    dominant_factor, weakest_factor : str
        See the module notes.
    admitted_by : Mapping[str, int]
        generator -> the memory's 1-based rank in that generator's list.
    age_days : float
        (at_time − created_at) in days.
    recall_count : int
        Recalls that returned it before this one.
    confidence : float
        The calibrated probability that the memory is relevant to the cue (issue 29,
        :mod:`fieldrank.memory._confidence`); NaN without a cue text and vector.
    """

    id: int
    rank: int
    score: float
    fused_score: float
    rerank_score: Optional[float]
    text: str
    tenant: str
    factors: ScoreFactors
    dominant_factor: str
    weakest_factor: str
    admitted_by: Mapping[str, int]
    age_days: float
    recall_count: int
    #: True when the memory holds one of the top-k places reserved for protected memories.
    reserved_slot: bool = False
    #: Id of the memory that superseded this one (None: current).
    superseded_by: Optional[int] = None
    confidence: float = float("nan")

    def explain(self) -> str:
        """A readable breakdown (the write-up's "Score Breakdown" and "Provenance")."""
        f = self.factors
        durable = ", durable: D' = 1" if f.durable else ""
        admitted = ", ".join(f"{name} #{rank}" for name, rank in self.admitted_by.items()) or "-"
        lines = [
            f"#{self.rank} id={self.id} score={self.score:.4f}  {self.text!r}",
            f"  relevance {f.relevance:.4f}  sim {f.sim:.4f} (cos {f.cosine:.4f})",
            f"  importance 1+B*In*D' = {f.importance:.4f}  (In {f.importance_norm:.2f}, D "
            f"{f.retrieval_strength:.3f}{durable}, S {f.storage_strength:.2f})",
            f"  valence {f.valence:.3f}  tag {f.tag:.3f} (containment {f.tag_containment:.2f})  "
            f"graph {f.graph:.3f} (activation {f.graph_activation:.3f})  entity {f.entity:.3f} "
            f"(containment {f.entity_containment:.2f})",
            f"  dominant {self.dominant_factor}, weakest {self.weakest_factor}; admitted by {admitted}",
            f"  age {self.age_days:.1f} days, recalled {self.recall_count} times",
        ]
        if self.reserved_slot:
            lines.append("  holds a reserved slot for protected (durable, relevant) memories")
        if self.superseded_by is not None:
            lines.append(f"  superseded by memory {self.superseded_by}: ranked below it")
        if self.rerank_score is not None:
            lines.append(f"  fused score {self.fused_score:.4f}, rerank score {self.rerank_score:.4f}")
        return "\n".join(lines)


@dataclass(frozen=True)
class RecallResult:
    """The hits of a recall plus what happened before the cut.

    Attributes
    ----------
    hits : tuple of Hit
        Best first, at most ``k``.
    mode : str
    tenant : str
    k : int
    admitted : Mapping[str, np.ndarray]
        generator -> ids it admitted (best first), for the generators the mode ran.
    candidate_ids : np.ndarray
        int64 ids of the gated union (every candidate that was scored), sorted.
    quotas : Mapping[str, int]
        The quota of each generator that ran.
    reinforced : bool
        Whether the recall's bookkeeping (reinforcement) is in effect: True when ``reinforce=True``
        and it was written (or there were no hits to reinforce); False with ``reinforce=False``
        or when it could not be written (the hits are valid either way).
    """

    hits: tuple[Hit, ...]
    mode: str
    tenant: str
    k: int
    admitted: Mapping[str, np.ndarray]
    candidate_ids: np.ndarray
    quotas: Mapping[str, int]
    reinforced: bool = False

    @property
    def ids(self) -> np.ndarray:
        """int64 ids of the hits, best first."""
        return np.fromiter((hit.id for hit in self.hits), dtype=np.int64, count=len(self.hits))

    @property
    def budget(self) -> int:
        """Total candidate budget: the sum of the quotas of the generators that ran."""
        return int(sum(self.quotas.values()))

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __getitem__(self, index: int) -> Hit:
        return self.hits[index]


@dataclass(frozen=True)
class WhyNot:
    """Why a memory was (not) returned by a recall (:meth:`MemoryStore.why_not`).

    Attributes
    ----------
    memory_id : int
    reason : str
        One of :data:`fieldrank.memory.WHY_NOT_REASONS`: ``returned``, ``not_found``,
        ``tombstoned``, ``other_tenant``, ``gated``, ``not_admitted``, ``outranked``.
    detail : str
        One readable sentence.
    failed_gates : tuple of str
        For ``gated``: the gates it fails (names from :data:`fieldrank.memory.GATES`).
    generator_ranks : Mapping[str, Optional[int]]
        For every generator of the mode: the 1-based rank the memory has in that generator's
        full ordering of the eligible rows (None: that generator cannot admit it at all, e.g. no
        term overlap, no cue tag, no graph activation). Admitted iff rank <= quota.
    quotas : Mapping[str, int]
    rank : int or None
        Its rank among the scored candidates (``outranked``/``returned``).
    score, cutoff_score : float or None
        Its score and the score of the k-th hit; ``margin = cutoff_score − score``.
    hit : Hit or None
        Its full provenance when it was scored.
    """

    memory_id: int
    reason: str
    detail: str
    failed_gates: tuple[str, ...] = ()
    generator_ranks: Mapping[str, Optional[int]] = field(default_factory=lambda: MappingProxyType({}))
    quotas: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    rank: Optional[int] = None
    score: Optional[float] = None
    cutoff_score: Optional[float] = None
    hit: Optional[Hit] = None

    @property
    def margin(self) -> Optional[float]:
        """How much more score it needed to make the cut (None unless scored)."""
        if self.score is None or self.cutoff_score is None:
            return None
        return self.cutoff_score - self.score
