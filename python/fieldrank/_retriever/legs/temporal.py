"""The time-aware leg (:mod:`fieldrank.temporal`): z-scored BM25 + cosine blend, session-neighbour
support and time priors, top-``depth`` of the subset, run natively for the whole context."""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from typing import ClassVar

from ... import _kernels
from ... import _param_tables as _tables
from ... import temporal as _temporal
from ...temporal import TemporalParams
from ..context import LegOutput, QueryContext
from ..corpus import Corpus
from .base import DEFAULT_WEIGHT, Leg, register_leg


__all__ = ["TemporalLeg"]


@functools.lru_cache(maxsize=256)
def _params(leg: TemporalLeg) -> TemporalParams:
    """``leg.params()`` once per (frozen, hashable) leg, not once per query: it re-validates."""
    return leg.params()


@register_leg
@dataclass(frozen=True)
class TemporalLeg(Leg):
    """Time-aware leg (:mod:`fieldrank.temporal`): fused BM25 + cosine scores, propagated to
    same-session neighbours, plus a time-cue prior for time questions and a session-date prior
    for questions that name a date.

    Uses the retriever's BM25 index (``RetrieverConfig.bm25``) and its ``timeline`` (session
    keys and dates of the documents; without one, documents in corpus order are neighbours and
    there is no date prior). The parameters are those of :class:`fieldrank.temporal.TemporalParams`
    and default to its values.
    """

    kind: ClassVar[str] = "temporal"
    needs_text: ClassVar[bool] = True
    needs_timeline: ClassVar[bool] = True
    depth: int = _kernels.DEFAULTS["k"]
    weight: float = DEFAULT_WEIGHT
    alpha: float = TemporalParams.alpha
    gamma: float = TemporalParams.gamma
    radius: int = TemporalParams.radius
    decay: float = TemporalParams.decay
    tau: float = TemporalParams.tau
    delta: float = TemporalParams.delta
    before_days: int = TemporalParams.before_days
    after_days: int = TemporalParams.after_days
    name: str = "temporal"

    field_checks: ClassVar[tuple[_tables.Param, ...]] = _tables.LEG_TABLES["temporal"]

    def params(self) -> TemporalParams:
        """The operator parameters as a :class:`fieldrank.temporal.TemporalParams`."""
        return TemporalParams(**{f.name: getattr(self, f.name) for f in fields(TemporalParams)})

    def lexical_scores(self) -> bool:
        return self.alpha > 0

    def prepare(self, corpus: Corpus) -> None:
        """Compute the corpus moments a search over every document would read (alpha < 1)."""
        if _params(self).alpha < 1.0 and corpus.moments_apply:
            corpus.moments.get()

    def run(self, ctx: QueryContext) -> list[LegOutput]:
        corpus = ctx.corpus
        intent, windows = ctx.question_features()
        params = _params(self)
        blend = params.alpha > 0
        # Over every document of a large corpus the cosines' statistics come from the corpus moments
        # (the fp32 screen; over fewer rows than the threshold the double pass is as fast).
        moments = None
        if ctx.subset is None and params.alpha < 1.0 and corpus.moments_apply:
            moments = corpus.moments.get()
        lexical, begin = ctx.lexical_scores() if blend else (None, None)
        r = _temporal.run_leg(corpus.E, ctx.Q, lexical, self.depth, corpus.timeline, intent, windows, params,
                              ctx.subset, False, ctx.n_threads, lexical_begin=begin, moments=moments)
        return [LegOutput(r.ids[b], r.scores[b], None) for b in range(ctx.n)]
