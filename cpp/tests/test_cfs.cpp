// CFS (docs/spec.md §3): hand-worked greedy picks with the summed Gaussian field, β = 0 reduces to
// cosine order, the ε floor, the tie rule, batches and argument errors.
#include <fieldrank/cfs.hpp>

#include <cmath>
#include <limits>

#include "check.hpp"
#include "helpers.hpp"

using namespace fieldrank;
using namespace fieldrank_test;

namespace {

// q = (1, 0); a = (1, 0), b = (0.96, 0.28) close to a, c = (0.8, −0.6) further away.
// Cosines: f = (1, 0.96, 0.8); a·b = 0.96, a·c = 0.8, b·c = 0.6.
RowMatrixXf abc() { return rows({{1.0f, 0.0f}, {0.96f, 0.28f}, {0.8f, -0.6f}}); }

double kernel(double dot, double sigma) { return std::exp(-(2.0 - 2.0 * dot) / (2.0 * sigma * sigma)); }

}  // namespace

TEST_CASE("cfs_pool: hand-worked picks") {
    const RowMatrixXf C = abc();
    const VectorXf q = vec({1.0f, 0.0f});
    // β = 1, σ = 0.4: pick a (log 1 = 0). Then b: log 0.96 − K(a,b) = −0.0408 − 0.7788 = −0.8196,
    // c: log 0.8 − K(a,c) = −0.2231 − 0.2865 = −0.5097, so c beats b although its cosine is lower.
    CfsParams params;
    params.beta = 1.0;
    const Ranking r = cfs_pool(ids({0, 1, 2}), C, q, 3, params);
    CHECK_VEC_EQ(r.ids, ids({0, 2, 1}));
    const double s = params.sigma;
    CHECK_CLOSE(r.scores[0], 0.0, 1e-6);
    CHECK_CLOSE(r.scores[1], std::log(0.8) - kernel(0.8, s), 1e-5);
    CHECK_CLOSE(r.scores[2], std::log(0.96) - kernel(0.96, s) - kernel(0.6, s), 1e-5);

    // The locked β = 0.2 keeps cosine order here: b −0.1966 > c −0.2804.
    const Ranking locked = cfs_pool(ids({0, 1, 2}), C, q, 3, CfsParams{});
    CHECK_VEC_EQ(locked.ids, ids({0, 1, 2}));
    CHECK_CLOSE(locked.scores[1], std::log(0.96) - 0.2 * kernel(0.96, s), 1e-5);

    // Pick-time scores never rise: the field only grows.
    for (Index i = 1; i < r.scores.size(); ++i) CHECK(r.scores[i] <= r.scores[i - 1]);
}

TEST_CASE("cfs: beta = 0 is cosine order; eps floors negative cosines") {
    const RowMatrixXf E = unit_rows(90, 13, 21);
    const VectorXf q = unit_rows(1, 13, 22).row(0).transpose();
    CfsParams plain;
    plain.beta = 0.0;
    const Ranking r = cfs(E, q, 90, 90, plain);
    const Ranking cosine = prefilter(E, q, 90);
    // log is monotone above ε, and every cosine at or below ε scores log ε: a tie, lower id first.
    Index above = 0;
    while (above < cosine.scores.size() && cosine.scores[above] > static_cast<float>(plain.eps)) ++above;
    CHECK(above > 0 && above < 90);
    CHECK_VEC_EQ(IdVector(r.ids.head(above)), IdVector(cosine.ids.head(above)));
    for (Index i = above; i < r.ids.size(); ++i) CHECK_CLOSE(r.scores[i], std::log(plain.eps), 1e-5);
    CHECK(follows_tie_rule(IdVector(r.ids.tail(90 - above)), VectorXf(r.scores.tail(90 - above))));
}

TEST_CASE("cfs: exact ties go to the lower id; N = 1; k > N") {
    const RowMatrixXf twins = rows({{0.6f, 0.8f}, {0.6f, 0.8f}, {0.6f, 0.8f}});
    const Ranking r = cfs_pool(ids({8, 2, 5}), twins, vec({0.0f, 1.0f}), 2, CfsParams{});
    CHECK_VEC_EQ(r.ids, ids({2, 5}));
    const RowMatrixXf one = rows({{0.0f, 1.0f}});
    const Ranking single = cfs(one, vec({0.0f, 1.0f}), 50, 150, CfsParams{});
    CHECK_VEC_EQ(single.ids, ids({0}));
    CHECK_CLOSE(single.scores[0], 0.0, 1e-6);
    const RowMatrixXf E = unit_rows(6, 3, 23);
    const Ranking all = cfs(E, E.row(4).transpose(), 50, 150, CfsParams{});
    CHECK_DISTINCT_PICKS(all, 6, 4);
}

TEST_CASE("cfs_batch: equals the single form for 1, 2 and 8 threads") {
    const RowMatrixXf E = unit_rows(160, 21, 24);
    const RowMatrixXf Q = unit_rows(9, 21, 25);
    const IdVector sub = iota_ids(100, 50);
    const BatchRanking one = cfs_batch(E, Q, 12, 40, CfsParams{}, OptionalIds(sub), 1);
    for (Index b = 0; b < Q.rows(); ++b) {
        const Ranking single = cfs(E, Q.row(b).transpose(), 12, 40, CfsParams{}, OptionalIds(sub));
        CHECK_BATCH_ROW(one, b, single);
        for (Index i = 0; i < single.ids.size(); ++i) CHECK(single.ids[i] >= 50 && single.ids[i] < 150);
    }
    for (const Index threads : {Index{2}, Index{8}}) {
        const BatchRanking other = cfs_batch(E, Q, 12, 40, CfsParams{}, OptionalIds(sub), threads);
        CHECK_SAME_BATCH(other, one);
    }
}

TEST_CASE("cfs: bad arguments throw std::invalid_argument naming the argument") {
    const RowMatrixXf E = abc();
    const VectorXf q = vec({1.0f, 0.0f});
    const double inf = std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH(cfs(E, q, 0, 3, CfsParams{}), std::invalid_argument, "k must be");
    CHECK_THROWS_WITH(cfs(E, q, 2, -1, CfsParams{}), std::invalid_argument, "p must be");
    CHECK_THROWS_WITH(cfs(E, q, 2, 3, with_field(&CfsParams::sigma, 0.0)), std::invalid_argument, "sigma");
    CHECK_THROWS_WITH(cfs(E, q, 2, 3, with_field(&CfsParams::sigma, inf)), std::invalid_argument, "sigma");
    CHECK_THROWS_WITH(cfs(E, q, 2, 3, with_field(&CfsParams::beta, -0.5)), std::invalid_argument, "beta");
    CHECK_THROWS_WITH(cfs(E, q, 2, 3, with_field(&CfsParams::eps, 0.0)), std::invalid_argument, "eps");
    CHECK_THROWS_WITH(cfs_pool(ids({1, 1, 2}), E, q, 2, CfsParams{}), std::invalid_argument, "ids must be unique");
    CHECK_THROWS_WITH(cfs_pool(ids({0, 1, 2}), E, vec({1.0f}), 2, CfsParams{}), std::invalid_argument, "q must have length 2");
}

TEST_CASE("cfs: tiny sigma is the sigma -> 0 limit; huge beta saturates at -FLT_MAX") {
    const RowMatrixXf C = rows({{1.0f, 0.0f}, {1.0f, 0.0f}, {0.6f, 0.8f}, {0.0f, 1.0f}});
    const VectorXf q = vec({1.0f, 0.0f});
    CfsParams limit;
    limit.sigma = 1e-30;  // 1/(2 sigma^2) past float32: only the exact duplicate is covered
    limit.beta = 1.0;
    const Ranking r = cfs_pool(ids({0, 1, 2, 3}), C, q, 4, limit);
    CHECK_VEC_EQ(r.ids, ids({0, 2, 1, 3}));
    for (Index i = 0; i < r.scores.size(); ++i) CHECK(std::isfinite(r.scores[i]));

    CfsParams saturated;
    saturated.sigma = 10.0;
    saturated.beta = 3.4e38;
    const Ranking s = cfs_pool(ids({0, 1, 2, 3}), C, q, 4, saturated);
    CHECK_VEC_EQ(s.ids, ids({0, 3, 1, 2}));
    CHECK(s.scores[2] == std::numeric_limits<float>::lowest());
    CHECK(s.scores[3] == std::numeric_limits<float>::lowest());

    CfsParams below_float32;
    below_float32.sigma = 1e-300;
    CHECK_THROWS_WITH(cfs_pool(ids({0, 1, 2, 3}), C, q, 4, below_float32), std::invalid_argument,
                      "sigma must stay positive as a float32");
}
