"""``fieldrank calibrate``: fit the default stack's leg parameters, weights and depths on one split.

The search space is small, fixed and written down (:class:`SearchSpace`); nothing is tuned per
question or per category. The score of a candidate is its mean NDCG@10 over the questions of
the split, averaged over the embedding sets given, so one configuration serves all of them
(the per-set optimum is reported beside it).

Stage 1 — the time-aware leg alone (:mod:`fieldrank.temporal`)::

    BM25 (k1, b)  in {(1.5, 0.75) [docs/spec.md §7], (1.2, 0.4), (0.9, 0.2)}
    BM25 neighbour-text expansion (context_window, context_weight)
                  in {(0, -) [off], (2, 0.5), (2, 1.0)}
    alpha         in {0.4, 0.5, 0.6}     lexical share of the score blend
    gamma         in {0.3, 0.5, 0.7}     neighbour support
    radius        in {1, 2}              (decay 0.5)
    tau           in {0.5, 1.0}          time-cue prior for time questions
    delta         in {0.5, 1.0, 1.5}     session-date prior for dated questions
                                         (before_days 7, after_days 14)
    = 972 legs

Stage 2 — the RRF stack around the best leg (weight 1): its depth and the weights of the extra
legs (0 = left out; :attr:`SearchSpace.extra_legs`, any registered leg kind; by default these three)::

    temporal depth            in {10, 50}
    BM25 top-10 weight        in {0, 0.25, 0.5}
    cosine top-10 weight      in {0, 0.25, 0.5}
    CFS-R union-pool weight   in {0, 0.25, 0.5}   (dense top-150 ∪ BM25 top-50, top-50, w 0.9)
    = 54 stacks

The winner is written as a TOML configuration (:class:`fieldrank.config.RetrieverConfig`) with
the calibration's provenance in comments. Scoring here goes through the same functions the
retriever runs: every leg through the retriever's own leg plan (:class:`fieldrank.hybrid.LegPlan`)
over the retriever's corpus, one batch per conversation, BM25 scores computed once per parameter
set, and the retriever's one weighted-RRF rule (docs/spec.md §6); ``tests/evaluation/test_calibrate.py`` checks that the score reported for the winner equals
what the retriever built from the written file scores.

``--confidence`` fits the hit-confidence model instead (:mod:`fieldrank._confidence`) of a
configuration (``--config``, default ``default``) on the split's labelled questions: each question
searched over its own conversation (hits labelled by its evidence) and over another conversation
(nothing relevant); it writes the configuration with that ``[confidence]`` table
(:func:`calibrate_confidence`). A user's own labelled data in the LoCoMo layout refits it the same way.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import itertools
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from .. import DEFAULTS
from .. import temporal as tl
from .._retriever.corpus import Corpus, build_corpus
from .._retriever.fusion import weighted_rrf_batch
from ..bm25 import BM25Index, BM25Params
from ..config import BM25Leg, CFSRLeg, CosineLeg, Leg, RetrieverConfig, TemporalLeg
from ..hybrid import LegPlan
from .locomo import locomo_timeline

__all__ = [
    "DEFAULT_SPACE",
    "QUICK_SPACE",
    "CalibrationResult",
    "SearchSpace",
    "calibrate",
    "calibrate_confidence",
    "main",
    "write_confidence_table",
]

_D = DEFAULTS
K = _D["k"]
K0 = _D["k0"]
#: Parameters of the CFS-R union-pool leg tried in stage 2 (the locked CFS-R leg + a BM25 pool
#: of the leg's depth).
CFSR_UNION = {"depth": _D["cfsr_k"], "p": _D["p"], "union_p": _D["cfsr_k"]}
#: The extra legs of stage 2 by default (their weights are searched; any registered leg kind may be
#: one, :attr:`SearchSpace.extra_legs`).
DEFAULT_EXTRA_LEGS: tuple[Leg, ...] = (
    BM25Leg(depth=K), CosineLeg(depth=K),
    CFSRLeg(depth=CFSR_UNION["depth"], p=CFSR_UNION["p"], pool="union", union_p=CFSR_UNION["union_p"],
            name="cfsr_union"))
#: Their names, in the order of :attr:`SearchSpace.extra_weights` combinations.
EXTRA_LEGS = tuple(leg.name for leg in DEFAULT_EXTRA_LEGS)


@dataclass(frozen=True)
class SearchSpace:
    """The grid (module docstring). Every field is a tuple of values tried."""

    bm25: tuple[tuple[float, float], ...] = ((1.5, 0.75), (1.2, 0.4), (0.9, 0.2))
    #: (context_window, context_weight) of BM25's neighbour-text expansion; window 0 is off.
    context: tuple[tuple[int, float], ...] = ((0, 1.0), (2, 0.5), (2, 1.0))
    alpha: tuple[float, ...] = (0.4, 0.5, 0.6)
    gamma: tuple[float, ...] = (0.3, 0.5, 0.7)
    radius: tuple[int, ...] = (1, 2)
    tau: tuple[float, ...] = (0.5, 1.0)
    delta: tuple[float, ...] = (0.5, 1.0, 1.5)
    #: Fixed at the leg's defaults (the native core's table, one source): not searched by the grid.
    decay: float = _D["temporal_decay"]
    before_days: int = _D["temporal_before_days"]
    after_days: int = _D["temporal_after_days"]
    temporal_depth: tuple[int, ...] = (10, 50)
    extra_weights: tuple[float, ...] = (0.0, 0.25, 0.5)
    #: The legs stage 2 may add beside the time-aware leg (each weight from :attr:`extra_weights`;
    #: 0: left out): any registered leg kind, with unique names other than ``"temporal"``.
    extra_legs: tuple[Leg, ...] = DEFAULT_EXTRA_LEGS

    def bm25_params(self) -> list[BM25Params]:
        """Every BM25 index of the grid: (k1, b) x expansion."""
        return [BM25Params(k1=k1, b=b, context_window=window, context_weight=weight)
                for (k1, b), (window, weight) in itertools.product(self.bm25, self.context)]

    def legs(self) -> list[tuple[BM25Params, tl.TemporalParams]]:
        """Stage-1 candidates: (BM25 parameters, leg parameters)."""
        out = []
        for bm, alpha, gamma, radius, tau, delta in itertools.product(
                self.bm25_params(), self.alpha, self.gamma, self.radius, self.tau, self.delta):
            out.append((bm, tl.TemporalParams(alpha=alpha, gamma=gamma, radius=radius, decay=self.decay, tau=tau,
                                              delta=delta, before_days=self.before_days,
                                              after_days=self.after_days)))
        return out

    def stacks(self) -> list[tuple[int, tuple[float, float, float]]]:
        """Stage-2 candidates: (temporal depth, weights of BM25, cosine, CFS-R union)."""
        return [(d, w) for d in self.temporal_depth
                for w in itertools.product(self.extra_weights, repeat=len(self.extra_legs))]

    def describe(self) -> str:
        return (f"bm25 (k1,b) {list(self.bm25)}; bm25 (context_window, context_weight) {list(self.context)}; alpha {list(self.alpha)}; gamma {list(self.gamma)}; "
                f"radius {list(self.radius)} (decay {self.decay}); tau {list(self.tau)}; delta {list(self.delta)} "
                f"(days -{self.before_days}/+{self.after_days}); temporal depth {list(self.temporal_depth)}; "
                f"extra leg weights {list(self.extra_weights)} for {[leg.name for leg in self.extra_legs]}")


DEFAULT_SPACE = SearchSpace()
#: A 4-leg / 4-stack space for smoke tests and quick looks.
QUICK_SPACE = SearchSpace(bm25=((0.9, 0.2),), context=((0, 1.0), (2, 1.0)), alpha=(0.5,), gamma=(0.0, 0.5), radius=(2,), tau=(1.0,),
                          delta=(1.5,), temporal_depth=(10,), extra_weights=(0.0, 0.5))


# ----------------------------------------------------------------------------- data
@dataclass
class _Block:
    """One conversation's questions of the split: everything the scoring needs."""

    rows: np.ndarray          # (n,) sorted corpus rows of the conversation
    texts: list[str]          # (B,) question strings
    Q: np.ndarray             # (B, d) question vectors
    gold: np.ndarray          # (B, n) bool
    n_gold: np.ndarray        # (B,)
    category: np.ndarray      # (B,)
    lexical: dict = field(default_factory=dict)   # BM25Params -> (B, N) BM25 scores of every turn


@dataclass
class _Prepared:
    embedding_set: str
    corpora: dict             # BM25Params -> the retriever's Corpus of every turn with those BM25 parameters
    blocks: list[_Block]

    @property
    def n_questions(self) -> int:
        return sum(len(b.texts) for b in self.blocks)


#: Re-exported for callers that build a retriever over LoCoMo (the evaluation runner).


def _prepare(data_dir, embedding_set: str, split: str, bm25_grid: Sequence[BM25Params]) -> _Prepared:
    from . import locomo

    data = locomo.load_locomo(data_dir, embedding_set, checksums=False)
    texts = tuple(str(t) for t in data.turns.embed_text)
    # The retriever's corpus (validated once), one BM25 index per parameter set; the legs run through
    # the retriever's plan over it.
    timeline = locomo_timeline(data)
    base = build_corpus(texts, np.ascontiguousarray(data.turn_embeddings, dtype=np.float32), False, bm25_grid[0],
                        timeline)
    corpora = {bm: base if bm == base.bm25.params else base.with_bm25(BM25Index(texts, bm, sessions=timeline))
               for bm in bm25_grid}
    rows_all = data.split_question_indices(split)
    qs = data.questions
    blocks = []
    for conv in np.unique(qs.conv_index[rows_all]).tolist():
        qrows = np.sort(rows_all[qs.conv_index[rows_all] == conv])
        start, stop = data.conv_ranges[conv]
        rows = np.arange(start, stop, dtype=np.int64)
        Q = np.ascontiguousarray(data.question_embeddings[qrows], dtype=np.float32)
        gold = np.zeros((len(qrows), len(rows)), dtype=bool)
        for i, r in enumerate(qrows):
            gold[i, qs.gold_positions[r]] = True
        blocks.append(_Block(rows, [str(t) for t in qs.question[qrows]], Q, gold, gold.sum(1), qs.category[qrows]))
    for bm, corpus in corpora.items():
        for block in blocks:
            block.lexical[bm] = np.stack([corpus.bm25.scores(t) for t in block.texts])
    return _Prepared(embedding_set, corpora, blocks)


# ----------------------------------------------------------------------------- scoring
_DISC = 1.0 / np.log2(np.arange(2, K + 2))
_IDEAL = np.cumsum(_DISC)


def _ndcg_recall(top: np.ndarray, block: _Block) -> tuple[np.ndarray, np.ndarray]:
    """Per-question NDCG@10 and Recall@10 of ``top`` (B, <=10) local positions (-1: empty)."""
    top = top[:, :K]
    hits = np.where(top >= 0, np.take_along_axis(block.gold, np.maximum(top, 0), 1), False)
    ndcg = (hits @ _DISC[: hits.shape[1]]) / _IDEAL[np.minimum(block.n_gold, K) - 1]
    return ndcg, hits.sum(1) / block.n_gold


def _fused_positions(legs: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """The retriever's weighted RRF (:mod:`fieldrank._retriever.fusion`) of (B, depth) position legs
    (-1 padded) -> (B, K) positions, -1 padded (positions are ids: ties go to the lower one)."""
    per_query = [[leg[b][leg[b] >= 0] for leg in legs] for b in range(legs[0].shape[0])]
    top = np.full((len(per_query), K), -1, dtype=np.int64)
    for b, fused in enumerate(weighted_rrf_batch(per_query, list(weights), K, K0, 0)):
        top[b, : len(fused.ids)] = fused.ids
    return top


def _leg_positions(prep: _Prepared, block: _Block, bm: BM25Params, legs: Sequence[Any]) -> list[np.ndarray]:
    """Each leg's ranking as (B, depth) local positions (-1 padded), run by the retriever's leg plan
    (:class:`fieldrank.hybrid.LegPlan`, the code :meth:`HybridRetriever.search_batch` runs)."""
    corpus: Corpus = prep.corpora[bm]
    config = RetrieverConfig(legs=tuple(legs), k=K, bm25=bm, name="calibration")
    plan = LegPlan(config, K)
    outputs = plan.run(corpus, block.texts, block.Q, len(block.texts), block.rows, 0,
                       lexical_scores=block.lexical[bm])
    out = []
    for j, leg in enumerate(plan.legs):
        top = np.full((len(block.texts), leg.depth), -1, dtype=np.int64)
        for b, per_leg in enumerate(outputs):
            ids = per_leg[j].ids
            top[b, : len(ids)] = ids - block.rows[0]
        out.append(top)
    return out


def _temporal_leg(params: tl.TemporalParams, depth: int) -> TemporalLeg:
    return TemporalLeg(depth=depth, weight=1.0, **params.to_dict())


# ----------------------------------------------------------------------------- calibration
@dataclass
class CalibrationResult:
    """What :func:`calibrate` found.

    config : the winning :class:`fieldrank.config.RetrieverConfig` (named ``default``).
    score : its mean NDCG@10 averaged over the embedding sets.
    per_set : embedding set -> {"ndcg", "recall", "n"} of the winner.
    stage1, stage2 : every candidate as (description, mean NDCG@10, {set: NDCG@10}), best first.
    best_per_set : embedding set -> (description, NDCG@10) of that set's own best stage-1 leg.
    """

    config: Any
    score: float
    per_set: dict[str, dict[str, float]]
    stage1: list[tuple[str, float, dict[str, float]]]
    stage2: list[tuple[str, float, dict[str, float]]]
    best_per_set: dict[str, tuple[str, float]]
    split: str
    embedding_sets: tuple[str, ...]
    space: SearchSpace
    seconds: float

    def header(self, command: str = "") -> str:
        """TOML comment lines recording how the file was made."""
        lines = [
            "# Calibrated by `fieldrank calibrate` (fieldrank.evaluation.calibrate) on "
            f"{_dt.date.today().isoformat()}.",
            f"# split: {self.split}; embedding sets: {', '.join(self.embedding_sets)}.",
            f"# search space: {self.space.describe()}.",
            f"# objective: mean NDCG@10 over the split's questions, averaged over the sets = {self.score:.4f}.",
        ]
        for name, s in self.per_set.items():
            lines.append(f"#   {name}: NDCG@10 {s['ndcg']:.4f}, Recall@10 {s['recall']:.4f} ({int(s['n'])} questions)")
        if command:
            lines.append(f"# command: {command}")
        return "\n".join(lines) + "\n"


def _describe_leg(bm: BM25Params, p: tl.TemporalParams) -> str:
    return (f"bm25 k1={bm.k1} b={bm.b} context={bm.context_window}x{bm.context_weight} alpha={p.alpha} gamma={p.gamma} radius={p.radius} "
            f"tau={p.tau} delta={p.delta}")


def _build_config(bm: BM25Params, params: tl.TemporalParams, depth: int, weights: Sequence[float],
                  extra_legs: Sequence[Leg] = DEFAULT_EXTRA_LEGS, k: int = K) -> RetrieverConfig:
    """The stack: the time-aware leg (weight 1) and each extra leg of positive weight, in order."""
    legs: list[Leg] = [_temporal_leg(params, depth)]
    legs += [dataclasses.replace(leg, weight=w) for leg, w in zip(extra_legs, weights) if w > 0]
    return RetrieverConfig(legs=tuple(legs), k=k, k0=K0, bm25=bm, name="default")


def calibrate(data_dir=None, embedding_sets: Sequence[str] = ("minilm-l6-v2", "mpnet-base-v2"), split: str = "tune",
              space: SearchSpace = DEFAULT_SPACE, log: Optional[Callable[[str], None]] = None) -> CalibrationResult:
    """Fit the stack on ``split`` for ``embedding_sets`` over ``space``; see the module docstring.

    Raises
    ------
    ValueError
        On an unknown split or an empty list of embedding sets.
    """
    from . import locomo

    if split not in locomo.SPLITS:
        msg = f"unknown split {split!r}; valid splits: {', '.join(locomo.SPLITS)}"
        raise ValueError(msg)
    if not embedding_sets:
        msg = "give at least one embedding set"
        raise ValueError(msg)
    say = log or (lambda _m: None)
    t0 = time.time()
    preps = []
    for name in embedding_sets:
        say(f"loading {name} ({split}) and scoring BM25 for {len(space.bm25_params())} parameter sets ...")
        preps.append(_prepare(data_dir, name, split, space.bm25_params()))
    stage1 = _stage1(preps, space, say)
    best_bm, best_params = stage1[0][0]
    best_per_set = {}
    for prep in preps:
        (bm, p), _, per = max(stage1, key=lambda r: r[2][prep.embedding_set])
        best_per_set[prep.embedding_set] = (_describe_leg(bm, p), per[prep.embedding_set])
    stage2 = _stage2(preps, space, best_bm, best_params, say)
    (depth, weights), score, _, detail = stage2[0]
    config = _build_config(best_bm, best_params, depth, weights, space.extra_legs)
    names = [leg.name for leg in space.extra_legs]

    def stack_name(d, w):
        return f"temporal {d} x1 + " + ", ".join(f"{n} x{x}" for n, x in zip(names, w))

    return CalibrationResult(
        config=config, score=score, per_set=detail,
        stage1=[(_describe_leg(*c), s, per) for c, s, per in stage1],
        stage2=[(stack_name(*c), s, per) for c, s, per, _ in stage2],
        best_per_set=best_per_set, split=split, embedding_sets=tuple(embedding_sets), space=space,
        seconds=time.time() - t0)


def _stage1(preps: Sequence[_Prepared], space: SearchSpace, say: Callable[[str], None]) -> list:
    """Every time-aware leg of the space alone: ((bm25, params), mean NDCG@10, {set: NDCG@10}), best first."""
    stage1 = []
    legs = space.legs()
    say(f"stage 1: {len(legs)} time-aware legs x {len(preps)} embedding sets")
    for bm, params in legs:
        per = {}
        for prep in preps:
            total = 0.0
            for block in prep.blocks:
                (top,) = _leg_positions(prep, block, bm, [_temporal_leg(params, K)])
                ndcg, _ = _ndcg_recall(top, block)
                total += ndcg.sum()
            per[prep.embedding_set] = total / prep.n_questions
        stage1.append(((bm, params), float(np.mean(list(per.values()))), per))
    stage1.sort(key=lambda r: -r[1])
    return stage1


def _stage2(preps: Sequence[_Prepared], space: SearchSpace, bm: BM25Params, params: tl.TemporalParams,
            say: Callable[[str], None]) -> list:
    """Every stack of the space around the best leg: ((depth, weights), mean NDCG@10, {set: NDCG@10},
    {set: details}), best first (the simpler stack first on exact ties)."""
    stacks = space.stacks()
    say(f"stage 2: {len(stacks)} stacks around {_describe_leg(bm, params)}")
    # Each leg runs once per block at its deepest; a stack fuses prefixes of their rankings.
    extras = space.extra_legs if any(w > 0 for w in space.extra_weights) else ()
    legs = [_temporal_leg(params, max(space.temporal_depth)), *extras]
    positions = [[_leg_positions(prep, block, bm, legs) for block in prep.blocks] for prep in preps]
    stage2 = []
    for depth, weights in stacks:
        per, detail = {}, {}
        for prep, per_block in zip(preps, positions):
            nd, rc = 0.0, 0.0
            for block, (temporal, *extra) in zip(prep.blocks, per_block):
                rankings, ws = [temporal[:, :depth]], [1.0]
                for leg_positions, w in zip(extra, weights):
                    if w > 0:
                        rankings.append(leg_positions)
                        ws.append(w)
                top = _fused_positions(rankings, ws) if len(ws) > 1 else rankings[0][:, :K]
                ndcg, recall = _ndcg_recall(top, block)
                nd += ndcg.sum()
                rc += recall.sum()
            per[prep.embedding_set] = nd / prep.n_questions
            detail[prep.embedding_set] = {"ndcg": nd / prep.n_questions, "recall": rc / prep.n_questions,
                                          "n": prep.n_questions}
        stage2.append(((depth, weights), float(np.mean(list(per.values()))), per, detail))
    stage2.sort(key=lambda r: (-round(r[1], 12), sum(w > 0 for w in r[0][1]), r[0][0]))
    return stage2


# ----------------------------------------------------------------------------- confidence
def calibrate_confidence(data_dir=None, embedding_sets: Sequence[str] = ("minilm-l6-v2", "mpnet-base-v2"),
                         split: str = "tune", config: Any = None) -> Any:
    """Fit :class:`fieldrank.config.ConfidenceParams` for ``config`` (default: the ``default`` preset)
    on the questions of ``split``, pooled over ``embedding_sets`` (one model serves all of them)."""
    from ..config import resolve_config
    from ..hybrid import HybridRetriever
    from . import _confidence as ec
    from . import locomo

    cfg = resolve_config(config)
    items = []
    for name in embedding_sets:
        data = locomo.load_locomo(data_dir, name, checksums=False)
        rows = _confidence_questions(data, name, split)
        retriever = HybridRetriever([str(t) for t in data.turns.embed_text], data.turn_embeddings, cfg,
                                    timeline=locomo_timeline(data))
        items += ec.collect_retriever(data, retriever, rows)
    return ec.fit(items)


def _confidence_questions(data: Any, name: str, split: str) -> np.ndarray:
    """The scored questions of ``split``, refused (ValueError saying what is missing) when the model
    cannot be fitted from them: none at all, or one conversation (the memory model learns from each
    question searched over another conversation's memory)."""
    if data.n_conversations < 2:
        msg = (f"the confidence model needs at least two conversations (each question is also searched over "
               f"another conversation's memory, which does not hold its answer); {data.root} has "
               f"{data.n_conversations}")
        raise ValueError(msg)
    rows = data.split_question_indices(split)
    if rows.size == 0:
        msg = (f"no scored question (a question with evidence turns) in split {split!r} of {data.root} "
               f"({name}): nothing to fit the confidence model on")
        raise ValueError(msg)
    return rows


_CONFIDENCE_MARK = "# confidence:"


def write_confidence_table(path: Any, params: Any, command: str, note: str = "") -> None:
    """Write ``params`` as the ``[confidence]`` table of the configuration file ``path`` (the table and
    its comment line replaced if present; the rest of the file, its comments included, kept).
    The comment line says when and by which ``command`` it was fitted, or ``note`` when given."""
    import tomli_w

    path = Path(path)
    text = path.read_text(encoding="utf-8")
    kept = []
    skipping = False
    for line in text.splitlines():
        if line.startswith(_CONFIDENCE_MARK):
            continue
        if line.strip() == "[confidence]":
            skipping = True
            continue
        if skipping and line.startswith("["):
            skipping = False
        if not skipping:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    table = tomli_w.dumps({"confidence": params.to_dict()})
    stamp = _dt.date.today().isoformat()
    said = note or f"fitted on {stamp} by `{command}`"
    text = "\n".join(kept) + f"\n\n{_CONFIDENCE_MARK} {said}\n" + table
    path.write_text(text, encoding="utf-8")


# ----------------------------------------------------------------------------- command line
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", default=None, help="LoCoMo data folder (default: ../shared/data/locomo or "
                        "$FIELDRANK_LOCOMO_DIR)")
    parser.add_argument("--embeddings", nargs="+", default=["minilm-l6-v2", "mpnet-base-v2"],
                        help="embedding set(s); one configuration is fitted for all of them (mean NDCG@10)")
    parser.add_argument("--split", default="tune", choices=["tune", "holdout", "all"],
                        help="questions to fit on (default tune; fitting on holdout/all leaks the test set)")
    parser.add_argument("--out", required=True, help="TOML file to write the calibrated configuration to")
    parser.add_argument("--quick", action="store_true", help="a 4-leg / 4-stack space (smoke test)")
    parser.add_argument("--top", type=int, default=10, help="candidates listed per stage (default 10)")
    parser.add_argument("--confidence", action="store_true",
                        help="fit the hit-confidence model of --config instead, and write that config with it")
    parser.add_argument("--config", default=None,
                        help="with --confidence: the configuration (preset name or TOML; default: default)")


def run(args: argparse.Namespace) -> int:
    from .._cli_errors import CommandError
    from . import locomo

    if args.split != "tune":
        print(f"warning: fitting on split {args.split!r}; report only tune-fitted numbers on holdout",
              file=sys.stderr)
    if args.confidence:
        return _run_confidence(args)
    space = QUICK_SPACE if args.quick else DEFAULT_SPACE
    try:
        result = calibrate(args.data, args.embeddings, args.split, space, log=lambda m: print(m, file=sys.stderr))
    except (locomo.DataNotFoundError, locomo.LocomoFormatError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    print(f"stage 1 (time-aware leg alone), top {args.top} of {len(result.stage1)}:")
    sets = result.embedding_sets
    for desc, s, per in result.stage1[: args.top]:
        print(f"  {s:.4f}  " + " ".join(f"{per[n]:.4f}" for n in sets) + f"  {desc}")
    for name, (desc, s) in result.best_per_set.items():
        print(f"  best for {name} alone: {s:.4f}  {desc}")
    print(f"stage 2 (stack), top {args.top} of {len(result.stage2)}:")
    for desc, s, per in result.stage2[: args.top]:
        print(f"  {s:.4f}  " + " ".join(f"{per[n]:.4f}" for n in sets) + f"  {desc}")
    command = "fieldrank calibrate " + " ".join(
        [f"--embeddings {' '.join(sets)}", f"--split {args.split}", f"--out {args.out}"]
        + (["--quick"] if args.quick else []))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(result.header(command) + "\n" + result.config.to_toml(), encoding="utf-8")
    from ..config import default_confidence

    # Every configuration needs a confidence model: the package's, said to be carried over until refitted.
    refit = f"fieldrank calibrate --confidence --config {out} --out {out}"
    write_confidence_table(out, default_confidence(), command,
                           note=f"carried over from the package (fitted for its default); refit: `{refit}`")
    print(f"wrote {out} (score {result.score:.4f}; {result.seconds:.0f}s); refit its confidence model: {refit}")
    return 0


def _run_confidence(args: argparse.Namespace) -> int:
    from .._cli_errors import CommandError
    from ..config import RetrieverConfig, resolve_config
    from . import locomo

    try:
        config = resolve_config(args.config)
        params = calibrate_confidence(args.data, args.embeddings, args.split, config)
    except (locomo.DataNotFoundError, locomo.LocomoFormatError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:  # the same configuration there already (its calibration comments): only its table is replaced
        bare = config.replace(confidence=None)
        same = out.is_file() and RetrieverConfig.load_toml(out).replace(confidence=None) == bare
    except (ValueError, TypeError):
        same = False
    if not same:
        out.write_text(config.replace(confidence=None).to_toml(), encoding="utf-8")
    command = "fieldrank calibrate --confidence " + " ".join(
        [f"--embeddings {' '.join(args.embeddings)}", f"--split {args.split}", f"--out {args.out}"]
        + ([f"--config {args.config}"] if args.config else []))
    write_confidence_table(out, params, command)
    print(f"wrote {out}: {params}")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m fieldrank.evaluation.calibrate``: the same as ``fieldrank calibrate``."""
    parser = argparse.ArgumentParser(prog="fieldrank calibrate", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


#: ``fieldrank calibrate``: the arguments :mod:`fieldrank.cli` passes to ``register_subcommand``.
CLI_SUBCOMMAND: dict[str, Any] = {
    "name": "calibrate",
    "help": "fit the default stack on a LoCoMo split and write a config",
    "add_arguments": add_arguments,
    "run": run,
    "description": "Fit leg parameters, weights and depths on one LoCoMo split "
                   "(tune by default) and write a TOML configuration.",
}


if __name__ == "__main__":
    sys.exit(main())
