"""The memory store's adversarial suite at 1k / 10k / 50k filler, per case and mode (issue 17).

Scenarios and their embeddings are committed (:mod:`fieldrank.evaluation._memory_suite`); the
filler is LoCoMo conversation text drawn at run time from ``../shared/data/locomo`` (skipped when
absent). Writes a Markdown report.

Run (from the repository root)::

    python benchmarks/memory_adversarial.py --out docs/results/memory_adversarial.md
"""

from __future__ import annotations

import argparse
import sys
import time

from fieldrank.evaluation import _memory_suite as ms
from results_page import cell, opening

SIZES = (1_000, 10_000, 50_000)
MODES = ("hybrid", "full", "vector")
#: The invariant (protected memories reach fused scoring) is also checked at this size, default mode.
INVARIANT_ONLY_SIZES = (100_000,)


def run(sizes, modes, invariant_sizes) -> list[dict]:
    vectors = ms.load_vectors()
    suite = ms.scenarios()
    rows = []
    for size in list(sizes) + list(invariant_sizes):
        filler = ms.load_filler(size)
        if filler is None:
            return []
        started = time.perf_counter()
        store, key_to_id = ms.build_store(filler, vectors, suite)
        build_seconds = time.perf_counter() - started
        chosen = modes if size in sizes else ("hybrid",)
        chosen_cases = ms.CASES if size in sizes else ("a",)
        metrics = ms.evaluate(store, key_to_id, vectors, [s for s in suite if s.case in chosen_cases], chosen)
        rows.append({"size": size, "important": filler["important_count"], "build_seconds": build_seconds,
                     "memories": len(store), "metrics": metrics})
        print(f"size {size}: built in {build_seconds:.1f} s", file=sys.stderr)
    return rows


def report(rows: list[dict], command: str) -> str:
    lines = [
        *opening("Memory store: adversarial suite", command),
        "Five cases of `shared/seeds/003` (>= 40 hand-written scenarios each, all-MiniLM-L6-v2 vectors "
        "committed) among LoCoMo filler drawn at run time (~2 % important; beyond 5,882 turns the "
        "conversations are drawn again with a small embedding jitter, so some filler texts repeat). "
        "One tenant holds all scenarios and the filler; k = 10; default parameters. Metric "
        "definitions: `fieldrank/evaluation/_memory_suite.py`. `dense` = plain cosine top-10 over the "
        "tenant; `core` = the relevance core alone (the `default` preset's scorer).",
        "",
        "| filler | mode | case | n | protected recall@budget | hit@1 | hit@10 | dense hit@1 | dense hit@10 | "
        "core hit@1 | core hit@10 | rescued by non-dense | false rescue (count/rescues) | "
        "false rescue over a relevant one (seed 003; count/rescues) | false rescue vs dense-50 | "
        "stale < current (marked / unmarked) | p50 ms | p95 ms |",
        "|" + "---|" * 18,
    ]
    for row in rows:
        for mode, per_case in row["metrics"].items():
            for case, m in per_case.items():
                stale = (f"{cell(m['stale_below_current_marked'])} / {cell(m['stale_below_current_unmarked'])}"
                         if m["stale_below_current_marked"] is not None else "-")
                lines.append(
                    f"| {row['size']:,} | {mode} | {case} | {m['scenarios']} | {cell(m['protected_recall@budget'])} | "
                    f"{m['hit@1']:.2f} | {m['hit@10']:.2f} | {m['dense_hit@1']:.2f} | {m['dense_hit@10']:.2f} | "
                    f"{m['relevance_hit@1']:.2f} | {m['relevance_hit@10']:.2f} | {m['rescued_by_non_dense']} | "
                    f"{m['false_rescue_rate']:.2f} ({m['false_rescues']}/{m['rescues_by_layer']}) | "
                    f"{m['false_rescue_over_relevant_rate']:.2f} "
                    f"({m['false_rescues_over_relevant']}/{m['rescues_by_layer']}) | "
                    f"{m['false_rescue_rate_vs_dense']:.2f} | {stale} | {m['latency_p50_ms']:.1f} | "
                    f"{m['latency_p95_ms']:.1f} |")
    lines += ["", "Signal contribution (share of returned hits each generator admitted), default mode:", "",
              "| filler | case | " + " | ".join(("relevance", "dense", "bm25", "importance")) + " |",
              "|---|---|---|---|---|---|"]
    for row in rows:
        for case, m in row["metrics"].get("hybrid", {}).items():
            share = m["signal_contribution"]
            lines.append(f"| {row['size']:,} | {case} | " + " | ".join(
                f"{share.get(g, 0.0):.2f}" for g in ("relevance", "dense", "bm25", "importance")) + " |")
    lines += ["", "Stores: " + ", ".join(
        f"{row['size']:,} filler ({row['important']} important) = {row['memories']:,} memories, built in "
        f"{row['build_seconds']:.1f} s" for row in rows) + "."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--modes", nargs="+", default=list(MODES))
    parser.add_argument("--invariant-sizes", nargs="*", type=int, default=list(INVARIANT_ONLY_SIZES))
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    rows = run(args.sizes, args.modes, args.invariant_sizes)
    if not rows:
        print("skipped: LoCoMo filler not found under ../shared/data/locomo")
        return 0
    text = report(rows, "python benchmarks/memory_adversarial.py " + " ".join(
        argv if argv is not None else sys.argv[1:]))
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
