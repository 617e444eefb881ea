"""Does a SPLADE term enter the calibrated fusion well? A conversation-level cross-validated study.

The ``default`` preset is one temporal leg (:mod:`fieldrank.temporal`): base relevance
``b = α·z(BM25 with neighbour text) + (1 − α)·z(cos)``, its session neighbours (γ) and two time
priors (τ, δ). This study adds a SPLADE term to the base,

    b = w_cos·z(cos) + w_lex·z(BM25) + w_spl·z(SPLADE),

with ``w_cos = 1 − α`` (so ``w_lex = α, w_spl = 0`` is ``default`` exactly and the priors keep
their scale), where SPLADE's own neighbour text is the analogue of BM25's: the score against the
turn plus ``context_weight`` times the score against its *context vector*, the elementwise max of
the SPLADE vectors of the turn and its same-session neighbours within ``window`` (max pooling over
the turns' tokens, as SPLADE pools the tokens of one text). ``w_lex = 0`` replaces BM25 by SPLADE.

Cross-validation is by conversation: the ten LoCoMo conversations form five folds of two; for
each fold the grid point with the best mean NDCG@10 on the other eight conversations (averaged
over the embedding sets) is scored on the fold's two. Every question is thus scored once, by a
configuration that never saw its conversation; the paired bootstrap is over those scores.

Everything here is numpy over per-conversation score matrices: the lexical scores come from
:class:`fieldrank.bm25.BM25Index` with the preset's parameters, the SPLADE scores from
:func:`fieldrank.sparse.sparse_scores_batch` (one block of documents per conversation), and the
fusion reproduces :func:`fieldrank.reference.temporal_scores` (held to it with ``w_spl = 0`` by
the tests).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from .. import reference as fr_reference
from ..bm25 import BM25Index
from ..config import preset
from ..sparse import sparse_index, sparse_scores_batch
from ..splade import SparseRows, context_rows
from ..temporal import DAY, TemporalParams, Timeline, question_features
from . import metrics
from .locomo import LocomoData, locomo_timeline

__all__ = ["ConversationParts", "FusionPoint", "conversation_parts", "fused_scores",
           "ndcg_of_scores", "BASELINE", "DEFAULT_GRID", "grid_points", "cross_validate"]

K = 10


@dataclass(frozen=True)
class FusionPoint:
    """One configuration: the base's weights and SPLADE's neighbour text."""

    w_lex: float
    w_spl: float
    window: int = 0
    context_weight: float = 0.0

    def label(self) -> str:
        return f"lex{self.w_lex:g}_spl{self.w_spl:g}_w{self.window}_cw{self.context_weight:g}"


#: ``default`` itself: BM25 at the preset's α, no SPLADE.
BASELINE = FusionPoint(w_lex=0.5, w_spl=0.0)

DEFAULT_GRID = {
    "w_lex": (0.0, 0.25, 0.5),
    "w_spl": (0.0, 0.25, 0.5, 0.75, 1.0),
    "window": (0, 1, 2),
    "context_weight": (0.5, 1.0),
}


def grid_points(grid: dict[str, Sequence[float]] = DEFAULT_GRID) -> list[FusionPoint]:
    points = set()
    for w_lex, w_spl, window, cw in itertools.product(grid["w_lex"], grid["w_spl"], grid["window"],
                                                      grid["context_weight"]):
        if w_spl == 0.0:
            window, cw = 0, 0.0  # SPLADE's neighbour text does not matter without SPLADE
        elif window == 0:
            cw = 0.0
        points.add(FusionPoint(w_lex, w_spl, int(window), float(cw)))
    return sorted(points, key=lambda p: (p.w_lex, p.w_spl, p.window, p.context_weight))


@dataclass
class ConversationParts:
    """The score matrices of one conversation's scored questions over its turns."""

    conv_index: int
    rows: np.ndarray  # the conversation's turn rows (sorted)
    questions: np.ndarray  # question rows (scored ones)
    gold: list  # gold turn rows per question
    dense: np.ndarray  # (B, n) cosine
    lex: np.ndarray  # (B, n) BM25 with neighbour text (the preset's parameters)
    bm25_plain: np.ndarray  # (B, n) BM25 of the `bm25` preset (no neighbour text)
    spl_self: np.ndarray  # (B, n) SPLADE against each turn
    spl_ctx: dict = field(default_factory=dict)  # window -> (B, n) SPLADE against the context vectors
    intent: Optional[np.ndarray] = None
    windows: Optional[list] = None


def conversation_parts(data: LocomoData, doc_rows: SparseRows, question_rows: SparseRows,
                       windows: Sequence[int] = (1, 2), timeline: Optional[Timeline] = None,
                       n_threads: int = 0) -> list[ConversationParts]:
    """Per conversation: every score matrix the fusion reads, for the scored questions."""
    timeline = locomo_timeline(data) if timeline is None else timeline
    texts = [str(t) for t in data.turns.embed_text]
    lex_index = BM25Index(texts, preset("default").bm25, sessions=timeline)
    plain_index = BM25Index(texts, preset("bm25").bm25, sessions=timeline)
    self_index = sparse_index(doc_rows.indptr, doc_rows.indices, doc_rows.data, doc_rows.n_terms)
    ctx_index = {w: sparse_index(*context_rows(doc_rows, timeline.session, w)[:3], doc_rows.n_terms)
                 for w in windows}
    E = np.asarray(data.turn_embeddings, dtype=np.float64)
    Q = np.asarray(data.question_embeddings, dtype=np.float64)
    qs = data.questions
    out = []
    for conv in range(data.n_conversations):
        start, stop = data.conv_ranges[conv]
        rows = np.arange(start, stop, dtype=np.int64)
        qrows = np.flatnonzero((qs.conv_index == conv) & qs.is_scored)
        if qrows.size == 0:
            continue
        q_ptr = question_rows.indptr
        sel_ptr = np.concatenate([[0], np.cumsum(q_ptr[qrows + 1] - q_ptr[qrows])]).astype(np.int64)
        sel = np.concatenate([np.arange(q_ptr[r], q_ptr[r + 1]) for r in qrows])
        q_terms, q_weights = question_rows.indices[sel], question_rows.data[sel]

        def splade(index: Any) -> np.ndarray:
            return sparse_scores_batch(index, sel_ptr, q_terms, q_weights, doc_begin=int(start), doc_end=int(stop),
                                       n_threads=n_threads).astype(np.float64)

        questions = [str(q) for q in qs.question[qrows]]
        intent, date_windows = question_features(questions, timeline, rows)
        out.append(ConversationParts(
            conv_index=conv, rows=rows, questions=qrows,
            gold=[np.asarray(qs.gold_positions_absolute[r]) for r in qrows],
            dense=Q[qrows] @ E[rows].T,
            lex=np.stack([lex_index.scores(q)[start:stop] for q in questions]).astype(np.float64),
            bm25_plain=np.stack([plain_index.scores(q)[start:stop] for q in questions]).astype(np.float64),
            spl_self=splade(self_index),
            spl_ctx={w: splade(ix) for w, ix in ctx_index.items()},
            intent=intent, windows=date_windows))
    return out


def _znorm(S: np.ndarray) -> np.ndarray:
    # fieldrank.reference's z-normalisation (population moments; a constant row gives 0).
    mean = S.mean(axis=1, keepdims=True)
    std = S.std(axis=1, keepdims=True)
    return np.where(std > 0, (S - mean) / np.where(std > 0, std, 1.0), 0.0)


def fused_scores(parts: ConversationParts, point: FusionPoint, timeline: Timeline,
                 params: Optional[TemporalParams] = None) -> np.ndarray:
    """The temporal leg's score with SPLADE in the base (``params``: the default preset's leg)."""
    if params is None:
        leg = preset("default").legs[0]
        params = TemporalParams(**{k: getattr(leg, k) for k in TemporalParams.__dataclass_fields__})
    spl = parts.spl_self
    if point.w_spl and point.window:
        spl = spl + point.context_weight * parts.spl_ctx[point.window]
    # Only the base changes: the dense slot carries cos; the lexical slot carries the lexical mix.
    base = (1.0 - params.alpha) * _znorm(parts.dense)
    if point.w_lex:
        base = base + point.w_lex * _znorm(parts.lex)
    if point.w_spl:
        base = base + point.w_spl * _znorm(spl)
    score = base
    if params.gamma > 0.0:
        score = score + params.gamma * fr_reference.neighbour_support(base, parts.rows, timeline.session,
                                                                      params.radius, params.decay)
    if params.tau > 0.0 and parts.intent is not None and timeline.cue is not None:
        score = score + params.tau * (np.asarray(parts.intent, bool)[:, None] & timeline.cue[parts.rows][None, :])
    if params.delta > 0.0 and parts.windows is not None and timeline.time is not None:
        t = timeline.time[parts.rows]
        for b, periods in enumerate(parts.windows):
            if not periods:
                continue
            hit = np.zeros(parts.rows.shape[0], dtype=bool)
            for start, end in periods:
                hit |= (t >= start - params.before_days * DAY) & (t <= end + params.after_days * DAY)
            score[b] += params.delta * hit
    return score


def ndcg_of_scores(parts: ConversationParts, scores: np.ndarray, k: int = K) -> np.ndarray:
    """NDCG@k per question of rankings by score (higher first, ties to the lower row)."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.array([metrics.ndcg_at_k(parts.rows[o].tolist(), g.tolist(), k) for o, g in zip(order, parts.gold)])


def cross_validate(sets: dict[str, list[ConversationParts]], timelines: dict[str, Timeline],
                   points: Sequence[FusionPoint], baseline: FusionPoint, n_folds: int = 5,
                   contiguous: bool = False) -> dict[str, Any]:
    """Per set: held-out NDCG@10 of the chosen points and of ``baseline`` (question order of the parts), and
    the point chosen per fold (fit on the other folds' conversations, averaged over the sets).

    Folds: conversations ``(0, 5), (1, 6), …`` (interleaved), or ``(0, 1), (2, 3), …`` with
    ``contiguous`` (a second fixed split, to see that the result does not hinge on one)."""
    names = list(sets)
    convs = [p.conv_index for p in sets[names[0]]]
    if contiguous:
        size = -(-len(convs) // n_folds)
        folds = [convs[i:i + size] for i in range(0, len(convs), size)]
    else:
        folds = [convs[i::n_folds] for i in range(n_folds)]
    # table[set][point] = list over conversations of per-question NDCG arrays
    table = {s: {pt: [ndcg_of_scores(p, fused_scores(p, pt, timelines[s])) for p in sets[s]] for pt in points}
             for s in names}
    chosen, held, base = [], {s: {} for s in names}, {s: {} for s in names}
    for fold in folds:
        train = [i for i, c in enumerate(convs) if c not in fold]

        def objective(pt: FusionPoint) -> float:
            return float(np.mean([np.concatenate([table[s][pt][i] for i in train]).mean() for s in names]))

        best = max(points, key=lambda pt: (objective(pt), -pt.w_spl))
        chosen.append((tuple(fold), best, objective(best), objective(baseline)))
        for s in names:
            for i, c in enumerate(convs):
                if c in fold:
                    held[s][c] = table[s][best][i]
                    base[s][c] = table[s][baseline][i]
    result = {"folds": chosen, "held": {}, "baseline": {}, "table": table, "convs": convs}
    for s in names:
        result["held"][s] = np.concatenate([held[s][c] for c in convs])
        result["baseline"][s] = np.concatenate([base[s][c] for c in convs])
    return result
