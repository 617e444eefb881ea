// The time-aware leg (python/fieldrank/temporal.py gives the formula): over the rows a query may
// see, z-normalised lexical scores blended with z-normalised cosines, the same-session neighbour
// support, the time-cue and session-date priors, and the top-k under the tie rule.
//
// Arithmetic is float64 throughout, like the numpy reference it is held to: the cosines are
// float32 rows times float32 queries summed in double (each product is exact there), the means
// and standard deviations use numpy's pairwise summation, and every later step is the same
// sequence of double operations as the reference. Each row of E is read once per block of
// queries; a query's scores do not depend on the block, the thread split or the batch, so a
// batch equals its queries one by one for any thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "defaults.hpp"
#include "errors.hpp"
#include "kernels.hpp"
#include "parallel.hpp"
#include "simd.hpp"
#include "topk.hpp"
#include "types.hpp"

namespace fieldrank {

struct TemporalParams {
    double alpha = defaults::temporal_alpha;    // lexical share of the base blend, in [0, 1]
    double gamma = defaults::temporal_gamma;    // weight of the neighbour support, >= 0
    Index radius = defaults::temporal_radius;   // neighbours i ± 1 … i ± radius of the same session, >= 1
    double decay = defaults::temporal_decay;    // factor per extra step of distance, in [0, 1]
    double tau = defaults::temporal_tau;        // time-cue boost for queries with time intent, >= 0
    double delta = defaults::temporal_delta;    // boost for rows whose session day is in a named period, >= 0
    Index before_days = defaults::temporal_before_days;  // slack before / after a named period, >= 0
    Index after_days = defaults::temporal_after_days;
};

// What the leg knows about each of the N corpus rows (all pointers to N entries).
struct TemporalTimeline {
    const Index* session = nullptr;    // required: rows i and i ± d are neighbours only with equal keys
    const std::uint8_t* cue = nullptr;  // optional: the row's text anchors something in time (0/1)
    const Index* day = nullptr;        // optional: session day number; INT64_MIN (NaT) is in no period
};

// What each of the B queries asks: time intent and the periods it names (inclusive day pairs).
struct TemporalQueries {
    const std::uint8_t* intent = nullptr;  // optional, B entries (0/1)
    const Index* window_offsets = nullptr;  // optional, B + 1 entries into window_days
    const Index* window_days = nullptr;     // (start, end) pairs, 2 · window_offsets[B] entries
};

// Lexical scores of every corpus row for each query: row b at data + b · ld (N entries read at
// the leg's rows). Null when alpha == 0.
template <typename Lex>
struct LexicalScores {
    static_assert(std::is_same_v<Lex, float> || std::is_same_v<Lex, double>, "lexical scores are float32 or float64");
    const Lex* data = nullptr;
    Index ld = 0;
};

struct TemporalRanking {
    RowMatrixXi ids;
    RowMatrixXd scores;
    // With row_order and alpha < 1: the float64 cosine of every row with each query, in the order of
    // `rows` ((B, n), the cosines the scores were blended from), so a caller that also wants the
    // dense top (the memory store's dense generator) reads them instead of a second pass over E.
    // Empty otherwise.
    RowMatrixXd cosines;
    // With corpus moments: how many queries the fp32 screen resolved (the others were scored in
    // full, in double); 0 without moments.
    Index screened = 0;
};

// The first and centred second moments of a corpus's rows, in double, for the leg over all of
// its rows: a query q's cosines then have mean (q·sum)/N and variance (qᵀ centred q)/N without a
// double cosine per row and without the cancellation of qᵀ(Σ e eᵀ)q/N − mean² (docs/design.md,
// "Temporal leg"). Built once per corpus by temporal_moments (d² doubles). They describe the
// array they were computed from (source, source_stride: the leg refuses moments of another array)
// as it was then: E must not be modified in place afterwards.
struct TemporalMoments {
    Index rows = 0;
    Index dim = 0;
    std::vector<double> sum;      // (d,): Σ_i e_i
    std::vector<double> centred;  // (d, d) row-major, symmetric: Σ_i (e_i − μ)(e_i − μ)ᵀ, μ = sum / N
    double max_norm_sq = 0.0;     // max_i ‖e_i‖²: scales the screen's error bound
    double centred_trace = 0.0;   // Σ_j centred_jj: scales the bound on qᵀ centred q's rounding
    const float* source = nullptr;  // E.data() and E.outerStride() of the rows they were computed from
    Index source_stride = 0;
};

namespace detail {

// numpy's pairwise summation (umath loops, PW_BLOCKSIZE 128) of value(begin) … value(begin + n - 1):
// the same additions in the same order, so a mean or variance of the same doubles is bit-identical
// to numpy's. value(i) is computed on the fly (no array of the terms is written).
template <typename Value>
inline double pairwise_sum_of(const Value& value, Index begin, Index n) {
    if (n < 8) {
        double sum = 0.0;
        for (Index i = 0; i < n; ++i) sum += value(begin + i);
        return sum;
    }
    if (n <= 128) {
        double r[8];
        for (int l = 0; l < 8; ++l) r[l] = value(begin + l);
        Index i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int l = 0; l < 8; ++l) r[l] += value(begin + i + l);
        double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) sum += value(begin + i);
        return sum;
    }
    Index half = n / 2;
    half -= half % 8;
    return pairwise_sum_of(value, begin, half) + pairwise_sum_of(value, begin + half, n - half);
}

inline double pairwise_sum(const double* x, Index n) {
    return pairwise_sum_of([x](Index i) { return x[i]; }, 0, n);
}

// numpy's mean and population std of value(0) … value(n - 1) (sd 1 where it is 0): the z-score of
// x is (x - mean) / sd.
struct Moments {
    double mean;
    double sd;
};

template <typename Value>
inline Moments moments_of(const Value& value, Index n) {
    const double count = static_cast<double>(n);
    const double mean = pairwise_sum_of(value, 0, n) / count;
    const auto centred_sq = [&value, mean](Index i) {
        const double centred = value(i) - mean;
        return centred * centred;
    };
    double sd = std::sqrt(pairwise_sum_of(centred_sq, 0, n) / count);
    if (sd == 0.0) sd = 1.0;
    return {mean, sd};
}

// Per-thread scratch of at least n doubles, reused across queries and calls (not zeroed): a query
// allocates nothing of size n.
inline double* thread_scratch(Index n) {
    thread_local std::vector<double> scratch;
    if (scratch.size() < static_cast<std::size_t>(n)) scratch.resize(static_cast<std::size_t>(n));
    return scratch.data();
}

inline Index row_at(const Index* rows, Index i) { return rows != nullptr ? rows[i] : i; }

// Checks the leg's arguments that the Python layer does not (sizes, order of the rows, windows).
inline void check_temporal_call(const MatrixRef& E, const MatrixRef& Q, const Index* rows, Index n,
                                const TemporalQueries& queries, Index n_windows, const TemporalParams& p, Index k) {
    require_rows("E", E);
    if (Q.cols() != E.cols()) fail("Q must have ", E.cols(), " columns to match E.shape[1], got ", Q.cols());
    require_positive("k", k);
    require_positive("radius", p.radius);
    require_unit_interval("alpha", p.alpha);
    require_unit_interval("decay", p.decay);
    require_non_negative_real("gamma", p.gamma);
    require_non_negative_real("tau", p.tau);
    require_non_negative_real("delta", p.delta);
    if (p.before_days < 0 || p.after_days < 0) fail("before_days and after_days must be >= 0");
    if (n <= 0) fail("rows must hold at least one row");
    if (rows != nullptr) {
        for (Index i = 0; i < n; ++i) {
            if (rows[i] < 0 || rows[i] >= E.rows()) fail("rows must lie in [0, ", E.rows(), "), got ", rows[i]);
            if (i > 0 && rows[i] <= rows[i - 1]) fail("rows must be sorted and unique, got ", rows[i], " after ", rows[i - 1]);
        }
    }
    if (queries.window_offsets != nullptr) {
        if (queries.window_offsets[0] != 0) fail("window_offsets must start at 0");
        for (Index b = 0; b < Q.rows(); ++b)
            if (queries.window_offsets[b + 1] < queries.window_offsets[b])
                fail("window_offsets must be non-decreasing");
        if (queries.window_offsets[Q.rows()] != n_windows)
            fail("window_offsets must end at the number of windows (", n_windows, "), got ",
                 queries.window_offsets[Q.rows()]);
    }
}

// Cosines (double) of queries [q0, q0 + nq) with the leg's rows into dense (nq × n), split into row
// chunks across threads. With norms, the rows' squared norms are checked from the same read; the
// first bad row (lowest position, whatever the split) is reported.
inline void temporal_dense(const MatrixRef& E, const RowMatrixXd& Qd, Index q0, Index nq, const Index* rows, Index n,
                           bool check_rows, Index n_threads, double* dense) {
    const simd::KernelTable& kernels = simd::kernels();
    const Index chunk = defaults::scan_block_rows;
    const Index chunks = (n + chunk - 1) / chunk;
    std::vector<double> norms(check_rows ? static_cast<std::size_t>(n) : 0);
    const float* base = E.data();
    // Per chunk of rows (kept in L2), the queries go in small groups whose float64 copies stay in
    // L1; E itself is read from memory once per block of queries.
    const Index group = defaults::temporal_query_group;
    parallel_for(0, chunks, n_threads, [&](Index c) {
        const Index begin = c * chunk;
        const Index count = std::min(chunk, n - begin);
        const Index* ids = rows != nullptr ? rows + begin : nullptr;
        const float* first = rows != nullptr ? base : base + begin * E.outerStride();
        Index g0 = 0;
        do {  // nq = 0 still makes one call, for the norms
            const Index gq = std::min(group, nq - g0);
            kernels.score_f32_f64(first, E.outerStride(), ids, count, E.cols(), Qd.data() + (q0 + g0) * Qd.cols(),
                                  Qd.cols(), gq, gq > 0 ? dense + g0 * n + begin : nullptr, n,
                                  check_rows && g0 == 0 ? norms.data() + begin : nullptr);
            g0 += group;
        } while (g0 < nq);
    });
    if (!check_rows) return;
    // The operators' rule for corpus rows (finite, unit norm within unit_norm_atol), on the squared
    // norms the cosine pass has already summed.
    const UnitNormSqBounds bounds = unit_norm_sq_bounds();
    for (Index i = 0; i < n; ++i) {
        const double norm_sq = norms[static_cast<std::size_t>(i)];
        if (!(norm_sq >= bounds.lo && norm_sq <= bounds.hi)) explain_bad_row("E", E, row_at(rows, i));
    }
}

// The z-statistics of one query's lexical scores over the rows ({0, 1} when alpha == 0).
template <typename Lex>
Moments lexical_moments(const Lex* lexical, const Index* rows, Index n, const TemporalParams& p) {
    if (!(p.alpha > 0.0)) return {0.0, 1.0};
    const auto lex_at = [lexical, rows](Index i) { return static_cast<double>(lexical[row_at(rows, i)]); };
    const Moments lex_z = moments_of(lex_at, n);
    // A non-finite score makes the sum non-finite (float32 values cannot overflow a double sum).
    if (!std::isfinite(lex_z.mean)) fail("lexical must be finite");
    return lex_z;
}

// decay^(dist - 1) for dist = 1 … radius, up to the first that is 0 (it and farther ones lend
// nothing); empty when gamma == 0.
inline const std::vector<double>& support_factors(const TemporalParams& p) {
    thread_local std::vector<double> factors;
    factors.clear();
    if (p.gamma > 0.0) {
        for (Index dist = 1; dist <= p.radius; ++dist) {
            const double factor = std::pow(p.decay, static_cast<double>(dist - 1));
            if (factor == 0.0) break;
            factors.push_back(factor);
        }
    }
    return factors;
}

// The time-cue and session-date priors of one row added to its score, in the order of the sweeps
// of temporal_query_scores (the same double operations).
inline double with_priors(double score, Index row, const TemporalTimeline& timeline, bool intent,
                          const Index* windows, Index n_windows, const TemporalParams& p) {
    if (p.tau > 0.0 && intent && timeline.cue != nullptr && timeline.cue[row] != 0) score = score + p.tau;
    if (p.delta > 0.0 && n_windows > 0 && timeline.day != nullptr) {
        const Index day = timeline.day[row];
        if (day == std::numeric_limits<Index>::min()) return score;  // NaT: in no period
        bool hit = false;
        for (Index w = 0; w < n_windows && !hit; ++w)
            hit = day >= windows[2 * w] - p.before_days && day <= windows[2 * w + 1] + p.after_days;
        if (hit) score = score + p.delta;
    }
    return score;
}

// One query's leg scores over the n rows, from its cosines (null when alpha == 1) and lexical
// scores (null when alpha == 0), into score (n doubles); base holds n doubles of scratch (and
// support n more when the rows are a subset). The operations per row are the reference's, in
// its order (the build has no FMA contraction), fused into few sweeps: two reductions per
// z-score read the inputs in place, one sweep writes the base blend, one the final score.
// dense_moments / lex_moments: the z-statistics to use (null: numpy's pairwise ones over the rows).
template <typename Lex>
void temporal_query_scores(const double* dense, const Lex* lexical, const Index* rows, Index n,
                           const TemporalTimeline& timeline, bool intent, const Index* windows, Index n_windows,
                           const TemporalParams& p, double* base, double* support, double* score,
                           const Moments* dense_moments = nullptr, const Moments* lex_moments = nullptr) {
    // Base blend: (1 − α)·z(cos) + α·z(lex), each z over the rows (reference: temporal_scores).
    Moments dense_z{0.0, 1.0};
    if (dense_moments != nullptr) dense_z = *dense_moments;
    else if (p.alpha < 1.0) dense_z = moments_of([dense](Index i) { return dense[i]; }, n);
    const Moments lex_z = lex_moments != nullptr ? *lex_moments : lexical_moments(lexical, rows, n, p);
    // The element-wise sweeps run in the kernel table (vectorised per instruction set, same bits).
    const simd::KernelTable& kernels = simd::kernels();
    const Lex* lex = p.alpha > 0.0 ? lexical : nullptr;
    const float* lex32 = nullptr;
    const double* lex64 = nullptr;
    if constexpr (std::is_same_v<Lex, float>) lex32 = lex;
    else lex64 = lex;
    kernels.temporal_blend(p.alpha < 1.0 ? dense : nullptr, lex32, lex64, rows, n, 1.0 - p.alpha, dense_z.mean,
                           dense_z.sd, p.alpha, lex_z.mean, lex_z.sd, base);
    // Support: max over same-session neighbours rows[i] ± dist (inside the rows) of
    // decay^(dist-1) · max(base, 0); distances from the first with factor 0 on lend nothing.
    const std::vector<double>& factors = support_factors(p);
    const Index radius = static_cast<Index>(factors.size());
    const Index* session = timeline.session;
    if (p.gamma > 0.0 && rows == nullptr) {
        // All rows: the neighbour of row i at offset ±dist is position i ± dist.
        kernels.temporal_support(base, session, n, factors.data(), radius, p.gamma, score);
    } else if (p.gamma > 0.0) {
        std::fill(support, support + n, 0.0);
        for (Index k = 0; k < radius; ++k) {
            const Index dist = k + 1;
            const double factor = factors[k];
            for (Index i = 0; i < n; ++i) {
                // Only the pair (i, j > i) is searched; it lends support both ways.
                const Index row = row_at(rows, i);
                const Index target = row + dist;
                for (Index j = i + 1; j <= i + dist && j < n && row_at(rows, j) <= target; ++j) {
                    if (row_at(rows, j) != target) continue;
                    if (session[target] == session[row]) {
                        support[i] = std::max(support[i], factor * std::max(base[j], 0.0));
                        support[j] = std::max(support[j], factor * std::max(base[i], 0.0));
                    }
                    break;
                }
            }
        }
        for (Index i = 0; i < n; ++i) score[i] = base[i] + p.gamma * support[i];
    } else {
        std::copy(base, base + n, score);
    }
    if ((p.tau > 0.0 && intent && timeline.cue != nullptr) || (p.delta > 0.0 && n_windows > 0 && timeline.day != nullptr)) {
        for (Index i = 0; i < n; ++i)
            score[i] = with_priors(score[i], row_at(rows, i), timeline, intent, windows, n_windows, p);
    }
}

// Σ_j a_j b_j over n doubles with eight fixed lanes (lane l takes j ≡ l mod 8), a fixed halving
// tree and the tail in j order: the same bits in every build of this header, whatever the caller.
inline double lane_dot(const double* a, const double* b, Index n) {
    double acc[8] = {};
    Index j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; ++l) acc[l] += a[j + l] * b[j + l];
    for (int width = 4; width > 0; width /= 2)
        for (int l = 0; l < width; ++l) acc[l] += acc[l + width];
    double tail = 0.0;
    for (; j < n; ++j) tail += a[j] * b[j];
    return acc[0] + tail;
}

// γ_n = n·u / (1 − n·u): |fl(x·y) − x·y| ≤ γ_n Σ|x_j y_j| for any order of the n-term dot product
// (Higham, Accuracy and Stability of Numerical Algorithms, Lemma 3.1); +inf once n·u ≥ 1, where
// no such bound holds (the callers then take the exact path).
inline double gamma_n(Index n, double unit_roundoff) {
    const double nu = static_cast<double>(n) * unit_roundoff;
    if (!(nu < 1.0)) return std::numeric_limits<double>::infinity();
    return nu / (1.0 - nu);
}

// Unit roundoffs (half the machine epsilon) of float32 and float64.
inline constexpr double kUnitRoundoff32 = std::numeric_limits<float>::epsilon() / 2.0;
inline constexpr double kUnitRoundoff64 = std::numeric_limits<double>::epsilon() / 2.0;

// One query's cosine statistics from the corpus moments: usable is false where their rounding
// bounds are not small against sd and var (temporal_moments_max_stat_error) or var is not
// finite and positive; scale = ‖q‖·max‖e_i‖ bounds every |cosine|.
struct QueryMoments {
    bool usable;
    Moments dense;
    double scale;
};

// quadratic: qᵀCq (the kernel-table entry quadratic_forms_f64, the same bits in every variant).
// The bounds, for x_i = fl(e_i − μ̃) (μ̃ = fl(sum / N), itself off by δμ): the centred entries
// sum (a block's rows in order, then the blocks in order) ≤ depth = block + blocks + 4 rounded terms of |x_ij x_ik| and the quadratic form d + 4 more,
// so |fl(qᵀC̃q) − Σ_i (q·x_i)²| ≤ γ_(depth + d + 8) Σ_i (|q|·|x_i|)² ≤ γ ‖q‖² tr(C̃)(1 + γ); the
// shift adds Σ_i (q·x_i)² − Σ_i (q·(e_i − μ))² = N (q·δμ)² ≥ 0 with |q·δμ| ≤ the mean's bound,
// (γ_(block + blocks + d) + u)·‖q‖·√d·max‖e‖ (each |sum_j| ≤ N max‖e‖).
inline QueryMoments query_moments(const TemporalMoments& m, const double* q, double quadratic) {
    const Index d = m.dim;
    const Index blocks = (m.rows + defaults::temporal_moments_block_rows - 1) / defaults::temporal_moments_block_rows;
    const double count = static_cast<double>(m.rows);
    const double mean = lane_dot(q, m.sum.data(), d) / count;
    const double var = quadratic / count;
    const double q_norm_sq = lane_dot(q, q, d);
    const double scale = std::sqrt(q_norm_sq) * std::sqrt(m.max_norm_sq);
    const double margin = 1.0 + defaults::temporal_bound_margin;
    const double gamma_var = gamma_n(defaults::temporal_moments_block_rows + blocks + d + 12, kUnitRoundoff64);
    const double mean_error = margin * (gamma_n(defaults::temporal_moments_block_rows + blocks + d, kUnitRoundoff64) +
                                        kUnitRoundoff64) * std::sqrt(static_cast<double>(d)) * scale;
    const double var_error =
        margin * (gamma_var * q_norm_sq * m.centred_trace * (1.0 + gamma_var) / count + mean_error * mean_error);
    const double tolerance = defaults::temporal_moments_max_stat_error;
    const bool usable = std::isfinite(var) && var > 0.0 && var_error <= tolerance * var &&
                        mean_error <= tolerance * std::sqrt(var);
    return {usable, {mean, usable ? std::sqrt(var) : 1.0}, scale};
}

// The screen's ε for one query: |ã_i − s_i| ≤ ε for every row, where s_i is the exact (double
// cosine) score and ã_i the same double operations on the fp32 cosine. The cosines differ by at
// most δ = (γ_d(fp32) + γ_d(fp64))·‖q‖·max‖e‖ plus float32 underflow (d·FLT_MIN: a flushed or
// gradual underflow loses less than FLT_MIN per product, so the bound holds with flush-to-zero);
// the base blend moves by (1 − α)·δ/sd; the neighbour support, a max of factor·max(base, 0) with
// factors ≤ 1, by at most as much again times γ; the priors add the same constants. Each
// computation's own rounding is bounded by temporal_screen_rounding_terms·u·T, T the largest
// magnitude any term can take (|c − mean| ≤ 2·scale, |z(lex)| ≤ √n). Returns +inf where the bound
// is unusable.
inline double screen_epsilon(const QueryMoments& qm, Index d, Index n, const TemporalParams& p) {
    if (!(qm.scale < defaults::temporal_screen_max_scale)) return std::numeric_limits<double>::infinity();
    const double share = 1.0 - p.alpha;
    const double gamma32 = gamma_n(d, kUnitRoundoff32);
    const double underflow = static_cast<double>(d) * static_cast<double>(std::numeric_limits<float>::min());
    const double delta = (gamma32 + gamma_n(d, kUnitRoundoff64)) * qm.scale + underflow;
    const double sd = qm.dense.sd;
    const double spread = 1.0 + p.gamma;
    const double base_bound = share * 2.0 * qm.scale * (1.0 + gamma32) / sd + p.alpha * 2.0 * std::sqrt(static_cast<double>(n));
    const double term_bound = spread * base_bound + p.tau + p.delta;
    const double eps =
        share * spread * delta / sd + defaults::temporal_screen_rounding_terms * kUnitRoundoff64 * term_bound;
    return eps * (1.0 + defaults::temporal_bound_margin);  // covers the rounding of this bound itself
}

}  // namespace detail

// The moments of E's rows (TemporalMoments), in two passes whose orders are fixed by N and d
// alone, so the bits do not depend on n_threads. First the sum and the largest squared norm: per
// block of temporal_moments_block_rows rows its column sums in row order (blocks across threads),
// then the blocks' sums in block order. Then the centred second moment about μ = sum / N: threads
// take disjoint groups of temporal_moments_group_dims rows of C's lower triangle, each centring the
// blocks (in double) itself and adding their products (the kernel-table entry outer_sum_f64: per
// entry a sum in row order from 0, the same bits in every variant) into its rows, block after block.
inline TemporalMoments temporal_moments(const MatrixRef& E, Index n_threads) {
    require_rows("E", E);
    const Index N = E.rows();
    const Index d = E.cols();
    const Index block = defaults::temporal_moments_block_rows;
    const Index blocks = (N + block - 1) / block;
    const auto dd = static_cast<std::size_t>(d);
    const float* data = E.data();
    const Index stride = E.outerStride();
    std::vector<double> block_sums(static_cast<std::size_t>(blocks) * dd, 0.0);
    std::vector<double> block_top(static_cast<std::size_t>(blocks), 0.0);
    parallel_for(0, blocks, n_threads, [&](Index b) {
        double* s = block_sums.data() + static_cast<std::size_t>(b) * dd;
        double top = 0.0;
        for (Index i = b * block; i < std::min(N, (b + 1) * block); ++i) {
            const float* row = data + i * stride;
            double norm_sq = 0.0;
            for (Index j = 0; j < d; ++j) {
                const double x = row[j];
                s[j] += x;
                norm_sq += x * x;
            }
            top = std::max(top, norm_sq);
        }
        block_top[static_cast<std::size_t>(b)] = top;
    });
    TemporalMoments out;
    out.rows = N;
    out.dim = d;
    out.source = data;
    out.source_stride = stride;
    out.sum.assign(dd, 0.0);
    for (Index b = 0; b < blocks; ++b) {
        const double* s = block_sums.data() + static_cast<std::size_t>(b) * dd;
        for (Index j = 0; j < d; ++j) out.sum[static_cast<std::size_t>(j)] += s[j];
        out.max_norm_sq = std::max(out.max_norm_sq, block_top[static_cast<std::size_t>(b)]);
    }
    std::vector<double> mu(dd);
    for (Index j = 0; j < d; ++j) mu[static_cast<std::size_t>(j)] = out.sum[static_cast<std::size_t>(j)] / static_cast<double>(N);
    out.centred.assign(dd * dd, 0.0);
    const simd::KernelTable& kernels = simd::kernels();
    const Index group = defaults::temporal_moments_group_dims;
    const Index groups = (d + group - 1) / group;
    // The last groups hold the most of the triangle: handed out first, they do not finish last.
    parallel_for(0, groups, n_threads, [&](Index task) {
        const Index g0 = (groups - 1 - task) * group;
        const Index width = std::min(group, d - g0);
        const Index span = g0 + width;  // the columns c < span of rows [g0, span)
        std::vector<double> centred_rows(static_cast<std::size_t>(block * span));  // (block, span)
        std::vector<double> products(static_cast<std::size_t>(width * span));
        for (Index b = 0; b < blocks; ++b) {
            const Index r0 = b * block;
            const Index count = std::min(block, N - r0);
            for (Index t = 0; t < count; ++t) {
                const float* row = data + (r0 + t) * stride;
                double* x = centred_rows.data() + static_cast<std::size_t>(t * span);
                for (Index j = 0; j < span; ++j) x[j] = static_cast<double>(row[j]) - mu[static_cast<std::size_t>(j)];
            }
            kernels.outer_sum_f64(centred_rows.data(), span, count, g0, width, span, products.data(), span);
            for (Index a = 0; a < width; ++a) {
                double* target = out.centred.data() + static_cast<std::size_t>((g0 + a) * d);
                const double* source = products.data() + static_cast<std::size_t>(a * span);
                for (Index c = 0; c <= g0 + a; ++c) target[c] += source[c];
            }
        }
    });
    for (Index r = 0; r < d; ++r)
        for (Index c = 0; c < r; ++c)
            out.centred[static_cast<std::size_t>(c * d + r)] = out.centred[static_cast<std::size_t>(r * d + c)];
    for (Index j = 0; j < d; ++j) out.centred_trace += out.centred[static_cast<std::size_t>(j * d + j)];
    return out;
}

namespace detail {

// The leg over all n = N rows with the corpus moments (temporal_batch with moments, top-k mode).
// Per query: the statistics from the moments (a query whose moments' error bounds are not small
// against its sd and variance takes the pairwise path, exactly as without moments); fp32 cosines, the approximate scores ã_i by the same
// double operations, ε from screen_epsilon; L = the k-th largest ã; every row with ã_i ≥ L − 2ε
// is a candidate (a row below scores strictly less than the true k-th: s_i ≤ ã_i + ε < L − ε ≤
// s_(k)); the candidates and their in-range neighbours get exact double cosines, the candidates
// their exact scores, and the top-k is taken over them. The result is that of the full exact pass
// with the same statistics (screen = false computes that pass: the test oracle), whatever the
// fp32 bits, hence the same for every variant, thread count and batch.
template <typename Lex>
TemporalRanking temporal_batch_moments(const MatrixRef& E, const MatrixRef& Q, LexicalScores<Lex> lexical,
                                       const TemporalTimeline& timeline, const TemporalQueries& queries,
                                       const TemporalParams& p, Index k, bool check_rows, Index n_threads,
                                       const TemporalMoments& moments, bool screen) {
    const Index n = E.rows();
    const Index d = E.cols();
    if (moments.rows != n || moments.dim != d || static_cast<Index>(moments.centred.size()) != d * d ||
        static_cast<Index>(moments.sum.size()) != d)
        fail("moments were computed for a corpus of shape (", moments.rows, ", ", moments.dim, "), E has shape (", n,
             ", ", d, ")");
    if (moments.source != E.data() || moments.source_stride != E.outerStride())
        fail("moments were computed from another array than E (temporal_moments(E) of this very array is required)");
    const Index B = Q.rows();
    const Index width = std::min(k, n);
    TemporalRanking out;
    out.ids.setConstant(B, width, -1);
    out.scores.setZero(B, width);
    const RowMatrixXd Qd = Q.cast<double>();
    if (check_rows) temporal_dense(E, Qd, 0, 0, nullptr, n, true, n_threads, nullptr);
    if (B == 0) return out;
    const simd::KernelTable& kernels = simd::kernels();
    const float* base_rows = E.data();
    const Index stride = E.outerStride();
    const std::vector<double> factors = support_factors(p);  // a copy: support_factors reuses its buffer
    std::vector<std::uint8_t> screened(static_cast<std::size_t>(B), 0);
    const Index radius = static_cast<Index>(factors.size());

    auto write_top = [&](Index b, TopK<double>& best) {
        const auto top = best.take_sorted();
        for (Index i = 0; i < static_cast<Index>(top.size()); ++i) {
            out.ids(b, i) = top[static_cast<std::size_t>(i)].id;
            out.scores(b, i) = top[static_cast<std::size_t>(i)].score;
        }
    };
    struct QueryView {
        const Lex* lex;
        bool intent;
        const Index* windows;
        Index n_windows;
    };
    auto view_of = [&](Index b) {
        QueryView v{lexical.data != nullptr ? lexical.data + b * lexical.ld : nullptr,
                    queries.intent != nullptr && queries.intent[b] != 0, nullptr, 0};
        if (queries.window_offsets != nullptr) {
            v.windows = queries.window_days + 2 * queries.window_offsets[b];
            v.n_windows = queries.window_offsets[b + 1] - queries.window_offsets[b];
        }
        return v;
    };
    // Every row's exact double cosine and score (dense_z null: the pairwise statistics), then the top-k.
    auto exact_query = [&](Index b, const Moments* dense_z) {
        const QueryView v = view_of(b);
        double* dense = thread_scratch(3 * n);
        double* base = dense + n;
        double* score = base + n;
        kernels.score_f32_f64(base_rows, stride, nullptr, n, d, Qd.data() + b * Qd.cols(), Qd.cols(), 1, dense, n,
                              nullptr);
        temporal_query_scores(dense, v.lex, nullptr, n, timeline, v.intent, v.windows, v.n_windows, p, base, nullptr,
                              score, dense_z);
        TopK<double> best(width);
        for (Index i = 0; i < n; ++i) best.push(score[i], i);
        write_top(b, best);
    };
    auto screened_query = [&](Index b, const float* cos32, double quadratic) {
        const QueryMoments qm = query_moments(moments, Qd.data() + b * Qd.cols(), quadratic);
        if (!qm.usable) return exact_query(b, nullptr);
        const double eps = screen_epsilon(qm, d, n, p);
        if (!screen || width >= n || !std::isfinite(eps)) return exact_query(b, &qm.dense);
        const QueryView v = view_of(b);
        const Moments lex_z = lexical_moments(v.lex, nullptr, n, p);
        double* approx = thread_scratch(3 * n);
        double* base = approx + n;
        double* score = base + n;
        for (Index i = 0; i < n; ++i) approx[i] = static_cast<double>(cos32[i]);
        temporal_query_scores(approx, v.lex, nullptr, n, timeline, v.intent, v.windows, v.n_windows, p, base,
                              nullptr, score, &qm.dense, &lex_z);
        // The k-th largest ã without a selector over every row: per block of rows its largest ã
        // (a plain vectorised max); the k-th largest block max is at most the k-th largest ã (k blocks
        // each hold a row at least as large), so only rows at or above it, in blocks that reach it,
        // can be among the top k.
        const Index block_rows = defaults::temporal_screen_block_rows;
        const Index blocks = (n + block_rows - 1) / block_rows;
        thread_local std::vector<double> block_max;
        thread_local std::vector<double> order;
        block_max.resize(static_cast<std::size_t>(blocks));
        for (Index c = 0; c < blocks; ++c) {
            const Index end = std::min(n, (c + 1) * block_rows);
            double top = score[c * block_rows];
            for (Index i = c * block_rows + 1; i < end; ++i) top = score[i] > top ? score[i] : top;
            block_max[static_cast<std::size_t>(c)] = top;
        }
        double floor = -std::numeric_limits<double>::infinity();
        if (blocks >= width) {
            order.assign(block_max.begin(), block_max.end());
            std::nth_element(order.begin(), order.begin() + (width - 1), order.end(), std::greater<double>());
            floor = order[static_cast<std::size_t>(width - 1)];
        }
        TopK<double> approx_best(width);
        for (Index c = 0; c < blocks; ++c) {
            if (block_max[static_cast<std::size_t>(c)] < floor) continue;
            for (Index i = c * block_rows; i < std::min(n, (c + 1) * block_rows); ++i)
                if (score[i] >= floor) approx_best.push(score[i], i);
        }
        const double kth = approx_best.take_sorted().back().score;
        const double threshold = kth - 2.0 * eps;
        thread_local std::vector<Index> candidates;
        thread_local std::vector<Index> needed;
        candidates.clear();
        for (Index c = 0; c < blocks; ++c) {
            if (block_max[static_cast<std::size_t>(c)] < threshold) continue;
            for (Index i = c * block_rows; i < std::min(n, (c + 1) * block_rows); ++i)
                if (score[i] >= threshold) candidates.push_back(i);
        }
        if (static_cast<Index>(candidates.size()) * defaults::temporal_screen_max_candidate_share > n)
            return exact_query(b, &qm.dense);
        screened[static_cast<std::size_t>(b)] = 1;
        // The rows whose exact base the candidates' scores read: themselves and their neighbours.
        needed.clear();
        for (const Index i : candidates)
            for (Index j = std::max<Index>(0, i - radius); j <= std::min(n - 1, i + radius); ++j) needed.push_back(j);
        std::sort(needed.begin(), needed.end());
        needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
        const Index m = static_cast<Index>(needed.size());
        // approx and base are free again: the exact cosines and bases of the needed rows go there.
        double* exact_cos = approx;
        double* exact_base = base;
        kernels.score_f32_f64(base_rows, stride, needed.data(), m, d, Qd.data() + b * Qd.cols(), Qd.cols(), 1,
                              exact_cos, m, nullptr);
        const float* lex32 = nullptr;
        const double* lex64 = nullptr;
        if constexpr (std::is_same_v<Lex, float>) lex32 = p.alpha > 0.0 ? v.lex : nullptr;
        else lex64 = p.alpha > 0.0 ? v.lex : nullptr;
        kernels.temporal_blend(exact_cos, lex32, lex64, needed.data(), m, 1.0 - p.alpha, qm.dense.mean, qm.dense.sd,
                               p.alpha, lex_z.mean, lex_z.sd, exact_base);
        const auto position = [&](Index row) {
            return static_cast<Index>(std::lower_bound(needed.begin(), needed.end(), row) - needed.begin());
        };
        const Index* session = timeline.session;
        TopK<double> best(width);
        for (const Index i : candidates) {
            const double own = exact_base[position(i)];
            double value = own;
            if (p.gamma > 0.0) {
                // temporal_support's operations: a max of non-negative terms (order-free), then base + γ·support.
                double support = 0.0;
                for (Index dist = 1; dist <= radius; ++dist) {
                    const double factor = factors[static_cast<std::size_t>(dist - 1)];
                    if (i + dist < n && session[i + dist] == session[i])
                        support = std::max(support, factor * std::max(exact_base[position(i + dist)], 0.0));
                    if (i - dist >= 0 && session[i - dist] == session[i])
                        support = std::max(support, factor * std::max(exact_base[position(i - dist)], 0.0));
                }
                value = own + p.gamma * support;
            }
            best.push(with_priors(value, i, timeline, v.intent, v.windows, v.n_windows, p), i);
        }
        write_top(b, best);
    };
    // fp32 cosines of a block of queries (each row read once per block, rows split across threads),
    // then the block's queries finished in parallel. A block's cosines stay under the scratch budget.
    const Index by_budget = defaults::temporal_block_bytes / static_cast<Index>(sizeof(float) * n);
    const Index block = std::max<Index>(defaults::scan_query_group, std::min(B, by_budget));
    const std::unique_ptr<float[]> cos32(new float[static_cast<std::size_t>(std::min(block, B) * n)]);
    const Index ldq = Q.outerStride();
    // qᵀCq of every query, C read once per group of queries.
    std::vector<double> quadratic(static_cast<std::size_t>(B));
    const Index quad_group = defaults::scan_query_group;
    parallel_for(0, (B + quad_group - 1) / quad_group, n_threads, [&](Index g) {
        const Index b0 = g * quad_group;
        kernels.quadratic_forms_f64(moments.centred.data(), d, Qd.data() + b0 * Qd.cols(), Qd.cols(),
                                    std::min(quad_group, B - b0), quadratic.data() + b0);
    });
    // One query over rows beyond the last-level cache reads them best as one stream (score_f32_stream);
    // over cached rows the prefetched tiles of score_f32 are faster.
    const bool stream_single = static_cast<Index>(sizeof(float)) * n * d > defaults::temporal_stream_min_bytes;
    for (Index q0 = 0; q0 < B; q0 += block) {
        const Index nq = std::min(block, B - q0);
        const Index chunk = nq == 1 ? defaults::scan_stream_block_rows : defaults::scan_block_rows;
        const Index chunks = (n + chunk - 1) / chunk;
        parallel_for(0, chunks, n_threads, [&](Index c) {
            const Index begin = c * chunk;
            const Index count = std::min(chunk, n - begin);
            const float* first = base_rows + begin * stride;
            if (nq == 1 && stream_single) {
                kernels.score_f32_stream(first, stride, count, d, Q.data() + q0 * ldq, cos32.get() + begin, nullptr, 0);
                return;
            }
            for (Index g0 = 0; g0 < nq; g0 += defaults::scan_query_group) {
                const Index gq = std::min(defaults::scan_query_group, nq - g0);
                kernels.score_f32(first, stride, nullptr, count, d, Q.data() + (q0 + g0) * ldq, ldq, gq,
                                  cos32.get() + g0 * n + begin, n, nullptr);
            }
        });
        parallel_for(0, nq, n_threads, [&](Index local) {
            screened_query(q0 + local, cos32.get() + local * n, quadratic[static_cast<std::size_t>(q0 + local)]);
        });
    }
    out.screened = std::count(screened.begin(), screened.end(), std::uint8_t{1});
    return out;
}

}  // namespace detail

// The leg for B queries (rows of Q) over the rows `rows` (sorted unique corpus rows; null: all N
// rows, n = N). Returns (B, min(k, n)) ids and float64 scores, higher first, ties to the lower
// row. check_rows checks every row read (finite, non-zero norm) in the cosine pass itself; callers
// that validated the corpus once (a retriever, a store) pass false. moments (temporal_moments of
// this E) take the all-rows top-k (rows null, row_order false, alpha < 1) to the fp32 screen with
// the moments' statistics (detail::temporal_batch_moments; screen = false: its full exact pass);
// subsets and row_order ignore them. row_order: instead of the top-k, every row's score in the order of `rows` ((B, n) scores, ids left empty, and with
// alpha < 1 the (B, n) cosines the scores were blended from), for a caller
// that needs the scores of chosen rows and only a short top (the memory store): it selects in
// O(n) instead of paying a full sort when k would be n.
template <typename Lex>
TemporalRanking temporal_batch(const MatrixRef& E, const MatrixRef& Q, LexicalScores<Lex> lexical, const Index* rows,
                               Index n, const TemporalTimeline& timeline, const TemporalQueries& queries,
                               Index n_windows, const TemporalParams& p, Index k, bool check_rows, Index n_threads,
                               bool row_order = false, const TemporalMoments* moments = nullptr, bool screen = true) {
    detail::check_temporal_call(E, Q, rows, n, queries, n_windows, p, k);
    if (timeline.session == nullptr) fail("the timeline needs session keys");
    if (p.alpha > 0.0 && lexical.data == nullptr) fail("lexical scores are required when alpha > 0");
    if (moments != nullptr && rows == nullptr && !row_order && p.alpha < 1.0)
        return detail::temporal_batch_moments(E, Q, lexical, timeline, queries, p, k, check_rows, n_threads, *moments,
                                              screen);
    if (!check_rows && rows != nullptr && rows[n - 1] - rows[0] == n - 1 && rows[0] > 0) {
        // Sorted unique rows spanning a contiguous range (one conversation, a tenant's block) are the
        // all-rows case over views shifted to their first row: reads need no indirection and the
        // neighbour support no search. Same rows, same arithmetic, ids shifted back.
        const Index first = rows[0];
        const MatrixRef block(E.middleRows(first, n));
        if (block.data() != E.data() + first * E.outerStride()) fail("internal: the row block was copied");
        const LexicalScores<Lex> shifted_lexical{lexical.data != nullptr ? lexical.data + first : nullptr, lexical.ld};
        const TemporalTimeline shifted{timeline.session + first, timeline.cue != nullptr ? timeline.cue + first : nullptr,
                                       timeline.day != nullptr ? timeline.day + first : nullptr};
        TemporalRanking out = temporal_batch(block, Q, shifted_lexical, nullptr, n, shifted, queries, n_windows, p, k,
                                             false, n_threads, row_order);
        for (Index b = 0; b < out.ids.rows(); ++b)
            for (Index i = 0; i < out.ids.cols(); ++i)
                if (out.ids(b, i) >= 0) out.ids(b, i) += first;
        return out;
    }
    const Index B = Q.rows();
    const Index width = std::min(k, n);
    TemporalRanking out;
    const bool need_dense = p.alpha < 1.0;
    if (row_order) {
        out.ids.resize(B, 0);
        out.scores.setZero(B, n);
        if (need_dense) out.cosines.resize(B, n);  // every entry written by finish
    } else {
        out.ids.setConstant(B, width, -1);
        out.scores.setZero(B, width);
    }
    const RowMatrixXd Qd = Q.cast<double>();
    if (B == 0) {
        if (check_rows) detail::temporal_dense(E, Qd, 0, 0, rows, n, true, n_threads, nullptr);
        return out;
    }
    // One query's leg scores from its cosines (dense_row: n doubles, null when alpha == 1) into out.
    auto finish = [&](Index b, const double* dense_row) {
        double* base = detail::thread_scratch((rows != nullptr ? 3 : 2) * n);
        double* score = base + n;
        double* support = rows != nullptr ? score + n : nullptr;
        const Index* windows = nullptr;
        Index count = 0;
        if (queries.window_offsets != nullptr) {
            windows = queries.window_days + 2 * queries.window_offsets[b];
            count = queries.window_offsets[b + 1] - queries.window_offsets[b];
        }
        const bool intent = queries.intent != nullptr && queries.intent[b] != 0;
        detail::temporal_query_scores(dense_row, lexical.data != nullptr ? lexical.data + b * lexical.ld : nullptr,
                                      rows, n, timeline, intent, windows, count, p, base, support, score);
        if (row_order) {
            std::copy(score, score + n, out.scores.row(b).data());
            if (dense_row != nullptr) std::copy(dense_row, dense_row + n, out.cosines.row(b).data());
            return;
        }
        TopK<double> best(width);
        for (Index i = 0; i < n; ++i) best.push(score[i], detail::row_at(rows, i));
        const auto top = best.take_sorted();
        for (Index i = 0; i < static_cast<Index>(top.size()); ++i) {
            out.ids(b, i) = top[static_cast<std::size_t>(i)].id;
            out.scores(b, i) = top[static_cast<std::size_t>(i)].score;
        }
    };
    const Index group = defaults::temporal_query_group;
    const bool cache_resident =
        static_cast<Index>(sizeof(float)) * n * E.cols() <= defaults::temporal_cache_resident_bytes;
    // The public path checks every row once (a retriever or store validated its corpus at
    // construction and passes check_rows = false): fused into the first cosine pass over a large
    // corpus, a pass of its own over cache-resident rows or when no cosine is needed.
    const bool fused_check = check_rows && need_dense && !cache_resident;
    if (check_rows && !fused_check) detail::temporal_dense(E, Qd, 0, 0, rows, n, true, n_threads, nullptr);
    if (cache_resident) {
        // The rows fit in cache (one conversation, a tenant): each thread takes whole groups of
        // queries, cosines and scores, so the batch is one parallel region.
        const Index groups = (B + group - 1) / group;
        parallel_for(0, groups, n_threads, [&](Index g) {
            const Index q0 = g * group;
            const Index nq = std::min(group, B - q0);
            // Uninitialised: every entry is written by the cosine pass before it is read.
            const std::unique_ptr<double[]> dense(need_dense ? new double[static_cast<std::size_t>(nq * n)] : nullptr);
            if (need_dense) detail::temporal_dense(E, Qd, q0, nq, rows, n, false, 1, dense.get());
            for (Index local = 0; local < nq; ++local)
                finish(q0 + local, need_dense ? dense.get() + local * n : nullptr);
        });
        return out;
    }
    // Larger corpora: queries go in blocks whose cosines fit the scratch budget (at least one scan
    // group), E is read once per block with its rows split across threads, then the queries of
    // the block are finished in parallel. A large batch never holds a B × n matrix.
    const Index by_budget = defaults::temporal_block_bytes / static_cast<Index>(sizeof(double) * n);
    const Index block = std::max<Index>(defaults::scan_query_group, std::min(B, by_budget));
    const std::unique_ptr<double[]> dense(  // uninitialised: the cosine pass writes every entry first
        need_dense ? new double[static_cast<std::size_t>(std::min(block, B) * n)] : nullptr);
    for (Index q0 = 0; q0 < B; q0 += block) {
        const Index nq = std::min(block, B - q0);
        if (need_dense) detail::temporal_dense(E, Qd, q0, nq, rows, n, fused_check && q0 == 0, n_threads, dense.get());
        parallel_for(0, nq, n_threads,
                     [&](Index local) { finish(q0 + local, need_dense ? dense.get() + local * n : nullptr); });
    }
    return out;
}

}  // namespace fieldrank
