"""Hit confidence on LoCoMo: cross-validated figures, reliability diagrams, cost (issue 29).

For both local embedders, every scored LoCoMo question is searched with ``HybridRetriever``
(``default`` preset, all turns in one retriever, the question's conversation as its subset) over
its own conversation and over another conversation drawn with a seeded generator
(:mod:`fieldrank.evaluation._confidence`). The confidence model is fitted by leave-one-
conversation-out cross-validation (ten folds; each fold's model is fitted on the other nine
conversations of both embedders and applied to the held-out one), and the report gives the
held-out figures. Only then is the model fitted on all of LoCoMo; ``--write-defaults`` writes
that fit as the ``[confidence]`` table of ``python/fieldrank/data/default_config.toml``.

The same is done through :class:`fieldrank.MemoryStore` (one tenant per conversation, the
question recalled in its own tenant and in another one; ``--no-store`` skips it), whose fit goes
to ``python/fieldrank/data/memory_confidence.toml`` with ``--write-defaults``.

The cost is measured side by side at N = 20,000 (the LoCoMo turns repeated, embeddings jittered,
seeded): per query, the median time of ``search`` and of computing the result's confidence.

Run from the repository root (LoCoMo data in ../shared/data/locomo)::

    python benchmarks/confidence.py --out docs/results/confidence.md [--write-defaults]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from fieldrank import _confidence as conf
from fieldrank.config import preset
from fieldrank.evaluation import _confidence as ec
from fieldrank.evaluation import locomo
from fieldrank.evaluation.calibrate import write_confidence_table
from fieldrank.hybrid import HybridRetriever, _result_confidence

EMBEDDING_SETS = ("minilm-l6-v2", "mpnet-base-v2")
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo"
DEFAULT_CONFIG = ROOT / "python" / "fieldrank" / "data" / "default_config.toml"
STORE_CONFIDENCE = ROOT / "python" / "fieldrank" / "data" / "memory_confidence.toml"
COST_N = 20_000
COST_QUERIES = 300
COST_REPEATS = 5
TARGETS = {"auroc_first_relevant": (">=", 0.80), "auroc_evidence_in_memory": (">=", 0.90), "ece_first": ("<=", 0.05)}


def retriever_sets(data_dir: Path) -> dict[str, list[ec.Labelled]]:
    out = {}
    for name in EMBEDDING_SETS:
        data = locomo.load_locomo(data_dir, name, checksums=False)
        retriever = HybridRetriever([str(t) for t in data.turns.embed_text], data.turn_embeddings, preset("default"),
                                    timeline=locomo.locomo_timeline(data))
        out[name] = ec.collect_retriever(data, retriever)
    return out


def store_sets(data_dir: Path) -> dict[str, list[ec.Labelled]]:
    out = {}
    for name in EMBEDDING_SETS:
        data = locomo.load_locomo(data_dir, name, checksums=False)
        out[name] = ec.collect_store(data)
    return out


def cost(data_dir: Path, repeats: int) -> dict[str, float]:
    """Median per-query seconds of ``search`` and of the result's confidence, side by side."""
    data = locomo.load_locomo(data_dir, "mpnet-base-v2", checksums=False)
    rng = np.random.default_rng(29)
    reps = -(-COST_N // len(data.turns))
    texts = [str(t) for t in data.turns.embed_text] * reps
    E = np.tile(data.turn_embeddings, (reps, 1))[:COST_N]
    E = E + rng.normal(scale=0.01, size=E.shape).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    retriever = HybridRetriever(texts[:COST_N], np.ascontiguousarray(E, dtype=np.float32), preset("default"))
    rows = rng.choice(len(data.questions), size=COST_QUERIES, replace=False)
    questions = [str(data.questions.question[r]) for r in rows]
    Q = np.ascontiguousarray(data.question_embeddings[rows], dtype=np.float32)
    for text, q in zip(questions[:20], Q[:20]):  # warm-up
        retriever.search(text, q).confidence
    search_t, conf_t = [], []
    for _ in range(repeats):
        for text, q in zip(questions, Q):
            t0 = time.perf_counter()
            result = retriever.search(text, q)
            t1 = time.perf_counter()
            _result_confidence(result.ids, result.scores, result.config, result._query)
            t2 = time.perf_counter()
            search_t.append(t1 - t0)
            conf_t.append(t2 - t1)
    s, c = statistics.median(search_t), statistics.median(conf_t)
    return {"search_ms": s * 1e3, "confidence_ms": c * 1e3, "ratio": c / s, "n": COST_N, "queries": COST_QUERIES,
            "repeats": repeats}


def _mark(key: str, value: float) -> str:
    if key not in TARGETS:
        return ""
    op, bound = TARGETS[key]
    ok = value >= bound if op == ">=" else value <= bound
    return f" ({'met' if ok else 'NOT met'}: {op} {bound})"


def section(title: str, sets: dict[str, list[ec.Labelled]], plot: Path, out_dir: Path) -> tuple[list[str], object]:
    cv = ec.cross_validate(sets)
    lines = [f"## {title}", "", "Leave-one-conversation-out (10 folds); held-out figures:", "",
             "| figure | " + " | ".join(sets) + " |", "|---|" + "---:|" * len(sets)]
    figs = {name: ec.figures(c) for name, c in cv.items()}
    labels = {
        "questions": "questions (scored)",
        "first_relevant_rate": "first hit relevant (base rate)",
        "auroc_first_relevant": "AUROC, first hit's confidence vs first hit relevant",
        "auroc_evidence_in_memory": "AUROC, evidence in the searched memory (own vs another conversation)",
        "ece_first": "ECE, first hit's confidence (10 bins)",
        "ece_all_hits": "ECE, every hit's confidence (10 bins)",
        "mean_first_confidence": "mean first-hit confidence, own memory",
        "mean_first_confidence_other_memory": "mean first-hit confidence, another conversation's memory",
    }
    for key, label in labels.items():
        cells = []
        for name in sets:
            v = figs[name][key]
            cells.append(f"{v}" if key == "questions" else f"{v:.3f}{_mark(key, v)}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    panels = {}
    for name, c in cv.items():
        panels[f"{name}, first hit"] = (c["own"][c["first"]], c["relevant"][c["first"]])
        panels[f"{name}, every hit"] = (c["own"], c["relevant"])
    ec.reliability_plot(panels, plot, f"{title}: held-out reliability (leave one conversation out)")
    lines += ["", f"![reliability diagrams]({plot.relative_to(out_dir)})", ""]
    final = ec.fit([item for items in sets.values() for item in items])
    lines += ["Fitted on all of LoCoMo (both embedders) after the cross-validation above:", "", "```",
              _describe(final), "```", ""]
    return lines, final


def _describe(params) -> str:
    memory = ", ".join(f"{n} {w:+.3f}" for n, w in zip(conf.MEMORY_FEATURES, params.memory_weights))
    hit = ", ".join(f"{n} {w:+.3f}" for n, w in zip(conf.HIT_FEATURES, params.hit_weights))
    c0, c1, c2 = params.calibration
    return (f"memory model: intercept {params.memory_intercept:+.3f}; {memory}\n"
            f"hit model:    intercept {params.hit_intercept:+.3f}; {hit}\n"
            f"calibration:  {c0:+.3f} {c1:+.3f}*logit(g*h) {c2:+.3f}*[first hit]")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "confidence.md")
    parser.add_argument("--write-defaults", action="store_true",
                        help="write the fits on all of LoCoMo as the shipped confidence models")
    parser.add_argument("--no-store", action="store_true", help="skip the MemoryStore part")
    parser.add_argument("--repeats", type=int, default=COST_REPEATS)
    args = parser.parse_args(argv)
    out_dir = args.out.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/confidence.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = ["# Hit confidence: calibrated probabilities on LoCoMo (issue 29)", "",
             f"Generated by `{command}` on {platform.machine()} ({os.cpu_count()} cores), "
             f"load average {os.getloadavg()[0]:.2f} at the start.", "",
             "What is measured: `docs/results/confidence.md` is written by `benchmarks/confidence.py` (its "
             "docstring describes the protocol). Every figure below is held out: the model that scores a "
             "conversation never saw it. The shipped coefficients are fitted on all of LoCoMo only after these "
             "held-out figures.", "",
             "## The model", "",
             "A hit's confidence (`SearchHit.confidence`, `Hit.confidence`; `fieldrank._confidence`) is read beside "
             "the ranking and never changes it. Two small logistic models, multiplied, then recalibrated:", "",
             "* **memory model** `g` (one value per query, absolute evidence): the best raw cosine of a returned hit, "
             "the best idf-weighted fraction of the query's terms a hit contains, and that fraction over every "
             "document the query could see (the store: over the returned hits, unweighted). Fitted on the first "
             "hits of each question over its own conversation (label 1) and over another conversation (label 0).",
             "* **hit model** `h` (per hit, relative evidence): the hit's cosine and term coverage, its fused score "
             "and its margin over the best other hit. Fitted on every hit of the questions over their own "
             "conversation (label: the hit is a gold turn).",
             "* **recalibration**: `sigmoid(c0 + c1 * logit(g * h) + c2 * [first hit])`, fitted on the same hits: "
             "monotone in `g * h` for the first hit and for the others, so it changes no AUROC; it makes the "
             "probabilities calibrated.", "",
             "Twelve coefficients in all, fitted with numpy (Newton steps, L2 1e-3); scale-free features only "
             "(cosines, fractions, the temporal leg's z-blend score and its margin). No category, phrasing or "
             "speaker-name rule. The `default` preset's fused score is now its leg's own score (the z-blend), "
             "no longer the rank-only 1/(60 + rank). The shipped model is fitted for `default`; a configuration "
             "whose fused score has another scale (an RRF of several legs) uses it too, less well calibrated: "
             "`fieldrank calibrate --confidence --config X --out X.toml` refits it (on a labelled split in the "
             "LoCoMo layout).", "",
             "What the features can and cannot do. The evidence-in-memory question is answered well by absolute "
             "evidence (a memory that never names what the question names, and whose best cosine is low, rarely "
             "holds the answer). Whether the first hit is *the* evidence turn is harder: the best single signal is "
             "the fused score's margin over the second hit (AUROC about 0.70 alone), the raw cosine of the first "
             "hit is uninformative there (about 0.45-0.48), and the combination stays near 0.67-0.69: the 0.80 "
             "target is not met. Signals that would add to it (where the hit ranks by cosine and by BM25 among all "
             "the searched rows) cost a second pass over the rows, which the 5 % budget rules out; the question's "
             "type (a \"when\" question's first hit is relevant 63 % of the time against 37 %) is LoCoMo-specific "
             "phrasing and was left out.", ""]
    sets = retriever_sets(args.data)
    part, final = section("HybridRetriever (`default` preset)", sets, out_dir / "confidence_retriever.png", out_dir)
    lines += part
    if args.write_defaults:
        write_confidence_table(DEFAULT_CONFIG, final, command)
    if not args.no_store:
        store = store_sets(args.data)
        part, store_final = section("MemoryStore (`recall`, hybrid mode)", store, out_dir / "confidence_store.png",
                                    out_dir)
        lines += part
        if args.write_defaults:
            ec.write_store_defaults(STORE_CONFIDENCE, store_final, command)
    c = cost(args.data, args.repeats)
    lines += ["## Cost", "",
              f"`default` preset, N = {c['n']:,} rows (LoCoMo turns repeated, mpnet-base-v2 embeddings jittered, "
              f"seeded), {c['queries']} questions x {c['repeats']} repeats, one query per call, measured side by "
              "side in one loop:", "",
              "| median per query | ms |", "|---|---:|",
              f"| `search` | {c['search_ms']:.3f} |",
              f"| confidence of its hits | {c['confidence_ms']:.3f} |",
              f"| ratio | {100 * c['ratio']:.1f} %{' (met: <= 5 %)' if c['ratio'] <= 0.05 else ' (NOT met: <= 5 %)'} |",
              "", f"Load average at the end: {os.getloadavg()[0]:.2f}.", ""]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
