"""MemoryStore default-mode recall vs one native fp32 prefilter scan over the tenant's rows (issue 17).

The target: ``recall()`` (default mode, k = 10, ``reinforce=False``) at 10k and 50k memories of
one tenant within 2x ``fieldrank.prefilter`` over the same rows (the memory-bandwidth floor);
compare ``time_recall_default`` with ``time_prefilter_tenant_rows`` of the same N. The store holds
2 % durable memories (the protected tier it scans with every cue) and a second tenant of N/10.

``MemoryRecallLivedIn`` times what a user gets with every default, ``reinforce=True`` included
(bookkeeping and co-recall links written per recall), on a store that has already answered
:data:`LIVED_IN_RECALLS` reinforcing recalls of varied cues (so the graph has links to spread).
"""

from __future__ import annotations

import numpy as np

import fieldrank
from fieldrank import MemoryStore

from .common import SEED, queries, require, unit_rows

#: Words the synthetic memories are made of (BM25 needs text).
_WORDS = ("deploy", "release", "friday", "garden", "coffee", "budget", "meeting", "server", "kids", "dinner",
          "travel", "invoice", "doctor", "music", "project", "weekend", "rain", "train", "review", "launch")
DURABLE_SHARE = 0.02
#: Reinforcing recalls of varied cues a lived-in store has answered before it is timed.
LIVED_IN_RECALLS = 100
NOW = 1_760_000_000.0
DAY = 86400.0


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    picks = rng.integers(0, len(_WORDS), size=(n, 6))
    return [" ".join(_WORDS[i] for i in row) for row in picks]


def _store(self, N, d):
    """The store of both classes: N memories of "agent" (2 % durable) and N/10 of "other"."""
    require(N, d)
    rng = np.random.default_rng(SEED)
    self.E = unit_rows(N, d)
    self.q = queries(self.E, 1)[0]
    self.store = MemoryStore(dim=d)
    importance = np.where(rng.random(N) < DURABLE_SHARE, 0.9, rng.uniform(0.05, 0.6, N))
    self.store.add_many(_texts(rng, N), self.E, tenants="agent", importances=importance,
                        created_at=NOW - rng.uniform(0, 365, N) * DAY)
    other = unit_rows(N // 10, d)
    self.store.add_many(_texts(rng, N // 10), other, tenants="other", created_at=NOW)
    self.cue = "deploy the release before the weekend"
    self.tenant_rows = np.arange(N, dtype=np.int64)
    self.all_rows = np.vstack([self.E, other])
    self.store.recall(self.cue, self.q, 10, tenant="agent", at_time=NOW, reinforce=False)  # BM25 build


class _TenantStore:
    """The grid and the store (:func:`_store`) both classes time; no benchmark of its own."""

    params = [[10_000, 50_000], [384]]
    param_names = ["N", "d"]
    timeout = 600

    def setup(self, N, d):
        _store(self, N, d)


class MemoryRecall(_TenantStore):
    def time_recall_default(self, N, d):
        self.store.recall(self.cue, self.q, 10, tenant="agent", at_time=NOW, reinforce=False)

    def time_prefilter_tenant_rows(self, N, d):
        fieldrank.prefilter(self.all_rows, self.q, 10, subset=self.tenant_rows)


class MemoryRecallLivedIn(_TenantStore):
    """``recall()`` with every default (``reinforce=True``) on a store with co-recall links."""

    def setup(self, N, d):
        super().setup(N, d)
        words = _texts(np.random.default_rng(SEED + 2), LIVED_IN_RECALLS)
        for i, q in enumerate(queries(self.E, LIVED_IN_RECALLS, seed=SEED + 3)):
            self.store.recall(words[i], q, 10, tenant="agent", at_time=NOW + i * DAY)

    def time_recall_defaults_reinforcing(self, N, d):
        self.store.recall(self.cue, self.q, 10, tenant="agent", at_time=NOW + LIVED_IN_RECALLS * DAY)

    def time_recall_no_reinforce(self, N, d):
        self.store.recall(self.cue, self.q, 10, tenant="agent", at_time=NOW + LIVED_IN_RECALLS * DAY,
                          reinforce=False)
