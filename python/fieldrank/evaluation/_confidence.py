"""Fitting and checking hit confidence on LoCoMo (:mod:`fieldrank._confidence`).

Every question is searched twice with the retriever's plan: over its own conversation (its
evidence is in the searched memory; each hit labelled relevant when it is a gold turn) and over
another conversation, drawn with a seeded generator (nothing there is relevant). The model is
fitted and checked by conversation-level cross-validation (:func:`cross_validate`: leave one
conversation out, every held-out figure from a model that never saw that conversation), and the
figures are the issue's: AUROC of the first hit's confidence for "the first hit is relevant", AUROC
for "the evidence is in the searched memory" (the same question over its own and over another
conversation's memory), the expected calibration error of the first hit's confidence (and of every
hit's), and reliability diagrams (:func:`reliability_plot`, matplotlib: tooling only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import _confidence as conf

__all__ = ["CONFIDENCE_SEED", "ECE_BINS", "Labelled", "auroc", "collect_retriever", "cross_validate",
           "expected_calibration_error", "figures", "fit", "reliability_plot"]

#: Seed of the draw of each question's other conversation.
CONFIDENCE_SEED = 29
#: Equal-width bins of the expected calibration error and the reliability diagrams.
ECE_BINS = 10


@dataclass
class Labelled:
    """One question's two searches: its features and hit labels over its own memory, its
    features over another conversation's memory, and its conversation (the CV group)."""

    group: int
    own: conf.Features
    relevant: np.ndarray
    other: conf.Features


def other_conversations(conv_index: np.ndarray, n_conversations: int, seed: int = CONFIDENCE_SEED) -> np.ndarray:
    """For each question, another conversation (uniform among the others, seeded)."""
    rng = np.random.default_rng(seed)
    shift = rng.integers(1, n_conversations, size=conv_index.shape[0])
    return (conv_index + shift) % n_conversations


def collect_retriever(data, retriever, rows: Optional[np.ndarray] = None, seed: int = CONFIDENCE_SEED
                      ) -> list[Labelled]:
    """:class:`Labelled` searches of the LoCoMo questions ``rows`` (default: every scored one)
    with ``retriever`` (built over every turn, in corpus order)."""
    qs = data.questions
    rows = np.flatnonzero(qs.is_scored) if rows is None else np.asarray(rows)
    other = other_conversations(qs.conv_index[rows], data.n_conversations, seed)
    features: dict[tuple[int, bool], conf.Features] = {}
    hits: dict[int, np.ndarray] = {}
    for cross, memories in ((False, qs.conv_index[rows]), (True, other)):
        for memory in np.unique(memories):
            chosen = rows[memories == memory]
            start, stop = data.conv_ranges[int(memory)]
            subset = np.arange(start, stop)
            texts = [str(t) for t in qs.question[chosen]]
            Q = np.ascontiguousarray(data.question_embeddings[chosen], dtype=np.float32)
            for row, text, q, result in zip(chosen.tolist(), texts, Q, retriever.search_batch(texts, Q, subset=subset)):
                terms = conf.query_terms(retriever.bm25, text)
                features[(row, cross)] = conf.features(retriever._E, q, retriever.bm25, terms, result.ids,
                                                       result.scores, subset)
                if not cross:
                    hits[row] = result.ids
    out = []
    for row in rows.tolist():
        gold = qs.gold_positions_absolute[row]
        out.append(Labelled(int(qs.conv_index[row]), features[(row, False)], np.isin(hits[row], gold),
                            features[(row, True)]))
    return out


def fit(items: Sequence[Labelled]):
    """:func:`fieldrank._confidence.fit_params` on labelled searches."""
    return conf.fit_params([(item.own, item.relevant) for item in items], [item.other for item in items])


def cross_validate(sets: dict[str, list[Labelled]], fitter: Callable[[Sequence[Labelled]], Any] = fit
                   ) -> dict[str, dict[str, np.ndarray]]:
    """Leave-one-conversation-out predictions for every set: the model for a held-out conversation
    is fitted on the other conversations of *every* set (the shipped model serves every embedder),
    then applied to the held-out conversation of each set.

    Returns, per set: ``own`` (confidences of every hit over the own memory, concatenated),
    ``relevant`` (their labels), ``first`` (bool: the hit is a first hit), ``other_first`` (the
    first hit's confidence over another conversation's memory, one per question).
    """
    groups = sorted({item.group for items in sets.values() for item in items})
    out: dict[str, dict[str, list]] = {name: {"own": [], "relevant": [], "first": [], "other_first": []}
                                       for name in sets}
    for held_out in groups:
        params = fitter([item for items in sets.values() for item in items if item.group != held_out])
        for name, items in sets.items():
            for item in items:
                if item.group != held_out:
                    continue
                c = conf.confidence(item.own, params)
                out[name]["own"].append(c)
                out[name]["relevant"].append(item.relevant)
                out[name]["first"].append(np.arange(c.shape[0]) == 0)
                other = conf.confidence(item.other, params)
                out[name]["other_first"].append(other[:1] if other.size else np.zeros(1))
    return {name: {key: np.concatenate(values) for key, values in parts.items()} for name, parts in out.items()}


def auroc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve (ties count one half): P(score of a positive > score of a negative)."""
    scores = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = (ends - (counts - 1) / 2.0)[inverse]  # average 1-based rank of each tie group
    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _bins(p: np.ndarray, bins: int) -> np.ndarray:
    return np.minimum((np.asarray(p) * bins).astype(np.int64), bins - 1)


def expected_calibration_error(p: np.ndarray, y: np.ndarray, bins: int = ECE_BINS) -> float:
    """Expected calibration error: sum over equal-width bins of (share of samples) x |mean
    confidence - observed frequency|."""
    p = np.asarray(p, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    which = _bins(p, bins)
    total = 0.0
    for b in range(bins):
        m = which == b
        if m.any():
            total += m.mean() * abs(p[m].mean() - y[m].mean())
    return float(total)


def figures(cv: dict[str, np.ndarray]) -> dict[str, float]:
    """The issue's figures from one set's :func:`cross_validate` output."""
    first = cv["first"]
    p1, y1 = cv["own"][first], cv["relevant"][first]
    memory_scores = np.r_[p1, cv["other_first"]]
    memory_labels = np.r_[np.ones(p1.size, dtype=bool), np.zeros(cv["other_first"].size, dtype=bool)]
    return {
        "questions": int(p1.size),
        "first_relevant_rate": float(y1.mean()),
        "auroc_first_relevant": auroc(p1, y1),
        "auroc_evidence_in_memory": auroc(memory_scores, memory_labels),
        "ece_first": expected_calibration_error(p1, y1),
        "ece_all_hits": expected_calibration_error(cv["own"], cv["relevant"]),
        "mean_first_confidence": float(p1.mean()),
        "mean_first_confidence_other_memory": float(cv["other_first"].mean()),
    }


def reliability(p: np.ndarray, y: np.ndarray, bins: int = ECE_BINS) -> list[tuple[float, float, int]]:
    """(mean confidence, observed frequency, count) of each non-empty bin."""
    which = _bins(p, bins)
    out = []
    for b in range(bins):
        m = which == b
        if m.any():
            out.append((float(np.mean(p[m])), float(np.mean(y[m])), int(m.sum())))
    return out


def reliability_plot(panels: dict[str, tuple[np.ndarray, np.ndarray]], path, title: str) -> None:
    """Reliability diagrams, one panel per entry ``name -> (confidences, labels)``, to a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2), squeeze=False)
    for ax, (name, (p, y)) in zip(axes[0], panels.items()):
        points = reliability(p, y)
        ax.plot([0, 1], [0, 1], color="0.6", linestyle="--", linewidth=1, label="perfect calibration")
        xs = [m for m, _, _ in points]
        ys = [f for _, f, _ in points]
        sizes = [20 + 180 * c / max(c for _, _, c in points) for _, _, c in points]
        ax.plot(xs, ys, color="C0", linewidth=1)
        ax.scatter(xs, ys, s=sizes, color="C0", zorder=3, label="bins (area: hits)")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("confidence")
        ax.set_ylabel("observed relevant fraction")
        ax.set_title(f"{name}\nECE {expected_calibration_error(p, y):.3f}, n = {len(p)}", fontsize=10)
        ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
