#include <fieldrank/quantized.hpp>

#include "common.hpp"

void register_quantized(py::module_& m) {
    using namespace fieldrank;
    // The caller allocates the outputs (numpy: huge pages for large arrays, which the scans read
    // at full bandwidth; Eigen's malloc would not ask for them).
    m.def("quantize_bf16", &quantize_bf16_into, "E"_a.noconvert(), "codes"_a.noconvert(), release_gil(),
          "Writes the bf16 copy of E (N, d) float32 (round to nearest even) into codes (N, d) uint16.");
    m.def("quantize_int8", &quantize_int8_into, "E"_a.noconvert(), "codes"_a.noconvert(), "scale"_a.noconvert(),
          "sums"_a.noconvert(), release_gil(),
          "Writes the int8 copy of E (N, d) float32 into codes (N, d) int8, scale (N,) float32 and sums (N,) "
          "int32 (row ≈ codes · scale).");
    m.def("prefilter_bf16", &prefilter_bf16, "codes"_a.noconvert(), "E"_a.noconvert(), "q"_a.noconvert(), "p"_a,
          "rescore_factor"_a, "subset"_a.noconvert() = py::none(), release_gil(),
          "Top-(rescore_factor·p) rows by the bf16 codes, rescored exactly from E; returns NativeRanking of min(p, n).");
    m.def("prefilter_bf16_batch", &prefilter_bf16_batch, "codes"_a.noconvert(), "E"_a.noconvert(), "Q"_a.noconvert(),
          "p"_a, "rescore_factor"_a, "subset"_a.noconvert() = py::none(), "n_threads"_a = 0, release_gil(),
          "prefilter_bf16 for every row of Q (B, d) float32. Returns NativeBatchRanking.");
    m.def("prefilter_int8", &prefilter_int8, "codes"_a.noconvert(), "scale"_a.noconvert(), "sums"_a.noconvert(),
          "E"_a.noconvert(), "q"_a.noconvert(), "p"_a, "rescore_factor"_a, "subset"_a.noconvert() = py::none(),
          release_gil(),
          "Top-(rescore_factor·p) rows by the int8 codes, rescored exactly from E; returns NativeRanking of min(p, n).");
    m.def("prefilter_int8_batch", &prefilter_int8_batch, "codes"_a.noconvert(), "scale"_a.noconvert(),
          "sums"_a.noconvert(), "E"_a.noconvert(), "Q"_a.noconvert(), "p"_a, "rescore_factor"_a,
          "subset"_a.noconvert() = py::none(), "n_threads"_a = 0, release_gil(),
          "prefilter_int8 for every row of Q (B, d) float32. Returns NativeBatchRanking.");
}
