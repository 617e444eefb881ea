"""The hybrid retriever: the weighted RRF (docs/spec.md §6) of a configuration's legs.

A configuration is any tuple of legs (cosine, BM25, CFS-R, CFS, MMR, Ring, temporal; see
:mod:`fieldrank.config`); the ``default`` preset is the calibrated configuration shipped with the
package (at present a single temporal leg: BM25 + cosine blend with session and time priors),
and the ``rrf_*`` presets are the write-ups' stacks of cosine, BM25 (docs/spec.md §7) and a
reranking leg. :class:`HybridRetriever` holds a corpus (texts and an (N, d) float32 embedding matrix with
L2-normalised rows) and a :class:`~fieldrank.config.RetrieverConfig`, and answers a query
(its text and its embedding) with the fused top-k and, for every hit, where it came from:
its rank, raw score and RRF contribution in every leg and, for CFS-R, its coefficient.

How a query is computed
-----------------------
This module is the facade; the retriever itself is the private package ``fieldrank._retriever``
(docs/design.md, "The retriever"): the corpus (checked once), a :class:`LegPlan` per ``k`` (one
leg class per kind, :data:`LEG_REGISTRY`), the ``QueryContext`` that is all a leg reads, the one
weighted-RRF rule and the :class:`SearchResult`. :meth:`HybridRetriever.search` runs the plan for a
group of one query, :meth:`~HybridRetriever.search_batch` for each group of queries sharing a
subset, and :func:`fieldrank.evaluation.calibrate.calibrate` runs the same plan. Results of a batch
are identical to one-by-one searches (tested).

*Union pools* (``pool="union"`` on a CFS-R or CFS leg) rerank the sorted union of the dense
top-``p`` and the BM25 top-``union_p`` as a caller pool.

*Subsets* restrict a query to some document ids (one conversation, one tenant) without
rebuilding anything: every leg reads only the subset's rows, so nothing outside it can appear.

*Checked once.* The corpus is checked at construction, each query vector and subset once per
call; the layers below use trusted entry points that neither re-check nor copy ``E``.

Input conversion (done once, and only here)
-------------------------------------------
* ``embeddings`` of another real floating dtype are converted to float32 once at
  construction; with ``normalize=True`` the rows are L2-normalised (one copy), otherwise
  every row must already have unit norm (within :data:`UNIT_NORM_ATOL`).
* Query vectors of another floating dtype are converted to float32; with ``normalize=True``
  they are L2-normalised, otherwise they must have unit norm.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Optional, Union

import numpy as np

from . import _validation as _v
from ._lexical.index import check_query
from . import embed as _embed
from . import persistence as _persistence
from . import temporal as _temporal
from ._api import public_dir
from ._results import SearchHit
from ._retriever.corpus import UNIT_NORM_ATOL, Corpus, SubsetLike, build_corpus, check_texts, moments_apply
from ._retriever.legs import LEG_REGISTRY, Leg
from ._retriever.legs.base import LegOutput
from ._retriever.plan import LegPlan, PlanCache
from ._retriever.result import LegHits, QueryEvidence, SearchResult, cleared, threshold_value
from .bm25 import BM25Index
from .config import ConfigLike, RetrieverConfig, resolve_config
from .embed import Embedder

__all__ = ["LEG_REGISTRY", "UNIT_NORM_ATOL", "HybridRetriever", "LegHits", "LegKind", "LegPlan", "SearchHit",
           "SearchResult"]

__dir__ = public_dir(__all__)

#: A leg kind is one class: the :class:`~fieldrank.config.Leg` base class (the values of
#: :data:`LEG_REGISTRY` derive from it).
LegKind = Leg

#: Read by the benchmarks (whether a corpus takes the temporal leg's moments path).
moments_apply = moments_apply


class HybridRetriever:
    """Texts and their embeddings, answering queries with a weighted-RRF stack.

    Parameters
    ----------
    texts : Sequence[str]
        The documents; document id = position.
    embeddings : np.ndarray, optional
        (N, d) with ``N == len(texts)``; float32 (other float dtypes are converted once),
        rows L2-normalised unless ``normalize=True``. The retriever keeps a reference to a
        float32 C-ordered array instead of copying it: do not modify it afterwards (in
        place or not, it is the corpus: the BM25 index, the checks made at construction and the
        temporal leg's corpus moments, :meth:`prepare`, describe the rows as they were). None:
        ``embedder`` embeds the texts.
    config : RetrieverConfig, str, path, dict or None
        A config, a preset name (:data:`fieldrank.config.PRESET_NAMES`), a TOML file, a dict,
        or None for the ``default`` preset. See :func:`fieldrank.config.resolve_config`.
    normalize : bool, default False
        L2-normalise the rows (one copy) and every query vector. When False, rows and query
        vectors whose norm differs from 1 by more than :data:`UNIT_NORM_ATOL` are rejected.
    bm25_index : BM25Index, optional
        A prebuilt BM25 index over ``texts`` with ``config.bm25`` parameters (else built here,
        with the timeline's sessions for neighbour-text expansion).
    timeline : fieldrank.temporal.Timeline, optional
        Session keys, session dates and time cues of the documents, used by ``temporal`` legs
        and by BM25's neighbour-text expansion (``config.bm25.context_window``).
        Without one, documents in corpus order count as one session (neighbours) with time cues
        from ``texts`` and no session dates. Saved and reloaded by :meth:`save` / :meth:`load`.
    embedder : fieldrank.embed.Embedder, optional
        Embeds the texts when ``embeddings`` is None, and every query given as text only
        (``search("text")``), with the same model. Not saved by :meth:`save` (pass it to
        :meth:`load`).

    Raises
    ------
    TypeError
        On wrong types (texts not str, integer embeddings, ...).
    ValueError
        On mismatched lengths, non-finite or non-unit rows, an invalid config, or texts
        without any indexable token.

    Notes
    -----
    Thread-safety: read-only after construction; :meth:`search` and :meth:`search_batch` may
    be called from several threads.

    A temporal leg over every document of a corpus of at least
    ``DEFAULTS["temporal_moments_min_rows_per_dim"]`` · d rows (the ``default`` preset) reads the
    corpus moments, computed once on the first such search (or by :meth:`prepare`) with every
    hardware thread (docs/design.md, "Temporal leg").
    """

    def __init__(self, texts: Sequence[str], embeddings: Optional[np.ndarray] = None, config: ConfigLike = None, *,
                 normalize: bool = False, bm25_index: Optional[BM25Index] = None,
                 timeline: Optional[_temporal.Timeline] = None, embedder: Optional[Embedder] = None) -> None:
        docs = tuple(check_texts(texts, "texts"))
        embedder = _embed.check_embedder(embedder)
        if embeddings is None:
            if embedder is None:
                msg = "pass the documents' embeddings, or an embedder= that makes them from the texts"
                raise ValueError(msg)
            embeddings = _embed.embed_documents(embedder, docs)
        cfg = resolve_config(config)
        self._assemble(build_corpus(docs, embeddings, normalize, cfg.bm25, timeline, bm25_index), cfg, embedder)

    def _assemble(self, corpus: Corpus, config: RetrieverConfig, embedder: Optional[Embedder]) -> None:
        """Set the (already validated) parts; plans are built on first use."""
        self._corpus = corpus
        self._config = config
        self._embedder = embedder
        self._plans = PlanCache(config, len(corpus))
        self._needs_vector = config.needs_vector
        self._needs_text = config.needs_text

    @classmethod
    def _from_parts(cls, corpus: Corpus, config: RetrieverConfig,
                    embedder: Optional[Embedder] = None) -> HybridRetriever:
        obj = cls.__new__(cls)
        obj._assemble(corpus, config, embedder)
        return obj

    # ---------------------------------------------------------------- properties
    def __len__(self) -> int:
        return len(self._corpus)

    def __repr__(self) -> str:
        return (f"HybridRetriever(n_docs={len(self._corpus)}, dim={self.dim}, "
                f"config={self._config.name!r}, legs={list(self._config.leg_names)})")

    @property
    def config(self) -> RetrieverConfig:
        return self._config

    @property
    def texts(self) -> tuple[str, ...]:
        return self._corpus.texts

    @property
    def embeddings(self) -> np.ndarray:
        """The (N, d) float32 corpus matrix (a read-only view)."""
        view = self._corpus.E.view()
        view.flags.writeable = False
        return view

    def prepare(self) -> HybridRetriever:
        """Compute now what the first search would otherwise compute: the corpus moments of a
        temporal leg over every document (where the corpus has at least
        ``DEFAULTS["temporal_moments_min_rows_per_dim"]`` · d rows and the config has such a leg).

        Two passes over the embeddings on every hardware thread, O(N·d²): measured on two cores
        0.04 s for 20k rows and 0.21 s for 100k at d = 384, 0.16 s and 0.78 s at d = 768
        (docs/design.md).
        Idempotent and thread-safe; shared with :meth:`with_config` copies. Returns ``self``.
        """
        for leg in self._config.legs:
            leg.prepare(self._corpus)
        return self

    @property
    def bm25(self) -> BM25Index:
        return self._corpus.bm25

    @property
    def timeline(self) -> Optional[_temporal.Timeline]:
        """The documents' timeline as given to the constructor (None: none given)."""
        return self._corpus.given_timeline

    @property
    def normalize(self) -> bool:
        return self._corpus.normalize

    @property
    def dim(self) -> int:
        return self._corpus.dim

    def with_config(self, config: ConfigLike) -> HybridRetriever:
        """A retriever over the same corpus with another configuration.

        Shares the embeddings and, when the BM25 parameters are equal, the BM25 index (so
        this is cheap); otherwise the BM25 index is rebuilt with the new parameters.
        """
        cfg = resolve_config(config)
        corpus = self._corpus
        if cfg.bm25 != corpus.bm25.params:  # same rows, same moments (computed at most once)
            corpus = corpus.with_bm25(BM25Index(corpus.texts, cfg.bm25, sessions=corpus.given_timeline))
        return self._from_parts(corpus, cfg, self._embedder)

    @property
    def embedder(self) -> Optional[Embedder]:
        """The embedder of text-only queries, or None."""
        return self._embedder

    def with_embedder(self, embedder: Optional[Embedder]) -> HybridRetriever:
        """The same retriever (shared corpus) embedding text-only queries with ``embedder``."""
        embedder = _embed.check_embedder(embedder)
        if embedder is not None and embedder.dim != self.dim:
            msg = f"embedder makes {embedder.dim}-d vectors but the index holds {self.dim}-d embeddings"
            raise ValueError(msg)
        return self._from_parts(self._corpus, self._config, embedder)

    # ---------------------------------------------------------------- persistence
    def save(self, directory: Union[str, os.PathLike[str]], *, overwrite: bool = False) -> None:
        """Write the index to ``directory``; see :mod:`fieldrank.persistence` for the format."""
        _persistence.save_index(self, directory, overwrite=overwrite)

    @classmethod
    def load(cls, directory: Union[str, os.PathLike[str]], *, mmap: bool = False,
             config: ConfigLike = None, verify: bool = True,
             embedder: Optional[Embedder] = None) -> HybridRetriever:
        """Read an index written by :meth:`save`.

        Parameters
        ----------
        directory : path
        mmap : bool, default False
            Memory-map the embeddings (read-only) instead of reading them into memory.
        config : optional
            Use this configuration instead of the saved one (the saved BM25 index is reused
            when its parameters match, else rebuilt).
        verify : bool, default True
            Check every file's sha256 against the manifest (sizes, shapes and dtypes are
            always checked).
        embedder : Embedder, optional
            Embeds text-only queries (same model as the saved embeddings).

        Raises
        ------
        fieldrank.persistence.IndexFormatError
            (a ValueError) for an unknown format version, a missing, truncated, corrupt or
            escaping (symlink) file, or inconsistent shapes. Nothing is half-loaded.
        FileNotFoundError
            If ``directory`` does not exist.
        """
        parts = _persistence.load_index(directory, mmap=mmap, verify=verify)
        corpus = Corpus(parts.texts, parts.embeddings, parts.bm25, parts.normalize, parts.timeline)
        retriever = cls._from_parts(corpus, parts.config)
        retriever = retriever if config is None else retriever.with_config(config)
        return retriever if embedder is None else retriever.with_embedder(embedder)

    # ---------------------------------------------------------------- input checks
    def _check_query_inputs(self, has_text: bool, has_vector: bool, what: str) -> None:
        cfg = self._config
        if self._needs_vector and not has_vector:
            dense = [leg.name for leg in cfg.legs if leg.needs_vector]
            msg = (f"config {cfg.name!r} has dense legs {dense}: pass the query {what}, or use a lexical "
                   "configuration such as the 'bm25' preset")
            raise ValueError(msg)
        if self._needs_text and not has_text:
            lexical = [leg.name for leg in cfg.legs if leg.needs_text]
            msg = f"config {cfg.name!r} has lexical legs or union pools {lexical}: pass the query text"
            raise ValueError(msg)

    def _plan_for(self, k: object) -> LegPlan:
        """The plan for ``k`` hits (None: the config's ``k``, whose plan is kept apart)."""
        if k is None:
            plan = self._plans.default
            return plan if plan is not None else self._plans.get(self._config.k)
        return self._plans.get(_v.positive_int(k, "k"))  # any given k is checked (bool, 3.0: refused)

    def _evidence(self, texts: Optional[list[str]], Q: Optional[np.ndarray], row: int,
                  sub: Optional[np.ndarray]) -> QueryEvidence:
        """What the confidence of query ``row`` reads (its text, vector and subset), checked once."""
        return QueryEvidence(self._corpus, None if texts is None else texts[row], None if Q is None else Q[row], sub)

    # ---------------------------------------------------------------- single query
    def search(self, text: Optional[str] = None, vector: Optional[np.ndarray] = None, k: Optional[int] = None, *,
               subset: SubsetLike = None, min_confidence: Optional[float] = None) -> SearchResult:
        """Answer one query with the configured stack.

        Parameters
        ----------
        text : str, optional
            The query text (needed by BM25 legs and union pools).
        vector : np.ndarray, optional
            The query embedding, shape (d,) (needed by dense legs). None with an embedder:
            the embedder embeds ``text``.
        k : int, optional
            Hits to return (default: the config's ``k``). Exactly ``min(k, n)`` hits come back
            (n: the documents the query may see) whenever the config has a leg that can rank every
            document (cosine, temporal, the reranking legs): when ``k`` exceeds what every leg
            returns, the legs are deepened to ``k`` for this call (the first hits can then
            differ from a shallower search's, as with a larger RRF window elsewhere). BM25 only returns documents that share
            a term with the query, so a BM25-only configuration can return fewer. Time and memory are
            bounded by the corpus, whatever ``k`` (it is clamped to the corpus before anything is
            allocated; the ranking is the unclamped one).
        subset : array of int ids or boolean mask (N,), optional
            Only these documents can be returned, by any leg.
        min_confidence : float in [0, 1], optional
            Return only the hits whose ``confidence`` (the calibrated probability that the hit is
            relevant, :class:`SearchHit`) is at least this, in rank order: fewer than ``k`` hits,
            possibly none, when the memory holds nothing relevant enough. None: ``k`` hits, as
            without it. Needs the query text and vector (a ValueError otherwise). The ranking
            itself never depends on it.

        Returns
        -------
        SearchResult
            Fused ids and scores, per-leg provenance and each hit's confidence.

        Raises
        ------
        ValueError, TypeError
            On a missing text/vector the configuration needs, a vector of the wrong length,
            not unit-norm or not finite, or a bad ``k``/``subset``.
        """
        threshold = threshold_value(min_confidence)
        checked_text = None  # the text is checked once, also when the embedder needs it first
        if vector is None and text is not None and self._embedder is not None and self._config.needs_vector:
            checked_text = check_query(text, "text")
            vector = _embed.embed_query(self._embedder, checked_text)
        self._check_query_inputs(text is not None, vector is not None, "vector")
        plan = self._plan_for(k)
        corpus = self._corpus
        Q = corpus.query_vector(vector) if self._needs_vector else None
        texts = [checked_text if checked_text is not None else check_query(text, "text")] if self._needs_text else None
        sub = None if subset is None else corpus.subset_ids(subset)
        outputs = plan.run(corpus, texts, Q, 1, sub, 1)[0]
        ids, scores = plan.fuse_one(outputs)
        # Confidence reads the text also of a plan without lexical legs, when it is a str.
        evidence_texts = texts if texts is not None else ([text] if isinstance(text, str) else None)
        result = SearchResult(ids, scores, outputs, self._config, corpus.texts, self._evidence(evidence_texts, Q, 0, sub))
        return result if threshold is None else cleared([result], threshold)[0]

    # ---------------------------------------------------------------- batches
    def search_batch(self, texts: Optional[Sequence[str]] = None, vectors: Optional[np.ndarray] = None,
                     k: Optional[int] = None, *, subset: SubsetLike = None,
                     subsets: Optional[Sequence[SubsetLike]] = None, n_threads: int = 0,
                     min_confidence: Optional[float] = None) -> list[SearchResult]:
        """Answer many queries at once; equal to ``[search(t, v, k, subset=...) ...]``.

        The same leg plan as :meth:`search` runs once per group of queries sharing a subset:
        native legs through their ``*_batch`` operators (one query per thread, GIL released),
        BM25 through :meth:`BM25Index.top_batch`'s code. Queries with per-query subsets are
        grouped by subset, so each distinct subset costs one batched call per leg.

        Parameters
        ----------
        texts : Sequence[str], optional
            One query text per query.
        vectors : np.ndarray, optional
            (B, d) query embeddings, row b for query b. None with an embedder: the embedder
            embeds ``texts``.
        k : int, optional
            Hits per query (default: the config's ``k``; see :meth:`search`).
        subset : optional
            One subset (ids or boolean mask) applied to every query.
        subsets : Sequence, optional
            One subset per query (None: unrestricted); exclusive with ``subset``.
        n_threads : int, default 0
            Worker threads; ``<= 0`` means all cores. Results do not depend on it.
        min_confidence : float in [0, 1], optional
            Keep only the hits whose ``confidence`` is at least this (see :meth:`search`).

        Returns
        -------
        list of SearchResult
            One per query, in order.
        """
        cfg, corpus = self._config, self._corpus
        plan = self._plans.get(cfg.k if k is None else _v.positive_int(k, "k"))
        n_threads = _v.n_threads_value(n_threads)
        threshold = threshold_value(min_confidence)
        if vectors is None and texts is not None and self._embedder is not None and cfg.needs_vector:
            vectors = _embed.embed_queries(self._embedder, texts)
        self._check_query_inputs(texts is not None, vectors is not None, "vectors")
        Q = corpus.query_matrix(vectors) if cfg.needs_vector else None
        batch_texts = check_texts(texts, "texts") if cfg.needs_text else None
        sizes = {len(x) for x in (batch_texts, Q) if x is not None}
        if len(sizes) > 1:
            msg = f"texts and vectors must describe the same queries, got {len(batch_texts)} texts and {len(Q)} vectors"
            raise ValueError(msg)
        n_queries = sizes.pop() if sizes else 0
        groups = self._subset_groups(n_queries, subset, subsets)
        per_query: list[Optional[list[LegOutput]]] = [None] * n_queries
        query_subsets: list[Optional[np.ndarray]] = [None] * n_queries
        for rows, sub in groups:
            group_Q = None if Q is None else (Q if len(rows) == n_queries else np.ascontiguousarray(Q[rows]))
            group_texts = None if batch_texts is None else [batch_texts[i] for i in rows]
            for row, outputs in zip(rows, plan.run(corpus, group_texts, group_Q, len(rows), sub, n_threads)):
                per_query[row] = outputs
                query_subsets[row] = sub
        if not n_queries:
            return []
        fused = plan.fuse(per_query, n_threads)
        evidence_texts = batch_texts
        if (evidence_texts is None and isinstance(texts, Sequence) and not isinstance(texts, str)
                and len(texts) == n_queries and all(isinstance(t, str) for t in texts)):
            evidence_texts = list(texts)  # read by confidence only, as search reads a dense-only plan's text
        results = [SearchResult(f.ids, f.scores, outputs, cfg, corpus.texts,
                                self._evidence(evidence_texts, Q, row, query_subsets[row]))
                   for row, (f, outputs) in enumerate(zip(fused, per_query))]
        return cleared(results, threshold)

    def _subset_groups(self, n_queries: int, subset: SubsetLike,
                       subsets: Optional[Sequence[SubsetLike]]) -> list[tuple[list[int], Optional[np.ndarray]]]:
        """Query rows grouped by their (validated) subset: one group per distinct subset."""
        if subset is not None and subsets is not None:
            msg = "pass either subset (shared) or subsets (one per query), not both"
            raise ValueError(msg)
        corpus = self._corpus
        if subsets is None:
            return [(list(range(n_queries)), corpus.subset_ids(subset))]
        if isinstance(subsets, np.ndarray) or not isinstance(subsets, Sequence):
            msg = f"subsets must be a sequence with one entry per query, got {type(subsets).__name__}"
            raise TypeError(msg)
        if len(subsets) != n_queries:
            msg = f"subsets must have one entry per query ({n_queries}), got {len(subsets)}"
            raise ValueError(msg)
        groups: dict[Optional[bytes], tuple[list[int], Optional[np.ndarray]]] = {}
        for row, raw in enumerate(subsets):
            ids = corpus.subset_ids(raw, f"subsets[{row}]")
            # The same set of ids always gives the same results, whatever its order (ids are sorted).
            key = None if ids is None else ids.tobytes()
            if key not in groups:
                groups[key] = ([], ids)
            groups[key][0].append(row)
        return list(groups.values())
