// The one table of default parameters. Python reads it as fieldrank.DEFAULTS; no number
// here is retyped anywhere else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>
#include <string>

namespace fieldrank {
namespace defaults {

// Locked values from the write-ups (docs/spec.md §2, §3, §6).
inline constexpr double cfsr_w = 0.90;       // blend weight of the reconstruction coefficient
inline constexpr double cfsr_lam = 0.005;    // ridge weight λ
inline constexpr std::int64_t pool_p = 150;  // prefilter depth P
inline constexpr std::int64_t cfsr_iters = 80;  // projected-gradient iterations T
inline constexpr std::int64_t cfsr_k = 50;   // CFS-R leg depth m
inline constexpr double cfsr_tol = 0.0;      // early stop on the projected-gradient norm; 0 = off
inline constexpr double cfs_sigma = 0.40;    // kernel width σ
inline constexpr double cfs_beta = 0.20;     // field weight β
inline constexpr double cfs_eps = 1e-6;      // log floor ε
inline constexpr std::int64_t cfs_k = 50;    // CFS-long leg depth
inline constexpr double rrf_k0 = 60.0;       // RRF rank offset k₀
inline constexpr std::int64_t final_k = 10;  // results returned by a hybrid query

// Baselines and Ring: not locked by the write-ups; fitted on the tuning split.
inline constexpr double mmr_mu = 0.5;        // relevance weight μ of MMR
inline constexpr std::int64_t mmr_k = 10;
inline constexpr double ring_alpha = 0.3;    // neighbour weight α of a Ring lap
inline constexpr std::int64_t ring_laps = 3; // survival laps L
inline constexpr std::int64_t ring_k = 10;
inline constexpr std::int64_t ring_pool_factor = 2;  // Ring's pool is the prefilter top-(factor·k)
inline constexpr std::uint64_t ring_seed = 0;
inline constexpr double ring_ablation_bump = 0.02;   // the archived constant per-lap bump

// The time-aware leg's formula (TemporalParams; the `default` preset sets its own, calibrated).
inline constexpr double temporal_alpha = 0.5;       // lexical share of the base blend
inline constexpr double temporal_gamma = 0.5;       // weight of the neighbour support
inline constexpr std::int64_t temporal_radius = 2;  // same-session neighbours i ± 1 … i ± radius
inline constexpr double temporal_decay = 0.5;       // factor per extra step of distance
inline constexpr double temporal_tau = 1.0;         // time-cue boost for queries with time intent
inline constexpr double temporal_delta = 1.5;       // boost for rows whose session day is in a named period
inline constexpr std::int64_t temporal_before_days = 7;   // slack before a named period
inline constexpr std::int64_t temporal_after_days = 14;   // slack after a named period

// Numerics.
inline constexpr double lambda_max_rel_tol = 1e-6;   // λ_max(G) by Lanczos, relative residual bound
inline constexpr std::int64_t lambda_max_max_steps = 64;
inline constexpr double min_row_norm_sq = 1e-24;     // below this a row counts as zero-norm
// Operators rank by dot product, which is the cosine only for unit rows: a corpus row whose L2
// norm differs from 1 by more than this is rejected (checked in the scan that scores it).
inline constexpr double unit_norm_atol = 1e-3;

// Threads: batches smaller than this run on the calling thread.
inline constexpr std::int64_t parallel_min_batch = 2;

// Reduced-precision prefilter: the quantized scan keeps the top (factor · p) rows, which are then
// rescored exactly in fp32 (pool recall@150 >= 0.999 at this factor: docs/results/performance.md).
inline constexpr std::int64_t quantized_rescore_factor = 4;
inline constexpr std::int64_t int8_max_dim = 16384;  // int32 sums of d products of |x| <= 255·127 stay exact

// Scan tuning (not user parameters): rows scored per kernel call (their scores sit in a small
// block buffer, never an N-length array), queries scored together per pass over a block, and
// the fewest rows a thread's chunk gets when one pass over E is split across threads.
inline constexpr std::int64_t scan_block_rows = 128;
inline constexpr std::int64_t scan_stream_block_rows = 1024;  // one query over contiguous rows
// One query over contiguous rows prefetches each row from about this many bytes ahead (a third
// of a 48 KiB L1; 4 and 24 KiB ahead were slower: docs/design.md, "The scan").
inline constexpr std::int64_t scan_prefetch_bytes = 12288;
inline constexpr std::int64_t scan_query_group = 16;
inline constexpr std::int64_t scan_min_chunk_rows = 8192;
inline constexpr std::int64_t scan_chunks_per_thread = 2;
// A chunk of at most this many times p candidate rows keeps all scores and selects once.
inline constexpr std::int64_t scan_select_all_factor = 4;
// cfsr_batch over a subset of at most this many rows computes the subset's Gram matrix once
// (n² floats) when the batch's pools would otherwise compute more dot products than that.
inline constexpr std::int64_t cfsr_shared_gram_max_rows = 2048;
// CFS-R rescales the pool's Gram matrix by 2^-g only when λ_max + λ lies outside 2^±this: power-
// of-two scaling is exact, so skipping it where float32 has room to spare changes no bit and
// saves a pass over the P × P matrix per query.
inline constexpr int cfsr_gram_rescale_min_exponent = 60;
// The temporal leg holds the float64 cosines of a block of queries with its rows (all scores of a
// query are needed before its z-normalisation): blocks are sized to stay under this many bytes.
inline constexpr std::int64_t temporal_block_bytes = std::int64_t{64} << 20;
// Queries scored together over a chunk of rows by the temporal leg's double kernel: their float64
// copies (d · 8 bytes each) then stay in L1 beside the rows.
inline constexpr std::int64_t temporal_query_group = 4;
// Rows of at most this many bytes (float32) stay in cache across query groups: the temporal leg
// then gives each thread whole query groups (one parallel region) instead of splitting the rows.
inline constexpr std::int64_t temporal_cache_resident_bytes = std::int64_t{4} << 20;
// The temporal leg over all N rows of a retriever's corpus (TemporalMoments, docs/design.md): the
// cosines' mean and variance come from the corpus moments, cosines are screened in fp32 and only
// the rows near the k-th score are re-scored in double.
// The moments pay over N >= this many rows per dimension: a query reads the lower triangle of M,
// 4·d² bytes, against 4·N·d bytes of rows (1/16 of them here); over fewer rows the double pass
// is as fast (the retriever passes no moments there).
inline constexpr std::int64_t temporal_moments_min_rows_per_dim = 16;
// A query keeps the exact pairwise statistics unless the rigorous bounds on the rounding of its
// moments' mean and variance (query_moments, temporal.hpp) are at most this share of sd and var:
// their relative error then moves a z-score by at most this share of itself (typically ~1e-15;
// duplicated rows, N = 1, a query orthogonal to the corpus's spread fall back).
inline constexpr double temporal_moments_max_stat_error = 1e-8;
// The memory store's relevance core runs its leg on every core from this many bytes of eligible
// embeddings (rows x dim x 4) and on the calling thread below it: under a typical 32 MB last-level
// cache one recall's cosine pass takes about as long as starting and joining the workers
// (10k x 384: p50 0.29 ms on every core, 0.25 ms on one; 50k: 1.6 ms on every core, 2.5 ms on one).
inline constexpr std::int64_t memory_parallel_leg_min_bytes = std::int64_t{32} << 20;
// Rows per block of the memory relevance tail's top selection: a block whose every score is below
// the running threshold is skipped by one vectorisable test.
inline constexpr std::int64_t memory_top_block_rows = 16;
// Weighted RRF finds an id's accumulator by a linear scan up to this many ids in all (two short
// lists: faster than hashing), by a hash table above it.
inline constexpr std::size_t rrf_linear_lookup_max = 64;
// Corpus rows per block of the moments: a block's products are summed from 0 in row order, then
// the blocks' sums in block order (fixed by N alone); a sum's rounding depth is then 256 + N/256
// (the bound of query_moments), and a centred block of 256 rows (float64) stays in L2.
inline constexpr std::int64_t temporal_moments_block_rows = 256;
// Dimensions of C's lower triangle per task of the moments (its rows [g0, g0 + 64)): threads take
// whole disjoint groups, each summing its blocks in row order (the same bits for any thread count);
// each call also computes the square above the diagonal, so smaller groups waste less, and 64
// keeps each call long enough.
inline constexpr std::int64_t temporal_moments_group_dims = 64;
// The screen's bound on the rounding of one score's double operations, in units of float64's unit
// roundoff times the largest magnitude a term can take: the blend, the support and the priors round
// at most 12 times per score (errors of a neighbour's base pass through the support with factors
// <= 1), 24 for the approximate and the exact score together; 32 leaves margin.
inline constexpr double temporal_screen_rounding_terms = 32.0;
// Rows per block of the screen's selection: the k-th approximate score is selected from the rows of
// the blocks whose largest score reaches the k-th largest block maximum (a few blocks), not from all.
inline constexpr std::int64_t temporal_screen_block_rows = 64;
// The screen's ε (and the moments' error bounds) are computed in double themselves: scaled up by
// this relative margin (2^-20, far above the few roundings of the bound's own formula).
inline constexpr double temporal_bound_margin = 0x1p-20;
// A query whose screen keeps more than 1/this of the rows (a nearly constant cosine column) is
// re-scored in full instead: same result, fewer gathers.
inline constexpr std::int64_t temporal_screen_max_candidate_share = 8;
// fp32 cosines are screened only while ||q|| max||e_i|| stays below this (2^100): far from float32
// overflow, so the fp32 sums are finite and the error bound holds; larger queries are scored in double.
inline constexpr double temporal_screen_max_scale = 1.2676506002282294e30;
// One query's fp32 screen reads rows of more than this many bytes as one stream (beyond the
// last-level cache, where it reads fastest), smaller ones in prefetched tiles.
inline constexpr std::int64_t temporal_stream_min_bytes = std::int64_t{64} << 20;

}  // namespace defaults

// The table as (name, value) pairs for the bindings to expose; integers stay integers.
struct DefaultEntry {
    const char* name;
    double real_value;
    std::int64_t int_value;
    bool is_integer;
};

inline std::vector<DefaultEntry> default_table() {
    using namespace defaults;
    auto real = [](const char* n, double v) { return DefaultEntry{n, v, 0, false}; };
    auto integer = [](const char* n, std::int64_t v) { return DefaultEntry{n, 0.0, v, true}; };
    return {
        real("w", cfsr_w),
        real("lam", cfsr_lam),
        integer("p", pool_p),
        integer("iters", cfsr_iters),
        integer("cfsr_k", cfsr_k),
        real("tol", cfsr_tol),
        real("sigma", cfs_sigma),
        real("beta", cfs_beta),
        real("eps", cfs_eps),
        integer("cfs_k", cfs_k),
        real("k0", rrf_k0),
        integer("k", final_k),
        real("mu", mmr_mu),
        integer("mmr_k", mmr_k),
        real("alpha", ring_alpha),
        integer("laps", ring_laps),
        integer("ring_k", ring_k),
        integer("ring_pool_factor", ring_pool_factor),
        integer("seed", static_cast<std::int64_t>(ring_seed)),
        real("ring_ablation_bump", ring_ablation_bump),
        real("temporal_alpha", temporal_alpha),
        real("temporal_gamma", temporal_gamma),
        integer("temporal_radius", temporal_radius),
        real("temporal_decay", temporal_decay),
        real("temporal_tau", temporal_tau),
        real("temporal_delta", temporal_delta),
        integer("temporal_before_days", temporal_before_days),
        integer("temporal_after_days", temporal_after_days),
        integer("temporal_moments_min_rows_per_dim", temporal_moments_min_rows_per_dim),
        integer("memory_parallel_leg_min_bytes", memory_parallel_leg_min_bytes),
        real("lambda_max_rel_tol", lambda_max_rel_tol),
        integer("lambda_max_max_steps", lambda_max_max_steps),
        real("min_row_norm_sq", min_row_norm_sq),
        real("unit_norm_atol", unit_norm_atol),
        integer("parallel_min_batch", parallel_min_batch),
        integer("quantized_rescore_factor", quantized_rescore_factor),
        integer("int8_max_dim", int8_max_dim),
    };
}

}  // namespace fieldrank
