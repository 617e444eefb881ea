// The memory store's candidate kernels (memory_fusion.hpp) on small hand-checked cases: each
// formula, the tie rule, the block and scattered layouts of the relevance tail, the reserved
// slots, and every refusal (sizes, row ids, orders, a NaN where a sort refuses it, k <= 0). The
// numpy formulations they equal bit for bit are held to them by
// tests/memory/test_memory_fusion_parity.py.
#include <fieldrank/fieldrank.hpp>  // the umbrella header compiles with every family in it
#include <fieldrank/memory_fusion.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "helpers.hpp"

using namespace fieldrank;
using namespace fieldrank_test;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan_value = std::numeric_limits<double>::quiet_NaN();

VectorXd doubles(std::initializer_list<double> values) {
    VectorXd out(static_cast<Index>(values.size()));
    Index i = 0;
    for (const double v : values) out[i++] = v;
    return out;
}

// Constants chosen so that every factor below is exact in binary.
FusionParams hand_params() {
    FusionParams p{};
    p.sim_floor = 0.25;
    p.importance_floor = 0.125;
    p.durable_importance = 0.75;
    p.importance_boost = 0.25;
    p.tag_boost = 0.25;
    p.graph_boost = 0.5;
    p.graph_boost_min = 1.0;
    p.entity_boost = 0.25;
    p.valence_weight = 1.0;
    p.valence_min = 0.0625;
    p.valence_max = 1.0;
    p.strength_min = 0.125;
    p.strength_max = 1.0;
    p.storage_min = 1.0;
    p.core_tier = 2;
    return p;
}

}  // namespace

TEST_CASE("memory_relevance_tail: self-support of isolated positions, by_row, the top") {
    // scores of rows 2, 3, 4 (one block) and of rows 0, 3, 5 (gaps); positions 0 and 1 isolated,
    // gamma 0.5: 1 -> 1 + 0.5 * 1 = 1.5; -2 -> -2 + 0.5 * max(-2, 0) = -2; 0.5 stays.
    const VectorXd scores = doubles({1.0, -2.0, 0.5});
    const IdVector isolated = ids({0, 1});
    for (const IdVector& rows : {ids({2, 3, 4}), ids({0, 3, 5})}) {
        const auto [by_row, top, top_scores] = memory_relevance_tail(scores, rows, isolated, false, 0.5, 6, 2);
        VectorXd want = VectorXd::Constant(6, -inf);
        want[rows[0]] = 1.5;
        want[rows[1]] = -2.0;
        want[rows[2]] = 0.5;
        CHECK_VEC_EQ(by_row, want);
        CHECK_VEC_EQ(top, ids({rows[0], rows[2]}));
        CHECK_VEC_EQ(top_scores, doubles({1.5, 0.5}));
    }
    // every position isolated: 0.5 -> 0.75 too; no isolated position: the scores as given
    const auto [all_by_row, all_top, all_scores] = memory_relevance_tail(scores, ids({2, 3, 4}), std::nullopt, true,
                                                                         0.5, 5, 5);
    CHECK_VEC_EQ(all_by_row, doubles({-inf, -inf, 1.5, -2.0, 0.75}));
    CHECK_VEC_EQ(all_top, ids({2, 4, 3}));
    CHECK_VEC_EQ(all_scores, doubles({1.5, 0.75, -2.0}));
    const auto [plain_by_row, plain_top, plain_scores] = memory_relevance_tail(scores, ids({0, 1, 2}), std::nullopt,
                                                                               false, 0.5, 3, 0);
    CHECK_VEC_EQ(plain_by_row, scores);
    CHECK_EQ(plain_top.size(), 0);
    CHECK_EQ(plain_scores.size(), 0);
}

TEST_CASE("memory_relevance_tail: ties to the lower row, blocks skipped by the threshold, no rows") {
    // 40 rows (three blocks of 16) with scores i % 5: the top 7 are the eight 4s' first seven rows.
    const Index count = 40;
    VectorXd scores(count);
    IdVector rows(count);
    for (Index i = 0; i < count; ++i) {
        scores[i] = static_cast<double>(i % 5);
        rows[i] = 3 * i + 1;  // gaps
    }
    for (const IdVector& layout : {rows, iota_ids(count, 10)}) {
        const auto [by_row, top, top_scores] = memory_relevance_tail(scores, layout, std::nullopt, false, 0.0,
                                                                     3 * count + 1, 7);
        IdVector want(7);
        for (Index j = 0; j < 7; ++j) want[j] = layout[5 * j + 4];
        CHECK_VEC_EQ(top, want);
        CHECK_VEC_EQ(top_scores, VectorXd::Constant(7, 4.0));
    }
    const auto [by_row, top, top_scores] = memory_relevance_tail(VectorXd(0), IdVector(0), std::nullopt, false, 0.5,
                                                                 4, 3);
    CHECK_VEC_EQ(by_row, VectorXd::Constant(4, -inf));
    CHECK_EQ(top.size(), 0);
    CHECK_EQ(std::get<0>(memory_relevance_tail(VectorXd(0), IdVector(0), std::nullopt, true, 0.5, 0, 1)).size(), 0);
}

TEST_CASE("memory_relevance_tail: refusals") {
    const VectorXd two = doubles({0.0, 1.0});
    CHECK_THROWS_WITH(memory_relevance_tail(two, ids({0, 5}), std::nullopt, false, 0.5, 3, 1), std::invalid_argument,
                      "rows[1] = 5 is not a row in [0, 3)");
    CHECK_THROWS_WITH(memory_relevance_tail(two, ids({-1, 0}), std::nullopt, false, 0.5, 3, 1), std::invalid_argument,
                      "rows[0] = -1");
    CHECK_THROWS_WITH(memory_relevance_tail(two, ids({0, 1}), IdRef(ids({2})), false, 0.5, 3, 1),
                      std::invalid_argument, "isolated[0] = 2 is not a position of rows");
    CHECK_THROWS_WITH(memory_relevance_tail(doubles({0.0, 1.0, 2.0}), ids({0, 1}), std::nullopt, false, 0.5, 3, 1),
                      std::invalid_argument, "scores must have length 2, got 3");
    CHECK_THROWS_WITH(memory_relevance_tail(VectorXd(0), IdVector(0), std::nullopt, false, 0.5, -1, 1),
                      std::invalid_argument, "n must be a non-negative integer, got -1");
}

TEST_CASE("memory_decay_exponents: -(max(at - last, 0) / day / h) / max(S, min)") {
    // day = 10 s, h = 2 days, at = 50 s: row 0 idle 5 days, S 1 -> -2.5; row 1 accessed after
    // at (idle 0) -> -0; row 2 idle 4 days, S 0.5 raised to the floor 1 -> -2; row 3 S 4 -> -0.5.
    const VectorXd last_access = doubles({0.0, 100.0, 10.0, 10.0});
    const VectorXd storage = doubles({1.0, 4.0, 0.5, 4.0});
    const VectorXd x = memory_decay_exponents(ids({0, 1, 2, 3, 0}), last_access, storage, 50.0, 10.0, 2.0, 1.0);
    CHECK_VEC_EQ(x, doubles({-2.5, 0.0, -2.0, -0.5, -2.5}));
    CHECK_EQ(memory_decay_exponents(IdVector(0), last_access, storage, 50.0, 10.0, 2.0, 1.0).size(), 0);
    CHECK_THROWS_WITH(memory_decay_exponents(ids({4}), last_access, storage, 50.0, 10.0, 2.0, 1.0),
                      std::invalid_argument, "rows[0] = 4");
    CHECK_THROWS_WITH(memory_decay_exponents(ids({0}), last_access, doubles({1.0}), 50.0, 10.0, 2.0, 1.0),
                      std::invalid_argument, "storage_strength must have length 4, got 1");
}

TEST_CASE("memory_fuse: every factor of hand-checked candidates") {
    const FusionParams p = hand_params();
    // columns of 4 rows; candidates rows 1, 3, 0
    const VectorXd relevance = doubles({0.5, 2.0, 7.0, -1.0});
    const VectorXd importance = doubles({0.9, 0.5, 0.0, 0.0625});
    const VectorXd storage = doubles({1.0, 2.0, 1.0, 0.5});
    Int8Vector tiers(4);
    tiers << 0, 0, 0, 2;
    const VectorXd valence = doubles({0.0, 0.5, 0.0, -0.5});
    const IdVector rows = ids({1, 3, 0});
    const VectorXd decay = doubles({0.5, 0.0625, 0.25});
    const VectorXd activation = doubles({1.0, 0.0, 3.0});
    const VectorXd cosine = doubles({0.125, 0.75, 0.5});
    const VectorXd tags = doubles({0.5, 0.0, 1.0});
    const VectorXd shares = doubles({0.5, 0.0, 0.0});
    BoolVector other(3);
    other << true, true, false;
    const auto [f, durable] = memory_fuse(rows, relevance, importance, storage, tiers, valence, decay, activation, p,
                                          VectorXd(cosine), VectorXd(tags), VectorXd(shares), BoolVector(other), -0.5);
    REQUIRE(f.rows() == kFusedFactors && f.cols() == 3);
    // Row 1: In 0.5, D 0.5, not durable: I = 1 + 0.25 * 0.5 * 0.5 = 1.0625; S 2, Sb 1.5;
    // V = 1 - |0.5 + 0.5| / 2 = 0.5; tag 1 + 0.25 * 0.5; G = 1 + 0.5 * 1 / 2; E = 1 + 0.25 * 0.5
    // (it shares a cue entity, so other_entity does not apply); sim = max(0.125, 0.25).
    // Row 3: tier core, so durable: In = max(0.0625, 0.125), I = 1 + 0.25 * 0.125; D 0.0625
    // raised to 0.125; S 0.5 raised to 1, Sb 1; V 1; tag 1; G 1; about another entity: E 0.75.
    // Row 0: importance 0.9 >= 0.75, durable: I = 1.25; D 0.25; V = 1 - 0.5 / 2; tag 1.25;
    // G = 1 + 0.5 * 3 / 4; no entity: E 1.
    const double want[kFusedFactors][3] = {
        {0.125, 0.75, 0.5},                                // cosine
        {0.25, 0.75, 0.5},                                 // sim
        {0.5, 0.125, 0.9},                                 // importance_norm
        {0.5, 0.125, 0.25},                                // retrieval_strength
        {2.0, 1.0, 1.0},                                   // storage_strength
        {1.5, 1.0, 1.0},                                   // storage_bounded
        {1.0625, 1.03125, 1.0 + 0.25 * 0.9},               // importance_term
        {0.5, 1.0, 0.75},                                  // valence
        {0.5, 0.0, 1.0},                                   // tag_containment
        {1.125, 1.0, 1.25},                                // tag_term
        {1.0, 0.0, 3.0},                                   // graph_activation
        {1.25, 1.0, 1.375},                                // graph
        {0.5, 0.0, 0.0},                                   // entity_containment
        {1.125, 0.75, 1.0},                                // entity
        {2.0, -1.0, 0.5},                                  // relevance
        {2.0 + 0.0625 + 0.125 + 0.25 + 0.125 - 0.5,       // score: rel + the boosts - 1 each
         -1.0 + 0.03125 + 0.0 + 0.0 - 0.25 + 0.0,
         0.5 + (1.0 + 0.25 * 0.9 - 1.0) + 0.25 + 0.375 + 0.0 - 0.25},
    };
    for (Index r = 0; r < kFusedFactors; ++r)
        for (Index c = 0; c < 3; ++c) {
            if (!(f(r, c) == want[r][c]))
                report(__FILE__, __LINE__, std::string(kFusedFactorNames[r]) + " of candidate " + std::to_string(c) +
                                               ": " + std::to_string(f(r, c)) + " vs " + std::to_string(want[r][c]));
        }
    CHECK(!durable[0] && durable[1] && durable[2]);
}

TEST_CASE("memory_fuse: without the optional inputs, and no candidates") {
    const FusionParams p = hand_params();
    const VectorXd relevance = doubles({0.5, 2.0});
    const VectorXd importance = doubles({0.5, 0.5});
    const VectorXd storage = doubles({1.0, 1.0});
    Int8Vector tiers = Int8Vector::Zero(2);
    const VectorXd valence = doubles({1.0, -1.0});
    const auto [f, durable] = memory_fuse(ids({1}), relevance, importance, storage, tiers, valence, doubles({1.0}),
                                          doubles({0.0}), p, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                          std::nullopt);
    CHECK(std::isnan(f(kCosine, 0)) && std::isnan(f(kSim, 0)));  // the caller takes the cosine of the hits
    CHECK_EQ(f(kValence, 0), 1.0);
    CHECK_EQ(f(kTagContainment, 0), 0.0);
    CHECK_EQ(f(kTagTerm, 0), 1.0);
    CHECK_EQ(f(kEntityContainment, 0), 0.0);
    CHECK_EQ(f(kEntity, 0), 1.0);
    CHECK_EQ(f(kScore, 0), 2.0 + 0.125);  // rel + I - 1 = 2 + 0.25 * 0.5 * 1
    CHECK(!durable[0]);
    const auto [none, none_durable] = memory_fuse(IdVector(0), relevance, importance, storage, tiers, valence,
                                                  VectorXd(0), VectorXd(0), p, std::nullopt, std::nullopt,
                                                  std::nullopt, std::nullopt, 0.5);
    CHECK(none.rows() == kFusedFactors && none.cols() == 0 && none_durable.size() == 0);
}

TEST_CASE("memory_fuse: refusals name the argument") {
    const FusionParams p = hand_params();
    const VectorXd two = doubles({0.0, 1.0});
    const VectorXd one = doubles({1.0});
    Int8Vector tiers = Int8Vector::Zero(2);
    Int8Vector short_tiers = Int8Vector::Zero(1);
    const auto fuse = [&](const IdVector& rows, const VectorXd& importance, const Int8Vector& tier_codes,
                          const VectorXd& decay, std::optional<VectorXd> cosine) {
        std::optional<Eigen::Ref<const VectorXd>> cos;
        if (cosine) cos.emplace(*cosine);
        return memory_fuse(rows, two, importance, two, tier_codes, two, decay, one, p, cos, std::nullopt,
                           std::nullopt, std::nullopt, std::nullopt);
    };
    CHECK_THROWS_WITH(fuse(ids({0}), one, tiers, one, std::nullopt), std::invalid_argument,
                      "importance must have length 2, got 1");
    CHECK_THROWS_WITH(fuse(ids({0}), two, short_tiers, one, std::nullopt), std::invalid_argument,
                      "tier_codes must have length 2, got 1");
    CHECK_THROWS_WITH(fuse(ids({0}), two, tiers, two, std::nullopt), std::invalid_argument,
                      "decay must have length 1, got 2");
    CHECK_THROWS_WITH(fuse(ids({0}), two, tiers, one, two), std::invalid_argument, "cosine must have length 1, got 2");
    CHECK_THROWS_WITH(fuse(ids({2}), two, tiers, one, std::nullopt), std::invalid_argument,
                      "rows[0] = 2 is not a row in [0, 2)");
}

TEST_CASE("memory_protected_order: by z and by relevance, interleaved keeping first places") {
    // candidates 1, 3, 5, 7; z of the tier rows 3, 5, 6: 0.25, 1.5, 9 (6 is not a candidate), so
    // rows 1 and 7 get +inf. By z: 1, 7 (inf, ties to the lower row), 5, 3. By relevance: 3, 7
    // (0.875 tied), 5, 1. Interleaved: 1, 3, 7, (7), 5, (5), (3), (1).
    const VectorXd by_row = doubles({0.0, 0.125, 0.0, 0.875, 0.0, 0.5, 0.0, 0.875});
    const auto [merged, z_rows, z] = memory_protected_order(ids({1, 3, 5, 7}), by_row, ids({3, 5, 6}),
                                                            doubles({0.25, 1.5, 9.0}));
    CHECK_VEC_EQ(merged, ids({1, 3, 7, 5}));
    CHECK_VEC_EQ(z_rows, ids({1, 7, 5, 3}));
    CHECK_VEC_EQ(z, doubles({inf, inf, 1.5, 0.25}));
    const auto [no_tier, no_tier_z_rows, no_tier_z] = memory_protected_order(ids({1, 3}), by_row, IdVector(0),
                                                                             VectorXd(0));
    CHECK_VEC_EQ(no_tier_z_rows, ids({1, 3}));
    CHECK_VEC_EQ(no_tier, ids({1, 3}));
    const auto [empty, empty_z_rows, empty_z] = memory_protected_order(IdVector(0), by_row, ids({3}), doubles({1.0}));
    CHECK(empty.size() == 0 && empty_z_rows.size() == 0 && empty_z.size() == 0);
}

TEST_CASE("memory_protected_order: refusals") {
    const VectorXd by_row = doubles({0.0, 0.5, 0.25, 0.75});
    CHECK_THROWS_WITH(memory_protected_order(ids({0, 2, 1}), by_row, IdVector(0), VectorXd(0)), std::invalid_argument,
                      "candidates must be sorted and unique");
    CHECK_THROWS_WITH(memory_protected_order(ids({1, 1}), by_row, IdVector(0), VectorXd(0)), std::invalid_argument,
                      "candidates must be sorted and unique");
    CHECK_THROWS_WITH(memory_protected_order(ids({0, 4}), by_row, IdVector(0), VectorXd(0)), std::invalid_argument,
                      "candidates[1] = 4");
    CHECK_THROWS_WITH(memory_protected_order(ids({0, 1}), by_row, ids({1, 0}), doubles({0.0, 0.0})),
                      std::invalid_argument, "tier_rows must be sorted and unique");
    CHECK_THROWS_WITH(memory_protected_order(ids({0, 1}), by_row, ids({0, 1}), doubles({0.0})), std::invalid_argument,
                      "tier_z must have length 2, got 1");
    CHECK_THROWS_WITH(memory_protected_order(ids({0, 1}), by_row, ids({1}), doubles({nan_value})),
                      std::invalid_argument, "NaN");
    CHECK_THROWS_WITH(memory_protected_order(ids({0, 1}), doubles({0.0, nan_value}), IdVector(0), VectorXd(0)),
                      std::invalid_argument, "NaN");
}

TEST_CASE("memory_sorted_unique and memory_ranks_of") {
    CHECK_VEC_EQ(memory_sorted_unique(ids({5, 1, 5, 3, 1})), ids({1, 3, 5}));
    CHECK_EQ(memory_sorted_unique(IdVector(0)).size(), 0);
    // 7 is third; 2 is admitted twice: its later place, 4; 9 is not admitted
    CHECK_VEC_EQ(memory_ranks_of(ids({7, 2, 9}), ids({2, 5, 7, 2})), ids({3, 4, 0}));
    CHECK_VEC_EQ(memory_ranks_of(ids({1}), IdVector(0)), ids({0}));
    CHECK_EQ(memory_ranks_of(IdVector(0), ids({1, 2})).size(), 0);
}

TEST_CASE("memory_reserve_slots: chosen positions take the last replaceable places of the top k") {
    // top 3 of order 4, 2, 0 | 1, 3; chosen 1, 3 both outside: 2 and 0 (the last two not chosen)
    // leave and come right after them.
    {
        const auto [order, entering] = memory_reserve_slots(ids({4, 2, 0, 1, 3}), ids({1, 3}), 3);
        CHECK_VEC_EQ(order, ids({4, 1, 3, 2, 0}));
        CHECK_VEC_EQ(entering, ids({1, 3}));
    }
    // chosen 4 (outside) and 1 (already in the top 2: keeps its place); 0 is the one to leave
    {
        const auto [order, entering] = memory_reserve_slots(ids({0, 1, 2, 3, 4}), ids({4, 1}), 2);
        CHECK_VEC_EQ(order, ids({1, 4, 0, 2, 3}));
        CHECK_VEC_EQ(entering, ids({4}));
    }
    // more chosen than replaceable places: every top place is chosen or taken
    {
        const auto [order, entering] = memory_reserve_slots(ids({0, 1, 2, 3}), ids({3, 2, 0}), 2);
        CHECK_VEC_EQ(order, ids({0, 3, 2, 1}));
        CHECK_VEC_EQ(entering, ids({3, 2}));
    }
    // nothing to do: chosen already in the top, no chosen, k >= the order's length, nothing at all
    CHECK_VEC_EQ(std::get<0>(memory_reserve_slots(ids({2, 0, 1}), ids({0}), 2)), ids({2, 0, 1}));
    CHECK_VEC_EQ(std::get<0>(memory_reserve_slots(ids({2, 0, 1}), IdVector(0), 1)), ids({2, 0, 1}));
    CHECK_VEC_EQ(std::get<0>(memory_reserve_slots(ids({2, 0, 1}), ids({1}), 3)), ids({2, 0, 1}));
    CHECK_EQ(std::get<1>(memory_reserve_slots(ids({2, 0, 1}), ids({1}), 3)).size(), 0);
    CHECK_EQ(std::get<0>(memory_reserve_slots(IdVector(0), IdVector(0), 1)).size(), 0);
}

TEST_CASE("memory_reserve_slots: refusals before anything is written") {
    CHECK_THROWS_WITH(memory_reserve_slots(ids({0, 1, 2, 3}), ids({3, 3}), 2), std::invalid_argument,
                      "chosen must not repeat a position; 3 repeats at chosen[1]");
    CHECK_THROWS_WITH(memory_reserve_slots(ids({0, 0, 1, 2}), ids({3}), 1), std::invalid_argument,
                      "order must hold each position of 0 .. 3 once; 0 repeats at order[1]");
    CHECK_THROWS_WITH(memory_reserve_slots(ids({0, 1, 4, 2}), ids({3}), 1), std::invalid_argument,
                      "order[2] = 4 is not a position in [0, 4)");
    CHECK_THROWS_WITH(memory_reserve_slots(ids({0, 1, 2, 3}), ids({-1}), 1), std::invalid_argument,
                      "chosen[0] = -1 is not a position in [0, 4)");
    CHECK_THROWS_WITH(memory_reserve_slots(IdVector(0), ids({0}), 1), std::invalid_argument,
                      "chosen[0] = 0 is not a position in [0, 0)");
    // refused even where nothing would move (k >= the order's length)
    CHECK_THROWS_WITH(memory_reserve_slots(ids({1, 1}), IdVector(0), 5), std::invalid_argument, "repeats at order[1]");
    for (const Index k : {Index{0}, Index{-3}})
        CHECK_THROWS_WITH(memory_reserve_slots(ids({0, 1, 2}), ids({2}), k), std::invalid_argument,
                          "k must be a positive integer");
}
