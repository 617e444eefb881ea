#include <fieldrank/ring.hpp>

#include "common.hpp"

void register_ring(py::module_& m) {
    using namespace fieldrank;
    m.def(
        "ring",
        [](const MatrixRef& E, const VectorRef& q, Index k, double alpha, Index laps, std::uint64_t seed,
           bool ablation, const OptionalIds& subset) {
            return ring(E, q, k, RingParams{alpha, laps, seed, ablation}, subset);
        },
        "E"_a.noconvert(), "q"_a.noconvert(), "k"_a, "alpha"_a, "laps"_a, "seed"_a, "ablation"_a,
        "subset"_a.noconvert() = py::none(), release_gil(),
        "Ring survival laps over the prefilter top-(2k) of E (N, d) float32. Returns NativeRanking of min(k, n).");
    m.def(
        "ring_batch",
        [](const MatrixRef& E, const MatrixRef& Q, Index k, double alpha, Index laps, std::uint64_t seed,
           bool ablation, const OptionalIds& subset, Index n_threads) {
            return ring_batch(E, Q, k, RingParams{alpha, laps, seed, ablation}, subset, n_threads);
        },
        "E"_a.noconvert(), "Q"_a.noconvert(), "k"_a, "alpha"_a, "laps"_a, "seed"_a, "ablation"_a,
        "subset"_a.noconvert() = py::none(), "n_threads"_a = 0, release_gil(),
        "ring for every row of Q (B, d) float32. Returns NativeBatchRanking.");
    m.def(
        "ring_pool",
        [](const IdRef& ids, const MatrixRef& C, const VectorRef& q, Index k, double alpha, Index laps,
           std::uint64_t seed, bool ablation, const OptionalVector& sims) {
            return ring_pool(ids, C, q, k, RingParams{alpha, laps, seed, ablation}, sims);
        },
        "ids"_a.noconvert(), "C"_a.noconvert(), "q"_a.noconvert(), "k"_a, "alpha"_a, "laps"_a, "seed"_a,
        "ablation"_a, "sims"_a.noconvert() = py::none(), release_gil(), "Ring over a caller's whole pool: ids (P,) int64 unique, C (P, d) float32 C-order, optional sims (P,) "
        "float32 cosines. Returns NativeRanking of min(k, P).");
    m.def("tie_key", &tie_key, "seed"_a, "lap"_a, "id"_a, "Ring's seeded tie draw for (seed, lap, id): splitmix64, a uint64.");
}
