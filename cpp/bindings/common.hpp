// Declarations shared by the binding translation units. Nothing here computes anything.
#pragma once

#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;
using namespace pybind11::literals;

// Native work never touches a Python object, so every kernel call drops the GIL.
using release_gil = py::call_guard<py::gil_scoped_release>;

// The register_<area>(m) declarations and register_all(m), which calls each in turn, are generated
// by CMakeLists.txt from the file names cpp/bindings/register_<area>.cpp (registrations.hpp in
// the build tree): adding a binding file is all it takes to register it.
