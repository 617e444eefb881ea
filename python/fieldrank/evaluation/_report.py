"""Summaries of an :class:`~fieldrank.evaluation._runner.EvaluationRun`: intervals, paired
tests, the write-ups' ordering check, and the generated ``locomo.md`` / JSON files.

:func:`summarize` turns per-question scores into the figures of the report:

- every method × reporting subset (overall, overall excl. cat 5, each category) ×
  metric: the mean and a seeded percentile-bootstrap 95% interval
  (:func:`~fieldrank.evaluation.stats.bootstrap_ci`, all methods and metrics on the same
  resamples);
- every method against each baseline (cosine, rrf2): the paired mean difference with its
  interval and two-sided p-value (:func:`~fieldrank.evaluation.stats.paired_bootstrap`)
  and McNemar's exact test on hit@k (:func:`~fieldrank.evaluation.stats.mcnemar`);
- the adjacent pairs of the write-ups' ordering, tested the same way.

:func:`render_section` writes one embedding set's Markdown section;
:func:`update_markdown` puts it into ``locomo.md`` between marker comments, replacing
an older section of the same embedding set and split, so running the command once per
set leaves one file holding all of them.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from . import locomo, stats
from ._runner import BASELINE_METHODS, EvaluationRun

__all__ = [
    "MARKDOWN_FILE",
    "ORDERING",
    "PUBLISHED_ANCHORS",
    "display",
    "ordering_pairs",
    "ordering_verdict",
    "render_section",
    "subset_positions",
    "summarize",
    "update_markdown",
    "verdict_for",
    "write_json",
]

ORDERING: Final[tuple[str, ...]] = ("rrf_cfsr", "rrf_mmr", "rrf_cfs", "rrf2", "cosine")
"""The write-ups' NDCG@10 ordering, best first (text-embedding-3-small)."""

PUBLISHED_ANCHORS: Final[Mapping[str, tuple[str, str]]] = {
    "cosine": ("0.5123", "0.6924"),
    "rrf2": ("0.5196", "0.6989"),
    "rrf_mmr": ("0.5330", "0.7228"),
    "rrf_cfs": ("0.5311–0.5362", "0.7168–0.7295"),
    "rrf_cfsr": ("0.5447", "0.7303"),
}
"""docs/spec.md §9 published (NDCG@10, Recall@10), text-embedding-3-small, 1,982 questions."""

PUBLISHED_EMBEDDER: Final[str] = "OpenAI text-embedding-3-small"

MARKDOWN_FILE: Final[str] = "locomo.md"
MARKDOWN_TITLE: Final[str] = "# LoCoMo turn retrieval: fieldrank presets and operators"
SECTION_BEGIN: Final[str] = "<!-- fieldrank-eval begin: {key} -->"
SECTION_END: Final[str] = "<!-- fieldrank-eval end: {key} -->"
SECTION_PATTERN: Final[re.Pattern[str]] = re.compile(
    r"<!-- fieldrank-eval begin: (?P<key>[^>]+?) -->\n.*?<!-- fieldrank-eval end: (?P=key) -->\n",
    re.DOTALL,
)

PERCENT: Final[float] = 100.0
"""Differences are shown in percentage points."""

SIGNIFICANCE_LEVEL: Final[float] = 0.05
MEAN_DECIMALS: Final[int] = 4
POINTS_DECIMALS: Final[int] = 2
P_DECIMALS: Final[int] = 4
P_FLOOR_SHOWN: Final[float] = 0.001
"""p-values below this are shown as ``<0.001`` (2,000 resamples cannot resolve smaller)."""
FIT_FIGURE_KEYS: Final[frozenset[str]] = frozenset({"score", "by_subset"})
"""Keys of a fitted grid point that are results, not parameters."""
RING_TUNE_SUBSETS: Final[tuple[str, ...]] = ("overall", "1 multi-hop", "4 single-hop")

VERDICT_HOLDS: Final[str] = "holds"
VERDICT_POINT_ONLY: Final[str] = "same sign, not significant"
VERDICT_REVERSED_NS: Final[str] = "reversed, not significant"
VERDICT_REVERSED: Final[str] = "reversed (significant)"


# -------------------------------------------------------------------------- subsets
def subset_positions(run: EvaluationRun, data: locomo.LocomoData) -> dict[str, np.ndarray]:
    """Reporting subsets as positions into the run's per-question arrays.

    Returns
    -------
    dict of str to numpy.ndarray
        Keys of :func:`~fieldrank.evaluation.locomo.category_subsets`, in table order.
    """
    subsets = locomo.category_subsets(data, run.question_rows)
    return {
        name: np.searchsorted(run.question_rows, rows).astype(np.int64)
        for name, rows in subsets.items()
    }


def _interval(mean: float, lo: float, hi: float) -> dict[str, float]:
    return {"mean": float(mean), "lo": float(lo), "hi": float(hi)}


def _paired_entry(result: stats.PairedBootstrapResult, column: int) -> dict[str, float]:
    return {
        "diff": float(np.asarray(result.mean_diff)[column]),
        "lo": float(np.asarray(result.lo)[column]),
        "hi": float(np.asarray(result.hi)[column]),
        "p": float(np.asarray(result.p_value)[column]),
    }


def _mcnemar_entry(hit_a: np.ndarray, hit_b: np.ndarray) -> dict[str, Any]:
    result = stats.mcnemar(hit_a, hit_b)
    return {"b": result.b, "c": result.c, "statistic": result.statistic, "p": result.p_value}


def summarize(
    run: EvaluationRun,
    data: locomo.LocomoData,
    *,
    baselines: Sequence[str] = BASELINE_METHODS,
    comparisons: Iterable[tuple[str, str]] = (),
    n_resamples: int = stats.MIN_BOOTSTRAP_RESAMPLES,
    seed: int = stats.DEFAULT_SEED,
    confidence: float = stats.DEFAULT_CONFIDENCE,
) -> dict[str, Any]:
    """Intervals, paired differences and McNemar tests for every figure of a run.

    Parameters
    ----------
    run : EvaluationRun
    data : LocomoData
        The data the run was made on (for the category subsets).
    baselines : sequence of str, default ("cosine", "rrf2")
        Every method is compared against each baseline present in the run.
    comparisons : iterable of (str, str)
        Extra ``(a, b)`` pairs tested as ``a - b`` (e.g. the ordering's adjacent pairs).
    n_resamples : int, default 2000
        Bootstrap resamples (at least 2,000; the stats module enforces it).
    seed : int, default 0
        Bootstrap seed; every subset uses it, so each subset's figures share resamples.
    confidence : float, default 0.95

    Returns
    -------
    dict
        JSON-serialisable: ``subsets`` (name → n), ``metrics``, ``methods``
        (method → subset → metric → mean/lo/hi), ``paired`` (baseline → method →
        subset → metric → diff/lo/hi/p), ``mcnemar`` (baseline → method → subset →
        b/c/statistic/p on hit@k), ``comparisons`` (list of {a, b, subsets}) and
        ``bootstrap`` (settings and seconds).
    """
    started = time.perf_counter()
    methods = run.methods
    metric_list = run.metric_names
    hit_metric = metric_list[-1]
    present_baselines = [name for name in baselines if name in methods]
    pairs = [(a, b) for a, b in comparisons if a in methods and b in methods]
    positions = subset_positions(run, data)

    summary_methods: dict[str, dict[str, Any]] = {name: {} for name in methods}
    paired: dict[str, dict[str, dict[str, Any]]] = {
        base: {name: {} for name in methods if name != base} for base in present_baselines
    }
    mcnemar_tests: dict[str, dict[str, dict[str, Any]]] = {
        base: {name: {} for name in methods if name != base} for base in present_baselines
    }
    pair_results: list[dict[str, Any]] = [{"a": a, "b": b, "subsets": {}} for a, b in pairs]

    # Columns: method-major, metric-minor.
    full = np.column_stack(
        [run.scores[name][metric] for name in methods for metric in metric_list]
    )
    n_metrics = len(metric_list)

    def column(name: str, metric: str) -> int:
        return methods.index(name) * n_metrics + metric_list.index(metric)

    for subset, where in positions.items():
        if where.size == 0:
            continue
        block = full[where]
        intervals = stats.bootstrap_ci(block, n_resamples, confidence, seed)
        for name in methods:
            summary_methods[name][subset] = {
                metric: _interval(
                    intervals.mean[column(name, metric)],
                    intervals.lo[column(name, metric)],
                    intervals.hi[column(name, metric)],
                )
                for metric in metric_list
            }
        # Paired: every (baseline, other method, metric) and every extra pair, one call.
        targets: list[tuple[str, str, str, str]] = []  # (kind, a, b, metric)
        for base in present_baselines:
            for name in methods:
                if name != base:
                    targets += [("baseline", name, base, metric) for metric in metric_list]
        for a, b in pairs:
            targets += [("pair", a, b, metric) for metric in metric_list]
        if targets:
            left = block[:, [column(a, metric) for _, a, _, metric in targets]]
            right = block[:, [column(b, metric) for _, _, b, metric in targets]]
            result = stats.paired_bootstrap(left, right, n_resamples, confidence, seed)
            for index, (kind, a, b, metric) in enumerate(targets):
                entry = _paired_entry(result, index)
                if kind == "baseline":
                    paired[b][a].setdefault(subset, {})[metric] = entry
                else:
                    pair_entry = pair_results[pairs.index((a, b))]
                    pair_entry["subsets"].setdefault(subset, {})[metric] = entry
        for base in present_baselines:
            base_hits = run.scores[base][hit_metric][where]
            for name in methods:
                if name != base:
                    mcnemar_tests[base][name][subset] = _mcnemar_entry(
                        run.scores[name][hit_metric][where], base_hits
                    )
        for pair_entry in pair_results:
            pair_entry["subsets"].setdefault(subset, {})["mcnemar"] = _mcnemar_entry(
                run.scores[pair_entry["a"]][hit_metric][where],
                run.scores[pair_entry["b"]][hit_metric][where],
            )

    return {
        "split": run.split,
        "k": run.k,
        "n_questions": len(run.question_rows),
        "subsets": {name: int(where.size) for name, where in positions.items()},
        "metrics": list(metric_list),
        "methods": summary_methods,
        "paired": paired,
        "mcnemar": mcnemar_tests,
        "comparisons": pair_results,
        "bootstrap": {
            "n_resamples": n_resamples,
            "seed": seed,
            "confidence": confidence,
            "method": "percentile bootstrap over questions (numpy default_rng)",
            "seconds": time.perf_counter() - started,
        },
    }


def verdict_for(entry: Mapping[str, float]) -> str:
    """Classify a paired difference ``a - b`` where the claim is ``a > b``.

    Returns
    -------
    str
        ``"holds"`` (interval above 0), ``"same sign, not significant"``,
        ``"reversed, not significant"`` or ``"reversed (significant)"`` (interval below 0).
    """
    if entry["lo"] > 0:
        return VERDICT_HOLDS
    if entry["hi"] < 0:
        return VERDICT_REVERSED
    return VERDICT_POINT_ONLY if entry["diff"] > 0 else VERDICT_REVERSED_NS


def ordering_pairs(ordering: Sequence[str] = ORDERING) -> list[tuple[str, str]]:
    """Adjacent pairs ``(better, worse)`` of a claimed ordering."""
    return list(zip(ordering[:-1], ordering[1:]))


# ------------------------------------------------------------------------ formatting
METRIC_DISPLAY: Final[Mapping[str, str]] = {"ndcg": "NDCG", "recall": "Recall", "hit": "hit"}


def display(metric: str) -> str:
    """``"ndcg@10"`` → ``"NDCG@10"`` (names from :func:`~fieldrank.evaluation._runner.metric_names`)."""
    name, _, depth = metric.partition("@")
    return f"{METRIC_DISPLAY.get(name, name)}@{depth}" if depth else METRIC_DISPLAY.get(name, name)


def fmt_mean(entry: Mapping[str, float]) -> str:
    """``0.3500 [0.3341, 0.3660]``."""
    return (
        f"{entry['mean']:.{MEAN_DECIMALS}f} "
        f"[{entry['lo']:.{MEAN_DECIMALS}f}, {entry['hi']:.{MEAN_DECIMALS}f}]"
    )


def fmt_points(entry: Mapping[str, float], *, with_p: bool = True) -> str:
    """A paired difference in percentage points: ``+1.23 [+0.50, +1.96] p=0.0010``."""
    text = (
        f"{PERCENT * entry['diff']:+.{POINTS_DECIMALS}f} "
        f"[{PERCENT * entry['lo']:+.{POINTS_DECIMALS}f}, {PERCENT * entry['hi']:+.{POINTS_DECIMALS}f}]"
    )
    p_text = fmt_p(entry["p"])
    return f"{text} p{'' if p_text.startswith('<') else '='}{p_text}" if with_p else text


def fmt_p(p: float) -> str:
    """A p-value with four decimals, or ``<0.001`` (the bootstrap floor is ``2 / (B + 1)``)."""
    return f"<{P_FLOOR_SHOWN}" if p < P_FLOOR_SHOWN else f"{p:.{P_DECIMALS}f}"


def fmt_mcnemar(entry: Mapping[str, Any]) -> str:
    """``b/c, p``: questions only A hits / only B hits, exact two-sided p."""
    p_text = fmt_p(entry["p"])
    return f"{entry['b']}/{entry['c']}, p{'' if p_text.startswith('<') else '='}{p_text}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "---:") -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|---|" + "|".join([align] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


# -------------------------------------------------------------------------- sections
def section_key(embedding_set: str, split: str) -> str:
    """Marker key of a Markdown section."""
    return f"{embedding_set} split={split}"


def render_section(report: Mapping[str, Any]) -> str:
    """The Markdown section of one embedding set and split (see :func:`update_markdown`).

    Parameters
    ----------
    report : mapping
        The JSON document written by :func:`fieldrank.evaluation._command.run_locomo`.

    Returns
    -------
    str
        Wrapped in begin/end marker comments.
    """
    meta = report["meta"]
    summary = report["summary"]
    key = section_key(meta["embedding_set"], summary["split"])
    metric_list = summary["metrics"]
    headline = metric_list[:3]
    ndcg = metric_list[0]
    hit = metric_list[-1]
    methods = list(summary["methods"])
    subsets = summary["subsets"]
    categories = [name for name in subsets if name[0].isdigit() and subsets[name]]
    lines: list[str] = [SECTION_BEGIN.format(key=key), ""]
    lines.append(f"## {meta['embedding_set']} — split `{summary['split']}`")
    lines.append("")
    lines += _provenance_lines(meta, summary)

    lines += ["", f"### Overall ({subsets['overall']:,} questions, split `{summary['split']}`)", ""]
    header = ["method", *[display(m) for m in headline]]
    header += [f"Δ{display(ndcg)} vs `{base}` (pp)" for base in summary["paired"]]
    rows = []
    for name in methods:
        cells = [f"`{name}`"] + [fmt_mean(summary["methods"][name]["overall"][m]) for m in headline]
        for base in summary["paired"]:
            entry = summary["paired"][base].get(name, {}).get("overall")
            cells.append(fmt_points(entry[ndcg]) if entry else "—")
        rows.append(cells)
    lines += _table(header, rows)
    lines += [
        "",
        f"Intervals: 95% percentile bootstrap over questions ({summary['bootstrap']['n_resamples']:,} "
        f"resamples, seed {summary['bootstrap']['seed']}). Δ: paired bootstrap of the per-question "
        "difference on the same resamples, in percentage points, with its 95% interval and "
        "two-sided p.",
    ]
    aliases = report.get("aliases") or {}
    if aliases:
        alias_text = ", ".join(f"`{a}` = `{b}`" for a, b in aliases.items())
        lines += ["", f"Shipped presets identical to an evaluated one (same legs and parameters; "
                      f"not run twice): {alias_text}."]

    lines += _ordering_lines(summary)
    holdout = report.get("summary_holdout")
    if holdout:
        lines += _holdout_lines(holdout)

    lines += ["### Paired tests, overall", ""]
    for base in summary["paired"]:
        lines += [f"Against `{base}` (method − {base}). McNemar on {display(hit)}: b = questions only "
                  f"the method hits, c = only `{base}` hits, exact two-sided p.", ""]
        header = ["method", *[f"Δ{display(m)} (pp)" for m in headline], f"McNemar {display(hit)} b/c, p"]
        rows = []
        for name, per_subset in summary["paired"][base].items():
            entry = per_subset.get("overall")
            if entry:
                rows.append([f"`{name}`", *[fmt_points(entry[m]) for m in headline],
                             fmt_mcnemar(summary["mcnemar"][base][name]["overall"])])
        lines += _table(header, rows)
        lines.append("")

    for metric in headline:
        lines += [f"### Per category: {display(metric)}", ""]
        header = ["method", *[f"{name} (n={subsets[name]})" for name in categories]]
        rows = [
            [f"`{name}`", *[fmt_mean(summary["methods"][name][cat][metric]) for cat in categories]]
            for name in methods
        ]
        lines += _table(header, rows)
        lines.append("")

    for base in summary["paired"]:
        lines += [f"### Per category: Δ{display(ndcg)} vs `{base}` (pp, paired)", ""]
        header = ["method", *categories]
        rows = [
            [f"`{name}`", *[fmt_points(per_subset[cat][ndcg]) for cat in categories]]
            for name, per_subset in summary["paired"][base].items()
        ]
        lines += _table(header, rows)
        lines.append("")

    ring = report.get("ring_experiment")
    if ring:
        lines += _ring_lines(ring)
    plot = report.get("files", {}).get("png")
    if plot:
        lines += [f"![{display(ndcg)} per method and per category, 95% intervals]({plot})", ""]
    lines.append(SECTION_END.format(key=key))
    return "\n".join(lines) + "\n"


def _fit_text(fit: Mapping[str, Any]) -> str:
    points = ", ".join(
        "(" + ", ".join(f"{k}={v}" for k, v in point.items() if k not in FIT_FIGURE_KEYS)
        + f") {point['score']:.4f}"
        for point in fit["grid"]
    )
    chosen = ", ".join(f"{k} = {v}" for k, v in fit["best"].items())
    return f"**{chosen}**, maximising {fit['objective']} on tune; grid: {points}"


def _provenance_lines(meta: Mapping[str, Any], summary: Mapping[str, Any]) -> list[str]:
    timing = meta["timing"]
    lines = [
        f"- Command: `{meta['command']}`",
        f"- Embedding set: `{meta['embedding_set']}` — {meta.get('model') or 'model not recorded'}"
        f" (dim {meta['dim']}; provenance in `emb/{meta['embedding_set']}/manifest.json`)",
        "- Data sha256:",
    ]
    lines += [f"  - `{name}`: `{digest}`" for name, digest in meta["checksums"].items()]
    split_rows = meta["splits"]
    lines.append(
        f"- Figures from split `{summary['split']}` (conversations "
        f"{split_rows[summary['split']]['conversations']}, {summary['n_questions']:,} scored "
        f"questions); each question ranks only its own conversation's turns; equal k = "
        f"{summary['k']} asserted for every method and question."
    )
    tune = split_rows["tune"]
    lines.append(
        f"- Fitted on split `tune` only (conversations {tune['conversations']}, "
        f"{tune['n_questions']:,} questions; disjointness from `holdout` asserted):"
    )
    lines += [f"  - {name}: {_fit_text(fit)}" for name, fit in meta["fitted"].items()]
    header = meta.get("default_config_header") or []
    if header:
        lines.append(
            "  - `default` is the shipped calibrated configuration "
            "(`python/fieldrank/data/default_config.toml`), evaluated as shipped; its header: "
            + " ".join(f"«{line}»" for line in header if line)
        )
    if summary["split"] != "holdout":
        lines.append(
            f"  - Split `{summary['split']}` contains the tune conversations, so for the methods "
            "that use values fitted on tune (`rrf_mmr`, `mmr`, `rrf_ring`, `ring`, a calibrated "
            "`default`) part of each figure is in-sample; see *Holdout only* below, and the Ring "
            "experiment, which reports on `holdout` only."
        )
    lines.append(
        f"- Search time (batch API, one batch per conversation, {meta['n_threads_used']} threads, "
        f"{meta['cpu_count']} cores): **{timing['search_seconds']:.1f} s** wall "
        f"({timing['search_cpu_seconds']:.1f} s CPU) for all methods of the table; the whole run's "
        f"search, with the ablation check, fitting and the Ring experiment: "
        f"{timing['all_search_seconds']:.1f} s wall ({timing['all_search_cpu_seconds']:.1f} s CPU). "
        f"Bootstrap and tests, not search: {timing['bootstrap_seconds']:.1f} s."
    )
    per_method = ", ".join(f"`{name}` {seconds:.2f}" for name, seconds in timing["per_method"].items())
    lines.append(f"- Search seconds (wall) per method: {per_method}.")
    return lines


def ordering_verdict(summary: Mapping[str, Any]) -> str:
    """One sentence: which adjacent pairs of :data:`ORDERING` hold on NDCG@k here."""
    ndcg = summary["metrics"][0]
    by_verdict: dict[str, list[str]] = {}
    for comparison in summary["comparisons"]:
        overall = comparison["subsets"].get("overall")
        if overall:
            verdict = verdict_for(overall[ndcg])
            by_verdict.setdefault(verdict, []).append(f"`{comparison['a']}` > `{comparison['b']}`")
    order = (VERDICT_HOLDS, VERDICT_POINT_ONLY, VERDICT_REVERSED_NS, VERDICT_REVERSED)
    parts = [f"{verdict}: {', '.join(by_verdict[verdict])}" for verdict in order if verdict in by_verdict]
    complete = len(by_verdict.get(VERDICT_HOLDS, [])) == len(ORDERING) - 1
    head = "The ordering holds" if complete else "The ordering does not hold as a whole"
    base = "rrf2"
    above = []
    if base in summary["paired"]:
        above = [
            f"`{name}`" for name, entries in summary["paired"][base].items()
            if entries.get("overall") and entries["overall"][ndcg]["lo"] > 0
        ]
    beat = f" Methods significantly above `{base}`: {', '.join(above) if above else 'none'}."
    return f"{head} on {display(ndcg)} ({'; '.join(parts)}).{beat}"


def _ordering_lines(summary: Mapping[str, Any]) -> list[str]:
    ndcg, recall = summary["metrics"][0], summary["metrics"][1]
    lines = ["", "### The write-ups' ordering", ""]
    chain = " > ".join(f"`{name}`" for name in ORDERING)
    lines.append(
        f"Claimed with {PUBLISHED_EMBEDDER} on {display(ndcg)}: {chain}. Each adjacent pair, "
        "paired on these questions (Δ = claimed-better − claimed-worse):"
    )
    lines.append("")
    header = ["pair", f"Δ{display(ndcg)} (pp)", "verdict", f"Δ{display(recall)} (pp)", "verdict",
              f"McNemar {display(summary['metrics'][-1])} b/c, p"]
    rows = []
    for comparison in summary["comparisons"]:
        overall = comparison["subsets"].get("overall")
        if overall:
            rows.append([
                f"`{comparison['a']}` > `{comparison['b']}`",
                fmt_points(overall[ndcg]), verdict_for(overall[ndcg]),
                fmt_points(overall[recall]), verdict_for(overall[recall]),
                fmt_mcnemar(overall["mcnemar"]),
            ])
    lines += _table(header, rows)
    lines += ["", f"**{ordering_verdict(summary)}**", "", "Published anchors next to this run:", ""]
    header = ["method", f"published {display(ndcg)}", f"published {display(recall)}",
              f"here {display(ndcg)}", f"here {display(recall)}"]
    rows = []
    for name, (pub_ndcg, pub_recall) in PUBLISHED_ANCHORS.items():
        if name in summary["methods"]:
            here = summary["methods"][name]["overall"]
            rows.append([f"`{name}`", pub_ndcg, pub_recall, fmt_mean(here[ndcg]), fmt_mean(here[recall])])
    lines += _table(header, rows)
    lines.append("")
    return lines


def _holdout_lines(summary: Mapping[str, Any]) -> list[str]:
    """The overall table again, on the holdout conversations only (nothing was fitted there)."""
    metric_list = summary["metrics"]
    headline, ndcg = metric_list[:3], metric_list[0]
    lines = [
        f"### Holdout only ({summary['n_questions']:,} questions of conversations 5–9)",
        "",
        "The same rankings restricted to the held-out conversations, on which nothing was fitted "
        "(MMR μ, Ring α/laps and the calibrated `default` all come from tune); intervals and "
        "paired tests recomputed on these questions.",
        "",
    ]
    header = ["method", *[display(m) for m in headline]]
    header += [f"Δ{display(ndcg)} vs `{base}` (pp)" for base in summary["paired"]]
    rows = []
    for name, figures in summary["methods"].items():
        cells = [f"`{name}`"] + [fmt_mean(figures["overall"][m]) for m in headline]
        for base in summary["paired"]:
            entry = summary["paired"][base].get(name, {}).get("overall")
            cells.append(fmt_points(entry[ndcg]) if entry else "—")
        rows.append(cells)
    lines += _table(header, rows)
    lines += ["", f"**Holdout only.** {ordering_verdict(summary)}", ""]
    return lines


def _ring_lines(ring: Mapping[str, Any]) -> list[str]:
    metric = ring["metric"]
    lines = ["### Ring experiment (pre-registered in its write-up, at equal k)", ""]
    lines.append(f"Hypothesis, stated before running: {ring['hypothesis']} Stand-ins here: "
                 + "; ".join(f"{k} = {v}" for k, v in ring["stand_ins"].items()) + ".")
    lines.append("")
    ablation = ring["ablation"]
    lines.append(
        f"1. Constant-bump ablation (+{ablation['bump']} per lap, at k = {ablation['k']}), checked "
        f"first on split `{ablation['split']}` for seeds {', '.join(map(str, ablation['seeds']))}: "
        f"identical to cosine top-{ablation['k']} (same ids, same order) for every seed on "
        f"**{ablation['identical']:,} of {ablation['questions']:,}** questions."
    )
    tie_only = ablation.get("tie_only") or []
    if tie_only:
        cases = "; ".join(
            f"seed {case['seed']}, conv {case['conv_index']} qid {case['qid']}" for case in tie_only
        )
        lines.append(
            f"   The other {len(tie_only)} (question, seed) pair(s) differ only among turns with exactly "
            f"equal cosine (identical turn texts), which cosine orders by lower row and Ring by its "
            f"seeded draw (docs/spec.md §0, §5); position by position their cosines are identical ({cases}). "
            "Any other difference stops the run."
        )
    fit = ring["fit"]
    chosen = ", ".join(f"{k} = {v}" for k, v in fit["best"].items())
    lines.append(
        f"2. Fitted on `tune` only ({fit['n_questions']:,} questions, tie seed {ring['fit_seed']}): "
        f"**{chosen}**, the best {display(metric)} of Ring alone over α ∈ "
        f"{{{', '.join(map(str, ring['alpha_grid']))}}} × laps ∈ {{{', '.join(map(str, ring['laps_grid']))}}}."
    )
    lines.append(
        f"3. Reported on `holdout` ({ring['n_questions']:,} questions) for seeds "
        f"{', '.join(map(str, ring['seeds']))}: Ring's mean and range over seeds; Δ and its interval "
        "and p from the paired bootstrap of the seed-averaged per-question scores against cosine; "
        "McNemar on hit@10 per seed (b/c of seed "
        f"{ring['seeds'][0]}, largest p over seeds)."
    )
    lines.append("")
    header = ["holdout subset", "n", f"cosine {display(metric)}", "Ring mean [range over seeds]",
              "Δ vs cosine (pp) [95% CI]", "p", "per-seed Δ range (pp)", "McNemar b/c (max p)", "verdict"]
    rows = []
    for subset, entry in ring["subsets"].items():
        per_seed = [seed_entry["diff"] for seed_entry in ring["per_seed"][subset]]
        rows.append([
            subset, str(entry["n"]), f"{entry['cosine']:.4f}",
            f"{entry['ring_mean']:.4f} [{entry['ring_min']:.4f}, {entry['ring_max']:.4f}]",
            f"{PERCENT * entry['diff_mean']:+.2f} [{PERCENT * entry['lo']:+.2f}, {PERCENT * entry['hi']:+.2f}]",
            fmt_p(entry["p"]),
            f"[{PERCENT * min(per_seed):+.2f}, {PERCENT * max(per_seed):+.2f}]",
            f"{entry['mcnemar_b']}/{entry['mcnemar_c']} ({fmt_p(entry['mcnemar_p_max'])})",
            entry["verdict"],
        ])
    lines += _table(header, rows)
    lines += ["", f"**Hypothesis {'held' if ring['hypothesis_held'] else 'did not hold'}.** {ring['statement']}", ""]
    reference = fit.get("reference")
    if reference:
        lines += _ring_tune_lines(fit, reference, metric)
    return lines


def _ring_tune_lines(fit: Mapping[str, Any], reference: Mapping[str, Any], metric: str) -> list[str]:
    """The tune grid by subset, next to cosine on the same tune questions."""
    subsets = [name for name in RING_TUNE_SUBSETS if name in reference["by_subset"]]
    lines = [f"Tune grid ({display(metric)} on tune; the fit used `overall`), with cosine on the same questions:", ""]
    header = ["α", "laps", *subsets]
    rows = [["cosine", "—", *[f"{reference['by_subset'][name]:.4f}" for name in subsets]]]
    for point in fit["grid"]:
        rows.append([str(point.get("alpha")), str(point.get("laps")),
                     *[f"{point['by_subset'][name]:.4f}" for name in subsets]])
    lines += _table(header, rows)
    lines.append("")
    return lines


# ------------------------------------------------------------------------- files
def update_markdown(path: str | Path, section: str, *, preamble: str) -> None:
    """Insert or replace one section of the generated Markdown file.

    Sections are kept sorted by their marker key, so the file does not depend on the
    order in which the embedding sets were run. The title and ``preamble`` are rewritten
    every time.

    Parameters
    ----------
    path : path-like
        ``locomo.md``; created when absent.
    section : str
        Output of :func:`render_section` (with its markers).
    preamble : str
        Text after the title (what generated the file, how to regenerate it).
    """
    target = Path(path)
    existing = target.read_text(encoding="utf-8") if target.is_file() else ""
    sections = {match["key"]: match.group(0) for match in SECTION_PATTERN.finditer(existing)}
    match = SECTION_PATTERN.search(section)
    if match is None:
        msg = "section lacks its begin/end markers (use render_section)"
        raise ValueError(msg)
    sections[match["key"]] = match.group(0)
    body = "\n".join(sections[key] for key in sorted(sections))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"{MARKDOWN_TITLE}\n\n{preamble.strip()}\n\n{body}", encoding="utf-8")


def write_json(path: str | Path, document: Mapping[str, Any]) -> None:
    """Write a report document as indented UTF-8 JSON (numpy scalars converted)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=1, default=_json_default) + "\n", encoding="utf-8")


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    msg = f"cannot write {type(value).__name__} to JSON"
    raise TypeError(msg)
