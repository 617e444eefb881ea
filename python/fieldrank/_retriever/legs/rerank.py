"""What the reranking legs (CFS-R, CFS, MMR, Ring) share: their pool and how it runs.

A *dense pool* reranks the cosine prefilter top-``pool_depth``: for one query the prefix of the
shared prefilter through the kind's ``*_pool`` operator, for a batch the kind's native ``*_batch``
operator (rows read in place, one query per thread). A *union pool* (``pool="union"``, CFS-R and
CFS) reranks the sorted union of the dense top-``p`` and the BM25 top-``union_p`` as a caller pool.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar, Optional

import numpy as np

from ... import _param_tables as _tables
from ... import _validation as _v
from ... import _kernels
from ..context import LegOutput, QueryContext
from .base import Leg


__all__ = ["POOL_DENSE", "POOL_MODES", "POOL_UNION", "PooledLeg", "RerankLeg"]

#: Candidate pool of the CFS-R / CFS legs: the dense prefilter, or its union with BM25.
POOL_MODES: tuple[str, ...] = ("dense", "union")
POOL_DENSE, POOL_UNION = POOL_MODES


@functools.lru_cache(maxsize=256)
def operator_kwargs(leg: Leg) -> dict[str, Any]:
    """``leg.operator_kwargs()`` once per (frozen, hashable) leg; the dict is only ever unpacked."""
    return leg.operator_kwargs()


class RerankLeg(Leg):
    """A leg that reranks a pool of candidates with its native operator (``kind`` names it)."""

    #: Whether the operator returns CFS-R's coefficients.
    has_coef: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A reranking kind's parameters are its operator's table less ``k`` (``depth`` plays it):
        # the one place that ties a kind to its table, so the kinds' modules only list the fields.
        if "kind" in cls.__dict__:
            cls.field_checks = _tables.operator_params(cls.kind)

    @property
    def pool_depth(self) -> int:
        """Size of the prefilter pool the operator reranks."""
        raise NotImplementedError

    @property
    def is_union(self) -> bool:
        return getattr(self, "pool", POOL_DENSE) == POOL_UNION

    def batch_pool(self) -> Optional[int]:
        """The ``p`` of the kind's ``*_batch`` operator (None: the operator derives its pool)."""
        return self.pool_depth

    def union_depth(self) -> int:
        return 0

    def dense_depth(self, batched: bool) -> int:
        if self.is_union:
            return self.p  # type: ignore[attr-defined]
        return 0 if batched else self.pool_depth

    def lexical_depth(self) -> int:
        return self.union_depth() if self.is_union else 0

    def coverage(self) -> int:
        return min(self.depth, self.pool_depth)

    def _output(self, native: Any) -> LegOutput:
        return LegOutput(native.ids, native.scores, native.coef if self.has_coef else None)

    def run(self, ctx: QueryContext) -> list[LegOutput]:
        E, params = ctx.corpus.E, operator_kwargs(self)
        if self.is_union:
            p, union_p = self.p, self.union_depth()  # type: ignore[attr-defined]
            dense, lexical = ctx.dense_tops(p), ctx.lexical_tops(union_p)

            def one(b: int) -> LegOutput:
                pool_ids = np.union1d(dense[b].ids[:p], lexical[b].ids[:union_p])
                return self._output(_kernels.pool_trusted(self.kind, pool_ids, E[pool_ids], ctx.Q[b], self.depth, None,
                                                       params))

            return ctx.map_queries(one)
        if ctx.n == 1:
            depth = self.pool_depth
            pre = ctx.dense_tops(depth)[0]
            ids = pre.ids[:depth]
            return [self._output(_kernels.pool_trusted(self.kind, ids, E[ids], ctx.Q[0], self.depth, pre.scores[:depth],
                                                    params))]
        r = _kernels.batch_trusted(self.kind, E, ctx.Q, self.depth, self.batch_pool(), ctx.subset, ctx.n_threads, params)
        coef = r.coef if self.has_coef else [None] * ctx.n
        return [LegOutput(ids, scores, c) for ids, scores, c in zip(r.ids, r.scores, coef)]


class PooledLeg(RerankLeg):
    """A reranking leg with a pool size ``p`` (CFS-R, CFS, MMR) and, where it has the field, a
    ``pool`` mode (:data:`POOL_MODES`) and the BM25 depth ``union_p`` of a union pool."""

    @property
    def pool_depth(self) -> int:
        return self.p  # type: ignore[attr-defined]

    def union_depth(self) -> int:
        union_p = getattr(self, "union_p", None)
        return self.p if union_p is None else union_p  # type: ignore[attr-defined]

    def check_fields(self, owner: str) -> None:
        """``p`` >= ``depth``, ``pool`` in :data:`POOL_MODES`, ``union_p`` only with a union pool."""
        self.set_field("p", _v.param(_tables.lookup("prefilter", "p"), self.p, f"{owner}.p"))  # type: ignore[attr-defined]
        if self.p < self.depth:  # type: ignore[attr-defined]
            msg = f"{owner}.p (pool size {self.p}) must be >= depth ({self.depth})"  # type: ignore[attr-defined]
            raise ValueError(msg)
        pool = _v.one_of(getattr(self, "pool", POOL_DENSE), f"{owner}.pool", POOL_MODES)
        union_p = getattr(self, "union_p", None)
        if union_p is not None:
            if pool != POOL_UNION:
                msg = f"{owner}.union_p is only used with pool={POOL_UNION!r}, got pool={pool!r}"
                raise ValueError(msg)
            self.set_field("union_p", _v.integer(union_p, f"{owner}.union_p", low=1))

    @property
    def needs_text(self) -> bool:  # type: ignore[override]
        return self.is_union
