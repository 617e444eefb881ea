"""Type stubs of the native core ``fieldrank._core`` (C++17/Eigen through pybind11).

Arrays are taken without conversion (``.noconvert()``): float32 or int64, C-contiguous, of the
stated rank; anything else raises ``TypeError``. Use the validated wrappers in
:mod:`fieldrank` for conversion and argument checks. Every function here releases the GIL.
``tests/test_stubs.py`` checks these names, argument names, defaults and types against the
binary's own signatures, so the two cannot drift.
"""

from collections.abc import Sequence
from typing import Optional, Union

import numpy as np
import numpy.typing as npt

_F32Matrix = npt.NDArray[np.float32]  # (rows, d) float32, C-contiguous
_F32Vector = npt.NDArray[np.float32]  # (d,) float32, contiguous
_I64Vector = npt.NDArray[np.int64]  # (n,) int64, contiguous
_I64Matrix = npt.NDArray[np.int64]  # (B, m) int64
_F64Vector = npt.NDArray[np.float64]
_U16Matrix = npt.NDArray[np.uint16]  # (N, d) bf16 bit patterns, C-contiguous
_I8Matrix = npt.NDArray[np.int8]  # (N, d) int8 codes, C-contiguous
_I32Vector = npt.NDArray[np.int32]  # (N,) int32
_F64Matrix = npt.NDArray[np.float64]  # (B, N) float64, C-contiguous
_U8Vector = npt.NDArray[np.uint8]  # (N,) 0/1 flags
_F32Result = npt.NDArray[np.float32]  # (B, N) float32 returned by value (C-ordered, owned)

DEFAULTS: dict[str, Union[int, float]]
"""The one table of defaults (``cpp/include/fieldrank/defaults.hpp``); ``fieldrank.DEFAULTS`` copies it."""

BUILD_INFO: dict[str, str]
"""Compiler, flags, build type and Eigen version of this binary."""

class NativeRanking:
    """ids (int64) best first and their float32 scores."""

    @property
    def ids(self) -> _I64Vector: ...
    @property
    def scores(self) -> _F32Vector: ...

class NativeReconstruction:
    """ids, float32 scores and CFS-R coefficients."""

    @property
    def ids(self) -> _I64Vector: ...
    @property
    def scores(self) -> _F32Vector: ...
    @property
    def coef(self) -> _F32Vector: ...

class NativeBatchRanking:
    """(B, m) ids and scores, one row per query."""

    @property
    def ids(self) -> _I64Matrix: ...
    @property
    def scores(self) -> _F32Matrix: ...

class NativeBatchReconstruction:
    """(B, m) ids, scores and coefficients."""

    @property
    def ids(self) -> _I64Matrix: ...
    @property
    def scores(self) -> _F32Matrix: ...
    @property
    def coef(self) -> _F32Matrix: ...

class NativeFusedRanking:
    """Fused ids and their float64 RRF scores."""

    @property
    def ids(self) -> _I64Vector: ...
    @property
    def scores(self) -> _F64Vector: ...

def hardware_threads(n_threads: int = 0) -> int:
    """Threads a call with this n_threads uses (0 or less: all cores)."""

def tie_key(seed: int, lap: int, id: int) -> int:
    """Ring's seeded tie draw for (seed, lap, id): splitmix64, a uint64."""

# Prefilter (SPEC §1)

def prefilter(E: _F32Matrix, q: _F32Vector, p: int, subset: Optional[_I64Vector] = None) -> NativeRanking: ...
def prefilter_batch(
    E: _F32Matrix, Q: _F32Matrix, p: int, subset: Optional[_I64Vector] = None, n_threads: int = 0
) -> NativeBatchRanking: ...
def prefilter_pool(ids: _I64Vector, C: _F32Matrix, q: _F32Vector, p: int) -> NativeRanking: ...

# CFS-R (SPEC §2)

def cfsr(
    E: _F32Matrix,
    q: _F32Vector,
    k: int,
    p: int,
    w: float,
    lam: float,
    iters: int,
    tol: float,
    fista: bool,
    subset: Optional[_I64Vector] = None,
) -> NativeReconstruction: ...
def cfsr_batch(
    E: _F32Matrix,
    Q: _F32Matrix,
    k: int,
    p: int,
    w: float,
    lam: float,
    iters: int,
    tol: float,
    fista: bool,
    subset: Optional[_I64Vector] = None,
    n_threads: int = 0,
) -> NativeBatchReconstruction: ...
def cfsr_pool(
    ids: _I64Vector,
    C: _F32Matrix,
    q: _F32Vector,
    k: int,
    w: float,
    lam: float,
    iters: int,
    tol: float,
    fista: bool,
    sims: Optional[_F32Vector] = None,
) -> NativeReconstruction: ...

# CFS (SPEC §3)

def cfs(
    E: _F32Matrix,
    q: _F32Vector,
    k: int,
    p: int,
    sigma: float,
    beta: float,
    eps: float,
    subset: Optional[_I64Vector] = None,
) -> NativeRanking: ...
def cfs_batch(
    E: _F32Matrix,
    Q: _F32Matrix,
    k: int,
    p: int,
    sigma: float,
    beta: float,
    eps: float,
    subset: Optional[_I64Vector] = None,
    n_threads: int = 0,
) -> NativeBatchRanking: ...
def cfs_pool(
    ids: _I64Vector,
    C: _F32Matrix,
    q: _F32Vector,
    k: int,
    sigma: float,
    beta: float,
    eps: float,
    sims: Optional[_F32Vector] = None,
) -> NativeRanking: ...

# MMR (SPEC §4)

def mmr(
    E: _F32Matrix, q: _F32Vector, k: int, p: int, mu: float, subset: Optional[_I64Vector] = None
) -> NativeRanking: ...
def mmr_batch(
    E: _F32Matrix,
    Q: _F32Matrix,
    k: int,
    p: int,
    mu: float,
    subset: Optional[_I64Vector] = None,
    n_threads: int = 0,
) -> NativeBatchRanking: ...
def mmr_pool(
    ids: _I64Vector, C: _F32Matrix, q: _F32Vector, k: int, mu: float, sims: Optional[_F32Vector] = None
) -> NativeRanking: ...

# Ring (SPEC §5)

def ring(
    E: _F32Matrix,
    q: _F32Vector,
    k: int,
    alpha: float,
    laps: int,
    seed: int,
    ablation: bool,
    subset: Optional[_I64Vector] = None,
) -> NativeRanking: ...
def ring_batch(
    E: _F32Matrix,
    Q: _F32Matrix,
    k: int,
    alpha: float,
    laps: int,
    seed: int,
    ablation: bool,
    subset: Optional[_I64Vector] = None,
    n_threads: int = 0,
) -> NativeBatchRanking: ...
def ring_pool(
    ids: _I64Vector,
    C: _F32Matrix,
    q: _F32Vector,
    k: int,
    alpha: float,
    laps: int,
    seed: int,
    ablation: bool,
    sims: Optional[_F32Vector] = None,
) -> NativeRanking: ...

# Weighted RRF (SPEC §6)

def rrf(rankings: Sequence[_I64Vector], weights: Sequence[float], k: int, k0: float) -> NativeFusedRanking: ...
def rrf_batch(
    rankings: Sequence[Sequence[_I64Vector]], weights: Sequence[float], k: int, k0: float, n_threads: int = 0
) -> list[NativeFusedRanking]: ...

# The temporal leg (python/fieldrank/temporal.py)
class NativeTemporalRanking:
    """(B, m) ids and float64 scores of the temporal leg."""

    @property
    def ids(self) -> _I64Matrix: ...
    @property
    def scores(self) -> npt.NDArray[np.float64]: ...

def temporal_batch(
    E: _F32Matrix,
    Q: _F32Matrix,
    session: _I64Vector,
    alpha: float,
    gamma: float,
    radius: int,
    decay: float,
    tau: float,
    delta: float,
    before_days: int,
    after_days: int,
    k: int,
    lexical32: Optional[_F32Matrix] = None,
    lexical64: Optional[_F64Matrix] = None,
    rows: Optional[_I64Vector] = None,
    cue: Optional[_U8Vector] = None,
    day: Optional[_I64Vector] = None,
    intent: Optional[_U8Vector] = None,
    window_offsets: Optional[_I64Vector] = None,
    window_days: Optional[_I64Vector] = None,
    check_rows: bool = True,
    n_threads: int = 0,
    row_order: bool = False,
) -> NativeTemporalRanking:
    """The time-aware leg for every row of Q over E (rows: sorted unique subset, None: all).

    row_order=True: (B, n) scores of every row in the order of rows, ids empty, k unused.
    """

# BM25 scoring (python/fieldrank/bm25.py)

def bm25_scores_batch(
    data: _F32Vector,
    indices: _I32Vector,
    indptr: _I64Vector,
    n_docs: int,
    token_offsets: _I64Vector,
    token_ids: _I64Vector,
    doc_begin: int = 0,
    doc_end: Optional[int] = None,
    sorted_postings: bool = False,
    n_threads: int = 0,
) -> _F32Result:
    """(B, doc_end - doc_begin) float32 BM25 scores of the documents [doc_begin, doc_end) (None: n_docs)
    from bm25s's eager CSC arrays; query b's tokens are token_ids[token_offsets[b]:token_offsets[b + 1]].
    Bit-identical to bm25s's get_scores_from_ids on those columns. sorted_postings=True (each term's
    documents increasing) reads only the block's part of each posting list."""

# Reduced-precision prefilter (python/fieldrank/quantized.py)

def quantize_bf16(E: _F32Matrix, codes: _U16Matrix) -> None:
    """Writes the bf16 copy of E (round to nearest even) into codes (same shape, uint16)."""

def quantize_int8(E: _F32Matrix, codes: _I8Matrix, scale: _F32Vector, sums: _I32Vector) -> None:
    """Writes the int8 copy of E into codes (same shape), scale (N,) and sums (N,) (row ≈ codes · scale)."""

def prefilter_bf16(
    codes: _U16Matrix,
    E: _F32Matrix,
    q: _F32Vector,
    p: int,
    rescore_factor: int,
    subset: Optional[_I64Vector] = None,
) -> NativeRanking: ...
def prefilter_bf16_batch(
    codes: _U16Matrix,
    E: _F32Matrix,
    Q: _F32Matrix,
    p: int,
    rescore_factor: int,
    subset: Optional[_I64Vector] = None,
    n_threads: int = 0,
) -> NativeBatchRanking: ...
def prefilter_int8(
    codes: _I8Matrix,
    scale: _F32Vector,
    sums: _I32Vector,
    E: _F32Matrix,
    q: _F32Vector,
    p: int,
    rescore_factor: int,
    subset: Optional[_I64Vector] = None,
) -> NativeRanking: ...
def prefilter_int8_batch(
    codes: _I8Matrix,
    scale: _F32Vector,
    sums: _I32Vector,
    E: _F32Matrix,
    Q: _F32Matrix,
    p: int,
    rescore_factor: int,
    subset: Optional[_I64Vector] = None,
    n_threads: int = 0,
) -> NativeBatchRanking: ...

# SIMD kernel variants (cpp/include/fieldrank/simd.hpp) and the read-bandwidth probe

def kernel_variant() -> str:
    """Name of the kernel variant in use (portable, avx2, avx512 or avx512_bf16)."""

def set_kernel_variant(variant: str) -> None:
    """Switch the variant for every later call; ValueError if unknown or not runnable on this CPU."""

def compiled_kernel_variants() -> list[str]:
    """Kernel variants in this build, portable first."""

def supported_kernel_variants() -> list[str]:
    """Kernel variants this build contains and this CPU runs, best last."""

def cpu_features() -> str:
    """CPU features the dispatcher detected (CPUID and XGETBV)."""

def read_probe(x: _F32Vector, n_threads: int = 1) -> float:
    """Sum of x read once by n_threads threads; time it for the machine's read bandwidth."""
