// The table of hot kernels, one instance per instruction-set variant (see simd.hpp). This header
// includes nothing but <cstdint>, so the variant translation units compiled with wider
// instruction sets share no inline library code with the rest of the build.
#pragma once

#include <cstdint>

namespace fieldrank {
namespace simd {

using Index = std::int64_t;

// The argument range of the vectorised exp in the x86 variants (the portable one calls std::exp):
// below ln(2^-150) = -103.97 the float32 result rounds to 0, and the low clamp keeps the exponent
// arithmetic inside int32; the high one keeps the result finite (e^88.3 < FLT_MAX).
constexpr float kExpLowest = -110.0f;
constexpr float kExpHighest = 88.3f;

struct KernelTable {
    const char* name;

    // dots[b * ld_dots + r] = row_r · Q_b for r < n, b < nq, where row_r = base + id(r) * stride and
    // id(r) = ids ? ids[r] : r. When norms is not null, norms[r] = row_r · row_r as well.
    void (*score_f32)(const float* base, Index stride, const Index* ids, Index n, Index d, const float* Q, Index ldq,
                      Index nq, float* dots, Index ld_dots, float* norms);

    // out[r] = row_r · q (and norms[r] = row_r · row_r unless null) for n contiguous rows
    // (row_r = base + r · stride), in tiles of rows (several FMA chains in flight). prefetch_rows > 0
    // prefetches each line of a tile's rows from the row that many rows further on (the scan passes
    // defaults::scan_prefetch_bytes worth of rows). Same per-row arithmetic as score_f32, hence
    // bit-identical scores.
    void (*score_f32_stream)(const float* base, Index stride, Index n, Index d, const float* q, float* out,
                             float* norms, Index prefetch_rows);

    // Lower triangle of G = C Cᵀ (n × n, row stride ldg) for the rows C_i = base + id(i) · stride
    // (id(i) = ids ? ids[i] : i), mirrored into the upper one. Entries are the same dot products
    // score_f32 computes, so G is exactly symmetric.
    void (*gram)(const float* base, Index stride, const Index* ids, Index n, Index d, float* G, Index ldg);

    // One projected-gradient step of CFS-R from `point` (length ldg, zero-padded beyond n):
    // grad_i = (G point)_i + lam point_i - r_i, a_out_i = max(0, point_i - step grad_i), i < ldg.
    // (G point)_i = Σ_j point_j G_ji summed in ascending j over the non-zero point_j only (exact:
    // a zero term adds nothing), so the cost follows the sparsity of the iterate; scratch holds
    // ldg indices. Identical rows of G get bit-identical results.
    void (*pg_step)(const float* G, Index ldg, Index n, const float* point, const float* r, float lam, float step,
                    float* grad, float* a_out, Index* scratch);

    // y = G v in double for the Lanczos estimate of λ_max (G float, row stride ldg; v, y double).
    void (*matvec_f64)(const float* G, Index ldg, Index n, const double* v, double* y);

    // Σ x_i over n floats with independent accumulators: a pure streaming read, the bandwidth
    // probe that benchmark figures are compared with.
    double (*read_sum)(const float* x, Index n);

    // Σ x_i y_i and y += alpha x over n doubles (n a multiple of 16): Lanczos reorthogonalisation.
    double (*dot_f64)(const double* x, const double* y, Index n);
    void (*axpy_f64)(double alpha, const double* x, double* y, Index n);

    // CFS field update after a pick: field_i += exp(-max(0, 2 - 2 column_i) * inv_two_sigma_sq),
    // value_i = base_i - beta * field_i.
    void (*cfs_update)(const float* column, const float* base, Index n, float inv_two_sigma_sq, float beta,
                       float* field, float* value);

    // MMR update after a pick: max_sim = first ? column : max(max_sim, column),
    // value_i = relevance * sims_i - redundancy * max_sim_i.
    void (*mmr_update)(const float* column, const float* sims, Index n, float relevance, float redundancy, bool first,
                       float* max_sim, float* value);

    // out[r] ≈ row_r · q for bf16 rows (uint16 bit patterns), row_r = base + id(r) * stride.
    void (*score_bf16)(const std::uint16_t* base, Index stride, const Index* ids, Index n, Index d, const float* q,
                       float* out);

    // out[r] = float(Σ_j q8_j row_r,j) * row_scale[id(r)] * q_scale, the integer dot exact in every
    // variant (row_sum[id] = Σ_j row_id,j, used by the VNNI kernel). Requires d <= int8_max_dim.
    void (*score_int8)(const std::int8_t* base, Index stride, const Index* ids, Index n, Index d,
                       const std::int8_t* q8, const float* row_scale, const std::int32_t* row_sum, float q_scale,
                       float* out);

    // out[b * ld_out + r] = Σ_j row_r,j · Qd_b,j accumulated in double for r < n, b < nq (Qd: the
    // queries already widened to double, row stride ldq), row_r = base + id(r) · stride. When norms
    // is not null, norms[r] = Σ_j row_r,j² in double as well. Each row is read once for all nq
    // queries. A float32 product is exact in double, so every variant sums the same exact terms in
    // the same order (two 8-lane accumulators per 16-element block, the fixed reduction tree, then
    // the tail in j order) and the scores are bit-identical across variants and positions.
    void (*score_f32_f64)(const float* base, Index stride, const Index* ids, Index n, Index d, const double* Qd,
                          Index ldq, Index nq, double* out, Index ld_out, double* norms);

    // The temporal leg's base blend over n rows (temporal.hpp), lex(i) = the lexical score of row
    // id(i) (lex32 or lex64, whichever is not null; id(i) = rows ? rows[i] : i) widened to double:
    //   both inputs:   base[i] = share · ((dense[i] − dense_mean) / dense_sd) + alpha · ((lex(i) − lex_mean) / lex_sd)
    //   no lexical:    base[i] = share · ((dense[i] − dense_mean) / dense_sd)
    //   dense null:    base[i] = 0 + alpha · ((lex(i) − lex_mean) / lex_sd)
    // Element-wise double operations in exactly this order (never fused), so every variant, whatever
    // its vector width, writes the same bits as the reference's numpy expression.
    void (*temporal_blend)(const double* dense, const float* lex32, const double* lex64, const Index* rows, Index n,
                           double share, double dense_mean, double dense_sd, double alpha, double lex_mean,
                           double lex_sd, double* base);

    // score[i] = base[i] + gamma · support_i for n consecutive rows, support_i the max over
    // 1 <= dist <= radius and j = i ± dist in [0, n) with session[j] == session[i] of
    // factors[dist − 1] · max(base[j], 0), and 0 without such a j. Every candidate is a non-negative
    // double (base is never −0), on which max is exact and order-free: every variant gives the same bits.
    void (*temporal_support)(const double* base, const Index* session, Index n, const double* factors, Index radius,
                             double gamma, double* score);

    // out[b] = q_bᵀ M q_b for nq queries (rows of Qd, row stride ldq), M (d × d, row stride d)
    // symmetric and read from its lower triangle: Σ_j q_j · (M_jj q_j + 2 · Σ_{k<j} M_jk q_k), j in
    // order, the inner sum on four 8-lane accumulators (lane l of accumulator a takes k ≡ 8a + l mod
    // 32), summed (0 + 1) + (2 + 3), the fixed tree, then the tail in k order. Products and sums are
    // rounded separately (never fused), so every variant gives the same bits. Each row of M is read
    // once for all nq queries.
    void (*quadratic_forms_f64)(const double* M, Index d, const double* Qd, Index ldq, Index nq, double* out);

    // out[a · ld_out + c] = Σ_t X[t·ldx + a0 + a] · X[t·ldx + c] for a < na, c < nc over the len
    // rows of X (row stride ldx): each sum starts from 0.0 and adds its products in t order, each
    // product and sum rounded separately (never fused). Element-wise, so every variant gives the
    // same bits whatever its vector width, and out is exactly symmetric where a0 + a and c meet.
    // The centred second moment of the temporal leg's corpus moments (one block of centred rows).
    void (*outer_sum_f64)(const double* X, Index ldx, Index len, Index a0, Index na, Index nc, double* out,
                          Index ld_out);
};

}  // namespace simd
}  // namespace fieldrank
