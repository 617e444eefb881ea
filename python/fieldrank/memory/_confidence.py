"""Confidence of a recall's hits (issue 29): :mod:`fieldrank._confidence`'s model, read from a recall.

Every :class:`~fieldrank.memory.Hit` of :meth:`MemoryStore.recall` carries ``confidence``, the
calibrated probability that it is relevant to the cue, and ``recall(min_confidence=t)`` keeps only
the hits with ``confidence >= t`` (fewer than k, possibly none). The features are those of
:mod:`fieldrank._confidence` with two differences, both from what a recall has at hand without
reading the store's index:

* ``coverage`` weighs every distinct cue term the same (no idf), terms being BM25's (the package's
  token pattern, English stop words and stemmer) of the cue and of the hit's own text;
* ``memory_coverage`` is the fraction of the cue's terms found in any returned hit.

``cosine`` is the hit's raw cosine (``factors.cosine``) and ``score`` its fused score. The
coefficients are fitted through the store on LoCoMo (``benchmarks/confidence.py``,
:func:`fieldrank.evaluation._confidence.collect_store`) and shipped in
``fieldrank/data/memory_confidence.toml``. The ranking never depends on them.
"""

from __future__ import annotations

import dataclasses
import functools
from importlib import resources
from typing import Optional, Sequence

import numpy as np

from .. import _confidence as conf
from .. import _validation as _v
from .._lexical import DEFAULT_PARAMS, Tokenizer

__all__ = ["RESOURCE", "annotate", "default_params", "hit_features"]

#: Package data file holding the store's fitted model (a ``[confidence]`` table).
RESOURCE = ("data", "memory_confidence.toml")
#: BM25's tokenizer with the package's default parameters (lower-case, English stop words and stemmer).
_TOKENIZER = Tokenizer.of(DEFAULT_PARAMS)


@functools.lru_cache(maxsize=1)
def default_params():
    """The store's shipped :class:`~fieldrank.config.ConfidenceParams`."""
    from ..config import ConfidenceParams, tomllib

    text = resources.files("fieldrank").joinpath(*RESOURCE).read_text(encoding="utf-8")
    return ConfidenceParams.from_dict(tomllib.loads(text)["confidence"])


@functools.lru_cache(maxsize=4096)
def _terms(text: str) -> frozenset[str]:
    """The stemmed content words of ``text`` (memoised: a recall's hits are often the last recall's)."""
    return frozenset(_TOKENIZER.tokens([text])[0])


def hit_features(cue_text: str, texts: Sequence[str], cosines: Sequence[float],
                 scores: Sequence[float]) -> conf.Features:
    """The :class:`fieldrank._confidence.Features` of one recall's hits (best first)."""
    if not texts:
        return conf.assemble(np.empty(0), np.empty(0), (), 0.0)
    cue = _terms(cue_text)
    found = [_terms(t) & cue for t in texts]
    coverage = np.array([len(f) / len(cue) if cue else 0.0 for f in found])
    anywhere = len(set().union(*found)) / len(cue) if cue else 0.0
    return conf.assemble(np.asarray(cosines, dtype=np.float64), coverage, scores, anywhere)


def annotate(hits: Sequence, cue_text: Optional[str], has_vector: bool, min_confidence: Optional[float],
             params=None) -> tuple:
    """``hits`` with their ``confidence`` set (NaN without a cue text or vector), cut to those with
    ``confidence >= min_confidence`` when given (ranks kept: a hit's rank is its place in the recall)."""
    threshold = None if min_confidence is None else _v.real(min_confidence, "min_confidence", low=0.0, high=1.0)
    if not hits:
        return tuple(hits)
    if cue_text is None or not has_vector:
        if threshold is not None:
            msg = "min_confidence needs the cue text and a cue vector (or an embedder); confidence reads both"
            raise ValueError(msg)
        return tuple(hits)
    f = hit_features(cue_text, [h.text for h in hits], [h.factors.cosine for h in hits],
                     [h.fused_score for h in hits])
    c = conf.confidence(f, default_params() if params is None else params)
    out = [dataclasses.replace(h, confidence=float(v)) for h, v in zip(hits, c.tolist())]
    if threshold is not None:
        out = [h for h in out if h.confidence >= threshold]
    return tuple(out)
