// Prefilter (SPEC §1): cosine top-P by dot product, fused with selection so that no N-length
// score array is written; plus the candidate pool every reranking operator starts from.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "defaults.hpp"
#include "errors.hpp"
#include "kernels.hpp"
#include "parallel.hpp"
#include "simd.hpp"
#include "topk.hpp"
#include "types.hpp"

namespace fieldrank {

// The candidates an operator reranks: ids, their vectors (one row each) and their cosines
// with the query. The rows are either owned (`vectors`, gathered from E), or read in place:
// the caller's C (row i at external + i · stride), or E itself (row i at external + ids[i] ·
// stride, `by_id`), so batches copy no rows. Kernels take rows(), stride() and row_ids().
struct Pool {
    IdVector ids;
    RowMatrixXf vectors;  // owned rows; empty when the pool reads rows in place
    VectorXf sims;
    const float* external = nullptr;
    Index external_stride = 0;
    Index external_dim = 0;
    bool by_id = false;  // external is E and row i is E.row(ids[i])

    Index size() const { return ids.size(); }
    const float* rows() const { return external != nullptr ? external : vectors.data(); }
    Index stride() const { return external != nullptr ? external_stride : vectors.cols(); }
    Index dim() const { return external != nullptr ? external_dim : vectors.cols(); }
    const Index* row_ids() const { return by_id ? ids.data() : nullptr; }
    const float* row(Index i) const { return rows() + (by_id ? ids[i] : i) * stride(); }
};

inline void check_subset(const OptionalIds& subset, Index n_rows) {
    if (!subset) return;
    const IdRef& ids = *subset;
    if (ids.size() == 0) fail("subset must hold at least one id, got an empty array");
    std::vector<Index> sorted(ids.data(), ids.data() + ids.size());
    std::sort(sorted.begin(), sorted.end());
    if (sorted.front() < 0 || sorted.back() >= n_rows)
        fail("subset ids must lie in [0, ", n_rows, "), got ids from ", sorted.front(), " to ", sorted.back());
    const auto repeat = std::adjacent_find(sorted.begin(), sorted.end());
    if (repeat != sorted.end()) fail("subset ids must be unique, got ", *repeat, " more than once");
}

inline void check_corpus_call(const MatrixRef& E, const VectorRef& q, const OptionalIds& subset) {
    require_rows("E", E);
    require_query("q", q, E.cols(), "E");
    check_subset(subset, E.rows());
}

inline void check_pool_ids(const IdRef& ids, const MatrixRef& C) {
    require_rows("C", C);
    if (ids.size() != C.rows()) fail("ids must have one id per row of C: expected length ", C.rows(), ", got ", ids.size());
    std::vector<Index> sorted(ids.data(), ids.data() + ids.size());
    std::sort(sorted.begin(), sorted.end());
    const auto repeat = std::adjacent_find(sorted.begin(), sorted.end());
    if (repeat != sorted.end()) fail("ids must be unique within a pool, got ", *repeat, " more than once");
}

namespace detail {

inline Index pad16(Index n) { return (n + 15) / 16 * 16; }

// What a scored row must satisfy: corpus rows (E, ranked by dot product as cosine) a unit norm;
// a caller's pool rows (C, taken as given) only a non-zero, finite norm.
enum class RowNorm { unit, nonzero };

// Throws for the first bad row of a scored block: a NaN/inf value, or a norm outside the bounds
// of `rule` (for RowNorm::unit: zero, overflowing or merely unnormalised). The kernels score and
// square-norm each row in one read, so this check costs no second pass over E.
inline void check_scored_block(const MatrixRef& E, const char* name, const Index* ids, Index first_row, Index count,
                               const float* dots, Index ld_dots, Index nq, const float* norms,
                               RowNorm rule = RowNorm::unit) {
    constexpr float kMax = std::numeric_limits<float>::max();
    const UnitNormSqBounds unit = unit_norm_sq_bounds();
    const float lo = rule == RowNorm::unit ? unit.lo : static_cast<float>(defaults::min_row_norm_sq);
    const float hi = rule == RowNorm::unit ? unit.hi : kMax;
    bool ok = true;
    for (Index i = 0; i < count; ++i) ok &= (norms[i] >= lo) & (norms[i] <= hi);
    for (Index b = 0; b < nq; ++b)
        for (Index i = 0; i < count; ++i) ok &= std::abs(dots[b * ld_dots + i]) <= kMax;
    if (ok) return;
    for (Index i = 0; i < count; ++i) {
        bool bad = !(norms[i] >= lo && norms[i] <= hi);
        for (Index b = 0; b < nq; ++b) bad |= !(std::abs(dots[b * ld_dots + i]) <= kMax);
        if (bad) explain_bad_row(name, E, ids != nullptr ? ids[i] : first_row + i, rule == RowNorm::unit);
    }
}

// Pushes a block of scores into a selector, comparing against its current worst first.
inline void push_block(TopK<float>& best, const float* scores, const Index* ids, Index first_row, Index count) {
    Index i = 0;
    for (; i < count && !best.full(); ++i) best.push(scores[i], ids != nullptr ? ids[i] : first_row + i);
    if (i == count || best.capacity() == 0) return;
    float threshold = best.worst().score;
    for (; i < count; ++i) {
        if (scores[i] < threshold) continue;
        best.push(scores[i], ids != nullptr ? ids[i] : first_row + i);
        threshold = best.worst().score;
    }
}

// Scores candidate positions [begin, end) of E (rows `ids[pos]`, or `pos` without ids) against
// nq <= scan_query_group queries, checking every row (values and norm, from the same read) and
// keeping each query's best in tops[b]. One query over contiguous rows streams E row by row;
// several queries or a subset use register tiles of rows × queries.
inline void scan_range(const simd::KernelTable& kernels, const MatrixRef& E, const float* Q, Index ldq, Index nq,
                       const Index* ids, Index begin, Index end, TopK<float>* tops) {
    static_assert(defaults::scan_block_rows * defaults::scan_query_group >= defaults::scan_stream_block_rows,
                  "the block buffers must hold a streamed block");
    float dots[defaults::scan_query_group * defaults::scan_block_rows];
    float norms[defaults::scan_stream_block_rows];
    const Index d = E.cols();
    const Index stride = E.outerStride();
    const bool stream = nq == 1 && ids == nullptr;
    const Index kBlock = stream ? defaults::scan_stream_block_rows : defaults::scan_block_rows;
    // A contiguous stream prefetches each row scan_prefetch_bytes ahead (tiles of rows, see
    // score_f32_stream): with 8-row tiles this read at the probe's speed from L2 and L3.
    const Index row_bytes = static_cast<Index>(sizeof(float)) * std::max<Index>(stride, 1);
    const Index prefetch_rows = (defaults::scan_prefetch_bytes + row_bytes - 1) / row_bytes;
    for (Index b0 = begin; b0 < end; b0 += kBlock) {
        const Index count = std::min(kBlock, end - b0);
        const Index* block_ids = ids != nullptr ? ids + b0 : nullptr;
        const float* base = ids != nullptr ? E.data() : E.data() + b0 * stride;
        if (stream)
            kernels.score_f32_stream(base, stride, count, d, Q, dots, norms, prefetch_rows);
        else
            kernels.score_f32(base, stride, block_ids, count, d, Q, ldq, nq, dots, kBlock, norms);
        check_scored_block(E, "E", block_ids, b0, count, dots, kBlock, nq, norms);
        for (Index b = 0; b < nq; ++b) push_block(tops[b], dots + b * kBlock, block_ids, b0, count);
    }
}

// scan_range keeping every (score, row) instead of a top-p heap (for ranges of a few times p).
inline void scan_range_all(const simd::KernelTable& kernels, const MatrixRef& E, const float* Q, Index ldq, Index nq,
                           const Index* ids, Index begin, Index end, std::vector<ScoredId<float>>* all) {
    constexpr Index kBlock = defaults::scan_block_rows;
    float dots[defaults::scan_query_group * defaults::scan_block_rows];
    float norms[defaults::scan_block_rows];
    const Index d = E.cols();
    const Index stride = E.outerStride();
    for (Index b = 0; b < nq; ++b) all[b].reserve(static_cast<std::size_t>(end - begin));
    for (Index b0 = begin; b0 < end; b0 += kBlock) {
        const Index count = std::min(kBlock, end - b0);
        const Index* block_ids = ids != nullptr ? ids + b0 : nullptr;
        const float* base = ids != nullptr ? E.data() : E.data() + b0 * stride;
        kernels.score_f32(base, stride, block_ids, count, d, Q, ldq, nq, dots, kBlock, norms);
        check_scored_block(E, "E", block_ids, b0, count, dots, kBlock, nq, norms);
        for (Index b = 0; b < nq; ++b)
            for (Index i = 0; i < count; ++i)
                all[b].push_back({dots[b * kBlock + i], block_ids != nullptr ? block_ids[i] : b0 + i});
    }
}

}  // namespace detail

inline Index candidate_count(const MatrixRef& E, const OptionalIds& subset) {
    return subset ? static_cast<Index>(subset->size()) : static_cast<Index>(E.rows());
}

// The best `capacity` rows of E (or of the subset) for each of the nq queries (rows of Q with
// stride ldq), best first. One pass over E serves a group of up to scan_query_group queries; the
// rows are split into chunks across threads and each query's chunk results merged. Scores of a
// (row, query) pair do not depend on the split and selection is a total order (score, then id),
// so the result is identical for any n_threads and equal to the single-query scan.
inline std::vector<std::vector<ScoredId<float>>> scan_topk(const MatrixRef& E, const float* Q, Index ldq, Index nq,
                                                           const OptionalIds& subset, Index capacity,
                                                           Index n_threads) {
    const simd::KernelTable& kernels = simd::kernels();
    const Index n = candidate_count(E, subset);
    const Index* ids = subset ? subset->data() : nullptr;
    capacity = std::min(capacity, n);
    const Index group = defaults::scan_query_group;
    const Index groups = (nq + group - 1) / group;
    // More workers than rows never helps; the cap also keeps chunks_per_thread · workers in range.
    const Index workers = std::min<Index>(resolve_threads(n_threads), std::max<Index>(n, 1));
    Index chunks = 1;
    if (workers > 1 && groups > 0) {
        const Index wanted = (defaults::scan_chunks_per_thread * workers + groups - 1) / groups;
        chunks = std::max<Index>(1, std::min<Index>(wanted, n / defaults::scan_min_chunk_rows));
    }
    const Index chunk_rows = (n + chunks - 1) / chunks;
    std::vector<std::vector<std::vector<ScoredId<float>>>> partial(static_cast<std::size_t>(groups * chunks));
    parallel_for(0, groups * chunks, n_threads, [&](Index task) {
        const Index g = task / chunks;
        const Index c = task % chunks;
        const Index q0 = g * group;
        const Index count = std::min(group, nq - q0);
        const Index begin = c * chunk_rows;
        const Index end = std::min(n, begin + chunk_rows);
        auto& out = partial[static_cast<std::size_t>(task)];
        out.reserve(static_cast<std::size_t>(count));
        if (end - begin <= defaults::scan_select_all_factor * capacity) {
            // Few candidates per kept row (a small subset): keep every score and select once,
            // cheaper than a heap that most rows enter. O(capacity) memory all the same.
            std::vector<std::vector<ScoredId<float>>> all(static_cast<std::size_t>(count));
            detail::scan_range_all(kernels, E, Q + q0 * ldq, ldq, count, ids, begin, end, all.data());
            for (auto& items : all) out.push_back(select_sorted(std::move(items), capacity));
            return;
        }
        std::vector<TopK<float>> tops;
        tops.reserve(static_cast<std::size_t>(count));
        for (Index b = 0; b < count; ++b) tops.emplace_back(capacity);
        detail::scan_range(kernels, E, Q + q0 * ldq, ldq, count, ids, begin, end, tops.data());
        for (auto& top : tops) out.push_back(top.take_sorted());
    });
    std::vector<std::vector<ScoredId<float>>> result(static_cast<std::size_t>(nq));
    for (Index b = 0; b < nq; ++b) {
        const Index g = b / group;
        const std::size_t slot = static_cast<std::size_t>(b - g * group);
        if (chunks == 1) {
            result[static_cast<std::size_t>(b)] = std::move(partial[static_cast<std::size_t>(g)][slot]);
            continue;
        }
        TopK<float> merged(capacity);
        for (Index c = 0; c < chunks; ++c)
            for (const auto& item : partial[static_cast<std::size_t>(g * chunks + c)][slot]) merged.push(item.score, item.id);
        result[static_cast<std::size_t>(b)] = merged.take_sorted();
    }
    return result;
}

// Calls visit(score, row) for every row of E (or of the subset), checking each row's values in
// the same pass that scores it. Scores come from the active kernel variant, a block at a time.
template <typename Visit>
void score_rows(const MatrixRef& E, const VectorRef& q, const OptionalIds& subset, Visit visit) {
    const simd::KernelTable& kernels = simd::kernels();
    constexpr Index kBlock = defaults::scan_block_rows;
    float dots[kBlock];
    float norms[kBlock];
    const Index n = candidate_count(E, subset);
    const Index* ids = subset ? subset->data() : nullptr;
    const Index stride = E.outerStride();
    for (Index b0 = 0; b0 < n; b0 += kBlock) {
        const Index count = std::min(kBlock, n - b0);
        const Index* block_ids = ids != nullptr ? ids + b0 : nullptr;
        const float* base = ids != nullptr ? E.data() : E.data() + b0 * stride;
        kernels.score_f32(base, stride, block_ids, count, E.cols(), q.data(), E.cols(), 1, dots, kBlock, norms);
        detail::check_scored_block(E, "E", block_ids, b0, count, dots, kBlock, 1, norms);
        for (Index i = 0; i < count; ++i) visit(dots[i], block_ids != nullptr ? block_ids[i] : b0 + i);
    }
}

// Unchecked core of prefilter, for operators that validated their arguments already.
inline Ranking prefilter_unchecked(const MatrixRef& E, const VectorRef& q, Index p, const OptionalIds& subset) {
    auto tops = scan_topk(E, q.data(), q.size(), 1, subset, p, 1);
    return ranking_of<Ranking>(tops[0]);
}

inline Ranking prefilter(const MatrixRef& E, const VectorRef& q, Index p, const OptionalIds& subset = std::nullopt) {
    check_corpus_call(E, q, subset);
    require_positive("p", p);
    return prefilter_unchecked(E, q, p, subset);
}

// Dot products of a caller's pool rows with q (sims[i] = C_i · q, the cosines for unit rows),
// checking every row (finite, non-zero norm) in the same pass. Pool rows are taken as given.
inline VectorXf pool_cosines(const char* name, const MatrixRef& C, const VectorRef& q) {
    const simd::KernelTable& kernels = simd::kernels();
    VectorXf sims(C.rows());
    VectorXf norms(C.rows());
    kernels.score_f32(C.data(), C.outerStride(), nullptr, C.rows(), C.cols(), q.data(), C.cols(), 1, sims.data(),
                      C.rows(), norms.data());
    detail::check_scored_block(C, name, nullptr, 0, C.rows(), sims.data(), C.rows(), 1, norms.data(),
                               detail::RowNorm::nonzero);
    return sims;
}

// Ranks a caller's pool (ids, vectors C) by cosine with q.
inline Ranking prefilter_pool(const IdRef& ids, const MatrixRef& C, const VectorRef& q, Index p) {
    check_pool_ids(ids, C);
    require_query("q", q, C.cols(), "C");
    require_positive("p", p);
    const VectorXf sims = pool_cosines("C", C, q);
    TopK<float> best(std::min<Index>(p, C.rows()));
    for (Index i = 0; i < C.rows(); ++i) best.push(sims[i], ids[i]);
    return ranking_of<Ranking>(best.take_sorted());
}

// The rows of a ranking gathered from E, with their cosines: the pool an operator reranks.
// (copy_rows = false: the pool reads its rows from E in place, by id; E must outlive it.)
inline Pool gather_pool(const MatrixRef& E, std::vector<ScoredId<float>>&& top, bool copy_rows = true) {
    Pool pool;
    const Index m = static_cast<Index>(top.size());
    pool.ids.resize(m);
    pool.sims.resize(m);
    if (copy_rows) {
        pool.vectors.resize(m, E.cols());
    } else {
        pool.external = E.data();
        pool.external_stride = E.outerStride();
        pool.external_dim = E.cols();
        pool.by_id = true;
    }
    for (Index i = 0; i < m; ++i) {
        const auto& item = top[static_cast<std::size_t>(i)];
        pool.ids[i] = item.id;
        pool.sims[i] = item.score;
        if (copy_rows) pool.vectors.row(i) = E.row(item.id);
    }
    return pool;
}

// The prefilter's top-p rows of E, gathered, with their cosines.
inline Pool pool_from_corpus(const MatrixRef& E, const VectorRef& q, Index p, const OptionalIds& subset) {
    auto tops = scan_topk(E, q.data(), q.size(), 1, subset, p, 1);
    return gather_pool(E, std::move(tops[0]));
}

// A caller-supplied pool, checked: one pass over C computes the cosines and checks every row.
// Cosines are the caller's when given. The pool views C; C must outlive it.
inline Pool pool_from_caller(const IdRef& ids, const MatrixRef& C, const VectorRef& q, const OptionalVector& sims) {
    check_pool_ids(ids, C);
    require_query("q", q, C.cols(), "C");
    Pool pool;
    pool.ids = ids;
    pool.external = C.data();
    pool.external_stride = C.outerStride();
    pool.external_dim = C.cols();
    VectorXf cosines = pool_cosines("C", C, q);
    if (sims) {
        if (sims->size() != C.rows()) fail("sims must have one value per row of C: expected length ", C.rows(), ", got ", sims->size());
        for (Index i = 0; i < sims->size(); ++i)
            if (!std::isfinite((*sims)[i])) fail("sims must be finite, got ", (*sims)[i], " at position ", i);
        pool.sims = *sims;
    } else {
        pool.sims = std::move(cosines);
    }
    return pool;
}

// Runs a single-query operator on every query's pool: one scan_topk over E for the whole batch
// (threads split E's rows), then the pools in parallel, each by one thread with the single-query
// code. The batch therefore equals the single form for any thread count.
template <typename OnPool>
BatchRanking run_ranking_batch(const MatrixRef& E, const MatrixRef& Q, Index p, const OptionalIds& subset,
                               Index n_threads, Index width, OnPool on_pool) {
    BatchRanking out;
    out.ids.setConstant(Q.rows(), width, -1);
    out.scores.setZero(Q.rows(), width);
    if (Q.rows() == 0) return out;
    auto tops = scan_topk(E, Q.data(), Q.outerStride(), Q.rows(), subset, p, n_threads);
    parallel_for(0, Q.rows(), n_threads, [&](Index b) {
        Ranking r = on_pool(gather_pool(E, std::move(tops[static_cast<std::size_t>(b)]), false));
        out.ids.row(b).head(r.ids.size()) = r.ids.transpose();
        out.scores.row(b).head(r.scores.size()) = r.scores.transpose();
    });
    return out;
}

inline void check_batch(const MatrixRef& E, const MatrixRef& Q, const OptionalIds& subset) {
    require_rows("E", E);
    if (Q.cols() != E.cols()) fail("Q must have ", E.cols(), " columns to match E.shape[1], got ", Q.cols());
    for (Index b = 0; b < Q.rows(); ++b) require_query("Q row", VectorRef(Q.row(b).transpose()), E.cols(), "E");
    check_subset(subset, E.rows());
}

// The checks of a batch form over top-p pools (CFS, MMR, CFS-R), in their order: the batch, p, then
// the operator's own (`check_params()`). Returns the width of its result rows: min(k, p, candidates).
template <typename CheckParams>
Index checked_pool_batch_width(const MatrixRef& E, const MatrixRef& Q, Index k, Index p, const OptionalIds& subset,
                               CheckParams check_params) {
    check_batch(E, Q, subset);
    require_positive("p", p);
    check_params();
    return std::min<Index>(k, std::min<Index>(p, candidate_count(E, subset)));
}

inline BatchRanking prefilter_batch(const MatrixRef& E, const MatrixRef& Q, Index p, const OptionalIds& subset,
                                    Index n_threads) {
    check_batch(E, Q, subset);
    require_positive("p", p);
    const Index width = std::min<Index>(p, candidate_count(E, subset));
    BatchRanking out;
    out.ids.setConstant(Q.rows(), width, -1);
    out.scores.setZero(Q.rows(), width);
    if (Q.rows() == 0) return out;
    auto tops = scan_topk(E, Q.data(), Q.outerStride(), Q.rows(), subset, p, n_threads);
    for (Index b = 0; b < Q.rows(); ++b) {
        const auto& top = tops[static_cast<std::size_t>(b)];
        for (Index i = 0; i < static_cast<Index>(top.size()); ++i) {
            out.ids(b, i) = top[static_cast<std::size_t>(i)].id;
            out.scores(b, i) = top[static_cast<std::size_t>(i)].score;
        }
    }
    return out;
}

}  // namespace fieldrank
