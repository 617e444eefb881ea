"""Ray Data batch-search throughput with 1 and 2 actors, beside one process's ``search_batch``.

Corpus: the 5,882 LoCoMo turns with their ``minilm-l6-v2`` embeddings, saved as an index in a
temporary directory (each actor opens it with ``mmap=True``); queries: the 1,986 LoCoMo
questions repeated ``--repeat`` times. Without the LoCoMo data a seeded random corpus of the
same shape stands in. Ray runs locally (``ray.init(num_cpus=--cpus)``); the Ray start and the
dataset's construction are not timed; the whole ``map_batches`` pipeline
is, including the actors' start (a worker process each, importing fieldrank and opening the
index -- about 1 s on 2 cores, the same for 1 and 2 actors since they start in parallel).
The output drops the query vectors (``keep_vector=False``, the default).

Columns, side by side in one run, each the median of ``--trials`` runs (alternating):

* ``search_batch n_threads=1`` and ``=2`` -- one process, no Ray, in batches of ``--batch-size``;
* ``ray 1 actor``, ``ray 2 actors`` -- ``search_dataset(...).materialize()``, one thread each.

Run from the repository root::

    python benchmarks/ray_throughput.py [--preset default] [--repeat 5] [--trials 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from fieldrank.hybrid import HybridRetriever
from fieldrank.integrations.ray import search_dataset

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo"
EMBEDDINGS = "minilm-l6-v2"
SEED = 20261201


def load(data: Path):
    emb = data / "emb" / EMBEDDINGS
    if (emb / "turns.npy").exists():
        with open(data / "turns.jsonl", encoding="utf-8") as f:
            texts = [json.loads(line)["embed_text"] for line in f]
        with open(data / "questions.jsonl", encoding="utf-8") as f:
            questions = [json.loads(line)["question"] for line in f]
        return texts, np.load(emb / "turns.npy"), questions, np.load(emb / "questions.npy"), "LoCoMo"
    rng = np.random.default_rng(SEED)
    vocabulary = [f"w{i}" for i in range(2000)]

    def unit(n):
        X = rng.standard_normal((n, 384)).astype(np.float32)
        return X / np.linalg.norm(X, axis=1, keepdims=True)

    return ([" ".join(rng.choice(vocabulary, 12)) for _ in range(5882)], unit(5882),
            [" ".join(rng.choice(vocabulary, 6)) for _ in range(1986)], unit(1986), "random (LoCoMo data not found)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--repeat", type=int, default=5, help="times the question set is repeated")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    import ray
    import ray.data

    texts, E, questions, Q, source = load(args.data)
    questions = questions * args.repeat
    Q = np.tile(Q, (args.repeat, 1))
    n = len(questions)
    with tempfile.TemporaryDirectory() as tmp:
        index_dir = Path(tmp) / "idx"
        retriever = HybridRetriever(texts, E, args.preset)
        retriever.save(index_dir)
        retriever = HybridRetriever.load(index_dir, mmap=True)
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        rows = [{"qid": i, "text": questions[i], "vector": Q[i]} for i in range(n)]
        dataset = ray.data.from_items(rows).materialize()

        def local(threads):
            def run():  # in the same batches as the actors get (a batch's cost grows faster than linearly)
                for start in range(0, n, args.batch_size):
                    stop = start + args.batch_size
                    retriever.search_batch(questions[start:stop], Q[start:stop], n_threads=threads)
            return run

        def on_ray(actors):
            def run():
                search_dataset(dataset, index_dir, actors=actors, batch_size=args.batch_size).materialize()
            return run

        columns = {"search_batch n_threads=1": local(1), "search_batch n_threads=2": local(2),
                   "ray 1 actor": on_ray(1), "ray 2 actors": on_ray(2)}
        times = {name: [] for name in columns}
        for _ in range(args.trials):
            for name, run in columns.items():
                t0 = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t0)
        ray.shutdown()

    load_avg = os.getloadavg()
    print(f"{source}: N = {len(E)}, {n} queries, preset {args.preset!r}, batch {args.batch_size}, "
          f"{os.cpu_count()} cores (load average {load_avg[0]:.1f}), median of {args.trials} trials")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, seconds in medians.items():
        print(f"  {name:26s} {seconds:7.2f} s   {n / seconds:9.0f} queries/s   (all: "
              f"{', '.join(f'{v:.2f}' for v in times[name])})")
    speedup = medians["ray 1 actor"] / medians["ray 2 actors"]
    print(f"  ray 2 actors / 1 actor: {speedup:.2f}x (target >= 1.6x)")
    if args.json:
        args.json.write_text(json.dumps({"source": source, "queries": n, "preset": args.preset, "times_s": times,
                                         "speedup_2_vs_1": speedup, "load_average": load_avg}, indent=2))


if __name__ == "__main__":
    main()
