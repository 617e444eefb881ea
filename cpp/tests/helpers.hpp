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

// A term-major (CSC) index of float32 postings, as bm25.hpp and sparse.hpp score it. The default is a
// small one: 3 terms over 6 documents (document 4 has no term).
struct Postings {
    std::vector<float> data{0.5f, 1.25f, 0.1f, 2.0f, 0.3f, 0.7f, 1e8f};
    std::vector<std::int32_t> indices{0, 3, 1, 3, 5, 2, 3};
    std::vector<Index> indptr{0, 2, 5, 7};
};

// Postings of n_terms terms over n_docs documents, weights in [0.01, 3) drawn from gen: term t holds
// document doc when (7 doc + 13 t) % 5 == 0 (sorted documents, some terms and documents empty).
inline Postings random_postings(std::mt19937_64& gen, Index n_docs, Index n_terms) {
    std::uniform_real_distribution<float> value(0.01f, 3.0f);
    Postings x{{}, {}, {0}};
    for (Index t = 0; t < n_terms; ++t) {
        for (Index doc = 0; doc < n_docs; ++doc)
            if ((doc * 7 + t * 13) % 5 == 0) {
                x.data.push_back(value(gen));
                x.indices.push_back(static_cast<std::int32_t>(doc));
            }
        x.indptr.push_back(static_cast<Index>(x.data.size()));
    }
    return x;
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
