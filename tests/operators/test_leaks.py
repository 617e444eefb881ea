"""Memory leaks: many calls of every operator keep the resident set size flat.

Each entry point is called ``FIELDRANK_LEAK_CALLS`` times (default 10,000 in CI; the full
check is 200,000, see docs/reliability.md) on small inputs after a warm-up; the resident set
size read from /proc/self/statm may grow by at most ``RSS_TOLERANCE_MIB`` over the measured
calls. A leak of L bytes per call shows as L x calls: with the defaults, CI catches a leak
of about 400 bytes per call and the full run one of about 20 bytes per call. Error paths
(an exception thrown in C++ and translated to ValueError) are measured too.

Linux only (skipped where /proc/self/statm does not exist).
"""

from __future__ import annotations

import gc
import logging
import os
from pathlib import Path

import numpy as np
import pytest

import fieldrank
import fieldrank.reference

from tests.helpers import unit_rows

STATM = Path("/proc/self/statm")
CALLS = int(os.environ.get("FIELDRANK_LEAK_CALLS", "10000"))
WARMUP_CALLS = max(CALLS // 10, 500)
RSS_TOLERANCE_MIB = 4.0
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
log = logging.getLogger(__name__)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not STATM.exists(), reason="needs /proc/self/statm (Linux)"),
]


def rss_mib() -> float:
    """Resident set size of this process in MiB (second field of /proc/self/statm, in pages)."""
    return int(STATM.read_text().split()[1]) * PAGE_BYTES / 2**20


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(20261130)
    E = unit_rows(rng, 64, 8)
    return {
        "E": E, "q": E[0].copy(), "Q": E[:4].copy(), "ids": np.arange(100, 132, dtype=np.int64), "C": E[:32].copy(),
        "sims": E[:32] @ E[0], "subset": np.arange(0, 64, 2, dtype=np.int64),
        "legs": [np.arange(10, dtype=np.int64), np.arange(5, 15, dtype=np.int64)],
        "bad_E": np.vstack([E, np.full((1, 8), np.nan, np.float32)]),
        "QC": fieldrank.quantize(E, "bf16"),
    }


def _calls(fr, d):
    E, q, Q, ids, C, sims, sub, legs = d["E"], d["q"], d["Q"], d["ids"], d["C"], d["sims"], d["subset"], d["legs"]
    return {
        "prefilter": lambda: fr.prefilter(E, q, 10, subset=sub),
        "prefilter_batch": lambda: fr.prefilter_batch(E, Q, 10, n_threads=2),
        "prefilter_pool": lambda: fr.prefilter_pool(ids, C, q, 10),
        "cfsr": lambda: fr.cfsr(E, q, 10, p=32, iters=10),
        "cfsr_batch": lambda: fr.cfsr_batch(E, Q, 10, p=32, iters=10, fista=True, n_threads=2),
        "cfsr_pool": lambda: fr.cfsr_pool(ids, C, q, 10, iters=10, sims=sims),
        "cfs": lambda: fr.cfs(E, q, 10, p=32, subset=sub),
        "cfs_batch": lambda: fr.cfs_batch(E, Q, 10, p=32, n_threads=2),
        "cfs_pool": lambda: fr.cfs_pool(ids, C, q, 10),
        "mmr": lambda: fr.mmr(E, q, 10, p=32),
        "mmr_batch": lambda: fr.mmr_batch(E, Q, 10, p=32, n_threads=2),
        "mmr_pool": lambda: fr.mmr_pool(ids, C, q, 10, sims=sims),
        "ring": lambda: fr.ring(E, q, 5),
        "ring_batch": lambda: fr.ring_batch(E, Q, 5, ablation=True, n_threads=2),
        "ring_pool": lambda: fr.ring_pool(ids, C, q, 5),
        "rrf": lambda: fr.rrf(legs, [1.0, 2.0], 10),
        "rrf_batch": lambda: fr.rrf_batch([legs, legs[::-1]], None, 10),
        "quantize": lambda: fr.quantize(E, "int8"),
        "prefilter_quantized": lambda: fr.prefilter_quantized(d["QC"], E, q, 10, subset=sub),
        "prefilter_quantized_batch": lambda: fr.prefilter_quantized_batch(d["QC"], E, Q, 10, n_threads=2),
    }


def _growth(call, calls: int) -> tuple[float, float]:
    for _ in range(WARMUP_CALLS):
        call()
    gc.collect()
    before = rss_mib()
    for _ in range(calls):
        call()
    gc.collect()
    return before, rss_mib() - before


NATIVE_NAMES = list(fieldrank.operators.__all__)


@pytest.mark.parametrize("name", NATIVE_NAMES)
def test_native_operator_does_not_leak(data, name):
    before, growth = _growth(_calls(fieldrank, data)[name], CALLS)
    log.info("leak check %s: %d calls, RSS %.1f MiB before, %+.2f MiB after", name, CALLS, before, growth)
    assert growth <= RSS_TOLERANCE_MIB, f"{name}: RSS grew {growth:.2f} MiB over {CALLS} calls"


def _raise_value_error(call):
    def run():
        try:
            call()
        except ValueError:
            return
        msg = "expected ValueError"
        raise AssertionError(msg)
    return run


ERROR_CALLS = {
    # Each raises inside the C++ core (a std::invalid_argument crossing into Python).
    "prefilter_bad_row": lambda d: fieldrank.prefilter(d["bad_E"], d["q"], 10),
    "batch_bad_row_in_worker": lambda d: fieldrank.cfs_batch(d["bad_E"], d["Q"], 10, n_threads=2),
    "rrf_repeated_id": lambda d: fieldrank._core.rrf([np.array([1, 1], np.int64)], [1.0], 10, 60.0),
}


@pytest.mark.parametrize("name", list(ERROR_CALLS))
def test_error_paths_do_not_leak(data, name):
    call = ERROR_CALLS[name]
    before, growth = _growth(_raise_value_error(lambda: call(data)), CALLS)
    log.info("leak check %s: %d calls, RSS %.1f MiB before, %+.2f MiB after", name, CALLS, before, growth)
    assert growth <= RSS_TOLERANCE_MIB, f"{name}: RSS grew {growth:.2f} MiB over {CALLS} calls"


def test_reference_does_not_leak(data):
    """The numpy twin, all entry points in one loop (fewer calls: it is slower)."""
    calls = list(_calls(fieldrank.reference, data).values())
    rounds = max(CALLS // 20, 100)

    def one_round():
        for call in calls:
            call()

    before, growth = _growth(one_round, rounds)
    log.info("leak check reference: %d rounds of %d calls, RSS %.1f MiB before, %+.2f MiB after",
             rounds, len(calls), before, growth)
    assert growth <= RSS_TOLERANCE_MIB
