#include <fieldrank/bm25.hpp>

#include "common.hpp"

namespace {

using namespace fieldrank;
using Int32Vector = Eigen::Matrix<std::int32_t, Eigen::Dynamic, 1>;

RowMatrixXf bm25_scores_batch_binding(const VectorRef& data, const Eigen::Ref<const Int32Vector>& indices,
                                      const IdRef& indptr, Index n_docs, const IdRef& token_offsets,
                                      const IdRef& token_ids, Index doc_begin, std::optional<Index> doc_end,
                                      bool sorted_postings, Index n_threads) {
    return bm25_scores_batch(data.data(), data.size(), indices.data(), indices.size(), indptr.data(), indptr.size(),
                             n_docs, token_offsets.data(), token_offsets.size(), token_ids.data(), token_ids.size(),
                             doc_begin, doc_end.value_or(n_docs), sorted_postings, n_threads);
}

}  // namespace

void register_bm25(py::module_& m) {
    m.def("bm25_scores_batch", &bm25_scores_batch_binding, "data"_a.noconvert(), "indices"_a.noconvert(),
          "indptr"_a.noconvert(), "n_docs"_a, "token_offsets"_a.noconvert(), "token_ids"_a.noconvert(),
          "doc_begin"_a = 0, "doc_end"_a = py::none(), "sorted_postings"_a = false, "n_threads"_a = 0, release_gil(),
          "BM25 scores (B, doc_end - doc_begin) float32 of the documents [doc_begin, doc_end) (default: all n_docs) from an eager term-major index (bm25s's CSC "
          "arrays: data (nnz,) float32, indices (nnz,) int32 documents, indptr (n_terms + 1,) int64), query b's "
          "token ids token_ids[token_offsets[b]:token_offsets[b + 1]] (int64; token_offsets (B + 1,) int64). "
          "sorted_postings=True (every term's documents increasing) reads only the block's part of each list. "
          "Added in float32 in bm25s's order: bit-identical to bm25s.BM25.get_scores_from_ids (without the "
          "BM25L/BM25+ non-occurrence term). Raises IndexError for a token id or posting out of range.");
}
