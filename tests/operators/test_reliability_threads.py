"""Thread safety: concurrent calls on shared inputs give the serial answers, bit for bit.

* 8 Python threads run every operator (single, batch and pool forms, native and reference)
  on the same shared, read-only arrays at once; each result equals the serial result.
* Batch results are bit-identical for n_threads in {1, 2, 8} (and equal to the single form).
* An exception raised inside a C++ worker thread reaches Python as ValueError, also while
  8 Python threads do the same.
* 8 threads search one shared HybridRetriever (once fieldrank.hybrid exists).

No timing asserts: the tests check answers, not speed. See docs/reliability.md for the
thread-safety table of every public object.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import fieldrank
import fieldrank.reference

from tests.helpers import unit_rows

N_PY_THREADS = 8
ROUNDS = 3
THREAD_COUNTS = (1, 2, 8)


@pytest.fixture(scope="module")
def shared():
    rng = np.random.default_rng(20261130)
    E = unit_rows(rng, 600, 48)
    E[7] = E[3]  # exact duplicates: the tie rule must hold under concurrency too
    Q = unit_rows(rng, 12, 48)
    subset = np.sort(rng.permutation(600)[:350]).astype(np.int64)
    pool_ids = rng.choice(10**12, size=200, replace=False).astype(np.int64)
    C = unit_rows(rng, 200, 48)
    for array in (E, Q, subset, pool_ids, C):
        array.setflags(write=False)  # any write from any thread raises
    return {"E": E, "Q": Q, "subset": subset, "pool_ids": pool_ids, "C": C}


def _tasks(fr, s):
    """(name, zero-argument call) for every operator form of module ``fr``."""
    E, Q, sub, ids, C = s["E"], s["Q"], s["subset"], s["pool_ids"], s["C"]
    q = Q[0]
    legs = [fr.prefilter(E, q, 10).ids, fr.prefilter(E, Q[1], 10).ids, np.arange(10, dtype=np.int64)]
    return [
        ("prefilter", lambda: fr.prefilter(E, q, 50)),
        ("prefilter_subset", lambda: fr.prefilter(E, q, 50, subset=sub)),
        ("prefilter_batch", lambda: fr.prefilter_batch(E, Q, 50, n_threads=4)),
        ("prefilter_pool", lambda: fr.prefilter_pool(ids, C, q, 30)),
        ("cfsr", lambda: fr.cfsr(E, q, 20)),
        ("cfsr_fista", lambda: fr.cfsr(E, q, 20, fista=True, subset=sub)),
        ("cfsr_batch", lambda: fr.cfsr_batch(E, Q, 20, n_threads=4)),
        ("cfsr_pool", lambda: fr.cfsr_pool(ids, C, q, 20)),
        ("cfs", lambda: fr.cfs(E, q, 20)),
        ("cfs_batch", lambda: fr.cfs_batch(E, Q, 20, subset=sub, n_threads=3)),
        ("cfs_pool", lambda: fr.cfs_pool(ids, C, q, 20)),
        ("mmr", lambda: fr.mmr(E, q, 10)),
        ("mmr_batch", lambda: fr.mmr_batch(E, Q, 10, n_threads=2)),
        ("mmr_pool", lambda: fr.mmr_pool(ids, C, q, 10)),
        ("ring", lambda: fr.ring(E, q, 10, seed=5)),
        ("ring_batch", lambda: fr.ring_batch(E, Q, 10, seed=5, n_threads=8)),
        ("ring_pool", lambda: fr.ring_pool(ids, C, q, 10, seed=5)),
        ("rrf", lambda: fr.rrf(legs, [1.0, 2.0, 0.5], 10)),
        ("rrf_batch", lambda: fr.rrf_batch([legs, legs[::-1]], None, 10)),
    ]


def _flatten(result) -> list:
    if isinstance(result, list):
        return [array for item in result for array in _flatten(item)]
    return [np.asarray(field) for field in result]


def _same(a, b) -> bool:
    fa, fb = _flatten(a), _flatten(b)
    return len(fa) == len(fb) and all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(fa, fb))


@pytest.mark.parametrize("module_name", ["native", "reference"])
def test_eight_python_threads_get_the_serial_results(shared, module_name):
    fr = fieldrank if module_name == "native" else fieldrank.reference
    tasks = _tasks(fr, shared)
    if module_name == "reference":  # the numpy twin is slower: fewer rounds, same coverage
        tasks = [task for task in tasks if not task[0].endswith("_batch")] + tasks[2:3]
    serial = {name: call() for name, call in tasks}
    start = threading.Barrier(N_PY_THREADS)

    def worker(offset: int) -> list:
        start.wait()  # all threads enter the operators together
        mismatches = []
        for round_ in range(ROUNDS):
            # Each thread walks the tasks from a different place, so different operators overlap.
            for i in range(len(tasks)):
                name, call = tasks[(i + offset + round_) % len(tasks)]
                if not _same(call(), serial[name]):
                    mismatches.append(name)
        return mismatches

    with ThreadPoolExecutor(N_PY_THREADS) as pool:
        results = list(pool.map(worker, range(N_PY_THREADS)))
    assert [name for mismatches in results for name in mismatches] == []


BATCHES = ["prefilter_batch", "cfsr_batch", "cfs_batch", "mmr_batch", "ring_batch"]


@pytest.mark.parametrize("name", BATCHES)
def test_batch_is_bit_identical_for_any_thread_count(shared, name):
    E, Q, sub = shared["E"], shared["Q"], shared["subset"]
    fn = getattr(fieldrank, name)
    single = getattr(fieldrank, name.removesuffix("_batch"))
    for subset in (None, sub):
        results = {n: fn(E, Q, 15, subset=subset, n_threads=n) for n in THREAD_COUNTS}
        for n in THREAD_COUNTS[1:]:
            assert _same(results[n], results[1]), f"{name} differs between n_threads=1 and {n}"
        for b in range(Q.shape[0]):
            one = single(E, Q[b], 15, subset=subset)
            assert np.array_equal(one.ids, results[8].ids[b]) and np.array_equal(one.scores, results[8].scores[b])


def test_rrf_batch_is_identical_to_the_single_form():
    rng = np.random.default_rng(3)
    queries = [[rng.permutation(40)[:12].astype(np.int64) for _ in range(3)] for _ in range(30)]
    fused = fieldrank.rrf_batch(queries, [1.0, 1.0, 3.0], 10)
    for legs, result in zip(queries, fused):
        assert _same(result, fieldrank.rrf(legs, [1.0, 1.0, 3.0], 10))


@pytest.fixture(scope="module")
def poisoned():
    """A corpus whose row 401 is NaN: the batch validates Q up front, but E's rows only inside
    the per-query scoring pass, which runs on the C++ worker threads."""
    rng = np.random.default_rng(11)
    E = unit_rows(rng, 500, 24)
    E[401, 3] = np.nan
    return E, unit_rows(rng, 32, 24)


@pytest.mark.parametrize("name", BATCHES)
@pytest.mark.parametrize("n_threads", THREAD_COUNTS)
def test_worker_thread_exception_reaches_python(poisoned, name, n_threads):
    E, Q = poisoned
    with pytest.raises(ValueError, match="row 401"):
        getattr(fieldrank, name)(E, Q, 10, n_threads=n_threads)


def test_worker_exceptions_under_eight_python_threads(poisoned):
    E, Q = poisoned
    start = threading.Barrier(N_PY_THREADS)

    def worker(i: int) -> int:
        start.wait()
        caught = 0
        for name in BATCHES * 2:
            try:
                getattr(fieldrank, name)(E, Q, 10, n_threads=4)
            except ValueError as exc:
                caught += "row 401" in str(exc)
        # The process is intact: a clean call still answers.
        assert fieldrank.prefilter(E[:400], Q[i % Q.shape[0]], 5).ids.shape == (5,)
        return caught

    with ThreadPoolExecutor(N_PY_THREADS) as pool:
        assert list(pool.map(worker, range(N_PY_THREADS))) == [2 * len(BATCHES)] * N_PY_THREADS


# ----------------------------------------------------------------------------- hybrid retriever

def _retriever_or_skip():
    hybrid = pytest.importorskip("fieldrank.hybrid")
    if not hasattr(hybrid, "HybridRetriever"):
        pytest.skip("fieldrank.hybrid.HybridRetriever is not there yet")
    return hybrid.HybridRetriever


def _demo_corpus(n: int = 240, d: int = 32):
    rng = np.random.default_rng(5)
    words = ["meeting", "paris", "dog", "birthday", "coffee", "guitar", "moved", "sister", "job", "garden",
             "book", "marathon", "allergy", "flight", "recipe", "painting", "exam", "wedding", "piano", "hike"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(3, 9)))) for _ in range(n)]
    return texts, unit_rows(rng, n, d), rng


def _hits(result):
    """The comparable content of a SearchResult: ids and scores."""
    return np.asarray(result.ids), np.asarray(result.scores)


def test_eight_threads_search_one_shared_retriever():
    HybridRetriever = _retriever_or_skip()
    texts, E, rng = _demo_corpus()
    retriever = HybridRetriever(texts, E)
    queries = [(texts[int(i)], E[int(i)]) for i in rng.permutation(len(texts))[:16]]
    serial = [_hits(retriever.search(text, vector)) for text, vector in queries]
    start = threading.Barrier(N_PY_THREADS)

    def worker(offset: int) -> int:
        start.wait()
        bad = 0
        for round_ in range(ROUNDS):
            for i in range(len(queries)):
                j = (i + offset + round_) % len(queries)
                ids, scores = _hits(retriever.search(*queries[j]))
                bad += not (np.array_equal(ids, serial[j][0]) and np.array_equal(scores, serial[j][1]))
        return bad

    with ThreadPoolExecutor(N_PY_THREADS) as pool:
        assert sum(pool.map(worker, range(N_PY_THREADS))) == 0
    if hasattr(retriever, "search_batch"):
        batch = retriever.search_batch([t for t, _ in queries], np.stack([v for _, v in queries]))
        for result, (ids, scores) in zip(batch, serial):
            assert np.array_equal(_hits(result)[0], ids) and np.array_equal(_hits(result)[1], scores)
