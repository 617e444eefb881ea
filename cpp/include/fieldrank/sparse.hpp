// Scores of weighted term postings (a learned sparse model's documents, e.g. SPLADE's): the
// documents are a term-major index like BM25's (bm25.hpp: CSC, terms × documents, entry (t, doc)
// = the document's weight of term t), and a query is a list of (term, weight) pairs. A query's
// score of a document is Σ_terms weight · entry, added in float32 in a fixed order: the query's
// pairs in the order given, each term's postings in stored order, each product rounded once to
// float32 and each addition once (no fused multiply-add: the build sets -ffp-contract=off). The
// postings of a term are read in place; only the touched entries of the output are written after
// the zero fill, so a query costs the length of its terms' postings, not the corpus.
#pragma once

#include <cstdint>

#include "bm25.hpp"
#include "errors.hpp"
#include "parallel.hpp"
#include "types.hpp"

namespace fieldrank {

namespace detail {

inline void sparse_accumulate(const SparseTermIndex& index, const std::int32_t* terms, const float* weights,
                              Index n_terms, Index doc_begin, Index doc_end, bool sorted, float* out) {
    for (Index t = 0; t < n_terms; ++t) {
        const float weight = weights[t];
        for_each_posting(index, terms[t], doc_begin, doc_end, sorted, [&](Index column, Index j) {
            const float product = weight * index.data[j];
            out[column] = out[column] + product;
        });
    }
}

}  // namespace detail

// Scores float32 of B queries over the index (data and indices: n_data entries each; indptr:
// n_terms + 1 offsets), query b's pairs at query_terms/query_weights[query_offsets[b] ..
// query_offsets[b + 1]) (query_offsets: B + 1 entries, both arrays n_query entries), for the
// documents [doc_begin, doc_end): (B, doc_end − doc_begin), column c = document doc_begin + c.
// sorted_postings: every term's postings are in increasing document order, and a block reads only
// its part of each list. Rows are independent: the result does not depend on n_threads.
inline RowMatrixXf sparse_scores_batch(const float* data, Index n_data, const std::int32_t* indices, Index n_indices,
                                       const Index* indptr, Index n_indptr, Index n_docs, const Index* query_offsets,
                                       Index n_offsets, const std::int32_t* query_terms, Index n_query_terms,
                                       const float* query_weights, Index n_query_weights, Index doc_begin,
                                       Index doc_end, bool sorted_postings, Index n_threads) {
    detail::check_term_index(n_data, n_indices, n_indptr, n_docs, doc_begin, doc_end);
    if (n_query_weights != n_query_terms)
        fail("query_weights must have one entry per query term (", n_query_terms, "), got ", n_query_weights);
    detail::check_query_offsets(query_offsets, n_offsets, n_query_terms, "query_offsets", "query terms");
    return detail::term_index_scores(
        data, n_data, indices, indptr, n_indptr, n_docs, n_offsets - 1, doc_begin, doc_end, n_threads,
        [&](const SparseTermIndex& index, Index b, float* row) {
            const Index begin = query_offsets[b];
            detail::sparse_accumulate(index, query_terms + begin, query_weights + begin, query_offsets[b + 1] - begin,
                                      doc_begin, doc_end, sorted_postings, row);
        });
}

}  // namespace fieldrank
