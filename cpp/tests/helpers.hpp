// Data builders and checks shared by the C++ test files.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

#include <fieldrank/types.hpp>

#include "check.hpp"

namespace fieldrank_test {

using fieldrank::IdVector;
using fieldrank::Index;
using fieldrank::RowMatrixXf;
using fieldrank::VectorXf;

inline RowMatrixXf rows(std::initializer_list<std::initializer_list<float>> values) {
    const Index n = static_cast<Index>(values.size());
    const Index d = n ? static_cast<Index>(values.begin()->size()) : 0;
    RowMatrixXf out(n, d);
    Index i = 0;
    for (const auto& row : values) {
        Index j = 0;
        for (const float v : row) out(i, j++) = v;
        ++i;
    }
    return out;
}

inline VectorXf vec(std::initializer_list<float> values) {
    VectorXf out(static_cast<Index>(values.size()));
    Index i = 0;
    for (const float v : values) out[i++] = v;
    return out;
}

inline IdVector ids(std::initializer_list<Index> values) {
    IdVector out(static_cast<Index>(values.size()));
    Index i = 0;
    for (const Index v : values) out[i++] = v;
    return out;
}

// Seeded Gaussian rows scaled to unit L2 norm (the corpus contract).
inline RowMatrixXf unit_rows(Index n, Index d, std::uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    RowMatrixXf out(n, d);
    for (Index i = 0; i < n; ++i) {
        for (Index j = 0; j < d; ++j) out(i, j) = normal(gen);
        out.row(i) /= out.row(i).norm();
    }
    return out;
}

inline IdVector iota_ids(Index n, Index start = 0) {
    IdVector out(n);
    for (Index i = 0; i < n; ++i) out[i] = start + i;
    return out;
}

// Ids unique and scores non-increasing, with ties ordered by the lower id: the tie rule.
template <typename Scores>
bool follows_tie_rule(const IdVector& id, const Scores& score) {
    for (Index i = 1; i < id.size(); ++i) {
        if (score[i - 1] < score[i]) return false;
        if (score[i - 1] == score[i] && !(id[i - 1] < id[i])) return false;
    }
    return true;
}

// Default parameters but for one field: the bad-argument tests change one value at a time.
template <typename Params, typename Field, typename Value>
Params with_field(Field Params::*field, Value value) {
    Params params;
    params.*field = value;
    return params;
}

inline bool unique_ids(const IdVector& id) {
    std::vector<Index> sorted(id.data(), id.data() + id.size());
    std::sort(sorted.begin(), sorted.end());
    return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
}

}  // namespace fieldrank_test

// A greedy selection over the whole corpus: `count` distinct ids, the query's own row `first_id`
// picked first.
#define CHECK_DISTINCT_PICKS(ranking, count, first_id)              \
    do {                                                            \
        CHECK_EQ((ranking).ids.size(), (count));                    \
        CHECK(::fieldrank_test::unique_ids((ranking).ids));         \
        CHECK_EQ((ranking).ids[0], (first_id));                     \
    } while (0)
