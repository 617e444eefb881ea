#include <fieldrank/prefilter.hpp>

#include "common.hpp"

void register_prefilter(py::module_& m) {
    using namespace fieldrank;
    m.def("prefilter", &prefilter, "E"_a.noconvert(), "q"_a.noconvert(), "p"_a, "subset"_a.noconvert() = py::none(),
          release_gil(),
          "Top-p rows of E (N, d) float32 C-order by dot product with q (d,) float32; subset (n,) int64 "
          "restricts the rows. Returns NativeRanking.");
    m.def("prefilter_batch", &prefilter_batch, "E"_a.noconvert(), "Q"_a.noconvert(), "p"_a,
          "subset"_a.noconvert() = py::none(), "n_threads"_a = 0, release_gil(),
          "prefilter for every row of Q (B, d) float32 C-order. Returns NativeBatchRanking of (B, min(p, n)).");
    m.def("prefilter_pool", &prefilter_pool, "ids"_a.noconvert(), "C"_a.noconvert(), "q"_a.noconvert(), "p"_a,
          release_gil(), "Top-p of a caller's pool: ids (P,) int64 unique, C (P, d) float32 C-order.");
}
