"""The agent-life benchmark (issue 24): the memory store filled as an agent fills it over a year.

How the stores are filled and what is measured: :mod:`fieldrank.evaluation._agent_life`. LoCoMo
(``../shared/data/locomo``) is read at run time and never committed; the benchmark is skipped when
it is absent. Writes a Markdown report.

Run (from the repository root)::

    python benchmarks/agent_life.py --out docs/results/agent_life.md
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from fieldrank.evaluation import _agent_life as al
from results_page import cell, opening

SIZES = (1_000, 10_000, 50_000)
MODES = ("hybrid", "vector", "full")
LATENCY_SIZES = (10_000, 50_000)


def run(sizes, modes, latency_sizes, repeats: int, locomo_dir: str = al.DEFAULT_LOCOMO_DIR) -> list[dict]:
    locomo = al.load_locomo(locomo_dir)
    if locomo is None:
        return []
    out = []
    for size in sizes:
        life = al.build(size, locomo, progress=lambda line: print(line, file=sys.stderr))
        print(f"size {size}: filled in {life.fill_seconds:.1f} s {life.counts}", file=sys.stderr)
        started = time.perf_counter()
        records = al.evaluate(life, modes)
        row = {"size": size, "memories": len(life.store), "counts": life.counts, "fill_seconds": life.fill_seconds,
               "records": records, "eval_seconds": time.perf_counter() - started}
        if size in latency_sizes:
            row["latency"] = al.latency(life, repeats=repeats)
            row["load"] = os.getloadavg()
            print(f"size {size}: latency {row['latency']}", file=sys.stderr)
        out.append(row)
    return out


def report(rows: list[dict], command: str) -> str:
    lines = [
        *opening("Memory store: the agent-life benchmark", command),
        "A simulated agent's year (`fieldrank/evaluation/_agent_life.py` says how the stores are filled: "
        "LoCoMo turns and agent notes with their all-MiniLM-L6-v2 vectors, 0-3 Zipf entities from 320 names "
        "with near-twins, tags, sessions, ~2 % durable, single `add()` calls interleaved with `forget`, "
        "`update`, `supersedes=`, unmarked restatements and reinforcing recalls). The five cases of seed 003 "
        "are families of 42 templates each (the adversarial suite's scenarios, one cue each); the trap families "
        "`ta`, `tb`, `td`, `te` (issue 38, `_trap_cases.py`: the cue's words in the wrong memories) sharpen "
        "cases (a), (b), (d), (e) with 40 templates each. All are placed among the history at their ages "
        "(a store of size n: n history adds plus the 1,388 template memories); per case, half the templates tune and half are held out, dealt in order "
        "of a store-independent difficulty (the cue's cosine margin to its relevant memory: "
        "`_agent_life.template_splits`; an index split had put most hard case-(a) templates in the tuning half). "
        "k = 10, "
        "default parameters. `union`: the relevant memory reached fused scoring; `cos`/`bm25`: plain "
        "cosine / BM25 top-k over the tenant's live rows; `false rescue`: seed 003's definition (see the module).",
        "",
        "## Stores",
        "",
        "| size | memories (live) | adds | forgets | updates | supersedes | unmarked restatements | "
        "reinforcing recalls | fill s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        c = row["counts"]
        lines.append(f"| {row['size']} | {row['memories']} | {c['add']} | {c['forget']} | {c['update']} | "
                     f"{c['supersede']} | {c['duplicate']} | {c['recall']} | {row['fill_seconds']:.0f} |")
    for split, title in (("held", "Held-out templates (the figures that count)"), ("tune", "Tuning templates")):
        lines += ["", f"## {title}", "",
                  "| size | mode | cue | case | cues | union | cos@10 | bm25@10 | hit@1 | cos@1 | bm25@1 | hit@10 | "
                  "false rescue (rescues) | stale above current |",
                  "|" + "---|" * 14]
        for row in rows:
            for r in row["records"]:
                if r["split"] != split:
                    continue
                stale = cell(r["stale_above"]) if r["case"] in ("d", "td") else "-"
                lines.append(
                    f"| {row['size']} | {r['mode']} | {r['variant']} | {r['case']} | {r['cues']} | {cell(r['union'])} | "
                    f"{cell(r['cos@10'])} | {cell(r['bm25@10'])} | {cell(r['hit@1'])} | {cell(r['cos@1'])} | "
                    f"{cell(r['bm25@1'])} | {cell(r['hit@10'])} | {cell(r['false_rescue'])} ({r['rescues']}) | {stale} |")
    lines += ["", "## Latency: recall vs one fp32 scan, side by side", "",
              "Default mode, bare held-out cues, `reinforce=False`; each cue's recall then `fieldrank.prefilter` "
              "over the tenant's live rows (a contiguous float32 copy), in rounds; medians.", "",
              "| size | tenant rows | recall p50 ms | recall p95 ms | scan p50 ms | ratio | samples | load avg (1/5/15) |",
              "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lat = row.get("latency")
        if lat:
            load = "/".join(f"{x:.1f}" for x in row["load"])
            lines.append(f"| {row['size']} | {lat['rows']} | {lat['recall_p50_ms']:.2f} | {lat['recall_p95_ms']:.2f} | "
                         f"{lat['scan_p50_ms']:.2f} | {lat['ratio']:.2f} | {lat['samples']} | {load} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--modes", nargs="+", default=list(MODES))
    parser.add_argument("--latency-sizes", type=int, nargs="*", default=list(LATENCY_SIZES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=None)
    parser.add_argument("--locomo-dir", default=al.DEFAULT_LOCOMO_DIR, help="LoCoMo turns/questions and vectors")
    args = parser.parse_args(argv)
    rows = run(args.sizes, args.modes, args.latency_sizes, args.repeats, args.locomo_dir)
    if not rows:
        print("LoCoMo data not found under ../shared/data/locomo: skipped", file=sys.stderr)
        return 0
    command = "python benchmarks/agent_life.py" + ("" if argv is None else " " + " ".join(argv))
    if argv is None and len(sys.argv) > 1:
        command = "python benchmarks/agent_life.py " + " ".join(sys.argv[1:])
    text = report(rows, command)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
