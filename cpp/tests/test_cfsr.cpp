// CFS-R (docs/spec.md §2): hand-worked reconstruction on an orthonormal pool, the tie rule, early stop,
// FISTA, edge sizes, batches and argument errors.
#include <fieldrank/cfsr.hpp>

#include <cmath>
#include <limits>

#include "check.hpp"
#include "helpers.hpp"

using namespace fieldrank;
using namespace fieldrank_test;

// Pool C = I (2 × 2), q = (0.6, 0.8): G = I, λ_max = 1, η = 1/(1 + λ), r = q. The first step
// from a = 0 lands on the fixed point a* = r / (1 + λ), so ã = (0.75, 1), r̃ = (0, 1) and
// score = w·ã + (1 − w)·r̃ = (0.675, 1) for w = 0.9.
TEST_CASE("cfsr_pool: hand-worked orthonormal pool") {
    const RowMatrixXf C = rows({{1.0f, 0.0f}, {0.0f, 1.0f}});
    const VectorXf q = vec({0.6f, 0.8f});
    const CfsrParams params;  // w = 0.9, λ = 0.005, 80 iterations
    const Reconstruction r = cfsr_pool(ids({0, 1}), C, q, 2, params);
    CHECK_VEC_EQ(r.ids, ids({1, 0}));
    CHECK_VEC_CLOSE(r.scores, vec({1.0f, 0.675f}), 1e-5);
    CHECK_VEC_CLOSE(r.coef, vec({0.8f / 1.005f, 0.6f / 1.005f}), 1e-5);

    CfsrParams cosine_only = params;
    cosine_only.w = 0.0;  // the blend reduces to the min-max scaled cosine
    const Reconstruction c = cfsr_pool(ids({0, 1}), C, q, 2, cosine_only);
    CHECK_VEC_EQ(c.ids, ids({1, 0}));
    CHECK_VEC_CLOSE(c.scores, vec({1.0f, 0.0f}), 1e-6);

    CfsrParams fista = params;
    fista.fista = true;  // FISTA reaches the same fixed point here
    const Reconstruction f = cfsr_pool(ids({0, 1}), C, q, 2, fista);
    CHECK_VEC_EQ(f.ids, r.ids);
    CHECK_VEC_CLOSE(f.coef, r.coef, 1e-5);

    CfsrParams no_ridge = params;
    no_ridge.lam = 0.0;
    const Reconstruction exact = cfsr_pool(ids({0, 1}), C, q, 2, no_ridge);
    CHECK_VEC_CLOSE(exact.coef, vec({0.8f, 0.6f}), 1e-5);
}

TEST_CASE("cfsr_pool: a reconstruction that reorders cosine") {
    // q lies between two orthogonal rows; a third row is a near-duplicate of the first and so
    // explains nothing new: it gets coefficient ~0 although its cosine is second best.
    const float s = std::sqrt(0.5f);
    const RowMatrixXf C = rows({{1.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}, {0.99f, 0.0f, std::sqrt(1.0f - 0.99f * 0.99f)}});
    const VectorXf q = vec({s, 0.6f * s, 0.0f}).normalized();
    CfsrParams params;
    params.iters = 2000;
    const Reconstruction r = cfsr_pool(ids({0, 1, 2}), C, q, 3, params);
    const Ranking cosine = prefilter_pool(ids({0, 1, 2}), C, q, 3);
    CHECK_VEC_EQ(cosine.ids, ids({0, 2, 1}));
    CHECK_VEC_EQ(r.ids, ids({0, 1, 2}));
    CHECK(r.coef[2] < 0.2f * r.coef[0]);
    for (Index i = 0; i < r.coef.size(); ++i) CHECK(r.coef[i] >= 0.0f);
}

TEST_CASE("cfsr_pool: lambda_max when the start vector misses the top eigenvector") {
    // Pool {c, −c}: G = [[1, −1], [−1, 1]] and G·1 = 0, so a Krylov space started from the ones
    // vector is invariant with Ritz value 0 although λ_max(G) = 2. The step 1/(λ_max + λ) must
    // still come from λ_max = 2: the answer is a = (1/(1 + λ), 0), not NaN.
    const Reconstruction r = cfsr_pool(ids({0, 1}), rows({{1.0f}, {-1.0f}}), vec({1.0f}), 2, CfsrParams{});
    CHECK_VEC_EQ(r.ids, ids({0, 1}));
    CHECK_VEC_CLOSE(r.coef, vec({1.0f / 1.005f, 0.0f}), 1e-5);
    CHECK_VEC_CLOSE(r.scores, vec({1.0f, 0.0f}), 1e-6);
    for (const bool fista : {false, true}) {
        CfsrParams no_ridge;
        no_ridge.lam = 0.0;
        no_ridge.fista = fista;
        // Without the ridge the minimiser is not unique (any a with a₁ − a₀ = 1); check the fit.
        const Reconstruction z = cfsr_pool(ids({0, 1}), rows({{-1.0f}, {1.0f}}), vec({1.0f}), 2, no_ridge);
        CHECK_VEC_EQ(z.ids, ids({1, 0}));
        CHECK_CLOSE(z.coef[0] - z.coef[1], 1.0, 1e-5);
        CHECK(std::isfinite(z.coef[1]) && z.coef[1] >= 0.0f);
    }
    // Antipodal pairs in a wider pool: G·1 = 0 again.
    const RowMatrixXf X = unit_rows(3, 16, 7);
    RowMatrixXf C(6, 16);
    C << X, -X;
    const Reconstruction wide = cfsr_pool(iota_ids(6), C, X.row(0).transpose(), 6, CfsrParams{});
    CHECK_EQ(wide.ids[0], 0);
    CHECK_CLOSE(wide.coef[0], 1.0 / 1.005, 1e-2);
    for (Index i = 0; i < wide.coef.size(); ++i) CHECK(std::isfinite(wide.coef[i]) && wide.coef[i] >= 0.0f);
}

TEST_CASE("cfsr_pool: exact ties go to the lower id") {
    // Every cosine is <= 0, so the gradient at a = 0 points outward and a stays 0: ã = 0.
    // With w = 1 every score is exactly 0.
    const RowMatrixXf C = rows({{0.0f, 1.0f}, {-1.0f, 0.0f}, {0.0f, -1.0f}});
    const VectorXf q = vec({1.0f, 0.0f});
    CfsrParams params;
    params.w = 1.0;
    const Reconstruction r = cfsr_pool(ids({7, 3, 5}), C, q, 3, params);
    CHECK_VEC_EQ(r.ids, ids({3, 5, 7}));
    CHECK_VEC_EQ(r.scores, vec({0.0f, 0.0f, 0.0f}));
    CHECK_VEC_EQ(r.coef, vec({0.0f, 0.0f, 0.0f}));
    // Identical rows: identical coefficients and scores, so the lower id wins.
    const RowMatrixXf twins = rows({{0.6f, 0.8f}, {0.6f, 0.8f}, {1.0f, 0.0f}});
    const Reconstruction t = cfsr_pool(ids({9, 4, 6}), twins, vec({0.0f, 1.0f}), 3, CfsrParams{});
    CHECK_VEC_EQ(t.ids, ids({4, 9, 6}));
    CHECK_EQ(t.scores[0], t.scores[1]);
}

TEST_CASE("cfsr: early stop and given sims") {
    const RowMatrixXf E = unit_rows(120, 24, 5);
    const VectorXf q = unit_rows(1, 24, 6).row(0).transpose();
    CfsrParams stop_now;
    stop_now.tol = 1e6;  // the projected gradient at a = 0 is already under it
    const Reconstruction r = cfsr(E, q, 30, 60, stop_now);
    const Ranking cosine = prefilter(E, q, 30);
    CHECK_VEC_EQ(r.ids, cosine.ids);  // a = 0: the score is the scaled cosine
    for (Index i = 0; i < r.coef.size(); ++i) CHECK_EQ(r.coef[i], 0.0f);

    // Pool form with precomputed sims equals the pool form that computes them.
    const Pool pool = pool_from_corpus(E, q, 60, std::nullopt);
    const Reconstruction given = cfsr_pool(pool.ids, pool.vectors, q, 30, CfsrParams{}, OptionalVector(pool.sims));
    const Reconstruction computed = cfsr_pool(pool.ids, pool.vectors, q, 30, CfsrParams{});
    const Reconstruction corpus = cfsr(E, q, 30, 60, CfsrParams{});
    CHECK_VEC_EQ(given.ids, corpus.ids);
    CHECK_VEC_EQ(computed.ids, corpus.ids);
    CHECK_VEC_CLOSE(given.scores, corpus.scores, 1e-6);
    CHECK(follows_tie_rule(corpus.ids, corpus.scores));
    CHECK(unique_ids(corpus.ids));
}

TEST_CASE("cfsr: N = 1, k > N, p > N") {
    const RowMatrixXf one = rows({{0.6f, 0.8f}});
    const Reconstruction r = cfsr(one, vec({1.0f, 0.0f}), 50, 150, CfsrParams{});
    CHECK_VEC_EQ(r.ids, ids({0}));
    CHECK_CLOSE(r.scores[0], 1.0, 1e-6);  // ã = 1, r̃ = 1 (zero span)
    CHECK(r.coef[0] > 0.0f);
    const RowMatrixXf E = unit_rows(7, 5, 8);
    const Reconstruction all = cfsr(E, E.row(2).transpose(), 100, 100, CfsrParams{});
    CHECK_EQ(all.ids.size(), 7);
    CHECK(unique_ids(all.ids));
    const Reconstruction three = cfsr(E, E.row(2).transpose(), 100, 3, CfsrParams{});
    CHECK_EQ(three.ids.size(), 3);
    CHECK_EQ(three.ids[0], 2);  // the query's own row reconstructs it alone
}

TEST_CASE("cfsr_batch: equals the single form for 1, 2 and 8 threads") {
    const RowMatrixXf E = unit_rows(180, 19, 9);
    const RowMatrixXf Q = unit_rows(11, 19, 10);
    for (const bool fista : {false, true}) {
        CfsrParams params;
        params.fista = fista;
        params.iters = 40;
        const BatchReconstruction one = cfsr_batch(E, Q, 25, 70, params, std::nullopt, 1);
        REQUIRE(one.ids.rows() == 11 && one.ids.cols() == 25);
        for (Index b = 0; b < Q.rows(); ++b) {
            const Reconstruction single = cfsr(E, Q.row(b).transpose(), 25, 70, params);
            CHECK_BATCH_ROW(one, b, single);
            CHECK_VEC_EQ(VectorXf(one.coef.row(b).transpose()), single.coef);
        }
        for (const Index threads : {Index{2}, Index{8}}) {
            const BatchReconstruction other = cfsr_batch(E, Q, 25, 70, params, std::nullopt, threads);
            CHECK_SAME_BATCH(other, one);
            CHECK(other.coef == one.coef);
        }
    }
}

TEST_CASE("cfsr: bad arguments throw std::invalid_argument naming the argument") {
    const RowMatrixXf E = unit_rows(10, 4, 12);
    const VectorXf q = E.row(0).transpose();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    CHECK_THROWS_WITH(cfsr(E, q, 0, 10, CfsrParams{}), std::invalid_argument, "k must be");
    CHECK_THROWS_WITH(cfsr(E, q, 5, 0, CfsrParams{}), std::invalid_argument, "p must be");
    CHECK_THROWS_WITH(cfsr(E, q, 5, 10, with_field(&CfsrParams::w, 1.5)), std::invalid_argument, "w must lie");
    CHECK_THROWS_WITH(cfsr(E, q, 5, 10, with_field(&CfsrParams::w, nan)), std::invalid_argument, "w");
    CHECK_THROWS_WITH(cfsr(E, q, 5, 10, with_field(&CfsrParams::lam, -0.1)), std::invalid_argument, "lam");
    CHECK_THROWS_WITH(cfsr(E, q, 5, 10, with_field(&CfsrParams::lam, inf)), std::invalid_argument, "lam");
    CHECK_THROWS_WITH(cfsr(E, q, 5, 10, with_field(&CfsrParams::iters, 0)), std::invalid_argument, "iters");
    CHECK_THROWS_WITH(cfsr(E, q, 5, 10, with_field(&CfsrParams::tol, -1.0)), std::invalid_argument, "tol");
    CHECK_THROWS_WITH(cfsr(E, q, 5, 10, with_field(&CfsrParams::tol, nan)), std::invalid_argument, "tol");
    const IdVector pool_ids = iota_ids(10);
    const VectorXf short_sims = VectorXf::Zero(3);
    CHECK_THROWS_WITH(cfsr_pool(pool_ids, E, q, 5, CfsrParams{}, OptionalVector(short_sims)), std::invalid_argument,
                      "sims must have one value per row of C");
    VectorXf bad_sims = VectorXf::Zero(10);
    bad_sims[4] = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH(cfsr_pool(pool_ids, E, q, 5, CfsrParams{}, OptionalVector(bad_sims)), std::invalid_argument,
                      "sims must be finite");
    RowMatrixXf zero_row = E;
    zero_row.row(3).setZero();
    CHECK_THROWS_WITH(cfsr_pool(pool_ids, zero_row, q, 5, CfsrParams{}), std::invalid_argument, "C rows");
    CHECK_THROWS_WITH(cfsr(zero_row, q, 5, 10, CfsrParams{}), std::invalid_argument, "E rows");
}

// The projected gradient runs on power-of-two rescaled inputs, so extreme accepted norms neither
// overflow nor underflow float32, and scaling q by 2^s scales the coefficients by exactly 2^s.
TEST_CASE("cfsr: extreme norms stay finite and scale exactly") {
    const RowMatrixXf E = unit_rows(40, 8, 5);
    const VectorXf q = E.row(3).transpose();
    const Reconstruction base = cfsr(E, q, 10, 30, CfsrParams{});
    for (const int shift : {-100, -40, 40, 60}) {
        const VectorXf scaled_q = q * std::ldexp(1.0f, shift / 2) * std::ldexp(1.0f, shift - shift / 2);
        const Reconstruction scaled = cfsr(E, scaled_q, 10, 30, CfsrParams{});
        CHECK(scaled.ids == base.ids);
        CHECK(scaled.scores == base.scores);
        for (Index i = 0; i < base.coef.size(); ++i)
            if (std::abs(std::ldexp(static_cast<double>(base.coef[i]), shift)) >= std::numeric_limits<float>::min())
                CHECK(static_cast<double>(scaled.coef[i]) == std::ldexp(static_cast<double>(base.coef[i]), shift));
    }

    // A row of norm 1.01e-12 reconstructing a query of norm 1.8e19: a = 1.8e31 (it was inf, then NaN).
    CfsrParams no_ridge;
    no_ridge.lam = 0.0;
    const Reconstruction far = cfsr_pool(ids({0}), rows({{1.01e-12f}}), vec({1.8e19f}), 1, no_ridge);
    CHECK_CLOSE(far.coef[0] / (1.8e19 / 1.01e-12), 1.0, 1e-5);
    CHECK(far.scores[0] == 1.0f);

    // Caller sims spanning past float32 (max − min = 6e38): the min-max scaling stays finite.
    const RowMatrixXf I = rows({{1.0f, 0.0f}, {0.0f, 1.0f}});
    const Reconstruction span = cfsr_pool(ids({0, 1}), I, vec({1.0f, 0.0f}), 2, CfsrParams{},
                                          OptionalVector(vec({-3e38f, 3e38f})));
    CHECK_VEC_EQ(span.ids, ids({1, 0}));
    CHECK_VEC_CLOSE(span.scores, vec({1.0f, 0.0f}), 1e-6);
    CHECK(std::isfinite(span.coef[0]) && span.coef[0] > 1e38f);

    // A query whose squared norm leaves float32 is rejected like such a row.
    CHECK_THROWS_WITH(cfsr(E, VectorXf(q * 1e20f), 5, 10, CfsrParams{}), std::invalid_argument,
                      "q must have a squared norm within the float32 range");
    // A coefficient that float32 cannot hold is an error, not inf.
    CHECK_THROWS_WITH(unscaled_coefficient(1.0f, 200), std::invalid_argument, "past the float32 range");
    CHECK(unscaled_coefficient(1.5f, -3) == 0.1875f);
}

TEST_CASE("cfsr: lambda_max on a degenerate pool where a dense eigen-solve does not converge") {
    // 218 rows alternating e1, e2: G·1 = 109·1 breaks Lanczos down at once, and Eigen's
    // SelfAdjointEigenSolver reports NoConvergence with garbage eigenvalues for this matrix.
    for (const Index n : {217, 218, 219}) {
        const Index ldg = detail::pad16(n);
        std::vector<float> G(static_cast<std::size_t>(ldg * ldg), 0.0f);
        for (Index i = 0; i < n; ++i)
            for (Index j = 0; j < n; ++j) G[static_cast<std::size_t>(i * ldg + j)] = (i % 2 == j % 2) ? 1.0f : 0.0f;
        const double top = lambda_max(simd::kernels(), G.data(), ldg, n, defaults::lambda_max_rel_tol,
                                      defaults::lambda_max_max_steps);
        CHECK_CLOSE(top, static_cast<double>((n + 1) / 2), 1e-9);
    }
}
