"""Property-based fuzzing of ``MemoryStore`` (the strategies: ``tests/fuzzing.py``)."""

from __future__ import annotations

import math
import numpy as np
import pytest

pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.fuzzing import (  # noqa: E402
    COUNTS,
    INF,
    NAN,
    TEXTS,
    WORDS,
    _call,
    _memory_module,
    matrices,
    pick,
    plans,
    vectors,
)


@given(data=st.data())
def test_fuzz_memory_store(data):
    """add_many / recall / forget / update of an in-memory MemoryStore with fuzzed fields and cues."""
    memory = _memory_module()
    bad = data.draw(plans(["E", "fields", "q", "k", "mode"]))
    E, d, rng = data.draw(matrices("E", bad, max_rows=40, allow_empty=True))
    n = E.shape[0] if getattr(E, "ndim", 0) >= 1 else 0
    store = memory.MemoryStore(dim=d)
    texts = data.draw(st.lists(TEXTS, min_size=n, max_size=n), label="texts")
    fields = {}
    if "fields" in bad:
        name, value = data.draw(st.sampled_from([
            ("importances", 1.5), ("importances", NAN), ("valences", -2.0), ("tiers", "root"),
            ("storage_strengths", 0.5), ("tenants", ""), ("tags", [["x"]] * (n + 1)), ("recall_counts", -1),
            ("created_at", INF), ("importances", "high")]), label="bad field")
        fields[name] = value
    else:
        fields["importances"] = data.draw(st.floats(0.0, 1.0), label="importance")
        fields["tiers"] = data.draw(st.sampled_from(memory.TIERS), label="tier")
        fields["tags"] = [list(data.draw(st.lists(st.sampled_from(WORDS[:4]), max_size=2), label="tags"))
                          for _ in range(n)]
        fields["tenants"] = data.draw(st.sampled_from(["default", "other"]), label="tenant")
    added = _call(store.add_many, texts, E, **fields)
    live = set() if added is None else set(np.asarray(added).tolist())
    if added is not None and live and data.draw(st.booleans(), label="forget one"):
        forgotten = int(data.draw(st.sampled_from(sorted(live)), label="forgotten"))
        assert store.forget(forgotten)
        live.discard(forgotten)
    q = data.draw(vectors("q", bad, E, d, rng))
    k = pick(data.draw, bad, "k", *COUNTS)
    mode = data.draw(st.sampled_from(["nope", 3, None]) if "mode" in bad else st.sampled_from(memory.MODES),
                     label="mode")
    cue = data.draw(TEXTS, label="cue")
    tenant = fields.get("tenants", "default") if isinstance(fields.get("tenants"), str) else "default"
    result = _call(store.recall, cue, q, k, tenant=tenant, mode=mode)
    if result is None:
        return
    ids = result.ids
    assert ids.dtype == np.int64 and ids.shape[0] <= int(k)
    assert len(set(ids.tolist())) == ids.shape[0] and set(ids.tolist()) <= live
    for hit in result.hits:
        assert math.isfinite(hit.score) and math.isfinite(hit.fused_score), hit
