"""The memory store on LoCoMo, next to HybridRetriever ``default`` (issue 17).

Every conversation's turns go into one :class:`fieldrank.MemoryStore` as memories of their own
tenant (one tenant per conversation, turns in corpus order, each session a memory ``session``,
the session's date as ``created_at``, the default importance 0.5), and every question is
recalled in the default mode (``recall()`` with no mode, k = 10, ``reinforce=False``, at one
day after the conversation's last session). The rankings are scored by the same harness and
metrics as every retriever (``fieldrank.evaluation._runner.evaluate``), next to
``HybridRetriever`` with the ``default`` preset, for both local embedders.

Run (from the repository root; needs ``../shared/data/locomo``)::

    python benchmarks/memory_locomo.py --out docs/results/memory_locomo.md

The report says which split it covers; the holdout conversations (5-9) are the figure of merit
(nothing of the store was fitted on LoCoMo).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from fieldrank import MemoryStore
from fieldrank.evaluation import locomo
from fieldrank.evaluation._runner import Corpus, evaluate
from results_page import opening

EMBEDDING_SETS = ("minilm-l6-v2", "mpnet-base-v2")
SPLITS = ("holdout", "tune")
METRICS = ("ndcg@10", "recall@10")
DAY = 86400.0


class StoreMethod:
    """A runner method: the corpus in one MemoryStore (a tenant per conversation), recalled per question."""

    def __init__(self, corpus: Corpus) -> None:
        data = corpus.data
        turns = data.turns
        self.store = MemoryStore(dim=corpus.embeddings.shape[1])
        created = turns.session_datetime.astype("datetime64[s]").astype(np.int64).astype(np.float64)
        self.recall_time: dict[int, float] = {}
        self.first_id: dict[int, int] = {}
        for conv, (start, stop) in sorted(data.conv_ranges.items()):
            ids = self.store.add_many(
                corpus.texts[start:stop], corpus.embeddings[start:stop], tenants=f"conv{conv}",
                created_at=created[start:stop],
                sessions=[f"session {int(s)}" for s in turns.session[start:stop].tolist()],
            )
            self.first_id[conv] = int(ids[0]) - start  # memory id = corpus row + offset
            self.recall_time[conv] = float(created[start:stop].max()) + DAY

    def __call__(self, corpus: Corpus, batch) -> list[np.ndarray]:
        conv = int(batch.conv_index)
        out = []
        for text, vector in zip(batch.texts, batch.vectors):
            result = self.store.recall(text, vector, batch.k, tenant=f"conv{conv}", at_time=self.recall_time[conv],
                                       reinforce=False)
            out.append(result.ids - self.first_id[conv])
        return out


def run(embedding_set: str, splits=SPLITS) -> dict:
    data = locomo.load_locomo(embedding_set=embedding_set)
    corpus = Corpus(data)
    started = time.perf_counter()
    method = StoreMethod(corpus)
    load_seconds = time.perf_counter() - started
    out = {"load_seconds": load_seconds, "splits": {}}
    for split in splits:
        result = evaluate({"default": "default", "MemoryStore (default mode)": method}, corpus, split)
        out["splits"][split] = {
            name: {metric: result.mean(name, metric) for metric in METRICS} | {
                "questions": int(result.question_rows.size),
                "search_seconds": result.search_seconds[name],
            }
            for name in result.methods
        }
    return out


def report(results: dict, command: str) -> str:
    lines = [
        *opening("The memory store on LoCoMo", command, shared_cpus=False),
        "Each conversation's turns are memories of one tenant of one `MemoryStore` (sessions as memory "
        "sessions, session dates as `created_at`, default importance 0.5); every question is a "
        "`recall()` in the default mode (k = 10, `reinforce=False`). `default` is `HybridRetriever` with "
        "the calibrated preset over the same rows. Nothing of the store was fitted on LoCoMo; the "
        "holdout (conversations 5-9) is the figure of merit.",
        "",
        "| embedder | split | questions | method | NDCG@10 | Recall@10 | search s |",
        "|---|---|---|---|---|---|---|",
    ]
    for embedding_set, result in results.items():
        for split, methods in result["splits"].items():
            for name, row in methods.items():
                lines.append(f"| {embedding_set} | {split} | {row['questions']} | {name} | {row['ndcg@10']:.4f} | "
                             f"{row['recall@10']:.4f} | {row['search_seconds']:.1f} |")
    lines += ["", "Difference (store − default), NDCG@10 points:", ""]
    for embedding_set, result in results.items():
        for split, methods in result["splits"].items():
            store, default = methods["MemoryStore (default mode)"], methods["default"]
            lines.append(f"- {embedding_set}, {split}: {100 * (store['ndcg@10'] - default['ndcg@10']):+.2f} "
                         f"(Recall@10 {100 * (store['recall@10'] - default['recall@10']):+.2f})")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(EMBEDDING_SETS))
    parser.add_argument("--splits", nargs="+", default=list(SPLITS))
    parser.add_argument("--out", default=None, help="write the Markdown report here")
    args = parser.parse_args(argv)
    try:
        results = {s: run(s, args.splits) for s in args.sets}
    except locomo.DataNotFoundError as exc:
        print(f"skipped: {exc}")
        return 0
    text = report(results, "python benchmarks/memory_locomo.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
