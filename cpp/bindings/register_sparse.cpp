#include <fieldrank/sparse.hpp>

#include "common.hpp"

namespace {

using namespace fieldrank;
using Int32Vector = Eigen::Matrix<std::int32_t, Eigen::Dynamic, 1>;

RowMatrixXf sparse_scores_batch_binding(const VectorRef& data, const Eigen::Ref<const Int32Vector>& indices,
                                        const IdRef& indptr, Index n_docs, const IdRef& query_offsets,
                                        const Eigen::Ref<const Int32Vector>& query_terms,
                                        const VectorRef& query_weights, Index doc_begin,
                                        std::optional<Index> doc_end, bool sorted_postings, Index n_threads) {
    return sparse_scores_batch(data.data(), data.size(), indices.data(), indices.size(), indptr.data(), indptr.size(),
                               n_docs, query_offsets.data(), query_offsets.size(), query_terms.data(),
                               query_terms.size(), query_weights.data(), query_weights.size(), doc_begin,
                               doc_end.value_or(n_docs), sorted_postings, n_threads);
}

}  // namespace

void register_sparse(py::module_& m) {
    m.def("sparse_scores_batch", &sparse_scores_batch_binding, "data"_a.noconvert(), "indices"_a.noconvert(),
          "indptr"_a.noconvert(), "n_docs"_a, "query_offsets"_a.noconvert(), "query_terms"_a.noconvert(),
          "query_weights"_a.noconvert(), "doc_begin"_a = 0, "doc_end"_a = py::none(), "sorted_postings"_a = false,
          "n_threads"_a = 0, release_gil(),
          "Weighted-postings scores (B, doc_end - doc_begin) float32 of the documents [doc_begin, doc_end) (default: "
          "all n_docs) from a term-major index (CSC arrays: data (nnz,) float32 weights, indices (nnz,) int32 "
          "documents, indptr (n_terms + 1,) int64), query b's pairs query_terms/query_weights[query_offsets[b]:"
          "query_offsets[b + 1]] (int32 terms, float32 weights; query_offsets (B + 1,) int64: a CSR query batch "
          "read in place). Each score is the float32 sum of float32 products weight * entry, pairs in query order, "
          "postings in stored order; sorted_postings=True (every term's documents increasing) reads only the "
          "block's part of each list. Rows do not depend on n_threads. Raises IndexError for a term or posting out "
          "of range.");
}
