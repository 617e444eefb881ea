"""The report figure: NDCG@k per method with intervals, and per-category bars.

Drawn with matplotlib's non-interactive Agg backend (no display needed). The PNG carries
no creation-time metadata, so the same summary gives the same file on the same library
versions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

__all__ = ["plot_summary"]

FIGURE_WIDTH_IN: Final[float] = 14.0
ROW_HEIGHT_IN: Final[float] = 0.32
MIN_FIGURE_HEIGHT_IN: Final[float] = 4.5
DPI: Final[int] = 120
WIDTH_RATIOS: Final[tuple[float, float]] = (1.0, 1.6)
GROUP_WIDTH: Final[float] = 0.85
"""Share of a category slot covered by its bars."""
CAPSIZE: Final[float] = 2.0
POINT_SIZE: Final[float] = 5.0
LABEL_FONT_SIZE: Final[float] = 8.0
LEGEND_FONT_SIZE: Final[float] = 7.0
LEGEND_COLUMNS: Final[int] = 1
LEGEND_ANCHOR: Final[tuple[float, float]] = (1.01, 1.0)
"""Legend outside the per-category axes, to the right, so it hides no bar."""
COLOR_MAP: Final[str] = "tab20"
BASELINE_COLOR: Final[str] = "0.5"
PNG_METADATA: Final[Mapping[str, Any]] = {"Software": None}
CATEGORY_PREFIX_DIGITS: Final[str] = "0123456789"


def _errors(entries: Sequence[Mapping[str, float]]) -> np.ndarray:
    means = np.array([entry["mean"] for entry in entries])
    lows = np.array([entry["lo"] for entry in entries])
    highs = np.array([entry["hi"] for entry in entries])
    return np.vstack([means - lows, highs - means])


def plot_summary(
    summary: Mapping[str, Any],
    path: str | Path,
    *,
    title: str = "",
    metric: str | None = None,
    baseline: str = "cosine",
) -> Path:
    """Write the two-panel PNG of a :func:`~fieldrank.evaluation._report.summarize` result.

    Left: every method's overall ``metric`` with its 95% interval (dashed line at
    ``baseline``). Right: the same metric per LoCoMo category, one bar per method, with
    intervals.

    Parameters
    ----------
    summary : mapping
        Output of :func:`~fieldrank.evaluation._report.summarize`.
    path : path-like
        Where the PNG goes (folders are created).
    title : str
        Figure title.
    metric : str, optional
        Default: the first metric of the summary (NDCG@k).
    baseline : str, default "cosine"

    Returns
    -------
    pathlib.Path
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from ._report import display

    metric = metric or summary["metrics"][0]
    methods = list(summary["methods"])
    categories = [
        name for name, n in summary["subsets"].items() if name[0] in CATEGORY_PREFIX_DIGITS and n
    ]
    colors = plt.get_cmap(COLOR_MAP)(np.arange(len(methods)) % plt.get_cmap(COLOR_MAP).N)
    height = max(MIN_FIGURE_HEIGHT_IN, ROW_HEIGHT_IN * len(methods))
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(FIGURE_WIDTH_IN, height), gridspec_kw={"width_ratios": WIDTH_RATIOS}
    )

    overall = [summary["methods"][name]["overall"][metric] for name in methods]
    positions = np.arange(len(methods))[::-1]
    left.errorbar(
        [entry["mean"] for entry in overall], positions, xerr=_errors(overall), fmt="none",
        ecolor="black", capsize=CAPSIZE,
    )
    left.scatter([entry["mean"] for entry in overall], positions, c=colors, s=POINT_SIZE**2, zorder=3)
    left.set_yticks(positions, methods, fontsize=LABEL_FONT_SIZE)
    if baseline in summary["methods"]:
        left.axvline(summary["methods"][baseline]["overall"][metric]["mean"], color=BASELINE_COLOR,
                     linestyle="--", linewidth=1)
    left.set_xlabel(f"{display(metric)}, overall (95% bootstrap interval)")
    left.set_title(f"overall, n = {summary['subsets']['overall']:,}", fontsize=LABEL_FONT_SIZE + 1)
    left.grid(axis="x", alpha=0.3)

    slots = np.arange(len(categories))
    width = GROUP_WIDTH / max(len(methods), 1)
    for index, name in enumerate(methods):
        entries = [summary["methods"][name][category][metric] for category in categories]
        offsets = slots - GROUP_WIDTH / 2 + width * (index + 0.5)
        right.bar(
            offsets, [entry["mean"] for entry in entries], width, yerr=_errors(entries),
            color=colors[index], label=name, capsize=0, error_kw={"linewidth": 0.6},
        )
    right.set_xticks(
        slots, [f"{name}\n(n={summary['subsets'][name]})" for name in categories], fontsize=LABEL_FONT_SIZE
    )
    right.set_ylabel(display(metric))
    right.set_title("per category", fontsize=LABEL_FONT_SIZE + 1)
    right.legend(fontsize=LEGEND_FONT_SIZE, ncol=LEGEND_COLUMNS, loc="upper left", bbox_to_anchor=LEGEND_ANCHOR)
    right.grid(axis="y", alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=DPI, metadata=dict(PNG_METADATA))
    plt.close(fig)
    return target
