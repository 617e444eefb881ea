"""Side-by-side performance comparison: ``python -m fieldrank.evaluation.bench [--quick]``.

In one run, on this machine, it measures the native operators against the numpy reference
(:mod:`fieldrank.reference`) and against peers when they are installed (numpy ``E @ q`` +
``argpartition``, faiss ``IndexFlatIP``, ``scipy.optimize.nnls``, ``langchain_core``'s MMR,
``bm25s``), plus a read-bandwidth probe so the prefilter's GB/s sits next to the machine's.
Every comparison interleaves the contenders round by round, so load drifting during the run hits
both alike; figures are medians with min–max over the rounds, and ratios are medians of the
per-round ratios. It checks the performance targets of the project as ratios (never absolute
times) and writes ``performance.md`` and ``performance.png`` into ``--out``.

One-thread comparisons run with single-threaded BLAS and faiss: the module re-executes itself
with ``OPENBLAS_NUM_THREADS=1`` (and the MKL/OMP equivalents) unless they are already set.

Exit status: 0 when every target is met, 1 when one missed (the summary and the report's top say
which and by how much). numpy's BLAS is named in the report (threadpoolctl, when installed): an
OPENBLAS_CORETYPE set in the environment can select a slower OpenBLAS kernel, so compare with it
unset for that command alone.

Options: ``--quick`` (small sizes, fewer rounds; a minute or two), ``--out DIR`` (default
``./fieldrank-results``, created if missing and printed; ``--out docs/results`` regenerates the
committed ``docs/results/performance.md``), ``--no-write``, ``--json`` (print the targets and
measurements as JSON on stdout), ``--rounds N``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy as np

_THREAD_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
#: Default --out: a folder of its own in the working directory, never the committed docs/results.
DEFAULT_OUT_DIR = "fieldrank-results"

__all__ = [
    "DATA_SEED", "locomo_stack_inputs", "main", "queries_near", "retriever_inputs", "run_stack", "synthetic_texts",
    "unit_rows",
]


# --------------------------------------------------------------------------- timing


def _calibrate(fn: Callable[[], object], min_seconds: float) -> int:
    """Calls per sample so that one sample lasts at least min_seconds (at most 10,000)."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    return int(min(10_000, max(1, np.ceil(min_seconds / once))))


def interleaved(contenders: Dict[str, Callable[[], object]], rounds: int, min_seconds: float = 0.02):
    """Seconds per call of each contender, one sample per round, the order rotated every round."""
    inner = {name: _calibrate(fn, min_seconds) for name, fn in contenders.items()}
    names = list(contenders)
    samples: Dict[str, List[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            fn, n = contenders[name], inner[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - start) / n)
    return {name: np.asarray(values) for name, values in samples.items()}


@dataclass
class Stat:
    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values) -> "Stat":
        values = np.asarray(values, dtype=np.float64)
        return cls(float(np.median(values)), float(values.min()), float(values.max()))

    def ms(self) -> str:
        return f"{self.median * 1e3:.3g} ms [{self.low * 1e3:.3g}–{self.high * 1e3:.3g}]"

    def us(self) -> str:
        return f"{self.median * 1e6:.3g} µs [{self.low * 1e6:.3g}–{self.high * 1e6:.3g}]"

    def x(self) -> str:
        return f"{self.median:.2f}× [{self.low:.2f}–{self.high:.2f}]"

    def time(self) -> str:
        return self.us() if self.median < 1e-3 else self.ms()


def ratio(slow, fast) -> Stat:
    """Per-round speed-up slow/fast: median and min–max."""
    return Stat.of(np.asarray(slow) / np.asarray(fast))


# --------------------------------------------------------------------------- report


@dataclass
class Target:
    area: str
    claim: str
    measured: str
    value: float
    threshold: float
    higher_is_better: bool = True
    note: str = ""

    @property
    def met(self) -> bool:
        return self.value >= self.threshold if self.higher_is_better else self.value <= self.threshold


@dataclass
class Report:
    args: argparse.Namespace
    targets: List[Target] = field(default_factory=list)
    sections: List[str] = field(default_factory=list)
    chart_rows: List[tuple] = field(default_factory=list)
    probe: Dict[str, float] = field(default_factory=dict)

    def target(self, *args, **kwargs) -> Target:
        t = Target(*args, **kwargs)
        self.targets.append(t)
        status = "met" if t.met else "MISSED"
        log(f"  target [{status}] {t.area}: {t.claim} -> {t.measured}")
        return t

    def skipped(self, title: str, reason: str) -> None:
        """A section that says why its measurement did not run."""
        self.sections.append(f"## {title}\n\n{reason}; skipped.\n")

    def section(self, title: str, intro: str, header: List[str], rows: List[List[str]]) -> None:
        lines = [f"## {title}", "", intro, "", "| " + " | ".join(header) + " |",
                 "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        self.sections.append("\n".join(lines) + "\n")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- data


DATA_SEED = 20261130
_GENERATION_CHUNK_ROWS = 65536  # rows drawn at a time: bounds the temporaries for N = 1,000,000


def unit_rows(n: int, d: int, seed: int = DATA_SEED) -> np.ndarray:
    """Seeded (n, d) float32 with unit rows (the asv suite draws its data here too)."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, _GENERATION_CHUNK_ROWS):
        block = rng.standard_normal((min(_GENERATION_CHUNK_ROWS, n - start), d), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:start + block.shape[0]] = block
    return out


#: Synthetic documents for the retriever benchmarks: words drawn Zipf-like from a fixed vocabulary.
TEXT_VOCABULARY = 5000
TEXT_WORDS = 12
QUERY_WORDS = 4


def synthetic_texts(n: int, words: int = TEXT_WORDS, seed: int = DATA_SEED) -> List[str]:
    """``n`` texts of ``words`` pseudo-words each, Zipf-distributed like natural text (seeded)."""
    rng = np.random.default_rng(seed)
    ranks = (rng.zipf(1.3, size=(n, words)) - 1) % TEXT_VOCABULARY
    return [" ".join(f"w{r}" for r in row) for row in ranks]


def queries_near(E: np.ndarray, count: int, seed: int = 7) -> np.ndarray:
    """Unit queries close to corpus rows, as real queries are (they have near neighbours)."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(E.shape[0], size=count, replace=False)
    Q = E[rows] + 0.5 * rng.standard_normal((count, E.shape[1]), dtype=np.float32) / np.sqrt(E.shape[1])
    return np.ascontiguousarray(Q / np.linalg.norm(Q, axis=1, keepdims=True), dtype=np.float32)


def locomo_dir() -> Optional[Path]:
    """../shared/data/locomo beside the repository (or $FIELDRANK_LOCOMO_DIR), if present."""
    candidates = []
    if os.environ.get("FIELDRANK_LOCOMO_DIR"):
        candidates.append(Path(os.environ["FIELDRANK_LOCOMO_DIR"]))
    here = Path(__file__).resolve()
    candidates += [parent / "shared" / "data" / "locomo" for parent in here.parents]
    candidates += [Path.cwd().parent / "shared" / "data" / "locomo", Path.cwd() / "shared" / "data" / "locomo"]
    for path in candidates:
        if (path / "turns.jsonl").exists():
            return path
    return None


@dataclass
class StackInputs:
    E: np.ndarray
    texts: List[str]
    Q: np.ndarray
    questions: List[str]
    groups: Dict[int, tuple]  # conversation -> (question positions, subset ids)
    gold: List[set]
    bm25: object
    subsets: List[np.ndarray]


def locomo_stack_inputs(limit: Optional[int] = None, embeddings: str = "mpnet-base-v2") -> Optional[StackInputs]:
    """LoCoMo turns and scored questions (those with evidence), embeddings and a BM25 index."""
    root = locomo_dir()
    if root is None or not (root / "emb" / embeddings / "turns.npy").exists():
        return None
    from ..bm25 import BM25Index

    turns = [json.loads(line) for line in (root / "turns.jsonl").read_text(encoding="utf-8").splitlines()]
    questions = [json.loads(line) for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    E = np.ascontiguousarray(np.load(root / "emb" / embeddings / "turns.npy"), dtype=np.float32)
    Q_all = np.ascontiguousarray(np.load(root / "emb" / embeddings / "questions.npy"), dtype=np.float32)
    keep = [i for i, q in enumerate(questions) if q["evidence_resolved"]]
    if limit is not None:
        keep = keep[:limit]
    conversation = np.array([t["conv_index"] for t in turns])
    row_of = {(t["conv_index"], t["dia_id"]): i for i, t in enumerate(turns)}
    subsets = {int(c): np.flatnonzero(conversation == c).astype(np.int64) for c in np.unique(conversation)}
    groups: Dict[int, tuple] = {}
    for position, i in enumerate(keep):
        groups.setdefault(int(questions[i]["conv_index"]), ([], None))[0].append(position)
    groups = {c: (np.asarray(pos), subsets[c]) for c, (pos, _) in groups.items()}
    gold = [{row_of[(questions[i]["conv_index"], e)] for e in questions[i]["evidence_resolved"]} for i in keep]
    texts = [t["embed_text"] for t in turns]
    return StackInputs(E=E, texts=texts, Q=np.ascontiguousarray(Q_all[keep]),
                       questions=[questions[i]["question"] for i in keep], groups=groups, gold=gold,
                       bm25=BM25Index(texts), subsets=[subsets[int(questions[i]["conv_index"])] for i in keep])


def run_stack(inputs: StackInputs, module, n_threads: int = 0) -> List[np.ndarray]:
    """The rrf_cfsr stack (cosine 10 ×1, BM25 10 ×1, CFS-R 50 ×3, RRF top 10) for every question,
    each ranking only its own conversation, composed from ``module``'s batch operators."""
    out: List[Optional[np.ndarray]] = [None] * len(inputs.questions)
    for positions, subset in inputs.groups.values():
        Q = inputs.Q[positions]
        cosine = module.prefilter_batch(inputs.E, Q, 10, subset=subset, n_threads=n_threads).ids
        cfsr = module.cfsr_batch(inputs.E, Q, 50, subset=subset, n_threads=n_threads).ids
        lexical = inputs.bm25.top_batch([inputs.questions[p] for p in positions], 10, subset=subset,
                                        n_threads=n_threads)
        legs = [[cosine[i], lexical[i][0], cfsr[i]] for i in range(len(positions))]
        for p, fused in zip(positions, module.rrf_batch(legs, [1.0, 1.0, 3.0], 10)):
            out[p] = np.asarray(fused.ids)
    return out  # type: ignore[return-value]


# --------------------------------------------------------------------------- machine


def machine_description() -> Dict[str, str]:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) / 2**20:.0f} GiB"
                break
    except OSError:
        pass
    try:
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        load = "n/a"
    return {"cpu": model, "cores": str(os.cpu_count()), "memory": memory, "load": load,
            "python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform(),
            "blas": _blas_description()}


def _blas_description() -> str:
    """numpy's BLAS library, version and kernel (threadpoolctl), plus OPENBLAS_CORETYPE if set."""
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    suffix = f", OPENBLAS_CORETYPE={coretype}" if coretype else ""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl not installed)" + suffix
    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not blas:
        return "none found" + suffix
    info = blas[0]
    return f"{info.get('internal_api')} {info.get('version')} ({info.get('architecture', 'n/a')} kernel)" + suffix


# --------------------------------------------------------------------------- sections


def probe_bandwidth(report: Report, quick: bool) -> None:
    import fieldrank._kernels as core

    log("read-bandwidth probe")
    big = np.ones((128 if quick else 512) * 2**20 // 4, dtype=np.float32)
    small = np.ones(8 * 2**20 // 4, dtype=np.float32)
    rows = []
    for label, array in (("far bigger than cache", big), ("cache-resident (8 MiB)", small)):
        res = interleaved({t: (lambda a=array, t=t: core.read_probe(a, t)) for t in (1, 2)},
                          rounds=5 if quick else 9, min_seconds=0.05)
        for threads, seconds in res.items():
            gbs = Stat.of(array.nbytes / seconds / 1e9)
            report.probe[f"{label}/{threads}"] = gbs.median
            rows.append([label, str(threads), f"{array.nbytes / 2**20:.0f} MiB",
                         f"{gbs.median:.1f} GB/s [{gbs.low:.1f}–{gbs.high:.1f}]"])
    report.section(
        "Read-bandwidth probe",
        "`_core.read_probe`: one pass summing a float32 array with the active kernel variant's widest "
        "loads, split across threads. The prefilter's GB/s below is comparable to these figures.",
        ["array", "threads", "size", "read bandwidth"], rows)


def numpy_top(E: np.ndarray, q: np.ndarray, p: int) -> np.ndarray:
    s = E @ q
    top = np.argpartition(-s, p - 1)[:p]
    return top[np.lexsort((top, -s[top]))]


def numpy_top_subset(E: np.ndarray, q: np.ndarray, p: int, subset: np.ndarray) -> np.ndarray:
    """numpy on a subset's rows: gather them, E_sub @ q, argpartition, map back to row ids."""
    return subset[numpy_top(E[subset], q, p)]


def numpy_top_batch(E: np.ndarray, Q: np.ndarray, p: int) -> np.ndarray:
    """numpy for a batch: one GEMM (E @ Qᵀ) and an argpartition along the rows per query."""
    S = E @ Q.T
    top = np.argpartition(-S, p - 1, axis=0)[:p]
    scores = np.take_along_axis(S, top, axis=0)
    order = np.lexsort((top, -scores), axis=0)
    return np.take_along_axis(top, order, axis=0).T


def _same_top(ids: np.ndarray, expected: np.ndarray) -> bool:
    """Both top-P lists hold (nearly) the same rows: fp32 sums in another order may swap a near-tie."""
    ids, expected = np.atleast_2d(ids), np.atleast_2d(expected)
    shared = [np.intersect1d(a, b).size / max(b.size, 1) for a, b in zip(ids, expected)]
    return ids.shape == expected.shape and min(shared) >= 0.99


#: fp32 scan targets (issue 27): one thread, top-150, unit-norm check kept, on every kernel variant
#: this machine supports. The earlier rounds' targets stay listed (their thresholds are lower).
SCAN_SPEEDUP = 1.2
SCAN_PROBE_SHARE = 0.9
SCAN_SIZES = [(n, d) for n in (10_000, 100_000, 1_000_000) for d in (384, 768, 1536)]
SCAN_SIZES_QUICK = [(10_000, 384), (100_000, 384)]
#: A size whose E (plus numpy's temporaries) would not fit in this share of the available memory
#: is not measured; the report says so (1M × 1536 is 6.1 GB).
_SCAN_MEMORY_SHARE = 0.6


def _available_bytes() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float("inf")


def _variants() -> List[str]:
    import fieldrank

    return list(fieldrank.build_info()["supported_kernel_variants"])


def bench_prefilter(report: Report, quick: bool, rounds: int) -> None:
    import fieldrank
    import fieldrank._kernels as core
    import fieldrank.reference as ref

    try:
        import faiss
        faiss.omp_set_num_threads(1)
    except ImportError:
        faiss = None
    active = fieldrank.build_info()["kernel_variant"]
    variants = _variants()
    sizes = SCAN_SIZES_QUICK if quick else SCAN_SIZES
    rows, chart, skipped = [], [], []
    probe_dram = report.probe.get("far bigger than cache/1", float("nan"))
    probe_cache = report.probe.get("cache-resident (8 MiB)/1", float("nan"))
    try:
        for n, d in sizes:
            if n * d * 4 > _SCAN_MEMORY_SHARE * _available_bytes():
                skipped.append(f"N={n:,}, d={d} ({n * d * 4 / 1e9:.1f} GB; "
                               f"{_available_bytes() / 1e9:.1f} GB available)")
                log(f"prefilter N={n} d={d}: skipped, not enough memory")
                continue
            log(f"prefilter N={n} d={d} ({', '.join(variants)})")
            E = unit_rows(n, d)
            q = queries_near(E, 1)[0]
            expected = numpy_top(E, q, 150)
            contenders: Dict[str, Callable[[], object]] = {"numpy": lambda: numpy_top(E, q, 150)}
            for v in variants:
                core.set_kernel_variant(v)
                if not _same_top(fieldrank.prefilter(E, q, 150).ids, expected):
                    msg = f"prefilter ({v}) and numpy disagree at N={n}, d={d}"
                    raise AssertionError(msg)
                contenders[v] = lambda v=v: (core.set_kernel_variant(v), fieldrank.prefilter(E, q, 150))
            if faiss is not None and n * d <= 100_000 * 768:
                index = faiss.IndexFlatIP(d)
                index.add(E)
                contenders["faiss"] = lambda: index.search(q[None, :], 150)
            if n * d <= 10_000 * 768:
                contenders["reference"] = lambda: ref.prefilter(E, q, 150)
            res = interleaved(contenders, rounds=max(3, rounds // (1 if n < 1_000_000 else 2)))
            resident = E.nbytes < 24 * 2**20
            probe = probe_cache if resident else probe_dram
            for v in variants:
                native = Stat.of(res[v])
                vs_numpy = ratio(res["numpy"], res[v])
                gbs = Stat.of(E.nbytes / res[v] / 1e9)
                rows.append([f"{n:,}", str(d), v, native.time(), Stat.of(res["numpy"]).time(), vs_numpy.x(),
                             f"{ratio(res['faiss'], res[v]).x()}" if "faiss" in res else "n/a",
                             f"{ratio(res['reference'], res[v]).x()}" if "reference" in res else "—",
                             f"{gbs.median:.1f} [{gbs.low:.1f}–{gbs.high:.1f}]",
                             f"{probe:.1f} ({'cache' if resident else 'DRAM'})", f"{gbs.median / probe:.0%}"])
                chart.append((f"prefilter {v} N={n // 1000}k d={d} vs numpy", vs_numpy.median, SCAN_SPEEDUP))
                report.target("prefilter fp32", f"≥ {SCAN_SPEEDUP}× numpy E@q+argpartition, one thread, "
                              f"N={n:,}, d={d}, {v}", f"{vs_numpy.x()}", vs_numpy.median, SCAN_SPEEDUP)
                if n >= 100_000:
                    report.target("prefilter fp32", f"≥ {SCAN_PROBE_SHARE:.0%} of the one-thread read probe, "
                                  f"N={n:,}, d={d}, {v}", f"{gbs.median:.1f} of {probe:.1f} GB/s",
                                  gbs.median / probe, SCAN_PROBE_SHARE)
                if v == active:  # the earlier rounds' targets, on the default variant
                    report.target("prefilter fp32 (round 1)", f"≥ numpy E@q+argpartition at N={n:,}, d={d}",
                                  f"{vs_numpy.x()} faster", vs_numpy.median, 1.0)
                    if n == 10_000 and d == 384:
                        report.target("prefilter fp32 (round 1)", "≥ 1.3× faster than numpy at N=10k",
                                      f"{vs_numpy.x()}", vs_numpy.median, 1.3)
            del E
    finally:
        core.set_kernel_variant(active)
    report.chart_rows += chart
    note = (" Not measured for lack of memory: " + "; ".join(skipped) + ".") if skipped else ""
    report.section(
        "Prefilter, fp32, one query, one thread (P = 150)",
        "Fused scoring + top-P selection (no N-length score array), each row's unit norm checked in the "
        "same pass, on every kernel variant this machine supports (`FIELDRANK_KERNEL`), against numpy "
        "`E @ q` + `argpartition` + sort of the top P, faiss `IndexFlatIP` (one thread, N·d ≤ 100k·768) "
        "and the numpy reference (float64). All contenders of a size are interleaved round by round. "
        "Speed-ups are peer time / native time. GB/s = bytes of E / time, next to the probe for the "
        "same residency." + note,
        ["N", "d", "variant", "native", "numpy", "vs numpy", "vs faiss", "vs reference", "GB/s", "probe GB/s",
         "of probe"],
        rows)
    bench_prefilter_forms(report, quick, rounds)


def bench_prefilter_forms(report: Report, quick: bool, rounds: int) -> None:
    """The subset form (a third of the rows) and the batch form (16 and 64 queries), one thread."""
    import fieldrank

    rows = []
    for n, d in ([(10_000, 384), (100_000, 384)] if quick else [(10_000, 384), (100_000, 384), (100_000, 768)]):
        log(f"prefilter subset / batch N={n} d={d}")
        E = unit_rows(n, d)
        Q = queries_near(E, 64)
        q = Q[0]
        subset = np.arange(0, n, 3, dtype=np.int64)
        if not _same_top(fieldrank.prefilter(E, q, 150, subset=subset).ids, numpy_top_subset(E, q, 150, subset)):
            msg = f"prefilter(subset) and numpy disagree at N={n}, d={d}"
            raise AssertionError(msg)
        res = interleaved({"native": lambda: fieldrank.prefilter(E, q, 150, subset=subset),
                           "numpy": lambda: numpy_top_subset(E, q, 150, subset)}, rounds=rounds)
        vs = ratio(res["numpy"], res["native"])
        rows.append([f"{n:,}", str(d), f"subset of {subset.size:,} rows", Stat.of(res["native"]).time(),
                     Stat.of(res["numpy"]).time(), vs.x()])
        report.target("prefilter subset", f"≥ {SCAN_SPEEDUP}× numpy E[subset]@q+argpartition, one thread, "
                      f"N={n:,} (subset N/3), d={d}", vs.x(), vs.median, SCAN_SPEEDUP)
        report.chart_rows.append((f"prefilter subset N={n // 1000}k d={d} vs numpy", vs.median, SCAN_SPEEDUP))
        for B in (16, 64):
            QB = np.ascontiguousarray(Q[:B])
            if not _same_top(fieldrank.prefilter_batch(E, QB, 150, n_threads=1).ids, numpy_top_batch(E, QB, 150)):
                msg = f"prefilter_batch and numpy disagree at N={n}, d={d}, {B} queries"
                raise AssertionError(msg)
            res = interleaved({"native": lambda: fieldrank.prefilter_batch(E, QB, 150, n_threads=1),
                               "numpy": lambda: numpy_top_batch(E, QB, 150)}, rounds=max(3, rounds // 2))
            vs = ratio(res["numpy"], res["native"])
            rows.append([f"{n:,}", str(d), f"batch of {B}", Stat.of(res["native"]).time(),
                         Stat.of(res["numpy"]).time(), vs.x()])
            report.target("prefilter batch", f"≥ numpy GEMM E@Qᵀ+argpartition, one thread, {B} queries, "
                          f"N={n:,}, d={d}", vs.x(), vs.median, 1.0)
            report.chart_rows.append((f"prefilter_batch {B}q N={n // 1000}k d={d} vs numpy", vs.median, 1.0))
        del E
    report.section(
        "Prefilter subset and batch forms, one thread (P = 150)",
        "Subset: the rows `0, 3, 6, …` (a third), against numpy gathering them (`E[subset] @ q`) + "
        "`argpartition`. Batch: `prefilter_batch` with one thread against one numpy GEMM (`E @ Q.T`) + "
        "`argpartition` along the rows. Default kernel variant; speed-ups are numpy time / native time.",
        ["N", "d", "form", "native", "numpy", "vs numpy"], rows)


def bench_prefilter_threads(report: Report, quick: bool, rounds: int) -> None:
    import fieldrank

    rows = []
    for n in ([100_000] if quick else [100_000, 1_000_000]):
        log(f"prefilter_batch threads N={n}")
        E = unit_rows(n, 384)
        Q = queries_near(E, 16)
        res = interleaved({t: (lambda t=t: fieldrank.prefilter_batch(E, Q, 150, n_threads=t)) for t in (1, 2)},
                          rounds=max(3, rounds // 2))
        speedup = ratio(res[1], res[2])
        passes = Stat.of(E.nbytes / res[2] / 1e9)
        rows.append([f"{n:,}", "16", Stat.of(res[1]).time(), Stat.of(res[2]).time(), speedup.x(),
                     f"{passes.median:.1f}"])
        report.target("prefilter batch", f"2 threads ≥ 1.7× one thread at N={n:,} (16 queries)", speedup.x(),
                      speedup.median, 1.7)
        report.chart_rows.append((f"prefilter_batch N={n // 1000}k 2 thr vs 1", speedup.median, 1.7))
        del E
    busy = report.probe.get("far bigger than cache/2", 0.0) < 1.3 * report.probe.get("far bigger than cache/1", 1.0)
    note = (" On this run the read probe itself gains less than 1.3× from a second thread, i.e. the "
            "second core was busy with other work, so thread speed-ups here understate the code's." if busy else "")
    extra = sorted(Path(report.args.out).glob("thread_scaling_*.txt")) if report.args.out else []
    if extra:
        note += (" The same batches measured without Python on an idle machine: " +
                 ", ".join(f"[{p.name}]({p.name})" for p in extra) + " (`tools/thread_scaling.cpp`).")
    report.section(
        "Prefilter batch, threads (d = 384, P = 150)",
        "Up to 16 queries are scored per pass over E (register tiles of 4 rows × 4 queries); E's rows "
        "are split across threads and each query's top-P merged, so results are identical for any "
        "thread count. GB/s counts one pass over E for the whole batch." + note,
        ["N", "queries", "1 thread", "2 threads", "speed-up", "E GB/s (2 thr)"], rows)


def bench_quantized(report: Report, quick: bool, rounds: int) -> None:
    import fieldrank

    n = 200_000 if quick else 1_000_000
    log(f"reduced precision N={n}")
    E = unit_rows(n, 384)
    q = queries_near(E, 1)[0]
    QC = {kind: fieldrank.quantize(E, kind) for kind in ("bf16", "int8")}
    factor = fieldrank.DEFAULTS["quantized_rescore_factor"]
    res = interleaved({"fp32": lambda: fieldrank.prefilter(E, q, 150),
                       "bf16": lambda: fieldrank.prefilter_quantized(QC["bf16"], E, q, 150),
                       "int8": lambda: fieldrank.prefilter_quantized(QC["int8"], E, q, 150)},
                      rounds=max(3, rounds // 2))
    rows = []
    for kind, threshold in (("fp32", None), ("bf16", 1.8), ("int8", 3.0)):
        speed = ratio(res["fp32"], res[kind])
        size = E.nbytes if kind == "fp32" else QC[kind].nbytes
        rows.append([kind, Stat.of(res[kind]).time(), f"{size / 2**20:.0f} MiB", speed.x(),
                     f"{size / np.median(res[kind]) / 1e9:.1f}"])
        if threshold is not None:
            report.target("reduced precision", f"{kind} ≥ {threshold}× fp32 throughput at N={n:,}, d=384",
                          speed.x(), speed.median, threshold,
                          note="" if n == 1_000_000 else "quick run: N=200k")
            report.chart_rows.append((f"{kind} vs fp32 N={n // 1000}k", speed.median, threshold))
    report.section(
        f"Reduced-precision prefilter (N = {n:,}, d = 384, P = 150, rescore_factor = {factor})",
        "The scan reads the bf16 or int8 copy and keeps the top rescore_factor·P rows, which are "
        "rescored exactly in fp32 from E (so the returned scores are exact). Speed-up = fp32 time / time.",
        ["precision", "time", "bytes scanned", "speed-up vs fp32", "GB/s of the copy"], rows)
    del E, QC

    log("pool recall@150")
    sets = [("random 200k × 384", unit_rows(200_000, 384), None)]
    root = locomo_dir()
    for name in ("mpnet-base-v2", "minilm-l6-v2"):
        if root is not None and (root / "emb" / name / "turns.npy").exists():
            E_l = np.ascontiguousarray(np.load(root / "emb" / name / "turns.npy"), dtype=np.float32)
            Q_l = np.ascontiguousarray(np.load(root / "emb" / name / "questions.npy"), dtype=np.float32)
            sets.append((f"LoCoMo {name} turns ({E_l.shape[0]:,} × {E_l.shape[1]})", E_l, Q_l))
    rows = []
    for label, E_s, Q_s in sets:
        Q_s = queries_near(E_s, 64 if quick else 200) if Q_s is None else Q_s[:: (8 if quick else 1)]
        exact = fieldrank.prefilter_batch(E_s, Q_s, 150).ids
        for kind in ("bf16", "int8"):
            qc = fieldrank.quantize(E_s, kind)
            cells = [label, kind, str(len(Q_s))]
            for c in (1, 2, 4):
                got = fieldrank.prefilter_quantized_batch(qc, E_s, Q_s, 150, rescore_factor=c).ids
                recall = np.mean([np.intersect1d(a, b).size / b.size for a, b in zip(got, exact)])
                worst = np.min([np.intersect1d(a, b).size / b.size for a, b in zip(got, exact)])
                cells.append(f"{recall:.5f} (min {worst:.3f})")
                if c == factor:
                    report.target("reduced precision", f"pool recall@150 ≥ 0.999, {kind}, {label}, c={c}",
                                  f"{recall:.5f}", recall, 0.999)
            rows.append(cells)
    report.section(
        "Pool recall@150 of the reduced-precision prefilter against exact fp32",
        "Mean over queries of |quantized top-150 ∩ exact top-150| / 150 (the worst query in "
        "brackets), for rescore factors c = 1, 2, 4. LoCoMo: every question against all turns.",
        ["corpus", "precision", "queries", "c = 1", "c = 2", "c = 4"], rows)


def pg_numpy(C: np.ndarray, q: np.ndarray, iters: int = 80, lam: float = 0.005) -> np.ndarray:
    """The CFS-R-shaped NNLS in plain numpy float32 (Gram form, 80 projected-gradient steps)."""
    G = C @ C.T
    r = C @ q
    step = 1.0 / (np.linalg.eigvalsh(G.astype(np.float64))[-1] + lam)
    a = np.zeros(len(C), dtype=np.float32)
    for _ in range(iters):
        a = np.maximum(0.0, a - step * (G @ a + lam * a - r))
    return a


def bench_cfsr(report: Report, quick: bool, rounds: int) -> None:
    import fieldrank
    import fieldrank._kernels as core
    import fieldrank.reference as ref

    try:
        from scipy.optimize import nnls
    except ImportError:
        nnls = None
    D = fieldrank.DEFAULTS
    rows = []
    sgemm_rows = []
    big = unit_rows(1024, 1024, seed=3)
    big_rate = Stat.of(2 * 1024**3 / interleaved({"sgemm": lambda: big @ big.T}, rounds=5)["sgemm"] / 1e9)
    for d in (384, 768):
        log(f"cfsr pool P=150 d={d}")
        E = unit_rows(20_000, d)
        q = queries_near(E, 1)[0]
        top = fieldrank.prefilter(E, q, 150)
        ids, C, sims = top.ids, np.ascontiguousarray(E[top.ids]), np.ascontiguousarray(top.scores)
        contenders = {
            "native": lambda: fieldrank.cfsr_pool(ids, C, q, 50),
            "core": lambda: core.cfsr_pool(ids, C, q, 50, D["w"], D["lam"], D["iters"], 0.0, False, sims),
            "reference": lambda: ref.cfsr_pool(ids, C, q, 50),
            "numpy PG": lambda: pg_numpy(C, q),
            "sgemm": lambda: C @ C.T,
        }
        if nnls is not None:
            Ct = np.ascontiguousarray(C.T, dtype=np.float64)
            qd = q.astype(np.float64)
            contenders["scipy nnls"] = lambda: nnls(Ct, qd)
        res = interleaved(contenders, rounds=rounds)
        P = len(ids)
        flops = P * (P + 1) * d + D["iters"] * 2 * P * P  # Gram (lower triangle) + iterations
        gflops = Stat.of(flops / res["core"] / 1e9)
        sgemm = Stat.of(2 * P * P * d / res["sgemm"] / 1e9)
        vs_ref = ratio(res["reference"], res["native"])
        rows.append([str(d), Stat.of(res["native"]).time(), Stat.of(res["core"]).time(),
                     Stat.of(res["reference"]).time(), vs_ref.x(), Stat.of(res["numpy PG"]).time(),
                     Stat.of(res["scipy nnls"]).time() if "scipy nnls" in res else "n/a"])
        sgemm_rows.append([str(d), f"{gflops.median:.1f} [{gflops.low:.1f}–{gflops.high:.1f}]",
                           f"{sgemm.median:.1f}", f"{big_rate.median:.1f}", f"{gflops.median / sgemm.median:.2f}",
                           f"{gflops.median / big_rate.median:.2f}"])
        report.target("CFS-R", f"≥ 6× faster than the reference, P=150, d={d}, one query", vs_ref.x(),
                      vs_ref.median, 6.0)
        report.target("CFS-R", f"GFLOP/s ≥ 0.5× numpy sgemm (same shape, same run), d={d}",
                      f"{gflops.median:.1f} vs {sgemm.median:.1f} GFLOP/s = {gflops.median / sgemm.median:.2f}",
                      gflops.median / sgemm.median, 0.5,
                      note=f"against a 1024³ sgemm ({big_rate.median:.0f} GFLOP/s): {gflops.median / big_rate.median:.2f}")
        report.chart_rows.append((f"cfsr_pool d={d} vs reference", vs_ref.median, 6.0))
        report.chart_rows.append((f"cfsr GFLOP/s / sgemm d={d}", gflops.median / sgemm.median, 0.5))
    report.section(
        "CFS-R on a pool (P = 150, k = 50, 80 iterations), one query",
        "`native` is `fieldrank.cfsr_pool` (validation included); `core` is `_core.cfsr_pool` with "
        "the cosines given (the kernel work alone). The reference is numpy float64 with an exact "
        "eigvalsh; `numpy PG` is the same NNLS in numpy float32 (Gram + 80 steps); scipy's `nnls` "
        "solves the unregularised problem (active set) for context.",
        ["d", "native", "core", "reference", "vs reference", "numpy PG (f32)", "scipy nnls"], rows)
    report.section(
        "CFS-R arithmetic rate",
        "Useful FLOPs = Gram on the lower triangle P(P+1)·d + 80 iterations × 2P², divided by the "
        "`core` time (which also includes gathering, λ_max by Lanczos and ranking). numpy sgemm: "
        "`C @ C.T` (2P²d FLOPs) in float32 with one BLAS thread, same shape, same run; and a "
        "1024 × 1024 × 1024 sgemm for the machine's attainable rate.",
        ["d", "CFS-R GFLOP/s", "sgemm same shape", "sgemm 1024³", "ratio (same shape)", "ratio (1024³)"],
        sgemm_rows)

    log("cfsr_batch threads")
    E = unit_rows(20_000, 384)
    Q = queries_near(E, 64)
    res = interleaved({t: (lambda t=t: fieldrank.cfsr_batch(E, Q, n_threads=t)) for t in (1, 2)},
                      rounds=max(3, rounds // 2))
    speedup = ratio(res[1], res[2])
    report.target("CFS-R batch", "2 threads ≥ 1.8× one thread (64 queries, N=20k, d=384)", speedup.x(),
                  speedup.median, 1.8)
    report.chart_rows.append(("cfsr_batch 2 thr vs 1", speedup.median, 1.8))
    report.section(
        "CFS-R batch, threads (64 queries, N = 20,000, d = 384)",
        "One pass over E scores all queries (threads split the rows), then the pools run in "
        "parallel, one query per thread; identical results for any thread count.",
        ["1 thread", "2 threads", "speed-up"], [[Stat.of(res[1]).time(), Stat.of(res[2]).time(), speedup.x()]])


def bench_greedy(report: Report, quick: bool, rounds: int) -> None:
    import fieldrank
    import fieldrank.reference as ref

    try:
        from langchain_core.vectorstores.utils import maximal_marginal_relevance
    except ImportError:
        maximal_marginal_relevance = None
    mu = fieldrank.DEFAULTS["mu"]
    rows = []
    for d in (384, 768):
        E = unit_rows(20_000, d)
        q = queries_near(E, 1)[0]
        top = fieldrank.prefilter(E, q, 150)
        ids, C = top.ids, np.ascontiguousarray(E[top.ids])
        for k in (10, 50):
            log(f"cfs/mmr pool P=150 d={d} k={k}")
            contenders = {
                "cfs": lambda: fieldrank.cfs_pool(ids, C, q, k),
                "cfs reference": lambda: ref.cfs_pool(ids, C, q, k),
                "mmr": lambda: fieldrank.mmr_pool(ids, C, q, k),
                "mmr reference": lambda: ref.mmr_pool(ids, C, q, k),
            }
            if maximal_marginal_relevance is not None:
                contenders["langchain mmr"] = lambda: maximal_marginal_relevance(q, C, lambda_mult=mu, k=k)
            res = interleaved(contenders, rounds=rounds)
            cells = [str(d), str(k)]
            for op in ("cfs", "mmr"):
                vs_ref = ratio(res[f"{op} reference"], res[op])
                cells += [Stat.of(res[op]).time(), vs_ref.x()]
                if d == 384:  # the targets' shape (the anchors are P=150, d=384); d=768 is reported only
                    report.target(op.upper(), f"≥ 3× faster than the reference, P=150, K={k}, d={d}", vs_ref.x(),
                                  vs_ref.median, 3.0)
                if "langchain mmr" in res:
                    vs_lc = ratio(res["langchain mmr"], res[op])
                    cells.append(vs_lc.x())
                    if d == 384:
                        report.target(op.upper(), f"≥ 20× faster than langchain_core MMR, P=150, K={k}, d={d}",
                                      vs_lc.x(), vs_lc.median, 20.0)
                        report.chart_rows.append((f"{op} K={k} vs langchain MMR", vs_lc.median, 20.0))
                else:
                    cells.append("n/a")
                if d == 384:
                    report.chart_rows.append((f"{op} K={k} vs reference", vs_ref.median, 3.0))
            cells.append(Stat.of(res["langchain mmr"]).time() if "langchain mmr" in res else "n/a")
            rows.append(cells)
    report.section(
        "CFS and MMR on a pool (P = 150), one query",
        "Public pool forms (`cfs_pool`, `mmr_pool`, validation included) against the numpy "
        f"reference and langchain_core's `maximal_marginal_relevance` (λ = μ = {mu}).",
        ["d", "K", "CFS", "vs reference", "vs langchain MMR", "MMR", "vs reference", "vs langchain MMR",
         "langchain MMR"], rows)


def bench_stack(report: Report, quick: bool, rounds: int) -> None:
    import fieldrank
    import fieldrank.reference as ref

    log("end to end: LoCoMo rrf_cfsr")
    inputs = locomo_stack_inputs()
    if inputs is None:
        return report.skipped("End to end", "LoCoMo data not found (../shared/data/locomo)")
    n_q = len(inputs.questions)
    native_ids = run_stack(inputs, fieldrank, n_threads=2)
    reference_ids = run_stack(inputs, ref, n_threads=2)
    agree = np.mean([np.array_equal(a, b) for a, b in zip(native_ids, reference_ids)])
    recall = np.mean([len(set(ids.tolist()) & g) / len(g) for ids, g in zip(native_ids, inputs.gold)])
    contenders = {
        "native 2 threads": lambda: run_stack(inputs, fieldrank, n_threads=2),
        "native 1 thread": lambda: run_stack(inputs, fieldrank, n_threads=1),
        "reference": lambda: run_stack(inputs, ref, n_threads=2),
    }
    hybrid_note = ""
    try:
        from ..hybrid import HybridRetriever

        retriever = HybridRetriever(inputs.texts, inputs.E, "rrf_cfsr")
        contenders["HybridRetriever.search_batch, 2 threads"] = lambda: retriever.search_batch(
            inputs.questions, inputs.Q, subsets=inputs.subsets, n_threads=2)
    except Exception as exc:  # the retriever is optional here
        hybrid_note = f" (HybridRetriever unavailable: {exc})"
    lexical = interleaved({"bm25": lambda: inputs.bm25.top_batch(inputs.questions, 10, n_threads=1)}, rounds=3,
                          min_seconds=0.0)["bm25"]
    res = interleaved(contenders, rounds=max(3, rounds // 3), min_seconds=0.0)
    native = Stat.of(res["native 2 threads"])
    vs_ref = ratio(res["reference"], res["native 2 threads"])
    rows = [[name, str(n_q), Stat.of(seconds).time(), f"{np.median(seconds) / n_q * 1e3:.3f} ms"]
            for name, seconds in res.items()]
    report.target("end to end", f"rrf_cfsr over all {n_q:,} LoCoMo questions (mpnet) ≤ 1 s on 2 threads",
                  native.ms(), native.median, 1.0, higher_is_better=False)
    report.target("end to end", "≥ 4× faster than the same stack on the reference operators", vs_ref.x(),
                  vs_ref.median, 4.0)
    report.chart_rows.append(("rrf_cfsr stack vs reference stack", vs_ref.median, 4.0))
    report.section(
        "End to end: the rrf_cfsr stack over the LoCoMo question set",
        f"{n_q:,} scored questions, mpnet-base-v2 embeddings (d = 768), each question ranking only "
        "its own conversation's turns (~600). Stack: cosine 10 ×1, BM25 10 ×1, CFS-R 50 ×3, RRF "
        "top 10, composed from the batch operators of each module (BM25 is bm25s in both) and, for "
        f"the native module, also through `HybridRetriever.search_batch`{hybrid_note}. Search time "
        "only (index built, embeddings given). Native and reference return the same top 10 for "
        f"{agree:.1%} of the questions; Recall@10 of the native stack {recall:.4f}. bm25s alone "
        f"(all 5,882 turns, one thread): {np.median(lexical) / n_q * 1e3:.3f} ms per query.",
        ["stack", "questions", "search time", "per question"], rows)


def retriever_inputs(n: int, d: int = 384, n_queries: int = 32):
    """A synthetic corpus for the retriever benchmarks: texts, unit rows, query texts and vectors."""
    E = unit_rows(n, d)
    return synthetic_texts(n), E, synthetic_texts(n_queries, QUERY_WORDS, seed=DATA_SEED + 3), queries_near(E, n_queries)


def bench_default_stack(report: Report, quick: bool, rounds: int) -> None:
    """The ``default`` preset (native temporal leg) against rrf2 and one prefilter scan (issue 16)."""
    from .. import _kernels as kernels
    from ..hybrid import HybridRetriever, moments_apply

    sizes = (600, 1_000, 20_000) if quick else (600, 1_000, 20_000, 100_000)
    rows = []
    for n in sizes:
        log(f"default vs rrf2: N = {n:,}")
        texts, E, q_texts, Q = retriever_inputs(n)
        default = HybridRetriever(texts, E, "default")
        rrf2 = default.with_config("rrf2")
        cosine_depth, bm25_depth = (leg.depth for leg in rrf2.config.legs)
        B = len(q_texts)
        at = [0]

        def nxt() -> int:
            at[0] = (at[0] + 1) % B
            return at[0]

        contenders = {
            "default search": lambda: default.search(q_texts[nxt()], Q[at[0]]),
            "rrf2 search": lambda: rrf2.search(q_texts[nxt()], Q[at[0]]),
            "prefilter scan": lambda: kernels.prefilter(E, Q[nxt()], cosine_depth, None),
            "bm25 top": lambda: rrf2.bm25.top(q_texts[nxt()], bm25_depth),
            "default batch": lambda: default.search_batch(q_texts, Q, n_threads=1),
            "rrf2 batch": lambda: rrf2.search_batch(q_texts, Q, n_threads=1),
        }
        # The corpus moments of default's leg over every row (computed once, by the first search
        # that needs them: outside the timed rounds, which the calibration call precedes).
        uses_moments = moments_apply(*E.shape)
        moments = "–"
        if uses_moments:
            seconds = []
            for _ in range(3):
                start = time.perf_counter()
                kernels.temporal_moments(E, 0)  # every hardware thread, as the retriever computes them
                seconds.append(time.perf_counter() - start)
            moments = Stat.of(seconds).time()
        res = interleaved(contenders, rounds=rounds)
        for name in ("default batch", "rrf2 batch"):
            res[name] = res[name] / B  # per query
        single = ratio(res["default search"], res["rrf2 search"])
        batch = ratio(res["default batch"], res["rrf2 batch"])
        scan = ratio(res["default search"], res["prefilter scan"])
        overhead = ratio(res["rrf2 search"], res["prefilter scan"] + res["bm25 top"])
        if n >= 1_000:
            report.target("default stack", f"default ≤ 1.2× rrf2 per query, single, N = {n:,}", single.x(),
                          single.median, 1.2, higher_is_better=False)
            report.target("default stack", f"default ≤ 1.2× rrf2 per query, batch of {B}, N = {n:,}", batch.x(),
                          batch.median, 1.2, higher_is_better=False)
        if n >= 20_000:
            report.target("default stack", f"default single query ≤ 1.5× one fp32 prefilter scan, N = {n:,}",
                          scan.x(), scan.median, 1.5, higher_is_better=False)
        if n in (600, 20_000):
            report.target("default stack", f"rrf2 search ≤ 1.3× its prefilter + BM25 time, N = {n:,}",
                          overhead.x(), overhead.median, 1.3, higher_is_better=False)
        rows.append([f"{n:,}"] + [Stat.of(res[name]).time() for name in contenders]
                    + [single.x(), batch.x(), scan.x(), overhead.x(), moments])
    report.section(
        "The default stack on the native core",
        "Synthetic corpora (d = 384, texts of 12 Zipf-distributed pseudo-words, 32 queries near corpus "
        "rows, 4-word query texts); one thread. `default` is the shipped preset (one temporal leg: BM25 "
        "and cosine z-blended over every row, neighbour support, priors; no timeline given, so corpus "
        "order is one session); `rrf2` is cosine 10 + BM25 10. Single searches rotate over the 32 "
        "queries; batches are `search_batch` of all 32, per query. `prefilter scan` is one native fp32 "
        "prefilter kernel call (`_core.prefilter`, no Python checks) over the same rows (the memory-bandwidth floor of a dense leg); `bm25 top` "
        "is `BM25Index.top` at rrf2's depth. From "
        f"{kernels.DEFAULTS['temporal_moments_min_rows_per_dim']} rows per dimension the leg over every row takes "
        "the corpus moments and the fp32 screen (docs/design.md); `moments` is their one-off cost "
        "(`_core.temporal_moments`, every hardware thread, as the retriever and "
        "`HybridRetriever.prepare()` compute them), paid by the first search and not in the rounds. "
        "Medians [min–max] of interleaved rounds; ratios per round.",
        ["N", *contenders, "default / rrf2 single", "default / rrf2 batch", "default / scan",
         "rrf2 / (scan + bm25)", "moments (once)"], rows)


def bench_locomo_default(report: Report, quick: bool, rounds: int) -> None:
    """Every LoCoMo question with default vs rrf2 (search_batch, per-conversation subsets, 2 threads)."""
    log("end to end: LoCoMo default vs rrf2")
    root = locomo_dir()
    if root is None:
        return report.skipped("LoCoMo: default vs rrf2", "LoCoMo data not found")
    from . import locomo
    from ..hybrid import HybridRetriever
    from .locomo import locomo_timeline

    rows = []
    for embeddings in ("minilm-l6-v2", "mpnet-base-v2"):
        data = locomo.load_locomo(root, embeddings, checksums=False)
        keep = data.split_question_indices("all")
        texts = [str(t) for t in data.questions.question[keep]]
        Q = np.ascontiguousarray(data.question_embeddings[keep], dtype=np.float32)
        subsets = [np.arange(*data.conv_ranges[int(c)]) for c in data.questions.conv_index[keep]]
        default = HybridRetriever([str(t) for t in data.turns.embed_text], data.turn_embeddings, "default",
                                  timeline=locomo_timeline(data))
        rrf2 = default.with_config("rrf2")
        res = interleaved({
            "default": lambda: default.search_batch(texts, Q, subsets=subsets, n_threads=2),
            "rrf2": lambda: rrf2.search_batch(texts, Q, subsets=subsets, n_threads=2),
        }, rounds=max(3, rounds // 3), min_seconds=0.0)
        r = ratio(res["default"], res["rrf2"])
        report.target("default stack", f"all {len(texts):,} LoCoMo questions ({embeddings}, 2 threads): default "
                      "≤ 1.2× rrf2", r.x(), r.median, 1.2, higher_is_better=False)
        rows.append([embeddings, f"{len(texts):,}", Stat.of(res["default"]).ms(), Stat.of(res["rrf2"]).ms(), r.x()])
    report.section(
        "LoCoMo: default vs rrf2, every question",
        "All scored questions, each ranking its own conversation (`search_batch` with per-question "
        "subsets, 2 threads); `default` with the LoCoMo timeline (sessions, dates, time cues). Search "
        "time only (indexes built). Medians [min–max] of interleaved rounds.",
        ["embeddings", "questions", "default", "rrf2", "default / rrf2"], rows)


def peak_memory(report: Report, quick: bool) -> None:
    """Peak RSS growth of one call beyond E, in fresh processes (Linux: VmHWM reset by clear_refs)."""
    log("peak memory")
    if not Path("/proc/self/clear_refs").exists():
        return report.skipped("Peak memory beyond E", "Needs Linux (/proc/self/clear_refs)")
    n, d = (200_000 if quick else 1_000_000), 384
    code = """
import sys, numpy as np, fieldrank
from pathlib import Path
from fieldrank.evaluation.bench import unit_rows, queries_near, numpy_top
def hwm():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) * 1024
E = unit_rows({n}, {d}); q = queries_near(E, 1)[0]; Q = np.stack([q] * 8)
kind = sys.argv[1]
QC = fieldrank.quantize(E, "bf16") if kind == "bf16" else None
for _ in range(2):  # warm: threads, allocator pools, lazy imports
    fieldrank.prefilter(E[:2000], q, 150); numpy_top(E[:2000], q, 150); fieldrank.cfsr_batch(E[:2000], Q, n_threads=2)
Path("/proc/self/clear_refs").write_text("5")  # reset the peak resident set to the current one
before = hwm()
if kind == "native": fieldrank.prefilter(E, q, 150)
elif kind == "batch": fieldrank.cfsr_batch(E, Q, n_threads=2)
elif kind == "numpy": numpy_top(E, q, 150)
elif kind == "bf16": fieldrank.prefilter_quantized(QC, E, q, 150)
print(hwm() - before)
""".format(n=n, d=d)
    rows = []
    for kind, label in (("native", "fieldrank.prefilter"), ("batch", "fieldrank.cfsr_batch (8 queries, 2 threads)"),
                        ("bf16", "fieldrank.prefilter_quantized (bf16)"), ("numpy", "numpy E@q + argpartition")):
        out = subprocess.run([sys.executable, "-c", code, kind], capture_output=True, text=True, check=False)
        try:
            growth = int(out.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            growth = -1
            log(f"  peak memory {kind} failed: {out.stderr[-400:]}")
        rows.append([label, f"{growth / 2**20:.2f} MiB" if growth >= 0 else "failed", f"{n * d * 4 / 2**20:.0f} MiB",
                     f"{n * 4 / 2**20:.1f} MiB"])
        if kind == "native" and growth >= 0:
            report.target("memory", f"peak memory beyond E O(P), not O(N) (prefilter, N={n:,})",
                          f"{growth / 2**20:.2f} MiB (an N-length float32 array: {n * 4 / 2**20:.1f} MiB)",
                          growth / 2**20, n * 4 / 2**20 / 4, higher_is_better=False)
    report.section(
        f"Peak memory beyond E (N = {n:,}, d = 384, P = 150)",
        "Growth of the process's peak resident set (VmHWM, reset with /proc/self/clear_refs just "
        "before the call) over one call, E already allocated and the code warmed up, in a fresh "
        "process per row. numpy writes an N-length score array (and argpartition's temporaries); the "
        "fused prefilter keeps a 1,024-row block buffer and a 2P-entry selection buffer.",
        ["call", "peak growth", "E", "one N-length float32 array"], rows)


# --------------------------------------------------------------------------- output


def _shortfall(t: Target) -> str:
    """How far a missed target is from its threshold, e.g. '1.05 vs ≥ 1.2, short by 12.5%'."""
    if t.higher_is_better:
        return f"{t.value:.4g} vs ≥ {t.threshold:g}, short by {1 - t.value / t.threshold:.1%}"
    return f"{t.value:.4g} vs ≤ {t.threshold:g}, over by {t.value / t.threshold - 1:.1%}"


def write_outputs(report: Report, out_dir: Path, machine: Dict[str, str], command: str, elapsed: float) -> None:
    import fieldrank

    out_dir.mkdir(parents=True, exist_ok=True)
    info = fieldrank.build_info()
    met = sum(t.met for t in report.targets)
    lines = [
        "# Performance results",
        "",
        f"Generated by `{command}` on {datetime.date.today().isoformat()} in {elapsed:.0f} s. "
        "Do not edit by hand; rerun the command.",
        "",
        f"- Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory']} "
        f"({machine['platform']}); load average at the start: {machine['load']} (a shared machine: "
        "contenders are interleaved round by round and every figure is a median with min–max).",
        f"- fieldrank {fieldrank.__version__}, kernel variant `{info['kernel_variant']}` "
        f"(supported here: {', '.join(info['supported_kernel_variants'])}); "
        f"{info['compiler']}, `{info['cxx_flags']}`; Python {machine['python']}, numpy {machine['numpy']}.",
        "- One-thread comparisons run with single-threaded BLAS and faiss (OPENBLAS_NUM_THREADS=1); "
        f"numpy's BLAS: {machine.get('blas', 'n/a')}.",
        "",
        f"## Targets ({met} of {len(report.targets)} met)",
        "",
    ]
    missed = [t for t in report.targets if not t.met]
    if missed:
        lines += [f"**Missed ({len(missed)}):**", ""]
        lines += [f"- {t.area}: {t.claim} — {t.measured}: {_shortfall(t)}" for t in missed]
        lines += ["", "All targets, every round's:", ""]
    lines += ["| area | target | measured | met |", "|---|---|---|---|"]
    for t in report.targets:
        note = f" ({t.note})" if t.note else ""
        relation = "<" if t.higher_is_better else ">"
        verdict = "yes" if t.met else f"**no** ({t.value:.4g} {relation} {t.threshold:g})"
        lines.append(f"| {t.area} | {t.claim} | {t.measured}{note} | {verdict} |")
    lines += ["", "![speed-ups against their targets](performance.png)", ""]
    lines += report.sections
    (out_dir / "performance.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = report.chart_rows
        if not rows:  # only steps without speed-up targets ran (e.g. --skip all but default)
            return
        fig, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.4))
        y = np.arange(len(rows))
        values = [max(r[1], 1e-3) for r in rows]
        colors = ["#2b8a3e" if r[1] >= r[2] else "#c92a2a" for r in rows]
        ax.barh(y, values, color=colors)
        ax.scatter([r[2] for r in rows], y, marker="|", s=250, color="black", label="target", zorder=3)
        ax.set_yticks(y, [r[0] for r in rows], fontsize=8)
        ax.set_xscale("log")
        ax.invert_yaxis()
        ax.set_xlabel("speed-up or rate ratio (median of interleaved rounds), log scale")
        ax.set_title(f"fieldrank on {machine['cpu']} ({machine['cores']} cores)", fontsize=10)
        ax.legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        fig.savefig(out_dir / "performance.png", dpi=120)
        plt.close(fig)
    except ImportError:
        log("matplotlib is not installed: no chart")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fieldrank.evaluation.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and fewer rounds")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds per comparison")
    parser.add_argument("--out", default=DEFAULT_OUT_DIR,
                        help="directory for performance.md/.png (default: ./%(default)s; "
                             "docs/results regenerates the committed files)")
    parser.add_argument("--no-write", action="store_true", help="print the targets only")
    parser.add_argument("--json", action="store_true", help="print targets and measurements as JSON on stdout")
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["probe", "prefilter", "threads", "quantized", "cfsr", "greedy", "stack", "default",
                                 "locomo_default", "memory"])
    args = parser.parse_args(argv)
    if any(os.environ.get(name) != "1" for name in _THREAD_ENV) and not os.environ.get("FIELDRANK_BENCH_CHILD"):
        env = dict(os.environ, FIELDRANK_BENCH_CHILD="1", **{name: "1" for name in _THREAD_ENV})
        return subprocess.call([sys.executable, "-m", "fieldrank.evaluation.bench", *(argv if argv is not None else sys.argv[1:])],
                               env=env)
    rounds = args.rounds or (5 if args.quick else 11)
    command = ("python -m fieldrank.evaluation.bench" + (" --quick" if args.quick else "")
               + (f" --skip {' '.join(args.skip)}" if args.skip else "") + f" --out {args.out}")
    machine = machine_description()
    log(f"fieldrank bench on {machine['cpu']} ({machine['cores']} cores), load {machine['load']}")
    report = Report(args)
    start = time.perf_counter()
    steps = [("probe", lambda: probe_bandwidth(report, args.quick)),
             ("prefilter", lambda: bench_prefilter(report, args.quick, rounds)),
             ("threads", lambda: bench_prefilter_threads(report, args.quick, rounds)),
             ("quantized", lambda: bench_quantized(report, args.quick, rounds)),
             ("cfsr", lambda: bench_cfsr(report, args.quick, rounds)),
             ("greedy", lambda: bench_greedy(report, args.quick, rounds)),
             ("stack", lambda: bench_stack(report, args.quick, rounds)),
             ("default", lambda: bench_default_stack(report, args.quick, rounds)),
             ("locomo_default", lambda: bench_locomo_default(report, args.quick, rounds)),
             ("memory", lambda: peak_memory(report, args.quick))]
    for name, step in steps:
        if name not in args.skip:
            step()
    elapsed = time.perf_counter() - start
    met = sum(t.met for t in report.targets)
    summary = print if not args.json else log  # with --json, stdout holds the JSON alone
    summary(f"\n{met} of {len(report.targets)} targets met ({elapsed:.0f} s)")
    for t in report.targets:
        exact = "" if t.met else f" ({_shortfall(t)})"
        summary(f"  [{'met' if t.met else 'MISSED'}] {t.area}: {t.claim} -> {t.measured}{exact}")
    if not args.no_write:
        write_outputs(report, Path(args.out), machine, command, elapsed)
        summary(f"wrote {Path(args.out) / 'performance.md'} and performance.png")
    if args.json:
        print(json.dumps(report_json(report, machine, command, elapsed), indent=2, default=str))
    # Non-zero when a target missed, so whoever runs the benchmark sees a regression (CI does not run it).
    return 0 if met == len(report.targets) else 1


def report_json(report: "Report", machine: dict, command: str, elapsed: float) -> dict:
    """The run as JSON: machine, command, every target (with met) and the measured tables."""
    from dataclasses import asdict

    return {
        "command": command,
        "machine": machine,
        "elapsed_s": elapsed,
        "targets": [{**asdict(t), "met": t.met} for t in report.targets],
        "chart_rows": [list(row) for row in report.chart_rows],
        "probe": report.probe,
        "sections_markdown": report.sections,
    }


if __name__ == "__main__":
    sys.exit(main())
