// Weighted-postings scoring (sparse.hpp): the float32 sums of float32 products in query order,
// empty queries and empty documents, blocks of documents, thread-count independence and errors.
#include <fieldrank/sparse.hpp>

#include <random>
#include <stdexcept>
#include <vector>

#include "helpers.hpp"

using namespace fieldrank;

namespace {

using fieldrank_test::Postings;

RowMatrixXf score(const Postings& x, const std::vector<Index>& offsets, const std::vector<std::int32_t>& terms,
                  const std::vector<float>& weights, Index n_threads = 1, Index n_docs = 6, Index doc_begin = 0,
                  Index doc_end = -1, bool sorted = false) {
    return sparse_scores_batch(x.data.data(), static_cast<Index>(x.data.size()), x.indices.data(),
                               static_cast<Index>(x.indices.size()), x.indptr.data(),
                               static_cast<Index>(x.indptr.size()), n_docs, offsets.data(),
                               static_cast<Index>(offsets.size()), terms.data(), static_cast<Index>(terms.size()),
                               weights.data(), static_cast<Index>(weights.size()), doc_begin,
                               doc_end < 0 ? n_docs : doc_end, sorted, n_threads);
}

}  // namespace

TEST_CASE("sparse: scores are float32 sums of float32 products in query order") {
    const Postings x;
    // Query 0: (2, 0.5), (0, 3), (1, 0.25); query 1: no pair; query 2: (1, 2).
    const RowMatrixXf s = score(x, {0, 3, 3, 4}, {2, 0, 1, 1}, {0.5f, 3.0f, 0.25f, 2.0f});
    REQUIRE(s.rows() == 3 && s.cols() == 6);
    float doc3 = 0.0f;
    for (const float v : {0.5f * 1e8f, 3.0f * 1.25f, 0.25f * 2.0f}) doc3 = doc3 + v;
    CHECK(s(0, 3) == doc3);
    CHECK(s(0, 0) == 3.0f * 0.5f);
    CHECK(s(0, 2) == 0.5f * 0.7f);
    CHECK(s(0, 4) == 0.0f);  // a document without terms
    CHECK(s.row(1).isZero());
    CHECK(s(2, 1) == 2.0f * 0.1f && s(2, 3) == 2.0f * 2.0f && s(2, 5) == 2.0f * 0.3f && s(2, 0) == 0.0f);
    for (Index lo = 0; lo <= 6; ++lo)
        for (Index hi = lo; hi <= 6; ++hi)
            for (const bool sorted : {false, true})
                CHECK(score(x, {0, 3, 3, 4}, {2, 0, 1, 1}, {0.5f, 3.0f, 0.25f, 2.0f}, 1, 6, lo, hi, sorted) ==
                      s.middleCols(lo, hi - lo));
    CHECK(score(x, {0}, {}, {}).rows() == 0);
}

TEST_CASE("sparse: the batch does not depend on the thread count") {
    std::mt19937_64 gen(11);
    const Index n_docs = 301, n_terms = 37;
    Postings x = fieldrank_test::random_postings(gen, n_docs, n_terms);
    std::uniform_real_distribution<float> value(0.01f, 3.0f);
    std::vector<Index> offsets{0};
    std::vector<std::int32_t> terms;
    std::vector<float> weights;
    for (Index b = 0; b < 41; ++b) {
        for (Index i = 0; i < b % 7; ++i) {
            terms.push_back(static_cast<std::int32_t>((b * 11 + i * 3) % n_terms));
            weights.push_back(value(gen));
        }
        offsets.push_back(static_cast<Index>(terms.size()));
    }
    const RowMatrixXf one = score(x, offsets, terms, weights, 1, n_docs);
    for (const Index threads : {Index{2}, Index{5}}) CHECK(score(x, offsets, terms, weights, threads, n_docs) == one);
}

TEST_CASE("sparse: malformed arrays and out-of-range terms raise") {
    const Postings x;
    CHECK_THROWS_AS(score(x, {0, 1}, {3}, {1.0f}), std::out_of_range);
    CHECK_THROWS_AS(score(x, {0, 1}, {-1}, {1.0f}), std::out_of_range);
    CHECK_THROWS_AS(score(x, {0, 1}, {0}, {1.0f}, 1, 3), std::out_of_range);  // posting names document 3
    CHECK_THROWS_AS(score(x, {0, 2}, {0}, {1.0f}), std::invalid_argument);
    CHECK_THROWS_AS(score(x, {1, 1}, {0}, {1.0f}), std::invalid_argument);
    CHECK_THROWS_AS(score(x, {0, 1}, {0}, {1.0f, 2.0f}), std::invalid_argument);
    CHECK_THROWS_AS(score(x, {0, 1}, {0}, {1.0f}, 1, 6, 4, 2), std::invalid_argument);
}
