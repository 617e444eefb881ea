// CFS, Conditional Field Subtraction (docs/spec.md §3): greedy picks penalised by a running summed
// Gaussian coverage field, so paraphrases of a picked memory lose ground.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "defaults.hpp"
#include "errors.hpp"
#include "kernels.hpp"
#include "prefilter.hpp"
#include "simd.hpp"
#include "types.hpp"

namespace fieldrank {

struct CfsParams {
    double sigma = defaults::cfs_sigma;
    double beta = defaults::cfs_beta;
    double eps = defaults::cfs_eps;
};

inline void check_cfs_params(Index k, const CfsParams& params) {
    require_positive("k", k);
    require_positive_real("sigma", params.sigma);
    require_non_negative_real("beta", params.beta);
    require_positive_real("eps", params.eps);
}

// Index of the best unpicked candidate among the first n by value, ties to the lower id.
inline Index best_unpicked(const VectorXf& value, const std::vector<char>& picked, const IdVector& ids, Index n) {
    Index best = -1;
    for (Index i = 0; i < n; ++i) {
        if (picked[static_cast<std::size_t>(i)]) continue;
        if (best < 0 || value[i] > value[best] || (value[i] == value[best] && ids[i] < ids[best])) best = i;
    }
    return best;
}

inline Index best_unpicked(const VectorXf& value, const std::vector<char>& picked, const IdVector& ids) {
    return best_unpicked(value, picked, ids, value.size());
}

// The greedy loop CFS and MMR share: take the best unpicked candidate by `value` (ties to the
// lower id), then score the picked row against the pool (one kernel column per pick, O(P·d)) and
// let `update(column, t)` fold it into `value`. Vectors are zero-padded to a multiple of 16
// (`value` included) so that the updates run over whole vectors.
template <typename Update>
Ranking greedy_picks(const Pool& pool, Index k, VectorXf& value, Update&& update) {
    const simd::KernelTable& kernels = simd::kernels();
    const Index n = pool.ids.size();
    const Index d = pool.dim();
    const Index m = std::min(k, n);
    VectorXf column = VectorXf::Zero(detail::pad16(n));
    std::vector<char> picked(static_cast<std::size_t>(n), 0);
    Ranking out;
    out.ids.resize(m);
    out.scores.resize(m);
    for (Index t = 0; t < m; ++t) {
        const Index pick = best_unpicked(value, picked, pool.ids, n);
        picked[static_cast<std::size_t>(pick)] = 1;
        out.ids[t] = pool.ids[pick];
        out.scores[t] = value[pick];
        if (t + 1 == m) break;
        kernels.score_f32(pool.rows(), pool.stride(), pool.row_ids(), n, d, pool.row(pick), d, 1, column.data(),
                          column.size(), nullptr);
        update(column.data(), t);
    }
    return out;
}

inline Ranking cfs_on_pool(const Pool& pool, Index k, const CfsParams& params) {
    const simd::KernelTable& kernels = simd::kernels();
    const Index n = pool.ids.size();
    const Index ld = detail::pad16(n);
    const float eps = static_cast<float>(params.eps);
    const float beta = static_cast<float>(params.beta);
    // Past float32 (sigma below ~4e-20) the kernel is the sigma -> 0 limit: 1 at distance 0, else 0;
    // an inf here would make 0·inf = NaN for a duplicate.
    const float inv_two_sigma_sq = static_cast<float>(
        std::min(1.0 / (2.0 * params.sigma * params.sigma), static_cast<double>(std::numeric_limits<float>::max())));
    // log element by element (std::log): Eigen's vectorised log rounds packet lanes and the
    // scalar tail differently, and duplicate candidates must get bit-identical values.
    VectorXf base = VectorXf::Zero(ld);
    for (Index i = 0; i < n; ++i) base[i] = std::log(std::max(pool.sims[i], eps));
    VectorXf field = VectorXf::Zero(ld);  // the summed Gaussian field of the picks so far
    VectorXf value = base;
    return greedy_picks(pool, k, value, [&](const float* column, Index) {
        kernels.cfs_update(column, base.data(), ld, inv_two_sigma_sq, beta, field.data(), value.data());
    });
}

inline Ranking cfs(const MatrixRef& E, const VectorRef& q, Index k, Index p, const CfsParams& params,
                   const OptionalIds& subset = std::nullopt) {
    check_corpus_call(E, q, subset);
    require_positive("p", p);
    check_cfs_params(k, params);
    return cfs_on_pool(pool_from_corpus(E, q, p, subset), k, params);
}

inline Ranking cfs_pool(const IdRef& ids, const MatrixRef& C, const VectorRef& q, Index k, const CfsParams& params,
                        const OptionalVector& sims = std::nullopt) {
    check_cfs_params(k, params);
    return cfs_on_pool(pool_from_caller(ids, C, q, sims), k, params);
}

inline BatchRanking cfs_batch(const MatrixRef& E, const MatrixRef& Q, Index k, Index p, const CfsParams& params,
                              const OptionalIds& subset, Index n_threads) {
    const Index width = checked_pool_batch_width(E, Q, k, p, subset, [&] { check_cfs_params(k, params); });
    return run_ranking_batch(E, Q, p, subset, n_threads, width,
                             [&](const Pool& pool) { return cfs_on_pool(pool, k, params); });
}

}  // namespace fieldrank
