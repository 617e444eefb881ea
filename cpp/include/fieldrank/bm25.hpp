// Lexical scores of every document from an eager BM25 index (bm25s's layout): a term-major
// sparse matrix (CSC, terms × documents) whose entry (t, doc) is the precomputed BM25 score of
// term t in doc. A query's score of a document is the sum over its tokens (repeats count again)
// of those entries, added in float32 in the order bm25s's numpy backend adds them (tokens in
// query order, each token's postings in stored order, one float32 rounding per addition), so the
// scores are bit-identical to bm25s.BM25.get_scores_from_ids. The postings of a token are read
// in place; only the touched entries of the output are written after the zero fill.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "errors.hpp"
#include "parallel.hpp"
#include "types.hpp"

namespace fieldrank {

// The index's arrays (views, not owned): data/indices (nnz entries), indptr (n_terms + 1).
struct SparseTermIndex {
    const float* data = nullptr;
    const std::int32_t* indices = nullptr;
    const Index* indptr = nullptr;
    Index n_terms = 0;
    Index nnz = 0;
    Index n_docs = 0;
};

namespace detail {

// The postings [begin, end) of term to read for the documents in [doc_begin, doc_end). sorted:
// every term's postings are in increasing document order, so only the part of the list inside
// the block is returned (found by binary search); otherwise the whole list.
inline std::pair<Index, Index> posting_range(const SparseTermIndex& index, Index term, Index doc_begin,
                                             Index doc_end, bool sorted) {
    if (term < 0 || term >= index.n_terms)
        throw std::out_of_range("token id " + std::to_string(term) + " is not in [0, " +
                                std::to_string(index.n_terms) + ")");
    Index begin = index.indptr[term];
    Index end = index.indptr[term + 1];
    if (begin < 0 || begin > end || end > index.nnz)
        fail("indptr of term ", term, " gives postings [", begin, ", ", end, ") outside [0, ", index.nnz, ")");
    if (sorted && (doc_begin > 0 || doc_end < index.n_docs)) {
        const std::int32_t* first = index.indices + begin;
        const std::int32_t* last = index.indices + end;
        const std::int32_t* lo = std::lower_bound(first, last, doc_begin);
        begin = lo - index.indices;
        end = std::lower_bound(lo, last, doc_end) - index.indices;
    }
    return {begin, end};
}

// Calls add(doc − doc_begin, j) for each posting j of term that names a document in
// [doc_begin, doc_end), in stored order; a posting naming no document of the index raises.
template <typename Add>
inline void for_each_posting(const SparseTermIndex& index, Index term, Index doc_begin, Index doc_end, bool sorted,
                             Add add) {
    const auto [begin, end] = posting_range(index, term, doc_begin, doc_end, sorted);
    for (Index j = begin; j < end; ++j) {
        const std::int32_t doc = index.indices[j];
        if (doc < 0 || doc >= index.n_docs)
            throw std::out_of_range("posting " + std::to_string(j) + " names document " + std::to_string(doc) +
                                    ", not in [0, " + std::to_string(index.n_docs) + ")");
        if (doc >= doc_begin && doc < doc_end) add(doc - doc_begin, j);
    }
}

// Adds query's postings into out[doc − doc_begin] for the documents in [doc_begin, doc_end).
inline void bm25_accumulate(const SparseTermIndex& index, const Index* tokens, Index n_tokens, Index doc_begin,
                            Index doc_end, bool sorted, float* out) {
    for (Index t = 0; t < n_tokens; ++t)
        for_each_posting(index, tokens[t], doc_begin, doc_end, sorted,
                         [&](Index column, Index j) { out[column] = out[column] + index.data[j]; });
}

// The checks every batch over a term-major index makes of its arrays and its block of documents.
inline void check_term_index(Index n_data, Index n_indices, Index n_indptr, Index n_docs, Index doc_begin,
                             Index doc_end) {
    if (n_indices != n_data) fail("indices must have one entry per data entry (", n_data, "), got ", n_indices);
    if (n_indptr < 1) fail("indptr must hold n_terms + 1 >= 1 offsets");
    if (n_docs < 0) fail("n_docs must be >= 0, got ", n_docs);
    if (doc_begin < 0 || doc_begin > doc_end || doc_end > n_docs)
        fail("the documents [doc_begin, doc_end) must lie in [0, ", n_docs, "], got [", doc_begin, ", ", doc_end, ")");
}

// The checks of B + 1 offsets (named name) into n_items query items (named items).
inline void check_query_offsets(const Index* offsets, Index n_offsets, Index n_items, const char* name,
                                const char* items) {
    if (n_offsets < 1) fail(name, " must hold B + 1 >= 1 offsets");
    const Index B = n_offsets - 1;
    if (offsets[0] != 0) fail(name, " must start at 0, got ", offsets[0]);
    for (Index b = 0; b < B; ++b)
        if (offsets[b + 1] < offsets[b]) fail(name, " must be non-decreasing");
    if (offsets[B] != n_items) fail(name, " must end at the number of ", items, " (", n_items, "), got ", offsets[B]);
}

// The float32 scores (B, doc_end − doc_begin) of B queries over a checked term index: rows start at
// zero and accumulate(index, b, row) adds query b's postings into its row, one query per thread
// (rows are independent, so the result does not depend on n_threads). BM25's and weighted
// postings' batches differ only in what a query is and how it adds up.
template <class Accumulate>
RowMatrixXf term_index_scores(const float* data, Index n_data, const std::int32_t* indices, const Index* indptr,
                              Index n_indptr, Index n_docs, Index B, Index doc_begin, Index doc_end, Index n_threads,
                              Accumulate accumulate) {
    const SparseTermIndex index{data, indices, indptr, n_indptr - 1, n_data, n_docs};
    const Index width = doc_end - doc_begin;
    RowMatrixXf out = RowMatrixXf::Zero(B, width);
    parallel_for(0, B, n_threads, [&](Index b) { accumulate(index, b, out.data() + b * width); });
    return out;
}

}  // namespace detail

// Scores float32 of B queries over the index (data and indices: n_data entries each; indptr:
// n_terms + 1 offsets), query b's tokens at token_ids[token_offsets[b] .. token_offsets[b + 1])
// (token_offsets: B + 1 entries), for the documents [doc_begin, doc_end) (a caller that reads one
// block of documents, e.g. a conversation, pays for that block only): (B, doc_end − doc_begin),
// column c = document doc_begin + c. sorted_postings: the caller knows every term's postings are in
// increasing document order (bm25s writes them so), and a block reads only its part of each list.
// Rows are independent: the result does not depend on n_threads.
inline RowMatrixXf bm25_scores_batch(const float* data, Index n_data, const std::int32_t* indices, Index n_indices,
                                     const Index* indptr, Index n_indptr, Index n_docs, const Index* token_offsets,
                                     Index n_offsets, const Index* token_ids, Index n_token_ids, Index doc_begin,
                                     Index doc_end, bool sorted_postings, Index n_threads) {
    detail::check_term_index(n_data, n_indices, n_indptr, n_docs, doc_begin, doc_end);
    detail::check_query_offsets(token_offsets, n_offsets, n_token_ids, "token_offsets", "token ids");
    return detail::term_index_scores(
        data, n_data, indices, indptr, n_indptr, n_docs, n_offsets - 1, doc_begin, doc_end, n_threads,
        [&](const SparseTermIndex& index, Index b, float* row) {
            detail::bm25_accumulate(index, token_ids + token_offsets[b], token_offsets[b + 1] - token_offsets[b],
                                    doc_begin, doc_end, sorted_postings, row);
        });
}

}  // namespace fieldrank
