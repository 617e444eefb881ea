#include <fieldrank/cfsr.hpp>

#include "common.hpp"

void register_cfsr(py::module_& m) {
    using namespace fieldrank;
    m.def(
        "cfsr",
        [](const MatrixRef& E, const VectorRef& q, Index k, Index p, double w, double lam, Index iters, double tol,
           bool fista, const OptionalIds& subset) {
            return cfsr(E, q, k, p, CfsrParams{w, lam, iters, tol, fista}, subset);
        },
        "E"_a.noconvert(), "q"_a.noconvert(), "k"_a, "p"_a, "w"_a, "lam"_a, "iters"_a, "tol"_a, "fista"_a,
        "subset"_a.noconvert() = py::none(), release_gil(),
        "CFS-R over the prefilter top-p of E (N, d) float32 for q (d,) float32. Returns NativeReconstruction "
        "of min(k, p, n) ids, blended scores and coefficients.");
    m.def(
        "cfsr_batch",
        [](const MatrixRef& E, const MatrixRef& Q, Index k, Index p, double w, double lam, Index iters, double tol,
           bool fista, const OptionalIds& subset, Index n_threads) {
            return cfsr_batch(E, Q, k, p, CfsrParams{w, lam, iters, tol, fista}, subset, n_threads);
        },
        "E"_a.noconvert(), "Q"_a.noconvert(), "k"_a, "p"_a, "w"_a, "lam"_a, "iters"_a, "tol"_a, "fista"_a,
        "subset"_a.noconvert() = py::none(), "n_threads"_a = 0, release_gil(),
        "cfsr for every row of Q (B, d) float32. Returns NativeBatchReconstruction.");
    m.def(
        "cfsr_pool",
        [](const IdRef& ids, const MatrixRef& C, const VectorRef& q, Index k, double w, double lam, Index iters,
           double tol, bool fista, const OptionalVector& sims) {
            return cfsr_pool(ids, C, q, k, CfsrParams{w, lam, iters, tol, fista}, sims);
        },
        "ids"_a.noconvert(), "C"_a.noconvert(), "q"_a.noconvert(), "k"_a, "w"_a, "lam"_a, "iters"_a, "tol"_a,
        "fista"_a, "sims"_a.noconvert() = py::none(), release_gil(),
        "CFS-R over a caller's pool: ids (P,) int64, C (P, d) float32, optional sims (P,) float32.");
}
