"""SPLADE in the calibrated fusion, on all LoCoMo questions, cross-validated by conversation.

Reads the SPLADE encodings of LoCoMo's turns and questions that ``benchmarks/splade_throughput.py
--cache DIR`` wrote (encode once), builds every per-conversation score matrix
(:mod:`fieldrank.evaluation._splade_study`), and reports for each embedding set:

* ``default`` as the preset computes it (checked against the official runner's per-question
  NDCG@10 with ``--check-default``), and the cross-validated SPLADE fusion (five folds of two
  conversations; each fold's configuration fitted on the other eight conversations, over both
  sets), with a paired bootstrap of the per-question difference;
* SPLADE alone against BM25 alone (the ``bm25`` preset), no fitting.

    PYTHONPATH=python python benchmarks/splade_quality.py --cache /tmp/splade_cache
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def _load(path: Path):
    from fieldrank.splade import SparseRows

    z = np.load(path)
    return SparseRows(z["indptr"], z["indices"], z["data"], int(z["n_terms"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default="/tmp/splade_cache")
    parser.add_argument("--data", default="/work/shared/data/locomo")
    parser.add_argument("--sets", nargs="+", default=["minilm-l6-v2", "mpnet-base-v2"])
    parser.add_argument("--check-default", action="store_true",
                        help="also run the default preset through fieldrank.evaluation.evaluate and compare")
    parser.add_argument("--resamples", type=int, default=10000)
    parser.add_argument("--contiguous-folds", action="store_true",
                        help="folds (0, 1), (2, 3), ... instead of (0, 5), (1, 6), ...")
    args = parser.parse_args()

    from fieldrank.evaluation import _splade_study as study
    from fieldrank.evaluation.locomo import load_locomo, locomo_timeline
    from fieldrank.evaluation.stats import paired_bootstrap

    docs, queries = _load(Path(args.cache) / "turns.npz"), _load(Path(args.cache) / "questions.npz")
    sets, timelines, data_categories = {}, {}, {}
    for name in args.sets:
        start = time.perf_counter()
        data = load_locomo(args.data, name)
        timelines[name] = locomo_timeline(data)
        data_categories[name] = np.asarray(data.questions.category)
        sets[name] = study.conversation_parts(data, docs, queries, timeline=timelines[name])
        print(f"{name}: parts of {sum(len(p.questions) for p in sets[name])} questions in "
              f"{time.perf_counter() - start:.1f} s")
        if args.check_default:
            from fieldrank.config import preset
            from fieldrank.evaluation import evaluate

            run = evaluate({"default": preset("default")}, data)
            official = run.matrix("ndcg@10", ["default"])[:, 0]
            mine = np.concatenate([study.ndcg_of_scores(p, study.fused_scores(p, study.BASELINE, timelines[name]))
                                   for p in sets[name]])
            print(f"  default: official mean {official.mean():.4f}, this study's {mine.mean():.4f}, "
                  f"max |per-question diff| {np.abs(official - mine).max():.2e}")

    points = study.grid_points()
    res = study.cross_validate(sets, timelines, points, study.BASELINE, contiguous=args.contiguous_folds)
    print(f"\n{len(points)} grid points; folds (conversations) -> chosen point (train objective / default's):")
    for fold, best, obj, base in res["folds"]:
        print(f"  {fold}: {best.label()}  ({obj:.4f} / {base:.4f})")
    print("\nheld-out NDCG@10 (every question once; paired bootstrap of the difference, "
          f"{args.resamples} resamples, 95 %):")
    for name in args.sets:
        held, base = res["held"][name], res["baseline"][name]
        b = paired_bootstrap(held, base, n_resamples=args.resamples)
        print(f"  {name}: default {base.mean():.4f}  cv-splade {held.mean():.4f}  "
              f"diff {100 * b.mean_diff:+.2f} pts [{100 * b.lo:+.2f}, {100 * b.hi:+.2f}] p={b.p_value:.4f} "
              f"(n={held.size})")
    print("\nheld-out difference by LoCoMo category (mean NDCG@10 points, questions):")
    categories = np.concatenate([data_categories[name][p.questions] for p in sets[args.sets[0]]])
    for c in np.unique(categories):
        row = "  ".join(f"{name} {100 * (res['held'][name] - res['baseline'][name])[categories == c].mean():+.2f}"
                        for name in args.sets)
        print(f"  category {c} ({int((categories == c).sum())}): {row}")
    # The single best fixed point over all conversations (in-sample: an upper bound, not a result).
    names = list(sets)
    allmean = {pt: np.mean([np.concatenate(res["table"][s][pt]).mean() for s in names]) for pt in points}
    top = sorted(points, key=lambda pt: -allmean[pt])[:5]
    print("\nin-sample best points (all conversations; NOT held out):")
    for pt in top:
        print(f"  {pt.label()}: {allmean[pt]:.4f}  (default {allmean[study.BASELINE]:.4f})")

    print("\nsingle signals, all questions (no fitting):")
    for name in args.sets[:1]:
        parts = sets[name]
        cols = {
            "BM25 alone (bm25 preset)": [p.bm25_plain for p in parts],
            "BM25 + neighbour text (default's lexical)": [p.lex for p in parts],
            "SPLADE alone": [p.spl_self for p in parts],
            "SPLADE + context vectors (w2, cw1)": [p.spl_self + p.spl_ctx[2] for p in parts],
        }
        scores = {k: np.concatenate([study.ndcg_of_scores(p, s) for p, s in zip(parts, v)]) for k, v in cols.items()}
        for k, v in scores.items():
            print(f"  {k}: {v.mean():.4f}")
        b = paired_bootstrap(scores["SPLADE alone"], scores["BM25 alone (bm25 preset)"], n_resamples=args.resamples)
        print(f"  SPLADE alone - BM25 alone: {100 * b.mean_diff:+.2f} pts [{100 * b.lo:+.2f}, {100 * b.hi:+.2f}]")


if __name__ == "__main__":
    main()
