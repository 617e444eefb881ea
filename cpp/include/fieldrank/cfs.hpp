// CFS, Conditional Field Subtraction (SPEC §3): greedy picks penalised by a running summed
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

// Index of the best unpicked candidate by value, ties to the lower id.
inline Index best_unpicked(const VectorXf& value, const std::vector<char>& picked, const IdVector& ids) {
    Index best = -1;
    for (Index i = 0; i < value.size(); ++i) {
        if (picked[static_cast<std::size_t>(i)]) continue;
        if (best < 0 || value[i] > value[best] || (value[i] == value[best] && ids[i] < ids[best])) best = i;
    }
    return best;
}

inline Ranking cfs_on_pool(const Pool& pool, Index k, const CfsParams& params) {
    const Index n = pool.ids.size();
    const Index m = std::min(k, n);
    const float eps = static_cast<float>(params.eps);
    const float beta = static_cast<float>(params.beta);
    const float inv_two_sigma_sq = static_cast<float>(1.0 / (2.0 * params.sigma * params.sigma));
    // log and exp element by element: Eigen's vectorised log/exp round a packet's lanes and the
    // scalar tail differently, so duplicate candidates could score an ulp apart (tie rule).
    const auto log_of = [](float x) { return std::log(x); };
    const auto exp_of = [](float x) { return std::exp(x); };
    const VectorXf base = pool.sims.cwiseMax(eps).unaryExpr(log_of);
    VectorXf field = VectorXf::Zero(n);
    VectorXf value = base;
    VectorXf column(n);
    std::vector<char> picked(static_cast<std::size_t>(n), 0);
    Ranking out;
    out.ids.resize(m);
    out.scores.resize(m);
    for (Index t = 0; t < m; ++t) {
        const Index pick = best_unpicked(value, picked, pool.ids);
        picked[static_cast<std::size_t>(pick)] = 1;
        out.ids[t] = pool.ids[pick];
        out.scores[t] = value[pick];
        if (t + 1 == m) break;
        // One kernel column per pick keeps the summed field current at O(P·d).
        kernels::dot_rows(pool.vectors.data(), n, pool.vectors.cols(), pool.vectors.row(pick).data(), column.data());
        const auto distance_sq = (2.0f - 2.0f * column.array()).cwiseMax(0.0f);
        field.array() += (-distance_sq * inv_two_sigma_sq).unaryExpr(exp_of);
        value = base - beta * field;
    }
    return out;
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
    check_batch(E, Q, subset);
    require_positive("p", p);
    check_cfs_params(k, params);
    const Index width = std::min<Index>(k, std::min<Index>(p, candidate_count(E, subset)));
    return run_ranking_batch(Q, n_threads, width, [&](const VectorRef& q) {
        return cfs_on_pool(pool_from_corpus(E, q, p, subset), k, params);
    });
}

}  // namespace fieldrank
