// Weighted Reciprocal Rank Fusion (docs/spec.md §6): RRF(c) = Σ_legs w_leg / (k₀ + rank_leg(c)).
#pragma once

#include <cmath>
#include <unordered_map>
#include <vector>

#include "defaults.hpp"
#include "errors.hpp"
#include "parallel.hpp"
#include "topk.hpp"
#include "types.hpp"

namespace fieldrank {

inline void check_rrf_args(std::size_t n_rankings, const std::vector<double>& weights, Index k, double k0) {
    if (weights.size() != n_rankings)
        fail("weights must have one weight per ranking: expected length ", n_rankings, ", got ", weights.size());
    for (std::size_t i = 0; i < weights.size(); ++i)
        if (!(weights[i] >= 0.0) || !std::isfinite(weights[i]))
            fail("weights must be finite and >= 0, got ", weights[i], " at position ", i);
    require_positive("k", k);
    require_non_negative_real("k0", k0);
}

inline void check_unique_ids(const IdVector& ranking, std::size_t leg) {
    std::unordered_map<Index, char> seen;
    seen.reserve(static_cast<std::size_t>(ranking.size()));
    for (Index i = 0; i < ranking.size(); ++i)
        if (!seen.emplace(ranking[i], 0).second)
            fail("rankings[", leg, "] must not repeat an id, got ", ranking[i], " twice");
}

// Sums in leg order, then rank order; the numpy reference adds in the same order, so the
// fused scores agree bit for bit. No checks: the caller guarantees one weight per ranking
// (finite, >= 0), k > 0, k0 >= 0 and rankings without repeated ids. `Rankings` is any
// sequence of id vectors (IdVector, or Eigen::Map<const IdVector> over a caller's arrays).
// Up to defaults::rrf_linear_lookup_max ids in all the rankings, an id's slot is found by a linear
// scan of the ids seen so far (a few cache lines, no allocation per id); above it, through a hash map.

template <class Rankings>
inline FusedRanking rrf_unchecked(const Rankings& rankings, const std::vector<double>& weights, Index k, double k0) {
    std::size_t total = 0;
    for (std::size_t leg = 0; leg < rankings.size(); ++leg) total += static_cast<std::size_t>(rankings[leg].size());
    // Fused score and id of every distinct id, in first-seen order.
    std::vector<Index> seen_ids;
    std::vector<double> seen_scores;
    seen_ids.reserve(total);
    seen_scores.reserve(total);
    std::unordered_map<Index, std::size_t> slot_of;
    const bool linear = total <= defaults::rrf_linear_lookup_max;
    if (!linear) slot_of.reserve(total);
    for (std::size_t leg = 0; leg < rankings.size(); ++leg) {
        const auto& ranking = rankings[leg];
        for (Index r = 0; r < ranking.size(); ++r) {
            const double contribution = weights[leg] / (k0 + static_cast<double>(r + 1));
            const Index id = ranking[r];
            std::size_t slot = seen_ids.size();
            if (linear) {
                for (std::size_t i = 0; i < seen_ids.size(); ++i)
                    if (seen_ids[i] == id) { slot = i; break; }
            } else {
                slot = slot_of.emplace(id, seen_ids.size()).first->second;
            }
            if (slot == seen_ids.size()) {
                seen_ids.push_back(id);
                seen_scores.push_back(0.0);
            }
            seen_scores[slot] += contribution;
        }
    }
    TopK<double> best(std::min<Index>(k, static_cast<Index>(seen_ids.size())));
    for (std::size_t i = 0; i < seen_ids.size(); ++i) best.push(seen_scores[i], seen_ids[i]);
    return ranking_of<FusedRanking>(best.take_sorted());
}

inline FusedRanking rrf(const std::vector<IdVector>& rankings, const std::vector<double>& weights, Index k,
                        double k0) {
    check_rrf_args(rankings.size(), weights, k, k0);
    for (std::size_t leg = 0; leg < rankings.size(); ++leg) check_unique_ids(rankings[leg], leg);
    return rrf_unchecked(rankings, weights, k, k0);
}

// One fusion per query; every query must bring one ranking per weight.
inline std::vector<FusedRanking> rrf_batch(const std::vector<std::vector<IdVector>>& rankings,
                                           const std::vector<double>& weights, Index k, double k0, Index n_threads) {
    for (std::size_t b = 0; b < rankings.size(); ++b) {
        check_rrf_args(rankings[b].size(), weights, k, k0);
        for (std::size_t leg = 0; leg < rankings[b].size(); ++leg) check_unique_ids(rankings[b][leg], leg);
    }
    std::vector<FusedRanking> out(rankings.size());
    parallel_for(0, static_cast<Index>(rankings.size()), n_threads, [&](Index b) {
        out[static_cast<std::size_t>(b)] = rrf_unchecked(rankings[static_cast<std::size_t>(b)], weights, k, k0);
    });
    return out;
}

}  // namespace fieldrank
