"""Report of the memory store: scenario metrics per mode, and recall latency at scale.

Part 1 runs the committed adversarial suite (``fieldrank/data/memory_scenarios.*``, real
all-MiniLM-L6-v2 embeddings) with the suite budget (every quota 5, k = 5) and prints, per mode,
the metrics defined in ``fieldrank.evaluation._memory_scenarios`` and ``docs/memory.md``.

Part 2 puts the suite's memories among synthetic filler (random unit vectors, synthetic texts;
d = 384) to reach 10k and 100k memories in the cues' tenant and measures recall latency per mode
with the default parameters (quotas 50/50/20/20/20/20, k = 10), plus the protected-memory recall
at that scale: for each of the three protected cues a crowd of 100 recent synthetic memories is
placed closer to the cue than its protected memory on both signals (cosine 0.45-0.70 to the cue,
two of the cue's words in each text). Latency: wall clock (``time.perf_counter``) and CPU time of
the calling thread (``time.thread_time``; less sensitive to other load on the machine) of
``MemoryStore.recall(reinforce=False)`` over every cue, ``--repeats`` times, after one warm-up
pass (the first recall of a mode also builds the BM25 index when needed; reported as
``first recall``).

Usage (from the repository root)::

    python benchmarks/memory_scenarios.py                 # both parts, sizes 10k and 100k
    python benchmarks/memory_scenarios.py --sizes 10000 --repeats 20 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

from fieldrank.memory import DEFAULT_PARAMS, MODES, MemoryStore
from fieldrank.evaluation._memory_scenarios import (
    SUITE_K,
    SUITE_QUOTA,
    build_store,
    evaluate,
    load_suite,
    recall_cue,
    suite_params,
    synthetic_filler,
)

SEED = 20260116
SCALE_K = 10


def machine() -> dict:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_1_5_15": [round(x, 2) for x in load],
    }


def suite_report(repeats: int) -> dict:
    suite = load_suite()
    store, key_to_id = build_store(suite, suite_params())
    return evaluate(store, key_to_id, suite, repeats=repeats)


def print_suite(metrics: dict) -> None:
    print(f"\n## Scenario suite (quota {SUITE_QUOTA} per generator, k = {SUITE_K})\n")
    header = ("mode", "budget", "protected_memory_recall@budget", "protected_hit@k", "recall@k", "distractor_wins",
              "forbidden_returned", "rescued_by_non_dense_signal", "false_rescue_rate (count)", "p50 ms", "p95 ms")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for mode, m in metrics.items():
        print(f"| {mode} | {m['budget']} | {m['protected_memory_recall@budget']:.2f} | {m['protected_hit@k']:.2f} | "
              f"{m['recall@k']:.2f} | {m['distractor_wins']} | {m['forbidden_returned']} | "
              f"{m['rescued_by_non_dense_signal']} | {m['false_rescue_rate']:.2f} ({m['false_rescues']}) | "
              f"{m['latency_p50_ms']:.2f} | {m['latency_p95_ms']:.2f} |")
    print("\nsignal_contribution_rate (share of returned hits each generator admitted):\n")
    generators = ("dense", "bm25", "tag", "temporal", "importance", "graph")
    print("| mode | " + " | ".join(generators) + " |")
    print("|---|" + "---|" * len(generators))
    for mode, m in metrics.items():
        rates = m["signal_contribution_rate"]
        cells = [f"{rates[g]:.2f}" if g in rates else "-" for g in generators]
        print(f"| {mode} | " + " | ".join(cells) + " |")


#: Near-cue crowd per protected cue at scale: recent filler closer to the cue than the protected
#: memory on both signals (cosine 0.45-0.70 and two of the cue's words in each text).
CROWD_PER_CUE = 100


def scale_report(size: int, repeats: int) -> dict:
    suite = load_suite()
    tenant = suite.manifest["main_tenant"]
    own = sum(1 for m in suite.memories if m["tenant"] == tenant)
    cues = [c for c in suite.cues if c["tenant"] == tenant]
    protected_cues = [c for c in cues if c["protected"]]
    rng = np.random.default_rng(SEED + size)
    store = MemoryStore(dim=suite.dim, params=DEFAULT_PARAMS)
    start = time.perf_counter()
    for c in protected_cues:
        words = [w for w in c["text"].lower().strip(".?!").split() if len(w) > 3]
        crowd = synthetic_filler(rng, CROWD_PER_CUE, suite.dim, tenant=tenant, reference_time=suite.reference_time,
                                 near_vector=suite.cue_vector(c), near_count=CROWD_PER_CUE, near_words=words)
        store.add_many(crowd.pop("texts"), crowd.pop("embeddings"), **crowd)
    rest = size - own - CROWD_PER_CUE * len(protected_cues)
    filler = synthetic_filler(rng, rest, suite.dim, tenant=tenant, reference_time=suite.reference_time)
    store, key_to_id = build_store(suite, DEFAULT_PARAMS, filler=filler, store=store)
    build_seconds = time.perf_counter() - start
    out: dict = {"memories_in_tenant": size, "memories_total": len(store), "add_many_s": build_seconds, "modes": {}}
    for mode in MODES:
        first = time.perf_counter()
        recall_cue(store, suite, cues[0], mode, SCALE_K)
        first_seconds = time.perf_counter() - first
        for c in cues:  # warm-up pass
            recall_cue(store, suite, c, mode, SCALE_K)
        wall, cpu = [], []
        protected_total = protected_admitted = 0
        for _ in range(repeats):
            for c in cues:
                start_wall, start_cpu = time.perf_counter(), time.thread_time()
                result = recall_cue(store, suite, c, mode, SCALE_K)
                cpu.append(time.thread_time() - start_cpu)
                wall.append(time.perf_counter() - start_wall)
                protected = {key_to_id[k] for k in c["protected"]}
                protected_total += len(protected)
                protected_admitted += len(protected & set(result.candidate_ids.tolist()))
        wall_ms, cpu_ms = np.asarray(wall) * 1e3, np.asarray(cpu) * 1e3
        out["modes"][mode] = {
            "latency_p50_ms": float(np.percentile(wall_ms, 50)),
            "latency_p95_ms": float(np.percentile(wall_ms, 95)),
            "cpu_p50_ms": float(np.percentile(cpu_ms, 50)),
            "cpu_p95_ms": float(np.percentile(cpu_ms, 95)),
            "first_recall_s": first_seconds,
            "protected_memory_recall@budget": protected_admitted / protected_total,
            "budget": int(sum(DEFAULT_PARAMS.quota(g) for g in _generators(mode))),
        }
    return out


def _generators(mode: str):
    from fieldrank.memory import MODE_GENERATORS

    return MODE_GENERATORS[mode]


def print_scale(reports: list[dict]) -> None:
    print(f"\n## Recall latency at scale (d = 384, default parameters, k = {SCALE_K})\n")
    print("| memories | mode | budget | p50 ms | p95 ms | CPU p50 ms | CPU p95 ms | first recall s | "
          "protected_memory_recall@budget |")
    print("|---|---|---|---|---|---|---|---|---|")
    for report in reports:
        for mode, m in report["modes"].items():
            print(f"| {report['memories_in_tenant']:,} | {mode} | {m['budget']} | {m['latency_p50_ms']:.1f} | "
                  f"{m['latency_p95_ms']:.1f} | {m['cpu_p50_ms']:.1f} | {m['cpu_p95_ms']:.1f} | "
                  f"{m['first_recall_s']:.2f} | {m['protected_memory_recall@budget']:.2f} |")
    for report in reports:
        print(f"\n{report['memories_in_tenant']:,} memories: add_many {report['add_many_s']:.2f} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=10, help="passes over the cues per mode (after a warm-up)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    info = machine()
    print(f"# fieldrank memory store report\n\nmachine: {json.dumps(info)}")
    suite_metrics = suite_report(args.repeats)
    print_suite(suite_metrics)
    scale = [scale_report(size, args.repeats) for size in args.sizes]
    if scale:
        print_scale(scale)
    info_after = machine()["load_average_1_5_15"]
    print(f"\nload average after the run: {info_after}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"machine": info, "suite": suite_metrics, "scale": scale}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
