"""Run retrieval methods over LoCoMo and score every question (docs/spec.md §9).

The harness is built from three pieces:

- a :class:`Corpus` (the turn embeddings and texts of one loaded embedding set, plus a
  lazily built BM25 index over all turns);
- :class:`QueryBatch` es: all questions of one conversation of a split, with that
  conversation's turn rows as the ``subset`` every method must rank within;
- *methods*: anything :func:`as_method` accepts. A method is called once per batch and
  returns one ranking (absolute turn rows, best first) per question.

:func:`evaluate` runs a ``{name: method}`` mapping over a split, **asserts** the
protocol rules on every ranking (at most ``k`` ids — equal k —, no repeated id, nothing
outside the question's own conversation), times the search, and scores every question
with NDCG@k, Recall@k, NDCG@5 and hit@k (:mod:`~fieldrank.evaluation.metrics`).
Adding a method is one line::

    from fieldrank.config import CFSRLeg, CosineLeg, BM25Leg, RetrieverConfig
    methods = preset_methods()
    methods["mine"] = RetrieverConfig(legs=(CosineLeg(), BM25Leg(), CFSRLeg(w=0.8, weight=2.0)))
    run = evaluate(methods, data, "holdout")

A method may be

- a ``fieldrank.config.RetrieverConfig`` (the usual case: every shipped preset is one),
  run through a :class:`fieldrank.hybrid.HybridRetriever` over the corpus, built once
  per config and sharing the corpus' BM25 index;
- a preset name (str) of ``fieldrank.config``;
- an object with ``search_batch(texts, vectors, k, subset=..., n_threads=...)`` (a
  ``HybridRetriever`` built by the caller over the same corpus rows);
- a callable ``method(corpus, batch) -> sequence of 1-D int arrays`` (anything else).

Anything fitted (:func:`fit_grid`) is fitted on the ``"tune"`` split only; the code
checks that the fitting questions are disjoint from the ``"holdout"`` questions.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Optional, Union

import numpy as np

from .. import config as fr_config
from ..bm25 import DEFAULT_PARAMS as DEFAULT_BM25_PARAMS
from ..bm25 import BM25Index
from ..hybrid import HybridRetriever
from . import locomo, metrics

__all__ = [
    "BASELINE_METHODS",
    "DEFAULT_K",
    "FITTED_PRESETS",
    "FIT_SPLIT",
    "HELD_OUT_SPLIT",
    "MMR_MU_GRID",
    "SHALLOW_K",
    "ConversationLeakError",
    "Corpus",
    "EqualKError",
    "EvaluationRun",
    "FitResult",
    "HarnessCheckError",
    "MethodLike",
    "QueryBatch",
    "as_method",
    "assert_fit_rows_held_out",
    "check_batch_rankings",
    "cosine_method",
    "deduplicate",
    "describe_method",
    "evaluate",
    "fit_grid",
    "fit_mmr_mu",
    "iter_batches",
    "metric_names",
    "mmr_method",
    "preset_methods",
    "ring_method",
    "score_rankings",
]

# ------------------------------------------------------------------------ constants
DEFAULT_K: Final[int] = metrics.DEFAULT_K
"""Final depth every method returns at most (equal k); NDCG@k and Recall@k use it."""

SHALLOW_K: Final[int] = 5
"""Cut-off of the early-precision figure (NDCG@5)."""

FIT_SPLIT: Final[str] = "tune"
"""The only split anything is fitted on."""

HELD_OUT_SPLIT: Final[str] = "holdout"

MMR_MU_GRID: Final[tuple[float, ...]] = (0.3, 0.5, 0.7, 0.9)
"""Grid for MMR's μ, fitted on tune by the NDCG@k of ``rrf_mmr``."""

BASELINE_METHODS: Final[tuple[str, ...]] = ("cosine", "rrf2")
"""Every method is compared (paired) against these two."""

ID_DTYPE: Final[type] = np.int64
BATCH_NDIM: Final[int] = 2
"""A ``(B, m)`` id array: one row per query."""
IDS_SCORES_LENGTH: Final[int] = 2
"""An ``(ids, scores)`` pair, as :meth:`fieldrank.bm25.BM25Index.top_batch` returns."""


def metric_names(k: int = DEFAULT_K, shallow_k: int = SHALLOW_K) -> tuple[str, ...]:
    """Names of the per-question scores :func:`score_rankings` returns, in report order.

    Returns
    -------
    tuple of str
        ``("ndcg@{k}", "recall@{k}", "ndcg@{shallow_k}", "hit@{k}")``.
    """
    return (f"ndcg@{k}", f"recall@{k}", f"ndcg@{shallow_k}", f"hit@{k}")


# ----------------------------------------------------------------------- exceptions
class HarnessCheckError(AssertionError):
    """A protocol rule the harness asserts was broken (raised explicitly: survives ``-O``)."""


class EqualKError(HarnessCheckError):
    """A method returned more than ``k`` ids for a question (docs/spec.md §9, equal k)."""


class ConversationLeakError(HarnessCheckError):
    """A method returned a turn outside the question's own conversation, or repeated one."""


# ------------------------------------------------------------------- corpus, batches
@dataclass
class Corpus:
    """The rows every method ranks: one loaded embedding set of LoCoMo.

    Parameters
    ----------
    data : LocomoData
        Loaded with an embedding set.

    Attributes
    ----------
    embeddings : numpy.ndarray
        float32 ``(n_turns, dim)``, C-contiguous, L2-normalised rows (``turns.npy``).
    texts : list of str
        ``embed_text`` of every turn (what BM25 indexes), aligned with ``embeddings``.
    """

    data: locomo.LocomoData
    embeddings: np.ndarray = field(init=False)
    texts: list[str] = field(init=False)
    _bm25: Optional[BM25Index] = field(init=False, default=None, repr=False)
    _retrievers: dict[Any, HybridRetriever] = field(init=False, default_factory=dict, repr=False)
    _base: Optional[HybridRetriever] = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        if self.data.turn_embeddings is None or self.data.question_embeddings is None:
            msg = "Corpus needs LoCoMo data loaded with an embedding set (embedding_set=None given)"
            raise ValueError(msg)
        self.embeddings = np.ascontiguousarray(self.data.turn_embeddings, dtype=np.float32)
        self.texts = [str(text) for text in self.data.turns.embed_text]

    def bm25(self) -> BM25Index:
        """The BM25 index over every turn's ``embed_text`` (built on first use).

        Returns
        -------
        fieldrank.bm25.BM25Index
            Default parameters (docs/spec.md §7); restrict it to a conversation with ``subset``.
        """
        if self._bm25 is None:
            self._bm25 = BM25Index(self.texts)
        return self._bm25

    def retriever(self, config: fr_config.RetrieverConfig) -> HybridRetriever:
        """A ``HybridRetriever`` over the corpus for ``config`` (built once per config).

        All retrievers share the corpus' embeddings, its LoCoMo timeline (session keys and
        dates of the turns, for ``temporal`` legs; :func:`fieldrank.evaluation.locomo.locomo_timeline`)
        and, when their BM25 parameters are the defaults, its BM25 index.
        """
        key = _config_key(config)
        if key not in self._retrievers:
            if self._base is None:
                shared = self.bm25() if config.bm25 == DEFAULT_BM25_PARAMS else None
                self._base = HybridRetriever(
                    self.texts, self.embeddings, config, bm25_index=shared,
                    timeline=locomo.locomo_timeline(self.data),
                )
            self._retrievers[key] = self._base.with_config(config)
        return self._retrievers[key]


def _config_key(config: Any) -> Any:
    try:
        hash(config)
    except TypeError:
        return repr(config)
    return config


@dataclass(frozen=True)
class QueryBatch:
    """All questions of one conversation in a split, ranked against that conversation.

    Attributes
    ----------
    conv_index : int
        The conversation.
    question_rows : numpy.ndarray
        int64 ``(B,)`` rows into the questions (and ``questions.npy``), ascending.
    texts : tuple of str
        The question strings (BM25 input).
    vectors : numpy.ndarray
        float32 ``(B, dim)``, C-contiguous question embeddings.
    subset : numpy.ndarray
        int64 ascending turn rows of the conversation; the only rows a method may return.
    k : int
        How many ids a method may return per question at most.
    n_threads : int
        Threads for the batch operators (``<= 0``: all cores).
    """

    conv_index: int
    question_rows: np.ndarray
    texts: tuple[str, ...]
    vectors: np.ndarray
    subset: np.ndarray
    k: int
    n_threads: int

    def __len__(self) -> int:
        return len(self.question_rows)


def iter_batches(
    corpus: Corpus, rows: np.ndarray, k: int = DEFAULT_K, n_threads: int = 0
) -> Iterator[QueryBatch]:
    """Group question rows by conversation into :class:`QueryBatch` es.

    Parameters
    ----------
    corpus : Corpus
    rows : numpy.ndarray
        Question rows (e.g. :func:`~fieldrank.evaluation.locomo.split_question_indices`).
    k : int, default 10
    n_threads : int, default 0

    Yields
    ------
    QueryBatch
        One per conversation that has questions in ``rows``, in conversation order.
    """
    data = corpus.data
    rows = np.asarray(rows, dtype=ID_DTYPE)
    conversations = data.questions.conv_index[rows]
    for conversation in np.unique(conversations).tolist():
        batch_rows = np.sort(rows[conversations == conversation])
        start, stop = data.conv_ranges[conversation]
        yield QueryBatch(
            conv_index=int(conversation),
            question_rows=batch_rows,
            texts=tuple(str(text) for text in data.questions.question[batch_rows]),
            vectors=np.ascontiguousarray(data.question_embeddings[batch_rows], dtype=np.float32),
            subset=np.arange(start, stop, dtype=ID_DTYPE),
            k=k,
            n_threads=n_threads,
        )


# ------------------------------------------------------------------------ methods
Rankings = list[np.ndarray]
MethodFn = Callable[[Corpus, QueryBatch], Sequence[Any]]
MethodLike = Union[fr_config.RetrieverConfig, str, HybridRetriever, MethodFn]
"""What :func:`evaluate` accepts as a method (see :func:`as_method`)."""


def _rows(ids: Any) -> Rankings:
    """Turn a batch result into a list of 1-D int64 arrays (one per query)."""
    if hasattr(ids, "ids"):
        ids = ids.ids
    if isinstance(ids, np.ndarray) and ids.ndim == BATCH_NDIM:
        return [np.asarray(row, dtype=ID_DTYPE) for row in ids]
    out: Rankings = []
    for item in ids:
        if hasattr(item, "ids"):
            item = item.ids
        elif isinstance(item, tuple) and len(item) == IDS_SCORES_LENGTH:
            item = item[0]
        out.append(np.asarray(item, dtype=ID_DTYPE))
    return out


FITTED_PRESETS: Final[tuple[str, ...]] = ("rrf_mmr", "rrf_ring")
"""Shipped presets whose MMR μ / Ring α and laps are replaced by the values fitted on tune.

``default`` is left as shipped: a calibrated default carries its own parameters."""

SINGLE_LEG_PRESETS: Final[tuple[str, ...]] = ("cfsr", "cfs")
"""Shipped presets that are one operator alone (reported after the stacks)."""

MMR_ALONE: Final[str] = "mmr"
RING_ALONE: Final[str] = "ring"
ANONYMOUS: Final[str] = "_"
"""Name given to configs when comparing them apart from their names."""


def _with_fitted(
    config: fr_config.RetrieverConfig, *, mmr_mu: Optional[float] = None, ring_alpha: Optional[float] = None,
    ring_laps: Optional[int] = None, ring_seed: Optional[int] = None,
) -> fr_config.RetrieverConfig:
    """``config`` with the fitted values put into its MMR and Ring legs (others unchanged)."""
    changes = {
        fr_config.MMRLeg: {"mu": mmr_mu},
        fr_config.RingLeg: {"alpha": ring_alpha, "laps": ring_laps, "seed": ring_seed},
    }
    legs = []
    for leg in config.legs:
        update = {name: value for name, value in changes.get(type(leg), {}).items() if value is not None}
        legs.append(dataclasses.replace(leg, **update) if update else leg)
    return config.replace(legs=tuple(legs))


def ring_method(
    alpha: Optional[float] = None, laps: Optional[int] = None, seed: int = 0,
    *, ablation: bool = False, k: int = DEFAULT_K,
) -> fr_config.RetrieverConfig:
    """Ring alone (docs/spec.md §5) at depth ``k`` as a ``RetrieverConfig``; None takes the default."""
    params: dict[str, Any] = {"depth": k, "seed": seed, "ablation": ablation}
    if alpha is not None:
        params["alpha"] = alpha
    if laps is not None:
        params["laps"] = laps
    name = "ring_ablation" if ablation else RING_ALONE
    return fr_config.RetrieverConfig(legs=(fr_config.RingLeg(**params),), k=k, name=name)


def mmr_method(mu: Optional[float] = None, *, k: int = DEFAULT_K) -> fr_config.RetrieverConfig:
    """MMR alone (docs/spec.md §4) at depth ``k`` as a ``RetrieverConfig``; None takes the default."""
    leg = fr_config.MMRLeg(depth=k) if mu is None else fr_config.MMRLeg(depth=k, mu=mu)
    return fr_config.RetrieverConfig(legs=(leg,), k=k, name=MMR_ALONE)


def cosine_method() -> fr_config.RetrieverConfig:
    """The shipped ``cosine`` preset (the dense baseline)."""
    return fr_config.preset("cosine")


def preset_methods(
    *, mmr_mu: Optional[float] = None, ring_alpha: Optional[float] = None,
    ring_laps: Optional[int] = None, ring_seed: int = 0,
) -> dict[str, Any]:
    """The evaluated methods: every shipped preset, then CFS-R, CFS, MMR and Ring alone.

    The presets are ``fieldrank.config.preset(name)`` for every name of
    ``fieldrank.config.PRESET_NAMES``, exactly as shipped, except that the fitted MMR μ
    and Ring α/laps replace the package defaults in :data:`FITTED_PRESETS`. MMR and Ring
    alone are one-leg configurations with the same fitted values.

    Parameters
    ----------
    mmr_mu : float, optional
        Fitted μ (None: package default).
    ring_alpha, ring_laps : optional
        Fitted Ring parameters (None: package defaults).
    ring_seed : int, default 0
        Ring's tie-break seed.

    Returns
    -------
    dict of str to RetrieverConfig
        In report order: the stacks and baselines, then the single operators.
    """
    fitted = {"mmr_mu": mmr_mu, "ring_alpha": ring_alpha, "ring_laps": ring_laps, "ring_seed": ring_seed}
    stacks: dict[str, Any] = {}
    singles: dict[str, Any] = {}
    for name in fr_config.PRESET_NAMES:
        config = fr_config.preset(name)
        if name in FITTED_PRESETS:
            config = _with_fitted(config, **fitted)
        (singles if name in SINGLE_LEG_PRESETS else stacks)[name] = config
    singles[MMR_ALONE] = mmr_method(mmr_mu)
    singles[RING_ALONE] = ring_method(ring_alpha, ring_laps, ring_seed)
    return {**stacks, **singles}


def deduplicate(methods: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Drop configurations identical (apart from their name) to an earlier one.

    Returns
    -------
    kept : dict
        The methods to run.
    aliases : dict of str to str
        Dropped name → the kept name it equals.
    """
    kept: dict[str, Any] = {}
    aliases: dict[str, str] = {}
    seen: dict[Any, str] = {}
    for name, method in methods.items():
        key = _unnamed(method)
        if key is not None and key in seen:
            aliases[name] = seen[key]
            continue
        if key is not None:
            seen[key] = name
        kept[name] = method
    return kept, aliases


def _unnamed(method: Any) -> Optional[fr_config.RetrieverConfig]:
    """A config with its name blanked (its identity), or None for other methods."""
    if not isinstance(method, fr_config.RetrieverConfig):
        return None
    return method.replace(name=ANONYMOUS)


def as_method(method: MethodLike) -> MethodFn:
    """Normalise anything accepted as a method to ``method(corpus, batch) -> rankings``.

    Parameters
    ----------
    method : RetrieverConfig, str, retriever or callable
        See the module docstring.

    Returns
    -------
    callable
    """
    if isinstance(method, str):
        return _RetrieverMethod(fr_config.preset(method), owns=True)
    if isinstance(method, fr_config.RetrieverConfig):
        return _RetrieverMethod(method, owns=True)
    if hasattr(method, "search_batch"):
        return _RetrieverMethod(method, owns=False)
    if callable(method):
        return method
    msg = (
        "a method must be a RetrieverConfig, a preset name, an object with search_batch or a "
        f"callable(corpus, batch), got {type(method).__name__}"
    )
    raise TypeError(msg)


@dataclass(frozen=True)
class _RetrieverMethod:
    """Adapter: a ``HybridRetriever`` (or a config to build one over the corpus) as a method."""

    target: Any
    owns: bool

    def __call__(self, corpus: Corpus, batch: QueryBatch) -> Rankings:
        retriever = corpus.retriever(self.target) if self.owns else self.target
        result = retriever.search_batch(
            list(batch.texts), batch.vectors, batch.k, subset=batch.subset, n_threads=batch.n_threads
        )
        return _rows(result)


def describe_method(method: MethodLike) -> Any:
    """A JSON-serialisable description of a method (a config's ``to_dict``)."""
    if isinstance(method, str):
        return fr_config.preset(method).to_dict()
    if isinstance(method, _RetrieverMethod):
        return describe_method(method.target)
    if isinstance(method, fr_config.RetrieverConfig):
        return method.to_dict()
    if isinstance(method, HybridRetriever):
        return method.config.to_dict()
    return {"type": type(method).__name__, "repr": repr(method)}


# --------------------------------------------------------------------- checking
def check_batch_rankings(name: str, batch: QueryBatch, rankings: Sequence[np.ndarray]) -> None:
    """Assert the protocol rules on one method's rankings for one batch.

    Raises
    ------
    EqualKError
        A ranking holds more than ``batch.k`` ids.
    ConversationLeakError
        The method returned the wrong number of rankings, repeated an id, or returned a
        turn outside the batch's conversation.
    """
    if len(rankings) != len(batch):
        msg = (
            f"method {name!r}, conversation {batch.conv_index}: returned {len(rankings)} "
            f"rankings for {len(batch)} questions"
        )
        raise ConversationLeakError(msg)
    start, stop = int(batch.subset[0]), int(batch.subset[-1]) + 1
    for row, ranking in zip(batch.question_rows.tolist(), rankings):
        if ranking.ndim != 1:
            msg = f"method {name!r}, question row {row}: ranking has shape {ranking.shape}"
            raise ConversationLeakError(msg)
        if len(ranking) > batch.k:
            msg = (
                f"equal k violated: method {name!r} returned {len(ranking)} ids for question "
                f"row {row} (k = {batch.k})"
            )
            raise EqualKError(msg)
        if ranking.size and (ranking.min() < start or ranking.max() >= stop):
            msg = (
                f"method {name!r}, question row {row} (conversation {batch.conv_index}): "
                f"returned turn rows outside the conversation's rows {start}-{stop - 1}: "
                f"{ranking[(ranking < start) | (ranking >= stop)][:5].tolist()}"
            )
            raise ConversationLeakError(msg)
        if np.unique(ranking).size != ranking.size:
            msg = f"method {name!r}, question row {row}: ranking repeats an id: {ranking.tolist()}"
            raise ConversationLeakError(msg)


# --------------------------------------------------------------------- evaluation
def score_rankings(
    rankings: Sequence[np.ndarray],
    gold: Sequence[np.ndarray],
    k: int = DEFAULT_K,
    shallow_k: int = SHALLOW_K,
) -> dict[str, np.ndarray]:
    """Per-question NDCG@k, Recall@k, NDCG@shallow_k and hit@k.

    Returns
    -------
    dict of str to numpy.ndarray
        Keyed by :func:`metric_names`, float64 ``(n_questions,)`` each.
    """
    deep = metrics.per_question_all(rankings, gold, k)
    shallow = metrics.per_question(rankings, gold, shallow_k, "ndcg")
    ndcg, recall, shallow_ndcg, hit = metric_names(k, shallow_k)
    return {ndcg: deep["ndcg"], recall: deep["recall"], shallow_ndcg: shallow, hit: deep["hit"]}


@dataclass
class EvaluationRun:
    """Rankings and per-question scores of several methods on one split.

    Attributes
    ----------
    split : str
    k, shallow_k : int
    question_rows : numpy.ndarray
        int64 ``(n,)`` ascending question rows; every per-question array aligns with it.
    categories : numpy.ndarray
        int64 ``(n,)`` LoCoMo category of each question.
    rankings : dict of str to list of numpy.ndarray
        Per method, one ranking (absolute turn rows, best first) per question.
    scores : dict of str to dict of str to numpy.ndarray
        Per method, per metric name (:func:`metric_names`), float64 ``(n,)``.
    search_seconds : dict of str to float
        Wall time of each method's batch calls (checks and scoring excluded).
    search_cpu_seconds : dict of str to float
        Process CPU time (all threads) of the same calls; less sensitive than wall time
        to other load on the machine.
    descriptions : dict of str to object
        :func:`describe_method` of each method.
    n_threads : int
    """

    split: str
    k: int
    shallow_k: int
    question_rows: np.ndarray
    categories: np.ndarray
    rankings: dict[str, Rankings]
    scores: dict[str, dict[str, np.ndarray]]
    search_seconds: dict[str, float]
    search_cpu_seconds: dict[str, float]
    descriptions: dict[str, Any]
    n_threads: int

    @property
    def methods(self) -> tuple[str, ...]:
        """Method names in evaluation order."""
        return tuple(self.rankings)

    @property
    def metric_names(self) -> tuple[str, ...]:
        """Metric names in report order."""
        return metric_names(self.k, self.shallow_k)

    def matrix(self, metric: str, methods: Iterable[str] | None = None) -> np.ndarray:
        """Per-question scores as a float64 ``(n, m)`` matrix, one column per method."""
        names = tuple(self.methods if methods is None else methods)
        return np.column_stack([self.scores[name][metric] for name in names])

    def mean(self, method: str, metric: str) -> float:
        """Mean of one method's per-question metric."""
        return float(self.scores[method][metric].mean())

    def restrict(self, rows: np.ndarray, split: str) -> EvaluationRun:
        """The same run on a subset of its questions (no search is repeated).

        Parameters
        ----------
        rows : numpy.ndarray
            Question rows, all present in :attr:`question_rows`.
        split : str
            Name recorded for the subset (e.g. ``"holdout"``).

        Raises
        ------
        ValueError
            If a row is not part of this run.
        """
        rows = np.unique(np.asarray(rows, dtype=ID_DTYPE))
        missing = np.setdiff1d(rows, self.question_rows)
        if missing.size:
            msg = f"{missing.size} requested question rows are not in this run (e.g. {missing[:5].tolist()})"
            raise ValueError(msg)
        where = np.searchsorted(self.question_rows, rows)
        return dataclasses.replace(
            self,
            split=split,
            question_rows=rows,
            categories=self.categories[where],
            rankings={name: [rankings[i] for i in where.tolist()] for name, rankings in self.rankings.items()},
            scores={
                name: {metric: values[where] for metric, values in per_metric.items()}
                for name, per_metric in self.scores.items()
            },
        )


def _split_rows(data: locomo.LocomoData, split: str | np.ndarray) -> tuple[str, np.ndarray]:
    if isinstance(split, str):
        return split, data.split_question_indices(split)
    rows = np.unique(np.asarray(split, dtype=ID_DTYPE))
    if not data.scored_mask[rows].all():
        msg = "explicit question rows must all be scored (have at least one gold turn)"
        raise ValueError(msg)
    return "custom", rows


def evaluate(
    methods: Mapping[str, MethodLike],
    data: locomo.LocomoData | Corpus,
    split: str | np.ndarray = "all",
    *,
    k: int = DEFAULT_K,
    shallow_k: int = SHALLOW_K,
    n_threads: int = 0,
    progress: bool | Any = False,
) -> EvaluationRun:
    """Run every method on every scored question of a split and score it.

    Each question is ranked only against its own conversation's turns (one
    :class:`QueryBatch` per conversation, ``subset`` = that conversation's rows).

    Parameters
    ----------
    methods : mapping of str to method
        Anything :func:`as_method` accepts; adding a method is adding one entry.
    data : LocomoData or Corpus
        Loaded with an embedding set. Passing a :class:`Corpus` reuses its BM25 index.
    split : {"tune", "holdout", "all"} or array of question rows, default "all"
    k : int, default 10
        Equal k: every method may return at most ``k`` ids per question (asserted).
    shallow_k : int, default 5
    n_threads : int, default 0
        Threads of the batch operators (``<= 0``: all cores).
    progress : bool or tqdm, default False
        Show a tqdm bar (or advance the given one) per method and conversation.

    Returns
    -------
    EvaluationRun

    Raises
    ------
    EqualKError, ConversationLeakError
        A method broke a protocol rule (see :func:`check_batch_rankings`).
    """
    corpus = data if isinstance(data, Corpus) else Corpus(data)
    locomo.assert_splits_disjoint(corpus.data)
    split_name, rows = _split_rows(corpus.data, split)
    batches = list(iter_batches(corpus, rows, k, n_threads))
    position = {row: i for i, row in enumerate(rows.tolist())}
    gold = [corpus.data.questions.gold_positions_absolute[row] for row in rows.tolist()]

    bar, owns_bar = _progress_bar(progress, len(methods) * len(batches), f"search ({split_name})")
    rankings: dict[str, Rankings] = {}
    scores: dict[str, dict[str, np.ndarray]] = {}
    seconds: dict[str, float] = {}
    cpu_seconds: dict[str, float] = {}
    descriptions: dict[str, Any] = {}
    try:
        for name, method_like in methods.items():
            method = as_method(method_like)
            ordered: list[np.ndarray | None] = [None] * len(rows)
            elapsed = cpu = 0.0
            for batch in batches:
                if bar is not None:
                    bar.set_postfix_str(f"{name} conv {batch.conv_index}", refresh=False)
                started, started_cpu = time.perf_counter(), time.process_time()
                result = _rows(method(corpus, batch))
                elapsed += time.perf_counter() - started
                cpu += time.process_time() - started_cpu
                check_batch_rankings(name, batch, result)
                for row, ranking in zip(batch.question_rows.tolist(), result):
                    ordered[position[row]] = ranking
                if bar is not None:
                    bar.update(1)
            method_rankings = [r for r in ordered if r is not None]
            rankings[name] = method_rankings
            scores[name] = score_rankings(method_rankings, gold, k, shallow_k)
            seconds[name] = elapsed
            cpu_seconds[name] = cpu
            descriptions[name] = describe_method(method_like)
    finally:
        if owns_bar and bar is not None:
            bar.close()
    return EvaluationRun(
        split=split_name,
        k=k,
        shallow_k=shallow_k,
        question_rows=rows,
        categories=corpus.data.questions.category[rows].copy(),
        rankings=rankings,
        scores=scores,
        search_seconds=seconds,
        search_cpu_seconds=cpu_seconds,
        descriptions=descriptions,
        n_threads=n_threads,
    )


def _progress_bar(progress: bool | Any, total: int, description: str) -> tuple[Any, bool]:
    """``(bar, owned)``: a new tqdm bar when ``progress is True``, the given one, or None."""
    if progress is False or progress is None:
        return None, False
    if progress is True:
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=description, unit="batch", leave=False), True
    progress.reset(total=total)
    progress.set_description_str(description, refresh=False)
    return progress, False


# ------------------------------------------------------------------------ fitting
@dataclass
class FitResult:
    """Outcome of a grid fit on the tune split.

    Attributes
    ----------
    best : dict
        The chosen parameter values.
    objective : str
        ``"<method> <metric>"`` that was maximised.
    grid : list of dict
        Every grid point with its ``score`` (mean of the metric on tune), in grid order,
        and ``by_subset`` (the metric on each reporting subset of tune).
    reference : dict or None
        The same figures for the reference method (e.g. cosine), when one was given.
    split : str
        Always ``"tune"``.
    n_questions : int
    seconds : float
        Search time of the whole grid.
    """

    best: dict[str, Any]
    objective: str
    grid: list[dict[str, Any]]
    split: str
    n_questions: int
    seconds: float
    cpu_seconds: float
    reference: Optional[dict[str, Any]] = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return dataclasses.asdict(self)


def assert_fit_rows_held_out(data: locomo.LocomoData, rows: np.ndarray) -> None:
    """Check that fitting rows are tune rows and share nothing with the holdout split.

    Raises
    ------
    HarnessCheckError
        If any row lies outside tune or inside holdout.
    """
    locomo.assert_splits_disjoint(data)
    tune = data.split_question_indices(FIT_SPLIT, scored_only=False)
    held_out = data.split_question_indices(HELD_OUT_SPLIT, scored_only=False)
    outside = np.setdiff1d(rows, tune)
    leaked = np.intersect1d(rows, held_out)
    if outside.size or leaked.size:
        msg = (
            f"fitting must use {FIT_SPLIT!r} questions only: {outside.size} rows outside "
            f"{FIT_SPLIT!r}, {leaked.size} rows in {HELD_OUT_SPLIT!r}"
        )
        raise HarnessCheckError(msg)


def fit_grid(
    build: Callable[..., MethodLike],
    grid: Sequence[Mapping[str, Any]],
    data: locomo.LocomoData | Corpus,
    *,
    objective: str | None = None,
    k: int = DEFAULT_K,
    n_threads: int = 0,
    progress: bool | Any = False,
    label: str = "method",
    split: str = FIT_SPLIT,
    reference: Optional[tuple[str, MethodLike]] = None,
) -> FitResult:
    """Pick the grid point whose method scores best on the tune split.

    Parameters
    ----------
    build : callable
        ``build(**point)`` returns a method (see :func:`as_method`).
    grid : sequence of mapping
        Parameter points, tried in order; ties keep the earlier point.
    data : LocomoData or Corpus
    objective : str, optional
        Metric name to maximise (default ``"ndcg@{k}"``).
    k, n_threads, progress
        As :func:`evaluate`.
    label : str
        Name recorded in :attr:`FitResult.objective`.
    split : str, default "tune"
        Must be ``"tune"``; any other value raises, so nothing is fitted on reported data.
    reference : (str, method), optional
        A named method scored on the same questions for comparison (not a candidate).

    Returns
    -------
    FitResult

    Raises
    ------
    HarnessCheckError
        ``split`` is not tune, or the tune rows overlap holdout.
    """
    if split != FIT_SPLIT:
        msg = f"parameters are fitted on the {FIT_SPLIT!r} split only, got split={split!r}"
        raise HarnessCheckError(msg)
    if not grid:
        msg = "fit_grid needs at least one grid point"
        raise ValueError(msg)
    corpus = data if isinstance(data, Corpus) else Corpus(data)
    rows = corpus.data.split_question_indices(FIT_SPLIT)
    assert_fit_rows_held_out(corpus.data, rows)
    metric = objective or metric_names(k)[0]
    methods = {f"{label}[{i}]": build(**point) for i, point in enumerate(grid)}
    if reference is not None:
        methods[reference[0]] = reference[1]
    run = evaluate(methods, corpus, rows, k=k, n_threads=n_threads, progress=progress)
    subsets = {
        name: np.searchsorted(run.question_rows, subset_rows)
        for name, subset_rows in locomo.category_subsets(corpus.data, run.question_rows).items()
        if subset_rows.size
    }

    def figures(name: str) -> dict[str, Any]:
        values = run.scores[name][metric]
        return {
            "score": float(values.mean()),
            "by_subset": {subset: float(values[where].mean()) for subset, where in subsets.items()},
        }

    scored = [{**dict(point), **figures(name)} for name, point in zip(methods, grid)]
    best_index = int(np.argmax([entry["score"] for entry in scored]))
    return FitResult(
        best=dict(grid[best_index]),
        objective=f"{label} {metric}",
        grid=scored,
        split=FIT_SPLIT,
        n_questions=len(rows),
        seconds=float(sum(run.search_seconds.values())),
        cpu_seconds=float(sum(run.search_cpu_seconds.values())),
        reference=None if reference is None else {"method": reference[0], **figures(reference[0])},
    )


def fit_mmr_mu(
    data: locomo.LocomoData | Corpus,
    grid: Sequence[float] = MMR_MU_GRID,
    **kwargs: Any,
) -> FitResult:
    """Fit MMR's μ on tune by the NDCG@k of the ``rrf_mmr`` stack (cosine, BM25, MMR).

    Parameters
    ----------
    data : LocomoData or Corpus
    grid : sequence of float, default (0.3, 0.5, 0.7, 0.9)
    **kwargs
        Passed to :func:`fit_grid`.

    Returns
    -------
    FitResult
        ``best == {"mu": ...}``.
    """

    def build(mu: float) -> MethodLike:
        return _with_fitted(fr_config.preset("rrf_mmr"), mmr_mu=mu)

    return fit_grid(build, [{"mu": mu} for mu in grid], data, label="rrf_mmr", **kwargs)
