// Weighted RRF (docs/spec.md §6): the hand example, weights, exact ties, absent candidates, batches and
// argument errors.
#include <fieldrank/rrf.hpp>

#include <algorithm>
#include <limits>

#include "check.hpp"
#include "helpers.hpp"

using namespace fieldrank;
using namespace fieldrank_test;

TEST_CASE("rrf: hand example") {
    // A = [1, 2, 3], B = [3, 1, 4], k0 = 60:
    //   1: 1/61 + 1/62 = 0.032522   3: 1/63 + 1/61 = 0.032266   2: 1/62   4: 1/63
    const std::vector<IdVector> legs = {ids({1, 2, 3}), ids({3, 1, 4})};
    const FusedRanking r = rrf(legs, {1.0, 1.0}, 10, 60.0);
    CHECK_VEC_EQ(r.ids, ids({1, 3, 2, 4}));
    CHECK_EQ(r.scores[0], 1.0 / 61.0 + 1.0 / 62.0);
    CHECK_EQ(r.scores[1], 1.0 / 63.0 + 1.0 / 61.0);
    CHECK_EQ(r.scores[2], 1.0 / 62.0);
    CHECK_EQ(r.scores[3], 1.0 / 63.0);
    // Weight 3 on B: 3 gets 1/63 + 3/61 = 0.06505 > 1 with 1/61 + 3/62 = 0.06478.
    const FusedRanking weighted = rrf(legs, {1.0, 3.0}, 2, 60.0);
    CHECK_VEC_EQ(weighted.ids, ids({3, 1}));
    // k0 = 0: ranks count as 1/rank.
    const FusedRanking bare = rrf(legs, {1.0, 1.0}, 10, 0.0);
    CHECK_EQ(bare.scores[0], 1.0 + 0.5);
}

TEST_CASE("rrf: exact ties go to the lower id; zero weights; empty legs") {
    const FusedRanking tie = rrf({ids({7}), ids({5})}, {1.0, 1.0}, 10, 60.0);
    CHECK_VEC_EQ(tie.ids, ids({5, 7}));
    CHECK_EQ(tie.scores[0], tie.scores[1]);
    // A symmetric pair of legs: 4 and 9 each get 1/61 + 1/62.
    const FusedRanking pair = rrf({ids({9, 4}), ids({4, 9})}, {1.0, 1.0}, 10, 60.0);
    CHECK_VEC_EQ(pair.ids, ids({4, 9}));
    // A zero-weight leg contributes nothing but its candidates still appear (score 0, last).
    const FusedRanking muted = rrf({ids({1, 2}), ids({8, 3})}, {1.0, 0.0}, 10, 60.0);
    CHECK_VEC_EQ(muted.ids, ids({1, 2, 3, 8}));
    CHECK_EQ(muted.scores[3], 0.0);
    // No legs, or only empty legs: an empty ranking, not an error.
    CHECK_EQ(rrf({}, {}, 10, 60.0).ids.size(), 0);
    CHECK_EQ(rrf({IdVector(0), IdVector(0)}, {1.0, 2.0}, 10, 60.0).ids.size(), 0);
    // k larger than the candidates, k = 1, negative and huge ids.
    const FusedRanking wide = rrf({ids({-5, std::numeric_limits<Index>::max(), 0})}, {1.0}, 1000, 60.0);
    CHECK_VEC_EQ(wide.ids, ids({-5, std::numeric_limits<Index>::max(), 0}));
    CHECK_EQ(rrf({ids({3, 2, 1})}, {2.0}, 1, 60.0).ids.size(), 1);
}

TEST_CASE("rrf_batch: equals the single form for 1, 2 and 8 threads") {
    std::vector<std::vector<IdVector>> queries;
    for (Index b = 0; b < 23; ++b) {
        std::vector<IdVector> legs;
        for (Index leg = 0; leg < 3; ++leg) {
            IdVector ranking(10 + leg);
            for (Index r = 0; r < ranking.size(); ++r) ranking[r] = (b * 7 + leg * 13 + r * (leg + 1)) % 40;
            // Remove repeats so each leg is valid: keep first occurrences.
            std::vector<Index> seen;
            for (Index r = 0; r < ranking.size(); ++r)
                if (std::find(seen.begin(), seen.end(), ranking[r]) == seen.end()) seen.push_back(ranking[r]);
            legs.emplace_back(Eigen::Map<IdVector>(seen.data(), static_cast<Index>(seen.size())));
        }
        queries.push_back(legs);
    }
    const std::vector<double> weights = {1.0, 1.0, 3.0};
    const std::vector<FusedRanking> one = rrf_batch(queries, weights, 10, 60.0, 1);
    REQUIRE(one.size() == queries.size());
    for (std::size_t b = 0; b < queries.size(); ++b) {
        const FusedRanking single = rrf(queries[b], weights, 10, 60.0);
        CHECK_VEC_EQ(one[b].ids, single.ids);
        CHECK_VEC_EQ(one[b].scores, single.scores);
        CHECK(follows_tie_rule(single.ids, single.scores));
    }
    for (const Index threads : {Index{2}, Index{8}}) {
        const std::vector<FusedRanking> other = rrf_batch(queries, weights, 10, 60.0, threads);
        for (std::size_t b = 0; b < queries.size(); ++b) {
            CHECK_VEC_EQ(other[b].ids, one[b].ids);
            CHECK_VEC_EQ(other[b].scores, one[b].scores);
        }
    }
    CHECK(rrf_batch({}, weights, 10, 60.0, 4).empty());
}

TEST_CASE("rrf: bad arguments throw std::invalid_argument naming the argument") {
    const std::vector<IdVector> legs = {ids({1, 2}), ids({2, 3})};
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH(rrf(legs, {1.0}, 10, 60.0), std::invalid_argument, "weights must have one weight per ranking");
    CHECK_THROWS_WITH(rrf(legs, {1.0, -1.0}, 10, 60.0), std::invalid_argument, "weights must be finite and >= 0");
    CHECK_THROWS_WITH(rrf(legs, {1.0, nan}, 10, 60.0), std::invalid_argument, "weights");
    CHECK_THROWS_WITH(rrf(legs, {inf, 1.0}, 10, 60.0), std::invalid_argument, "weights");
    CHECK_THROWS_WITH(rrf(legs, {1.0, 1.0}, 0, 60.0), std::invalid_argument, "k must be");
    CHECK_THROWS_WITH(rrf(legs, {1.0, 1.0}, 10, -1.0), std::invalid_argument, "k0");
    CHECK_THROWS_WITH(rrf(legs, {1.0, 1.0}, 10, nan), std::invalid_argument, "k0");
    CHECK_THROWS_WITH(rrf({ids({1, 2, 1})}, {1.0}, 10, 60.0), std::invalid_argument, "rankings[0] must not repeat");
    std::vector<std::vector<IdVector>> batch = {legs, {ids({4, 4})}};
    CHECK_THROWS_WITH(rrf_batch(batch, {1.0, 1.0}, 10, 60.0, 2), std::invalid_argument, "weights");
    batch = {legs, {ids({4}), ids({5, 5})}};
    CHECK_THROWS_WITH(rrf_batch(batch, {1.0, 1.0}, 10, 60.0, 2), std::invalid_argument, "must not repeat");
}
