"""Record MemoryStore recalls bit for bit, to check that a speed change moves no ranking.

Run once with the code before a change and once after, then compare::

    python tools/record_recalls.py --out before.pkl     # with the code before (e.g. main's environment)
    python tools/record_recalls.py --out after.pkl --compare before.pkl   # with the change: exit 1 on a difference

What is recorded (every float as its exact bits, every array as dtype, shape and bytes):

- the latency benchmark's store (``benchmarks/benchmarks/bench_memory.py``) at 1k and 10k
  memories, plus memories with tags, entities, valences, sessions, tiers and supersedes: recalls
  in every mode, k = 10 and 30, with every gate, cue tags, entities, valence and time;
  ``why_not`` of returned, outranked, gated and other-tenant memories; a sequence of 100
  reinforcing recalls (each recorded) and recalls after it;
- a lifecycle on a file-backed store (a temporary folder): two tenants, labelled memories with
  supersedes, recalls and ``why_not`` after ``update`` (text, embedding, tags, importance),
  ``forget``, ``compact()``, ``compact(purge=True)``, reinforcing recalls, and after closing and
  reopening the file (``get`` of updated, forgotten-and-purged and superseded memories too);
- the adversarial suite (``fieldrank.evaluation._memory_suite``) at 1k and 10k LoCoMo filler
  (skipped when ``../shared/data/locomo`` is absent), every scenario in three modes, plus a
  default-mode reinforcing sequence over its cues.

Each recall is recorded with its hits (id, rank, score, fused and rerank score, text, tenant,
every factor, dominant/weakest factor, admissions, age, recall count, reserved slot,
superseded_by), its admitted rows per generator, candidate ids and quotas.

A recording is a pickle: ``--compare`` reads it with ``pickle.load``, which can run any code the
file names, so compare only with a recording you made yourself (a trusted file).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pickle
import sys
import tempfile
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from benchmarks import bench_memory  # noqa: E402
from benchmarks.common import queries  # noqa: E402

from fieldrank import MemoryStore  # noqa: E402
from fieldrank.evaluation import _memory_suite as suite_module  # noqa: E402

MODES = ("hybrid", "full", "vector", "keyword", "rerank")
NOW = bench_memory.NOW
DAY = bench_memory.DAY


def canonical(value: Any) -> Any:
    """A value that compares with ``==`` exactly when the original is equal bit for bit."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, np.ndarray):
        return ("array", str(value.dtype), value.shape, np.ascontiguousarray(value).tobytes())
    if isinstance(value, np.generic):
        return canonical(value.item())
    if dataclasses.is_dataclass(value):
        return (type(value).__name__,) + tuple((f.name, canonical(getattr(value, f.name)))
                                               for f in dataclasses.fields(value))
    if isinstance(value, (tuple, list)):
        return tuple(canonical(v) for v in value)
    if hasattr(value, "items"):
        return ("map",) + tuple((k, canonical(v)) for k, v in value.items())
    if isinstance(value, (set, frozenset)):
        return ("set",) + tuple(sorted(canonical(v) for v in value))
    msg = f"cannot record {type(value).__name__}"
    raise TypeError(msg)


def hit_count(record: tuple) -> int:
    """The hits of a recorded RecallResult (0 for a record of anything else), found by field name."""
    value = record[-1]
    if not (isinstance(value, tuple) and value[:1] == ("RecallResult",)):
        return 0
    return len(dict(value[1:])["hits"])


def _with_labels(store: MemoryStore, rng: np.random.Generator, d: int, count: int) -> list[int]:
    """Memories of "agent" with tags, entities, valence, sessions, tiers; some supersede others."""
    E = rng.normal(size=(count, d)).astype(np.float32)
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    tags = [[f"tag{j}" for j in range(3) if rng.random() < 0.4] for _ in range(count)]
    entities = [[f"person{int(j)}" for j in rng.integers(0, 12, size=int(rng.integers(0, 3)))] for _ in range(count)]
    texts = bench_memory._texts(rng, count)
    ids = store.add_many(texts, E, tenants="agent", tags=tags, entities=entities,
                         valences=rng.uniform(-1, 1, count), importances=rng.uniform(0, 1, count),
                         tiers=[("episodic", "semantic", "core")[int(j)] for j in rng.integers(0, 3, count)],
                         sessions=[f"s{i // 5}" if i % 3 else None for i in range(count)],
                         created_at=NOW - rng.uniform(0, 400, count) * DAY).tolist()
    for i in range(0, 20, 2):  # replacements of some of them
        vector = E[i] + 0.05 * rng.normal(size=d).astype(np.float32)
        ids.append(store.add(texts[i] + " updated", vector / np.linalg.norm(vector), tenant="agent",
                             entities=entities[i], supersedes=ids[i], created_at=NOW - DAY))
    return ids


def _recall_grid(store: MemoryStore, cues: list[tuple[str, np.ndarray]], labelled: list[int]) -> list:
    out = []
    variants = [
        {},
        {"k": 30},
        {"cue_entities": ["person1", "person3"]},
        {"cue_tags": ["tag0"], "cue_valence": 0.7},
        {"required_tags": ["tag1"]},
        {"tier_mask": ["core", "semantic"]},
        {"valence_window": (-0.5, 0.5), "min_importance": 0.3},
        {"cue_time": NOW - 200 * DAY, "k": 20},
    ]
    for text, vector in cues:
        for mode in MODES:
            for extra in variants:
                kwargs = {"k": 10, **extra}
                k = kwargs.pop("k")
                result = store.recall(text, vector, k, tenant="agent", mode=mode, at_time=NOW, reinforce=False,
                                      **kwargs)
                out.append(("recall", mode, repr(sorted(extra.items())), canonical(result)))
        hits = store.recall(text, vector, 30, tenant="agent", at_time=NOW, reinforce=False).ids.tolist()
        for memory_id in hits[:3] + hits[-3:] + labelled[:4] + [0, 10 ** 9]:
            for mode in ("hybrid", "full"):
                why = store.why_not(int(memory_id), text, vector, 10, tenant="agent", mode=mode, at_time=NOW,
                                    required_tags=["tag2"] if memory_id == labelled[0] else None)
                out.append(("why_not", mode, int(memory_id), canonical(why)))
    keyword_only = store.recall(cues[0][0], None, 10, tenant="agent", mode="keyword", at_time=NOW, reinforce=False)
    out.append(("recall", "keyword-text-only", "", canonical(keyword_only)))
    return out


def record_benchmark_store(n: int, d: int = 384) -> list:
    holder = type("Holder", (), {})()
    bench_memory._store(holder, n, d)
    store = holder.store
    rng = np.random.default_rng(7 + n)
    labelled = _with_labels(store, rng, d, 300)
    words = bench_memory._texts(np.random.default_rng(11), 12)
    vectors = queries(holder.E, 12, seed=99)
    cues = [(holder.cue, holder.q)] + list(zip(words[:5], vectors[:5]))
    out = [("store", n)] + _recall_grid(store, cues, labelled)
    # a reinforcing sequence, every recall recorded, then the grid again on the lived-in store
    sequence_words = bench_memory._texts(np.random.default_rng(13), 100)
    for i, q in enumerate(queries(holder.E, 100, seed=101)):
        mode = "hybrid" if i % 4 else "full"
        result = store.recall(sequence_words[i], q, 10, tenant="agent", mode=mode, at_time=NOW + i * DAY,
                              cue_entities=["person2"] if i % 5 == 0 else None)
        out.append(("reinforcing", i, canonical(result)))
    out += _recall_grid(store, cues[:3], labelled)
    return out


def _lifecycle_step(store: MemoryStore, label: str, cues: list[tuple[str, np.ndarray]], labelled: list[int],
                    at: float) -> list:
    """Recalls in three modes for both tenants, plus why_not of the labelled memories, at one step."""
    out = []
    for text, vector in cues:
        for tenant in ("agent", "other"):
            for mode in ("hybrid", "full", "keyword"):
                result = store.recall(text, vector, 10, tenant=tenant, mode=mode, at_time=at, reinforce=False)
                out.append(("lifecycle", label, tenant, mode, canonical(result)))
        for memory_id in labelled[:6] + labelled[10:12] + labelled[20:22]:  # kept, forgotten, forgotten late
            why = store.why_not(int(memory_id), text, vector, 10, tenant="agent", at_time=at)
            out.append(("lifecycle-why_not", label, int(memory_id), canonical(why)))
    return out


def _get(store: MemoryStore, memory_id: int) -> Any:
    try:
        return canonical(store.get(memory_id))
    except KeyError as error:
        return ("KeyError", str(error))


def record_lifecycle(n: int, d: int = 384) -> list:
    """update, forget, compact, compact(purge=True) and a reopen of a file-backed store, recorded at each step."""
    rng = np.random.default_rng(23 + n)
    with tempfile.TemporaryDirectory(prefix="record_recalls_") as folder:
        path = os.path.join(folder, "store.db")
        store = MemoryStore(path, dim=d)
        E = rng.normal(size=(n, d)).astype(np.float32)
        E /= np.linalg.norm(E, axis=1, keepdims=True)
        store.add_many(bench_memory._texts(rng, n), E, tenants="agent", importances=rng.uniform(0.05, 0.9, n),
                       created_at=NOW - rng.uniform(0, 365, n) * DAY)
        store.add_many(bench_memory._texts(rng, n // 10), E[: n // 10], tenants="other", created_at=NOW - DAY)
        labelled = _with_labels(store, rng, d, 100)
        cues = [(text, vector) for text, vector in zip(bench_memory._texts(np.random.default_rng(29), 3),
                                                         queries(E, 3, seed=31))]
        out: list = [("lifecycle", n)] + _lifecycle_step(store, "built", cues, labelled, NOW)
        for i, memory_id in enumerate(labelled[:10]):
            vector = E[i] if i % 2 else None
            store.update(memory_id, text=f"changed note {i} " + cues[i % 3][0] if i % 3 else None,
                         embedding=vector, tags=["tag2"] if i % 4 == 0 else None,
                         importance=0.95 if i % 5 == 0 else None)
        out += _lifecycle_step(store, "updated", cues, labelled, NOW)
        forgotten = labelled[10:20] + [int(i) for i in range(0, n, max(1, n // 50))]
        out.append(("forget", tuple(store.forget(m) for m in forgotten)))
        out += _lifecycle_step(store, "forgotten", cues, labelled, NOW)
        out.append(("compact", store.compact()))
        out += _lifecycle_step(store, "compacted", cues, labelled, NOW)
        for i, (text, vector) in enumerate(cues * 4):
            result = store.recall(text, vector, 10, tenant="agent", at_time=NOW + i * DAY)
            out.append(("lifecycle-reinforcing", i, canonical(result)))
        out.append(("forget-late", tuple(store.forget(m) for m in labelled[20:25])))
        out.append(("compact-purge", store.compact(purge=True)))
        out += _lifecycle_step(store, "purged", cues, labelled, NOW + 20 * DAY)
        store.close()
        store = MemoryStore(path)
        out += _lifecycle_step(store, "reopened", cues, labelled, NOW + 20 * DAY)
        out += [("get", m, _get(store, m)) for m in labelled[:12] + labelled[-12:] + forgotten[:3]]
        out.append(("tenants", store.tenants()))
        store.close()
    return out


def record_adversarial(size: int, locomo_dir: str = suite_module.DEFAULT_LOCOMO_DIR) -> list:
    filler = suite_module.load_filler(size, locomo_dir)
    if filler is None:
        print(f"adversarial {size}: no LoCoMo data, skipped", file=sys.stderr)
        return []
    vectors = suite_module.load_vectors()
    scenarios = suite_module.scenarios()
    store, _ = suite_module.build_store(filler, vectors, scenarios)
    out: list = [("adversarial", size)]
    for mode in ("hybrid", "full", "vector"):
        for scenario in scenarios:
            result = store.recall(scenario.cue, vectors[scenario.cue], 10, tenant=suite_module.MAIN_TENANT, mode=mode,
                                  at_time=suite_module.REFERENCE_TIME, cue_entities=scenario.cue_entities or None,
                                  reinforce=False)
            out.append(("adv", mode, scenario.key, canonical(result)))
    for i, scenario in enumerate(scenarios[::3]):
        result = store.recall(scenario.cue, vectors[scenario.cue], 10, tenant=suite_module.MAIN_TENANT,
                              at_time=suite_module.REFERENCE_TIME + i * DAY,
                              cue_entities=scenario.cue_entities or None)
        out.append(("adv-reinforcing", scenario.key, canonical(result)))
    return out


def record_all(sizes: list[int], locomo_dir: str = suite_module.DEFAULT_LOCOMO_DIR, *, verbose: bool = True) -> list:
    """Every record, in a fixed order: benchmark stores, lifecycles, then the adversarial suite."""
    records: list = []
    for part, record in (("benchmark store", record_benchmark_store), ("lifecycle", record_lifecycle),
                         ("adversarial", lambda n: record_adversarial(n, locomo_dir))):
        for n in sizes:
            records += record(n)
            if verbose:
                print(f"{part} {n}: {len(records)} records", file=sys.stderr)
    return records


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--compare", help="a recording to compare with (== on every record)")
    parser.add_argument("--sizes", nargs="+", type=int, default=[1_000, 10_000])
    parser.add_argument("--locomo", default=suite_module.DEFAULT_LOCOMO_DIR,
                        help="the LoCoMo folder of the adversarial filler (default: ../shared/data/locomo)")
    args = parser.parse_args(argv)
    records = record_all(args.sizes, args.locomo)
    with open(args.out, "wb") as handle:
        pickle.dump(records, handle)
    recalls = sum(1 for r in records if r[0] not in ("store", "adversarial") and len(r) > 2)
    print(f"{recalls} recalls and why_nots recorded in {args.out}")
    if args.compare:
        with open(args.compare, "rb") as handle:
            before = pickle.load(handle)  # a trusted recording only (see the module docstring)
        if len(before) != len(records):
            print(f"DIFFERENT: {len(before)} records before, {len(records)} now")
            return 1
        different = [i for i, (a, b) in enumerate(zip(before, records)) if a != b]
        hits = sum(hit_count(r) for r in records)
        if different:
            print(f"DIFFERENT: {len(different)} of {len(records)} records, first {different[:5]}: {records[different[0]][:3]}")
            return 1
        print(f"identical: {len(records)} records ({recalls} recalls and why_nots, {hits} hits) compared with ==")
    return 0


if __name__ == "__main__":
    sys.exit(main())
