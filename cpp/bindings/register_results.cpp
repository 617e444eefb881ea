#include <fieldrank/types.hpp>

#include "common.hpp"

void register_results(py::module_& m) {
    using namespace fieldrank;
    // Fields are exposed as read-only numpy views that keep the result object alive.
    py::class_<Ranking>(m, "NativeRanking", "ids (int64) best first and their float32 scores.")
        .def_readonly("ids", &Ranking::ids)
        .def_readonly("scores", &Ranking::scores);
    py::class_<Reconstruction>(m, "NativeReconstruction", "ids, float32 scores and CFS-R coefficients.")
        .def_readonly("ids", &Reconstruction::ids)
        .def_readonly("scores", &Reconstruction::scores)
        .def_readonly("coef", &Reconstruction::coef);
    py::class_<BatchRanking>(m, "NativeBatchRanking", "(B, m) ids and scores, one row per query.")
        .def_readonly("ids", &BatchRanking::ids)
        .def_readonly("scores", &BatchRanking::scores);
    py::class_<BatchReconstruction>(m, "NativeBatchReconstruction", "(B, m) ids, scores and coefficients.")
        .def_readonly("ids", &BatchReconstruction::ids)
        .def_readonly("scores", &BatchReconstruction::scores)
        .def_readonly("coef", &BatchReconstruction::coef);
    py::class_<FusedRanking>(m, "NativeFusedRanking", "Fused ids and their float64 RRF scores.")
        .def_readonly("ids", &FusedRanking::ids)
        .def_readonly("scores", &FusedRanking::scores);
}
