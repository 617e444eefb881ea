// The temporal leg: each term against a plain double loop written from the formula, the tie rule,
// subsets, the batch against single queries for 1, 3 and 8 threads, and the argument errors.
#include <fieldrank/temporal.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "check.hpp"
#include "helpers.hpp"

using namespace fieldrank;
using namespace fieldrank_test;

namespace {

struct Fixture {
    RowMatrixXf E;
    RowMatrixXf Q;
    RowMatrixXf lexical;  // (B, N)
    std::vector<Index> session;
    std::vector<std::uint8_t> cue;
    std::vector<Index> day;
    std::vector<std::uint8_t> intent;
    std::vector<Index> offsets;
    std::vector<Index> windows;
};

Fixture make_fixture(Index n, Index d, Index B, std::uint64_t seed) {
    Fixture f;
    f.E = unit_rows(n, d, seed);
    f.Q = unit_rows(B, d, seed + 1);
    std::mt19937_64 gen(seed + 2);
    std::uniform_int_distribution<int> coin(0, 3);
    f.lexical.setZero(B, n);
    for (Index b = 0; b < B; ++b)
        for (Index i = 0; i < n; ++i)
            if (coin(gen) == 0) f.lexical(b, i) = static_cast<float>(coin(gen) + 1) * 0.75f;
    for (Index i = 0; i < n; ++i) {
        f.session.push_back(i / 5);  // sessions of five consecutive rows
        f.cue.push_back(coin(gen) == 0 ? 1 : 0);
        f.day.push_back(19000 + (i / 5) * 3);
    }
    if (n > 1) f.day[1] = std::numeric_limits<Index>::min();  // a row without a session date
    f.offsets.push_back(0);
    for (Index b = 0; b < B; ++b) {
        f.intent.push_back(b % 2 == 0 ? 1 : 0);
        if (b % 3 == 1) {  // one period around the day of session 2
            f.windows.push_back(19006);
            f.windows.push_back(19006);
        }
        f.offsets.push_back(static_cast<Index>(f.windows.size() / 2));
    }
    return f;
}

// The formula of python/fieldrank/temporal.py, one query, plain loops.
std::vector<double> formula(const Fixture& f, Index b, const std::vector<Index>& rows, const TemporalParams& p) {
    const Index n = static_cast<Index>(rows.size());
    auto z = [n](std::vector<double> x) {
        double mean = 0.0;
        for (double v : x) mean += v;
        mean /= static_cast<double>(n);
        double var = 0.0;
        for (double v : x) var += (v - mean) * (v - mean);
        double sd = std::sqrt(var / static_cast<double>(n));
        if (sd == 0.0) sd = 1.0;
        for (double& v : x) v = (v - mean) / sd;
        return x;
    };
    std::vector<double> cos(static_cast<std::size_t>(n)), lex(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) {
        double dot = 0.0;
        for (Index j = 0; j < f.E.cols(); ++j)
            dot += static_cast<double>(f.E(rows[i], j)) * static_cast<double>(f.Q(b, j));
        cos[static_cast<std::size_t>(i)] = dot;
        lex[static_cast<std::size_t>(i)] = f.lexical(b, rows[i]);
    }
    const auto zc = z(cos), zl = z(lex);
    std::vector<double> base(static_cast<std::size_t>(n)), score(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i)
        base[i] = (1.0 - p.alpha) * zc[static_cast<std::size_t>(i)] + p.alpha * zl[static_cast<std::size_t>(i)];
    for (Index i = 0; i < n; ++i) {
        double support = 0.0;
        for (Index j = 0; j < n; ++j) {
            const Index dist = std::abs(rows[j] - rows[i]);
            if (dist == 0 || dist > p.radius || f.session[rows[j]] != f.session[rows[i]]) continue;
            support = std::max(support, std::pow(p.decay, static_cast<double>(dist - 1)) * std::max(base[j], 0.0));
        }
        double s = base[i] + p.gamma * support;
        if (f.intent[b] && f.cue[rows[i]]) s += p.tau;
        bool hit = false;
        for (Index w = f.offsets[b]; w < f.offsets[b + 1]; ++w) {
            const Index day = f.day[rows[i]];
            hit |= day != std::numeric_limits<Index>::min() && day >= f.windows[2 * w] - p.before_days &&
                   day <= f.windows[2 * w + 1] + p.after_days;
        }
        if (hit) s += p.delta;
        score[static_cast<std::size_t>(i)] = s;
    }
    return score;
}

TemporalRanking run(const Fixture& f, const std::vector<Index>* rows, const TemporalParams& p, Index k,
                    Index n_threads, const MatrixRef& Q, Index q_offset = 0) {
    const TemporalTimeline timeline{f.session.data(), f.cue.data(), f.day.data()};
    // Per-query arrays start at q_offset so a single query can be run out of the fixture's batch.
    std::vector<Index> offsets(f.offsets.begin() + q_offset, f.offsets.begin() + q_offset + Q.rows() + 1);
    for (Index& o : offsets) o -= f.offsets[q_offset];
    const Index* windows = f.windows.data() + 2 * f.offsets[q_offset];
    const TemporalQueries queries{f.intent.data() + q_offset, offsets.data(), windows};
    const Index n = rows != nullptr ? static_cast<Index>(rows->size()) : f.E.rows();
    return temporal_batch(f.E, Q, LexicalScores<float>{f.lexical.data() + q_offset * f.lexical.cols(), f.lexical.cols()},
                          rows != nullptr ? rows->data() : nullptr, n, timeline, queries, offsets.back(), p, k, true,
                          n_threads);
}

// Every `step`-th query of the fixture run alone (on n_threads) equals its row of `batch`, bit for bit.
void check_single_queries(const Fixture& f, const TemporalParams& p, Index k, const TemporalRanking& batch, Index step,
                          Index n_threads) {
    for (Index b = 0; b < f.Q.rows(); b += step) {
        const RowMatrixXf q = f.Q.row(b);
        const TemporalRanking single = run(f, nullptr, p, k, n_threads, q, b);
        CHECK(single.ids.row(0) == batch.ids.row(b));
        CHECK(single.scores.row(0) == batch.scores.row(b));
    }
}

}  // namespace

TEST_CASE("temporal: every term matches the formula, over all rows and over a subset") {
    const Fixture f = make_fixture(97, 19, 6, 11);
    const TemporalParams p{0.5, 0.5, 2, 0.5, 1.0, 1.5, 7, 14};
    std::vector<Index> all(97), subset;
    for (Index i = 0; i < 97; ++i) {
        all[static_cast<std::size_t>(i)] = i;
        if (i % 3 != 1) subset.push_back(i);
    }
    const std::vector<const std::vector<Index>*> row_sets = {nullptr, &subset};
    for (const std::vector<Index>* rows : row_sets) {
        const std::vector<Index>& used = rows != nullptr ? *rows : all;
        const TemporalRanking r = run(f, rows, p, 1000, 1, f.Q);
        CHECK_EQ(r.ids.cols(), static_cast<Index>(used.size()));
        for (Index b = 0; b < f.Q.rows(); ++b) {
            const std::vector<double> expected = formula(f, b, used, p);
            for (Index i = 0; i < r.ids.cols(); ++i) {
                const Index row = r.ids(b, i);
                const auto at = std::lower_bound(used.begin(), used.end(), row) - used.begin();
                CHECK_CLOSE(r.scores(b, i), expected[static_cast<std::size_t>(at)], 1e-9);
                if (i > 0) {
                    const bool ordered = r.scores(b, i - 1) > r.scores(b, i) ||
                                         (r.scores(b, i - 1) == r.scores(b, i) && r.ids(b, i - 1) < row);
                    CHECK(ordered);
                }
            }
        }
    }
}

TEST_CASE("temporal: the batch equals single queries for 1, 3 and 8 threads, bit for bit") {
    for (const Index n : {Index{1}, Index{3}, Index{97}, Index{700}}) {
        const Fixture f = make_fixture(n, 33, 21, 5 + static_cast<std::uint64_t>(n));
        const TemporalParams p{0.4, 0.7, 2, 0.5, 0.5, 1.0, 7, 14};
        const TemporalRanking one = run(f, nullptr, p, 10, 1, f.Q);
        for (const Index threads : {Index{3}, Index{8}}) {
            const TemporalRanking many = run(f, nullptr, p, 10, threads, f.Q);
            CHECK_SAME_BATCH(many, one);
        }
        check_single_queries(f, p, 10, one, 5, 1);
        const Index width = n < 10 ? n : 10;
        CHECK_EQ(one.ids.cols(), width);
    }
}

TEST_CASE("temporal: priors off give the plain blend; alpha 0 needs no lexical scores") {
    const Fixture f = make_fixture(50, 8, 3, 3);
    const TemporalTimeline timeline{f.session.data(), nullptr, nullptr};
    const TemporalParams dense_only{0.0, 0.0, 1, 0.5, 0.0, 0.0, 0, 0};
    const TemporalRanking r = temporal_batch(f.E, f.Q, LexicalScores<float>{}, nullptr, 50, timeline,
                                             TemporalQueries{}, 0, dense_only, 5, true, 1);
    // alpha = 0, gamma = 0: z(cos) is monotone in the cosine, so the order is the cosine order.
    for (Index b = 0; b < f.Q.rows(); ++b) {
        std::vector<std::pair<double, Index>> cos;
        for (Index i = 0; i < 50; ++i) cos.push_back({-f.E.row(i).cast<double>().dot(f.Q.row(b).cast<double>()), i});
        std::sort(cos.begin(), cos.end());
        for (Index i = 0; i < 5; ++i) CHECK_EQ(r.ids(b, i), cos[static_cast<std::size_t>(i)].second);
    }
    CHECK_THROWS_WITH(temporal_batch(f.E, f.Q, LexicalScores<float>{}, nullptr, 50, timeline, TemporalQueries{}, 0,
                                     TemporalParams{}, 5, true, 1),
                      std::invalid_argument, "lexical scores are required");
}

TEST_CASE("temporal: bad rows, unsorted rows and bad lexical scores are refused") {
    Fixture f = make_fixture(20, 4, 2, 9);
    const TemporalParams p{};
    const TemporalTimeline timeline{f.session.data(), f.cue.data(), f.day.data()};
    const LexicalScores<float> lex{f.lexical.data(), f.lexical.cols()};
    std::vector<Index> unsorted = {3, 2};
    CHECK_THROWS_WITH(temporal_batch(f.E, f.Q, lex, unsorted.data(), 2, timeline, TemporalQueries{}, 0, p, 5, true, 1),
                      std::invalid_argument, "sorted and unique");
    RowMatrixXf bad_lex = f.lexical;
    bad_lex(1, 7) = std::numeric_limits<float>::infinity();
    CHECK_THROWS_WITH(temporal_batch(f.E, f.Q, LexicalScores<float>{bad_lex.data(), bad_lex.cols()}, nullptr, 20,
                                     timeline, TemporalQueries{}, 0, p, 5, true, 1),
                      std::invalid_argument, "lexical must be finite");
    f.E.row(13).setZero();
    CHECK_THROWS_WITH(temporal_batch(f.E, f.Q, lex, nullptr, 20, timeline, TemporalQueries{}, 0, p, 5, true, 3),
                      std::invalid_argument, "row 13");
    // A corpus validated once is not re-checked (check_rows = false): the zero row just scores 0.
    const TemporalRanking unchecked = temporal_batch(f.E, f.Q, lex, nullptr, 20, timeline, TemporalQueries{}, 0, p,
                                                     5, false, 1);
    CHECK_EQ(unchecked.ids.cols(), 5);
    CHECK_THROWS_WITH(temporal_batch(f.E, f.Q, lex, nullptr, 20, timeline, TemporalQueries{}, 0, p, 0, true, 1),
                      std::invalid_argument, "k must be a positive integer");
}

TEST_CASE("temporal: a corpus beyond the cache (rows split across threads) equals single queries") {
    // 20,000 rows × 64 floats = 5 MB: more than temporal_cache_resident_bytes, so the cosines of a
    // block of queries are computed with E's rows split across threads.
    const Fixture f = make_fixture(20000, 64, 6, 17);
    const TemporalParams p{0.5, 0.5, 2, 0.5, 1.0, 1.5, 7, 14};
    const TemporalRanking one = run(f, nullptr, p, 10, 1, f.Q);
    const TemporalRanking many = run(f, nullptr, p, 10, 4, f.Q);
    CHECK_SAME_BATCH(many, one);
    check_single_queries(f, p, 10, one, 2, 3);
}

namespace {

// The blend and support sweeps of the kernel table, written as plain loops from their contract
// (kernel_table.hpp): every variant must give these bits exactly.
std::vector<double> blend_formula(const std::vector<double>& dense, const std::vector<float>& lex,
                                  const std::vector<Index>& rows, Index n, double alpha, bool with_dense,
                                  bool with_lex) {
    const double dm = 0.125, ds = 0.375, lm = 0.9, ls = 1.7, share = 1.0 - alpha;
    std::vector<double> base(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) {
        const double l = static_cast<double>(lex[static_cast<std::size_t>(rows.empty() ? i : rows[i])]);
        const double z = (dense[i] - dm) / ds;
        if (with_dense && with_lex) base[i] = share * z + alpha * ((l - lm) / ls);
        else if (with_dense) base[i] = share * z;
        else base[i] = 0.0 + alpha * ((l - lm) / ls);
    }
    return base;
}

std::vector<double> support_formula(const std::vector<double>& base, const std::vector<Index>& session,
                                    const std::vector<double>& factors, double gamma) {
    const Index n = static_cast<Index>(base.size());
    std::vector<double> score(base.size());
    for (Index i = 0; i < n; ++i) {
        double support = 0.0;
        for (Index dist = 1; dist <= static_cast<Index>(factors.size()); ++dist)
            for (const Index j : {i + dist, i - dist})
                if (j >= 0 && j < n && session[j] == session[i])
                    support = std::max(support, factors[dist - 1] * std::max(base[j], 0.0));
        score[i] = base[i] + gamma * support;
    }
    return score;
}

}  // namespace

TEST_CASE("temporal: the blend and support kernels of every variant equal their formula bit for bit") {
    const std::string before = simd::kernel_variant();
    std::mt19937_64 gen(41);
    std::normal_distribution<double> normal;
    for (const Index n : {Index{1}, Index{3}, Index{97}, Index{1100}}) {  // 1100: across support blocks
        std::vector<double> dense(static_cast<std::size_t>(n)), base(static_cast<std::size_t>(n));
        std::vector<float> lex(static_cast<std::size_t>(2 * n));
        std::vector<double> lex64(lex.size());
        std::vector<Index> session(static_cast<std::size_t>(n)), rows;
        for (Index i = 0; i < n; ++i) {
            dense[i] = 0.3 * normal(gen);
            base[i] = normal(gen);
            session[i] = i / 7 + (i % 11 == 0 ? 1000 : 0);  // runs of equal keys, broken now and then
            rows.push_back(2 * i + (i % 2));
        }
        for (std::size_t i = 0; i < lex.size(); ++i) {
            lex[i] = i % 3 == 0 ? static_cast<float>(std::abs(normal(gen)) * 3.0) : 0.0f;
            lex64[i] = static_cast<double>(lex[i]);
        }
        for (const std::string& variant : simd::supported_variants()) {
            simd::set_kernel_variant(variant);
            const simd::KernelTable& k = simd::kernels();
            std::vector<double> got(static_cast<std::size_t>(n));
            for (const bool subset : {false, true}) {
                const Index* ids = subset ? rows.data() : nullptr;
                const std::vector<Index> id_list = subset ? rows : std::vector<Index>{};
                for (const double alpha : {0.0, 0.4, 1.0}) {
                    const bool with_dense = alpha < 1.0, with_lex = alpha > 0.0;
                    const auto want = blend_formula(dense, lex, id_list, n, alpha, with_dense, with_lex);
                    k.temporal_blend(with_dense ? dense.data() : nullptr, with_lex ? lex.data() : nullptr, nullptr, ids,
                                     n, 1.0 - alpha, 0.125, 0.375, alpha, 0.9, 1.7, got.data());
                    CHECK(got == want);
                    k.temporal_blend(with_dense ? dense.data() : nullptr, nullptr, with_lex ? lex64.data() : nullptr,
                                     ids, n, 1.0 - alpha, 0.125, 0.375, alpha, 0.9, 1.7, got.data());
                    CHECK(got == want);
                }
            }
            for (const std::vector<double>& factors :
                 {std::vector<double>{1.0}, std::vector<double>{1.0, 0.5}, std::vector<double>{1.0, 0.5, 0.25}}) {
                k.temporal_support(base.data(), session.data(), n, factors.data(), static_cast<Index>(factors.size()),
                                   0.3, got.data());
                CHECK(got == support_formula(base, session, factors, 0.3));
            }
        }
    }
    simd::set_kernel_variant(before);
}

namespace {

// The leg over all rows of f with corpus moments (screen: the fp32 screen; false: the full exact pass).
TemporalRanking run_moments(const Fixture& f, const TemporalMoments& moments, const TemporalParams& p, Index k,
                            Index n_threads, const MatrixRef& Q, bool screen, Index q_offset = 0) {
    const TemporalTimeline timeline{f.session.data(), f.cue.data(), f.day.data()};
    std::vector<Index> offsets(f.offsets.begin() + q_offset, f.offsets.begin() + q_offset + Q.rows() + 1);
    for (Index& o : offsets) o -= f.offsets[q_offset];
    const Index* windows = f.windows.data() + 2 * f.offsets[q_offset];
    const TemporalQueries queries{f.intent.data() + q_offset, offsets.data(), windows};
    return temporal_batch(f.E, Q, LexicalScores<float>{f.lexical.data() + q_offset * f.lexical.cols(), f.lexical.cols()},
                          nullptr, f.E.rows(), timeline, queries, offsets.back(), p, k, false, n_threads, false,
                          &moments, screen);
}

// Near-ties the screen must resolve exactly: duplicated rows, a row one float32 ulp away from
// another, and queries equal to a corpus row (so the duplicates tie at the top).
void add_near_ties(Fixture& f) {
    const Index n = f.E.rows();
    if (n < 24) return;
    f.E.row(10) = f.E.row(3);
    f.E.row(20) = f.E.row(3);
    f.E.row(6) = f.E.row(5);
    f.E(6, 0) = std::nextafter(f.E(6, 0), 2.0f);
    f.E.row(11) = f.E.row(4);
    f.E(11, f.E.cols() - 1) = std::nextafter(f.E(11, f.E.cols() - 1), -2.0f);
    f.Q.row(0) = f.E.row(3);
    if (f.Q.rows() > 1) f.Q.row(1) = f.E.row(5);
    for (Index b = 0; b < f.lexical.rows(); ++b) f.lexical(b, 20) = f.lexical(b, 10);  // exact ties in both signals
    if (n < 64 || f.Q.rows() < 3) return;
    // A cluster at the top of query 2: rows 30 … 59 are row 7 with a few components moved by one
    // or two ulps, so their exact cosines differ by far less than the fp32 sums' rounding and the
    // fp32 order among them is noise. A screen that kept only the fp32 top-k would rank them wrongly.
    std::mt19937_64 gen(static_cast<std::uint64_t>(n));
    std::uniform_int_distribution<Index> column(0, f.E.cols() - 1);
    for (Index i = 30; i < 60; ++i) {
        f.E.row(i) = f.E.row(7);
        for (int t = 0; t < 3; ++t) {
            const Index j = column(gen);
            const int steps = static_cast<int>(gen() % 2) + 1;
            for (int s = 0; s < steps; ++s) f.E(i, j) = std::nextafter(f.E(i, j), gen() % 2 == 0 ? 2.0f : -2.0f);
        }
        for (Index b = 0; b < f.lexical.rows(); ++b) f.lexical(b, i) = f.lexical(b, 7);
    }
    f.Q.row(2) = f.E.row(7);
}

}  // namespace

TEST_CASE("temporal moments: the sum and the centred second moment, symmetric, the same bits for any thread count") {
    for (const Index n : {Index{1}, Index{7}, Index{300}, Index{5000}}) {  // 5000 rows: many blocks
        for (const Index d : {Index{5}, Index{33}, Index{130}}) {  // 130: three groups of dimensions
            if (n * d > 300 * 130) continue;
            const RowMatrixXf E = unit_rows(n, d, 70 + static_cast<std::uint64_t>(n + d));
            const TemporalMoments m = temporal_moments(E, 1);
            CHECK_EQ(m.rows, n);
            CHECK_EQ(m.dim, d);
            CHECK(m.source == E.data());
            CHECK_EQ(m.source_stride, E.outerStride());
            double top = 0.0;
            for (Index i = 0; i < n; ++i) top = std::max(top, E.row(i).cast<double>().squaredNorm());
            CHECK_CLOSE(m.max_norm_sq, top, 1e-14);
            std::vector<double> mean(static_cast<std::size_t>(d), 0.0);
            for (Index r = 0; r < d; ++r) {
                double s = 0.0;
                for (Index i = 0; i < n; ++i) s += E(i, r);
                CHECK_CLOSE(m.sum[static_cast<std::size_t>(r)], s, 1e-12);
                mean[static_cast<std::size_t>(r)] = s / static_cast<double>(n);
            }
            double trace = 0.0;
            for (Index r = 0; r < d; ++r) {
                for (Index c = 0; c < d; ++c) {
                    double want = 0.0;
                    for (Index i = 0; i < n; ++i)
                        want += (E(i, r) - mean[static_cast<std::size_t>(r)]) * (E(i, c) - mean[static_cast<std::size_t>(c)]);
                    CHECK_CLOSE(m.centred[static_cast<std::size_t>(r * d + c)], want, 1e-12);
                    CHECK(m.centred[static_cast<std::size_t>(r * d + c)] == m.centred[static_cast<std::size_t>(c * d + r)]);
                }
                trace += m.centred[static_cast<std::size_t>(r * d + r)];
            }
            CHECK(m.centred_trace == trace);
            for (const Index threads : {Index{2}, Index{3}, Index{8}}) {
                const TemporalMoments other = temporal_moments(E, threads);
                CHECK(other.sum == m.sum);
                CHECK(other.centred == m.centred);
                CHECK(other.max_norm_sq == m.max_norm_sq);
            }
        }
    }
}

TEST_CASE("temporal moments: the error bounds disable what they cannot vouch for") {
    CHECK(std::isinf(detail::gamma_n(Index{1} << 53, detail::kUnitRoundoff64)));  // n·u ≥ 1: no bound
    CHECK(std::isinf(detail::gamma_n(Index{1} << 24, detail::kUnitRoundoff32)));
    CHECK(detail::gamma_n(10, detail::kUnitRoundoff64) > 0.0);
}

TEST_CASE("temporal screen: equals the full exact pass with the same moments, bit for bit, with near-ties") {
    const std::vector<TemporalParams> params = {
        {0.5, 0.3, 2, 0.5, 1.0, 1.5, 7, 14},   // the shipped default's formula
        {0.0, 0.0, 1, 0.5, 0.0, 0.0, 0, 0},    // cosine only, no support: α = 0, γ = 0
        {0.95, 0.7, 3, 0.5, 0.5, 1.0, 7, 14},  // nearly lexical, a wide support
        {0.3, 0.5, 2, 0.0, 1.0, 0.0, 7, 14},   // decay 0: only the nearest neighbour lends
    };
    Index screened_total = 0;
    for (const Index n : {Index{1}, Index{2}, Index{37}, Index{301}, Index{2003}}) {
        for (const Index d : {Index{19}, Index{64}}) {
            Fixture f = make_fixture(n, d, 7, 300 + static_cast<std::uint64_t>(n * d));
            add_near_ties(f);
            const TemporalMoments m = temporal_moments(f.E, 2);
            for (const TemporalParams& p : params) {
                for (const Index k : {Index{1}, Index{10}, n, n + 3}) {
                    const TemporalRanking oracle = run_moments(f, m, p, k, 1, f.Q, false);
                    const TemporalRanking screened = run_moments(f, m, p, k, 1, f.Q, true);
                    CHECK_SAME_BATCH(screened, oracle);
                    CHECK_EQ(oracle.screened, 0);
                    // The screen resolves every query whose candidates (k and a few near-ties) stay a
                    // small share of the rows (the condition excludes N <= 2, whose candidates are every row).
                    if ((k + 8) * defaults::temporal_screen_max_candidate_share <= n)
                        CHECK_EQ(screened.screened, f.Q.rows());
                    screened_total += screened.screened;
                    CHECK_EQ(screened.ids.cols(), std::min(k, n));
                    for (const Index threads : {Index{2}, Index{3}})
                        CHECK_SAME_BATCH(run_moments(f, m, p, k, threads, f.Q, true), oracle);
                    for (Index b = 0; b < f.Q.rows(); b += 3) {
                        const RowMatrixXf q = f.Q.row(b);
                        const TemporalRanking single = run_moments(f, m, p, k, 1, q, true, b);
                        CHECK(single.ids.row(0) == screened.ids.row(b));
                        CHECK(single.scores.row(0) == screened.scores.row(b));
                    }
                }
            }
        }
    }
    CHECK(screened_total > 0);
}

TEST_CASE("temporal screen: every variant gives the same ranking, bit for bit") {
    const std::string before = simd::kernel_variant();
    Fixture f = make_fixture(3001, 48, 9, 91);
    add_near_ties(f);
    const TemporalParams p{0.5, 0.3, 2, 0.5, 1.0, 1.5, 7, 14};
    simd::set_kernel_variant("portable");
    const TemporalMoments m = temporal_moments(f.E, 1);
    const TemporalRanking want = run_moments(f, m, p, 10, 1, f.Q, false);
    RowMatrixXd Qd = f.Q.cast<double>();
    std::vector<double> want_quad(static_cast<std::size_t>(f.Q.rows()));
    simd::kernels().quadratic_forms_f64(m.centred.data(), m.dim, Qd.data(), Qd.cols(), Qd.rows(), want_quad.data());
    for (Index b = 0; b < f.Q.rows(); ++b) {
        const Eigen::Map<const RowMatrixXd> M(m.centred.data(), m.dim, m.dim);
        const double plain = Qd.row(b).dot(M * Qd.row(b).transpose());
        CHECK_CLOSE(want_quad[static_cast<std::size_t>(b)], plain, 1e-12 * std::abs(plain));
    }
    for (const std::string& variant : simd::supported_variants()) {
        simd::set_kernel_variant(variant);
        std::vector<double> quad(want_quad.size());
        // One query at a time and all at once: the same bits in every variant.
        simd::kernels().quadratic_forms_f64(m.centred.data(), m.dim, Qd.data(), Qd.cols(), Qd.rows(), quad.data());
        CHECK(quad == want_quad);
        simd::kernels().quadratic_forms_f64(m.centred.data(), m.dim, Qd.data() + Qd.cols(), Qd.cols(), 1, quad.data());
        CHECK(quad[0] == want_quad[1]);
        const TemporalMoments mv = temporal_moments(f.E, 2);
        CHECK(mv.centred == m.centred);
        CHECK(mv.sum == m.sum);
        const TemporalRanking screened = run_moments(f, mv, p, 10, 2, f.Q, true);
        CHECK_SAME_BATCH(screened, want);
        CHECK_EQ(screened.screened, f.Q.rows());
        CHECK_SAME_BATCH(run_moments(f, mv, p, 10, 1, f.Q, false), want);
    }
    simd::set_kernel_variant(before);
}

TEST_CASE("temporal screen: the moments' statistics move scores by rounding only; degenerate corpora keep the pairwise path") {
    Fixture f = make_fixture(1500, 40, 8, 23);
    const TemporalParams p{0.5, 0.3, 2, 0.5, 1.0, 1.5, 7, 14};
    const TemporalMoments m = temporal_moments(f.E, 1);
    const TemporalRanking pairwise = run(f, nullptr, p, 10, 1, f.Q);
    const TemporalRanking screened = run_moments(f, m, p, 10, 1, f.Q, true);
    CHECK_EQ(screened.screened, f.Q.rows());
    CHECK(screened.ids == pairwise.ids);
    for (Index b = 0; b < f.Q.rows(); ++b)
        for (Index i = 0; i < 10; ++i) CHECK_CLOSE(screened.scores(b, i), pairwise.scores(b, i), 1e-12);
    // Every row the same (and N = 1): the moments' variance is rounding noise, beyond their error
    // bounds (query_moments), so every query takes the pairwise path and the result is the one
    // without moments, bit for bit.
    for (const Index n : {Index{1}, Index{60}}) {
        Fixture g = make_fixture(n, 24, 4, 29);
        for (Index i = 1; i < n; ++i) g.E.row(i) = g.E.row(0);
        const TemporalMoments gm = temporal_moments(g.E, 1);
        const TemporalRanking got = run_moments(g, gm, p, 10, 1, g.Q, true);
        CHECK_SAME_BATCH(got, run(g, nullptr, p, 10, 1, g.Q));
        CHECK_EQ(got.screened, 0);
    }
    // Moments of another corpus are refused.
    const TemporalMoments other = temporal_moments(f.E.topRows(100), 1);
    CHECK_THROWS_WITH(run_moments(f, other, p, 10, 1, f.Q, true), std::invalid_argument, "moments were computed");
    // And so are moments of another array of the same shape (a copy: its data pointer differs).
    const RowMatrixXf copy = f.E;
    const TemporalMoments of_copy = temporal_moments(copy, 1);
    CHECK_THROWS_WITH(run_moments(f, of_copy, p, 10, 1, f.Q, true), std::invalid_argument, "another array");
}
