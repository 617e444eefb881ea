// Prefilter (docs/spec.md §1): hand-worked top-P, edge sizes, the tie rule, subsets, pools, batches
// and the argument errors.
#include <fieldrank/prefilter.hpp>

#include <limits>
#include <string>
#include <vector>

#include "check.hpp"
#include "helpers.hpp"

using namespace fieldrank;
using namespace fieldrank_test;

namespace {

// Rows at known cosines with q = (1, 0): 1, 0, 0.6, 0.8.
RowMatrixXf four_rows() { return rows({{1.0f, 0.0f}, {0.0f, 1.0f}, {0.6f, 0.8f}, {0.8f, 0.6f}}); }

}  // namespace

TEST_CASE("prefilter: hand-worked top-p") {
    const RowMatrixXf E = four_rows();
    const VectorXf q = vec({1.0f, 0.0f});
    const Ranking top2 = prefilter(E, q, 2);
    CHECK_VEC_EQ(top2.ids, ids({0, 3}));
    CHECK_VEC_CLOSE(top2.scores, vec({1.0f, 0.8f}), 1e-6);
    const Ranking all = prefilter(E, q, 4);
    CHECK_VEC_EQ(all.ids, ids({0, 3, 2, 1}));
    CHECK_VEC_CLOSE(all.scores, vec({1.0f, 0.8f, 0.6f, 0.0f}), 1e-6);
}

TEST_CASE("prefilter: p > N returns N, N = 1, d = 1") {
    const RowMatrixXf E = four_rows();
    const Ranking r = prefilter(E, vec({0.0f, 1.0f}), 1000);
    CHECK_EQ(r.ids.size(), 4);
    CHECK_VEC_EQ(r.ids, ids({1, 2, 3, 0}));
    const RowMatrixXf one = rows({{0.6f, 0.8f}});
    const Ranking single = prefilter(one, vec({1.0f, 0.0f}), 5);
    CHECK_VEC_EQ(single.ids, ids({0}));
    CHECK_CLOSE(single.scores[0], 0.6, 1e-6);
    const RowMatrixXf line = rows({{1.0f}, {-1.0f}, {1.0f}});
    const Ranking scalar = prefilter(line, vec({-2.0f}), 3);
    CHECK_VEC_EQ(scalar.ids, ids({1, 0, 2}));
    CHECK_VEC_EQ(scalar.scores, vec({2.0f, -2.0f, -2.0f}));
}

TEST_CASE("prefilter: exact ties go to the lower id") {
    // Rows 1, 2 and 4 are identical, so their scores are bit-identical wherever they sit.
    const RowMatrixXf E = rows({{1.0f, 0.0f}, {0.6f, 0.8f}, {0.6f, 0.8f}, {0.0f, 1.0f}, {0.6f, 0.8f}});
    const Ranking r = prefilter(E, vec({1.0f, 0.0f}), 4);
    CHECK_VEC_EQ(r.ids, ids({0, 1, 2, 4}));
    CHECK(follows_tie_rule(r.ids, r.scores));
    // The same with the heap full before the ties arrive and a larger d (SIMD lanes and tail).
    const RowMatrixXf base = unit_rows(1, 37, 11);
    RowMatrixXf many(64, 37);
    for (Index i = 0; i < many.rows(); ++i) many.row(i) = base.row(0);
    const VectorXf q = unit_rows(1, 37, 12).row(0).transpose();
    const Ranking tied = prefilter(many, q, 10);
    CHECK_VEC_EQ(tied.ids, iota_ids(10));
    for (Index i = 1; i < tied.scores.size(); ++i) CHECK_EQ(tied.scores[i], tied.scores[0]);
}

TEST_CASE("prefilter: subset restricts the rows") {
    const RowMatrixXf E = four_rows();
    const IdVector sub = ids({1, 2});
    const Ranking r = prefilter(E, vec({1.0f, 0.0f}), 10, OptionalIds(sub));
    CHECK_VEC_EQ(r.ids, ids({2, 1}));
    const IdVector one = ids({3});
    CHECK_VEC_EQ(prefilter(E, vec({1.0f, 0.0f}), 10, OptionalIds(one)).ids, ids({3}));
}

TEST_CASE("prefilter: agrees with a full sort on random data") {
    const RowMatrixXf E = unit_rows(300, 97, 1);
    const VectorXf q = unit_rows(1, 97, 2).row(0).transpose();
    const Ranking r = prefilter(E, q, 150);
    REQUIRE(r.ids.size() == 150);
    CHECK(unique_ids(r.ids));
    CHECK(follows_tie_rule(r.ids, r.scores));
    // The 150th score is no lower than any row left out.
    std::vector<char> kept(300, 0);
    for (Index i = 0; i < r.ids.size(); ++i) kept[static_cast<std::size_t>(r.ids[i])] = 1;
    for (Index row = 0; row < 300; ++row) {
        if (kept[static_cast<std::size_t>(row)]) continue;
        CHECK(E.row(row).dot(q) <= r.scores[149] + 1e-6f);
    }
}

TEST_CASE("prefilter_pool: caller ids, tie rule on caller ids") {
    const RowMatrixXf C = rows({{0.6f, 0.8f}, {1.0f, 0.0f}, {0.6f, 0.8f}});
    const IdVector pool_ids = ids({30, 99, 10});
    const Ranking r = prefilter_pool(pool_ids, C, vec({0.0f, 1.0f}), 5);
    CHECK_VEC_EQ(r.ids, ids({10, 30, 99}));
    CHECK_VEC_CLOSE(r.scores, vec({0.8f, 0.8f, 0.0f}), 1e-6);
    CHECK_EQ(r.scores[0], r.scores[1]);
    CHECK_VEC_EQ(prefilter_pool(pool_ids, C, vec({0.0f, 1.0f}), 1).ids, ids({10}));
}

TEST_CASE("prefilter_batch: equals the single form for 1, 2 and 8 threads") {
    const RowMatrixXf E = unit_rows(211, 33, 3);
    const RowMatrixXf Q = unit_rows(17, 33, 4);
    const IdVector sub = iota_ids(150, 40);
    for (const bool with_subset : {false, true}) {
        const OptionalIds subset = with_subset ? OptionalIds(sub) : std::nullopt;
        const BatchRanking one = prefilter_batch(E, Q, 20, subset, 1);
        REQUIRE(one.ids.rows() == 17 && one.ids.cols() == 20);
        for (Index b = 0; b < Q.rows(); ++b) {
            const Ranking single = prefilter(E, Q.row(b).transpose(), 20, subset);
            CHECK_BATCH_ROW(one, b, single);
        }
        for (const Index threads : {Index{2}, Index{8}, Index{0}, Index{-3}}) {
            const BatchRanking other = prefilter_batch(E, Q, 20, subset, threads);
            CHECK_SAME_BATCH(other, one);
        }
    }
    // An empty batch is not an error: (0, m) arrays.
    const RowMatrixXf none(0, 33);
    const BatchRanking empty = prefilter_batch(E, none, 5, std::nullopt, 4);
    CHECK_EQ(empty.ids.rows(), 0);
    CHECK_EQ(empty.ids.cols(), 5);
}

TEST_CASE("prefilter: bad arguments throw std::invalid_argument naming the argument") {
    const RowMatrixXf E = four_rows();
    const VectorXf q = vec({1.0f, 0.0f});
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    CHECK_THROWS_WITH(prefilter(E, q, 0), std::invalid_argument, "p");
    CHECK_THROWS_WITH(prefilter(E, q, -5), std::invalid_argument, "p must be a positive integer");
    CHECK_THROWS_WITH(prefilter(E, vec({1.0f, 0.0f, 0.0f}), 2), std::invalid_argument, "q must have length 2");
    CHECK_THROWS_WITH(prefilter(E, vec({nan, 1.0f}), 2), std::invalid_argument, "q must be finite");
    CHECK_THROWS_WITH(prefilter(E, vec({inf, 0.0f}), 2), std::invalid_argument, "q must be finite");
    CHECK_THROWS_WITH(prefilter(E, vec({0.0f, 0.0f}), 2), std::invalid_argument, "q must have a non-zero norm");
    const RowMatrixXf empty(0, 2);
    CHECK_THROWS_WITH(prefilter(empty, q, 2), std::invalid_argument, "E must have at least one row");
    const RowMatrixXf no_columns(3, 0);
    CHECK_THROWS_WITH(prefilter(no_columns, VectorXf(0), 2), std::invalid_argument, "E must have at least one column");
    RowMatrixXf bad = E;
    bad(2, 1) = nan;
    CHECK_THROWS_WITH(prefilter(bad, q, 2), std::invalid_argument, "E must be finite");
    bad(2, 1) = -inf;
    CHECK_THROWS_WITH(prefilter(bad, q, 2), std::invalid_argument, "row 2");
    bad.row(2).setZero();
    CHECK_THROWS_WITH(prefilter(bad, q, 2), std::invalid_argument, "non-zero");
    bad.row(2) << 1e30f, 0.0f;  // finite values whose squared norm overflows float
    CHECK_THROWS_WITH(prefilter(bad, q, 2), std::invalid_argument, "row 2");
    bad.row(2) << 1e-40f, 0.0f;  // a denormal row: its squared norm underflows to zero
    CHECK_THROWS_WITH(prefilter(bad, q, 2), std::invalid_argument, "row 2");
    const IdVector out_of_range = ids({0, 4});
    CHECK_THROWS_WITH(prefilter(E, q, 2, OptionalIds(out_of_range)), std::invalid_argument, "subset ids must lie in [0, 4)");
    const IdVector negative = ids({-1});
    CHECK_THROWS_WITH(prefilter(E, q, 2, OptionalIds(negative)), std::invalid_argument, "subset");
    const IdVector repeated = ids({1, 2, 1});
    CHECK_THROWS_WITH(prefilter(E, q, 2, OptionalIds(repeated)), std::invalid_argument, "subset ids must be unique");
    const IdVector nothing(0);
    CHECK_THROWS_WITH(prefilter(E, q, 2, OptionalIds(nothing)), std::invalid_argument, "subset must hold");
    // A bad row outside the subset is never read, so it is not an error.
    RowMatrixXf partly_bad = E;
    partly_bad(1, 0) = nan;
    const IdVector clean = ids({0, 2, 3});
    CHECK_VEC_EQ(prefilter(partly_bad, q, 3, OptionalIds(clean)).ids, ids({0, 3, 2}));

    const IdVector two = ids({1, 2});
    CHECK_THROWS_WITH(prefilter_pool(two, E, q, 2), std::invalid_argument, "ids must have one id per row of C");
    const IdVector dup = ids({5, 6, 5, 7});
    CHECK_THROWS_WITH(prefilter_pool(dup, E, q, 2), std::invalid_argument, "ids must be unique");
    CHECK_THROWS_WITH(prefilter_pool(ids({0, 1, 2, 3}), E, q, 0), std::invalid_argument, "p");
    CHECK_THROWS_WITH(prefilter_pool(ids({0, 1, 2, 3}), bad, q, 2), std::invalid_argument, "C");

    const RowMatrixXf Q = rows({{1.0f, 0.0f}, {0.0f, 0.0f}});
    CHECK_THROWS_WITH(prefilter_batch(E, Q, 2, std::nullopt, 2), std::invalid_argument, "Q row");
    const RowMatrixXf wide = rows({{1.0f, 0.0f, 0.0f}});
    CHECK_THROWS_WITH(prefilter_batch(E, wide, 2, std::nullopt, 2), std::invalid_argument, "Q must have 2 columns");
}

// The single-query stream (tiles of rows, a prefetch some rows ahead) computes each row with the
// same arithmetic as score_f32 one row at a time: every variant, a partial last tile, a tail of
// d % 16 columns, with and without norms and prefetch, gives the same bits.
TEST_CASE("prefilter: the stream's row tiles score every row as score_f32 does, bit for bit") {
    const std::string before = simd::kernel_variant();
    for (const Index d : {Index{1}, Index{16}, Index{45}, Index{384}}) {
        const Index n = 37;  // not a multiple of any variant's tile
        const RowMatrixXf E = unit_rows(n, d, 11);
        const RowMatrixXf Q = unit_rows(1, d, 12);
        for (const std::string& variant : simd::supported_variants()) {
            simd::set_kernel_variant(variant);
            const simd::KernelTable& k = simd::kernels();
            std::vector<float> want(static_cast<std::size_t>(n)), want_norms(want.size());
            for (Index r = 0; r < n; ++r) {
                const Index id = r;
                k.score_f32(E.data(), d, &id, 1, d, Q.data(), d, 1, want.data() + r, 1, want_norms.data() + r);
            }
            for (const Index prefetch_rows : {Index{0}, Index{1}, Index{5}, Index{100}}) {
                std::vector<float> got(want.size(), -7.0f), norms(want.size(), -7.0f);
                k.score_f32_stream(E.data(), d, n, d, Q.data(), got.data(), norms.data(), prefetch_rows);
                CHECK(got == want);
                CHECK(norms == want_norms);
                std::vector<float> no_norms(want.size(), -7.0f);
                k.score_f32_stream(E.data(), d, n, d, Q.data(), no_norms.data(), nullptr, prefetch_rows);
                CHECK(no_norms == want);
            }
        }
    }
    simd::set_kernel_variant(before);
}
