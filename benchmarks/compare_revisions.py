"""Search and recall latency of two source trees, side by side in one run (issue #33).

Runs each tree's own copy of ``benchmarks/hybrid_latency.py`` (``HybridRetriever.search``
p50/p90 per preset on LoCoMo) and ``benchmarks/memory_latency.py`` (default-mode
``MemoryStore.recall`` p50 next to one prefilter scan) as subprocesses, each with
``PYTHONPATH`` set to that tree's ``python/`` only, alternating the trees in an ABBA order
(base, new, new, base, base, new, ...) so that load drifting during the run hits both alike.
On a machine shared with other jobs one run's figure is noisy; the table therefore gives, per
measure, each side's median over the rounds and its round-to-round spread (min-max), and
whether the two sides' ranges overlap: "within noise" means the new median is no further from
the base median than the rounds of either side are from each other. The last column is the
ratio within each round (its two runs are adjacent), which cancels slow load drift::

    python benchmarks/compare_revisions.py --base ../base --new . --rounds 6 --queries 300

``--out`` also writes every round's raw figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

DEFAULT_PRESETS = ("cosine", "bm25", "rrf2", "default", "rrf_cfsr")
DEFAULT_LOCOMO = Path(os.environ.get("FIELDRANK_LOCOMO_DIR", "/work/shared/data/locomo"))
HYBRID_MEASURES = ("search_median_ms", "search_p90_ms", "direct_median_ms")
# memory_latency.py prints a Markdown row per size; its cells, in order, named here.
MEMORY_COLUMNS = ("recall_fresh", "ratio_fresh", "recall_lived_in", "ratio_lived_in",
                  "recall_defaults", "ratio_defaults", "scan")
MEMORY_MEASURES = ("recall_fresh", "recall_lived_in", "recall_defaults", "scan")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _env(tree: Path) -> dict:
    """The environment a tree's benchmark runs in: only that tree's package on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree / "python")
    return env


def _run(tree: Path, args: list[str]) -> str:
    completed = subprocess.run([sys.executable, *args], cwd=tree, env=_env(tree), capture_output=True,
                               text=True, check=False)
    if completed.returncode != 0:
        msg = f"{tree}: {' '.join(args)} failed ({completed.returncode}):\n{completed.stderr}"
        raise RuntimeError(msg)
    return completed.stdout


def hybrid(tree: Path, locomo: Path, presets, queries: int) -> dict[str, float]:
    """``preset/measure -> ms`` from one run of the tree's hybrid_latency.py (its JSON report)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "hybrid.json"
        # --repeats 1: the batch columns are not compared here; one repeat keeps the run short.
        _run(tree, ["benchmarks/hybrid_latency.py", "--data", str(locomo), "--presets", *presets,
                    "--queries", str(queries), "--repeats", "1", "--json", str(out)])
        report = json.loads(out.read_text(encoding="utf-8"))
    return {f"search {row['preset']} / {measure}": float(row[measure])
            for row in report["rows"] for measure in HYBRID_MEASURES}


def memory(tree: Path, size: int, dim: int) -> dict[str, float]:
    """``measure -> ms`` from one run of the tree's memory_latency.py (text table, one size)."""
    stdout = _run(tree, ["benchmarks/memory_latency.py", "--sizes", str(size), "--dim", str(dim)])
    label = f"{size:,}"
    for line in stdout.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[0] == label:
            values = [float(_NUMBER.search(cell).group()) for cell in cells[1:]]
            if len(values) != len(MEMORY_COLUMNS):
                msg = f"unexpected memory_latency row: {line!r}"
                raise ValueError(msg)
            row = dict(zip(MEMORY_COLUMNS, values))
            return {f"memory {size:,} / {name}": row[name] for name in MEMORY_MEASURES}
    msg = f"no row for N = {label} in memory_latency output:\n{stdout}"
    raise ValueError(msg)


def abba(rounds: int) -> list[str]:
    """base, new, new, base, base, new, ...: each side first as often as second."""
    order = []
    for i in range(rounds):
        order += ["base", "new"] if i % 2 == 0 else ["new", "base"]
    return order


def summarize(runs: dict[str, list[dict[str, float]]]) -> list[dict]:
    rows = []
    for measure in runs["base"][0]:
        base = [run[measure] for run in runs["base"]]
        new = [run[measure] for run in runs["new"]]
        b, n = statistics.median(base), statistics.median(new)
        # A round's base and new runs are adjacent in the ABBA order: their ratio cancels slow load drift.
        paired = [nv / bv for bv, nv in zip(base, new)]
        rows.append({"measure": measure, "base_median": b, "new_median": n, "ratio": n / b,
                     "paired_median": statistics.median(paired), "paired_min": min(paired),
                     "paired_max": max(paired),
                     "base_min": min(base), "base_max": max(base), "new_min": min(new), "new_max": max(new),
                     "overlap": min(base) <= max(new) and min(new) <= max(base)})
    return rows


def format_table(rows: list[dict]) -> str:
    lines = ["| measure (ms) | base median | new median | new / base | base rounds min-max "
             "| new rounds min-max | ranges overlap | per-round new / base, median (min-max) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['measure']} | {r['base_median']:.3f} | {r['new_median']:.3f} | {r['ratio']:.2f} "
                     f"| {r['base_min']:.3f}-{r['base_max']:.3f} | {r['new_min']:.3f}-{r['new_max']:.3f} "
                     f"| {'yes' if r['overlap'] else 'NO'} "
                     f"| {r['paired_median']:.2f} ({r['paired_min']:.2f}-{r['paired_max']:.2f}) |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="repository root of the old tree")
    parser.add_argument("--new", type=Path, required=True, help="repository root of the new tree")
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO,
                        help="LoCoMo folder (default: $FIELDRANK_LOCOMO_DIR or %(default)s)")
    parser.add_argument("--presets", nargs="+", default=list(DEFAULT_PRESETS))
    parser.add_argument("--queries", type=int, default=300, help="LoCoMo questions per run (default: %(default)s)")
    parser.add_argument("--size", type=int, default=10_000, help="memories of the tenant (default: %(default)s)")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--rounds", type=int, default=4, help="runs per tree, ABBA order (default: %(default)s)")
    parser.add_argument("--out", type=Path, help="also write the raw rounds and the summary as JSON here")
    args = parser.parse_args(argv)
    trees = {"base": args.base.resolve(), "new": args.new.resolve()}
    for side, tree in trees.items():
        if not (tree / "benchmarks" / "hybrid_latency.py").exists():
            parser.error(f"--{side} {tree}: not a fieldrank repository root")
    if not (args.locomo / "turns.jsonl").exists():
        parser.error(f"LoCoMo data not found at {args.locomo}")

    runs: dict[str, list[dict[str, float]]] = {"base": [], "new": []}
    order = abba(args.rounds)
    for step, side in enumerate(order, 1):
        figures = hybrid(trees[side], args.locomo, args.presets, args.queries)
        figures.update(memory(trees[side], args.size, args.dim))
        runs[side].append(figures)
        print(f"[{step}/{len(order)}] {side}: done", file=sys.stderr, flush=True)
    rows = summarize(runs)
    print(f"base = {trees['base']}, new = {trees['new']}; {args.rounds} rounds each, order {' '.join(order)}; "
          f"{args.queries} queries, memory N = {args.size:,}, d = {args.dim}")
    print()
    print(format_table(rows))
    if args.out is not None:
        args.out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "order": order,
                                        "runs": runs, "summary": rows}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
