#include <fieldrank/rrf.hpp>

#include "common.hpp"

void register_rrf(py::module_& m) {
    using namespace fieldrank;
    m.def("rrf", &rrf, "rankings"_a, "weights"_a, "k"_a, "k0"_a, release_gil(),
          "Weighted RRF of int64 id rankings (best first). Returns NativeFusedRanking of up to k ids.");
    m.def("rrf_batch", &rrf_batch, "rankings"_a, "weights"_a, "k"_a, "k0"_a, "n_threads"_a = 0, release_gil(),
          "rrf for every query's list of rankings. Returns a list of NativeFusedRanking.");
}
