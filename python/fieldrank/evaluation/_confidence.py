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
from ..config import ConfidenceParams

__all__ = ["CONFIDENCE_SEED", "ECE_BINS", "Labelled", "auroc", "check_fittable", "collect_retriever", "collect_store", "cross_validate",
           "expected_calibration_error", "figures", "fit", "fit_params", "reliability_plot", "write_store_defaults"]

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
                features[(row, cross)] = conf.features(retriever.embeddings, q, retriever.bm25, terms, result.ids,
                                                       result.scores, subset)
                if not cross:
                    hits[row] = result.ids
    out = []
    for row in rows.tolist():
        gold = qs.gold_positions_absolute[row]
        out.append(Labelled(int(qs.conv_index[row]), features[(row, False)], np.isin(hits[row], gold),
                            features[(row, True)]))
    return out


def fit(items: Sequence[Labelled]) -> ConfidenceParams:
    """:func:`fit_params` on labelled searches."""
    return fit_params([(item.own, item.relevant) for item in items], [item.other for item in items])


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


def check_fittable(results: Sequence[tuple[conf.Features, np.ndarray]], absent: Sequence[conf.Features]) -> None:
    """Refuse, saying what is missing, labelled results a model cannot be fitted from: the memory
    model needs queries over a memory that holds the answer and over one that does not; the hit model
    needs relevant and irrelevant returned hits (a single class fits weights that say 0 or 1 always)."""
    if not results or not absent:
        msg = ("no labelled query to fit the confidence model on: it needs questions searched over the memory "
               "that holds their answer and over one that does not")
        raise ValueError(msg)
    labels = [np.asarray(y, dtype=bool) for f, y in results if f.hits.shape[0]]
    n_hits = sum(y.size for y in labels)
    n_relevant = sum(int(y.sum()) for y in labels)
    if n_relevant == 0:
        msg = (f"no returned hit is labelled relevant ({n_hits} hits of {len(results)} questions): the questions' "
               "evidence turns are never among the results, so the hit model has no relevant example; check the "
               "evidence labels, or search deeper (the configuration's k)")
        raise ValueError(msg)
    if n_relevant == n_hits:
        msg = (f"every returned hit is labelled relevant ({n_hits} hits of {len(results)} questions): the hit "
               "model needs irrelevant hits too (conversations longer than k, evidence naming only the turns that "
               "answer), or it says about 1 for every hit")
        raise ValueError(msg)


def fit_params(results: Sequence[tuple[conf.Features, np.ndarray]],
               absent: Sequence[conf.Features]) -> ConfidenceParams:
    """Fit :class:`~fieldrank.config.ConfidenceParams` on labelled results.

    ``results``: one ``(features, relevant)`` per query searched over a memory that holds its
    answer, ``relevant`` a bool (k,) per hit. ``absent``: features of queries searched over a memory
    that does not (another user's, another conversation's): every hit irrelevant. The memory model
    is fitted on the first hits of both (holds / does not hold), the hit model and the
    recalibration on the hits of ``results``.
    """
    check_fittable(results, absent)
    memory_rows = [f.memory for f, _ in results] + [f.memory for f in absent]
    holds = np.r_[np.ones(len(results)), np.zeros(len(absent))]
    mb, mw = conf.fit_logistic(np.vstack(memory_rows), holds)
    kept = [(f, np.asarray(y, dtype=np.float64)) for f, y in results if f.hits.shape[0]]
    hits = np.vstack([f.hits for f, _ in kept])
    memory = np.vstack([np.broadcast_to(f.memory, (f.hits.shape[0], f.memory.shape[0])) for f, _ in kept])
    y = np.concatenate([labels for _, labels in kept])
    top = np.concatenate([np.arange(f.hits.shape[0]) == 0 for f, _ in kept]).astype(np.float64)
    hb, hw = conf.fit_logistic(hits, y)
    partial = ConfidenceParams(mb, tuple(mw), hb, tuple(hw), (0.0, 1.0, 0.0))
    cb, cw = conf.fit_logistic(np.column_stack([conf.product_logit(memory, hits, partial), top]), y)
    return ConfidenceParams(mb, tuple(mw), hb, tuple(hw), (cb, float(cw[0]), float(cw[1])))


# ----------------------------------------------------------------------------- the store
def collect_store(data, seed: Optional[int] = None) -> list:
    """Labelled recalls of the scored LoCoMo questions through one store (a tenant per conversation,
    as ``benchmarks/memory_locomo.py`` builds it): each question recalled in its own tenant and in
    another conversation's (:func:`fieldrank.evaluation._confidence.other_conversations`)."""
    from ..memory import MemoryStore
    from ..memory._confidence import hit_features

    day = 86400.0
    turns, qs = data.turns, data.questions
    texts = [str(t) for t in turns.embed_text]
    store = MemoryStore(dim=data.turn_embeddings.shape[1])
    created = turns.session_datetime.astype("datetime64[s]").astype(np.int64).astype(np.float64)
    offset, when = {}, {}
    for c, (start, stop) in sorted(data.conv_ranges.items()):
        ids = store.add_many(texts[start:stop], data.turn_embeddings[start:stop], tenants=f"conv{c}",
                             created_at=created[start:stop],
                             sessions=[f"session {int(s)}" for s in turns.session[start:stop].tolist()])
        offset[c] = int(ids[0]) - start
        when[c] = float(created[start:stop].max()) + day
    rows = np.flatnonzero(qs.is_scored)
    other = other_conversations(qs.conv_index[rows], data.n_conversations, CONFIDENCE_SEED if seed is None else seed)
    out = []
    for row, memory in zip(rows.tolist(), other.tolist()):
        own_conv = int(qs.conv_index[row])
        text, q = str(qs.question[row]), data.question_embeddings[row]
        own = store.recall(text, q, tenant=f"conv{own_conv}", reinforce=False, at_time=when[own_conv])
        away = store.recall(text, q, tenant=f"conv{memory}", reinforce=False, at_time=when[memory])
        gold = qs.gold_positions_absolute[row] + offset[own_conv]

        def features(result):
            return hit_features(text, [h.text for h in result.hits], [h.factors.cosine for h in result.hits],
                                [h.fused_score for h in result.hits])

        out.append(Labelled(own_conv, features(own), np.isin([h.id for h in own.hits], gold), features(away)))
    store.close()
    return out


def write_store_defaults(path, params, command: str) -> None:
    """Write ``params`` as the store's shipped model (``fieldrank/data/memory_confidence.toml``)."""
    import datetime

    import tomli_w

    header = (f"# The MemoryStore's hit-confidence model (fieldrank.memory._confidence), fitted on all of LoCoMo\n"
              f"# on {datetime.date.today().isoformat()} after conversation-level cross-validation "
              f"(docs/results/confidence.md).\n# command: {command}\n\n")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(header + tomli_w.dumps({"confidence": params.to_dict()}))
