"""Median per-query latency of ``HybridRetriever.search`` vs ``search_batch`` on LoCoMo.

Corpus: all 5,882 LoCoMo turns pooled (``embed_text``), the ``mpnet-base-v2`` embeddings
(N = 5,882, d = 768); queries: the 1,986 questions (``question``) with their embeddings. For
each preset, in one run and side by side:

* ``direct``  — the same legs called one by one (``prefilter``, ``BM25Index.top``, the
  reranking operator, ``rrf``): the floor that ``search`` adds its Python overhead to;
* ``search``  — one query per call; median and 90th percentile over the queries;
* ``batch``   — ``search_batch`` over all queries (``--threads``, default all cores), wall
  time / number of queries, median over ``--repeats`` runs; also with one thread;
* ``batch/conv`` — ``search_batch`` with per-question subsets (each question ranks only its
  own conversation, as the evaluation does).

The run also checks that ``search_batch`` returns exactly what ``search`` returns.

Run from the repository root (LoCoMo data in ../shared/data/locomo)::

    python benchmarks/hybrid_latency.py [--presets rrf2 rrf_cfsr] [--queries 500] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import fieldrank
import fieldrank.temporal
from fieldrank.config import BM25Leg, CFSLeg, CFSRLeg, CosineLeg, MMRLeg, RingLeg, TemporalLeg
from fieldrank.evaluation import locomo
from fieldrank.hybrid import HybridRetriever

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo"
DEFAULT_EMBEDDINGS = "mpnet-base-v2"
DEFAULT_PRESETS = ("default", "rrf2", "rrf_cfsr")
DEFAULT_REPEATS = 3
WARMUP_QUERIES = 20
PERCENTILE = 90
MS = 1e3


def _load(data: Path, embeddings: str):
    """Pooled turns (``embed_text``), questions and one embedding set, through the harness's
    checked loader; each question's subset is its own conversation's rows."""
    loaded = locomo.load_locomo(data, embeddings, checksums=False)
    subsets = {c: np.arange(start, end) for c, (start, end) in loaded.conv_ranges.items()}
    query_subsets = [subsets[int(c)] for c in loaded.questions.conv_index]
    return (list(loaded.turns.embed_text), loaded.turn_embeddings, list(loaded.questions.question),
            loaded.question_embeddings, query_subsets)


def _timeline(retriever: HybridRetriever) -> fieldrank.temporal.Timeline:
    """The timeline a retriever built without one uses: corpus order is one session, cues from the texts."""
    return fieldrank.temporal.Timeline(session=np.zeros(len(retriever), dtype=np.int64),
                                       cue=fieldrank.temporal.time_cues(retriever.texts))


def _direct(retriever: HybridRetriever, text: str, q: np.ndarray, timeline=None):
    """The legs of the config called one by one through the public operators, then ``rrf``."""
    E = retriever.embeddings
    legs = []
    for leg in retriever.config.legs:
        if isinstance(leg, CosineLeg):
            legs.append(fieldrank.prefilter(E, q, leg.depth).ids)
        elif isinstance(leg, BM25Leg):
            legs.append(retriever.bm25.top(text, leg.depth)[0])
        elif isinstance(leg, CFSRLeg):
            legs.append(fieldrank.cfsr(E, q, leg.depth, p=leg.p, **leg.operator_kwargs()).ids)
        elif isinstance(leg, CFSLeg):
            legs.append(fieldrank.cfs(E, q, leg.depth, p=leg.p, **leg.operator_kwargs()).ids)
        elif isinstance(leg, MMRLeg):
            legs.append(fieldrank.mmr(E, q, leg.depth, p=leg.p, **leg.operator_kwargs()).ids)
        elif isinstance(leg, RingLeg):
            legs.append(fieldrank.ring(E, q, leg.depth, **leg.operator_kwargs()).ids)
        elif isinstance(leg, TemporalLeg):
            legs.append(fieldrank.temporal.temporal(E, q, retriever.bm25.scores(text), leg.depth, timeline=timeline,
                                                    question=text, params=leg.params()).ids)
    return fieldrank.rrf(legs, retriever.config.weights, retriever.config.k, k0=retriever.config.k0)


def _per_query_batch(fn, n_queries: int, repeats: int) -> float:
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        walls.append((time.perf_counter() - start) / n_queries)
    return statistics.median(walls)


def run(data: Path, embeddings: str, presets, n_queries, repeats: int, threads: int) -> dict:
    texts, E, q_texts, Q, q_subsets = _load(data, embeddings)
    n = len(q_texts) if n_queries is None else min(n_queries, len(q_texts))
    q_texts, Q, q_subsets = q_texts[:n], np.ascontiguousarray(Q[:n]), q_subsets[:n]
    start = time.perf_counter()
    base = HybridRetriever(texts, E, presets[0])
    build_s = time.perf_counter() - start
    rows = []
    for name in presets:
        r = base.with_config(name)
        timeline = _timeline(r)
        for i in range(min(WARMUP_QUERIES, n)):
            r.search(q_texts[i], Q[i])
        # Interleaved per query, so that load drifting during the run hits both alike.
        direct, single, single_results = [], [], []
        for i in range(n):
            start = time.perf_counter()
            _direct(r, q_texts[i], Q[i], timeline)
            middle = time.perf_counter()
            single_results.append(r.search(q_texts[i], Q[i]))
            direct.append(middle - start)
            single.append(time.perf_counter() - middle)
        batch_results = r.search_batch(q_texts, Q, n_threads=threads)
        identical = all(np.array_equal(a.ids, b.ids) and np.array_equal(a.scores, b.scores)
                        for a, b in zip(single_results, batch_results))
        if not identical:
            msg = f"{name}: search_batch differs from search"
            raise AssertionError(msg)
        batch = _per_query_batch(lambda: r.search_batch(q_texts, Q, n_threads=threads), n, repeats)
        batch_one = _per_query_batch(lambda: r.search_batch(q_texts, Q, n_threads=1), n, repeats)
        batch_conv = _per_query_batch(lambda: r.search_batch(q_texts, Q, subsets=q_subsets, n_threads=threads),
                                      n, repeats)
        rows.append({
            "preset": name,
            "direct_median_ms": statistics.median(direct) * MS,
            "search_median_ms": statistics.median(single) * MS,
            "search_p90_ms": float(np.percentile(single, PERCENTILE)) * MS,
            "batch_per_query_ms": batch * MS,
            "batch_1_thread_per_query_ms": batch_one * MS,
            "batch_per_conversation_per_query_ms": batch_conv * MS,
            "batch_equals_search": identical,
        })
    return {
        "corpus": {"n_docs": int(E.shape[0]), "dim": int(E.shape[1]), "embeddings": embeddings},
        "n_queries": n,
        "repeats": repeats,
        "threads": threads if threads > 0 else os.cpu_count(),
        "build_s": build_s,
        "machine": {"cpu": _cpu_name(), "cores": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "fieldrank_build": fieldrank.build_info()},
        "rows": rows,
    }


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def format_table(report: dict) -> str:
    corpus = report["corpus"]
    lines = [
        f"N = {corpus['n_docs']:,}, d = {corpus['dim']} ({corpus['embeddings']}), {report['n_queries']} queries, "
        f"{report['threads']} threads, {report['machine']['cpu']} ({report['machine']['cores']} cores); "
        f"build {report['build_s']:.2f} s",
        "",
        "| preset | direct legs (ms) | search median (ms) | search p90 (ms) | search_batch / query (ms) "
        "| batch, 1 thread (ms) | batch, per-conversation subsets (ms) | batch == search |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        lines.append(
            f"| {row['preset']} | {row['direct_median_ms']:.3f} | {row['search_median_ms']:.3f} "
            f"| {row['search_p90_ms']:.3f} | {row['batch_per_query_ms']:.3f} "
            f"| {row['batch_1_thread_per_query_ms']:.3f} | {row['batch_per_conversation_per_query_ms']:.3f} "
            f"| {'yes' if row['batch_equals_search'] else 'NO'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo folder (default: %(default)s)")
    parser.add_argument("--embeddings", default=DEFAULT_EMBEDDINGS, help="embedding set (default: %(default)s)")
    parser.add_argument("--presets", nargs="+", default=list(DEFAULT_PRESETS), help="presets (default: %(default)s)")
    parser.add_argument("--queries", type=int, default=None, help="first N questions (default: all)")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="batch repeats (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=0, help="batch threads, 0 = all cores (default: %(default)s)")
    parser.add_argument("--json", type=Path, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    if not (args.data / "turns.jsonl").exists():
        print(f"hybrid_latency: error: LoCoMo data not found at {args.data}", file=sys.stderr)
        return 1
    report = run(args.data, args.embeddings, args.presets, args.queries, args.repeats, args.threads)
    print(format_table(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
