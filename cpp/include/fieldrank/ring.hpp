// Ring (docs/spec.md §5): survival laps. Every live candidate is re-scored against the query and the
// mean of its live neighbours; the weakest are dropped until exactly k remain.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "defaults.hpp"
#include "errors.hpp"
#include "hash.hpp"
#include "kernels.hpp"
#include "prefilter.hpp"
#include "simd.hpp"
#include "types.hpp"

namespace fieldrank {

struct RingParams {
    double alpha = defaults::ring_alpha;
    Index laps = defaults::ring_laps;
    std::uint64_t seed = defaults::ring_seed;
    bool ablation = false;  // the archived rule: every live score gets the same bump per lap
};

inline void check_ring_params(Index k, const RingParams& params) {
    require_positive("k", k);
    require_unit_interval("alpha", params.alpha);
    require_positive("laps", params.laps);
}

// The seeded draw that orders exactly tied candidates on a lap.
inline std::uint64_t tie_key(std::uint64_t seed, Index lap, Index id) {
    return splitmix64(splitmix64(splitmix64(seed) ^ static_cast<std::uint64_t>(lap)) ^ static_cast<std::uint64_t>(id));
}

// factor·k, saturated: a k near the Index limit asks for the whole corpus, not an overflow.
inline Index ring_pool_depth(Index k) {
    constexpr Index limit = std::numeric_limits<Index>::max() / defaults::ring_pool_factor;
    return k > limit ? std::numeric_limits<Index>::max() : k * defaults::ring_pool_factor;
}

inline Ranking ring_on_pool(const Pool& pool, Index k, const RingParams& params) {
    const Index n = pool.ids.size();
    const Index d = pool.dim();
    const Index keep = std::min(k, n);
    RowMatrixXf cosines(n, n);
    simd::kernels().gram(pool.rows(), pool.stride(), pool.row_ids(), n, d, cosines.data(), n);

    const double alpha = params.alpha;
    const double bump = defaults::ring_ablation_bump;
    std::vector<Index> live(static_cast<std::size_t>(n));
    std::iota(live.begin(), live.end(), Index{0});
    // Lap scores are double: the ablation's uniform bump added in float can round two cosines one
    // ulp apart onto the same value, and the tie draw would then break cosine order (docs/spec.md §5);
    // and a float sum of neighbours overflows for rows of norm near 1e19 (each product near 1e38).
    std::vector<double> score(static_cast<std::size_t>(n), 0.0);
    std::vector<std::uint64_t> key(static_cast<std::size_t>(n), 0);
    for (Index lap = 0; lap < params.laps; ++lap) {
        const Index alive = static_cast<Index>(live.size());
        for (const Index i : live) {
            double value;
            if (params.ablation) {
                value = static_cast<double>(pool.sims[i]) + bump * static_cast<double>(lap + 1);
            } else {
                double neighbour_sum = 0.0;
                for (const Index j : live)
                    if (j != i) neighbour_sum += static_cast<double>(cosines(i, j));
                const double neighbour_mean = alive > 1 ? neighbour_sum / static_cast<double>(alive - 1) : 0.0;
                value = (1.0 - alpha) * static_cast<double>(pool.sims[i]) + alpha * neighbour_mean;
            }
            score[static_cast<std::size_t>(i)] = value;
            key[static_cast<std::size_t>(i)] = tie_key(params.seed, lap, pool.ids[i]);
        }
        std::sort(live.begin(), live.end(), [&](Index a, Index b) {
            const double sa = score[static_cast<std::size_t>(a)], sb = score[static_cast<std::size_t>(b)];
            return sa > sb || (sa == sb && key[static_cast<std::size_t>(a)] < key[static_cast<std::size_t>(b)]);
        });
        const Index remaining_laps = params.laps - lap;
        const Index drop = (alive - keep + remaining_laps - 1) / remaining_laps;  // ceil((n - k) / (L - lap))
        live.resize(static_cast<std::size_t>(alive - drop));
    }
    if (static_cast<Index>(live.size()) != keep) fail("ring: internal error, ", live.size(), " survivors for k = ", keep);
    Ranking out;
    out.ids.resize(keep);
    out.scores.resize(keep);
    for (Index t = 0; t < keep; ++t) {
        out.ids[t] = pool.ids[live[static_cast<std::size_t>(t)]];
        out.scores[t] = static_cast<float>(score[static_cast<std::size_t>(live[static_cast<std::size_t>(t)])]);
    }
    return out;
}

inline Ranking ring(const MatrixRef& E, const VectorRef& q, Index k, const RingParams& params,
                    const OptionalIds& subset = std::nullopt) {
    check_corpus_call(E, q, subset);
    check_ring_params(k, params);
    return ring_on_pool(pool_from_corpus(E, q, ring_pool_depth(k), subset), k, params);
}

inline Ranking ring_pool(const IdRef& ids, const MatrixRef& C, const VectorRef& q, Index k, const RingParams& params,
                         const OptionalVector& sims = std::nullopt) {
    check_ring_params(k, params);
    return ring_on_pool(pool_from_caller(ids, C, q, sims), k, params);
}

inline BatchRanking ring_batch(const MatrixRef& E, const MatrixRef& Q, Index k, const RingParams& params,
                               const OptionalIds& subset, Index n_threads) {
    check_batch(E, Q, subset);
    check_ring_params(k, params);
    const Index width = std::min<Index>(k, candidate_count(E, subset));
    return run_ranking_batch(E, Q, ring_pool_depth(k), subset, n_threads, width,
                             [&](const Pool& pool) { return ring_on_pool(pool, k, params); });
}

}  // namespace fieldrank
