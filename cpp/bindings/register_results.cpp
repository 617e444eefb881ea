#include <fieldrank/types.hpp>

#include "common.hpp"

namespace {

// A result class exposing ids and scores (every result has both) as read-only numpy views that keep
// the result object alive; the caller adds its other fields.
template <typename Result>
py::class_<Result> bind_result(py::module_& m, const char* name, const char* doc) {
    py::class_<Result> cls(m, name, doc);
    cls.def_readonly("ids", &Result::ids).def_readonly("scores", &Result::scores);
    return cls;
}

}  // namespace

void register_results(py::module_& m) {
    using namespace fieldrank;
    bind_result<Ranking>(m, "NativeRanking", "ids (int64) best first and their float32 scores.");
    bind_result<Reconstruction>(m, "NativeReconstruction", "ids, float32 scores and CFS-R coefficients.")
        .def_readonly("coef", &Reconstruction::coef);
    bind_result<BatchRanking>(m, "NativeBatchRanking", "(B, m) ids and scores, one row per query.");
    bind_result<BatchReconstruction>(m, "NativeBatchReconstruction", "(B, m) ids, scores and coefficients.")
        .def_readonly("coef", &BatchReconstruction::coef);
    bind_result<FusedRanking>(m, "NativeFusedRanking", "Fused ids and their float64 RRF scores.");
}
