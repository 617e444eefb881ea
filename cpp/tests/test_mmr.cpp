// MMR (docs/spec.md §4): hand-worked picks with an exact tie, μ = 1 is cosine order, μ = 0 is pure
// novelty, edge sizes, batches and argument errors.
#include <fieldrank/mmr.hpp>

#include <limits>

#include "check.hpp"
#include "helpers.hpp"

using namespace fieldrank;
using namespace fieldrank_test;

TEST_CASE("mmr_pool: hand-worked picks with an exact tie") {
    // q = (1, 0); a = (1, 0), c = (0.8, −0.6), b = (0.96, 0.28), at positions 0, 1, 2.
    // μ = 0.5: first pick a (0.5). Then b: 0.5·0.96 − 0.5·0.96 = 0 and c: 0.5·0.8 − 0.5·0.8 = 0,
    // an exact tie (every product is exact in float), so the lower id goes first.
    const RowMatrixXf C = rows({{1.0f, 0.0f}, {0.8f, -0.6f}, {0.96f, 0.28f}});
    const VectorXf q = vec({1.0f, 0.0f});
    const Ranking r = mmr_pool(ids({0, 1, 2}), C, q, 3, 0.5);
    CHECK_VEC_EQ(r.ids, ids({0, 1, 2}));
    CHECK_VEC_EQ(r.scores, vec({0.5f, 0.0f, 0.5f * 0.96f - 0.5f * 0.96f}));
    // Swap the ids: the same rows, the tie now goes to b.
    const Ranking swapped = mmr_pool(ids({0, 9, 4}), C, q, 3, 0.5);
    CHECK_VEC_EQ(swapped.ids, ids({0, 4, 9}));
    // Third pick after a and b: c scores 0.5·0.8 − 0.5·max(0.8, 0.6) = 0.
    CHECK_EQ(swapped.scores[2], 0.0f);
}

TEST_CASE("mmr: mu = 1 is cosine order; mu = 0 picks the least redundant") {
    const RowMatrixXf E = unit_rows(120, 16, 31);
    const VectorXf q = unit_rows(1, 16, 32).row(0).transpose();
    const Ranking r = mmr(E, q, 20, 60, 1.0);
    const Ranking cosine = prefilter(E, q, 20);
    CHECK_VEC_EQ(r.ids, cosine.ids);
    CHECK_VEC_EQ(r.scores, cosine.scores);

    // μ = 0: after the first pick (all scores 0, tie → lowest id of the pool), each pick is the
    // candidate whose largest similarity to the picks is smallest.
    const RowMatrixXf C = rows({{1.0f, 0.0f}, {0.8f, 0.6f}, {-1.0f, 0.0f}, {0.0f, 1.0f}});
    const Ranking novelty = mmr_pool(ids({0, 1, 2, 3}), C, vec({0.6f, 0.8f}), 4, 0.0);
    CHECK_VEC_EQ(novelty.ids, ids({0, 2, 3, 1}));
}

TEST_CASE("mmr: N = 1, k > N, p < k") {
    const RowMatrixXf one = rows({{1.0f, 0.0f}});
    const Ranking single = mmr(one, vec({0.0f, 1.0f}), 10, 150, 0.5);
    CHECK_VEC_EQ(single.ids, ids({0}));
    CHECK_EQ(single.scores[0], 0.0f);
    const RowMatrixXf E = unit_rows(30, 8, 33);
    const Ranking r = mmr(E, E.row(7).transpose(), 100, 12, 0.7);
    CHECK_DISTINCT_PICKS(r, 12, 7);
}

TEST_CASE("mmr_batch: equals the single form for 1, 2 and 8 threads") {
    const RowMatrixXf E = unit_rows(140, 12, 34);
    const RowMatrixXf Q = unit_rows(13, 12, 35);
    const BatchRanking one = mmr_batch(E, Q, 10, 50, 0.6, std::nullopt, 1);
    for (Index b = 0; b < Q.rows(); ++b) {
        const Ranking single = mmr(E, Q.row(b).transpose(), 10, 50, 0.6);
        CHECK_BATCH_ROW(one, b, single);
    }
    for (const Index threads : {Index{2}, Index{8}}) {
        const BatchRanking other = mmr_batch(E, Q, 10, 50, 0.6, std::nullopt, threads);
        CHECK_SAME_BATCH(other, one);
    }
}

TEST_CASE("mmr: bad arguments throw std::invalid_argument naming the argument") {
    const RowMatrixXf E = unit_rows(5, 3, 36);
    const VectorXf q = E.row(0).transpose();
    CHECK_THROWS_WITH(mmr(E, q, 0, 5, 0.5), std::invalid_argument, "k must be");
    CHECK_THROWS_WITH(mmr(E, q, 2, 0, 0.5), std::invalid_argument, "p must be");
    CHECK_THROWS_WITH(mmr(E, q, 2, 5, -0.1), std::invalid_argument, "mu must lie in [0, 1]");
    CHECK_THROWS_WITH(mmr(E, q, 2, 5, 1.1), std::invalid_argument, "mu");
    CHECK_THROWS_WITH(mmr(E, q, 2, 5, std::numeric_limits<double>::quiet_NaN()), std::invalid_argument, "mu");
    CHECK_THROWS_WITH(mmr_pool(ids({0, 1}), E, q, 2, 0.5), std::invalid_argument, "ids must have one id per row");
}
