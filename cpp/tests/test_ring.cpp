// Ring (docs/spec.md §5): a hand-worked lap, the ablation rule equals cosine top-k in cosine order,
// seeded tie draws, lap counts past the pool size, batches and argument errors.
#include <fieldrank/prefilter.hpp>
#include <fieldrank/ring.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "check.hpp"
#include "helpers.hpp"

using namespace fieldrank;
using namespace fieldrank_test;

namespace {

// q = (1, 0); c0 = (1, 0), c1 = (0.8, 0.6), c2 = (0.6, 0.8), c3 = (0, 1): cosines 1, 0.8, 0.6, 0.
// Pairwise: c0c1 0.8, c0c2 0.6, c0c3 0, c1c2 0.96, c1c3 0.6, c2c3 0.8.
RowMatrixXf arc() { return rows({{1.0f, 0.0f}, {0.8f, 0.6f}, {0.6f, 0.8f}, {0.0f, 1.0f}}); }

}  // namespace

TEST_CASE("ring_pool: hand-worked single lap") {
    // α = 0.5, L = 1, k = 2: neighbour means (0.4667, 0.7867, 0.7867, 0.4667), scores
    // 0.5·cos + 0.5·mean = (0.7333, 0.7933, 0.6933, 0.2333): keep c1 then c0.
    RingParams params;
    params.alpha = 0.5;
    params.laps = 1;
    const Ranking r = ring_pool(ids({0, 1, 2, 3}), arc(), vec({1.0f, 0.0f}), 2, params);
    CHECK_VEC_EQ(r.ids, ids({1, 0}));
    CHECK_VEC_CLOSE(r.scores, vec({0.4f + 0.5f * 2.36f / 3.0f, 0.5f + 0.5f * 1.4f / 3.0f}), 1e-5);

    // α = 0 is cosine order.
    params.alpha = 0.0;
    CHECK_VEC_EQ(ring_pool(ids({0, 1, 2, 3}), arc(), vec({1.0f, 0.0f}), 2, params).ids, ids({0, 1}));

    // Two laps, k = 1: lap 0 drops ceil(3/2) = 2 (c2 and c3), lap 1 scores c0 and c1 against
    // each other only: c0 0.5 + 0.4 = 0.9, c1 0.4 + 0.4 = 0.8, so c0 survives.
    params.alpha = 0.5;
    params.laps = 2;
    const Ranking two = ring_pool(ids({0, 1, 2, 3}), arc(), vec({1.0f, 0.0f}), 1, params);
    CHECK_VEC_EQ(two.ids, ids({0}));
    CHECK_CLOSE(two.scores[0], 0.9, 1e-5);
}

TEST_CASE("ring: the ablation rule returns cosine top-k in cosine order") {
    const RowMatrixXf E = unit_rows(300, 48, 41);
    const RowMatrixXf Q = unit_rows(5, 48, 42);
    for (Index b = 0; b < Q.rows(); ++b) {
        const VectorXf q = Q.row(b).transpose();
        for (const Index k : {Index{1}, Index{7}, Index{10}, Index{64}}) {
            for (const Index laps : {Index{1}, Index{3}, Index{9}}) {
                RingParams params;
                params.ablation = true;
                params.laps = laps;
                params.seed = static_cast<std::uint64_t>(b * 100 + k);
                const Ranking r = ring(E, q, k, params);
                const Ranking cosine = prefilter(E, q, k);
                CHECK_VEC_EQ(r.ids, cosine.ids);
            }
        }
    }
}

TEST_CASE("ring: the ablation rule keeps cosines one ulp apart in cosine order") {
    // Cosines x < y one float ulp apart just under 0.48: adding the per-lap bump (0.02) crosses
    // into the next binade, where float spacing doubles. If lap scores were float, x + 0.02 and
    // y + 0.02 could round to the same value and the seeded tie draw would reorder them.
    float x = 0.45f;
    while (x < 0.5f) {
        const float y = std::nextafter(x, 1.0f);
        if (x + 0.02f == y + 0.02f) break;  // the pair that float arithmetic would merge
        x = y;
    }
    REQUIRE(x < 0.5f);
    const float y = std::nextafter(x, 1.0f);
    // Rows whose dot product with q = (1, 0) is exactly x and y; the higher cosine is id 0.
    const RowMatrixXf E = rows({{y, std::sqrt(1.0f - y * y)}, {x, std::sqrt(1.0f - x * x)}});
    const VectorXf q = vec({1.0f, 0.0f});
    REQUIRE(prefilter(E, q, 2).scores[0] == y);
    for (std::uint64_t seed = 0; seed < 16; ++seed) {
        for (const Index laps : {Index{1}, Index{3}}) {
            RingParams params;
            params.ablation = true;
            params.laps = laps;
            params.seed = seed;
            CHECK_VEC_EQ(ring(E, q, 2, params).ids, ids({0, 1}));
            CHECK_VEC_EQ(ring_pool(ids({0, 1}), E, q, 2, params, OptionalVector(vec({y, x}))).ids, ids({0, 1}));
        }
    }
}

TEST_CASE("ring: k near the Index limit is not an overflow") {
    // The pool depth is factor * k; it must saturate rather than overflow (UB caught by UBSan).
    const RowMatrixXf E = unit_rows(9, 4, 46);
    const VectorXf q = E.row(3).transpose();
    for (const Index k : {std::numeric_limits<Index>::max() / 2, std::numeric_limits<Index>::max() / 2 + 1,
                          std::numeric_limits<Index>::max()}) {
        const Ranking r = ring(E, q, k, RingParams{});
        CHECK_EQ(r.ids.size(), 9);
        CHECK(unique_ids(r.ids));
        const RowMatrixXf Q = E.topRows(3);
        const BatchRanking batch = ring_batch(E, Q, k, RingParams{}, std::nullopt, 2);
        CHECK_EQ(batch.ids.cols(), 9);
    }
}

TEST_CASE("ring_pool: exact ties are ordered by the seeded draw") {
    // Four identical candidates with identical cosines: every score ties, so the order is
    // ascending tie_key(seed, lap, id), repeatable for a seed and different across seeds.
    const RowMatrixXf C = rows({{0.6f, 0.8f}, {0.6f, 0.8f}, {0.6f, 0.8f}, {0.6f, 0.8f}});
    const IdVector pool_ids = ids({11, 22, 33, 44});
    std::set<std::vector<Index>> orders;
    for (std::uint64_t seed = 0; seed < 16; ++seed) {
        RingParams params;
        params.laps = 1;
        params.seed = seed;
        const Ranking r = ring_pool(pool_ids, C, vec({1.0f, 0.0f}), 4, params);
        std::vector<Index> expected(pool_ids.data(), pool_ids.data() + 4);
        std::sort(expected.begin(), expected.end(),
                  [&](Index a, Index b) { return tie_key(seed, 0, a) < tie_key(seed, 0, b); });
        const std::vector<Index> got(r.ids.data(), r.ids.data() + r.ids.size());
        CHECK(got == expected);
        CHECK_VEC_EQ(ring_pool(pool_ids, C, vec({1.0f, 0.0f}), 4, params).ids, r.ids);  // repeatable
        orders.insert(got);
    }
    CHECK(orders.size() > 1);
    // splitmix64 of 0 is the published first output of a zero-seeded splitmix64 stream.
    CHECK_EQ(splitmix64(0), 0xE220A8397B1DCDAFULL);
}

TEST_CASE("ring: laps past the pool size, N = 1, k > N") {
    RingParams params;
    params.laps = 10;  // more laps than candidates to drop: later laps drop nothing
    const Ranking r = ring_pool(ids({0, 1, 2, 3}), arc(), vec({1.0f, 0.0f}), 2, params);
    CHECK_EQ(r.ids.size(), 2);
    CHECK(unique_ids(r.ids));
    const RowMatrixXf one = rows({{0.0f, 1.0f}});
    const Ranking single = ring(one, vec({1.0f, 1.0f}), 10, RingParams{});
    CHECK_VEC_EQ(single.ids, ids({0}));
    const RowMatrixXf E = unit_rows(5, 4, 43);
    const Ranking all = ring(E, E.row(1).transpose(), 10, RingParams{});
    CHECK_EQ(all.ids.size(), 5);
    CHECK(unique_ids(all.ids));
}

TEST_CASE("ring_batch: equals the single form for 1, 2 and 8 threads") {
    const RowMatrixXf E = unit_rows(130, 20, 44);
    const RowMatrixXf Q = unit_rows(10, 20, 45);
    RingParams params;
    params.seed = 1234;
    const BatchRanking one = ring_batch(E, Q, 8, params, std::nullopt, 1);
    for (Index b = 0; b < Q.rows(); ++b) {
        const Ranking single = ring(E, Q.row(b).transpose(), 8, params);
        CHECK_BATCH_ROW(one, b, single);
    }
    for (const Index threads : {Index{2}, Index{8}}) {
        const BatchRanking other = ring_batch(E, Q, 8, params, std::nullopt, threads);
        CHECK_SAME_BATCH(other, one);
    }
}

TEST_CASE("ring: bad arguments throw std::invalid_argument naming the argument") {
    const RowMatrixXf E = arc();
    const VectorXf q = vec({1.0f, 0.0f});
    RingParams bad_alpha;
    bad_alpha.alpha = 1.5;
    RingParams no_laps;
    no_laps.laps = 0;
    CHECK_THROWS_WITH(ring(E, q, 0, RingParams{}), std::invalid_argument, "k must be");
    CHECK_THROWS_WITH(ring(E, q, 2, bad_alpha), std::invalid_argument, "alpha");
    CHECK_THROWS_WITH(ring(E, q, 2, no_laps), std::invalid_argument, "laps");
    CHECK_THROWS_WITH(ring_pool(ids({0, 1, 2, 3}), E, vec({0.0f, 0.0f}), 2, RingParams{}), std::invalid_argument,
                      "q must have a non-zero norm");
}

TEST_CASE("ring_pool: rows of norm 1e19 do not overflow the neighbour sum") {
    // Every product is 1e38; five of them summed in float were inf, and 0·inf made NaN scores.
    // A caller's pool is taken as given; the corpus form refuses such rows (not unit).
    const RowMatrixXf E = RowMatrixXf::Constant(6, 1, 1e19f);
    const VectorXf q = vec({1e19f});
    CHECK_THROWS_WITH(ring(E, q, 3, RingParams{}), std::invalid_argument, "E rows must have unit L2 norm");
    for (const double alpha : {0.0, 0.5, 1.0}) {
        RingParams params;
        params.alpha = alpha;
        params.laps = 1;
        const Ranking r = ring_pool(ids({0, 1, 2, 3, 4, 5}), E, q, 3, params);
        REQUIRE(r.scores.size() == 3);
        for (Index i = 0; i < r.scores.size(); ++i) CHECK_CLOSE(r.scores[i] / 1e38, 1.0, 1e-5);
    }
}
