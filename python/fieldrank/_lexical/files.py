"""The saved index's files: their names and the checks :meth:`BM25Index.load` makes before trusting them
(no symlink out of the directory, a consistent term x document CSC matrix and vocabulary)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BM25FormatError", "PARAMS_FILENAME", "FORMAT_NAME", "FORMAT_VERSION", "BM25S_PARAMS_FILENAME",
           "BM25S_CHECKED_PARAMS", "read_json", "check_inside", "check_loaded"]

#: File written next to the bm25s files by :meth:`BM25Index.save`.
PARAMS_FILENAME = "fieldrank_bm25.json"
FORMAT_NAME = "fieldrank.bm25"
FORMAT_VERSION = 1
#: Parameters of the bm25s ``params.index.json`` checked against :class:`BM25Params` on load.
BM25S_PARAMS_FILENAME = "params.index.json"
BM25S_CHECKED_PARAMS = ("k1", "b", "delta", "method")
#: Every file :meth:`BM25Index.load` may read (the last one only for BM25L / BM25+).
_BM25S_ARRAY_FILENAMES = ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy")
_BM25S_VOCAB_FILENAME = "vocab.index.json"
_BM25S_NONOCCURRENCE_FILENAME = "nonoccurrence_array.index.npy"
_LOADED_FILENAMES = (
    PARAMS_FILENAME, BM25S_PARAMS_FILENAME, _BM25S_VOCAB_FILENAME, *_BM25S_ARRAY_FILENAMES,
    _BM25S_NONOCCURRENCE_FILENAME,
)


class BM25FormatError(ValueError):
    """A saved BM25 index whose files are inconsistent, damaged or point outside its directory.

    A ``ValueError`` subclass; the message names the offending file. (It is separate from
    :class:`fieldrank.persistence.IndexFormatError`, which wraps it when a hybrid index is loaded.)
    """

    #: Its public home, whichever module imported it first (help, reprs, pickles).
    __module__ = "fieldrank.bm25"


def read_json(path: Path) -> Any:
    """A JSON metadata file of a saved index; nested too deeply to parse: a BM25FormatError naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        msg = f"{path} is nested too deeply to be a BM25 index file"
        raise BM25FormatError(msg) from None


def check_inside(directory: Path) -> None:
    """Refuse any file :meth:`BM25Index.load` reads that resolves (symlink) outside ``directory``."""
    root = directory.resolve()
    for name in _LOADED_FILENAMES:
        path = directory / name
        if not os.path.lexists(path):
            continue
        try:
            resolved = path.resolve()
        except (RuntimeError, OSError) as exc:  # a symlink loop: RuntimeError before Python 3.13
            msg = f"{path} cannot be resolved ({exc})"
            raise BM25FormatError(msg) from None
        if resolved.parent != root:
            msg = f"{path} resolves to {resolved}, outside the index directory {root} (symlink refused)"
            raise BM25FormatError(msg)


def check_loaded(directory: Path, retriever: Any, n_docs: int) -> None:
    """Structural checks of the arrays and vocabulary bm25s loaded (a CSC matrix, terms x docs)."""
    scores = retriever.scores
    data, indices, indptr = (np.asarray(scores.get(key)) for key in ("data", "indices", "indptr"))
    data_file, indices_file, indptr_file = (directory / name for name in _BM25S_ARRAY_FILENAMES)
    for array, path, kinds in ((data, data_file, "f"), (indices, indices_file, "iu"), (indptr, indptr_file, "iu")):
        if array.ndim != 1 or array.dtype.kind not in kinds:
            expected = "floating-point" if kinds == "f" else "integer"
            msg = f"{path} must hold a 1-D {expected} array, got dtype {array.dtype} and shape {array.shape}"
            raise BM25FormatError(msg)
    if indices.shape[0] != data.shape[0]:
        msg = f"{indices_file} holds {indices.shape[0]} entries but {data_file} holds {data.shape[0]}"
        raise BM25FormatError(msg)
    vocab = retriever.vocab_dict
    if not isinstance(vocab, dict):
        msg = f"{directory / _BM25S_VOCAB_FILENAME} must hold a JSON object (token -> id)"
        raise BM25FormatError(msg)
    # bm25s keeps the empty token in the vocabulary without a column of its own.
    n_terms = len(vocab) - ("" in vocab)
    if indptr.shape[0] != n_terms + 1:
        msg = (
            f"{indptr_file} must hold vocabulary size + 1 = {n_terms + 1} offsets "
            f"({directory / _BM25S_VOCAB_FILENAME} has {n_terms} terms), got {indptr.shape[0]}"
        )
        raise BM25FormatError(msg)
    if indptr[0] != 0 or bool(np.any(np.diff(indptr) < 0)) or int(indptr[-1]) != indices.shape[0]:
        msg = (
            f"{indptr_file} must start at 0, never decrease and end at the number of entries "
            f"({indices.shape[0]}), got offsets from {int(indptr[0])} to {int(indptr[-1])}"
        )
        raise BM25FormatError(msg)
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= n_docs):
        msg = (
            f"{indices_file} must hold document ids in [0, {n_docs}), "
            f"got ids from {int(indices.min())} to {int(indices.max())}"
        )
        raise BM25FormatError(msg)
    if not bool(np.all(np.isfinite(data))) or bool(np.any(data < 0)):
        msg = f"{data_file} must hold finite scores >= 0"
        raise BM25FormatError(msg)
    _check_vocabulary_ids(directory / _BM25S_VOCAB_FILENAME, vocab, n_terms)
    _check_nonoccurrence(directory / _BM25S_NONOCCURRENCE_FILENAME, retriever, n_terms)


def _check_vocabulary_ids(path: Path, vocab: dict, n_terms: int) -> None:
    """Integer ids, one column in ``[0, n_terms)`` per term, no two tokens sharing one."""
    ids = list(vocab.values())
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        msg = f"{path} must map every token to an integer id"
        raise BM25FormatError(msg)
    ids_array = np.asarray(ids, dtype=np.int64) if ids else np.empty(0, dtype=np.int64)
    # Every term id names a column in [0, n_terms); the empty token's id may be n_terms.
    term_ids = np.asarray([i for token, i in vocab.items() if token != ""], dtype=np.int64)
    empty_id = vocab.get("", 0)
    if (term_ids.size and (int(term_ids.min()) < 0 or int(term_ids.max()) >= n_terms)) or not 0 <= empty_id <= n_terms:
        msg = (
            f"{path} must map tokens to ids in [0, {n_terms}), "
            f"got ids from {int(ids_array.min())} to {int(ids_array.max())}"
        )
        raise BM25FormatError(msg)
    if np.unique(ids_array).size != ids_array.size:
        msg = f"{path} maps two tokens to the same id"
        raise BM25FormatError(msg)


def _check_nonoccurrence(path: Path, retriever: Any, n_terms: int) -> None:
    """BM25L / BM25+: one finite float per term."""
    nonoccurrence = getattr(retriever, "nonoccurrence_array", None)
    if nonoccurrence is not None:
        nonoccurrence = np.asarray(nonoccurrence)
        if nonoccurrence.shape != (n_terms,) or nonoccurrence.dtype.kind != "f" or not bool(
                np.all(np.isfinite(nonoccurrence))):
            msg = (
                f"{path} must hold {n_terms} finite floats (one per term), "
                f"got dtype {nonoccurrence.dtype} and shape {nonoccurrence.shape}"
            )
            raise BM25FormatError(msg)
