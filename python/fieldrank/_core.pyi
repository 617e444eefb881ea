# Generated from the compiled fieldrank._core by pybind11-stubgen (python tools/gen_stubs.py): do not edit.
# Change the bindings in cpp/bindings/, rebuild, and rerun the command.
"""
fieldrank native core: prefilter, CFS-R, CFS, MMR, Ring, weighted RRF, the reduced-precision scans, the temporal leg, BM25 scoring and the memory store's candidate kernels (C++17/Eigen, the GIL released in every kernel call).

Arrays are taken without conversion (.noconvert()): float32 or int64 as annotated, C-contiguous where flagged, of the stated rank; anything else raises TypeError. Parameters are not checked here beyond sizes and ids: call the validated wrappers in fieldrank (fieldrank.operators), which convert once and check every argument. This stub is generated: python tools/gen_stubs.py.
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['DEFAULTS', 'FUSED_FACTORS', 'FUSED_FACTOR_NAMES', 'NativeBatchRanking', 'NativeBatchReconstruction', 'NativeFusedRanking', 'NativeFusionParams', 'NativeRanking', 'NativeReconstruction', 'NativeTemporalMoments', 'NativeTemporalRanking', 'bm25_scores_batch', 'build_info', 'cfs', 'cfs_batch', 'cfs_pool', 'cfsr', 'cfsr_batch', 'cfsr_pool', 'compiled_kernel_variants', 'cpu_features', 'hardware_threads', 'kernel_variant', 'memory_decay_exponents', 'memory_fuse', 'memory_protected_order', 'memory_ranks_of', 'memory_relevance_tail', 'memory_reserve_slots', 'memory_sorted_unique', 'mmr', 'mmr_batch', 'mmr_pool', 'prefilter', 'prefilter_batch', 'prefilter_bf16', 'prefilter_bf16_batch', 'prefilter_int8', 'prefilter_int8_batch', 'prefilter_pool', 'quantize_bf16', 'quantize_int8', 'read_probe', 'ring', 'ring_batch', 'ring_pool', 'rrf', 'rrf_batch', 'rrf_unchecked', 'set_kernel_variant', 'sparse_scores_batch', 'supported_kernel_variants', 'temporal_batch', 'temporal_moments', 'tie_key']
class NativeRanking:
    """
    ids (int64) best first and their float32 scores.
    """
    @property
    def ids(self) -> typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"]:
        ...
    @property
    def scores(self) -> typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"]:
        ...
class NativeReconstruction:
    """
    ids, float32 scores and CFS-R coefficients.
    """
    @property
    def coef(self) -> typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"]:
        ...
    @property
    def ids(self) -> typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"]:
        ...
    @property
    def scores(self) -> typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"]:
        ...
class NativeBatchRanking:
    """
    (B, m) ids and scores, one row per query.
    """
    @property
    def ids(self) -> typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, n]"]:
        ...
    @property
    def scores(self) -> typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]"]:
        ...
class NativeBatchReconstruction:
    """
    (B, m) ids, scores and coefficients.
    """
    @property
    def coef(self) -> typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]"]:
        ...
    @property
    def ids(self) -> typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, n]"]:
        ...
    @property
    def scores(self) -> typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]"]:
        ...
class NativeFusedRanking:
    """
    Fused ids and their float64 RRF scores.
    """
    @property
    def ids(self) -> typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"]:
        ...
    @property
    def scores(self) -> typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"]:
        ...
class NativeFusionParams:
    """
    Constants of the memory store's fused score.
    """
    def __init__(self, sim_floor: typing.SupportsFloat | typing.SupportsIndex, importance_floor: typing.SupportsFloat | typing.SupportsIndex, durable_importance: typing.SupportsFloat | typing.SupportsIndex, importance_boost: typing.SupportsFloat | typing.SupportsIndex, tag_boost: typing.SupportsFloat | typing.SupportsIndex, graph_boost: typing.SupportsFloat | typing.SupportsIndex, graph_boost_min: typing.SupportsFloat | typing.SupportsIndex, entity_boost: typing.SupportsFloat | typing.SupportsIndex, valence_weight: typing.SupportsFloat | typing.SupportsIndex, valence_min: typing.SupportsFloat | typing.SupportsIndex, valence_max: typing.SupportsFloat | typing.SupportsIndex, strength_min: typing.SupportsFloat | typing.SupportsIndex, strength_max: typing.SupportsFloat | typing.SupportsIndex, storage_min: typing.SupportsFloat | typing.SupportsIndex, core_tier: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class NativeTemporalRanking:
    """
    (B, m) ids and float64 scores of the temporal leg.
    """
    @property
    def cosines(self) -> typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, n]"]:
        """
        with row_order and alpha < 1: (B, n) float64 cosines of the rows, in the order of rows; else empty
        """
    @property
    def ids(self) -> typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, n]"]:
        ...
    @property
    def scores(self) -> typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, n]"]:
        ...
    @property
    def screened(self) -> int:
        """
        With moments: the queries the fp32 screen resolved (the others were scored in full).
        """
class NativeTemporalMoments:
    """
    Moments of a corpus's rows for the temporal leg over all of them (temporal_moments).
    """
    @property
    def centred(self) -> typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, n]", "flags.c_contiguous"]:
        """
        (d, d) float64 centred second moment sum_i (e_i - mu)(e_i - mu)^T, mu = sum / N (a read-only view).
        """
    @property
    def dim(self) -> int:
        ...
    @property
    def max_norm_sq(self) -> float:
        ...
    @property
    def rows(self) -> int:
        ...
    @property
    def sum(self) -> typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"]:
        """
        (d,) float64 sum of the rows (a read-only view).
        """
def bm25_scores_batch(data: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], indices: typing.Annotated[numpy.typing.NDArray[numpy.int32], "[m, 1]"], indptr: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], n_docs: typing.SupportsInt | typing.SupportsIndex, token_offsets: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], token_ids: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], doc_begin: typing.SupportsInt | typing.SupportsIndex = 0, doc_end: typing.SupportsInt | typing.SupportsIndex | None = None, sorted_postings: bool = False, n_threads: typing.SupportsInt | typing.SupportsIndex = 0) -> typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]"]:
    """
    BM25 scores (B, doc_end - doc_begin) float32 of the documents [doc_begin, doc_end) (default: all n_docs) from an eager term-major index (bm25s's CSC arrays: data (nnz,) float32, indices (nnz,) int32 documents, indptr (n_terms + 1,) int64), query b's token ids token_ids[token_offsets[b]:token_offsets[b + 1]] (int64; token_offsets (B + 1,) int64). sorted_postings=True (every term's documents increasing) reads only the block's part of each list. Added in float32 in bm25s's order: bit-identical to bm25s.BM25.get_scores_from_ids (without the BM25L/BM25+ non-occurrence term). Raises IndexError for a token id or posting out of range.
    """
def build_info() -> dict[str, str]:
    """
    Compiler, flags of every kernel variant, build type and Eigen version of this binary.
    """
def cfs(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], k: typing.SupportsInt | typing.SupportsIndex, p: typing.SupportsInt | typing.SupportsIndex, sigma: typing.SupportsFloat | typing.SupportsIndex, beta: typing.SupportsFloat | typing.SupportsIndex, eps: typing.SupportsFloat | typing.SupportsIndex, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None) -> NativeRanking:
    """
    CFS greedy picks over the prefilter top-p of E (N, d) float32. Returns NativeRanking.
    """
def cfs_batch(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], Q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], k: typing.SupportsInt | typing.SupportsIndex, p: typing.SupportsInt | typing.SupportsIndex, sigma: typing.SupportsFloat | typing.SupportsIndex, beta: typing.SupportsFloat | typing.SupportsIndex, eps: typing.SupportsFloat | typing.SupportsIndex, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None, n_threads: typing.SupportsInt | typing.SupportsIndex = 0) -> NativeBatchRanking:
    """
    cfs for every row of Q (B, d) float32. Returns NativeBatchRanking.
    """
def cfs_pool(ids: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], C: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], k: typing.SupportsInt | typing.SupportsIndex, sigma: typing.SupportsFloat | typing.SupportsIndex, beta: typing.SupportsFloat | typing.SupportsIndex, eps: typing.SupportsFloat | typing.SupportsIndex, sims: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"] | None = None) -> NativeRanking:
    """
    CFS over a caller's pool: ids (P,) int64 unique, C (P, d) float32 C-order, optional sims (P,) float32 cosines. Returns NativeRanking of min(k, P).
    """
def cfsr(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], k: typing.SupportsInt | typing.SupportsIndex, p: typing.SupportsInt | typing.SupportsIndex, w: typing.SupportsFloat | typing.SupportsIndex, lam: typing.SupportsFloat | typing.SupportsIndex, iters: typing.SupportsInt | typing.SupportsIndex, tol: typing.SupportsFloat | typing.SupportsIndex, fista: bool, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None) -> NativeReconstruction:
    """
    CFS-R over the prefilter top-p of E (N, d) float32 for q (d,) float32. Returns NativeReconstruction of min(k, p, n) ids, blended scores and coefficients.
    """
def cfsr_batch(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], Q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], k: typing.SupportsInt | typing.SupportsIndex, p: typing.SupportsInt | typing.SupportsIndex, w: typing.SupportsFloat | typing.SupportsIndex, lam: typing.SupportsFloat | typing.SupportsIndex, iters: typing.SupportsInt | typing.SupportsIndex, tol: typing.SupportsFloat | typing.SupportsIndex, fista: bool, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None, n_threads: typing.SupportsInt | typing.SupportsIndex = 0) -> NativeBatchReconstruction:
    """
    cfsr for every row of Q (B, d) float32. Returns NativeBatchReconstruction.
    """
def cfsr_pool(ids: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], C: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], k: typing.SupportsInt | typing.SupportsIndex, w: typing.SupportsFloat | typing.SupportsIndex, lam: typing.SupportsFloat | typing.SupportsIndex, iters: typing.SupportsInt | typing.SupportsIndex, tol: typing.SupportsFloat | typing.SupportsIndex, fista: bool, sims: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"] | None = None) -> NativeReconstruction:
    """
    CFS-R over a caller's pool: ids (P,) int64, C (P, d) float32, optional sims (P,) float32.
    """
def compiled_kernel_variants() -> list[str]:
    """
    Kernel variants in this build.
    """
def cpu_features() -> str:
    """
    CPU features the dispatcher detected.
    """
def hardware_threads(n_threads: typing.SupportsInt | typing.SupportsIndex = 0) -> int:
    """
    Threads a call with this n_threads uses (0 or less: all cores).
    """
def kernel_variant() -> str:
    """
    Name of the kernel variant in use.
    """
def memory_decay_exponents(rows: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], last_access: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"], storage_strength: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"], at_time: typing.SupportsFloat | typing.SupportsIndex, seconds_per_day: typing.SupportsFloat | typing.SupportsIndex, half_life_days: typing.SupportsFloat | typing.SupportsIndex, storage_min: typing.SupportsFloat | typing.SupportsIndex) -> typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"]:
    """
    Exponents x (m,) float64 of the retrieval strength 2^x of rows (m,) int64: -(max(at_time - last_access, 0) / seconds_per_day / half_life_days) / max(S, storage_min).
    """
def memory_fuse(rows: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], relevance_by_row: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"], importance: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"], storage_strength: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"], tier_codes: typing.Annotated[numpy.typing.NDArray[numpy.int8], "[m, 1]"], valence: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"], decay: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"], activation: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"], params: NativeFusionParams, cosine: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"] | None = None, tag_containment: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"] | None = None, entity_containment: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"] | None = None, other_entity: typing.Annotated[numpy.typing.NDArray[numpy.bool], "[m, 1]"] | None = None, cue_valence: typing.SupportsFloat | typing.SupportsIndex | None = None) -> tuple[typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, n]"], typing.Annotated[numpy.typing.NDArray[numpy.bool], "[m, 1]"]]:
    """
    Every factor and the fused score of the candidate rows (m,) int64 over (n,) float64 / int8 columns; decay (2^exponent), activation, cosine (None: the cosine and sim rows are NaN), tag/entity containment (None: 0) and other_entity (bool, None: none) per candidate; cue_valence None: V = 1. Returns ((FUSED_FACTORS, m) float64 factors, one per row in FUSED_FACTOR_NAMES order, durable (m,) bool).
    """
def memory_protected_order(candidates: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], relevance_by_row: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"], tier_rows: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], tier_z: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"]) -> tuple[typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"]]:
    """
    The protected tier's order: candidates (m,) int64 sorted unique rows by memory-side z (tier_z (t,) float64 of the sorted unique tier_rows (t,) int64; +inf for a candidate not among them) and by relevance_by_row (n,) float64, best first, ties to the lower row, interleaved keeping first places; a NaN z or relevance is refused. Returns (interleaved rows, rows by z, their z).
    """
def memory_ranks_of(wanted: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], admitted: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"]) -> typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"]:
    """
    1-based rank of each of wanted (k,) int64 in admitted (m,) int64 (best first); 0: not admitted.
    """
def memory_relevance_tail(scores: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"], rows: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], isolated: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None, all_isolated: bool, gamma: typing.SupportsFloat | typing.SupportsIndex, n: typing.SupportsInt | typing.SupportsIndex, depth: typing.SupportsInt | typing.SupportsIndex) -> tuple[typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"], typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, 1]"]]:
    """
    The relevance core's tail: finite scores (m,) float64 of rows (m,) int64 sorted unique below n >= 0; isolated (positions into rows, int64, or None) or all_isolated=True get s + gamma * max(s, 0). Returns (by_row (n,) float64, -inf where not a row; the best depth rows, ties to the lower row; their scores).
    """
def memory_reserve_slots(order: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], chosen: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], k: typing.SupportsInt | typing.SupportsIndex) -> tuple[typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"]]:
    """
    The reserved share of k >= 1: order (m,) int64, each position of 0 .. m - 1 once, best first; chosen (c,) int64 distinct positions best first that must end in the top k. Returns (the new order, the positions that entered).
    """
def memory_sorted_unique(rows: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"]) -> typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"]:
    """
    Sorted unique values of rows (m,) int64.
    """
def mmr(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], k: typing.SupportsInt | typing.SupportsIndex, p: typing.SupportsInt | typing.SupportsIndex, mu: typing.SupportsFloat | typing.SupportsIndex, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None) -> NativeRanking:
    """
    MMR greedy picks over the prefilter top-p of E (N, d) float32. Returns NativeRanking.
    """
def mmr_batch(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], Q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], k: typing.SupportsInt | typing.SupportsIndex, p: typing.SupportsInt | typing.SupportsIndex, mu: typing.SupportsFloat | typing.SupportsIndex, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None, n_threads: typing.SupportsInt | typing.SupportsIndex = 0) -> NativeBatchRanking:
    """
    mmr for every row of Q (B, d) float32. Returns NativeBatchRanking.
    """
def mmr_pool(ids: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], C: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], k: typing.SupportsInt | typing.SupportsIndex, mu: typing.SupportsFloat | typing.SupportsIndex, sims: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"] | None = None) -> NativeRanking:
    """
    MMR over a caller's pool: ids (P,) int64 unique, C (P, d) float32 C-order, optional sims (P,) float32 cosines. Returns NativeRanking of min(k, P).
    """
def prefilter(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], p: typing.SupportsInt | typing.SupportsIndex, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None) -> NativeRanking:
    """
    Top-p rows of E (N, d) float32 C-order by dot product with q (d,) float32; subset (n,) int64 restricts the rows. Returns NativeRanking.
    """
def prefilter_batch(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], Q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], p: typing.SupportsInt | typing.SupportsIndex, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None, n_threads: typing.SupportsInt | typing.SupportsIndex = 0) -> NativeBatchRanking:
    """
    prefilter for every row of Q (B, d) float32 C-order. Returns NativeBatchRanking of (B, min(p, n)).
    """
def prefilter_bf16(codes: typing.Annotated[numpy.typing.NDArray[numpy.uint16], "[m, n]", "flags.c_contiguous"], E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], p: typing.SupportsInt | typing.SupportsIndex, rescore_factor: typing.SupportsInt | typing.SupportsIndex, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None) -> NativeRanking:
    """
    Top-(rescore_factor·p) rows by the bf16 codes, rescored exactly from E; returns NativeRanking of min(p, n).
    """
def prefilter_bf16_batch(codes: typing.Annotated[numpy.typing.NDArray[numpy.uint16], "[m, n]", "flags.c_contiguous"], E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], Q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], p: typing.SupportsInt | typing.SupportsIndex, rescore_factor: typing.SupportsInt | typing.SupportsIndex, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None, n_threads: typing.SupportsInt | typing.SupportsIndex = 0) -> NativeBatchRanking:
    """
    prefilter_bf16 for every row of Q (B, d) float32. Returns NativeBatchRanking.
    """
def prefilter_int8(codes: typing.Annotated[numpy.typing.NDArray[numpy.int8], "[m, n]", "flags.c_contiguous"], scale: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], sums: typing.Annotated[numpy.typing.NDArray[numpy.int32], "[m, 1]"], E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], p: typing.SupportsInt | typing.SupportsIndex, rescore_factor: typing.SupportsInt | typing.SupportsIndex, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None) -> NativeRanking:
    """
    Top-(rescore_factor·p) rows by the int8 codes, rescored exactly from E; returns NativeRanking of min(p, n).
    """
def prefilter_int8_batch(codes: typing.Annotated[numpy.typing.NDArray[numpy.int8], "[m, n]", "flags.c_contiguous"], scale: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], sums: typing.Annotated[numpy.typing.NDArray[numpy.int32], "[m, 1]"], E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], Q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], p: typing.SupportsInt | typing.SupportsIndex, rescore_factor: typing.SupportsInt | typing.SupportsIndex, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None, n_threads: typing.SupportsInt | typing.SupportsIndex = 0) -> NativeBatchRanking:
    """
    prefilter_int8 for every row of Q (B, d) float32. Returns NativeBatchRanking.
    """
def prefilter_pool(ids: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], C: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], p: typing.SupportsInt | typing.SupportsIndex) -> NativeRanking:
    """
    Top-p of a caller's pool: ids (P,) int64 unique, C (P, d) float32 C-order.
    """
def quantize_bf16(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], codes: typing.Annotated[numpy.typing.NDArray[numpy.uint16], "[m, n]", "flags.writeable", "flags.c_contiguous"]) -> None:
    """
    Writes the bf16 copy of E (N, d) float32 (round to nearest even) into codes (N, d) uint16.
    """
def quantize_int8(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], codes: typing.Annotated[numpy.typing.NDArray[numpy.int8], "[m, n]", "flags.writeable", "flags.c_contiguous"], scale: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]", "flags.writeable"], sums: typing.Annotated[numpy.typing.NDArray[numpy.int32], "[m, 1]", "flags.writeable"]) -> None:
    """
    Writes the int8 copy of E (N, d) float32 into codes (N, d) int8, scale (N,) float32 and sums (N,) int32 (row ≈ codes · scale).
    """
def read_probe(x: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], n_threads: typing.SupportsInt | typing.SupportsIndex = 1) -> float:
    """
    Sum of x (float32, contiguous) read once by n_threads threads: time it for the read bandwidth.
    """
def ring(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], k: typing.SupportsInt | typing.SupportsIndex, alpha: typing.SupportsFloat | typing.SupportsIndex, laps: typing.SupportsInt | typing.SupportsIndex, seed: typing.SupportsInt | typing.SupportsIndex, ablation: bool, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None) -> NativeRanking:
    """
    Ring survival laps over the prefilter top-(2k) of E (N, d) float32. Returns NativeRanking of min(k, n).
    """
def ring_batch(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], Q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], k: typing.SupportsInt | typing.SupportsIndex, alpha: typing.SupportsFloat | typing.SupportsIndex, laps: typing.SupportsInt | typing.SupportsIndex, seed: typing.SupportsInt | typing.SupportsIndex, ablation: bool, subset: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None, n_threads: typing.SupportsInt | typing.SupportsIndex = 0) -> NativeBatchRanking:
    """
    ring for every row of Q (B, d) float32. Returns NativeBatchRanking.
    """
def ring_pool(ids: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], C: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], k: typing.SupportsInt | typing.SupportsIndex, alpha: typing.SupportsFloat | typing.SupportsIndex, laps: typing.SupportsInt | typing.SupportsIndex, seed: typing.SupportsInt | typing.SupportsIndex, ablation: bool, sims: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"] | None = None) -> NativeRanking:
    """
    Ring over a caller's whole pool: ids (P,) int64 unique, C (P, d) float32 C-order, optional sims (P,) float32 cosines. Returns NativeRanking of min(k, P).
    """
def rrf(rankings: collections.abc.Sequence[typing.Annotated[numpy.typing.ArrayLike, numpy.int64, "[m, 1]"]], weights: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], k: typing.SupportsInt | typing.SupportsIndex, k0: typing.SupportsFloat | typing.SupportsIndex) -> NativeFusedRanking:
    """
    Weighted RRF of int64 id rankings (best first). Returns NativeFusedRanking of up to k ids.
    """
def rrf_batch(rankings: collections.abc.Sequence[collections.abc.Sequence[typing.Annotated[numpy.typing.ArrayLike, numpy.int64, "[m, 1]"]]], weights: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], k: typing.SupportsInt | typing.SupportsIndex, k0: typing.SupportsFloat | typing.SupportsIndex, n_threads: typing.SupportsInt | typing.SupportsIndex = 0) -> list[NativeFusedRanking]:
    """
    rrf for every query's list of rankings. Returns a list of NativeFusedRanking.
    """
def rrf_unchecked(rankings: collections.abc.Sequence[typing.Annotated[numpy.typing.ArrayLike, numpy.int64]], weights: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], k: typing.SupportsInt | typing.SupportsIndex, k0: typing.SupportsFloat | typing.SupportsIndex) -> NativeFusedRanking:
    """
    rrf without its checks, for callers that guarantee them (one finite weight >= 0 per ranking, k > 0, k0 >= 0, no id twice in a ranking); C-ordered int64 rankings are read in place, other integer dtypes or strided views are converted (a copy of that ranking).
    """
def set_kernel_variant(variant: str) -> None:
    """
    Switch the kernel variant for every later call (ValueError if unknown or not runnable here).
    """
def sparse_scores_batch(data: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], indices: typing.Annotated[numpy.typing.NDArray[numpy.int32], "[m, 1]"], indptr: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], n_docs: typing.SupportsInt | typing.SupportsIndex, query_offsets: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], query_terms: typing.Annotated[numpy.typing.NDArray[numpy.int32], "[m, 1]"], query_weights: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, 1]"], doc_begin: typing.SupportsInt | typing.SupportsIndex = 0, doc_end: typing.SupportsInt | typing.SupportsIndex | None = None, sorted_postings: bool = False, n_threads: typing.SupportsInt | typing.SupportsIndex = 0) -> typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]"]:
    """
    Weighted-postings scores (B, doc_end - doc_begin) float32 of the documents [doc_begin, doc_end) (default: all n_docs) from a term-major index (CSC arrays: data (nnz,) float32 weights, indices (nnz,) int32 documents, indptr (n_terms + 1,) int64), query b's pairs query_terms/query_weights[query_offsets[b]:query_offsets[b + 1]] (int32 terms, float32 weights; query_offsets (B + 1,) int64: a CSR query batch read in place). Each score is the float32 sum of float32 products weight * entry, pairs in query order, postings in stored order; sorted_postings=True (every term's documents increasing) reads only the block's part of each list. Rows do not depend on n_threads. Raises IndexError for a term or posting out of range.
    """
def supported_kernel_variants() -> list[str]:
    """
    Kernel variants this build contains and this CPU can run, best last.
    """
def temporal_batch(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], Q: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], session: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"], alpha: typing.SupportsFloat | typing.SupportsIndex, gamma: typing.SupportsFloat | typing.SupportsIndex, radius: typing.SupportsInt | typing.SupportsIndex, decay: typing.SupportsFloat | typing.SupportsIndex, tau: typing.SupportsFloat | typing.SupportsIndex, delta: typing.SupportsFloat | typing.SupportsIndex, before_days: typing.SupportsInt | typing.SupportsIndex, after_days: typing.SupportsInt | typing.SupportsIndex, k: typing.SupportsInt | typing.SupportsIndex, lexical32: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"] | None = None, lexical64: typing.Annotated[numpy.typing.NDArray[numpy.float64], "[m, n]", "flags.c_contiguous"] | None = None, rows: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None, cue: typing.Annotated[numpy.typing.NDArray[numpy.uint8], "[m, 1]"] | None = None, day: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None, intent: typing.Annotated[numpy.typing.NDArray[numpy.uint8], "[m, 1]"] | None = None, window_offsets: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None, window_days: typing.Annotated[numpy.typing.NDArray[numpy.int64], "[m, 1]"] | None = None, check_rows: bool = True, n_threads: typing.SupportsInt | typing.SupportsIndex = 0, row_order: bool = False, moments: NativeTemporalMoments | None = None, screen: bool = True) -> NativeTemporalRanking:
    """
    The time-aware leg for every row of Q (B, d) float32 over E (N, d) float32 (fieldrank.temporal), session (N,) int64 keys, the leg's parameters and k; lexical (B, N) float32 or float64 scores (one of lexical32 / lexical64; none when alpha == 0), rows (n,) sorted unique int64 (None: all N), cue (N,) uint8, day (N,) int64 session days (INT64_MIN: none), intent (B,) uint8, window_offsets (B + 1,) int64 into window_days (2W,) int64 inclusive (start, end) day pairs. check_rows=False skips the per-row finite / norm check for a corpus validated once. Returns NativeTemporalRanking of (B, min(k, n)); row_order=True: scores (B, n) of every row in the order of rows (all N when None), ids empty, k unused. moments (temporal_moments of this E): over all rows (rows None, top-k, alpha < 1) the cosines' mean and sd come from them and fp32 cosines screen the rows, only those near the k-th score re-scored in double; screen=False scores every row in double with the same statistics (the same result).
    """
def temporal_moments(E: typing.Annotated[numpy.typing.NDArray[numpy.float32], "[m, n]", "flags.c_contiguous"], n_threads: typing.SupportsInt | typing.SupportsIndex = 0) -> NativeTemporalMoments:
    """
    Moments of E (N, d) float32 for temporal_batch(moments=): sum (d,) = sum of the rows, centred (d, d) = sum of the outer products of the rows minus their mean, max_norm_sq, all float64, the same bits for any n_threads (two passes over E, split across threads). They belong to this array: temporal_batch refuses them with another one, and E must not be modified in place afterwards.
    """
def tie_key(seed: typing.SupportsInt | typing.SupportsIndex, lap: typing.SupportsInt | typing.SupportsIndex, id: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    Ring's seeded tie draw for (seed, lap, id): splitmix64, a uint64.
    """
DEFAULTS: dict = {'w': 0.9, 'lam': 0.005, 'p': 150, 'iters': 80, 'cfsr_k': 50, 'tol': 0.0, 'sigma': 0.4, 'beta': 0.2, 'eps': 1e-06, 'cfs_k': 50, 'k0': 60.0, 'k': 10, 'mu': 0.5, 'mmr_k': 10, 'alpha': 0.3, 'laps': 3, 'ring_k': 10, 'ring_pool_factor': 2, 'seed': 0, 'ring_ablation_bump': 0.02, 'temporal_alpha': 0.5, 'temporal_gamma': 0.5, 'temporal_radius': 2, 'temporal_decay': 0.5, 'temporal_tau': 1.0, 'temporal_delta': 1.5, 'temporal_before_days': 7, 'temporal_after_days': 14, 'temporal_moments_min_rows_per_dim': 16, 'memory_parallel_leg_min_bytes': 33554432, 'lambda_max_rel_tol': 1e-06, 'lambda_max_max_steps': 64, 'min_row_norm_sq': 1e-24, 'unit_norm_atol': 0.001, 'parallel_min_batch': 2, 'quantized_rescore_factor': 4, 'int8_max_dim': 16384}
FUSED_FACTORS: int = 16
FUSED_FACTOR_NAMES: tuple = ('cosine', 'sim', 'importance_norm', 'retrieval_strength', 'storage_strength', 'storage_bounded', 'importance_term', 'valence', 'tag_containment', 'tag_term', 'graph_activation', 'graph', 'entity_containment', 'entity', 'relevance', 'score')
