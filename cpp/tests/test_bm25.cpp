// BM25 scoring from an eager term-major index: the float32 sums in bm25s's order (tokens in query
// order, repeats counted again), thread-count independence and the range errors.
#include <fieldrank/bm25.hpp>

#include <random>
#include <vector>

#include "helpers.hpp"

using namespace fieldrank;

namespace {

using fieldrank_test::Postings;

RowMatrixXf score(const Postings& x, const std::vector<Index>& offsets, const std::vector<Index>& tokens,
                  Index n_threads = 1, Index n_docs = 6, Index doc_begin = 0, Index doc_end = -1, bool sorted = false) {
    return bm25_scores_batch(x.data.data(), static_cast<Index>(x.data.size()), x.indices.data(),
                             static_cast<Index>(x.indices.size()), x.indptr.data(), static_cast<Index>(x.indptr.size()),
                             n_docs, offsets.data(), static_cast<Index>(offsets.size()), tokens.data(),
                             static_cast<Index>(tokens.size()), doc_begin, doc_end < 0 ? n_docs : doc_end, sorted, n_threads);
}

}  // namespace

TEST_CASE("bm25: scores are the float32 sums of the postings in token order") {
    const Postings x;
    // Query 0: terms 2, 0, 1, 0 (a repeat counts twice); query 1: no token; query 2: term 1.
    const RowMatrixXf s = score(x, {0, 4, 4, 5}, {2, 0, 1, 0, 1});
    REQUIRE(s.rows() == 3 && s.cols() == 6);
    // Document 3, query 0: ((1e8 + 1.25) + 2.0) + 1.25 in float32, one rounding per addition.
    float doc3 = 0.0f;
    for (const float v : {1e8f, 1.25f, 2.0f, 1.25f}) doc3 = doc3 + v;
    CHECK(s(0, 3) == doc3);
    CHECK(s(0, 0) == 0.5f + 0.5f);
    CHECK(s(0, 2) == 0.7f);
    CHECK(s(0, 4) == 0.0f);
    CHECK(s.row(1).isZero());
    CHECK(s(2, 1) == 0.1f && s(2, 3) == 2.0f && s(2, 5) == 0.3f && s(2, 0) == 0.0f);
    // A block of documents: the same columns, bit for bit.
    const RowMatrixXf block = score(x, {0, 4, 4, 5}, {2, 0, 1, 0, 1}, 2, 6, 2, 5);
    REQUIRE(block.rows() == 3 && block.cols() == 3);
    CHECK(block == s.middleCols(2, 3));
    for (Index lo = 0; lo <= 6; ++lo)  // the postings are sorted: binary-searched blocks, same bits
        for (Index hi = lo; hi <= 6; ++hi)
            CHECK(score(x, {0, 4, 4, 5}, {2, 0, 1, 0, 1}, 1, 6, lo, hi, true) == s.middleCols(lo, hi - lo));
    CHECK(score(x, {0, 1}, {0}, 1, 6, 4, 4).cols() == 0);
}

TEST_CASE("bm25: the batch does not depend on the thread count") {
    std::mt19937_64 gen(5);
    const Index n_docs = 300, n_terms = 40;
    Postings x = fieldrank_test::random_postings(gen, n_docs, n_terms);
    std::vector<Index> offsets{0}, tokens;
    for (Index b = 0; b < 37; ++b) {
        for (Index i = 0; i < 1 + b % 6; ++i) tokens.push_back((b * 11 + i * 3) % n_terms);
        offsets.push_back(static_cast<Index>(tokens.size()));
    }
    const RowMatrixXf one = score(x, offsets, tokens, 1, n_docs);
    for (const Index threads : {Index{2}, Index{5}}) CHECK(score(x, offsets, tokens, threads, n_docs) == one);
    const RowMatrixXf row = score(x, {0, offsets[4] - offsets[3]},
                                  std::vector<Index>(tokens.begin() + offsets[3], tokens.begin() + offsets[4]), 1, n_docs);
    CHECK(row.row(0) == one.row(3));
}

TEST_CASE("bm25: out-of-range tokens, postings and bad offsets are refused") {
    Postings x;
    CHECK_THROWS_AS(score(x, {0, 1}, {3}), std::out_of_range);
    CHECK_THROWS_AS(score(x, {0, 1}, {-1}), std::out_of_range);
    CHECK_THROWS_WITH(score(x, {0, 2}, {0}), std::invalid_argument, "token_offsets must end");
    CHECK_THROWS_WITH(score(x, {1, 1}, {0}), std::invalid_argument, "token_offsets must start at 0");
    CHECK_THROWS_AS(score(x, {0, 1}, {2}, 1, 3), std::out_of_range);  // document 3 beyond n_docs = 3
    CHECK_THROWS_WITH(score(x, {0, 1}, {0}, 1, 6, 3, 2), std::invalid_argument, "[doc_begin, doc_end)");
    CHECK_THROWS_WITH(score(x, {0, 1}, {0}, 1, 6, 0, 7), std::invalid_argument, "[doc_begin, doc_end)");
    x.indptr[3] = 9;
    CHECK_THROWS_WITH(score(x, {0, 1}, {2}), std::invalid_argument, "outside [0, 7)");
}
