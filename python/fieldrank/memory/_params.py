"""Every tunable number of the memory store, with its default, in one place.

:class:`MemoryParams` is a frozen dataclass; :data:`DEFAULT_PARAMS` holds the defaults below.
The floors of the fused score (SPEC §8) are not parameters: they are fixed by the
specification and live here as constants.

Fused score: the ``default`` preset's relevance plus bounded additive boosts (see
:mod:`._scoring` and docs/memory.md, "Protection and ranking")::

    s = rel + B · In · D' + τ · tag + γ · a / (1 + a) + (V − 1)        D' = 1 for durable memories

========================  =======  ===========================================================
name                      default  meaning
========================  =======  ===========================================================
relevance_quota           50       candidates of the relevance core (the ``default`` preset's scorer)
dense_quota               50       candidates the dense (cosine) generator may admit
bm25_quota                50       candidates the BM25 generator may admit
tag_quota                 20       candidates the tag-match generator may admit
temporal_quota            20       candidates nearest in time to the cue time
importance_quota          4096     cap on the protected tier per recall (every durable eligible memory up to it)
graph_quota               20       entity-graph neighbours of the other candidates
durable_importance        0.7      importance from which a memory is durable (tier "core" always is)
protected_share           0.3      share of k reserved for the durable memories the cue-conditioned gate picks
protected_min_z           2.0      memory-side z of the cue's cosine (vs the memory's cosines to the tenant's
                                   other memories, :mod:`._tier`) a durable memory needs for a reserved slot
importance_boost (B)      1.0      additive importance term B · In · D' (z units of relevance)
tag_boost (τ)             0.5      additive cue-tag containment term τ · tag
graph_boost (γ)           0.5      additive graph term γ · a / (1 + a), a = graph activation
entity_boost (ε)          2.0      cue-entity term: +ε · |E(cue) ∩ E(T)| / |E(cue)|, −ε for another entity
superseded_margin         0.1      a superseded memory scores at most its replacement's score minus this
other_entity_margin       0.1      with cue entities, a memory about other entities only scores at most the best
                                   candidate about a cue entity minus this
valence_weight            0.5      V = 1 − valence_weight · |v_T − v_C| / 2 (when a cue valence is given)
sim_floor                 0.01     sim = max(cosine, sim_floor)
importance_floor          0.01     In = clip(importance, importance_floor, 1)
retrieval_half_life_days  30.0     D halves every half_life · S days without access
storage_gain              1.0      on recall: S += storage_gain · (1 − D)
hebbian_rate              0.2      on recall: w += hebbian_rate · (1 − w) for co-returned pairs
entity_weight             1.0      activation per entity a candidate shares with a seed
cue_entity_weight         1.0      activation per cue entity a candidate carries
entity_fanout             256      most recent rows read per entity when spreading activation
rerank_operator           "cfsr"   operator of the ``rerank`` mode: "cfsr" or "cfs"
isolated_self_support     True     in the relevance core, a memory with no same-session neighbour among the
                                   eligible rows is its own neighbour (support γ · max(base, 0)), so a
                                   standalone memory is not outranked by chatter for its neighbours' support
bm25_params               default  the ``default`` preset's :class:`~fieldrank.bm25.BM25Params` (lucene, neighbour-text expansion)
relevance_params          default  the ``default`` preset's :class:`~fieldrank.temporal.TemporalParams`
bm25_delta_min_docs       1024     the BM25 delta may hold this many documents ...
bm25_delta_fraction       0.125    ... or this share of the main index, whichever is larger
infer_cue_entities        True     without ``cue_entities``, the store's entity labels the cue text names (whole
                                   words, longest first) count as the cue's entities
========================  =======  ===========================================================

``relevance_params`` and ``bm25_params`` default to the calibrated ``default`` preset
(``fieldrank/data/default_config.toml``, read through :func:`fieldrank.config.default_config`), so
the store's relevance core is that preset's scorer: :func:`fieldrank.temporal.temporal_batch` over
the eligible rows with the same BM25. B, τ, γ and ε were chosen on the store's own adversarial
suites, not on LoCoMo, so the suite's figures are not a held-out estimate for them;
``protected_min_z`` = 2 is a principled threshold (the cue's cosine two standard deviations above
what the memory usually gets); ``protected_share`` was fitted on the even-numbered scenarios of
each case of ``benchmarks/memory_adversarial.py`` at 10k filler (the smallest share of k whose
case-(a) hit@10 reaches 0.6 there: 0.2 gave 0.52, 0.3 gave 0.67), the odd-numbered ones held out
(docs/memory.md, "Protection and ranking"). Every boost is bounded: together they add at most
B + τ + γ + ε = 4.0 to a memory's relevance, so a memory whose relevance leads by more than that
is never buried by them (the entity term may also subtract ε from a memory about another entity
than the cue's, and a valence mismatch at most 1); with cue entities, a memory about other
entities only is capped below the best candidate about a cue entity (``other_entity_margin``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from .. import _validation as _v
from ..bm25 import BM25Params
from ..config import default_config
from ..temporal import TemporalParams


def _default_relevance() -> tuple[TemporalParams, BM25Params]:
    """The ``default`` preset's temporal-leg parameters and BM25 parameters.

    The calibrated preset is one temporal leg; should it ever hold none, the leg's own defaults
    are used with the preset's BM25.
    """
    config = default_config()
    legs = [leg for leg in config.legs if leg.kind == "temporal"]
    return (legs[0].params() if legs else TemporalParams()), config.bm25


DEFAULT_RELEVANCE_PARAMS, DEFAULT_BM25_PARAMS = _default_relevance()

__all__ = [
    "DEFAULT_PARAMS",
    "GRAPH_BOOST_MIN",
    "RERANK_OPERATORS",
    "RETRIEVAL_STRENGTH_MAX",
    "RETRIEVAL_STRENGTH_MIN",
    "STORAGE_STRENGTH_MIN",
    "VALENCE_ALIGNMENT_MAX",
    "VALENCE_ALIGNMENT_MIN",
    "MemoryParams",
]

# Floors of SPEC §8: no soft signal can eliminate a memory.
#: D ∈ [0.10, 1.0]: retrieval strength never falls below this.
RETRIEVAL_STRENGTH_MIN = 0.10
RETRIEVAL_STRENGTH_MAX = 1.0
#: V ∈ [0.01, 1.0]: valence alignment.
VALENCE_ALIGNMENT_MIN = 0.01
VALENCE_ALIGNMENT_MAX = 1.0
#: G ≥ 1: the graph factor only ever boosts.
GRAPH_BOOST_MIN = 1.0
#: S ≥ 1: storage strength.
STORAGE_STRENGTH_MIN = 1.0

#: Operators the ``rerank`` mode can apply to the fused union (``fieldrank.cfsr_pool``/``cfs_pool``).
RERANK_OPERATORS: tuple[str, ...] = ("cfsr", "cfs")
#: The BM25 delta (documents added after the last bm25s build) is scored with this variant.
SUPPORTED_BM25_METHOD = "lucene"

DEFAULT_RELEVANCE_QUOTA = 50
DEFAULT_DENSE_QUOTA = 50
DEFAULT_BM25_QUOTA = 50
DEFAULT_TAG_QUOTA = 20
DEFAULT_TEMPORAL_QUOTA = 20
DEFAULT_IMPORTANCE_QUOTA = 4096
DEFAULT_GRAPH_QUOTA = 20
DEFAULT_DURABLE_IMPORTANCE = 0.7
DEFAULT_PROTECTED_SHARE = 0.3
DEFAULT_PROTECTED_MIN_Z = 2.0
DEFAULT_IMPORTANCE_BOOST = 1.0
DEFAULT_TAG_BOOST = 0.5
DEFAULT_GRAPH_BOOST = 0.5
DEFAULT_ENTITY_BOOST = 2.0
DEFAULT_SUPERSEDED_MARGIN = 0.1
DEFAULT_OTHER_ENTITY_MARGIN = 0.1
DEFAULT_VALENCE_WEIGHT = 0.5
DEFAULT_SIM_FLOOR = 0.01
DEFAULT_IMPORTANCE_FLOOR = 0.01
DEFAULT_RETRIEVAL_HALF_LIFE_DAYS = 30.0
DEFAULT_STORAGE_GAIN = 1.0
DEFAULT_HEBBIAN_RATE = 0.2
DEFAULT_ENTITY_WEIGHT = 1.0
DEFAULT_CUE_ENTITY_WEIGHT = 1.0
DEFAULT_ENTITY_FANOUT = 256
DEFAULT_RERANK_OPERATOR = "cfsr"
DEFAULT_ISOLATED_SELF_SUPPORT = True
DEFAULT_BM25_DELTA_MIN_DOCS = 1024
DEFAULT_BM25_DELTA_FRACTION = 0.125
DEFAULT_INFER_CUE_ENTITIES = True

_QUOTA_FIELDS = (
    "relevance_quota", "dense_quota", "bm25_quota", "tag_quota", "temporal_quota", "importance_quota", "graph_quota",
)
_NON_NEGATIVE_REAL_FIELDS = (
    "importance_boost", "tag_boost", "graph_boost", "entity_boost", "storage_gain", "entity_weight", "cue_entity_weight",
    "superseded_margin", "other_entity_margin",
)
_REAL_FIELDS = ("protected_min_z",)
_UNIT_INTERVAL_FIELDS = (
    "valence_weight", "hebbian_rate", "bm25_delta_fraction", "durable_importance", "protected_share",
)
_OPEN_UNIT_INTERVAL_FIELDS = ("sim_floor", "importance_floor")
_POSITIVE_INT_FIELDS = ("entity_fanout", "bm25_delta_min_docs")


@dataclass(frozen=True)
class MemoryParams:
    """Quotas, fused-score weights, strength dynamics and index policy of a :class:`MemoryStore`.

    See the module docstring for the table of defaults and meanings. Every field is validated
    on construction; use :meth:`replace` to derive a variant.

    Raises
    ------
    TypeError
        If a field has the wrong type.
    ValueError
        If a value is out of range; the message names the field.
    """

    relevance_quota: int = DEFAULT_RELEVANCE_QUOTA
    dense_quota: int = DEFAULT_DENSE_QUOTA
    bm25_quota: int = DEFAULT_BM25_QUOTA
    tag_quota: int = DEFAULT_TAG_QUOTA
    temporal_quota: int = DEFAULT_TEMPORAL_QUOTA
    importance_quota: int = DEFAULT_IMPORTANCE_QUOTA
    graph_quota: int = DEFAULT_GRAPH_QUOTA
    durable_importance: float = DEFAULT_DURABLE_IMPORTANCE
    protected_share: float = DEFAULT_PROTECTED_SHARE
    protected_min_z: float = DEFAULT_PROTECTED_MIN_Z
    importance_boost: float = DEFAULT_IMPORTANCE_BOOST
    tag_boost: float = DEFAULT_TAG_BOOST
    graph_boost: float = DEFAULT_GRAPH_BOOST
    entity_boost: float = DEFAULT_ENTITY_BOOST
    superseded_margin: float = DEFAULT_SUPERSEDED_MARGIN
    other_entity_margin: float = DEFAULT_OTHER_ENTITY_MARGIN
    valence_weight: float = DEFAULT_VALENCE_WEIGHT
    sim_floor: float = DEFAULT_SIM_FLOOR
    importance_floor: float = DEFAULT_IMPORTANCE_FLOOR
    retrieval_half_life_days: float = DEFAULT_RETRIEVAL_HALF_LIFE_DAYS
    storage_gain: float = DEFAULT_STORAGE_GAIN
    hebbian_rate: float = DEFAULT_HEBBIAN_RATE
    entity_weight: float = DEFAULT_ENTITY_WEIGHT
    cue_entity_weight: float = DEFAULT_CUE_ENTITY_WEIGHT
    entity_fanout: int = DEFAULT_ENTITY_FANOUT
    rerank_operator: str = DEFAULT_RERANK_OPERATOR
    isolated_self_support: bool = DEFAULT_ISOLATED_SELF_SUPPORT
    bm25_params: BM25Params = DEFAULT_BM25_PARAMS
    relevance_params: TemporalParams = DEFAULT_RELEVANCE_PARAMS
    bm25_delta_min_docs: int = DEFAULT_BM25_DELTA_MIN_DOCS
    bm25_delta_fraction: float = DEFAULT_BM25_DELTA_FRACTION
    infer_cue_entities: bool = DEFAULT_INFER_CUE_ENTITIES

    def __post_init__(self) -> None:
        def check(name: str, check_field: Any, **bounds: Any) -> None:
            object.__setattr__(self, name, check_field(getattr(self, name), f"MemoryParams.{name}", **bounds))

        for name in _QUOTA_FIELDS:
            check(name, _v.integer, low=0, note=" (0 switches the generator off)")
        for name in _POSITIVE_INT_FIELDS:
            check(name, _v.integer, low=0, low_open=True)
        for name in _NON_NEGATIVE_REAL_FIELDS:
            check(name, _v.real, low=0.0)
        for name in _REAL_FIELDS:
            check(name, _v.real)
        for name in _UNIT_INTERVAL_FIELDS:
            check(name, _v.real, low=0.0, high=1.0)
        for name in _OPEN_UNIT_INTERVAL_FIELDS:
            check(name, _v.real, low=0.0, high=1.0, low_open=True)
        check("retrieval_half_life_days", _v.real, low=0.0, low_open=True)
        check("isolated_self_support", _v.flag)
        check("infer_cue_entities", _v.flag)
        _v.one_of(self.rerank_operator, "MemoryParams.rerank_operator", RERANK_OPERATORS)
        _v.instance_of(self.bm25_params, "MemoryParams.bm25_params", BM25Params)
        if not isinstance(self.relevance_params, TemporalParams):
            msg = ("MemoryParams.relevance_params must be a fieldrank.temporal.TemporalParams, got "
                   f"{type(self.relevance_params).__name__}")
            raise TypeError(msg)
        if self.bm25_params.method != SUPPORTED_BM25_METHOD:
            msg = (
                f"MemoryParams.bm25_params.method must be {SUPPORTED_BM25_METHOD!r} (the BM25 delta of "
                f"recent additions is scored with that variant), got {self.bm25_params.method!r}"
            )
            raise ValueError(msg)

    def quota(self, generator: str) -> int:
        """The quota of ``generator`` (one of :data:`fieldrank.memory.GENERATORS`)."""
        return int(getattr(self, f"{generator}_quota"))

    def replace(self, **changes: Any) -> MemoryParams:
        """A copy with ``changes`` applied (validated)."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The parameters as a JSON-serialisable dict (``bm25_params`` as its own dict)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["bm25_params"] = self.bm25_params.to_dict()
        out["relevance_params"] = self.relevance_params.to_dict()
        return out


#: The defaults of the module table.
DEFAULT_PARAMS = MemoryParams()
