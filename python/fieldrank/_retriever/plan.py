"""``LegPlan``: a configuration's legs with what they need, for ``k`` hits, run for a group of
queries and fused; and the retriever's small cache of plans by ``k``.

:meth:`LegPlan.run` builds the :class:`~fieldrank._retriever.context.QueryContext` of the group,
has it compute the inputs the legs share (each once: the prefilter at the largest dense depth, the
BM25 top lists at the largest lexical depth, every BM25 score if a leg blends them), then runs
every leg; :meth:`LegPlan.fuse` is the weighted RRF of their outputs
(:mod:`~fieldrank._retriever.fusion`). ``search`` is a group of one, ``search_batch`` one group per
distinct subset, and ``fieldrank calibrate`` runs the same plan.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .._results import Ranking
from .context import QueryContext
from .corpus import Corpus
from .fusion import weighted_rrf, weighted_rrf_batch
from .context import LegOutput

__all__ = ["PLAN_CACHE_SIZE", "LegPlan", "PlanCache"]

_ID_DTYPE = np.int64
_SCORE_DTYPE = np.float64

#: Leg plans a retriever keeps (one per clamped k asked for; the default k's is kept apart).
PLAN_CACHE_SIZE = 8


class LegPlan:
    """A configuration's legs with what they need, for ``k`` hits; run for a group of queries.

    ``n_docs`` (the corpus size) clamps ``k``: every array of a run is O(min(k, n)). When no leg
    returns ``k`` ids, every leg is deepened to ``k`` (pools at least as deep).
    """

    def __init__(self, config: Any, k: int, n_docs: Optional[int] = None) -> None:
        self.k = k if n_docs is None else min(k, n_docs)
        legs = config.legs
        if k > max((leg.coverage() for leg in legs), default=0):
            legs = tuple(leg.deepened(k, n_docs) for leg in legs)
        self.legs = legs
        self.weights = list(config.weights)
        self.k0 = config.k0
        # One leg with a positive weight fuses to its own order (see fuse): its ranks 1..k, once.
        self._one_leg = len(self.weights) == 1 and self.weights[0] > 0
        self.dense_depth_single = max((leg.dense_depth(False) for leg in legs), default=0)
        self.dense_depth_batch = max((leg.dense_depth(True) for leg in legs), default=0)
        self.lexical_depth = max((leg.lexical_depth() for leg in legs), default=0)
        self.lexical_scores = any(leg.lexical_scores() for leg in legs)

    def run(self, corpus: Corpus, texts: Optional[list[str]], Q: Optional[np.ndarray], n: int,
            subset: Optional[np.ndarray], n_threads: int, *, lexical_scores: Optional[np.ndarray] = None
            ) -> list[list[LegOutput]]:
        """Every leg's output for ``n`` queries sharing ``subset`` (sorted unique ids or None), per
        query. ``lexical_scores`` (n, N) may pass BM25 scores computed already."""
        if not n:
            return []
        ctx = QueryContext(corpus, texts, Q, n, subset, n_threads, self.k)
        ctx.share(self.dense_depth_single if n == 1 else self.dense_depth_batch, self.lexical_depth,
                  self.lexical_scores, lexical_scores)
        # One column of outputs per leg, transposed to one row of legs per query (a single query's
        # row is each column's one entry: no transposition on the per-turn path).
        columns = [leg.run(ctx) for leg in self.legs]
        if n == 1:
            return [[column[0] for column in columns]]
        return [list(row) for row in zip(*columns)]

    def fuse(self, per_query: Sequence[Sequence[LegOutput]], n_threads: int) -> list[Ranking]:
        """The weighted RRF of each query's leg outputs, one ``Ranking`` per query (see :meth:`fuse_one`)."""
        if self._one_leg or len(per_query) == 1:
            return [Ranking(*self.fuse_one(outputs)) for outputs in per_query]
        return weighted_rrf_batch([[out.ids for out in outputs] for outputs in per_query], self.weights, self.k,
                                  self.k0, n_threads)

    def fuse_one(self, outputs: Sequence[LegOutput]) -> tuple[np.ndarray, np.ndarray]:
        """The fused ``(ids, scores)`` of one query.

        A plan of one leg with a positive weight (the ``default`` preset) fuses to the leg's own
        order, since its contributions ``weight / (k0 + rank)`` fall strictly with the rank; its
        scores are the leg's own (cosine, BM25, the temporal blend, a reranker's score; float64),
        not those rank-only quotients, which would be the same numbers for every query."""
        if self._one_leg:
            out = outputs[0]
            return out.ids[: self.k].astype(_ID_DTYPE), out.scores[: self.k].astype(_SCORE_DTYPE)
        return weighted_rrf([out.ids for out in outputs], self.weights, self.k, self.k0)


class PlanCache:
    """The plans of one configuration over one corpus, by the ``k`` asked for.

    ``k`` is clamped to the corpus before anything is allocated: a plan and a search cost what the
    corpus does, whatever ``k``; the rankings are those of the unclamped ``k`` (no search can return
    more than every document). Plans are cached by what they depend on (the clamped ``k``; past the
    corpus, which legs ``k`` deepens), at most :data:`PLAN_CACHE_SIZE`, least recently used dropped
    first; the config's own ``k``'s plan is kept apart (:attr:`default`). Safe under concurrent
    searches: a race at worst builds an equal plan twice.
    """

    def __init__(self, config: Any, n_docs: int) -> None:
        self.config = config
        self.n_docs = n_docs
        self._plans: dict[object, LegPlan] = {}
        self._max_coverage = max((leg.coverage() for leg in config.legs), default=0)
        self.default: Optional[LegPlan] = None  # the plan for config.k, once built

    def get(self, k: int) -> LegPlan:
        """The plan for ``k`` hits (checked already)."""
        if k <= self.n_docs:
            key: object = k
        else:  # every k past the corpus with the same deepened legs gives the same plan
            deepens = k > self._max_coverage
            key = ("past the corpus", deepens, tuple(leg.depth >= k for leg in self.config.legs) if deepens else ())
        plans = self._plans
        plan = plans.pop(key, None)
        if plan is None:
            plan = LegPlan(self.config, k, self.n_docs)
        plans[key] = plan  # (re)inserted last: the most recently used
        while len(plans) > PLAN_CACHE_SIZE:
            try:
                del plans[next(iter(plans))]
            except (KeyError, RuntimeError, StopIteration):  # another thread changed it meanwhile
                break
        if k == self.config.k:
            self.default = plan
        return plan

    def __len__(self) -> int:
        return len(self._plans)

    def __iter__(self):
        """The plans held now (least recently used first)."""
        return iter(list(self._plans.values()))
