#include <fieldrank/quantized.hpp>

#include "common.hpp"

void register_quantized(py::module_& m) {
    using namespace fieldrank;
    // Fields are exposed as read-only numpy views that keep the result object alive.
    py::class_<Bf16Corpus>(m, "NativeBf16Corpus", "bf16 copy of a corpus: codes (N, d) uint16 bit patterns.")
        .def_readonly("codes", &Bf16Corpus::codes);
    py::class_<Int8Corpus>(m, "NativeInt8Corpus",
                           "int8 copy of a corpus: codes (N, d) int8, scale (N,) float32, sums (N,) int32.")
        .def_readonly("codes", &Int8Corpus::codes)
        .def_readonly("scale", &Int8Corpus::scale)
        .def_readonly("sums", &Int8Corpus::sums);
    m.def("quantize_bf16", &quantize_bf16, "E"_a.noconvert(), release_gil(),
          "bf16 copy of E (N, d) float32 (round to nearest even). Returns NativeBf16Corpus.");
    m.def("quantize_int8", &quantize_int8, "E"_a.noconvert(), release_gil(),
          "int8 copy of E (N, d) float32, one scale per row (row ≈ codes · scale). Returns NativeInt8Corpus.");
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
