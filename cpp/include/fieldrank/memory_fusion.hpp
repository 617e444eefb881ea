// The memory store's candidate pipeline after the relevance core's native leg (issue 17): the
// relevance tail (isolated self-support, the score by row, the relevance generator's top), the
// protected tier's order, the union of the generators, the fused score of a recall's few hundred
// candidates with every factor, the reserved slots and the hits' generator ranks. Each was a
// handful of numpy calls of a few microseconds on a few hundred values; here one pass each.
//
// Every operation per element is the numpy code's (python/fieldrank/memory/_generators.py
// relevance_tail_reference, protected_tier_reference, _scoring.py fuse_reference, _store.py
// _reserve_protected_slots), in its order, without FMA contraction (the build passes
// -ffp-contract=off), so the results are the same bits; the numpy code stays as the reference
// the parity tests hold these kernels to. exp2 is not here: numpy's exp2 (SVML on AVX-512
// machines) and libm's differ in the last bit, so the caller takes exp2 of the exponents this
// header returns with numpy itself.
//
// Preconditions (the store's own columns and scores, validated at ingest; the kernels check sizes,
// row ids and orders, not values): scores are finite (a NaN would break the strict weak order the
// top-k selections and sorts rely on; memory_protected_order, whose loop reads each value anyway,
// refuses one), n >= 0.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "defaults.hpp"
#include "errors.hpp"
#include "topk.hpp"
#include "types.hpp"

namespace fieldrank {

namespace detail {

// numpy's maximum / minimum / clip of a value and a bound: a NaN propagates, and of two equal
// values the bound is returned (numpy's SIMD loops return the second operand of a tie, so
// maximum(-0.0, 0.0) is +0.0; clip ties to the bound too).
inline double maximum(double a, double b) { return a > b ? a : (a != a ? a : b); }
inline double minimum(double a, double b) { return a < b ? a : (a != a ? a : b); }
inline double clip(double x, double lo, double hi) { return minimum(maximum(x, lo), hi); }

}  // namespace detail

// The relevance core's tail over the leg's scores of the eligible rows (scores[i] is row rows[i]'s,
// finite; rows sorted unique, below n >= 0). Isolated positions (into rows; null with all_isolated:
// every position) get s + gamma * max(s, 0) (the standalone-memory self-support). Returns (by_row:
// n doubles, -inf where not eligible; the best `depth` rows, higher score first, ties to the lower
// row; their scores).
inline std::tuple<VectorXd, IdVector, VectorXd> memory_relevance_tail(const Eigen::Ref<const VectorXd>& scores,
                                                                      const IdRef& rows, const OptionalIds& isolated,
                                                                      bool all_isolated, double gamma, Index n,
                                                                      Index depth) {
    const Index count = rows.size();
    require_non_negative("n", n);
    require_size("scores", scores.size(), count);
    const Index* row = rows.data();
    // Sorted unique rows (the caller's contract) spanning count consecutive rows are one block:
    // every write then lands in [row[0], row[0] + count) whatever the values, so only the ends
    // are checked. Otherwise each row is checked before it is written.
    const bool gap = !(count > 0 && row[count - 1] - row[0] == count - 1 && row[0] >= 0 && row[count - 1] < n);
    if (gap) require_rows_below("rows", row, count, n);
    VectorXd by_row = VectorXd::Constant(n, -std::numeric_limits<double>::infinity());
    // The supported scores in the order of rows: in place in by_row when the rows are one block
    // (a tenant's rows), else in a scratch vector scattered afterwards.
    std::vector<double> scratch(gap ? static_cast<std::size_t>(count) : 0);
    double* sup = gap ? scratch.data() : by_row.data() + (count > 0 ? row[0] : 0);
    const double* in = scores.data();
    if (all_isolated) {
        for (Index i = 0; i < count; ++i) sup[i] = in[i] + gamma * detail::maximum(in[i], 0.0);
    } else {
        std::copy(in, in + count, sup);
        if (isolated) {
            for (Index j = 0; j < isolated->size(); ++j) {
                const Index position = (*isolated)[j];
                if (position < 0 || position >= count)
                    fail("isolated[", j, "] = ", position, " is not a position of rows");
                sup[position] = in[position] + gamma * detail::maximum(in[position], 0.0);
            }
        }
    }
    if (gap)
        for (Index i = 0; i < count; ++i) by_row[row[i]] = sup[i];
    // The top: blocks whose every score is below the current threshold are skipped by one
    // vectorisable test (a tie with the threshold may still enter, by its row: >=). The scores are
    // finite (the leg's, on rows validated at ingest): a NaN has no place in the strict weak order
    // of the selector's nth_element and sort. It is not looked for here: a pass over the scores
    // would cost a fifth of this kernel at 10k rows.
    TopK<double> best(std::min(std::max<Index>(depth, 0), count));
    constexpr Index block = defaults::memory_top_block_rows;
    for (Index i0 = 0; i0 < count && best.capacity() > 0; i0 += block) {
        const Index end = std::min(i0 + block, count);
        if (best.full()) {
            const double threshold = best.worst().score;
            bool any = false;
            for (Index i = i0; i < end; ++i) any |= !(sup[i] < threshold);
            if (!any) continue;
        }
        for (Index i = i0; i < end; ++i) best.push(sup[i], gap ? row[i] : row[0] + i);
    }
    const auto top = best.take_sorted();
    IdVector top_rows(static_cast<Index>(top.size()));
    VectorXd top_scores(static_cast<Index>(top.size()));
    for (std::size_t i = 0; i < top.size(); ++i) {
        top_rows[static_cast<Index>(i)] = top[i].id;
        top_scores[static_cast<Index>(i)] = top[i].score;
    }
    return {std::move(by_row), std::move(top_rows), std::move(top_scores)};
}

// Row order of the factor matrix memory_fuse returns (FactorArrays' float columns, in its order).
enum FusedFactor : Index {
    kCosine, kSim, kImportanceNorm, kRetrievalStrength, kStorageStrength, kStorageBounded, kImportanceTerm,
    kValence, kTagContainment, kTagTerm, kGraphActivation, kGraph, kEntityContainment, kEntity, kRelevance,
    kScore, kFusedFactors
};

// The name of each row of the factor matrix, in FusedFactor order: FactorArrays' field names
// (bound as _core.FUSED_FACTOR_NAMES, from which python/fieldrank/memory/_scoring.py builds its
// MATRIX_COLUMNS).
inline constexpr const char* kFusedFactorNames[] = {
    "cosine", "sim", "importance_norm", "retrieval_strength", "storage_strength", "storage_bounded",
    "importance_term", "valence", "tag_containment", "tag_term", "graph_activation", "graph",
    "entity_containment", "entity", "relevance", "score",
};
static_assert(sizeof(kFusedFactorNames) / sizeof(kFusedFactorNames[0]) == kFusedFactors,
              "one name per fused factor");

// Constants of the fused score (MemoryParams and the spec's floors).
struct FusionParams {
    double sim_floor;
    double importance_floor;
    double durable_importance;
    double importance_boost;
    double tag_boost;
    double graph_boost;
    double graph_boost_min;
    double entity_boost;
    double valence_weight;
    double valence_min;
    double valence_max;
    double strength_min;
    double strength_max;
    double storage_min;
    std::int8_t core_tier;
};

// The exponent of the retrieval strength D = 2^x of each candidate row:
// x = -(max(at_time - last_access, 0) / seconds_per_day / half_life_days) / max(S, storage_min).
inline VectorXd memory_decay_exponents(const IdRef& rows, const Eigen::Ref<const VectorXd>& last_access,
                                       const Eigen::Ref<const VectorXd>& storage_strength, double at_time,
                                       double seconds_per_day, double half_life_days, double storage_min) {
    const Index n = last_access.size();
    require_size("storage_strength", storage_strength.size(), n);
    require_rows_below("rows", rows.data(), rows.size(), n);
    VectorXd exponent(rows.size());
    for (Index i = 0; i < rows.size(); ++i) {
        const Index row = rows[i];
        const double idle_days = detail::maximum(at_time - last_access[row], 0.0) / seconds_per_day;
        const double strength = detail::maximum(storage_strength[row], storage_min);
        exponent[i] = -(idle_days / half_life_days) / strength;
    }
    return exponent;
}

// Every factor and the fused score of the candidate rows (m of them, rows of the n-row columns):
// a (kFusedFactors, m) matrix, one factor per row (FusedFactor order), and durable per candidate.
// decay (2^exponent), activation: per candidate; cosine per candidate (null: the cosine and sim
// rows are NaN, for a caller that takes the cosine of the returned few only: the score does not
// read it); tag and entity containment per candidate (null: 0); other_entity per candidate (null:
// none), only with cue entities; cue_valence null: V = 1.
inline std::tuple<RowMatrixXd, BoolVector> memory_fuse(
    const IdRef& rows, const Eigen::Ref<const VectorXd>& relevance_by_row, const Eigen::Ref<const VectorXd>& importance,
    const Eigen::Ref<const VectorXd>& storage_strength, const Eigen::Ref<const Int8Vector>& tier_codes,
    const Eigen::Ref<const VectorXd>& valence, const Eigen::Ref<const VectorXd>& decay,
    const Eigen::Ref<const VectorXd>& activation, const FusionParams& p,
    const std::optional<Eigen::Ref<const VectorXd>>& cosine,
    const std::optional<Eigen::Ref<const VectorXd>>& tag_containment,
    const std::optional<Eigen::Ref<const VectorXd>>& entity_containment,
    const std::optional<Eigen::Ref<const BoolVector>>& other_entity, std::optional<double> cue_valence) {
    const Index m = rows.size();
    const Index n = relevance_by_row.size();
    require_size("importance", importance.size(), n);
    require_size("storage_strength", storage_strength.size(), n);
    require_size("tier_codes", tier_codes.size(), n);
    require_size("valence", valence.size(), n);
    if (cosine) require_size("cosine", cosine->size(), m);
    require_size("decay", decay.size(), m);
    require_size("activation", activation.size(), m);
    if (tag_containment) require_size("tag_containment", tag_containment->size(), m);
    if (entity_containment) require_size("entity_containment", entity_containment->size(), m);
    if (other_entity) require_size("other_entity", other_entity->size(), m);
    require_rows_below("rows", rows.data(), m, n);
    RowMatrixXd f(static_cast<Index>(kFusedFactors), m);
    BoolVector durable(m);
    for (Index i = 0; i < m; ++i) {
        const Index row = rows[i];
        const double cos = cosine ? (*cosine)[i] : std::numeric_limits<double>::quiet_NaN();
        const double importance_norm = detail::clip(importance[row], p.importance_floor, 1.0);
        const double storage = detail::maximum(storage_strength[row], p.storage_min);
        const double strength = detail::clip(decay[i], p.strength_min, p.strength_max);
        const double bounded = 2.0 - 1.0 / detail::maximum(storage, p.storage_min);
        const bool is_durable = importance[row] >= p.durable_importance || tier_codes[row] == p.core_tier;
        const double importance_term = 1.0 + (p.importance_boost * importance_norm) * (is_durable ? 1.0 : strength);
        double valence_term = 1.0;
        if (cue_valence) {
            const double distance = std::abs(valence[row] - *cue_valence);
            valence_term = detail::clip(1.0 - (p.valence_weight * distance) / 2.0, p.valence_min, p.valence_max);
        }
        const double containment = tag_containment ? (*tag_containment)[i] : 0.0;
        const double tag_term = 1.0 + p.tag_boost * containment;
        const double a = activation[i];
        const double graph = detail::maximum(1.0 + (p.graph_boost * a) / (1.0 + a), p.graph_boost_min);
        const double share = entity_containment ? (*entity_containment)[i] : 0.0;
        double entity = 1.0 + p.entity_boost * share;
        if (other_entity && (*other_entity)[i] && share == 0.0) entity = 1.0 - p.entity_boost;
        const double relevance = relevance_by_row[row];
        const double score = relevance + (importance_term - 1.0) + (tag_term - 1.0) + (graph - 1.0) + (entity - 1.0) +
                             (valence_term - 1.0);
        f(kCosine, i) = cos;
        f(kSim, i) = detail::maximum(cos, p.sim_floor);
        f(kImportanceNorm, i) = importance_norm;
        f(kRetrievalStrength, i) = strength;
        f(kStorageStrength, i) = storage;
        f(kStorageBounded, i) = bounded;
        f(kImportanceTerm, i) = importance_term;
        f(kValence, i) = valence_term;
        f(kTagContainment, i) = containment;
        f(kTagTerm, i) = tag_term;
        f(kGraphActivation, i) = a;
        f(kGraph, i) = graph;
        f(kEntityContainment, i) = share;
        f(kEntity, i) = entity;
        f(kRelevance, i) = relevance;
        f(kScore, i) = score;
        durable[i] = is_durable;
    }
    return {std::move(f), std::move(durable)};
}

// The protected tier's order for a cue (python/fieldrank/memory/_generators.py protected_tier and
// by_cue_z): candidates (sorted unique durable rows) by memory-side z (z of tier_rows[j] is
// tier_z[j]; tier_rows sorted; a candidate not among tier_rows gets +inf) and by relevance_by_row,
// each best first with ties to the lower row, interleaved (position 2i the i-th by z, 2i + 1 the
// i-th by relevance) keeping each row's first place. Returns (the interleaved rows, the rows by z,
// their z). Unsorted candidates and a NaN z or relevance of a candidate are refused.
inline std::tuple<IdVector, IdVector, VectorXd> memory_protected_order(const IdRef& candidates,
                                                                       const Eigen::Ref<const VectorXd>& relevance_by_row,
                                                                       const IdRef& tier_rows,
                                                                       const Eigen::Ref<const VectorXd>& tier_z) {
    const Index m = candidates.size();
    const Index n = relevance_by_row.size();
    require_size("tier_z", tier_z.size(), tier_rows.size());
    require_rows_below("candidates", candidates.data(), m, n);
    // Items carry the candidate's position: the candidates are sorted, so ties to the lower
    // position are ties to the lower row. The tier rows are sorted too: one merge walk finds z.
    std::vector<ScoredId<double>> by_z(static_cast<std::size_t>(m));
    std::vector<ScoredId<double>> by_relevance(static_cast<std::size_t>(m));
    const Index t = tier_rows.size();
    for (Index i = 1; i < t; ++i)
        if (tier_rows[i] <= tier_rows[i - 1]) fail("tier_rows must be sorted and unique; tier_rows[", i, "] = ", tier_rows[i]);
    Index j = 0;
    for (Index i = 0; i < m; ++i) {
        const Index row = candidates[i];
        if (i > 0 && row <= candidates[i - 1]) fail("candidates must be sorted and unique");
        while (j < t && tier_rows[j] < row) ++j;
        const double z = (j < t && tier_rows[j] == row) ? tier_z[j] : std::numeric_limits<double>::infinity();
        if (std::isnan(z) || std::isnan(relevance_by_row[row]))
            fail("tier_z and relevance_by_row must not be NaN; candidate row ", row, " has z ", z, " and relevance ",
                 relevance_by_row[row]);
        by_z[static_cast<std::size_t>(i)] = {z, i};
        by_relevance[static_cast<std::size_t>(i)] = {relevance_by_row[row], i};
    }
    std::sort(by_z.begin(), by_z.end(), RanksBefore{});
    std::sort(by_relevance.begin(), by_relevance.end(), RanksBefore{});
    IdVector merged(m);
    IdVector z_rows(m);
    VectorXd z_values(m);
    std::vector<char> placed(static_cast<std::size_t>(m), 0);
    Index size = 0;
    const auto place = [&](Index position) {
        if (placed[static_cast<std::size_t>(position)]) return;
        placed[static_cast<std::size_t>(position)] = 1;
        merged[size++] = candidates[position];
    };
    for (Index i = 0; i < m; ++i) {
        z_rows[i] = candidates[by_z[static_cast<std::size_t>(i)].id];
        z_values[i] = by_z[static_cast<std::size_t>(i)].score;
        place(by_z[static_cast<std::size_t>(i)].id);
        place(by_relevance[static_cast<std::size_t>(i)].id);
    }
    return {std::move(merged), std::move(z_rows), std::move(z_values)};
}

// Sorted unique values of rows (numpy's unique of int64).
inline IdVector memory_sorted_unique(const IdRef& rows) {
    std::vector<Index> values(rows.data(), rows.data() + rows.size());
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return Eigen::Map<const IdVector>(values.data(), static_cast<Index>(values.size()));
}

// The reserved share of k (python/fieldrank/memory/_store.py _reserve_protected_slots): order holds
// the positions 0 .. m - 1 best first, each once; every one of chosen (distinct positions, best
// first) ends in the top k (k >= 1). Those already there keep their place; each missing one takes
// the place of the lowest-ranked top hit that is not chosen, and the displaced hits come next, in
// their order. Returns (the new order, the positions that entered). Both are checked before
// anything is written: a repeated or missing position of order, a repeated chosen position or one
// outside order, or k <= 0 is refused.
inline std::tuple<IdVector, IdVector> memory_reserve_slots(const IdRef& order, const IdRef& chosen, Index k) {
    const Index size = order.size();
    require_positive("k", k);
    std::vector<char> seen(static_cast<std::size_t>(size), 0), is_chosen(static_cast<std::size_t>(size), 0);
    for (Index i = 0; i < size; ++i) {
        const Index position = order[i];
        if (position < 0 || position >= size) fail("order[", i, "] = ", position, " is not a position in [0, ", size, ")");
        if (seen[static_cast<std::size_t>(position)])
            fail("order must hold each position of 0 .. ", size - 1, " once; ", position, " repeats at order[", i, "]");
        seen[static_cast<std::size_t>(position)] = 1;
    }
    for (Index j = 0; j < chosen.size(); ++j) {
        const Index position = chosen[j];
        if (position < 0 || position >= size) fail("chosen[", j, "] = ", position, " is not a position in [0, ", size, ")");
        if (is_chosen[static_cast<std::size_t>(position)])
            fail("chosen must not repeat a position; ", position, " repeats at chosen[", j, "]");
        is_chosen[static_cast<std::size_t>(position)] = 1;
    }
    if (chosen.size() == 0 || size <= k) return {IdVector(order), IdVector(0)};
    std::vector<char> in_top(static_cast<std::size_t>(size), 0);
    for (Index i = 0; i < k; ++i) in_top[static_cast<std::size_t>(order[i])] = 1;
    std::vector<Index> entering;
    for (Index j = 0; j < chosen.size(); ++j)
        if (!in_top[static_cast<std::size_t>(chosen[j])]) entering.push_back(chosen[j]);
    if (entering.empty()) return {IdVector(order), IdVector(0)};
    // The top positions that may leave: the last len(entering) of those not chosen.
    std::vector<char> leaves(static_cast<std::size_t>(k), 0);
    Index leaving_count = 0;
    for (Index i = k - 1; i >= 0 && leaving_count < static_cast<Index>(entering.size()); --i) {
        if (is_chosen[static_cast<std::size_t>(order[i])]) continue;
        leaves[static_cast<std::size_t>(i)] = 1;
        ++leaving_count;
    }
    std::vector<char> is_entering(static_cast<std::size_t>(size), 0);
    for (const Index position : entering) is_entering[static_cast<std::size_t>(position)] = 1;
    // order is a permutation and the entering positions are distinct and outside the top, so the
    // four runs below write each of the size places once: kept (k - leaving), entering, leaving,
    // the rest without the entering ones (size - k - entering).
    IdVector out(size);
    Index at = 0;
    for (Index i = 0; i < k; ++i)
        if (!leaves[static_cast<std::size_t>(i)]) out[at++] = order[i];
    for (const Index position : entering) out[at++] = position;
    for (Index i = 0; i < k; ++i)
        if (leaves[static_cast<std::size_t>(i)]) out[at++] = order[i];
    for (Index i = k; i < size; ++i)
        if (!is_entering[static_cast<std::size_t>(order[i])]) out[at++] = order[i];
    return {std::move(out), Eigen::Map<const IdVector>(entering.data(), static_cast<Index>(entering.size()))};
}

// The 1-based rank each of `wanted` (a few rows, e.g. the returned hits) has in `admitted` (one
// generator's rows, best first; 0: not admitted; a row admitted twice: its later place, as the
// numpy lookup it replaces).
inline IdVector memory_ranks_of(const IdRef& wanted, const IdRef& admitted) {
    IdVector ranks = IdVector::Zero(wanted.size());
    for (Index p = 0; p < admitted.size(); ++p) {
        const Index row = admitted[p];
        for (Index j = 0; j < wanted.size(); ++j)
            if (wanted[j] == row) ranks[j] = p + 1;
    }
    return ranks;
}

}  // namespace fieldrank
