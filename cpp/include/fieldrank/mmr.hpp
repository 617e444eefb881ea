// MMR, Maximal Marginal Relevance (Carbonell & Goldstein 1998; docs/spec.md §4): the diversity
// baseline the field operators are compared with.
#pragma once

#include <algorithm>
#include <vector>

#include "cfs.hpp"
#include "defaults.hpp"
#include "errors.hpp"
#include "kernels.hpp"
#include "prefilter.hpp"
#include "simd.hpp"
#include "types.hpp"

namespace fieldrank {

inline void check_mmr_params(Index k, double mu) {
    require_positive("k", k);
    require_unit_interval("mu", mu);
}

// Scores are the MMR objective at each pick. They fall monotonically while similarities are
// non-negative; a candidate anti-correlated with every pick can score above an earlier pick.
inline Ranking mmr_on_pool(const Pool& pool, Index k, double mu) {
    const simd::KernelTable& kernels = simd::kernels();
    const Index ld = detail::pad16(pool.ids.size());
    const float relevance = static_cast<float>(mu);
    const float redundancy = 1.0f - relevance;
    VectorXf sims = VectorXf::Zero(ld);
    sims.head(pool.ids.size()) = pool.sims;
    VectorXf max_sim = VectorXf::Zero(ld);  // the max term is 0 while nothing is picked
    VectorXf value = relevance * sims;
    return greedy_picks(pool, k, value, [&](const float* column, Index t) {
        kernels.mmr_update(column, sims.data(), ld, relevance, redundancy, t == 0, max_sim.data(), value.data());
    });
}

inline Ranking mmr(const MatrixRef& E, const VectorRef& q, Index k, Index p, double mu,
                   const OptionalIds& subset = std::nullopt) {
    check_corpus_call(E, q, subset);
    require_positive("p", p);
    check_mmr_params(k, mu);
    return mmr_on_pool(pool_from_corpus(E, q, p, subset), k, mu);
}

inline Ranking mmr_pool(const IdRef& ids, const MatrixRef& C, const VectorRef& q, Index k, double mu,
                        const OptionalVector& sims = std::nullopt) {
    check_mmr_params(k, mu);
    return mmr_on_pool(pool_from_caller(ids, C, q, sims), k, mu);
}

inline BatchRanking mmr_batch(const MatrixRef& E, const MatrixRef& Q, Index k, Index p, double mu,
                              const OptionalIds& subset, Index n_threads) {
    const Index width = checked_pool_batch_width(E, Q, k, p, subset, [&] { check_mmr_params(k, mu); });
    return run_ranking_batch(E, Q, p, subset, n_threads, width,
                             [&](const Pool& pool) { return mmr_on_pool(pool, k, mu); });
}

}  // namespace fieldrank
