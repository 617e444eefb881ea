#include <fieldrank/mmr.hpp>

#include "common.hpp"

void register_mmr(py::module_& m) {
    using namespace fieldrank;
    m.def("mmr", &mmr, "E"_a.noconvert(), "q"_a.noconvert(), "k"_a, "p"_a, "mu"_a,
          "subset"_a.noconvert() = py::none(), release_gil(),
          "MMR greedy picks over the prefilter top-p of E (N, d) float32. Returns NativeRanking.");
    m.def("mmr_batch", &mmr_batch, "E"_a.noconvert(), "Q"_a.noconvert(), "k"_a, "p"_a, "mu"_a,
          "subset"_a.noconvert() = py::none(), "n_threads"_a = 0, release_gil(),
          "mmr for every row of Q (B, d) float32. Returns NativeBatchRanking.");
    m.def("mmr_pool", &mmr_pool, "ids"_a.noconvert(), "C"_a.noconvert(), "q"_a.noconvert(), "k"_a, "mu"_a,
          "sims"_a.noconvert() = py::none(), release_gil(), "MMR over a caller's pool: ids (P,) int64 unique, C (P, d) float32 C-order, optional sims (P,) float32 "
          "cosines. Returns NativeRanking of min(k, P).");
}
