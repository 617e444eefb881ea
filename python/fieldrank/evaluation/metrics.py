"""Per-question ranking metrics with binary relevance (docs/spec.md §9).

Every metric scores one *ranking* (a sequence of ids, best first, possibly shorter
than ``k``) against one *gold set* (the relevant ids, at least one). Only the first
``k`` ids of the ranking count. Relevance is binary: an id is relevant when it is in
the gold set.

Formulas, with ``hit_i = 1`` when the id at 1-based rank ``i`` is relevant:

- ``DCG@k  = sum_{i=1..min(k, len(ranking))} hit_i / log2(i + 1)``
- ``IDCG@k = sum_{i=1..min(|gold|, k)} 1 / log2(i + 1)``
- ``NDCG@k = DCG@k / IDCG@k``
- ``Recall@k = (number of gold ids in the top k) / |gold|``
- ``hit@k = 1 if any gold id is in the top k else 0``

With binary relevance the Järvelin–Kekäläinen gain (``rel``) and the Burges gain
(``2**rel - 1``) coincide, so NDCG here equals ranx's ``ndcg`` and ``ndcg_burges``.

A ranking holding the same id twice is a bug in the method that produced it and
raises ``ValueError``; so does an empty gold set (Recall is undefined there).

Vectorised forms over many questions: :func:`per_question` and
:func:`per_question_all`, which build one ``(n_questions, k)`` hit matrix and reduce
it with matrix operations.

:func:`ranking_from_scores` turns a score vector into a ranking with the project's
tie rule (docs/spec.md §0): higher score first, equal scores lower index first.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Sequence
from typing import Any, Final, Union

import numpy as np

from .. import _validation as _v

__all__ = [
    "DEFAULT_K",
    "METRIC_NAMES",
    "check_depth",
    "dcg_at_k",
    "discounts",
    "hit_at_k",
    "hit_matrix",
    "ideal_dcg_at_k",
    "ndcg_at_k",
    "per_question",
    "per_question_all",
    "ranking_from_scores",
    "recall_at_k",
    "validate_ranking",
]

DEFAULT_K: Final[int] = 10
"""Cut-off used by the LoCoMo protocol's headline metrics (NDCG@10, Recall@10)."""

LOG_BASE: Final[float] = 2.0
"""Base of the logarithmic rank discount ``1 / log_base(rank + 1)``."""

METRIC_NAMES: Final[tuple[str, ...]] = ("ndcg", "recall", "hit")
"""Names accepted by :func:`per_question`, in the order :func:`per_question_all` returns them."""

GoldLike = Union[Collection[Hashable], np.ndarray]
RankingLike = Union[Sequence[Hashable], np.ndarray]


# --------------------------------------------------------------------------- helpers
def _check_k(k: int) -> int:
    return _v.integer(k, "k", low=1)


def _as_id_list(ranking: RankingLike) -> list[Any]:
    """Return the ranking as a flat Python list (numpy scalars become Python scalars)."""
    if isinstance(ranking, np.ndarray):
        if ranking.ndim != 1:
            msg = f"ranking must be one-dimensional, got shape {ranking.shape}"
            raise ValueError(msg)
        return ranking.tolist()
    if isinstance(ranking, (str, bytes)):
        msg = "ranking must be a sequence of ids, not a single str/bytes"
        raise TypeError(msg)
    return list(ranking)


def _as_gold_set(gold: GoldLike) -> frozenset[Any]:
    if isinstance(gold, np.ndarray):
        gold_set = frozenset(gold.ravel().tolist())
    elif isinstance(gold, (str, bytes)):
        msg = "gold must be a collection of ids, not a single str/bytes"
        raise TypeError(msg)
    else:
        gold_set = frozenset(gold)
    if not gold_set:
        msg = "gold set is empty: ranking metrics need at least one relevant id"
        raise ValueError(msg)
    return gold_set


def validate_ranking(ranking: RankingLike) -> list[Any]:
    """Check that a ranking holds no id twice and return it as a list.

    Parameters
    ----------
    ranking : sequence of hashable or 1-D numpy array
        Ids, best first. May be empty.

    Returns
    -------
    list
        The ids as Python scalars, in the same order.

    Raises
    ------
    ValueError
        If an id occurs more than once (the first repeated id is named).
    """
    ids = _as_id_list(ranking)
    seen: set[Any] = set()
    for position, item in enumerate(ids):
        if item in seen:
            msg = f"ranking holds id {item!r} more than once (again at position {position})"
            raise ValueError(msg)
        seen.add(item)
    return ids


def discounts(k: int) -> np.ndarray:
    """Return the rank discounts ``1 / log2(rank + 1)`` for ranks ``1..k``.

    Parameters
    ----------
    k : int
        Number of ranks, ``>= 1``.

    Returns
    -------
    numpy.ndarray
        float64, shape ``(k,)``.
    """
    k = _check_k(k)
    ranks = np.arange(1, k + 1, dtype=np.float64)
    return 1.0 / (np.log(ranks + 1.0) / np.log(LOG_BASE))


def _hits(ids: list[Any], gold_set: frozenset[Any], k: int) -> np.ndarray:
    """Boolean hit vector of length ``k``; positions beyond the ranking are False."""
    hits = np.zeros(k, dtype=bool)
    for position, item in enumerate(ids[:k]):
        hits[position] = item in gold_set
    return hits


# ----------------------------------------------------------- one question at a time
def dcg_at_k(ranking: RankingLike, gold: GoldLike, k: int = DEFAULT_K) -> float:
    """Discounted cumulative gain at ``k`` with binary relevance.

    ``DCG@k = sum over ranks i <= k of [id_i in gold] / log2(i + 1)``.

    Parameters
    ----------
    ranking : sequence of hashable or 1-D numpy array
        Ids, best first; only the first ``k`` count. May be shorter than ``k``.
    gold : collection of hashable or numpy array
        Relevant ids, at least one.
    k : int, default 10
        Cut-off.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Duplicate ids in ``ranking``, empty ``gold`` or ``k < 1``.
    """
    k = _check_k(k)
    hits = _hits(validate_ranking(ranking), _as_gold_set(gold), k)
    return float(hits @ discounts(k))


def ideal_dcg_at_k(n_gold: int, k: int = DEFAULT_K) -> float:
    """Ideal DCG at ``k`` for ``n_gold`` relevant items (binary relevance).

    ``IDCG@k = sum over ranks i <= min(n_gold, k) of 1 / log2(i + 1)``.

    Parameters
    ----------
    n_gold : int
        Number of relevant ids, ``>= 1``.
    k : int, default 10
        Cut-off.

    Returns
    -------
    float
    """
    k = _check_k(k)
    if n_gold < 1:
        msg = f"n_gold must be >= 1, got {n_gold}"
        raise ValueError(msg)
    return float(discounts(k)[: min(int(n_gold), k)].sum())


def ndcg_at_k(ranking: RankingLike, gold: GoldLike, k: int = DEFAULT_K) -> float:
    """Normalised DCG at ``k``: ``DCG@k / IDCG@k`` with IDCG over ``min(|gold|, k)`` items.

    Arguments and errors as :func:`dcg_at_k`.

    Returns
    -------
    float
        In ``[0, 1]``.
    """
    gold_set = _as_gold_set(gold)
    return dcg_at_k(ranking, gold_set, k) / ideal_dcg_at_k(len(gold_set), k)


def recall_at_k(ranking: RankingLike, gold: GoldLike, k: int = DEFAULT_K) -> float:
    """Share of the gold ids that appear in the top ``k``.

    Arguments and errors as :func:`dcg_at_k`.

    Returns
    -------
    float
        In ``[0, 1]``; below 1 whenever ``|gold| > k``.
    """
    k = _check_k(k)
    gold_set = _as_gold_set(gold)
    hits = _hits(validate_ranking(ranking), gold_set, k)
    return float(hits.sum()) / len(gold_set)


def hit_at_k(ranking: RankingLike, gold: GoldLike, k: int = DEFAULT_K) -> float:
    """1.0 when any gold id appears in the top ``k``, else 0.0.

    Arguments and errors as :func:`dcg_at_k`.

    Returns
    -------
    float
    """
    k = _check_k(k)
    hits = _hits(validate_ranking(ranking), _as_gold_set(gold), k)
    return float(hits.any())


# ------------------------------------------------------------------ many questions
def hit_matrix(
    run: Sequence[RankingLike], gold: Sequence[GoldLike], k: int = DEFAULT_K
) -> tuple[np.ndarray, np.ndarray]:
    """Build the ``(n_questions, k)`` boolean hit matrix and the gold-set sizes.

    Parameters
    ----------
    run : sequence of rankings
        One ranking per question (ids, best first).
    gold : sequence of gold collections
        One gold collection per question, aligned with ``run``.
    k : int, default 10
        Cut-off.

    Returns
    -------
    hits : numpy.ndarray
        bool, shape ``(n_questions, k)``; ``hits[q, i]`` is True when the id at
        0-based position ``i`` of question ``q``'s ranking is relevant.
    n_gold : numpy.ndarray
        int64, shape ``(n_questions,)``; size of each gold set.

    Raises
    ------
    ValueError
        Lengths differ, a ranking holds duplicates or a gold set is empty (the
        question index is named).
    """
    k = _check_k(k)
    if len(run) != len(gold):
        msg = f"run and gold must have the same length, got {len(run)} and {len(gold)}"
        raise ValueError(msg)
    n_questions = len(run)
    hits = np.zeros((n_questions, k), dtype=bool)
    n_gold = np.zeros(n_questions, dtype=np.int64)
    for question, (ranking, gold_items) in enumerate(zip(run, gold)):
        try:
            ids = validate_ranking(ranking)
            gold_set = _as_gold_set(gold_items)
        except ValueError as error:
            msg = f"question {question}: {error}"
            raise ValueError(msg) from error
        hits[question] = _hits(ids, gold_set, k)
        n_gold[question] = len(gold_set)
    return hits, n_gold


def _metrics_from_hits(hits: np.ndarray, n_gold: np.ndarray, k: int) -> dict[str, np.ndarray]:
    rank_discounts = discounts(k)
    ideal_cumulative = np.cumsum(rank_discounts)
    dcg = hits.astype(np.float64) @ rank_discounts
    ideal = ideal_cumulative[np.minimum(n_gold, k) - 1]
    n_found = hits.sum(axis=1)
    return {
        "ndcg": dcg / ideal,
        "recall": n_found / n_gold.astype(np.float64),
        "hit": (n_found > 0).astype(np.float64),
    }


def _check_metric(metric: str) -> str:
    if metric not in METRIC_NAMES:
        msg = f"unknown metric {metric!r}; valid metrics: {', '.join(METRIC_NAMES)}"
        raise ValueError(msg)
    return metric


def per_question(
    run: Sequence[RankingLike],
    gold: Sequence[GoldLike],
    k: int = DEFAULT_K,
    metric: str = "ndcg",
) -> np.ndarray:
    """Score every question of a run with one metric.

    Parameters
    ----------
    run : sequence of rankings
        One ranking per question (ids, best first; any length, only the first
        ``k`` count).
    gold : sequence of gold collections
        One non-empty gold collection (set, list or array of ids) per question.
    k : int, default 10
        Cut-off.
    metric : {"ndcg", "recall", "hit"}, default "ndcg"
        Which formula (see the module docstring).

    Returns
    -------
    numpy.ndarray
        float64, shape ``(n_questions,)``; the mean over questions is the headline
        figure.
    """
    metric = _check_metric(metric)
    hits, n_gold = hit_matrix(run, gold, k)
    return _metrics_from_hits(hits, n_gold, _check_k(k))[metric]


def per_question_all(
    run: Sequence[RankingLike], gold: Sequence[GoldLike], k: int = DEFAULT_K
) -> dict[str, np.ndarray]:
    """Score every question with every metric in :data:`METRIC_NAMES` in one pass.

    Parameters
    ----------
    run : sequence of rankings
        One ranking per question.
    gold : sequence of gold collections
        One non-empty gold collection per question.
    k : int, default 10
        Cut-off.

    Returns
    -------
    dict of str to numpy.ndarray
        ``{"ndcg": ..., "recall": ..., "hit": ...}``, each float64 ``(n_questions,)``.
    """
    hits, n_gold = hit_matrix(run, gold, k)
    return _metrics_from_hits(hits, n_gold, _check_k(k))


def check_depth(run: Iterable[RankingLike], k: int = DEFAULT_K) -> None:
    """Check the equal-k rule (docs/spec.md §9): every ranking returns at most ``k`` ids.

    Parameters
    ----------
    run : iterable of rankings
    k : int, default 10

    Raises
    ------
    ValueError
        If a ranking is longer than ``k`` (the first offending question is named).
    """
    k = _check_k(k)
    for question, ranking in enumerate(run):
        if len(ranking) > k:
            msg = f"question {question}: ranking has {len(ranking)} ids, more than k={k}"
            raise ValueError(msg)


def ranking_from_scores(
    scores: np.ndarray, k: int = DEFAULT_K, ids: np.ndarray | None = None
) -> np.ndarray:
    """Top-``k`` ranking from a score vector with the docs/spec.md §0 tie rule.

    Higher score first; equal scores go to the lower index (position in
    ``scores``) first. NaN scores are rejected.

    Parameters
    ----------
    scores : numpy.ndarray
        Shape ``(n,)``, any real dtype.
    k : int, default 10
        How many to keep; fewer are returned when ``n < k``.
    ids : numpy.ndarray, optional
        Shape ``(n,)``; when given, the ranking holds ``ids[position]`` instead of
        positions.

    Returns
    -------
    numpy.ndarray
        Shape ``(min(k, n),)``: positions (int64) or ``ids`` entries, best first.
    """
    k = _check_k(k)
    scores = np.asarray(scores)
    if scores.ndim != 1:
        msg = f"scores must be one-dimensional, got shape {scores.shape}"
        raise ValueError(msg)
    if np.isnan(scores).any():
        msg = "scores contain NaN; a ranking needs comparable scores"
        raise ValueError(msg)
    if ids is not None and len(ids) != len(scores):
        msg = f"ids must align with scores, got {len(ids)} ids for {len(scores)} scores"
        raise ValueError(msg)
    # A stable sort on the negated scores keeps equal scores in index order.
    order = np.argsort(-scores.astype(np.float64), kind="stable")[:k].astype(np.int64)
    return order if ids is None else np.asarray(ids)[order]
