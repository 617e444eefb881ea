// Declarations shared by the binding translation units. Nothing here computes anything.
#pragma once

#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;
using namespace pybind11::literals;

// Native work never touches a Python object, so every kernel call drops the GIL.
using release_gil = py::call_guard<py::gil_scoped_release>;

void register_info(py::module_& m);
void register_results(py::module_& m);
void register_prefilter(py::module_& m);
void register_cfsr(py::module_& m);
void register_cfs(py::module_& m);
void register_mmr(py::module_& m);
void register_ring(py::module_& m);
void register_rrf(py::module_& m);
void register_quantized(py::module_& m);
void register_temporal(py::module_& m);
void register_bm25(py::module_& m);
