#include <fieldrank/cfs.hpp>

#include "common.hpp"

void register_cfs(py::module_& m) {
    using namespace fieldrank;
    m.def(
        "cfs",
        [](const MatrixRef& E, const VectorRef& q, Index k, Index p, double sigma, double beta, double eps,
           const OptionalIds& subset) { return cfs(E, q, k, p, CfsParams{sigma, beta, eps}, subset); },
        "E"_a.noconvert(), "q"_a.noconvert(), "k"_a, "p"_a, "sigma"_a, "beta"_a, "eps"_a,
        "subset"_a.noconvert() = py::none(), release_gil(),
        "CFS greedy picks over the prefilter top-p of E (N, d) float32. Returns NativeRanking.");
    m.def(
        "cfs_batch",
        [](const MatrixRef& E, const MatrixRef& Q, Index k, Index p, double sigma, double beta, double eps,
           const OptionalIds& subset, Index n_threads) {
            return cfs_batch(E, Q, k, p, CfsParams{sigma, beta, eps}, subset, n_threads);
        },
        "E"_a.noconvert(), "Q"_a.noconvert(), "k"_a, "p"_a, "sigma"_a, "beta"_a, "eps"_a,
        "subset"_a.noconvert() = py::none(), "n_threads"_a = 0, release_gil(),
        "cfs for every row of Q (B, d) float32. Returns NativeBatchRanking.");
    m.def(
        "cfs_pool",
        [](const IdRef& ids, const MatrixRef& C, const VectorRef& q, Index k, double sigma, double beta, double eps,
           const OptionalVector& sims) { return cfs_pool(ids, C, q, k, CfsParams{sigma, beta, eps}, sims); },
        "ids"_a.noconvert(), "C"_a.noconvert(), "q"_a.noconvert(), "k"_a, "sigma"_a, "beta"_a, "eps"_a,
        "sims"_a.noconvert() = py::none(), release_gil(),
        "CFS over a caller's pool: ids (P,) int64 unique, C (P, d) float32 C-order, optional sims (P,) float32 "
        "cosines. Returns NativeRanking of min(k, P).");
}
