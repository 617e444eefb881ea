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
