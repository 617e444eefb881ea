// Prefilter (SPEC §1): cosine top-P by dot product, fused with selection so that no N-length
// score array is written; plus the candidate pool every reranking operator starts from.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "defaults.hpp"
#include "errors.hpp"
#include "kernels.hpp"
#include "parallel.hpp"
#include "topk.hpp"
#include "types.hpp"

namespace fieldrank {

// The candidates an operator reranks: ids, their vectors (one row each) and their cosines
// with the query.
struct Pool {
    IdVector ids;
    RowMatrixXf vectors;
    VectorXf sims;
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

inline void check_scored_row(const MatrixRef& E, Index row, float score, float norm_sq) {
    if (!std::isfinite(score) || !std::isfinite(norm_sq) || norm_sq < defaults::min_row_norm_sq)
        explain_bad_row("E", E, row);
}

}  // namespace detail

// Calls visit(score, row) for every row of E (or of the subset), checking each row's values in
// the same pass that scores it.
template <typename Visit>
void score_rows(const MatrixRef& E, const VectorRef& q, const OptionalIds& subset, Visit visit) {
    const Index d = E.cols();
    const float* query = q.data();
    auto score_one = [&](Index row) {
        float score, norm_sq;
        kernels::dot_and_norm(E.row(row).data(), query, d, score, norm_sq);
        detail::check_scored_row(E, row, score, norm_sq);
        visit(score, row);
    };
    if (subset) {
        const IdRef& ids = *subset;
        for (Index i = 0; i < ids.size(); ++i) score_one(ids[i]);
    } else {
        for (Index row = 0; row < E.rows(); ++row) score_one(row);
    }
}

inline Ranking to_ranking(std::vector<ScoredId<float>>&& items) {
    Ranking result;
    result.ids.resize(static_cast<Index>(items.size()));
    result.scores.resize(static_cast<Index>(items.size()));
    for (std::size_t i = 0; i < items.size(); ++i) {
        result.ids[static_cast<Index>(i)] = items[i].id;
        result.scores[static_cast<Index>(i)] = items[i].score;
    }
    return result;
}

inline Index candidate_count(const MatrixRef& E, const OptionalIds& subset) {
    return subset ? static_cast<Index>(subset->size()) : static_cast<Index>(E.rows());
}

// Unchecked core of prefilter, for operators that validated their arguments already.
inline Ranking prefilter_unchecked(const MatrixRef& E, const VectorRef& q, Index p, const OptionalIds& subset) {
    TopK<float> best(std::min<Index>(p, candidate_count(E, subset)));
    score_rows(E, q, subset, [&](float score, Index row) { best.push(score, row); });
    return to_ranking(best.take_sorted());
}

inline Ranking prefilter(const MatrixRef& E, const VectorRef& q, Index p, const OptionalIds& subset = std::nullopt) {
    check_corpus_call(E, q, subset);
    require_positive("p", p);
    return prefilter_unchecked(E, q, p, subset);
}

// Ranks a caller's pool (ids, vectors C) by cosine with q.
inline Ranking prefilter_pool(const IdRef& ids, const MatrixRef& C, const VectorRef& q, Index p) {
    check_pool_ids(ids, C);
    require_query("q", q, C.cols(), "C");
    require_positive("p", p);
    TopK<float> best(std::min<Index>(p, C.rows()));
    VectorXf sims(C.rows());
    kernels::dot_rows(C.data(), C.rows(), C.cols(), q.data(), sims.data());
    for (Index i = 0; i < C.rows(); ++i) {
        if (!std::isfinite(sims[i]) || C.row(i).squaredNorm() < defaults::min_row_norm_sq) explain_bad_row("C", C, i);
        best.push(sims[i], ids[i]);
    }
    return to_ranking(best.take_sorted());
}

// The prefilter's top-p rows of E, gathered, with their cosines.
inline Pool pool_from_corpus(const MatrixRef& E, const VectorRef& q, Index p, const OptionalIds& subset) {
    Ranking top = prefilter_unchecked(E, q, p, subset);
    Pool pool;
    pool.vectors.resize(top.ids.size(), E.cols());
    for (Index i = 0; i < top.ids.size(); ++i) pool.vectors.row(i) = E.row(top.ids[i]);
    pool.ids = std::move(top.ids);
    pool.sims = std::move(top.scores);
    return pool;
}

// A caller-supplied pool, checked. Cosines are computed unless given.
inline Pool pool_from_caller(const IdRef& ids, const MatrixRef& C, const VectorRef& q, const OptionalVector& sims) {
    check_pool_ids(ids, C);
    require_query("q", q, C.cols(), "C");
    check_rows_finite_nonzero("C", C, defaults::min_row_norm_sq);
    Pool pool;
    pool.ids = ids;
    pool.vectors = C;
    if (sims) {
        if (sims->size() != C.rows()) fail("sims must have one value per row of C: expected length ", C.rows(), ", got ", sims->size());
        for (Index i = 0; i < sims->size(); ++i)
            if (!std::isfinite((*sims)[i])) fail("sims must be finite, got ", (*sims)[i], " at position ", i);
        pool.sims = *sims;
    } else {
        pool.sims.resize(C.rows());
        kernels::dot_rows(pool.vectors.data(), C.rows(), C.cols(), q.data(), pool.sims.data());
    }
    return pool;
}

// Runs a single-query operator over every row of Q; each row is computed by one thread with the
// single-query code, so the batch equals the single form for any thread count.
template <typename Single>
BatchRanking run_ranking_batch(const MatrixRef& Q, Index n_threads, Index width, Single single) {
    BatchRanking out;
    out.ids.setConstant(Q.rows(), width, -1);
    out.scores.setZero(Q.rows(), width);
    parallel_for(0, Q.rows(), n_threads, [&](Index b) {
        Ranking r = single(VectorRef(Q.row(b).transpose()));
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

inline BatchRanking prefilter_batch(const MatrixRef& E, const MatrixRef& Q, Index p, const OptionalIds& subset,
                                    Index n_threads) {
    check_batch(E, Q, subset);
    require_positive("p", p);
    const Index width = std::min<Index>(p, candidate_count(E, subset));
    return run_ranking_batch(Q, n_threads, width,
                             [&](const VectorRef& q) { return prefilter_unchecked(E, q, p, subset); });
}

}  // namespace fieldrank
