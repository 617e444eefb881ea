"""Reduced-precision prefilter: a bf16 or int8 copy of ``E`` scanned first, exact fp32 rescoring.

Build the copy once with :func:`quantize`, then call :func:`prefilter_quantized` with it and the
original ``E``. The scan reads the copy (2× fewer bytes for bf16, 4× for int8) and keeps the top
``rescore_factor · p`` rows; those are rescored exactly in fp32 from ``E``, so the result is the
exact :func:`fieldrank.prefilter` whenever the exact top ``p`` lies among the candidates (pool
recall against exact fp32 is reported in ``docs/results/performance.md``).

int8 codes are symmetric with one scale per row: ``code = clamp(rint(x / s), ±127)``,
``s = max|x| / 127``; the query is quantized the same way and the integer dot is exact.
bf16 codes are the upper 16 bits of the fp32 pattern after round-to-nearest-even.

The numpy twins (:func:`fieldrank.reference.quantize`, :func:`fieldrank.reference.prefilter_quantized`)
build bit-identical codes and use the same candidate rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from . import _kernels
from . import _validation as _v
from ._results import Ranking

__all__ = ["KINDS", "QuantizedCorpus", "quantize", "prefilter_quantized", "prefilter_quantized_batch"]

KINDS = ("bf16", "int8")
_D = _kernels.DEFAULTS


@dataclass(frozen=True, eq=False)
class QuantizedCorpus:
    """A reduced-precision copy of a corpus ``E`` (N, d), built by :func:`quantize`.

    Attributes
    ----------
    kind : "bf16" or "int8".
    codes : (N, d) uint16 (bf16 bit patterns) or int8.
    scale : (N,) float32 per-row scale (int8 only; row ≈ codes · scale), else None.
    sums : (N,) int32 per-row code sums (int8 only; used by the VNNI kernel), else None.
    """

    kind: str
    codes: np.ndarray
    scale: Optional[np.ndarray] = None
    sums: Optional[np.ndarray] = None

    @property
    def shape(self) -> Tuple[int, int]:
        return tuple(self.codes.shape)  # type: ignore[return-value]

    @property
    def nbytes(self) -> int:
        extra = sum(a.nbytes for a in (self.scale, self.sums) if a is not None)
        return int(self.codes.nbytes + extra)

    def dequantize(self) -> np.ndarray:
        """The float32 values the codes stand for (bf16 exactly; int8 as codes · scale)."""
        if self.kind == "bf16":
            return (self.codes.astype(np.uint32) << np.uint32(16)).view(np.float32)
        return self.codes.astype(np.float32) * self.scale[:, None]

    def __repr__(self) -> str:
        return f"QuantizedCorpus(kind={self.kind!r}, shape={self.shape}, nbytes={self.nbytes})"


# --------------------------------------------------------------------------- numpy quantizers


def bf16_codes(X: np.ndarray) -> np.ndarray:
    """bf16 bit patterns of float32 ``X`` (round to nearest even), as uint16; numpy twin of the core's."""
    bits = np.ascontiguousarray(X, dtype=np.float32).view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def int8_codes(X: np.ndarray):
    """Symmetric per-row int8 codes of float32 ``X`` (rows): (codes int8, scale float32, sums int32)."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float32))
    scale = (np.abs(X).max(axis=1) / np.float32(127.0)).astype(np.float32)
    safe = np.where(scale > 0, scale, np.float32(1.0)).astype(np.float32)
    codes = np.clip(np.rint(X / safe[:, None]), -127, 127).astype(np.int8)
    codes[scale == 0] = 0
    return codes, scale, codes.sum(axis=1, dtype=np.int32)


def check_kind(kind: object) -> str:
    """``kind`` checked: one of :data:`KINDS` (the native and the numpy twin's one check)."""
    if not isinstance(kind, str):
        msg = f"kind must be a str, one of {KINDS}, got {type(kind).__name__}"
        raise TypeError(msg)
    return _v.one_of(kind, "kind", KINDS)


def check_corpus(QC: object) -> QuantizedCorpus:
    """``QC`` checked: a :class:`QuantizedCorpus` (alike in both modules)."""
    if not isinstance(QC, QuantizedCorpus):
        msg = f"QC must be a QuantizedCorpus (build it with fieldrank.quantize(E, kind)), got {type(QC).__name__}"
        raise TypeError(msg)
    return QC


#: Widest int8 copy: int32 sums of d code products stay exact (the core's ``int8_max_dim``).
INT8_MAX_DIM = int(_kernels.DEFAULTS["int8_max_dim"])


def check_int8_dim(d: int, what: str = "copy") -> None:
    """The int8 kind holds at most :data:`INT8_MAX_DIM` columns (use ``"bf16"`` beyond), alike in
    both modules."""
    if d > INT8_MAX_DIM:
        msg = f"E must have at most {INT8_MAX_DIM} columns for the int8 {what} (int32 sums stay exact), got {d}"
        raise ValueError(msg)


def check_matches(QC: QuantizedCorpus, E: np.ndarray) -> None:
    """Raise ValueError unless ``QC`` was built from ``E`` (shape, and the codes of two sample rows)."""
    if QC.shape != E.shape:
        msg = f"QC must have E's shape {E.shape}, got {QC.shape}; build it with quantize(E, {QC.kind!r})"
        raise ValueError(msg)
    if QC.kind == "int8":
        check_int8_dim(E.shape[1], "scan")
        lengths = [np.shape(a)[0] if np.ndim(a) == 1 else None for a in (QC.scale, QC.sums)]
        if lengths != [E.shape[0]] * 2:
            msg = (f"the int8 corpus needs one scale and one code sum per row: expected {E.shape[0]}, "
                   f"got {lengths[0]} and {lengths[1]}")
            raise ValueError(msg)
    rows = np.unique([0, E.shape[0] // 2, E.shape[0] - 1])
    expected = bf16_codes(E[rows]) if QC.kind == "bf16" else int8_codes(E[rows])[0]
    if not np.array_equal(expected, QC.codes[rows]):
        msg = "QC was built from a different E (codes of sample rows differ); build it with quantize(E, kind)"
        raise ValueError(msg)


def check_factor(value: object) -> int:
    """``rescore_factor`` checked: a positive int (alike in both modules)."""
    return _v.positive_int(value, "rescore_factor")


# --------------------------------------------------------------------------- native API


def quantize(E: np.ndarray, kind: str = "int8") -> QuantizedCorpus:
    """A reduced-precision copy of ``E`` (N, d) float32 for :func:`prefilter_quantized`.

    Parameters
    ----------
    E : (N, d) float32, rows finite with unit L2 norm (checked once here; see ``DEFAULTS["unit_norm_atol"]``).
    kind : "bf16" (2 bytes per value) or "int8" (1 byte per value plus a scale per row).
    """
    kind = check_kind(kind)
    E = _v.corpus(E)
    if kind == "int8":
        check_int8_dim(E.shape[1])
    # numpy allocates the copy (huge pages for large arrays: the scan reads them at full bandwidth).
    codes = np.empty(E.shape, dtype=np.uint16 if kind == "bf16" else np.int8)
    if kind == "bf16":
        _kernels.quantize_bf16(E, codes)
        return QuantizedCorpus("bf16", codes)
    scale = np.empty(E.shape[0], dtype=np.float32)
    sums = np.empty(E.shape[0], dtype=np.int32)
    _kernels.quantize_int8(E, codes, scale, sums)
    return QuantizedCorpus("int8", codes, scale, sums)


def prefilter_quantized(QC: QuantizedCorpus, E: np.ndarray, q: np.ndarray, p: int = _D["p"], *,
                        rescore_factor: int = _D["quantized_rescore_factor"],
                        subset: Optional[np.ndarray] = None) -> Ranking:
    """Cosine top-``p`` of ``E`` for ``q`` from a scan of ``QC`` and exact fp32 rescoring.

    The scan keeps the top ``rescore_factor · p`` rows by their reduced-precision score; those
    rows of ``E`` are rescored exactly (and checked), and the best ``p`` returned with their exact
    fp32 cosines. ``QC`` must come from ``quantize(E, kind)`` for this ``E``.
    """
    QC = check_corpus(QC)
    E, q, subset = _v.corpus_call(E, q, subset)
    check_matches(QC, E)
    p, factor = _v.positive_int(p, "p"), check_factor(rescore_factor)
    if QC.kind == "bf16":
        native = _kernels.prefilter_bf16(QC.codes, E, q, p, factor, subset)
    else:
        native = _kernels.prefilter_int8(QC.codes, QC.scale, QC.sums, E, q, p, factor, subset)
    return Ranking(native.ids, native.scores)


def prefilter_quantized_batch(QC: QuantizedCorpus, E: np.ndarray, Q: np.ndarray, p: int = _D["p"], *,
                              rescore_factor: int = _D["quantized_rescore_factor"],
                              subset: Optional[np.ndarray] = None, n_threads: int = 0) -> Ranking:
    """:func:`prefilter_quantized` for every row of ``Q`` (B, d); returns (B, min(p, n)) arrays."""
    QC = check_corpus(QC)
    E, Q, subset, n_threads = _v.batch_call(E, Q, subset, n_threads)
    check_matches(QC, E)
    p, factor = _v.positive_int(p, "p"), check_factor(rescore_factor)
    if QC.kind == "bf16":
        native = _kernels.prefilter_bf16_batch(QC.codes, E, Q, p, factor, subset, n_threads)
    else:
        native = _kernels.prefilter_int8_batch(QC.codes, QC.scale, QC.sums, E, Q, p, factor, subset, n_threads)
    return Ranking(native.ids, native.scores)
