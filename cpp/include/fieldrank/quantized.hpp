// Reduced-precision prefilter: a bf16 copy of E, or an int8 copy with one scale per row, is
// scanned for the top (factor · p) rows, which are then rescored exactly in fp32 from E. The
// result is the exact fp32 prefilter whenever the exact top p lies among those candidates
// (pool recall is measured in docs/results/performance.md). The scan reads 2× (bf16) or 4×
// (int8) fewer bytes than the fp32 one; the rescoring touches factor · p rows of E.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "defaults.hpp"
#include "errors.hpp"
#include "parallel.hpp"
#include "prefilter.hpp"
#include "simd.hpp"
#include "topk.hpp"
#include "types.hpp"

namespace fieldrank {

using RowMatrixXu16 = Eigen::Matrix<std::uint16_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMatrixXi8 = Eigen::Matrix<std::int8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VectorXi32 = Eigen::Matrix<std::int32_t, Eigen::Dynamic, 1>;
using Bf16Ref = Eigen::Ref<const RowMatrixXu16>;
using Int8Ref = Eigen::Ref<const RowMatrixXi8>;
using Int32Ref = Eigen::Ref<const VectorXi32>;

// A bf16 copy of E: the upper 16 bits of each float after round-to-nearest-even.
struct Bf16Corpus {
    RowMatrixXu16 codes;
};

// An int8 copy of E: codes (N, d), per-row scales (row ≈ codes · scale) and per-row code sums.
struct Int8Corpus {
    RowMatrixXi8 codes;
    VectorXf scale;
    VectorXi32 sums;
};

// fp32 -> bf16 with round-to-nearest-even on the bit pattern (inputs are finite).
inline std::uint16_t to_bf16(float x) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return static_cast<std::uint16_t>(bits >> 16);
}

// Symmetric int8 codes of a vector with scale max|x| / 127: code = clamp(rint(x / scale), ±127).
inline float quantize_int8_row(const float* x, Index d, std::int8_t* codes, std::int32_t* sum) {
    float peak = 0.0f;
    for (Index j = 0; j < d; ++j) peak = std::max(peak, std::abs(x[j]));
    const float scale = peak / 127.0f;
    std::int32_t total = 0;
    for (Index j = 0; j < d; ++j) {
        const float code = scale > 0.0f ? std::nearbyint(x[j] / scale) : 0.0f;
        const std::int8_t c = static_cast<std::int8_t>(std::min(127.0f, std::max(-127.0f, code)));
        codes[j] = c;
        total += c;
    }
    if (sum != nullptr) *sum = total;
    return scale;
}

using Bf16Out = Eigen::Ref<RowMatrixXu16>;
using Int8Out = Eigen::Ref<RowMatrixXi8>;
using FloatOut = Eigen::Ref<VectorXf>;
using Int32Out = Eigen::Ref<VectorXi32>;

inline void check_quantize_out(const MatrixRef& E, Index rows, Index cols) {
    if (rows != E.rows() || cols != E.cols())
        fail("codes must have E's shape (", E.rows(), ", ", E.cols(), "), got (", rows, ", ", cols, ")");
}

// bf16 codes of E written into `codes` (N, d): the caller allocates, e.g. numpy with huge pages,
// which the scan then reads at full bandwidth.
inline void quantize_bf16_into(const MatrixRef& E, Bf16Out codes) {
    require_rows("E", E);
    check_quantize_out(E, codes.rows(), codes.cols());
    check_unit_rows("E", E);
    for (Index i = 0; i < E.rows(); ++i)
        for (Index j = 0; j < E.cols(); ++j) codes(i, j) = to_bf16(E(i, j));
}

inline void quantize_int8_into(const MatrixRef& E, Int8Out codes, FloatOut scale, Int32Out sums) {
    require_rows("E", E);
    if (E.cols() > defaults::int8_max_dim)
        fail("E must have at most ", defaults::int8_max_dim, " columns for the int8 copy (int32 sums stay exact), got ",
             E.cols());
    check_quantize_out(E, codes.rows(), codes.cols());
    if (scale.size() != E.rows() || sums.size() != E.rows())
        fail("scale and sums must have one entry per row of E (", E.rows(), "), got ", scale.size(), " and ",
             sums.size());
    check_unit_rows("E", E);
    for (Index i = 0; i < E.rows(); ++i)
        scale[i] = quantize_int8_row(E.row(i).data(), E.cols(), codes.row(i).data(), &sums[i]);
}

inline Bf16Corpus quantize_bf16(const MatrixRef& E) {
    Bf16Corpus out;
    out.codes.resize(E.rows(), E.cols());
    quantize_bf16_into(E, out.codes);
    return out;
}

inline Int8Corpus quantize_int8(const MatrixRef& E) {
    Int8Corpus out;
    out.codes.resize(E.rows(), E.cols());
    out.scale.resize(E.rows());
    out.sums.resize(E.rows());
    quantize_int8_into(E, out.codes, out.scale, out.sums);
    return out;
}

namespace detail {

inline void check_quantized_call(const MatrixRef& E, Index code_rows, Index code_cols, const OptionalIds& subset,
                                 Index p, Index factor) {
    require_rows("E", E);
    if (code_rows != E.rows() || code_cols != E.cols())
        fail("the quantized corpus must have E's shape (", E.rows(), ", ", E.cols(), "), got (", code_rows, ", ",
             code_cols, "); quantize this E");
    check_subset(subset, E.rows());
    require_positive("p", p);
    require_positive("rescore_factor", factor);
}

// Exact fp32 rescoring of candidate rows (checked in the same pass), keeping the best p.
inline std::vector<ScoredId<float>> rescore(const simd::KernelTable& kernels, const MatrixRef& E, const float* q,
                                            const std::vector<ScoredId<float>>& candidates, Index p) {
    const Index m = static_cast<Index>(candidates.size());
    std::vector<Index> ids(static_cast<std::size_t>(m));
    for (Index i = 0; i < m; ++i) ids[static_cast<std::size_t>(i)] = candidates[static_cast<std::size_t>(i)].id;
    std::vector<float> dots(static_cast<std::size_t>(m)), norms(static_cast<std::size_t>(m));
    kernels.score_f32(E.data(), E.outerStride(), ids.data(), m, E.cols(), q, E.cols(), 1, dots.data(), m, norms.data());
    check_scored_block(E, "E", ids.data(), 0, m, dots.data(), m, 1, norms.data());
    TopK<float> best(std::min(p, m));
    push_block(best, dots.data(), ids.data(), 0, m);
    return best.take_sorted();
}

// For each of nq queries: the top `capacity` candidates by score_block(query, ids, first, count,
// out), rows split in chunks across threads and merged (identical for any thread count).
template <typename ScoreBlock>
std::vector<std::vector<ScoredId<float>>> scan_quantized(Index n, const Index* ids, Index nq, Index capacity,
                                                         Index n_threads, ScoreBlock score_block) {
    capacity = std::min(capacity, n);
    // More workers than rows never helps; the cap also keeps chunks_per_thread · workers in range.
    const Index workers = std::min<Index>(resolve_threads(n_threads), std::max<Index>(n, 1));
    Index chunks = 1;
    if (workers > 1) {
        const Index wanted = (defaults::scan_chunks_per_thread * workers + nq - 1) / nq;
        chunks = std::max<Index>(1, std::min<Index>(wanted, n / defaults::scan_min_chunk_rows));
    }
    const Index chunk_rows = (n + chunks - 1) / chunks;
    std::vector<std::vector<ScoredId<float>>> partial(static_cast<std::size_t>(nq * chunks));
    parallel_for(0, nq * chunks, n_threads, [&](Index task) {
        const Index b = task / chunks;
        const Index c = task % chunks;
        // Rows are streamed in long blocks (the kernels read contiguous rows one after the other).
        constexpr Index kBlock = defaults::scan_stream_block_rows;
        float scores[kBlock];
        TopK<float> best(capacity);
        const Index end = std::min(n, (c + 1) * chunk_rows);
        for (Index b0 = c * chunk_rows; b0 < end; b0 += kBlock) {
            const Index count = std::min(kBlock, end - b0);
            const Index* block_ids = ids != nullptr ? ids + b0 : nullptr;
            score_block(b, block_ids, b0, count, scores);
            push_block(best, scores, block_ids, b0, count);
        }
        partial[static_cast<std::size_t>(task)] = best.take_sorted();
    });
    std::vector<std::vector<ScoredId<float>>> result(static_cast<std::size_t>(nq));
    for (Index b = 0; b < nq; ++b) {
        if (chunks == 1) {
            result[static_cast<std::size_t>(b)] = std::move(partial[static_cast<std::size_t>(b)]);
            continue;
        }
        TopK<float> merged(capacity);
        for (Index c = 0; c < chunks; ++c)
            for (const auto& item : partial[static_cast<std::size_t>(b * chunks + c)]) merged.push(item.score, item.id);
        result[static_cast<std::size_t>(b)] = merged.take_sorted();
    }
    return result;
}

// Candidates from the quantized scan, rescored, as a batch ranking of width min(p, n).
template <typename ScoreBlock>
BatchRanking prefilter_quantized_impl(const MatrixRef& E, const MatrixRef& Q, Index p, Index factor,
                                      const OptionalIds& subset, Index n_threads, ScoreBlock score_block) {
    const simd::KernelTable& kernels = simd::kernels();
    const Index n = candidate_count(E, subset);
    const Index width = std::min(p, n);
    BatchRanking out;
    out.ids.setConstant(Q.rows(), width, -1);
    out.scores.setZero(Q.rows(), width);
    if (Q.rows() == 0) return out;
    // factor · p, saturated: both are validated >= 1 but their product can pass the Index limit.
    const Index keep = factor > std::numeric_limits<Index>::max() / p ? std::numeric_limits<Index>::max() : factor * p;
    const auto candidates =
        scan_quantized(n, subset ? subset->data() : nullptr, Q.rows(), keep, n_threads, score_block);
    parallel_for(0, Q.rows(), n_threads, [&](Index b) {
        const auto top = rescore(kernels, E, Q.row(b).data(), candidates[static_cast<std::size_t>(b)], p);
        for (Index i = 0; i < static_cast<Index>(top.size()); ++i) {
            out.ids(b, i) = top[static_cast<std::size_t>(i)].id;
            out.scores(b, i) = top[static_cast<std::size_t>(i)].score;
        }
    });
    return out;
}

inline Ranking first_row(const BatchRanking& batch) {
    Ranking out;
    out.ids = batch.ids.row(0).transpose();
    out.scores = batch.scores.row(0).transpose();
    return out;
}

inline void check_quantized_queries(const MatrixRef& E, const MatrixRef& Q) {
    if (Q.cols() != E.cols()) fail("Q must have ", E.cols(), " columns to match E.shape[1], got ", Q.cols());
    for (Index b = 0; b < Q.rows(); ++b) require_query("Q row", VectorRef(Q.row(b).transpose()), E.cols(), "E");
}

}  // namespace detail

inline BatchRanking prefilter_bf16_batch(const Bf16Ref& codes, const MatrixRef& E, const MatrixRef& Q, Index p,
                                         Index factor, const OptionalIds& subset, Index n_threads) {
    detail::check_quantized_call(E, codes.rows(), codes.cols(), subset, p, factor);
    detail::check_quantized_queries(E, Q);
    const simd::KernelTable& kernels = simd::kernels();
    return detail::prefilter_quantized_impl(
        E, Q, p, factor, subset, n_threads,
        [&](Index b, const Index* ids, Index first, Index count, float* out) {
            const std::uint16_t* base = ids != nullptr ? codes.data() : codes.data() + first * codes.outerStride();
            kernels.score_bf16(base, codes.outerStride(), ids, count, codes.cols(), Q.row(b).data(), out);
        });
}

inline Ranking prefilter_bf16(const Bf16Ref& codes, const MatrixRef& E, const VectorRef& q, Index p, Index factor,
                              const OptionalIds& subset = std::nullopt) {
    require_query("q", q, E.cols(), "E");
    Eigen::Map<const RowMatrixXf> Q(q.data(), 1, q.size());
    return detail::first_row(prefilter_bf16_batch(codes, E, Q, p, factor, subset, 1));
}

inline BatchRanking prefilter_int8_batch(const Int8Ref& codes, const VectorRef& scale, const Int32Ref& sums,
                                         const MatrixRef& E, const MatrixRef& Q, Index p, Index factor,
                                         const OptionalIds& subset, Index n_threads) {
    detail::check_quantized_call(E, codes.rows(), codes.cols(), subset, p, factor);
    if (scale.size() != codes.rows() || sums.size() != codes.rows())
        fail("the int8 corpus needs one scale and one code sum per row: expected ", codes.rows(), ", got ",
             scale.size(), " and ", sums.size());
    if (codes.cols() > defaults::int8_max_dim)
        fail("E must have at most ", defaults::int8_max_dim, " columns for the int8 scan, got ", codes.cols());
    detail::check_quantized_queries(E, Q);
    const simd::KernelTable& kernels = simd::kernels();
    const Index d = codes.cols();
    RowMatrixXi8 q8(Q.rows(), d);
    VectorXf q_scale(Q.rows());
    for (Index b = 0; b < Q.rows(); ++b) q_scale[b] = quantize_int8_row(Q.row(b).data(), d, q8.row(b).data(), nullptr);
    return detail::prefilter_quantized_impl(
        E, Q, p, factor, subset, n_threads,
        [&](Index b, const Index* ids, Index first, Index count, float* out) {
            const std::int8_t* base = ids != nullptr ? codes.data() : codes.data() + first * codes.outerStride();
            const float* row_scale = ids != nullptr ? scale.data() : scale.data() + first;
            const std::int32_t* row_sum = ids != nullptr ? sums.data() : sums.data() + first;
            kernels.score_int8(base, codes.outerStride(), ids, count, d, q8.row(b).data(), row_scale, row_sum,
                               q_scale[b], out);
        });
}

inline Ranking prefilter_int8(const Int8Ref& codes, const VectorRef& scale, const Int32Ref& sums, const MatrixRef& E,
                              const VectorRef& q, Index p, Index factor, const OptionalIds& subset = std::nullopt) {
    require_query("q", q, E.cols(), "E");
    Eigen::Map<const RowMatrixXf> Q(q.data(), 1, q.size());
    return detail::first_row(prefilter_int8_batch(codes, scale, sums, E, Q, p, factor, subset, 1));
}

}  // namespace fieldrank
